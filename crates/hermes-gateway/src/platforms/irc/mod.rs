//! IRC adapter (issue 22 item 6): one connection to an IRC server, plain TCP or TLS (rustls
//! with ring, the workspace's only TLS stack), with SASL PLAIN and/or NickServ, flood control
//! and reconnects.
//!
//! Settings use Python Hermes' names (its `plugins/platforms/irc` adapter): `IRC_SERVER`,
//! `IRC_PORT` (default 6697 with TLS, 6667 without), `IRC_NICKNAME` (default `hermes-bot`),
//! `IRC_CHANNEL` (comma-separated), `IRC_USE_TLS` (default true), `IRC_SERVER_PASSWORD`,
//! `IRC_NICKSERV_PASSWORD`; access and home channel are the gateway's shared
//! `IRC_ALLOWED_USERS`, `IRC_ALLOW_ALL_USERS` and `IRC_HOME_CHANNEL`. hermes adds
//! `IRC_SASL_USERNAME` / `IRC_SASL_PASSWORD` (SASL PLAIN; Python Hermes has no SASL),
//! `IRC_TLS_CA_FILE` (a PEM bundle trusted besides the system roots), `IRC_FLOOD_BURST` and
//! `IRC_FLOOD_INTERVAL_MS` ([`IrcSettings::from_env`]).
//!
//! Inbound: see [`inbound`] (who is addressed, and why the account name beats the nick).
//! Outbound: the gateway formats replies as plain text (IRC has no Markdown); [`split`] cuts
//! them into lines within the 512-byte limit; [`queue`] keeps them until written; [`flood`]
//! spaces them. IRC has no edits (no streaming: the final answer is sent in lines), no typing
//! indicator and no file transfer.

mod conn;
pub mod flood;
pub mod inbound;
pub mod proto;
pub mod queue;
pub mod split;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::PlatformError;
use crate::platform::{
    ChatTarget, InboundMessage, LengthUnit, Markup, PlatformAdapter, PlatformLimits, SentMessage,
};
use crate::platforms::backoff::{Backoff, sleep_or_cancel};

/// Platform name in config, session keys and logs.
pub const PLATFORM: &str = "irc";
/// Python Hermes' default nick.
pub const DEFAULT_NICKNAME: &str = "hermes-bot";
/// The text the gateway hands to one [`PlatformAdapter::send`], in chars; the adapter cuts it
/// into IRC lines itself, so this only bounds one reply's burst of lines.
pub const MAX_MESSAGE_CHARS: usize = 8000;

/// How to reach the IRC server, who to be and where to listen.
#[derive(Clone)]
pub struct IrcSettings {
    /// Server host name or address (`IRC_SERVER`); also the TLS server name.
    pub server: String,
    /// TCP port (`IRC_PORT`).
    pub port: u16,
    /// TLS on connect (`IRC_USE_TLS`, default true).
    pub tls: bool,
    /// Extra PEM certificates to trust (`IRC_TLS_CA_FILE`), besides the system roots.
    pub tls_ca_file: Option<PathBuf>,
    /// Wanted nick (`IRC_NICKNAME`); `_`, `_1`, … are tried when it is taken.
    pub nickname: String,
    /// User name sent in `USER` (the nick).
    pub username: String,
    /// Real name sent in `USER`.
    pub realname: String,
    /// Channels to join (`IRC_CHANNEL`, comma-separated).
    pub channels: Vec<String>,
    /// `PASS` sent before registering (`IRC_SERVER_PASSWORD`).
    pub server_password: Option<String>,
    /// Sent as `PRIVMSG NickServ :IDENTIFY <password>` after the welcome (`IRC_NICKSERV_PASSWORD`).
    pub nickserv_password: Option<String>,
    /// SASL PLAIN account (`IRC_SASL_USERNAME`; default: the nick).
    pub sasl_username: Option<String>,
    /// SASL PLAIN password (`IRC_SASL_PASSWORD`); SASL is used when it is set.
    pub sasl_password: Option<String>,
    /// Lines sent at once before flood control spaces them (`IRC_FLOOD_BURST`, default 4).
    pub flood_burst: u32,
    /// Time per further line (`IRC_FLOOD_INTERVAL_MS`, default 1000 ms; 0 turns it off).
    pub flood_interval: Duration,
    /// First reconnect delay (doubles per failed attempt; default 2 s).
    pub reconnect_initial: Duration,
    /// Longest reconnect delay (default 5 min).
    pub reconnect_max: Duration,
    /// TCP connect and TLS handshake timeout (default 30 s).
    pub connect_timeout: Duration,
    /// Time from connect to the server's welcome (`001`) before giving up (default 60 s).
    pub register_timeout: Duration,
    /// Silence after which we PING the server (default 120 s) …
    pub ping_interval: Duration,
    /// … and further silence after which the connection counts as dead (default 60 s).
    pub ping_timeout: Duration,
    /// Longest wait for NickServ's answer before joining (default 2 s, as Python Hermes).
    pub nickserv_wait: Duration,
    /// How long one reply may wait in the queue (while disconnected) before `send` fails and
    /// takes its unsent lines back (default 5 min, plus the flood time of its lines).
    pub send_timeout: Duration,
}

