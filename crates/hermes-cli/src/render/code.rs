//! Fenced code blocks: syntax highlighting with syntect, one source line at a time, so a block
//! that is still streaming is drawn line by line with the same result as a finished one.
//!
//! syntect's bundled syntax and theme sets are loaded on first use only (a REPL that never
//! shows code never pays for them).

use std::sync::OnceLock;

use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;

use super::style::{Line, Rgb, Span, Style, clean, width};

/// Columns of indentation before each code line.
const INDENT: usize = 2;

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn themes() -> &'static ThemeSet {
    static SET: OnceLock<ThemeSet> = OnceLock::new();
    SET.get_or_init(ThemeSet::load_defaults)
}

/// Names of the themes a skin may pick as `code_theme`.
#[cfg(test)]
pub fn theme_names() -> Vec<String> {
    themes().themes.keys().cloned().collect()
}

/// One fenced code block being drawn.
pub struct CodeBlock {
    highlighter: Option<HighlightLines<'static>>,
    width: usize,
}

impl CodeBlock {
    /// Starts a block for language `lang` (the first word of the fence's info string; empty
    /// when none) with syntect theme `theme` (unknown → plain text) on a screen `width`
    /// columns wide. Returns the block and its header lines (the language label).
    pub fn start(lang: &str, theme: &str, width: usize, label: Style) -> (CodeBlock, Vec<Line>) {
        let lang = lang.trim();
        let highlighter = if lang.is_empty() {
            None
        } else {
            let ss = syntaxes();
            let syntax = ss
                .find_syntax_by_token(lang)
                .or_else(|| ss.find_syntax_by_name(lang));
            let theme: Option<&'static Theme> = themes().themes.get(theme);
            match (syntax, theme) {
                (Some(s), Some(t)) => Some(HighlightLines::new(s, t)),
                _ => None,
            }
        };
        let header = if lang.is_empty() {
            Vec::new()
        } else {
            vec![vec![Span::new(&format!("▎{lang}"), label)]]
        };
        (
            CodeBlock {
                highlighter,
                width: width.max(INDENT + 1),
            },
            header,
        )
    }

    /// Draws one source line (without its newline): highlighted, indented, and split into
    /// several screen lines when it is wider than the screen.
    pub fn line(&mut self, text: &str) -> Vec<Line> {
        let spans: Vec<Span> = match self.highlighter.as_mut() {
            Some(h) => {
                let with_nl = format!("{text}\n");
                match h.highlight_line(&with_nl, syntaxes()) {
                    Ok(regions) => regions
                        .into_iter()
                        .map(|(st, piece)| Span::new(piece, convert(st)))
                        .filter(|s| !s.text.is_empty())
                        .collect(),
                    Err(_) => vec![Span::plain(text)],
                }
            }
            None => vec![Span::plain(text)],
        };
        self.split(spans)
    }

    fn split(&self, spans: Vec<Span>) -> Vec<Line> {
        let room = self.width - INDENT;
        let indent = || vec![Span::plain(&" ".repeat(INDENT))];
        let mut lines = Vec::new();
        let mut current = indent();
        let mut used = 0;
        for span in spans {
            let mut chunk = String::new();
            for c in clean(&span.text).chars() {
                let w = width(c.encode_utf8(&mut [0; 4]));
                if used + w > room && used > 0 {
                    if !chunk.is_empty() {
                        current.push(Span::new(&std::mem::take(&mut chunk), span.style));
                    }
                    lines.push(std::mem::replace(&mut current, indent()));
                    used = 0;
                }
                chunk.push(c);
                used += w;
            }
            if !chunk.is_empty() {
                current.push(Span::new(&chunk, span.style));
            }
        }
        lines.push(current);
        lines
    }
}

fn convert(st: syntect::highlighting::Style) -> Style {
    let c = st.foreground;
    Style {
        fg: Some(Rgb(c.r, c.g, c.b)),
        bold: st.font_style.contains(FontStyle::BOLD),
        italic: st.font_style.contains(FontStyle::ITALIC),
        underline: st.font_style.contains(FontStyle::UNDERLINE),
        ..Style::default()
    }
}
