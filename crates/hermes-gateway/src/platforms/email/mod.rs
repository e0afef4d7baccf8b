//! Email adapter (issue 22 item 4): IMAP in ([`imap`]: IDLE, or polling), SMTP out (lettre,
//! STARTTLS or implicit TLS over rustls with ring, the workspace's only TLS stack).
//!
//! Settings use Python Hermes' names (its `plugins/platforms/email` adapter):
//! `EMAIL_ADDRESS`, `EMAIL_PASSWORD`, `EMAIL_IMAP_HOST`, `EMAIL_IMAP_PORT` (993, implicit
//! TLS), `EMAIL_SMTP_HOST`, `EMAIL_SMTP_PORT` (587 with STARTTLS; 465 is implicit TLS),
//! `EMAIL_POLL_INTERVAL` (15 s, when the server has no IDLE), `EMAIL_TRUST_FROM_HEADER`,
//! `EMAIL_AUTHSERV_ID`; access and the cron home are the gateway's `EMAIL_ALLOWED_USERS`,
//! `EMAIL_ALLOW_ALL_USERS` and `EMAIL_HOME_ADDRESS`. hermes adds `EMAIL_TLS_CA_FILE` (a PEM
//! CA trusted besides the system roots, for IMAP and SMTP) and `EMAIL_IMAP_IDLE` (default
//! true; `false` polls even where IDLE exists).
//!
//! Conversations: the chat is the sender's address (a DM, as in Python Hermes) and the
//! thread is the email thread ([`state::MailState::resolve_thread`] over `Message-ID`,
//! `In-Reply-To` and `References`), so each thread is its own session. Replies go to the
//! `From:` address with `Re: <subject>`, `In-Reply-To` and `References`. Who counts as the
//! sender and which mail is never answered: [`inbound`]. Email has no edits: an answer is
//! one mail (an answer past [`MAX_MESSAGE_CHARS`] is split into numbered mails).

pub mod imap;
pub mod inbound;
pub mod outbound;
pub mod state;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lettre::AsyncTransport as _;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, Tokio1Executor};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::PlatformError;
use crate::platform::{
    Attachment, AttachmentKind, ChatTarget, ChatType, InboundMessage, LengthUnit, Markup,
    MessageSource, PlatformAdapter, PlatformLimits, SentMessage,
};
use crate::platforms::backoff::{Backoff, sleep_or_cancel};
use inbound::{SenderPolicy, Verdict, strip_reply_prefix};
use state::StateFile;

/// Platform name in config, session keys and logs.
pub const PLATFORM: &str = "email";
/// Longest answer in one mail, in chars (Python Hermes' `MAX_MESSAGE_LENGTH`).
pub const MAX_MESSAGE_CHARS: usize = 50_000;
/// Subject of mail that starts no thread (cron results), as in Python Hermes.
pub const DEFAULT_SUBJECT: &str = "Hermes Agent";
/// Largest attachment saved or sent, in bytes.
pub const DEFAULT_MAX_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;
/// Largest inbound mail read whole, in bytes (larger ones: headers only, with a note).
pub const DEFAULT_MAX_MESSAGE_BYTES: u64 = 30 * 1024 * 1024;

/// Model-visible note for an attachment over the cap (`{name}`, `{size}`, `{max}`).
const TOO_LARGE: &str = include_str!("../../../prompts/attachment_too_large.md");

/// Attachment kind from a MIME type (`image/*`, `audio/*`, `video/*`, else a document).
fn kind_of(mime: &str) -> AttachmentKind {
    match mime.split('/').next() {
        Some("image") => AttachmentKind::Image,
        Some("audio") => AttachmentKind::Audio,
        Some("video") => AttachmentKind::Video,
        _ => AttachmentKind::Document,
    }
}

