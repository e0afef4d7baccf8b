//! What one `m.room.message` event becomes: who sent it, whether the bot is addressed, and
//! the [`InboundMessage`] the gateway gets (rules carried over from Python Hermes' Matrix
//! adapter so sessions and habits match).
//!
//! - Own events, appservice/bridge users (`@_…:server`), `m.notice` (bots' replies, unless
//!   `MATRIX_PROCESS_NOTICES`) and edits (`m.replace`) are skipped.
//! - A room of at most two joined members is a DM (`dm`); others are rooms (`group`).
//! - In rooms the bot answers when mentioned (`m.mentions.user_ids`, the full user id, the
//!   localpart as a word, or a `matrix.to` pill), for commands, in `MATRIX_FREE_RESPONSE_ROOMS`,
//!   and in threads it already answered in (`MATRIX_REQUIRE_MENTION=false` answers all).
//! - `!command` is an alias of `/command` for the gateway's commands (Matrix clients keep
//!   `/` for themselves).
//! - Room messages outside a thread start one (`MATRIX_AUTO_THREAD`, default true): the
//!   thread id is the message's event id; a message inside a thread keeps its root.
//! - The reply fallback (`> <@user> quoted` lines before a reply) is removed.

use serde::Deserialize;
use serde_json::Value;

use super::PLATFORM;
use crate::platform::{ChatType, InboundMessage, MessageSource};

/// One event of a sync response, as far as the adapter reads it.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct RawEvent {
    /// Event type (`m.room.message`, `m.room.member`, …).
    #[serde(rename = "type")]
    pub(crate) kind: String,
    /// Sender's user id.
    #[serde(default)]
    pub(crate) sender: String,
    /// Event id (absent on stripped invite state).
    #[serde(default)]
    pub(crate) event_id: Option<String>,
    /// State key (state events only).
    #[serde(default)]
    pub(crate) state_key: Option<String>,
    /// The content.
    #[serde(default)]
    pub(crate) content: Value,
}

/// The message types carrying text.
const TEXT_TYPES: [&str; 3] = ["m.text", "m.emote", "m.notice"];
/// The message types carrying a file in the content repository.
pub(crate) const MEDIA_TYPES: [&str; 4] = ["m.image", "m.file", "m.audio", "m.video"];

/// What the adapter knows of the room and itself when reading a message.
pub(crate) struct Context<'a> {
    /// The bot's own user id.
    pub(crate) own_user: &'a str,
    /// The room id.
    pub(crate) room: &'a str,
    /// Whether the room is a DM.
    pub(crate) is_dm: bool,
    /// `MATRIX_REQUIRE_MENTION`.
    pub(crate) require_mention: bool,
    /// The room is in `MATRIX_FREE_RESPONSE_ROOMS`.
    pub(crate) free_room: bool,
    /// `MATRIX_AUTO_THREAD`.
    pub(crate) auto_thread: bool,
    /// `MATRIX_PROCESS_NOTICES`.
    pub(crate) process_notices: bool,
    /// Whether the bot already answered in the thread with this root.
    pub(crate) in_bot_thread: &'a (dyn Fn(&str) -> bool + Sync),
}

