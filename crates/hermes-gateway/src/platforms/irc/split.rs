//! Cutting reply text into IRC lines that fit the 512-byte line limit.
//!
//! RFC 2812 §2.3: a message is at most 512 bytes including the trailing CR LF. When the server
//! relays our `PRIVMSG <target> :<text>` to the other clients it prepends our source,
//! `:<nick>!<user>@<host> `, and text past the limit is cut off on their side. We cannot see
//! the user and host the server shows for us, so their maximums are reserved (as Python
//! Hermes does): USERLEN 10 plus the `~` ident marker, HOSTLEN 63 (RFC 2812 §1.2.1 / the
//! common server defaults); the nick is reserved at least [`NICK_RESERVE`] bytes so a nick
//! changed by a reconnect cannot push queued lines over the limit.
//!
//! Lines are cut between extended grapheme clusters (UAX #29), so neither a UTF-8 sequence
//! nor an emoji with modifiers or joiners is ever split, preferring the last space when it is
//! at least a third of the way in.

use unicode_segmentation::UnicodeSegmentation;

use super::proto::clean_text;

/// Bytes in one IRC line, CR LF included (RFC 2812 §2.3).
pub const MAX_LINE_BYTES: usize = 512;
/// Bytes reserved for our nick in the relayed source (NICKLEN 30 on most networks).
pub const NICK_RESERVE: usize = 30;
/// Bytes reserved for `~` plus the user name (USERLEN 10).
pub const USER_RESERVE: usize = 11;
/// Bytes reserved for our host as the server shows it (HOSTLEN 63).
pub const HOST_RESERVE: usize = 63;
/// The smallest text budget used even for absurdly long targets.
const MIN_BUDGET: usize = 32;

/// Text bytes one `PRIVMSG <target> :` line may carry so that the line the server relays,
/// `:<nick>!<user>@<host> PRIVMSG <target> :<text>\r\n`, stays within [`MAX_LINE_BYTES`].
/// `nick_len` is our current nick's length in bytes.
pub fn privmsg_budget(nick_len: usize, target: &str) -> usize {
    let source = 1 + nick_len.max(NICK_RESERVE) + 1 + USER_RESERVE + 1 + HOST_RESERVE + 1;
    let command = "PRIVMSG ".len() + target.len() + " :".len();
    MAX_LINE_BYTES
        .saturating_sub(2 + source + command)
        .max(MIN_BUDGET)
}

/// Splits plain `text` into IRC lines of at most `budget` bytes each: every input line becomes
/// its own message(s) (IRC has no multi-line messages), blank lines are dropped, CR/NUL and a
/// leading CTCP marker are removed ([`clean_text`]), and long lines are wrapped at grapheme
/// boundaries, preferably at a space.
pub fn split_lines(text: &str, budget: usize) -> Vec<String> {
    let budget = budget.max(MIN_BUDGET);
    let mut out = Vec::new();
    for raw in text.split('\n') {
        let line = clean_text(raw);
        let mut rest = line.trim_end();
        if rest.trim().is_empty() {
            continue;
        }
        while rest.len() > budget {
            let cut = cut_point(rest, budget);
            let (head, tail) = rest.split_at(cut);
            let head = head.trim_end();
            if !head.is_empty() {
                out.push(head.to_string());
            }
            rest = tail.trim_start();
        }
        if !rest.is_empty() {
            out.push(rest.to_string());
        }
    }
    out
}

/// The byte index to cut `s` (longer than `budget`) at: after the last grapheme that fits,
/// moved back to the last space when that keeps at least a third of the budget. A single
/// grapheme longer than the budget (an absurd combining sequence) is cut at a char boundary.
fn cut_point(s: &str, budget: usize) -> usize {
    let mut fit = 0;
    let mut space = None;
    for (i, g) in s.grapheme_indices(true) {
        if i + g.len() > budget {
            break;
        }
        if g.chars().all(char::is_whitespace) && i > 0 {
            space = Some(i);
        }
        fit = i + g.len();
    }
    if fit == 0 {
        // One grapheme bigger than the budget: cut at the last char boundary that fits.
        return s
            .char_indices()
            .map(|(i, c)| i + c.len_utf8())
            .take_while(|&end| end <= budget)
            .last()
            .unwrap_or_else(|| s.chars().next().map_or(s.len(), char::len_utf8));
    }
    match space {
        Some(sp) if sp >= budget / 3 => sp,
        _ => fit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_leaves_room_for_the_relayed_source() {
        let b = privmsg_budget(6, "#hermes");
        let worst = format!(
            ":{}!~{}@{} PRIVMSG #hermes :{}\r\n",
            "n".repeat(NICK_RESERVE),
            "u".repeat(10),
            "h".repeat(HOST_RESERVE),
            "x".repeat(b)
        );
        assert_eq!(worst.len(), MAX_LINE_BYTES);
        assert!(privmsg_budget(40, "#hermes") == b - 10);
        assert_eq!(privmsg_budget(6, &"#".repeat(600)), MIN_BUDGET);
    }

    #[test]
    fn newlines_become_lines_and_blank_lines_vanish() {
        assert_eq!(
            split_lines("one\n\n  \ntwo\r\nthree  ", 100),
            vec!["one", "two", "three"]
        );
        assert!(split_lines("\n\n", 100).is_empty());
    }

    #[test]
    fn long_lines_wrap_at_spaces_within_the_budget() {
        let text = "word ".repeat(100);
        let lines = split_lines(&text, 64);
        assert!(lines.iter().all(|l| l.len() <= 64), "{lines:?}");
        assert!(lines.iter().all(|l| l.split(' ').all(|w| w == "word")));
        assert_eq!(lines.join(" ").split(' ').count(), 100);
    }

    #[test]
    fn utf8_and_emoji_graphemes_are_never_split() {
        let family = "👨‍👩‍👧‍👦"; // 25 bytes, one grapheme
        let text = format!("{}{}", "日本語のテキスト".repeat(20), family.repeat(10));
        let lines = split_lines(&text, 50);
        assert!(lines.iter().all(|l| l.len() <= 50), "{lines:?}");
        assert_eq!(lines.concat(), text);
        for l in &lines {
            assert!(l.matches(family).count() * family.len() <= l.len());
            // No line starts inside a family (which would leave a joiner at its start).
            assert!(!l.starts_with('\u{200d}'));
        }
        assert_eq!(
            lines
                .iter()
                .map(|l| l.matches(family).count())
                .sum::<usize>(),
            10
        );
    }

    #[test]
    fn a_grapheme_longer_than_the_budget_is_cut_at_char_boundaries() {
        let zalgo = format!("a{}", "\u{301}".repeat(40)); // 81 bytes, one grapheme
        let lines = split_lines(&zalgo, MIN_BUDGET);
        assert!(lines.iter().all(|l| l.len() <= MIN_BUDGET));
        assert_eq!(lines.concat(), zalgo);
    }
}
