//! Page bodies → text for the model (FEATURES §4 `web_extract`): which content types are
//! read, HTML turned into Markdown-ish text with [`htmd`] (page chrome — scripts, styles,
//! navigation, headers, footers, asides, forms, iframes, media — left out; headings, lists,
//! links, tables' text and code kept), text/Markdown/JSON passed through, and the per-page
//! char cap with a marker saying the text was cut.

use std::sync::LazyLock;

use htmd::HtmlToMarkdown;
use htmd::options::{BulletListMarker, Options};
use regex::Regex;

/// How a response body is handled, from its `Content-Type` (or a sniff of the bytes when
/// the server sent none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyKind {
    /// HTML or XHTML: converted with [`html_to_readable`].
    Html,
    /// Plain text, Markdown, JSON, XML, CSV, …: returned as is.
    Text,
    /// Anything else (images, PDFs, archives, audio, video, octet streams): refused; the
    /// string is the media type.
    Binary(String),
}

/// Classifies a `Content-Type` header value (parameters such as `charset` ignored,
/// case-insensitive). `None` when the header is absent or empty: sniff the body with
/// [`sniff`].
pub fn classify(content_type: Option<&str>) -> Option<BodyKind> {
    let media = content_type?
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if media.is_empty() {
        return None;
    }
    Some(match media.as_str() {
        "text/html" | "application/xhtml+xml" => BodyKind::Html,
        m if m.starts_with("text/") => BodyKind::Text,
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/x-ndjson"
        | "application/yaml"
        | "application/x-yaml"
        | "application/toml" => BodyKind::Text,
        m if m.ends_with("+json") || m.ends_with("+xml") => BodyKind::Text,
        _ => BodyKind::Binary(media),
    })
}

/// Classifies a body that came without a `Content-Type`, from its first 8 KiB: a NUL byte,
/// or bytes that are not UTF-8 (a multi-byte char cut by the window's end does not count)
/// with more than 10% control bytes, → binary; text starting with `<` that mentions `<html`
/// or `<!doctype html` → HTML; other text (legacy encodings included, decoded later by
/// [`decode_body`]) → text.
pub fn sniff(body: &[u8]) -> BodyKind {
    let head = &body[..body.len().min(8 * 1024)];
    let utf8 = match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    };
    let controls = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b))
        .count();
    if head.contains(&0) || (!utf8 && controls * 10 > head.len()) {
        return BodyKind::Binary("application/octet-stream".to_string());
    }
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    let trimmed = text.trim_start();
    if trimmed.starts_with('<') && (text.contains("<html") || text.contains("<!doctype html")) {
        BodyKind::Html
    } else {
        BodyKind::Text
    }
}

static META_CHARSET: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"(?i)<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]+)"#).ok());

/// Decodes a body to text: a byte-order mark wins, then the `charset` parameter of the
/// `Content-Type`, then (for HTML) a `<meta charset>` or `<meta http-equiv>` declaration in the
/// first 4 KiB, else UTF-8. Labels are WHATWG encoding labels (`iso-8859-1` reads as
/// windows-1252, as browsers do); an unknown label falls back to the next source. Bytes
/// that are invalid in the encoding become U+FFFD.
pub fn decode_body(body: &[u8], content_type: Option<&str>, kind: &BodyKind) -> String {
    let from_header = content_type.and_then(|ct| {
        ct.split(';').skip(1).find_map(|param| {
            let (k, v) = param.split_once('=')?;
            (k.trim().eq_ignore_ascii_case("charset"))
                .then(|| v.trim().trim_matches(|c| c == '"' || c == '\'').to_string())
        })
    });
    let from_meta = || {
        if *kind != BodyKind::Html {
            return None;
        }
        let head = String::from_utf8_lossy(&body[..body.len().min(4096)]).into_owned();
        META_CHARSET
            .as_ref()?
            .captures(&head)
            .and_then(|c| c.get(1))
            .map(|m| m.as_str().to_string())
    };
    let encoding = from_header
        .and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes()))
        .or_else(|| {
            from_meta()
                .and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes()))
                .map(meta_encoding)
        })
        .unwrap_or(encoding_rs::UTF_8);
    let (text, _, _) = encoding.decode(body);
    text.into_owned()
}

