//! Meta's webhook payloads: the `X-Hub-Signature-256` check over the raw body, and the
//! `whatsapp_business_account` notification walked into messages and failed deliveries.
//!
//! Shape (Meta for Developers, "Webhooks — messages" reference and payload examples):
//! `{"object": "whatsapp_business_account", "entry": [{"id", "changes": [{"field":
//! "messages", "value": {"metadata": {"phone_number_id", …}, "contacts": [{"wa_id",
//! "profile": {"name"}}], "messages": [{"from", "id", "timestamp", "type", <type>: {…},
//! "context"?: {"id"}}], "statuses": [{"id", "status", "recipient_id", "errors"?: […]}]}}]}]}`.
//! Text, media (image, video, audio, document, sticker, with caption), button and list
//! replies, locations and shared contacts become messages; reactions, unsupported and system
//! messages are skipped, and so are changes of other fields or of another phone number.

use hmac::{KeyInit, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::PLATFORM;
use crate::platform::{ChatType, InboundMessage, MessageSource};

/// The signature header: `sha256=<hex HMAC-SHA256 of the raw body, keyed with the app secret>`.
pub const SIGNATURE_HEADER: &str = "X-Hub-Signature-256";

/// `X-Hub-Signature-256` for `body` with `app_secret` (what Meta sends; tests sign with it).
pub fn sign(app_secret: &str, body: &[u8]) -> String {
    let mut mac = <hmac::Hmac<Sha256> as KeyInit>::new_from_slice(app_secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// True when `header` is `sha256=<hex>` of `body` with `app_secret` (hex in either case,
/// compared in constant time).
pub(crate) fn verify(app_secret: &str, body: &[u8], header: Option<&str>) -> bool {
    let Some(hex_part) = header.and_then(|h| h.trim().strip_prefix("sha256=")) else {
        return false;
    };
    let Ok(given) = hex::decode(hex_part) else {
        return false;
    };
    let mut mac = <hmac::Hmac<Sha256> as KeyInit>::new_from_slice(app_secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
    mac.update(body);
    mac.verify_slice(&given).is_ok()
}

/// An inbound file to fetch with the Graph media endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MediaRef {
    /// Meta's media id.
    pub(crate) id: String,
    /// MIME type as announced.
    pub(crate) mime_type: Option<String>,
    /// The sender's file name (documents), else `<type>` plus an extension.
    pub(crate) file_name: String,
}

/// One message of a notification.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Parsed {
    /// The message (text filled, attachments not yet downloaded).
    pub(crate) message: InboundMessage,
    /// The file to download, if any.
    pub(crate) media: Option<MediaRef>,
    /// The customer's send time (Unix seconds), if given.
    pub(crate) timestamp: Option<i64>,
}

/// An outbound message Meta reports as failed (`statuses[].status == "failed"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failed {
    /// The recipient's `wa_id`.
    pub(crate) recipient: String,
    /// Meta's code of the first error.
    pub(crate) code: Option<i64>,
    /// Title and details of the error.
    pub(crate) detail: String,
}

/// What one notification carries.
#[derive(Debug, Default)]
pub(crate) struct Notification {
    /// Messages, in order.
    pub(crate) messages: Vec<Parsed>,
    /// Failed deliveries of our messages.
    pub(crate) failed: Vec<Failed>,
    /// Entries skipped (other fields or phone numbers, unsupported types), for the log.
    pub(crate) skipped: Vec<String>,
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Extension for a MIME type Meta sends (audio/ogg → `.ogg`, not `.oga`).
fn extension(mime: Option<&str>) -> &'static str {
    match mime.map(|m| m.split(';').next().unwrap_or(m).trim()) {
        Some("image/jpeg") => ".jpg",
        Some("image/png") => ".png",
        Some("image/webp") => ".webp",
        Some("video/mp4") => ".mp4",
        Some("video/3gpp") => ".3gp",
        Some("audio/ogg") | Some("audio/opus") => ".ogg",
        Some("audio/mpeg") => ".mp3",
        Some("audio/mp4") | Some("audio/aac") => ".m4a",
        Some("audio/amr") => ".amr",
        Some("application/pdf") => ".pdf",
        Some("text/plain") => ".txt",
        _ => ".bin",
    }
}

/// Parses a verified body. `phone_number_id`: ours; changes for another number are skipped.
/// Errors: the body is not a JSON object (answered 400).
pub(crate) fn parse(body: &[u8], phone_number_id: &str) -> Result<Notification, String> {
    let payload: Value =
        serde_json::from_slice(body).map_err(|e| format!("body is not valid JSON: {e}"))?;
    if !payload.is_object() {
        return Err("body must be a JSON object".into());
    }
    let mut out = Notification::default();
    if payload["object"] != "whatsapp_business_account" {
        out.skipped.push(format!("object {}", payload["object"]));
        return Ok(out);
    }
    let entries = payload["entry"].as_array().cloned().unwrap_or_default();
    for change in entries
        .iter()
        .flat_map(|e| e["changes"].as_array().cloned().unwrap_or_default())
    {
        if change["field"] != "messages" {
            out.skipped.push(format!("field {}", change["field"]));
            continue;
        }
        let value = &change["value"];
        if let Some(id) = value["metadata"]["phone_number_id"].as_str()
            && id != phone_number_id
        {
            out.skipped.push("another phone number's change".into());
            continue;
        }
        let name_of = |wa_id: &str| {
            value["contacts"].as_array().and_then(|cs| {
                cs.iter()
                    .find(|c| c["wa_id"].as_str() == Some(wa_id))
                    .and_then(|c| c["profile"]["name"].as_str())
                    .filter(|n| !n.trim().is_empty())
                    .map(str::to_owned)
            })
        };
        for m in value["messages"].as_array().into_iter().flatten() {
            match message(m, &name_of) {
                Ok(p) => out.messages.push(p),
                Err(why) => out.skipped.push(why),
            }
        }
        for s in value["statuses"].as_array().into_iter().flatten() {
            if s["status"] != "failed" {
                continue;
            }
            let first = &s["errors"][0];
            let title = first["title"]
                .as_str()
                .or(first["message"].as_str())
                .unwrap_or("unknown error");
            let details = first["error_data"]["details"].as_str().unwrap_or_default();
            out.failed.push(Failed {
                recipient: text_of(&s["recipient_id"]).unwrap_or_default(),
                code: first["code"].as_i64(),
                detail: if details.is_empty() {
                    title.to_string()
                } else {
                    format!("{title}: {details}")
                },
            });
        }
    }
    Ok(out)
}

/// One `messages[]` object; `Err` names why it is skipped.
fn message(m: &Value, name_of: &dyn Fn(&str) -> Option<String>) -> Result<Parsed, String> {
    let kind = m["type"].as_str().unwrap_or("text");
    let from = text_of(&m["from"])
        .map(|f| f.trim().to_string())
        .filter(|f| !f.is_empty())
        .ok_or("a message without `from`")?;
    let id = text_of(&m["id"]).filter(|i| !i.is_empty());
    if m.get("chat").is_some_and(|c| !c.is_null()) {
        return Err("a group message (groups are not supported)".into());
    }
    let mut media = None;
    let text = match kind {
        "text" => m["text"]["body"].as_str().unwrap_or_default().to_string(),
        "image" | "video" | "audio" | "document" | "sticker" => {
            let block = &m[kind];
            let mime = block["mime_type"].as_str().map(str::to_owned);
            let media_id = block["id"].as_str().unwrap_or_default();
            // The id goes into a URL path: refuse anything but Meta's id characters.
            if !media_id.is_empty()
                && media_id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            {
                let file_name = block["filename"]
                    .as_str()
                    .filter(|f| !f.trim().is_empty())
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("{kind}{}", extension(mime.as_deref())));
                media = Some(MediaRef {
                    id: media_id.to_string(),
                    mime_type: mime,
                    file_name,
                });
            }
            block["caption"].as_str().unwrap_or_default().to_string()
        }
        "button" => m["button"]["text"].as_str().unwrap_or_default().to_string(),
        "interactive" => {
            let i = &m["interactive"];
            let reply = if i["button_reply"].is_object() {
                &i["button_reply"]
            } else {
                &i["list_reply"]
            };
            reply["title"].as_str().unwrap_or_default().to_string()
        }
        "location" => {
            let l = &m["location"];
            let place = [l["name"].as_str(), l["address"].as_str()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "[location: {}, {}{}]",
                l["latitude"],
                l["longitude"],
                if place.is_empty() {
                    String::new()
                } else {
                    format!(" ({place})")
                }
            )
        }
        "contacts" => {
            let names: Vec<String> = m["contacts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["name"]["formatted_name"].as_str().map(str::to_owned))
                .collect();
            format!("[shared contact: {}]", names.join(", "))
        }
        other => return Err(format!("message type `{other}`")),
    };
    if text.trim().is_empty() && media.is_none() {
        return Err(format!("an empty `{kind}` message"));
    }
    let timestamp = text_of(&m["timestamp"]).and_then(|t| t.parse::<i64>().ok());
    Ok(Parsed {
        message: InboundMessage {
            source: MessageSource {
                platform: PLATFORM.into(),
                chat_type: ChatType::Dm,
                chat_id: Some(from.clone()),
                thread_id: None,
                user_name: name_of(&from),
                user_id: Some(from),
            },
            message_id: id,
            text,
            reply_to: m["context"]["id"].as_str().map(str::to_owned),
            reply_to_text: None,
            attachments: Vec::new(),
        },
        media,
        timestamp,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_the_raw_body_only() {
        let body = br#"{"object":"whatsapp_business_account"}"#;
        let sig = sign("app-secret", body);
        assert!(verify("app-secret", body, Some(&sig)));
        assert!(verify(
            "app-secret",
            body,
            Some(&sig.to_uppercase().replace("SHA256=", "sha256="))
        ));
        assert!(!verify("other", body, Some(&sig)));
        assert!(!verify("app-secret", b"{}", Some(&sig)));
        assert!(!verify("app-secret", body, None));
        assert!(!verify("app-secret", body, Some(&sig[7..])));
    }

    #[test]
    fn kinds_become_text_and_media_and_the_rest_is_skipped() {
        // Shapes of Meta's "Webhooks — messages" payload examples.
        let body = serde_json::json!({
            "object": "whatsapp_business_account",
            "entry": [{"id": "WABA", "changes": [{"field": "messages", "value": {
                "messaging_product": "whatsapp",
                "metadata": {"display_phone_number": "15550001111", "phone_number_id": "PN1"},
                "contacts": [{"profile": {"name": "Ann"}, "wa_id": "491701234"}],
                "messages": [
                    {"from": "491701234", "id": "wamid.A", "timestamp": "1700000000", "type": "location",
                     "location": {"latitude": 52.5, "longitude": 13.4, "name": "Office"}},
                    {"from": "491701234", "id": "wamid.B", "timestamp": "1700000001", "type": "document",
                     "document": {"filename": "report.pdf", "mime_type": "application/pdf", "sha256": "x", "id": "MEDIA.1"}},
                    {"from": "491701234", "id": "wamid.C", "timestamp": "1700000002", "type": "reaction",
                     "reaction": {"message_id": "wamid.X", "emoji": "👍"}},
                    {"from": "491701234", "id": "wamid.D", "timestamp": "1700000003", "type": "interactive",
                     "interactive": {"type": "button_reply", "button_reply": {"id": "b1", "title": "Yes"}}}
                ]}}, {"field": "account_alerts", "value": {}}]}]
        });
        let n = parse(body.to_string().as_bytes(), "PN1").unwrap();
        assert_eq!(n.messages.len(), 3, "{:?}", n.skipped);
        assert!(
            n.messages[0]
                .message
                .text
                .starts_with("[location: 52.5, 13.4 (Office)")
        );
        assert_eq!(
            n.messages[0].message.source.user_name.as_deref(),
            Some("Ann")
        );
        let doc = n.messages[1].media.as_ref().unwrap();
        assert_eq!(
            (doc.id.as_str(), doc.file_name.as_str()),
            ("MEDIA.1", "report.pdf")
        );
        assert_eq!(n.messages[2].message.text, "Yes");
        assert_eq!(n.skipped.len(), 2, "{:?}", n.skipped);
        let other = parse(body.to_string().as_bytes(), "PN2").unwrap();
        assert!(other.messages.is_empty());
        assert!(parse(b"[1]", "PN1").is_err());
        assert!(parse(b"{", "PN1").is_err());
    }
}
