//! Chunking and platform formatting of replies (issue 7 part 5; case C33).

#[path = "support/mdv2.rs"]
mod mdv2;

use hermes_gateway::{LengthUnit, Markup, PlatformLimits, render_chunks};
use proptest::prelude::*;

fn limits(markup: Markup, max: usize) -> PlatformLimits {
    PlatformLimits {
        max_message_len: max,
        length_unit: if markup == Markup::TelegramMarkdownV2 {
            LengthUnit::Utf16
        } else {
            LengthUnit::Chars
        },
        markup,
        supports_edit: true,
    }
}

fn telegram(max: usize) -> PlatformLimits {
    limits(Markup::TelegramMarkdownV2, max)
}

fn utf16(s: &str) -> usize {
    s.encode_utf16().count()
}

/// The exact trigger of case C33.
fn c33_reply() -> String {
    format!(
        "**Summary**\n{}",
        "step-1. done. see [docs](https://example.org/a_b) ok.\n".repeat(90)
    )
}

#[test]
fn case_c33_markdownv2_chunks_are_independently_valid() {
    let chunks = render_chunks(&c33_reply(), &telegram(4096));
    assert_eq!(chunks.len(), 2, "{chunks:#?}");
    let mut links = 0;
    for (i, chunk) in chunks.iter().enumerate() {
        assert!(utf16(chunk) <= 4096, "chunk {i} is {} units", utf16(chunk));
        let report = mdv2::check(chunk);
        assert_eq!(report.dangling_backslash, 0, "chunk {i}");
        assert_eq!(report.unescaped_reserved, 0, "chunk {i}");
        assert!(
            report.structure_errors.is_empty(),
            "{:?}",
            report.structure_errors
        );
        links += report.links;
    }
    // Every link arrived whole, and the indicator is escaped.
    assert_eq!(links, 90);
    assert!(chunks[0].ends_with(" \\(1/2\\)"), "{}", &chunks[0]);
    assert!(chunks[1].ends_with(" \\(2/2\\)"));
    assert!(chunks[0].starts_with("*Summary*\n"));
    // Each source line arrives intact in one chunk.
    let lines: usize = chunks
        .iter()
        .map(|c| {
            mdv2::check(c)
                .plain
                .matches("step-1. done. see docs ok.")
                .count()
        })
        .sum();
    assert_eq!(lines, 90);
}

/// A naive splitter (format everything, then cut at the limit) and where it would cut.
fn naive_cut(formatted: &str, limit: usize) -> String {
    let budget = limit - utf16(" \\(1/2\\)");
    let mut out = String::new();
    for ch in formatted.chars() {
        if utf16(&out) + ch.len_utf16() > budget {
            break;
        }
        out.push(ch);
    }
    out
}

fn ends_in_escape_pair(prefix: &str) -> bool {
    let trailing = prefix.chars().rev().take_while(|c| *c == '\\').count();
    trailing % 2 == 1
}

fn ends_inside_link(prefix: &str) -> bool {
    match prefix.rfind('[') {
        Some(p) => !prefix[p..].contains(')'),
        None => false,
    }
}

#[test]
fn case_c33_boundary_between_backslash_and_escaped_dot() {
    let reply = c33_reply();
    let formatted = render_chunks(&reply, &telegram(1_000_000)).join("");
    let mut hit = 0;
    for limit in 200..=900 {
        let naive = naive_cut(&formatted, limit);
        if !ends_in_escape_pair(&naive) || !naive.ends_with("done\\") {
            continue;
        }
        hit += 1;
        for chunk in render_chunks(&reply, &telegram(limit)) {
            assert!(utf16(&chunk) <= limit);
            let report = mdv2::check(&chunk);
            assert!(report.is_valid(), "limit {limit}: {report:?}\n{chunk}");
        }
    }
    assert!(hit > 0, "the sweep never hit the `done\\` | `.` boundary");
}

#[test]
fn case_c33_boundary_inside_link() {
    let reply = c33_reply();
    let formatted = render_chunks(&reply, &telegram(1_000_000)).join("");
    let mut hit = 0;
    for limit in 200..=900 {
        let naive = naive_cut(&formatted, limit);
        if !naive.ends_with("[docs](https://exa") && !ends_inside_link(&naive) {
            continue;
        }
        hit += 1;
        let chunks = render_chunks(&reply, &telegram(limit));
        let mut links = 0;
        for chunk in &chunks {
            assert!(utf16(chunk) <= limit);
            let report = mdv2::check(chunk);
            assert!(report.is_valid(), "limit {limit}: {report:?}\n{chunk}");
            links += report.links;
        }
        assert_eq!(links, 90, "limit {limit}: a link was torn");
    }
    assert!(hit > 0, "the sweep never hit a boundary inside a link");
}

