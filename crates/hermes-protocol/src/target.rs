//! Chat addresses in delivery targets: `<platform>:<chat>[:<thread>]`, as written after
//! `hermes cron create --deliver`, in `hermes send --to` and in `messages_send`.
//!
//! Most platforms' chat ids have no `:` and the part after a second `:` is a thread
//! (Telegram topic `telegram:-1001234567890:17585`, Discord thread, Slack thread `ts`). A few
//! ids contain `:` themselves and are read whole, following Python Hermes 0.19.0's
//! `tools/send_message_tool.py` (`_parse_target_ref`):
//! - Matrix room, user and alias ids (`!room:server.org`, `@user:server.org`,
//!   `#alias:server.org`), with an optional thread root event after `:$`
//!   (`!room:server.org:$event`);
//! - email addresses (`email:ops@example.com`);
//! - Signal groups (`signal:group:<base64 id>`).

/// Why a chat address cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadChatAddress {
    /// The platform name is empty or not made of ASCII letters, digits and `_`.
    #[error("`{0}` is not a platform name (letters, digits and _)")]
    Platform(String),
    /// The chat part is empty.
    #[error("no chat after `{0}:`")]
    EmptyChat(String),
    /// The address holds whitespace, a control character or a comma.
    #[error("`{0}` holds a space, a control character or a comma")]
    Character(String),
    /// More `:`-separated parts than `<chat>:<thread>` for a platform whose ids have none.
    #[error("`{0}` has more parts than <chat>:<thread>")]
    TooManyParts(String),
}

/// A chat (and thread) on one platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatAddress {
    /// The platform, lower-cased (`telegram`, `matrix`, …).
    pub platform: String,
    /// The platform's chat id, as written.
    pub chat_id: String,
    /// A thread (topic, thread `ts`, root event) inside the chat.
    pub thread_id: Option<String>,
}

/// Whether `name` can be a platform name: non-empty ASCII letters, digits and `_`.
pub fn is_platform_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl ChatAddress {
    /// Reads `<platform>:<chat>[:<thread>]` (surrounding whitespace ignored).
    ///
    /// Errors: [`BadChatAddress`] when there is no `:`, the platform name is not one, the chat
    /// is empty, the text holds whitespace, control characters or commas (commas separate
    /// targets), or a platform without `:` in its ids is given more than two parts.
    pub fn parse(text: &str) -> Result<ChatAddress, BadChatAddress> {
        let text = text.trim();
        let (platform, rest) = text
            .split_once(':')
            .ok_or_else(|| BadChatAddress::EmptyChat(text.to_string()))?;
        ChatAddress::on(platform, rest)
    }

    /// Reads the part after `<platform>:` for `platform` (see the module documentation for
    /// which platforms' ids keep their `:`).
    ///
    /// Errors: as [`ChatAddress::parse`].
    pub fn on(platform: &str, rest: &str) -> Result<ChatAddress, BadChatAddress> {
        if !is_platform_name(platform) {
            return Err(BadChatAddress::Platform(platform.to_string()));
        }
        let platform = platform.to_ascii_lowercase();
        let rest = rest.trim();
        if rest.is_empty() {
            return Err(BadChatAddress::EmptyChat(platform));
        }
        if rest
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == ',')
        {
            return Err(BadChatAddress::Character(format!("{platform}:{rest}")));
        }
        let whole = |chat: &str, thread: Option<&str>| ChatAddress {
            platform: platform.clone(),
            chat_id: chat.to_string(),
            thread_id: thread.map(str::to_string),
        };
        let matrix_id = platform == "matrix" && rest.starts_with(['!', '@', '#']);
        if matrix_id {
            return Ok(match rest.rfind(":$") {
                Some(i) if i > 0 => whole(&rest[..i], Some(&rest[i + 1..])),
                _ => whole(rest, None),
            });
        }
        let email = platform == "email" && rest.contains('@');
        let signal_group = platform == "signal" && rest.starts_with("group:");
        if email || signal_group {
            return Ok(whole(rest, None));
        }
        let mut parts = rest.split(':');
        let chat = parts.next().unwrap_or_default();
        let thread = parts.next();
        if parts.next().is_some() {
            return Err(BadChatAddress::TooManyParts(format!("{platform}:{rest}")));
        }
        if chat.is_empty() || thread.is_some_and(str::is_empty) {
            return Err(BadChatAddress::EmptyChat(platform));
        }
        Ok(whole(chat, thread))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(text: &str) -> (String, String, Option<String>) {
        let a = ChatAddress::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        (a.platform, a.chat_id, a.thread_id)
    }

    #[test]
    fn chats_and_threads() {
        assert_eq!(
            parts("Telegram:-1001234567890:17585"),
            (
                "telegram".into(),
                "-1001234567890".into(),
                Some("17585".into())
            )
        );
        assert_eq!(parts("discord:999"), ("discord".into(), "999".into(), None));
        assert_eq!(parts("irc:#ops"), ("irc".into(), "#ops".into(), None));
        assert_eq!(
            parts("slack:C0123:1712345678.000100"),
            (
                "slack".into(),
                "C0123".into(),
                Some("1712345678.000100".into())
            )
        );
        assert_eq!(
            parts("signal:+15551234567"),
            ("signal".into(), "+15551234567".into(), None)
        );
    }

    #[test]
    fn ids_with_colons_are_read_whole() {
        assert_eq!(
            parts("matrix:!abc:example.org"),
            ("matrix".into(), "!abc:example.org".into(), None)
        );
        assert_eq!(
            parts("matrix:!abc:example.org:$ev1"),
            (
                "matrix".into(),
                "!abc:example.org".into(),
                Some("$ev1".into())
            )
        );
        assert_eq!(
            parts("matrix:@bob:example.org").1,
            "@bob:example.org".to_string()
        );
        assert_eq!(
            parts("email:ops@example.com"),
            ("email".into(), "ops@example.com".into(), None)
        );
        assert_eq!(parts("signal:group:abc=").1, "group:abc=".to_string());
    }

    #[test]
    fn bad_addresses_say_why() {
        for (text, want) in [
            ("telegram", "no chat after"),
            ("telegram:", "no chat after"),
            ("tele gram:1", "not a platform name"),
            (":1", "not a platform name"),
            ("telegram:1 2", "space"),
            ("telegram:1,2", "comma"),
            ("telegram:1\r\nPRIVMSG", "space"),
            ("discord:1:2:3", "more parts"),
            ("discord:1:", "no chat after"),
        ] {
            let err = ChatAddress::parse(text).expect_err(text).to_string();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
