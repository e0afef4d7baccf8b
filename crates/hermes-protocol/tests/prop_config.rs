//! Property tests of the config loader (issue 6 part 5; FEATURES §13): any YAML text gives
//! the settings or a parse error that names the file and a position inside it — never a
//! panic — and settings written back by `to_yaml` (what `hermes config show` starts from)
//! load to the same settings.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use hermes_protocol::config::{Config, ConfigError};
use proptest::prelude::*;

/// Keys of config.yaml (known, misspelled and unknown), at up to three levels.
fn key() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("model"),
        Just("provider"),
        Just("default"),
        Just("base_url"),
        Just("context_length"),
        Just("fallback_providers"),
        Just("toolsets"),
        Just("agent"),
        Just("max_turns"),
        Just("api_max_retries"),
        Just("disabled_toolsets"),
        Just("terminal"),
        Just("timeout"),
        Just("cwd"),
        Just("local"),
        Just("threads"),
        Just("compression"),
        Just("enabled"),
        Just("protect_last_n"),
        Just("memory"),
        Just("memory_char_limit"),
        Just("display"),
        Just("timezone"),
        Just("mcp_servers"),
        Just("cron"),
        Just("max_turn"),
        Just("unknown_key"),
    ]
}

/// Scalar values of every YAML flavour, valid and not.
fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        (0u32..200).prop_map(|i| i.to_string()),
        Just("true".to_string()),
        Just("no".to_string()),
        Just("~".to_string()),
        Just("null".to_string()),
        Just("1.5".to_string()),
        Just("-1".to_string()),
        Just("99999999999999999999999".to_string()),
        Just("[a, b]".to_string()),
        Just("[]".to_string()),
        Just("{provider: x, default: y}".to_string()),
        Just("{}".to_string()),
        Just("\"quoted: colon\"".to_string()),
        Just("'single'".to_string()),
        Just("[unclosed".to_string()),
        Just("{bad".to_string()),
        Just("&a anchored".to_string()),
        Just("*a".to_string()),
        Just("!!binary aGk=".to_string()),
        Just("|".to_string()),
        "[a-z/:._-]{0,16}",
        "\\PC{0,12}",
    ]
}

/// A YAML-looking document: nested `key: value` lines, list items, tabs and stray text.
fn config_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        4 => (0usize..3, key(), scalar()).prop_map(|(d, k, v)| format!("{}{k}: {v}", "  ".repeat(d))),
        2 => (0usize..3, key()).prop_map(|(d, k)| format!("{}{k}:", "  ".repeat(d))),
        1 => (0usize..3, scalar()).prop_map(|(d, v)| format!("{}- {v}", "  ".repeat(d))),
        1 => Just("\tmodel: tab".to_string()),
        1 => Just("# comment".to_string()),
        1 => Just("---".to_string()),
        1 => "\\PC{0,20}",
    ];
    proptest::collection::vec(line, 0..14).prop_map(|l| l.join("\n"))
}

const PATH: &str = "profiles/office/config.yaml";

/// Property cases: `n`, or 20 × `n` with `HERMES_LONG_TESTS=1` (README "Two commands").
fn cases(n: u32) -> u32 {
    match std::env::var("HERMES_LONG_TESTS") {
        Ok(v) if !v.is_empty() && v != "0" => n * 20,
        _ => n,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(512)))]

    #[test]
    fn any_text_loads_or_reports_where(text in config_text()) {
        match Config::parse(&text, Path::new(PATH)) {
            Ok(loaded) => {
                // What config show writes loads back to the same settings.
                let yaml = loaded.config.to_yaml();
                let again = Config::parse(&yaml, Path::new(PATH))
                    .map_err(|e| TestCaseError::fail(format!("to_yaml output does not load: {e}\n{yaml}")))?;
                prop_assert_eq!(again.config, loaded.config, "{}", yaml);
                for w in &loaded.warnings {
                    prop_assert!(!w.trim().is_empty());
                }
            }
            Err(e) => {
                let ConfigError::Parse { line, column, message, .. } = &e else {
                    return Err(TestCaseError::fail(format!("not a parse error: {e}")));
                };
                prop_assert!(!message.trim().is_empty());
                prop_assert!(e.to_string().contains(PATH), "{}", e);
                let lines = text.lines().count().max(1);
                prop_assert!(*line <= lines + 1, "line {} of {}: {}", line, lines, e);
                if *line > 0 {
                    prop_assert!(*column >= 1, "{}", e);
                }
            }
        }
    }
}
