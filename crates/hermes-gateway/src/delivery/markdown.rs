//! Source Markdown → a flat stream of [`Unit`]s the chunker may split between.
//!
//! The parser reads the common Markdown a model writes (CommonMark-like, simplified):
//! fenced code blocks, ATX headings, bullet and ordered list items, block quotes, rules,
//! and inline `**bold**`, `*italic*` / `_italic_`, `~~strike~~`, `` `code` ``,
//! `[text](url)`, `<https://…>` and backslash escapes. Everything is flattened to words
//! (atoms) carrying a style bitset, so any boundary between two units can become a chunk
//! boundary without tearing an entity: a link or a code span is one atom, an escape is part
//! of a word, and styles are closed and re-opened by the renderer.

/// Style bit: bold (`**x**`).
pub(crate) const BOLD: u8 = 1;
/// Style bit: italic (`*x*`, `_x_`).
pub(crate) const ITALIC: u8 = 2;
/// Style bit: strikethrough (`~~x~~`).
pub(crate) const STRIKE: u8 = 4;
/// Style bit: part of a heading (rendered as bold where the markup has no headings).
pub(crate) const HEADING: u8 = 8;

/// One unsplittable piece of inline content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AtomKind {
    /// A word (no whitespace) with escapes already resolved.
    Word(String),
    /// An inline code span's content.
    Code(String),
    /// A link: visible text (plain) and target.
    Link { text: String, url: String },
}

/// A styled atom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Atom {
    pub(crate) kind: AtomKind,
    pub(crate) style: u8,
    /// Whitespace separates it from the previous atom of the line.
    pub(crate) space_before: bool,
}

/// How good a chunk boundary before a unit is (higher is better).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Break {
    /// Not a boundary (inside a word, before a fence's closing line).
    None,
    /// Inside an over-long word or code line that had to be cut.
    Hard,
    /// Between two words.
    Word,
    /// Between two lines.
    Line,
    /// Between two paragraphs (a blank line in the source).
    Paragraph,
}

/// What starts a text line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LineHead {
    /// An ordinary paragraph line.
    Plain,
    /// `#`…`######` heading of this level.
    Heading(u8),
    /// `-`, `*` or `+` list item, indented by this many spaces (≤ 8).
    Bullet(usize),
    /// `1.` list item: indent (≤ 8) and the number as written (≤ 9 digits).
    Ordered(usize, String),
    /// `>` block quote line.
    Quote,
    /// `---` thematic break (no atoms follow).
    Rule,
}

/// One unit of the flattened document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unit {
    /// A new text line; `para` when a blank line preceded it.
    Line { head: LineHead, para: bool },
    /// Inline content of the current line, with the quality of a boundary before it.
    Atom(Atom, Break),
    /// Opens a code fence with this (sanitized) info string.
    Fence { info: String, para: bool },
    /// One line of a fence body; `cont` when it continues the previous line (a cut line).
    Code { text: String, cont: bool },
    /// Closes the open fence.
    FenceEnd,
}

impl Unit {
    /// The quality of a chunk boundary placed before this unit.
    pub(crate) fn break_before(&self) -> Break {
        match self {
            Unit::Line { para: true, .. } | Unit::Fence { para: true, .. } => Break::Paragraph,
            Unit::Line { .. } | Unit::Fence { .. } => Break::Line,
            Unit::Atom(_, b) => *b,
            Unit::Code { cont: false, .. } => Break::Line,
            Unit::Code { cont: true, .. } => Break::Hard,
            Unit::FenceEnd => Break::None,
        }
    }
}

const MAX_INDENT: usize = 8;
const MAX_INFO_CHARS: usize = 32;

