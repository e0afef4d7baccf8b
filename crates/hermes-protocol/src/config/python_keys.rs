//! Every key of Python Hermes 0.19.0's default config (`DEFAULT_CONFIG` in
//! `hermes_cli/config.py`), classified: honoured by hermes, or ignored with what hermes does
//! instead. A `config.yaml` made by Python Hermes loads without "unknown key" noise; each
//! ignored key it sets is reported once, by name, with the reason ([`IgnoredPythonKeys`]).
//!
//! The table is checked against a JSON dump of the real `DEFAULT_CONFIG` committed in
//! `tests/fixtures/python_config/default_config.json` (and against the live Python program
//! when `HERMES_PYTHON_HERMES` is set): every leaf there must fall under an entry here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

/// What hermes does with a Python Hermes key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyStatus {
    /// Read and applied with the same meaning.
    Honoured,
    /// Kept in the file but not applied; the text says what hermes does instead.
    Ignored(&'static str),
}

use KeyStatus::{Honoured, Ignored};

const GATEWAY_PLATFORM: &str = "hermes' gateway reads its platform settings from the `gateway:` section and the platform's environment variables (e.g. TELEGRAM_ALLOWED_USERS)";
const NO_VOICE: &str = "hermes has no voice input or speech output";
const LOCAL_TERMINAL: &str = "hermes runs commands on this machine (`local`, in its sandbox), in a docker container (`docker`) or over ssh (`ssh`); other backends refuse to run commands";

