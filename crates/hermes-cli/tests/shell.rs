//! Shell integration (issue 9 item 8): completion scripts and the man page generated from
//! the clap definitions, and `sessions export --format md|json`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, stderr, stdout};
use hermes_testkit::MockResponse;

#[tokio::test]
async fn completion_scripts_for_each_shell() {
    let env = Env::new().await;
    let cases = [
        ("bash", "complete -F _hermes"),
        ("zsh", "#compdef hermes"),
        ("fish", "complete -c hermes"),
    ];
    for (shell, marker) in cases {
        let out = env.run_ok(&["completion", shell]).await;
        let script = stdout(&out);
        assert!(script.contains(marker), "{shell}: {script}");
        for sub in ["sessions", "doctor", "setup"] {
            assert!(script.contains(sub), "{shell} script lacks {sub}");
        }
    }
    let out = env.run(&["completion", "tcsh"]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("possible values"), "{}", stderr(&out));
}

#[tokio::test]
async fn man_page_is_generated_roff() {
    let env = Env::new().await;
    let out = env.run_ok(&["man"]).await;
    let page = stdout(&out);
    assert!(page.contains(".TH hermes 1"), "{page}");
    assert!(page.contains("\\-\\-continue"), "{page}");
    assert!(page.contains("completion"), "{page}");
}

#[tokio::test]
async fn sessions_export_as_md_and_json() {
    let env = Env::new().await;
    env.mock
        .push(MockResponse::text("Plants need water twice a week."));
    env.run_ok(&["chat", "-q", "how often do I water the plants?"])
        .await;
    let list = env.run_ok(&["sessions", "list"]).await;
    // The first row under the header.
    let id = stdout(&list)
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string();

    let md = stdout(
        &env.run_ok(&["sessions", "export", &id, "--format", "md"])
            .await,
    );
    assert!(md.starts_with("# "), "{md}");
    assert!(md.contains(&format!("- session: `{id}`")), "{md}");
    assert!(md.contains("Plants need water twice a week."), "{md}");
    // `markdown` stays accepted, and is the default.
    let long = stdout(
        &env.run_ok(&["sessions", "export", &id, "--format", "markdown"])
            .await,
    );
    assert_eq!(long, md);
    assert_eq!(stdout(&env.run_ok(&["sessions", "export", &id]).await), md);

    let json: serde_json::Value = serde_json::from_str(&stdout(
        &env.run_ok(&["sessions", "export", &id, "--format", "json"])
            .await,
    ))
    .unwrap();
    assert!(json.to_string().contains("twice a week"));

    let file = env.cwd.path().join("out.md");
    env.run_ok(&[
        "sessions",
        "export",
        &id,
        "--format",
        "md",
        "-o",
        file.to_str().unwrap(),
    ])
    .await;
    assert_eq!(std::fs::read_to_string(&file).unwrap(), md);

    let bad = env
        .run(&["sessions", "export", &id, "--format", "pdf"])
        .await;
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("md"), "{}", stderr(&bad));
}
