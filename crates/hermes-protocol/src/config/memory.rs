//! `memory:` — the memory files' switches and limits (FEATURES §6, §13) and which memory
//! provider is active (`memory.provider`, Python Hermes' key; seed 000 §11.2):
//!
//! ```yaml
//! memory:
//!   memory_enabled: true
//!   user_profile_enabled: true
//!   memory_char_limit: 2200
//!   user_char_limit: 1375
//!   nudge_interval: 10
//!   provider: ""        # "" or builtin: MEMORY.md / USER.md; honcho, mem0, …: Python's plugins
//! ```
//!
//! Python Hermes always runs its built-in memory files and adds at most one external
//! provider plugin on top. hermes implements the built-in files only: a config naming an
//! external provider still works (on the files) and gets one warning naming the provider
//! ([`MemoryConfig::provider_warning`]), never silence.

use serde::{Deserialize, Serialize};

/// Default char limit of `MEMORY.md` (FEATURES §6).
pub const DEFAULT_MEMORY_CHAR_LIMIT: usize = 2_200;
/// Default char limit of `USER.md` (FEATURES §6).
pub const DEFAULT_USER_CHAR_LIMIT: usize = 1_375;
/// Default number of user turns between background memory reviews (FEATURES §8).
pub const DEFAULT_MEMORY_NUDGE_INTERVAL: u32 = 10;

/// The name of the built-in file provider (`MEMORY.md` / `USER.md`), as Python Hermes'
/// `BuiltinMemoryProvider` names itself. `memory.provider` empty or unset means the same.
pub const BUILTIN_MEMORY_PROVIDER: &str = "builtin";

/// The external memory provider plugins Python Hermes ships (`plugins/memory/<name>/`, the
/// names its docs list for `memory.provider`). hermes implements none of them; naming one
/// (or any other plugin) gives [`MemoryConfig::provider_warning`].
pub const EXTERNAL_MEMORY_PROVIDERS: [&str; 8] = [
    "honcho",
    "openviking",
    "mem0",
    "hindsight",
    "holographic",
    "retaindb",
    "byterover",
    "supermemory",
];

/// `memory:` section (FEATURES §6, §13; key names as in the Python system).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryConfig {
    /// Whether `MEMORY.md` (the agent's notes) is shown in the prompt and writable by the
    /// `memory` tool (default true).
    pub memory_enabled: bool,
    /// Whether `USER.md` (the user profile) is shown in the prompt and writable by the
    /// `memory` tool (default true).
    pub user_profile_enabled: bool,
    /// Char limit of `MEMORY.md` (default [`DEFAULT_MEMORY_CHAR_LIMIT`]).
    pub memory_char_limit: usize,
    /// Char limit of `USER.md` (default [`DEFAULT_USER_CHAR_LIMIT`]).
    pub user_char_limit: usize,
    /// User turns between background memory reviews (default
    /// [`DEFAULT_MEMORY_NUDGE_INTERVAL`]; 0 turns reviews off).
    pub nudge_interval: u32,
    /// `memory.provider`: the external memory provider plugin Python Hermes activates
    /// (`honcho`, `mem0`, …), or `""` / unset / [`BUILTIN_MEMORY_PROVIDER`] for the memory
    /// files alone. Read through [`MemoryConfig::provider_choice`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            memory_enabled: true,
            user_profile_enabled: true,
            memory_char_limit: DEFAULT_MEMORY_CHAR_LIMIT,
            user_char_limit: DEFAULT_USER_CHAR_LIMIT,
            nudge_interval: DEFAULT_MEMORY_NUDGE_INTERVAL,
            provider: None,
        }
    }
}

/// What `memory.provider` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryProviderChoice {
    /// The built-in memory files (`""`, unset, or `builtin`, any case).
    Builtin,
    /// An external provider plugin hermes does not implement; hermes uses the built-in
    /// files instead and says so.
    Unsupported {
        /// The name as written (trimmed).
        name: String,
        /// Whether it is one of Python Hermes' bundled plugins
        /// ([`EXTERNAL_MEMORY_PROVIDERS`]) rather than a user-installed one.
        bundled_in_python: bool,
    },
}

