//! The persistent prompt-prefix cache with the real GGUF (issue 19). Each test loads its own
//! models: a second [`LocalModel`] has its own llama.cpp context and starts empty, as a new
//! process does, so whatever it reuses came from the cache folder. The CLI test
//! `local_e2e.rs` runs the same through two `hermes` processes.
#![cfg(feature = "local")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use hermes_llm::local::prefix_cache::{self, PromptCacheConfig};
use hermes_llm::local::prompt::{ChatTurn, build_turns};
use hermes_llm::local::{GenerateOptions, Generation, LocalConfig, LocalModel};
use hermes_protocol::{Message, ToolSpec};
use tokio_util::sync::CancellationToken;

fn gguf() -> Option<PathBuf> {
    match std::env::var_os("HERMES_TEST_GGUF") {
        Some(p) if PathBuf::from(&p).is_file() => Some(PathBuf::from(p)),
        _ => {
            eprintln!("skipped: set HERMES_TEST_GGUF to a GGUF chat model to run this test");
            None
        }
    }
}

fn load(model: &Path, cache: &Path, n_ctx: u32) -> LocalModel {
    let mut config = LocalConfig::new(model);
    config.n_ctx = Some(n_ctx);
    config.prompt_cache = Some(PromptCacheConfig {
        dir: cache.to_path_buf(),
        max_bytes: 1 << 30,
    });
    LocalModel::load(&config).unwrap()
}

fn tool(name: &str, what: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("{what}."),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Where."},
                "text": {"type": "string", "description": "What."}
            },
            "required": ["path"]
        }),
    }
}

/// A prompt whose system turn (tools block first) is well over the save threshold.
fn prompt(model: &LocalModel, system: &str, tools: &[ToolSpec], question: &str) -> (String, usize) {
    let turns = build_turns(system, &[Message::user(question)], tools);
    let text = model.render(&turns);
    let head = model.render_with(std::slice::from_ref(&turns[0]), false);
    assert!(text.starts_with(&head));
    (text, head.len())
}

fn tools() -> Vec<ToolSpec> {
    [
        ("read_file", "Read a text file"),
        ("write_file", "Write a text file"),
        ("search_files", "Search file contents"),
        ("list_dir", "List a folder"),
        ("terminal", "Run a shell command"),
        ("memory", "Save a durable fact"),
        ("todo", "Keep a task list"),
        ("weather", "Look up the weather"),
    ]
    .iter()
    .map(|(n, w)| tool(n, w))
    .collect()
}

const SYSTEM: &str =
    "You are a helpful assistant. Answer in one short sentence.\n\nToday is 2026-12-02.";

fn run(model: &LocalModel, prompt: &str, stable: usize, reuse: bool) -> (String, Generation) {
    let options = GenerateOptions {
        max_tokens: 24,
        temperature: None,
        seed: 0,
        reuse_prefix: reuse,
        stable_prefix: Some(stable),
    };
    let mut text = String::new();
    let generation = model
        .generate(prompt, &options, &CancellationToken::new(), |piece| {
            text.push_str(piece);
            true
        })
        .unwrap();
    (text, generation)
}

fn report(dir: &Path) -> prefix_cache::CacheReport {
    prefix_cache::scan(dir)
}

#[test]
fn a_new_model_loads_the_saved_prefix_and_answers_as_a_fresh_prefill() {
    let Some(path) = gguf() else { return };
    let cache = tempfile::tempdir().unwrap();
    let first = load(&path, cache.path(), 2048);
    let (text, stable) = prompt(&first, SYSTEM, &tools(), "What is the capital of France?");
    let (cold, g) = run(&first, &text, stable, true);
    assert_eq!(g.reused_tokens, 0);
    assert!(!g.loaded_from_disk);
    assert_eq!(report(cache.path()).entries, 1, "the system turn was saved");
    drop(first);

    let second = load(&path, cache.path(), 2048);
    let (warm, g) = run(&second, &text, stable, true);
    assert!(g.loaded_from_disk, "{g:?}");
    let stable_tokens = second.count_tokens(&text[..stable]) as u64;
    assert_eq!(g.reused_tokens, stable_tokens, "{g:?}");
    // Same greedy tokens as the first run's full prefill, and as a prefill without reuse.
    assert_eq!(warm, cold);
    let (fresh, g) = run(&second, &text, stable, false);
    assert_eq!(g.reused_tokens, 0);
    assert_eq!(fresh, cold);
    assert_eq!(report(cache.path()).entries, 1, "nothing new to save");

    // Another question in a third "process" reuses the same entry.
    let third = load(&path, cache.path(), 2048);
    let (other, _) = prompt(&third, SYSTEM, &tools(), "Name a primary colour.");
    let (_, g) = run(&third, &other, stable, true);
    assert!(
        g.loaded_from_disk && g.reused_tokens == stable_tokens,
        "{g:?}"
    );
}