hermes_protocol::debug_redacted!(IrcSettings {
    secret: [server_password, nickserv_password, sasl_password],
    shown: [
        server,
        port,
        tls,
        tls_ca_file,
        nickname,
        username,
        realname,
        channels,
        sasl_username,
        flood_burst,
        flood_interval,
        reconnect_initial,
        reconnect_max,
        connect_timeout,
        register_timeout,
        ping_interval,
        ping_timeout,
        nickserv_wait,
        send_timeout
    ],
});

fn bad(var: &str, detail: impl std::fmt::Display) -> PlatformError {
    PlatformError::Rejected {
        platform: PLATFORM.into(),
        detail: format!("{var}: {detail}"),
    }
}

impl IrcSettings {
    /// Settings for `server` (TLS on port 6697), joining `channels`, with the defaults above.
    pub fn new(server: impl Into<String>, channels: Vec<String>) -> IrcSettings {
        IrcSettings {
            server: server.into(),
            port: 6697,
            tls: true,
            tls_ca_file: None,
            nickname: DEFAULT_NICKNAME.into(),
            username: DEFAULT_NICKNAME.into(),
            realname: "Hermes Agent".into(),
            channels,
            server_password: None,
            nickserv_password: None,
            sasl_username: None,
            sasl_password: None,
            flood_burst: 4,
            flood_interval: Duration::from_secs(1),
            reconnect_initial: Duration::from_secs(2),
            reconnect_max: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(30),
            register_timeout: Duration::from_secs(60),
            ping_interval: Duration::from_secs(120),
            ping_timeout: Duration::from_secs(60),
            nickserv_wait: Duration::from_secs(2),
            send_timeout: Duration::from_secs(300),
        }
    }

    /// Reads the settings from the environment merged over `.env` (names in the module
    /// docs). `Ok(None)` when `IRC_SERVER` or `IRC_CHANNEL` is unset (IRC not configured,
    /// as Python Hermes decides). Errors name the variable: a port outside 1–65535, a
    /// non-boolean `IRC_USE_TLS`, a bad number, a nick or channel with spaces.
    pub fn from_env(env: &BTreeMap<String, String>) -> Result<Option<IrcSettings>, PlatformError> {
        let get = |k: &str| env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let (Some(server), Some(channel)) = (get("IRC_SERVER"), get("IRC_CHANNEL")) else {
            return Ok(None);
        };
        let channels: Vec<String> = channel
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect();
        if let Some(c) = channels.iter().find(|c| !proto::is_safe_param(c)) {
            return Err(bad("IRC_CHANNEL", format!("`{c}` is not a channel name")));
        }
        let mut s = IrcSettings::new(server, channels);
        if let Some(v) = get("IRC_USE_TLS") {
            s.tls = match v.to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => true,
                "0" | "false" | "no" | "off" => false,
                _ => return Err(bad("IRC_USE_TLS", format!("`{v}` is not true/false"))),
            };
        }
        s.port = match get("IRC_PORT") {
            Some(v) => v
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| bad("IRC_PORT", format!("`{v}` is not a port (1-65535)")))?,
            None if s.tls => 6697,
            None => 6667,
        };
        if let Some(nick) = get("IRC_NICKNAME") {
            if !proto::is_safe_param(nick) || proto::is_channel(nick) {
                return Err(bad("IRC_NICKNAME", format!("`{nick}` is not a nickname")));
            }
            s.nickname = nick.to_string();
            s.username = nick.to_string();
        }
        let secret = |k: &str| get(k).map(proto::clean_text);
        s.server_password = secret("IRC_SERVER_PASSWORD");
        s.nickserv_password = secret("IRC_NICKSERV_PASSWORD");
        s.sasl_username = secret("IRC_SASL_USERNAME");
        s.sasl_password = secret("IRC_SASL_PASSWORD");
        s.tls_ca_file = get("IRC_TLS_CA_FILE").map(PathBuf::from);
        if let Some(v) = get("IRC_FLOOD_BURST") {
            s.flood_burst = v
                .parse::<u32>()
                .ok()
                .filter(|b| (1..=100).contains(b))
                .ok_or_else(|| {
                    bad(
                        "IRC_FLOOD_BURST",
                        format!("`{v}` is not a number from 1 to 100"),
                    )
                })?;
        }
        if let Some(v) = get("IRC_FLOOD_INTERVAL_MS") {
            let ms = v
                .parse::<u64>()
                .ok()
                .filter(|ms| *ms <= 60_000)
                .ok_or_else(|| {
                    bad(
                        "IRC_FLOOD_INTERVAL_MS",
                        format!("`{v}` is not a number of milliseconds (0-60000)"),
                    )
                })?;
            s.flood_interval = Duration::from_millis(ms);
        }
        Ok(Some(s))
    }
}

