//! Matrix adapter (issue 22 item 3): the client-server API of any homeserver over our
//! reqwest, with serde types for the few endpoints used ([`api`]); no Matrix SDK.
//!
//! Settings use Python Hermes' names (its `plugins/platforms/matrix` adapter):
//! `MATRIX_HOMESERVER`, `MATRIX_ACCESS_TOKEN`, or `MATRIX_USER_ID` + `MATRIX_PASSWORD`
//! (password login; `MATRIX_DEVICE_ID` keeps one device across restarts),
//! `MATRIX_ALLOWED_USERS` / `MATRIX_ALLOW_ALL_USERS`, `MATRIX_HOME_ROOM`,
//! `MATRIX_REQUIRE_MENTION` (true), `MATRIX_FREE_RESPONSE_ROOMS`, `MATRIX_ALLOWED_ROOMS`,
//! `MATRIX_AUTO_THREAD` (true), `MATRIX_PROCESS_NOTICES` (false),
//! `MATRIX_MAX_MESSAGE_LENGTH` (16000 chars, 500–65535), `MATRIX_MAX_MEDIA_BYTES` (100 MiB),
//! `MATRIX_E2EE_MODE` / `MATRIX_ENCRYPTION` ([`MatrixSettings::from_env`]).
//!
//! Inbound: [`sync`] long-polls `/sync` and saves the `since` token (with the bot's threads
//! and the rooms told about encryption) in a state file only after the batch's messages were
//! handed to the gateway, so a restart neither replays nor loses; [`inbound`] decides what a
//! message event is. Outbound: chunks arrive as CommonMark and go out as `body` plus
//! `org.matrix.custom.html` ([`format`]), each `PUT` with its own transaction id (a retry
//! never doubles a message); streaming edits use `m.replace` with `m.new_content`; files go
//! through the content repository.
//!
//! End-to-end encryption is not supported: an encrypted room is told so once (a notice in
//! the room and a warning in the log); its encrypted messages cannot be read.

pub(crate) mod api;
pub mod format;
pub(crate) mod inbound;
mod send;
mod state;
mod sync;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::PlatformError;
use crate::platform::{
    ChatTarget, InboundMessage, LengthUnit, Markup, PlatformAdapter, PlatformLimits, SentMessage,
};

/// Platform name in config, session keys and logs.
pub const PLATFORM: &str = "matrix";
/// Python Hermes' default chunk size, in chars (`MATRIX_MAX_MESSAGE_LENGTH`).
pub const DEFAULT_MAX_MESSAGE_CHARS: usize = 16_000;
/// Python Hermes' default cap of inbound files (`MATRIX_MAX_MEDIA_BYTES`).
pub const DEFAULT_MAX_MEDIA_BYTES: u64 = 100 * 1024 * 1024;

/// What the room is told, once, when it is end-to-end encrypted.
pub const ENCRYPTION_NOTICE: &str = "This room is end-to-end encrypted, and hermes cannot \
read encrypted messages (it does not support Matrix end-to-end encryption). Talk to me in a \
room without encryption — e.g. a new direct chat, which clients create unencrypted for me.";