#[test]
fn a_changed_prompt_tool_list_context_size_or_model_misses() {
    let Some(path) = gguf() else { return };
    let cache = tempfile::tempdir().unwrap();
    {
        let m = load(&path, cache.path(), 2048);
        let (text, stable) = prompt(&m, SYSTEM, &tools(), "Hi");
        run(&m, &text, stable, true);
    }
    let m = load(&path, cache.path(), 2048);
    // The tools block comes first: a changed tool list changes the first tool line on.
    let mut changed = tools();
    changed[0].description = "Read any text file.".into();
    let (text, stable) = prompt(&m, SYSTEM, &changed, "Hi");
    let (_, g) = run(&m, &text, stable, true);
    let stable_tokens = m.count_tokens(&text[..stable]) as u64;
    assert!(
        g.reused_tokens < stable_tokens / 4,
        "a changed first tool shares only the preamble: {g:?}"
    );

    // A changed context size is another key.
    let other_ctx = load(&path, cache.path(), 1024);
    let (text, stable) = prompt(&other_ctx, SYSTEM, &tools(), "Hi");
    let (_, g) = run(&other_ctx, &text, stable, true);
    assert!(!g.loaded_from_disk && g.reused_tokens == 0, "{g:?}");

    // A different model file (same bytes plus one) is another key.
    let copy = cache.path().join("other.gguf");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.push(0);
    std::fs::write(&copy, bytes).unwrap();
    let other_model = load(&copy, cache.path(), 2048);
    let (text, stable) = prompt(&other_model, SYSTEM, &tools(), "Hi");
    let (_, g) = run(&other_model, &text, stable, true);
    assert!(!g.loaded_from_disk && g.reused_tokens == 0, "{g:?}");

    // A changed date at the end of the system turn still reuses the part before it, and
    // saves that common part once.
    let m = load(&path, cache.path(), 2048);
    let tomorrow = SYSTEM.replace("2026-12-02", "2026-12-03");
    let (text, stable) = prompt(&m, &tomorrow, &tools(), "Hi");
    let (_, g) = run(&m, &text, stable, true);
    assert!(g.loaded_from_disk, "{g:?}");
    let stable_tokens = m.count_tokens(&text[..stable]) as u64;
    assert!(
        g.reused_tokens > stable_tokens - 16,
        "{g:?} of {stable_tokens}"
    );
    assert!(report(cache.path()).broken.is_empty());
}

#[test]
fn a_corrupted_truncated_or_empty_state_file_is_ignored_and_rewritten() {
    let Some(path) = gguf() else { return };
    let cache = tempfile::tempdir().unwrap();
    let m = load(&path, cache.path(), 2048);
    let (text, stable) = prompt(&m, SYSTEM, &tools(), "What is 2 + 2?");
    let (cold, _) = run(&m, &text, stable, true);
    drop(m);
    let state = std::fs::read_dir(cache.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "state"))
        .unwrap();
    let good = std::fs::read(&state).unwrap();
    let damages: [(&str, Vec<u8>); 3] = [
        ("corrupted", {
            let mut b = good.clone();
            let mid = b.len() / 2;
            b[mid] ^= 0x55;
            b
        }),
        ("truncated", good[..good.len() / 3].to_vec()),
        ("empty", Vec::new()),
    ];
    for (what, bytes) in damages {
        std::fs::write(&state, &bytes).unwrap();
        assert_eq!(
            report(cache.path()).broken.len(),
            1,
            "{what}: doctor sees it"
        );
        let m = load(&path, cache.path(), 2048);
        let (answer, g) = run(&m, &text, stable, true);
        assert!(!g.loaded_from_disk, "{what}: never loaded: {g:?}");
        assert_eq!(
            answer, cold,
            "{what}: the answer does not depend on the cache"
        );
        let r = report(cache.path());
        assert_eq!(
            (r.entries, r.broken.len()),
            (1, 0),
            "{what}: rewritten: {r:?}"
        );
        assert_eq!(std::fs::read(&state).unwrap().len(), good.len(), "{what}");
    }
}

