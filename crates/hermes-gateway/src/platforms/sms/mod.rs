//! SMS through Twilio (issue 22), platform `sms` as in Python Hermes: each phone number is
//! a DM (session key `agent:<profile>:sms:dm:<+E.164>`), replies come from
//! `TWILIO_PHONE_NUMBER`.
//!
//! Inbound: Twilio POSTs each message (form fields `From`, `To`, `Body`, `MessageSid`, …) to
//! the webhook at `SMS_WEBHOOK_HOST:SMS_WEBHOOK_PORT` (`127.0.0.1:8080`), path
//! `/webhooks/twilio` as in Python Hermes (and the path of `SMS_WEBHOOK_URL` when it differs).
//! `X-Twilio-Signature` ([`signature`]) must match `SMS_WEBHOOK_URL`, the public URL
//! configured at Twilio (403 otherwise, nothing read); without that URL the adapter refuses
//! to start unless `SMS_INSECURE_NO_SIGNATURE=true` (development only, as in Python).
//! Messages are de-duplicated by `MessageSid`; opt-out keywords are recorded and never run
//! a turn ([`optout`]); a message from an opted-out number is dropped; the rest goes to the
//! gateway and the request is answered with empty TwiML only once the gateway has it (503
//! while it shuts down). Media (MMS) is not fetched; the message says how many files came.
//!
//! Outbound: `POST /2010-04-01/Accounts/<sid>/Messages.json` with HTTP Basic auth, plain
//! text. A reply is laid out in segments ([`segments`]): at most `SMS_MAX_SEGMENTS` (10) in
//! all, cut with a note past that, in bodies within Twilio's 1,600 characters. Nothing is
//! sent to an opted-out number (`Rejected`, naming it); Twilio's 21610 records the opt-out;
//! 429 is retried after `Retry-After`. The listener is the shared push listener: `Host`
//! must be the bound address or the host of `SMS_WEBHOOK_URL` (421), bodies are capped at
//! 64 KiB, heads and bodies time out.

pub mod optout;
pub mod segments;
pub mod signature;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use signature::{SIGNATURE_HEADER, sign};

use crate::error::PlatformError;
use crate::platform::{
    ChatTarget, ChatType, InboundMessage, LengthUnit, Markup, MessageSource, PlatformAdapter,
    PlatformLimits, SentMessage,
};
use crate::platforms::http;
use crate::platforms::push::{PushListener, url_host, url_path};
use crate::platforms::state::StampFile;
use crate::serve::ServeLimits;
use optout::{Keyword, OptOuts};

/// Platform name in config, session keys and logs.
pub const PLATFORM: &str = "sms";
/// Twilio's REST API.
pub const DEFAULT_API_BASE_URL: &str = "https://api.twilio.com";
/// Python Hermes' webhook path.
pub const DEFAULT_WEBHOOK_PATH: &str = "/webhooks/twilio";
/// Python Hermes' default listen port.
pub const DEFAULT_WEBHOOK_PORT: u16 = 8080;
/// Default of `SMS_MAX_SEGMENTS`.
pub const DEFAULT_MAX_SEGMENTS: usize = 10;
/// What the delivery layer hands [`PlatformAdapter::send`] at most, in characters: a whole
/// reply, laid out in segments here.
const MAX_REPLY_CHARS: usize = 100_000;
/// Twilio error code: the recipient replied STOP.
const UNSUBSCRIBED: i64 = 21610;
/// `MessageSid`s remembered to drop redeliveries.
const SEEN_CAPACITY: usize = 5000;
/// Empty TwiML: replies go through the REST API, not the webhook's answer.
const EMPTY_TWIML: &str = r#"<?xml version="1.0" encoding="UTF-8"?><Response></Response>"#;

