//! read_file, write_file, patch and search_files through the public Tool interface.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use hermes_tools::{Approval, Registry, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

fn tool(name: &str) -> Arc<dyn Tool> {
    Registry::builtin().get(name).unwrap()
}

async fn call(name: &str, args: Value, ctx: &ToolContext) -> ToolOutput {
    tool(name).call(args, ctx).await
}

#[tokio::test]
async fn read_file_pages_with_line_numbers_and_a_more_note() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.path().join("a.txt"), text).unwrap();
    let ctx = common::ctx(dir.path(), Approval::Deny);

    let out = call(
        "read_file",
        json!({"path": "a.txt", "offset": 9, "limit": 2}),
        &ctx,
    )
    .await;
    assert!(!out.is_error);
    assert_eq!(
        out.content,
        " 9|line 9\n10|line 10\n[showing lines 9-10 of 12; call read_file with offset=11 to read more]\n"
    );
    let out = call("read_file", json!({"path": "a.txt", "offset": 11}), &ctx).await;
    assert_eq!(out.content, "11|line 11\n12|line 12\n");
    let out = call("read_file", json!({"path": "a.txt", "offset": 50}), &ctx).await;
    assert!(
        out.is_error && out.content.contains("12 lines"),
        "{}",
        out.content
    );
    // Default limit is 500 lines.
    let many: String = (1..=600).map(|i| format!("{i}\n")).collect();
    std::fs::write(dir.path().join("big.txt"), many).unwrap();
    let out = call("read_file", json!({"path": "big.txt"}), &ctx).await;
    assert!(out.content.contains("500|500\n"));
    assert!(!out.content.contains("501|"));
    assert!(out.content.contains("offset=501"));
}

#[tokio::test]
async fn read_file_binary_detection_respects_utf8_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    // 4095 ASCII bytes then a 2-byte character straddling the 4096-byte sniff window.
    let mut text = format!("{}\n", "a".repeat(99)).repeat(40);
    text.push_str(&"a".repeat(95));
    text.push_str("é tail\n");
    assert_eq!(text.as_bytes()[4095], "é".as_bytes()[0]);
    std::fs::write(dir.path().join("utf8.txt"), &text).unwrap();
    let mut bin = b"\x7fELF\x02\x01\x01\0\0\0".to_vec();
    bin.extend(std::iter::repeat_n(0u8, 100));
    std::fs::write(dir.path().join("prog.bin"), bin).unwrap();
    let ctx = common::ctx(dir.path(), Approval::Deny);

    let out = call("read_file", json!({"path": "utf8.txt"}), &ctx).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("é tail"));
    let out = call("read_file", json!({"path": "prog.bin"}), &ctx).await;
    assert!(
        out.is_error && out.content.contains("binary"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn read_file_errors_for_missing_files_and_directories() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), Approval::Deny);
    let out = call("read_file", json!({"path": "nope.txt"}), &ctx).await;
    assert!(out.is_error && out.content.contains("not found"));
    let out = call("read_file", json!({"path": "."}), &ctx).await;
    assert!(out.is_error && out.content.contains("directory"));
    let out = call("read_file", json!({}), &ctx).await;
    assert!(out.is_error && out.content.contains("path"));
}

