//! Outbound mail: the reply's Markdown as a `multipart/alternative` of plain text and HTML
//! (pulldown-cmark; raw HTML in the answer is shown as text, never passed through), files
//! as attachments, threading headers, and the loop guards every reply carries
//! (`Auto-Submitted: auto-replied`, RFC 3834; `X-Auto-Response-Suppress: All`, so
//! auto-responders do not answer us).

use lettre::message::header::{ContentType, Header, HeaderName, HeaderValue};
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// `Auto-Submitted` (RFC 3834 §5).
#[derive(Debug, Clone)]
struct AutoSubmitted(String);

impl Header for AutoSubmitted {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("Auto-Submitted")
    }
    fn parse(s: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(AutoSubmitted(s.to_string()))
    }
    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), self.0.clone())
    }
}

/// `X-Auto-Response-Suppress` (Exchange's out-of-office and read-receipt switch).
#[derive(Debug, Clone)]
struct AutoResponseSuppress;

impl Header for AutoResponseSuppress {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("X-Auto-Response-Suppress")
    }
    fn parse(_: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(AutoResponseSuppress)
    }
    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), "All".to_string())
    }
}

fn options() -> Options {
    Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS
}

/// The HTML document for `markdown` (CommonMark with tables and strikethrough). Raw HTML in
/// the source is escaped and shown as text.
pub fn markdown_to_html(markdown: &str) -> String {
    let events = Parser::new_ext(markdown, options()).map(|e| match e {
        Event::Html(h) | Event::InlineHtml(h) => Event::Text(h),
        e => e,
    });
    let mut body = String::with_capacity(markdown.len() * 2);
    pulldown_cmark::html::push_html(&mut body, events);
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head><body>\n{body}</body></html>\n"
    )
}

/// `markdown` as readable plain text: markers of emphasis and code removed (escapes too),
/// links as `text (url)`, list items with `-` or their number, code blocks as they are.
pub fn markdown_to_text(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut lists: Vec<Option<u64>> = Vec::new();
    let mut links: Vec<(String, usize)> = Vec::new();
    let newline = |out: &mut String, n: usize| {
        let have = out.chars().rev().take_while(|c| *c == '\n').count();
        if !out.is_empty() {
            for _ in have..n {
                out.push('\n');
            }
        }
    };
    for event in Parser::new_ext(markdown, options()) {
        match event {
            Event::Start(Tag::Item) => {
                newline(&mut out, 1);
                let depth = lists.len().saturating_sub(1);
                out.push_str(&"  ".repeat(depth));
                match lists.last_mut() {
                    Some(Some(n)) => {
                        out.push_str(&format!("{n}. "));
                        *n += 1;
                    }
                    _ => out.push_str("- "),
                }
            }
            Event::Start(Tag::List(first)) => {
                newline(&mut out, if lists.is_empty() { 2 } else { 1 });
                lists.push(first);
            }
            Event::End(TagEnd::List(_)) => {
                lists.pop();
                newline(&mut out, if lists.is_empty() { 2 } else { 1 });
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                links.push((dest_url.to_string(), out.len()))
            }
            Event::End(TagEnd::Link) => {
                if let Some((url, start)) = links.pop()
                    && out.get(start..) != Some(url.as_str())
                {
                    out.push_str(&format!(" ({url})"));
                }
            }
            // A heading stands out by the blank lines around it.
            Event::Start(Tag::Heading { .. }) => newline(&mut out, 2),
            Event::End(TagEnd::Heading(_) | TagEnd::Paragraph | TagEnd::CodeBlock) => {
                newline(&mut out, if lists.is_empty() { 2 } else { 1 });
            }
            Event::Start(Tag::Paragraph | Tag::CodeBlock(_)) if lists.is_empty() => {
                newline(&mut out, 2);
            }
            Event::End(TagEnd::TableRow | TagEnd::TableHead) => newline(&mut out, 1),
            Event::End(TagEnd::TableCell) => out.push_str(" | "),
            Event::Text(t) | Event::Code(t) | Event::Html(t) | Event::InlineHtml(t) => {
                out.push_str(&t);
            }
            Event::SoftBreak | Event::HardBreak => out.push('\n'),
            Event::Rule => {
                newline(&mut out, 2);
                out.push_str("---");
                newline(&mut out, 2);
            }
            Event::TaskListMarker(done) => out.push_str(if done { "[x] " } else { "[ ] " }),
            _ => {}
        }
    }
    out.trim().to_string()
}

/// One outbound mail before it is built.
#[derive(Debug, Clone, Default)]
pub struct Draft {
    /// Our address.
    pub from: String,
    /// The recipient.
    pub to: String,
    /// The subject.
    pub subject: String,
    /// Our `Message-ID`, without brackets.
    pub message_id: String,
    /// `In-Reply-To`, without brackets.
    pub in_reply_to: Option<String>,
    /// `References`, oldest first, without brackets.
    pub references: Vec<String>,
    /// The text, Markdown.
    pub markdown: String,
    /// Files to attach: name, bytes.
    pub files: Vec<(String, Vec<u8>)>,
}