#[test]
fn short_replies_are_one_chunk_without_indicator() {
    let chunks = render_chunks("Hello *there*. 1 + 1 = 2!", &telegram(4096));
    assert_eq!(
        chunks,
        vec!["Hello _there_\\. 1 \\+ 1 \\= 2\\!".to_string()]
    );
    assert!(render_chunks("  \n\n ", &telegram(4096)).is_empty());
}

#[test]
fn code_fences_are_closed_and_reopened_with_their_info_string() {
    let body: String = (0..120)
        .map(|i| format!("let x{i} = {i}; // `tick`\n"))
        .collect();
    let reply = format!("Intro.\n\n```rust\n{body}```\n\nAfter.");
    for markup in [Markup::TelegramMarkdownV2, Markup::DiscordMarkdown] {
        let chunks = render_chunks(&reply, &limits(markup, 1000));
        assert!(chunks.len() >= 3, "{chunks:#?}");
        for (i, chunk) in chunks.iter().enumerate() {
            assert!(chunk.chars().count() <= 1000);
            let fences = chunk.matches("```").count();
            assert_eq!(fences % 2, 0, "chunk {i} leaves a fence open:\n{chunk}");
            if i > 0 && i + 1 < chunks.len() {
                assert!(chunk.starts_with("```rust\n"), "chunk {i}:\n{chunk}");
            }
            if markup == Markup::TelegramMarkdownV2 {
                assert!(mdv2::check(chunk).is_valid(), "{chunk}");
            }
        }
    }
}

#[test]
fn styles_cut_by_a_chunk_boundary_are_closed_and_reopened() {
    let words: Vec<String> = (0..400).map(|i| format!("w{i}")).collect();
    let reply = format!("**{}**", words.join(" "));
    let chunks = render_chunks(&reply, &telegram(500));
    assert!(chunks.len() > 2);
    for chunk in &chunks {
        assert!(chunk.starts_with('*'), "{chunk}");
        assert!(mdv2::check(chunk).is_valid(), "{chunk}");
    }
}

#[test]
fn over_long_words_are_cut_to_fit() {
    let reply = format!("{} end", "x.".repeat(3000));
    for markup in [
        Markup::TelegramMarkdownV2,
        Markup::DiscordMarkdown,
        Markup::SlackMrkdwn,
        Markup::Plain,
    ] {
        let l = limits(markup, 2000);
        for chunk in render_chunks(&reply, &l) {
            let len = match l.length_unit {
                LengthUnit::Utf16 => utf16(&chunk),
                LengthUnit::Chars => chunk.chars().count(),
            };
            assert!(len <= 2000, "{markup:?}: {len}");
            if markup == Markup::TelegramMarkdownV2 {
                assert!(mdv2::check(&chunk).is_valid());
            }
        }
    }
}

#[test]
fn slack_and_plain_formatting() {
    let md = "# Title\n**bold** *it* ~~gone~~ `a<b` [site](https://e.org/?a=1&b=2) a & b > c";
    let slack = render_chunks(md, &limits(Markup::SlackMrkdwn, 40000));
    assert_eq!(
        slack,
        vec![
            "*Title*\n*bold* _it_ ~gone~ `a&lt;b` <https://e.org/?a=1&b=2|site> a &amp; b &gt; c"
                .to_string()
        ]
    );
    let plain = render_chunks(md, &limits(Markup::Plain, 40000));
    assert_eq!(
        plain,
        vec!["Title\nbold it gone a<b site (https://e.org/?a=1&b=2) a & b > c".to_string()]
    );
}

const LONG_REPLY: &str = include_str!("fixtures/long_reply.md");

#[test]
fn snapshot_long_reply_telegram() {
    let chunks = render_chunks(LONG_REPLY, &telegram(900));
    for c in &chunks {
        assert!(mdv2::check(c).is_valid(), "{c}");
    }
    insta::assert_snapshot!(chunks.join("\n~~~~~~~~ next chunk ~~~~~~~~\n"));
}

#[test]
fn snapshot_long_reply_discord() {
    let chunks = render_chunks(LONG_REPLY, &limits(Markup::DiscordMarkdown, 900));
    insta::assert_snapshot!(chunks.join("\n~~~~~~~~ next chunk ~~~~~~~~\n"));
}

