//! WhatsApp through Meta's WhatsApp Business Cloud API (issue 22), platform `whatsapp_cloud`
//! as in Python Hermes (session keys `agent:<profile>:whatsapp_cloud:dm:<wa_id>`).
//!
//! Inbound: Meta calls the webhook URL. `GET <path>?hub.mode=subscribe&hub.verify_token=…
//! &hub.challenge=…` is the subscription handshake, answered with the challenge when the
//! token equals `WHATSAPP_CLOUD_VERIFY_TOKEN` (403 otherwise, 503 when none is set). Every
//! `POST` must carry `X-Hub-Signature-256` over the raw body keyed with
//! `WHATSAPP_CLOUD_APP_SECRET` (401 otherwise, nothing read); its messages ([`inbound`]) are
//! de-duplicated by `wamid` (Meta redelivers for up to 7 days; the store's inbound claims
//! cover restarts), their media fetched with the token (`GET /<media-id>` then the URL it
//! gives) and saved under the media folder, and the request answered 200 only once the
//! gateway has them (503 while it shuts down, so Meta delivers again). Failed deliveries
//! Meta reports in `statuses` are logged; a 131047 one marks the user's window closed.
//!
//! Outbound: text (4,096 characters, plain: Markdown is reduced), files (uploaded to
//! `/<phone-number-id>/media`, then sent by id), read receipts with a typing indicator
//! while a turn runs (`WHATSAPP_CLOUD_READ_RECEIPTS=false` turns them off). A free-form
//! message outside the 24-hour customer service window ([`window`]) is refused with an error
//! naming the window, before any call when hermes knows the window is closed, else from
//! Meta's error 131047; the log gets the same line, and cron deliveries record it.
//! The listener is the shared push listener: `Host` must name it or
//! `WHATSAPP_CLOUD_WEBHOOK_ALLOWED_HOSTS` (421), bodies are capped at 3 MiB (Meta's maximum
//! payload), heads and bodies time out.

mod graph;
pub mod inbound;
mod webhook;
pub mod window;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use inbound::{SIGNATURE_HEADER, sign};

use crate::error::PlatformError;
use crate::platform::{
    ChatTarget, InboundMessage, LengthUnit, Markup, PlatformAdapter, PlatformLimits, SentMessage,
};
use crate::platforms::media::MediaPolicy;
use crate::platforms::push::PushListener;
use crate::platforms::state::StampFile;
use crate::serve::ServeLimits;
use graph::{Failure, Graph, OUTSIDE_WINDOW};
use webhook::{ServerState, handshake, receive};
use window::Windows;

/// Platform name in config, session keys and logs (Python Hermes' `whatsapp_cloud`).
pub const PLATFORM: &str = "whatsapp_cloud";
/// Meta's Graph API.
pub const DEFAULT_API_BASE_URL: &str = "https://graph.facebook.com";
/// The Graph API version Python Hermes uses.
pub const DEFAULT_API_VERSION: &str = "v20.0";
/// Python Hermes' default listen port.
pub const DEFAULT_WEBHOOK_PORT: u16 = 8090;
/// Python Hermes' default webhook path.
pub const DEFAULT_WEBHOOK_PATH: &str = "/whatsapp/webhook";
/// Longest text message (Meta: `text.body`, at most 4,096 characters).
pub const MAX_MESSAGE_LEN: usize = 4096;
/// `wamid`s remembered to drop redeliveries.
const SEEN_CAPACITY: usize = 5000;
/// Chats whose latest inbound `wamid` is kept (for read receipts).
const CHATS_CAPACITY: usize = 1000;

