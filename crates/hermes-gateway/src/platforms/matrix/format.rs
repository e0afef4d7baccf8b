//! Markdown → a Matrix message's `body` and `formatted_body` (`format: org.matrix.custom.html`,
//! spec "m.room.message msgtypes": the HTML subset clients render).
//!
//! The gateway hands the adapter CommonMark chunks; pulldown-cmark renders them to HTML. What
//! the model wrote as raw HTML is escaped (shown as text, never interpreted) and links are kept
//! only with `http`, `https` or `mailto` targets. `body` is the same text without markup, for
//! clients that do not render HTML and for notifications.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};

/// A message's two renderings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// Plain text (`body`).
    pub body: String,
    /// The HTML (`formatted_body`), `None` when the text has no markup worth sending.
    pub html: Option<String>,
}

fn safe_url(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|s| lower.starts_with(s))
}

fn options() -> Options {
    Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES
}

/// Renders `markdown` (see the module docs).
pub fn render(markdown: &str) -> Rendered {
    let mut link_stack: Vec<bool> = Vec::new();
    let events: Vec<Event<'_>> = Parser::new_ext(markdown, options())
        .filter_map(|ev| match ev {
            Event::Html(h) | Event::InlineHtml(h) => Some(Event::Text(h)),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                let ok = safe_url(&dest_url);
                link_stack.push(ok);
                ok.then_some(Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                }))
            }
            Event::End(TagEnd::Link) => link_stack.pop().unwrap_or(false).then_some(ev),
            Event::Start(Tag::Image { dest_url, .. }) => {
                // Inline images would need an mxc:// source; show the link as text instead.
                Some(Event::Text(CowStr::from(format!("{dest_url} "))))
            }
            Event::End(TagEnd::Image) => None,
            other => Some(other),
        })
        .collect();
    let body = plain(&events);
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events.into_iter());
    let html = html.trim_end().to_string();
    let trivial = html
        .strip_prefix("<p>")
        .and_then(|h| h.strip_suffix("</p>"))
        .is_some_and(|inner| inner == escape_html(&body));
    Rendered {
        html: (!trivial && !html.is_empty()).then_some(html),
        body,
    }
}

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The text of `events` without markup: paragraphs and list items on their own lines, links
/// as `text (url)`, code as written.
fn plain(events: &[Event<'_>]) -> String {
    let mut out = String::new();
    let mut links: Vec<String> = Vec::new();
    let mut lists: Vec<Option<u64>> = Vec::new();
    for ev in events {
        match ev {
            Event::Text(t) | Event::Code(t) => out.push_str(t),
            Event::SoftBreak | Event::HardBreak => out.push('\n'),
            Event::Start(Tag::Link { dest_url, .. }) => links.push(dest_url.to_string()),
            Event::End(TagEnd::Link) => {
                if let Some(url) = links.pop()
                    && !out.ends_with(url.as_str())
                {
                    out.push_str(&format!(" ({url})"));
                }
            }
            Event::Start(Tag::List(first)) => lists.push(*first),
            Event::End(TagEnd::List(_)) => {
                lists.pop();
            }
            Event::Start(Tag::Item) => {
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&"  ".repeat(lists.len().saturating_sub(1)));
                match lists.last_mut() {
                    Some(Some(n)) => {
                        out.push_str(&format!("{n}. "));
                        *n += 1;
                    }
                    _ => out.push_str("- "),
                }
            }
            Event::End(
                TagEnd::Paragraph
                | TagEnd::Heading(_)
                | TagEnd::CodeBlock
                | TagEnd::BlockQuote(_)
                | TagEnd::TableRow
                | TagEnd::TableHead,
            ) => {
                while out.ends_with('\n') && out.len() > 1 && out.ends_with("\n\n") {
                    out.pop();
                }
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
            Event::End(TagEnd::TableCell) => out.push('\t'),
            Event::Rule => out.push_str("---\n"),
            _ => {}
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_has_no_formatted_body() {
        let r = render("just words & more");
        assert_eq!(r.body, "just words & more");
        assert_eq!(r.html, None);
    }

    #[test]
    fn markdown_becomes_html_and_a_clean_body() {
        let r = render("**bold** and `code` in snake\\_case\n\n- one\n- two");
        let html = r.html.unwrap();
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(html.contains("<code>code</code>"), "{html}");
        assert!(html.contains("<li>one</li>"), "{html}");
        assert_eq!(r.body, "bold and code in snake_case\n- one\n- two");
    }

    #[test]
    fn raw_html_is_escaped_and_unsafe_links_dropped() {
        let r =
            render("<img src=x onerror=alert(1)> [x](javascript:alert(1)) [ok](https://a.example)");
        let html = r.html.unwrap();
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("&lt;img"), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(
            html.contains(r#"<a href="https://a.example">ok</a>"#),
            "{html}"
        );
        assert!(r.body.contains("ok (https://a.example)"), "{}", r.body);
    }

    #[test]
    fn code_blocks_keep_their_text() {
        let r = render("```rust\nfn main() {}\n```");
        assert!(
            r.html
                .unwrap()
                .contains("<pre><code class=\"language-rust\">")
        );
        assert_eq!(r.body, "fn main() {}");
    }
}
