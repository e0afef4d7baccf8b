//! Trace export over OTLP (issue 24 §1): the spans of hermes' own crates (a turn, its model
//! calls, tool calls, compressions, store writes) become OpenTelemetry spans through
//! `tracing-opentelemetry`, batched by the SDK's batch processor on a thread of its own, and
//! sent to the collector over HTTP with protobuf (the default) or gRPC.
//!
//! On when an endpoint is set, first found of: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as
//! is), `OTEL_EXPORTER_OTLP_ENDPOINT` (HTTP: `/v1/traces` appended, as the OTLP exporter
//! spec says; gRPC: used as is), `observability.otlp.endpoint` in config.yaml (as the
//! generic variable). The protocol is `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else
//! `OTEL_EXPORTER_OTLP_PROTOCOL`, else `observability.otlp.protocol`: `http/protobuf`
//! (default) or `grpc`. The service name is `OTEL_SERVICE_NAME`, else `hermes`.
//! `OTEL_SDK_DISABLED=true` (the SDK configuration spec's switch, without case) turns export
//! off whatever else is set.
//!
//! A turn never waits for the collector: spans go to a bounded queue (2,048; more are
//! dropped) and each batch is sent once with a 5 s timeout. A collector that is down or
//! refuses is logged once (`agent.log`), its batches dropped; nothing is retried; a redirect
//! is an answer like any other refusal, not followed (spans go only where the endpoint
//! says). At exit the queued spans get [`SHUTDOWN_TIMEOUT`]; when they cannot be sent in it,
//! `agent.log` says so. gRPC runs on a one-thread runtime of its own, so export never
//! competes with the agent's tasks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig as _, WithTonicConfig as _};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};

/// How long one batch may take to reach the collector.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the exit waits for the last spans to be sent.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(3);

static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// The OTLP transport (the exporter spec's `OTEL_EXPORTER_OTLP_PROTOCOL` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// `http/protobuf`: POST to `…/v1/traces`.
    HttpProtobuf,
    /// `grpc`: the `TraceService/Export` call.
    Grpc,
}

/// Where and how spans are sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The full URL (HTTP) or the collector's address (gRPC).
    pub(crate) url: String,
    /// The transport.
    pub(crate) protocol: Protocol,
}

/// The `observability.otlp` settings of config.yaml that pick the target.
#[derive(Debug, Clone, Default)]
pub(crate) struct OtlpSettings {
    /// `observability.otlp.endpoint`.
    pub(crate) endpoint: Option<String>,
    /// `observability.otlp.protocol`.
    pub(crate) protocol: Option<String>,
}

/// The export target from the environment and config.yaml (module docs), or `None`, and a
/// warning for a protocol hermes does not speak (`http/json`, or a misspelling: spans then
/// go over `http/protobuf`). `config` (reading config.yaml) is called only when a variable
/// is unset.
pub(crate) fn target(
    var: impl Fn(&str) -> Option<String>,
    config: impl FnOnce() -> OtlpSettings,
) -> (Option<Target>, Option<String>) {
    let set = |v: Option<String>| v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    if set(var("OTEL_SDK_DISABLED")).is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return (None, None);
    }
    let traces_url = set(var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"));
    let base_url = set(var("OTEL_EXPORTER_OTLP_ENDPOINT"));
    let protocol = set(var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
        .or_else(|| set(var("OTEL_EXPORTER_OTLP_PROTOCOL")));
    let needs_config = (traces_url.is_none() && base_url.is_none()) || protocol.is_none();
    let from_config = if needs_config {
        config()
    } else {
        OtlpSettings::default()
    };
    let protocol = protocol.or_else(|| set(from_config.protocol));
    // Without case, as the exporter spec's values are read by the OTLP crate too.
    let (protocol, warning) = match protocol {
        None => (Protocol::HttpProtobuf, None),
        Some(p) if p.eq_ignore_ascii_case("http/protobuf") => (Protocol::HttpProtobuf, None),
        Some(p) if p.eq_ignore_ascii_case("grpc") => (Protocol::Grpc, None),
        Some(other) => (
            Protocol::HttpProtobuf,
            Some(format!(
                "OTLP protocol `{other}` is not supported (use `http/protobuf` or `grpc`); \
                 sending traces over http/protobuf"
            )),
        ),
    };
    let url = match traces_url {
        Some(url) => Some(url),
        None => base_url
            .or_else(|| set(from_config.endpoint))
            .map(|base| match protocol {
                Protocol::HttpProtobuf => format!("{}/v1/traces", base.trim_end_matches('/')),
                Protocol::Grpc => base,
            }),
    };
    (url.map(|url| Target { url, protocol }), warning)
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

/// Runs an exporter's calls on [`grpc_runtime`]: tonic needs a Tokio runtime, and the batch
/// processor's thread has none.
#[derive(Debug)]
struct OnRuntime<E> {
    inner: Arc<E>,
    handle: tokio::runtime::Handle,
}

impl<E: SpanExporter + 'static> SpanExporter for OnRuntime<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let inner = self.inner.clone();
        match self
            .handle
            .spawn(async move { inner.export(batch).await })
            .await
        {
            Ok(result) => result,
            Err(e) => Err(OTelSdkError::InternalFailure(e.to_string())),
        }
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        // Called while the provider is built, before any export shares the exporter.
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.set_resource(resource);
        }
    }
}

