//! One connection to the IRC server: connect (TCP, or TLS through rustls), register, answer
//! PINGs, join the channels, forward addressed messages, and write queued lines under flood
//! control — until the connection drops, the gateway stops, or the server refuses us for a
//! reason retrying cannot fix.
//!
//! Registration (RFC 2812 §3.1 and IRCv3 capability negotiation, `CAP LS 302`): `PASS` when a
//! server password is set, `CAP LS 302`, `NICK`, `USER`; the capabilities we want from the
//! offered list (`sasl` when SASL is configured, `account-tag`) are requested with `CAP REQ`;
//! SASL PLAIN (IRCv3 `sasl-3.1`: `AUTHENTICATE PLAIN`, then the base64 of
//! `authzid NUL authcid NUL password` in 400-byte pieces) runs before `CAP END`. A server
//! without `CAP` simply ignores it. A nick in use (433, or 432/436) becomes `nick_`, then
//! `nick_1`, `nick_2`, … After `001` we identify to NickServ when a password is set (and wait
//! up to [`super::IrcSettings::nickserv_wait`] for its answer so a cloak applies before we
//! join), then `JOIN` the channels. Queued lines are written once every channel is joined
//! (or refused) or after [`JOIN_WAIT`].

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::PlatformError;
use crate::platform::InboundMessage;

use super::flood::TokenBucket;
use super::inbound::{Identity, from_privmsg};
use super::proto::{Message, casefold};
use super::{IrcSettings, PLATFORM, Shared};

/// How long queued replies wait for the channel joins before they are written anyway.
pub const JOIN_WAIT: Duration = Duration::from_secs(10);
/// Longest line accepted from the server (512 bytes plus up to 8191 bytes of IRCv3 tags).
const MAX_INBOUND_LINE: usize = 8704;

/// How a connection ended (other than a fatal error).
#[derive(Debug)]
pub enum End {
    /// The gateway is stopping (or nobody reads inbound messages any more).
    Stopped,
    /// The connection was lost or never came up; reconnect after a delay. `registered`
    /// says whether it got as far as `001` (the backoff then starts over).
    Dropped {
        /// What happened.
        reason: String,
        /// The server had welcomed us.
        registered: bool,
    },
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

async fn open(
    settings: &IrcSettings,
    tls: Option<&Arc<rustls::ClientConfig>>,
) -> Result<Box<dyn Io>, String> {
    let addr = (settings.server.as_str(), settings.port);
    let tcp = tokio::time::timeout(
        settings.connect_timeout,
        tokio::net::TcpStream::connect(addr),
    )
    .await
    .map_err(|_| {
        format!(
            "connecting to {}:{} timed out",
            settings.server, settings.port
        )
    })?
    .map_err(|e| {
        format!(
            "cannot connect to {}:{}: {e}",
            settings.server, settings.port
        )
    })?;
    let _ = tcp.set_nodelay(true);
    let Some(config) = tls else {
        return Ok(Box::new(tcp));
    };
    let name = rustls::pki_types::ServerName::try_from(settings.server.clone())
        .map_err(|e| format!("`{}` is not a valid TLS server name: {e}", settings.server))?;
    let stream = tokio::time::timeout(
        settings.connect_timeout,
        tokio_rustls::TlsConnector::from(config.clone()).connect(name, tcp),
    )
    .await
    .map_err(|_| "TLS handshake timed out".to_string())?
    .map_err(|e| format!("TLS handshake with {} failed: {e}", settings.server))?;
    Ok(Box::new(stream))
}

/// The registration and session state of one connection.
struct Session<'a> {
    settings: &'a IrcSettings,
    shared: &'a Shared,
    nick: String,
    nick_attempt: u32,
    offered: Vec<String>,
    identity: Identity,
    registered: bool,
    cap_done: bool,
    joins_at: Option<Instant>,
    join_sent: Option<Instant>,
    pending_joins: HashSet<String>,
    ready: bool,
    last_rx: Instant,
    ping_sent: bool,
}