#[test]
fn two_models_saving_the_same_prefix_at_once_leave_one_valid_entry() {
    let Some(path) = gguf() else { return };
    let cache = tempfile::tempdir().unwrap();
    let models: Vec<LocalModel> = (0..2).map(|_| load(&path, cache.path(), 2048)).collect();
    let (text, stable) = prompt(&models[0], SYSTEM, &tools(), "Say hello.");
    std::thread::scope(|s| {
        for m in &models {
            let text = &text;
            s.spawn(move || run(m, text, stable, true));
        }
    });
    let r = report(cache.path());
    assert_eq!((r.entries, r.broken.len()), (1, 0), "{r:?}");
    let leftovers: Vec<String> = std::fs::read_dir(cache.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let fresh = load(&path, cache.path(), 2048);
    let (_, g) = run(&fresh, &text, stable, true);
    assert!(g.loaded_from_disk, "{g:?}");
}

#[test]
fn the_budget_evicts_the_least_recently_used_prefix() {
    let Some(path) = gguf() else { return };
    let cache = tempfile::tempdir().unwrap();
    let mut sizes = Vec::new();
    for (i, first_tool) in ["alpha", "beta", "gamma"].iter().enumerate() {
        let mut config = LocalConfig::new(&path);
        config.n_ctx = Some(2048);
        // Room for two entries of this size, not three.
        let budget = sizes.first().map_or(1 << 30, |s: &u64| s * 2 + s / 2);
        config.prompt_cache = Some(PromptCacheConfig {
            dir: cache.path().to_path_buf(),
            max_bytes: budget,
        });
        let m = LocalModel::load(&config).unwrap();
        let mut list = tools();
        list.insert(0, tool(first_tool, "A tool named first"));
        let (text, stable) = prompt(&m, SYSTEM, &list, "Hi");
        run(&m, &text, stable, true);
        if i == 0 {
            sizes.push(
                std::fs::read_dir(cache.path())
                    .unwrap()
                    .flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".state"))
                    .map(|e| e.metadata().unwrap().len())
                    .sum(),
            );
        }
    }
    assert_eq!(
        report(cache.path()).entries,
        2,
        "the oldest of three was evicted"
    );
}

#[test]
fn turns_render_with_the_tools_block_before_the_system_text() {
    let Some(path) = gguf() else { return };
    let cache = tempfile::tempdir().unwrap();
    let m = load(&path, cache.path(), 2048);
    let turns: Vec<ChatTurn> = build_turns(SYSTEM, &[Message::user("Hi")], &tools());
    let text = m.render(&turns);
    let tools_at = text.find("<tools>").unwrap();
    let date_at = text.find("2026-12-02").unwrap();
    assert!(
        tools_at < date_at,
        "the date comes after the stable tools block"
    );
}

/// The fresh-user pass of stop 32: a saved entry from a session with tools, then a REPL on
/// the default (tool-less) prompt that shares only its head: the first question loads the
/// entry and drops its tail; the same question again (after `/new`) drops the answer's tail.
/// Both answers must be what a fresh prefill gives.
#[test]
fn a_loaded_prefix_cut_back_twice_still_answers_as_a_fresh_prefill() {
    let Some(path) = gguf() else { return };
    let cache = tempfile::tempdir().unwrap();
    let first = load(&path, cache.path(), 2048);
    let (long, stable) = prompt(&first, SYSTEM, &tools(), "What is the capital of France?");
    run(&first, &long, stable, true);
    drop(first);
    let repl = load(&path, cache.path(), 2048);
    let (short, short_stable) = prompt(&repl, SYSTEM, &[], "What is the capital of France?");
    let (fresh, _) = run(&repl, &short, short_stable, false);
    let repl = load(&path, cache.path(), 2048);
    for round in 0..3 {
        let (again, g) = run(&repl, &short, short_stable, true);
        assert_eq!(again, fresh, "round {round}: {g:?}");
    }
}
