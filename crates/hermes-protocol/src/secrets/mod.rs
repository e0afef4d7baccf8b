//! [`SecretRedactor`]: the secret values hermes knows, replaced by a marker wherever text
//! leaves the process or reaches the model (issue 18 item 2, ARCHITECTURE §8).
//!
//! The redactor holds literal values — the provider keys of `.env` and the process
//! environment, the keys and tokens of `auth.json`, the keys written in `config.yaml`
//! (`model.api_key`, `delegation.api_key`, custom providers, platform tokens, MCP `headers`
//! and `env`), and the OAuth tokens under `mcp-tokens/` ([`SecretRedactor::load`]) — and
//! finds them all in one pass with an Aho-Corasick automaton, so the cost is linear in the
//! text whatever the number of secrets. Each occurrence becomes `[REDACTED:<label>]`, where
//! the label names where the value came from (`OPENAI_API_KEY`, `model.api_key`,
//! `mcp_servers.github.headers.Authorization`), never any part of the value.
//!
//! What it does not catch: values shorter than [`MIN_SECRET_CHARS`] (too many false
//! matches), a secret transformed before it is printed (base64, hex, reversed, split across
//! two tool results or streamed chunks), and secrets hermes was never told about.

mod collect;
mod tool_files;

use std::borrow::Cow;
use std::io::Write;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, MatchKind};

pub use collect::{collect_secrets, is_secret_name, is_secret_variable, mask_secret_fields};

/// Values shorter than this many characters are not redacted: `true`, `1`, a port number
/// or a short word would match everywhere.
pub const MIN_SECRET_CHARS: usize = 8;

/// The known secret values and the automaton that finds them. Build it once per process
/// ([`SecretRedactor::load`]) and share it behind an [`Arc`]; [`SecretRedactor::redact`] is
/// cheap on text that holds no secret (one scan, no allocation).
#[derive(Clone, Default)]
pub struct SecretRedactor {
    /// `None` when there is no secret to look for (or the automaton could not be built).
    matcher: Option<AhoCorasick>,
    /// `(value, marker)` longest first, used only when the automaton could not be built.
    slow: Vec<(String, String)>,
    /// `markers[i]` replaces pattern `i`.
    markers: Vec<String>,
    /// Labels of the secrets, in insertion order (for `doctor` and tests; never values).
    labels: Vec<String>,
    /// Every value and encoded form looked for, for [`StreamRedactor`]'s hold-back.
    patterns: Vec<String>,
}

impl std::fmt::Debug for SecretRedactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretRedactor")
            .field("secrets", &self.labels.len())
            .finish_non_exhaustive()
    }
}

/// The marker that replaces a secret from `label`: `[REDACTED:<label>]`. Characters other
/// than ASCII letters, digits, `_`, `.`, `-` and `/` in the label become `_`.
pub fn marker(label: &str) -> String {
    let clean: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("[REDACTED:{clean}]")
}

impl SecretRedactor {
    /// A redactor that knows no secret (changes nothing).
    pub fn empty() -> SecretRedactor {
        SecretRedactor::default()
    }

    /// Builds a redactor from `(label, value)` pairs. Values shorter than
    /// [`MIN_SECRET_CHARS`] characters (after trimming) are skipped; a value seen twice keeps
    /// its first label. Besides the value itself, its JSON-escaped and percent-encoded forms
    /// are matched when they differ (a key inside a JSON document or a URL query), and a
    /// `Bearer <token>` / `Basic <token>` value also matches the bare token.
    pub fn new<I, L, V>(secrets: I) -> SecretRedactor
    where
        I: IntoIterator<Item = (L, V)>,
        L: Into<String>,
        V: AsRef<str>,
    {
        let mut patterns: Vec<String> = Vec::new();
        let mut markers: Vec<String> = Vec::new();
        let mut labels: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (label, value) in secrets {
            let label = label.into();
            let value = value.as_ref().trim();
            let mut forms = vec![value.to_string()];
            for scheme in ["Bearer ", "bearer ", "Basic ", "basic ", "token ", "Token "] {
                if let Some(rest) = value.strip_prefix(scheme) {
                    forms.push(rest.trim().to_string());
                }
            }
            let mut added = false;
            for form in forms {
                if form.chars().count() < MIN_SECRET_CHARS {
                    continue;
                }
                let mut variants = vec![form.clone()];
                let json = json_escaped(&form);
                if json != form {
                    variants.push(json);
                }
                let pct = percent_encoded(&form);
                if pct != form {
                    variants.push(pct);
                }
                for v in variants {
                    if seen.insert(v.clone()) {
                        patterns.push(v);
                        markers.push(marker(&label));
                        added = true;
                    }
                }
            }
            if added {
                labels.push(label);
            }
        }
        if patterns.is_empty() {
            return SecretRedactor::empty();
        }
        // Leftmost-longest: when one secret contains another (`Bearer abc…` and `abc…`), the
        // longer one wins and nothing of either is left behind.
        match AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
        {
            Ok(matcher) => SecretRedactor {
                matcher: Some(matcher),
                slow: Vec::new(),
                markers,
                labels,
                patterns,
            },
            // Beyond the automaton's size limits (not reached by any real home): replace
            // each value in turn, longest first, rather than redact nothing.
            Err(_) => {
                let mut slow: Vec<(String, String)> =
                    patterns.iter().cloned().zip(markers).collect();
                slow.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
                SecretRedactor {
                    matcher: None,
                    slow,
                    markers: Vec::new(),
                    labels,
                    patterns,
                }
            }
        }
    }