/// Parses `src` into units. Blank input gives no units.
pub(crate) fn parse(src: &str) -> Vec<Unit> {
    let mut units = Vec::new();
    let mut para = false;
    // (fence char, fence length) while inside a fence.
    let mut fence: Option<(char, usize)> = None;
    for raw in src.split('\n') {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some((ch, n)) = fence {
            if is_fence_close(line, ch, n) {
                units.push(Unit::FenceEnd);
                fence = None;
            } else {
                units.push(Unit::Code {
                    text: line.to_string(),
                    cont: false,
                });
            }
            continue;
        }
        if line.trim().is_empty() {
            para = !units.is_empty();
            continue;
        }
        if let Some((ch, n, info)) = fence_open(line) {
            units.push(Unit::Fence { info, para });
            para = false;
            fence = Some((ch, n));
            continue;
        }
        let (head, rest) = line_head(line);
        let extra = if matches!(head, LineHead::Heading(_)) {
            HEADING
        } else {
            0
        };
        units.push(Unit::Line { head, para });
        para = false;
        for (i, mut atom) in inline_atoms(rest).into_iter().enumerate() {
            atom.style |= extra;
            let brk = if i > 0 && atom.space_before {
                Break::Word
            } else {
                Break::None
            };
            units.push(Unit::Atom(atom, brk));
        }
    }
    if fence.is_some() {
        units.push(Unit::FenceEnd);
    }
    units
}

fn leading_spaces(line: &str) -> usize {
    line.chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

fn fence_open(line: &str) -> Option<(char, usize, String)> {
    if leading_spaces(line) > 3 {
        return None;
    }
    let t = line.trim_start();
    let ch = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = t.chars().take_while(|c| *c == ch).count();
    if n < 3 {
        return None;
    }
    let info_src = &t[n..];
    if ch == '`' && info_src.contains('`') {
        return None;
    }
    let info: String = info_src
        .split_whitespace()
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '#' | '.' | '_'))
        .take(MAX_INFO_CHARS)
        .collect();
    Some((ch, n, info))
}

fn is_fence_close(line: &str, ch: char, n: usize) -> bool {
    if leading_spaces(line) > 3 {
        return false;
    }
    let t = line.trim();
    t.chars().count() >= n && t.chars().all(|c| c == ch)
}

fn line_head(line: &str) -> (LineHead, &str) {
    let indent = leading_spaces(line).min(MAX_INDENT);
    let t = line.trim_start();
    let hashes = t.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&hashes) {
        let rest = &t[hashes..];
        if rest.is_empty() || rest.starts_with([' ', '\t']) {
            let rest = rest.trim().trim_end_matches('#').trim_end();
            return (LineHead::Heading(hashes as u8), rest);
        }
    }
    if is_rule(t) {
        return (LineHead::Rule, "");
    }
    if let Some(rest) = t
        .strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .or_else(|| t.strip_prefix("+ "))
    {
        return (LineHead::Bullet(indent), rest.trim_start());
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if (1..=9).contains(&digits) {
        let rest = &t[digits..];
        if let Some(r) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return (
                LineHead::Ordered(indent, t[..digits].to_string()),
                r.trim_start(),
            );
        }
    }
    if let Some(rest) = t.strip_prefix('>') {
        return (LineHead::Quote, rest.trim_start());
    }
    (LineHead::Plain, t)
}

fn is_rule(t: &str) -> bool {
    let compact: String = t.chars().filter(|c| !c.is_whitespace()).collect();
    compact.chars().count() >= 3
        && ['-', '*', '_']
            .iter()
            .any(|m| compact.chars().all(|c| c == *m))
}

/// Inline tokens before emphasis matching.
#[derive(Debug)]
enum Tok {
    Text(String),
    Space,
    Code(String),
    Link { text: String, url: String },
    Delim(Delim),
}

#[derive(Debug)]
struct Delim {
    ch: char,
    /// Characters left unmatched (rendered literally).
    left: usize,
    can_open: bool,
    can_close: bool,
}

/// Parses one line's inline Markdown into styled atoms.
pub(crate) fn inline_atoms(text: &str) -> Vec<Atom> {
    let chars: Vec<char> = text.chars().collect();
    let mut toks = tokenize(&chars);
    let styles = match_emphasis(&mut toks);
    flatten(&toks, &styles)
}

