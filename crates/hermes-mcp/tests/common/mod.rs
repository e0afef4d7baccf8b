//! Shared helpers: server specs for the scripted server and the reference servers.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use hermes_mcp::config::{ServerSpec, ToolFilter, Transport};
use hermes_mcp::server::SessionFacts;
use hermes_mcp::{McpManager, StartOptions};

pub fn have(cmd: &str) -> bool {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {cmd}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

pub fn base_env() -> BTreeMap<String, String> {
    ["PATH", "HOME", "LANG"]
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .collect()
}

pub fn spec(
    name: &str,
    command: &str,
    args: Vec<String>,
    env: BTreeMap<String, String>,
) -> ServerSpec {
    ServerSpec {
        name: name.to_string(),
        transport: Transport::Stdio {
            command: command.to_string(),
            args,
            env,
        },
        call_timeout: Duration::from_secs(60),
        connect_timeout: Duration::from_secs(60),
        tools: ToolFilter::default(),
        parallel: false,
        sampling: None,
        enabled: true,
        roots: Vec::new(),
    }
}

pub fn scripted(name: &str, flags: &[&str]) -> ServerSpec {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scripted_server.py");
    let mut args = vec![script.display().to_string()];
    args.extend(flags.iter().map(|f| f.to_string()));
    spec(name, "python3", args, base_env())
}

pub fn options(cwd: &Path) -> StartOptions {
    StartOptions {
        facts: SessionFacts {
            cwd: cwd.to_path_buf(),
            log_dir: Some(cwd.join("logs")),
            token_dir: Some(cwd.join("mcp-tokens")),
            sampler: None,
            elicitor: None,
        },
        builtin_names: ["read_file", "terminal"]
            .iter()
            .map(|s| s.to_string())
            .collect::<HashSet<_>>(),
        discovery_wait: Duration::from_secs(90),
    }
}

pub async fn start(specs: Vec<ServerSpec>, cwd: &Path) -> McpManager {
    McpManager::start(specs, options(cwd)).await
}

/// Polls `f` every 50 ms for up to 30 s (a hang bound, not a timing assertion).
pub async fn eventually(mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..600 {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// The folder with the reference servers (`scripts/mcp-peers.sh` installs them), or `None`
/// with a printed reason when npm itself is missing.
pub fn peers() -> Option<PathBuf> {
    if !have("npm") {
        eprintln!(
            "skipped: npm is not installed, so the MCP reference servers cannot be installed"
        );
        return None;
    }
    if let Ok(p) = std::env::var("HERMES_MCP_PEERS") {
        let p = PathBuf::from(p);
        if p.join("node_modules/@modelcontextprotocol/server-everything")
            .is_dir()
        {
            return Some(p);
        }
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/mcp-peers.sh");
    let out = std::process::Command::new("bash")
        .arg(script)
        .output()
        .expect("run mcp-peers.sh");
    assert!(
        out.status.success(),
        "mcp-peers.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

pub fn ctx(cwd: &Path) -> hermes_tools::ToolContext {
    let home = hermes_protocol::HermesHome::new(cwd.join("home"));
    hermes_tools::ToolContext::for_tests(cwd, home)
}
