//! `hermes mcp serve` (issue 25 item 2): hermes as an MCP server, so Claude Code, Codex or
//! any MCP client can read the conversations, history, memory and skills of a hermes home
//! ([`tools`]). Built on rmcp's server side: stdio by default (the client starts
//! `hermes mcp serve` as a child process), Streamable HTTP with `--http`.
//!
//! The HTTP endpoint (`http://HOST:PORT/mcp`, loopback port 8650 by default) requires
//! `Authorization: Bearer <MCP_SERVE_KEY>` (it refuses to start without a key), answers only
//! `Host` values naming it (rmcp's DNS-rebinding check), refuses browser cross-site requests,
//! caps bodies at 1 MiB and connections at 64, and times out slow heads and bodies
//! (`hermes_gateway::serve`).
//!
//! Read-only by default: `messages_send` sends only with `mcp_serve: {allow_send: true}` in
//! config.yaml, through the platforms configured in `.env` (as `hermes send` would).

pub(crate) mod conversations;
mod events;
pub mod tools;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use tokio_util::sync::CancellationToken;

use crate::assembly::app::App;
use tools::{Bridge, ToolError};

/// Default port of `--http`.
pub const DEFAULT_HTTP_PORT: u16 = 8650;
/// Largest HTTP request body.
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// How `hermes mcp serve` was asked to run.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Streamable HTTP instead of stdio.
    pub http: bool,
    /// `--host` (default `127.0.0.1`).
    pub host: String,
    /// `--port` (default [`DEFAULT_HTTP_PORT`]; 0 picks one and prints it).
    pub port: u16,
}

/// The MCP server handler: the tool list and calls over one [`Bridge`].
#[derive(Clone)]
struct HermesServer {
    bridge: Arc<Bridge>,
}

impl ServerHandler for HermesServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("hermes", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Hermes agent: the conversations it had on Telegram, Discord, Slack and other \
                 platforms, their messages and new ones as events, its session history \
                 (sessions_search), memory and skills.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = tools::catalog()
            .into_iter()
            .map(|(name, description, schema)| Tool::new(name, description, schema))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let arguments = request.arguments.unwrap_or_default();
        match tools::call(&self.bridge, &name, arguments).await {
            Ok(value) => Ok(CallToolResult::structured(value).into()),
            Err(ToolError::Bad(why)) => {
                Ok(CallToolResult::structured_error(serde_json::json!({ "error": why })).into())
            }
            Err(ToolError::Unknown(name)) => Err(McpError::invalid_params(
                format!("unknown tool `{name}`"),
                None,
            )),
        }
    }
}

/// Whether `mcp_serve.allow_send` is true in config.yaml. Errors: a value that is not a
/// boolean.
fn allow_send(app: &App) -> Result<bool> {
    let Some(section) = &app.config.mcp_serve else {
        return Ok(false);
    };
    match section.get("allow_send") {
        None => Ok(false),
        Some(yaml_serde::Value::Bool(b)) => Ok(*b),
        Some(other) => bail!(
            "{}: mcp_serve.allow_send must be true or false, not {other:?}",
            app.home.config_file().display()
        ),
    }
}

/// Runs `hermes mcp serve`; returns the exit code.
pub async fn run(app: &App, options: &ServeOptions) -> Result<i32> {
    let store = app.open_store()?;
    let sender = if allow_send(app)? {
        Some(send_only(app).await?)
    } else {
        None
    };
    let events = Arc::new(events::Events::default());
    let stop = CancellationToken::new();
    let poller = tokio::spawn(events::run_poller(
        store.clone(),
        events.clone(),
        stop.clone(),
    ));
    let bridge = Arc::new(Bridge {
        store,
        home: app.home.clone(),
        config: app.config.clone(),
        events,
        sender,
    });
    let server = HermesServer { bridge };
    let result = if options.http {
        serve_http(app, server, options, stop.clone()).await
    } else {
        serve_stdio(server, stop.clone()).await
    };
    stop.cancel();
    let _ = poller.await;
    result.map(|()| 0)
}

