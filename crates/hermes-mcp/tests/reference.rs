//! Integration tests against the real MCP reference servers (npm: server-everything,
//! server-filesystem, server-memory; PyPI: mcp-server-time), installed into a cache by
//! `scripts/mcp-peers.sh` (which `.ci/run` calls). Skipped with a printed reason only when
//! npm (or python3 for the time server) is missing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use hermes_mcp::config::{ServerSpec, Transport};
use hermes_mcp::server::ServerState;
use hermes_mcp::{McpManager, sampling::Sampler};
use hermes_tools::Tool;
use serde_json::{Value, json};

fn node_server(peers: &Path, name: &str, package: &str, args: &[&str]) -> ServerSpec {
    let script = peers.join(format!(
        "node_modules/@modelcontextprotocol/{package}/dist/index.js"
    ));
    let mut a = vec![script.display().to_string()];
    a.extend(args.iter().map(|s| s.to_string()));
    spec(name, "node", a, base_env())
}

fn tool(m: &McpManager, name: &str) -> Arc<dyn Tool> {
    m.tools()
        .into_iter()
        .find(|t| t.spec().name == name)
        .unwrap_or_else(|| panic!("no tool {name}; have {:?}", names(m)))
}

fn names(m: &McpManager) -> Vec<String> {
    m.tools().iter().map(|t| t.spec().name).collect()
}

async fn call(m: &McpManager, name: &str, args: Value, cwd: &Path) -> hermes_tools::ToolOutput {
    tool(m, name).call(args, &ctx(cwd)).await
}

struct CannedSampler;

#[async_trait::async_trait]
impl Sampler for CannedSampler {
    async fn sample(&self, request: Value) -> Result<Value, String> {
        assert!(
            request["maxTokens"].as_u64().unwrap() <= hermes_mcp::sampling::MAX_SAMPLING_TOKENS
        );
        Ok(
            json!({"role": "assistant", "content": {"type": "text", "text": "canned sampling reply"},
                  "model": "test-model", "stopReason": "endTurn"}),
        )
    }
}

#[tokio::test]
async fn everything_server_tools_results_resources_prompts_roots_sampling() {
    let Some(peers) = peers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut spec = node_server(&peers, "everything", "server-everything", &["stdio"]);
    spec.sampling = Some(hermes_mcp::sampling::SamplingCaps::default());
    spec.roots = vec![dir.path().to_path_buf()];
    let mut opts = options(dir.path());
    opts.facts.sampler = Some(Arc::new(CannedSampler));
    let m = McpManager::start(vec![spec], opts).await;
    let s = m.server("everything").unwrap();
    assert_eq!(s.state(), ServerState::Ready);
    // The four list_changed at start (and the roots round trip) end in the full list (16 in
    // the transcript; trigger-elicitation-request is offered because hermes always declares
    // elicitation).
    assert!(
        eventually(|| s.tools().len() >= 15
            && names(&m).contains(&"mcp__everything__get-roots-list".to_string()))
        .await,
        "tools: {:?}",
        names(&m)
    );
    assert!(m.generation() >= 1);
    assert!(
        names(&m)
            .iter()
            .all(|n| hermes_mcp::naming::is_valid_name(n))
    );

    let echo = call(
        &m,
        "mcp__everything__echo",
        json!({"message": "hi"}),
        dir.path(),
    )
    .await;
    assert_eq!(echo.content, "Echo: hi");
    assert!(!echo.is_error);
    let sum = call(
        &m,
        "mcp__everything__get-sum",
        json!({"a": 2, "b": 3}),
        dir.path(),
    )
    .await;
    assert!(sum.content.contains("is 5"), "{}", sum.content);
    let image = call(&m, "mcp__everything__get-tiny-image", json!({}), dir.path()).await;
    assert!(
        image.content.contains("[image image/png:"),
        "{}",
        image.content
    );
    let links = call(
        &m,
        "mcp__everything__get-resource-links",
        json!({"count": 2}),
        dir.path(),
    )
    .await;
    assert!(
        links.content.contains("[resource link]"),
        "{}",
        links.content
    );
    let bad = call(
        &m,
        "mcp__everything__get-sum",
        json!({"a": "x"}),
        dir.path(),
    )
    .await;
    assert!(bad.is_error, "isError results stay errors: {}", bad.content);
    assert!(
        !m.reports()[0].breaker_open,
        "a tool's own error is not a server failure"
    );

    let res = call(
        &m,
        "mcp__everything__read_resource",
        json!({"uri": "demo://resource/dynamic/text/1"}),
        dir.path(),
    )
    .await;
    assert!(res.content.contains("Resource 1"), "{}", res.content);
    let listed = call(&m, "mcp__everything__list_resources", json!({}), dir.path()).await;
    assert!(
        listed.content.contains("demo://resource/static/document/"),
        "{}",
        listed.content
    );
    let prompt = call(
        &m,
        "mcp__everything__get_prompt",
        json!({"name": "args-prompt", "arguments": {"city": "Paris"}}),
        dir.path(),
    )
    .await;
    assert!(prompt.content.contains("Paris"), "{}", prompt.content);

    let roots = call(&m, "mcp__everything__get-roots-list", json!({}), dir.path()).await;
    assert!(
        roots
            .content
            .contains(&format!("file://{}", dir.path().display())),
        "{}",
        roots.content
    );
    let sampled = call(
        &m,
        "mcp__everything__trigger-sampling-request",
        json!({"prompt": "Say hi", "maxTokens": 20}),
        dir.path(),
    )
    .await;
    assert!(
        sampled.content.contains("canned sampling reply"),
        "{}",
        sampled.content
    );
    // Headless (no elicitor): the server's form is declined.
    assert!(
        eventually(
            || names(&m).contains(&"mcp__everything__trigger-elicitation-request".to_string())
        )
        .await,
        "{:?}",
        names(&m)
    );
    let declined = call(
        &m,
        "mcp__everything__trigger-elicitation-request",
        json!({}),
        dir.path(),
    )
    .await;
    assert!(
        declined.content.contains("declined"),
        "{}",
        declined.content
    );
    m.shutdown().await;
}

