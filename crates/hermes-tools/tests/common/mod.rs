//! Shared helpers for the hermes-tools integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hermes_protocol::HermesHome;
use hermes_tools::{Approval, FixedApprover, ToolContext};

/// The read-only reference folder next to the repository.
pub fn shared() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared"))
}

/// Loads a JSON file from the shared folder.
pub fn load_json(rel: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(shared().join(rel)).expect("shared file readable");
    serde_json::from_str(&text).expect("valid json")
}

/// A context rooted in `dir` with a hermes home at `dir/.hermes-home`, approvals answered
/// with `approval`.
pub fn ctx(dir: &Path, approval: Approval) -> ToolContext {
    let mut c = ToolContext::for_tests(dir, HermesHome::new(dir.join(".hermes-home")));
    c.approver = Arc::new(FixedApprover(approval));
    c
}

/// True while process `pid` exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // Field 3 (after the parenthesised name) is the state.
            let state = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .next();
            state != Some("Z")
        }
        Err(_) => false,
    }
}

/// Kills `pid` (test cleanup).
pub fn kill(pid: u32) {
    let _ = std::process::Command::new("kill")
        .arg("-KILL")
        .arg(pid.to_string())
        .status();
}
