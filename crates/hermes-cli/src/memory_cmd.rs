//! `hermes memory {show,edit}` and the REPL's `/memory` (FEATURES §6): the entries of
//! `MEMORY.md` and `USER.md` with their usage, and hand edits checked against the `§` format.

use std::path::Path;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use hermes_context::memory::{
    MemoryStore, MemoryTarget, joined_chars, parse_entries, usage_text, validate_memory_text,
};
use hermes_protocol::HermesHome;
use hermes_protocol::config::MemoryConfig;

use crate::app::App;

/// `hermes memory …`
#[derive(Debug, Subcommand)]
pub enum MemoryCmd {
    /// The entries of MEMORY.md and USER.md with their usage of the char limits.
    Show,
    /// Open a memory file in $VISUAL/$EDITOR, then check its `§` format.
    Edit {
        /// Edit USER.md (the user profile) instead of MEMORY.md (the agent's notes).
        #[arg(long)]
        user: bool,
    },
}

/// Runs a memory subcommand; returns the process exit code (1 when an edited file has
/// problems).
pub fn run(profile: Option<&str>, action: &MemoryCmd) -> Result<i32> {
    let app = App::load(profile)?;
    match action {
        MemoryCmd::Show => {
            print!("{}", memory_report(&app.home, &app.config.memory));
            Ok(0)
        }
        MemoryCmd::Edit { user } => {
            let target = if *user {
                MemoryTarget::User
            } else {
                MemoryTarget::Memory
            };
            edit(&app, target)
        }
    }
}

fn describe(target: MemoryTarget) -> &'static str {
    match target {
        MemoryTarget::Memory => "agent notes",
        MemoryTarget::User => "user profile",
    }
}

fn enabled(config: &MemoryConfig, target: MemoryTarget) -> bool {
    match target {
        MemoryTarget::Memory => config.memory_enabled,
        MemoryTarget::User => config.user_profile_enabled,
    }
}

/// Both files as text for `hermes memory show` and `/memory`: per file a header
/// `MEMORY.md (agent notes) — <percent>% — <chars>/<limit>`, `off` when config turns it off,
/// then the numbered entries. Files are read now (not the session's frozen snapshot).
pub fn memory_report(home: &HermesHome, config: &MemoryConfig) -> String {
    let store = MemoryStore::from_config(home, config);
    let mut out = String::new();
    for target in [MemoryTarget::Memory, MemoryTarget::User] {
        let limit = store.limit(target);
        let state = if enabled(config, target) {
            String::new()
        } else {
            " — off in config.yaml".to_string()
        };
        match store.read(target) {
            Ok(entries) => {
                let usage = usage_text(joined_chars(&entries), limit);
                out.push_str(&format!(
                    "{} ({}) — {usage}{state}\n",
                    target.file_name(),
                    describe(target)
                ));
                if entries.is_empty() {
                    out.push_str("  (empty)\n");
                }
                for (i, e) in entries.iter().enumerate() {
                    let text = e.replace('\n', "\n     ");
                    out.push_str(&format!("  {}. {text}\n", i + 1));
                }
            }
            Err(e) => out.push_str(&format!("{}: {e}\n", target.file_name())),
        }
    }
    out
}

/// Opens `target`'s file in the editor, then validates it. Exit code 1 when it has problems.
fn edit(app: &App, target: MemoryTarget) -> Result<i32> {
    let store = MemoryStore::from_config(&app.home, &app.config.memory);
    let path = store.path(target);
    if let Some(dir) = path.parent() {
        hermes_protocol::private_fs::create_dir_all(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
    }
    if !path.exists() {
        hermes_protocol::private_fs::write(&path, "")
            .with_context(|| format!("creating {}", path.display()))?;
    }
    open_editor(&path)?;
    let raw = std::fs::read_to_string(&path)
        .with_context(|| format!("reading {} after editing", path.display()))?;
    let limit = store.limit(target);
    let problems = validate_memory_text(&raw, limit);
    if problems.is_empty() {
        let entries = parse_entries(&raw);
        outln!(
            "{}: {} entries, {} — new sessions see the change",
            target.file_name(),
            entries.len(),
            usage_text(joined_chars(&entries), limit)
        );
        return Ok(0);
    }
    eprintln!("{} was saved but has problems:", path.display());
    for p in problems {
        eprintln!("  - {p}");
    }
    eprintln!("Entries are separated by a line holding only `§`. Run `hermes memory edit` again.");
    Ok(1)
}

/// Runs `$VISUAL`, else `$EDITOR`, else `vi` on `path` through `sh` (so an editor with
/// arguments such as `code --wait` works).
pub(crate) fn open_editor(path: &Path) -> Result<()> {
    let editor = std::env::var("VISUAL")
        .ok()
        .filter(|e| !e.trim().is_empty())
        .or_else(|| {
            std::env::var("EDITOR")
                .ok()
                .filter(|e| !e.trim().is_empty())
        })
        .unwrap_or_else(|| "vi".to_string());
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("hermes-memory-edit")
        .arg(path)
        .status()
        .with_context(|| format!("starting the editor `{editor}`"))?;
    if !status.success() {
        bail!("the editor `{editor}` exited with {status}; the file was left as it is");
    }
    Ok(())
}

/// What the REPL needs for `/memory`, `/skills`, `/<skill-name>` and `-s` preloading.
#[derive(Debug, Clone)]
pub struct LearningInfo {
    home: HermesHome,
    memory: MemoryConfig,
    preload_skills: Vec<String>,
}

impl LearningInfo {
    /// From the loaded home and config, with the `-s/--skills` list of `args`.
    pub fn new(app: &App, args: &crate::args::ChatArgs) -> LearningInfo {
        LearningInfo {
            home: app.home.clone(),
            memory: app.config.memory.clone(),
            preload_skills: args.skills.clone().unwrap_or_default(),
        }
    }

    /// `/memory`: [`memory_report`] of the files as they are now.
    pub fn memory_text(&self) -> String {
        memory_report(&self.home, &self.memory)
    }

    /// `/skills`: the installed skills.
    pub fn skills_text(&self) -> String {
        crate::skills_cmd::list_text(&self.home.skills_dir())
    }

    /// `/<name> [instruction]`: the user message loading skill `name`, or `None` when no
    /// installed skill has that name (then it is an unknown command).
    pub fn skill_message(&self, name: &str, instruction: &str) -> Option<Result<String, String>> {
        let catalog = hermes_context::skills::SkillCatalog::load_cached(&self.home.skills_dir());
        catalog.find(name)?;
        Some(hermes_context::skill_invocation_message(
            &self.home,
            name,
            instruction,
        ))
    }

    /// The text to send for a plain message: the first one carries the `-s` skills
    /// ([`crate::skills_cmd::preload_message`]), later ones are unchanged.
    ///
    /// # Errors
    /// An unknown `-s` skill (reported once; the list is then dropped).
    pub fn first_message(&mut self, text: &str) -> Result<String> {
        let skills = std::mem::take(&mut self.preload_skills);
        crate::skills_cmd::preload_message(&self.home, &skills, text)
    }
}