/// How to reach the mailbox and the SMTP server.
#[derive(Clone)]
pub struct EmailSettings {
    /// The agent's address (`EMAIL_ADDRESS`); also the IMAP and SMTP login.
    pub address: String,
    /// Password or app password (`EMAIL_PASSWORD`).
    pub password: String,
    /// IMAP host (`EMAIL_IMAP_HOST`); also the TLS server name.
    pub imap_host: String,
    /// IMAP port (`EMAIL_IMAP_PORT`, 993; implicit TLS).
    pub imap_port: u16,
    /// SMTP host (`EMAIL_SMTP_HOST`); also the TLS server name.
    pub smtp_host: String,
    /// SMTP port (`EMAIL_SMTP_PORT`, 587).
    pub smtp_port: u16,
    /// TLS from the first byte (port 465, as Python Hermes decides) instead of a required
    /// `STARTTLS`.
    pub smtp_implicit_tls: bool,
    /// Wait for new mail with IDLE where the server offers it (`EMAIL_IMAP_IDLE`, true).
    pub use_idle: bool,
    /// Time between checks without IDLE (`EMAIL_POLL_INTERVAL`, 15 s).
    pub poll_interval: Duration,
    /// Re-issue IDLE after this long (10 min; RFC 2177 asks for less than 29).
    pub idle_timeout: Duration,
    /// Require an authenticated `From:` ([`inbound`]; off with `EMAIL_TRUST_FROM_HEADER=true`
    /// or when everyone is allowed).
    pub require_authenticated_sender: bool,
    /// Trust only `Authentication-Results` of this authserv-id (`EMAIL_AUTHSERV_ID`).
    pub authserv_id: Option<String>,
    /// Extra PEM CA certificates (`EMAIL_TLS_CA_FILE`).
    pub tls_ca_file: Option<PathBuf>,
    /// Where inbound attachments are saved.
    pub media_dir: PathBuf,
    /// The state file (UID cursor, threads); `None` keeps it in memory.
    pub state_file: Option<PathBuf>,
    /// Largest attachment saved or sent, bytes.
    pub max_attachment_bytes: u64,
    /// Largest inbound mail read whole, bytes.
    pub max_message_bytes: u64,
    /// TCP connect and TLS handshake timeout, and the SMTP command timeout (30 s).
    pub connect_timeout: Duration,
    /// First reconnect delay (2 s, doubling) …
    pub reconnect_initial: Duration,
    /// … up to this (5 min).
    pub reconnect_max: Duration,
}

hermes_protocol::debug_redacted!(EmailSettings {
    secret: [password],
    shown: [
        address,
        imap_host,
        imap_port,
        smtp_host,
        smtp_port,
        smtp_implicit_tls,
        use_idle,
        poll_interval,
        idle_timeout,
        require_authenticated_sender,
        authserv_id,
        tls_ca_file,
        media_dir,
        state_file,
        max_attachment_bytes,
        max_message_bytes,
        connect_timeout,
        reconnect_initial,
        reconnect_max
    ],
});

pub(crate) fn bad(var: &str, detail: impl std::fmt::Display) -> PlatformError {
    PlatformError::Rejected {
        platform: PLATFORM.into(),
        detail: format!("{var}: {detail}"),
    }
}

fn env_flag(var: &str, v: &str) -> Result<bool, PlatformError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" | "" => Ok(false),
        _ => Err(bad(var, format!("`{v}` is not true/false"))),
    }
}

impl EmailSettings {
    /// Settings for `address` with the defaults above, saving attachments in `media_dir`.
    pub fn new(
        address: impl Into<String>,
        password: impl Into<String>,
        imap_host: impl Into<String>,
        smtp_host: impl Into<String>,
        media_dir: impl Into<PathBuf>,
    ) -> EmailSettings {
        EmailSettings {
            address: address.into(),
            password: password.into(),
            imap_host: imap_host.into(),
            imap_port: 993,
            smtp_host: smtp_host.into(),
            smtp_port: 587,
            smtp_implicit_tls: false,
            use_idle: true,
            poll_interval: Duration::from_secs(15),
            idle_timeout: Duration::from_secs(600),
            require_authenticated_sender: true,
            authserv_id: None,
            tls_ca_file: None,
            media_dir: media_dir.into(),
            state_file: None,
            max_attachment_bytes: DEFAULT_MAX_ATTACHMENT_BYTES,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            connect_timeout: Duration::from_secs(30),
            reconnect_initial: Duration::from_secs(2),
            reconnect_max: Duration::from_secs(300),
        }
    }