/// The one-thread runtime gRPC export runs on, started on first use.
fn grpc_runtime() -> std::io::Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("hermes-otlp")
        .enable_all()
        .build()?;
    Ok(RUNTIME.get_or_init(|| rt))
}

/// The exporter for `target`, wrapped in [`QuietExporter`]; `Err` says why it cannot be
/// built.
fn exporter(target: &Target) -> Result<QuietExporter<ExporterKind>, String> {
    let inner = match target.protocol {
        Protocol::HttpProtobuf => ExporterKind::Http(Box::new(
            opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                // Explicit: the crate would otherwise read OTEL_EXPORTER_OTLP_*PROTOCOL
                // itself and refuse to build when they name gRPC where `target` did not
                // choose it (a value it accepts and hermes warned about).
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_endpoint(&target.url)
                .with_timeout(EXPORT_TIMEOUT)
                .with_headers(std::collections::HashMap::new())
                .with_http_client(http_client()?)
                .build()
                .map_err(|e| e.to_string())?,
        )),
        Protocol::Grpc => {
            let rt = grpc_runtime().map_err(|e| format!("gRPC runtime: {e}"))?;
            let _entered = rt.enter();
            let built = opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_protocol(opentelemetry_otlp::Protocol::Grpc)
                .with_endpoint(&target.url)
                .with_timeout(EXPORT_TIMEOUT)
                .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled())
                .build()
                .map_err(|e| e.to_string())?;
            ExporterKind::Grpc(OnRuntime {
                inner: Arc::new(built),
                handle: rt.handle().clone(),
            })
        }
    };
    Ok(QuietExporter {
        inner,
        endpoint: target.url.clone(),
        warned: AtomicBool::new(false),
    })
}

/// The blocking HTTP client the exporter's batch thread sends with: the export timeout, and
/// redirects not followed (the crate's own client follows up to 10). Built on a thread of
/// its own, as the OTLP crate does: a blocking client cannot be built or dropped on an async
/// runtime's thread.
fn http_client() -> Result<reqwest::blocking::Client, String> {
    std::thread::spawn(|| {
        reqwest::blocking::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
    })
    .join()
    .map_err(|_| "building the HTTP client panicked".to_string())?
    .map_err(|e| format!("HTTP client: {e}"))
}

/// The exporter of either transport.
#[derive(Debug)]
enum ExporterKind {
    Http(Box<opentelemetry_otlp::SpanExporter>),
    Grpc(OnRuntime<opentelemetry_otlp::SpanExporter>),
}

impl SpanExporter for ExporterKind {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        match self {
            ExporterKind::Http(e) => e.export(batch).await,
            ExporterKind::Grpc(e) => e.export(batch).await,
        }
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        match self {
            ExporterKind::Http(e) => e.shutdown_with_timeout(timeout),
            ExporterKind::Grpc(e) => e.shutdown_with_timeout(timeout),
        }
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        match self {
            ExporterKind::Http(e) => e.set_resource(resource),
            ExporterKind::Grpc(e) => e.set_resource(resource),
        }
    }
}

