#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The memory provider interface and the write gate (seed 004 §5.2, issue 27 items 1 and 4),
//! through the `memory` tool, the provider trait and config `memory.provider`.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use hermes_context::memory::{
    FileMemoryProvider, MemoryEntry, MemoryProvider, MemoryStore, MemoryTarget, MemoryTool,
    configured_memory_provider,
};
use hermes_context::skills::IndexFilter;
use hermes_context::{LearningLayers, learning_tools_configured};
use hermes_protocol::HermesHome;
use hermes_protocol::config::Config;
use hermes_tools::{Tool, ToolContext};
use serde_json::{Value, json};

struct Env {
    _tmp: tempfile::TempDir,
    home: HermesHome,
    tool: MemoryTool,
    ctx: ToolContext,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let home = HermesHome::new(tmp.path());
    let tool = MemoryTool::new(MemoryStore::new(&home));
    let ctx = ToolContext::for_tests(tmp.path(), home.clone());
    Env {
        _tmp: tmp,
        home,
        tool,
        ctx,
    }
}

impl Env {
    async fn call(&self, args: Value) -> (bool, Value) {
        let out = self.tool.call(args, &self.ctx).await;
        let body: Value = serde_json::from_str(&out.content)
            .unwrap_or_else(|_| panic!("not JSON: {}", out.content));
        (!out.is_error, body)
    }

    async fn add(&self, content: &str) -> Value {
        let (ok, body) = self
            .call(json!({"action": "add", "content": content}))
            .await;
        assert!(ok, "{body}");
        let note = body["note"].as_str().unwrap();
        assert!(!note.contains("  "), "stray spaces in {note:?}");
        body
    }

    fn file(&self) -> Option<String> {
        std::fs::read_to_string(self.home.memories_dir().join("MEMORY.md")).ok()
    }
}

#[tokio::test]
async fn the_tool_refuses_low_information_text_with_a_reason() {
    let e = env();
    for (text, rule) in [
        ("ok", "too_short"),
        ("the and of it", "too_short"),
        ("!!! ... ???", "too_short"),
        ("Remember this, it is important", "restatement"),
        ("记住", "too_short"),
    ] {
        let (ok, body) = e.call(json!({"action": "add", "content": text})).await;
        assert!(!ok, "{text}: {body}");
        assert_eq!(body["success"], false);
        assert_eq!(body["reason"], "low_information", "{text}: {body}");
        assert_eq!(body["rule"], rule, "{text}: {body}");
        let error = body["error"].as_str().unwrap();
        assert!(!error.contains("  "), "stray spaces in {error:?}");
        assert!(error.contains("Nothing was saved"), "{error}");
        assert!(error.contains("Write the fact itself"), "{error}");
    }
    assert_eq!(e.file(), None, "nothing was written");

    // One weak operation refuses the whole batch; a weak replacement is refused too.
    e.add("Repo uses cargo-nextest").await;
    let (ok, body) = e
        .call(json!({"operations": [
            {"action": "add", "content": "CI runs on arm64 runners"},
            {"action": "add", "content": "noted"}
        ]}))
        .await;
    assert!(!ok && body["reason"] == "low_information", "{body}");
    let (ok, body) = e
        .call(json!({"action": "replace", "old_text": "nextest", "content": "ok"}))
        .await;
    assert!(!ok && body["reason"] == "low_information", "{body}");
    assert_eq!(e.file().unwrap(), "Repo uses cargo-nextest");
}

#[tokio::test]
async fn a_near_duplicate_updates_the_existing_entry_in_place() {
    let e = env();
    e.add("Repo uses cargo-nextest").await;
    e.add("User prefers dark mode in every editor and terminal")
        .await;
    e.add("CI runs on arm64 runners").await;
    let body = e
        .add("User prefers the dark mode theme in every editor and terminal")
        .await;
    assert_eq!(body["changed"], true, "{body}");
    assert_eq!(body["entries"], 3, "{body}");
    assert!(
        body["note"].as_str().unwrap().starts_with("merged"),
        "{body}"
    );
    assert_eq!(
        body["merged"][0]["existing_entry"],
        "User prefers dark mode in every editor and terminal"
    );
    assert_eq!(body["merged"][0]["similarity"], 0.88);
    assert_eq!(
        e.file().unwrap(),
        "Repo uses cargo-nextest\n§\nUser prefers the dark mode theme in every editor and terminal\n§\nCI runs on arm64 runners"
    );

    // A near-duplicate that says less keeps the fuller entry; an exact duplicate is a no-op.
    let body = e
        .add("User prefers dark mode in every editor and terminal.")
        .await;
    assert_eq!(body["changed"], false, "{body}");
    assert!(
        body["note"].as_str().unwrap().starts_with("already saved"),
        "{body}"
    );
    let body = e.add("CI runs on arm64 runners").await;
    assert_eq!(body["changed"], false, "{body}");
    assert!(body.get("merged").is_none(), "{body}");
    assert_eq!(
        e.file().unwrap(),
        "Repo uses cargo-nextest\n§\nUser prefers the dark mode theme in every editor and terminal\n§\nCI runs on arm64 runners"
    );
}

#[tokio::test]
async fn near_duplicates_merge_in_cjk_too() {
    let e = env();
    e.add("这个项目的持续集成在每个工作日晚上运行完整的端到端测试")
        .await;
    let body = e
        .add("这个项目的持续集成在每个工作日晚上运行完整的端到端测试套件")
        .await;
    assert_eq!(body["entries"], 1, "{body}");
    assert!(body["merged"].is_array(), "{body}");
    assert_eq!(
        e.file().unwrap(),
        "这个项目的持续集成在每个工作日晚上运行完整的端到端测试套件"
    );
}

