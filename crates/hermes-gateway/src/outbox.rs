//! Messages the gateway sends on its own initiative rather than as a reply (issue 8: the
//! results of scheduled jobs). An [`Outbox`] holds the running adapters by platform name and
//! each platform's home channel, renders Markdown into the platform's chunks
//! ([`crate::render_chunks`], the same splitting and markup as replies) and sends them in
//! order. The front end wraps it for the scheduler (hermes-cli implements hermes-cron's
//! `PlatformSender` over it; gateway and cron are both layer 7 and do not depend on each
//! other).
//!
//! Home channels (FEATURES §1 Cron, delivery target `<platform>`) come from
//! `<PLATFORM>_HOME_CHANNEL` in the environment or `.env`, written `<chat>` or
//! `<chat>:<thread>` (for example `TELEGRAM_HOME_CHANNEL=-1001234567890`).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::platform::{ChatTarget, PlatformAdapter};

/// Why an outbox message was not (completely) sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutboxError {
    /// No adapter of that platform runs in this gateway.
    #[error("platform `{platform}` is not running in this gateway (running: {running})")]
    NotRunning {
        /// The platform asked for.
        platform: String,
        /// The platforms that run, comma-separated (`none` when none).
        running: String,
    },
    /// The target was the platform's home channel and none is configured.
    #[error(
        "no home channel for {platform}: set {var} to a chat id (`<chat>` or `<chat>:<thread>`)"
    )]
    NoHomeChannel {
        /// The platform.
        platform: String,
        /// The variable that sets it (`TELEGRAM_HOME_CHANNEL`, …).
        var: String,
    },
    /// The message rendered to nothing (empty or whitespace text).
    #[error("nothing to send: the message is empty")]
    Empty,
    /// The platform refused a part; `sent` parts before it went out.
    #[error("{detail} (sent {sent} of {total} parts)")]
    Send {
        /// Parts delivered before the failure.
        sent: usize,
        /// Parts in the message.
        total: usize,
        /// The platform error.
        detail: String,
    },
}

/// The variable naming `platform`'s home channel: `<PLATFORM>_HOME_CHANNEL`, and Python
/// Hermes' own names for email (`EMAIL_HOME_ADDRESS`) and Matrix (`MATRIX_HOME_ROOM`).
pub fn home_channel_var(platform: &str) -> String {
    match platform.to_ascii_lowercase().as_str() {
        "email" => "EMAIL_HOME_ADDRESS".into(),
        "matrix" => "MATRIX_HOME_ROOM".into(),
        p => format!("{}_HOME_CHANNEL", p.to_ascii_uppercase()),
    }
}

/// Reads every `<PLATFORM>_HOME_CHANNEL` of `env` (values `<chat>` or `<chat>:<thread>`,
/// read as [`hermes_protocol::ChatAddress`] reads them; empty or unreadable values are
/// ignored), keyed by lower-case platform name.
///
/// IRC without `IRC_HOME_CHANNEL` uses the first channel of `IRC_CHANNEL` (Python Hermes'
/// IRC plugin: "home channel defaults to IRC_CHANNEL so cron `deliver=irc` has a target").
/// Email's home is the address in `EMAIL_HOME_ADDRESS`; Matrix reads `MATRIX_HOME_ROOM` (a
/// room id, `:` included) with `MATRIX_HOME_ROOM_THREAD_ID` (a thread root event id) — both
/// Python Hermes' names.
pub fn home_channels_from_env(env: &BTreeMap<String, String>) -> BTreeMap<String, ChatTarget> {
    let mut homes = home_channels_in(env);
    let value = |k: &str| env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    let target = |chat: &str, thread: Option<&str>| ChatTarget {
        chat_id: chat.to_string(),
        thread_id: thread.map(str::to_owned),
        reply_to: None,
    };
    if let Some(address) = value("EMAIL_HOME_ADDRESS") {
        homes.insert("email".into(), target(address, None));
    }
    if let Some(room) = value("MATRIX_HOME_ROOM") {
        let thread = value("MATRIX_HOME_ROOM_THREAD_ID");
        homes.insert("matrix".into(), target(room, thread));
    }
    let irc_default =
        value("IRC_CHANNEL").and_then(|v| v.split(',').map(str::trim).find(|c| !c.is_empty()));
    if let (false, Some(channel)) = (homes.contains_key("irc"), irc_default) {
        homes.insert("irc".into(), target(channel, None));
    }
    homes
}

