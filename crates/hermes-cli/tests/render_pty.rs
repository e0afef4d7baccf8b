//! The real binary on a color terminal (a pty without `NO_COLOR`): `chat -q` draws the
//! answer as Markdown (no `#` or `**` left, styled text, highlighted code), tool lines use the
//! configured skin, and a broken skin file is reported with its line while the default skin
//! takes over (issue 9 items 3, 4, 6).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use hermes_testkit::MockResponse;

/// [`common::run_on_color_pty`] with the output as (lossy) UTF-8.
fn run_on_pty(home: &std::path::Path, cwd: &std::path::Path, args: &[&str]) -> (String, i32) {
    let (out, code) = common::run_on_color_pty(home, cwd, args);
    (String::from_utf8_lossy(&out).into_owned(), code)
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_on_a_color_terminal_draws_markdown_and_skinned_tool_lines() {
    let env = common::Env::with_config("display:\n  skin: poseidon\n").await;
    std::fs::write(env.cwd.path().join("notes.txt"), "water the plants\n").unwrap();
    env.mock.push(MockResponse::tool_calls(&[(
        "call_1",
        "read_file",
        r#"{"path":"notes.txt"}"#,
    )]));
    env.mock.push(MockResponse::text(
        "# Your notes\n\nYou need to **water** the plants.\n\n```rust\nfn main() {}\n```\n",
    ));
    let home = env.home.path().to_path_buf();
    let cwd = env.cwd.path().to_path_buf();
    let (out, code) = tokio::task::spawn_blocking(move || {
        run_on_pty(&home, &cwd, &["chat", "-q", "what is in my notes?"])
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{out}");
    let plain = strip_ansi_escapes::strip_str(&out);
    assert!(plain.contains("Your notes"), "{plain}");
    assert!(
        !plain.contains("# Your notes"),
        "the heading marker is drawn, not shown: {plain}"
    );
    assert!(plain.contains("You need to water the plants."), "{plain}");
    assert!(!plain.contains("**"), "{plain}");
    assert!(
        plain.contains("▎rust"),
        "the code block has its label: {plain}"
    );
    assert!(
        plain.contains("≈ 📖 read_file notes.txt"),
        "poseidon's tool prefix: {plain}"
    );
    // Styled: the bold word and 24-bit colors (skin and syntax highlighting).
    assert!(out.contains("\x1b[1mwater\x1b[0m"), "{out:?}");
    assert!(out.contains("38;2;"), "{out:?}");
    hermes_testkit::assert_request_invariants(&env.mock.requests());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_skin_file_is_reported_and_the_default_skin_used() {
    let env = common::Env::with_config("display:\n  skin: mine\n").await;
    let skins = env.home.path().join("skins");
    std::fs::create_dir_all(&skins).unwrap();
    std::fs::write(skins.join("mine.yaml"), "colors:\n  ui_ok: [\n").unwrap();
    env.mock.push(MockResponse::text("Fine."));
    let home = env.home.path().to_path_buf();
    let cwd = env.cwd.path().to_path_buf();
    let (out, code) =
        tokio::task::spawn_blocking(move || run_on_pty(&home, &cwd, &["chat", "-q", "hello"]))
            .await
            .unwrap();
    assert_eq!(code, 0, "{out}");
    let plain = strip_ansi_escapes::strip_str(&out);
    assert!(plain.contains("mine.yaml line"), "{plain}");
    assert!(plain.contains("using the default skin"), "{plain}");
    assert!(plain.contains("Fine."), "{plain}");
}
