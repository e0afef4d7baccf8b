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
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = stream.read(&mut chunk).ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return Some(buf[end + 4..end + 4 + len].to_vec());
        }
    }
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

/// A replica: its own home, the shared config, its webhook port.
struct Replica {
    home: TempHome,
    cwd: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl Replica {
    fn new(config: &str) -> Replica {
        let home = TempHome::new().unwrap();
        std::fs::write(home.home().config_file(), config).unwrap();
        Replica {
            home,
            cwd: tempfile::tempdir().unwrap(),
            port: free_port(),
            child: None,
        }
    }

    fn start(&mut self, callback: u16) {
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
                format!("http://127.0.0.1:{callback}/reply"),
            )
            .env("GATEWAY_ALLOW_ALL_USERS", "true")
            .current_dir(self.cwd.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let started = Instant::now();
        // Unsigned probe: 401 once the listener is up.
        while post_unsigned(self.port).is_none() {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_answer_each_message_once_and_survive_a_kill() {
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
    let receiver = Receiver::start();
    let mut replicas: Vec<Replica> = (0..3).map(|_| Replica::new(&config)).collect();
    // A cron job every replica's jobs.json has (three machines with a copied home), due now.
    let first = &replicas[0];
    let created = common::hermes(
        first.home.path(),
        first.cwd.path(),
        &["cron", "create", "every 1h", "CRONJOB report the weather"],
    )
    .await;
    assert!(created.status.success(), "{}", stderr(&created));
    let jobs_file = first.home.path().join("cron").join("jobs.json");
    let mut jobs: Value =
        serde_json::from_str(&std::fs::read_to_string(&jobs_file).unwrap()).unwrap();
    let due = (chrono::Utc::now() - chrono::Duration::seconds(30)).to_rfc3339();
    for job in jobs["jobs"].as_array_mut().expect("a jobs list") {
        job["next_run_at"] = Value::String(due.clone());
    }
    for r in &replicas {
        let dir = r.home.path().join("cron");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("jobs.json"), jobs.to_string()).unwrap();
    }
    for r in &mut replicas {
        r.start(receiver.port);
    }
    let ports: Vec<u16> = replicas.iter().map(|r| r.port).collect();

    // 1. Twelve messages on four chats, each delivered to two replicas at once.
    let texts: Vec<(String, String, String)> = (0..12)
        .map(|i| {
            (
                format!("m{i}"),
                format!("chat{}", i % 4),
                format!("message {i}"),
            )
        })
        .collect();
    for (i, (id, chat, text)) in texts.iter().enumerate() {
        let body = message(id, chat, text);
        let (a, b) = (ports[i % 3], ports[(i + 1) % 3]);
        let (b1, b2) = (body.clone(), body.clone());
        let t1 = std::thread::spawn(move || post(a, &b1));
        let t2 = std::thread::spawn(move || post(b, &b2));
        let s1 = t1.join().unwrap().unwrap_or_default();
        let s2 = t2.join().unwrap().unwrap_or_default();
        assert!(s1.contains(" 20") && s2.contains(" 20"), "{s1} / {s2}");
        // One chat's messages in order: wait for this one's answer before its chat's next.
        let want = format!("echo: {text}");
        wait_until(&want, Duration::from_secs(60), || {
            receiver
                .replies()
                .iter()
                .any(|(_, t)| t == &want)
                .then_some(())
        });
    }
    std::thread::sleep(Duration::from_secs(2));
    let replies = receiver.replies();
    for (_, chat, text) in &texts {
        let want = format!("echo: {text}");
        let n = replies
            .iter()
            .filter(|(c, t)| c == chat && t == &want)
            .count();
        assert_eq!(n, 1, "{want} answered {n} times: {replies:?}");
    }

    // 2. The chats continued across replicas: the model saw each chat's earlier messages.
    let requests = mock.requests();
    for chat in 0..4 {
        let last = texts
            .iter()
            .rfind(|(_, c, _)| c == &format!("chat{chat}"))
            .unwrap();
        let body = requests
            .iter()
            .filter(|b| last_user_text(b).ends_with(&last.2))
            .max_by_key(|b| b["messages"].as_array().map_or(0, Vec::len))
            .expect("the chat's last request");
        let seen = body.to_string();
        for (_, c, t) in &texts {
            if c == &last.1 {
                assert!(seen.contains(t.as_str()), "{} lacks {t}", last.2);
            }
        }
    }

    // 3. The cron job fired once across the three replicas.
    let cron_calls = |reqs: &[Value]| {
        reqs.iter()
            .filter(|b| last_user_text(b).contains("CRONJOB report the weather"))
            .count()
    };
    wait_until("the cron run", Duration::from_secs(60), || {
        (cron_calls(&mock.requests()) >= 1).then_some(())
    });

    // 4. A replica killed mid-turn: a live one takes the message over and answers it once.
    let body = message("m-slow", "chat-slow", "SLOW question");
    assert!(post(ports[0], &body).unwrap_or_default().contains(" 20"));
    wait_until("the slow turn to start", Duration::from_secs(30), || {
        mock.requests()
            .iter()
            .any(|b| last_user_text(b).contains("SLOW question"))
            .then_some(())
    });
    replicas[0].kill9();
    let want = "echo: SLOW question".to_string();
    wait_until("the taken-over answer", Duration::from_secs(90), || {
        receiver
            .replies()
            .iter()
            .any(|(_, t)| t == &want)
            .then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    let n = receiver
        .replies()
        .iter()
        .filter(|(_, t)| t == &want)
        .count();
    assert_eq!(n, 1, "the killed replica's message answered {n} times");

    // Restart the killed replica: the cron due time is not fired again, nothing is answered
    // twice.
    replicas[0].start(receiver.port);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(cron_calls(&mock.requests()), 1, "the cron job fired once");
    let mut counts: HashMap<String, usize> = HashMap::new();
    for (_, t) in receiver.replies() {
        if t.starts_with("echo: message") || t == want {
            *counts.entry(t).or_default() += 1;
        }
    }
    assert!(counts.values().all(|n| *n == 1), "{counts:?}");
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
