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

/// The reference-server cache (`scripts/mcp-peers.sh`), or `None` when npm is missing.
fn peers() -> Option<PathBuf> {
    if std::process::Command::new("npm")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!(
            "skipped: npm is not installed, so the MCP reference servers cannot be installed"
        );
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/mcp-peers.sh");
    let out = std::process::Command::new("bash")
        .arg(script)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

#[tokio::test]
async fn one_turn_uses_everything_echo_and_filesystem_read() {
    use hermes_testkit::{MockProvider, MockResponse};
    let Some(peers) = peers() else { return };
    let mock = MockProvider::start().await;
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("notes.txt"), "the meeting is at noon\n").unwrap();
    let module = |p: &str| {
        peers
            .join(format!(
                "node_modules/@modelcontextprotocol/{p}/dist/index.js"
            ))
            .display()
            .to_string()
    };
    let config = format!(
        "model:\n  provider: custom\n  base_url: {}\n  default: mock-model\nmcp_servers:\n  everything:\n    command: node\n    args: ['{}', stdio]\n  filesystem:\n    command: node\n    args: ['{}', '{}']\n",
        mock.base_url(),
        module("server-everything"),
        module("server-filesystem"),
        cwd.path().display()
    );
    std::fs::write(home.path().join("config.yaml"), config).unwrap();
    let notes = cwd.path().join("notes.txt").display().to_string();
    mock.push(MockResponse::tool_calls(&[
        ("call_1", "mcp__everything__echo", r#"{"message":"ping"}"#),
        (
            "call_2",
            "mcp__filesystem__read_text_file",
            &format!(r#"{{"path":"{notes}"}}"#),
        ),
    ]));
    mock.push(MockResponse::text(
        "The server said ping; the meeting is at noon.",
    ));
    let (h, c) = (home.path().to_path_buf(), cwd.path().to_path_buf());
    let out = tokio::task::spawn_blocking(move || {
        let mut cmd = assert_cmd::Command::cargo_bin("hermes").unwrap();
        cmd.env_clear()
            .env("HERMES_HOME", &h)
            .env("HOME", &h)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .current_dir(&c)
            .args([
                "chat",
                "-q",
                "what did the server say and when is the meeting?",
            ])
            .timeout(std::time::Duration::from_secs(120));
        cmd.output().unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "The server said ping; the meeting is at noon."
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let tool_names: Vec<String> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    let first_mcp = tool_names
        .iter()
        .position(|n| n.starts_with("mcp__"))
        .unwrap();
    assert!(
        tool_names[first_mcp..]
            .iter()
            .all(|n| n.starts_with("mcp__")),
        "MCP tools come after the built-ins: {tool_names:?}"
    );
    let results: Vec<String> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].contains("Echo: ping"), "{results:?}");
    assert!(results[1].contains("the meeting is at noon"), "{results:?}");
    hermes_testkit::assert_request_invariants(&requests);
}

#[test]
fn mcp_add_and_remove_keep_the_comments_and_layout_of_config_yaml() {
    let home = tempfile::tempdir().unwrap();
    let original = "# my settings\nmodel:\n  provider: custom   # the mock\n  default: m\n\nmcp_servers:\n    # notes first\n    notes:\n        url: http://127.0.0.1:9/mcp   # local\n\n# shown in the REPL\ndisplay:\n  tool_progress: all\n";
    std::fs::write(home.path().join("config.yaml"), original).unwrap();
    let add = hermes(
        home.path(),
        &[
            "mcp", "add", "demo", "--env", "K=v", "--", "python3", "s.py",
        ],
    );
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let added = std::fs::read_to_string(home.path().join("config.yaml")).unwrap();
    assert_eq!(
        added,
        original.replace(
            "# local\n\n",
            "# local\n    demo:\n      command: python3\n      args:\n      - s.py\n      env:\n        K: v\n\n"
        )
    );
    let list = hermes(home.path(), &["mcp", "list"]);
    let out = String::from_utf8_lossy(&list.stdout).to_string();
    assert!(out.contains("demo\tenabled\tstdio: python3 s.py"), "{out}");
    assert!(
        out.contains("notes\tenabled\thttp: http://127.0.0.1:9/mcp"),
        "{out}"
    );
    let rm = hermes(home.path(), &["mcp", "remove", "demo"]);
    assert!(
        rm.status.success(),
        "{}",
        String::from_utf8_lossy(&rm.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(home.path().join("config.yaml")).unwrap(),
        original
    );
    let missing = hermes(home.path(), &["mcp", "remove", "demo"]);
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("no MCP server named `demo`"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
}
