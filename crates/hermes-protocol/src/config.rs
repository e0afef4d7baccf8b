//! `config.yaml` types (FEATURES §13) and their loader.
//!
//! Key names follow the Python system so users can move between the two. Every section has
//! defaults (`#[serde(default)]`); unknown keys produce warnings, never errors; a broken file
//! gives an error with line and column.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub mod custom_providers;
pub mod memory;
pub mod model;
pub mod python_keys;
pub mod sessiondb;
pub mod terminal;
pub mod web;
pub use custom_providers::CustomProvider;
pub use memory::{
    BUILTIN_MEMORY_PROVIDER, DEFAULT_MEMORY_CHAR_LIMIT, DEFAULT_MEMORY_NUDGE_INTERVAL,
    DEFAULT_USER_CHAR_LIMIT, EXTERNAL_MEMORY_PROVIDERS, MemoryConfig, MemoryProviderChoice,
};
pub use model::{ModelConfig, ModelSetting};
pub use python_keys::IgnoredPythonKeys;
pub use sessiondb::{PostgresqlConfig, SESSIONDB_DSN_ENV, SessionDbConfig};
pub use terminal::{
    DEFAULT_DOCKER_IMAGE, SandboxConfig, SandboxMode, TerminalConfig, UnsupportedPolicy,
};
pub use web::{
    DEFAULT_EXTRACT_CHAR_LIMIT, SEARCH_BACKENDS, SearchBackendKind, WebConfig, WebConfigError,
};

/// Default iteration budget per turn (FEATURES §3).
pub const DEFAULT_MAX_TURNS: u32 = 90;
/// Default terminal tool timeout in seconds (FEATURES §4).
pub const DEFAULT_TERMINAL_TIMEOUT_S: u64 = 180;

/// A list of strings, or one string as a list of one (`null` is empty).
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => Vec::new(),
        Some(OneOrMany::One(s)) if s.trim().is_empty() => Vec::new(),
        Some(OneOrMany::One(s)) => vec![s.trim().to_string()],
        Some(OneOrMany::Many(v)) => v,
    })
}

