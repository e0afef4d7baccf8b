//! Property tests of the Hermes-format `<tool_call>` parser (issue 6 part 5; case C13):
//! streaming in any pieces equals the one-shot parse, well-formed blocks round-trip into the
//! calls that were written, and arbitrary text never panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_llm::hermes_format::{ParsedCall, TagFilter, parse_tool_calls};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Pushes `text` through a [`TagFilter`] cut at the given byte positions (moved forward to
/// character boundaries).
fn streamed(text: &str, cuts: &[usize]) -> (String, Vec<ParsedCall>) {
    let mut cuts: Vec<usize> = cuts
        .iter()
        .map(|c| {
            let mut c = c % (text.len() + 1);
            while !text.is_char_boundary(c) {
                c += 1;
            }
            c
        })
        .collect();
    cuts.sort_unstable();
    let mut f = TagFilter::new();
    let mut visible = String::new();
    let mut at = 0;
    for c in cuts {
        visible.push_str(&f.push(&text[at..c]));
        at = c;
    }
    visible.push_str(&f.push(&text[at..]));
    visible.push_str(&f.finish());
    (visible, f.take_calls())
}

/// Text with plenty of near-miss markup.
fn markup_soup() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("<tool_call>".to_string()),
        Just("</tool_call>".to_string()),
        Just("<function_call>".to_string()),
        Just("</function_call>".to_string()),
        Just("<tool_".to_string()),
        Just("<".to_string()),
        Just("call>".to_string()),
        Just("{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}".to_string()),
        Just("{\"name\": 3}".to_string()),
        Just("{\"name\": \"x\", \"parameters\": \"{}\"}".to_string()),
        Just("{".to_string()),
        "\\PC{1,6}",
        "[ \\n\\t]{1,3}",
    ];
    proptest::collection::vec(piece, 0..20).prop_map(|v| v.concat())
}

/// Plain text that cannot start a tag.
fn plain() -> impl Strategy<Value = String> {
    "[^<]{0,24}"
}

fn args() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
        Just(Value::Null),
    ];
    proptest::collection::btree_map("[a-z_]{1,8}", leaf, 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// Property cases: `n`, or 20 × `n` with `HERMES_LONG_TESTS=1` (README "Two commands").
fn cases(n: u32) -> u32 {
    match std::env::var("HERMES_LONG_TESTS") {
        Ok(v) if !v.is_empty() && v != "0" => n * 20,
        _ => n,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(128)))]

    /// Any chunking of any text gives the one-shot result; nothing panics.
    #[test]
    fn streaming_matches_one_shot(text in markup_soup(), cuts in proptest::collection::vec(any::<usize>(), 0..12)) {
        let whole = parse_tool_calls(&text);
        prop_assert_eq!(streamed(&text, &cuts), whole.clone());
        // Every reported block either parsed or says why not.
        for call in &whole.1 {
            prop_assert_eq!(call.is_valid(), call.error.is_none());
            if call.is_valid() {
                prop_assert!(!call.name.is_empty() || call.raw.contains("\"name\""));
                let object_text = call.arguments.starts_with('{');
                prop_assert!(serde_json::from_str::<Value>(&call.arguments).is_ok() || !object_text, "{:?}", call);
            }
        }
    }

    /// Blocks written between plain text come back as exactly those calls, and the visible
    /// text is the plain text alone.
    #[test]
    fn well_formed_blocks_round_trip(
        parts in proptest::collection::vec((plain(), "[a-z_]{1,12}", args(), any::<bool>()), 0..5),
        tail in plain(),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        let mut text = String::new();
        let mut visible = String::new();
        for (before, name, arguments, function_tag) in &parts {
            text.push_str(before);
            visible.push_str(before);
            let (open, close) = if *function_tag {
                ("<function_call>", "</function_call>")
            } else {
                ("<tool_call>", "</tool_call>")
            };
            let block = json!({"name": name, "arguments": arguments});
            text.push_str(&format!("{open}\n{block}\n{close}"));
        }
        text.push_str(&tail);
        visible.push_str(&tail);

        let (got_visible, calls) = streamed(&text, &cuts);
        prop_assert_eq!(got_visible, visible);
        prop_assert_eq!(calls.len(), parts.len());
        for (call, (_, name, arguments, _)) in calls.iter().zip(&parts) {
            prop_assert!(call.is_valid(), "{:?}", call);
            prop_assert_eq!(&call.name, name);
            let parsed: Value = serde_json::from_str(&call.arguments).unwrap();
            prop_assert_eq!(&parsed, arguments);
        }
    }
}
