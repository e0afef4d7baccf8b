//! Trace export (issue 24 §1): `chat -q` with `OTEL_EXPORTER_OTLP_ENDPOINT` sends its spans
//! over OTLP/HTTP (or OTLP/gRPC with `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`) to a loopback receiver that decodes them with the official protocol
//! definitions (`opentelemetry-proto` from PyPI, `scripts/otlp-proto.sh`,
//! `HERMES_OTLP_PYTHON`): one turn with two tool calls is one trace — the turn, two model
//! calls and two tool calls under it, with `gen_ai.*` attributes and no message text. A
//! collector that is down or refusing changes nothing of the answer. Model requests carry
//! their span as `traceparent` only with `observability.otlp.propagate_to_providers: true`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{Env, stdout};
use hermes_testkit::MockResponse;
use serde_json::Value;

/// The receiver (killed on drop) and the file it writes spans to.
struct Receiver {
    child: Child,
    port: u16,
    spans: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    fn start(python: &str, mode: &str) -> Receiver {
        let dir = tempfile::tempdir().unwrap();
        let spans = dir.path().join("spans.jsonl");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/otlp/receiver.py");
        let mut child = Command::new(python)
            .args([script, "0", spans.to_str().unwrap(), mode])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the receiver prints its port");
        Receiver {
            child,
            port,
            spans,
            _dir: dir,
        }
    }