/// The whole `config.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// `model:` — a model name, or a table with provider, model, base URL.
    pub model: ModelSetting,
    /// `fallback_providers:` — tried in order when the primary fails (issue 3).
    pub fallback_providers: Vec<ModelConfig>,
    /// `toolsets:` — toolsets enabled for the CLI (default `hermes-cli`). A single name
    /// (`toolsets: file`, what Python Hermes' `config set toolsets file` writes) is a list
    /// of one, as Python reads it.
    #[serde(deserialize_with = "one_or_many")]
    pub toolsets: Vec<String>,
    /// `agent:` section.
    pub agent: AgentConfig,
    /// `terminal:` section.
    pub terminal: TerminalConfig,
    /// `local:` section — the embedded GGUF model (our addition, FEATURES §14).
    pub local: LocalModelConfig,
    /// `display:` section.
    pub display: DisplayConfig,
    /// `timezone:` — IANA name used for dates in prompts and cron.
    pub timezone: Option<String>,
    /// `compression:` section (FEATURES §9).
    pub compression: CompressionSettings,
    /// `memory:` section (FEATURES §6, §13).
    pub memory: MemoryConfig,
    /// `skills:` section (FEATURES §7, §8).
    pub skills: SkillsConfig,
    /// `prompt_caching:` section (FEATURES §5).
    pub prompt_caching: PromptCachingConfig,
    /// `web:` section: the `web` toolset's search backend and fetch policy ([`WebConfig`]).
    pub web: WebConfig,
    /// `delegation:` section — subagents of `delegate_task` (FEATURES §3, §4).
    pub delegation: DelegationConfig,
    /// `sessiondb:` section — SQLite (default) or PostgreSQL as the session store
    /// ([`SessionDbConfig`], issue 21).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessiondb: Option<SessionDbConfig>,
    /// Sections of the Python system that this build reads elsewhere or not yet; kept so
    /// that they are not reported as unknown keys.
    pub mcp_servers: Option<yaml_serde::Value>,
    /// See [`Config::mcp_servers`].
    pub platform_toolsets: Option<yaml_serde::Value>,
    /// See [`Config::mcp_servers`].
    pub approvals: Option<yaml_serde::Value>,
    /// See [`Config::mcp_servers`].
    pub cron: Option<yaml_serde::Value>,
    /// `gateway:` section; typed and validated by `hermes-gateway` (FEATURES §1 Gateway).
    pub gateway: Option<yaml_serde::Value>,
    /// `mcp_serve:` section of `hermes mcp serve` (our addition; `allow_send: true` lets MCP
    /// clients send chat messages); read by `hermes-cli`.
    pub mcp_serve: Option<yaml_serde::Value>,
    /// `observability:` section (our addition, issue 24: `metrics: {host, port}` for the
    /// `/metrics` and `/_status` listener); read by `hermes-cli`.
    pub observability: Option<yaml_serde::Value>,
    /// `group_sessions_per_user:` (gateway; default true). Kept untyped here so that a bad
    /// value is reported by the gateway naming the key instead of failing the whole file.
    pub group_sessions_per_user: Option<yaml_serde::Value>,
    /// `thread_sessions_per_user:` (gateway; default false). See
    /// [`Config::group_sessions_per_user`].
    pub thread_sessions_per_user: Option<yaml_serde::Value>,
    /// `unauthorized_dm_behavior: pair|ignore` (gateway; default `pair`).
    pub unauthorized_dm_behavior: Option<yaml_serde::Value>,
    /// `session_reset: {mode, idle_minutes, at_hour}` (gateway; default mode `none`).
    pub session_reset: Option<yaml_serde::Value>,
    /// `providers:` — named OpenAI-compatible endpoints (Python Hermes' format, read by
    /// [`Config::find_custom_provider`]).
    pub providers: Option<yaml_serde::Value>,
    /// `custom_providers:` — the older list form of named endpoints (Python Hermes' format,
    /// read by [`Config::find_custom_provider`]).
    pub custom_providers: Option<yaml_serde::Value>,
    /// `_config_version:` — Python Hermes' schema version of the file (33 for 0.19.0). hermes
    /// does not interpret it; its editors leave it as it is.
    #[serde(rename = "_config_version")]
    pub config_version: Option<yaml_serde::Value>,
    /// `credential_pool_strategies: {<provider>: <strategy>}` — how each provider's key pool
    /// picks a key (Python Hermes' place for it; `hermes auth add --strategy` writes it). Read by
    /// `hermes_llm::ClientOptions::from_config`; anything but a mapping is ignored, as
    /// Python ignores it.
    pub credential_pool_strategies: Option<yaml_serde::Value>,
}

/// `compression:` section (FEATURES §9): automatic context compression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CompressionSettings {
    /// Compress automatically when the preflight estimate crosses the threshold (default true).
    pub enabled: bool,
    /// Messages kept verbatim at the start of the history (default 3).
    pub protect_first_n: Option<usize>,
    /// Messages kept verbatim at the end of the history (default 20).
    pub protect_last_n: Option<usize>,
    /// Fraction of the usable context window at which compression starts (Python Hermes'
    /// key; default 0.5). Read through [`CompressionSettings::threshold_ratio`].
    pub threshold: Option<f64>,
}

impl Default for CompressionSettings {
    fn default() -> Self {
        CompressionSettings {
            enabled: true,
            protect_first_n: None,
            protect_last_n: None,
            threshold: None,
        }
    }
}