fn tokenize(chars: &[char]) -> Vec<Tok> {
    let mut toks: Vec<Tok> = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, toks: &mut Vec<Tok>| {
        if !text.is_empty() {
            toks.push(Tok::Text(std::mem::take(text)));
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() && chars[i + 1].is_ascii_punctuation() {
            text.push(chars[i + 1]);
            i += 2;
            continue;
        }
        if c.is_whitespace() {
            flush(&mut text, &mut toks);
            if !matches!(toks.last(), Some(Tok::Space)) {
                toks.push(Tok::Space);
            }
            i += 1;
            continue;
        }
        if c == '`' {
            let n = run_len(chars, i, '`');
            if let Some(end) = find_code_close(chars, i + n, n) {
                flush(&mut text, &mut toks);
                let mut content: String = chars[i + n..end].iter().collect();
                if content.len() >= 2
                    && content.starts_with(' ')
                    && content.ends_with(' ')
                    && !content.trim().is_empty()
                {
                    content = content[1..content.len() - 1].to_string();
                }
                toks.push(Tok::Code(content));
                i = end + n;
            } else {
                text.extend(std::iter::repeat_n('`', n));
                i += n;
            }
            continue;
        }
        if c == '['
            && let Some((label, url, end)) = parse_link(chars, i)
        {
            flush(&mut text, &mut toks);
            let visible = plain_text(&inline_atoms(&label));
            let text = if visible.trim().is_empty() {
                url.clone()
            } else {
                visible
            };
            toks.push(Tok::Link { text, url });
            i = end;
            continue;
        }
        if c == '<'
            && let Some((url, end)) = parse_autolink(chars, i)
        {
            flush(&mut text, &mut toks);
            toks.push(Tok::Link {
                text: url.clone(),
                url,
            });
            i = end;
            continue;
        }
        if c == '*' || c == '_' || c == '~' {
            let n = run_len(chars, i, c);
            if c == '~' && n < 2 {
                text.push(c);
                i += 1;
                continue;
            }
            flush(&mut text, &mut toks);
            let prev = if i == 0 { None } else { Some(chars[i - 1]) };
            let next = chars.get(i + n).copied();
            let ws = |o: Option<char>| o.is_none_or(char::is_whitespace);
            let alnum = |o: Option<char>| o.is_some_and(char::is_alphanumeric);
            let mut can_open = !ws(next);
            let mut can_close = !ws(prev);
            if c == '_' {
                can_open &= !alnum(prev);
                can_close &= !alnum(next);
            }
            toks.push(Tok::Delim(Delim {
                ch: c,
                left: n,
                can_open,
                can_close,
            }));
            i += n;
            continue;
        }
        text.push(c);
        i += 1;
    }
    flush(&mut text, &mut toks);
    toks
}

fn run_len(chars: &[char], from: usize, c: char) -> usize {
    chars[from..].iter().take_while(|x| **x == c).count()
}

fn find_code_close(chars: &[char], from: usize, n: usize) -> Option<usize> {
    let mut j = from;
    while j < chars.len() {
        if chars[j] == '`' {
            let m = run_len(chars, j, '`');
            if m == n {
                return Some(j);
            }
            j += m;
        } else {
            j += 1;
        }
    }
    None
}

/// `[label](url)` starting at `start`; returns the label source, the url and the index
/// after the closing parenthesis.
fn parse_link(chars: &[char], start: usize) -> Option<(String, String, usize)> {
    let mut depth = 0usize;
    let mut j = start;
    let close = loop {
        let c = *chars.get(j)?;
        match c {
            '\\' => j += 1,
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    break j;
                }
            }
            _ => {}
        }
        j += 1;
    };
    if chars.get(close + 1) != Some(&'(') {
        return None;
    }
    let mut k = close + 2;
    let mut parens = 0usize;
    let mut url = String::new();
    loop {
        let c = *chars.get(k)?;
        match c {
            ')' if parens == 0 => break,
            ')' => parens -= 1,
            '(' => parens += 1,
            c if c.is_whitespace() => return None,
            _ => {}
        }
        url.push(c);
        k += 1;
    }
    if url.is_empty() {
        return None;
    }
    let label: String = chars[start + 1..close].iter().collect();
    Some((label, url, k + 1))
}