/// The tracing layer exporting hermes' spans to `target`, or `None` (said once on stderr)
/// when the exporter cannot be built. Keeps the provider for [`shutdown`].
pub(crate) fn layer<S>(target: &Target) -> Option<impl tracing_subscriber::Layer<S> + use<S>>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    // reqwest and tonic are built without a default TLS provider (an `https://` collector
    // needs it).
    hermes_llm::init_tls();
    let exporter = match exporter(target) {
        Ok(e) => e,
        Err(e) => {
            // The subscriber is not up yet: this line goes to stderr once.
            eprintln!("warning: traces are not exported to {}: {e}", target.url);
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
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("hermes");
    let _ = PROVIDER.set(provider);
    Some(hermes_telemetry::trace::layer(tracer))
}

/// Sends the spans still queued (waiting at most [`SHUTDOWN_TIMEOUT`]); call before exit.
pub(crate) fn shutdown() {
    if let Some(provider) = PROVIDER.get()
        && let Err(e) = provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT)
    {
        tracing::warn!(error = %e, timeout_s = SHUTDOWN_TIMEOUT.as_secs(),
            "the last queued spans were not exported before exit");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn cfg(endpoint: Option<&str>, protocol: Option<&str>) -> impl FnOnce() -> OtlpSettings {
        let settings = OtlpSettings {
            endpoint: endpoint.map(str::to_string),
            protocol: protocol.map(str::to_string),
        };
        move || settings
    }

    fn http(url: &str) -> Option<Target> {
        Some(Target {
            url: url.to_string(),
            protocol: Protocol::HttpProtobuf,
        })
    }

    #[test]
    fn endpoints_follow_the_otlp_exporter_variables() {
        assert_eq!(target(env(&[]), cfg(None, None)), (None, None));
        assert_eq!(
            target(
                env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")]),
                cfg(None, None)
            )
            .0,
            http("http://c:4318/v1/traces")
        );
        assert_eq!(
            target(
                env(&[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t/x")
                ]),
                cfg(Some("http://cfg:4318"), None)
            )
            .0,
            http("http://t/x")
        );
        assert_eq!(
            target(env(&[]), cfg(Some("http://cfg:4318"), None)).0,
            http("http://cfg:4318/v1/traces")
        );
    }

    #[test]
    fn otel_sdk_disabled_turns_export_off_whatever_else_is_set() {
        for on in ["true", "TRUE", " True "] {
            assert_eq!(
                target(
                    env_owned(vec![
                        ("OTEL_SDK_DISABLED", on.to_string()),
                        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318".to_string()),
                    ]),
                    cfg(Some("http://cfg:4318"), None)
                ),
                (None, None),
                "{on:?}"
            );
        }
        // Any other value leaves the SDK on (the spec's booleans are `true` or not).
        for off in ["false", "0", ""] {
            assert_eq!(
                target(
                    env_owned(vec![("OTEL_SDK_DISABLED", off.to_string())]),
                    cfg(Some("http://cfg:4318"), None)
                )
                .0,
                http("http://cfg:4318/v1/traces"),
                "{off:?}"
            );
        }
    }

    /// A loopback server that answers every request with `answer` and counts them.
    fn answering(answer: String) -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = seen.clone();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                counter.fetch_add(1, Ordering::SeqCst);
                let mut buf = [0u8; 64 * 1024];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        (port, seen)
    }

    #[test]
    fn a_redirecting_collector_is_not_followed() {
        let (elsewhere, elsewhere_seen) =
            answering("HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into());
        let (collector, collector_seen) = answering(format!(
            "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://127.0.0.1:{elsewhere}/v1/traces\r\n\
             content-length: 0\r\nconnection: close\r\n\r\n"
        ));
        // As `layer` does first: reqwest is built without a default TLS provider.
        hermes_llm::init_tls();
        let exporter = exporter(&Target {
            url: format!("http://127.0.0.1:{collector}/v1/traces"),
            protocol: Protocol::HttpProtobuf,
        })
        .unwrap();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter)
            .build();
        {
            use opentelemetry::trace::{Span as _, Tracer as _};
            provider.tracer("test").start("one span").end();
        }
        provider.force_flush().unwrap();
        assert_eq!(
            collector_seen.load(Ordering::SeqCst),
            1,
            "the span was sent"
        );
        assert_eq!(
            elsewhere_seen.load(Ordering::SeqCst),
            0,
            "the redirect was followed"
        );
        let _ = provider.shutdown();
    }

    fn env_owned(pairs: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
        move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn grpc_is_chosen_by_variable_or_config_and_takes_the_endpoint_as_is() {
        let grpc = |url: &str| {
            Some(Target {
                url: url.to_string(),
                protocol: Protocol::Grpc,
            })
        };
        assert_eq!(
            target(
                env(&[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
                ]),
                cfg(None, None)
            ),
            (grpc("http://c:4317"), None)
        );
        assert_eq!(
            target(
                env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317")]),
                cfg(None, Some("grpc"))
            )
            .0,
            grpc("http://c:4317"),
            "the config's protocol with the variable's endpoint"
        );
        // The traces-specific protocol wins over the generic one.
        assert_eq!(
            target(
                env(&[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                    ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
                ]),
                cfg(None, None)
            )
            .0,
            http("http://c:4318/v1/traces")
        );
        // The spec's values without case, as the OTLP crate reads them.
        assert_eq!(
            target(
                env(&[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "GRPC")
                ]),
                cfg(None, None)
            ),
            (grpc("http://c:4317"), None)
        );
        assert_eq!(
            target(env(&[]), cfg(Some("http://c:4318"), Some("HTTP/Protobuf"))),
            (http("http://c:4318/v1/traces"), None)
        );
        let (t, warning) = target(env(&[]), cfg(Some("http://c:4318"), Some("http/json")));
        assert_eq!(t, http("http://c:4318/v1/traces"));
        assert!(warning.unwrap().contains("`http/json` is not supported"));
    }
}
