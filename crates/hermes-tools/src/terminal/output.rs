//! Output capture and capping for the terminal tool (FEATURES §4: 50,000 bytes / 2,000
//! lines, ANSI stripped, head and tail kept with a marker).

use std::collections::VecDeque;

/// Byte cap of one terminal result (FEATURES §4).
pub const MAX_OUTPUT_BYTES: usize = 50_000;
/// Line cap of one terminal result (FEATURES §4).
pub const MAX_OUTPUT_LINES: usize = 2_000;

/// Raw output kept in memory while a command runs: the first `head_cap` bytes and the last
/// `tail_cap` bytes, with a count of everything seen (so a flood does not exhaust memory).
#[derive(Debug)]
pub(crate) struct OutputBuffer {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

impl OutputBuffer {
    pub(crate) fn new(head_cap: usize, tail_cap: usize) -> OutputBuffer {
        OutputBuffer {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap,
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.head_cap {
            let take = bytes.len().min(self.head_cap - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }

    /// Everything kept, ANSI escapes stripped and decoded lossily as UTF-8, with a marker
    /// where bytes were dropped between head and tail.
    pub(crate) fn render(&self) -> String {
        let kept = self.head.len() as u64 + self.tail.len() as u64;
        let mut raw = self.head.clone();
        if self.total > kept {
            raw.extend_from_slice(
                format!(
                    "\n... [{} bytes of output dropped] ...\n",
                    self.total - kept
                )
                .as_bytes(),
            );
        }
        raw.extend(self.tail.iter());
        let clean = strip_ansi_escapes::strip(&raw);
        String::from_utf8_lossy(&clean).into_owned()
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Caps `text` at `max_bytes` bytes and `max_lines` lines by keeping the head and the tail
/// (about half the budget each, cut on UTF-8 boundaries) with a marker line in between that
/// says how many lines and bytes were omitted. Text within both limits is returned as is.
pub fn cap_output(text: &str, max_bytes: usize, max_lines: usize) -> String {
    let total_lines = text.lines().count();
    if text.len() <= max_bytes && total_lines <= max_lines {
        return text.to_string();
    }
    let half_bytes = max_bytes.saturating_sub(200) / 2;
    let half_lines = max_lines / 2;
    // Head: at most half_lines lines and half_bytes bytes.
    let mut head_end = 0;
    for (n, (i, _)) in text.match_indices('\n').enumerate() {
        if n >= half_lines || i + 1 > half_bytes {
            break;
        }
        head_end = i + 1;
    }
    if head_end == 0 {
        head_end = floor_boundary(text, half_bytes);
    }
    // Tail: at most half_lines lines and half_bytes bytes.
    let min_start = ceil_boundary(text, text.len().saturating_sub(half_bytes));
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut tail_start = text.len();
    for (n, (i, _)) in body.rmatch_indices('\n').enumerate() {
        if n >= half_lines || i + 1 < min_start {
            break;
        }
        tail_start = i + 1;
    }
    if tail_start == text.len() {
        tail_start = min_start;
    }
    if tail_start <= head_end {
        return text.to_string();
    }
    let omitted = &text[head_end..tail_start];
    let mut out = String::with_capacity(head_end + (text.len() - tail_start) + 120);
    out.push_str(&text[..head_end]);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "... [output truncated: {} lines / {} bytes omitted of {} lines / {} bytes] ...\n",
        omitted.matches('\n').count(),
        omitted.len(),
        total_lines,
        text.len()
    ));
    out.push_str(&text[tail_start..]);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn buffer_keeps_head_and_tail() {
        let mut b = OutputBuffer::new(4, 4);
        b.push(b"abcdef");
        b.push(b"ghij");
        assert_eq!(b.total, 10);
        let r = b.render();
        assert!(r.starts_with("abcd"));
        assert!(r.ends_with("ghij"));
        assert!(r.contains("2 bytes of output dropped"));
    }

    #[test]
    fn cap_on_lines_and_bytes() {
        let text: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let out = cap_output(&text, MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES);
        assert!(out.lines().count() <= MAX_OUTPUT_LINES + 1);
        assert!(out.starts_with("line 0\n"));
        assert!(out.ends_with("line 4999\n"));
        assert!(out.contains("output truncated: 3000 lines"));
        let long = "é".repeat(60_000);
        let out = cap_output(&long, MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES);
        assert!(out.len() <= MAX_OUTPUT_BYTES + 200);
        assert!(out.contains("omitted"));
    }
}