    fn spans(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.spans)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn python() -> Option<String> {
    let p = std::env::var("HERMES_OTLP_PYTHON").ok()?;
    std::path::Path::new(&p).exists().then_some(p)
}

/// A receiver in `mode`, or `None` (said on stderr) without the OTLP Python packages.
fn receiver(mode: &str) -> Option<Receiver> {
    let Some(python) = python() else {
        eprintln!("skipped: HERMES_OTLP_PYTHON not set (.ci/run installs opentelemetry-proto)");
        return None;
    };
    Some(Receiver::start(&python, mode))
}

/// A mock turn: two `read_file` calls in one reply, then the answer.
async fn two_tool_turn() -> Env {
    two_tool_turn_with("").await
}

/// [`two_tool_turn`] with `extra_config` appended to config.yaml.
async fn two_tool_turn_with(extra_config: &str) -> Env {
    let env = Env::with_config(extra_config).await;
    std::fs::write(env.cwd.path().join("a.txt"), "alpha secret-file-text-1").unwrap();
    std::fs::write(env.cwd.path().join("b.txt"), "beta").unwrap();
    env.mock.push(MockResponse::tool_calls(&[
        ("call_a", "read_file", r#"{"path":"a.txt"}"#),
        ("call_b", "read_file", r#"{"path":"b.txt"}"#),
    ]));
    env.mock
        .push(MockResponse::text("both files read: lime-orchard-9"));
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_turn_with_two_tool_calls_is_one_trace_with_gen_ai_spans() {
    let Some(receiver) = receiver("accept") else {
        return;
    };
    let env = two_tool_turn().await;
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let out = env
        .run_env(
            &["chat", "-q", "read a.txt and b.txt for me: plum-question-3"],
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)],
        )
        .await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(stdout(&out).contains("lime-orchard-9"));
    // The spans were sent before the process exited.
    assert_two_tool_trace(&receiver.spans());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_trace_goes_over_grpc_when_the_protocol_says_so() {
    let Some(receiver) = receiver("grpc") else {
        return;
    };
    let env = two_tool_turn().await;
    let out = env
        .run_env(
            &["chat", "-q", "read a.txt and b.txt for me: plum-question-3"],
            &[
                (
                    "OTEL_EXPORTER_OTLP_ENDPOINT",
                    format!("http://127.0.0.1:{}", receiver.port),
                ),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc".to_string()),
            ],
        )
        .await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(stdout(&out).contains("lime-orchard-9"));
    assert_two_tool_trace(&receiver.spans());
}

/// The spans of [`two_tool_turn`]: one trace — the turn, two model calls and two tool calls
/// under it, with `gen_ai.*` attributes and no message text.
fn assert_two_tool_trace(spans: &[Value]) {
    let named = |n: &str| spans.iter().filter(|s| s["name"] == n).collect::<Vec<_>>();
    let turns = named("turn");
    assert_eq!(turns.len(), 1, "{spans:#?}");
    let turn = turns[0];
    let trace = turn["trace_id"].as_str().unwrap();
    // Building the system prompt (memory files, skills index) happens before the turn,
    // once per session: those spans are traces of their own.
    let prompt_build = ["memory.load", "skills.load"];
    assert!(
        spans
            .iter()
            .filter(|s| !prompt_build.contains(&s["name"].as_str().unwrap()))
            .all(|s| s["trace_id"] == trace),
        "every span is in the turn's trace: {spans:#?}"
    );
    assert_eq!(turn["parent_span_id"], "");
    assert_eq!(turn["service"], "hermes", "{turn:#}");
    let chats = named("chat mock-model");
    assert_eq!(chats.len(), 2, "{spans:#?}");
    for chat in &chats {
        assert_eq!(chat["parent_span_id"], turn["span_id"]);
        assert_eq!(chat["kind"], 3, "client span");
        assert_eq!(chat["attributes"]["gen_ai.operation.name"], "chat");
        assert_eq!(chat["attributes"]["gen_ai.request.model"], "mock-model");
        assert_eq!(chat["attributes"]["gen_ai.provider.name"], "custom");
        assert!(chat["attributes"]["gen_ai.usage.input_tokens"].is_string());
    }
    let tools = named("execute_tool read_file");
    assert_eq!(tools.len(), 2, "{spans:#?}");
    let mut ids: Vec<&str> = tools
        .iter()
        .map(|t| t["attributes"]["gen_ai.tool.call.id"].as_str().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, ["call_a", "call_b"]);
    for tool in &tools {
        assert_eq!(tool["parent_span_id"], turn["span_id"]);
        assert_eq!(tool["attributes"]["gen_ai.tool.name"], "read_file");
        assert_eq!(tool["attributes"]["hermes.tool.outcome"], "ok");
        let mode = tool["attributes"]["hermes.sandbox.mode"].as_str();
        assert!(
            matches!(mode, Some("workspace-write" | "read-only" | "off")),
            "{tool:#}"
        );
    }
    assert!(!named("store.append_message").is_empty());
    let text = serde_json::to_string(&spans).unwrap();
    for content in ["plum-question-3", "lime-orchard-9", "secret-file-text-1"] {
        assert!(!text.contains(content), "{content} in the spans");
    }
}

/// The `traceparent` headers the mock provider received, in order.
fn provider_traceparents(env: &Env) -> Vec<Option<String>> {
    env.mock
        .captured()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.header("traceparent").map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn providers_get_the_model_call_span_as_traceparent_only_when_asked() {
    let Some(receiver) = receiver("accept") else {
        return;
    };
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    // Default: trace export on, nothing sent to the provider.
    let env = two_tool_turn().await;
    let out = env
        .run_env(
            &["chat", "-q", "read a.txt and b.txt"],
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.clone())],
        )
        .await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(provider_traceparents(&env), [None, None]);

    let env =
        two_tool_turn_with("observability:\n  otlp:\n    propagate_to_providers: true\n").await;
    let out = env
        .run_env(
            &["chat", "-q", "read a.txt and b.txt"],
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)],
        )
        .await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    let sent: Vec<String> = provider_traceparents(&env)
        .into_iter()
        .map(|t| t.expect("a traceparent on each model request"))
        .collect();
    assert_eq!(sent.len(), 2);
    let spans = receiver.spans();
    for parent in &sent {
        let parts: Vec<&str> = parent.split('-').collect();
        assert_eq!(parts.len(), 4, "{parent}");
        let chat = spans
            .iter()
            .find(|s| s["span_id"] == parts[2])
            .unwrap_or_else(|| panic!("no exported span {} in {spans:#?}", parts[2]));
        assert_eq!(
            chat["name"], "chat mock-model",
            "the parent is the model call"
        );
        assert_eq!(chat["trace_id"], parts[1]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_is_down_or_refusing_changes_no_answer() {
    let Some(refusing) = receiver("refuse") else {
        return;
    };
    // A port nothing listens on.
    let down = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for (endpoint, protocol) in [
        (format!("http://127.0.0.1:{down}"), "http/protobuf"),
        (
            format!("http://127.0.0.1:{}", refusing.port),
            "http/protobuf",
        ),
        (format!("http://127.0.0.1:{down}"), "grpc"),
    ] {
        let env = two_tool_turn().await;
        let started = std::time::Instant::now();
        let out = env
            .run_env(
                &["chat", "-q", "read a.txt and b.txt"],
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.clone()),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol.to_string()),
                ],
            )
            .await;
        assert!(out.status.success(), "{}", common::stderr(&out));
        assert!(stdout(&out).contains("lime-orchard-9"));
        // Nothing about the collector on the terminal; the log has one line.
        assert!(
            !common::stderr(&out).contains("trace"),
            "{}",
            common::stderr(&out)
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the exit waited too long for {endpoint} ({protocol})"
        );
        let log = std::fs::read_to_string(env.home.path().join("logs").join("agent.log"))
            .unwrap_or_default();
        assert_eq!(
            log.matches("trace export failed").count(),
            1,
            "one log line for {endpoint} ({protocol}): {log}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_and_skill_operations_are_spans_under_their_tool_calls() {
    let Some(receiver) = receiver("accept") else {
        return;
    };
    let env = Env::new().await;
    let skill = env
        .home
        .path()
        .join("skills")
        .join("notes")
        .join("tidy-desk");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: tidy-desk\ndescription: Tidy the desk.\n---\nStack the papers: mango-step-4.\n",
    )
    .unwrap();
    env.mock.push(MockResponse::tool_calls(&[(
        "call_m",
        "memory",
        r#"{"action":"add","target":"memory","content":"user likes quince-jam-7"}"#,
    )]));
    env.mock.push(MockResponse::tool_calls(&[(
        "call_s",
        "skill_view",
        r#"{"name":"tidy-desk"}"#,
    )]));
    env.mock.push(MockResponse::text("noted"));
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let out = env
        .run_env(
            &[
                "chat",
                "-q",
                "remember that I like quince jam, then read tidy-desk",
            ],
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)],
        )
        .await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    let spans = receiver.spans();
    let one = |n: &str| {
        let found: Vec<&Value> = spans.iter().filter(|s| s["name"] == n).collect();
        assert_eq!(found.len(), 1, "one {n} span: {spans:#?}");
        found[0]
    };
    let update = one("memory.update");
    assert_eq!(
        update["parent_span_id"],
        one("execute_tool memory")["span_id"]
    );
    assert_eq!(update["attributes"]["hermes.memory.target"], "memory");
    assert_eq!(update["attributes"]["hermes.memory.changed"], "true");
    let view = one("skill.view");
    assert_eq!(
        view["parent_span_id"],
        one("execute_tool skill_view")["span_id"]
    );
    assert_eq!(view["attributes"]["hermes.skill.name"], "tidy-desk");
    assert!(
        spans.iter().any(|s| s["name"] == "skills.load"),
        "{spans:#?}"
    );
    let text = serde_json::to_string(&spans).unwrap();
    for content in ["quince-jam-7", "mango-step-4"] {
        assert!(!text.contains(content), "{content} in the spans");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_content_puts_redacted_text_in_the_spans() {
    let Some(receiver) = receiver("accept") else {
        return;
    };
    let env = two_tool_turn_with("observability:\n  capture_content: true\n").await;
    // A key of the home, also inside a file the model reads.
    let key = "pear-key-0123456789abcdef";
    std::fs::write(
        env.home.path().join(".env"),
        format!("TELEGRAM_BOT_TOKEN={key}\n"),
    )
    .unwrap();
    std::fs::write(env.cwd.path().join("b.txt"), format!("beta {key}")).unwrap();
    let out = env
        .run_env(
            &["chat", "-q", "read a.txt and b.txt for me: plum-question-3"],
            &[(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://127.0.0.1:{}", receiver.port),
            )],
        )
        .await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    let spans = receiver.spans();
    let text = serde_json::to_string(&spans).unwrap();
    assert!(!text.contains(key), "a home secret in the spans: {text}");
    let chats: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "chat mock-model")
        .collect();
    assert_eq!(chats.len(), 2);
    let input = chats[0]["attributes"]["gen_ai.input.messages"]
        .as_str()
        .unwrap();
    let input: Value = serde_json::from_str(input).expect("input messages are JSON");
    assert_eq!(input[0]["role"], "user");
    assert!(
        input[0]["content"]
            .as_str()
            .unwrap()
            .contains("plum-question-3")
    );
    let answer = chats[1]["attributes"]["gen_ai.output.messages"]
        .as_str()
        .unwrap();
    assert!(answer.contains("lime-orchard-9"), "{answer}");
    let tools: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "execute_tool read_file")
        .collect();
    let results: String = tools
        .iter()
        .map(|t| t["attributes"]["gen_ai.tool.call.result"].as_str().unwrap())
        .collect();
    assert!(results.contains("secret-file-text-1"), "{results}");
    assert!(
        tools
            .iter()
            .any(|t| t["attributes"]["gen_ai.tool.call.arguments"] == r#"{"path":"a.txt"}"#)
    );
}

