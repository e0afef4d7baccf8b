//! A raw JSON-RPC client for `hermes acp` (newline-delimited messages on the child's stdin and
//! stdout), for tests that play a hostile or buggy editor: it sends whatever line it is told,
//! answers the agent's requests through a handler that may also never answer, and records
//! every line the agent wrote (a line that is not JSON-RPC is kept apart, as a failure of the
//! agent's stdout discipline).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

/// How the client answers one request of the agent.
pub enum Reply {
    /// A `result`.
    Result(Value),
    /// An `error` with this code and message.
    Error(i64, String),
    /// No answer at all.
    Ignore,
}

/// The handler of the agent's requests.
pub type Handler<'a> = &'a mut (dyn FnMut(&Value) -> Reply + Send);

/// The default editor: `fs/*` on the real disk, every permission question answered with its
/// `allow_once` option.
pub fn editor(msg: &Value) -> Reply {
    let params = &msg["params"];
    match msg["method"].as_str().unwrap_or("") {
        "fs/read_text_file" => match std::fs::read_to_string(params["path"].as_str().unwrap()) {
            Ok(content) => Reply::Result(json!({ "content": content })),
            Err(e) => Reply::Error(-32603, e.to_string()),
        },
        "fs/write_text_file" => match std::fs::write(
            params["path"].as_str().unwrap(),
            params["content"].as_str().unwrap(),
        ) {
            Ok(()) => Reply::Result(json!({})),
            Err(e) => Reply::Error(-32603, e.to_string()),
        },
        "session/request_permission" => {
            Reply::Result(json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}))
        }
        other => Reply::Error(-32601, format!("method not found: {other}")),
    }
}

/// One `hermes acp` child and what it said.
pub struct Peer {
    pub child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::UnboundedReceiver<Result<Value, String>>,
    next_id: i64,
    /// Every `session/update` notification's params, in order.
    pub updates: Vec<Value>,
    /// Every request the agent sent, in order.
    pub requests: Vec<Value>,
    /// Every other message (responses to raw lines, stray notifications).
    pub other: Vec<Value>,
    /// Lines of stdout that are not JSON-RPC messages.
    pub bad_lines: Vec<String>,
}

/// The binary under test: `hermes` of this build, or `HERMES_ACP_ATTACK_BIN` (to run these
/// tests against another build, e.g. an older one).
fn binary() -> std::path::PathBuf {
    std::env::var_os("HERMES_ACP_ATTACK_BIN")
        .map(Into::into)
        .unwrap_or_else(|| assert_cmd::cargo::cargo_bin("hermes"))
}

/// Spawns `hermes acp` on `home` in `cwd` with only PATH, HOME, HERMES_HOME and `vars`.
pub fn spawn(home: &Path, cwd: &Path, vars: &[(&str, &str)]) -> Peer {
    let mut child = tokio::process::Command::new(binary())
        .arg("acp")
        .env_clear()
        .env("HERMES_HOME", home)
        .env("HOME", home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .envs(vars.iter().copied())
        .current_dir(cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::from(
            std::fs::File::create(home.join("acp-stderr.txt")).unwrap(),
        ))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let parsed = serde_json::from_str::<Value>(&line)
                .ok()
                .filter(|v| v["jsonrpc"] == "2.0")
                .ok_or(line);
            if tx.send(parsed).is_err() {
                break;
            }
        }
    });
    Peer {
        stdin: child.stdin.take(),
        child,
        rx,
        next_id: 1,
        updates: Vec::new(),
        requests: Vec::new(),
        other: Vec::new(),
        bad_lines: Vec::new(),
    }
}

impl Peer {
    /// Writes `line` and a newline to the agent's stdin.
    pub async fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// Closes the agent's stdin.
    pub fn close(&mut self) {
        self.stdin = None;
    }

    /// Sends a request; its id.
    pub async fn send(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(&msg.to_string()).await;
        id
    }

    /// Sends a notification.
    pub async fn notify(&mut self, method: &str, params: Value) {
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_raw(&msg.to_string()).await;
    }

