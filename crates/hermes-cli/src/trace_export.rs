//! Trace export over OTLP/HTTP with protobuf (issue 24 §1): the spans of hermes' own crates
//! (a turn, its model calls, tool calls, compressions, store writes) become OpenTelemetry
//! spans through `tracing-opentelemetry`, batched by the SDK's batch processor on a thread of
//! its own, and posted to the collector.
//!
//! On when an endpoint is set, first found of: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as
//! is), `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` appended, as the OTLP exporter spec
//! says), `observability.otlp.endpoint` in config.yaml (as the generic variable). The
//! service name is `OTEL_SERVICE_NAME`, else `hermes`.
//!
//! A turn never waits for the collector: spans go to a bounded queue (2,048; more are
//! dropped) and each batch is sent with a 5 s timeout. A collector that is down or refuses
//! is logged once (`agent.log`), its batches dropped; nothing is retried.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};

/// How long one batch may take to reach the collector.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the exit waits for the last spans to be sent.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(3);

static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// The traces endpoint from the environment and `config_endpoint` (module docs), or `None`.
/// `config_endpoint` (reading config.yaml) is called only when no variable is set.
pub(crate) fn endpoint(
    var: impl Fn(&str) -> Option<String>,
    config_endpoint: impl FnOnce() -> Option<String>,
) -> Option<String> {
    let set = |v: Option<String>| v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    if let Some(url) = set(var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) {
        return Some(url);
    }
    let base = set(var("OTEL_EXPORTER_OTLP_ENDPOINT")).or_else(|| set(config_endpoint()))?;
    Some(format!("{}/v1/traces", base.trim_end_matches('/')))
}

/// Wraps the OTLP exporter: the first failure is logged, every failed batch is dropped
/// (reported as sent, so the SDK neither retries nor logs it again).
#[derive(Debug)]
struct QuietExporter<E> {
    inner: E,
    endpoint: String,
    warned: AtomicBool,
}

impl<E: SpanExporter> SpanExporter for QuietExporter<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        if let Err(e) = self.inner.export(batch).await
            && !self.warned.swap(true, Ordering::Relaxed)
        {
            tracing::warn!(endpoint = %self.endpoint, error = %e,
                "trace export failed; spans are dropped while the collector does not answer (logged once)");
        }
        Ok(())
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

/// The tracing layer exporting hermes' spans to `endpoint`, or `None` (logged) when the
/// exporter cannot be built. Keeps the provider for [`shutdown`].
pub(crate) fn layer<S>(endpoint: &str) -> Option<impl tracing_subscriber::Layer<S> + use<S>>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer;
    // reqwest is built without a default TLS provider (an `https://` collector needs it).
    hermes_llm::init_tls();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .with_timeout(EXPORT_TIMEOUT)
        .with_headers(std::collections::HashMap::new())
        .build();
    let exporter = match exporter {
        Ok(e) => e,
        Err(e) => {
            // The subscriber is not up yet: this line goes to stderr once.
            eprintln!("warning: traces are not exported to {endpoint}: {e}");
            return None;
        }
    };
    let service = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "hermes".to_string());
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service)
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(QuietExporter {
            inner: exporter,
            endpoint: endpoint.to_string(),
            warned: AtomicBool::new(false),
        })
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("hermes");
    let _ = PROVIDER.set(provider);
    // Only hermes' own spans: the HTTP and database libraries' spans stay out.
    let ours = tracing_subscriber::filter::filter_fn(|meta| {
        meta.is_span() && meta.target().starts_with("hermes")
    });
    Some(
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(ours),
    )
}

/// Sends the spans still queued (waiting at most [`SHUTDOWN_TIMEOUT`]); call before exit.
pub(crate) fn shutdown() {
    if let Some(provider) = PROVIDER.get() {
        let _ = provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_follow_the_otlp_exporter_variables() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(endpoint(env(&[]), || None), None);
        assert_eq!(
            endpoint(
                env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")]),
                || None
            ),
            Some("http://c:4318/v1/traces".to_string())
        );
        assert_eq!(
            endpoint(
                env(&[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t/x")
                ]),
                || Some("http://cfg:4318".into())
            ),
            Some("http://t/x".to_string())
        );
        assert_eq!(
            endpoint(env(&[]), || Some("http://cfg:4318".into())),
            Some("http://cfg:4318/v1/traces".to_string())
        );
    }
}
