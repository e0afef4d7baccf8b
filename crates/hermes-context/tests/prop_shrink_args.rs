//! Property tests of tool-call argument shrinking in compression (issue 6 part 5; case C16):
//! the result is always valid JSON with the same keys and non-string values, every long string
//! leaf is cut to its limit plus the marker, and nothing changes when nothing is long.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_context::compress::shrink_json_arguments;
use proptest::prelude::*;
use serde_json::Value;

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "\\PC{0,40}".prop_map(Value::from),
        "[a-zé世🎉\"\\\\\\n]{0,60}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("\\PC{1,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Checks `after` against `before`: same shape, same keys and non-string leaves; strings kept
/// when short, else starting with their first `max` characters. Returns whether any was cut.
fn compare(before: &Value, after: &Value, max: usize) -> Result<bool, String> {
    match (before, after) {
        (Value::String(b), Value::String(a)) => {
            if b.chars().count() <= max {
                if a != b {
                    return Err(format!("short string changed: {b:?} -> {a:?}"));
                }
                Ok(false)
            } else {
                let kept: String = b.chars().take(max).collect();
                if !a.starts_with(&kept) || a == b {
                    return Err(format!("long string not cut to {max}: {b:?} -> {a:?}"));
                }
                Ok(true)
            }
        }
        (Value::Array(b), Value::Array(a)) if a.len() == b.len() => {
            let mut cut = false;
            for (x, y) in b.iter().zip(a) {
                cut |= compare(x, y, max)?;
            }
            Ok(cut)
        }
        (Value::Object(b), Value::Object(a)) => {
            if b.keys().collect::<Vec<_>>() != a.keys().collect::<Vec<_>>() {
                return Err("keys changed".to_string());
            }
            let mut cut = false;
            for (k, x) in b {
                cut |= compare(x, &a[k], max)?;
            }
            Ok(cut)
        }
        (b, a) if a == b => Ok(false),
        (b, a) => Err(format!("value changed: {b} -> {a}")),
    }
}

/// Property cases: `n`, or 20 × `n` with `HERMES_LONG_TESTS=1` (README "Two commands").
fn cases(n: u32) -> u32 {
    match std::env::var("HERMES_LONG_TESTS") {
        Ok(v) if !v.is_empty() && v != "0" => n * 20,
        _ => n,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    #[test]
    fn shrunk_arguments_stay_valid_json(value in any_json(), max in 0usize..24) {
        let text = value.to_string();
        match shrink_json_arguments(&text, max) {
            Some(out) => {
                let parsed: Value = serde_json::from_str(&out).map_err(|e| {
                    TestCaseError::fail(format!("invalid JSON {out:?}: {e}"))
                })?;
                let cut = compare(&value, &parsed, max).map_err(TestCaseError::fail)?;
                prop_assert!(cut, "Some without any cut: {}", out);
            }
            None => {
                fn longest(v: &Value) -> usize {
                    match v {
                        Value::String(s) => s.chars().count(),
                        Value::Array(a) => a.iter().map(longest).max().unwrap_or(0),
                        Value::Object(o) => o.values().map(longest).max().unwrap_or(0),
                        _ => 0,
                    }
                }
                prop_assert!(longest(&value) <= max, "a long leaf was left: {}", text);
            }
        }
    }

    /// Text that is not JSON is never touched.
    #[test]
    fn non_json_is_left_alone(text in "\\PC{0,60}", max in 0usize..8) {
        if serde_json::from_str::<Value>(&text).is_err() {
            prop_assert_eq!(shrink_json_arguments(&text, max), None);
        }
    }
}