/// Runs one connection until it ends. `Err` only for refusals retrying cannot fix (wrong
/// server password, SASL failure, a ban).
pub async fn run(
    settings: &IrcSettings,
    tls: Option<&Arc<rustls::ClientConfig>>,
    shared: &Shared,
    inbound: &mpsc::Sender<InboundMessage>,
    cancel: &CancellationToken,
) -> Result<End, PlatformError> {
    let io = tokio::select! {
        r = open(settings, tls) => match r {
            Ok(io) => io,
            Err(reason) => return Ok(End::Dropped { reason, registered: false }),
        },
        _ = cancel.cancelled() => return Ok(End::Stopped),
    };
    let (mut reader, mut writer) = tokio::io::split(io);
    let now = Instant::now();
    let mut s = Session {
        settings,
        shared,
        nick: settings.nickname.clone(),
        nick_attempt: 0,
        offered: Vec::new(),
        identity: Identity::Nick,
        registered: false,
        cap_done: false,
        joins_at: None,
        join_sent: None,
        pending_joins: HashSet::new(),
        ready: false,
        last_rx: now,
        ping_sent: false,
    };
    let mut bucket = TokenBucket::new(settings.flood_burst, settings.flood_interval);
    let mut out: Vec<String> = Vec::new();
    if let Some(pass) = &settings.server_password {
        out.push(format!("PASS {pass}"));
    }
    out.push("CAP LS 302".into());
    out.push(format!("NICK {}", s.nick));
    out.push(format!(
        "USER {} 0 * :{}",
        settings.username, settings.realname
    ));
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut chunk = vec![0u8; 4096];
    let started = Instant::now();
    loop {
        for line in out.drain(..) {
            if let Err(e) = write_line(&mut writer, &line).await {
                return Ok(dropped(&s, format!("write failed: {e}")));
            }
        }
        let deadline = s.next_deadline(started);
        tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                let _ = write_line(&mut writer, "QUIT :gateway stopping").await;
                break Ok(End::Stopped);
            }
            n = reader.read(&mut chunk) => {
                let n = match n {
                    Ok(0) => break Ok(dropped(&s, "the server closed the connection".into())),
                    Ok(n) => n,
                    Err(e) => break Ok(dropped(&s, format!("read failed: {e}"))),
                };
                s.last_rx = Instant::now();
                s.ping_sent = false;
                buf.extend_from_slice(&chunk[..n]);
                while let Some(pos) = buf.iter().position(|&b| b == b'\n') {
                    let raw: Vec<u8> = buf.drain(..=pos).collect();
                    if raw.len() > MAX_INBOUND_LINE {
                        tracing::warn!(platform = PLATFORM, bytes = raw.len(), "overlong line from the server ignored");
                        continue;
                    }
                    let text = String::from_utf8_lossy(&raw);
                    let Some(msg) = Message::parse(&text) else { continue };
                    match s.handle(&msg, &mut out, inbound).await {
                        Ok(None) => {}
                        Ok(Some(end)) => return Ok(end),
                        Err(e) => return Err(e),
                    }
                }
                if buf.len() > MAX_INBOUND_LINE {
                    tracing::warn!(platform = PLATFORM, "overlong line from the server dropped");
                    buf.clear();
                }
            }
            _ = next_line(shared, &mut bucket), if s.ready => {
                bucket.take(Instant::now());
                if let Some(line) = shared.queue.front() {
                    if let Err(e) = write_line(&mut writer, &line).await {
                        break Ok(dropped(&s, format!("write failed: {e}")));
                    }
                    shared.queue.written();
                }
            }
            _ = tokio::time::sleep_until(deadline) => {
                if let Some(end) = s.on_timer(started, &mut out) {
                    break Ok(end);
                }
            }
        }
    }
}

fn dropped(s: &Session<'_>, reason: String) -> End {
    s.shared.set_connected(false);
    End::Dropped {
        reason,
        registered: s.registered,
    }
}

async fn write_line<W: AsyncWrite + Unpin>(w: &mut W, line: &str) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(line.len() + 2);
    bytes.extend_from_slice(line.as_bytes());
    bytes.extend_from_slice(b"\r\n");
    w.write_all(&bytes).await?;
    w.flush().await
}

/// Resolves when a queued line may be written (a line is waiting and the bucket has a token).
async fn next_line(shared: &Shared, bucket: &mut TokenBucket) {
    shared.queue.wait_nonempty().await;
    loop {
        let wait = bucket.wait_time(Instant::now());
        if wait.is_zero() {
            return;
        }
        tokio::time::sleep(wait).await;
    }
}

fn auth_error(detail: impl Into<String>) -> PlatformError {
    PlatformError::Auth {
        platform: PLATFORM.into(),
        detail: detail.into(),
    }
}