    /// Reads the settings from the environment merged over `.env` (names in the module
    /// docs). `Ok(None)` unless `EMAIL_ADDRESS`, `EMAIL_PASSWORD`, `EMAIL_IMAP_HOST` and
    /// `EMAIL_SMTP_HOST` are all set (Python Hermes' check; blank counts as unset). Errors
    /// name the variable: an address without `@`, a bad port, number or boolean.
    pub fn from_env(
        env: &BTreeMap<String, String>,
        media_dir: impl Into<PathBuf>,
    ) -> Result<Option<EmailSettings>, PlatformError> {
        let get = |k: &str| env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let (Some(address), Some(imap), Some(smtp)) = (
            get("EMAIL_ADDRESS"),
            get("EMAIL_IMAP_HOST"),
            get("EMAIL_SMTP_HOST"),
        ) else {
            return Ok(None);
        };
        // The password is taken as written (spaces may be part of it), CR/LF removed.
        let Some(password) = env
            .get("EMAIL_PASSWORD")
            .map(|p| p.replace(['\r', '\n'], ""))
            .filter(|p| !p.trim().is_empty())
        else {
            return Ok(None);
        };
        if !address.contains('@') || address.contains(char::is_whitespace) {
            return Err(bad(
                "EMAIL_ADDRESS",
                format!("`{address}` is not an email address"),
            ));
        }
        let mut s = EmailSettings::new(address, password, imap, smtp, media_dir);
        let port = |k: &str, default: u16| match get(k) {
            Some(v) => v
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| bad(k, format!("`{v}` is not a port (1-65535)"))),
            None => Ok(default),
        };
        s.imap_port = port("EMAIL_IMAP_PORT", 993)?;
        s.smtp_port = port("EMAIL_SMTP_PORT", 587)?;
        s.smtp_implicit_tls = s.smtp_port == 465;
        if let Some(v) = get("EMAIL_POLL_INTERVAL") {
            let secs = v
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=86_400).contains(n))
                .ok_or_else(|| {
                    bad(
                        "EMAIL_POLL_INTERVAL",
                        format!("`{v}` is not a number of seconds (1-86400)"),
                    )
                })?;
            s.poll_interval = Duration::from_secs(secs);
        }
        if let Some(v) = get("EMAIL_IMAP_IDLE") {
            s.use_idle = env_flag("EMAIL_IMAP_IDLE", v)?;
        }
        let trust = match get("EMAIL_TRUST_FROM_HEADER") {
            Some(v) => env_flag("EMAIL_TRUST_FROM_HEADER", v)?,
            None => false,
        };
        let mut allow_all = false;
        for k in ["EMAIL_ALLOW_ALL_USERS", "GATEWAY_ALLOW_ALL_USERS"] {
            if let Some(v) = get(k) {
                allow_all |= env_flag(k, v)?;
            }
        }
        s.require_authenticated_sender = !trust && !allow_all;
        s.authserv_id = get("EMAIL_AUTHSERV_ID").map(str::to_ascii_lowercase);
        s.tls_ca_file = get("EMAIL_TLS_CA_FILE").map(PathBuf::from);
        Ok(Some(s))
    }
}

/// The email [`PlatformAdapter`].
pub struct EmailAdapter {
    settings: EmailSettings,
    tls: Arc<rustls::ClientConfig>,
    smtp: AsyncSmtpTransport<Tokio1Executor>,
    state: Arc<StateFile>,
    policy: SenderPolicy,
    connected: AtomicBool,
    send_only: bool,
}