/// `(key, status)`: a key covers itself and everything below it; the longest matching key
/// decides. Keys are dotted paths as written in `config.yaml`.
pub const PYTHON_KEYS: &[(&str, KeyStatus)] = &[
    ("_config_version", Honoured),
    ("model", Honoured),
    ("providers", Honoured),
    ("custom_providers", Honoured),
    ("fallback_providers", Honoured),
    (
        "fallback_model",
        Ignored("hermes reads the list `fallback_providers:` instead"),
    ),
    ("credential_pool_strategies", Honoured),
    ("toolsets", Honoured),
    (
        "max_concurrent_sessions",
        Ignored("hermes reads `gateway.max_concurrent_sessions`"),
    ),
    (
        "max_live_sessions",
        Ignored("hermes reads `gateway.agent_cache_size`"),
    ),
    ("agent", Ignored("not used by hermes' agent loop")),
    ("agent.max_turns", Honoured),
    ("agent.api_max_retries", Honoured),
    ("agent.disabled_toolsets", Honoured),
    ("agent.tool_use_enforcement", Honoured),
    (
        "agent.verify_on_stop",
        Ignored("hermes never adds the verify-before-stopping nudge (as with `false`)"),
    ),
    (
        "agent.max_verify_nudges",
        Ignored("hermes never adds the verify-before-stopping nudge"),
    ),
    (
        "agent.verify_guidance",
        Ignored("hermes never adds the verify-before-stopping nudge"),
    ),
    (
        "agent.gateway_timeout",
        Ignored("hermes' gateway runs a turn until it ends or is stopped"),
    ),
    (
        "agent.gateway_timeout_warning",
        Ignored("hermes' gateway runs a turn until it ends or is stopped"),
    ),
    (
        "agent.reasoning_overrides",
        Ignored("hermes sends no per-model reasoning overrides"),
    ),
    ("terminal", Ignored(LOCAL_TERMINAL)),
    ("terminal.cwd", Honoured),
    ("terminal.timeout", Honoured),
    ("terminal.backend", Honoured),
    ("terminal.docker_image", Honoured),
    ("terminal.docker_forward_env", Honoured),
    ("terminal.docker_env", Honoured),
    ("terminal.docker_volumes", Honoured),
    ("terminal.docker_mount_cwd_to_workspace", Honoured),
    ("terminal.docker_network", Honoured),
    ("terminal.docker_extra_args", Honoured),
    ("terminal.docker_run_as_host_user", Honoured),
    ("terminal.container_cpu", Honoured),
    ("terminal.container_memory", Honoured),
    ("terminal.container_persistent", Honoured),
    (
        "terminal.container_disk",
        Ignored("hermes sets no disk quota on its docker containers"),
    ),
    (
        "web",
        Ignored(
            "hermes' web tools read `web.backend`, `web.search_backend` and `web.extract_char_limit`",
        ),
    ),
    ("web.backend", Honoured),
    ("web.search_backend", Honoured),
    ("web.extract_char_limit", Honoured),
    ("browser", Ignored("hermes has no browser tool")),
    (
        "checkpoints",
        Ignored("hermes makes no file checkpoints; use git"),
    ),
    (
        "context_file_max_chars",
        Ignored("hermes caps context files at its own size (FEATURES §5)"),
    ),
    (
        "file_read_max_chars",
        Ignored("hermes' read_file pages by lines and caps each result itself"),
    ),
    (
        "mcp_discovery_timeout",
        Ignored("hermes waits for each MCP server with its own timeout"),
    ),
    (
        "mcp",
        Ignored(
            "hermes reads MCP servers from `mcp_servers:`; they are reloaded with `/reload-mcp`",
        ),
    ),
    ("mcp_servers", Honoured),
    (
        "tool_output",
        Ignored("hermes caps tool output with its own result budget"),
    ),
    (
        "tool_loop_guardrails",
        Ignored("hermes bounds a turn by `agent.max_turns` only"),
    ),
    ("compression", Ignored("not used by hermes' compressor")),
    ("compression.enabled", Honoured),
    ("compression.threshold", Honoured),
    ("compression.protect_first_n", Honoured),
    ("compression.protect_last_n", Honoured),
    ("kanban", Ignored("hermes has no kanban board")),
    ("prompt_caching", Honoured),
    (
        "openrouter",
        Ignored("hermes sends OpenRouter requests without response caching or model scoring"),
    ),
    (
        "bedrock",
        Ignored(
            "hermes does not speak AWS Bedrock's Converse API; use an OpenAI-compatible endpoint",
        ),
    ),
    (
        "vertex",
        Ignored(
            "hermes does not speak Google Vertex AI; use provider `gemini` with GEMINI_API_KEY",
        ),
    ),
    (
        "auxiliary",
        Ignored("hermes runs compression, titles and reviews on the session's own model"),
    ),
    ("display", Ignored("not used by hermes' terminal renderer")),
    ("display.skin", Honoured),
    ("display.tool_progress", Honoured),
    ("display.busy_input_mode", Honoured),
    ("display.show_reasoning", Honoured),
    ("dashboard", Ignored("hermes has no web dashboard")),
    (
        "privacy",
        Ignored("hermes masks the secrets it knows; it does no PII redaction"),
    ),
    ("tts", Ignored(NO_VOICE)),
    ("stt", Ignored(NO_VOICE)),
    ("voice", Ignored(NO_VOICE)),
    (
        "human_delay",
        Ignored("hermes' gateway sends replies without an artificial delay"),
    ),
    (
        "context",
        Ignored("hermes always uses its built-in context compressor"),
    ),
    ("memory", Ignored("not used by hermes' memory files")),
    ("memory.memory_enabled", Honoured),
    ("memory.user_profile_enabled", Honoured),
    ("memory.memory_char_limit", Honoured),
    ("memory.user_char_limit", Honoured),
    ("memory.nudge_interval", Honoured),
    ("memory.provider", Honoured),
    ("delegation", Ignored("not used by hermes' delegate_task")),
    ("delegation.max_iterations", Honoured),
    ("delegation.max_concurrent_children", Honoured),
    ("delegation.model", Honoured),
    ("delegation.provider", Honoured),
    ("delegation.base_url", Honoured),
    ("delegation.api_key", Honoured),
    (
        "prefill_messages_file",
        Ignored("hermes sends no prefill messages"),
    ),
    ("goals", Ignored("hermes has no goals mode")),
    ("moa", Ignored("hermes has no mixture-of-agents mode")),
    ("skills", Ignored("not used by hermes' skills library")),
    ("skills.disabled", Honoured),
    ("skills.platform_disabled", Honoured),
    ("skills.creation_nudge_interval", Honoured),
    (
        "skills.external_dirs",
        Ignored("hermes reads skills from HERMES_HOME/skills only"),
    ),
    (
        "curator",
        Ignored("hermes does not archive or prune skills automatically"),
    ),
    ("honcho", Ignored("hermes has no Honcho integration")),
    ("timezone", Honoured),
    ("slack", Ignored(GATEWAY_PLATFORM)),
    ("discord", Ignored(GATEWAY_PLATFORM)),
    ("whatsapp", Ignored(GATEWAY_PLATFORM)),
    ("telegram", Ignored(GATEWAY_PLATFORM)),
    ("mattermost", Ignored(GATEWAY_PLATFORM)),
    ("matrix", Ignored(GATEWAY_PLATFORM)),
    (
        "approvals",
        Ignored("hermes asks before dangerous commands itself (turned off by `--yolo`)"),
    ),
    (
        "command_allowlist",
        Ignored("hermes asks before dangerous commands itself (turned off by `--yolo`)"),
    ),
    (
        "quick_commands",
        Ignored("hermes has no quick commands; use skills (`/<skill-name>`)"),
    ),
    (
        "platform_hints",
        Ignored("hermes adds its own platform hints to the prompt"),
    ),
    (
        "hooks",
        Ignored("hermes reads hooks from HERMES_HOME/hooks/<name>/HOOK.yaml"),
    ),
    (
        "hooks_auto_accept",
        Ignored("hermes reads hooks from HERMES_HOME/hooks/<name>/HOOK.yaml"),
    ),
    ("personalities", Ignored("hermes' persona is SOUL.md")),
    (
        "security",
        Ignored("hermes always masks known secrets and runs commands in its sandbox"),
    ),
    ("cron", Ignored("not used by hermes' scheduler")),
    ("cron.max_parallel_jobs", Honoured),
    (
        "code_execution",
        Ignored("hermes has no code-execution tool"),
    ),
    (
        "tools",
        Ignored("hermes offers every tool of the enabled toolsets (no tool search)"),
    ),
    (
        "logging",
        Ignored(
            "hermes logs to HERMES_HOME/logs with its own rotation; set RUST_LOG for the level",
        ),
    ),
    (
        "model_catalog",
        Ignored("hermes lists models from the provider's /models route"),
    ),
    (
        "network",
        Ignored("hermes uses the system's address families"),
    ),
    (
        "gateway",
        Ignored(
            "not used by hermes' gateway, whose `gateway:` keys are max_concurrent_sessions, agent_cache_size, streaming, approval_timeout, idle_release_after",
        ),
    ),
    (
        "streaming",
        Ignored("hermes' gateway streams where the platform allows (`gateway.streaming`)"),
    ),
    (
        "sessions",
        Ignored("hermes keeps every session; delete them with `hermes sessions delete`"),
    ),
    (
        "onboarding",
        Ignored("hermes has its own first-run setup (`hermes setup`)"),
    ),
    ("updates", Ignored("hermes does not update itself")),
    ("lsp", Ignored("hermes has no language-server integration")),
    ("x_search", Ignored("hermes has no X search tool")),
    (
        "secrets",
        Ignored("hermes reads secrets from the environment and HERMES_HOME/.env only"),
    ),
    (
        "paste_collapse_threshold",
        Ignored("hermes' REPL shows pasted text as it is"),
    ),
    (
        "paste_collapse_threshold_fallback",
        Ignored("hermes' REPL shows pasted text as it is"),
    ),
    (
        "paste_collapse_char_threshold",
        Ignored("hermes' REPL shows pasted text as it is"),
    ),
    ("computer_use", Ignored("hermes has no computer-use tool")),
    ("desktop", Ignored("hermes has no desktop app")),
    (
        "plugins",
        Ignored("hermes has no Python plugins; use MCP servers"),
    ),
];