impl Session<'_> {
    fn next_deadline(&self, started: Instant) -> Instant {
        let mut d = self.last_rx + self.settings.ping_interval;
        if self.ping_sent {
            d = self.last_rx + self.settings.ping_interval + self.settings.ping_timeout;
        }
        if !self.registered {
            d = d.min(started + self.settings.register_timeout);
        }
        if let Some(at) = self.joins_at {
            d = d.min(at);
        }
        if let (Some(sent), false) = (self.join_sent, self.ready) {
            d = d.min(sent + JOIN_WAIT);
        }
        d
    }

    fn on_timer(&mut self, started: Instant, out: &mut Vec<String>) -> Option<End> {
        let now = Instant::now();
        if !self.registered && now >= started + self.settings.register_timeout {
            return Some(dropped(
                self,
                "the server did not welcome us (no 001) in time".into(),
            ));
        }
        if self.joins_at.is_some_and(|at| now >= at) {
            self.join(out);
        }
        if let (Some(sent), false) = (self.join_sent, self.ready)
            && now >= sent + JOIN_WAIT
        {
            tracing::warn!(platform = PLATFORM, channels = ?self.pending_joins, "not every channel joined; sending anyway");
            self.set_ready();
        }
        let idle = now.saturating_duration_since(self.last_rx);
        if idle >= self.settings.ping_interval + self.settings.ping_timeout && self.ping_sent {
            return Some(dropped(
                self,
                format!("no data from the server for {} s", idle.as_secs()),
            ));
        }
        if idle >= self.settings.ping_interval && !self.ping_sent {
            out.push("PING :hermes-keepalive".into());
            self.ping_sent = true;
        }
        None
    }

    fn set_ready(&mut self) {
        self.ready = true;
        self.shared.set_connected(true);
        tracing::info!(platform = PLATFORM, nick = %self.nick, server = %self.settings.server, "IRC connected and joined");
    }

    fn join(&mut self, out: &mut Vec<String>) {
        self.joins_at = None;
        self.join_sent = Some(Instant::now());
        self.pending_joins = self.settings.channels.iter().map(|c| casefold(c)).collect();
        if self.pending_joins.is_empty() {
            self.set_ready();
            return;
        }
        for c in &self.settings.channels {
            out.push(format!("JOIN {c}"));
        }
    }

    fn channel_done(&mut self, channel: &str) {
        self.pending_joins.remove(&casefold(channel));
        if self.pending_joins.is_empty() && self.join_sent.is_some() && !self.ready {
            self.set_ready();
        }
    }

    fn next_nick(&mut self) -> String {
        self.nick_attempt += 1;
        let base = &self.settings.nickname;
        if self.nick_attempt == 1 {
            format!("{base}_")
        } else {
            format!("{base}_{}", self.nick_attempt - 1)
        }
    }

    fn sasl_wanted(&self) -> bool {
        self.settings.sasl_password.is_some()
    }

    fn end_cap(&mut self, out: &mut Vec<String>) {
        if !self.cap_done {
            self.cap_done = true;
            out.push("CAP END".into());
        }
    }

    /// Handles one message; `Some(end)` ends the connection.
    async fn handle(
        &mut self,
        msg: &Message,
        out: &mut Vec<String>,
        inbound: &mpsc::Sender<InboundMessage>,
    ) -> Result<Option<End>, PlatformError> {
        let me = casefold(&self.nick);
        let from_me = msg.nick().is_some_and(|n| casefold(n) == me);
        match msg.command.as_str() {
            "PING" => out.push(match msg.param(0) {
                Some(token) => format!("PONG :{token}"),
                None => "PONG".into(),
            }),
            "CAP" => self.on_cap(msg, out)?,
            "AUTHENTICATE" if msg.param(0) == Some("+") => {
                let user = self
                    .settings
                    .sasl_username
                    .as_deref()
                    .unwrap_or(&self.settings.nickname);
                let pass = self.settings.sasl_password.as_deref().unwrap_or_default();
                let payload = base64::engine::general_purpose::STANDARD
                    .encode(format!("{user}\0{user}\0{pass}"));
                for piece in payload.as_bytes().chunks(400) {
                    out.push(format!("AUTHENTICATE {}", String::from_utf8_lossy(piece)));
                }
                if payload.len() % 400 == 0 {
                    out.push("AUTHENTICATE +".into());
                }
            }
            // RPL_SASLSUCCESS, ERR_SASLALREADY
            "903" | "907" => self.end_cap(out),
            // ERR_NICKLOCKED, ERR_SASLFAIL, ERR_SASLTOOLONG, ERR_SASLABORTED
            "902" | "904" | "905" | "906" => {
                return Err(auth_error(format!(
                    "SASL authentication failed ({} {}); check IRC_SASL_USERNAME / IRC_SASL_PASSWORD",
                    msg.command,
                    msg.params.last().map(String::as_str).unwrap_or("")
                )));
            }
            "001" => {
                self.registered = true;
                self.end_cap(out);
                if let Some(n) = msg.param(0) {
                    self.nick = n.to_string();
                }
                self.shared.set_nick(&self.nick);
                if let Some(pass) = &self.settings.nickserv_password {
                    out.push(format!("PRIVMSG NickServ :IDENTIFY {pass}"));
                    self.joins_at = Some(Instant::now() + self.settings.nickserv_wait);
                } else {
                    self.join(out);
                }
            }
            "432" | "433" | "436" if !self.registered => {
                let taken = self.nick.clone();
                self.nick = self.next_nick();
                tracing::warn!(platform = PLATFORM, taken, trying = %self.nick, "nick unavailable");
                out.push(format!("NICK {}", self.nick));
            }
            "464" => {
                return Err(auth_error(
                    "the server password was refused (IRC_SERVER_PASSWORD)",
                ));
            }
            "465" => {
                return Err(auth_error(format!(
                    "banned from the server: {}",
                    msg.params.last().map(String::as_str).unwrap_or("")
                )));
            }
            "ERROR" => {
                let why = msg.param(0).unwrap_or("ERROR").to_string();
                return Ok(Some(dropped(self, format!("server said: {why}"))));
            }
            "NOTICE"
                if msg
                    .nick()
                    .is_some_and(|n| n.eq_ignore_ascii_case("NickServ")) =>
            {
                tracing::info!(
                    platform = PLATFORM,
                    notice = msg.param(1).unwrap_or(""),
                    "NickServ"
                );
                if self.joins_at.is_some() {
                    self.join(out);
                }
            }
            "JOIN" if from_me => {
                if let Some(c) = msg.param(0) {
                    self.channel_done(c);
                }
            }
            // ERR_NOSUCHCHANNEL, ERR_TOOMANYCHANNELS, channel full / invite-only / banned / key
            "403" | "405" | "471" | "473" | "474" | "475" | "477" => {
                let channel = msg.param(1).unwrap_or("").to_string();
                tracing::warn!(platform = PLATFORM, %channel, code = %msg.command, reason = msg.params.last().map(String::as_str).unwrap_or(""), "cannot join");
                self.channel_done(&channel);
            }
            "KICK" if msg.param(1).is_some_and(|n| casefold(n) == me) => {
                if let Some(c) = msg.param(0) {
                    tracing::warn!(platform = PLATFORM, channel = c, "kicked; rejoining");
                    out.push(format!("JOIN {c}"));
                }
            }
            "NICK" if from_me => {
                if let Some(n) = msg.param(0) {
                    self.nick = n.to_string();
                    self.shared.set_nick(n);
                }
            }
            "PRIVMSG" => {
                let id = format!("{}-{}", self.shared.epoch, self.shared.next_seq());
                if let Some(m) = from_privmsg(msg, &self.nick, self.identity, id) {
                    if m.source.user_id.is_none() {
                        tracing::info!(
                            platform = PLATFORM,
                            nick = m.source.user_name.as_deref().unwrap_or(""),
                            "message from a user not logged in to an account ignored"
                        );
                    }
                    if inbound.send(m).await.is_err() {
                        return Ok(Some(End::Stopped));
                    }
                }
            }
            _ => {}
        }
        Ok(None)
    }

    fn on_cap(&mut self, msg: &Message, out: &mut Vec<String>) -> Result<(), PlatformError> {
        let sub = msg.param(1).unwrap_or("").to_ascii_uppercase();
        let list = msg.params.last().map(String::as_str).unwrap_or("");
        match sub.as_str() {
            "LS" => {
                self.offered.extend(
                    list.split(' ')
                        .filter(|c| !c.is_empty())
                        .map(|c| c.split('=').next().unwrap_or(c).to_ascii_lowercase()),
                );
                if msg.param(2) == Some("*") {
                    return Ok(()); // more LS lines follow
                }
                let mut want = Vec::new();
                if self.offered.iter().any(|c| c == "account-tag") {
                    want.push("account-tag");
                }
                if self.sasl_wanted() {
                    if !self.offered.iter().any(|c| c == "sasl") {
                        return Err(auth_error(
                            "SASL is configured (IRC_SASL_PASSWORD) but the server does not offer it",
                        ));
                    }
                    want.push("sasl");
                }
                if want.is_empty() {
                    self.end_cap(out);
                } else {
                    out.push(format!("CAP REQ :{}", want.join(" ")));
                }
            }
            "ACK" => {
                let acked: Vec<String> = list.split(' ').map(|c| c.to_ascii_lowercase()).collect();
                if acked.iter().any(|c| c == "account-tag") {
                    self.identity = Identity::Account;
                    tracing::info!(
                        platform = PLATFORM,
                        "server tags messages with accounts; senders are identified by account name"
                    );
                }
                if acked.iter().any(|c| c == "sasl") && self.sasl_wanted() {
                    out.push("AUTHENTICATE PLAIN".into());
                } else {
                    self.end_cap(out);
                }
            }
            "NAK" => {
                if self.sasl_wanted() {
                    return Err(auth_error("the server refused the SASL capability"));
                }
                self.end_cap(out);
            }
            _ => {}
        }
        Ok(())
    }
}
