//! Runtime resolution order and messages (ARCHITECTURE §5).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use hermes_llm::runtime::{CanonicalProvider, canonical_provider};
use hermes_llm::{ApiMode, ResolveError, ResolveInputs, build_client, resolve};

fn env(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn flags_beat_config_and_env() {
    let mut inputs = ResolveInputs {
        provider: Some("or".into()),
        model: Some("flag-model".into()),
        env: env(&[
            ("OPENROUTER_API_KEY", "sk-or-v1-abcdefghijklmnop1234"),
            ("OPENAI_API_KEY", "sk-openai-zzzzzzzzzzzz9999"),
        ]),
        ..ResolveInputs::default()
    };
    inputs.config.provider = Some("openai".into());
    inputs.config.default = Some("config-model".into());
    let rt = resolve(&inputs).unwrap();
    assert_eq!(rt.provider, "openrouter");
    assert_eq!(rt.base_url, "https://openrouter.ai/api/v1");
    assert_eq!(rt.model, "flag-model");
    assert_eq!(rt.api_mode, ApiMode::ChatCompletions);
    assert_eq!(rt.api_key.as_deref(), Some("sk-or-v1-abcdefghijklmnop1234"));
    let trace = rt.trace.join("\n");
    assert!(trace.contains("command-line flag"), "{trace}");
    assert!(
        !trace.contains("abcdefghijklmnop"),
        "key leaked in trace: {trace}"
    );
    let debug = format!("{rt:?}");
    assert!(
        !debug.contains("abcdefghijklmnop"),
        "key leaked in Debug: {debug}"
    );
    assert!(debug.contains("sk-or-...1234"));
}

#[test]
fn config_section_then_env_vars_in_order() {
    let mut inputs = ResolveInputs {
        env: env(&[
            ("OPENAI_API_KEY", "sk-openai-aaaaaaaaaaaa1111"),
            ("DEEPSEEK_API_KEY", "sk-ds-bbbbbbbbbbbbbb2222"),
        ]),
        ..ResolveInputs::default()
    };
    let rt = resolve(&inputs).unwrap();
    assert_eq!(
        (rt.provider.as_str(), rt.base_url.as_str()),
        ("openai-api", "https://api.openai.com/v1")
    );
    inputs.env.insert(
        "OPENROUTER_API_KEY".into(),
        "sk-or-v1-cccccccccccccc3333".into(),
    );
    assert_eq!(resolve(&inputs).unwrap().provider, "openrouter");
    inputs.config.provider = Some("deepseek".into());
    inputs.config.context_length = Some(64000);
    let rt = resolve(&inputs).unwrap();
    assert_eq!(rt.provider, "deepseek");
    assert_eq!(rt.api_key.as_deref(), Some("sk-ds-bbbbbbbbbbbbbb2222"));
    assert_eq!(rt.context_window, Some(64000));
}

#[test]
fn local_server_aliases_and_custom_base_url() {
    for (alias, url) in [
        ("llamacpp", "http://127.0.0.1:8080/v1"),
        ("ollama", "http://127.0.0.1:11434/v1"),
        ("vllm", "http://127.0.0.1:8000/v1"),
        ("lmstudio", "http://127.0.0.1:1234/v1"),
    ] {
        let inputs = ResolveInputs {
            provider: Some(alias.into()),
            ..ResolveInputs::default()
        };
        let rt = resolve(&inputs).unwrap();
        assert_eq!(
            (
                rt.provider.as_str(),
                rt.base_url.as_str(),
                rt.api_key.clone()
            ),
            ("custom", url, None),
            "{alias}"
        );
    }
    let mut inputs = ResolveInputs::default();
    inputs.config.base_url = Some("http://10.0.0.5:9000/v1".into());
    inputs.config.default = Some("qwen".into());
    let rt = resolve(&inputs).unwrap();
    assert_eq!(
        (rt.provider.as_str(), rt.model.as_str()),
        ("custom", "qwen")
    );
    assert_eq!(
        resolve(&ResolveInputs {
            provider: Some("custom".into()),
            ..ResolveInputs::default()
        }),
        Err(ResolveError::MissingBaseUrl)
    );
    assert_eq!(
        canonical_provider("OR"),
        Some(CanonicalProvider::Hosted("openrouter"))
    );
}

#[test]
fn local_model_then_nothing_configured() {
    let mut inputs = ResolveInputs {
        local_model_available: Some(PathBuf::from("models/SmolLM2-135M-Instruct.Q4_1.gguf")),
        ..ResolveInputs::default()
    };
    let rt = resolve(&inputs).unwrap();
    assert_eq!(
        (rt.provider.as_str(), rt.api_mode),
        ("local", ApiMode::Local)
    );
    assert!(rt.model.ends_with(".gguf"));
    assert!(
        build_client(&rt).is_err(),
        "local client is built by the local module"
    );
    inputs.local_model_available = None;
    let err = resolve(&inputs).unwrap_err();
    assert_eq!(err, ResolveError::NothingConfigured);
    let msg = err.to_string();
    for needle in [
        "hermes model pull",
        "OPENROUTER_API_KEY",
        "config.yaml",
        "base_url:",
    ] {
        assert!(msg.contains(needle), "missing {needle:?} in: {msg}");
    }
}

#[test]
fn errors_for_unknown_provider_and_missing_key() {
    let inputs = ResolveInputs {
        provider: Some("nope".into()),
        ..ResolveInputs::default()
    };
    assert!(matches!(resolve(&inputs), Err(ResolveError::UnknownProvider(p)) if p == "nope"));
    let inputs = ResolveInputs {
        provider: Some("openai".into()),
        ..ResolveInputs::default()
    };
    let err = resolve(&inputs).unwrap_err();
    assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
}

#[tokio::test]
async fn built_client_talks_to_the_resolved_endpoint() {
    let mock = hermes_testkit::MockProvider::start().await;
    mock.push(hermes_testkit::MockResponse::text("Hello from the mock."));
    let inputs = ResolveInputs {
        base_url: Some(mock.base_url()),
        model: Some("m1".into()),
        ..ResolveInputs::default()
    };
    let rt = resolve(&inputs).unwrap();
    let client = build_client(&rt).unwrap();
    assert_eq!((client.provider(), client.model()), ("custom", "m1"));
    let req = hermes_llm::ChatRequest {
        model: "m1".into(),
        system: "sys".into(),
        messages: vec![hermes_protocol::Message::user("hi")],
        tools: vec![],
        tool_choice: hermes_llm::ToolChoice::Auto,
        max_tokens: Some(64),
        temperature: Some(0.0),
        cancel: Default::default(),
    };
    let mut stream = client.stream(&req).await.unwrap();
    use futures::StreamExt;
    let mut done = None;
    while let Some(ev) = stream.next().await {
        if let hermes_llm::StreamEvent::Completed(m) = ev.unwrap() {
            done = Some(m);
        }
    }
    let m = done.unwrap();
    assert_eq!(m.text, "Hello from the mock.");
    let sent = &mock.requests()[0];
    assert_eq!(sent["model"], "m1");
    assert_eq!(sent["max_tokens"], 64);
    assert_eq!(sent["messages"][0]["content"], "sys");
}

/// A home set up for a custom server, then `--provider openrouter` (the switching pass of
/// issue 17): the OpenRouter key goes to OpenRouter, never to the custom server's address,
/// and the custom server's key and model stay with it.
#[test]
fn a_provider_flag_never_takes_another_providers_base_url_or_key() {
    for configured in [Some("custom"), None] {
        let mut inputs = ResolveInputs {
            provider: Some("openrouter".into()),
            env: env(&[("OPENROUTER_API_KEY", "sk-or-v1-flagflagflag0001")]),
            ..ResolveInputs::default()
        };
        inputs.config.provider = configured.map(str::to_string);
        inputs.config.base_url = Some("http://127.0.0.1:9/v1".into());
        inputs.config.api_key = Some("sk-custom-server-key-0002".into());
        inputs.config.default = Some("my-local-model".into());
        let rt = resolve(&inputs).unwrap();
        assert_eq!(rt.provider, "openrouter");
        assert_eq!(
            rt.base_url, "https://openrouter.ai/api/v1",
            "{configured:?}"
        );
        assert_eq!(rt.api_key.as_deref(), Some("sk-or-v1-flagflagflag0001"));
        assert_ne!(rt.model, "my-local-model");
        assert!(
            rt.trace.join("\n").contains("another provider"),
            "{:?}",
            rt.trace
        );
    }
    // The same provider by another name keeps the section.
    let mut inputs = ResolveInputs {
        provider: Some("or".into()),
        ..ResolveInputs::default()
    };
    inputs.config.provider = Some("openrouter".into());
    inputs.config.base_url = Some("https://proxy.example/v1".into());
    inputs.config.api_key = Some("sk-or-v1-configconfig0003".into());
    let rt = resolve(&inputs).unwrap();
    assert_eq!(rt.base_url, "https://proxy.example/v1");
    assert_eq!(rt.api_key.as_deref(), Some("sk-or-v1-configconfig0003"));
}

/// Python Hermes 0.19.0 calls the direct OpenAI API `openai-api` (and refuses a bare
/// `openai`): hermes resolves both names to that id, which is what it writes.
#[test]
fn openai_is_python_hermes_openai_api() {
    for name in ["openai", "openai-api", "OpenAI-API"] {
        let inputs = ResolveInputs {
            provider: Some(name.into()),
            env: env(&[("OPENAI_API_KEY", "sk-openai-nnnnnnnnnnnn0004")]),
            ..ResolveInputs::default()
        };
        let rt = resolve(&inputs).unwrap();
        assert_eq!(rt.provider, "openai-api", "{name}");
        assert_eq!(rt.base_url, "https://api.openai.com/v1");
    }
}

/// A key kept only in auth.json's credential pool (what Python Hermes' `hermes auth add`
/// does) is used when config.yaml and the environment have none (the switching pass of
/// issue 17), for a hosted provider and for a named custom one.
#[test]
fn a_pooled_key_alone_is_used() {
    let mut inputs = ResolveInputs {
        provider: Some("openrouter".into()),
        pool_keys: [
            (
                "openrouter".to_string(),
                "sk-or-v1-poolonly00001111".to_string(),
            ),
            (
                "custom:mocky".to_string(),
                "sk-mocky-pool-key-2222".to_string(),
            ),
        ]
        .into_iter()
        .collect(),
        ..ResolveInputs::default()
    };
    let rt = resolve(&inputs).unwrap();
    assert_eq!(rt.api_key.as_deref(), Some("sk-or-v1-poolonly00001111"));
    assert!(
        rt.trace.join("\n").contains("credential pool"),
        "{:?}",
        rt.trace
    );
    // The environment still wins over the pool.
    inputs
        .env
        .insert("OPENROUTER_API_KEY".into(), "sk-or-v1-fromenv000033".into());
    assert_eq!(
        resolve(&inputs).unwrap().api_key.as_deref(),
        Some("sk-or-v1-fromenv000033")
    );
    let file = hermes_protocol::config::Config::parse(
        "custom_providers:\n  - name: mocky\n    base_url: http://127.0.0.1:9/v1\n",
        std::path::Path::new("c.yaml"),
    )
    .unwrap()
    .config;
    let inputs = ResolveInputs {
        provider: Some("custom:mocky".into()),
        file: Some(file),
        pool_keys: inputs.pool_keys.clone(),
        ..ResolveInputs::default()
    };
    let rt = resolve(&inputs).unwrap();
    assert_eq!(rt.api_key.as_deref(), Some("sk-mocky-pool-key-2222"));
}
