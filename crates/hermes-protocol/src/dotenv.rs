//! `HERMES_HOME/.env`, read the way Python Hermes reads it.
//!
//! Python Hermes 0.19.0 loads `.env` with python-dotenv 1.2.2
//! (`load_dotenv(dotenv_path=…, override=True, encoding="utf-8")`, retried as latin-1 when
//! the bytes are not UTF-8; `hermes_cli/env_loader.py`). This module reproduces that parser
//! statement by statement (`dotenv/parser.py`, `dotenv/variables.py`, `dotenv/main.py`), so
//! one file means the same thing to both programs:
//!
//! - the file is decoded as UTF-8, else latin-1, and its line endings are translated as
//!   Python's text mode does (`\r\n` and a lone `\r` become `\n`);
//! - `export KEY=value`, keys in single quotes, whitespace around `=`;
//! - unquoted values end at the line end; a `#` preceded by whitespace starts a comment;
//!   trailing whitespace is removed;
//! - `'single'` values keep everything but `\'` and `\\`; `"double"` values decode `\\`,
//!   `\'`, `\"`, `\a`, `\b`, `\f`, `\n`, `\r`, `\t`, `\v`; both kinds may span lines;
//! - `KEY` without `=` has no value (it is not set), `KEY=` is the empty string;
//! - `${NAME}` and `${NAME:-default}` are replaced in every value (python-dotenv's default
//!   `interpolate=True`), looking first at the keys defined earlier in the file and then at
//!   the process environment (the precedence of `override=True`);
//! - a statement that cannot be parsed is skipped with a warning naming its line, and
//!   parsing goes on with the next line.
//!
//! Deliberate differences: a UTF-8 byte-order mark at the start is dropped (python-dotenv
//! would make it part of the first key), and warnings name the line the statement starts on
//! (python-dotenv names the line where the preceding whitespace starts).
//!
//! Why not `dotenvy`: run on the corpus in `tests/fixtures/dotenv/`, dotenvy 0.15.7 gives
//! another result than python-dotenv for 306 of its 332 texts: it stops at the first bad
//! statement (python-dotenv skips it and goes on), rejects a bare `KEY` line, quoted keys,
//! `\'` in single quotes and escapes such as `\a`, expands `$NAME` without braces but not
//! `${NAME:-default}` nor anything in single quotes, keeps `\r\n` inside quoted values, and
//! does not end a line at a lone `\r`. So the parser is our own: a port of python-dotenv's
//! grammar (the same regular expressions, with `regex`'s leftmost-first semantics), checked
//! against the real python-dotenv's output committed as a fixture and by property tests.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

/// One `KEY=value` statement: `value` is `None` for a bare `KEY` (python-dotenv returns
/// `None` and does not set the variable).
pub type DotenvEntry = (String, Option<String>);

/// A statement python-dotenv cannot parse; it is skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DotenvWarning {
    /// 1-based line on which the statement starts.
    pub line: usize,
    /// The key, when it was read before the error (values are never included: they may be
    /// secrets).
    pub key: Option<String>,
}

impl std::fmt::Display for DotenvWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.key {
            Some(k) => write!(
                f,
                "line {}: cannot parse the statement for `{k}` (skipped; check its quotes)",
                self.line
            ),
            None => write!(
                f,
                "line {}: cannot parse the statement (skipped; expected KEY=value)",
                self.line
            ),
        }
    }
}

/// A parsed `.env` file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dotenv {
    /// Statements in file order, after `${…}` interpolation; a key may appear more than
    /// once (the last one wins, as in python-dotenv).
    pub entries: Vec<DotenvEntry>,
    /// Skipped statements.
    pub warnings: Vec<DotenvWarning>,
}

impl Dotenv {
    /// The variables the file sets: the last value of each key; bare `KEY` lines (no `=`)
    /// are left out, as `load_dotenv` leaves them unset.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        let mut last: BTreeMap<String, Option<String>> = BTreeMap::new();
        for (k, v) in &self.entries {
            last.insert(k.clone(), v.clone());
        }
        last.into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect()
    }
}

/// Reads and parses the `.env` at `path` (see the module doc): the bytes are UTF-8, or else
/// latin-1; `env` looks up process variables for `${NAME}` (return `None` when unset).
///
/// # Errors
/// The I/O error of reading the file (a missing file included; callers decide whether that
/// matters).
pub fn read_dotenv(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> std::io::Result<Dotenv> {
    let bytes = std::fs::read(path)?;
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => e.into_bytes().iter().map(|&b| char::from(b)).collect(),
    };
    Ok(parse_dotenv(&text, env))
}

