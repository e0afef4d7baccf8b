//! Assembling a provider's credential pool from the runtime key, `model.api_keys`,
//! `auth.json` and the saved state (FEATURES §2).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use hermes_llm::credentials::{CredentialPool, PoolStrategy, save_state};
use hermes_llm::runtime::{ApiMode, Runtime};
use hermes_llm::{ClientOptions, build_client_with, credential_pool};
use hermes_protocol::config::Config;

fn runtime(key: Option<&str>) -> Runtime {
    Runtime {
        provider: "openrouter".to_string(),
        api_mode: ApiMode::ChatCompletions,
        base_url: "http://127.0.0.1:9/v1".to_string(),
        model: "m".to_string(),
        api_key: key.map(str::to_string),
        context_window: None,
        trace: Vec::new(),
    }
}

#[test]
fn pool_order_labels_dedupe_strategy_and_state() {
    let dir = tempfile::tempdir().unwrap();
    let auth = dir.path().join("auth.json");
    let state = dir.path().join("cache/credential_state.json");
    let mut stored = CredentialPool::new("openrouter", PoolStrategy::LeastUsed);
    stored.add("work", "sk-or-v1-work-000000000000");
    stored.add("dup", "sk-or-v1-config-11111111111");
    let mut other = CredentialPool::new("anthropic", PoolStrategy::FillFirst);
    other.add("x", "sk-ant-xxxxxxxxxxxxxxxxxxxx");
    CredentialPool::save(&auth, &[stored, other]).unwrap();

    let yaml = "model:\n  provider: openrouter\n  api_keys: [sk-or-v1-config-11111111111]\n  \
                credential_strategy: round_robin\n";
    let config = Config::parse(yaml, Path::new("config.yaml"))
        .unwrap()
        .config;
    let (opts, warnings) = ClientOptions::default().with_pool(
        &config.model.to_config(),
        Some(auth.clone()),
        Some(state.clone()),
    );
    assert!(warnings.is_empty());
    let rt = runtime(Some("sk-or-v1-primary-22222222222"));
    let mut pool = credential_pool(&rt, &opts).unwrap();
    let labels: Vec<&str> = pool.credentials.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, vec!["primary", "config-1", "work"]);
    assert_eq!(
        pool.strategy,
        PoolStrategy::RoundRobin,
        "config wins over auth.json"
    );

    // Saved state is applied by label.
    pool.credentials[0].cooldown_until = Some(u64::MAX);
    pool.credentials[0].cooldown_reason = Some("auth".into());
    save_state(&state, &pool).unwrap();
    let again = credential_pool(&rt, &opts).unwrap();
    assert_eq!(again.credentials[0].cooldown_until, Some(u64::MAX));
    assert!(again.credentials[1].cooldown_until.is_none());

    // Three keys → a pooled client with two spares; a single key → a plain client.
    assert_eq!(
        build_client_with(&rt, &opts).unwrap().spare_credentials(),
        2
    );
    let plain = ClientOptions::default();
    assert_eq!(
        build_client_with(&rt, &plain).unwrap().spare_credentials(),
        0
    );
}

#[test]
fn bad_inputs_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let auth = dir.path().join("auth.json");
    std::fs::write(&auth, "{not json").unwrap();
    let opts = ClientOptions {
        auth_file: Some(auth),
        ..ClientOptions::default()
    };
    let err = credential_pool(&runtime(Some("sk-x")), &opts).unwrap_err();
    assert!(err.message.contains("auth.json"), "{err}");

    let yaml = "model:\n  credential_strategy: sideways\n";
    let config = Config::parse(yaml, Path::new("config.yaml"))
        .unwrap()
        .config;
    let (opts, warnings) =
        ClientOptions::default().with_pool(&config.model.to_config(), None, None);
    assert_eq!(opts.strategy, None);
    assert!(warnings[0].contains("model.credential_strategy `sideways`"));
}

/// Python Hermes keeps a pool's strategy in `credential_pool_strategies:` by provider; hermes
/// uses it unless `model.credential_strategy` says otherwise, and names a bad entry.
#[test]
fn credential_pool_strategies_of_config_yaml_choose_the_strategy() {
    let yaml = "credential_pool_strategies:\n  openrouter: Round_Robin\n  anthropic: sideways\n  \
                nous: [not, a, name]\n";
    let config = Config::parse(yaml, Path::new("config.yaml"))
        .unwrap()
        .config;
    let (opts, warnings) = ClientOptions::from_config(&config);
    assert_eq!(
        opts.pool_strategies.get("openrouter"),
        Some(&PoolStrategy::RoundRobin)
    );
    assert_eq!(opts.pool_strategies.len(), 1, "{:?}", opts.pool_strategies);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("credential_pool_strategies.anthropic `sideways`"),
        "{warnings:?}"
    );
    let pool = credential_pool(&runtime(Some("sk-x")), &opts).unwrap();
    assert_eq!(pool.strategy, PoolStrategy::RoundRobin);
    let explicit = ClientOptions {
        strategy: Some(PoolStrategy::LeastUsed),
        ..opts
    };
    let pool = credential_pool(&runtime(Some("sk-x")), &explicit).unwrap();
    assert_eq!(pool.strategy, PoolStrategy::LeastUsed);
}

/// A key added by hermes carries the provider's inference URL, as Python Hermes writes it:
/// Python reads the URL of most providers from the pool entry, and without it could not use
/// the key (stop 31's switch pass: deepseek). Custom servers get none.
#[test]
fn added_keys_carry_the_provider_base_url_as_python_writes_them() {
    let dir = tempfile::tempdir().unwrap();
    let auth = dir.path().join("auth.json");
    hermes_llm::auth_file::update(&auth, |pools| {
        let mut ds = CredentialPool::new("deepseek", PoolStrategy::FillFirst);
        ds.add("rs-ds", "sk-deepseek-000000000000");
        let mut custom = CredentialPool::new("custom", PoolStrategy::FillFirst);
        custom.add("mine", "sk-custom-000000000000");
        pools.push(ds);
        pools.push(custom);
    })
    .unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&auth).unwrap()).unwrap();
    assert_eq!(
        doc["credential_pool"]["deepseek"][0]["base_url"],
        "https://api.deepseek.com/v1"
    );
    assert!(
        doc["credential_pool"]["custom"][0]
            .get("base_url")
            .is_none()
    );
    assert_eq!(
        hermes_llm::runtime::hosted_base_url("openrouter"),
        Some("https://openrouter.ai/api/v1")
    );
}