impl CompressionSettings {
    /// `threshold` when it is a fraction in `(0, 1]`; `Err` names the key and the value
    /// otherwise (callers warn and keep the default). `Ok(None)` when unset.
    pub fn threshold_ratio(&self) -> Result<Option<f64>, String> {
        match self.threshold {
            None => Ok(None),
            Some(t) if t > 0.0 && t <= 1.0 => Ok(Some(t)),
            Some(t) => Err(format!(
                "compression.threshold `{t}` is not a fraction between 0 and 1 (e.g. 0.5); using the default"
            )),
        }
    }
}

/// `agent:` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentConfig {
    /// Iteration budget per turn (default 90).
    pub max_turns: u32,
    /// Retries of a failed model call (default 3).
    pub api_max_retries: u32,
    /// Toolsets removed after all others are resolved.
    pub disabled_toolsets: Vec<String>,
    /// Prompt profile: `full` or `compact` (small local context windows); `None` = automatic.
    pub prompt_profile: Option<String>,
    /// `agent.tool_use_enforcement` (key name as in the Python system): `auto` (default: by
    /// model family), `true`/`false`, or a list of model-name substrings. Read through
    /// [`AgentConfig::tool_use_enforcement_setting`].
    pub tool_use_enforcement: Option<yaml_serde::Value>,
    /// `agent.verify_on_stop` (Python Hermes: nudge the model to verify its work before it
    /// stops; `auto` by default there). hermes never adds that nudge; a value other than
    /// `false` is reported by [`python_keys::ignored_keys`].
    pub verify_on_stop: Option<yaml_serde::Value>,
    /// `agent.image_input_mode` (Python Hermes' key): `auto` (default), `native` or `text` —
    /// whether attached images reach the model as images (hermes-llm `vision`).
    pub image_input_mode: Option<String>,
}

impl AgentConfig {
    /// `tool_use_enforcement` as one string: a boolean as `true`/`false`, a string as
    /// written, a list joined with commas; `None` when unset or of another type.
    pub fn tool_use_enforcement_setting(&self) -> Option<String> {
        match self.tool_use_enforcement.as_ref()? {
            yaml_serde::Value::Bool(b) => Some(b.to_string()),
            yaml_serde::Value::String(s) => Some(s.clone()),
            yaml_serde::Value::Sequence(items) => Some(
                items
                    .iter()
                    .filter_map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            _ => None,
        }
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_turns: DEFAULT_MAX_TURNS,
            api_max_retries: 3,
            disabled_toolsets: Vec::new(),
            prompt_profile: None,
            tool_use_enforcement: None,
            verify_on_stop: None,
            image_input_mode: None,
        }
    }
}

/// `local:` section — the embedded model (FEATURES §14).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LocalModelConfig {
    /// GGUF path; relative paths are looked up in `HERMES_HOME/models/`.
    pub model_path: Option<PathBuf>,
    /// Context window in tokens (default: 8192, capped by the model's training context).
    pub context_length: Option<u32>,
    /// Inference threads (default: the number of cores).
    pub threads: Option<u32>,
    /// Maximum tokens generated per call (default 512).
    pub max_tokens: Option<u32>,
    /// Budget in MiB of the persistent prompt-prefix cache in `HERMES_HOME/cache/prompt/`
    /// (default 256; `0` keeps prefixes in memory only).
    pub prompt_cache_max_mb: Option<u64>,
    /// KV cache element type: `f16` (default) or `q8_0`.
    pub kv_cache_type: Option<String>,
}

/// Default number of tool-calling iterations between background skill reviews (FEATURES §8).
pub const DEFAULT_SKILL_NUDGE_INTERVAL: u32 = 10;