impl EmailAdapter {
    /// An adapter for `settings`; connects nothing yet. Errors: `EMAIL_TLS_CA_FILE`
    /// unreadable or without certificates, no trusted roots, a host that is no TLS name.
    pub fn new(settings: EmailSettings) -> Result<EmailAdapter, PlatformError> {
        let tls = imap::tls_config(settings.tls_ca_file.as_deref())?;
        let mut params = TlsParameters::builder(settings.smtp_host.clone());
        if let Some(path) = &settings.tls_ca_file {
            let pem = std::fs::read(path)
                .map_err(|e| bad("EMAIL_TLS_CA_FILE", format!("{}: {e}", path.display())))?;
            let cert = Certificate::from_pem(&pem)
                .map_err(|e| bad("EMAIL_TLS_CA_FILE", format!("{}: {e}", path.display())))?;
            params = params.add_root_certificate(cert);
        }
        let params = params
            .build_rustls()
            .map_err(|e| bad("EMAIL_SMTP_HOST", e))?;
        let smtp_tls = if settings.smtp_implicit_tls {
            Tls::Wrapper(params)
        } else {
            Tls::Required(params)
        };
        let smtp = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&settings.smtp_host)
            .port(settings.smtp_port)
            .tls(smtp_tls)
            .credentials(Credentials::new(
                settings.address.clone(),
                settings.password.clone(),
            ))
            .timeout(Some(settings.connect_timeout))
            .build();
        let policy = SenderPolicy {
            own_address: settings.address.to_ascii_lowercase(),
            require_authenticated: settings.require_authenticated_sender,
            authserv_id: settings.authserv_id.clone(),
        };
        Ok(EmailAdapter {
            state: Arc::new(StateFile::open(settings.state_file.clone())),
            settings,
            tls,
            smtp,
            policy,
            connected: AtomicBool::new(false),
            send_only: false,
        })
    }

    /// An adapter for sending only (cron outside the gateway, `messages_send`): it never
    /// writes the state file, which belongs to the gateway that reads the mailbox.
    pub fn send_only(settings: EmailSettings) -> Result<EmailAdapter, PlatformError> {
        let mut adapter = EmailAdapter::new(settings)?;
        adapter.send_only = true;
        Ok(adapter)
    }

    /// True while the IMAP connection is up and INBOX selected.
    pub fn is_connected(&self) -> bool {
        self.connected.load(Ordering::SeqCst)
    }

    fn set_connected(&self, up: bool) {
        self.connected.store(up, Ordering::SeqCst);
    }

    /// The settings.
    pub fn settings(&self) -> &EmailSettings {
        &self.settings
    }

    /// The inbound message for the mail `raw` (UID `uid` of a mailbox with `validity`), or
    /// `None` when it is not for the agent (logged). `oversize`: `raw` holds only the
    /// headers of a mail of that many bytes.
    async fn to_inbound(
        &self,
        raw: &[u8],
        validity: u32,
        uid: u32,
        oversize: Option<u64>,
    ) -> Option<InboundMessage> {
        let mail = match inbound::classify(raw, &self.policy) {
            Verdict::Accept(m) => m,
            Verdict::Skip(why) => {
                tracing::info!(platform = PLATFORM, uid, reason = %why, "email skipped");
                return None;
            }
        };
        let message_id = mail
            .message_id
            .clone()
            .unwrap_or_else(|| format!("uid-{validity}-{uid}"));
        let thread = self.state.with(|s| {
            s.resolve_thread(&mail.from, &message_id, &mail.in_reply_to, &mail.references)
        });
        let subject = strip_reply_prefix(&mail.subject).to_string();
        self.state
            .with(|s| s.record(&thread, &mail.from, &subject, &message_id));
        let mut text = mail.body.clone();
        if !mail.subject.is_empty() && strip_reply_prefix(&mail.subject) == mail.subject.trim() {
            text = format!("[Subject: {}]\n\n{text}", mail.subject);
        }
        let mut notes = Vec::new();
        if let Some(size) = oversize {
            notes.push(format!(
                "[this email is {size} bytes, over the {}-byte limit: only its headers were read]",
                self.settings.max_message_bytes
            ));
        }
        let mut attachments = Vec::new();
        for (i, f) in mail.files.iter().enumerate() {
            let size = f.bytes.len() as u64;
            let name = format!("{uid}-{i}-{}", f.name);
            match crate::delivery::save_inbound(
                &self.settings.media_dir,
                &name,
                &f.bytes,
                self.settings.max_attachment_bytes,
            )
            .await
            {
                Ok(path) => attachments.push(Attachment {
                    kind: kind_of(&f.mime_type),
                    path,
                    file_name: Some(f.name.clone()),
                    mime_type: Some(f.mime_type.clone()),
                    size_bytes: size,
                }),
                Err(crate::delivery::SaveError::TooLarge { size, max }) => notes.push(
                    TOO_LARGE
                        .trim()
                        .replace("{name}", &f.name)
                        .replace("{size}", &size.to_string())
                        .replace("{max}", &max.to_string()),
                ),
                Err(e) => {
                    tracing::warn!(platform = PLATFORM, file = %f.name, error = %e, "email attachment not saved");
                    notes.push(format!("[attachment {} could not be saved]", f.name));
                }
            }
        }
        for n in notes {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&n);
        }
        if text.trim().is_empty() && attachments.is_empty() {
            text = "(empty email)".into();
        }
        tracing::info!(platform = PLATFORM, uid, user = %mail.from, thread = %thread, len = text.len(), files = attachments.len(), "email received");
        Some(InboundMessage {
            source: MessageSource {
                platform: PLATFORM.into(),
                chat_type: ChatType::Dm,
                chat_id: Some(mail.from.clone()),
                thread_id: Some(thread),
                user_id: Some(mail.from.clone()),
                user_name: Some(mail.name.clone().unwrap_or_else(|| mail.from.clone())),
            },
            message_id: Some(message_id),
            text,
            reply_to: mail.in_reply_to.first().cloned(),
            reply_to_text: None,
            attachments,
        })
    }

    /// A fresh `Message-ID` (without brackets) in our address's domain.
    fn new_message_id(&self) -> String {
        let domain = self
            .settings
            .address
            .rsplit_once('@')
            .map(|(_, d)| d)
            .filter(|d| !d.is_empty())
            .unwrap_or("localhost");
        format!("hermes-{:016x}@{domain}", rand::random::<u64>())
    }

    /// Builds and sends one mail to `target` with `markdown` and `files`.
    async fn deliver(
        &self,
        target: &ChatTarget,
        markdown: &str,
        files: Vec<(String, Vec<u8>)>,
    ) -> Result<SentMessage, PlatformError> {
        let to = target.chat_id.trim().to_ascii_lowercase();
        let ctx = target
            .thread_id
            .as_ref()
            .and_then(|t| self.state.with(|s| s.threads.get(t).cloned()));
        let subject = match &ctx {
            Some(c) if !c.subject.is_empty() => format!("Re: {}", c.subject),
            Some(_) => format!("Re: {DEFAULT_SUBJECT}"),
            None => DEFAULT_SUBJECT.to_string(),
        };
        let in_reply_to = ctx
            .as_ref()
            .and_then(|c| c.last_message_id.clone())
            .or_else(|| {
                target
                    .reply_to
                    .clone()
                    .filter(|r| r.contains('@') && ctx.is_some())
            });
        let mut references = ctx
            .as_ref()
            .map(|c| c.references.clone())
            .unwrap_or_default();
        if let Some(id) = &in_reply_to
            && !references.contains(id)
        {
            references.push(id.clone());
        }
        let draft = outbound::Draft {
            from: self.settings.address.clone(),
            to: to.clone(),
            subject: subject.clone(),
            message_id: self.new_message_id(),
            in_reply_to,
            references,
            markdown: markdown.to_string(),
            files,
        };
        let message = outbound::build(&draft).map_err(|detail| PlatformError::Rejected {
            platform: PLATFORM.into(),
            detail,
        })?;
        self.smtp.send(message).await.map_err(|e| {
            if e.is_permanent() {
                PlatformError::Rejected {
                    platform: PLATFORM.into(),
                    detail: format!("SMTP: {e}"),
                }
            } else {
                PlatformError::transport(PLATFORM, format!("SMTP: {e}"))
            }
        })?;
        tracing::info!(platform = PLATFORM, to = %to, len = markdown.len(), "email sent");
        if let (Some(thread), Some(c)) = (&target.thread_id, &ctx) {
            self.state
                .with(|s| s.record(thread, &c.address, &c.subject, &draft.message_id));
            if !self.send_only {
                self.state.save().await;
            }
        }
        Ok(SentMessage {
            message_id: draft.message_id,
        })
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for EmailAdapter {
    fn name(&self) -> &str {
        PLATFORM
    }

    /// Replies arrive as CommonMark-compatible Markdown (the Discord renderer emits only
    /// CommonMark constructs plus `~~strike~~`); the adapter turns it into text and HTML.
    fn limits(&self) -> PlatformLimits {
        PlatformLimits {
            max_message_len: MAX_MESSAGE_CHARS,
            length_unit: LengthUnit::Chars,
            markup: Markup::DiscordMarkdown,
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
            let end = imap::run(self, &inbound, &cancel).await;
            self.set_connected(false);
            match end? {
                imap::End::Stopped => return Ok(()),
                imap::End::Dropped { reason, ready } => {
                    if ready {
                        backoff.reset();
                    }
                    let delay = backoff.next_delay();
                    tracing::warn!(platform = PLATFORM, host = %self.settings.imap_host, %reason, retry_in_ms = delay.as_millis() as u64, "IMAP connection lost; reconnecting");
                    if !sleep_or_cancel(delay, &cancel).await {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Sends `text` (Markdown) as one mail to the address `target.chat_id`, threaded into
    /// `target.thread_id` when it is a known thread (`Re: <subject>`), else with the subject
    /// `Hermes Agent` (cron results). Errors: not an address or refused by the server for
    /// good (`Rejected`), a connection problem (`Transport`).
    async fn send(&self, target: &ChatTarget, text: &str) -> Result<SentMessage, PlatformError> {
        self.deliver(target, text, Vec::new()).await
    }

    async fn edit(
        &self,
        _target: &ChatTarget,
        _message: &SentMessage,
        _text: &str,
    ) -> Result<(), PlatformError> {
        Err(PlatformError::Unsupported {
            platform: PLATFORM.into(),
            what: "editing messages (a sent email cannot change)".into(),
        })
    }

    /// Sends `path` as an attachment with `caption` as the text. A file over
    /// [`EmailSettings::max_attachment_bytes`] is not attached; the mail says so instead.
    async fn send_file(
        &self,
        target: &ChatTarget,
        path: &Path,
        caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "file".into());
        let mut text = caption.unwrap_or_default().to_string();
        let size = tokio::fs::metadata(path)
            .await
            .map(|m| m.len())
            .map_err(|e| PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail: format!("{}: {e}", path.display()),
            })?;
        let max = self.settings.max_attachment_bytes;
        if size > max {
            text.push_str(&format!(
                "\n\n(file {name} not attached: it is {size} bytes, over the {max}-byte limit)"
            ));
            return self.deliver(target, text.trim(), Vec::new()).await;
        }
        let bytes = tokio::fs::read(path)
            .await
            .map_err(|e| PlatformError::Rejected {
                platform: PLATFORM.into(),
                detail: format!("{}: {e}", path.display()),
            })?;
        if text.trim().is_empty() {
            text = format!("Attached: {name}");
        }
        self.deliver(target, &text, vec![(name, bytes)]).await
    }

    async fn typing(&self, _target: &ChatTarget) -> Result<(), PlatformError> {
        Ok(())
    }

    /// One mailbox cursor: replicas read the mailbox on the leader only.
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

    const BASE: &[(&str, &str)] = &[
        ("EMAIL_ADDRESS", "bot@example.org"),
        ("EMAIL_PASSWORD", "SECRET pw"),
        ("EMAIL_IMAP_HOST", "imap.example.org"),
        ("EMAIL_SMTP_HOST", "smtp.example.org"),
    ];

    #[test]
    fn from_env_reads_python_hermes_names_and_defaults() {
        for missing in BASE.iter().map(|(k, _)| *k) {
            let e: Vec<_> = BASE
                .iter()
                .copied()
                .filter(|(k, _)| *k != missing)
                .collect();
            assert!(
                EmailSettings::from_env(&env(&e), "/m").unwrap().is_none(),
                "{missing}"
            );
        }
        let s = EmailSettings::from_env(&env(BASE), "/m").unwrap().unwrap();
        assert_eq!((s.imap_port, s.smtp_port), (993, 587));
        assert!(!s.smtp_implicit_tls, "587: STARTTLS");
        assert_eq!(s.poll_interval, Duration::from_secs(15));
        assert_eq!(s.password, "SECRET pw");
        assert!(s.use_idle && s.require_authenticated_sender);
        let shown = format!("{s:?}");
        assert!(
            !shown.contains("SECRET") && shown.contains("<redacted>"),
            "{shown}"
        );
        let mut e = env(BASE);
        e.insert("EMAIL_SMTP_PORT".into(), "465".into());
        e.insert("EMAIL_POLL_INTERVAL".into(), "60".into());
        e.insert("EMAIL_TRUST_FROM_HEADER".into(), "true".into());
        e.insert("EMAIL_IMAP_IDLE".into(), "no".into());
        e.insert("EMAIL_AUTHSERV_ID".into(), "MX.example.org".into());
        let s = EmailSettings::from_env(&e, "/m").unwrap().unwrap();
        assert_eq!((s.smtp_port, s.smtp_implicit_tls), (465, true));
        assert_eq!(s.poll_interval, Duration::from_secs(60));
        assert!(!s.require_authenticated_sender && !s.use_idle);
        assert_eq!(s.authserv_id.as_deref(), Some("mx.example.org"));
        let mut e = env(BASE);
        e.insert("GATEWAY_ALLOW_ALL_USERS".into(), "1".into());
        let s = EmailSettings::from_env(&e, "/m").unwrap().unwrap();
        assert!(
            !s.require_authenticated_sender,
            "everyone allowed: identity is moot"
        );
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (k, v) in [
            ("EMAIL_ADDRESS", "not-an-address"),
            ("EMAIL_IMAP_PORT", "0"),
            ("EMAIL_SMTP_PORT", "99999"),
            ("EMAIL_POLL_INTERVAL", "soon"),
            ("EMAIL_TRUST_FROM_HEADER", "maybe"),
            ("EMAIL_IMAP_IDLE", "2"),
        ] {
            let mut e = env(BASE);
            e.insert(k.into(), v.into());
            let err = EmailSettings::from_env(&e, "/m").unwrap_err().to_string();
            assert!(err.contains(k), "{k}: {err}");
        }
    }

    #[tokio::test]
    async fn edits_are_unsupported_and_bad_recipients_are_rejected() {
        let s = EmailSettings::from_env(&env(BASE), "/m").unwrap().unwrap();
        let a = EmailAdapter::new(s).unwrap();
        assert!(!a.limits().supports_edit);
        assert_eq!(a.limits().max_message_len, MAX_MESSAGE_CHARS);
        let t = ChatTarget {
            chat_id: "not an address".into(),
            thread_id: None,
            reply_to: None,
        };
        assert!(matches!(
            a.send(&t, "hi").await,
            Err(PlatformError::Rejected { .. })
        ));
        let sent = SentMessage {
            message_id: "x".into(),
        };
        assert!(matches!(
            a.edit(&t, &sent, "x").await,
            Err(PlatformError::Unsupported { .. })
        ));
    }
}
