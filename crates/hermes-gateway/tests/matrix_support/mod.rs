//! A real Synapse homeserver on loopback for the Matrix adapter tests, and a small client
//! for the humans in them. Synapse comes from PyPI (`scripts/synapse.sh`, a cached venv named
//! by `HERMES_SYNAPSE`); without it the tests print why they skip, unless
//! `HERMES_REQUIRE_SERVERS` or `CI` is set, where a missing server fails them.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::{Child, Command};

pub const SHARED_SECRET: &str = "hermes-test-shared-secret";

/// The Synapse venv: `HERMES_SYNAPSE`, else the cache `scripts/synapse.sh` fills.
pub fn synapse_venv() -> Option<PathBuf> {
    let from_env = std::env::var_os("HERMES_SYNAPSE").map(PathBuf::from);
    let cached = std::env::var_os("HOME").and_then(|home| {
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(&home).join(".cache"));
        let mut found: Vec<PathBuf> = std::fs::read_dir(cache)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("hermes-synapse-"))
            })
            .collect();
        found.sort();
        found.pop()
    });
    let venv = from_env.or(cached).filter(|v| {
        v.join("bin/python").is_file() && v.join("bin/register_new_matrix_user").is_file()
    });
    if venv.is_none() {
        let required = ["HERMES_REQUIRE_SERVERS", "CI"]
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
        assert!(
            !required,
            "Synapse is not installed but HERMES_REQUIRE_SERVERS/CI is set (run scripts/synapse.sh and set HERMES_SYNAPSE)"
        );
        eprintln!("skipping: no Synapse venv (run scripts/synapse.sh, or set HERMES_SYNAPSE)");
    }
    venv
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running Synapse in a temporary directory (killed on drop).
pub struct Synapse {
    pub port: u16,
    pub url: String,
    venv: PathBuf,
    _dir: tempfile::TempDir,
    child: Child,
}

fn limits(rate: u32) -> Value {
    json!({"per_second": rate, "burst_count": rate})
}