/// How to reach Twilio and listen for its webhook. `Debug` hides the auth token.
#[derive(Clone)]
pub struct SmsSettings {
    /// `TWILIO_ACCOUNT_SID` (`AC…`).
    pub account_sid: String,
    /// `TWILIO_AUTH_TOKEN`: Basic auth password and the signature key.
    pub auth_token: String,
    /// `TWILIO_PHONE_NUMBER`: the E.164 number replies come from (required to serve).
    pub phone_number: String,
    /// `SMS_WEBHOOK_URL`: the public URL Twilio calls and signs.
    pub webhook_url: Option<String>,
    /// `SMS_INSECURE_NO_SIGNATURE`: accept unsigned requests (development only).
    pub insecure_no_signature: bool,
    /// `SMS_WEBHOOK_HOST` / `SMS_WEBHOOK_PORT` (default `127.0.0.1:8080`; port 0 picks one).
    pub bind: SocketAddr,
    /// Twilio's base URL, [`DEFAULT_API_BASE_URL`] in production; tests point it at a fake.
    pub api_base_url: String,
    /// `SMS_MAX_SEGMENTS`: the most segments one reply is sent in (default 10).
    pub max_segments: usize,
    /// The opt-out list file; `None` keeps it in memory.
    pub opt_out_file: Option<PathBuf>,
    /// Tries per message while Twilio answers 429 (default 4).
    pub send_attempts: u32,
    /// Longest wait between those tries (default 30 s).
    pub retry_max: Duration,
    /// Listener timeouts and caps (body cap 64 KiB, as Python).
    pub limits: ServeLimits,
}

hermes_protocol::debug_redacted!(SmsSettings {
    secret: [auth_token],
    shown: [
        account_sid,
        phone_number,
        webhook_url,
        insecure_no_signature,
        bind,
        api_base_url,
        max_segments,
        opt_out_file,
        send_attempts,
        retry_max,
        limits,
    ],
});

fn bad(var: &str, detail: impl std::fmt::Display) -> PlatformError {
    PlatformError::Rejected {
        platform: PLATFORM.into(),
        detail: format!("{var}: {detail}"),
    }
}

impl SmsSettings {
    /// Settings for an account with the defaults above.
    pub fn new(
        account_sid: impl Into<String>,
        auth_token: impl Into<String>,
        phone_number: impl Into<String>,
    ) -> SmsSettings {
        SmsSettings {
            account_sid: account_sid.into(),
            auth_token: auth_token.into(),
            phone_number: phone_number.into(),
            webhook_url: None,
            insecure_no_signature: false,
            bind: SocketAddr::from(([127, 0, 0, 1], DEFAULT_WEBHOOK_PORT)),
            api_base_url: DEFAULT_API_BASE_URL.into(),
            max_segments: DEFAULT_MAX_SEGMENTS,
            opt_out_file: None,
            send_attempts: 4,
            retry_max: Duration::from_secs(30),
            limits: ServeLimits {
                max_body_bytes: 64 * 1024,
                ..ServeLimits::default()
            },
        }
    }

    /// Reads Python Hermes' variables (and `SMS_MAX_SEGMENTS`) from the environment merged
    /// over `.env`; `Ok(None)` when `TWILIO_ACCOUNT_SID` or `TWILIO_AUTH_TOKEN` is unset.
    /// `state_dir` is the folder of the opt-out file (`HERMES_HOME/gateway`).
    ///
    /// Errors name the variable: a bad port, host or segment cap (1–100), a
    /// `SMS_WEBHOOK_URL` that is not an http(s) URL, a non-boolean switch.
    pub fn from_env(
        env: &BTreeMap<String, String>,
        state_dir: Option<&Path>,
    ) -> Result<Option<SmsSettings>, PlatformError> {
        let get = |k: &str| env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let (Some(sid), Some(token)) = (get("TWILIO_ACCOUNT_SID"), get("TWILIO_AUTH_TOKEN")) else {
            return Ok(None);
        };
        let mut s = SmsSettings::new(sid, token, get("TWILIO_PHONE_NUMBER").unwrap_or_default());
        if let Some(url) = get("SMS_WEBHOOK_URL") {
            if !(url.starts_with("https://") || url.starts_with("http://"))
                || url_host(url).is_none()
            {
                return Err(bad(
                    "SMS_WEBHOOK_URL",
                    format!("`{url}` is not an http(s) URL"),
                ));
            }
            s.webhook_url = Some(url.to_string());
        }
        if let Some(v) = get("SMS_INSECURE_NO_SIGNATURE") {
            s.insecure_no_signature = match v.to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => true,
                "0" | "false" | "no" | "off" => false,
                _ => {
                    return Err(bad(
                        "SMS_INSECURE_NO_SIGNATURE",
                        format!("`{v}` is not true/false"),
                    ));
                }
            };
        }
        if let Some(v) = get("SMS_WEBHOOK_HOST") {
            let ip = if v.eq_ignore_ascii_case("localhost") {
                std::net::IpAddr::from([127, 0, 0, 1])
            } else {
                v.trim_matches(['[', ']'])
                    .parse()
                    .map_err(|_| bad("SMS_WEBHOOK_HOST", format!("`{v}` is not an IP address")))?
            };
            s.bind.set_ip(ip);
        }
        if let Some(v) = get("SMS_WEBHOOK_PORT") {
            let port =
                v.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| {
                    bad("SMS_WEBHOOK_PORT", format!("`{v}` is not a port (1-65535)"))
                })?;
            s.bind.set_port(port);
        }
        if let Some(v) = get("SMS_MAX_SEGMENTS") {
            s.max_segments = v
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=100).contains(n))
                .ok_or_else(|| {
                    bad(
                        "SMS_MAX_SEGMENTS",
                        format!("`{v}` is not a number from 1 to 100"),
                    )
                })?;
        }
        s.opt_out_file = state_dir.map(|d| d.join("sms_opt_outs.json"));
        Ok(Some(s))
    }
}