/// Fills the everything server's form: its defaults plus a name and a ticked box.
struct FormFiller;

#[async_trait::async_trait]
impl hermes_mcp::elicitation::Elicitor for FormFiller {
    async fn elicit(
        &self,
        request: hermes_mcp::elicitation::ElicitationRequest,
    ) -> hermes_mcp::elicitation::ElicitationAnswer {
        let mut answer = hermes_mcp::elicitation::defaults_of(&request.schema);
        answer.insert("name".into(), json!("Ada Lovelace"));
        answer.insert("check".into(), json!(true));
        hermes_mcp::elicitation::ElicitationAnswer::Accept(answer)
    }
}

#[tokio::test]
async fn everything_server_elicitation_form_is_answered_by_the_front_end() {
    let Some(peers) = peers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spec = node_server(&peers, "everything", "server-everything", &["stdio"]);
    let mut opts = options(dir.path());
    opts.facts.elicitor = Some(Arc::new(FormFiller));
    let m = McpManager::start(vec![spec], opts).await;
    assert!(
        eventually(
            || names(&m).contains(&"mcp__everything__trigger-elicitation-request".to_string())
        )
        .await,
        "{:?}",
        names(&m)
    );
    let out = call(
        &m,
        "mcp__everything__trigger-elicitation-request",
        json!({}),
        dir.path(),
    )
    .await;
    assert!(
        out.content
            .contains("User provided the requested information")
            && out.content.contains("Name: Ada Lovelace")
            && out.content.contains("Agreed to terms: true"),
        "{}",
        out.content
    );
    m.shutdown().await;
}

#[tokio::test]
async fn everything_server_over_streamable_http() {
    let Some(peers) = peers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = peers.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let mut child = tokio::process::Command::new("node")
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut up = false;
    for _ in 0..300 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(up, "server-everything did not listen on {port}");
    let mut spec = spec("web", "unused", vec![], BTreeMap::new());
    spec.transport = Transport::Http {
        url: format!("http://127.0.0.1:{port}/mcp"),
        headers: [("X-Test".to_string(), "1".to_string())].into(),
        oauth: None,
    };
    let m = start(vec![spec], dir.path()).await;
    assert_eq!(
        m.server("web").unwrap().state(),
        ServerState::Ready,
        "{:?}",
        m.reports()
    );
    assert!(eventually(|| names(&m).contains(&"mcp__web__echo".to_string())).await);
    let echo = call(
        &m,
        "mcp__web__echo",
        json!({"message": "over http"}),
        dir.path(),
    )
    .await;
    assert_eq!(echo.content, "Echo: over http");
    m.shutdown().await;
    let _ = child.kill().await;
}

#[tokio::test]
async fn filesystem_server_reads_in_the_root_it_was_given() {
    let Some(peers) = peers() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hello from sandbox\n").unwrap();
    let root = dir.path().display().to_string();
    let m = start(
        vec![node_server(
            &peers,
            "filesystem",
            "server-filesystem",
            &[&root],
        )],
        dir.path(),
    )
    .await;
    let path = dir.path().join("hello.txt").display().to_string();
    let out = call(
        &m,
        "mcp__filesystem__read_text_file",
        json!({"path": path}),
        dir.path(),
    )
    .await;
    assert_eq!(out.content, "hello from sandbox\n");
    let denied = call(
        &m,
        "mcp__filesystem__read_text_file",
        json!({"path": "/etc/passwd"}),
        dir.path(),
    )
    .await;
    assert!(
        denied.is_error && denied.content.contains("Access denied"),
        "{}",
        denied.content
    );
    m.shutdown().await;
}

