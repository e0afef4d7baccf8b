//! The tool-result budget: numeric_policies.json vectors and spilling.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use hermes_tools::budget::{BudgetItem, ResultBudget, SPILL_PREVIEW_CHARS, apply_result_budget};

#[test]
fn budget_vectors() {
    let v = common::load_json("vectors/numeric_policies.json");
    let cases = v["tool_result_budget_chars"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let b = ResultBudget::for_context(c["context"].as_u64());
        assert_eq!(
            b.per_result as u64,
            c["per_result"].as_u64().unwrap(),
            "{c}"
        );
        assert_eq!(b.per_turn as u64, c["per_turn"].as_u64().unwrap(), "{c}");
    }
}

#[test]
fn oversized_results_spill_to_files_with_a_preview() {
    let dir = tempfile::tempdir().unwrap();
    let budget = ResultBudget {
        per_result: 10_000,
        per_turn: 25_000,
    };
    let mut items = vec![
        BudgetItem::new("call_1", "terminal", "é".repeat(12_000)),
        BudgetItem::new("call_2", "read_file", "r".repeat(12_000)),
        BudgetItem::new("call_3", "search_files", "s".repeat(9_000)),
        BudgetItem::new("call_4", "search_files", "small"),
    ];
    apply_result_budget(&mut items, budget, dir.path()).unwrap();
    // Layer one: terminal spilled; read_file exempt.
    let spilled = items[0].spilled_to.clone().unwrap();
    assert_eq!(
        std::fs::read_to_string(&spilled).unwrap(),
        "é".repeat(12_000)
    );
    assert!(
        items[0]
            .content
            .starts_with(&"é".repeat(SPILL_PREVIEW_CHARS))
    );
    assert!(items[0].content.contains(spilled.to_str().unwrap()));
    assert!(items[0].content.contains("12000 chars"));
    // Layer two: 1.6k + 12k + 9k + 5 is within 25k, so nothing else moves.
    assert!(items[1].spilled_to.is_none() && items[2].spilled_to.is_none());
    assert_eq!(items[3].content, "small");

    // A tighter turn budget spills the largest remaining (read_file) next.
    let budget = ResultBudget {
        per_result: 10_000,
        per_turn: 15_000,
    };
    apply_result_budget(&mut items, budget, dir.path()).unwrap();
    assert!(items[1].spilled_to.is_some());
    assert!(items[2].spilled_to.is_none());
    let total: usize = items.iter().map(|i| i.content.chars().count()).sum();
    assert!(total <= 15_000);
}