/// Every message of a turn is stored with the trace id of the turn the receiver got, and
/// `hermes sessions show <id> --traces` prints it on that turn's line; a later turn with
/// export off has none, and the list says so once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_show_traces_prints_the_trace_id_the_collector_got() {
    let Some(receiver) = receiver("accept") else {
        return;
    };
    let env = two_tool_turn().await;
    let out = env
        .run_env(
            &["chat", "-q", "read a.txt and b.txt for me: plum-question-3"],
            &[(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://127.0.0.1:{}", receiver.port),
            )],
        )
        .await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    let spans = receiver.spans();
    let turns: Vec<&Value> = spans.iter().filter(|s| s["name"] == "turn").collect();
    assert_eq!(turns.len(), 1, "{spans:#?}");
    let trace = turns[0]["trace_id"].as_str().unwrap().to_string();
    assert_eq!(trace.len(), 32, "{trace}");

    // A second turn, export off.
    env.mock.push(MockResponse::text("untraced answer"));
    let out = env.run(&["chat", "-c", "-q", "and now?"]).await;
    assert!(out.status.success(), "{}", common::stderr(&out));

    let store = hermes_store::SessionStore::open(env.home.path().join("state.db")).unwrap();
    let session = store.latest_session(None).unwrap().unwrap();
    let stored = store.load_messages(&session.id).unwrap();
    let roles_and_ids: Vec<(&str, Option<&str>)> = stored
        .iter()
        .map(|m| (m.message.role.as_str(), m.trace_id.as_deref()))
        .collect();
    let t = Some(trace.as_str());
    assert_eq!(
        roles_and_ids,
        [
            ("user", t),
            ("assistant", t),
            ("tool", t),
            ("tool", t),
            ("assistant", t),
            ("user", None),
            ("assistant", None),
        ]
    );
    drop(store);

    let out = env
        .run_ok(&["sessions", "show", &session.id, "--traces"])
        .await;
    let text = stdout(&out);
    // The turn lines come after the header (the session line also shows the first words).
    let turns: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Time "))
        .collect();
    let first = turns
        .iter()
        .find(|l| l.contains("read a.txt and b.txt"))
        .unwrap_or_else(|| panic!("no line for the first turn: {text}"));
    assert!(first.ends_with(&trace), "{text}");
    let second = turns.iter().find(|l| l.contains("and now?")).unwrap();
    assert!(second.ends_with('—'), "{text}");
    assert_eq!(text.matches(&trace).count(), 1, "{text}");
    assert_eq!(text.matches("have no trace id").count(), 1, "{text}");
    // The transcript is not printed with --traces.
    assert!(!text.contains("lime-orchard-9"), "{text}");
}
