//! `hermes pairing {list,approve,revoke}` and `hermes gateway {status,run}` end to end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::driver::{hermes_command, wait_bounded};
use common::{Env, stderr, stdout};
use hermes_gateway::auth::pairing::{CodeRequest, PairingStore, now_unix};

#[tokio::test]
async fn pairing_list_approve_revoke() {
    let env = Env::new().await;
    let out = env.run_ok(&["pairing", "list"]).await;
    assert!(
        stdout(&out).contains("no pairing codes"),
        "{}",
        stdout(&out)
    );
    let store = PairingStore::for_home(env.home.path());
    let CodeRequest::Issued(code) = store
        .request_code("telegram", "4242", Some("bob"), now_unix())
        .unwrap()
    else {
        panic!("no code issued");
    };
    let out = env.run_ok(&["pairing", "list"]).await;
    let shown = &store.overview(now_unix()).unwrap().pending[0].1.shown;
    assert!(stdout(&out).contains(shown.as_str()), "{}", stdout(&out));
    assert!(!stdout(&out).contains(&code), "{}", stdout(&out));
    assert!(stdout(&out).contains("4242 (bob)"), "{}", stdout(&out));
    let bad = env
        .run(&["pairing", "approve", "telegram", "ZZZZZZZZ"])
        .await;
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("no pending pairing code"),
        "{}",
        stderr(&bad)
    );
    let out = env
        .run_ok(&["pairing", "approve", "telegram", &code.to_lowercase()])
        .await;
    assert!(
        stdout(&out).contains("approved telegram user 4242"),
        "{}",
        stdout(&out)
    );
    assert!(store.is_approved("telegram", "4242").unwrap());
    let status = env
        .run_env(
            &["gateway", "status"],
            &[("TELEGRAM_BOT_TOKEN", "123:abc".into())],
        )
        .await;
    assert!(status.status.success(), "{}", stderr(&status));
    let text = stdout(&status);
    let telegram = text.lines().find(|l| l.starts_with("telegram")).unwrap();
    assert!(
        telegram.contains("yes") && telegram.contains("pairing"),
        "{text}"
    );
    assert!(text.contains("routed sessions: 0"), "{text}");
    env.run_ok(&["pairing", "revoke", "telegram", "4242"]).await;
    assert!(!store.is_approved("telegram", "4242").unwrap());
    let again = env.run(&["pairing", "revoke", "telegram", "4242"]).await;
    assert_eq!(again.status.code(), Some(1));
}

/// Python Hermes' own `gateway:` keys are named once at start (the summary of Python settings
/// hermes does not use), not again as a log line or an unknown-key warning of the gateway.
#[tokio::test]
async fn pythons_gateway_keys_are_reported_once() {
    let env = Env::with_config(
        "gateway:\n  strict: false\n  restart_loop_guard:\n    max_restarts: 3\n  \
         max_concurrent_sessions: 2\n",
    )
    .await;
    for args in [&["gateway", "status"][..], &["config", "check"][..]] {
        let out = env.run(args).await;
        let err = stderr(&out);
        if args[0] == "gateway" {
            assert!(out.status.success(), "{err}");
            assert_eq!(
                err.matches("gateway").count(),
                1,
                "one line naming the section: {err}"
            );
            assert!(err.contains("2 Python Hermes settings"), "{err}");
            assert!(!err.contains("unknown key"), "{err}");
        } else {
            // `config check` still names each key with what hermes does instead.
            let all = format!("{}{err}", stdout(&out));
            assert!(all.contains("gateway.strict"), "{all}");
        }
    }
}

