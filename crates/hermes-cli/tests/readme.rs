//! The README renders as intended (issue 20 item 9): every fenced code block is closed, and
//! none swallows the text after it (a fence line inside a block's code means the block before
//! it was left open).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

/// Problems of the fenced code blocks of `md`: `(line, why)`.
fn fence_problems(md: &str) -> Vec<(usize, String)> {
    let line_of = |offset: usize| md[..offset].lines().count() + 1;
    let mut out = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (event, range) in Parser::new(md).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                open = Some((range.start, info.to_string()));
                let src = md[range.clone()].trim_end();
                let fence: String = src.chars().take_while(|c| *c == '`' || *c == '~').collect();
                let closed = src.lines().count() > 1
                    && src
                        .lines()
                        .last()
                        .is_some_and(|l| l.trim().starts_with(&fence));
                if !closed {
                    out.push((
                        line_of(range.start),
                        format!("```{info} block is never closed"),
                    ));
                }
            }
            Event::Text(text) if open.is_some() => {
                if let Some(line) = text.lines().find(|l| l.trim_start().starts_with("```")) {
                    let (start, info) = open.clone().unwrap();
                    out.push((
                        line_of(start),
                        format!("```{info} block holds a fence line `{line}`: it was left open"),
                    ));
                }
            }
            Event::End(TagEnd::CodeBlock) => open = None,
            _ => {}
        }
    }
    out
}

#[test]
fn readme_code_fences_are_closed() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
    let md = std::fs::read_to_string(path).unwrap();
    let problems = fence_problems(&md);
    assert!(problems.is_empty(), "README.md: {problems:?}");
}

#[test]
fn an_unclosed_fence_is_found() {
    let md = "# A\n\n```ini\n[Unit]\n\n## B\n\ntext\n\n```bash\nls\n```\n\nafter\n";
    assert!(!fence_problems(md).is_empty());
    let md = "# A\n\n```ini\n[Unit]\n```\n\n## B\n";
    assert!(fence_problems(md).is_empty(), "{:?}", fence_problems(md));
    let md = "# A\n\n```ini\n[Unit]\n";
    assert!(!fence_problems(md).is_empty());
}