/// The entry deciding `path` (a dotted key path; sequence indexes are ignored): the longest
/// table key equal to `path` or to one of its dotted prefixes. `None`: not a Python key.
pub fn classify(path: &str) -> Option<(&'static str, KeyStatus)> {
    let segments: Vec<&str> = path
        .split('.')
        .filter(|s| s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    (1..=segments.len()).rev().find_map(|n| {
        let prefix = segments[..n].join(".");
        PYTHON_KEYS
            .iter()
            .find(|(k, _)| *k == prefix)
            .map(|(k, s)| (*k, *s))
    })
}

/// Dotted paths of every leaf of Python Hermes 0.19.0's `DEFAULT_CONFIG` (the committed
/// dump of the real program).
static PYTHON_DEFAULT_LEAVES: LazyLock<BTreeSet<String>> = LazyLock::new(|| {
    let text = include_str!("../../tests/fixtures/python_config/default_config.json");
    let mut out = Vec::new();
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
        json_leaves(&v, String::new(), &mut out);
    }
    out.into_iter().collect()
});

fn json_leaves(v: &serde_json::Value, path: String, out: &mut Vec<String>) {
    match v.as_object() {
        Some(map) if !map.is_empty() => {
            for (k, child) in map {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                json_leaves(child, p, out);
            }
        }
        _ if !path.is_empty() => out.push(path),
        _ => {}
    }
}

