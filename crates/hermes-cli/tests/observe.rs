//! Metrics and status of `hermes gateway run` (issue 24 §2–3): a real Prometheus server
//! (Debian's `prometheus`, installed by `.ci/run`) scrapes a gateway driven through its API
//! server, and the seed's alert `rate(api_errors_total[5m]) > 0.05` (with hermes' metric
//! namespace) fires after a run with model errors and not before; `/metrics` and `/_status`
//! refuse requests without the key on both listeners and carry no secret or message text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Env;
use common::driver::hermes_command;
use hermes_testkit::MockResponse;
use serde_json::Value;

const KEY: &str = "observe-test-key-5821";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP/1.0 request to loopback `port`: (status, body), `None` while nothing answers.
fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    // HTTP/1.0: the answer is never chunked, and the connection closes after it.
    let mut request = format!(
        "{method} {path} HTTP/1.0\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split(' ').nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())?;
    Some((status, body))
}

fn get(port: u16, path: &str, key: Option<&str>) -> Option<(u16, String)> {
    let auth = key.map(|k| format!("Bearer {k}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    http(port, "GET", path, &headers, "")
}

fn wait_for<T>(what: &str, limit: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A running `hermes gateway run` with the API server on `api` and the metrics listener on
/// `metrics`, both behind [`KEY`]; killed on drop.
struct Gateway {
    child: Child,
    api: u16,
    metrics: u16,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn gateway(extra_env: &[(&str, &str)]) -> (Env, Gateway) {
    gateway_with(extra_env, "", |_| {}).await
}

/// [`gateway`] with `config` added to config.yaml and `setup` run on the home before the
/// gateway starts.
async fn gateway_with(
    extra_env: &[(&str, &str)],
    config: &str,
    setup: impl FnOnce(&Env),
) -> (Env, Gateway) {
    let metrics = free_port();
    let env = Env::with_config(&format!(
        "observability:\n  metrics:\n    host: 127.0.0.1\n    port: {metrics}\n{config}"
    ))
    .await;
    setup(&env);
    let api = free_port();
    let mut cmd = hermes_command(env.home.path(), env.cwd.path(), &["gateway", "run"]);
    cmd.env("API_SERVER_ENABLED", "true")
        .env("API_SERVER_PORT", api.to_string())
        .env("API_SERVER_KEY", KEY)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().unwrap();
    let gw = Gateway {
        child,
        api,
        metrics,
    };
    wait_for("the metrics listener", Duration::from_secs(60), || {
        get(metrics, "/metrics", Some(KEY)).filter(|(s, _)| *s == 200)
    });
    wait_for("the API server", Duration::from_secs(60), || {
        get(api, "/health", None).filter(|(s, _)| *s == 200)
    });
    (env, gw)
}

fn chat(port: u16, text: &str) -> u16 {
    let body = serde_json::json!({
        "model": "hermes-agent",
        "messages": [{"role": "user", "content": text}],
    })
    .to_string();
    let auth = format!("Bearer {KEY}");
    http(
        port,
        "POST",
        "/v1/chat/completions",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        &body,
    )
    .map(|(s, _)| s)
    .unwrap_or(0)
}

/// A Prometheus server scraping `target` every second with [`KEY`], evaluating the error
/// alert every second; killed on drop.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    fn start(binary: &str, target: u16) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("rules.yml"),
            "groups:\n- name: hermes\n  interval: 1s\n  rules:\n  - alert: HermesApiErrors\n    expr: rate(hermes_api_errors_total[5m]) > 0.05\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("prometheus.yml"),
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [rules.yml]\nscrape_configs:\n- job_name: hermes\n  authorization:\n    type: Bearer\n    credentials: {KEY}\n  static_configs:\n  - targets: ['127.0.0.1:{target}']\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let child = Command::new(binary)
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let prom = Prometheus {
            child,
            port,
            _dir: dir,
        };
        wait_for("Prometheus to answer", Duration::from_secs(60), || {
            get(port, "/-/ready", None).filter(|(s, _)| *s == 200)
        });
        prom
    }

    fn query(&self, expr: &str) -> Vec<Value> {
        let encoded: String = expr
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (status, body) = get(self.port, &format!("/api/v1/query?query={encoded}"), None)
            .expect("Prometheus answers");
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    fn firing(&self) -> bool {
        let (_, body) = get(self.port, "/api/v1/alerts", None).expect("Prometheus answers");
        let v: Value = serde_json::from_str(&body).unwrap();
        v["data"]["alerts"].as_array().is_some_and(|alerts| {
            alerts
                .iter()
                .any(|a| a["labels"]["alertname"] == "HermesApiErrors" && a["state"] == "firing")
        })
    }
}

/// `prometheus` on PATH (Debian's package, installed by `.ci/run`).
fn prometheus_binary() -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("prometheus"))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_the_gateway_and_the_error_alert_fires_only_with_errors() {
    let Some(binary) = prometheus_binary() else {
        eprintln!("skipped: no `prometheus` on PATH (.ci/run installs Debian's package)");
        return;
    };
    let (env, gw) = gateway(&[]).await;
    env.mock.set_fallback(Some(MockResponse::text("fine")));
    let prom = Prometheus::start(&binary, gw.metrics);
    // A run without errors: bounded load of five turns.
    for i in 0..5 {
        assert_eq!(chat(gw.api, &format!("question {i}")), 200);
    }
    wait_for("the turns in Prometheus", Duration::from_secs(30), || {
        let r = prom.query("hermes_turns_total{platform=\"api_server\",outcome=\"completed\"}");
        (r.first()?["value"][1].as_str()? == "5").then_some(())
    });
    for series in [
        "hermes_inbound_messages_total{platform=\"api_server\"}",
        "hermes_model_call_duration_seconds_bucket",
        "hermes_model_time_to_first_token_seconds_count",
        "hermes_tokens_total",
        "hermes_store_write_duration_seconds_count",
        "hermes_store_size_bytes",
        "hermes_live_agents",
        "hermes_session_resume_duration_seconds_count",
    ] {
        assert!(!prom.query(series).is_empty(), "no series {series}");
    }
    // Several evaluations later the alert is still quiet.
    std::thread::sleep(Duration::from_secs(4));
    assert!(!prom.firing(), "the error alert fired without errors");
    assert!(prom.query("hermes_api_errors_total").is_empty());

    // A run with model errors, spread over a few scrapes so the rate sees them grow. The
    // alert asks for more than 0.05 errors/s over 5 minutes — more than 15 in the window —
    // so the run fails 40 calls.
    env.mock.set_fallback(Some(MockResponse::from_bytes(
        400,
        vec![("content-type".into(), "application/json".into())],
        r#"{"error":{"message":"injected failure","type":"invalid_request_error"}}"#,
    )));
    for i in 0..40 {
        let _ = chat(gw.api, &format!("failing {i}"));
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_for("the error alert to fire", Duration::from_secs(60), || {
        prom.firing().then_some(())
    });
    // Every failed call was counted once (retries would count more: a 400 is not retried).
    wait_for(
        "all 40 errors in Prometheus",
        Duration::from_secs(30),
        || {
            let r = prom.query("sum(hermes_api_errors_total)");
            (r.first()?["value"][1].as_str()? == "40").then_some(())
        },
    );
    let failed = prom.query("hermes_turns_total{outcome=\"failed\"}");
    assert!(!failed.is_empty());
}

/// Names of the `# TYPE` lines of a `/metrics` body, sorted.
fn metric_families(text: &str) -> Vec<String> {
    let mut names: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(str::to_string)
        .collect();
    names.sort();
    names
}

/// `doc` with every leaf replaced by its JSON type: the document's shape.
fn shape(doc: &Value) -> Value {
    match doc {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().take(1).map(shape).collect()),
        Value::String(_) => "string".into(),
        Value::Number(_) => "number".into(),
        Value::Bool(_) => "bool".into(),
        Value::Null => "null".into(),
    }
}

/// `/_status` lists the declarative tools with their health (issue 26 item 4: the gateway's
/// status shows it beside `tools list` and `doctor`): one whose health endpoint is down and
/// that has no fallback is `unhealthy`, one with a `fallback_text` is unhealthy and answered
/// by its fallback; states only, no reason text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_the_health_of_declarative_tools() {
    let closed = free_port();
    let tool = |name: &str, extra: &str| {
        format!(
            "name: {name}\ndescription: A tool.\nversion: \"1\"\n\
             input_schema:\n  type: object\n  properties:\n    q: {{type: string}}\n\
             endpoint:\n  url: http://127.0.0.1:{closed}/q\n\
             health_endpoint: http://127.0.0.1:{closed}/health\n\
             health_interval_ms: 1000\ntimeout_ms: 1000\n{extra}"
        )
    };
    let (_env, gw) = gateway_with(&[], "web:\n  allow_private_urls: true\n", |env| {
        let dir = env.home.path().join("tools");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("down_tool.yaml"), tool("down_tool", "")).unwrap();
        std::fs::write(
            dir.join("spare_tool.yaml"),
            tool("spare_tool", "fallback_text: Try again later.\n"),
        )
        .unwrap();
    })
    .await;
    let tools = wait_for(
        "both tools probed as unhealthy in /_status",
        Duration::from_secs(30),
        || {
            let (status, body) = get(gw.metrics, "/_status", Some(KEY))?;
            assert_eq!(status, 200);
            let doc: Value = serde_json::from_str(&body).ok()?;
            let tools = doc["tools"].as_array()?.clone();
            (tools.len() == 2 && tools.iter().all(|t| t["health"] == "unhealthy")).then_some(tools)
        },
    );
    let by_name = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap().clone();
    assert_eq!(
        by_name("down_tool"),
        serde_json::json!({"name": "down_tool", "toolset": "declarative",
            "health": "unhealthy", "answered_by_fallback": false})
    );
    assert_eq!(by_name("spare_tool")["answered_by_fallback"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_status_need_the_key_and_hold_no_secret_or_message_text() {
    let secret = "sk-observecanary-0123456789abcdef0123";
    let (env, gw) = gateway(&[("OPENAI_API_KEY", secret)]).await;
    env.mock
        .set_fallback(Some(MockResponse::text("the answer is blue-lantern-77")));
    assert_eq!(chat(gw.api, "tell me about purple-harbor-42"), 200);

    for port in [gw.api, gw.metrics] {
        for path in ["/metrics", "/_status"] {
            let (status, _) = get(port, path, None).unwrap();
            assert_eq!(status, 401, "{path} on {port} without the key");
            let (status, _) = get(port, path, Some("wrong-key")).unwrap();
            assert_eq!(status, 401, "{path} on {port} with a wrong key");
        }
    }
    // The metrics listener answers only to its own address.
    let (status, _) = http(
        gw.metrics,
        "GET",
        "/metrics",
        &[
            ("Host", "evil.example"),
            ("Authorization", &format!("Bearer {KEY}")),
        ],
        "",
    )
    .unwrap();
    assert_eq!(status, 421);

    let (status, metrics) = get(gw.metrics, "/metrics", Some(KEY)).unwrap();
    assert_eq!(status, 200);
    let (status, via_api) = get(gw.api, "/metrics", Some(KEY)).unwrap();
    assert_eq!(status, 200);
    assert_eq!(metric_families(&metrics), metric_families(&via_api));
    // The scheduler writes its first heartbeat after its first pass: wait for it, so the
    // document's shape does not depend on start-up timing.
    let status_body = wait_for(
        "the cron heartbeat in /_status",
        Duration::from_secs(30),
        || {
            let (status, body) = get(gw.metrics, "/_status", Some(KEY))?;
            assert_eq!(status, 200);
            let doc: Value = serde_json::from_str(&body).ok()?;
            (!doc["cron"]["heartbeat"].is_null()).then_some(body)
        },
    );
    for text in [&metrics, &status_body] {
        for leak in [secret, "purple-harbor-42", "blue-lantern-77"] {
            assert!(!text.contains(leak), "{leak} leaked into {text}");
        }
    }
    let doc: Value = serde_json::from_str(&status_body).unwrap();
    assert_eq!(doc["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(doc["store"]["ok"], true);
    assert_eq!(doc["cron"]["scheduler"], "on");
    assert!(doc["memory"]["rss_bytes"].as_u64().unwrap() > 0);
    assert_eq!(doc["sessions"]["active"], 0);
    insta::assert_snapshot!("metric_families", metric_families(&metrics).join("\n"));
    insta::assert_snapshot!(
        "status_shape",
        serde_json::to_string_pretty(&shape(&doc)).unwrap()
    );

    // `hermes status --json` reads the running gateway's document.
    let key = [("API_SERVER_KEY", KEY.to_string())];
    let out = env.run_env(&["status", "--json"], &key).await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    let fetched: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        fetched["source"],
        format!("http://127.0.0.1:{}/_status", gw.metrics)
    );
    assert_eq!(fetched["version"], env!("CARGO_PKG_VERSION"));
    drop(gw);
    // And, with no gateway running, what it can read itself.
    let out = env.run_env(&["status", "--json"], &key).await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    let local: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(local["gateway"]["running"], false);
    assert_eq!(local["store"]["ok"], true);
}

/// `hermes status --json` reads at most 1 MiB of whatever answers on the status port: an
/// endless body (another program on the port, a wrong address) is dropped after it — not
/// read into memory for the whole fetch timeout — and the local document is printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_json_stops_reading_an_endless_answer() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let env = Env::with_config(&format!(
        "observability:\n  metrics:\n    host: 127.0.0.1\n    port: {port}\n"
    ))
    .await;
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut head = [0u8; 4096];
        let _ = stream.read(&mut head);
        let _ =
            stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"a\":\"");
        let chunk = vec![b'x'; 1 << 20];
        let mut sent = 0usize;
        while stream.write_all(&chunk).is_ok() {
            sent += chunk.len();
        }
        sent
    });
    let out = env.run(&["status", "--json"]).await;
    assert!(out.status.success(), "{}", common::stderr(&out));
    let local: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(local["gateway"]["running"], false, "{local}");
    let sent = server.join().unwrap();
    assert!(
        sent < 64 << 20,
        "status --json read {} MiB of an endless answer",
        sent >> 20
    );
}
