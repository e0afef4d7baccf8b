//! Styled text for the terminal: spans with a [`Style`], lines of spans, display width
//! (terminal columns per `unicode-width`, not chars or bytes), greedy word wrapping and the
//! ANSI SGR encoding. Every encoded span closes its own attributes (`ESC[0m`), so a line or a
//! chunk of output never leaves the terminal in a changed state and escapes are never split.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// A 24-bit color.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// Parses `#RRGGBB` or `#RGB` (the `#` is required); `None` for anything else.
    pub fn parse_hex(s: &str) -> Option<Rgb> {
        let hex = s.trim().strip_prefix('#')?;
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let v = |s: &str| u8::from_str_radix(s, 16).ok();
        match hex.len() {
            6 => Some(Rgb(v(&hex[0..2])?, v(&hex[2..4])?, v(&hex[4..6])?)),
            3 => {
                let d = |i: usize| v(&hex[i..=i]).map(|x| x * 17);
                Some(Rgb(d(0)?, d(1)?, d(2)?))
            }
            _ => None,
        }
    }
}

/// Text attributes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    /// Foreground color.
    pub fg: Option<Rgb>,
    /// Bold.
    pub bold: bool,
    /// Italic.
    pub italic: bool,
    /// Underlined.
    pub underline: bool,
    /// Dim (faint).
    pub dim: bool,
    /// Struck through.
    pub strike: bool,
}

impl Style {
    /// A style with only a foreground color.
    pub fn fg(color: Rgb) -> Style {
        Style {
            fg: Some(color),
            ..Style::default()
        }
    }

    /// This style made bold.
    pub fn bold(mut self) -> Style {
        self.bold = true;
        self
    }

    /// This style made dim.
    pub fn dim(mut self) -> Style {
        self.dim = true;
        self
    }

    /// The SGR parameters of this style (`1;38;2;r;g;b`), empty for the plain style.
    fn sgr(&self) -> String {
        let mut p: Vec<String> = Vec::new();
        if self.bold {
            p.push("1".into());
        }
        if self.dim {
            p.push("2".into());
        }
        if self.italic {
            p.push("3".into());
        }
        if self.underline {
            p.push("4".into());
        }
        if self.strike {
            p.push("9".into());
        }
        if let Some(Rgb(r, g, b)) = self.fg {
            p.push(format!("38;2;{r};{g};{b}"));
        }
        p.join(";")
    }
}

/// A run of text with one style. The text holds no newlines or control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The text.
    pub text: String,
    /// Its style.
    pub style: Style,
}

impl Span {
    /// A span; control characters (tabs become spaces) are removed so that model output can
    /// never inject terminal escapes.
    pub fn new(text: &str, style: Style) -> Span {
        Span {
            text: clean(text),
            style,
        }
    }

    /// An unstyled span.
    pub fn plain(text: &str) -> Span {
        Span::new(text, Style::default())
    }
}

/// Removes control characters (ESC, CR, BEL…) and turns tabs into four spaces (for a command
/// awaiting the user's judgement, [`visible_controls`] shows them instead).
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push_str("    "),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Text for a pipe or a file (`chat -q | cat`, `> answer.md`): line breaks and tabs kept,
/// every other control character removed (ESC, CR, BEL, DEL and the C1 controls), so a
/// model's answer printed by `cat` later cannot set the terminal's title, clipboard or
/// screen either.
pub fn plain_text(text: &str) -> String {
    text.chars()
        .filter(|&c| matches!(c, '\n' | '\t') || !c.is_control())
        .collect()
}

