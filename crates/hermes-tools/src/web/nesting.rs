//! A guard in front of the HTML converter: hostile or broken pages nest elements thousands
//! deep (`<div>` × 200,000), and both the HTML parser (its scope checks walk the stack of open
//! elements: quadratic time) and the converter (a recursive walk: about 2.5 KiB of stack per
//! level in a debug build, so a thousand levels overflowed a 2 MiB thread and aborted the
//! process) fail on them. [`limit_nesting`] keeps the text and drops the start and end tags of
//! elements nested deeper than a limit, in one linear pass, before the parser sees the page.
//!
//! The scan is a tag tokenizer, not a parser: comments, `<!…>`/`<?…>` declarations and the
//! contents of raw-text elements (`script`, `style`, `textarea`, `title`, …) are stepped over;
//! void and self-closed elements do not nest; a `p`, `li`, `dt`, `dd`, `option`, `tr`, `td` or
//! `th` start tag closes an open element of the same name on top of the stack, as the HTML
//! parser does; an end tag closes a dropped element of its name first, else up to its
//! matching open element (and everything dropped inside). Its depth count is an
//! upper bound of the parser's for ordinary markup.

use std::borrow::Cow;
use std::collections::HashMap;

/// Deepest element nesting handed to the converter; tags nested deeper are dropped (their
/// text stays).
pub const MAX_NESTING: usize = 256;

/// Elements without content: never pushed.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "keygen", "frame",
];

/// Elements whose content is text up to their end tag (no tags inside).
const RAW_TEXT: &[&str] = &[
    "script",
    "style",
    "textarea",
    "title",
    "xmp",
    "noembed",
    "noframes",
    "iframe",
    "plaintext",
];

/// Elements a start tag of the same name closes when it is the current element.
const SELF_CLOSING_SIBLINGS: &[&str] = &["p", "li", "dt", "dd", "option", "tr", "td", "th"];

/// `html` with the start and end tags of elements nested deeper than `max_depth` removed
/// (their text kept); borrowed unchanged when nothing is that deep. Linear in the length.
pub fn limit_nesting(html: &str, max_depth: usize) -> Cow<'_, str> {
    let mut out: Option<String> = None;
    let mut copied = 0; // bytes of `html` already handled into `out`
    let mut stack: Vec<String> = Vec::new();
    let mut dropped: HashMap<String, usize> = HashMap::new();
    let mut i = 0;
    while let Some(rel) = html[i..].find('<') {
        let lt = i + rel;
        let rest = &html[lt..];
        if let Some(comment) = rest.strip_prefix("<!--") {
            i = comment.find("-->").map_or(html.len(), |e| lt + 4 + e + 3);
            continue;
        }
        if rest.starts_with("<!") || rest.starts_with("<?") {
            i = rest.find('>').map_or(html.len(), |e| lt + e + 1);
            continue;
        }
        let closing = rest[1..].starts_with('/');
        let name_at = lt + 1 + usize::from(closing);
        let name_len = html[name_at..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == ':'))
            .unwrap_or(html.len() - name_at);
        let name = &html[name_at..name_at + name_len];
        if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            i = lt + 1;
            continue;
        }
        let Some(gt) = tag_end(html, name_at + name_len) else {
            break; // an unfinished tag: the rest is left as it is
        };
        let end = gt + 1;
        let lname = name.to_ascii_lowercase();
        let mut drop_tag = false;
        if closing {
            // Dropped elements are always deeper than the kept ones: close them first.
            if let Some(n) = dropped.get_mut(&lname).filter(|n| **n > 0) {
                *n -= 1;
                drop_tag = true;
            } else if let Some(pos) = stack.iter().rposition(|n| *n == lname) {
                stack.truncate(pos);
                dropped.clear(); // whatever was dropped inside it is closed with it
            }
        } else if RAW_TEXT.contains(&lname.as_str()) {
            // Step over the content to the end tag (case-insensitive); nothing nests inside.
            let lower_rest = html[end..].to_ascii_lowercase();
            i = lower_rest
                .find(&format!("</{lname}"))
                .map_or(html.len(), |e| end + e);
            continue;
        } else if !(VOID.contains(&lname.as_str()) || html[..gt].ends_with('/')) {
            if SELF_CLOSING_SIBLINGS.contains(&lname.as_str())
                && stack.last().is_some_and(|top| *top == lname)
            {
                stack.pop();
            }
            if stack.len() >= max_depth {
                *dropped.entry(lname).or_insert(0) += 1;
                drop_tag = true;
            } else {
                stack.push(lname);
            }
        }
        if drop_tag {
            let buf = out.get_or_insert_with(|| String::with_capacity(html.len()));
            buf.push_str(&html[copied..lt]);
            copied = end;
        }
        i = end;
    }
    match out {
        Some(mut buf) => {
            buf.push_str(&html[copied..]);
            Cow::Owned(buf)
        }
        None => Cow::Borrowed(html),
    }
}

/// The byte index of the `>` that ends the tag whose attributes start at `from`, skipping
/// quoted attribute values; `None` when the tag never ends.
fn tag_end(html: &str, from: usize) -> Option<usize> {
    let mut quote: Option<u8> = None;
    for (off, &b) in html.as_bytes()[from..].iter().enumerate() {
        match (quote, b) {
            (Some(q), _) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b),
            (None, b'>') => return Some(from + off),
            (None, _) => {}
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn shallow_pages_are_untouched() {
        let html =
            "<html><body><div><p>a<p>b<ul><li>x<li>y</ul><br><img src=x></div></body></html>";
        assert!(matches!(limit_nesting(html, 8), Cow::Borrowed(_)));
    }

    #[test]
    fn tags_past_the_limit_are_dropped_and_text_kept() {
        let html = format!(
            "{}<b>deep</b>{}tail",
            "<div>".repeat(10),
            "</div>".repeat(10)
        );
        let out = limit_nesting(&html, 3);
        assert_eq!(out, "<div><div><div>deep</div></div></div>tail");
    }

    #[test]
    fn siblings_and_void_elements_do_not_add_depth() {
        let many_p = "<div>".to_string() + &"<p>para".repeat(1000) + "</div>";
        assert!(matches!(limit_nesting(&many_p, 4), Cow::Borrowed(_)));
        let many_br = "<br>".repeat(1000) + &"<x/>".repeat(1000);
        assert!(matches!(limit_nesting(&many_br, 2), Cow::Borrowed(_)));
    }

    #[test]
    fn comments_raw_text_and_quoted_brackets_are_stepped_over() {
        let html = "<div><!-- <div><div> --><script>if (a<b) '<div><div>'</script>\
                    <a title=\"x>y\" href='<div>'>l</a><style>p{}</style></div>";
        assert!(matches!(limit_nesting(html, 2), Cow::Borrowed(_)));
        let unfinished = "<div><div><div";
        assert_eq!(limit_nesting(unfinished, 1), "<div><div");
    }
}
