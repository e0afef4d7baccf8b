//! The IRC message grammar: parsing one received line into a [`Message`], case folding of
//! nicknames, and the checks that keep text we send from injecting protocol lines.
//!
//! Our own parser rather than a crate: `irc-proto` 1.1 (the protocol half of the `irc` crate;
//! no TLS of its own) is MPL-2.0, outside the licenses CONVENTIONS accepts, and depends on
//! `encoding` 0.2 (unmaintained, RUSTSEC-2021-0153) and a second `thiserror` major; the `irc`
//! crate itself brings native-tls. The grammar we need is about a hundred lines, tested here.
//! Rules: RFC 1459 §2.3.1 and RFC 2812
//! §2.3.1 (prefix, command, up to 15 params, the trailing param after ` :`), the IRCv3
//! message-tags specification (`@k=v;k2 ` before the prefix, with its value escapes).

/// One parsed IRC line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Message {
    /// IRCv3 tags, values unescaped; `None` for a tag without `=`.
    pub tags: Vec<(String, Option<String>)>,
    /// The source (`nick!user@host` or a server name), without the leading `:`.
    pub source: Option<String>,
    /// The command, upper-cased (`PRIVMSG`, `PING`, `001`, …).
    pub command: String,
    /// The parameters; the trailing one (after ` :`) is the last, spaces kept.
    pub params: Vec<String>,
}

impl Message {
    /// Parses one line (without its CR LF). `None` for a line without a command.
    pub fn parse(line: &str) -> Option<Message> {
        let mut rest = line.trim_end_matches(['\r', '\n']);
        let mut msg = Message::default();
        if let Some(tagged) = rest.strip_prefix('@') {
            let (tags, after) = tagged.split_once(' ')?;
            msg.tags = tags
                .split(';')
                .filter(|t| !t.is_empty())
                .map(|t| match t.split_once('=') {
                    Some((k, v)) => (k.to_string(), Some(unescape_tag(v))),
                    None => (t.to_string(), None),
                })
                .collect();
            rest = after.trim_start_matches(' ');
        }
        if let Some(sourced) = rest.strip_prefix(':') {
            let (source, after) = sourced.split_once(' ')?;
            msg.source = Some(source.to_string());
            rest = after.trim_start_matches(' ');
        }
        let (head, trailing) = match rest.split_once(" :") {
            Some((h, t)) => (h, Some(t)),
            None => match rest.strip_prefix(':') {
                Some(t) => ("", Some(t)),
                None => (rest, None),
            },
        };
        let mut words = head.split(' ').filter(|w| !w.is_empty());
        msg.command = words.next()?.to_ascii_uppercase();
        msg.params = words.map(String::from).collect();
        if let Some(t) = trailing {
            msg.params.push(t.to_string());
        }
        Some(msg)
    }

    /// The value of tag `key` (`None` when absent or valueless).
    pub fn tag(&self, key: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_deref())
    }

    /// The nick of the source (`nick` of `nick!user@host`).
    pub fn nick(&self) -> Option<&str> {
        let s = self.source.as_deref()?;
        Some(s.split(['!', '@']).next().unwrap_or(s))
    }

    /// Parameter `i`, if present.
    pub fn param(&self, i: usize) -> Option<&str> {
        self.params.get(i).map(String::as_str)
    }
}

fn unescape_tag(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(':') => out.push(';'),
            Some('s') => out.push(' '),
            Some('r') => out.push('\r'),
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

pub use crate::config::irc_casefold as casefold;

/// True for a channel name (RFC 2812 §1.3: starts with `#`, `&`, `+` or `!`).
pub fn is_channel(target: &str) -> bool {
    target.starts_with(['#', '&', '+', '!'])
}

/// True when `word` can be sent as a middle parameter (a nick, a channel, a key): not
/// empty, no space, comma-free is not required, no CR, LF or NUL, and not starting with `:`.
pub fn is_safe_param(word: &str) -> bool {
    !word.is_empty() && !word.starts_with(':') && !word.contains([' ', '\r', '\n', '\0'])
}

/// Removes what cannot be inside one IRC line of text: CR, LF and NUL (CR/LF would start a
/// new protocol line, RFC 2812 §2.3), and a leading `\x01` that would turn a line into a CTCP
/// request.
pub fn clean_text(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .filter(|c| !matches!(c, '\r' | '\n' | '\0'))
        .collect();
    cleaned.trim_start_matches('\x01').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_source_command_params_and_trailing() {
        let m = Message::parse(":alice!~a@host PRIVMSG #hermes :hermes: hi there\r\n").unwrap();
        assert_eq!(m.source.as_deref(), Some("alice!~a@host"));
        assert_eq!(m.nick(), Some("alice"));
        assert_eq!(m.command, "PRIVMSG");
        assert_eq!(m.params, vec!["#hermes", "hermes: hi there"]);
        let m = Message::parse("PING :irc.example.net").unwrap();
        assert_eq!(
            (m.command.as_str(), m.param(0)),
            ("PING", Some("irc.example.net"))
        );
        let m =
            Message::parse(":srv 005 bot NICKLEN=30 CASEMAPPING=rfc1459 :are supported").unwrap();
        assert_eq!(m.params.len(), 4);
        let m = Message::parse(":srv CAP * LS :").unwrap();
        assert_eq!(m.params, vec!["*", "LS", ""]);
        assert_eq!(Message::parse(""), None);
        assert_eq!(Message::parse(":only-a-source"), None);
    }

    #[test]
    fn parses_and_unescapes_tags() {
        let m =
            Message::parse("@account=alice;msgid=a\\sb\\:c;+draft/x :alice!a@h PRIVMSG bot :yo")
                .unwrap();
        assert_eq!(m.tag("account"), Some("alice"));
        assert_eq!(m.tag("msgid"), Some("a b;c"));
        assert_eq!(m.tag("+draft/x"), None);
        assert_eq!(m.tags.len(), 3);
        assert_eq!(m.params, vec!["bot", "yo"]);
    }

    #[test]
    fn case_folding_follows_rfc1459() {
        assert_eq!(casefold("Alice[A]\\~"), "alice{a}|^");
        assert!(is_channel("#x") && is_channel("&x") && !is_channel("alice"));
    }

    #[test]
    fn text_cannot_inject_lines_or_ctcp() {
        assert_eq!(clean_text("a\r\nQUIT :x\0"), "aQUIT :x");
        assert_eq!(clean_text("\x01VERSION\x01"), "VERSION\x01");
        assert!(!is_safe_param("#a b") && !is_safe_param(":x") && !is_safe_param(""));
        assert!(is_safe_param("#hermes") && is_safe_param("alice"));
    }
}
