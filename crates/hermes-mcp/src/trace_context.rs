//! W3C trace context for MCP requests (issue 24 §1): a request made inside a traced span
//! carries `traceparent` (and `tracestate`) in its `params._meta`, as MCP's SEP-414 and the
//! OpenTelemetry conventions for MCP say, and — over Streamable HTTP — as HTTP headers too,
//! so a server's HTTP middleware joins the trace without reading the JSON body.
//!
//! Outside a traced span (trace export off) nothing is added.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use serde_json::{Map, Value};

/// The current span's trace context as a `_meta` object (`{"traceparent": …}`), or `None`.
pub(crate) fn meta() -> Option<Map<String, Value>> {
    let headers = hermes_telemetry::trace::current_trace_headers();
    (!headers.is_empty()).then(|| {
        headers
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect()
    })
}

/// The `traceparent`/`tracestate` of a message's `params._meta`, as headers.
fn headers_of(message: &ClientJsonRpcMessage) -> Vec<(HeaderName, HeaderValue)> {
    let ClientJsonRpcMessage::Request(_) = message else {
        return Vec::new();
    };
    let Ok(value) = serde_json::to_value(message) else {
        return Vec::new();
    };
    let Some(meta) = value.pointer("/params/_meta").and_then(Value::as_object) else {
        return Vec::new();
    };
    ["traceparent", "tracestate"]
        .into_iter()
        .filter_map(|key| {
            let v = meta.get(key)?.as_str()?;
            Some((HeaderName::from_static(key), HeaderValue::from_str(v).ok()?))
        })
        .collect()
}

fn with_trace(
    message: &ClientJsonRpcMessage,
    mut custom: HashMap<HeaderName, HeaderValue>,
) -> HashMap<HeaderName, HeaderValue> {
    custom.extend(headers_of(message));
    custom
}

/// A Streamable HTTP client that copies each request's `_meta` trace context into
/// `traceparent`/`tracestate` headers; everything else goes to the wrapped client unchanged
/// (its limits, redirects and authorization included).
#[derive(Clone)]
pub(crate) struct TraceHeaders<C>(pub(crate) C);

impl<C> StreamableHttpClient for TraceHeaders<C>
where
    C: StreamableHttpClient + Send + Sync,
{
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let custom_headers = with_trace(&message, custom_headers);
        self.0
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let custom_headers = with_trace(&message, custom_headers);
        self.0
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let custom_headers = with_trace(&message, custom_headers);
        self.0
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>,
        StreamableHttpError<Self::Error>,
    > {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>,
        StreamableHttpError<Self::Error>,
    > {
        self.0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