/// Issue 18 §5: without `roots:` the session's working directory is not offered, so the
/// filesystem server keeps the folder its arguments name (it used to replace it with the
/// cwd it was offered); with `roots:` it serves exactly the configured folders.
#[tokio::test]
async fn filesystem_server_gets_roots_only_when_configured() {
    let Some(peers) = peers() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let allowed = cwd.path().join("allowed");
    let configured = cwd.path().join("configured");
    std::fs::create_dir_all(&allowed).unwrap();
    std::fs::create_dir_all(&configured).unwrap();
    std::fs::write(cwd.path().join("outside.txt"), "cwd secret\n").unwrap();
    std::fs::write(allowed.join("in.txt"), "allowed text\n").unwrap();
    std::fs::write(configured.join("root.txt"), "root text\n").unwrap();
    let arg = allowed.display().to_string();
    let read = |m: &McpManager, path: std::path::PathBuf| {
        let t = tool(m, "mcp__fs__read_text_file");
        let c = ctx(cwd.path());
        async move {
            t.call(json!({"path": path.display().to_string()}), &c)
                .await
        }
    };

    // Not configured: the server's own folder only; the cwd stays out of reach.
    let m = start(
        vec![node_server(&peers, "fs", "server-filesystem", &[&arg])],
        cwd.path(),
    )
    .await;
    assert_eq!(
        read(&m, allowed.join("in.txt")).await.content,
        "allowed text\n"
    );
    // Give a (wrongly) roots-asking server time to apply them before checking.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let out = read(&m, cwd.path().join("outside.txt")).await;
    assert!(
        out.is_error && out.content.contains("Access denied"),
        "the cwd must not become readable: {}",
        out.content
    );
    let dirs = call(
        &m,
        "mcp__fs__list_allowed_directories",
        json!({}),
        cwd.path(),
    )
    .await;
    assert!(
        !dirs.content.contains(&configured.display().to_string()),
        "{}",
        dirs.content
    );
    m.shutdown().await;

    // Configured: the roots replace the argument folder, exactly as listed.
    let mut spec = node_server(&peers, "fs", "server-filesystem", &[&arg]);
    spec.roots = vec![configured.clone()];
    let m = start(vec![spec], cwd.path()).await;
    // The server asks for the roots after `initialized`; wait until it applied them.
    let mut applied = false;
    for _ in 0..100 {
        if !read(&m, configured.join("root.txt")).await.is_error {
            applied = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(applied, "the configured root never became readable");
    assert_eq!(
        read(&m, configured.join("root.txt")).await.content,
        "root text\n"
    );
    let out = read(&m, cwd.path().join("outside.txt")).await;
    assert!(out.is_error, "{}", out.content);
    m.shutdown().await;
}

#[tokio::test]
async fn memory_server_writes_and_reads_its_graph() {
    let Some(peers) = peers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut spec = node_server(&peers, "memory", "server-memory", &[]);
    if let Transport::Stdio { env, .. } = &mut spec.transport {
        env.insert(
            "MEMORY_FILE_PATH".into(),
            dir.path().join("memory.jsonl").display().to_string(),
        );
    }
    let m = start(vec![spec], dir.path()).await;
    let created = call(&m, "mcp__memory__create_entities",
        json!({"entities": [{"name": "Hermes", "entityType": "agent", "observations": ["written in Rust"]}]}), dir.path()).await;
    assert!(!created.is_error, "{}", created.content);
    let found = call(
        &m,
        "mcp__memory__search_nodes",
        json!({"query": "Rust"}),
        dir.path(),
    )
    .await;
    assert!(found.content.contains("Hermes"), "{}", found.content);
    let graph = call(
        &m,
        "mcp__memory__read_resource",
        json!({"uri": "memory://knowledge-graph"}),
        dir.path(),
    )
    .await;
    assert!(graph.content.contains("Hermes"), "{}", graph.content);
    m.shutdown().await;
}

#[tokio::test]
async fn time_server_from_pypi() {
    let Some(peers) = peers() else { return };
    let exe = peers.join("pyvenv/bin/mcp-server-time");
    if !exe.exists() {
        assert!(
            !have("python3"),
            "python3 exists, so mcp-peers.sh must have installed {exe:?}"
        );
        eprintln!("skipped: python3 is missing, so mcp-server-time cannot be installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = spec(
        "time",
        &exe.display().to_string(),
        vec!["--local-timezone".into(), "UTC".into()],
        base_env(),
    );
    let m = start(vec![s], dir.path()).await;
    let out = call(
        &m,
        "mcp__time__get_current_time",
        json!({"timezone": "Europe/Paris"}),
        dir.path(),
    )
    .await;
    assert!(
        out.content.contains("Europe/Paris") && !out.is_error,
        "{}",
        out.content
    );
    let bad = call(
        &m,
        "mcp__time__get_current_time",
        json!({"timezone": "Mars/Olympus"}),
        dir.path(),
    )
    .await;
    assert!(bad.is_error, "{}", bad.content);
    m.shutdown().await;
}