/// The Twilio SMS [`PlatformAdapter`]. [`SmsAdapter::bind`] opens the webhook listener.
pub struct SmsAdapter {
    settings: SmsSettings,
    http: reqwest::Client,
    listener: Option<PushListener>,
    opt_outs: OptOuts,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[derive(Clone)]
struct ServerState {
    auth_token: Arc<str>,
    account_sid: Arc<str>,
    phone_number: Arc<str>,
    /// The signed URL; `None` with `SMS_INSECURE_NO_SIGNATURE`.
    webhook_url: Option<Arc<str>>,
    inbound: mpsc::Sender<InboundMessage>,
    opt_outs: OptOuts,
    seen: Arc<Mutex<lru::LruCache<String, ()>>>,
}

fn twiml(status: StatusCode) -> Response {
    (status, [("content-type", "application/xml")], EMPTY_TWIML).into_response()
}

async fn receive(State(st): State<ServerState>, headers: HeaderMap, body: Bytes) -> Response {
    let params: Vec<(String, String)> = url::form_urlencoded::parse(&body).into_owned().collect();
    if let Some(url) = &st.webhook_url {
        let sig = headers.get(SIGNATURE_HEADER).and_then(|v| v.to_str().ok());
        if !signature::verify(&st.auth_token, url, &params, sig) {
            tracing::warn!(
                platform = PLATFORM,
                "refused a webhook request: missing or invalid {SIGNATURE_HEADER} for SMS_WEBHOOK_URL"
            );
            return twiml(StatusCode::FORBIDDEN);
        }
    }
    let field = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    if field("AccountSid").is_some_and(|a| a != *st.account_sid) {
        tracing::warn!(
            platform = PLATFORM,
            "refused a webhook request for another Twilio account"
        );
        return twiml(StatusCode::FORBIDDEN);
    }
    let (Some(from), Some(sid)) = (field("From"), field("MessageSid").or(field("SmsSid"))) else {
        tracing::warn!(
            platform = PLATFORM,
            "refused a webhook request without From or MessageSid"
        );
        return twiml(StatusCode::BAD_REQUEST);
    };
    if from == *st.phone_number {
        return twiml(StatusCode::OK);
    }
    let text = field("Body").unwrap_or_default();
    if lock(&st.seen).put(sid.clone(), ()).is_some() {
        tracing::info!(platform = PLATFORM, "dropped a redelivered message");
        return twiml(StatusCode::OK);
    }
    let opted_out = st.opt_outs.contains(&from);
    match optout::classify(&text, field("OptOutType").as_deref(), opted_out) {
        Some(Keyword::Stop) => {
            st.opt_outs.set(&from, true).await;
            tracing::info!(platform = PLATFORM, chat = %from, "opted out (STOP): nothing is sent to this number until it sends START");
            return twiml(StatusCode::OK);
        }
        Some(Keyword::Start) => {
            st.opt_outs.set(&from, false).await;
            tracing::info!(platform = PLATFORM, chat = %from, "opted back in (START)");
            return twiml(StatusCode::OK);
        }
        Some(Keyword::Help) => {
            tracing::info!(platform = PLATFORM, chat = %from, "HELP keyword (Twilio answers it)");
            return twiml(StatusCode::OK);
        }
        None if opted_out => {
            tracing::info!(platform = PLATFORM, chat = %from, "dropped a message from an opted-out number (it must send START first)");
            return twiml(StatusCode::OK);
        }
        None => {}
    }
    let media = field("NumMedia")
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    let mut text = text;
    if media > 0 {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!(
            "[{media} MMS attachment(s) not downloaded: SMS takes text only]"
        ));
    }
    if text.is_empty() {
        return twiml(StatusCode::OK);
    }
    let msg = InboundMessage {
        source: MessageSource {
            platform: PLATFORM.into(),
            chat_type: ChatType::Dm,
            chat_id: Some(from.clone()),
            thread_id: None,
            user_id: Some(from),
            user_name: None,
        },
        message_id: Some(sid.clone()),
        text,
        reply_to: None,
        reply_to_text: None,
        attachments: Vec::new(),
    };
    if st.inbound.send(msg).await.is_err() {
        lock(&st.seen).pop(&sid);
        let mut r = twiml(StatusCode::SERVICE_UNAVAILABLE);
        r.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            axum::http::HeaderValue::from_static("5"),
        );
        return r;
    }
    twiml(StatusCode::OK)
}