async fn serve_stdio(server: HermesServer, stop: CancellationToken) -> Result<()> {
    let running = server
        .serve_with_ct(rmcp::transport::stdio(), stop.child_token())
        .await
        .map_err(|e| anyhow!("MCP handshake on stdin/stdout failed: {e}"))?;
    tokio::select! {
        done = running.waiting() => {
            done.map_err(|e| anyhow!("MCP server task failed: {e}"))?;
        }
        () = crate::commands::gateway::signalled() => {}
    }
    Ok(())
}

async fn serve_http(
    app: &App,
    server: HermesServer,
    options: &ServeOptions,
    stop: CancellationToken,
) -> Result<()> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let key = app
        .env
        .get("MCP_SERVE_KEY")
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty())
        .context("`hermes mcp serve --http` needs a bearer key: set MCP_SERVE_KEY in HERMES_HOME/.env (for example `openssl rand -hex 32`)")?;
    let ip: std::net::IpAddr = if options.host.eq_ignore_ascii_case("localhost") {
        [127, 0, 0, 1].into()
    } else {
        options
            .host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .map_err(|_| anyhow!("--host: `{}` is not an IP address", options.host))?
    };
    let addr = SocketAddr::new(ip, options.port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let bound = listener.local_addr().unwrap_or(addr);
    let hosts = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
        bound.to_string(),
        bound.ip().to_string(),
    ];
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_cancellation_token(stop.child_token());
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let key: Arc<str> = key.into();
    let app_router =
        axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn(move |req, next| {
                bearer(key.clone(), req, next)
            }));
    errln!("MCP server listening on http://{bound}/mcp");
    let limits = hermes_gateway::serve::ServeLimits {
        max_body_bytes: MAX_BODY_BYTES,
        ..Default::default()
    };
    let until = async move {
        tokio::select! {
            () = stop.cancelled() => {}
            () = crate::commands::gateway::signalled() => {}
        }
    };
    hermes_gateway::serve::serve_router(listener, app_router, limits, until)
        .await
        .context("MCP HTTP server")
}

/// Refuses a request without `Authorization: Bearer <key>` (401, compared in constant time).
async fn bearer(
    key: Arc<str>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    use subtle::ConstantTimeEq;
    let given = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if bool::from(given.as_bytes().ct_eq(key.as_bytes())) {
        return next.run(req).await;
    }
    (
        axum::http::StatusCode::UNAUTHORIZED,
        [(axum::http::header::WWW_AUTHENTICATE, "Bearer")],
        "missing or wrong bearer key (MCP_SERVE_KEY)\n",
    )
        .into_response()
}

/// What `hermes mcp serve`'s `messages_send` sends through: the platforms of `.env` as
/// send-only adapters (`gateway::send_adapters`) behind an [`hermes_gateway::Outbox`].
///
/// Errors: a platform's credentials or settings are unusable; no platform is configured.
pub(crate) async fn send_only(app: &App) -> Result<Arc<dyn tools::Sender>> {
    let adapters = crate::commands::gateway::send_adapters(app).await?;
    if adapters.is_empty() {
        return Err(anyhow!(
            "mcp_serve.allow_send is true but no platform is configured in HERMES_HOME/.env"
        ));
    }
    let outbox = hermes_gateway::Outbox::new(
        &adapters,
        hermes_gateway::outbox::home_channels_from_env(&app.env),
    );
    Ok(Arc::new(OutboxSender(outbox)))
}

/// [`send_only`]'s sender: `platform:chat_id[:thread_id]` targets through an outbox.
struct OutboxSender(hermes_gateway::Outbox);

#[async_trait::async_trait]
impl tools::Sender for OutboxSender {
    async fn send(&self, target: &str, text: &str) -> Result<serde_json::Value, String> {
        let address = hermes_protocol::ChatAddress::parse(target).map_err(|e| {
            format!("target {target:?} is not \"platform:chat_id\": {e} (see channels_list)")
        })?;
        let chat = hermes_gateway::ChatTarget {
            chat_id: address.chat_id,
            thread_id: address.thread_id,
            reply_to: None,
        };
        match self.0.send(&address.platform, Some(chat), text).await {
            Ok(n) => Ok(serde_json::json!({"success": true, "target": target, "parts": n})),
            Err(e) => Err(format!("Send failed: {e}")),
        }
    }
}