/// How to reach the Cloud API and listen for its webhook. `Debug` hides the secrets.
#[derive(Clone)]
pub struct WhatsAppSettings {
    /// `WHATSAPP_CLOUD_PHONE_NUMBER_ID`: the business number's id (the Graph URL path).
    pub phone_number_id: String,
    /// `WHATSAPP_CLOUD_ACCESS_TOKEN`: a system user token with `whatsapp_business_messaging`.
    pub access_token: String,
    /// `WHATSAPP_CLOUD_APP_SECRET`: the Meta app's secret, key of `X-Hub-Signature-256`.
    /// Inbound is refused without it (the adapter's run ends with `Auth`).
    pub app_secret: String,
    /// `WHATSAPP_CLOUD_VERIFY_TOKEN`: the token of the subscription handshake.
    pub verify_token: String,
    /// Graph base URL, [`DEFAULT_API_BASE_URL`] in production; tests point it at a fake.
    pub api_base_url: String,
    /// `WHATSAPP_CLOUD_API_VERSION` (default [`DEFAULT_API_VERSION`]).
    pub api_version: String,
    /// `WHATSAPP_CLOUD_WEBHOOK_HOST` / `_PORT` (default `0.0.0.0:8090`; port 0 picks one).
    pub bind: SocketAddr,
    /// `WHATSAPP_CLOUD_WEBHOOK_PATH` (default [`DEFAULT_WEBHOOK_PATH`]).
    pub path: String,
    /// `WHATSAPP_CLOUD_WEBHOOK_ALLOWED_HOSTS`: public `Host` names served besides the
    /// bound address (the name Meta posts to, when the proxy passes it on).
    pub allowed_hosts: Vec<String>,
    /// Where inbound files are saved (`<dir>/whatsapp_cloud/`).
    pub media_dir: PathBuf,
    /// Largest inbound file kept, in bytes (default 100 MiB, Meta's document maximum).
    pub max_media_bytes: u64,
    /// The 24-hour window state file; `None` keeps it in memory.
    pub window_file: Option<PathBuf>,
    /// `WHATSAPP_CLOUD_READ_RECEIPTS`: mark messages read and show typing (default true).
    pub read_receipts: bool,
    /// Tries per Graph call while Meta throttles (default 4).
    pub send_attempts: u32,
    /// Longest wait between those tries (default 30 s).
    pub retry_max: Duration,
    /// Listener timeouts and caps (body cap 3 MiB).
    pub limits: ServeLimits,
}