    /// Number of distinct secrets known (not counting their encoded forms).
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// True when no secret is known.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Where the known secrets came from (`OPENAI_API_KEY`, `auth.json openrouter …`), in
    /// the order they were added; never the values.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// True when `text` holds a known secret.
    pub fn contains_secret(&self, text: &str) -> bool {
        match &self.matcher {
            Some(m) => m.is_match(text),
            None => self.slow.iter().any(|(p, _)| text.contains(p.as_str())),
        }
    }

    /// `text` with every known secret replaced by its marker; borrowed unchanged when it
    /// holds none. Linear in `text` (one Aho-Corasick scan).
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(matcher) = &self.matcher else {
            if !self.contains_secret(text) {
                return Cow::Borrowed(text);
            }
            let mut out = text.to_string();
            for (value, marker) in &self.slow {
                out = out.replace(value.as_str(), marker);
            }
            return Cow::Owned(out);
        };
        if !matcher.is_match(text) {
            return Cow::Borrowed(text);
        }
        Cow::Owned(matcher.replace_all(text, &self.markers))
    }

    /// Where the part of `text` that may still become a secret begins: the start of its
    /// longest suffix that is a proper prefix of a known value and starts after the last
    /// complete one; `text.len()` when there is none. A byte index on a char boundary.
    fn unfinished_tail(&self, text: &str) -> usize {
        let done = match &self.matcher {
            Some(m) => m.find_iter(text).last().map(|m| m.end()).unwrap_or(0),
            None => self
                .slow
                .iter()
                .filter_map(|(p, _)| text.rfind(p.as_str()).map(|i| i + p.len()))
                .max()
                .unwrap_or(0),
        };
        let longest = self.patterns.iter().map(String::len).max().unwrap_or(0);
        let from = done.max(text.len().saturating_sub(longest));
        (from..text.len())
            .filter(|&i| text.is_char_boundary(i))
            .find(|&i| {
                let tail = &text[i..];
                self.patterns
                    .iter()
                    .any(|p| p.len() > tail.len() && p.starts_with(tail))
            })
            .unwrap_or(text.len())
    }

    /// [`SecretRedactor::redact`] into an owned string, reusing `text` when it holds no
    /// secret.
    pub fn redact_string(&self, text: String) -> String {
        match self.redact(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(s) => s,
        }
    }
}

/// Redacts text that arrives in pieces (a model's streamed answer): a known value split
/// across two pieces is still replaced, because the end of what was pushed is held back
/// while it could be the start of one. What is held is at most one value's length, and only
/// while it matches a value's beginning; [`StreamRedactor::finish`] releases it.
#[derive(Debug)]
pub struct StreamRedactor {
    redactor: Arc<SecretRedactor>,
    pending: String,
}

impl StreamRedactor {
    /// A stream redactor over the values `redactor` knows.
    pub fn new(redactor: Arc<SecretRedactor>) -> StreamRedactor {
        StreamRedactor {
            redactor,
            pending: String::new(),
        }
    }

    /// Adds `piece` and returns the redacted text that can be shown now (may be empty).
    pub fn push(&mut self, piece: &str) -> String {
        if self.redactor.is_empty() {
            return piece.to_string();
        }
        self.pending.push_str(piece);
        let cut = self.redactor.unfinished_tail(&self.pending);
        let rest = self.pending.split_off(cut);
        let ready = std::mem::replace(&mut self.pending, rest);
        self.redactor.redact_string(ready)
    }

    /// The redacted rest, at the end of the stream.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        self.redactor.redact_string(rest)
    }
}

/// `value` as it appears inside a JSON string (quotes, backslashes, control characters and
/// `/`-free escaping as serde_json writes it).
fn json_escaped(value: &str) -> String {
    let quoted = serde_json::to_string(value).unwrap_or_default();
    quoted
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(value)
        .to_string()
}

