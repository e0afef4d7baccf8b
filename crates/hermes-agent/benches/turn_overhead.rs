//! Agent overhead per turn beside an instant in-process model (issue: main job, benchmarks).
//!
//! Each turn: the user message, one model call answering with a tool call, the tool
//! (`skills_list`-like, returns at once), a second model call with the final text — four
//! messages committed to a real `state.db` in WAL mode. Reported: wall time per turn minus
//! the time spent inside the model, median of 5 runs of `HERMES_BENCH_TURNS` turns (100);
//! and the CPU time of the whole process per turn over the turns of the same runs (user +
//! system, all threads, from `/proc/self/stat`; Linux only), which other load on the machine disturbs far
//! less than wall time. Run: `cargo bench -p hermes-agent --bench turn_overhead` (release
//! profile).
//!
//! `HERMES_BENCH_TRACING` picks what records the turn's spans (issue 24: the overhead of
//! tracing with export on and off): `off` (default, no subscriber), `logs` (a log layer at
//! `info` writing to nowhere, as the binary's `agent.log` layer formats every span), `otlp`
//! (the same log layer plus the OpenTelemetry layer exporting hermes' spans in batches over
//! OTLP/HTTP to a loopback sink that answers 200 to everything).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::stream;
use hermes_agent::{Agent, AgentDeps, AgentOptions};
use hermes_llm::{ChatRequest, EventStream, LlmError, ModelClient, StreamEvent};
use hermes_protocol::{AssistantMessage, FinishReason, ToolCall, ToolSpec, Usage};
use hermes_store::SessionStore;
use hermes_tools::{Approval, FixedApprover, Parallelism, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Answers with a tool call when the last message is from the user, else with text.
struct InstantModel {
    spent_ns: AtomicU64,
    calls: Mutex<u64>,
}

#[async_trait::async_trait]
impl ModelClient for InstantModel {
    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, LlmError> {
        let start = Instant::now();
        let mut n = self.calls.lock().unwrap();
        *n += 1;
        let last_is_user = request
            .messages
            .last()
            .is_some_and(|m| m.role == hermes_protocol::Role::User);
        let reply = if last_is_user {
            AssistantMessage {
                tool_calls: vec![ToolCall::new(format!("call_{n}"), "skills_list", "{}")],
                finish_reason: Some(FinishReason::ToolCalls),
                usage: Usage {
                    input_tokens: 100,
                    output_tokens: 10,
                    ..Usage::default()
                },
                ..AssistantMessage::default()
            }
        } else {
            AssistantMessage {
                text: "Done.".into(),
                finish_reason: Some(FinishReason::Stop),
                usage: Usage {
                    input_tokens: 120,
                    output_tokens: 2,
                    ..Usage::default()
                },
                ..AssistantMessage::default()
            }
        };
        let events = vec![
            Ok(StreamEvent::TextDelta(reply.text.clone())),
            Ok(StreamEvent::Completed(reply)),
        ];
        let s: EventStream = Box::pin(stream::iter(events));
        self.spent_ns
            .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        Ok(s)
    }
    fn provider(&self) -> &str {
        "bench"
    }
    fn model(&self) -> &str {
        "instant"
    }
}

struct QuickTool;

#[async_trait::async_trait]
impl Tool for QuickTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "skills_list".into(),
            description: "Lists skills.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }
    fn toolset(&self) -> &'static str {
        "skills"
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Safe
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> ToolOutput {
        ToolOutput::ok("no skills installed")
    }
}