impl MemoryConfig {
    /// Reads `memory.provider`: empty, unset or `builtin` (case-insensitive, surrounding
    /// blanks ignored) is [`MemoryProviderChoice::Builtin`]; any other name is
    /// [`MemoryProviderChoice::Unsupported`].
    pub fn provider_choice(&self) -> MemoryProviderChoice {
        let name = self.provider.as_deref().unwrap_or("").trim();
        if name.is_empty() || name.eq_ignore_ascii_case(BUILTIN_MEMORY_PROVIDER) {
            return MemoryProviderChoice::Builtin;
        }
        let lower = name.to_ascii_lowercase();
        MemoryProviderChoice::Unsupported {
            name: name.to_string(),
            bundled_in_python: EXTERNAL_MEMORY_PROVIDERS.contains(&lower.as_str()),
        }
    }

    /// The one warning for a `memory.provider` hermes does not implement, naming it, or
    /// `None` for the built-in files. The same text goes to the config warnings (terminal,
    /// `hermes doctor`, `hermes config set`) and to the log when a session's memory is set up.
    pub fn provider_warning(&self) -> Option<String> {
        match self.provider_choice() {
            MemoryProviderChoice::Builtin => None,
            MemoryProviderChoice::Unsupported {
                name,
                bundled_in_python,
            } => {
                let what = if bundled_in_python {
                    "one of Python Hermes' external memory provider plugins"
                } else {
                    "not a memory provider hermes knows (Python Hermes would look for a plugin of that name)"
                };
                Some(format!(
                    "`memory.provider: {name}` is {what}; hermes does not implement it and uses \
                     its built-in memory (MEMORY.md and USER.md) instead — set `memory.provider: \
                     builtin` (or remove the key) to silence this"
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(provider: Option<&str>) -> MemoryConfig {
        MemoryConfig {
            provider: provider.map(str::to_string),
            ..MemoryConfig::default()
        }
    }

    #[test]
    fn empty_unset_and_builtin_choose_the_files() {
        for p in [
            None,
            Some(""),
            Some("  "),
            Some("builtin"),
            Some("Builtin "),
        ] {
            assert_eq!(
                with(p).provider_choice(),
                MemoryProviderChoice::Builtin,
                "{p:?}"
            );
            assert_eq!(with(p).provider_warning(), None, "{p:?}");
        }
    }

    #[test]
    fn an_external_provider_is_named_in_the_warning() {
        let honcho = with(Some("honcho"));
        assert_eq!(
            honcho.provider_choice(),
            MemoryProviderChoice::Unsupported {
                name: "honcho".into(),
                bundled_in_python: true
            }
        );
        let w = honcho.provider_warning().unwrap();
        assert!(w.contains("`memory.provider: honcho`"), "{w}");
        assert!(w.contains("MEMORY.md and USER.md"), "{w}");
        let custom = with(Some("my-vault"));
        assert!(matches!(
            custom.provider_choice(),
            MemoryProviderChoice::Unsupported {
                bundled_in_python: false,
                ..
            }
        ));
        assert!(custom.provider_warning().unwrap().contains("my-vault"));
    }

    #[test]
    fn config_yaml_with_an_external_provider_loads_with_one_warning() {
        let text = "memory:\n  provider: mem0\n  memory_char_limit: 900\n";
        let loaded =
            crate::config::Config::parse(text, std::path::Path::new("config.yaml")).unwrap();
        assert_eq!(loaded.config.memory.memory_char_limit, 900);
        let about: Vec<&String> = loaded
            .warnings
            .iter()
            .filter(|w| w.contains("memory.provider"))
            .collect();
        assert_eq!(about.len(), 1, "{:?}", loaded.warnings);
        assert!(about[0].contains("mem0"), "{}", about[0]);
        // Honoured, so not also listed among Python's ignored keys.
        assert!(
            loaded.ignored_python.is_empty(),
            "{:?}",
            loaded.ignored_python
        );
        let builtin =
            crate::config::Config::parse("memory:\n  provider: ''\n", std::path::Path::new("c"))
                .unwrap();
        assert!(builtin.warnings.is_empty(), "{:?}", builtin.warnings);
    }
}
