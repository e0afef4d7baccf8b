//! Gateway replicas on one PostgreSQL store (issue 21 item 4), as real processes: three
//! `hermes gateway run` on homes of their own (three machines) and one database, a mock
//! model, and a loopback receiver for the webhook replies. Skipped without
//! `HERMES_TEST_PG_DSN` (`.ci/run` starts a PostgreSQL and sets it).
//!
//! Asserted: a message delivered to two replicas at once is answered exactly once; a chat
//! continues on whichever replica gets its next message; a replica killed with SIGKILL in
//! the middle of a turn loses nothing (a live replica takes the message over and answers it
//! once); a cron job that every replica's `jobs.json` has fires once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "replicas/proxy.rs"]
mod proxy;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::stderr;
use hermes_gateway::platforms::webhook::{SIGNATURE_HEADER, Signer, TIMESTAMP_HEADER};
use hermes_testkit::{MockProvider, MockResponse, TempHome};
use serde_json::Value;

const SECRET: &str = "replica-secret";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The replies the replicas POSTed to the webhook callback: `(chat_id, text)` in arrival
/// order. A tiny HTTP/1.1 server on a thread (one request per connection).
struct Receiver {
    port: u16,
    replies: Arc<Mutex<Vec<(String, String)>>>,
}

impl Receiver {
    fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let replies: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let sink = replies.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let sink = sink.clone();
                std::thread::spawn(move || {
                    if let Some(body) = read_request(&mut stream) {
                        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let chat = v["chat_id"].as_str().unwrap_or_default().to_string();
                        let text = v["text"].as_str().unwrap_or_default().to_string();
                        sink.lock().unwrap().push((chat, text));
                    }
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                    );
                });
            }
        });
        Receiver { port, replies }
    }

    fn replies(&self) -> Vec<(String, String)> {
        self.replies.lock().unwrap().clone()
    }
}

fn read_request(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let (raw, body) = proxy::read_raw(stream)?;
    Some(raw[body..].to_vec())
}