/// Shows a text the user must judge (a command awaiting approval) exactly: line breaks are
/// kept, each followed by `indent`; tabs become four spaces; every other control character
/// is shown in caret notation (`^[` for ESC, `^M` for CR, `^?` for DEL) and bidirectional
/// overrides as `<U+202E>`, so no escape sequence or carriage return can redraw what is on
/// the screen (the attack pass of stop 31 hid an `rm -rf` behind `\r` and ANSI erases).
pub fn visible_controls(text: &str, indent: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => {
                out.push('\n');
                out.push_str(indent);
            }
            '\t' => out.push_str("    "),
            '\u{7f}' => out.push_str("^?"),
            c if (c as u32) < 0x20 => {
                out.push('^');
                out.push(char::from(b'@' + c as u8));
            }
            c if c.is_control()
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}') =>
            {
                out.push_str(&format!("<U+{:04X}>", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// One screen line.
pub type Line = Vec<Span>;

/// Display width of `s` in terminal columns.
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// Display width of a line in terminal columns.
pub fn line_width(line: &[Span]) -> usize {
    line.iter().map(|s| width(&s.text)).sum()
}

/// Encodes lines as terminal text: each line ends with `\n`; with `color` each styled span is
/// wrapped in `ESC[…m` … `ESC[0m`, without it only the text is written.
pub fn encode(lines: &[Line], color: bool) -> String {
    let mut out = String::new();
    for line in lines {
        encode_line_into(&mut out, line, color);
        out.push('\n');
    }
    out
}

/// Encodes one line without a trailing newline (see [`encode`]).
pub fn encode_line(line: &[Span], color: bool) -> String {
    let mut out = String::new();
    encode_line_into(&mut out, line, color);
    out
}

fn encode_line_into(out: &mut String, line: &[Span], color: bool) {
    for span in line {
        let sgr = span.style.sgr();
        if color && !sgr.is_empty() && !span.text.is_empty() {
            out.push_str("\x1b[");
            out.push_str(&sgr);
            out.push('m');
            out.push_str(&span.text);
            out.push_str("\x1b[0m");
        } else {
            out.push_str(&span.text);
        }
    }
}

/// Cuts `s` to at most `max` columns, ending with `…` when something was cut.
pub fn truncate(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    if max > 0 {
        out.push('…');
    }
    out
}

/// Greedy word wrap of `spans` into lines at most `width` columns wide (at least 1).
/// `first` prefixes the first line, `rest` every following one; their widths count.
/// A `\n` inside a span forces a line break (Markdown hard breaks); words longer than a line
/// are split between characters. Spaces at a line break are dropped.
pub fn wrap(spans: &[Span], width: usize, first: &[Span], rest: &[Span]) -> Vec<Line> {
    // Split into words (runs without spaces), single spaces, and forced breaks.
    enum Piece {
        Word(Vec<Span>),
        Space(Style),
        Break,
    }
    let mut pieces: Vec<Piece> = Vec::new();
    let mut word: Vec<Span> = Vec::new();
    let flush_word = |word: &mut Vec<Span>, pieces: &mut Vec<Piece>| {
        if !word.is_empty() {
            pieces.push(Piece::Word(std::mem::take(word)));
        }
    };
    for span in spans {
        let mut cur = String::new();
        for c in span.text.chars().chain(std::iter::once('\u{0}')) {
            match c {
                ' ' | '\n' | '\u{0}' => {
                    if !cur.is_empty() {
                        word.push(Span {
                            text: std::mem::take(&mut cur),
                            style: span.style,
                        });
                    }
                    if c == ' ' {
                        flush_word(&mut word, &mut pieces);
                        pieces.push(Piece::Space(span.style));
                    } else if c == '\n' {
                        flush_word(&mut word, &mut pieces);
                        pieces.push(Piece::Break);
                    }
                }
                c => cur.push(c),
            }
        }
    }
    flush_word(&mut word, &mut pieces);

    let mut lines: Vec<Line> = Vec::new();
    let mut line: Line = first.to_vec();
    let mut used = line_width(first);
    let mut content = false;
    let mut pending_space: Option<Style> = None;
    let new_line = |lines: &mut Vec<Line>, line: &mut Line| {
        lines.push(std::mem::replace(line, rest.to_vec()));
        line_width(rest)
    };
    for piece in pieces {
        match piece {
            Piece::Break => {
                used = new_line(&mut lines, &mut line);
                content = false;
                pending_space = None;
            }
            Piece::Space(style) => {
                if content {
                    pending_space = Some(style);
                }
            }
            Piece::Word(parts) => {
                let w: usize = parts.iter().map(|s| self::width(&s.text)).sum();
                let space = usize::from(pending_space.is_some());
                if content && used + space + w > width {
                    used = new_line(&mut lines, &mut line);
                    content = false;
                } else if let Some(style) = pending_space {
                    line.push(Span {
                        text: " ".into(),
                        style,
                    });
                    used += 1;
                }
                pending_space = None;
                for part in parts {
                    let mut chunk = String::new();
                    for c in part.text.chars() {
                        let cw = c.width().unwrap_or(0);
                        if used + cw > width && (content || !chunk.is_empty()) {
                            if !chunk.is_empty() {
                                line.push(Span {
                                    text: std::mem::take(&mut chunk),
                                    style: part.style,
                                });
                            }
                            used = new_line(&mut lines, &mut line);
                            content = false;
                        }
                        chunk.push(c);
                        used += cw;
                    }
                    if !chunk.is_empty() {
                        line.push(Span {
                            text: chunk,
                            style: part.style,
                        });
                        content = true;
                    }
                }
            }
        }
    }
    lines.push(line);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_awaiting_approval_cannot_redraw_the_screen() {
        let hostile = "rm -rf ~/work\r\x1b[2K\x1b[1Als -la\u{202e}x";
        let shown = visible_controls(hostile, "    ");
        assert_eq!(shown, "rm -rf ~/work^M^[[2K^[[1Als -la<U+202E>x");
        assert!(!shown.chars().any(|c| c.is_control()));
        assert_eq!(visible_controls("a\n\tb\x7f", "  "), "a\n      b^?");
    }

    #[test]
    fn hex_colors_parse_and_bad_ones_do_not() {
        assert_eq!(Rgb::parse_hex("#FFD700"), Some(Rgb(255, 215, 0)));
        assert_eq!(Rgb::parse_hex("#fff"), Some(Rgb(255, 255, 255)));
        assert_eq!(Rgb::parse_hex("FFD700"), None);
        assert_eq!(Rgb::parse_hex("#GGGGGG"), None);
        assert_eq!(Rgb::parse_hex("#ééé"), None);
    }

    #[test]
    fn wrap_is_greedy_and_counts_wide_characters() {
        let spans = [Span::plain("alpha beta gamma 你好世界 delta")];
        let lines = wrap(&spans, 11, &[Span::plain("• ")], &[Span::plain("  ")]);
        let text: Vec<String> = lines.iter().map(|l| encode_line(l, false)).collect();
        assert_eq!(
            text,
            ["• alpha", "  beta", "  gamma", "  你好世界", "  delta"]
        );
        for l in &lines {
            assert!(line_width(l) <= 11);
        }
    }

    #[test]
    fn long_words_are_split_and_breaks_are_kept() {
        let hard_break = Span {
            text: "\n".into(),
            style: Style::default(),
        };
        let spans = [Span::plain("abcdefghij x"), hard_break, Span::plain("y")];
        let lines = wrap(&spans, 4, &[], &[]);
        let text: Vec<String> = lines.iter().map(|l| encode_line(l, false)).collect();
        assert_eq!(text, ["abcd", "efgh", "ij x", "y"]);
    }

    #[test]
    fn escapes_from_the_model_are_removed_and_spans_close_their_style() {
        let line = vec![
            Span::new("a\x1b[31mb", Style::default().bold()),
            Span::plain("c"),
        ];
        assert_eq!(encode_line(&line, true), "\x1b[1ma[31mb\x1b[0mc");
        assert_eq!(encode_line(&line, false), "a[31mbc");
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
