//! Trace context to MCP servers (issue 24 §1): a tool call made inside a traced span sends
//! the W3C `traceparent` in `params._meta` (SEP-414) and, over Streamable HTTP, as a header;
//! its parent is the call's own `tools/call {tool}` span, in the caller's trace. Untraced
//! calls (trace export off) send neither. The server is rmcp's Streamable HTTP server on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use common::*;
use hermes_mcp::config::Transport;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt as _;

/// What the server saw of each `tools/call`: the `traceparent` header and `_meta` value.
#[derive(Default)]
struct Seen {
    headers: Vec<Option<String>>,
    metas: Vec<Option<String>>,
}

#[derive(Clone)]
struct Echo(Arc<Mutex<Seen>>);

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object"}).as_object().unwrap().clone();
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo", "echo", schema,
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let header = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.headers.get("traceparent"))
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        // rmcp hands the request's `_meta` over as the context's.
        let meta = request
            .meta
            .as_ref()
            .unwrap_or(&context.meta)
            .0
            .get_traceparent()
            .map(str::to_string);
        let mut seen = self.0.lock().unwrap();
        seen.headers.push(header);
        seen.metas.push(meta);
        Ok(CallToolResult::success(vec![ContentBlock::text("ok")]).into())
    }
}

#[derive(Debug, Clone, Default)]
struct Collected(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Collected {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

#[tokio::test]
async fn tool_calls_carry_the_trace_context_in_meta_and_headers() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let handler = Echo(seen.clone());
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().nest_service("/mcp", service);
    tokio::spawn(async move { axum::serve(listener, app).await });

    let spans = Collected::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(spans.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));

    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec("web", "unused", vec![], BTreeMap::new());
    spec.transport = Transport::Http {
        url: format!("http://127.0.0.1:{port}/mcp"),
        headers: BTreeMap::new(),
        oauth: None,
    };
    let m = start(vec![spec], dir.path()).await;
    assert!(eventually(|| m.tools().iter().any(|t| t.spec().name == "mcp__web__echo")).await);
    let echo = m
        .tools()
        .into_iter()
        .find(|t| t.spec().name == "mcp__web__echo")
        .unwrap();

    // Trace export off (no OpenTelemetry layer): nothing is sent.
    let out = echo.call(json!({}), &ctx(dir.path())).await;
    assert_eq!(out.content, "ok");

    let _guard = tracing::subscriber::set_default(subscriber);

    // Traced: the turn's trace reaches the server both ways.
    let trace_id = {
        use tracing::Instrument;
        let turn = tracing::info_span!("turn");
        async {
            let id = hermes_telemetry::trace::current_trace_id().unwrap();
            let out = echo.call(json!({}), &ctx(dir.path())).await;
            assert_eq!(out.content, "ok");
            id
        }
        .instrument(turn)
        .await
    };
    m.shutdown().await;
    let _ = provider.force_flush();

    let seen = seen.lock().unwrap();
    assert_eq!(seen.headers.len(), 2);
    assert_eq!(seen.headers[0], None, "an untraced call sends no header");
    assert_eq!(seen.metas[0], None, "an untraced call sends no _meta");
    let header = seen.headers[1].clone().expect("traceparent header");
    assert_eq!(seen.metas[1].as_deref(), Some(header.as_str()));
    let parts: Vec<&str> = header.split('-').collect();
    assert_eq!(parts[1], trace_id, "the caller's trace");

    let spans = spans.0.lock().unwrap();
    let call = spans
        .iter()
        .find(|s| s.name == "tools/call echo")
        .unwrap_or_else(|| {
            panic!(
                "no `tools/call echo` span in {:?}",
                spans.iter().map(|s| &s.name).collect::<Vec<_>>()
            )
        });
    assert_eq!(call.span_context.trace_id().to_string(), trace_id);
    assert_eq!(
        call.span_context.span_id().to_string(),
        parts[2],
        "the server's parent is the call span"
    );
    let attr = |k: &str| {
        call.attributes
            .iter()
            .find(|kv| kv.key.as_str() == k)
            .map(|kv| kv.value.to_string())
    };
    assert_eq!(attr("mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(attr("gen_ai.tool.name").as_deref(), Some("echo"));
    assert_eq!(attr("network.transport").as_deref(), Some("tcp"));
}