/// `skills:` section (key names as in the Python system). Only the learning-loop key is
/// typed; the other keys of the Python system are kept as written and not reported as
/// unknown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SkillsConfig {
    /// Tool-calling iterations between background skill reviews (default
    /// [`DEFAULT_SKILL_NUDGE_INTERVAL`]; 0 turns them off).
    pub creation_nudge_interval: u32,
    /// `skills.disabled`: names of skills left out of the prompt's index and the skill
    /// tools everywhere (a list, or one name). Read through [`SkillsConfig::disabled_for`].
    pub disabled: Option<yaml_serde::Value>,
    /// `skills.platform_disabled.<platform>`: more names disabled on one platform (`cli`,
    /// `telegram`, `discord`, …), added to `disabled`.
    pub platform_disabled: Option<yaml_serde::Value>,
    /// Other `skills:` keys, untouched.
    #[serde(flatten)]
    pub other: BTreeMap<String, yaml_serde::Value>,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        SkillsConfig {
            creation_nudge_interval: DEFAULT_SKILL_NUDGE_INTERVAL,
            disabled: None,
            platform_disabled: None,
            other: BTreeMap::new(),
        }
    }
}

impl SkillsConfig {
    /// The disabled skill names on `platform` (`None`: the global list only): `disabled`
    /// united with `platform_disabled.<platform>`, as Python Hermes'
    /// `get_disabled_skill_names` computes it (a bare string is one name, null is none,
    /// names are trimmed, empty ones dropped).
    pub fn disabled_for(&self, platform: Option<&str>) -> std::collections::BTreeSet<String> {
        fn names(v: Option<&yaml_serde::Value>, out: &mut std::collections::BTreeSet<String>) {
            let one = |v: &yaml_serde::Value| match v {
                yaml_serde::Value::String(s) => Some(s.trim().to_string()),
                yaml_serde::Value::Number(n) => Some(n.to_string()),
                yaml_serde::Value::Bool(b) => Some(if *b { "True" } else { "False" }.to_string()),
                _ => None,
            };
            match v {
                Some(yaml_serde::Value::Sequence(items)) => {
                    out.extend(items.iter().filter_map(one).filter(|s| !s.is_empty()));
                }
                Some(other) => out.extend(one(other).filter(|s| !s.is_empty())),
                None => {}
            }
        }
        let mut out = std::collections::BTreeSet::new();
        names(self.disabled.as_ref(), &mut out);
        if let Some(p) = platform {
            names(
                self.platform_disabled.as_ref().and_then(|m| m.get(p)),
                &mut out,
            );
        }
        out
    }
}

/// `prompt_caching:` section (FEATURES §5, key names as in the Python system).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PromptCachingConfig {
    /// Lifetime of Anthropic-style `cache_control` breakpoints: `5m` (default) or `1h`.
    pub cache_ttl: Option<String>,
}

/// Default iteration budget of one `delegate_task` subagent (FEATURES §3: 50).
pub const DEFAULT_DELEGATION_MAX_ITERATIONS: u32 = 50;
/// Default number of subagents one `delegate_task` call runs at the same time (3).
pub const DEFAULT_DELEGATION_MAX_CONCURRENT: usize = 3;

/// `delegation:` section: how `delegate_task` subagents run (key names as in the Python
/// system, plus `max_concurrent_children`). Other keys of the Python system are kept as
/// written and not reported as unknown. Its `Debug` does not print `api_key`.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DelegationConfig {
    /// Iteration budget of each subagent (default [`DEFAULT_DELEGATION_MAX_ITERATIONS`]).
    pub max_iterations: u32,
    /// Subagents of one call running at the same time (default
    /// [`DEFAULT_DELEGATION_MAX_CONCURRENT`]); further tasks wait for a free slot.
    pub max_concurrent_children: usize,
    /// Model for subagents; `None` = the parent's model. Without `provider` it is sent to
    /// the parent's provider through the parent's client (same credential pool).
    pub model: Option<String>,
    /// Provider for subagents (`openrouter`, `anthropic`, `custom`, …); `None` = the
    /// parent's.
    pub provider: Option<String>,
    /// Base URL of `provider` (for `custom` and local servers).
    pub base_url: Option<String>,
    /// API key for `provider`/`base_url` written in the config (prefer the provider's
    /// variable in `.env`); used only with `provider`.
    pub api_key: Option<String>,
    /// Other `delegation:` keys, untouched.
    #[serde(flatten)]
    pub other: BTreeMap<String, yaml_serde::Value>,
}