/// Issue 18 (H4): a FIFO (which would block the open for ever), a device and a socket are
/// refused at once; a file whose rest is larger than the counting budget is paged without
/// being read to its end.
#[tokio::test]
async fn read_file_refuses_pipes_and_devices_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let _sock = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).unwrap();
    let ctx = common::ctx(dir.path(), Approval::Deny);
    for path in ["pipe", "sock", "/dev/zero", "/dev/null"] {
        let out = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            call("read_file", json!({"path": path}), &ctx),
        )
        .await
        .unwrap_or_else(|_| panic!("read_file blocked on {path}"));
        assert!(
            out.is_error && out.content.contains("not a regular file"),
            "{path}: {}",
            out.content
        );
    }

    let line = format!("{}\n", "x".repeat(1023));
    let mut f = std::fs::File::create(dir.path().join("huge.log")).unwrap();
    use std::io::Write;
    for _ in 0..(70 * 1024) {
        f.write_all(line.as_bytes()).unwrap();
    }
    drop(f);
    let out = call("read_file", json!({"path": "huge.log", "limit": 2}), &ctx).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content.contains("[showing lines 1-2 of more than "),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn write_file_creates_parents_and_keeps_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), Approval::Deny);
    let out = call(
        "write_file",
        json!({"path": "a/b/c.txt", "content": "hi\n"}),
        &ctx,
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
        "hi\n"
    );

    let script = dir.path().join("run.sh");
    std::fs::write(&script, "old").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
    let out = call(
        "write_file",
        json!({"path": "run.sh", "content": "new"}),
        &ctx,
    )
    .await;
    assert!(!out.is_error);
    assert_eq!(std::fs::read_to_string(&script).unwrap(), "new");
    let mode = std::fs::metadata(&script).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o751);
    // No temporary files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("hermes-tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[tokio::test]
async fn write_deny_list_catches_symlinks_into_denied_locations() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), Approval::Deny);
    let home = ctx.home.root().to_path_buf();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join(".env"), "KEY=secret\n").unwrap();
    // A harmless-looking link to HERMES_HOME/.env and a link to /etc.
    std::os::unix::fs::symlink(home.join(".env"), dir.path().join("notes.txt")).unwrap();
    std::os::unix::fs::symlink("/etc", dir.path().join("config")).unwrap();

    for path in ["notes.txt", "config/hermes-test-file", ".hermes-home/.env"] {
        let out = call("write_file", json!({"path": path, "content": "x"}), &ctx).await;
        assert!(
            out.is_error && out.content.contains("denied"),
            "{path}: {}",
            out.content
        );
        let out = call(
            "patch",
            json!({"path": path, "old_string": "KEY", "new_string": "K"}),
            &ctx,
        )
        .await;
        assert!(
            out.is_error && out.content.contains("denied"),
            "{path}: {}",
            out.content
        );
    }
    assert_eq!(
        std::fs::read_to_string(home.join(".env")).unwrap(),
        "KEY=secret\n"
    );

    let resolved = hermes_tools::safety::check_write_path_in(
        &dir.path().join("sub/new.txt"),
        &ctx.home,
        Some(dir.path()),
    )
    .unwrap();
    assert_eq!(
        resolved,
        dir.path().canonicalize().unwrap().join("sub/new.txt")
    );
    let user_home = tempfile::tempdir().unwrap();
    std::fs::create_dir(user_home.path().join(".ssh")).unwrap();
    std::os::unix::fs::symlink(user_home.path().join(".ssh"), dir.path().join("keys")).unwrap();
    let denied = hermes_tools::safety::check_write_path_in(
        &dir.path().join("keys/authorized_keys"),
        &ctx.home,
        Some(user_home.path()),
    );
    assert!(denied.is_err());
    assert!(
        hermes_tools::safety::check_write_path_in(
            &user_home.path().join(".zshrc"),
            &ctx.home,
            Some(user_home.path())
        )
        .is_err()
    );
}

#[tokio::test]
async fn patch_requires_a_unique_match_unless_replace_all() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), Approval::Deny);
    let f = dir.path().join("m.rs");
    std::fs::write(&f, "let a = 1;\nlet b = 1;\nlet c = 2;\n").unwrap();

    let out = call(
        "patch",
        json!({"path": "m.rs", "old_string": "= 1", "new_string": "= 9"}),
        &ctx,
    )
    .await;
    assert!(
        out.is_error && out.content.contains("matches 2 places"),
        "{}",
        out.content
    );
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "let a = 1;\nlet b = 1;\nlet c = 2;\n"
    );

    let out = call(
        "patch",
        json!({"path": "m.rs", "old_string": "= 1", "new_string": "= 9", "replace_all": true}),
        &ctx,
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "let a = 9;\nlet b = 9;\nlet c = 2;\n"
    );

    let out = call(
        "patch",
        json!({"path": "m.rs", "old_string": "let c = 2;", "new_string": "let c = 3;"}),
        &ctx,
    )
    .await;
    assert!(!out.is_error);
    assert!(
        std::fs::read_to_string(&f)
            .unwrap()
            .ends_with("let c = 3;\n")
    );

    let out = call(
        "patch",
        json!({"path": "m.rs", "old_string": "absent", "new_string": "x"}),
        &ctx,
    )
    .await;
    assert!(out.is_error && out.content.contains("not found"));
    let out = call(
        "patch",
        json!({"path": "none.rs", "old_string": "a", "new_string": "b"}),
        &ctx,
    )
    .await;
    assert!(out.is_error && out.content.contains("not found"));
}

