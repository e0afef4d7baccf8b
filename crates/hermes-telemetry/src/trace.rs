//! The trace context of the current `tracing` span, in W3C Trace Context form (issue 24 §1):
//! the trace id stored with a turn's messages and the `traceparent` sent to MCP servers and,
//! when asked for, to model providers.
//!
//! A span has a trace context only when trace export is on (the binary installed the
//! `tracing-opentelemetry` layer); otherwise every function here answers `None`, so nothing
//! is stored or sent.
//!
//! Span attributes carry no message, prompt or tool text unless the operator turned content
//! capture on (`observability.capture_content: true`, [`enable_content_capture`]); captured
//! text passes through the redactor given there and is cut at [`MAX_CONTENT_BYTES`].

use std::collections::HashMap;
use std::sync::OnceLock;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The W3C header (and MCP `_meta` key) that carries the trace context.
pub const TRACEPARENT: &str = "traceparent";

/// The trace id of the current span: 32 lowercase hex digits, or `None` when the span is not
/// traced.
pub fn current_trace_id() -> Option<String> {
    let cx = tracing::Span::current().context();
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| sc.trace_id().to_string())
}

/// The current span's context as W3C headers: `traceparent` (`00-<trace>-<span>-<flags>`)
/// and `tracestate` when it has one. Empty when the span is not traced.
pub fn current_trace_headers() -> Vec<(String, String)> {
    let cx = tracing::Span::current().context();
    if !cx.span().span_context().is_valid() {
        return Vec::new();
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    let mut headers: Vec<(String, String)> = carrier.into_iter().collect();
    headers.sort();
    headers
}

/// The current span's `traceparent` value, or `None` when the span is not traced.
pub fn current_traceparent() -> Option<String> {
    current_trace_headers()
        .into_iter()
        .find(|(k, _)| k == TRACEPARENT)
        .map(|(_, v)| v)
}

/// The `tracing` layer that turns hermes' own spans into OpenTelemetry spans of `tracer`,
/// as every hermes binary and benchmark exports them: spans only (log events stay in the
/// logs), only targets starting with `hermes` (the HTTP and database libraries' spans stay
/// out), and none of the per-span extras that cost time on every poll of an instrumented
/// future and tell an operator nothing here (busy/idle time, source location, thread,
/// target, context activation on entry).
pub fn layer<S>(tracer: opentelemetry_sdk::trace::Tracer) -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer as _;
    let ours = tracing_subscriber::filter::filter_fn(|meta| {
        meta.is_span() && meta.target().starts_with("hermes")
    });
    tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_tracked_inactivity(false)
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_context_activation(false)
        .with_filter(ours)
}

/// Longest captured text attribute, in bytes (longer text is cut, marked with `…`).
pub const MAX_CONTENT_BYTES: usize = 16 * 1024;

type Redactor = dyn Fn(&str) -> String + Send + Sync;

static CAPTURE: OnceLock<Box<Redactor>> = OnceLock::new();

/// Turns content capture on for the process (once; later calls are ignored): the text
/// attributes of model and tool spans are recorded, each through `redact` first.
pub fn enable_content_capture(redact: impl Fn(&str) -> String + Send + Sync + 'static) {
    let _ = CAPTURE.set(Box::new(redact));
}

/// Whether content capture is on (build the text only then).
pub fn capturing_content() -> bool {
    CAPTURE.get().is_some()
}

/// `text` redacted and cut to its first [`MAX_CONTENT_BYTES`], or `None` when capture is off.
pub fn captured(text: &str) -> Option<String> {
    let redact = CAPTURE.get()?;
    let text = redact(text);
    if text.len() <= MAX_CONTENT_BYTES {
        return Some(text);
    }
    let mut end = MAX_CONTENT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(format!("{}…", &text[..end]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::layer::SubscriberExt as _;

    #[test]
    fn captured_text_is_redacted_and_cut_on_a_character_boundary() {
        // One process-wide switch: this is the only test that turns it on.
        assert_eq!(captured("x"), None);
        enable_content_capture(|t| t.replace("sk-secret", "***"));
        assert!(capturing_content());
        assert_eq!(captured("key sk-secret").as_deref(), Some("key ***"));
        let long = "é".repeat(MAX_CONTENT_BYTES);
        let cut = captured(&long).unwrap();
        assert!(cut.ends_with('…'));
        assert!(cut.len() <= MAX_CONTENT_BYTES + '…'.len_utf8());
    }

    #[test]
    fn untraced_spans_have_no_context() {
        let _span = tracing::info_span!("plain").entered();
        assert_eq!(current_trace_id(), None);
        assert!(current_trace_headers().is_empty());
    }

    #[test]
    fn traced_spans_give_a_w3c_traceparent_with_their_trace_id() {
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry().with(layer(provider.tracer("test")));
        tracing::subscriber::with_default(subscriber, || {
            let _turn = tracing::info_span!("turn").entered();
            let id = current_trace_id().expect("a traced span has a trace id");
            assert_eq!(id.len(), 32);
            let _inner = tracing::info_span!("execute_tool").entered();
            let parent = current_traceparent().expect("traceparent");
            let parts: Vec<&str> = parent.split('-').collect();
            assert_eq!(parts.len(), 4, "{parent}");
            assert_eq!(parts[0], "00");
            assert_eq!(parts[1], id, "one trace for the turn and its children");
            assert_eq!(parts[2].len(), 16);
            assert_eq!(parts[3], "01", "sampled");
        });
    }
}
