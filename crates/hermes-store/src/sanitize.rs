//! The FTS5 query sanitizer (FEATURES §10; vectors/fts_query_sanitizer.json; cases C19, C21).
//!
//! Any user or model text becomes a valid FTS5 `MATCH` expression:
//! - balanced `"…"` phrases are kept, with a `*` right after the closing quote as a prefix
//!   marker (empty or punctuation-only phrases are dropped); an
//!   unbalanced `"` is treated as a space (`unbalanced "quote` → `unbalanced quote`);
//! - `(`, `)`, whitespace and control characters separate terms (inside a phrase, a control
//!   character becomes a space); explicit uppercase `OR`/`AND`/`NOT` between terms
//!   are kept, a run of operators collapses to its first one, and operators at the start or end
//!   are dropped (`hello AND` → `hello`);
//! - a bare term loses leading and trailing punctuation (`***foo` → `foo`), except that
//!   trailing `*` marks a prefix query and is kept (`foo*`);
//! - a term that still contains anything but letters and digits (`-`, `.`, `_`, `:`, …) is
//!   quoted as a phrase (`note-book` → `"note-book"`, `P2.2` → `"P2.2"`), so FTS5 never reads
//!   it as a column filter or operator (case C19); the keyword `NEAR` is quoted too;
//! - terms are joined by one space (inner runs of spaces collapse), and the result is capped
//!   at [`MAX_QUERY_CHARS`] by dropping whole trailing terms;
//! - a query with no letters or digits becomes the empty string (search returns no hits).

/// Longest sanitized query, in chars (FEATURES §10). Input beyond four times this is ignored.
pub const MAX_QUERY_CHARS: usize = 2048;

/// A boolean operator between terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Or,
    And,
    Not,
}

impl Op {
    fn as_str(self) -> &'static str {
        match self {
            Op::Or => "OR",
            Op::And => "AND",
            Op::Not => "NOT",
        }
    }
}

/// One element of a sanitized query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    /// A word or phrase to match.
    Term {
        /// The text without quotes or the prefix `*`.
        text: String,
        /// Rendered as a `"…"` phrase.
        quoted: bool,
        /// Rendered with a trailing `*` (prefix query).
        prefix: bool,
    },
    /// An operator; the parser guarantees it sits between two terms.
    Op(Op),
}

impl Item {
    fn render(&self) -> String {
        match self {
            Item::Term {
                text,
                quoted,
                prefix,
            } => {
                let star = if *prefix { "*" } else { "" };
                if *quoted {
                    format!("\"{text}\"{star}")
                } else {
                    format!("{text}{star}")
                }
            }
            Item::Op(op) => op.as_str().to_string(),
        }
    }
}

/// Turns user text into a valid FTS5 query; see the module docs for the rules.
///
/// `"exact phrase" foo` stays as is, `chat-send` becomes `"chat-send"`, `hello AND` becomes
/// `hello`, and `!!!` becomes the empty string. The result is at most [`MAX_QUERY_CHARS`] chars.
pub fn sanitize_fts_query(input: &str) -> String {
    render(&parse_query(input))
}

/// Renders parsed items joined by single spaces.
pub(crate) fn render(items: &[Item]) -> String {
    items.iter().map(Item::render).collect::<Vec<_>>().join(" ")
}

/// Parses user text into terms and operators, applying every rule of the module docs
/// (including the length cap), so that [`render`] yields a valid FTS5 expression.
pub(crate) fn parse_query(input: &str) -> Vec<Item> {
    // Control characters (NUL would end the query early inside SQLite) count as spaces.
    let input: String = input
        .chars()
        .take(MAX_QUERY_CHARS * 4)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut raw = Vec::new();
    for token in split_tokens(&input) {
        match token {
            Token::Phrase(text, prefix) => {
                if text.chars().any(char::is_alphanumeric) {
                    raw.push(Item::Term {
                        text,
                        quoted: true,
                        prefix,
                    });
                }
            }
            Token::Word(word) => {
                if let Some(item) = classify_word(&word) {
                    raw.push(item);
                }
            }
        }
    }
    cap_length(normalize_operators(raw))
}

enum Token {
    /// Phrase text and whether `*` followed the closing quote (prefix phrase).
    Phrase(String, bool),
    Word(String),
}

