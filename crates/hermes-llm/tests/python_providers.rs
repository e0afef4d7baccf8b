//! Providers of Python Hermes 0.19.0 (issue 17 item 5): the API-key providers of its
//! registry resolve with its base URLs, key variables and wire protocols; the ones hermes
//! cannot serve fail with a message saying what to use instead; `custom:<name>` resolves
//! from `custom_providers:` / `providers:`. `tests/fixtures/python_providers.json` is the real
//! registry (`dump_python_providers.py`); with `HERMES_PYTHON_HERMES` set it is dumped again
//! and must match.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hermes_llm::python_providers::{PYTHON_PROVIDERS, unsupported_provider};
use hermes_llm::runtime::{ApiMode, ResolveError, ResolveInputs, resolve};
use hermes_protocol::config::{Config, ModelConfig};
use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn registry() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture().join("python_providers.json")).unwrap())
        .unwrap()
}

/// hermes' own providers, whose entries predate this table (their differences from
/// Python's are deliberate: model-based Responses detection for OpenAI, Gemini through its
/// OpenAI-compatible route, xAI on Chat Completions, LM Studio as a local server).
const OWN: &[&str] = &[
    "openai-api",
    "anthropic",
    "gemini",
    "deepseek",
    "xai",
    "lmstudio",
    "nous",
];

fn inputs(provider: &str, env: &[(&str, &str)]) -> ResolveInputs {
    ResolveInputs {
        provider: Some(provider.to_string()),
        model: Some("some-model".to_string()),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        ..ResolveInputs::default()
    }
}

#[test]
fn every_python_api_key_provider_resolves_as_python_registers_it() {
    let reg = registry();
    let providers = reg["providers"].as_object().unwrap();
    let mut covered = 0;
    for (id, p) in providers {
        let mode = p["api_mode"].as_str().unwrap();
        let api_key = p["auth_type"] == "api_key";
        let speakable = matches!(mode, "chat_completions" | "anthropic_messages");
        let url = p["base_url"].as_str().unwrap();
        if OWN.contains(&id.as_str()) {
            continue;
        }
        if !(api_key && speakable && !url.is_empty()) || id == "copilot" {
            let why = unsupported_provider(id)
                .unwrap_or_else(|| panic!("{id}: neither served nor explained"));
            let err = resolve(&inputs(id, &[])).unwrap_err();
            assert!(
                matches!(err, ResolveError::UnsupportedProvider { .. }),
                "{id}: {err}"
            );
            assert!(err.to_string().contains(why));
            assert!(err.to_string().contains("use"), "{err}");
            continue;
        }
        let vars: Vec<&str> = p["api_key_env_vars"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        // Without a key: the error names every variable Python reads, in its order.
        match resolve(&inputs(id, &[])).unwrap_err() {
            ResolveError::MissingApiKey { env_var, .. } => assert_eq!(env_var, vars.join(" or ")),
            other => panic!("{id}: {other}"),
        }
        // With the last variable set: Python's base URL and protocol.
        let last = vars.last().unwrap();
        let rt = resolve(&inputs(id, &[(last, "sk-test-key")])).unwrap();
        let canonical = PYTHON_PROVIDERS
            .iter()
            .find(|q| q.aliases.contains(&id.as_str()) || q.id == id)
            .unwrap();
        assert_eq!(rt.base_url, url, "{id}");
        assert_eq!(rt.provider, canonical.id);
        let want = if mode == "anthropic_messages" {
            ApiMode::AnthropicMessages
        } else {
            ApiMode::ChatCompletions
        };
        assert_eq!(rt.api_mode, want, "{id}");
        assert_eq!(rt.api_key.as_deref(), Some("sk-test-key"));
        // Python's base-URL variable overrides the URL.
        let var = p["base_url_env_var"].as_str().unwrap();
        if !var.is_empty() {
            let rt = resolve(&inputs(id, &[(last, "k"), (var, "http://127.0.0.1:1/v1")])).unwrap();
            assert_eq!(rt.base_url, "http://127.0.0.1:1/v1", "{id} {var}");
        }
        covered += 1;
    }
    assert!(covered >= 25, "{covered}");
    // Python's aliases of those providers lead to the same provider.
    for (alias, target) in reg["aliases"].as_object().unwrap() {
        let target = target.as_str().unwrap();
        if let Some(q) = PYTHON_PROVIDERS.iter().find(|q| q.id == target) {
            let rt = resolve(&inputs(alias, &[(q.env_vars[0], "k")])).unwrap();
            assert_eq!(rt.provider, target, "alias {alias}");
        } else if unsupported_provider(target).is_some() {
            assert!(
                unsupported_provider(alias).is_some(),
                "alias {alias} of {target}"
            );
        }
    }
}

#[test]
fn a_kimi_code_key_goes_to_the_kimi_code_endpoint() {
    let rt = resolve(&inputs("kimi", &[("KIMI_API_KEY", "sk-kimi-abc")])).unwrap();
    assert_eq!(rt.base_url, "https://api.kimi.com/coding");
    assert_eq!(rt.api_mode, ApiMode::AnthropicMessages);
    let err = resolve(&ResolveInputs {
        model: None,
        ..inputs("zai", &[("ZAI_API_KEY", "k")])
    })
    .unwrap_err();
    assert!(matches!(err, ResolveError::MissingModel(_)), "{err}");
}

#[test]
fn custom_name_resolves_from_custom_providers() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../hermes-protocol/tests/fixtures/python_config/python_home_config.yaml"),
    )
    .unwrap();
    let config = Config::parse(&text, Path::new("config.yaml"))
        .unwrap()
        .config;
    let section: ModelConfig = config.model.to_config();
    let mut env = BTreeMap::new();
    env.insert("WORK_PROXY_KEY".to_string(), "sk-proxy-key".to_string());
    let rt = resolve(&ResolveInputs {
        config: section.clone(),
        env: env.clone(),
        file: Some(config.clone()),
        ..ResolveInputs::default()
    })
    .unwrap();
    assert_eq!(rt.provider, "custom");
    assert_eq!(rt.base_url, "http://127.0.0.1:9/v1");
    assert_eq!(rt.model, "qwen3-coder");
    assert_eq!(rt.api_key.as_deref(), Some("sk-proxy-key"));
    assert_eq!(rt.api_mode, ApiMode::ChatCompletions);
    assert_eq!(rt.context_window, Some(65_536));
    let err = resolve(&ResolveInputs {
        provider: Some("custom:nowhere".to_string()),
        config: section,
        env,
        file: Some(config),
        ..ResolveInputs::default()
    })
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("custom:nowhere") && msg.contains("custom:work-proxy"),
        "{msg}"
    );
}

#[test]
fn the_real_python_registry_still_matches_the_fixture() {
    let Some(venv) = std::env::var_os("HERMES_PYTHON_HERMES") else {
        eprintln!(
            "skipped: HERMES_PYTHON_HERMES is not set (scripts/python-hermes.sh makes the venv)"
        );
        return;
    };
    let home = std::env::temp_dir().join(format!("hermes-pyprov-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let out = std::process::Command::new(Path::new(&venv).join("bin/python"))
        .arg(fixture().join("dump_python_providers.py"))
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
    let live: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(live, registry());
    std::fs::remove_dir_all(&home).unwrap();
}