/// As Python's `_sync_allowlist_add` / `_sync_allowlist_remove`: a platform with an
/// allowlist gets the approved user added in `.env` (and removed on revoke); an open platform
/// stays open.
#[tokio::test]
async fn pairing_keeps_an_existing_allowlist_in_step() {
    let env = Env::new().await;
    let dotenv = env.home.path().join(".env");
    std::fs::write(&dotenv, "# who may talk\nTELEGRAM_ALLOWED_USERS=111\n").unwrap();
    let store = PairingStore::for_home(env.home.path());
    let issue = |platform: &str, user: &str| match store
        .request_code(platform, user, None, now_unix())
        .unwrap()
    {
        CodeRequest::Issued(code) => code,
        other => panic!("no code issued: {other:?}"),
    };
    let code = issue("telegram", "4242");
    env.run_ok(&["pairing", "approve", "telegram", &code]).await;
    let text = std::fs::read_to_string(&dotenv).unwrap();
    assert!(text.contains("# who may talk\n"), "{text}");
    assert!(text.contains("TELEGRAM_ALLOWED_USERS=111,4242\n"), "{text}");
    env.run_ok(&["pairing", "revoke", "telegram", "4242"]).await;
    let text = std::fs::read_to_string(&dotenv).unwrap();
    assert!(text.contains("TELEGRAM_ALLOWED_USERS=111\n"), "{text}");
    let code = issue("discord", "77");
    env.run_ok(&["pairing", "approve", "discord", &code]).await;
    let text = std::fs::read_to_string(&dotenv).unwrap();
    assert!(!text.contains("DISCORD_ALLOWED_USERS"), "{text}");
    assert!(store.is_approved("discord", "77").unwrap());
}