/// Parses `.env` text (see the module doc); `env` looks up process variables for `${NAME}`.
/// Never fails: statements that cannot be parsed are skipped and reported in
/// [`Dotenv::warnings`].
pub fn parse_dotenv(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Dotenv {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut reader = Reader {
        s: &text,
        pos: 0,
        line: 1,
    };
    let mut out = Dotenv::default();
    let mut defined: BTreeMap<String, Option<String>> = BTreeMap::new();
    while reader.pos < text.len() {
        match parse_binding(&mut reader) {
            Binding::Blank => {}
            Binding::Entry(key, value) => {
                let value = value.map(|v| interpolate(&v, &defined, env));
                defined.insert(key.clone(), value.clone());
                out.entries.push((key, value));
            }
            Binding::Error(w) => out.warnings.push(w),
        }
    }
    out
}

/// Python's `\s` (Unicode `str.isspace`) is Rust's Unicode `\s` plus U+001C..U+001F.
macro_rules! re {
    ($name:ident, $pat:expr) => {
        static $name: LazyLock<Option<Regex>> = LazyLock::new(|| {
            let pat = $pat
                .replace("\\s", "[\\s\\x1c-\\x1f]")
                .replace("[^\\S\\r\\n]", "[[\\s\\x1c-\\x1f]&&[^\\r\\n]]");
            Regex::new(&format!("^(?:{pat})")).ok()
        });
    };
}

re!(MULTILINE_WHITESPACE, r"\s*");
re!(WHITESPACE, r"[^\S\r\n]*");
re!(EXPORT, r"(?:export[^\S\r\n]+)?");
re!(SINGLE_QUOTED_KEY, r"'([^']+)'");
re!(UNQUOTED_KEY, r"([^=\#\s]+)");
re!(EQUAL_SIGN, r"(=[^\S\r\n]*)");
re!(SINGLE_QUOTED_VALUE, r"'((?:\\'|[^'])*)'");
re!(DOUBLE_QUOTED_VALUE, r#""((?:\\"|[^"])*)""#);
re!(UNQUOTED_VALUE, r"([^\r\n]*)");
re!(COMMENT, r"(?:[^\S\r\n]*#[^\r\n]*)?");
re!(END_OF_LINE, r"[^\S\r\n]*(?:\r\n|\n|\r|$)");
re!(REST_OF_LINE, r"[^\r\n]*(?:\r|\n|\r\n)?");

/// `\s+#.*` of `parse_unquoted_value` (not anchored).
static INLINE_COMMENT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"[\s\x1c-\x1f]+#.*").ok());
/// `${name}` / `${name:-default}` of `dotenv/variables.py`.
static VARIABLE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\$\{(?P<name>[^}:]*)(?::-(?P<default>[^}]*))?\}").ok());

struct Reader<'a> {
    s: &'a str,
    /// Byte offset.
    pos: usize,
    /// 1-based line of `pos`.
    line: usize,
}

/// A failed match (python-dotenv's `Error`).
struct NoMatch;

