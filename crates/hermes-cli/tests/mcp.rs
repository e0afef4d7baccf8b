//! `hermes mcp add/list/test/remove` against the scripted stdio MCP server of hermes-mcp's
//! tests (a Python script; skipped with a reason when python3 is missing).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Output;

fn hermes(home: &Path, args: &[&str]) -> Output {
    let mut cmd = assert_cmd::Command::cargo_bin("hermes").unwrap();
    cmd.env_clear()
        .env("HERMES_HOME", home)
        .env("HOME", home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(home)
        .args(args)
        .timeout(std::time::Duration::from_secs(120));
    cmd.output().unwrap()
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../hermes-mcp/tests/fixtures/scripted_server.py")
}

#[test]
fn mcp_add_list_test_remove() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: python3 is missing (the scripted MCP server is a Python script)");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let s = script().display().to_string();
    let add = hermes(
        home.path(),
        &["mcp", "add", "demo", "--", "python3", &s, "--noise", "B"],
    );
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let list = hermes(home.path(), &["mcp", "list"]);
    let out = String::from_utf8_lossy(&list.stdout).to_string();
    assert!(out.contains("demo\tenabled\tstdio: python3"), "{out}");
    let test = hermes(home.path(), &["mcp", "test", "demo"]);
    let out = String::from_utf8_lossy(&test.stdout).to_string();
    assert!(
        test.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&test.stderr)
    );
    assert!(out.contains("\"name\":\"demo\""), "{out}");
    assert!(out.contains("mcp__demo__echo"), "{out}");
    assert!(
        out.contains("1 non-JSON-RPC stdout line(s) skipped"),
        "{out}"
    );
    let rm = hermes(home.path(), &["mcp", "remove", "demo"]);
    assert!(rm.status.success());
    let list = hermes(home.path(), &["mcp", "list"]);
    assert!(String::from_utf8_lossy(&list.stdout).contains("no MCP servers configured"));
    let missing = hermes(home.path(), &["mcp", "test", "demo"]);
    assert!(!missing.status.success());
    // The rewritten config.yaml still loads without warnings about mcp_servers.
    let check = hermes(home.path(), &["config", "check"]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}