/// How to reach the homeserver, who to be and whom to answer. `Debug` hides the secrets.
#[derive(Clone)]
pub struct MatrixSettings {
    /// Homeserver base URL (`MATRIX_HOMESERVER`, e.g. `https://matrix.example.org`).
    pub homeserver: String,
    /// Access token (`MATRIX_ACCESS_TOKEN`); preferred over a password.
    pub access_token: Option<String>,
    /// Full user id `@bot:server` (`MATRIX_USER_ID`; required for password login).
    pub user_id: Option<String>,
    /// Password (`MATRIX_PASSWORD`), used when no access token is set.
    pub password: Option<String>,
    /// Device id for password login (`MATRIX_DEVICE_ID`; otherwise the one the first login
    /// got, kept in the state file).
    pub device_id: Option<String>,
    /// Users whose invites are accepted (`MATRIX_ALLOWED_USERS`).
    pub allowed_users: Vec<String>,
    /// Everyone's invites are accepted (`MATRIX_ALLOW_ALL_USERS` or `GATEWAY_ALLOW_ALL_USERS`).
    pub allow_all: bool,
    /// Without an allowlist, a stranger's direct-chat invite is accepted so that they can ask
    /// for a pairing code (false when `unauthorized_dm_behavior: ignore`).
    pub pair_strangers: bool,
    /// Rooms the bot answers in besides DMs (`MATRIX_ALLOWED_ROOMS`; empty: every room).
    pub allowed_rooms: Vec<String>,
    /// Rooms where no mention is needed (`MATRIX_FREE_RESPONSE_ROOMS`).
    pub free_response_rooms: Vec<String>,
    /// In rooms, answer only when mentioned (`MATRIX_REQUIRE_MENTION`, default true).
    pub require_mention: bool,
    /// Room messages start a thread (`MATRIX_AUTO_THREAD`, default true).
    pub auto_thread: bool,
    /// Read `m.notice` messages too (`MATRIX_PROCESS_NOTICES`, default false).
    pub process_notices: bool,
    /// Chunk size handed to the gateway, in chars (`MATRIX_MAX_MESSAGE_LENGTH`).
    pub max_message_chars: usize,
    /// Directory inbound files are saved in (under `HERMES_HOME`).
    pub media_dir: PathBuf,
    /// Inbound files over this many bytes are not downloaded (`MATRIX_MAX_MEDIA_BYTES`).
    pub max_media_bytes: u64,
    /// File holding the sync token, device id, the bot's threads and the rooms told about
    /// encryption; `None` keeps them in memory only.
    pub state_file: Option<PathBuf>,
    /// Long-poll wait of one `/sync` (default 30 s).
    pub poll_timeout: Duration,
    /// First reconnect delay after a failed sync (doubles up to `reconnect_max`, jittered).
    pub reconnect_base: Duration,
    /// Longest reconnect delay.
    pub reconnect_max: Duration,
    /// Sends answered `M_LIMIT_EXCEEDED` wait `retry_after_ms` and try again (same
    /// transaction id), up to 3 times, when the wait is at most this long.
    pub max_rate_limit_wait: Duration,
}

hermes_protocol::debug_redacted!(MatrixSettings {
    secret: [access_token, password],
    shown: [
        homeserver,
        user_id,
        device_id,
        allowed_users,
        allow_all,
        pair_strangers,
        allowed_rooms,
        free_response_rooms,
        require_mention,
        auto_thread,
        process_notices,
        max_message_chars,
        media_dir,
        max_media_bytes,
        state_file,
        poll_timeout,
        reconnect_base,
        reconnect_max,
        max_rate_limit_wait,
    ],
});

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

fn list(v: Option<String>) -> Vec<String> {
    v.map(|v| {
        v.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    })
    .unwrap_or_default()
}

impl MatrixSettings {
    /// Settings for `homeserver` with an access token, everything else at its default.
    pub fn new(homeserver: impl Into<String>, access_token: impl Into<String>) -> MatrixSettings {
        MatrixSettings {
            homeserver: homeserver.into().trim_end_matches('/').to_string(),
            access_token: Some(access_token.into()),
            user_id: None,
            password: None,
            device_id: None,
            allowed_users: Vec::new(),
            allow_all: false,
            pair_strangers: true,
            allowed_rooms: Vec::new(),
            free_response_rooms: Vec::new(),
            require_mention: true,
            auto_thread: true,
            process_notices: false,
            max_message_chars: DEFAULT_MAX_MESSAGE_CHARS,
            media_dir: PathBuf::from("media"),
            max_media_bytes: DEFAULT_MAX_MEDIA_BYTES,
            state_file: None,
            poll_timeout: Duration::from_secs(30),
            reconnect_base: Duration::from_secs(1),
            reconnect_max: Duration::from_secs(60),
            max_rate_limit_wait: Duration::from_secs(60),
        }
    }

