//! `hermes memory {show,edit}` (FEATURES §6): the entries of `MEMORY.md` and `USER.md` with
//! their usage (`crate::views::memory`, also the REPL's `/memory`), and hand edits checked
//! against the `§` format.

use anyhow::{Context, Result};
use clap::Subcommand;
use hermes_context::memory::{
    MemoryStore, MemoryTarget, joined_chars, parse_entries, usage_text, validate_memory_text,
};

use crate::assembly::app::App;
use crate::views::editor::open_editor;
use crate::views::memory::memory_report;

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
    /// A Python Hermes `memory` action hermes does not have.
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// Runs a memory subcommand; returns the process exit code (1 when an edited file has
/// problems).
pub fn run(profile: Option<&str>, action: &MemoryCmd) -> Result<i32> {
    let app = App::load(profile)?;
    match action {
        MemoryCmd::Other(words) => Ok(crate::commands::redirect::answer::<MemoryCmd>(
            &["memory"],
            words,
        )),
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
    errln!("{} was saved but has problems:", path.display());
    for p in problems {
        errln!("  - {p}");
    }
    errln!("Entries are separated by a line holding only `§`. Run `hermes memory edit` again.");
    Ok(1)
}
