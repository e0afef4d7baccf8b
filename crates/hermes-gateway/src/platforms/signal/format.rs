//! Markdown to Signal's own formatting: Signal renders no Markdown; styled ranges travel
//! beside the plain text as `start:length:STYLE` strings (signal-cli's `textStyle` option,
//! positions in UTF-16 code units as in the Signal protocol's `BodyRange`). Styles carried
//! over, as Python Hermes' `signal_format.py` does: `BOLD` (strong, headings), `ITALIC`,
//! `STRIKETHROUGH`, `MONOSPACE` (inline code and code blocks). Lists become `•` lines and
//! links `text (url)`.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// Plain text and its style ranges (`start:length:STYLE`, UTF-16 units).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Styled {
    /// The text as Signal shows it.
    pub text: String,
    /// One `start:length:STYLE` entry per styled range, in order of their start.
    pub styles: Vec<String>,
}

fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

struct Out {
    text: String,
    /// Length of `text` in UTF-16 units.
    pos: usize,
    open: Vec<(&'static str, usize)>,
    ranges: Vec<(usize, usize, &'static str)>,
    lists: Vec<Option<u64>>,
    link: Option<String>,
}

impl Out {
    fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.pos += utf16_len(s);
    }

    fn block_break(&mut self) {
        let t = self.text.trim_end_matches([' ', '\t']);
        let cut = self.text.len() - t.len();
        if cut > 0 {
            let removed = self.text.split_off(self.text.len() - cut);
            self.pos -= utf16_len(&removed);
        }
        if self.text.is_empty() || self.text.ends_with("\n\n") {
            return;
        }
        if self.text.ends_with('\n') {
            self.push("\n");
        } else {
            self.push("\n\n");
        }
    }

    fn open(&mut self, style: &'static str) {
        self.open.push((style, self.pos));
    }

    fn close(&mut self, style: &'static str) {
        if let Some(i) = self.open.iter().rposition(|(s, _)| *s == style) {
            let (_, start) = self.open.remove(i);
            let mut end = self.pos;
            // A code block's range stops before its trailing newline.
            if self.text.ends_with('\n') && end > start {
                end -= 1;
            }
            if end > start {
                self.ranges.push((start, end - start, style));
            }
        }
    }
}

/// Converts CommonMark `markdown` (what the delivery layer hands Signal chunks in) to text
/// plus Signal style ranges. Never fails; unknown constructs pass through as text.
pub fn to_signal(markdown: &str) -> Styled {
    let mut out = Out {
        text: String::new(),
        pos: 0,
        open: Vec::new(),
        ranges: Vec::new(),
        lists: Vec::new(),
        link: None,
    };
    let parser = Parser::new_ext(markdown, Options::ENABLE_STRIKETHROUGH);
    for event in parser {
        match event {
            Event::Start(tag) => match tag {
                Tag::Paragraph | Tag::BlockQuote(_) if out.lists.is_empty() => out.block_break(),
                Tag::Heading { .. } => {
                    out.block_break();
                    out.open("BOLD");
                }
                Tag::CodeBlock(_) => {
                    out.block_break();
                    out.open("MONOSPACE");
                }
                Tag::List(start) => {
                    if out.lists.is_empty() {
                        out.block_break();
                    } else if !out.text.ends_with('\n') {
                        out.push("\n");
                    }
                    out.lists.push(start);
                }
                Tag::Item => {
                    if !out.text.is_empty() && !out.text.ends_with('\n') {
                        out.push("\n");
                    }
                    let depth = out.lists.len().saturating_sub(1);
                    out.push(&"  ".repeat(depth));
                    let marker = match out.lists.last_mut() {
                        Some(Some(n)) => {
                            let m = format!("{n}. ");
                            *n += 1;
                            m
                        }
                        _ => "• ".to_string(),
                    };
                    out.push(&marker);
                }
                Tag::Emphasis => out.open("ITALIC"),
                Tag::Strong => out.open("BOLD"),
                Tag::Strikethrough => out.open("STRIKETHROUGH"),
                Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                    out.link = Some(dest_url.to_string());
                    out.open("LINK");
                }
                _ => {}
            },
            Event::End(tag) => match tag {
                TagEnd::Paragraph | TagEnd::BlockQuote(_) if out.lists.is_empty() => {
                    out.block_break()
                }
                TagEnd::Heading(_) => {
                    out.close("BOLD");
                    out.block_break();
                }
                TagEnd::CodeBlock => {
                    out.close("MONOSPACE");
                    out.block_break();
                }
                TagEnd::List(_) => {
                    out.lists.pop();
                    if out.lists.is_empty() {
                        out.block_break();
                    }
                }
                TagEnd::Emphasis => out.close("ITALIC"),
                TagEnd::Strong => out.close("BOLD"),
                TagEnd::Strikethrough => out.close("STRIKETHROUGH"),
                TagEnd::Link | TagEnd::Image => {
                    let start = out
                        .open
                        .iter()
                        .rposition(|(s, _)| *s == "LINK")
                        .map(|i| out.open.remove(i).1);
                    if let (Some(url), Some(start)) = (out.link.take(), start) {
                        let label_len = out.pos - start;
                        let label = tail_utf16(&out.text, label_len);
                        if label != url && !url.is_empty() {
                            out.push(&format!(" ({url})"));
                        }
                    }
                }
                _ => {}
            },
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => out.push(&t),
            Event::Code(t) => {
                out.open("MONOSPACE");
                out.push(&t);
                let start = out.open.pop().map(|(_, s)| s).unwrap_or(out.pos);
                if out.pos > start {
                    out.ranges.push((start, out.pos - start, "MONOSPACE"));
                }
            }
            Event::SoftBreak | Event::HardBreak => out.push("\n"),
            Event::Rule => {
                out.block_break();
                out.push("―――");
                out.block_break();
            }
            _ => {}
        }
    }
    let trimmed_len = out.text.trim_end().len();
    out.text.truncate(trimmed_len);
    let end = utf16_len(&out.text);
    out.ranges.sort_by_key(|r| r.0);
    let styles = out
        .ranges
        .into_iter()
        .filter(|(s, _, _)| *s < end)
        .map(|(s, l, style)| format!("{s}:{}:{style}", l.min(end - s)))
        .collect();
    Styled {
        text: out.text,
        styles,
    }
}

