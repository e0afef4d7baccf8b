//! `.env` is parsed as python-dotenv 1.2.2 parses it (issue 17 item 6).
//!
//! `tests/fixtures/dotenv/corpus.json` holds .env texts (hand-written cases and seeded random
//! ones, made by `make_corpus.py`); `expected.json` is what the real python-dotenv made of
//! each (`expected_by_python_dotenv.py`, run in the Python Hermes 0.19.0 venv with
//! `HX_FROM_ENV=env-value HX_BOTH=from-env` as the whole environment). Our parser must give
//! the same variables and skip the same statements. When `HERMES_PYTHON_HERMES` is set, the
//! script is run again there and must still give `expected.json`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hermes_protocol::dotenv::{Dotenv, parse_dotenv};
use proptest::prelude::*;
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dotenv")
}

fn test_env(name: &str) -> Option<String> {
    match name {
        "HX_FROM_ENV" => Some("env-value".to_string()),
        "HX_BOTH" => Some("from-env".to_string()),
        _ => None,
    }
}

/// Our result in the shape of the script's output: each key once at its first position
/// with its last value (a Python dict), and the number of skipped statements.
fn ours(d: &Dotenv) -> (Vec<(String, Option<String>)>, usize) {
    let mut order: Vec<String> = Vec::new();
    let mut last: BTreeMap<String, Option<String>> = BTreeMap::new();
    for (k, v) in &d.entries {
        if !last.contains_key(k) {
            order.push(k.clone());
        }
        last.insert(k.clone(), v.clone());
    }
    let entries = order
        .into_iter()
        .map(|k| {
            let v = last[&k].clone();
            (k, v)
        })
        .collect();
    (entries, d.warnings.len())
}

fn theirs(v: &Value) -> (Vec<(String, Option<String>)>, Vec<u64>) {
    let entries = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e[0].as_str().unwrap().to_string(),
                e[1].as_str().map(str::to_string),
            )
        })
        .collect();
    let lines = v["warning_lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_u64().unwrap())
        .collect();
    (entries, lines)
}

fn load(name: &str) -> BTreeMap<String, Value> {
    let text = std::fs::read_to_string(fixtures().join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn every_corpus_text_parses_as_python_dotenv_parses_it() {
    let corpus = load("corpus.json");
    let expected = load("expected.json");
    assert_eq!(corpus.len(), expected.len(), "regenerate expected.json");
    assert!(corpus.len() > 300);
    let mut failures = Vec::new();
    for (name, text) in &corpus {
        let d = parse_dotenv(text.as_str().unwrap(), &test_env);
        let (entries, skipped) = ours(&d);
        let (want_entries, want_lines) = theirs(&expected[name]);
        if entries != want_entries || skipped != want_lines.len() {
            failures.push(format!(
                "{name}: {text:?}\n  ours:   {entries:?} ({skipped} skipped)\n  python: {want_entries:?} (skipped at {want_lines:?})"
            ));
            continue;
        }
        // python-dotenv names the line where the whitespace before a statement starts; we
        // name the statement's own line, which is never earlier.
        for (w, py_line) in d.warnings.iter().zip(&want_lines) {
            assert!(w.line as u64 >= *py_line, "{name}: {w:?} vs {py_line}");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_real_python_dotenv_still_gives_the_committed_fixture() {
    let Some(venv) = std::env::var_os("HERMES_PYTHON_HERMES") else {
        eprintln!(
            "skipped: HERMES_PYTHON_HERMES is not set (scripts/python-hermes.sh makes the venv)"
        );
        return;
    };
    let python = Path::new(&venv).join("bin/python");
    let out = std::process::Command::new(python)
        .arg(fixtures().join("expected_by_python_dotenv.py"))
        .arg(fixtures().join("corpus.json"))
        .env_clear()
        .env("HX_FROM_ENV", "env-value")
        .env("HX_BOTH", "from-env")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let live: BTreeMap<String, Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(live, load("expected.json"));
}

/// Writes `value` so that python-dotenv (and so we) read it back unchanged: double quotes
/// with `\\` and `\"` escaped (what a careful writer of `.env` does).
fn quoted(value: &str) -> String {
    format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
}

proptest! {
    /// Any text parses without panicking, and every reported line exists.
    #[test]
    fn any_text_parses(text in "[A-Z=#'\" \\\\$\\{\\}:\\-\\t\\r\\nx]{0,80}") {
        let d = parse_dotenv(&text, &|_| None);
        let lines = text.replace("\r\n", "\n").replace('\r', "\n").matches('\n').count() + 1;
        for w in &d.warnings {
            prop_assert!(w.line >= 1 && w.line <= lines, "{:?} of {} lines", w, lines);
        }
    }

    /// A double-quoted value without `${` round-trips whatever it holds (newlines, quotes,
    /// backslashes, `#`), and the statements around it are unaffected.
    #[test]
    fn quoted_values_round_trip(value in "[a-z \\t\\n'\"\\\\#=]{0,30}", key in "[A-Z_][A-Z0-9_]{0,8}") {
        prop_assume!(key != "BEFORE" && key != "AFTER");
        let text = format!("BEFORE=1\n{key}={}\nAFTER=2\n", quoted(&value));
        let d = parse_dotenv(&text, &|_| None);
        prop_assert!(d.warnings.is_empty(), "{:?}", d.warnings);
        let map = d.to_map();
        prop_assert_eq!(map.get(&key), Some(&value));
        prop_assert_eq!(map.get("BEFORE").map(String::as_str), Some("1"));
        prop_assert_eq!(map.get("AFTER").map(String::as_str), Some("2"));
    }
}