#[tokio::test]
async fn gateway_config_errors_and_no_platforms_are_reported() {
    let env = Env::with_config("display:\n  busy_input_mode: sometimes\n").await;
    let out = env.run(&["gateway", "status"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("display.busy_input_mode"),
        "{}",
        stderr(&out)
    );
    let env = Env::new().await;
    let out = env.run(&["gateway", "run"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no messaging platform is configured"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn gateway_status_shows_every_platform_configured_from_env() {
    let env = Env::new().await;
    let vars = [
        ("TELEGRAM_BOT_TOKEN", "123:fake"),
        ("DISCORD_BOT_TOKEN", "fake-discord"),
        ("SLACK_BOT_TOKEN", "xoxb-fake"),
        ("SLACK_APP_TOKEN", "xapp-fake"),
        ("WEBHOOK_SECRET", "fake-secret"),
        ("IRC_SERVER", "irc.example.net"),
        ("IRC_CHANNEL", "#hermes"),
        ("MATRIX_HOMESERVER", "https://matrix.example.org"),
        ("MATRIX_PASSWORD", "fake-password"),
        ("EMAIL_ADDRESS", "bot@example.org"),
        ("EMAIL_PASSWORD", "fake-password"),
        ("EMAIL_IMAP_HOST", "imap.example.org"),
        ("EMAIL_SMTP_HOST", "smtp.example.org"),
        ("WHATSAPP_CLOUD_PHONE_NUMBER_ID", "1234567890"),
        ("WHATSAPP_CLOUD_ACCESS_TOKEN", "fake-wa"),
        ("TWILIO_ACCOUNT_SID", "ACfake"),
        ("TWILIO_AUTH_TOKEN", "fake-twilio"),
        ("TWILIO_PHONE_NUMBER", "+15550001111"),
        ("SIGNAL_HTTP_URL", "http://127.0.0.1:9"),
        ("SIGNAL_ACCOUNT", "+15550001111"),
        ("MATTERMOST_URL", "https://mm.example.com"),
        ("MATTERMOST_TOKEN", "fake-mm-token"),
        ("HASS_TOKEN", "fake-ha-token"),
        ("API_SERVER_ENABLED", "true"),
        ("API_SERVER_KEY", "sk-fake"),
    ];
    let vars: Vec<(&str, String)> = vars.iter().map(|(k, v)| (*k, v.to_string())).collect();
    let out = env.run_env(&["gateway", "status"], &vars).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for platform in [
        "telegram",
        "discord",
        "slack",
        "webhook",
        "irc",
        "matrix",
        "email",
        "whatsapp_cloud",
        "sms",
        "signal",
        "mattermost",
        "homeassistant",
        "api_server",
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(platform))
            .unwrap_or_else(|| panic!("no {platform} line in:\n{text}"));
        let columns: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(columns[1], "yes", "{platform} not configured:\n{text}");
    }
    assert!(text.contains("bearer key"), "{text}");

    // Without the tokens nothing is configured.
    let out = env.run_ok(&["gateway", "status"]).await;
    for line in stdout(&out).lines().skip(1).filter(|l| {
        ![
            "routed",
            "cron",
            "service",
            "replica",
            "  replica",
            "leader",
        ]
        .iter()
        .any(|p| l.starts_with(p))
    }) {
        assert_eq!(line.split_whitespace().nth(1), Some("no"), "{line}");
    }
    assert!(
        stdout(&out).lines().any(|l| l == "cron scheduler: on"),
        "{}",
        stdout(&out)
    );
}

/// `cron.enabled: false` keeps the gateway's scheduler off, and the status says so; a value
/// that is not a boolean is an error naming the key.
#[tokio::test]
async fn gateway_status_reports_cron_enabled() {
    let env = Env::with_config("cron:\n  enabled: false\n").await;
    let out = env.run_ok(&["gateway", "status"]).await;
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l == "cron scheduler: off (cron.enabled: false)"),
        "{}",
        stdout(&out)
    );
    let env = Env::with_config("cron:\n  enabled: sometimes\n").await;
    let out = env.run(&["gateway", "status"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("config.yaml: cron.enabled: expected true or false, got sometimes"),
        "{}",
        stderr(&out)
    );
}

/// `GET /health` over a plain HTTP/1.1 connection; `None` while nothing answers.
fn health(port: u16) -> Option<String> {
    http(
        port,
        &format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"),
    )
}

/// Sends one raw HTTP/1.1 request to loopback `port`; the whole response, `None` while
/// nothing answers.
fn http(port: u16, request: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some(response)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_run_serves_the_api_server_and_stops_on_sigterm() {
    let env = Env::new().await;
    // FEATURES §12: `gateway:startup` fires also with only the API server; the hook writes
    // the event it gets on stdin into its own directory.
    let hook = env.home.path().join("hooks").join("startup");
    std::fs::create_dir_all(&hook).unwrap();
    std::fs::write(
        hook.join("HOOK.yaml"),
        "events: [\"gateway:startup\"]\ncommand: cat > event.tmp && mv event.tmp event.json\n",
    )
    .unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cmd = hermes_command(env.home.path(), env.cwd.path(), &["gateway", "run"]);
    cmd.env("API_SERVER_ENABLED", "true")
        .env("API_SERVER_PORT", port.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let started = Instant::now();
    let answer = loop {
        if let Some(r) = health(port) {
            break r;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the API server never answered on port {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let event = loop {
        if let Ok(text) = std::fs::read_to_string(hook.join("event.json")) {
            break serde_json::from_str::<serde_json::Value>(&text).unwrap();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the gateway:startup hook never ran"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(event["event"], "gateway:startup");
    assert_eq!(
        event["data"]["platforms"],
        serde_json::json!(["api_server"])
    );
    let term = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let out = wait_bounded(child, Duration::from_secs(60), "gateway run after SIGTERM");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("gateway stopped"), "{}", stderr(&out));
    assert!(
        health(port).is_none(),
        "the API server still answers after shutdown"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_run_listens_for_signed_webhooks_and_stops_on_sigterm() {
    let env = Env::new().await;
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cmd = hermes_command(env.home.path(), env.cwd.path(), &["gateway", "run"]);
    cmd.env("WEBHOOK_SECRET", "fake-secret")
        .env("WEBHOOK_PORT", port.to_string())
        .env("WEBHOOK_PATH", "/hooks/in")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let body = r#"{"chat_id":"c1","user_id":"u1","text":"hi"}"#;
    let request = format!(
        "POST /hooks/in HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let started = Instant::now();
    let answer = loop {
        if let Some(r) = http(port, &request) {
            break r;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the webhook adapter never answered on port {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // Unsigned: refused before anything reaches the gateway.
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    let term = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let out = wait_bounded(child, Duration::from_secs(60), "gateway run after SIGTERM");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("gateway stopped"), "{}", stderr(&out));
    // Issue 20 item 8: the start-up lines name the webhook's listener.
    let expected = format!("webhook listening on http://127.0.0.1:{port}/hooks/in");
    assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
}

/// Issue 20 item 8: without `API_SERVER_KEY` on a public address the gateway refuses before
/// anything listens: no `listening` line, the webhook's port stays free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_run_checks_the_api_key_before_listening() {
    let env = Env::new().await;
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cmd = hermes_command(env.home.path(), env.cwd.path(), &["gateway", "run"]);
    cmd.env("API_SERVER_ENABLED", "true")
        .env("API_SERVER_HOST", "0.0.0.0")
        .env("WEBHOOK_SECRET", "fake-secret")
        .env("WEBHOOK_PORT", port.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = wait_bounded(cmd.spawn().unwrap(), Duration::from_secs(60), "gateway run");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("without API_SERVER_KEY"), "{err}");
    assert!(!err.contains("listening"), "{err}");
    assert!(
        !err.contains('\u{1b}'),
        "ANSI codes in redirected output: {err:?}"
    );
}

/// A loopback receiver for the webhook's reply callbacks: answers 200 to every request and
/// hands each raw request on to the returned channel.
fn callback_receiver() -> (u16, std::sync::mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            // Read the head, then the body its Content-Length announces.
            loop {
                let n = stream.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    break;
                }
                seen.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&seen).to_string();
                if let Some(head_end) = text.find("\r\n\r\n") {
                    let len = text[..head_end]
                        .lines()
                        .find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse::<usize>().ok())?
                        })
                        .unwrap_or(0);
                    if seen.len() >= head_end + 4 + len {
                        break;
                    }
                }
            }
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
            );
            if tx.send(String::from_utf8_lossy(&seen).to_string()).is_err() {
                break;
            }
        }
    });
    (port, rx)
}

/// Issue 20 item 8: each inbound message and each reply is one info line in the gateway's
/// log (platform, chat, user, size), and the message's text is never written there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_logs_one_line_per_inbound_message_and_reply_without_the_text() {
    use hermes_gateway::platforms::webhook::{SIGNATURE_HEADER, Signer, TIMESTAMP_HEADER};
    let env = Env::new().await;
    env.mock.push(hermes_testkit::MockResponse::text(
        "the answer is forty-two",
    ));
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (callback_port, callbacks) = callback_receiver();
    let mut cmd = hermes_command(env.home.path(), env.cwd.path(), &["gateway", "run"]);
    cmd.env("WEBHOOK_SECRET", "fake-secret")
        .env("WEBHOOK_PORT", port.to_string())
        .env("WEBHOOK_PATH", "/hooks/in")
        .env(
            "WEBHOOK_CALLBACK_URL",
            format!("http://127.0.0.1:{callback_port}/replies"),
        )
        .env("GATEWAY_ALLOW_ALL_USERS", "true")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let secret_words = "tell me the secret plan";
    let body = format!(r#"{{"chat_id":"room-7","user_id":"u-42","text":"{secret_words}"}}"#);
    let ts = chrono::Utc::now().timestamp();
    let signature = Signer::new(b"fake-secret")
        .unwrap()
        .sign_timestamped(ts, body.as_bytes());
    let request = format!(
        "POST /hooks/in HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n{SIGNATURE_HEADER}: {signature}\r\n{TIMESTAMP_HEADER}: {ts}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let started = Instant::now();
    let answer = loop {
        if let Some(r) = http(port, &request) {
            break r;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the webhook adapter never answered on port {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(answer.starts_with("HTTP/1.1 202"), "{answer}");
    let delivered = callbacks
        .recv_timeout(Duration::from_secs(60))
        .expect("the reply never reached the callback");
    assert!(delivered.contains("the answer is forty-two"), "{delivered}");

    let log_path = env.home.path().join("logs").join("agent.log");
    let wanted = |log: &str| log.contains("reply sent") && log.contains("message received");
    let waiting = Instant::now();
    while !wanted(&std::fs::read_to_string(&log_path).unwrap_or_default())
        && waiting.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let term = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let out = wait_bounded(child, Duration::from_secs(60), "gateway run after SIGTERM");
    assert!(out.status.success(), "{}", stderr(&out));
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(wanted(&log), "log:\n{log}\nstderr:\n{}", stderr(&out));

    let received: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("message received"))
        .collect();
    assert_eq!(received.len(), 1, "one line per inbound message:\n{log}");
    let line = received[0];
    assert!(line.contains("INFO"), "{line}");
    for field in [
        "platform=webhook",
        "chat=room-7",
        "user=u-42",
        &format!("chars={}", secret_words.chars().count()),
    ] {
        assert!(line.contains(field), "{field} missing: {line}");
    }
    let replies: Vec<&str> = log.lines().filter(|l| l.contains("reply sent")).collect();
    assert_eq!(replies.len(), 1, "one line per reply:\n{log}");
    let line = replies[0];
    assert!(line.contains("platform=webhook"), "{line}");
    assert!(line.contains("chat=room-7"), "{line}");
    assert!(
        line.contains(&format!("chars={}", "the answer is forty-two".len())),
        "{line}"
    );
    assert!(
        !log.contains(secret_words),
        "the message text is logged:\n{log}"
    );
    assert!(
        !log.contains("forty-two"),
        "the reply text is logged:\n{log}"
    );
}

/// Issue 20 item 8: `gateway run` with the API server, the webhook and the cron scheduler
/// prints one line per thing it serves, then the shutdown lines (ports masked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_run_start_up_lines_snapshot() {
    let env = Env::new().await;
    let free_port = || {
        TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let (api_port, hook_port) = (free_port(), free_port());
    let mut cmd = hermes_command(env.home.path(), env.cwd.path(), &["gateway", "run"]);
    cmd.env("API_SERVER_ENABLED", "true")
        .env("API_SERVER_PORT", api_port.to_string())
        .env("WEBHOOK_SECRET", "fake-secret")
        .env("WEBHOOK_PORT", hook_port.to_string())
        .env("WEBHOOK_PATH", "/hooks/in")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let started = Instant::now();
    // The webhook is probed by connecting only: a request would add its own log line.
    while health(api_port).is_none() || TcpStream::connect(("127.0.0.1", hook_port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the API server or the webhook never answered"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let term = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let out = wait_bounded(child, Duration::from_secs(60), "gateway run after SIGTERM");
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = stderr(&out)
        .replace(&format!(":{api_port}"), ":<api-port>")
        .replace(&format!(":{hook_port}"), ":<webhook-port>");
    assert!(
        lines
            .lines()
            .any(|l| l == "API server listening on http://127.0.0.1:<api-port>"),
        "{lines}"
    );
    insta::assert_snapshot!("gateway_run_start_up_lines", lines);
}

#[tokio::test]
async fn doctor_shows_each_configured_platforms_state() {
    let env = Env::new().await;
    let email = |port: &str| -> Vec<(&'static str, String)> {
        vec![
            ("EMAIL_ADDRESS", "bot@example.org".into()),
            ("EMAIL_PASSWORD", "fake-password".into()),
            ("EMAIL_IMAP_HOST", "imap.example.org".into()),
            ("EMAIL_SMTP_HOST", "smtp.example.org".into()),
            ("EMAIL_SMTP_PORT", port.into()),
            ("IRC_SERVER", "irc.example.net".into()),
        ]
    };
    let out = env.run_env(&["doctor"], &email("587")).await;
    let text = stdout(&out);
    assert!(
        text.contains("ok    platform email: configured; strangers get a pairing code"),
        "{text}"
    );
    assert!(
        text.contains("warn  platform irc: IRC_CHANNEL not set"),
        "{text}"
    );
    let out = env.run_env(&["doctor"], &email("99999")).await;
    let text = stdout(&out);
    assert!(
        text.lines()
            .any(|l| l.starts_with("FAIL") && l.contains("email") && l.contains("EMAIL_SMTP_PORT")),
        "{text}"
    );
    assert!(!out.status.success(), "a broken platform fails doctor");
}
