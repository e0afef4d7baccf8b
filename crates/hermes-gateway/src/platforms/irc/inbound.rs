//! Turning a received `PRIVMSG` into an [`InboundMessage`] (or nothing).
//!
//! As Python Hermes' IRC adapter decides: in a channel the bot answers only when addressed —
//! the text starts with its current nick followed by `:`, `,` or a space (`hermes: hi`,
//! case-insensitive), and that prefix is removed; every private message is for the bot. Our
//! own echoes and CTCP requests are dropped, except `ACTION` (`/me`), which becomes
//! `* nick text`.
//!
//! Identity: IRC nicks are not authenticated — anyone can take a nick nobody is using, and a
//! user can change nick at any time. So when the server offers the IRCv3 `account-tag`
//! capability (and we negotiated it), the sender's **account name** (from services, e.g.
//! NickServ/SASL) is the user id, and a sender who is not logged in has no user id at all
//! (the gateway refuses such a sender: case C36, never authorize on a name the sender
//! controls). Without `account-tag` the user id is the nick, as in Python Hermes; that is
//! only as strong as the network's nick protection. Both are case-folded (RFC 1459 §2.2).

use crate::platform::{ChatType, InboundMessage, MessageSource};

use super::PLATFORM;
use super::proto::{Message, casefold, is_channel};

/// How senders are identified on this connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// The nick (no account information from the server).
    Nick,
    /// The services account from the `account` message tag.
    Account,
}

/// The message `msg` (a `PRIVMSG`) carries for the agent, if any. `me` is our current nick;
/// `id` is used when the server sends no `msgid` tag.
pub fn from_privmsg(
    msg: &Message,
    me: &str,
    identity: Identity,
    id: String,
) -> Option<InboundMessage> {
    let target = msg.param(0)?;
    let raw = msg.param(1)?;
    let nick = msg.nick()?;
    if casefold(nick) == casefold(me) {
        return None;
    }
    let text = if let Some(action) = raw
        .strip_prefix("\x01ACTION ")
        .map(|a| a.trim_end_matches('\x01'))
    {
        format!("* {nick} {action}")
    } else if raw.starts_with('\x01') {
        return None;
    } else {
        raw.to_string()
    };
    let channel = is_channel(target);
    let text = if channel {
        addressed(&text, me)?
    } else {
        text.trim().to_string()
    };
    if text.is_empty() {
        return None;
    }
    let user_id = match identity {
        Identity::Nick => Some(casefold(nick)),
        Identity::Account => msg
            .tag("account")
            .filter(|a| !a.is_empty() && *a != "*")
            .map(casefold),
    };
    Some(InboundMessage {
        source: MessageSource {
            platform: PLATFORM.to_string(),
            chat_type: if channel {
                ChatType::Group
            } else {
                ChatType::Dm
            },
            chat_id: Some(if channel { target } else { nick }.to_string()),
            thread_id: None,
            user_id,
            user_name: Some(nick.to_string()),
        },
        message_id: Some(msg.tag("msgid").map(String::from).unwrap_or(id)),
        text,
        reply_to: None,
        reply_to_text: None,
        attachments: Vec::new(),
    })
}

/// The text after `me:`, `me,` or `me ` at the start of `text`; `None` when not addressed.
fn addressed(text: &str, me: &str) -> Option<String> {
    let head = text.get(..me.len())?;
    if casefold(head) != casefold(me) {
        return None;
    }
    let rest = &text[me.len()..];
    let rest = rest
        .strip_prefix(':')
        .or_else(|| rest.strip_prefix(','))
        .or_else(|| rest.strip_prefix(' '))?;
    Some(rest.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str, identity: Identity) -> Option<InboundMessage> {
        from_privmsg(
            &Message::parse(line).unwrap(),
            "Hermes",
            identity,
            "g1".into(),
        )
    }

    #[test]
    fn channel_messages_must_address_the_bot() {
        let m = parse(
            ":Alice!a@h PRIVMSG #dev :hermes: what time is it",
            Identity::Nick,
        )
        .unwrap();
        assert_eq!(m.text, "what time is it");
        assert_eq!(m.source.chat_type, ChatType::Group);
        assert_eq!(m.source.chat_id.as_deref(), Some("#dev"));
        assert_eq!(m.source.user_id.as_deref(), Some("alice"));
        assert_eq!(m.source.user_name.as_deref(), Some("Alice"));
        assert_eq!(m.message_id.as_deref(), Some("g1"));
        for other in [
            ":a!a@h PRIVMSG #dev :hello all",
            ":a!a@h PRIVMSG #dev :hermesbot: hi",
            ":a!a@h PRIVMSG #dev :hermes:",
            ":Hermes!b@h PRIVMSG #dev :hermes: my own echo",
            ":a!a@h PRIVMSG #dev :\x01VERSION\x01",
        ] {
            assert_eq!(parse(other, Identity::Nick), None, "{other}");
        }
        assert_eq!(
            parse(":a!a@h PRIVMSG #dev :HERMES, hi", Identity::Nick)
                .unwrap()
                .text,
            "hi"
        );
        assert_eq!(
            parse(":a!a@h PRIVMSG #dev :hermes ping", Identity::Nick)
                .unwrap()
                .text,
            "ping"
        );
    }

    #[test]
    fn private_messages_need_no_prefix_and_reply_to_the_nick() {
        let m = parse(":Bob[x]!b@h PRIVMSG Hermes :  hi  ", Identity::Nick).unwrap();
        assert_eq!(m.text, "hi");
        assert_eq!(m.source.chat_type, ChatType::Dm);
        assert_eq!(m.source.chat_id.as_deref(), Some("Bob[x]"));
        assert_eq!(m.source.user_id.as_deref(), Some("bob{x}"));
        let m = parse(
            ":bob!b@h PRIVMSG Hermes :\x01ACTION waves\x01",
            Identity::Nick,
        )
        .unwrap();
        assert_eq!(m.text, "* bob waves");
    }

    #[test]
    fn with_account_tags_the_account_is_the_identity_and_nick_only_senders_have_none() {
        let m = parse(
            "@account=AliceAcct;msgid=xyz :alice!a@h PRIVMSG Hermes :hi",
            Identity::Account,
        )
        .unwrap();
        assert_eq!(m.source.user_id.as_deref(), Some("aliceacct"));
        assert_eq!(m.message_id.as_deref(), Some("xyz"));
        // Someone who took the nick `alice` without logging in is nobody.
        let m = parse(":alice!x@evil PRIVMSG Hermes :hi", Identity::Account).unwrap();
        assert_eq!(m.source.user_id, None);
        let m = parse(
            "@account=* :alice!x@evil PRIVMSG Hermes :hi",
            Identity::Account,
        )
        .unwrap();
        assert_eq!(m.source.user_id, None);
    }
}
