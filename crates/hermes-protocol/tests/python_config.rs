//! config.yaml compatibility with Python Hermes 0.19.0 (issue 17 item 5).
//!
//! `tests/fixtures/python_config/default_config.json` is the real `DEFAULT_CONFIG` dumped by
//! `dump_default_config.py`; `python_home_config.yaml` was written by Python Hermes' own
//! `save_config` (`make_python_home_config.py`). With `HERMES_PYTHON_HERMES` set the dump is
//! made again from the installed Python program and must equal the fixture.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use hermes_protocol::config::Config;
use hermes_protocol::config::python_keys::{KeyStatus, classify};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/python_config")
}

fn default_config() -> serde_json::Value {
    let text = std::fs::read_to_string(fixtures().join("default_config.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Dotted paths of every leaf (scalar, list, empty mapping) of a JSON tree.
fn leaves(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    match v.as_object() {
        Some(map) if !map.is_empty() => {
            for (k, child) in map {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                leaves(child, &p, out);
            }
        }
        _ => out.push(path.to_string()),
    }
}

#[test]
fn every_key_of_pythons_default_config_is_classified() {
    let mut all = Vec::new();
    leaves(&default_config(), "", &mut all);
    assert!(all.len() > 500, "{} leaves", all.len());
    let unclassified: Vec<&String> = all.iter().filter(|p| classify(p).is_none()).collect();
    assert!(
        unclassified.is_empty(),
        "Python keys missing from hermes_protocol::config::python_keys::PYTHON_KEYS: {unclassified:?}"
    );
    // Every ignored key says what hermes does instead.
    for p in &all {
        if let Some((_, KeyStatus::Ignored(reason))) = classify(p) {
            assert!(reason.len() > 15, "{p}: {reason}");
        }
    }
}

#[test]
fn pythons_full_default_config_loads_without_unknown_keys() {
    let yaml = yaml_serde::to_string(&default_config()).unwrap();
    let loaded = Config::parse(&yaml, Path::new("config.yaml")).unwrap();
    // A key the table calls honoured is typed by `Config` (else serde_ignored would report
    // it here); an ignored one is reported by name instead of as unknown.
    assert!(loaded.warnings.is_empty(), "{:#?}", loaded.warnings);
    let lines = loaded.ignored_python.lines();
    assert!(lines.iter().any(|l| l.contains("`tts.")), "{lines:#?}");
    // The defaults' own values of honoured keys come through.
    assert_eq!(loaded.config.agent.max_turns, 90);
    assert_eq!(loaded.config.compression.threshold, Some(0.5));
    assert_eq!(
        loaded
            .config
            .config_version
            .as_ref()
            .and_then(|v| v.as_u64()),
        Some(33)
    );
    // `verify_on_stop: auto` is Python's default and hermes never nudges: reported.
    assert!(lines.iter().any(|l| l.contains("`agent.verify_on_stop`")));
}

#[test]
fn a_config_written_by_python_hermes_is_read() {
    let text = std::fs::read_to_string(fixtures().join("python_home_config.yaml")).unwrap();
    let loaded = Config::parse(&text, Path::new("config.yaml")).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let c = &loaded.config;
    let m = c.model.to_config();
    assert_eq!(m.provider.as_deref(), Some("custom:work-proxy"));
    assert_eq!(m.context_length, Some(65_536));
    assert_eq!(c.compression.threshold_ratio(), Ok(Some(0.7)));
    assert_eq!(c.agent.max_turns, 40);
    let proxy = c.find_custom_provider("custom:work-proxy").unwrap();
    assert_eq!(proxy.base_url, "http://127.0.0.1:9/v1");
    assert_eq!(proxy.key_env.as_deref(), Some("WORK_PROXY_KEY"));
    assert_eq!(
        c.skills.disabled_for(None).into_iter().collect::<Vec<_>>(),
        vec!["noisy-skill"]
    );
    assert_eq!(
        c.skills
            .disabled_for(Some("telegram"))
            .into_iter()
            .collect::<Vec<_>>(),
        vec!["cli-only", "noisy-skill"]
    );
    // Ignored keys are named, one line per entry, with the summary counting them.
    let lines = loaded.ignored_python.lines();
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("`agent.verify_on_stop`: hermes never"))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("`browser.allow_private_urls`: hermes has no browser"))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("`tts.provider`: hermes has no voice"))
    );
    let summary = loaded.ignored_python.summary().unwrap();
    assert!(summary.starts_with("3 Python Hermes settings"), "{summary}");
}

#[test]
fn skills_disabled_accepts_pythons_shapes() {
    let parse = |t: &str| Config::parse(t, Path::new("c.yaml")).unwrap().config.skills;
    let s = parse("skills:\n  disabled: one-skill\n");
    assert_eq!(s.disabled_for(Some("cli")).len(), 1);
    let s = parse("skills:\n  disabled:\n  platform_disabled:\n    cli: [' a ', '']\n");
    assert_eq!(
        s.disabled_for(Some("cli")).into_iter().collect::<Vec<_>>(),
        vec!["a"]
    );
    assert!(s.disabled_for(Some("telegram")).is_empty());
}

#[test]
fn compression_threshold_outside_zero_to_one_is_refused_by_name() {
    let c = Config::parse("compression:\n  threshold: 85\n", Path::new("c.yaml")).unwrap();
    let err = c.config.compression.threshold_ratio().unwrap_err();
    assert!(err.contains("compression.threshold"), "{err}");
}

#[test]
fn the_real_python_default_config_still_matches_the_fixture() {
    let Some(venv) = std::env::var_os("HERMES_PYTHON_HERMES") else {
        eprintln!(
            "skipped: HERMES_PYTHON_HERMES is not set (scripts/python-hermes.sh makes the venv)"
        );
        return;
    };
    let home = tempfile_dir();
    let out = std::process::Command::new(Path::new(&venv).join("bin/python"))
        .arg(fixtures().join("dump_default_config.py"))
        .env_clear()
        .env("HOME", &home)
        .env("HERMES_HOME", &home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let live: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(live, default_config(), "regenerate default_config.json");
    std::fs::remove_dir_all(&home).unwrap();
}

fn tempfile_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("hermes-pycfg-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}
