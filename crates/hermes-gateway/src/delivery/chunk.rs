//! Splitting a reply into platform-sized, independently valid chunks (FEATURES §1 Gateway;
//! case C33).
//!
//! The SOURCE Markdown is split, never the formatted text: the document is flattened into
//! units (lines, words, links, code spans, fence lines), each chunk is formatted on its own
//! while it grows, and when the next unit would push it past the limit the chunk is cut at
//! the best earlier boundary — a paragraph break, else a line break, else a word break —
//! with open styles and code fences closed at the cut and re-opened in the next chunk. The
//! length is measured after formatting, in the platform's unit, including the ` (i/n)`
//! indicator.

use crate::delivery::markdown::{Atom, AtomKind, Break, Unit, parse};
use crate::delivery::render::{Builder, Mark, Resume, atom_text, indicator, measure, render_all};
use crate::platform::{Markup, PlatformLimits};

/// Room kept for closing styles and fences, a re-opened fence, a line prefix.
const OVERHEAD: usize = 120;
/// Smallest limit the within-limit guarantee holds for (every real platform is far above).
pub const MIN_MESSAGE_LEN: usize = 200;

/// Formats `markdown` for `limits.markup` and splits it into chunks ready for
/// [`crate::PlatformAdapter::send`].
///
/// Every chunk is at most `limits.max_message_len` long, counted in `limits.length_unit`
/// after formatting and including the indicator; chunks are cut on paragraph, then line,
/// then word boundaries, never inside a link, a code span, an escape pair or a style, and a
/// code fence cut in two is closed and re-opened with the same info string. When there is
/// more than one chunk each ends with ` (i/n)` (Telegram: ` \(i/n\)`; on its own line after
/// a closing fence). Markups: Telegram MarkdownV2 (escaped per the Bot API rules), Discord
/// Markdown, Slack mrkdwn, plain text (markup stripped).
///
/// Blank input gives no chunks. Limits below [`MIN_MESSAGE_LEN`] are treated as that
/// value.
pub fn render_chunks(markdown: &str, limits: &PlatformLimits) -> Vec<String> {
    let units = parse(markdown);
    if units.is_empty() {
        return Vec::new();
    }
    let limit = limits.max_message_len.max(MIN_MESSAGE_LEN);
    let markup = limits.markup;
    let whole = render_all(&units, markup);
    if measure(&whole, limits.length_unit) <= limit {
        return vec![whole];
    }
    let mut digits = 1u32;
    loop {
        let top = 10usize.pow(digits) - 1;
        let reserve = measure(&indicator(markup, top, top, false), limits.length_unit);
        let piece = max_piece(limit, reserve);
        let units = presplit(&units, markup, limits, piece);
        let chunks = split(&units, limits, limit, reserve);
        if chunks.len() <= top || digits >= 6 {
            let n = chunks.len();
            return chunks
                .into_iter()
                .enumerate()
                .map(|(i, c)| {
                    let own_line = markup != Markup::Plain && c.ends_with("```");
                    format!("{c}{}", indicator(markup, i + 1, n, own_line))
                })
                .collect();
        }
        digits += 1;
    }
}

/// Largest formatted length of one unit, so any unit fits in a fresh chunk together with
/// the overhead and the indicator.
fn max_piece(limit: usize, reserve: usize) -> usize {
    (limit.saturating_sub(reserve + OVERHEAD) / 2).max(8)
}