/// One signed webhook POST to a replica; the status line, or `None` when it did not answer.
fn post(port: u16, body: &str) -> Option<String> {
    let ts = chrono::Utc::now().timestamp();
    let signature = Signer::new(SECRET.as_bytes())
        .unwrap()
        .sign_timestamped(ts, body.as_bytes());
    let request = format!(
        "POST /webhook HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         {TIMESTAMP_HEADER}: {ts}\r\n{SIGNATURE_HEADER}: {signature}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    exchange(port, &request)?.lines().next().map(str::to_string)
}

/// Sends one HTTP/1.1 request to `127.0.0.1:port` and returns what came back before the
/// server closed (or 20 s passed); `None` when nothing listens there.
fn exchange(port: u16, request: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok()?;
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    Some(response)
}

/// A replica: its own home, the shared config, its webhook and API ports.
struct Replica {
    home: TempHome,
    cwd: tempfile::TempDir,
    port: u16,
    api_port: u16,
    child: Option<Child>,
}

/// What stands in front of the replicas: the reply receiver and the two load balancers
/// (whose `Host` names the replicas must accept).
struct Front {
    callback: u16,
    fan_out: u16,
    balancer: u16,
}

impl Replica {
    fn new(config: &str) -> Replica {
        let home = TempHome::new().unwrap();
        std::fs::write(home.home().config_file(), config).unwrap();
        Replica {
            home,
            cwd: tempfile::tempdir().unwrap(),
            port: free_port(),
            api_port: free_port(),
            child: None,
        }
    }

    fn start(&mut self, front: &Front) {
        let bin = assert_cmd::cargo::cargo_bin("hermes");
        let child = std::process::Command::new(bin)
            .args(["gateway", "run"])
            .env_clear()
            .env("HERMES_HOME", self.home.path())
            .env("HOME", self.home.path())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("NO_COLOR", "1")
            .env("WEBHOOK_SECRET", SECRET)
            .env("WEBHOOK_PORT", self.port.to_string())
            .env(
                "WEBHOOK_CALLBACK_URL",
                format!("http://127.0.0.1:{}/reply", front.callback),
            )
            .env(
                "WEBHOOK_ALLOWED_HOSTS",
                format!("127.0.0.1:{}", front.fan_out),
            )
            .env("API_SERVER_ENABLED", "true")
            .env("API_SERVER_PORT", self.api_port.to_string())
            .env("API_SERVER_KEY", API_KEY)
            .env(
                "API_SERVER_ALLOWED_HOSTS",
                format!("127.0.0.1:{}", front.balancer),
            )
            .env("GATEWAY_ALLOW_ALL_USERS", "true")
            .current_dir(self.cwd.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let started = Instant::now();
        // Unsigned probe: 401 once the listener is up; then the API port.
        while post_unsigned(self.port).is_none()
            || TcpStream::connect(("127.0.0.1", self.api_port)).is_err()
        {
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "replica on port {} did not start: {}",
                self.port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            let _ = child.wait();
        }
    }

    fn stop(&mut self) -> String {
        let Some(child) = self.child.take() else {
            return String::new();
        };
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let out = child.wait_with_output().unwrap();
        stderr(&out)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.home.path().join("logs").join("agent.log")).unwrap_or_default()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn post_unsigned(port: u16) -> Option<String> {
    let body = "{}";
    let request = format!(
        "POST /webhook HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    exchange(port, &request)
}

/// The latest user text of a chat request body.
fn last_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

fn wait_until<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn message(id: &str, chat: &str, text: &str) -> String {
    serde_json::json!({"chat_id": chat, "user_id": "u1", "message_id": id, "text": text})
        .to_string()
}

/// Requests the load generator has in flight at most (webhooks and API turns together).
const IN_FLIGHT: usize = 4;
const API_KEY: &str = "replica-api-key";

/// A counting semaphore for the load generator's bound.
struct Slots {
    free: Mutex<usize>,
    wake: std::sync::Condvar,
}

impl Slots {
    fn new(n: usize) -> Arc<Slots> {
        Arc::new(Slots {
            free: Mutex::new(n),
            wake: std::sync::Condvar::new(),
        })
    }

    fn hold<T>(&self, f: impl FnOnce() -> T) -> T {
        let mut free = self.free.lock().unwrap();
        while *free == 0 {
            free = self.wake.wait(free).unwrap();
        }
        *free -= 1;
        drop(free);
        let out = f();
        *self.free.lock().unwrap() += 1;
        self.wake.notify_one();
        out
    }
}

/// One API turn through the balancer in session `session`: the answer's text, or what
/// went wrong.
fn api_turn(port: u16, session: &str, text: &str) -> Result<String, String> {
    let body = serde_json::json!({
        "model": "hermes-agent",
        "messages": [{"role": "user", "content": text}],
    })
    .to_string();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Authorization: Bearer {API_KEY}\r\nContent-Type: application/json\r\n\
         X-Hermes-Session-Id: {session}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let answer = exchange(port, &request).ok_or("no connection")?;
    let (head, json) = answer.split_once("\r\n\r\n").ok_or("no answer")?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(answer);
    }
    let v: Value = serde_json::from_str(json).map_err(|e| format!("{e}: {json}"))?;
    v["choices"][0]["message"]["content"]
        .as_str()
        .map(str::to_string)
        .ok_or(answer)
}

/// Texts sent, each with its chat or API session.
type Sent = Vec<(String, String)>;

/// Drives one round of load: `chats` webhook chats through the fan-out (each message to
/// two replicas at once) and `chats` API sessions through the balancer, `per_chat`
/// messages each, in order within a chat, at most [`IN_FLIGHT`] requests at once. Returns
/// every webhook text sent as `(chat, text)` and every API turn as `(session, text)`;
/// panics when an API turn fails or a webhook is not accepted or not answered in time.
fn drive(
    round: &str,
    chats: usize,
    per_chat: usize,
    fan_out: u16,
    balancer: Option<u16>,
    receiver: &Arc<Receiver>,
) -> (Sent, Sent) {
    let slots = Slots::new(IN_FLIGHT);
    let mut workers = Vec::new();
    for c in 0..chats {
        let (hook_slots, receiver, hook_round) =
            (slots.clone(), receiver.clone(), round.to_string());
        workers.push(std::thread::spawn(move || {
            let (slots, round) = (hook_slots, hook_round);
            let chat = format!("chat{c}");
            let mut sent = Vec::new();
            for j in 0..per_chat {
                let text = format!("{round} w{c} #{j}");
                let body = message(&format!("{round}-{c}-{j}"), &chat, &text);
                let status = slots.hold(|| post(fan_out, &body)).unwrap_or_default();
                assert!(status.contains(" 20"), "{text}: {status}");
                let want = format!("echo: {text}");
                wait_until(&want, Duration::from_secs(90), || {
                    receiver
                        .replies()
                        .iter()
                        .any(|(_, t)| t == &want)
                        .then_some(())
                });
                sent.push((chat.clone(), text));
            }
            (sent, Vec::new())
        }));
        let Some(port) = balancer else { continue };
        let (slots, round) = (slots.clone(), round.to_string());
        workers.push(std::thread::spawn(move || {
            let session = format!("api-{c}");
            let mut turns = Vec::new();
            for j in 0..per_chat {
                let text = format!("{round} a{c} #{j}");
                let answer = slots.hold(|| api_turn(port, &session, &text));
                assert_eq!(answer, Ok(format!("echo: {text}")), "API turn {text}");
                turns.push((session.clone(), text));
            }
            (Vec::new(), turns)
        }));
    }
    let (mut hooks, mut turns) = (Vec::new(), Vec::new());
    for w in workers {
        let (h, t) = w.join().unwrap();
        hooks.extend(h);
        turns.extend(t);
    }
    (hooks, turns)
}

/// Every message the store holds: `(session key, role, text)`.
fn stored(dsn: &str, schema: &str) -> Vec<(String, String, String)> {
    let (dsn, schema) = (dsn.to_string(), schema.to_string());
    std::thread::spawn(move || {
        let pg =
            hermes_store::PgStore::open(&hermes_store::PgOptions::new(dsn).with_schema(schema))
                .unwrap();
        let store = hermes_store::SessionStore::from_backend(pg);
        let mut out = Vec::new();
        for session in store.list_sessions(10_000, 0).unwrap() {
            let key = session.session_key.clone().unwrap_or_default();
            for m in store.load_messages(&session.id).unwrap() {
                let role = serde_json::to_value(m.message.role).unwrap();
                let role = role.as_str().unwrap_or_default().to_string();
                out.push((key.clone(), role, m.message.text()));
            }
        }
        out
    })
    .join()
    .unwrap()
}

/// Issue 21's replica test: three gateway processes on one PostgreSQL database behind
/// loopback load balancers, the webhook (every message delivered to two replicas at once)
/// and the API driven by a bounded load generator, a replica killed with SIGKILL in the
/// middle of a turn, a cron job coming due while the replicas restart one after another.
/// Asserted: every inbound message answered exactly once, every API turn answered, chats
/// and API sessions continue on whichever replica gets their next message, the cron job
/// fired once, and the store holds each user message and each answer exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_behind_a_balancer_under_load_answer_everything_once() {
    let Some(dsn) = std::env::var("HERMES_TEST_PG_DSN")
        .ok()
        .filter(|v| !v.is_empty())
    else {
        eprintln!("skipped: HERMES_TEST_PG_DSN is not set");
        return;
    };
    let schema = format!(
        "replicas_{}",
        chrono::Utc::now()
            .timestamp_nanos_opt()
            .unwrap_or(0)
            .unsigned_abs()
    );
    let mock = MockProvider::start().await;
    // The model answers "echo: <the user's text>"; a text with SLOW takes a while (the
    // replica running it is killed meanwhile).
    mock.set_responder(|body| {
        let text = last_user_text(body);
        let reply = MockResponse::text(&format!("echo: {}", text.lines().last().unwrap_or("")));
        Some(if text.contains("SLOW") {
            reply.with_delay(Duration::from_secs(6))
        } else {
            reply
        })
    });
    let config = format!(
        "model:\n  provider: custom\n  base_url: {}\n  default: mock-model\n\
         sessiondb:\n  provider: postgresql\n  postgresql:\n    dsn: {dsn}\n    schema: {schema}\n",
        mock.base_url()
    );
    let receiver = Arc::new(Receiver::start());
    let mut replicas: Vec<Replica> = (0..3).map(|_| Replica::new(&config)).collect();
    let fan_out = proxy::FanOut::start(replicas.iter().map(|r| r.port).collect());
    let balancer = proxy::Balancer::start(replicas.iter().map(|r| r.api_port).collect());
    let front = Front {
        callback: receiver.port,
        fan_out: fan_out.port,
        balancer: balancer.port,
    };
    // A cron job in every replica's jobs.json (three machines with a copied home), not due
    // before the restarts below.
    let first = &replicas[0];
    let created = common::hermes(
        first.home.path(),
        first.cwd.path(),
        &["cron", "create", "every 1h", "CRONJOB report the weather"],
    )
    .await;
    assert!(created.status.success(), "{}", stderr(&created));
    let jobs_file = first.home.path().join("cron").join("jobs.json");
    let jobs: Value = serde_json::from_str(&std::fs::read_to_string(&jobs_file).unwrap()).unwrap();
    let write_jobs = |replicas: &[Replica], due: chrono::DateTime<chrono::Utc>| {
        let mut jobs = jobs.clone();
        for job in jobs["jobs"].as_array_mut().expect("a jobs list") {
            job["next_run_at"] = Value::String(due.to_rfc3339());
        }
        for r in replicas {
            let dir = r.home.path().join("cron");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("jobs.json"), jobs.to_string()).unwrap();
        }
    };
    write_jobs(&replicas, chrono::Utc::now() + chrono::Duration::hours(1));
    for r in &mut replicas {
        r.start(&front);
    }

    // 1. Load: 6 webhook chats and 6 API sessions, 4 messages each.
    let (mut hooks, mut turns) = drive("r1", 6, 4, fan_out.port, Some(balancer.port), &receiver);

    // 2. A replica killed mid-turn: a live one takes the message over and answers it once.
    let body = message("m-slow", "chat-slow", "SLOW question");
    assert!(
        post(replicas[0].port, &body)
            .unwrap_or_default()
            .contains(" 20")
    );
    hooks.push(("chat-slow".into(), "SLOW question".into()));
    wait_until("the slow turn to start", Duration::from_secs(30), || {
        mock.requests()
            .iter()
            .any(|b| last_user_text(b).contains("SLOW question"))
            .then_some(())
    });
    replicas[0].kill9();
    wait_until("the taken-over answer", Duration::from_secs(90), || {
        receiver
            .replies()
            .iter()
            .any(|(_, t)| t == "echo: SLOW question")
            .then_some(())
    });

    // 3. The cron job comes due while the replicas restart one after another, with webhook
    // load going on (the fan-out skips a replica that is down).
    write_jobs(&replicas, chrono::Utc::now() + chrono::Duration::seconds(5));
    let load = {
        let receiver = receiver.clone();
        let port = fan_out.port;
        std::thread::spawn(move || drive("r2", 3, 3, port, None, &receiver))
    };
    for i in [1, 2, 0] {
        let err = replicas[i].stop();
        assert!(!err.contains("panicked"), "{err}");
        replicas[i].start(&front);
    }
    let Ok((more, _)) = load.join() else {
        for r in &replicas {
            eprintln!("==== replica {}\n{}", r.port, r.log());
        }
        panic!("the load during the restarts failed");
    };
    hooks.extend(more);
    let cron_calls = |reqs: &[Value]| {
        reqs.iter()
            .filter(|b| last_user_text(b).contains("CRONJOB report the weather"))
            .count()
    };
    wait_until("the cron run", Duration::from_secs(90), || {
        (cron_calls(&mock.requests()) >= 1).then_some(())
    });

    // 4. More load after the restarts: every chat and API session continues.
    let (h, t) = drive("r3", 6, 2, fan_out.port, Some(balancer.port), &receiver);
    hooks.extend(h);
    turns.extend(t);
    std::thread::sleep(Duration::from_secs(3));

    // Each webhook message answered exactly once; nothing else was sent.
    let replies = receiver.replies();
    for (chat, text) in &hooks {
        let want = format!("echo: {text}");
        let n = replies
            .iter()
            .filter(|(c, t)| c == chat && t == &want)
            .count();
        assert_eq!(n, 1, "{want} answered {n} times");
    }
    assert_eq!(
        replies.len(),
        hooks.len(),
        "unexpected replies: {replies:?}"
    );
    assert_eq!(cron_calls(&mock.requests()), 1, "the cron job fired once");

    // Chats and API sessions continued across replicas: the model saw each one's history.
    let requests = mock.requests();
    let mut histories: HashMap<String, Vec<String>> = HashMap::new();
    for (chat, text) in hooks.iter().chain(turns.iter()) {
        histories
            .entry(chat.clone())
            .or_default()
            .push(text.clone());
    }
    for (chat, texts) in &histories {
        let last = texts.last().unwrap();
        let body = requests
            .iter()
            .filter(|b| last_user_text(b).ends_with(last.as_str()))
            .max_by_key(|b| b["messages"].as_array().map_or(0, Vec::len))
            .unwrap_or_else(|| panic!("no request for {last}"));
        let seen = body.to_string();
        for t in texts {
            assert!(seen.contains(t.as_str()), "{chat}: {last} lacks {t}");
        }
    }

    // The store holds each message and each answer exactly once.
    let rows = stored(&dsn, &schema);
    for (_, text) in hooks.iter().chain(turns.iter()) {
        let count = |role: &str, want: &str| {
            rows.iter()
                .filter(|(_, r, t)| r == role && t.ends_with(want))
                .count()
        };
        assert_eq!(count("user", text), 1, "stored user message {text:?}");
        assert_eq!(
            count("assistant", &format!("echo: {text}")),
            1,
            "stored answer to {text:?}"
        );
    }
    for r in &mut replicas {
        let err = r.stop();
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// A TCP forwarder to the test PostgreSQL that can be cut: [`Cut::cut`] closes every
/// connection and refuses new ones (the database "goes away").
struct Cut {
    port: u16,
    down: Arc<std::sync::atomic::AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Cut {
    fn start(upstream: (String, u16)) -> Cut {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let down: Arc<std::sync::atomic::AtomicBool> = Arc::default();
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (d, o) = (down.clone(), open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if d.load(std::sync::atomic::Ordering::SeqCst) {
                    let _ = client.shutdown(std::net::Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect((upstream.0.as_str(), upstream.1)) else {
                    continue;
                };
                let mut list = o.lock().unwrap();
                list.push(client.try_clone().unwrap());
                list.push(server.try_clone().unwrap());
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Cut { port, down, open }
    }

    fn cut(&self) {
        self.down.store(true, std::sync::atomic::Ordering::SeqCst);
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// User, host, port and database of a `postgresql://user@host:port/db` DSN (the test
/// server's form, `scripts/pg-test-server.sh`).
fn dsn_parts(dsn: &str) -> (String, String, u16, String) {
    let rest = dsn
        .strip_prefix("postgresql://")
        .expect("a postgresql:// DSN");
    let (user, rest) = rest.split_once('@').expect("user@host");
    let (hostport, db) = rest.split_once('/').expect("host/db");
    let (host, port) = hostport.split_once(':').unwrap_or((hostport, "5432"));
    let db = db.split('?').next().unwrap_or(db);
    (user.into(), host.into(), port.parse().unwrap(), db.into())
}

fn get(port: u16, path: &str) -> String {
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    exchange(port, &request).expect("the server listens")
}

/// Issue 21 item 5: `/health/ready` answers 200 while the database answers and 503 with
/// `Retry-After` once it does not (a load balancer stops sending turns there); `/health`
/// (the process serves) stays 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_fails_when_the_database_is_unreachable() {
    let Some(dsn) = std::env::var("HERMES_TEST_PG_DSN")
        .ok()
        .filter(|v| !v.is_empty())
    else {
        eprintln!("skipped: HERMES_TEST_PG_DSN is not set");
        return;
    };
    let (user, host, port, dbname) = dsn_parts(&dsn);
    let cut = Cut::start((host, port));
    let via = format!("postgresql://{user}@127.0.0.1:{}/{dbname}", cut.port);
    let mock = MockProvider::start().await;
    let config = format!(
        "model:\n  provider: custom\n  base_url: {}\n  default: mock-model\n\
         sessiondb:\n  provider: postgresql\n  postgresql:\n    dsn: {via}\n    schema: ready_{}\n",
        mock.base_url(),
        chrono::Utc::now()
            .timestamp_nanos_opt()
            .unwrap_or(0)
            .unsigned_abs()
    );
    let mut replica = Replica::new(&config);
    let api = free_port();
    let bin = assert_cmd::cargo::cargo_bin("hermes");
    replica.child = Some(
        std::process::Command::new(bin)
            .args(["gateway", "run"])
            .env_clear()
            .env("HERMES_HOME", replica.home.path())
            .env("HOME", replica.home.path())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("NO_COLOR", "1")
            .env("API_SERVER_ENABLED", "true")
            .env("API_SERVER_PORT", api.to_string())
            .current_dir(replica.cwd.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let ready = wait_until("the API server", Duration::from_secs(90), || {
        TcpStream::connect(("127.0.0.1", api))
            .ok()
            .map(|_| get(api, "/health/ready"))
    });
    assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");
    assert!(ready.contains(r#""store":"postgresql""#), "{ready}");

    cut.cut();
    let down = get(api, "/health/ready");
    assert!(down.starts_with("HTTP/1.1 503"), "{down}");
    assert!(
        down.to_ascii_lowercase().contains("retry-after: 5"),
        "{down}"
    );
    assert!(down.contains("unreachable"), "{down}");
    assert!(get(api, "/health").starts_with("HTTP/1.1 200"));
    replica.kill9();
}