fn parse_autolink(chars: &[char], start: usize) -> Option<(String, usize)> {
    let mut j = start + 1;
    let mut url = String::new();
    loop {
        let c = *chars.get(j)?;
        if c == '>' {
            break;
        }
        if c.is_whitespace() || c == '<' {
            return None;
        }
        url.push(c);
        j += 1;
    }
    let ok = ["http://", "https://", "mailto:"]
        .iter()
        .any(|p| url.starts_with(p) && url.len() > p.len());
    ok.then_some((url, j + 1))
}

/// Pairs emphasis delimiters (a simplified CommonMark delimiter stack) and returns the
/// style of every token position.
fn match_emphasis(toks: &mut [Tok]) -> Vec<u8> {
    // (token index, style bit) of every opened/closed span, as difference marks.
    let mut marks: Vec<(usize, usize, u8)> = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    for i in 0..toks.len() {
        let Tok::Delim(d) = &toks[i] else { continue };
        let (ch, can_close, can_open) = (d.ch, d.can_close, d.can_open);
        if can_close {
            loop {
                let closer_left = match &toks[i] {
                    Tok::Delim(d) => d.left,
                    _ => 0,
                };
                if closer_left == 0 {
                    break;
                }
                let Some(pos) = stack.iter().rposition(
                    |&o| matches!(&toks[o], Tok::Delim(od) if od.ch == ch && od.left > 0),
                ) else {
                    break;
                };
                let o = stack[pos];
                let opener_left = match &toks[o] {
                    Tok::Delim(d) => d.left,
                    _ => 0,
                };
                let used = if ch == '~' {
                    if opener_left >= 2 && closer_left >= 2 {
                        2
                    } else {
                        break;
                    }
                } else if opener_left >= 2 && closer_left >= 2 {
                    2
                } else {
                    1
                };
                let bit = match (ch, used) {
                    ('~', _) => STRIKE,
                    (_, 2) => BOLD,
                    _ => ITALIC,
                };
                marks.push((o, i, bit));
                if let Tok::Delim(od) = &mut toks[o] {
                    od.left -= used;
                }
                if let Tok::Delim(cd) = &mut toks[i] {
                    cd.left -= used;
                }
                stack.truncate(pos + 1);
                if matches!(&toks[o], Tok::Delim(od) if od.left == 0) {
                    stack.pop();
                }
            }
        }
        let left = match &toks[i] {
            Tok::Delim(d) => d.left,
            _ => 0,
        };
        if can_open && left > 0 {
            stack.push(i);
        }
    }
    let mut styles = vec![0u8; toks.len()];
    for bit in [BOLD, ITALIC, STRIKE] {
        let mut diff = vec![0i32; toks.len() + 1];
        for &(o, c, b) in &marks {
            if b == bit {
                diff[o + 1] += 1;
                diff[c] -= 1;
            }
        }
        let mut depth = 0;
        for (i, s) in styles.iter_mut().enumerate() {
            depth += diff[i];
            if depth > 0 {
                *s |= bit;
            }
        }
    }
    styles
}