/// One run: (wall time of the turns, time inside the model, process CPU time of the turns).
async fn run_once(turns: usize) -> (Duration, Duration, Option<Duration>) {
    let dir = tempfile::tempdir().unwrap();
    let home = hermes_protocol::HermesHome::new(dir.path());
    let store = Arc::new(SessionStore::open(home.state_db()).unwrap());
    let model = Arc::new(InstantModel {
        spent_ns: AtomicU64::new(0),
        calls: Mutex::new(0),
    });
    let mut tools: Vec<Arc<dyn Tool>> = hermes_tools::Registry::builtin()
        .select(&hermes_tools::ToolsetSelection::default())
        .unwrap()
        .tools()
        .to_vec();
    tools.push(Arc::new(QuickTool));
    let deps = AgentDeps {
        client: model.clone(),
        tools,
        store,
        approver: Arc::new(FixedApprover(Approval::Deny)),
        prompt: Arc::new(|_: &str, _: &str, _: &[String]| "You are a benchmark agent.".to_string()),
        home,
    };
    let opts = AgentOptions {
        cwd: dir.path().to_path_buf(),
        ..AgentOptions::default()
    };
    let mut agent = Agent::start(deps, opts, None).await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let cpu_start = process_cpu();
    let start = Instant::now();
    for i in 0..turns {
        agent
            .run_turn(&format!("turn {i}"), &tx, CancellationToken::new())
            .await;
    }
    let wall = start.elapsed();
    let cpu = process_cpu().zip(cpu_start).map(|(end, start)| end - start);
    drop(tx);
    drain.await.unwrap();
    (
        wall,
        Duration::from_nanos(model.spent_ns.load(Ordering::Relaxed)),
        cpu,
    )
}

/// CPU time of this process so far, all threads (finished ones included), from
/// `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)` (nanosecond resolution; `/proc/self/stat`'s
/// 10 ms ticks were too coarse for a run of a tenth of a second).
fn process_cpu() -> Option<Duration> {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Some(Duration::new(
        u64::try_from(ts.tv_sec).ok()?,
        u32::try_from(ts.tv_nsec).ok()?,
    ))
}

/// A loopback HTTP sink on its own thread: reads each request and answers `200` with an
/// empty body. Returns its port.
fn start_sink() -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = vec![0u8; 64 * 1024];
                let mut seen = Vec::new();
                loop {
                    let Ok(n) = stream.read(&mut buf) else { return };
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    // One request at a time: head, then Content-Length bytes of body.
                    while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&seen[..end]).to_ascii_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        if seen.len() < end + 4 + len {
                            break;
                        }
                        seen.drain(..end + 4 + len);
                        let _ = stream.write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
                        );
                    }
                }
            });
        }
    });
    port
}

/// Installs the subscriber of `HERMES_BENCH_TRACING` (module docs); returns the tracer
/// provider to flush at the end, for `otlp`.
fn install_tracing() -> Option<opentelemetry_sdk::trace::SdkTracerProvider> {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::WithExportConfig;
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let mode = std::env::var("HERMES_BENCH_TRACING").unwrap_or_else(|_| "off".into());
    // A macro, not a closure: each subscriber stack types its layers for its own position.
    macro_rules! logs {
        () => {
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(std::io::sink)
                .with_filter(tracing_subscriber::filter::LevelFilter::INFO)
        };
    }
    match mode.as_str() {
        "logs" => {
            tracing_subscriber::registry().with(logs!()).init();
            None
        }
        "otlp" => {
            let port = start_sink();
            hermes_llm::init_tls();
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_endpoint(format!("http://127.0.0.1:{port}/v1/traces"))
                .build()
                .unwrap();
            let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .build();
            // The layer every hermes binary installs.
            let otel = hermes_telemetry::trace::layer(provider.tracer("hermes"));
            tracing_subscriber::registry()
                .with(otel)
                .with(logs!())
                .init();
            Some(provider)
        }
        _ => None,
    }
}

fn main() {
    let turns: usize = std::env::var("HERMES_BENCH_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let provider = install_tracing();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut cpu = Some(Duration::ZERO);
    let mut per_turn_us: Vec<f64> = (0..5)
        .map(|_| {
            let (wall, model, run_cpu) = rt.block_on(run_once(turns));
            cpu = cpu.zip(run_cpu).map(|(a, b)| a + b);
            (wall - model).as_secs_f64() * 1e6 / turns as f64
        })
        .collect();
    per_turn_us.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "agent overhead per turn (1 tool call, 4 messages committed): median {:.0} µs, min {:.0} µs, max {:.0} µs over 5 runs of {turns} turns",
        per_turn_us[2], per_turn_us[0], per_turn_us[4]
    );
    if let Some(cpu) = cpu {
        // The model's own time is in here too; it is a few µs per call (see `spent_ns`).
        println!(
            "process CPU time per turn (user + system, all threads, same runs): {:.0} µs",
            cpu.as_secs_f64() * 1e6 / (5 * turns) as f64
        );
    }
    if let Some(provider) = provider {
        let _ = provider.shutdown();
    }
}
