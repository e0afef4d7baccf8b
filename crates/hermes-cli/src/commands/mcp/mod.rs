//! `hermes mcp {list,add,remove,test,login,logout}` (FEATURES §11); OAuth login in [`login`];
//! `hermes mcp serve` (hermes as an MCP server) in [`serve`].
//! A session's MCP servers start in `crate::assembly::mcp`, whose resolution and start
//! options `test` shares.

pub mod login;
pub mod serve;

use clap::Subcommand;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use hermes_mcp::McpManager;
use hermes_mcp::config::{ServerSpec, Transport};
use hermes_mcp::server::ServerState;
use hermes_tools::Tool;

use crate::assembly::app::App;
use crate::assembly::mcp::{configured, options};

fn describe(spec: &ServerSpec) -> String {
    match &spec.transport {
        Transport::Stdio { command, args, .. } => format!("stdio: {command} {}", args.join(" ")),
        Transport::Http {
            url, oauth: None, ..
        } => format!("http: {url}"),
        Transport::Http { url, .. } => format!("http: {url} (oauth)"),
    }
}

/// `hermes mcp …`
#[derive(Debug, Subcommand)]
pub enum McpCmd {
    /// The configured servers.
    #[command(visible_alias = "ls")]
    List,
    /// Adds a server: `hermes mcp add NAME --url URL` or `hermes mcp add NAME -- CMD ARGS…`.
    Add {
        /// Server name (the key under `mcp_servers:`).
        name: String,
        /// Streamable HTTP endpoint.
        #[arg(long)]
        url: Option<String>,
        /// Environment of a stdio server, `KEY=value` (values may use `${VAR}`); repeatable.
        #[arg(long = "env")]
        env: Vec<String>,
        /// Command and arguments of a stdio server (after `--`).
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Removes a server.
    #[command(visible_alias = "rm")]
    Remove {
        /// Server name.
        name: String,
    },
    /// Connects to one server and lists its tools.
    Test {
        /// Server name.
        name: String,
    },
    /// Authorizes hermes with an `auth: oauth` server: prints the authorization URL to open
    /// in a browser and waits for the redirect to a loopback address; tokens are stored in
    /// `HERMES_HOME/mcp-tokens/<name>.json` (mode 0600).
    Login {
        /// Server name.
        name: String,
    },
    /// Forgets the OAuth tokens stored for a server.
    Logout {
        /// Server name.
        name: String,
    },
    /// Runs hermes as an MCP server (stdio; `--http` for Streamable HTTP): MCP clients read
    /// its conversations, messages, session history, memory and skills.
    Serve {
        /// Serve Streamable HTTP at `http://HOST:PORT/mcp` (needs MCP_SERVE_KEY) instead of
        /// stdio.
        #[arg(long)]
        http: bool,
        /// Address of `--http`.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Port of `--http` (0 picks a free one).
        #[arg(long, default_value_t = serve::DEFAULT_HTTP_PORT)]
        port: u16,
        /// Accepted for Python Hermes' command line; hermes logs to HERMES_HOME/logs either way.
        #[arg(long, short)]
        verbose: bool,
    },
    /// A Python Hermes `mcp` action hermes does not have.
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// Runs `hermes mcp …`; returns the exit code.
pub async fn run(profile: Option<&str>, action: &McpCmd) -> Result<i32> {
    let app = App::load(profile)?;
    match action {
        McpCmd::Other(words) => Ok(crate::commands::redirect::answer::<McpCmd>(&["mcp"], words)),
        McpCmd::Serve {
            http, host, port, ..
        } => {
            let options = serve::ServeOptions {
                http: *http,
                host: host.clone(),
                port: *port,
            };
            serve::run(&app, &options).await
        }
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
        McpCmd::Login { name } => login::login(&app, &configured(&app), name).await,
        McpCmd::Logout { name } => login::logout(&app, name).await,
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
            outln!(
                "connecting to `{name}` (up to {} s, its connect_timeout)…",
                spec.connect_timeout.as_secs()
            );
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
                    errln!("MCP server `{name}` failed: {e}");
                    1
                }
                other => {
                    errln!("MCP server `{name}` did not become ready: {other:?}");
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
