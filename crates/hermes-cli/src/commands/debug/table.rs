//! A plain aligned table for the debug views: every column as wide as its widest cell
//! (display width, so CJK text lines up), numbers right-aligned, two spaces between
//! columns, no trailing blanks.

use crate::render::style::width;

/// How a column is aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Align {
    Left,
    Right,
}

/// `header` and `rows` as lines of text, `indent` spaces before each.
pub(super) fn render(header: &[(&str, Align)], rows: &[Vec<String>], indent: usize) -> String {
    let mut widths: Vec<usize> = header.iter().map(|(h, _)| width(h)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(width(cell));
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = " ".repeat(indent);
        for (i, cell) in cells.iter().enumerate() {
            let pad = " ".repeat(widths[i].saturating_sub(width(cell)));
            match header[i].1 {
                Align::Left => {
                    out.push_str(cell);
                    out.push_str(&pad);
                }
                Align::Right => {
                    out.push_str(&pad);
                    out.push_str(cell);
                }
            }
            out.push_str("  ");
        }
        out.trim_end().to_string()
    };
    let mut out = vec![line(header.iter().map(|(h, _)| *h).collect())];
    for row in rows {
        out.push(line(row.iter().map(String::as_str).collect()));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_and_numbers_align_right() {
        let text = render(
            &[("name", Align::Left), ("bytes", Align::Right)],
            &[
                vec!["identity".into(), "12".into()],
                vec!["日本".into(), "1234567".into()],
            ],
            2,
        );
        assert_eq!(
            text,
            "  name        bytes\n  identity       12\n  日本      1234567"
        );
    }
}