fn home_channels_in(env: &BTreeMap<String, String>) -> BTreeMap<String, ChatTarget> {
    env.iter()
        .filter_map(|(k, v)| {
            let platform = k.strip_suffix("_HOME_CHANNEL")?;
            let address = hermes_protocol::ChatAddress::on(platform, v).ok()?;
            Some((
                address.platform,
                ChatTarget {
                    chat_id: address.chat_id,
                    thread_id: address.thread_id,
                    reply_to: None,
                },
            ))
        })
        .collect()
}

/// Sends unprompted messages through the gateway's running adapters.
#[derive(Clone)]
pub struct Outbox {
    adapters: BTreeMap<String, Arc<dyn PlatformAdapter>>,
    homes: BTreeMap<String, ChatTarget>,
    sethome: Option<crate::status::HomeChannels>,
}

impl Outbox {
    /// An outbox over `adapters` (keyed by [`PlatformAdapter::name`], lower-cased) with the
    /// home channels `homes` (see [`home_channels_from_env`]).
    pub fn new(
        adapters: &[Arc<dyn PlatformAdapter>],
        homes: BTreeMap<String, ChatTarget>,
    ) -> Outbox {
        Outbox {
            adapters: adapters
                .iter()
                .map(|a| (a.name().to_ascii_lowercase(), a.clone()))
                .collect(),
            homes,
            sethome: None,
        }
    }

    /// Also honours the home channels chosen in chat with `/sethome` (read at each send so a
    /// `/sethome` made while the gateway runs counts, on any replica when they are shared);
    /// they win over `<PLATFORM>_HOME_CHANNEL`.
    pub fn with_sethome(mut self, homes: crate::status::HomeChannels) -> Outbox {
        self.sethome = Some(homes);
        self
    }

    /// The platforms it can send to, sorted.
    pub fn platforms(&self) -> Vec<String> {
        self.adapters.keys().cloned().collect()
    }

    /// The home channel of `platform`, if configured.
    pub fn home_channel(&self, platform: &str) -> Option<ChatTarget> {
        let key = platform.to_ascii_lowercase();
        let chosen = self
            .sethome
            .as_ref()
            .and_then(|homes| homes.all().remove(&key))
            .map(|h| ChatTarget {
                chat_id: h.chat_id,
                thread_id: h.thread_id,
                reply_to: None,
            });
        chosen.or_else(|| self.homes.get(&key).cloned())
    }

    /// The adapter of `platform` and the chat to send to (`None`: its home channel).
    fn route(
        &self,
        platform: &str,
        chat: Option<ChatTarget>,
    ) -> Result<(&Arc<dyn PlatformAdapter>, ChatTarget), OutboxError> {
        let key = platform.to_ascii_lowercase();
        let Some(adapter) = self.adapters.get(&key) else {
            let running = self.platforms().join(", ");
            return Err(OutboxError::NotRunning {
                platform: key,
                running: if running.is_empty() {
                    "none".into()
                } else {
                    running
                },
            });
        };
        let target = match chat {
            Some(t) => t,
            None => self
                .home_channel(&key)
                .ok_or_else(|| OutboxError::NoHomeChannel {
                    var: home_channel_var(&key),
                    platform: key.clone(),
                })?,
        };
        Ok((adapter, target))
    }

    /// Sends `markdown` to `chat` on `platform` (`None`: the platform's home channel), split
    /// and formatted for the platform. Returns the number of parts sent. No retries here:
    /// the caller decides (the scheduler retries with backoff).
    pub async fn send(
        &self,
        platform: &str,
        chat: Option<ChatTarget>,
        markdown: &str,
    ) -> Result<usize, OutboxError> {
        let (adapter, target) = self.route(platform, chat)?;
        let chunks = crate::render_chunks(markdown, &adapter.limits());
        if chunks.is_empty() {
            return Err(OutboxError::Empty);
        }
        let total = chunks.len();
        for (sent, chunk) in chunks.iter().enumerate() {
            if let Err(e) = adapter.send(&target, chunk).await {
                return Err(OutboxError::Send {
                    sent,
                    total,
                    detail: e.to_string(),
                });
            }
        }
        Ok(total)
    }

