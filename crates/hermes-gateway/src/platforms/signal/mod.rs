//! Signal adapter (issue 22): through a signal-cli daemon in HTTP mode, the daemon Python
//! Hermes speaks to (`signal-cli -a +15551234567 daemon --http 127.0.0.1:8080`), so one
//! daemon serves either. Received messages arrive as server-sent events
//! (`GET /api/v1/events`), everything else is JSON-RPC (`POST /api/v1/rpc`: `send`,
//! `sendTyping`, `getAttachment`) — see [`rpc`].
//!
//! Settings use Python Hermes' names ([`SignalSettings::from_env`]): `SIGNAL_HTTP_URL`,
//! `SIGNAL_ACCOUNT`, `SIGNAL_ALLOWED_USERS` / `SIGNAL_ALLOW_ALL_USERS` (read by the
//! gateway's authorization), `SIGNAL_GROUP_ALLOWED_USERS` (group ids whose messages are
//! read, `*` for all; none when unset), `SIGNAL_REQUIRE_MENTION` (false),
//! `SIGNAL_IGNORE_STORIES` (true), `SIGNAL_HOME_CHANNEL`.
//!
//! Chats are the sender's number (or UUID) for direct messages and `group:<group id>` for
//! groups, as in Python Hermes. Replies are plain text with Signal's own style ranges
//! ([`format`]); Signal has no edits the gateway could stream into, so answers go out
//! whole. Files go out as `data:` URIs inside the JSON-RPC call, so the daemon may run on
//! another machine or in a container.

pub mod format;
mod inbound;
mod listen;
mod rpc;

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::PlatformError;
use crate::platform::{
    ChatTarget, InboundMessage, LengthUnit, Markup, PlatformAdapter, PlatformLimits, SentMessage,
};

/// Platform name in config, session keys and logs.
pub const PLATFORM: &str = "signal";
/// Longest message sent, in chars (Python Hermes' `MAX_MESSAGE_LENGTH`).
pub const MAX_MESSAGE_CHARS: usize = 8000;
/// Largest attachment, in bytes, either way (Python Hermes' `SIGNAL_MAX_ATTACHMENT_SIZE`).
pub const MAX_ATTACHMENT_BYTES: u64 = 100 * 1024 * 1024;
/// Own sent timestamps remembered to recognise their sync echoes.
const ECHOES_KEPT: usize = 512;

/// How to reach the daemon and which messages to read.
#[derive(Debug, Clone)]
pub struct SignalSettings {
    /// The daemon's base URL (`SIGNAL_HTTP_URL`, e.g. `http://127.0.0.1:8080`).
    pub http_url: String,
    /// The bot's Signal account, a phone number in E.164 form (`SIGNAL_ACCOUNT`).
    pub account: String,
    /// Group ids whose messages are read (`SIGNAL_GROUP_ALLOWED_USERS`; `*`: every group;
    /// empty: none, as in Python Hermes).
    pub group_allowed: Vec<String>,
    /// In groups, read only messages that mention the bot (`SIGNAL_REQUIRE_MENTION`,
    /// default false).
    pub require_mention: bool,
    /// Skip stories (`SIGNAL_IGNORE_STORIES`, default true).
    pub ignore_stories: bool,
    /// Directory inbound files are saved in (under `HERMES_HOME`).
    pub media_dir: PathBuf,
    /// Largest attachment fetched or sent, in bytes (default 100 MiB).
    pub max_attachment_bytes: u64,
    /// First reconnect delay of the event stream (2 s, doubling, jittered).
    pub reconnect_initial: Duration,
    /// Longest reconnect delay (60 s).
    pub reconnect_max: Duration,
    /// A stream silent this long (not even a keep-alive comment) is checked with
    /// `/api/v1/check` and reopened (120 s).
    pub idle_timeout: Duration,
    /// A send answered "rate limited" waits what the daemon names and tries again (up to
    /// 3 times) when the wait is at most this long (60 s).
    pub max_rate_limit_wait: Duration,
}

fn bad(var: &str, detail: impl std::fmt::Display) -> PlatformError {
    PlatformError::Rejected {
        platform: PLATFORM.into(),
        detail: format!("{var}: {detail}"),
    }
}

fn env_flag(
    get: &dyn Fn(&str) -> Option<String>,
    var: &str,
    default: bool,
) -> Result<bool, PlatformError> {
    match get(var) {
        None => Ok(default),
        Some(v) => match v.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(bad(var, format!("`{v}` is not true/false"))),
        },
    }
}