impl Synapse {
    /// Starts Synapse (SQLite, a free loopback port, rate limits relaxed, registration only
    /// through the shared secret) and waits until it answers.
    pub async fn start(venv: &Path) -> Synapse {
        hermes_llm::init_tls();
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let d = dir.path();
        let relaxed = limits(10_000);
        let config = json!({
            "server_name": "localhost",
            "pid_file": d.join("homeserver.pid"),
            "listeners": [{
                "port": port, "bind_addresses": ["127.0.0.1"], "type": "http", "tls": false,
                "x_forwarded": false, "resources": [{"names": ["client"], "compress": false}],
            }],
            "database": {"name": "sqlite3", "args": {"database": d.join("homeserver.db")}},
            "media_store_path": d.join("media"),
            "registration_shared_secret": SHARED_SECRET,
            "enable_registration": false,
            "report_stats": false,
            "macaroon_secret_key": "test-macaroon",
            "form_secret": "test-form",
            "signing_key_path": d.join("signing.key"),
            "trusted_key_servers": [],
            "suppress_key_server_warning": true,
            "enable_metrics": false,
            "presence": {"enabled": false},
            "rc_message": relaxed,
            "rc_registration": relaxed,
            "rc_login": {"address": relaxed, "account": relaxed, "failed_attempts": relaxed},
            "rc_joins": {"local": relaxed, "remote": relaxed},
            "rc_invites": {"per_room": relaxed, "per_user": relaxed, "per_issuer": relaxed},
            "rc_joins_per_room": relaxed,
        });
        // JSON is YAML.
        let cfg = d.join("homeserver.yaml");
        std::fs::write(&cfg, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
        let python = venv.join("bin/python");
        let status = Command::new(&python)
            .args(["-m", "synapse.app.homeserver", "-c"])
            .arg(&cfg)
            .arg("--generate-keys")
            .current_dir(d)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await
            .unwrap();
        assert!(status.success(), "synapse --generate-keys failed");
        let log = std::fs::File::create(d.join("synapse.log")).unwrap();
        let child = Command::new(&python)
            .args(["-m", "synapse.app.homeserver", "-c"])
            .arg(&cfg)
            .current_dir(d)
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
        loop {
            let up = http
                .get(format!("{url}/_matrix/client/versions"))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if up {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "synapse did not start: {}",
                std::fs::read_to_string(d.join("synapse.log")).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Synapse {
            port,
            url,
            venv: venv.to_path_buf(),
            _dir: dir,
            child,
        }
    }

    /// Registers `name` with password `name-pw` through the shared-secret admin API.
    pub async fn register(&self, name: &str) {
        let status = Command::new(self.venv.join("bin/register_new_matrix_user"))
            .args([
                "-u",
                name,
                "-p",
                &format!("{name}-pw"),
                "--no-admin",
                "-k",
                SHARED_SECRET,
            ])
            .arg(&self.url)
            .stdout(Stdio::null())
            .status()
            .await
            .unwrap();
        assert!(status.success(), "registering {name} failed");
    }

    /// Registers `name` and logs them in.
    pub async fn user(&self, name: &str) -> Human {
        self.register(name).await;
        Human::login(&self.url, name).await
    }
}

/// A person with a Matrix client.
pub struct Human {
    pub user_id: String,
    pub token: String,
    url: String,
    http: reqwest::Client,
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

impl Human {
    pub async fn login(url: &str, name: &str) -> Human {
        let http = reqwest::Client::new();
        let r: Value = http
            .post(format!("{url}/_matrix/client/v3/login"))
            .json(&json!({"type": "m.login.password", "identifier": {"type": "m.id.user", "user": name}, "password": format!("{name}-pw")}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        Human {
            user_id: r["user_id"].as_str().unwrap().to_string(),
            token: r["access_token"].as_str().unwrap().to_string(),
            url: url.to_string(),
            http,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let v: Value = resp.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{path}: {status} {v}");
        v
    }

    /// Creates a room inviting `invite`; `direct` marks it a DM; `encrypted` turns on
    /// `m.room.encryption` from the start.
    pub async fn create_room(&self, invite: &[&str], direct: bool, encrypted: bool) -> String {
        let mut body = json!({"invite": invite, "is_direct": direct, "preset": "private_chat"});
        if encrypted {
            body["initial_state"] = json!([{"type": "m.room.encryption", "state_key": "", "content": {"algorithm": "m.megolm.v1.aes-sha2"}}]);
        }
        let r = self
            .call(
                reqwest::Method::POST,
                "/_matrix/client/v3/createRoom",
                Some(body),
            )
            .await;
        r["room_id"].as_str().unwrap().to_string()
    }

    pub async fn invite(&self, room: &str, user: &str) {
        let path = format!("/_matrix/client/v3/rooms/{}/invite", enc(room));
        self.call(reqwest::Method::POST, &path, Some(json!({"user_id": user})))
            .await;
    }

    pub async fn join(&self, room: &str) {
        let path = format!("/_matrix/client/v3/join/{}", enc(room));
        self.call(reqwest::Method::POST, &path, Some(json!({})))
            .await;
    }

    /// Sends an event of `kind` with `content`: its event id.
    pub async fn send_event(&self, room: &str, kind: &str, content: Value) -> String {
        let txn = format!("t{}", rand::random::<u64>());
        let path = format!(
            "/_matrix/client/v3/rooms/{}/send/{}/{txn}",
            enc(room),
            enc(kind)
        );
        let r = self.call(reqwest::Method::PUT, &path, Some(content)).await;
        r["event_id"].as_str().unwrap().to_string()
    }

    pub async fn say(&self, room: &str, text: &str) -> String {
        self.send_event(
            room,
            "m.room.message",
            json!({"msgtype": "m.text", "body": text}),
        )
        .await
    }

    /// Uploads `bytes`: the mxc URI.
    pub async fn upload(&self, bytes: Vec<u8>, name: &str, mime: &str) -> String {
        let r: Value = self
            .http
            .post(format!(
                "{}/_matrix/media/v3/upload?filename={name}",
                self.url
            ))
            .bearer_auth(&self.token)
            .header("content-type", mime)
            .body(bytes)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        r["content_uri"].as_str().unwrap().to_string()
    }

    pub async fn download(&self, mxc: &str) -> Vec<u8> {
        let rest = mxc.strip_prefix("mxc://").unwrap();
        self.http
            .get(format!(
                "{}/_matrix/client/v1/media/download/{rest}",
                self.url
            ))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
            .to_vec()
    }

    /// The room's events, oldest first (the last 200).
    pub async fn events(&self, room: &str) -> Vec<Value> {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/messages?dir=b&limit=200",
            enc(room)
        );
        let r = self.call(reqwest::Method::GET, &path, None).await;
        let mut evs = r["chunk"].as_array().cloned().unwrap_or_default();
        evs.reverse();
        evs
    }

    /// Messages (`m.room.message`) sent by `sender`, oldest first.
    pub async fn messages_from(&self, room: &str, sender: &str) -> Vec<Value> {
        self.events(room)
            .await
            .into_iter()
            .filter(|e| e["type"] == "m.room.message" && e["sender"] == sender)
            .collect()
    }

    /// Waits until `sender` has a message in `room` that `pred` accepts; returns it.
    pub async fn wait_message(
        &self,
        room: &str,
        sender: &str,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(m) = self
                .messages_from(room, sender)
                .await
                .into_iter()
                .find(|m| pred(m))
            {
                return m;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}; the room holds: {:#?}",
                self.events(room).await
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Rooms `self` is invited to (from an initial `/sync`).
    pub async fn invites(&self) -> Vec<String> {
        let r = self
            .call(
                reqwest::Method::GET,
                "/_matrix/client/v3/sync?timeout=0",
                None,
            )
            .await;
        r["rooms"]["invite"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The membership of `user` in `room` (`join`, `invite`, …).
    pub async fn membership(&self, room: &str, user: &str) -> Option<String> {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/state/m.room.member/{}",
            enc(room),
            enc(user)
        );
        let resp = self
            .http
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        if !resp.status().is_success() {
            return None;
        }
        let v: Value = resp.json().await.unwrap();
        v["membership"].as_str().map(str::to_owned)
    }

    /// Waits until `user` joined `room`.
    pub async fn wait_joined(&self, room: &str, user: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while self.membership(room, user).await.as_deref() != Some("join") {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{user} did not join {room}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