impl SmsAdapter {
    /// Checks the settings and binds the webhook listener. Errors: `Rejected` without
    /// `TWILIO_PHONE_NUMBER`, or without `SMS_WEBHOOK_URL` unless signatures are turned off;
    /// `Transport` when the address cannot be bound.
    pub fn bind(settings: SmsSettings) -> Result<SmsAdapter, PlatformError> {
        let mut adapter = SmsAdapter::send_only(settings)?;
        let s = &adapter.settings;
        if s.phone_number.trim().is_empty() {
            return Err(bad(
                "TWILIO_PHONE_NUMBER",
                "is not set; replies need a from-number",
            ));
        }
        if s.webhook_url.is_none() && !s.insecure_no_signature {
            return Err(bad(
                "SMS_WEBHOOK_URL",
                "is required to check Twilio's signatures: set it to the public URL entered at \
                 Twilio (e.g. https://example.com/webhooks/twilio); SMS_INSECURE_NO_SIGNATURE=true \
                 turns the check off for development",
            ));
        }
        let hosts = s
            .webhook_url
            .as_deref()
            .and_then(url_host)
            .into_iter()
            .collect();
        adapter.listener = Some(PushListener::bind(PLATFORM, s.bind, hosts, s.limits)?);
        Ok(adapter)
    }

