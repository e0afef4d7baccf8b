#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Properties of the memory write gate (seed 004 §5.2): the tokenizer and Jaccard similarity on
//! arbitrary mixed-script text, and the gated store never losing an entry it did not mean to
//! change.

use hermes_context::memory::gate::{
    NEAR_DUPLICATE_JACCARD, check_information, content_words, jaccard, judge, tokenize,
};
use hermes_context::memory::{MemoryOp, MemoryStore, MemoryTarget};
use proptest::prelude::*;

/// Property cases: `n`, or 20 × `n` with `HERMES_LONG_TESTS=1` (README "Two commands").
fn cases(n: u32) -> u32 {
    match std::env::var("HERMES_LONG_TESTS") {
        Ok(v) if !v.is_empty() && v != "0" => n * 20,
        _ => n,
    }
}

/// Words from a small mixed vocabulary (ASCII, identifiers, numbers, CJK, punctuation), so
/// that overlaps, duplicates and conflicts actually happen.
fn text() -> impl Strategy<Value = String> {
    let word = prop::sample::select(vec![
        "the",
        "User",
        "likes",
        "tea",
        "not",
        "runs",
        "CI",
        "arm64",
        "v0.9",
        "3.11",
        "3.12",
        "cargo-nextest",
        "Friday",
        "14:00",
        "remember",
        "ok",
        "用户",
        "喜欢",
        "喝茶",
        "的",
        "。",
        "!!",
        "§",
        "—",
        "don't",
        "x86_64",
    ]);
    prop::collection::vec(word, 0..14).prop_map(|w| w.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    #[test]
    fn jaccard_is_a_symmetric_similarity(a in text(), b in text()) {
        let (ab, ba) = (jaccard(&a, &b), jaccard(&b, &a));
        prop_assert_eq!(ab, ba);
        prop_assert!((0.0..=1.0).contains(&ab), "{ab}");
        if !tokenize(&a).is_empty() {
            prop_assert_eq!(jaccard(&a, &a), 1.0);
        }
    }

    #[test]
    fn tokens_are_lowercase_and_never_empty(a in text(), junk in "\\PC{0,40}") {
        for t in tokenize(&format!("{a} {junk}")) {
            prop_assert!(!t.is_empty());
            prop_assert_eq!(t.to_lowercase(), t.clone());
        }
        // Content words are tokens, in order.
        let tokens = tokenize(&a);
        let mut it = tokens.iter();
        for w in content_words(&a) {
            prop_assert!(it.any(|t| *t == w), "{w} out of order in {tokens:?}");
        }
    }

    #[test]
    fn a_gated_add_changes_at_most_one_existing_entry(
        existing in prop::collection::vec(text(), 0..5),
        new in text(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let store = MemoryStore::in_dir(tmp.path()).with_limits(100_000, 100_000);
        let seeded: Vec<MemoryOp> = existing
            .iter()
            .filter(|e| !e.trim().is_empty())
            .map(|e| MemoryOp::Add { content: e.clone() })
            .collect();
        let before = if seeded.is_empty() {
            Vec::new()
        } else {
            store.apply(MemoryTarget::Memory, &seeded).unwrap().entries
        };
        let op = [MemoryOp::Add { content: new.clone() }];
        match store.apply_gated(MemoryTarget::Memory, &op) {
            Err(e) => {
                // Refused: nothing changed on disk.
                prop_assert_eq!(store.read(MemoryTarget::Memory).unwrap(), before.clone());
                if e.reason() == "low_information" {
                    prop_assert!(check_information(&new).is_err());
                }
            }
            Ok(out) => {
                prop_assert!(check_information(&new).is_ok());
                let after = store.read(MemoryTarget::Memory).unwrap();
                prop_assert_eq!(&after, &out.entries);
                let lost = before.iter().filter(|e| !after.contains(e)).count();
                prop_assert!(lost <= 1, "{before:?} -> {after:?}");
                prop_assert!(after.len() <= before.len() + 1);
                let new = new.trim().to_string();
                if lost == 0 && after.len() == before.len() + 1 {
                    prop_assert_eq!(judge(&before, &new), hermes_context::memory::gate::Verdict::Add);
                    prop_assert!(before.iter().all(|e| jaccard(e, &new) <= NEAR_DUPLICATE_JACCARD));
                }
            }
        }
    }
}