/// State the adapter and its live connection share.
pub(crate) struct Shared {
    queue: queue::LineQueue,
    nick: Mutex<String>,
    connected: AtomicBool,
    /// Start time (unix ms) in generated message ids, so ids stay unique across restarts.
    epoch: u128,
    seq: AtomicU64,
}

impl Shared {
    fn set_nick(&self, nick: &str) {
        *self.nick.lock().unwrap_or_else(|p| p.into_inner()) = nick.to_string();
    }

    fn nick(&self) -> String {
        self.nick.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_connected(&self, up: bool) {
        self.connected.store(up, Ordering::SeqCst);
    }

    fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::SeqCst) + 1
    }
}

/// The IRC [`PlatformAdapter`].
pub struct IrcAdapter {
    settings: IrcSettings,
    tls: Option<Arc<rustls::ClientConfig>>,
    shared: Arc<Shared>,
    send_only: bool,
}

impl IrcAdapter {
    /// An adapter for `settings`. Connects nothing yet. Errors: the TLS configuration cannot
    /// be built (`IRC_TLS_CA_FILE` unreadable or without certificates, no trusted roots).
    pub fn new(settings: IrcSettings) -> Result<IrcAdapter, PlatformError> {
        let tls = if settings.tls {
            Some(Arc::new(tls_config(settings.tls_ca_file.as_deref())?))
        } else {
            None
        };
        let epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        let shared = Arc::new(Shared {
            queue: queue::LineQueue::default(),
            nick: Mutex::new(settings.nickname.clone()),
            connected: AtomicBool::new(false),
            epoch,
            seq: AtomicU64::new(0),
        });
        Ok(IrcAdapter {
            settings,
            tls,
            shared,
            send_only: false,
        })
    }

    /// An adapter for sending only, where no gateway runs the connection (`hermes send`,
    /// cron outside the gateway, `messages_send`): each [`PlatformAdapter::send`] opens its
    /// own short connection as `<nick>-cron` (so it never takes the live gateway's nick, as
    /// Python Hermes' standalone sender does), joins the target channel, sends, and quits.
    pub fn send_only(settings: IrcSettings) -> Result<IrcAdapter, PlatformError> {
        let mut adapter = IrcAdapter::new(settings)?;
        adapter.send_only = true;
        Ok(adapter)
    }

    /// Queues the lines of `text` for `chat` and waits until they were written.
    async fn deliver(&self, chat: &str, text: &str) -> Result<SentMessage, PlatformError> {
        let budget = split::privmsg_budget(self.shared.nick().len(), chat);
        let lines: Vec<String> = split::split_lines(text, budget)
            .into_iter()
            .map(|l| format!("PRIVMSG {chat} :{l}"))
            .collect();
        let count = lines.len();
        let flood_time = self.settings.flood_interval.saturating_mul(count as u32);
        let (id, done) = self.shared.queue.push(lines);
        match tokio::time::timeout(self.settings.send_timeout + flood_time, done).await {
            Ok(Ok(())) => Ok(SentMessage {
                message_id: format!("{}-out-{id}", self.shared.epoch),
            }),
            _ => {
                let unsent = self.shared.queue.withdraw(id);
                Err(PlatformError::transport(
                    PLATFORM,
                    format!("not connected: {unsent} of {count} lines to {chat} not sent"),
                ))
            }
        }
    }

