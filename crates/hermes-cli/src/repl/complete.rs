//! Tab completion in the REPL (issue 9 item 7): slash command names and installed skill
//! names after a leading `/`, model names after `/model `, and file paths for the word
//! under the cursor anywhere else (a leading `@` is kept, `~/` means the home folder).
//! Model names are the ones the session knows (current, configured, fallbacks) plus, from
//! the first `/model ` completion on, what the provider lists on `GET {base_url}/models`,
//! fetched once in the background so a keypress never waits for the network.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use reedline::{Completer, CompletionResult, Span, Suggestion};

/// Most suggestions shown at once.
const MAX_SUGGESTIONS: usize = 200;

/// What completion draws from, gathered when the session starts.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// Slash command names without the `/` (aliases included).
    pub commands: Vec<String>,
    /// The skills folder (names are read at each completion, so new skills show up).
    pub skills_dir: Option<PathBuf>,
    /// Model names known without asking the provider.
    pub models: Vec<String>,
    /// Base URL and key of an OpenAI-compatible provider to ask for its model list.
    pub list_models_from: Option<(String, Option<String>)>,
    /// The folder relative paths start from.
    pub cwd: PathBuf,
}

/// The REPL's completer.
pub struct HermesCompleter {
    sources: Sources,
    /// Models the provider listed; filled by the background fetch.
    fetched: Arc<Mutex<Vec<String>>>,
    fetch_started: bool,
}

impl HermesCompleter {
    /// A completer over `sources`.
    pub fn new(sources: Sources) -> HermesCompleter {
        HermesCompleter {
            sources,
            fetched: Arc::new(Mutex::new(Vec::new())),
            fetch_started: false,
        }
    }

    fn skill_names(&self) -> Vec<String> {
        let Some(dir) = &self.sources.skills_dir else {
            return Vec::new();
        };
        hermes_context::skills::SkillCatalog::load_cached(dir)
            .skills
            .iter()
            .map(|s| s.name.clone())
            .collect()
    }

    /// Starts the one background fetch of the provider's model list (needs a tokio runtime;
    /// without one only the known names are offered).
    fn start_model_fetch(&mut self) {
        if self.fetch_started {
            return;
        }
        self.fetch_started = true;
        let Some((base_url, key)) = self.sources.list_models_from.clone() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let fetched = self.fetched.clone();
        runtime.spawn(async move {
            let wait = crate::assembly::model_switch::MODEL_LIST_WAIT;
            match crate::assembly::model_switch::list_models(&base_url, key.as_deref(), wait).await
            {
                Ok(models) => *fetched.lock().unwrap_or_else(|e| e.into_inner()) = models,
                Err(e) => tracing::debug!(error = %e, "model list for completion unavailable"),
            }
        });
    }

    fn model_names(&self) -> Vec<String> {
        let mut names = self.sources.models.clone();
        names.extend(
            self.fetched
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .cloned(),
        );
        names
    }
}

impl Completer for HermesCompleter {
    fn complete(&mut self, line: &str, pos: usize) -> CompletionResult {
        let head = line.get(..pos).unwrap_or(line);
        let suggestions = if let Some(name) = head.strip_prefix('/')
            && !name.contains(char::is_whitespace)
        {
            let mut names = self.sources.commands.clone();
            names.extend(self.skill_names());
            by_prefix(names, name, |n| format!("/{n}"), Span::new(0, pos), true)
        } else if let Some(rest) = head.strip_prefix("/model ") {
            self.start_model_fetch();
            let word = rest.trim_start();
            let start = pos - word.len();
            by_prefix(
                self.model_names(),
                word,
                |n| n.to_string(),
                Span::new(start, pos),
                false,
            )
        } else {
            let start = head.rfind(char::is_whitespace).map_or(0, |i| {
                i + head[i..].chars().next().map_or(1, char::len_utf8)
            });
            let word = &head[start..];
            let (word, start) = match word.strip_prefix('@') {
                Some(w) => (w, start + 1),
                None => (word, start),
            };
            path_suggestions(&self.sources.cwd, word, Span::new(start, pos))
        };
        CompletionResult::fresh(suggestions)
    }
}

