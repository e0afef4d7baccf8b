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

    /// Every home whose secrets a session in this one must guard, this one first: this
    /// home; the base home when this is a profile (`<base>/profiles/<name>`); the default
    /// `<user_home>/.hermes` when that is another one; and every profile
    /// (`<home>/profiles/*`, as on disk now) of each of those. Without duplicates.
    pub fn related_homes(&self, user_home: Option<&Path>) -> Vec<PathBuf> {
        let mut bases = vec![self.root.clone()];
        if let Some(parent) = self.root.parent()
            && parent.file_name().is_some_and(|n| n == "profiles")
            && let Some(base) = parent.parent()
        {
            bases.push(base.to_path_buf());
        }
        if let Some(default) = user_home.map(|h| h.join(".hermes")) {
            bases.push(default);
        }
        let mut out: Vec<PathBuf> = Vec::new();
        for base in bases {
            if !out.contains(&base) {
                out.push(base.clone());
            }
            let Ok(entries) = std::fs::read_dir(base.join("profiles")) else {
                continue;
            };
            let mut profiles: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect();
            profiles.sort();
            for p in profiles {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out
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
    /// `tools/`: declarative HTTP tools, one `<name>.yaml` each (seed 004 §3.2).
    pub fn tools_dir(&self) -> PathBuf {
        self.root.join("tools")
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