/// Whether `path` is a key Python Hermes knows: a leaf of its `DEFAULT_CONFIG`, a key below
/// such a leaf (entries of `providers:`, `hooks:`, …), a section holding such leaves, or a
/// key of [`PYTHON_KEYS`] Python reads outside its defaults (`skills.disabled`,
/// `custom_providers`, …). A misspelt key is none of these, so it stays an unknown key.
pub fn is_python_key(path: &str) -> bool {
    let under = |base: &str| path == base || path.starts_with(&format!("{base}."));
    let above = |leaf: &str| leaf.starts_with(&format!("{path}."));
    let in_defaults = |key: &str| {
        PYTHON_DEFAULT_LEAVES
            .iter()
            .any(|leaf| leaf == key || leaf.starts_with(&format!("{key}.")))
    };
    PYTHON_DEFAULT_LEAVES
        .iter()
        .any(|leaf| under(leaf) || above(leaf))
        || PYTHON_KEYS.iter().any(|(k, _)| under(k) && !in_defaults(k))
}

/// [`classify`] for keys that [`is_python_key`]; `None` for any other key.
pub fn classify_python_key(path: &str) -> Option<(&'static str, KeyStatus)> {
    if is_python_key(path) {
        classify(path)
    } else {
        None
    }
}

/// Python Hermes keys a `config.yaml` sets that hermes does not apply, grouped by table
/// entry (one line each).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IgnoredPythonKeys {
    /// Table entry → (the keys set under it, what hermes does instead).
    pub groups: BTreeMap<&'static str, (Vec<String>, &'static str)>,
}

impl IgnoredPythonKeys {
    /// True when nothing was ignored.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// One line per table entry: ``"`tts.provider`, `tts.voice`: hermes has no voice …"``.
    pub fn lines(&self) -> Vec<String> {
        self.groups
            .values()
            .map(|(keys, reason)| {
                let shown: Vec<String> = keys.iter().take(4).map(|k| format!("`{k}`")).collect();
                let more = keys.len().saturating_sub(4);
                let mut line = shown.join(", ");
                if more > 0 {
                    line.push_str(&format!(" and {more} more"));
                }
                format!("{line}: {reason}")
            })
            .collect()
    }