fn flatten(toks: &[Tok], styles: &[u8]) -> Vec<Atom> {
    let mut atoms = Vec::new();
    let mut word = String::new();
    let mut word_style = 0u8;
    let mut space = false;
    let flush = |word: &mut String, style: u8, space: &mut bool, atoms: &mut Vec<Atom>| {
        if !word.is_empty() {
            atoms.push(Atom {
                kind: AtomKind::Word(std::mem::take(word)),
                style,
                space_before: std::mem::take(space),
            });
        }
    };
    for (tok, &style) in toks.iter().zip(styles) {
        match tok {
            Tok::Space => {
                flush(&mut word, word_style, &mut space, &mut atoms);
                space = true;
            }
            Tok::Text(t) => {
                if style != word_style {
                    flush(&mut word, word_style, &mut space, &mut atoms);
                    word_style = style;
                }
                word.push_str(t);
            }
            Tok::Delim(d) => {
                if d.left > 0 {
                    if style != word_style {
                        flush(&mut word, word_style, &mut space, &mut atoms);
                        word_style = style;
                    }
                    word.extend(std::iter::repeat_n(d.ch, d.left));
                } else {
                    flush(&mut word, word_style, &mut space, &mut atoms);
                }
            }
            Tok::Code(c) => {
                flush(&mut word, word_style, &mut space, &mut atoms);
                atoms.push(Atom {
                    kind: AtomKind::Code(c.clone()),
                    style,
                    space_before: std::mem::take(&mut space),
                });
            }
            Tok::Link { text, url } => {
                flush(&mut word, word_style, &mut space, &mut atoms);
                atoms.push(Atom {
                    kind: AtomKind::Link {
                        text: text.clone(),
                        url: url.clone(),
                    },
                    style,
                    space_before: std::mem::take(&mut space),
                });
            }
        }
    }
    flush(&mut word, word_style, &mut space, &mut atoms);
    atoms
}

/// The visible text of atoms, words separated by single spaces.
pub(crate) fn plain_text(atoms: &[Atom]) -> String {
    let mut out = String::new();
    for a in atoms {
        if a.space_before && !out.is_empty() {
            out.push(' ');
        }
        match &a.kind {
            AtomKind::Word(w) | AtomKind::Code(w) => out.push_str(w),
            AtomKind::Link { text, .. } => out.push_str(text),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(atoms: &[Atom]) -> Vec<(String, u8)> {
        atoms
            .iter()
            .map(|a| match &a.kind {
                AtomKind::Word(w) => (w.clone(), a.style),
                AtomKind::Code(c) => (format!("`{c}`"), a.style),
                AtomKind::Link { text, url } => (format!("[{text}]({url})"), a.style),
            })
            .collect()
    }

    #[test]
    fn emphasis_code_and_links_become_styled_atoms() {
        let a = inline_atoms("a **b c** _d_ `x y` [docs](https://e.org/a_b) snake_case ~~s~~");
        assert_eq!(
            words(&a),
            vec![
                ("a".into(), 0),
                ("b".into(), BOLD),
                ("c".into(), BOLD),
                ("d".into(), ITALIC),
                ("`x y`".into(), 0),
                ("[docs](https://e.org/a_b)".into(), 0),
                ("snake_case".into(), 0),
                ("s".into(), STRIKE),
            ]
        );
    }

    #[test]
    fn unmatched_delimiters_stay_literal() {
        let a = inline_atoms("2 * 3 = 6 and **open");
        assert_eq!(plain_text(&a), "2 * 3 = 6 and **open");
        let a = inline_atoms("***both***");
        assert_eq!(words(&a), vec![("both".into(), BOLD | ITALIC)]);
        let a = inline_atoms(r"\*not\* [half](link");
        assert_eq!(plain_text(&a), "*not* [half](link");
    }

    #[test]
    fn blocks_fences_and_paragraphs() {
        let u = parse("# Title\n\ntext\n```rust\nfn x() {}\n```\n- item\n");
        assert!(matches!(
            &u[0],
            Unit::Line {
                head: LineHead::Heading(1),
                para: false
            }
        ));
        assert!(matches!(&u[1], Unit::Atom(a, _) if a.style == HEADING));
        assert!(matches!(
            &u[2],
            Unit::Line {
                head: LineHead::Plain,
                para: true
            }
        ));
        assert!(matches!(&u[4], Unit::Fence { info, para: false } if info == "rust"));
        assert!(matches!(&u[5], Unit::Code { text, .. } if text == "fn x() {}"));
        assert!(matches!(&u[6], Unit::FenceEnd));
        assert!(matches!(
            &u[7],
            Unit::Line {
                head: LineHead::Bullet(0),
                ..
            }
        ));
        // An unclosed fence is closed at the end.
        let u = parse("```\ncode");
        assert!(matches!(u.last(), Some(Unit::FenceEnd)));
    }
}
