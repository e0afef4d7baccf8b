//! What a received envelope is: signal-cli's `receive` notification (`{"envelope": {…},
//! "account": …}`, documented in `signal-cli-jsonrpc(5)`) turned into an
//! [`InboundMessage`], or a reason to skip it. Rules carried over from Python Hermes'
//! `gateway/platforms/signal.py`: group messages only from groups listed in
//! `SIGNAL_GROUP_ALLOWED_USERS` (`*`: every group; unset: none), "Note to Self" messages
//! (a sync of a message the account sent to itself) are read, echoes of the adapter's own
//! sends are not, stories are skipped, edits are read as new messages, mention
//! placeholders (U+FFFC) become `@number`, and the bot's own mention is removed.

use serde_json::Value;

use super::PLATFORM;
use crate::platform::{ChatType, InboundMessage, MessageSource};

/// Signal's mention placeholder in a message body.
const MENTION_PLACEHOLDER: char = '\u{FFFC}';

/// Who the adapter is and which group messages it reads.
pub(crate) struct Filter<'a> {
    /// The account (`+15551234567`).
    pub(crate) account: &'a str,
    /// Group ids whose messages are read (`*`: all).
    pub(crate) groups: &'a [String],
    /// In groups, read only messages that mention the account.
    pub(crate) require_mention: bool,
    /// Skip story messages.
    pub(crate) ignore_stories: bool,
}

/// An attachment as the envelope describes it (fetched with `getAttachment`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RemoteAttachment {
    /// signal-cli's attachment id.
    pub(crate) id: String,
    /// MIME type.
    pub(crate) content_type: Option<String>,
    /// The sender's file name.
    pub(crate) file_name: Option<String>,
    /// Declared size in bytes.
    pub(crate) size: Option<u64>,
}

/// A message to hand on, with its files still to fetch.
#[derive(Debug)]
pub(crate) struct Incoming {
    /// The message (text, source, ids).
    pub(crate) msg: InboundMessage,
    /// Attachments to fetch.
    pub(crate) files: Vec<RemoteAttachment>,
}

/// What an event is.
#[derive(Debug)]
pub(crate) enum Parsed {
    /// A message for the gateway.
    Message(Box<Incoming>),
    /// Nothing to answer (receipts, typing, own echoes, filtered groups); the reason is
    /// for the debug log.
    Skip(&'static str),
}

fn s<'v>(v: &'v Value, k: &str) -> Option<&'v str> {
    v.get(k).and_then(Value::as_str).filter(|x| !x.is_empty())
}