    /// Sends the file at `path` to `chat` on `platform` (`None`: its home channel) as a native
    /// attachment, without a caption. The caller chose the file (no [`crate::MediaPolicy`]
    /// here). No retries.
    pub async fn send_file(
        &self,
        platform: &str,
        chat: Option<ChatTarget>,
        path: &std::path::Path,
    ) -> Result<(), OutboxError> {
        let (adapter, target) = self.route(platform, chat)?;
        adapter
            .send_file(&target, path, None)
            .await
            .map(drop)
            .map_err(|e| OutboxError::Send {
                sent: 0,
                total: 1,
                detail: format!("{}: {e}", path.display()),
            })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn home_channels_read_chat_and_thread() {
        let env: BTreeMap<String, String> = [
            ("TELEGRAM_HOME_CHANNEL", "-100123"),
            ("DISCORD_HOME_CHANNEL", " 555:777 "),
            ("SLACK_HOME_CHANNEL", ""),
            ("HOME_CHANNEL", "x"),
            ("TELEGRAM_BOT_TOKEN", "t"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let homes = home_channels_from_env(&env);
        assert_eq!(homes.len(), 2, "{homes:?}");
        assert_eq!(homes["telegram"].chat_id, "-100123");
        assert_eq!(homes["telegram"].thread_id, None);
        assert_eq!(homes["discord"].chat_id, "555");
        assert_eq!(homes["discord"].thread_id.as_deref(), Some("777"));
        assert_eq!(home_channel_var("slack"), "SLACK_HOME_CHANNEL");
        let irc = |pairs: &[(&str, &str)]| {
            let env: BTreeMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            home_channels_from_env(&env)
                .get("irc")
                .map(|t| t.chat_id.clone())
        };
        assert_eq!(irc(&[("IRC_CHANNEL", " #a, #b")]).as_deref(), Some("#a"));
        assert_eq!(
            irc(&[("IRC_CHANNEL", "#a"), ("IRC_HOME_CHANNEL", "#ops")]).as_deref(),
            Some("#ops")
        );
        assert_eq!(irc(&[]), None);
        let env: BTreeMap<String, String> = [("EMAIL_HOME_ADDRESS", " me@example.com ")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(
            home_channels_from_env(&env)["email"].chat_id,
            "me@example.com"
        );
        assert_eq!(home_channel_var("email"), "EMAIL_HOME_ADDRESS");
        let matrix = |pairs: &[(&str, &str)]| {
            let env: BTreeMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            home_channels_from_env(&env).get("matrix").cloned()
        };
        let home = matrix(&[
            ("MATRIX_HOME_ROOM", "!ops:example.org"),
            ("MATRIX_HOME_ROOM_THREAD_ID", "$root"),
        ])
        .unwrap();
        assert_eq!(
            home.chat_id, "!ops:example.org",
            "the room id keeps its colon"
        );
        assert_eq!(home.thread_id.as_deref(), Some("$root"));
        assert_eq!(home_channel_var("matrix"), "MATRIX_HOME_ROOM");
    }

    #[test]
    fn a_sethome_choice_wins_over_the_env_home_channel() {
        let dir = tempfile::tempdir().unwrap();
        let home = hermes_protocol::HermesHome::new(dir.path());
        let env: BTreeMap<String, String> =
            [("TELEGRAM_HOME_CHANNEL".to_string(), "1".to_string())]
                .into_iter()
                .collect();
        let outbox = Outbox::new(&[], home_channels_from_env(&env))
            .with_sethome(crate::status::HomeChannels::in_file(&home));
        assert_eq!(outbox.home_channel("telegram").unwrap().chat_id, "1");
        let chosen = ChatTarget {
            chat_id: "42".into(),
            thread_id: Some("7".into()),
            reply_to: Some("9".into()),
        };
        crate::status::set_home_channel(&home, "telegram", &chosen).unwrap();
        let now = outbox.home_channel("Telegram").unwrap();
        assert_eq!(
            (now.chat_id.as_str(), now.thread_id.as_deref()),
            ("42", Some("7"))
        );
        assert_eq!(now.reply_to, None);
    }
}
