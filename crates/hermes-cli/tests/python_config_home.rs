//! A `config.yaml` written by Python Hermes 0.19.0's own writer (issue 17 item 5; fixture
//! `crates/hermes-protocol/tests/fixtures/python_config/python_home_config.yaml`, made by
//! `make_python_home_config.py` there): `hermes setup --non-interactive` and
//! `hermes model set` change only what they set; every other key, `_config_version` and every
//! comment survive; the Python settings hermes ignores are summed up in one line at start and
//! listed by `hermes config check`; `.env` statements python-dotenv would skip are named.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{hermes, stderr, stdout};
use hermes_protocol::config::Config;
use hermes_testkit::TempHome;

fn python_config() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../hermes-protocol/tests/fixtures/python_config/python_home_config.yaml"),
    )
    .unwrap()
}

fn yaml(text: &str) -> serde_json::Value {
    yaml_serde::from_str(text).unwrap()
}

/// Comment lines of `text`, in order.
fn comments(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.trim_start().starts_with('#'))
        .collect()
}

/// `after` equals `before` except at the `model` keys in `changed`.
fn only_model_keys_changed(
    before: &serde_json::Value,
    after: &serde_json::Value,
    changed: &[&str],
) {
    let mut b = before.clone();
    let mut a = after.clone();
    for k in changed {
        b["model"].as_object_mut().unwrap().remove(*k);
        a["model"].as_object_mut().unwrap().remove(*k);
    }
    assert_eq!(a, b);
}