/// An encoding named by a `<meta>` declaration as the HTML prescan takes it (WHATWG HTML
/// "prescan a byte stream", step "get an encoding"): UTF-16 becomes UTF-8 — a page that could
/// be read far enough to find the declaration in ASCII is not UTF-16 — and `x-user-defined`
/// becomes windows-1252.
fn meta_encoding(found: &'static encoding_rs::Encoding) -> &'static encoding_rs::Encoding {
    if found == encoding_rs::UTF_16LE || found == encoding_rs::UTF_16BE {
        encoding_rs::UTF_8
    } else if found == encoding_rs::X_USER_DEFINED {
        encoding_rs::WINDOWS_1252
    } else {
        found
    }
}

/// True when `content_type`'s `charset` is UTF-16 (whose text is full of NUL bytes).
pub(crate) fn declares_utf16(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|ct| {
        ct.split(';').skip(1).any(|param| {
            param.split_once('=').is_some_and(|(k, v)| {
                k.trim().eq_ignore_ascii_case("charset")
                    && encoding_rs::Encoding::for_label(
                        v.trim().trim_matches(|c| c == '"' || c == '\'').as_bytes(),
                    )
                    .is_some_and(|e| e == encoding_rs::UTF_16LE || e == encoding_rs::UTF_16BE)
            })
        })
    })
}

/// Tags left out with everything inside them.
const SKIPPED_TAGS: &[&str] = &[
    "head", "script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form",
    "button", "input", "select", "textarea", "iframe", "frame", "frameset", "object", "embed",
    "svg", "canvas", "img", "picture", "video", "audio", "source", "track", "map", "dialog",
];

static TITLE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?is)<title[^>]*>(.*?)</title\s*>").ok());
static BLANK_RUNS: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"\n{3,}").ok());

/// A readable page: the `<title>` (entities decoded, blanks collapsed; `None` when absent
/// or empty) and the body as Markdown-ish text (ATX headings, `-` bullets, inline links,
/// fenced code; trailing blanks removed, never more than one blank line in a row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readable {
    /// The page title.
    pub title: Option<String>,
    /// The text.
    pub text: String,
}

/// Converts an HTML document to [`Readable`] text. Never fails: a document the parser
/// cannot handle yields empty text. Elements nested deeper than
/// [`super::nesting::MAX_NESTING`] lose their tags first (their text stays), so the work is
/// bounded whatever the page; the converter still recurses once per level, so call it on a
/// thread with a few MiB of stack (a debug build needs about 2.5 KiB per level).
pub fn html_to_readable(html: &str) -> Readable {
    let html = &*super::nesting::limit_nesting(html, super::nesting::MAX_NESTING);
    let converter = HtmlToMarkdown::builder()
        .options(Options {
            bullet_list_marker: BulletListMarker::Dash,
            ul_bullet_spacing: 1,
            ol_number_spacing: 1,
            ..Options::default()
        })
        .skip_tags(SKIPPED_TAGS.to_vec())
        .build();
    let title = TITLE
        .as_ref()
        .and_then(|re| re.captures(html))
        .and_then(|c| c.get(1))
        .and_then(|m| converter.convert(&format!("<p>{}</p>", m.as_str())).ok())
        .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|t| !t.is_empty());
    let text = converter.convert(html).unwrap_or_default();
    Readable {
        title,
        text: tidy(&text),
    }
}

/// Trailing blanks removed from every line, runs of blank lines collapsed to one, leading
/// and trailing blank lines removed.
fn tidy(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let joined = lines.join("\n");
    let collapsed = match BLANK_RUNS.as_ref() {
        Some(re) => re.replace_all(&joined, "\n\n").into_owned(),
        None => joined,
    };
    collapsed.trim_matches('\n').to_string()
}

/// Cuts `text` to at most `limit` chars (Unicode scalar values, never inside a char) and, when
/// it was longer, appends a marker line naming the full length:
/// `[… cut: the page has 20,000 chars; the first 15,000 are shown]`.
pub fn cap_chars(text: &str, limit: usize) -> String {
    let total = text.chars().count();
    if total <= limit {
        return text.to_string();
    }
    let end = text
        .char_indices()
        .nth(limit)
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    format!(
        "{}\n\n[… cut: the page has {} chars; the first {} are shown]",
        &text[..end],
        thousands(total),
        thousands(limit)
    )
}

