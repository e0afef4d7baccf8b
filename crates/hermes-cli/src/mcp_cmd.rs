//! `hermes mcp {list,add,remove,test}` (FEATURES §11) and the session's MCP servers: the
//! configured servers start concurrently at session start and their tools are appended after
//! the built-ins.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use hermes_mcp::config::{ServerSpec, Transport, resolve_section};
use hermes_mcp::server::{ServerState, SessionFacts};
use hermes_mcp::{McpManager, StartOptions};
use hermes_tools::Tool;

use crate::app::App;
use crate::args::McpCmd;

/// How long a session start waits for MCP servers before the first prompt; slower servers
/// keep starting and are used once ready (reconnect on first call).
pub const DISCOVERY_WAIT: Duration = Duration::from_secs(5);

fn lookup(app: &App) -> impl Fn(&str) -> Option<String> + '_ {
    move |k: &str| app.env.get(k).cloned()
}

/// The configured servers, resolved; bad entries are reported on stderr once.
pub fn configured(app: &App) -> Vec<ServerSpec> {
    let look = lookup(app);
    let (specs, errors) = resolve_section(app.config.mcp_servers.as_ref(), &look);
    for e in errors {
        eprintln!("warning: {e}");
    }
    specs
}

/// Starts the enabled servers of `config.yaml` for a session (waiting at most
/// [`DISCOVERY_WAIT`]); `None` when none are configured. Failures are reported once on stderr.
pub async fn start_for_session(
    app: &App,
    cwd: &std::path::Path,
    builtin: &[Arc<dyn Tool>],
) -> Option<McpManager> {
    let specs: Vec<ServerSpec> = configured(app).into_iter().filter(|s| s.enabled).collect();
    if specs.is_empty() {
        return None;
    }
    let manager = McpManager::start(specs, options(app, cwd, builtin, DISCOVERY_WAIT)).await;
    for r in manager.reports() {
        if let ServerState::Failed(e) = &r.state {
            eprintln!("warning: MCP server `{}` did not start: {e}", r.name);
        }
    }
    Some(manager)
}

fn options(
    app: &App,
    cwd: &std::path::Path,
    builtin: &[Arc<dyn Tool>],
    wait: Duration,
) -> StartOptions {
    StartOptions {
        facts: SessionFacts {
            cwd: cwd.to_path_buf(),
            log_dir: Some(app.home.root().join("logs")),
            sampler: None,
        },
        builtin_names: builtin
            .iter()
            .map(|t| t.spec().name)
            .collect::<HashSet<_>>(),
        discovery_wait: wait,
    }
}

fn describe(spec: &ServerSpec) -> String {
    match &spec.transport {
        Transport::Stdio { command, args, .. } => format!("stdio: {command} {}", args.join(" ")),
        Transport::Http { url, .. } => format!("http: {url}"),
    }
}

/// Runs `hermes mcp …`; returns the exit code.
pub async fn run(profile: Option<&str>, action: &McpCmd) -> Result<i32> {
    let app = App::load(profile)?;
    match action {
        McpCmd::List => {
            let specs = configured(&app);
            if specs.is_empty() {
                outln!("no MCP servers configured (add one with `hermes mcp add`)");
            }
            for s in specs {
                let state = if s.enabled { "enabled" } else { "disabled" };
                outln!("{}\t{state}\t{}", s.name, describe(&s));
            }
            Ok(0)
        }
        McpCmd::Add {
            name,
            url,
            env,
            command,
        } => {
            let mut entry = serde_json::Map::new();
            match (url, command.split_first()) {
                (Some(u), None) => {
                    entry.insert("url".into(), u.clone().into());
                }
                (None, Some((cmd, args))) => {
                    entry.insert("command".into(), cmd.clone().into());
                    entry.insert("args".into(), args.to_vec().into());
                }
                _ => bail!("give either --url URL or a command after `--`"),
            }
            if !env.is_empty() {
                let mut map = serde_json::Map::new();
                for kv in env {
                    let (k, v) = kv
                        .split_once('=')
                        .with_context(|| format!("--env `{kv}`: expected KEY=value"))?;
                    map.insert(k.to_string(), v.to_string().into());
                }
                entry.insert("env".into(), map.into());
            }
            edit_servers(&app, |servers| {
                servers.insert(name.clone(), serde_json::Value::Object(entry));
                Ok(())
            })?;
            outln!("added MCP server `{name}`; check it with `hermes mcp test {name}`");
            Ok(0)
        }
        McpCmd::Remove { name } => {
            edit_servers(&app, |servers| {
                servers
                    .remove(name)
                    .map(|_| ())
                    .with_context(|| format!("no MCP server named `{name}`"))
            })?;
            outln!("removed MCP server `{name}`");
            Ok(0)
        }
        McpCmd::Test { name } => {
            let Some(mut spec) = configured(&app).into_iter().find(|s| &s.name == name) else {
                bail!("no MCP server named `{name}` in config.yaml (see `hermes mcp list`)");
            };
            spec.enabled = true;
            let wait = spec.connect_timeout + Duration::from_secs(5);
            let cwd = std::env::current_dir().context("cannot read the current directory")?;
            let builtin = hermes_tools::Registry::builtin();
            let builtin: Vec<Arc<dyn Tool>> = builtin
                .names()
                .iter()
                .filter_map(|n| builtin.get(n))
                .collect();
            let manager = McpManager::start(vec![spec], options(&app, &cwd, &builtin, wait)).await;
            let code = match manager.server(name).map(|s| s.state()) {
                Some(ServerState::Ready) => {
                    let server = manager.server(name);
                    if let Some(s) = &server
                        && let Some(info) = s.server_info().await
                    {
                        outln!("connected: {info}");
                    }
                    if let Some(s) = &server
                        && s.ignored_lines() > 0
                    {
                        outln!(
                            "note: {} non-JSON-RPC stdout line(s) skipped",
                            s.ignored_lines()
                        );
                    }
                    let tools = manager.tools();
                    outln!("{} tool(s):", tools.len());
                    for t in tools {
                        outln!("  {}", t.spec().name);
                    }
                    0
                }
                Some(ServerState::Failed(e)) => {
                    eprintln!("MCP server `{name}` failed: {e}");
                    1
                }
                other => {
                    eprintln!("MCP server `{name}` did not become ready: {other:?}");
                    1
                }
            };
            manager.shutdown().await;
            Ok(code)
        }
    }
}

/// Rewrites `mcp_servers:` of config.yaml through `f` (YAML comments in the file are not
/// kept).
fn edit_servers(
    app: &App,
    f: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>) -> Result<()>,
) -> Result<()> {
    let path = app.home.config_file();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut doc: serde_json::Value = if text.trim().is_empty() {
        serde_json::json!({})
    } else {
        yaml_serde::from_str(&text).with_context(|| format!("reading {}", path.display()))?
    };
    if !doc.is_object() {
        bail!("{} is not a mapping", path.display());
    }
    let servers = doc
        .as_object_mut()
        .context("config is not a mapping")?
        .entry("mcp_servers")
        .or_insert_with(|| serde_json::json!({}));
    if servers.is_null() {
        *servers = serde_json::json!({});
    }
    let map = servers
        .as_object_mut()
        .context("`mcp_servers` in config.yaml is not a mapping")?;
    f(map)?;
    let out = yaml_serde::to_string(&doc)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, out).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