/// Builds the RFC 5322 message of `draft`. Errors: an address that is not one, or a header
/// value lettre refuses (the message says which).
pub fn build(draft: &Draft) -> Result<lettre::Message, String> {
    let from: Mailbox = draft
        .from
        .parse()
        .map_err(|e| format!("EMAIL_ADDRESS `{}`: {e}", draft.from))?;
    let to: Mailbox = draft
        .to
        .parse()
        .map_err(|e| format!("`{}` is not an email address: {e}", draft.to))?;
    let mut b = lettre::Message::builder()
        .from(from)
        .to(to)
        .subject(draft.subject.clone())
        .message_id(Some(format!("<{}>", draft.message_id)))
        .date_now()
        .header(AutoSubmitted("auto-replied".into()))
        .header(AutoResponseSuppress);
    if let Some(id) = &draft.in_reply_to {
        b = b.in_reply_to(format!("<{id}>"));
    }
    if !draft.references.is_empty() {
        let refs: Vec<String> = draft.references.iter().map(|r| format!("<{r}>")).collect();
        b = b.references(refs.join(" "));
    }
    let text = markdown_to_text(&draft.markdown);
    let html = markdown_to_html(&draft.markdown);
    let alternative = MultiPart::alternative_plain_html(text, html);
    let result = if draft.files.is_empty() {
        b.multipart(alternative)
    } else {
        let mut mixed = MultiPart::mixed().multipart(alternative);
        for (name, bytes) in &draft.files {
            let ct = ContentType::parse(guess_mime(name)).unwrap_or(
                ContentType::parse("application/octet-stream").map_err(|e| e.to_string())?,
            );
            let part: SinglePart = Attachment::new(name.clone()).body(bytes.clone(), ct);
            mixed = mixed.singlepart(part);
        }
        b.multipart(mixed)
    };
    result.map_err(|e| e.to_string())
}

/// A MIME type from a file name's extension (common types; others are octet streams).
fn guess_mime(name: &str) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        "txt" | "log" => "text/plain; charset=utf-8",
        "md" => "text/markdown; charset=utf-8",
        "csv" => "text/csv; charset=utf-8",
        "json" => "application/json",
        "html" | "htm" => "text/html; charset=utf-8",
        "zip" => "application/zip",
        "mp3" => "audio/mpeg",
        "ogg" | "oga" => "audio/ogg",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_html_and_readable_text() {
        let md = "# Plan\n\nSome **bold** and `code` with a [link](https://x.example/a).\n\n- one\n- two\n\n1. first\n2. second\n\n```rust\nfn main() {}\n```\n\n<script>alert(1)</script>";
        let html = markdown_to_html(md);
        assert!(html.contains("<h1>Plan</h1>"), "{html}");
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(
            html.contains("<a href=\"https://x.example/a\">link</a>"),
            "{html}"
        );
        assert!(html.contains("<li>one</li>"), "{html}");
        assert!(!html.contains("<script>"), "raw HTML is escaped: {html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        let text = markdown_to_text(md);
        assert!(
            text.starts_with("Plan\n\nSome bold and code with a link (https://x.example/a)."),
            "{text}"
        );
        assert!(text.contains("- one\n- two"), "{text}");
        assert!(text.contains("1. first\n2. second"), "{text}");
        assert!(text.contains("fn main() {}"), "{text}");
        assert!(!text.contains("**") && !text.contains('`'), "{text}");
        // Escapes of the chunk renderer are removed in the text.
        assert_eq!(markdown_to_text("a\\*b\\_c"), "a*b_c");
    }

    #[test]
    fn a_reply_is_threaded_multipart_and_marked_as_automatic() {
        let draft = Draft {
            from: "bot@example.org".into(),
            to: "alice@example.com".into(),
            subject: "Re: Plans".into(),
            message_id: "hermes-1@example.org".into(),
            in_reply_to: Some("m2@example.com".into()),
            references: vec!["m1@example.com".into(), "m2@example.com".into()],
            markdown: "Hi **there** – ünïcode ✓".into(),
            files: vec![("r.pdf".into(), b"%PDF-1".to_vec())],
        };
        let raw = String::from_utf8(build(&draft).unwrap().formatted()).unwrap();
        for needle in [
            "Message-ID: <hermes-1@example.org>",
            "In-Reply-To: <m2@example.com>",
            "References: <m1@example.com> <m2@example.com>",
            "Auto-Submitted: auto-replied",
            "X-Auto-Response-Suppress: All",
            "multipart/mixed",
            "multipart/alternative",
            "text/plain",
            "text/html",
            "application/pdf",
            "filename=\"r.pdf\"",
        ] {
            assert!(raw.contains(needle), "{needle} missing in:\n{raw}");
        }
        assert!(
            build(&Draft {
                to: "not an address".into(),
                ..draft
            })
            .is_err()
        );
    }
}