/// Reads one event. `own_echo(timestamp)` says (and forgets) whether a sync message is the
/// echo of something the adapter sent. `Err` names what is malformed.
pub(crate) fn parse(
    data: &Value,
    f: &Filter<'_>,
    own_echo: &mut dyn FnMut(u64) -> bool,
) -> Result<Parsed, String> {
    if !data.is_object() {
        return Err("the event is not a JSON object".into());
    }
    if let Some(account) = s(data, "account")
        && account != f.account
    {
        return Ok(Parsed::Skip("an envelope of another account"));
    }
    let mut env = data.get("envelope").unwrap_or(data).clone();
    if !env.is_object() {
        return Err("`envelope` is not an object".into());
    }
    let mut note_to_self = false;
    if let Some(sync) = env.get("syncMessage") {
        let Some(sent) = sync.get("sentMessage").filter(|v| v.is_object()) else {
            return Ok(Parsed::Skip("a sync message (read receipts, contacts, …)"));
        };
        let dest = s(sent, "destinationNumber").or_else(|| s(sent, "destination"));
        let group = sent.pointer("/groupInfo/groupId").and_then(Value::as_str);
        if dest != Some(f.account) && group.is_none() {
            return Ok(Parsed::Skip(
                "a sync of a message the account sent to someone",
            ));
        }
        if let Some(ts) = sent.get("timestamp").and_then(Value::as_u64)
            && own_echo(ts)
        {
            return Ok(Parsed::Skip("the echo of a message hermes sent"));
        }
        note_to_self = true;
        let sent = sent.clone();
        if let Some(map) = env.as_object_mut() {
            map.insert("dataMessage".into(), sent);
        }
    }
    let sender = s(&env, "sourceNumber")
        .or_else(|| s(&env, "sourceUuid"))
        .or_else(|| s(&env, "source"))
        .map(str::to_owned);
    let Some(sender) = sender else {
        return Err("an envelope without a sender".into());
    };
    if sender == f.account && !note_to_self {
        return Ok(Parsed::Skip("a message of the account itself"));
    }
    if f.ignore_stories && env.get("storyMessage").is_some() {
        return Ok(Parsed::Skip("a story"));
    }
    let data_message = env
        .get("dataMessage")
        .filter(|v| v.is_object())
        .or_else(|| {
            env.pointer("/editMessage/dataMessage")
                .filter(|v| v.is_object())
        });
    let Some(dm) = data_message else {
        if env.get("receiptMessage").is_some() {
            return Ok(Parsed::Skip("a receipt"));
        }
        if env.get("typingMessage").is_some() {
            return Ok(Parsed::Skip("a typing notification"));
        }
        return Ok(Parsed::Skip("an envelope without a data message"));
    };
    let group_id = dm
        .pointer("/groupInfo/groupId")
        .and_then(Value::as_str)
        .filter(|g| !g.is_empty());
    if let Some(g) = group_id
        && !f.groups.iter().any(|a| a == "*" || a == g)
    {
        return Ok(Parsed::Skip(
            "a group message from a group not in SIGNAL_GROUP_ALLOWED_USERS",
        ));
    }
    let mentions = dm
        .get("mentions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut text = dm
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let bot_mentioned = mentions
        .iter()
        .any(|m| s(m, "number") == Some(f.account) || s(m, "uuid") == Some(f.account));
    text = render_mentions(&text, &mentions);
    if group_id.is_some() {
        let own = format!("@{}", f.account);
        if f.require_mention && !bot_mentioned && !text.contains(&own) {
            return Ok(Parsed::Skip(
                "a group message that does not mention the bot",
            ));
        }
        if text.contains(&own) {
            text = text.replace(&own, "").replace("  ", " ").trim().to_string();
        }
    }
    let files: Vec<RemoteAttachment> = dm
        .get("attachments")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|a| {
                    Some(RemoteAttachment {
                        id: s(a, "id")?.to_string(),
                        content_type: s(a, "contentType").map(str::to_owned),
                        file_name: s(a, "filename").map(str::to_owned),
                        size: a.get("size").and_then(Value::as_u64),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if text.trim().is_empty() && files.is_empty() {
        return Ok(Parsed::Skip("an envelope with no text and no attachment"));
    }
    let timestamp = env
        .get("timestamp")
        .and_then(Value::as_u64)
        .or_else(|| dm.get("timestamp").and_then(Value::as_u64))
        .ok_or("an envelope without a timestamp")?;
    let quote = dm.get("quote");
    let msg = InboundMessage {
        source: MessageSource {
            platform: PLATFORM.into(),
            chat_type: if group_id.is_some() {
                ChatType::Group
            } else {
                ChatType::Dm
            },
            chat_id: Some(match group_id {
                Some(g) => format!("group:{g}"),
                None => sender.clone(),
            }),
            thread_id: None,
            user_name: s(&env, "sourceName").map(str::to_owned),
            user_id: Some(sender),
        },
        message_id: Some(timestamp.to_string()),
        text,
        reply_to: quote
            .and_then(|q| q.get("id"))
            .and_then(Value::as_u64)
            .map(|id| id.to_string()),
        reply_to_text: quote.and_then(|q| s(q, "text")).map(str::to_owned),
        attachments: Vec::new(),
    };
    Ok(Parsed::Message(Box::new(Incoming { msg, files })))
}

/// Replaces each mention placeholder by `@number` (or `@uuid`); `start` and `length` are in
/// UTF-16 units, as Signal's body ranges are.
fn render_mentions(text: &str, mentions: &[Value]) -> String {
    if mentions.is_empty() || !text.contains(MENTION_PLACEHOLDER) {
        return text.to_string();
    }
    let mut units: Vec<u16> = text.encode_utf16().collect();
    let mut ranges: Vec<(usize, usize, String)> = mentions
        .iter()
        .filter_map(|m| {
            let start = usize::try_from(m.get("start")?.as_u64()?).ok()?;
            let len = m
                .get("length")
                .and_then(Value::as_u64)
                .and_then(|l| usize::try_from(l).ok())
                .unwrap_or(1);
            let who = s(m, "number").or_else(|| s(m, "uuid")).unwrap_or("user");
            Some((start, len, format!("@{who}")))
        })
        .collect();
    ranges.sort_by_key(|r| std::cmp::Reverse(r.0));
    for (start, len, name) in ranges {
        let end = start.saturating_add(len);
        if end > units.len() {
            continue;
        }
        units.splice(start..end, name.encode_utf16());
    }
    String::from_utf16(&units).unwrap_or_else(|_| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mentions_are_replaced_at_utf16_offsets() {
        let text = "😀 \u{FFFC} hi";
        let out = render_mentions(text, &[json!({"start": 3, "length": 1, "number": "+1555"})]);
        assert_eq!(out, "😀 @+1555 hi");
        // Out-of-range mentions are left alone.
        let out = render_mentions(text, &[json!({"start": 30, "length": 1, "uuid": "u"})]);
        assert_eq!(out, text);
    }
}