/// `value` percent-encoded as in a URL query component (RFC 3986 unreserved characters
/// kept).
fn percent_encoded(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// An [`std::io::Write`] that redacts known secrets from what passes through it before
/// writing to `inner` — the log formatter's writer (tracing-subscriber formats one event into
/// one buffer and writes it whole, so a secret is never split between two writes of one
/// event). Bytes that are not UTF-8 are written unchanged.
pub struct RedactingWriter<W: Write> {
    redactor: Arc<SecretRedactor>,
    inner: W,
}

impl<W: Write> RedactingWriter<W> {
    /// Wraps `inner`.
    pub fn new(redactor: Arc<SecretRedactor>, inner: W) -> RedactingWriter<W> {
        RedactingWriter { redactor, inner }
    }
}

impl<W: Write> Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::str::from_utf8(buf) {
            Ok(text) => match self.redactor.redact(text) {
                Cow::Borrowed(_) => self.inner.write_all(buf)?,
                Cow::Owned(clean) => self.inner.write_all(clean.as_bytes())?,
            },
            Err(_) => self.inner.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn streamed(r: &Arc<SecretRedactor>, pieces: &[&str]) -> (String, Vec<String>) {
        let mut guard = StreamRedactor::new(Arc::clone(r));
        let mut shown = Vec::new();
        for p in pieces {
            shown.push(guard.push(p));
        }
        shown.push(guard.finish());
        (shown.concat(), shown)
    }

    /// A model that knows a key and streams it (the attack pass of issue 18, finding 13):
    /// however the answer is cut into pieces, what is shown is what redacting it whole gives,
    /// and no piece shows the key's beginning.
    #[test]
    fn a_streamed_secret_is_redacted_across_pieces() {
        let r = Arc::new(SecretRedactor::new([
            ("OPENAI_API_KEY", "sk-test-canaryENV0001abcdef"),
            ("model.api_key", "Bearer tok-abcdefgh1234"),
        ]));
        let text = "the key is sk-test-canaryENV0001abcdef said the model, sk-test-c is not";
        let whole = r.redact(text).into_owned();
        for cut in 1..text.len() {
            for cut2 in cut..text.len() {
                let (out, shown) = streamed(&r, &[&text[..cut], &text[cut..cut2], &text[cut2..]]);
                assert_eq!(out, whole, "cuts {cut} {cut2}");
                assert!(shown.iter().all(|s| !s.contains("canaryENV")), "{shown:?}");
            }
        }
        let (out, shown) = streamed(&r, &["plain ", "text"]);
        assert_eq!(out, "plain text");
        assert_eq!(
            shown[0], "plain ",
            "nothing held that cannot start a secret"
        );
        let (out, _) = streamed(&r, &["use tok-abcd", "efgh1234 now"]);
        assert_eq!(out, "use [REDACTED:model.api_key] now");
    }

    #[test]
    fn known_values_become_markers() {
        let r = SecretRedactor::new([
            ("OPENAI_API_KEY", "sk-test-0123456789abcdef"),
            ("SHORT", "abc"),
            ("model.api_key", "plain-secret-value"),
        ]);
        assert_eq!(r.len(), 2);
        let text = "OPENAI_API_KEY=sk-test-0123456789abcdef\nkey: plain-secret-value!";
        assert_eq!(
            r.redact(text),
            "OPENAI_API_KEY=[REDACTED:OPENAI_API_KEY]\nkey: [REDACTED:model.api_key]!"
        );
        assert!(matches!(r.redact("nothing here abc"), Cow::Borrowed(_)));
        assert!(r.contains_secret("x sk-test-0123456789abcdef y"));
        assert!(!r.contains_secret("sk-test-0123456789abcde"));
    }

    #[test]
    fn bearer_values_match_the_bare_token_and_longest_wins() {
        let r = SecretRedactor::new([("mcp.headers.Authorization", "Bearer tok-1234567890")]);
        assert_eq!(
            r.redact("Authorization: Bearer tok-1234567890"),
            "Authorization: [REDACTED:mcp.headers.Authorization]"
        );
        assert_eq!(
            r.redact("token=tok-1234567890"),
            "token=[REDACTED:mcp.headers.Authorization]"
        );
    }

    #[test]
    fn json_and_url_encoded_forms_are_caught() {
        let r = SecretRedactor::new([("PW", r#"pa"ss/wo rd\x"#)]);
        let json = serde_json::to_string(r#"pa"ss/wo rd\x"#).unwrap();
        assert!(!r.redact(&json).contains("wo rd"), "{json}");
        assert_eq!(r.redact("?p=pa%22ss%2Fwo%20rd%5Cx&"), "?p=[REDACTED:PW]&");
    }

    #[test]
    fn empty_redactor_changes_nothing() {
        let r = SecretRedactor::empty();
        assert!(r.is_empty());
        assert_eq!(
            r.redact("sk-anything-long-enough"),
            "sk-anything-long-enough"
        );
    }

    #[test]
    fn writer_redacts_each_write() {
        let r = Arc::new(SecretRedactor::new([("TOKEN", "tok-abcdefgh-123")]));
        let mut out = Vec::new();
        {
            let mut w = RedactingWriter::new(r, &mut out);
            w.write_all(b"WARN token tok-abcdefgh-123 failed\n")
                .unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "WARN token [REDACTED:TOKEN] failed\n"
        );
    }

    #[test]
    fn large_texts_are_redacted_in_one_pass() {
        let secrets: Vec<(String, String)> = (0..500)
            .map(|i| (format!("K{i}"), format!("secret-value-{i:05}-xyz")))
            .collect();
        let r = SecretRedactor::new(secrets);
        let mut text = "lorem ipsum ".repeat(200_000);
        text.push_str("secret-value-00321-xyz");
        let out = r.redact(&text);
        assert!(out.ends_with("[REDACTED:K321]"));
        assert!(!out.contains("secret-value-"));
    }
}
