//! SMS segments (3GPP TS 23.038 and TS 23.040; Twilio, "What the heck is a segment?").
//!
//! A message whose every character is in the GSM 03.38 alphabet travels as GSM-7: 160
//! septets in one segment, 153 per segment once it needs several (the rest carries the
//! concatenation header); characters of the extension table (`^{}\[~]|€`, form feed) take
//! two septets. Any other character makes the whole message UCS-2: 70 UTF-16 units in
//! one segment, 67 per segment of a longer one.
//!
//! [`plan`] turns a reply into Twilio message bodies: at most [`BODY_SEGMENTS`] segments
//! each (within Twilio's 1,600-character body), at most `max_segments` in all. A reply over
//! the cap is cut — at a line break or space when one is near, always between grapheme
//! clusters (UAX #29), so neither a UTF-8 sequence nor an emoji is broken — and ends with a
//! note saying how much was left out.

use unicode_segmentation::UnicodeSegmentation;

/// Segments per Twilio message body (10 × 153 = 1,530 GSM-7 characters, 10 × 67 = 670 UCS-2
/// units: both within Twilio's 1,600-character limit on `Body`).
pub const BODY_SEGMENTS: usize = 10;

const GSM_BASIC: &str = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?\
¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
const GSM_EXTENSION: &str = "\u{c}^{}\\[~]|€";

/// How a message is encoded on the air.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// The GSM 7-bit default alphabet.
    Gsm7,
    /// UCS-2 (UTF-16 units).
    Ucs2,
}

impl Encoding {
    /// The encoding of `text`.
    pub fn of(text: &str) -> Encoding {
        if text
            .chars()
            .all(|c| GSM_BASIC.contains(c) || GSM_EXTENSION.contains(c))
        {
            Encoding::Gsm7
        } else {
            Encoding::Ucs2
        }
    }

    /// Units of `c` (septets for GSM-7, UTF-16 units for UCS-2).
    fn units(self, c: char) -> usize {
        match self {
            Encoding::Gsm7 if GSM_EXTENSION.contains(c) => 2,
            Encoding::Gsm7 => 1,
            Encoding::Ucs2 => c.len_utf16(),
        }
    }

    /// Units of one segment alone, and per segment of a longer message.
    fn per_segment(self) -> (usize, usize) {
        match self {
            Encoding::Gsm7 => (160, 153),
            Encoding::Ucs2 => (70, 67),
        }
    }

    /// Units that fit in `segments` segments.
    fn capacity(self, segments: usize) -> usize {
        let (single, multi) = self.per_segment();
        match segments {
            0 => 0,
            1 => single,
            n => n * multi,
        }
    }
}

/// Segments `text` takes (0 for empty text).
pub fn count(text: &str) -> usize {
    let enc = Encoding::of(text);
    let units: usize = text.chars().map(|c| enc.units(c)).sum();
    let (single, multi) = enc.per_segment();
    match units {
        0 => 0,
        u if u <= single => 1,
        u => u.div_ceil(multi),
    }
}

/// A reply laid out for sending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Message bodies, in order.
    pub bodies: Vec<String>,
    /// Characters of the reply left out by the cap (0 when it fits).
    pub dropped_chars: usize,
}

/// The note that ends a cut reply (GSM-7 characters only, so it never forces UCS-2).
fn cut_note(dropped: usize) -> String {
    format!("\n(cut: {dropped} more characters)")
}

/// Takes graphemes of `gs` (from `start`) worth at most `budget` units; returns the end
/// index, preferring a whitespace boundary in the last half of what fits.
fn take(gs: &[&str], start: usize, budget: usize, enc: Encoding) -> usize {
    let mut used = 0;
    let mut end = start;
    while end < gs.len() {
        let cost: usize = gs[end].chars().map(|c| enc.units(c)).sum();
        if used + cost > budget {
            break;
        }
        used += cost;
        end += 1;
    }
    if end == gs.len() || end == start {
        return end;
    }
    let half = start + (end - start) / 2;
    (half..end)
        .rev()
        .find(|&i| gs[i].chars().all(char::is_whitespace))
        .map_or(end, |i| i + 1)
}