    /// An adapter that only sends (no listener). Errors: `Rejected` for an empty account
    /// sid or token, `Transport` when the HTTP client cannot be built.
    pub fn send_only(settings: SmsSettings) -> Result<SmsAdapter, PlatformError> {
        if settings.account_sid.trim().is_empty() {
            return Err(bad("TWILIO_ACCOUNT_SID", "is empty"));
        }
        if settings.auth_token.trim().is_empty() {
            return Err(bad("TWILIO_AUTH_TOKEN", "is empty"));
        }
        hermes_llm::init_tls();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| PlatformError::transport(PLATFORM, format!("HTTP client: {e}")))?;
        let opt_outs = OptOuts::new(StampFile::load(
            settings.opt_out_file.clone(),
            "sms opt-outs",
        ));
        Ok(SmsAdapter {
            settings,
            http,
            listener: None,
            opt_outs,
        })
    }

    /// The webhook listener's address (the real port when bound to port 0).
    pub fn webhook_addr(&self) -> Option<SocketAddr> {
        self.listener.as_ref().map(PushListener::local_addr)
    }

    /// True when `number` is opted out (it sent STOP, or Twilio answered 21610).
    pub fn is_opted_out(&self, number: &str) -> bool {
        self.opt_outs.contains(number)
    }

    /// POSTs one body to `to`, again after Twilio's `Retry-After` while it answers 429.
    async fn post(&self, to: &str, body: &str) -> Result<String, PlatformError> {
        let url = format!(
            "{}/2010-04-01/Accounts/{}/Messages.json",
            self.settings.api_base_url.trim_end_matches('/'),
            self.settings.account_sid
        );
        let form = [
            ("From", self.settings.phone_number.as_str()),
            ("To", to),
            ("Body", body),
        ];
        let mut attempt = 1;
        loop {
            let req = self
                .http
                .post(&url)
                .basic_auth(&self.settings.account_sid, Some(&self.settings.auth_token))
                .form(&form);
            let answer = http::send(PLATFORM, "Messages", req).await?;
            let json: serde_json::Value = serde_json::from_str(&answer.body).unwrap_or_default();
            let status = answer.status.as_u16();
            if answer.status.is_success() {
                return json["sid"].as_str().map(str::to_owned).ok_or_else(|| {
                    PlatformError::protocol(PLATFORM, "Messages: the answer has no sid")
                });
            }
            let code = json["code"].as_i64();
            let message = json["message"].as_str().unwrap_or("no message");
            let detail = match code {
                Some(c) => format!("Twilio error {c} (HTTP {status}): {message}"),
                None => format!("HTTP {status}: {message}"),
            };
            if status == 429 {
                let wait = answer
                    .retry_after
                    .as_deref()
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map_or(Duration::from_secs(1), Duration::from_secs);
                if attempt < self.settings.send_attempts {
                    let wait = wait.min(self.settings.retry_max);
                    tracing::warn!(
                        platform = PLATFORM,
                        attempt,
                        "Twilio answered 429; retrying in {} ms",
                        wait.as_millis()
                    );
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                    continue;
                }
                return Err(PlatformError::RateLimited {
                    platform: PLATFORM.into(),
                    retry_after: wait,
                });
            }
            if code == Some(UNSUBSCRIBED) {
                self.opt_outs.set(to, true).await;
                tracing::warn!(platform = PLATFORM, chat = %to, "Twilio refused the message: the number opted out (21610); recorded");
                return Err(PlatformError::Rejected {
                    platform: PLATFORM.into(),
                    detail: format!(
                        "{to} has opted out (replied STOP); nothing is sent until it sends START ({detail})"
                    ),
                });
            }
            return Err(match status {
                401 | 403 => PlatformError::Auth {
                    platform: PLATFORM.into(),
                    detail,
                },
                s if s >= 500 => PlatformError::Transport {
                    platform: PLATFORM.into(),
                    detail,
                },
                _ => PlatformError::Rejected {
                    platform: PLATFORM.into(),
                    detail,
                },
            });
        }
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for SmsAdapter {
    fn name(&self) -> &str {
        PLATFORM
    }

    /// Plain text, no edits; the whole reply comes to [`PlatformAdapter::send`], which lays
    /// it out in segments.
    fn limits(&self) -> PlatformLimits {
        PlatformLimits {
            max_message_len: MAX_REPLY_CHARS,
            length_unit: LengthUnit::Chars,
            markup: Markup::Plain,
            supports_edit: false,
        }
    }

    /// Serves the webhook until `cancel` fires or the receiver is dropped; a send-only
    /// adapter waits for `cancel`. Errors: `Unsupported` when called a second time,
    /// `Transport` when the listener fails.
    async fn run(
        &self,
        inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        let Some(listener) = &self.listener else {
            cancel.cancelled().await;
            return Ok(());
        };
        let s = &self.settings;
        if s.webhook_url.is_none() {
            tracing::warn!(
                platform = PLATFORM,
                "SMS_INSECURE_NO_SIGNATURE=true: Twilio signatures are NOT checked; anyone who reaches {} can inject messages",
                listener.local_addr()
            );
        }
        let state = ServerState {
            auth_token: s.auth_token.as_str().into(),
            account_sid: s.account_sid.as_str().into(),
            phone_number: s.phone_number.as_str().into(),
            webhook_url: s.webhook_url.as_deref().map(Arc::from),
            inbound: inbound.clone(),
            opt_outs: self.opt_outs.clone(),
            seen: Arc::new(Mutex::new(lru::LruCache::new(
                NonZeroUsize::new(SEEN_CAPACITY).unwrap_or(NonZeroUsize::MIN),
            ))),
        };
        let mut routes = Router::new().route(DEFAULT_WEBHOOK_PATH, post(receive));
        if let Some(path) = s
            .webhook_url
            .as_deref()
            .map(|u| url_path(u, DEFAULT_WEBHOOK_PATH))
            && path != DEFAULT_WEBHOOK_PATH
        {
            routes = routes.route(&path, post(receive));
        }
        tracing::info!(platform = PLATFORM, "serving the Twilio webhook");
        listener
            .serve(routes.with_state(state), async move {
                tokio::select! {
                    _ = cancel.cancelled() => {}
                    _ = inbound.closed() => {}
                }
            })
            .await
    }

    /// Sends a reply to `target.chat_id` (E.164), laid out in segments (see the module
    /// docs); the id is the last message's `sid`. Errors: `Rejected` for an opted-out number
    /// (nothing is sent) and Twilio's other refusals, `RateLimited` after the retries, `Auth`
    /// for bad credentials, `Transport` for network failures and 5xx.
    async fn send(&self, target: &ChatTarget, text: &str) -> Result<SentMessage, PlatformError> {
        let to = target.chat_id.as_str();
        if self.opt_outs.contains(to) {
            tracing::warn!(platform = PLATFORM, chat = %to, "not sent: the number opted out (STOP) and has not sent START");
            return Err(PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail: format!(
                    "{to} has opted out (replied STOP); nothing is sent until it sends START"
                ),
            });
        }
        let plan = segments::plan(text, self.settings.max_segments);
        if plan.dropped_chars > 0 {
            tracing::warn!(platform = PLATFORM, chat = %to, dropped = plan.dropped_chars, max_segments = self.settings.max_segments, "reply cut to SMS_MAX_SEGMENTS");
        }
        let mut last = None;
        for body in &plan.bodies {
            last = Some(self.post(to, body).await?);
        }
        last.map(|message_id| SentMessage { message_id })
            .ok_or_else(|| PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail: "nothing to send: the message is empty".into(),
            })
    }

    /// SMS cannot be edited.
    async fn edit(
        &self,
        _target: &ChatTarget,
        _message: &SentMessage,
        _text: &str,
    ) -> Result<(), PlatformError> {
        Err(PlatformError::Unsupported {
            platform: PLATFORM.into(),
            what: "editing a sent message".into(),
        })
    }

    /// SMS carries text only (MMS needs a public media URL, which hermes does not host).
    async fn send_file(
        &self,
        _target: &ChatTarget,
        _path: &Path,
        _caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        Err(PlatformError::Unsupported {
            platform: PLATFORM.into(),
            what: "sending files".into(),
        })
    }

    /// SMS has no typing indicator.
    async fn typing(&self, _target: &ChatTarget) -> Result<(), PlatformError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn settings_come_from_python_hermes_variables() {
        assert!(
            SmsSettings::from_env(&env(&[("TWILIO_ACCOUNT_SID", "AC1")]), None)
                .unwrap()
                .is_none()
        );
        let s = SmsSettings::from_env(
            &env(&[
                ("TWILIO_ACCOUNT_SID", "AC1"),
                ("TWILIO_AUTH_TOKEN", "SECRET-token"),
                ("TWILIO_PHONE_NUMBER", "+15550001111"),
                ("SMS_WEBHOOK_URL", "https://sms.example.com/webhooks/twilio"),
                ("SMS_WEBHOOK_PORT", "8081"),
                ("SMS_MAX_SEGMENTS", "4"),
            ]),
            Some(Path::new("/h/gateway")),
        )
        .unwrap()
        .unwrap();
        assert_eq!(s.bind, SocketAddr::from(([127, 0, 0, 1], 8081)));
        assert_eq!(s.max_segments, 4);
        assert_eq!(
            s.opt_out_file.as_deref(),
            Some(Path::new("/h/gateway/sms_opt_outs.json"))
        );
        let shown = format!("{s:?}");
        assert!(
            !shown.contains("SECRET") && shown.contains("<redacted>"),
            "{shown}"
        );
        for (var, value) in [
            ("SMS_MAX_SEGMENTS", "0"),
            ("SMS_WEBHOOK_URL", "sms.example.com"),
            ("SMS_WEBHOOK_HOST", "somewhere"),
        ] {
            let e = SmsSettings::from_env(
                &env(&[
                    ("TWILIO_ACCOUNT_SID", "AC1"),
                    ("TWILIO_AUTH_TOKEN", "t"),
                    (var, value),
                ]),
                None,
            )
            .unwrap_err();
            assert!(e.to_string().contains(var), "{e}");
        }
    }

    #[test]
    fn serving_needs_a_number_and_the_signed_url() {
        let mut s = SmsSettings::new("AC1", "t", "");
        s.bind = SocketAddr::from(([127, 0, 0, 1], 0));
        let e = SmsAdapter::bind(s.clone()).err().unwrap();
        assert!(e.to_string().contains("TWILIO_PHONE_NUMBER"), "{e}");
        s.phone_number = "+15550001111".into();
        let e = SmsAdapter::bind(s.clone()).err().unwrap();
        assert!(e.to_string().contains("SMS_WEBHOOK_URL"), "{e}");
        s.insecure_no_signature = true;
        assert!(SmsAdapter::bind(s).is_ok());
    }
}
