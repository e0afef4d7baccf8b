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

/// Who answers the requests MCP servers make of a session.
#[derive(Clone, Default)]
pub struct ServerRequests {
    /// Serves `sampling/createMessage` (the session's model); `None` declines.
    pub sampler: Option<Arc<dyn hermes_mcp::sampling::Sampler>>,
    /// Answers `elicitation/create` (the user at a terminal); `None` declines (headless).
    pub elicitor: Option<Arc<dyn hermes_mcp::elicitation::Elicitor>>,
}

/// Starts the enabled servers of `config.yaml` for a session (waiting at most
/// [`DISCOVERY_WAIT`]); `None` when none are configured. Failures are reported once on stderr.
pub async fn start_for_session(
    app: &App,
    cwd: &std::path::Path,
    builtin: &[Arc<dyn Tool>],
    requests: ServerRequests,
) -> Option<McpManager> {
    let specs: Vec<ServerSpec> = configured(app).into_iter().filter(|s| s.enabled).collect();
    if specs.is_empty() {
        return None;
    }
    let mut opts = options(app, cwd, builtin, DISCOVERY_WAIT);
    opts.facts.sampler = requests.sampler;
    opts.facts.elicitor = requests.elicitor;
    let manager = McpManager::start(specs, opts).await;
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
            token_dir: Some(app.home.root().join("mcp-tokens")),
            sampler: None,
            elicitor: None,
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
        Transport::Http {
            url, oauth: None, ..
        } => format!("http: {url}"),
        Transport::Http { url, .. } => format!("http: {url} (oauth)"),
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
            let entry = serde_json::Value::Object(entry);
            edit_config(&app, |text| {
                crate::config_edit::set_server(text, name, &entry)
            })?;
            outln!("added MCP server `{name}`; check it with `hermes mcp test {name}`");
            Ok(0)
        }
        McpCmd::Login { name } => crate::mcp_login::login(&app, &configured(&app), name).await,
        McpCmd::Logout { name } => crate::mcp_login::logout(&app, name).await,
        McpCmd::Remove { name } => {
            edit_config(&app, |text| crate::config_edit::remove_server(text, name))?;
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

/// Applies a surgical edit ([`crate::config_edit`]) to config.yaml; comments and layout
/// outside the one entry are kept.
fn edit_config(
    app: &App,
    edit: impl FnOnce(&str) -> Result<String, crate::config_edit::EditError>,
) -> Result<()> {
    let path = app.home.config_file();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let out = edit(&text).map_err(|e| match e {
        crate::config_edit::EditError::Layout => anyhow::anyhow!(
            "{}: `mcp_servers` is not a plain block mapping (`name:` lines with indented \
             settings), so it cannot be edited without losing your layout; edit it by hand",
            path.display()
        ),
        other => anyhow::anyhow!("{}: {other}", path.display()),
    })?;
    hermes_protocol::private_fs::write_atomic(&path, out)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
