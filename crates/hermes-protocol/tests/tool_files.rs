//! The secrets of declarative tool files (`HERMES_HOME/tools/*.yaml`, seed 004 §3.2) are
//! collected without trusting the files: a FIFO named like a tool file does not block
//! every command, and an alias bomb does not exhaust memory; the good files still count.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use hermes_protocol::HermesHome;
use hermes_protocol::secrets::collect_secrets;

const SECRET: &str = "tok-5a4b3c2d1e0f-secret";

#[test]
fn a_fifo_and_an_alias_bomb_in_tools_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let home = HermesHome::new(dir.path());
    let tools = home.tools_dir();
    std::fs::create_dir_all(&tools).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(tools.join("a_fifo.yaml"))
        .status()
        .unwrap();
    assert!(status.success());
    let leaf = vec!["x"; 2000].join(",");
    let aliases = vec!["*a"; 2000].join(",");
    std::fs::write(
        tools.join("b_bomb.yaml"),
        format!(
            "a: &a [{leaf}]\nb: [{aliases}]\nendpoint: {{headers: {{X-Key: \"${{BOMB_KEY}}\"}}}}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        tools.join("c_good.yaml"),
        "endpoint:\n  headers:\n    Authorization: \"Bearer ${GOOD_TOOL_SIGNATURE}\"\n",
    )
    .unwrap();
    std::fs::write(home.env_file(), format!("GOOD_TOOL_SIGNATURE={SECRET}\n")).unwrap();

    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(collect_secrets(&home));
    });
    let found = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("collect_secrets returned (a FIFO must not block it)");
    assert!(
        found.iter().any(
            |(label, v)| label == "tools/c_good.yaml.endpoint.headers.Authorization"
                && v == &format!("Bearer {SECRET}")
        ),
        "{found:?}"
    );
}