    /// The next message, handled: updates and requests recorded, requests answered through
    /// `handler`. `None` when stdout ended or `wait` passed.
    pub async fn next(&mut self, handler: Handler<'_>, wait: Duration) -> Option<Value> {
        loop {
            let msg = match tokio::time::timeout(wait, self.rx.recv()).await {
                Ok(Some(Ok(msg))) => msg,
                Ok(Some(Err(line))) => {
                    self.bad_lines.push(line);
                    continue;
                }
                Ok(None) | Err(_) => return None,
            };
            if msg.get("method").is_some() && msg.get("id").is_some() {
                self.requests.push(msg.clone());
                let id = msg["id"].clone();
                let answer = match handler(&msg) {
                    Reply::Result(r) => Some(json!({"jsonrpc": "2.0", "id": id, "result": r})),
                    Reply::Error(code, message) => Some(json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": code, "message": message}})),
                    Reply::Ignore => None,
                };
                if let Some(answer) = answer
                    && self.stdin.is_some()
                {
                    self.send_raw(&answer.to_string()).await;
                }
            } else if msg["method"] == "session/update" {
                self.updates.push(msg["params"].clone());
            }
            return Some(msg);
        }
    }

    /// Waits for the response to request `id` (60 s at most), handling everything before it.
    pub async fn response(&mut self, id: i64, handler: Handler<'_>) -> Value {
        match self
            .try_response(id, handler, Duration::from_secs(60))
            .await
        {
            Some(msg) => msg,
            None => panic!(
                "no response to request {id}; updates {:?}, requests {:?}, bad lines {:?}",
                self.updates, self.requests, self.bad_lines
            ),
        }
    }

    /// The response to request `id`, or `None` when `wait` passed first (or stdout ended).
    pub async fn try_response(
        &mut self,
        id: i64,
        handler: Handler<'_>,
        wait: Duration,
    ) -> Option<Value> {
        // A response that came while another was awaited.
        if let Some(at) = self.other.iter().position(|m| m["id"] == json!(id)) {
            return Some(self.other.remove(at));
        }
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let msg = self.next(handler, left).await?;
            if msg.get("method").is_none() {
                if msg["id"] == json!(id) {
                    return Some(msg);
                }
                self.other.push(msg);
            }
        }
    }

    /// Sends a request and waits for its response.
    pub async fn call(&mut self, method: &str, params: Value, handler: Handler<'_>) -> Value {
        let id = self.send(method, params).await;
        self.response(id, handler).await
    }

    /// Handles messages until `pred` accepts one (which is returned), 60 s at most.
    pub async fn until(&mut self, pred: impl Fn(&Value) -> bool, handler: Handler<'_>) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let Some(msg) = self.next(handler, left).await else {
                panic!(
                    "the awaited message never came; updates {:?}, requests {:?}",
                    self.updates, self.requests
                );
            };
            if pred(&msg) {
                return msg;
            }
            if msg.get("method").is_none() {
                self.other.push(msg);
            }
        }
    }

    /// `initialize` with `fs` read/write offered or not (terminals are never offered: the
    /// agent runs commands itself).
    pub async fn initialize(&mut self, fs: bool) -> Value {
        self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities":
                {"fs": {"readTextFile": fs, "writeTextFile": fs}, "terminal": false}}),
            &mut editor,
        )
        .await
    }

    /// `session/new` in `cwd`; the session id.
    pub async fn new_session(&mut self, cwd: &Path) -> String {
        let r = self
            .call(
                "session/new",
                json!({"cwd": cwd, "mcpServers": []}),
                &mut editor,
            )
            .await;
        r["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("session/new failed: {r}"))
            .to_string()
    }

    /// Every `tool_call` id announced, and every `tool_call_update` that ended a call
    /// (`completed` / `failed`), by id.
    pub fn tool_calls(&self) -> (Vec<String>, Vec<(String, String)>) {
        let mut started = Vec::new();
        let mut ended = Vec::new();
        for u in &self.updates {
            let u = &u["update"];
            let id = u["toolCallId"].as_str().unwrap_or("").to_string();
            match u["sessionUpdate"].as_str() {
                Some("tool_call") => started.push(id),
                Some("tool_call_update") => {
                    if let Some(s) = u["status"].as_str().filter(|s| *s != "in_progress") {
                        ended.push((id, s.to_string()));
                    }
                }
                _ => {}
            }
        }
        (started, ended)
    }

    /// Panics unless every announced tool call was ended.
    pub fn assert_every_call_ended(&self) {
        let (started, ended) = self.tool_calls();
        for id in &started {
            assert!(
                ended.iter().any(|(e, _)| e == id),
                "tool call {id} never ended: {:?}",
                self.updates
            );
        }
    }

    /// Waits up to 20 s for the agent to exit; its exit code.
    pub async fn exit(&mut self) -> Option<i32> {
        self.close();
        tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("hermes acp exits")
            .unwrap()
            .code()
    }
}