    /// One short connection for one message (see [`IrcAdapter::send_only`]).
    async fn deliver_standalone(
        &self,
        chat: &str,
        text: &str,
    ) -> Result<SentMessage, PlatformError> {
        let mut settings = self.settings.clone();
        let base: String = settings.nickname.chars().take(24).collect();
        settings.nickname = format!("{base}-cron");
        settings.username = settings.nickname.clone();
        settings.nickserv_password = None;
        settings.channels = if proto::is_channel(chat) {
            vec![chat.to_string()]
        } else {
            Vec::new()
        };
        settings.send_timeout = settings.connect_timeout + settings.register_timeout;
        let once = Arc::new(IrcAdapter {
            settings,
            tls: self.tls.clone(),
            shared: Arc::new(Shared {
                queue: queue::LineQueue::default(),
                nick: Mutex::new(String::new()),
                connected: AtomicBool::new(false),
                epoch: self.shared.epoch,
                seq: AtomicU64::new(0),
            }),
            send_only: false,
        });
        let (tx, mut rx) = mpsc::channel(16);
        let cancel = CancellationToken::new();
        let (runner, stop) = (once.clone(), cancel.clone());
        let mut task = tokio::spawn(async move { runner.run(tx, stop).await });
        // Messages to the short-lived nick are not for the agent.
        tokio::spawn(async move { while rx.recv().await.is_some() {} });
        let result = tokio::select! {
            r = once.deliver(chat, text) => r,
            ended = &mut task => Err(match ended {
                Ok(Err(e)) => e,
                _ => PlatformError::transport(PLATFORM, "the connection ended before sending"),
            }),
        };
        cancel.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        result
    }

    /// True while registered and joined (for status displays and tests).
    pub fn is_connected(&self) -> bool {
        self.shared.connected.load(Ordering::SeqCst)
    }

    /// Our nick on the server now (the configured one, or a fallback when it was taken).
    pub fn current_nick(&self) -> String {
        self.shared.nick()
    }

    /// Lines waiting to be written (throttled or disconnected).
    pub fn queued_lines(&self) -> usize {
        self.shared.queue.len()
    }

    /// The settings.
    pub fn settings(&self) -> &IrcSettings {
        &self.settings
    }
}

/// rustls (ring) trusting the system roots plus the certificates of `extra` (PEM).
fn tls_config(extra: Option<&Path>) -> Result<rustls::ClientConfig, PlatformError> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for cert in native.certs {
        let _ = roots.add(cert);
    }
    if let Some(path) = extra {
        use rustls::pki_types::pem::PemObject as _;
        let certs = rustls::pki_types::CertificateDer::pem_file_iter(path)
            .map_err(|e| bad("IRC_TLS_CA_FILE", format!("{}: {e}", path.display())))?;
        let mut added = 0;
        for cert in certs {
            let cert =
                cert.map_err(|e| bad("IRC_TLS_CA_FILE", format!("{}: {e}", path.display())))?;
            roots
                .add(cert)
                .map_err(|e| bad("IRC_TLS_CA_FILE", format!("{}: {e}", path.display())))?;
            added += 1;
        }
        if added == 0 {
            return Err(bad(
                "IRC_TLS_CA_FILE",
                format!("{}: no certificates", path.display()),
            ));
        }
    }
    if roots.is_empty() {
        return Err(bad(
            "IRC_USE_TLS",
            "no trusted root certificates on this system (set IRC_TLS_CA_FILE)",
        ));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("IRC_USE_TLS", e))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

#[async_trait::async_trait]
impl PlatformAdapter for IrcAdapter {
    fn name(&self) -> &str {
        PLATFORM
    }

    fn limits(&self) -> PlatformLimits {
        PlatformLimits {
            max_message_len: MAX_MESSAGE_CHARS,
            length_unit: LengthUnit::Chars,
            markup: Markup::Plain,
            supports_edit: false,
        }
    }