crate::debug_redacted!(DelegationConfig {
    secret: [api_key],
    shown: [
        max_iterations,
        max_concurrent_children,
        model,
        provider,
        base_url,
        other,
    ],
});

impl Default for DelegationConfig {
    fn default() -> Self {
        DelegationConfig {
            max_iterations: DEFAULT_DELEGATION_MAX_ITERATIONS,
            max_concurrent_children: DEFAULT_DELEGATION_MAX_CONCURRENT,
            model: None,
            provider: None,
            base_url: None,
            api_key: None,
            other: BTreeMap::new(),
        }
    }
}

/// `display:` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DisplayConfig {
    /// Skin name.
    pub skin: Option<String>,
    /// `off|new|all|verbose`.
    pub tool_progress: Option<String>,
    /// `interrupt|queue|steer`.
    pub busy_input_mode: Option<String>,
    /// Show the model's reasoning text (dimmed) in the terminal; default false.
    pub show_reasoning: Option<bool>,
    /// Show the status line (model, context use, cost, turn time) after each answer in the
    /// REPL; default true; `/statusbar` toggles it for the session (our addition).
    pub statusbar: Option<bool>,
}

/// A problem with `config.yaml`.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The YAML is malformed or a value has the wrong type.
    #[error("{path} line {line}, column {column}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line (0 when unknown).
        line: usize,
        /// 1-based column (0 when unknown).
        column: usize,
        /// What is wrong.
        message: String,
    },
}

/// A loaded config with the warnings found while reading it.
#[derive(Debug, Clone, Default)]
pub struct LoadedConfig {
    /// The settings (defaults where the file is silent or absent).
    pub config: Config,
    /// Unknown keys and other non-fatal findings, e.g. ``unknown key `agent.max_turn` ``.
    pub warnings: Vec<String>,
    /// Keys of Python Hermes' config that the file sets and hermes does not apply, with what
    /// hermes does instead ([`python_keys`]); not repeated in `warnings`.
    pub ignored_python: IgnoredPythonKeys,
}