/// Sorted, de-duplicated `names` starting with `prefix`, rendered by `value`.
fn by_prefix(
    mut names: Vec<String>,
    prefix: &str,
    value: impl Fn(&str) -> String,
    span: Span,
    append_whitespace: bool,
) -> Vec<Suggestion> {
    names.retain(|n| n.starts_with(prefix));
    names.sort();
    names.dedup();
    names
        .iter()
        .take(MAX_SUGGESTIONS)
        .map(|n| Suggestion {
            value: value(n),
            span,
            append_whitespace,
            ..Suggestion::default()
        })
        .collect()
}

/// Entries of the folder named by `word` (up to its last `/`) whose names start with the
/// rest; folders end in `/`. Hidden entries only when the typed name starts with `.`.
fn path_suggestions(cwd: &Path, word: &str, span: Span) -> Vec<Suggestion> {
    let (dir_part, name_part) = match word.rfind('/') {
        Some(i) => (&word[..=i], &word[i + 1..]),
        None => ("", word),
    };
    let dir = if dir_part.is_empty() {
        cwd.to_path_buf()
    } else if let Some(rest) = dir_part.strip_prefix("~/") {
        match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(rest),
            None => return Vec::new(),
        }
    } else if Path::new(dir_part).is_absolute() {
        PathBuf::from(dir_part)
    } else {
        cwd.join(dir_part)
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found: Vec<(String, bool)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let keep = name.starts_with(name_part)
                && (name_part.starts_with('.') || !name.starts_with('.'));
            keep.then(|| (name, e.path().is_dir()))
        })
        .collect();
    found.sort();
    found
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(name, is_dir)| Suggestion {
            value: format!("{dir_part}{name}{}", if is_dir { "/" } else { "" }),
            span,
            append_whitespace: !is_dir,
            ..Suggestion::default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(c: &mut HermesCompleter, line: &str) -> Vec<String> {
        c.complete(line, line.len())
            .suggestions()
            .iter()
            .map(|s| s.value.clone())
            .collect()
    }

    fn completer(cwd: &Path, skills: &Path) -> HermesCompleter {
        HermesCompleter::new(Sources {
            commands: vec!["model".into(), "memory".into(), "new".into()],
            skills_dir: Some(skills.to_path_buf()),
            models: vec!["gpt-4.1".into(), "gpt-4.1-mini".into(), "claude-x".into()],
            list_models_from: None,
            cwd: cwd.to_path_buf(),
        })
    }

    #[test]
    fn slash_commands_skills_models_and_paths() {
        let cwd = tempfile::tempdir().unwrap();
        std::fs::create_dir(cwd.path().join("src")).unwrap();
        std::fs::write(cwd.path().join("src/main.rs"), "").unwrap();
        std::fs::write(cwd.path().join("README.md"), "").unwrap();
        std::fs::write(cwd.path().join(".hidden"), "").unwrap();
        let skills = tempfile::tempdir().unwrap();
        let skill = skills.path().join("deploy-app");
        std::fs::create_dir(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: deploy-app\ndescription: Deploys\n---\nSteps\n",
        )
        .unwrap();
        let mut c = completer(cwd.path(), skills.path());

        assert_eq!(values(&mut c, "/mo"), vec!["/model"]);
        assert_eq!(values(&mut c, "/m"), vec!["/memory", "/model"]);
        assert_eq!(values(&mut c, "/dep"), vec!["/deploy-app"]);
        assert_eq!(
            values(&mut c, "/model gpt"),
            vec!["gpt-4.1", "gpt-4.1-mini"]
        );
        let r = c.complete("/model cl", 9);
        assert_eq!(r.suggestions()[0].span, Span::new(7, 9));

        assert_eq!(values(&mut c, "look at sr"), vec!["src/"]);
        assert_eq!(values(&mut c, "look at src/m"), vec!["src/main.rs"]);
        assert_eq!(values(&mut c, "read @REA"), vec!["README.md"]);
        assert_eq!(
            c.complete("read @REA", 9).suggestions()[0].span,
            Span::new(6, 9)
        );
        assert!(values(&mut c, "x ").iter().all(|v| !v.starts_with('.')));
        assert_eq!(values(&mut c, "x .hid"), vec![".hidden"]);
    }
}