/// `15000` → `15,000`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn content_types_are_classified() {
        assert_eq!(
            classify(Some("text/html; charset=utf-8")),
            Some(BodyKind::Html)
        );
        assert_eq!(
            classify(Some("Application/XHTML+xml")),
            Some(BodyKind::Html)
        );
        assert_eq!(classify(Some("text/plain")), Some(BodyKind::Text));
        assert_eq!(classify(Some("text/markdown")), Some(BodyKind::Text));
        assert_eq!(classify(Some("application/json")), Some(BodyKind::Text));
        assert_eq!(classify(Some("application/ld+json")), Some(BodyKind::Text));
        assert_eq!(
            classify(Some("application/pdf")),
            Some(BodyKind::Binary("application/pdf".into()))
        );
        assert_eq!(
            classify(Some("image/png")),
            Some(BodyKind::Binary("image/png".into()))
        );
        assert_eq!(classify(None), None);
        assert_eq!(classify(Some(" ")), None);
    }

    #[test]
    fn sniffing_tells_html_text_and_binary_apart() {
        assert_eq!(
            sniff(b"<!DOCTYPE html><html><p>x</p></html>"),
            BodyKind::Html
        );
        assert_eq!(sniff("héllo wörld".as_bytes()), BodyKind::Text);
        // Latin-1 text is not UTF-8 but is text; random high and control bytes are not.
        assert_eq!(sniff(b"caf\xe9 cr\xe8me br\xfbl\xe9e"), BodyKind::Text);
        assert!(matches!(
            sniff(b"\xff\xd8\xff\xe0\x01\x02\x03\x04\x05\x06"),
            BodyKind::Binary(_)
        ));
        assert!(matches!(
            sniff(b"\x89PNG\r\n\x1a\n\0\0"),
            BodyKind::Binary(_)
        ));
        // A multi-byte char cut by the 8 KiB window is still text.
        let mut long = "a".repeat(8 * 1024 - 1).into_bytes();
        long.extend_from_slice("é".as_bytes());
        assert_eq!(sniff(&long), BodyKind::Text);
    }

    #[test]
    fn bodies_are_decoded_by_bom_header_or_meta() {
        let latin1 = b"caf\xe9";
        assert_eq!(
            decode_body(
                latin1,
                Some("text/plain; charset=ISO-8859-1"),
                &BodyKind::Text
            ),
            "café"
        );
        assert_eq!(
            decode_body(
                latin1,
                Some("text/plain; charset=\"latin1\""),
                &BodyKind::Text
            ),
            "café"
        );
        let html = b"<html><head><meta charset=\"windows-1252\"></head><p>caf\xe9</p></html>";
        assert!(decode_body(html, Some("text/html"), &BodyKind::Html).contains("café"));
        let legacy = b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=koi8-r\"><p>\xf0\xd2\xc9\xd7\xc5\xd4</p>";
        assert!(decode_body(legacy, None, &BodyKind::Html).contains("Привет"));
        assert_eq!(decode_body("é".as_bytes(), None, &BodyKind::Text), "é");
        assert_eq!(
            decode_body(
                b"\xef\xbb\xbfhi",
                Some("text/plain; charset=latin1"),
                &BodyKind::Text
            ),
            "hi"
        );
        assert_eq!(decode_body(b"a\xffb", None, &BodyKind::Text), "a\u{fffd}b");
        // An unknown label falls back to UTF-8.
        assert_eq!(
            decode_body(
                "é".as_bytes(),
                Some("text/plain; charset=nope"),
                &BodyKind::Text
            ),
            "é"
        );
    }

    #[test]
    fn cap_counts_chars_and_cuts_on_a_char_boundary() {
        let text = "é".repeat(20);
        assert_eq!(cap_chars(&text, 20), text);
        let cut = cap_chars(&text, 7);
        assert!(cut.starts_with(&"é".repeat(7)));
        assert!(!cut.starts_with(&"é".repeat(8)));
        assert!(cut.ends_with("[… cut: the page has 20 chars; the first 7 are shown]"));
        assert_eq!(thousands(15_000), "15,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
    }

    #[test]
    fn chrome_is_skipped_and_structure_kept() {
        let r = html_to_readable(
            "<html><head><title> A &amp; B </title><style>p{}</style></head><body>\
             <nav><a href=/>Home</a></nav><h1>Big</h1><p>Hi <a href=\"https://x.example/\">x</a></p>\
             <ul><li>one</li><li>two</li></ul><pre><code>let a = 1;</code></pre>\
             <script>alert(1)</script><footer>(c)</footer></body></html>",
        );
        assert_eq!(r.title.as_deref(), Some("A & B"));
        assert!(r.text.starts_with("# Big"), "{}", r.text);
        assert!(r.text.contains("[x](https://x.example/)"), "{}", r.text);
        assert!(r.text.contains("- one"), "{}", r.text);
        assert!(r.text.contains("```\nlet a = 1;\n```"), "{}", r.text);
        for gone in ["Home", "alert", "(c)", "p{}"] {
            assert!(!r.text.contains(gone), "{gone} in {}", r.text);
        }
    }
}