/// Lays `text` out in bodies of at most [`BODY_SEGMENTS`] segments and `max_segments` in
/// all (at least 1), cutting it with a note when it does not fit. Empty text gives no
/// bodies.
pub fn plan(text: &str, max_segments: usize) -> Plan {
    let max_segments = max_segments.max(1);
    let gs: Vec<&str> = text.graphemes(true).collect();
    // One encoding for every body: the whole reply's (a body of GSM-only text in a UCS-2
    // reply is costed as UCS-2, never the other way round).
    let enc = Encoding::of(text);
    let total_chars = text.chars().count();
    let mut bodies = Vec::new();
    let mut remaining = max_segments;
    let mut pos = 0;
    let mut dropped_chars = 0;
    while pos < gs.len() && remaining > 0 {
        let segs = remaining.min(BODY_SEGMENTS);
        let capacity = enc.capacity(segs);
        let rest: usize = gs[pos..]
            .iter()
            .flat_map(|g| g.chars())
            .map(|c| enc.units(c))
            .sum();
        if rest <= capacity {
            bodies.push(gs[pos..].concat());
            break;
        }
        let last = remaining == segs;
        let note_units: usize = if last {
            cut_note(total_chars).chars().map(|c| enc.units(c)).sum()
        } else {
            0
        };
        let end = take(&gs, pos, capacity.saturating_sub(note_units), enc);
        let body = gs[pos..end].concat();
        let trimmed = body.trim_end();
        if last {
            dropped_chars = gs[pos..].iter().map(|g| g.chars().count()).sum::<usize>()
                - trimmed.chars().count();
            bodies.push(format!("{trimmed}{}", cut_note(dropped_chars)));
            break;
        }
        bodies.push(trimmed.to_string());
        remaining -= segs;
        pos = end;
        while pos < gs.len() && gs[pos].chars().all(char::is_whitespace) {
            pos += 1;
        }
    }
    bodies.retain(|b| !b.is_empty());
    Plan {
        bodies,
        dropped_chars,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_gsm7_and_ucs2_rules() {
        assert_eq!(count(""), 0);
        assert_eq!(count(&"a".repeat(160)), 1);
        assert_eq!(count(&"a".repeat(161)), 2);
        assert_eq!(count(&"a".repeat(306)), 2);
        assert_eq!(count(&"a".repeat(307)), 3);
        // Extension characters take two septets.
        assert_eq!(count(&"€".repeat(80)), 1);
        assert_eq!(count(&"€".repeat(81)), 2);
        // One character outside GSM 03.38 makes the whole message UCS-2.
        assert_eq!(Encoding::of("héllo"), Encoding::Gsm7);
        assert_eq!(Encoding::of("hello “quoted”"), Encoding::Ucs2);
        assert_eq!(count(&format!("{}😀", "a".repeat(68))), 1);
        assert_eq!(count(&format!("{}😀", "a".repeat(69))), 2);
        assert_eq!(count(&"ж".repeat(134)), 2);
        assert_eq!(count(&"ж".repeat(135)), 3);
    }

    #[test]
    fn a_reply_within_the_cap_is_kept_whole() {
        let text = "word ".repeat(300);
        let p = plan(text.trim_end(), 20);
        assert_eq!(p.dropped_chars, 0);
        assert_eq!(
            p.bodies.concat().split_whitespace().count(),
            300,
            "{:?}",
            p.bodies
        );
        assert!(p.bodies.iter().all(|b| count(b) <= BODY_SEGMENTS));
        assert!(p.bodies.iter().all(|b| b.encode_utf16().count() <= 1600));
    }

    #[test]
    fn a_long_reply_is_cut_between_graphemes_with_a_note() {
        let family = "👨‍👩‍👧‍👦";
        let text = format!("{} {}", "Привет мир".repeat(40), family.repeat(60));
        let p = plan(&text, 3);
        assert_eq!(p.bodies.len(), 1);
        let body = &p.bodies[0];
        assert!(count(body) <= 3, "{} segments", count(body));
        assert!(body.ends_with(&cut_note(p.dropped_chars)));
        assert!(p.dropped_chars > 0);
        let kept = body.trim_end_matches(&cut_note(p.dropped_chars));
        assert!(text.starts_with(kept), "a prefix of the reply is kept");
        let emoji = "🔥".repeat(200);
        let p = plan(&emoji, 2);
        let kept = p.bodies[0].split('\n').next().unwrap();
        assert!(kept.chars().all(|c| c == '🔥'), "no emoji is cut: {kept:?}");
        assert!(count(&p.bodies[0]) <= 2);
    }

    #[test]
    fn bodies_are_cut_at_spaces_when_one_is_near() {
        let text = format!("{} {}", "a".repeat(1500), "b".repeat(100));
        let p = plan(&text, 20);
        assert_eq!(p.bodies, vec!["a".repeat(1500), "b".repeat(100)]);
        assert!(plan("", 10).bodies.is_empty());
    }
}