hermes_protocol::debug_redacted!(WhatsAppSettings {
    secret: [access_token, app_secret, verify_token],
    shown: [
        phone_number_id,
        api_base_url,
        api_version,
        bind,
        path,
        allowed_hosts,
        media_dir,
        max_media_bytes,
        window_file,
        read_receipts,
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

impl WhatsAppSettings {
    /// Settings for one phone number and token with the defaults above (no app secret or
    /// verify token yet).
    pub fn new(
        phone_number_id: impl Into<String>,
        access_token: impl Into<String>,
        media_dir: impl Into<PathBuf>,
    ) -> WhatsAppSettings {
        WhatsAppSettings {
            phone_number_id: phone_number_id.into(),
            access_token: access_token.into(),
            app_secret: String::new(),
            verify_token: String::new(),
            api_base_url: DEFAULT_API_BASE_URL.into(),
            api_version: DEFAULT_API_VERSION.into(),
            bind: SocketAddr::from(([0, 0, 0, 0], DEFAULT_WEBHOOK_PORT)),
            path: DEFAULT_WEBHOOK_PATH.into(),
            allowed_hosts: Vec::new(),
            media_dir: media_dir.into(),
            max_media_bytes: 100 * 1024 * 1024,
            window_file: None,
            read_receipts: true,
            send_attempts: 4,
            retry_max: Duration::from_secs(30),
            limits: ServeLimits {
                max_body_bytes: 3 * 1024 * 1024,
                ..ServeLimits::default()
            },
        }
    }

    /// Reads Python Hermes' variables from the environment merged over `.env`; `Ok(None)`
    /// when `WHATSAPP_CLOUD_PHONE_NUMBER_ID` or `WHATSAPP_CLOUD_ACCESS_TOKEN` is unset (not
    /// configured, as Python decides). `media_dir` is the gateway's media folder,
    /// `state_dir` the folder of the window file (`HERMES_HOME/gateway`).
    ///
    /// Errors name the variable: a port outside 1–65535, a host that is not an IP address, a
    /// path not starting with `/`, a read-receipts value that is not a boolean.
    pub fn from_env(
        env: &BTreeMap<String, String>,
        media_dir: impl Into<PathBuf>,
        state_dir: Option<&Path>,
    ) -> Result<Option<WhatsAppSettings>, PlatformError> {
        let get = |k: &str| env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let (Some(phone), Some(token)) = (
            get("WHATSAPP_CLOUD_PHONE_NUMBER_ID"),
            get("WHATSAPP_CLOUD_ACCESS_TOKEN"),
        ) else {
            return Ok(None);
        };
        let mut s = WhatsAppSettings::new(phone, token, media_dir);
        s.app_secret = get("WHATSAPP_CLOUD_APP_SECRET").unwrap_or_default().into();
        s.verify_token = get("WHATSAPP_CLOUD_VERIFY_TOKEN")
            .unwrap_or_default()
            .into();
        if let Some(v) = get("WHATSAPP_CLOUD_API_VERSION") {
            s.api_version = v.into();
        }
        if let Some(v) = get("WHATSAPP_CLOUD_WEBHOOK_HOST") {
            let ip = if v.eq_ignore_ascii_case("localhost") {
                std::net::IpAddr::from([127, 0, 0, 1])
            } else {
                v.trim_matches(['[', ']']).parse().map_err(|_| {
                    bad(
                        "WHATSAPP_CLOUD_WEBHOOK_HOST",
                        format!("`{v}` is not an IP address"),
                    )
                })?
            };
            s.bind.set_ip(ip);
        }
        if let Some(v) = get("WHATSAPP_CLOUD_WEBHOOK_PORT") {
            let port = v.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| {
                bad(
                    "WHATSAPP_CLOUD_WEBHOOK_PORT",
                    format!("`{v}` is not a port (1-65535)"),
                )
            })?;
            s.bind.set_port(port);
        }
        if let Some(v) = get("WHATSAPP_CLOUD_WEBHOOK_PATH") {
            // Python adds the missing slash.
            s.path = if v.starts_with('/') {
                v.into()
            } else {
                format!("/{v}")
            };
        }
        s.allowed_hosts = get("WHATSAPP_CLOUD_WEBHOOK_ALLOWED_HOSTS")
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|h| !h.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(v) = get("WHATSAPP_CLOUD_READ_RECEIPTS") {
            s.read_receipts = match v.to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => true,
                "0" | "false" | "no" | "off" => false,
                _ => {
                    return Err(bad(
                        "WHATSAPP_CLOUD_READ_RECEIPTS",
                        format!("`{v}` is not true/false"),
                    ));
                }
            };
        }
        s.window_file = state_dir.map(|d| d.join("whatsapp_windows.json"));
        Ok(Some(s))
    }
}

/// The WhatsApp Cloud API [`PlatformAdapter`]. [`WhatsAppAdapter::bind`] opens the webhook
/// listener, so a port in use shows at start.
pub struct WhatsAppAdapter {
    settings: WhatsAppSettings,
    graph: Graph,
    listener: Option<PushListener>,
    windows: Windows,
    /// Latest inbound `wamid` per chat (what a read receipt points at).
    latest: Arc<Mutex<lru::LruCache<String, String>>>,
    /// Inbound `wamid`s already quoted by a reply (a long reply quotes on its first part).
    quoted: Mutex<lru::LruCache<String, ()>>,
}

fn lru<K: std::hash::Hash + Eq, V>(n: usize) -> lru::LruCache<K, V> {
    lru::LruCache::new(NonZeroUsize::new(n).unwrap_or(NonZeroUsize::MIN))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl WhatsAppAdapter {
    /// Checks the settings and binds the webhook listener. Errors: `Rejected` for a path
    /// not starting with `/` or an empty phone number id / token, `Transport` when the
    /// address cannot be bound.
    pub fn bind(settings: WhatsAppSettings) -> Result<WhatsAppAdapter, PlatformError> {
        let mut adapter = WhatsAppAdapter::send_only(settings)?;
        if !adapter.settings.path.starts_with('/') {
            return Err(bad(
                "WHATSAPP_CLOUD_WEBHOOK_PATH",
                format!("{:?} must start with '/'", adapter.settings.path),
            ));
        }
        let s = &adapter.settings;
        adapter.listener = Some(PushListener::bind(
            PLATFORM,
            s.bind,
            s.allowed_hosts.clone(),
            s.limits,
        )?);
        Ok(adapter)
    }

    /// An adapter that only sends (no listener; [`PlatformAdapter::run`] waits for cancel).
    /// Errors: `Rejected` for an empty phone number id or token.
    pub fn send_only(settings: WhatsAppSettings) -> Result<WhatsAppAdapter, PlatformError> {
        if settings.phone_number_id.trim().is_empty() {
            return Err(bad("WHATSAPP_CLOUD_PHONE_NUMBER_ID", "is empty"));
        }
        if settings.access_token.trim().is_empty() {
            return Err(bad("WHATSAPP_CLOUD_ACCESS_TOKEN", "is empty"));
        }
        let graph = Graph::new(
            &settings.api_base_url,
            &settings.api_version,
            &settings.phone_number_id,
            &settings.access_token,
            settings.send_attempts,
            settings.retry_max,
        )?;
        let windows = Windows::new(StampFile::load(
            settings.window_file.clone(),
            "whatsapp_cloud windows",
        ));
        Ok(WhatsAppAdapter {
            settings,
            graph,
            listener: None,
            windows,
            latest: Arc::new(Mutex::new(lru(CHATS_CAPACITY))),
            quoted: Mutex::new(lru(1024)),
        })
    }

    /// The webhook listener's address (the real port when bound to port 0).
    pub fn webhook_addr(&self) -> Option<SocketAddr> {
        self.listener.as_ref().map(PushListener::local_addr)
    }

    /// Refuses a free-form send to `to` when its window is known to be closed.
    fn check_window(&self, to: &str) -> Result<(), PlatformError> {
        self.windows
            .check(to, chrono::Utc::now().timestamp())
            .map_err(|closed| {
                let detail = closed.describe(to);
                tracing::error!(platform = PLATFORM, chat = %to, "{detail}");
                PlatformError::Rejected {
                    platform: PLATFORM.into(),
                    detail,
                }
            })
    }

    /// The error of a failed send to `to`; Meta's 131047 also closes the window.
    async fn failed(&self, to: &str, failure: Failure) -> PlatformError {
        if failure.code == Some(OUTSIDE_WINDOW) {
            self.windows.closed(to).await;
            let detail = window::Closed { last_inbound: None }.describe(to);
            tracing::error!(platform = PLATFORM, chat = %to, "{detail}");
            return PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail,
            };
        }
        tracing::warn!(platform = PLATFORM, chat = %to, error = %failure.error, "send failed");
        failure.error
    }
}

/// `(kind, MIME type, Meta's size cap in bytes)` of a file to send, from its extension
/// (Meta "Supported media types").
fn outbound_kind(path: &Path) -> (&'static str, &'static str, u64) {
    const MB: u64 = 1024 * 1024;
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "jpg" | "jpeg" => ("image", "image/jpeg", 5 * MB),
        "png" => ("image", "image/png", 5 * MB),
        "mp4" => ("video", "video/mp4", 16 * MB),
        "3gp" => ("video", "video/3gpp", 16 * MB),
        "mp3" => ("audio", "audio/mpeg", 16 * MB),
        "m4a" => ("audio", "audio/mp4", 16 * MB),
        "aac" => ("audio", "audio/aac", 16 * MB),
        "amr" => ("audio", "audio/amr", 16 * MB),
        "ogg" | "opus" => ("audio", "audio/ogg", 16 * MB),
        "pdf" => ("document", "application/pdf", 100 * MB),
        "txt" | "md" | "log" | "csv" => ("document", "text/plain", 100 * MB),
        "doc" => ("document", "application/msword", 100 * MB),
        "docx" => (
            "document",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            100 * MB,
        ),
        "xls" => ("document", "application/vnd.ms-excel", 100 * MB),
        "xlsx" => (
            "document",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            100 * MB,
        ),
        "ppt" => ("document", "application/vnd.ms-powerpoint", 100 * MB),
        "pptx" => (
            "document",
            "application/vnd.openxmlformats-officedocument.presentationml.presentation",
            100 * MB,
        ),
        _ => ("document", "application/octet-stream", 100 * MB),
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for WhatsAppAdapter {
    fn name(&self) -> &str {
        PLATFORM
    }

    /// [`MAX_MESSAGE_LEN`] (counted in UTF-16 units, the stricter count), plain text, no edits.
    fn limits(&self) -> PlatformLimits {
        PlatformLimits {
            max_message_len: MAX_MESSAGE_LEN,
            length_unit: LengthUnit::Utf16,
            markup: Markup::Plain,
            supports_edit: false,
        }
    }

    /// Serves the webhook until `cancel` fires or the receiver is dropped. A send-only
    /// adapter waits for `cancel`. Errors: `Auth` without an app secret (inbound cannot be
    /// verified), `Unsupported` when called a second time, `Transport` when the listener
    /// fails.
    async fn run(
        &self,
        inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        let Some(listener) = &self.listener else {
            cancel.cancelled().await;
            return Ok(());
        };
        if self.settings.app_secret.is_empty() {
            return Err(PlatformError::Auth {
                platform: PLATFORM.into(),
                detail: "WHATSAPP_CLOUD_APP_SECRET is not set: webhook POSTs cannot be verified \
                         (X-Hub-Signature-256), so none is accepted; sending still works"
                    .into(),
            });
        }
        if self.settings.verify_token.is_empty() {
            tracing::warn!(
                platform = PLATFORM,
                "WHATSAPP_CLOUD_VERIFY_TOKEN is not set: Meta's subscription handshake will fail"
            );
        }
        let state = ServerState {
            app_secret: self.settings.app_secret.as_str().into(),
            verify_token: self.settings.verify_token.as_str().into(),
            phone_number_id: self.settings.phone_number_id.as_str().into(),
            inbound: inbound.clone(),
            graph: self.graph.clone(),
            policy: MediaPolicy {
                dir: self.settings.media_dir.clone(),
                max_bytes: self.settings.max_media_bytes,
            },
            windows: self.windows.clone(),
            latest: self.latest.clone(),
            seen: Arc::new(Mutex::new(lru(SEEN_CAPACITY))),
        };
        let routes = Router::new()
            .route(&self.settings.path, get(handshake).post(receive))
            .with_state(state);
        tracing::info!(platform = PLATFORM, path = %self.settings.path, "serving the WhatsApp webhook");
        listener
            .serve(routes, async move {
                tokio::select! {
                    _ = cancel.cancelled() => {}
                    _ = inbound.closed() => {}
                }
            })
            .await
    }

    /// One text message to `target.chat_id` (a `wa_id`), quoting `target.reply_to` on the
    /// first part of a reply. Errors: `Rejected` outside the 24-hour window (see the module
    /// docs) and for Meta's other refusals, `RateLimited` when Meta still throttles after
    /// the retries, `Auth` for a bad token, `Transport` for network failures and 5xx.
    async fn send(&self, target: &ChatTarget, text: &str) -> Result<SentMessage, PlatformError> {
        self.check_window(&target.chat_id)?;
        let context = target
            .reply_to
            .as_ref()
            .filter(|id| lock(&self.quoted).put((*id).clone(), ()).is_none());
        match self
            .graph
            .send_text(&target.chat_id, text, context.map(String::as_str))
            .await
        {
            Ok(message_id) => Ok(SentMessage { message_id }),
            Err(f) => Err(self.failed(&target.chat_id, f).await),
        }
    }

    /// WhatsApp messages cannot be edited through the Cloud API.
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

    /// Uploads the file and sends it as an image, video, audio or document (by extension);
    /// the caption goes with it (after it, as text, for audio, which takes none). Errors:
    /// as [`PlatformAdapter::send`], and `Rejected` for a file over Meta's cap of its kind.
    async fn send_file(
        &self,
        target: &ChatTarget,
        path: &Path,
        caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        self.check_window(&target.chat_id)?;
        let (kind, mime, cap) = outbound_kind(path);
        let size = tokio::fs::metadata(path)
            .await
            .map(|m| m.len())
            .map_err(|e| PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail: format!("reading {}: {e}", path.display()),
            })?;
        if size > cap {
            return Err(PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail: format!(
                    "{} is {size} bytes; WhatsApp takes {kind} files up to {cap} bytes",
                    path.display()
                ),
            });
        }
        let to = &target.chat_id;
        let id = match self.graph.upload(path, mime).await {
            Ok(id) => id,
            Err(f) => return Err(self.failed(to, f).await),
        };
        let filename = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let sent = match self
            .graph
            .send_media(to, kind, &id, caption, filename.as_deref())
            .await
        {
            Ok(message_id) => SentMessage { message_id },
            Err(f) => return Err(self.failed(to, f).await),
        };
        if kind == "audio"
            && let Some(c) = caption.filter(|c| !c.trim().is_empty())
        {
            self.send(
                &ChatTarget {
                    reply_to: None,
                    ..target.clone()
                },
                c,
            )
            .await?;
        }
        Ok(sent)
    }

    /// With read receipts on: marks the chat's latest message read and shows "typing…".
    /// Failures are logged and `Ok` is returned (a receipt never holds up a reply).
    async fn typing(&self, target: &ChatTarget) -> Result<(), PlatformError> {
        if !self.settings.read_receipts {
            return Ok(());
        }
        let Some(wamid) = lock(&self.latest).get(&target.chat_id).cloned() else {
            return Ok(());
        };
        if let Err(f) = self.graph.mark_read(&wamid, true).await {
            tracing::debug!(platform = PLATFORM, error = %f.error, "read receipt failed");
        }
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
            WhatsAppSettings::from_env(&env(&[("WHATSAPP_CLOUD_ACCESS_TOKEN", "t")]), "/m", None)
                .unwrap()
                .is_none()
        );
        let s = WhatsAppSettings::from_env(
            &env(&[
                ("WHATSAPP_CLOUD_PHONE_NUMBER_ID", "PN1"),
                ("WHATSAPP_CLOUD_ACCESS_TOKEN", "SECRET-token"),
                ("WHATSAPP_CLOUD_APP_SECRET", "SECRET-app"),
                ("WHATSAPP_CLOUD_VERIFY_TOKEN", "SECRET-verify"),
                ("WHATSAPP_CLOUD_WEBHOOK_PORT", "9000"),
                ("WHATSAPP_CLOUD_WEBHOOK_PATH", "hooks/wa"),
                ("WHATSAPP_CLOUD_READ_RECEIPTS", "off"),
            ]),
            "/m",
            Some(Path::new("/h/gateway")),
        )
        .unwrap()
        .unwrap();
        assert_eq!(s.bind, SocketAddr::from(([0, 0, 0, 0], 9000)));
        assert_eq!(s.path, "/hooks/wa");
        assert!(!s.read_receipts);
        assert_eq!(s.api_version, "v20.0");
        assert_eq!(
            s.window_file.as_deref(),
            Some(Path::new("/h/gateway/whatsapp_windows.json"))
        );
        let shown = format!("{s:?}");
        assert!(
            !shown.contains("SECRET") && shown.contains("<redacted>"),
            "{shown}"
        );
        let e = WhatsAppSettings::from_env(
            &env(&[
                ("WHATSAPP_CLOUD_PHONE_NUMBER_ID", "PN1"),
                ("WHATSAPP_CLOUD_ACCESS_TOKEN", "t"),
                ("WHATSAPP_CLOUD_WEBHOOK_PORT", "0"),
            ]),
            "/m",
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("WHATSAPP_CLOUD_WEBHOOK_PORT"), "{e}");
    }

    #[test]
    fn outbound_files_get_meta_kinds_and_caps() {
        assert_eq!(outbound_kind(Path::new("a.JPG")).0, "image");
        assert_eq!(
            outbound_kind(Path::new("v.ogg")),
            ("audio", "audio/ogg", 16 * 1024 * 1024)
        );
        assert_eq!(outbound_kind(Path::new("r.pdf")).0, "document");
        assert_eq!(
            outbound_kind(Path::new("noext")).1,
            "application/octet-stream"
        );
    }
}