    /// Reads the settings from the environment merged over `.env` (names in the module
    /// docs). `Ok(None)` when `MATRIX_HOMESERVER` or both `MATRIX_ACCESS_TOKEN` and
    /// `MATRIX_PASSWORD` are unset (Matrix not configured, as Python Hermes decides).
    ///
    /// Errors name the variable: a homeserver that is not an `http(s)://` URL, a password
    /// without `MATRIX_USER_ID`, a non-boolean flag, a bad number, and
    /// `MATRIX_E2EE_MODE=required` (or legacy `MATRIX_ENCRYPTION=true`): hermes does not
    /// support end-to-end encryption, and a gateway that must encrypt should not start.
    pub fn from_env(
        env: &BTreeMap<String, String>,
        media_dir: &Path,
    ) -> Result<Option<MatrixSettings>, PlatformError> {
        let get = |k: &str| {
            env.get(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let Some(homeserver) = get("MATRIX_HOMESERVER") else {
            return Ok(None);
        };
        let (token, password) = (get("MATRIX_ACCESS_TOKEN"), get("MATRIX_PASSWORD"));
        if token.is_none() && password.is_none() {
            return Ok(None);
        }
        if !(homeserver.starts_with("https://") || homeserver.starts_with("http://"))
            || homeserver.contains(char::is_whitespace)
        {
            return Err(bad(
                "MATRIX_HOMESERVER",
                format!("`{homeserver}` is not an http(s):// URL"),
            ));
        }
        let mut s = MatrixSettings::new(homeserver, String::new());
        s.access_token = token;
        s.password = password;
        s.user_id = get("MATRIX_USER_ID");
        s.device_id = get("MATRIX_DEVICE_ID");
        if s.access_token.is_none() && s.user_id.is_none() {
            return Err(bad(
                "MATRIX_USER_ID",
                "password login (MATRIX_PASSWORD) needs the bot's full user id, e.g. @hermes:example.org",
            ));
        }
        if let Some(user) = &s.user_id
            && !(user.starts_with('@') && user.contains(':'))
        {
            return Err(bad(
                "MATRIX_USER_ID",
                format!("`{user}` is not a full user id (@name:server)"),
            ));
        }
        let e2ee = match get("MATRIX_E2EE_MODE") {
            Some(mode) => mode.to_ascii_lowercase(),
            None if env_flag(&get, "MATRIX_ENCRYPTION", false)? => "required".into(),
            None => "off".into(),
        };
        match e2ee.as_str() {
            "off" => {}
            "optional" => tracing::warn!(
                platform = PLATFORM,
                "MATRIX_E2EE_MODE=optional: hermes does not support end-to-end encryption; encrypted rooms are told so and their messages are not read"
            ),
            "required" => {
                return Err(bad(
                    "MATRIX_E2EE_MODE",
                    "end-to-end encryption is required but hermes does not support it; set MATRIX_E2EE_MODE=off (or optional) and use unencrypted rooms",
                ));
            }
            other => {
                return Err(bad(
                    "MATRIX_E2EE_MODE",
                    format!("`{other}` is not one of: off, optional, required"),
                ));
            }
        }
        s.allowed_users = list(get("MATRIX_ALLOWED_USERS"));
        s.allow_all = env_flag(&get, "MATRIX_ALLOW_ALL_USERS", false)?
            || env_flag(&get, "GATEWAY_ALLOW_ALL_USERS", false)?;
        s.pair_strangers = s.allowed_users.is_empty();
        s.allowed_rooms = list(get("MATRIX_ALLOWED_ROOMS"));
        s.free_response_rooms = list(get("MATRIX_FREE_RESPONSE_ROOMS"));
        s.require_mention = env_flag(&get, "MATRIX_REQUIRE_MENTION", true)?;
        s.auto_thread = env_flag(&get, "MATRIX_AUTO_THREAD", true)?;
        s.process_notices = env_flag(&get, "MATRIX_PROCESS_NOTICES", false)?;
        if let Some(v) = get("MATRIX_MAX_MESSAGE_LENGTH") {
            let n = v.parse::<usize>().map_err(|_| {
                bad(
                    "MATRIX_MAX_MESSAGE_LENGTH",
                    format!("`{v}` is not a number"),
                )
            })?;
            // Python Hermes clamps the same way.
            s.max_message_chars = n.clamp(500, 65_535);
        }
        if let Some(v) = get("MATRIX_MAX_MEDIA_BYTES") {
            s.max_media_bytes = v.parse::<u64>().map_err(|_| {
                bad(
                    "MATRIX_MAX_MEDIA_BYTES",
                    format!("`{v}` is not a number of bytes"),
                )
            })?;
        }
        s.media_dir = media_dir.to_path_buf();
        Ok(Some(s))
    }

    /// Whether an invite from `user` is accepted: an allowed user, everyone with
    /// allow-all, or — for a direct chat, when there is no allowlist and pairing is on —
    /// anyone, so that they can ask for a pairing code. Bridges never.
    pub fn accepts_invite(&self, user: &str, is_direct: bool) -> bool {
        if inbound::is_system_sender(user) {
            return false;
        }
        self.allow_all
            || self.allowed_users.iter().any(|u| u == user)
            || (is_direct && self.pair_strangers && self.allowed_users.is_empty())
    }
}

/// The logged-in identity.
#[derive(Clone)]
pub(crate) struct Session {
    pub(crate) token: String,
    pub(crate) user_id: String,
}

/// What the adapter knows about one room.
#[derive(Debug, Default, Clone)]
pub(crate) struct Room {
    /// Joined members, once fetched or seen.
    pub(crate) members: Option<std::collections::BTreeSet<String>>,
    /// `m.room.encryption` was seen.
    pub(crate) encrypted: bool,
}

/// The Matrix [`PlatformAdapter`].
pub struct MatrixAdapter {
    settings: MatrixSettings,
    client: api::Client,
    session: tokio::sync::Mutex<Option<Session>>,
    rooms: Mutex<HashMap<String, Room>>,
    state: Mutex<state::SyncState>,
    /// Rooms found for `@user` and `#alias` targets.
    dm_rooms: Mutex<HashMap<String, String>>,
    connected: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl MatrixAdapter {
    /// An adapter for `settings`; reads the state file. Errors: `Transport` when the HTTP
    /// client cannot be built. No request is made until a call needs one.
    pub fn new(settings: MatrixSettings) -> Result<MatrixAdapter, PlatformError> {
        let client = api::Client::new(&settings.homeserver)?;
        let state = settings
            .state_file
            .as_deref()
            .map(state::SyncState::load)
            .unwrap_or_default();
        Ok(MatrixAdapter {
            settings,
            client,
            session: tokio::sync::Mutex::new(None),
            rooms: Mutex::new(HashMap::new()),
            state: Mutex::new(state),
            dm_rooms: Mutex::new(HashMap::new()),
            connected: AtomicBool::new(false),
        })
    }

    /// True once the first `/sync` of [`PlatformAdapter::run`] succeeded (and until it stops).
    pub fn is_connected(&self) -> bool {
        self.connected.load(Ordering::SeqCst)
    }

    /// The settings.
    pub fn settings(&self) -> &MatrixSettings {
        &self.settings
    }

    /// The token and user id: `whoami` with the access token, else a password login (once;
    /// the device id is kept in the state file). `Auth` errors are final.
    pub(crate) async fn session(&self) -> Result<Session, PlatformError> {
        let mut slot = self.session.lock().await;
        if let Some(s) = slot.as_ref() {
            return Ok(s.clone());
        }
        let s = match &self.settings.access_token {
            Some(token) => {
                let req = self.client.request(
                    reqwest::Method::GET,
                    "/_matrix/client/v3/account/whoami",
                    Some(token),
                );
                let who: Value = self.client.call("whoami", req).await?;
                let user_id = who
                    .get("user_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| PlatformError::protocol(PLATFORM, "whoami: no user_id"))?
                    .to_string();
                if let Some(configured) = &self.settings.user_id
                    && configured != &user_id
                {
                    tracing::warn!(platform = PLATFORM, configured = %configured, actual = %user_id, "MATRIX_USER_ID differs from the access token's user; using the token's");
                }
                Session {
                    token: token.clone(),
                    user_id,
                }
            }
            None => self.login().await?,
        };
        tracing::info!(platform = PLATFORM, user = %s.user_id, "logged in");
        *slot = Some(s.clone());
        Ok(s)
    }

    async fn login(&self) -> Result<Session, PlatformError> {
        let (Some(user), Some(password)) = (&self.settings.user_id, &self.settings.password) else {
            return Err(PlatformError::Auth {
                platform: PLATFORM.into(),
                detail: "set MATRIX_ACCESS_TOKEN, or MATRIX_USER_ID and MATRIX_PASSWORD".into(),
            });
        };
        let device = self
            .settings
            .device_id
            .clone()
            .or_else(|| lock(&self.state).device_id.clone());
        let mut body = json!({
            "type": "m.login.password",
            "identifier": {"type": "m.id.user", "user": user},
            "password": password,
            "initial_device_display_name": "Hermes Agent",
        });
        if let Some(d) = &device {
            body["device_id"] = json!(d);
        }
        let req = self
            .client
            .request(reqwest::Method::POST, "/_matrix/client/v3/login", None)
            .json(&body);
        let answer: Value = match self.client.call("login", req).await {
            Err(PlatformError::Rejected { detail, .. }) if detail.contains("M_FORBIDDEN") => {
                return Err(PlatformError::Auth {
                    platform: PLATFORM.into(),
                    detail: format!(
                        "login refused (check MATRIX_USER_ID / MATRIX_PASSWORD): {detail}"
                    ),
                });
            }
            other => other?,
        };
        let field = |k: &str| answer.get(k).and_then(Value::as_str).map(str::to_owned);
        let (Some(token), Some(user_id)) = (field("access_token"), field("user_id")) else {
            return Err(PlatformError::protocol(
                PLATFORM,
                "login: no access_token/user_id",
            ));
        };
        if let Some(d) = field("device_id") {
            let changed = {
                let mut st = lock(&self.state);
                let changed = st.device_id.as_deref() != Some(&d);
                st.device_id = Some(d);
                changed
            };
            if changed {
                self.persist().await;
            }
        }
        Ok(Session { token, user_id })
    }

    /// Checks the settings against the homeserver without side effects, for `hermes doctor`:
    /// with an access token `whoami` (the bot's user id), with a password only that the
    /// homeserver answers (logging in would create a session). Also says whether a sync
    /// token is saved and how many rooms were refused for encryption.
    ///
    /// Errors: `Auth` for a refused token, `Transport` when the homeserver cannot be reached.
    pub async fn probe(&self) -> Result<String, PlatformError> {
        let who = if self.settings.access_token.is_some() {
            let s = self.session().await?;
            format!("logged in as {}", s.user_id)
        } else {
            let req = self
                .client
                .request(reqwest::Method::GET, "/_matrix/client/versions", None);
            self.client.call::<Value>("versions", req).await?;
            format!(
                "homeserver answers; password login as {} at start",
                self.settings.user_id.as_deref().unwrap_or("?")
            )
        };
        let st = lock(&self.state).clone();
        let sync = if st.since.is_some() {
            "sync token saved"
        } else {
            "no sync yet (the first start skips the history)"
        };
        let refused = match st.encryption_noticed.len() {
            0 => String::new(),
            n => format!(", {n} encrypted room(s) refused"),
        };
        Ok(format!(
            "{who} on {}; {sync}{refused}",
            self.settings.homeserver
        ))
    }

    /// Forgets a session whose token the server refused (the next call logs in again when
    /// a password is set).
    pub(crate) async fn drop_session(&self) {
        *self.session.lock().await = None;
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for MatrixAdapter {
    fn name(&self) -> &str {
        PLATFORM
    }

    fn limits(&self) -> PlatformLimits {
        PlatformLimits {
            max_message_len: self.settings.max_message_chars,
            length_unit: LengthUnit::Chars,
            // CommonMark; the adapter renders it to HTML itself ([`format`]).
            markup: Markup::DiscordMarkdown,
            supports_edit: true,
        }
    }

    async fn run(
        &self,
        inbound: mpsc::Sender<InboundMessage>,
        cancel: CancellationToken,
    ) -> Result<(), PlatformError> {
        let result = self.sync_loop(inbound, cancel).await;
        self.connected.store(false, Ordering::SeqCst);
        result
    }

    async fn send(&self, target: &ChatTarget, text: &str) -> Result<SentMessage, PlatformError> {
        self.send_text(target, text).await
    }

    async fn edit(
        &self,
        target: &ChatTarget,
        message: &SentMessage,
        text: &str,
    ) -> Result<(), PlatformError> {
        self.edit_text(target, message, text).await
    }

    async fn send_file(
        &self,
        target: &ChatTarget,
        path: &Path,
        caption: Option<&str>,
    ) -> Result<SentMessage, PlatformError> {
        self.upload_and_send(target, path, caption).await
    }

    async fn typing(&self, target: &ChatTarget) -> Result<(), PlatformError> {
        let room = self.room_of(&target.chat_id).await?;
        let s = self.session().await?;
        self.client
            .typing(&s.token, &room, &s.user_id, Duration::from_secs(10))
            .await
    }

    /// `/sync` with one token serves one consumer: two replicas would each get (and answer)
    /// every message.
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

    fn read(pairs: &[(&str, &str)]) -> Result<Option<MatrixSettings>, PlatformError> {
        MatrixSettings::from_env(&env(pairs), Path::new("/m"))
    }

    #[test]
    fn unset_is_not_configured_and_defaults_are_pythons() {
        assert!(read(&[]).unwrap().is_none());
        assert!(
            read(&[("MATRIX_HOMESERVER", "https://m.example")])
                .unwrap()
                .is_none()
        );
        let s = read(&[
            ("MATRIX_HOMESERVER", "https://m.example/"),
            ("MATRIX_ACCESS_TOKEN", "syt_SECRET"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.homeserver, "https://m.example");
        assert!(s.require_mention && s.auto_thread && !s.process_notices);
        assert_eq!(s.max_message_chars, 16_000);
        assert_eq!(s.max_media_bytes, 100 * 1024 * 1024);
        let shown = format!("{s:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("access_token: <redacted>"), "{shown}");
    }

    #[test]
    fn bad_values_name_their_variable() {
        let base = [
            ("MATRIX_HOMESERVER", "https://m.example"),
            ("MATRIX_ACCESS_TOKEN", "t"),
        ];
        let with = |extra: (&str, &str)| {
            let mut v = base.to_vec();
            v.push(extra);
            read(&v).unwrap_err().to_string()
        };
        assert!(with(("MATRIX_REQUIRE_MENTION", "maybe")).contains("MATRIX_REQUIRE_MENTION"));
        assert!(with(("MATRIX_E2EE_MODE", "required")).contains("does not support"));
        assert!(with(("MATRIX_ENCRYPTION", "true")).contains("MATRIX_E2EE_MODE"));
        assert!(with(("MATRIX_MAX_MESSAGE_LENGTH", "lots")).contains("MATRIX_MAX_MESSAGE_LENGTH"));
        let e = read(&[
            ("MATRIX_HOMESERVER", "matrix.example"),
            ("MATRIX_ACCESS_TOKEN", "t"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("MATRIX_HOMESERVER"), "{e}");
        let e = read(&[
            ("MATRIX_HOMESERVER", "https://m.example"),
            ("MATRIX_PASSWORD", "pw"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("MATRIX_USER_ID"), "{e}");
        let clamped = read(&[
            ("MATRIX_HOMESERVER", "https://m.example"),
            ("MATRIX_ACCESS_TOKEN", "t"),
            ("MATRIX_MAX_MESSAGE_LENGTH", "10"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(clamped.max_message_chars, 500);
    }

    #[test]
    fn invites_follow_the_allowlist_and_pairing() {
        let mut s = MatrixSettings::new("https://m", "t");
        assert!(
            s.accepts_invite("@stranger:m", true),
            "a DM invite can be paired"
        );
        assert!(!s.accepts_invite("@stranger:m", false), "not a room invite");
        assert!(!s.accepts_invite("@_bridge:m", true));
        s.allowed_users = vec!["@alice:m".into()];
        s.pair_strangers = false;
        assert!(s.accepts_invite("@alice:m", false));
        assert!(!s.accepts_invite("@stranger:m", true));
        s.allow_all = true;
        assert!(s.accepts_invite("@stranger:m", false));
    }
}