impl SignalSettings {
    /// Settings for the daemon at `http_url` and `account`, everything else at its default.
    pub fn new(
        http_url: impl Into<String>,
        account: impl Into<String>,
        media_dir: impl Into<PathBuf>,
    ) -> SignalSettings {
        SignalSettings {
            http_url: http_url.into().trim_end_matches('/').to_string(),
            account: account.into(),
            group_allowed: Vec::new(),
            require_mention: false,
            ignore_stories: true,
            media_dir: media_dir.into(),
            max_attachment_bytes: MAX_ATTACHMENT_BYTES,
            reconnect_initial: Duration::from_secs(2),
            reconnect_max: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(120),
            max_rate_limit_wait: Duration::from_secs(60),
        }
    }

    /// Reads the settings from the environment merged over `.env` (names in the module
    /// docs). `Ok(None)` when `SIGNAL_HTTP_URL` or `SIGNAL_ACCOUNT` is unset (Signal not
    /// configured, as Python Hermes decides).
    ///
    /// Errors name the variable: a URL that is not `http(s)://`, an account that is not a
    /// `+` phone number, a flag that is not true/false.
    pub fn from_env(
        env: &BTreeMap<String, String>,
        media_dir: &Path,
    ) -> Result<Option<SignalSettings>, PlatformError> {
        let get = |k: &str| {
            env.get(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let (Some(url), Some(account)) = (get("SIGNAL_HTTP_URL"), get("SIGNAL_ACCOUNT")) else {
            return Ok(None);
        };
        if !(url.starts_with("http://") || url.starts_with("https://"))
            || url.contains(char::is_whitespace)
        {
            return Err(bad(
                "SIGNAL_HTTP_URL",
                format!("`{url}` is not an http(s):// URL"),
            ));
        }
        let digits = account.strip_prefix('+').unwrap_or_default();
        if digits.len() < 7 || digits.len() > 15 || !digits.chars().all(|c| c.is_ascii_digit()) {
            return Err(bad(
                "SIGNAL_ACCOUNT",
                "expected the bot's phone number in international form, e.g. +15551234567",
            ));
        }
        let mut s = SignalSettings::new(url, account, media_dir);
        s.group_allowed = get("SIGNAL_GROUP_ALLOWED_USERS")
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|g| !g.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        s.require_mention = env_flag(&get, "SIGNAL_REQUIRE_MENTION", false)?;
        s.ignore_stories = env_flag(&get, "SIGNAL_IGNORE_STORIES", true)?;
        Ok(Some(s))
    }
}

/// The Signal [`PlatformAdapter`].
pub struct SignalAdapter {
    settings: SignalSettings,
    rpc: rpc::Rpc,
    /// Timestamps of recent sends, to skip their sync echoes.
    sent: Mutex<VecDeque<u64>>,
    connected: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SignalAdapter {
    /// An adapter for `settings`. Errors: `Transport` when the HTTP client cannot be built.
    /// No request is made until a call needs one.
    pub fn new(settings: SignalSettings) -> Result<SignalAdapter, PlatformError> {
        let rpc = rpc::Rpc::new(&settings.http_url, &settings.account)?;
        Ok(SignalAdapter {
            settings,
            rpc,
            sent: Mutex::new(VecDeque::new()),
            connected: AtomicBool::new(false),
        })
    }

    /// True while the event stream is open.
    pub fn is_connected(&self) -> bool {
        self.connected.load(Ordering::SeqCst)
    }

    /// The settings.
    pub fn settings(&self) -> &SignalSettings {
        &self.settings
    }

    fn remember_sent(&self, timestamp: u64) {
        let mut sent = lock(&self.sent);
        sent.push_back(timestamp);
        while sent.len() > ECHOES_KEPT {
            sent.pop_front();
        }
    }

    /// Whether `timestamp` is one of our sends (forgotten once seen).
    pub(crate) fn take_echo(&self, timestamp: u64) -> bool {
        let mut sent = lock(&self.sent);
        match sent.iter().position(|t| *t == timestamp) {
            Some(i) => {
                sent.remove(i);
                true
            }
            None => false,
        }
    }

    /// `recipient` or `groupId` for a chat id.
    fn address(chat_id: &str) -> Value {
        match chat_id.strip_prefix("group:") {
            Some(group) => json!({"groupId": group}),
            None => json!({"recipient": [chat_id]}),
        }
    }

    /// One `send` call, retried after a rate limit the daemon names (at most 3 tries, each
    /// wait at most `max_rate_limit_wait`). Transport failures are not retried here: the
    /// message may have gone out.
    async fn send_message(
        &self,
        target: &ChatTarget,
        text: &str,
        attachment: Option<String>,
    ) -> Result<SentMessage, PlatformError> {
        let styled = format::to_signal(text);
        let mut params = Self::address(&target.chat_id);
        params["message"] = json!(styled.text);
        match styled.styles.len() {
            0 => {}
            1 => params["textStyle"] = json!(styled.styles[0]),
            _ => params["textStyles"] = json!(styled.styles),
        }
        if let Some(a) = attachment {
            params["attachments"] = json!([a]);
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome = match self.rpc.call("send", params.clone()).await {
                Ok(result) => check_send(&result),
                Err(e) => Err(e),
            };
            match outcome {
                Ok(ts) => {
                    self.remember_sent(ts);
                    tracing::info!(
                        platform = PLATFORM,
                        chars = styled.text.chars().count(),
                        "message sent"
                    );
                    return Ok(SentMessage {
                        message_id: ts.to_string(),
                    });
                }
                Err(PlatformError::RateLimited { retry_after, .. })
                    if attempt < 3 && retry_after <= self.settings.max_rate_limit_wait =>
                {
                    tracing::warn!(
                        platform = PLATFORM,
                        wait_ms = retry_after.as_millis() as u64,
                        attempt,
                        "rate limited by Signal; sending again after the wait"
                    );
                    tokio::time::sleep(retry_after).await;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// The timestamp of a `send` result (`{"timestamp": …, "results": [{"type": "SUCCESS"}, …]}`),
/// or why no recipient got it: every recipient rate limited → `RateLimited` (their longest
/// `retryAfterSeconds`); other failures → `Rejected` naming the type. A send some
/// recipients of a group got counts as sent (sending again would double it for them).
fn check_send(result: &Value) -> Result<u64, PlatformError> {
    let ts = result
        .get("timestamp")
        .and_then(Value::as_u64)
        .ok_or_else(|| PlatformError::protocol(PLATFORM, "send: no timestamp in the result"))?;
    let Some(results) = result.get("results").and_then(Value::as_array) else {
        return Ok(ts);
    };
    let kind = |r: &Value| {
        r.get("type")
            .and_then(Value::as_str)
            .unwrap_or("SUCCESS")
            .to_string()
    };
    if results.is_empty() || results.iter().any(|r| kind(r) == "SUCCESS") {
        let failed = results.iter().filter(|r| kind(r) != "SUCCESS").count();
        if failed > 0 {
            tracing::warn!(
                platform = PLATFORM,
                failed,
                "a group message did not reach every member"
            );
        }
        return Ok(ts);
    }
    if results.iter().all(|r| kind(r) == "RATE_LIMIT_FAILURE") {
        return Err(PlatformError::RateLimited {
            platform: PLATFORM.into(),
            retry_after: rpc::retry_after_of_results(&json!(results))
                .unwrap_or(Duration::from_secs(30)),
        });
    }
    Err(PlatformError::Rejected {
        platform: PLATFORM.into(),
        detail: format!("send: {}", kind(&results[0])),
    })
}

/// A guess at a file's MIME type from its extension (for the `data:` URI).
fn mime_of(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "jpg" | "jpeg" => "image/jpeg",
        "png" => "image/png",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "mp3" => "audio/mpeg",
        "ogg" | "oga" | "opus" => "audio/ogg",
        "m4a" => "audio/mp4",
        "aac" => "audio/aac",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        "pdf" => "application/pdf",
        "txt" | "log" | "md" => "text/plain",
        "json" => "application/json",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for SignalAdapter {
    fn name(&self) -> &str {
        PLATFORM
    }

    fn limits(&self) -> PlatformLimits {
        PlatformLimits {
            max_message_len: MAX_MESSAGE_CHARS,
            length_unit: LengthUnit::Chars,
            // CommonMark; the adapter turns it into Signal style ranges ([`format`]).
            markup: Markup::DiscordMarkdown,
            supports_edit: false,
        }
    }

    async fn run(
        &self,
        inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        let result = self.listen(inbound, cancel).await;
        self.connected.store(false, Ordering::SeqCst);
        result
    }

    async fn send(&self, target: &ChatTarget, text: &str) -> Result<SentMessage, PlatformError> {
        self.send_message(target, text, None).await
    }

    async fn edit(
        &self,
        _target: &ChatTarget,
        _message: &SentMessage,
        _text: &str,
    ) -> Result<(), PlatformError> {
        Err(PlatformError::Unsupported {
            platform: PLATFORM.into(),
            what: "editing sent messages".into(),
        })
    }

    async fn send_file(
        &self,
        target: &ChatTarget,
        path: &Path,
        caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        let size = tokio::fs::metadata(path)
            .await
            .map(|m| m.len())
            .map_err(|e| PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail: format!("reading {}: {e}", path.display()),
            })?;
        if size > self.settings.max_attachment_bytes {
            return Err(PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail: format!(
                    "{} is {size} bytes, over Signal's {} byte limit",
                    path.display(),
                    self.settings.max_attachment_bytes
                ),
            });
        }
        let (bytes, name) = crate::platforms::http::read_upload(PLATFORM, path).await?;
        let name: String = name
            .chars()
            .map(|c| if matches!(c, ';' | ',' | '/') { '_' } else { c })
            .collect();
        let uri = format!(
            "data:{};filename={name};base64,{}",
            mime_of(path),
            base64::engine::general_purpose::STANDARD.encode(&bytes)
        );
        self.send_message(target, caption.unwrap_or_default(), Some(uri))
            .await
    }

    async fn typing(&self, target: &ChatTarget) -> Result<(), PlatformError> {
        self.rpc
            .call("sendTyping", Self::address(&target.chat_id))
            .await
            .map(|_| ())
    }

    /// The daemon hands every received message to every open event stream: two replicas
    /// would each answer it.
    fn single_connection(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<Option<SignalSettings>, PlatformError> {
        let env = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        SignalSettings::from_env(&env, Path::new("/m"))
    }

    #[test]
    fn unset_is_not_configured_and_defaults_are_pythons() {
        assert!(read(&[]).unwrap().is_none());
        assert!(
            read(&[("SIGNAL_ACCOUNT", "+15551234567")])
                .unwrap()
                .is_none()
        );
        let s = read(&[
            ("SIGNAL_HTTP_URL", "http://127.0.0.1:8080/"),
            ("SIGNAL_ACCOUNT", "+15551234567"),
            ("SIGNAL_GROUP_ALLOWED_USERS", "abc=, def="),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.http_url, "http://127.0.0.1:8080");
        assert_eq!(s.group_allowed, vec!["abc=", "def="]);
        assert!(!s.require_mention && s.ignore_stories);
        assert_eq!(s.max_attachment_bytes, 100 * 1024 * 1024);
    }

    #[test]
    fn bad_values_name_their_variable() {
        let e = read(&[
            ("SIGNAL_HTTP_URL", "localhost:8080"),
            ("SIGNAL_ACCOUNT", "+15551234567"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("SIGNAL_HTTP_URL"), "{e}");
        let e = read(&[
            ("SIGNAL_HTTP_URL", "http://h"),
            ("SIGNAL_ACCOUNT", "5551234"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("SIGNAL_ACCOUNT"), "{e}");
        let e = read(&[
            ("SIGNAL_HTTP_URL", "http://h"),
            ("SIGNAL_ACCOUNT", "+15551234567"),
            ("SIGNAL_REQUIRE_MENTION", "sometimes"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("SIGNAL_REQUIRE_MENTION"), "{e}");
    }

    #[test]
    fn send_results_decide_sent_rate_limited_or_refused() {
        assert_eq!(
            check_send(&json!({"timestamp": 5, "results": [{"type": "SUCCESS"}]})).unwrap(),
            5
        );
        assert_eq!(
            check_send(&json!({"timestamp": 6, "results": [{"type": "SUCCESS"}, {"type": "UNREGISTERED_FAILURE"}]})).unwrap(),
            6
        );
        assert!(matches!(
            check_send(&json!({"timestamp": 7, "results": [{"type": "RATE_LIMIT_FAILURE", "retryAfterSeconds": 3}]})),
            Err(PlatformError::RateLimited { retry_after, .. }) if retry_after == Duration::from_secs(3)
        ));
        assert!(matches!(
            check_send(&json!({"timestamp": 8, "results": [{"type": "UNREGISTERED_FAILURE"}]})),
            Err(PlatformError::Rejected { .. })
        ));
        assert!(check_send(&json!({"results": []})).is_err());
    }
}