/// Why a message event is not handed to the gateway (debug log only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Skip {
    /// Sent by the bot itself.
    Own,
    /// An appservice / bridge / malformed sender.
    System,
    /// `m.notice`, an edit, or a message type the adapter does not read.
    NotForUs(&'static str),
    /// In a room, without a mention.
    NotAddressed,
    /// The event has no id or no usable body (malformed).
    Malformed(&'static str),
}

/// A message the gateway will get, and the file to fetch for it, if any.
#[derive(Debug, Clone)]
pub(crate) struct Parsed {
    /// The message (text already cleaned).
    pub(crate) message: InboundMessage,
    /// For media messages: the `mxc://` URI, the file name, the MIME type and declared size.
    pub(crate) media: Option<(String, String, Option<String>, Option<u64>)>,
}

/// True for appservice / bridge / malformed sender ids (`@_telegram_1:server`, `@:server`).
pub(crate) fn is_system_sender(sender: &str) -> bool {
    let s = sender.trim();
    let s = s.strip_prefix('@').unwrap_or(s);
    let local = s.split(':').next().unwrap_or("");
    local.is_empty() || local.starts_with('_')
}

fn localpart(user: &str) -> &str {
    user.trim_start_matches('@').split(':').next().unwrap_or("")
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `needle` occurs in `hay` as a whole word, case-insensitively.
fn has_word(hay: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    let (hay, needle) = (hay.to_lowercase(), needle.to_lowercase());
    let mut from = 0;
    while let Some(pos) = hay[from..].find(&needle) {
        let start = from + pos;
        let end = start + needle.len();
        let before = hay[..start].chars().next_back();
        let after = hay[end..].chars().next();
        if !before.is_some_and(is_word_char) && !after.is_some_and(is_word_char) {
            return true;
        }
        from = start + needle.len().max(1);
    }
    false
}

/// Whether `content` addresses `own` (see the module docs).
pub(crate) fn mentions(content: &Value, body: &str, own: &str) -> bool {
    let listed = content
        .pointer("/m.mentions/user_ids")
        .and_then(Value::as_array)
        .is_some_and(|ids| ids.iter().any(|i| i.as_str() == Some(own)));
    let formatted = content
        .get("formatted_body")
        .and_then(Value::as_str)
        .unwrap_or("");
    listed
        || body.contains(own)
        || has_word(body, localpart(own))
        || formatted.contains(&format!("matrix.to/#/{own}"))
}

/// Removes `@localpart`, the full user id and a leading `localpart:` / `localpart,` (how
/// clients address someone) from `body` — not the bare word elsewhere: "Hermes Agent"
/// stays — then tidies the spacing.
pub(crate) fn strip_mention(body: &str, own: &str) -> String {
    let mut text = body.replace(own, "");
    let local = localpart(own);
    let head = text.trim_start();
    if !local.is_empty()
        && head.len() > local.len()
        && head.is_char_boundary(local.len())
        && head[..local.len()].eq_ignore_ascii_case(local)
        && head[local.len()..].starts_with([':', ','])
    {
        text = head[local.len() + 1..].to_string();
    }
    let at = format!("@{}", localpart(own));
    if at.len() > 1 {
        let mut out = String::with_capacity(text.len());
        let lower = text.to_lowercase();
        let mut i = 0;
        while i < text.len() {
            if lower[i..].starts_with(&at.to_lowercase())
                && !text[..i].chars().next_back().is_some_and(is_word_char)
                && !text[i + at.len()..]
                    .chars()
                    .next()
                    .is_some_and(is_word_char)
            {
                i += at.len();
                continue;
            }
            let Some(c) = text[i..].chars().next() else {
                break;
            };
            out.push(c);
            i += c.len_utf8();
        }
        text = out;
    }
    // "@bot: hi" leaves ": hi"; a display-name pill leaves "name: hi" only when it was
    // written out, which is fine.
    let trimmed = text.trim_start_matches([' ', ':', ',']);
    let mut out = String::with_capacity(trimmed.len());
    for c in trimmed.chars() {
        if (c == ' ' || c == '\t') && out.ends_with([' ', '\t']) {
            continue;
        }
        out.push(c);
    }
    out.trim().to_string()
}

/// Drops the `> ` quoted lines a reply starts with (the spec's reply fallback).
pub(crate) fn strip_reply_fallback(body: &str) -> String {
    if !body.starts_with("> ") {
        return body.to_string();
    }
    let mut lines = body.lines().peekable();
    while lines
        .next_if(|l| l.starts_with("> ") || *l == ">")
        .is_some()
    {}
    lines.next_if(|l| l.is_empty());
    let rest: Vec<&str> = lines.collect();
    if rest.is_empty() {
        body.to_string()
    } else {
        rest.join("\n")
    }
}

/// `!command args` → `/command args` when `command` is one of the gateway's commands.
pub(crate) fn normalize_bang(text: &str) -> String {
    let Some(rest) = text.strip_prefix('!') else {
        return text.to_string();
    };
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return text.to_string();
    }
    let slash = format!("/{rest}");
    match hermes_agent::commands::parse(&slash, hermes_agent::commands::Surface::Gateway) {
        Some(
            hermes_agent::commands::Parsed::Command(_) | hermes_agent::commands::Parsed::Invalid(_),
        ) => slash,
        _ => text.to_string(),
    }
}

/// Reads one `m.room.message` event (see the module docs).
pub(crate) fn parse_message(ev: &RawEvent, cx: &Context<'_>) -> Result<Parsed, Skip> {
    if ev.sender.trim().eq_ignore_ascii_case(cx.own_user.trim()) {
        return Err(Skip::Own);
    }
    if is_system_sender(&ev.sender) {
        return Err(Skip::System);
    }
    let Some(event_id) = ev.event_id.clone() else {
        return Err(Skip::Malformed("no event_id"));
    };
    let content = &ev.content;
    let relates = content.get("m.relates_to").unwrap_or(&Value::Null);
    let rel_type = relates.get("rel_type").and_then(Value::as_str);
    if rel_type == Some("m.replace") {
        return Err(Skip::NotForUs("an edit"));
    }
    let msgtype = content.get("msgtype").and_then(Value::as_str).unwrap_or("");
    if msgtype == "m.notice" && !cx.process_notices {
        return Err(Skip::NotForUs("m.notice"));
    }
    let is_media = MEDIA_TYPES.contains(&msgtype);
    if !is_media && !TEXT_TYPES.contains(&msgtype) {
        return Err(Skip::NotForUs("a message type without text"));
    }
    let Some(body) = content.get("body").and_then(Value::as_str) else {
        return Err(Skip::Malformed("no body"));
    };
    let thread_root = (rel_type == Some("m.thread"))
        .then(|| relates.get("event_id").and_then(Value::as_str))
        .flatten()
        .map(str::to_owned);
    let reply_to = relates
        .pointer("/m.in_reply_to/event_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mentioned = mentions(content, body, cx.own_user);
    let mut text = if reply_to.is_some() {
        strip_reply_fallback(body)
    } else {
        body.to_string()
    };
    if !cx.is_dm {
        let command = text.starts_with('/') || normalize_bang(&text).starts_with('/');
        let in_thread = thread_root
            .as_deref()
            .is_some_and(|t| (cx.in_bot_thread)(t));
        if cx.require_mention && !cx.free_room && !in_thread && !mentioned && !command {
            return Err(Skip::NotAddressed);
        }
    }
    if mentioned && cx.require_mention && !is_media {
        text = strip_mention(&text, cx.own_user);
    }
    text = normalize_bang(&text);
    if msgtype == "m.emote" {
        text = format!("* {text}");
    }
    let thread_id = match thread_root {
        Some(root) => Some(root),
        None if !cx.is_dm && cx.auto_thread => Some(event_id.clone()),
        None => None,
    };
    let media = if is_media {
        let Some(url) = content.get("url").and_then(Value::as_str) else {
            // An encrypted file (`file` instead of `url`) cannot be fetched without keys.
            return Err(Skip::Malformed("a file without a url (encrypted media)"));
        };
        let info = content.get("info");
        let name = content
            .get("filename")
            .and_then(Value::as_str)
            .unwrap_or(body)
            .to_string();
        let mime = info
            .and_then(|i| i.get("mimetype"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let size = info.and_then(|i| i.get("size")).and_then(Value::as_u64);
        // A caption is the body when a separate file name is given (spec v1.10).
        text = match content.get("filename").and_then(Value::as_str) {
            Some(f) if f != body => text,
            _ => String::new(),
        };
        Some((url.to_string(), name, mime, size))
    } else {
        if text.trim().is_empty() {
            return Err(Skip::Malformed("an empty body"));
        }
        None
    };
    Ok(Parsed {
        message: InboundMessage {
            source: MessageSource {
                platform: PLATFORM.into(),
                chat_type: if cx.is_dm {
                    ChatType::Dm
                } else {
                    ChatType::Group
                },
                chat_id: Some(cx.room.to_string()),
                thread_id,
                user_id: Some(ev.sender.clone()),
                user_name: None,
            },
            message_id: Some(event_id),
            text,
            reply_to,
            reply_to_text: None,
            attachments: Vec::new(),
        },
        media,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BOT: &str = "@hermes:example.org";

    fn ev(sender: &str, content: Value) -> RawEvent {
        RawEvent {
            kind: "m.room.message".into(),
            sender: sender.into(),
            event_id: Some("$e1".into()),
            state_key: None,
            content,
        }
    }

    fn cx(is_dm: bool, threads: &(dyn Fn(&str) -> bool + Sync)) -> Context<'_> {
        Context {
            own_user: BOT,
            room: "!r:example.org",
            is_dm,
            require_mention: true,
            free_room: false,
            auto_thread: true,
            process_notices: false,
            in_bot_thread: threads,
        }
    }

    #[test]
    fn dm_text_is_a_message_without_thread() {
        let no = |_: &str| false;
        let p = parse_message(
            &ev(
                "@alice:example.org",
                json!({"msgtype":"m.text","body":"hi"}),
            ),
            &cx(true, &no),
        )
        .unwrap();
        let m = p.message;
        assert_eq!(m.source.chat_type, ChatType::Dm);
        assert_eq!(m.source.chat_id.as_deref(), Some("!r:example.org"));
        assert_eq!(m.source.user_id.as_deref(), Some("@alice:example.org"));
        assert_eq!(m.source.thread_id, None);
        assert_eq!(m.message_id.as_deref(), Some("$e1"));
        assert_eq!(m.text, "hi");
    }

    #[test]
    fn rooms_need_a_mention_and_start_a_thread() {
        let no = |_: &str| false;
        let plain = ev(
            "@alice:example.org",
            json!({"msgtype":"m.text","body":"hello all"}),
        );
        assert_eq!(
            parse_message(&plain, &cx(false, &no)).unwrap_err(),
            Skip::NotAddressed
        );
        let addressed = ev(
            "@alice:example.org",
            json!({"msgtype":"m.text","body":"@hermes: what's up?"}),
        );
        let m = parse_message(&addressed, &cx(false, &no)).unwrap().message;
        assert_eq!(m.text, "what's up?");
        assert_eq!(m.source.chat_type, ChatType::Group);
        assert_eq!(m.source.thread_id.as_deref(), Some("$e1"));
        let pill = ev(
            "@alice:example.org",
            json!({"msgtype":"m.text","body":"Hermes bot: go","m.mentions":{"user_ids":[BOT]}}),
        );
        assert!(parse_message(&pill, &cx(false, &no)).is_ok());
        let command = ev(
            "@alice:example.org",
            json!({"msgtype":"m.text","body":"!new"}),
        );
        assert_eq!(
            parse_message(&command, &cx(false, &no))
                .unwrap()
                .message
                .text,
            "/new"
        );
        // In a thread the bot answered in, no mention is needed.
        let yes = |root: &str| root == "$root";
        let in_thread = ev(
            "@alice:example.org",
            json!({"msgtype":"m.text","body":"and then?","m.relates_to":{"rel_type":"m.thread","event_id":"$root"}}),
        );
        let m = parse_message(&in_thread, &cx(false, &yes)).unwrap().message;
        assert_eq!(m.source.thread_id.as_deref(), Some("$root"));
    }

    #[test]
    fn own_bridge_notice_and_edits_are_skipped() {
        let no = |_: &str| false;
        let c = cx(true, &no);
        let text = json!({"msgtype":"m.text","body":"x"});
        assert_eq!(
            parse_message(&ev(BOT, text.clone()), &c).unwrap_err(),
            Skip::Own
        );
        assert_eq!(
            parse_message(&ev("@_telegram_1:example.org", text), &c).unwrap_err(),
            Skip::System
        );
        let notice = ev("@bob:example.org", json!({"msgtype":"m.notice","body":"x"}));
        assert!(matches!(parse_message(&notice, &c), Err(Skip::NotForUs(_))));
        let edit = ev(
            "@bob:example.org",
            json!({"msgtype":"m.text","body":"* x","m.relates_to":{"rel_type":"m.replace","event_id":"$a"}}),
        );
        assert!(matches!(parse_message(&edit, &c), Err(Skip::NotForUs(_))));
        let bad = ev("@bob:example.org", json!({"msgtype":"m.text","body":7}));
        assert!(matches!(parse_message(&bad, &c), Err(Skip::Malformed(_))));
    }

    #[test]
    fn reply_fallback_and_bang_commands() {
        assert_eq!(
            strip_reply_fallback("> <@a:b> earlier\n> more\n\nmy answer"),
            "my answer"
        );
        assert_eq!(normalize_bang("!model gpt"), "/model gpt");
        assert_eq!(normalize_bang("!wow that's great"), "!wow that's great");
        assert_eq!(normalize_bang("!!"), "!!");
    }

    #[test]
    fn mention_rules() {
        assert!(mentions(&json!({}), "hey hermes, look", BOT));
        assert!(!mentions(&json!({}), "hermesian thoughts", BOT));
        assert!(mentions(
            &json!({"formatted_body":"<a href=\"https://matrix.to/#/@hermes:example.org\">H</a>"}),
            "H: hi",
            BOT
        ));
        assert_eq!(
            strip_mention("Hermes Agent is @hermes great", BOT),
            "Hermes Agent is great"
        );
        assert_eq!(strip_mention("Hermes: what now?", BOT), "what now?");
        assert_eq!(
            strip_mention("hermesbot: what now?", BOT),
            "hermesbot: what now?"
        );
    }

    #[test]
    fn media_carries_the_uri_and_caption() {
        let no = |_: &str| false;
        let p = parse_message(
            &ev(
                "@a:example.org",
                json!({"msgtype":"m.image","body":"look at this","filename":"cat.png","url":"mxc://example.org/abc","info":{"mimetype":"image/png","size":12}}),
            ),
            &cx(true, &no),
        )
        .unwrap();
        assert_eq!(p.message.text, "look at this");
        let (url, name, mime, size) = p.media.unwrap();
        assert_eq!(
            (url.as_str(), name.as_str(), mime.as_deref(), size),
            (
                "mxc://example.org/abc",
                "cat.png",
                Some("image/png"),
                Some(12)
            )
        );
    }
}