#[tokio::test]
async fn setup_non_interactive_keeps_every_other_key_and_comment() {
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let original = python_config();
    std::fs::write(home.home().config_file(), &original).unwrap();
    let out = hermes(
        home.path(),
        cwd.path(),
        &[
            "setup",
            "--non-interactive",
            "--provider",
            "openrouter",
            "--api-key",
            "sk-or-v1-test-key",
            "-m",
            "anthropic/claude-sonnet-4",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(home.home().config_file()).unwrap();
    let after = yaml(&text);
    only_model_keys_changed(&yaml(&original), &after, &["provider", "default"]);
    assert_eq!(after["model"]["context_length"], 65_536);
    assert_eq!(after["model"]["provider"], "openrouter");
    assert_eq!(after["_config_version"], 33);
    assert_eq!(comments(&text), comments(&original));
    assert!(
        !home
            .home()
            .config_file()
            .with_extension("yaml.bak")
            .exists()
    );
}

#[tokio::test]
async fn model_set_keeps_every_other_key_and_comment() {
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let original = python_config();
    std::fs::write(home.home().config_file(), &original).unwrap();
    std::fs::write(home.home().env_file(), "WORK_PROXY_KEY=sk-proxy\n").unwrap();
    let out = hermes(home.path(), cwd.path(), &["model", "set", "qwen3-max"]).await;
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let text = std::fs::read_to_string(home.home().config_file()).unwrap();
    let after = yaml(&text);
    only_model_keys_changed(&yaml(&original), &after, &["default"]);
    assert_eq!(after["model"]["default"], "qwen3-max");
    assert_eq!(comments(&text), comments(&original));
    let loaded = Config::parse(&text, Path::new("config.yaml")).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[tokio::test]
async fn ignored_python_settings_are_summed_up_and_listed_by_name() {
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(home.home().config_file(), python_config()).unwrap();
    std::fs::write(
        home.home().env_file(),
        "WORK_PROXY_KEY=sk-proxy\nBROKEN=\"sk-secret-value\" junk\n",
    )
    .unwrap();
    let out = hermes(home.path(), cwd.path(), &["model", "show"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let notes: Vec<&str> = err.lines().filter(|l| l.starts_with("note: ")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(notes[0].contains("3 Python Hermes settings"), "{err}");
    assert!(
        err.contains(".env: line 2: cannot parse the statement for `BROKEN`"),
        "{err}"
    );
    assert!(!err.contains("sk-secret-value"), "{err}");
    // The named custom provider of the Python config is what resolves.
    let shown = stdout(&out);
    assert!(shown.contains("base_url: http://127.0.0.1:9/v1"), "{shown}");
    assert!(shown.contains("model:    qwen3-coder"), "{shown}");

    let out = hermes(home.path(), cwd.path(), &["config", "check"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&out);
    for key in [
        "agent.verify_on_stop",
        "browser.allow_private_urls",
        "tts.provider",
    ] {
        assert!(
            shown
                .lines()
                .any(|l| l.starts_with("not used by hermes: ") && l.contains(key)),
            "{key}: {shown}"
        );
    }
}

/// Issue 20: `tools disable NAME --platform P` on Python's commented config adds only the
/// `platform_toolsets.<platform>` entry (every other byte stays), and `tools list` shows the
/// platform's list, `--platform P` what that platform's chats get.
#[tokio::test]
async fn tools_platform_toolsets_change_only_their_entry_and_show_in_the_list() {
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let original = python_config();
    std::fs::write(home.home().config_file(), &original).unwrap();
    std::fs::write(home.home().env_file(), "WORK_PROXY_KEY=sk-proxy\n").unwrap();
    let run = |args: &'static [&'static str]| hermes(home.path(), cwd.path(), args);
    let out = run(&["tools", "disable", "memory", "--platform", "telegram"]).await;
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let text = std::fs::read_to_string(home.home().config_file()).unwrap();
    // The file is the original plus one `platform_toolsets:` block, nothing else moved.
    let mut kept = Vec::new();
    let mut block = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.starts_with("platform_toolsets:") {
            in_block = true;
        } else if in_block && !line.starts_with(' ') && !line.starts_with('-') {
            in_block = false;
        }
        if in_block {
            block.push(line);
        } else {
            kept.push(line);
        }
    }
    assert_eq!(
        kept.join("\n").trim_end(),
        original.trim_end(),
        "only the new entry differs:\n{text}"
    );
    assert!(block.len() >= 2, "{block:?}");
    let after = yaml(&text);
    let telegram: Vec<String> =
        serde_json::from_value(after["platform_toolsets"]["telegram"].clone()).unwrap();
    assert!(!telegram.contains(&"memory".to_string()), "{telegram:?}");

    let all = run(&["tools", "list"]).await;
    assert!(all.status.success(), "{}", stderr(&all));
    let all = stdout(&all);
    let row = all
        .lines()
        .find(|l| l.trim_start().starts_with("telegram "))
        .unwrap_or_else(|| panic!("no telegram row:\n{all}"));
    assert!(row.contains(&telegram.join(", ")), "{row}");

    let one = run(&["tools", "list", "--platform", "telegram"]).await;
    assert!(one.status.success(), "{}", stderr(&one));
    let one = stdout(&one);
    assert!(
        one.starts_with("Enabled toolsets (platform_toolsets.telegram): "),
        "{one}"
    );
    let memory_line = one
        .lines()
        .find(|l| l.contains(" memory ") && !l.contains("["))
        .unwrap_or_else(|| panic!("no memory tool:\n{one}"));
    assert!(
        memory_line.contains("off: toolset not enabled"),
        "{memory_line}"
    );
    // The terminal is unchanged.
    let cli = stdout(&run(&["tools", "list", "--platform", "cli"]).await);
    assert!(!cli.contains("platform_toolsets.telegram"), "{cli}");

    let bad = run(&["tools", "list", "--platform", "myspace"]).await;
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("unknown platform `myspace`"),
        "{}",
        stderr(&bad)
    );
    assert_eq!(
        std::fs::read_to_string(home.home().config_file()).unwrap(),
        text,
        "listing changes nothing"
    );
}

/// The declarative tools' toolset is hermes' own: `tools disable` never writes it into a
/// `platform_toolsets` list of the shared config.yaml (Python Hermes warns about names it does
/// not know), a list without it still gets the declarative tools, and `tools disable
/// declarative` turns them off through `agent.disabled_toolsets` instead.
#[tokio::test]
async fn the_declarative_toolset_stays_out_of_the_shared_toolset_lists() {
    let home = TempHome::new().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(home.home().config_file(), python_config()).unwrap();
    let tools = home.home().root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(
        tools.join("stock_checker.yaml"),
        "name: stock_checker\ndescription: Stock of a product.\nversion: \"1\"\n\
         input_schema:\n  type: object\n  properties:\n    sku: {type: string}\n  required: [sku]\n\
         endpoint:\n  url: https://api.example.com/v1/stock/{sku}\n",
    )
    .unwrap();
    let run = |args: &'static [&'static str]| hermes(home.path(), cwd.path(), args);
    let on = |listing: &str| {
        listing
            .lines()
            .find(|l| l.contains(" stock_checker "))
            .map(|l| !l.contains("off:"))
    };
    let before = stdout(&run(&["tools", "list", "--platform", "cli"]).await);
    assert_eq!(on(&before), Some(true), "{before}");

    let out = run(&["tools", "disable", "web", "--platform", "cli"]).await;
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let text = std::fs::read_to_string(home.home().config_file()).unwrap();
    let cli: Vec<String> =
        serde_json::from_value(yaml(&text)["platform_toolsets"]["cli"].clone()).unwrap();
    assert!(
        !cli.is_empty() && !cli.contains(&"web".to_string()),
        "{cli:?}"
    );
    assert!(!cli.contains(&"declarative".to_string()), "{cli:?}");
    let after = stdout(&run(&["tools", "list", "--platform", "cli"]).await);
    assert_eq!(
        on(&after),
        Some(true),
        "the list without it keeps the tool: {after}"
    );

    let out = run(&["tools", "disable", "declarative", "--platform", "cli"]).await;
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let text = std::fs::read_to_string(home.home().config_file()).unwrap();
    let parsed = yaml(&text);
    assert_eq!(
        parsed["agent"]["disabled_toolsets"],
        serde_json::json!(["declarative"])
    );
    assert!(
        !parsed["platform_toolsets"]["cli"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v == "declarative"),
        "{text}"
    );
    let off = stdout(&run(&["tools", "list", "--platform", "cli"]).await);
    assert_eq!(on(&off), Some(false), "{off}");

    let out = run(&["tools", "enable", "declarative", "--platform", "cli"]).await;
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let back = stdout(&run(&["tools", "list", "--platform", "cli"]).await);
    assert_eq!(on(&back), Some(true), "{back}");
    let text = std::fs::read_to_string(home.home().config_file()).unwrap();
    assert!(!text.contains("declarative"), "{text}");
}
