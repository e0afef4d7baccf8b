//! `hermes auth {add,list,remove}` and the pooled keys in a real chat: keys are stored in
//! HERMES_HOME/auth.json, listed masked, and a rejected key rotates to the next one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/python.rs"]
mod python;

use common::{Env, stderr, stdout};
use hermes_testkit::MockResponse;

const KEY_ENV: &str = "sk-or-v1-envenvenvenvenvenvenv1";
const KEY_ADDED: &str = "sk-or-v1-addedaddedaddedadded2";

#[tokio::test]
async fn add_list_remove_keep_keys_masked() {
    let env = Env::new().await;
    let out = env
        .run_ok(&["auth", "add", "or", "--key", KEY_ADDED, "--label", "work"])
        .await;
    let text = stdout(&out);
    assert!(text.contains("openrouter: added `work`"), "{text}");
    assert!(!text.contains(KEY_ADDED));
    let file = env.home.home().auth_file();
    assert!(std::fs::read_to_string(&file).unwrap().contains(KEY_ADDED));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // A second key gets the next default label; the same key again is not duplicated.
    env.run_ok(&["auth", "add", "openrouter", "--key", KEY_ENV])
        .await;
    let out = env
        .run_ok(&["auth", "add", "openrouter", "--key", KEY_ENV])
        .await;
    assert!(stdout(&out).contains("already pooled as `key-1`"));

    let out = env.run_ok(&["auth", "list"]).await;
    let text = stdout(&out);
    assert!(text.contains("openrouter (strategy fill_first)"), "{text}");
    assert!(text.contains("work") && text.contains("key-1"));
    assert!(text.contains("sk-or-...ded2"), "{text}");
    assert!(!text.contains(KEY_ADDED) && !text.contains(KEY_ENV));

    let out = env.run(&["auth", "remove", "openrouter", "nope"]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no key labelled `nope`"));
    env.run_ok(&["auth", "remove", "openrouter", "work"]).await;
    let text = stdout(&env.run_ok(&["auth", "list"]).await);
    assert!(!text.contains("work") && text.contains("key-1"));

    let out = env.run(&["auth", "add", "local", "--key", "x"]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not a provider that takes API keys"));
}

#[tokio::test]
async fn a_rejected_env_key_rotates_to_the_added_key_in_a_chat() {
    let env = Env::new().await;
    let config = format!(
        "model:\n  provider: openrouter\n  base_url: {}\n  default: mock-model\n",
        env.mock.base_url()
    );
    std::fs::write(env.home.home().config_file(), config).unwrap();
    env.run_ok(&["auth", "add", "openrouter", "--key", KEY_ADDED])
        .await;

    env.mock.push(MockResponse::from_bytes(
        401,
        vec![("content-type".into(), "application/json".into())],
        r#"{"error":{"message":"User not found.","code":401}}"#,
    ));
    env.mock
        .push(MockResponse::text("answered with the second key"));
    let out = env
        .run_env(
            &["chat", "-q", "hi"],
            &[("OPENROUTER_API_KEY", KEY_ENV.to_string())],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("answered with the second key"));
    assert!(!stderr(&out).contains(KEY_ENV));
    let auth: Vec<String> = env
        .mock
        .captured()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .filter_map(|r| r.header("authorization").map(str::to_string))
        .collect();
    assert_eq!(
        auth,
        vec![format!("Bearer {KEY_ENV}"), format!("Bearer {KEY_ADDED}")]
    );

    // The env key shows up by label with its cooldown, never in full.
    let text = stdout(&env.run_ok(&["auth", "list", "openrouter"]).await);
    assert!(text.contains("primary"), "{text}");
    assert!(
        text.contains("cooling down") && text.contains("(auth)"),
        "{text}"
    );
    assert!(!text.contains(KEY_ENV));
}

#[tokio::test]
async fn config_show_masks_pooled_config_keys() {
    let env = Env::with_config("").await;
    let config = format!(
        "model:\n  provider: openrouter\n  base_url: {}\n  api_keys: [{KEY_ADDED}]\n  \
         credential_strategy: round_robin\n",
        env.mock.base_url()
    );
    std::fs::write(env.home.home().config_file(), config).unwrap();
    let out = env.run_ok(&["config", "show"]).await;
    let text = stdout(&out);
    assert!(!text.contains(KEY_ADDED), "{text}");
    assert!(text.contains("sk-or-...ded2"), "{text}");
    assert!(!stderr(&out).contains("unknown key"), "{}", stderr(&out));
}

/// `--strategy` goes where Python Hermes keeps a pool's strategy (config.yaml's
/// `credential_pool_strategies`), and a strategy Python wrote there is the one hermes uses
/// and lists; Python reads hermes' entry back (switch pass of stop 31, F7).
#[tokio::test]
async fn the_pool_strategy_lives_in_config_yaml_as_python_keeps_it() {
    let env = Env::new().await;
    let config = env.home.home().config_file();
    std::fs::write(&config, "# mine\nmodel: openrouter/some-model\n").unwrap();
    let out = env
        .run_ok(&[
            "auth",
            "add",
            "openrouter",
            "--key",
            KEY_ADDED,
            "--strategy",
            "round_robin",
        ])
        .await;
    assert!(
        stdout(&out).contains("strategy round_robin"),
        "{}",
        stdout(&out)
    );
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.starts_with("# mine\nmodel: openrouter/some-model\n"),
        "{text}"
    );
    let parsed: serde_json::Value = yaml_serde::from_str(&text).unwrap();
    assert_eq!(
        parsed["credential_pool_strategies"]["openrouter"], "round_robin",
        "{text}"
    );
    let list = stdout(&env.run_ok(&["auth", "list"]).await);
    assert!(list.contains("openrouter (strategy round_robin)"), "{list}");

    // Python's own spelling of another one: hermes lists it; a bad one is named.
    std::fs::write(
        &config,
        "credential_pool_strategies:\n  openrouter: Random\n  anthropic: sideways\n",
    )
    .unwrap();
    let out = env.run_ok(&["auth", "list"]).await;
    assert!(
        stdout(&out).contains("openrouter (strategy random)"),
        "{}",
        stdout(&out)
    );

    if let Some(venv) = python::python_venv("the_pool_strategy_lives_in_config_yaml") {
        std::fs::write(&config, "model: openrouter/some-model\n").unwrap();
        env.run_ok(&[
            "auth",
            "add",
            "openrouter",
            "--key",
            KEY_ENV,
            "--strategy",
            "least_used",
        ])
        .await;
        let py = std::process::Command::new(venv.join("bin/python"))
            .env("HERMES_HOME", env.home.path())
            .args([
                "-c",
                "from agent.credential_pool import get_pool_strategy; \
                 print(get_pool_strategy('openrouter'))",
            ])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&py.stdout).trim(),
            "least_used",
            "{}",
            String::from_utf8_lossy(&py.stderr)
        );
    }
}

/// Keys of a named custom provider go to its `custom:<name>` pool, as Python Hermes keeps
/// them, and a chat on that provider with no other key sends the pooled one (the switching
/// pass of issue 17).
#[tokio::test]
async fn a_named_custom_providers_pooled_key_is_added_and_used() {
    let env = Env::new().await;
    let config = format!(
        "model:\n  provider: custom:mocky\n  default: mock-model\ncustom_providers:\n  - name: mocky\n    base_url: {}\n",
        env.mock.base_url()
    );
    std::fs::write(env.home.home().config_file(), config).unwrap();
    let out = env
        .run_ok(&[
            "auth",
            "add",
            "custom:mocky",
            "--key",
            "sk-mocky-pooled-000111",
        ])
        .await;
    assert!(stdout(&out).contains("custom:mocky"), "{}", stdout(&out));
    env.mock
        .push(hermes_testkit::MockResponse::text("pooled ok"));
    let chat = env.run_ok(&["chat", "-q", "hi"]).await;
    assert_eq!(stdout(&chat).trim(), "pooled ok");
    let sent = env.mock.captured();
    let auth = sent
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .flat_map(|r| r.headers.iter())
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    assert_eq!(auth, "Bearer sk-mocky-pooled-000111");
}