/// Splits on whitespace and parentheses; balanced quotes make phrases, a lone quote is a space.
fn split_tokens(input: &str) -> Vec<Token> {
    let chars: Vec<char> = input.chars().collect();
    let quote_count = chars.iter().filter(|&&c| c == '"').count();
    // With an odd count, the last quote has no partner and acts as a separator.
    let unmatched_index = if quote_count % 2 == 1 {
        chars.iter().rposition(|&c| c == '"')
    } else {
        None
    };
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' && Some(i) != unmatched_index {
            flush_word(&mut word, &mut tokens);
            let mut phrase = String::new();
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                phrase.push(chars[i]);
                i += 1;
            }
            let prefix = i < chars.len() && chars.get(i + 1) == Some(&'*');
            if prefix {
                i += 1;
            }
            tokens.push(Token::Phrase(phrase, prefix));
        } else if c == '"' || c.is_whitespace() || c == '(' || c == ')' {
            flush_word(&mut word, &mut tokens);
        } else {
            word.push(c);
        }
        i += 1;
    }
    flush_word(&mut word, &mut tokens);
    tokens
}

fn flush_word(word: &mut String, tokens: &mut Vec<Token>) {
    if !word.is_empty() {
        tokens.push(Token::Word(std::mem::take(word)));
    }
}

/// An operator, a (possibly quoted) term, or nothing for a punctuation-only word.
fn classify_word(word: &str) -> Option<Item> {
    match word {
        "OR" => return Some(Item::Op(Op::Or)),
        "AND" => return Some(Item::Op(Op::And)),
        "NOT" => return Some(Item::Op(Op::Not)),
        _ => {}
    }
    let prefix = word.ends_with('*');
    let core = word
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .trim_end_matches(|c: char| !c.is_alphanumeric());
    if core.is_empty() {
        return None;
    }
    let quoted = core == "NEAR" || !core.chars().all(char::is_alphanumeric);
    Some(Item::Term {
        text: core.to_string(),
        quoted,
        prefix,
    })
}

/// Drops leading/trailing operators and collapses runs of operators to the first one.
fn normalize_operators(raw: Vec<Item>) -> Vec<Item> {
    let mut out: Vec<Item> = Vec::with_capacity(raw.len());
    for item in raw {
        match item {
            Item::Op(_) => {
                if matches!(out.last(), Some(Item::Term { .. })) {
                    out.push(item);
                }
            }
            Item::Term { .. } => out.push(item),
        }
    }
    while matches!(out.last(), Some(Item::Op(_))) {
        out.pop();
    }
    out
}

/// Keeps whole leading items while the rendered length stays within [`MAX_QUERY_CHARS`].
fn cap_length(items: Vec<Item>) -> Vec<Item> {
    let mut total = 0usize;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let len = item.render().chars().count();
        let sep = usize::from(!out.is_empty());
        if total + sep + len > MAX_QUERY_CHARS {
            break;
        }
        total += sep + len;
        out.push(item);
    }
    while matches!(out.last(), Some(Item::Op(_))) {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapses_duplicated_operators() {
        assert_eq!(sanitize_fts_query("a OR OR b"), "a OR b");
        assert_eq!(sanitize_fts_query("a AND OR NOT b"), "a AND b");
        assert_eq!(sanitize_fts_query("NOT a NOT"), "a");
    }

    #[test]
    fn punctuation_only_is_empty() {
        assert_eq!(sanitize_fts_query("!!! ** ( ) \"\" -"), "");
        assert_eq!(sanitize_fts_query(""), "");
    }

    #[test]
    fn neutralizes_fts_syntax() {
        assert_eq!(sanitize_fts_query("content:foo"), "\"content:foo\"");
        assert_eq!(sanitize_fts_query("NEAR(a b)"), "\"NEAR\" a b");
        assert_eq!(sanitize_fts_query("^start +plus"), "start plus");
        assert_eq!(sanitize_fts_query("a   b"), "a b");
    }

    #[test]
    fn caps_length_at_whole_terms() {
        let long = "word ".repeat(1000);
        let out = sanitize_fts_query(&long);
        assert!(out.chars().count() <= MAX_QUERY_CHARS);
        assert!(out.ends_with("word"));
        let ops = "a OR ".repeat(1000);
        let out = sanitize_fts_query(&ops);
        assert!(out.chars().count() <= MAX_QUERY_CHARS);
        assert!(!out.ends_with("OR"));
    }
}