impl Reader<'_> {
    fn rest(&self) -> &str {
        &self.s[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    /// Matches `re` at the current position, advances past it and returns its first group
    /// (or the whole match when it has none).
    fn read(&mut self, re: &LazyLock<Option<Regex>>) -> Result<String, NoMatch> {
        let re = re.as_ref().ok_or(NoMatch)?;
        let caps = re.captures(self.rest()).ok_or(NoMatch)?;
        let whole = caps.get(0).ok_or(NoMatch)?;
        let group = caps.get(1).unwrap_or(whole).as_str().to_string();
        let newlines = count_newlines(whole.as_str());
        let end = whole.end();
        self.line += newlines;
        self.pos += end;
        Ok(group)
    }
}

fn count_newlines(s: &str) -> usize {
    // `\r\n`, `\n` and `\r` each count once (python-dotenv's `_newline`).
    s.replace("\r\n", "\n")
        .chars()
        .filter(|&c| c == '\n' || c == '\r')
        .count()
}

enum Binding {
    Blank,
    Entry(String, Option<String>),
    Error(DotenvWarning),
}

fn parse_binding(r: &mut Reader<'_>) -> Binding {
    let mut key_seen = None;
    let mut start_line = r.line;
    let result = (|| -> Result<Option<(String, Option<String>)>, NoMatch> {
        r.read(&MULTILINE_WHITESPACE)?;
        start_line = r.line;
        if r.pos >= r.s.len() {
            return Ok(None);
        }
        r.read(&EXPORT)?;
        let key = match r.peek() {
            Some('#') => None,
            Some('\'') => Some(r.read(&SINGLE_QUOTED_KEY)?),
            _ => Some(r.read(&UNQUOTED_KEY)?),
        };
        key_seen.clone_from(&key);
        r.read(&WHITESPACE)?;
        let value = if r.peek() == Some('=') {
            r.read(&EQUAL_SIGN)?;
            Some(parse_value(r)?)
        } else {
            None
        };
        r.read(&COMMENT)?;
        r.read(&END_OF_LINE)?;
        Ok(key.map(|k| (k, value)))
    })();
    match result {
        Ok(Some((k, v))) => Binding::Entry(k, v),
        Ok(None) => Binding::Blank,
        Err(NoMatch) => {
            // `_rest_of_line` always matches (possibly empty at the end of the text).
            if r.read(&REST_OF_LINE).is_err() || r.pos >= r.s.len() {
                r.pos = r.s.len();
            }
            Binding::Error(DotenvWarning {
                line: start_line,
                key: key_seen,
            })
        }
    }
}

fn parse_value(r: &mut Reader<'_>) -> Result<String, NoMatch> {
    match r.peek() {
        Some('\'') => Ok(decode_escapes(&r.read(&SINGLE_QUOTED_VALUE)?, false)),
        Some('"') => Ok(decode_escapes(&r.read(&DOUBLE_QUOTED_VALUE)?, true)),
        None | Some('\n') | Some('\r') => Ok(String::new()),
        Some(_) => {
            let part = r.read(&UNQUOTED_VALUE)?;
            let part = match INLINE_COMMENT.as_ref() {
                Some(re) => re.replace_all(&part, "").into_owned(),
                None => part,
            };
            Ok(part.trim_end_matches(py_space).to_string())
        }
    }
}

/// Python's `str.isspace`.
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Replaces `\\` and `\'` (single quotes), or `\\ \' \" \a \b \f \n \r \t \v` (double
/// quotes), scanning left to right; other backslashes stay.
fn decode_escapes(s: &str, double: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let decoded = match chars.peek() {
            Some('\\') => Some('\\'),
            Some('\'') => Some('\''),
            Some('"') if double => Some('"'),
            Some('a') if double => Some('\u{7}'),
            Some('b') if double => Some('\u{8}'),
            Some('f') if double => Some('\u{c}'),
            Some('n') if double => Some('\n'),
            Some('r') if double => Some('\r'),
            Some('t') if double => Some('\t'),
            Some('v') if double => Some('\u{b}'),
            _ => None,
        };
        match decoded {
            Some(d) => {
                chars.next();
                out.push(d);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// `${NAME}` / `${NAME:-default}`: keys defined earlier in the file first (a bare `KEY`
/// there counts as defined and empty), then `env`, then the default, then empty.
fn interpolate(
    value: &str,
    defined: &BTreeMap<String, Option<String>>,
    env: &dyn Fn(&str) -> Option<String>,
) -> String {
    let Some(re) = VARIABLE.as_ref() else {
        return value.to_string();
    };
    re.replace_all(value, |caps: &regex::Captures<'_>| {
        let name = caps.name("name").map_or("", |m| m.as_str());
        match defined.get(name) {
            Some(v) => v.clone().unwrap_or_default(),
            None => env(name).unwrap_or_else(|| {
                caps.name("default")
                    .map_or(String::new(), |m| m.as_str().to_string())
            }),
        }
    })
    .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Dotenv {
        parse_dotenv(text, &|name| {
            (name == "FROM_ENV").then(|| "env".to_string())
        })
    }

    fn get(d: &Dotenv, key: &str) -> Option<Option<String>> {
        d.entries
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    #[test]
    fn the_forms_hermes_users_write() {
        let d = parse(
            "# comment\nexport A=1\nB=\"two\\nlines\"\nC = 'x=y'\nD=plain # note\nE=a#b\nF=\nG\r\nH='multi\nline'\n",
        );
        assert!(d.warnings.is_empty(), "{:?}", d.warnings);
        assert_eq!(get(&d, "A"), Some(Some("1".into())));
        assert_eq!(get(&d, "B"), Some(Some("two\nlines".into())));
        assert_eq!(get(&d, "C"), Some(Some("x=y".into())));
        assert_eq!(get(&d, "D"), Some(Some("plain".into())));
        assert_eq!(get(&d, "E"), Some(Some("a#b".into())));
        assert_eq!(get(&d, "F"), Some(Some(String::new())));
        assert_eq!(get(&d, "G"), Some(None));
        assert_eq!(get(&d, "H"), Some(Some("multi\nline".into())));
        assert!(!d.to_map().contains_key("G"));
    }

    #[test]
    fn interpolation_prefers_the_file_then_the_environment() {
        let d = parse(
            "A=a\nB=${A}-${FROM_ENV}-${MISSING:-dflt}-${MISSING}\nFROM_ENV=file\nC=${FROM_ENV}\n",
        );
        assert_eq!(get(&d, "B"), Some(Some("a-env-dflt-".into())));
        assert_eq!(get(&d, "C"), Some(Some("file".into())));
    }

    #[test]
    fn a_bad_line_is_skipped_with_its_line_number_and_no_value() {
        let d = parse("A=1\n\nB=\"secret-value\" junk\nC=3\n");
        assert_eq!(get(&d, "A"), Some(Some("1".into())));
        assert_eq!(get(&d, "C"), Some(Some("3".into())));
        assert_eq!(get(&d, "B"), None);
        assert_eq!(
            d.warnings,
            vec![DotenvWarning {
                line: 3,
                key: Some("B".into())
            }]
        );
        assert!(!d.warnings[0].to_string().contains("secret"));
    }

    #[test]
    fn latin1_bytes_are_read() {
        let dir = std::env::temp_dir().join(format!("hermes-dotenv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(".env");
        std::fs::write(&path, b"NAME=caf\xe9\n").unwrap();
        let d = read_dotenv(&path, &|_| None).unwrap();
        assert_eq!(d.to_map()["NAME"], "caf\u{e9}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
