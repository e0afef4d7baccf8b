//! The client under test for `@modelcontextprotocol/conformance client`: the suite runs
//! `conformance_client <server-url>` with `MCP_CONFORMANCE_SCENARIO` set and judges the
//! traffic. Connects through [`hermes_mcp::McpManager`] over Streamable HTTP (the same path a
//! `url:` entry of `mcp_servers:` takes), lists the tools, and for `tools_call` calls
//! `add_numbers`; for `elicitation-sep1034-client-defaults` and `sse-retry` it calls the
//! scenario's one tool, answering elicitation by accepting the schema's defaults (SEP-1034,
//! the answer a user gives by pressing Enter at every field of the REPL's form). Exit code 0
//! when the connection and the scenario's calls succeeded.
//!
//! For `auth/*` scenarios the server is configured `auth: oauth`: the example first runs
//! [`hermes_mcp::oauth::authorize`] with the headless approver (the suite's authorization
//! server approves at once), with the pre-registered `client_id`/`client_secret` of
//! `MCP_CONFORMANCE_CONTEXT` when the scenario gives them, stores the tokens in a temporary
//! token folder, then connects and calls the server's `test-tool` like a hermes session would.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use std::sync::Arc;

use hermes_mcp::config::{OAuthSettings, ServerSpec, ToolFilter, Transport};
use hermes_mcp::elicitation::{ElicitationAnswer, ElicitationRequest, Elicitor, defaults_of};
use hermes_mcp::oauth;
use hermes_mcp::server::{ServerState, SessionFacts};
use hermes_mcp::{McpManager, StartOptions};

/// Accepts every form with the schema's defaults.
struct AcceptDefaults;

#[async_trait::async_trait]
impl Elicitor for AcceptDefaults {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        ElicitationAnswer::Accept(defaults_of(&request.schema))
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    // The suite appends the URL as the last argument.
    let Some(url) = std::env::args()
        .skip(1)
        .next_back()
        .filter(|a| a.starts_with("http"))
    else {
        eprintln!("usage: conformance_client <server-url>");
        return std::process::ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let token_dir = std::env::temp_dir().join(format!("hermes-conformance-{}", std::process::id()));
    let oauth = if scenario.starts_with("auth/") {
        let context: serde_json::Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
            .ok()
            .and_then(|c| serde_json::from_str(&c).ok())
            .unwrap_or_default();
        let text = |k: &str| context.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let settings = OAuthSettings {
            client_id: text("client_id"),
            client_secret: text("client_secret"),
            // The client-metadata URL `auth/basic-cimd` expects (it does not fetch it).
            client_metadata_url: Some("https://conformance-test.local/client-metadata.json".into()),
            ..OAuthSettings::default()
        };
        let store = oauth::FileTokenStore::new(oauth::token_path(&token_dir, "conformance"));
        let approver = oauth::HeadlessApprover {
            redirect_uri: "http://127.0.0.1:9/callback".to_string(),
        };
        if let Err(e) = oauth::authorize(&url, &settings, store, &approver).await {
            eprintln!("authorization failed: {e}");
            let _ = std::fs::remove_dir_all(&token_dir);
            return std::process::ExitCode::FAILURE;
        }
        Some(settings)
    } else {
        None
    };
    let spec = ServerSpec {
        name: "conformance".to_string(),
        transport: Transport::Http {
            url,
            headers: BTreeMap::new(),
            oauth,
        },
        call_timeout: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(30),
        tools: ToolFilter::default(),
        parallel: false,
        sampling: None,
        enabled: true,
        roots: Vec::new(),
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    let options = StartOptions {
        facts: SessionFacts {
            cwd,
            log_dir: None,
            token_dir: Some(token_dir.clone()),
            sampler: None,
            elicitor: Some(Arc::new(AcceptDefaults)),
        },
        builtin_names: HashSet::new(),
        discovery_wait: Duration::from_secs(40),
    };
    let manager = McpManager::start(vec![spec], options).await;
    let state = manager.server("conformance").map(|s| s.state());
    if state != Some(ServerState::Ready) {
        eprintln!("connect failed: {state:?}");
        let _ = std::fs::remove_dir_all(&token_dir);
        manager.shutdown().await;
        return std::process::ExitCode::FAILURE;
    }
    let mut ok = true;
    let tool = match scenario.as_str() {
        "tools_call" => Some((
            "mcp__conformance__add_numbers",
            serde_json::json!({"a": 5, "b": 3}),
        )),
        "elicitation-sep1034-client-defaults" => Some((
            "mcp__conformance__test_client_elicitation_defaults",
            serde_json::json!({}),
        )),
        "sse-retry" => Some(("mcp__conformance__test_reconnection", serde_json::json!({}))),
        s if s.starts_with("auth/") => Some(("mcp__conformance__test-tool", serde_json::json!({}))),
        _ => None,
    };
    if let Some((name, args)) = tool {
        let ctx = hermes_tools::ToolContext::for_tests(
            std::env::temp_dir(),
            hermes_protocol::HermesHome::new(std::env::temp_dir()),
        );
        match manager.tools().into_iter().find(|t| t.spec().name == name) {
            Some(tool) => {
                let out = tool.call(args, &ctx).await;
                println!("{}", out.content);
                ok = !out.is_error;
            }
            None => {
                eprintln!("the server offers no {name} tool");
                ok = false;
            }
        }
    }
    manager.shutdown().await;
    let _ = std::fs::remove_dir_all(&token_dir);
    if ok {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
