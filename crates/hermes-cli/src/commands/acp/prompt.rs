//! The user message of a `session/prompt`: its content blocks as the text hermes' agent
//! takes.
//!
//! - text blocks as they are;
//! - a resource link (a file the user mentioned) as a line naming it, so the model can
//!   `read_file` it;
//! - an embedded text resource (a file or selection the editor attached) inline, between
//!   `<attached uri="…">` and `</attached>`, at most [`MAX_ATTACHMENT_BYTES`] each and
//!   [`MAX_PROMPT_BYTES`] in all, as the caller's [`Screen`] lets the model see it;
//! - an embedded binary resource as a line naming it (its bytes are not shown to the model);
//! - images and audio are refused: `initialize` does not offer them.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};

/// Largest embedded text resource, in bytes.
pub const MAX_ATTACHMENT_BYTES: usize = 1024 * 1024;
/// Largest prompt, attachments included, in bytes.
pub const MAX_PROMPT_BYTES: usize = 4 * 1024 * 1024;

/// What the model may see of an embedded text resource: `(uri, text)` → the text shown
/// (the server leaves out files the sandbox refuses and masks secrets).
pub type Screen<'a> = &'a dyn Fn(&str, String) -> String;

/// The text of `blocks`, each embedded text resource passed through `screen`, or why it
/// cannot be taken (an `invalid_params` message).
pub fn to_text(blocks: &[ContentBlock], screen: Screen<'_>) -> Result<String, String> {
    let mut parts: Vec<String> = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::ResourceLink(link) => {
                let name = link.title.as_deref().unwrap_or(&link.name);
                parts.push(format!("[attached: {name} <{}>]", shown_uri(&link.uri)));
            }
            ContentBlock::Resource(res) => match &res.resource {
                EmbeddedResourceResource::TextResourceContents(t) => {
                    if t.text.len() > MAX_ATTACHMENT_BYTES {
                        return Err(format!(
                            "the attachment {} is too large: {} bytes, the limit is \
                             {MAX_ATTACHMENT_BYTES}; attach a link to it instead",
                            t.uri,
                            t.text.len()
                        ));
                    }
                    parts.push(format!(
                        "<attached uri=\"{}\">\n{}\n</attached>",
                        shown_uri(&t.uri),
                        screen(&t.uri, t.text.clone())
                    ));
                }
                EmbeddedResourceResource::BlobResourceContents(b) => {
                    parts.push(format!(
                        "[attached binary file: <{}>, {} bytes of base64, not shown]",
                        shown_uri(&b.uri),
                        b.blob.len()
                    ));
                }
                _ => return Err("an attachment of a kind hermes does not know".into()),
            },
            ContentBlock::Image(_) => {
                return Err("images are not supported in prompts (see promptCapabilities)".into());
            }
            ContentBlock::Audio(_) => {
                return Err("audio is not supported in prompts (see promptCapabilities)".into());
            }
            _ => return Err("a content block of a kind hermes does not know".into()),
        }
    }
    let text = parts.join("\n\n");
    if text.len() > MAX_PROMPT_BYTES {
        return Err(format!(
            "the prompt is too large: {} bytes, the limit is {MAX_PROMPT_BYTES}",
            text.len()
        ));
    }
    if text.trim().is_empty() {
        return Err("the prompt is empty".into());
    }
    Ok(text)
}

/// The local path a `file:` URI names (`file:///p`, `file://localhost/p`, percent-escapes
/// decoded), or `None` for another URI or another host.
pub fn file_path(uri: &str) -> Option<std::path::PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push(((hex(h)? << 4) | hex(l)?) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    use std::os::unix::ffi::OsStringExt;
    Some(std::ffi::OsString::from_vec(out).into())
}

/// A `file://` URI as its path (what the model passes to the file tools); other URIs as
/// they are.
fn shown_uri(uri: &str) -> &str {
    uri.strip_prefix("file://").unwrap_or(uri)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, ResourceLink, TextContent, TextResourceContents,
    };

    #[test]
    fn attachments_are_inlined_and_capped() {
        let blocks = vec![
            ContentBlock::Text(TextContent::new("fix this")),
            ContentBlock::ResourceLink(ResourceLink::new("main.rs", "file:///w/src/main.rs")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///w/src/lib.rs",
                )),
            )),
        ];
        let same = |_: &str, t: String| t;
        let text = to_text(&blocks, &same).unwrap();
        assert!(text.starts_with("fix this\n\n[attached: main.rs </w/src/main.rs>]"));
        assert!(text.contains("<attached uri=\"/w/src/lib.rs\">\nfn main() {}\n</attached>"));
        let big = vec![ContentBlock::Resource(EmbeddedResource::new(
            EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                "x".repeat(MAX_ATTACHMENT_BYTES + 1),
                "file:///w/big.txt",
            )),
        ))];
        assert!(to_text(&big, &same).unwrap_err().contains("too large"));
        assert!(to_text(&[], &same).is_err());
        let hidden = to_text(&blocks, &|uri, t| {
            if uri.ends_with("lib.rs") {
                "[not shown]".to_string()
            } else {
                t
            }
        })
        .unwrap();
        assert_eq!(
            file_path("file://localhost/w/%2Eenv"),
            Some("/w/.env".into())
        );
        assert_eq!(file_path("file:///w/a%20b"), Some("/w/a b".into()));
        assert_eq!(file_path("file://other/w"), None);
        assert_eq!(file_path("https://x/y"), None);
        assert!(hidden.contains("<attached uri=\"/w/src/lib.rs\">\n[not shown]\n</attached>"));
    }
}