    /// A one-line summary for the terminal, e.g. "3 Python Hermes settings in config.yaml
    /// are not used by hermes (tts, browser, agent.clarify_timeout); `hermes config check`
    /// says what hermes does instead". `None` when nothing was ignored.
    pub fn summary(&self) -> Option<String> {
        if self.groups.is_empty() {
            return None;
        }
        let count: usize = self.groups.values().map(|(k, _)| k.len()).sum();
        let names: Vec<&str> = self.groups.keys().take(5).copied().collect();
        let more = if self.groups.len() > 5 { ", …" } else { "" };
        Some(format!(
            "{count} Python Hermes setting{} in config.yaml {} not used by hermes ({}{more}); `hermes config check` says what hermes does instead",
            if count == 1 { "" } else { "s" },
            if count == 1 { "is" } else { "are" },
            names.join(", "),
        ))
    }
}

/// Walks a parsed `config.yaml` and collects the Python keys it sets that hermes ignores.
/// `agent.verify_on_stop: false` is what hermes does anyway and is not reported.
pub fn ignored_keys(root: &yaml_serde::Value) -> IgnoredPythonKeys {
    let mut out = IgnoredPythonKeys::default();
    let mut leaves = Vec::new();
    collect_leaves(root, String::new(), &mut leaves);
    for (path, value) in leaves {
        if path == "agent.verify_on_stop" && value.as_bool() == Some(false) {
            continue;
        }
        if let Some((entry, Ignored(reason))) = classify_python_key(&path) {
            out.groups
                .entry(entry)
                .or_insert_with(|| (Vec::new(), reason))
                .0
                .push(path);
        }
    }
    out
}

/// Leaves of a mapping tree: scalars, sequences and empty mappings, with dotted paths.
fn collect_leaves<'a>(
    v: &'a yaml_serde::Value,
    path: String,
    out: &mut Vec<(String, &'a yaml_serde::Value)>,
) {
    match v.as_mapping() {
        Some(map) if !map.is_empty() => {
            for (k, child) in map {
                let key = match k {
                    yaml_serde::Value::String(s) => s.clone(),
                    other => yaml_serde::to_string(other)
                        .unwrap_or_default()
                        .trim()
                        .to_string(),
                };
                let child_path = if path.is_empty() {
                    key
                } else {
                    format!("{path}.{key}")
                };
                collect_leaves(child, child_path, out);
            }
        }
        _ if !path.is_empty() => out.push((path, v)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_entry_decides() {
        assert_eq!(
            classify("agent.max_turns"),
            Some(("agent.max_turns", Honoured))
        );
        assert!(matches!(
            classify("agent.clarify_timeout"),
            Some(("agent", Ignored(_)))
        ));
        assert!(matches!(
            classify("tts.edge.voice"),
            Some(("tts", Ignored(_)))
        ));
        assert_eq!(classify("no_such_section"), None);
        assert_eq!(classify("agentx"), None);
        assert!(classify_python_key("agent.clarify_timeout").is_some());
        assert_eq!(
            classify_python_key("agent.max_turn"),
            None,
            "a typo stays unknown"
        );
        assert!(classify_python_key("providers.my-server.base_url").is_some());
        assert!(classify_python_key("skills.disabled").is_some());
        assert!(classify_python_key("tts").is_some());
    }

    #[test]
    fn ignored_keys_are_grouped_one_line_each() {
        let v: yaml_serde::Value = yaml_serde::from_str(
            "tts:\n  provider: edge\n  edge:\n    voice: x\nagent:\n  max_turns: 5\n  verify_on_stop: false\nbrowser: {}\n",
        )
        .unwrap();
        let ignored = ignored_keys(&v);
        let lines = ignored.lines();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("`browser`: hermes has no browser"))
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("`tts.provider`, `tts.edge.voice`"))
        );
        let summary = ignored.summary().unwrap();
        assert!(summary.starts_with("3 Python Hermes settings"), "{summary}");
        let v: yaml_serde::Value =
            yaml_serde::from_str("agent:\n  verify_on_stop: auto\n").unwrap();
        assert!(ignored_keys(&v).lines()[0].contains("agent.verify_on_stop"));
    }
}