/// Cuts atoms and code lines whose formatted length exceeds `piece` into smaller units
/// (hard boundaries), so every unit fits in a fresh chunk.
fn presplit(units: &[Unit], markup: Markup, limits: &PlatformLimits, piece: usize) -> Vec<Unit> {
    let unit = limits.length_unit;
    let mut out = Vec::with_capacity(units.len());
    for u in units {
        match u {
            Unit::Atom(atom, brk) => {
                if measure(&atom_text(markup, &atom.kind, false), unit) + 8 <= piece {
                    out.push(u.clone());
                    continue;
                }
                let parts: Vec<Atom> = match &atom.kind {
                    AtomKind::Link { text, url } => {
                        let mut words: Vec<(String, bool)> = text
                            .split_whitespace()
                            .enumerate()
                            .map(|(i, w)| (w.to_string(), i == 0 && atom.space_before || i > 0))
                            .collect();
                        words.push((format!("({url})"), true));
                        words
                            .into_iter()
                            .flat_map(|(w, space)| {
                                cut_text(&w, piece, |s| {
                                    measure(
                                        &atom_text(markup, &AtomKind::Word(s.into()), false),
                                        unit,
                                    )
                                })
                                .into_iter()
                                .enumerate()
                                .map(move |(i, p)| Atom {
                                    kind: AtomKind::Word(p),
                                    style: atom.style,
                                    space_before: i == 0 && space,
                                })
                                .collect::<Vec<_>>()
                            })
                            .collect()
                    }
                    AtomKind::Word(w) | AtomKind::Code(w) => {
                        let code = matches!(atom.kind, AtomKind::Code(_));
                        let wrap = |s: &str| {
                            if code {
                                AtomKind::Code(s.to_string())
                            } else {
                                AtomKind::Word(s.to_string())
                            }
                        };
                        cut_text(w, piece, |s| {
                            measure(&atom_text(markup, &wrap(s), false), unit)
                        })
                        .into_iter()
                        .enumerate()
                        .map(|(i, p)| Atom {
                            kind: wrap(&p),
                            style: atom.style,
                            space_before: i == 0 && atom.space_before,
                        })
                        .collect()
                    }
                };
                for (i, a) in parts.into_iter().enumerate() {
                    let b = if i == 0 {
                        *brk
                    } else if a.space_before {
                        Break::Word
                    } else {
                        Break::Hard
                    };
                    out.push(Unit::Atom(a, b));
                }
            }
            Unit::Code { text, cont } => {
                let probe = Unit::Code {
                    text: text.clone(),
                    cont: true,
                };
                let one = render_all(std::slice::from_ref(&probe), markup);
                if measure(&one, unit) <= piece {
                    out.push(u.clone());
                    continue;
                }
                let parts = cut_text(text, piece, |s| {
                    let p = Unit::Code {
                        text: s.to_string(),
                        cont: true,
                    };
                    measure(&render_all(std::slice::from_ref(&p), markup), unit)
                });
                for (i, p) in parts.into_iter().enumerate() {
                    out.push(Unit::Code {
                        text: p,
                        cont: if i == 0 { *cont } else { true },
                    });
                }
            }
            other => out.push(other.clone()),
        }
    }
    out
}

/// Cuts `text` at char boundaries into pieces whose `cost` is at most `piece`.
fn cut_text(text: &str, piece: usize, cost: impl Fn(&str) -> usize) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut cur_cost = 0;
    let mut buf = [0u8; 4];
    for c in text.chars() {
        let c_cost = cost(c.encode_utf8(&mut buf));
        if !cur.is_empty() && cur_cost + c_cost > piece {
            parts.push(std::mem::take(&mut cur));
            cur_cost = 0;
        }
        cur.push(c);
        cur_cost += c_cost;
    }
    if !cur.is_empty() {
        parts.push(cur);
    }
    parts
}

/// Greedy split: grow a chunk unit by unit; on overflow cut at the best earlier boundary.
fn split(units: &[Unit], limits: &PlatformLimits, limit: usize, reserve: usize) -> Vec<String> {
    let budget = limit.saturating_sub(reserve);
    let (markup, unit) = (limits.markup, limits.length_unit);
    let mut chunks = Vec::new();
    let mut start = 0usize;
    let mut resume = Resume::default();
    while start < units.len() {
        let mut b = Builder::new(markup, unit, &resume);
        let mut marks: Vec<(usize, Break, Mark)> = Vec::new();
        let mut i = start;
        let mut cut: Option<(usize, Mark)> = None;
        while i < units.len() {
            let u = &units[i];
            if i > start {
                marks.push((i, u.break_before(), b.mark()));
            }
            b.apply(u);
            if b.len() + b.closing_len() > budget && i > start {
                cut = Some(choose(&marks, budget));
                break;
            }
            i += 1;
        }
        match cut {
            Some((at, mark)) => {
                resume = b.rewind(&mark);
                if !matches!(units.get(at), Some(Unit::Atom(..))) {
                    resume.quote = false;
                }
                if matches!(
                    units.get(at),
                    Some(Unit::Fence { .. }) | Some(Unit::Line { .. })
                ) {
                    resume.fence = None;
                }
                if !b.is_empty() {
                    chunks.push(b.finish());
                }
                start = at;
            }
            None => {
                if !b.is_empty() {
                    chunks.push(b.finish());
                }
                start = units.len();
            }
        }
    }
    chunks
}

/// Picks the boundary: the latest paragraph break that keeps the chunk at least a third
/// full, else the latest line break, else word break, else hard cut; when none is that far,
/// the latest boundary of any kind.
fn choose(marks: &[(usize, Break, Mark)], budget: usize) -> (usize, Mark) {
    let third = budget / 3;
    for want in [Break::Paragraph, Break::Line, Break::Word, Break::Hard] {
        if let Some((i, _, m)) = marks
            .iter()
            .rev()
            .find(|(_, b, m)| *b == want && m.len >= third)
        {
            return (*i, m.clone());
        }
    }
    // Nothing good enough: cut right before the unit that overflowed.
    let (i, _, m) = &marks[marks.len() - 1];
    (*i, m.clone())
}
