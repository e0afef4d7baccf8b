//! The checks behind `hermes doctor --fix` (issue 9 item 2): problems hermes can repair
//! without losing anything, each reported as a warning or failure with the command that
//! fixes it, and repaired when `--fix` is given:
//! - missing folders of HERMES_HOME (`memories/`, `skills/`, `sessions/`, `logs/`,
//!   `models/`, `cache/`) are created;
//! - `.env` and `auth.json` readable by other users get mode 0600 (they hold API keys), and
//!   every other file under HERMES_HOME 0600 and folder 0700 (issue 18 item 2);
//! - a missing `SOUL.md` is seeded with the default identity;
//! - a word index of `state.db` that disagrees with the messages is rebuilt from them;
//! - broken entries of the local model's prompt cache (`cache/prompt/`: a state file that
//!   does not match its meta file, left-overs of a crashed writer) are removed.
//!
//! What is not safe to repair automatically (a config.yaml that does not parse, a damaged
//! `state.db`) is only reported, with what to do.

use std::path::{Path, PathBuf};

use hermes_protocol::HermesHome;
use hermes_store::SessionStore;

use crate::commands::doctor::{Level, Report};

/// The folders a session may write into, with the names shown in the report.
fn folders(home: &HermesHome) -> Vec<(&'static str, PathBuf)> {
    vec![
        ("memories", home.memories_dir()),
        ("skills", home.skills_dir()),
        ("sessions", home.sessions_dir()),
        ("logs", home.logs_dir()),
        ("models", home.models_dir()),
        ("cache", home.cache_dir()),
    ]
}

/// The local model's persistent prompt cache: its size against `local.prompt_cache_max_mb`,
/// and broken entries (removed with `--fix`; they are never loaded either way).
#[cfg(feature = "local")]
pub(crate) fn check_prompt_cache(app: &crate::assembly::app::App, fix: bool, report: &mut Report) {
    use hermes_llm::local::prefix_cache::{self, PromptCacheConfig};
    let config =
        PromptCacheConfig::under(&app.home.cache_dir(), app.config.local.prompt_cache_max_mb);
    if config.dir.exists() && !config.dir.is_dir() {
        report.add(
            Level::Warn,
            format!(
                "prompt cache: {} is not a folder, so no prefix is saved or loaded; move it \
                 away",
                config.dir.display()
            ),
        );
        return;
    }
    let scan = prefix_cache::scan(&config.dir);
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let budget = if config.max_bytes == 0 {
        "off".to_string()
    } else {
        format!("limit {:.0} MiB", mib(config.max_bytes))
    };
    report.add(
        Level::Ok,
        format!(
            "prompt cache: {} entr{}, {:.1} MiB ({budget}) in {}",
            scan.entries,
            if scan.entries == 1 { "y" } else { "ies" },
            mib(scan.total_bytes),
            config.dir.display()
        ),
    );
    if scan.broken.is_empty() {
        return;
    }
    if fix {
        match prefix_cache::clear_broken(&config.dir) {
            Ok(n) => report.add(
                Level::Fixed,
                format!("prompt cache: {n} broken file(s) removed"),
            ),
            Err(e) => report.add(
                Level::Broken,
                format!("prompt cache: cannot remove a broken file: {e}"),
            ),
        }
    } else {
        for (path, why) in &scan.broken {
            report.add(
                Level::Warn,
                format!(
                    "prompt cache: {} — {why} (never loaded; `hermes doctor --fix` removes it)",
                    path.display()
                ),
            );
        }
    }
}

/// Folders, key-file permissions and `SOUL.md`.
pub(crate) fn check_home(home: &HermesHome, fix: bool, report: &mut Report) {
    check_folders(home, fix, report);
    for (name, path) in [(".env", home.env_file()), ("auth.json", home.auth_file())] {
        check_private(name, &path, fix, report);
    }
    check_modes(home, fix, report);
    if !home.soul_file().exists() {
        if fix {
            match hermes_context::ensure_soul(home) {
                Ok(()) => report.add(Level::Fixed, "SOUL.md seeded with the default identity"),
                Err(e) => report.add(Level::Broken, format!("SOUL.md cannot be written: {e}")),
            }
        } else {
            report.add(
                Level::Warn,
                "SOUL.md is missing (the first session seeds it; `hermes doctor --fix` does now)",
            );
        }
    }
}