    async fn run(
        &self,
        inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        let mut backoff =
            Backoff::new(self.settings.reconnect_initial, self.settings.reconnect_max);
        loop {
            let end = conn::run(
                &self.settings,
                self.tls.as_ref(),
                &self.shared,
                &inbound,
                &cancel,
            )
            .await;
            self.shared.set_connected(false);
            match end? {
                conn::End::Stopped => return Ok(()),
                conn::End::Dropped { reason, registered } => {
                    if registered {
                        backoff.reset();
                    }
                    let delay = backoff.next_delay();
                    tracing::warn!(platform = PLATFORM, server = %self.settings.server, %reason, retry_in_ms = delay.as_millis() as u64, "IRC connection lost; reconnecting");
                    if !sleep_or_cancel(delay, &cancel).await {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Queues `text` as IRC lines to `target.chat_id` (a channel or a nick) and waits until
    /// the connection wrote them (flood control and reconnects included). Errors: a chat id
    /// that is not one word (`Rejected`); still unsent after [`IrcSettings::send_timeout`]
    /// (`Transport`; the unsent lines are taken back, so nothing is sent later).
    async fn send(&self, target: &ChatTarget, text: &str) -> Result<SentMessage, PlatformError> {
        let chat = target.chat_id.as_str();
        if !proto::is_safe_param(chat) || chat.contains(',') {
            return Err(PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail: format!("`{chat}` is not a channel or nick"),
            });
        }
        if self.send_only {
            self.deliver_standalone(chat, text).await
        } else {
            self.deliver(chat, text).await
        }
    }

    async fn edit(
        &self,
        _target: &ChatTarget,
        _message: &SentMessage,
        _text: &str,
    ) -> Result<(), PlatformError> {
        Err(PlatformError::Unsupported {
            platform: PLATFORM.into(),
            what: "editing messages (IRC has no edits)".into(),
        })
    }

    /// IRC carries no files: sends the caption and a line saying which file was not sent.
    async fn send_file(
        &self,
        target: &ChatTarget,
        path: &Path,
        caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut text = caption.unwrap_or_default().to_string();
        text.push_str(&format!(
            "\n(file {name} not sent: IRC has no file transfer)"
        ));
        self.send(target, &text).await
    }

    async fn typing(&self, _target: &ChatTarget) -> Result<(), PlatformError> {
        Ok(())
    }

    /// One nick, one connection: replicas run the connection on the leader only.
    fn single_connection(&self) -> bool {
        true
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
    fn from_env_reads_python_hermes_names_and_defaults() {
        assert!(
            IrcSettings::from_env(&env(&[("IRC_SERVER", "irc.x")]))
                .unwrap()
                .is_none()
        );
        let s = IrcSettings::from_env(&env(&[
            ("IRC_SERVER", "irc.libera.chat"),
            ("IRC_CHANNEL", "#a, #b,"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((s.port, s.tls), (6697, true));
        assert_eq!(s.nickname, DEFAULT_NICKNAME);
        assert_eq!(s.channels, vec!["#a", "#b"]);
        assert_eq!(
            (s.flood_burst, s.flood_interval),
            (4, Duration::from_secs(1))
        );
        let s = IrcSettings::from_env(&env(&[
            ("IRC_SERVER", "irc.x"),
            ("IRC_CHANNEL", "#a"),
            ("IRC_USE_TLS", "false"),
            ("IRC_NICKNAME", "mybot"),
            ("IRC_SASL_PASSWORD", "pw"),
            ("IRC_NICKSERV_PASSWORD", "ns\r\nQUIT"),
            ("IRC_FLOOD_BURST", "2"),
            ("IRC_FLOOD_INTERVAL_MS", "250"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((s.port, s.tls), (6667, false));
        assert_eq!(s.nickname, "mybot");
        assert_eq!(s.sasl_password.as_deref(), Some("pw"));
        assert_eq!(
            s.nickserv_password.as_deref(),
            Some("nsQUIT"),
            "no line injection"
        );
        assert_eq!(
            (s.flood_burst, s.flood_interval),
            (2, Duration::from_millis(250))
        );
        let shown = format!("{s:?}");
        assert!(
            !shown.contains("pw\"") && !shown.contains("nsQUIT"),
            "{shown}"
        );
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (k, v) in [
            ("IRC_PORT", "70000"),
            ("IRC_USE_TLS", "maybe"),
            ("IRC_NICKNAME", "two words"),
            ("IRC_FLOOD_BURST", "0"),
            ("IRC_FLOOD_INTERVAL_MS", "soon"),
            ("IRC_CHANNEL", "#ok, bad channel"),
        ] {
            let mut e = env(&[("IRC_SERVER", "irc.x"), ("IRC_CHANNEL", "#a")]);
            e.insert(k.into(), v.into());
            let err = IrcSettings::from_env(&e).unwrap_err().to_string();
            assert!(err.contains(k), "{k}: {err}");
        }
    }

    #[tokio::test]
    async fn send_rejects_targets_that_would_inject_and_edits_are_unsupported() {
        let mut s = IrcSettings::new("127.0.0.1", vec![]);
        s.tls = false;
        let a = IrcAdapter::new(s).unwrap();
        for bad in ["#a b", "x\r\nQUIT", "", "#a,#b", ":x"] {
            let t = ChatTarget {
                chat_id: bad.into(),
                thread_id: None,
                reply_to: None,
            };
            assert!(matches!(
                a.send(&t, "hi").await,
                Err(PlatformError::Rejected { .. })
            ));
        }
        assert!(!a.limits().supports_edit);
        assert_eq!(a.limits().markup, Markup::Plain);
    }
}
