//! The `HERMES_HOME` layout (ARCHITECTURE §4): the same file names as the Python system.

use std::path::{Path, PathBuf};

/// The root folder of one hermes installation or profile, with its well-known paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HermesHome {
    root: PathBuf,
}

impl HermesHome {
    /// Uses `root` as `HERMES_HOME`.
    pub fn new(root: impl Into<PathBuf>) -> HermesHome {
        HermesHome { root: root.into() }
    }

    /// Resolves the home: `$HERMES_HOME` if set, else `~/.hermes`; a profile name selects
    /// `<base>/profiles/<name>` (ARCHITECTURE §4). Returns `None` when no home directory
    /// can be found and `HERMES_HOME` is unset.
    pub fn resolve(profile: Option<&str>) -> Option<HermesHome> {
        let base = match std::env::var_os("HERMES_HOME") {
            Some(v) if !v.is_empty() => PathBuf::from(v),
            _ => dirs::home_dir()?.join(".hermes"),
        };
        Some(match profile {
            Some(p) if !p.is_empty() && p != "default" => {
                HermesHome::new(base.join("profiles").join(p))
            }
            _ => HermesHome::new(base),
        })
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// `config.yaml`.
    pub fn config_file(&self) -> PathBuf {
        self.root.join("config.yaml")
    }
    /// `.env` (secrets; never logged).
    pub fn env_file(&self) -> PathBuf {
        self.root.join(".env")
    }
    /// `SOUL.md` (identity).
    pub fn soul_file(&self) -> PathBuf {
        self.root.join("SOUL.md")
    }
    /// `state.db` (session store).
    pub fn state_db(&self) -> PathBuf {
        self.root.join("state.db")
    }
    /// `memories/`.
    pub fn memories_dir(&self) -> PathBuf {
        self.root.join("memories")
    }
    /// `skills/`.
    pub fn skills_dir(&self) -> PathBuf {
        self.root.join("skills")
    }
    /// `sessions/` (exports, transcript mirror).
    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }
    /// `logs/`.
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }
    /// `models/` (local GGUF files).
    pub fn models_dir(&self) -> PathBuf {
        self.root.join("models")
    }
    /// `cache/` (spilled tool results, model metadata).
    pub fn cache_dir(&self) -> PathBuf {
        self.root.join("cache")
    }
    /// `auth.json`: extra API keys per provider added with `hermes auth add` (mode 0600).
    pub fn auth_file(&self) -> PathBuf {
        self.root.join("auth.json")
    }
    /// `cache/credential_state.json`: use counts and cooldowns of pooled API keys, by
    /// provider and key label (no secrets).
    pub fn credential_state_file(&self) -> PathBuf {
        self.cache_dir().join("credential_state.json")
    }
    /// `.hermes_history` (REPL input history).
    pub fn history_file(&self) -> PathBuf {
        self.root.join(".hermes_history")
    }
}