impl Config {
    /// The `credential_pool_strategies:` entries whose provider and strategy are both
    /// strings, as written (the names are checked by their reader); anything else is left
    /// out, as Python Hermes leaves it.
    pub fn pool_strategy_names(&self) -> BTreeMap<String, String> {
        let Some(yaml_serde::Value::Mapping(map)) = &self.credential_pool_strategies else {
            return BTreeMap::new();
        };
        map.iter()
            .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_str()?.to_string())))
            .collect()
    }

    /// Loads `path`; a missing file yields the defaults. Errors carry line and column.
    pub fn load(path: &Path) -> Result<LoadedConfig, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Config::parse(&text, path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LoadedConfig::default()),
            Err(source) => Err(ConfigError::Io {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Parses YAML text; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<LoadedConfig, ConfigError> {
        if text.trim().is_empty() {
            return Ok(LoadedConfig::default());
        }
        let mut warnings = Vec::new();
        let de = yaml_serde::Deserializer::from_str(text);
        let config: Config = serde_ignored::deserialize(de, |p| {
            let p = p.to_string();
            if !matches!(
                python_keys::classify_python_key(&p),
                Some((_, python_keys::KeyStatus::Ignored(_)))
            ) {
                warnings.push(format!("unknown key `{p}` (ignored)"));
            }
        })
        .map_err(|e| {
            let (line, column) = e
                .location()
                .map(|l| (l.line(), l.column()))
                .unwrap_or((0, 0));
            // The location is in the message already (`… at line 3 column 7`, at its end or
            // before a `, while parsing …` context); it is said once, before the message
            // (issue 20 item 10).
            let mut message = e.to_string();
            if line > 0 {
                message = message.replacen(&format!(" at line {line} column {column}"), "", 1);
            }
            ConfigError::Parse {
                path: path.to_path_buf(),
                line,
                column,
                message,
            }
        })?;
        warnings.extend(config.memory.provider_warning());
        let ignored_python = yaml_serde::from_str::<yaml_serde::Value>(text)
            .map(|v| python_keys::ignored_keys(&v))
            .unwrap_or_default();
        Ok(LoadedConfig {
            config,
            warnings,
            ignored_python,
        })
    }

    /// Serializes back to YAML (for `hermes config show`).
    pub fn to_yaml(&self) -> String {
        yaml_serde::to_string(self).unwrap_or_default()
    }
}

/// Parses `.env` text into the variables it sets, the way python-dotenv does (see
/// [`crate::dotenv`]); `${NAME}` is resolved from the file alone. Skipped statements are
/// dropped silently: use [`crate::dotenv::parse_dotenv`] to get their warnings and to
/// resolve `${NAME}` from the process environment.
pub fn parse_env_file(text: &str) -> BTreeMap<String, String> {
    crate::dotenv::parse_dotenv(text, &|_| None).to_map()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python Hermes' `hermes config set toolsets file` writes a bare name, which Python
    /// reads as a list of one; so does hermes (the user pass of issue 20).
    #[test]
    fn toolsets_as_one_name_or_a_list() {
        let parse = |t: &str| {
            Config::parse(t, Path::new("c.yaml"))
                .unwrap()
                .config
                .toolsets
        };
        assert_eq!(
            parse(
                "toolsets: file
"
            ),
            vec!["file"]
        );
        assert_eq!(
            parse(
                "toolsets: [file, web]
"
            ),
            vec!["file", "web"]
        );
        assert_eq!(
            parse(
                "toolsets:
"
            ),
            Vec::<String>::new()
        );
        assert!(
            Config::parse(
                "toolsets: {a: 1}
",
                Path::new("c.yaml")
            )
            .is_err()
        );
    }

    #[test]
    fn bare_model_name_and_table_both_parse() {
        let c = Config::parse("model: gpt-4o\n", Path::new("c.yaml")).unwrap();
        assert_eq!(
            c.config.model.to_config().default.as_deref(),
            Some("gpt-4o")
        );
        let c = Config::parse(
            "model:\n  provider: custom\n  default: m\n  base_url: http://x/v1\nagent:\n  max_turns: 7\n",
            Path::new("c.yaml"),
        )
        .unwrap();
        let m = c.config.model.to_config();
        assert_eq!(m.provider.as_deref(), Some("custom"));
        assert_eq!(c.config.agent.max_turns, 7);
        assert_eq!(c.config.terminal.timeout, 180);
    }

    #[test]
    fn skills_and_agent_learning_keys_are_read() {
        let c = Config::parse(
            "skills:\n  creation_nudge_interval: 4\n  external_dirs: [/opt/skills]\nagent:\n  tool_use_enforcement: [gemini, grok]\n",
            Path::new("c.yaml"),
        )
        .unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        assert_eq!(c.config.skills.creation_nudge_interval, 4);
        assert!(c.config.skills.other.contains_key("external_dirs"));
        assert_eq!(
            c.config.agent.tool_use_enforcement_setting().as_deref(),
            Some("gemini,grok")
        );
        let d = Config::parse(
            "agent:\n  tool_use_enforcement: false\n",
            Path::new("c.yaml"),
        )
        .unwrap();
        assert_eq!(
            d.config.agent.tool_use_enforcement_setting().as_deref(),
            Some("false")
        );
        assert_eq!(Config::default().skills.creation_nudge_interval, 10);
        assert_eq!(Config::default().memory.nudge_interval, 10);
    }

    #[test]
    fn memory_section_is_typed_with_defaults() {
        let c = Config::parse(
            "memory:\n  memory_char_limit: 500\n  user_profile_enabled: false\n",
            Path::new("c.yaml"),
        )
        .unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let m = &c.config.memory;
        assert_eq!(m.memory_char_limit, 500);
        assert_eq!(m.user_char_limit, DEFAULT_USER_CHAR_LIMIT);
        assert!(m.memory_enabled);
        assert!(!m.user_profile_enabled);
        let c = Config::parse("memory:\n  memory_char_limit: lots\n", Path::new("c.yaml"));
        assert!(c.is_err());
        let c = Config::parse("memory:\n  nudge_intervall: 3\n", Path::new("c.yaml")).unwrap();
        assert!(
            c.warnings[0].contains("memory.nudge_intervall"),
            "{:?}",
            c.warnings
        );
        assert_eq!(Config::default().memory.memory_char_limit, 2_200);
    }

    #[test]
    fn delegation_section_has_defaults_and_overrides() {
        let d = Config::default().delegation;
        assert_eq!(d.max_iterations, 50);
        assert_eq!(d.max_concurrent_children, 3);
        let c = Config::parse(
            "delegation:\n  max_iterations: 7\n  model: small-model\n  default_toolsets: [file]\n",
            Path::new("c.yaml"),
        )
        .unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        assert_eq!(c.config.delegation.max_iterations, 7);
        assert_eq!(c.config.delegation.max_concurrent_children, 3);
        assert_eq!(c.config.delegation.model.as_deref(), Some("small-model"));
        assert!(
            Config::parse("delegation:\n  max_iterations: many\n", Path::new("c.yaml")).is_err()
        );
    }

    #[test]
    fn unknown_keys_warn() {
        let c = Config::parse("agent:\n  max_turn: 7\nfoo: 1\n", Path::new("c.yaml")).unwrap();
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        assert!(c.warnings[0].contains("agent.max_turn"));
    }

    #[test]
    fn broken_yaml_reports_line_and_column() {
        let err = Config::parse("agent:\n  max_turns: [1,\n", Path::new("c.yaml")).unwrap_err();
        match err {
            ConfigError::Parse { line, .. } => assert!(line >= 2),
            other => panic!("unexpected {other:?}"),
        }
        let err = Config::parse("agent:\n  max_turns: lots\n", Path::new("c.yaml")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("line 2"), "{msg}");
        // A syntax error names its place once; the context's own place stays.
        let err = Config::parse("model:\n  default: [m\n", Path::new("c.yaml")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("c.yaml line 3, column 1: "), "{msg}");
        assert_eq!(msg.matches("line 3").count(), 1, "{msg}");
        assert!(
            msg.contains("while parsing a flow sequence at line 2 column 12"),
            "{msg}"
        );
    }

    #[test]
    fn env_file_parsing() {
        let m = parse_env_file("# c\nexport A=1\nB=\"two\"\n\nC = 'x=y'\n");
        assert_eq!(m["A"], "1");
        assert_eq!(m["B"], "two");
        assert_eq!(m["C"], "x=y");
    }

    #[test]
    fn debug_output_never_shows_api_keys() {
        let c = Config::parse(
            "model:\n  provider: custom\n  default: m\n  api_key: sk-model-secret\n  api_keys: [sk-pool-secret]\n\
             delegation:\n  provider: openrouter\n  api_key: sk-delegate-secret\n",
            Path::new("c.yaml"),
        )
        .unwrap();
        let model = format!("{:?}", c.config.model.to_config());
        let delegation = format!("{:?}", c.config.delegation);
        for shown in [&model, &delegation] {
            assert!(!shown.contains("secret"), "{shown}");
            assert!(shown.contains("api_key: <redacted>"), "{shown}");
        }
        assert!(model.contains("provider: Some(\"custom\")"), "{model}");
        assert!(
            delegation.contains("provider: Some(\"openrouter\")"),
            "{delegation}"
        );
    }
}