#[test]
fn snapshot_long_reply_slack() {
    let chunks = render_chunks(LONG_REPLY, &limits(Markup::SlackMrkdwn, 900));
    insta::assert_snapshot!(chunks.join("\n~~~~~~~~ next chunk ~~~~~~~~\n"));
}

#[test]
fn snapshot_long_reply_plain() {
    let chunks = render_chunks(LONG_REPLY, &limits(Markup::Plain, 900));
    insta::assert_snapshot!(chunks.join("\n~~~~~~~~ next chunk ~~~~~~~~\n"));
}

/// A generated reply and the visible text it must keep.
fn block() -> impl Strategy<Value = (String, String)> {
    let word = prop_oneof![
        8 => "[a-z0-9][a-z0-9.!=+#(){}|>*_~\\\\-]{0,9}",
        1 => prop_oneof![
            Just("naïve".to_string()),
            Just("日本語".to_string()),
            Just("😀x".to_string()),
            Just("Ünï".to_string())
        ],
    ];
    let words = prop::collection::vec(word.clone(), 1..6).prop_map(|w| w.join(" "));
    let inline = prop_oneof![
        6 => word.prop_map(|w| (w.clone(), w)),
        1 => words.clone().prop_map(|w| (format!("**{w}**"), w)),
        1 => words.clone().prop_map(|w| (format!("*{w}*"), w)),
        1 => "[a-z0-9 .(){}\\\\-]{1,20}".prop_map(|c| (format!("`{c}`"), c)),
        1 => (prop::collection::vec("[a-z0-9]{1,8}", 1..4), "[a-z_]{1,8}").prop_map(|(t, p)| {
            let t = t.join(" ");
            (format!("[{t}](https://example.org/{p})"), t)
        }),
    ];
    let paragraph = prop::collection::vec(inline, 1..40).prop_map(|items| {
        let src: Vec<String> = items.iter().map(|(s, _)| s.clone()).collect();
        let vis: Vec<String> = items.iter().map(|(_, v)| v.clone()).collect();
        (src.join(" "), vis.join(" "))
    });
    let code_line = "[ -_a-~]{0,50}";
    prop_oneof![
        6 => paragraph.clone(),
        1 => words.clone().prop_map(|w| (format!("## {w}"), w)),
        1 => paragraph.clone().prop_map(|(s, v)| (format!("- {s}"), v)),
        1 => paragraph.prop_map(|(s, v)| (format!("> {s}"), v)),
        1 => prop::collection::vec(code_line, 0..12).prop_map(|lines| {
            let body = lines.join("\n");
            (format!("```rust\n{body}\n```"), body)
        }),
    ]
}

fn alnum(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).collect()
}

fn strip_indicator(plain: &str, i: usize, n: usize) -> String {
    if n == 1 {
        return plain.to_string();
    }
    let suffix = format!("({i}/{n})");
    let trimmed = plain.trim_end();
    trimmed
        .strip_suffix(&suffix)
        .unwrap_or_else(|| panic!("chunk {i} lacks its indicator: {plain:?}"))
        .to_string()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn any_reply_gives_valid_chunks_within_the_limit(
        blocks in prop::collection::vec((block(), any::<bool>()), 1..30),
        max in prop_oneof![Just(300usize), Just(512), Just(1000), Just(4096)],
    ) {
        let mut src = String::new();
        let mut visible = String::new();
        for ((s, v), blank) in &blocks {
            if !src.is_empty() {
                src.push_str(if *blank { "\n\n" } else { "\n" });
            }
            src.push_str(s);
            visible.push_str(v);
            visible.push(' ');
        }
        let chunks = render_chunks(&src, &telegram(max));
        let n = chunks.len();
        let mut kept = String::new();
        for (i, chunk) in chunks.iter().enumerate() {
            prop_assert!(utf16(chunk) <= max, "chunk {} is {} > {}", i, utf16(chunk), max);
            let report = mdv2::check(chunk);
            prop_assert!(report.is_valid(), "{:?}\n{}", report, chunk);
            kept.push_str(&strip_indicator(&report.plain, i + 1, n));
            kept.push('\n');
        }
        prop_assert_eq!(alnum(&kept), alnum(&visible));
        for markup in [Markup::DiscordMarkdown, Markup::SlackMrkdwn, Markup::Plain] {
            for chunk in render_chunks(&src, &limits(markup, max)) {
                prop_assert!(chunk.chars().count() <= max.max(200));
            }
        }
    }
}