#[test]
fn patch_keeps_crlf_and_indentation_with_tabs() {
    let file = "fn main() {\r\n\tif x {\r\n\t\ty();\r\n\t}\r\n}\r\n";
    let out = hermes_tools::file::apply_patch(
        file,
        "if x {\n\ty();\n}",
        "if x {\n\ty();\n\tz();\n}",
        false,
    )
    .unwrap();
    assert_eq!(
        out.content,
        "fn main() {\r\n\tif x {\r\n\t\ty();\r\n\t\tz();\r\n\t}\r\n}\r\n"
    );
    // Fuzzy matches count too: two indented copies need replace_all.
    let two = "a:\n  x = 1\nb:\n  x = 1\n";
    let err = hermes_tools::file::apply_patch(two, "x = 1 \n", "x = 2\n", false).unwrap_err();
    assert!(err.contains("2 places"), "{err}");
    let out = hermes_tools::file::apply_patch(two, "x = 1 \n", "x = 2\n", true).unwrap();
    assert_eq!(out.content, "a:\n  x = 2\nb:\n  x = 2\n");
}

fn search_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join(".gitignore"), "target/\n*.log\n").unwrap();
    std::fs::create_dir_all(p.join("src")).unwrap();
    std::fs::create_dir_all(p.join("target")).unwrap();
    std::fs::write(p.join("src/main.rs"), "fn main() {\n    needle();\n}\n").unwrap();
    std::fs::write(p.join("src/lib.py"), "def needle():\n    pass\n").unwrap();
    std::fs::write(p.join("target/gen.rs"), "needle\n").unwrap();
    std::fs::write(p.join("debug.log"), "needle\n").unwrap();
    std::fs::write(p.join(".hidden.rs"), "needle\n").unwrap();
    dir
}

#[tokio::test]
async fn search_files_respects_gitignore_and_hidden() {
    let dir = search_tree();
    let ctx = common::ctx(dir.path(), Approval::Deny);
    let out = call("search_files", json!({"pattern": "need+le\\(\\)"}), &ctx).await;
    assert!(!out.is_error, "{}", out.content);
    let rows: Vec<&str> = out.content.lines().collect();
    assert_eq!(
        rows,
        vec!["src/lib.py:1:def needle():", "src/main.rs:2:    needle();"]
    );

    let out = call(
        "search_files",
        json!({"pattern": "needle", "hidden": true}),
        &ctx,
    )
    .await;
    assert!(out.content.contains(".hidden.rs:1:needle"));
    assert!(!out.content.contains("target/gen.rs") && !out.content.contains("debug.log"));

    let out = call(
        "search_files",
        json!({"pattern": "needle", "glob": "*.py"}),
        &ctx,
    )
    .await;
    assert_eq!(out.content, "src/lib.py:1:def needle():");

    let out = call(
        "search_files",
        json!({"pattern": "*.rs", "target": "files"}),
        &ctx,
    )
    .await;
    assert_eq!(out.content, "src/main.rs");

    let out = call(
        "search_files",
        json!({"pattern": "needle", "limit": 1}),
        &ctx,
    )
    .await;
    assert!(out.content.starts_with("src/lib.py:1:") && out.content.contains("capped at 1"));

    let out = call("search_files", json!({"pattern": "("}), &ctx).await;
    assert!(out.is_error && out.content.contains("invalid regex"));
    let out = call("search_files", json!({"pattern": "zzz_absent"}), &ctx).await;
    assert!(!out.is_error && out.content.contains("No matches"));
}