#[tokio::test]
async fn a_conflicting_fact_is_replaced_by_the_newer_with_a_note() {
    let e = env();
    e.add("Project uses Python 3.11").await;
    e.add("Tests run in parallel").await;
    let body = e.add("Project uses Python 3.12").await;
    assert_eq!(
        body["superseded"][0]["old_entry"],
        "Project uses Python 3.11"
    );
    assert_eq!(body["superseded"][0]["conflict"], "changed_value");
    assert!(
        body["note"].as_str().unwrap().contains("contradicted"),
        "{body}"
    );
    let body = e.add("Tests do not run in parallel").await;
    assert_eq!(body["superseded"][0]["conflict"], "negation", "{body}");
    assert_eq!(
        e.file().unwrap(),
        "Project uses Python 3.12\n§\nTests do not run in parallel"
    );
    // Different facts of the same shape are both kept.
    e.add("Server 1 is at 10.0.0.1").await;
    e.add("Server 2 is at 10.0.0.2").await;
    assert_eq!(e.file().unwrap().matches("\n§\n").count(), 3);
}

#[test]
fn the_provider_interface_stores_retrieves_and_snapshots() {
    let tmp = tempfile::tempdir().unwrap();
    let home = HermesHome::new(tmp.path());
    let provider: Arc<dyn MemoryProvider> =
        Arc::new(FileMemoryProvider::new(MemoryStore::new(&home)));
    assert_eq!(provider.name(), "builtin");
    for (target, content) in [
        (MemoryTarget::Memory, "Deploys happen on Friday afternoons"),
        (MemoryTarget::Memory, "Repo uses cargo-nextest"),
        (
            MemoryTarget::User,
            "User is called Ada and works on deploy tooling",
        ),
    ] {
        provider
            .store(&MemoryEntry {
                target,
                content: content.into(),
            })
            .unwrap();
    }
    // The gate applies to store() as to the tool.
    let refused = provider
        .store(&MemoryEntry {
            target: MemoryTarget::User,
            content: "ok".into(),
        })
        .unwrap_err();
    assert_eq!(refused.reason(), "low_information");
    let hits = provider
        .retrieve("when deploys happen, and deploy", 5)
        .unwrap();
    assert_eq!(hits[0].content, "Deploys happen on Friday afternoons");
    assert_eq!(hits[0].target, MemoryTarget::Memory);
    assert_eq!(hits[1].target, MemoryTarget::User);
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert!(hits[0].score > hits[1].score);
    assert_eq!(provider.retrieve("deploy", 0).unwrap(), vec![]);
    assert_eq!(
        provider.list(MemoryTarget::Memory).unwrap(),
        [
            "Deploys happen on Friday afternoons",
            "Repo uses cargo-nextest"
        ]
    );
    let snap = provider.snapshot();
    assert_eq!(
        snap.user,
        ["User is called Ada and works on deploy tooling"]
    );
    // The files are the format Python Hermes reads, byte for byte.
    assert_eq!(
        std::fs::read_to_string(home.memories_dir().join("MEMORY.md")).unwrap(),
        "Deploys happen on Friday afternoons\n§\nRepo uses cargo-nextest"
    );
}

/// A minimal tracing subscriber that keeps the message of every WARN event.
#[derive(Default, Clone)]
struct Warnings(Arc<Mutex<Vec<String>>>);

struct Message<'a>(&'a mut String);

impl tracing::field::Visit for Message<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0.push_str(&format!("{value:?}"));
        }
    }
}

impl tracing::Subscriber for Warnings {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if *event.metadata().level() == tracing::Level::WARN {
            let mut text = String::new();
            event.record(&mut Message(&mut text));
            self.0.lock().unwrap().push(text);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test]
async fn an_unknown_external_provider_warns_once_and_the_files_keep_working() {
    let tmp = tempfile::tempdir().unwrap();
    let home = HermesHome::new(tmp.path());
    let loaded = Config::parse("memory:\n  provider: honcho\n", &home.config_file()).unwrap();
    let named: Vec<&String> = loaded
        .warnings
        .iter()
        .filter(|w| w.contains("honcho"))
        .collect();
    assert_eq!(named.len(), 1, "{:?}", loaded.warnings);
    let memory = loaded.config.memory;

    let warnings = Warnings::default();
    let tools = tracing::subscriber::with_default(warnings.clone(), || {
        learning_tools_configured(&home, None, &memory, &BTreeSet::new())
    });
    let logged = warnings.0.lock().unwrap().clone();
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert!(
        logged[0].contains("`memory.provider: honcho`"),
        "{}",
        logged[0]
    );
    assert!(logged[0].contains("MEMORY.md and USER.md"), "{}", logged[0]);

    // The built-in files serve: the tool writes them and the next prompt shows them.
    let tool = tools
        .iter()
        .find(|t| t.spec().name == "memory")
        .expect("memory tool");
    let ctx = ToolContext::for_tests(tmp.path(), home.clone());
    let out = tool
        .call(
            json!({"action": "add", "target": "user", "content": "Name is Ada"}),
            &ctx,
        )
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        configured_memory_provider(&home, &memory)
            .list(MemoryTarget::User)
            .unwrap(),
        ["Name is Ada"]
    );
    let tool_names = vec!["memory".to_string()];
    let filter = IndexFilter {
        platform: "linux",
        tool_names: &tool_names,
        toolsets: &[],
    };
    let layers = LearningLayers::load_configured(&home, &filter, &memory, &BTreeSet::new());
    assert!(
        layers.user.as_deref().unwrap_or("").contains("Name is Ada"),
        "{layers:?}"
    );
}