/// The last `units` UTF-16 units of `s` (whole characters).
fn tail_utf16(s: &str, units: usize) -> &str {
    let mut n = 0;
    for (i, c) in s.char_indices().rev() {
        n += c.len_utf16();
        if n >= units {
            return &s[i..];
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn styles_use_utf16_positions() {
        let s = to_signal("😀 **bold** and *it* `code`");
        assert_eq!(s.text, "😀 bold and it code");
        // The emoji is two UTF-16 units, the space one: "bold" starts at 3.
        assert_eq!(s.styles, vec!["3:4:BOLD", "12:2:ITALIC", "15:4:MONOSPACE"]);
    }

    #[test]
    fn blocks_lists_links_and_code() {
        let s = to_signal(
            "# Title\n\n- one\n- two\n\nsee [docs](https://x.example) ~~old~~\n\n```rust\nfn main() {}\n```\n",
        );
        assert_eq!(
            s.text,
            "Title\n\n• one\n• two\n\nsee docs (https://x.example) old\n\nfn main() {}"
        );
        assert!(s.styles.contains(&"0:5:BOLD".to_string()), "{:?}", s.styles);
        assert!(s.styles.iter().any(|r| r.ends_with(":3:STRIKETHROUGH")));
        assert!(s.styles.iter().any(|r| r.ends_with(":12:MONOSPACE")));
    }

    #[test]
    fn plain_text_has_no_styles_and_bare_links_stay() {
        let s = to_signal("just words <https://a.example>");
        assert_eq!(s.text, "just words https://a.example");
        assert!(s.styles.is_empty());
    }
}