fn check_folders(home: &HermesHome, fix: bool, report: &mut Report) {
    let mut missing = Vec::new();
    for (name, path) in
        std::iter::once(("HERMES_HOME", home.root().to_path_buf())).chain(folders(home))
    {
        if path.is_dir() {
            continue;
        }
        if path.exists() {
            report.add(
                Level::Broken,
                format!(
                    "{} should be a folder but is a file; move it away",
                    path.display()
                ),
            );
            continue;
        }
        missing.push((name, path));
    }
    if missing.is_empty() {
        return;
    }
    let names = missing
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ");
    if !fix {
        report.add(
            Level::Warn,
            format!("folders not created yet: {names} (`hermes doctor --fix` creates them)"),
        );
        return;
    }
    for (name, path) in missing {
        match hermes_protocol::private_fs::create_dir_all(&path) {
            Ok(()) => report.add(
                Level::Fixed,
                format!("created {name}/ ({})", path.display()),
            ),
            Err(e) => report.add(
                Level::Broken,
                format!("cannot create {}: {e}", path.display()),
            ),
        }
    }
}

/// A key file must not be readable or writable by group or others.
#[cfg(unix)]
fn check_private(name: &str, path: &Path, fix: bool, report: &mut Report) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 == 0 {
        report.add(Level::Ok, format!("{name} is private (mode {mode:o})"));
        return;
    }
    if !fix {
        report.add(
            Level::Warn,
            format!(
                "{name} holds API keys but other users can read it (mode {mode:o}); \
                 `hermes doctor --fix` sets it to 600"
            ),
        );
        return;
    }
    match std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
        Ok(()) => report.add(
            Level::Fixed,
            format!("{name} set to mode 600 (was {mode:o})"),
        ),
        Err(e) => report.add(
            Level::Broken,
            format!("cannot change the mode of {}: {e}", path.display()),
        ),
    }
}

/// Every file and folder under HERMES_HOME must be owner-only (issue 18 item 2: 0600 files,
/// 0700 folders; state.db, logs, exports and memories hold conversation text and keys).
/// With `fix` each loose one is tightened ([`hermes_protocol::private_fs::loose_modes`]).
fn check_modes(home: &HermesHome, fix: bool, report: &mut Report) {
    let (loose, failures) = hermes_protocol::private_fs::loose_modes(home.root(), fix);
    if loose.is_empty() {
        report.add(
            Level::Ok,
            "every file and folder under HERMES_HOME is private (600/700)",
        );
        return;
    }
    let shown: Vec<String> = loose
        .iter()
        .take(5)
        .map(|l| {
            let rel = l.path.strip_prefix(home.root()).unwrap_or(&l.path);
            let name = if rel.as_os_str().is_empty() {
                "HERMES_HOME".to_string()
            } else {
                rel.display().to_string()
            };
            format!("{name} ({:o})", l.mode)
        })
        .collect();
    let more = if loose.len() > shown.len() {
        format!(" and {} more", loose.len() - shown.len())
    } else {
        String::new()
    };
    if !fix {
        report.add(
            Level::Warn,
            format!(
                "{} files or folders under HERMES_HOME can be read by other users: {}{more}; \
                 `hermes doctor --fix` sets them to 600/700",
                loose.len(),
                shown.join(", ")
            ),
        );
        return;
    }
    for (path, e) in &failures {
        report.add(
            Level::Broken,
            format!("cannot change the mode of {}: {e}", path.display()),
        );
    }
    let fixed = loose.len() - failures.len();
    if fixed > 0 {
        report.add(
            Level::Fixed,
            format!(
                "{fixed} files or folders under HERMES_HOME set to 600/700: {}{more}",
                shown.join(", ")
            ),
        );
    }
}

#[cfg(not(unix))]
fn check_private(_name: &str, _path: &Path, _fix: bool, _report: &mut Report) {}

/// The word index against the messages; rebuilt with `--fix`.
pub(crate) fn check_search_index(store: &SessionStore, fix: bool, report: &mut Report) {
    let found = match store.search_index_check() {
        Ok(found) => found,
        Err(e) => {
            report.add(
                Level::Broken,
                format!("state.db search index cannot be read: {e}"),
            );
            return;
        }
    };
    if found.in_sync() {
        report.add(Level::Ok, "state.db search index matches the messages");
        return;
    }
    let problem = format!(
        "state.db search index is out of date ({} messages not indexed, {} stale entries)",
        found.missing, found.orphaned
    );
    if !fix {
        report.add(
            Level::Broken,
            format!("{problem}; `hermes doctor --fix` rebuilds it"),
        );
        return;
    }
    match store.rebuild_search_index() {
        Ok(n) => report.add(
            Level::Fixed,
            format!("{problem}: rebuilt, {n} messages indexed"),
        ),
        Err(e) => report.add(Level::Broken, format!("{problem}; rebuild failed: {e}")),
    }
}
