//! The two memory files and their safe read-modify-write (FEATURES §6).
//!
//! Every mutation takes an exclusive lock on a sibling lock file, re-reads the file under the
//! lock, applies the operations to what is on disk *now* (never to a copy loaded earlier), checks
//! the char limit on the merged result, and replaces the file by an atomic rename. A session
//! holding a stale view can therefore never wipe entries another session added (case C23).

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use hermes_protocol::HermesHome;
use hermes_protocol::config::MemoryConfig;

use crate::injection::{ScanScope, scan_for_injection};
use crate::memory::gate::{self, Conflict, Refusal, Verdict};

/// Separator between entries in a memory file: a line holding only `§` (FEATURES §6).
pub const ENTRY_DELIMITER: &str = "\n§\n";
/// Char limit of `MEMORY.md` (agent notes), FEATURES §6.
pub const MEMORY_CHAR_LIMIT: usize = 2_200;
/// Char limit of `USER.md` (user profile), FEATURES §6.
pub const USER_CHAR_LIMIT: usize = 1_375;

/// Which memory file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryTarget {
    /// `memories/MEMORY.md`: the agent's notes about environment, projects and lessons.
    Memory,
    /// `memories/USER.md`: what the agent knows about the user.
    User,
}

impl MemoryTarget {
    /// Parses the tool's `target` argument (`memory` or `user`).
    pub fn parse(s: &str) -> Option<MemoryTarget> {
        match s.trim().to_ascii_lowercase().as_str() {
            "memory" => Some(MemoryTarget::Memory),
            "user" => Some(MemoryTarget::User),
            _ => None,
        }
    }

    /// `"memory"` or `"user"`.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryTarget::Memory => "memory",
            MemoryTarget::User => "user",
        }
    }

    /// `MEMORY.md` or `USER.md`.
    pub fn file_name(self) -> &'static str {
        match self {
            MemoryTarget::Memory => "MEMORY.md",
            MemoryTarget::User => "USER.md",
        }
    }
}

/// One mutation of a memory file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryOp {
    /// Appends `content` as a new entry; an exact duplicate of an entry is a no-op.
    Add {
        /// The entry text (trimmed before use).
        content: String,
    },
    /// Replaces the entry containing `old_text` with `content`.
    Replace {
        /// A substring that must occur in exactly one entry (identical entries count as one).
        old_text: String,
        /// The new entry text.
        content: String,
    },
    /// Removes the entry containing `old_text`.
    Remove {
        /// A substring that must occur in exactly one entry (identical entries count as one).
        old_text: String,
    },
}

/// Why a memory mutation was refused. Nothing is written when any of these is returned.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The result would exceed the file's char limit. Carries the current entries so the model
    /// can consolidate them.
    #[error(
        "{file} would hold {needed} chars, over its limit of {limit}; nothing was saved. \
         Consolidate or remove entries first. Current entries:\n{}",
        render_entries(entries)
    )]
    OverLimit {
        /// `MEMORY.md` or `USER.md`.
        file: &'static str,
        /// Chars the file would hold after the operations.
        needed: usize,
        /// The limit in chars.
        limit: usize,
        /// The entries as they are on disk now.
        entries: Vec<String>,
    },
    /// `old_text` occurs in no entry.
    #[error("no entry contains {old_text:?}; nothing was changed")]
    NoMatch {
        /// The text searched for.
        old_text: String,
    },
    /// `old_text` occurs in several different entries.
    #[error(
        "{count} different entries contain {old_text:?}; quote more of the entry so it matches \
         exactly one"
    )]
    Ambiguous {
        /// The text searched for.
        old_text: String,
        /// How many distinct entries matched.
        count: usize,
    },
    /// The content looks like a prompt injection or exfiltration attempt (strict scan).
    #[error("refused: the content was flagged by the safety scan ({category}); nothing was saved")]
    Blocked {
        /// The category name of the first finding.
        category: String,
    },
    /// Empty content or old_text.
    #[error("{0} must not be empty")]
    Empty(&'static str),
    /// The content is below the information threshold of the write gate (seed 004 §5.2;
    /// [`crate::memory::gate::check_information`]). Only the gated path
    /// ([`MemoryStore::apply_gated`]) returns it.
    #[error("{0}")]
    LowInformation(Refusal),
    /// The file on disk has been edited into a shape the entry parser cannot round-trip; a
    /// mutation would rewrite the user's formatting, so it is refused.
    #[error(
        "{} was edited by hand into a form that is not `§`-separated entries; refusing to \
         rewrite it. A copy is at {}. Fix the file (`hermes memory edit`) and retry.",
        path.display(),
        backup.display()
    )]
    Unparseable {
        /// The memory file.
        path: PathBuf,
        /// The backup copy made before refusing.
        backup: PathBuf,
    },
    /// A filesystem failure.
    #[error("memory file {}: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl MemoryError {
    /// A short machine-readable reason: `over_limit`, `no_match`, `ambiguous`,
    /// `blocked_by_scan`, `empty`, `low_information`, `unparseable`, `io`.
    pub fn reason(&self) -> &'static str {
        match self {
            MemoryError::OverLimit { .. } => "over_limit",
            MemoryError::NoMatch { .. } => "no_match",
            MemoryError::Ambiguous { .. } => "ambiguous",
            MemoryError::Blocked { .. } => "blocked_by_scan",
            MemoryError::Empty(_) => "empty",
            MemoryError::LowInformation(_) => "low_information",
            MemoryError::Unparseable { .. } => "unparseable",
            MemoryError::Io { .. } => "io",
        }
    }
}

fn render_entries(entries: &[String]) -> String {
    if entries.is_empty() {
        return "(none)".to_string();
    }
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| format!("{}. {e}", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The result of a successful [`MemoryStore::apply`].
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryOutcome {
    /// Entries now in the file.
    pub entries: Vec<String>,
    /// Chars of the file content (entries joined by [`ENTRY_DELIMITER`]).
    pub chars: usize,
    /// The file's limit in chars.
    pub limit: usize,
    /// False when every operation was a no-op (exact duplicates); the file was not rewritten.
    pub changed: bool,
    /// What the write gate did instead of adding (merges, superseded entries), in operation
    /// order; always empty on the ungated path ([`MemoryStore::apply`]).
    pub gated: Vec<GateAction>,
}

/// An add the write gate (seed 004 §5.2) turned into an update of an existing entry.
#[derive(Debug, Clone, PartialEq)]
pub enum GateAction {
    /// The new entry was a near-duplicate of an existing one (Jaccard similarity of their
    /// content words above [`gate::NEAR_DUPLICATE_JACCARD`]); the existing entry became
    /// `after` (the new wording, or unchanged when it already said everything).
    Merged {
        /// The existing entry before the merge.
        before: String,
        /// The entry after it.
        after: String,
        /// The Jaccard similarity, 0.0–1.0.
        similarity: f64,
    },
    /// The new entry contradicted an existing one, which it replaced (the newer fact wins).
    Superseded {
        /// The older entry, now gone.
        old: String,
        /// The newer entry, in its place.
        new: String,
        /// How they conflicted.
        conflict: Conflict,
    },
}

impl MemoryOutcome {
    /// `"28% — 14/50"`: percent of the limit used, rounded down, then chars over limit.
    pub fn usage(&self) -> String {
        usage_text(self.chars, self.limit)
    }
}

/// `"<percent>% — <chars>/<limit>"`, the percent rounded down (`../shared/vectors/memory_store.json`).
pub fn usage_text(chars: usize, limit: usize) -> String {
    let percent = (chars * 100).checked_div(limit).unwrap_or(100);
    format!("{percent}% — {chars}/{limit}")
}

/// Splits a memory file into entries: CRLF normalized, split on [`ENTRY_DELIMITER`], each entry
/// trimmed, blank entries dropped.
pub fn parse_entries(raw: &str) -> Vec<String> {
    let text = raw.replace("\r\n", "\n");
    text.split(ENTRY_DELIMITER)
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_string)
        .collect()
}

/// Chars of `entries` joined by [`ENTRY_DELIMITER`].
pub fn joined_chars(entries: &[String]) -> usize {
    entries.join(ENTRY_DELIMITER).chars().count()
}

/// Whether a file's text survives parse-then-join unchanged (ignoring surrounding whitespace
/// and CRLF), i.e. whether rewriting it from parsed entries loses nothing the user wrote.
fn round_trips(raw: &str) -> bool {
    let norm = raw.replace("\r\n", "\n");
    parse_entries(&norm).join(ENTRY_DELIMITER) == norm.trim()
}

/// Checks a memory file's text as a user edited it (`hermes memory edit`): every problem the
/// `memory` tool would trip over later, one line each, empty when the file is fine. Problems:
/// text that is not clean `§`-separated entries (blank or padded entries, a `§` with text on
/// its line — the tool refuses to rewrite such a file), more chars than `limit` (the tool then
/// only lets it shrink), and entries the strict injection scan flags (left out of the prompt).
pub fn validate_memory_text(raw: &str, limit: usize) -> Vec<String> {
    let mut problems = Vec::new();
    if !round_trips(raw) {
        problems.push(
            "the text is not clean entries separated by a line holding only `§` (blank \
             entries, blank lines around a `§`, or a `§` with other text on its line); the \
             memory tool will refuse to change this file until it is fixed"
                .to_string(),
        );
    }
    let entries = parse_entries(raw);
    let chars = joined_chars(&entries);
    if chars > limit {
        problems.push(format!(
            "{chars} chars, over the limit of {limit}; the memory tool can only shrink it"
        ));
    }
    for (i, entry) in entries.iter().enumerate() {
        if let Some(f) = scan_for_injection(entry, ScanScope::Strict).first() {
            problems.push(format!(
                "entry {} is flagged by the injection scan ({}) and will be left out of the prompt",
                i + 1,
                f.category
            ));
        }
    }
    problems
}

/// The memory files of one `HERMES_HOME` (`memories/MEMORY.md`, `memories/USER.md`).
#[derive(Debug, Clone)]
pub struct MemoryStore {
    dir: PathBuf,
    memory_limit: usize,
    user_limit: usize,
}

impl MemoryStore {
    /// The store in `home.memories_dir()` with the default limits ([`MEMORY_CHAR_LIMIT`],
    /// [`USER_CHAR_LIMIT`]).
    pub fn new(home: &HermesHome) -> MemoryStore {
        MemoryStore::in_dir(home.memories_dir())
    }

    /// The store in `home.memories_dir()` with the limits of config `memory:`
    /// (`memory_char_limit`, `user_char_limit`).
    pub fn from_config(home: &HermesHome, config: &MemoryConfig) -> MemoryStore {
        MemoryStore::new(home).with_limits(config.memory_char_limit, config.user_char_limit)
    }

    /// The store in `dir` with the default limits.
    pub fn in_dir(dir: impl Into<PathBuf>) -> MemoryStore {
        MemoryStore {
            dir: dir.into(),
            memory_limit: MEMORY_CHAR_LIMIT,
            user_limit: USER_CHAR_LIMIT,
        }
    }

    /// The same store with other char limits (config `memory.memory_char_limit` /
    /// `memory.user_char_limit`).
    pub fn with_limits(mut self, memory_chars: usize, user_chars: usize) -> MemoryStore {
        self.memory_limit = memory_chars;
        self.user_limit = user_chars;
        self
    }

    /// The limit in chars of `target`.
    pub fn limit(&self, target: MemoryTarget) -> usize {
        match target {
            MemoryTarget::Memory => self.memory_limit,
            MemoryTarget::User => self.user_limit,
        }
    }

    /// The path of `target`'s file.
    pub fn path(&self, target: MemoryTarget) -> PathBuf {
        self.dir.join(target.file_name())
    }

    /// The entries on disk now; a missing file has none.
    ///
    /// # Errors
    /// [`MemoryError::Io`] when the file exists but cannot be read.
    pub fn read(&self, target: MemoryTarget) -> Result<Vec<String>, MemoryError> {
        Ok(parse_entries(&self.read_raw(target)?))
    }

    fn read_raw(&self, target: MemoryTarget) -> Result<String, MemoryError> {
        let path = self.path(target);
        match fs::read_to_string(&path) {
            Ok(s) => Ok(s),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
            Err(source) => Err(MemoryError::Io { path, source }),
        }
    }

    /// Applies `ops` to `target` all-or-nothing: lock, re-read, apply in order, check the
    /// limit on the merged result, write atomically. Blocking I/O (a file lock wait included).
    ///
    /// # Errors
    /// Any [`MemoryError`]; the file is then unchanged.
    pub fn apply(
        &self,
        target: MemoryTarget,
        ops: &[MemoryOp],
    ) -> Result<MemoryOutcome, MemoryError> {
        self.apply_with(target, ops, false)
    }

    /// Like [`MemoryStore::apply`], through the write gate of seed 004 §5.2
    /// ([`crate::memory::gate`]): the content of an add or replace below the information
    /// threshold refuses the whole batch ([`MemoryError::LowInformation`]); an add that
    /// contradicts an existing entry replaces it, and an add that nearly duplicates one
    /// updates it ([`GateAction`], in [`MemoryOutcome::gated`]). Decided under the lock
    /// against the entries on disk now, like every other change.
    ///
    /// # Errors
    /// Any [`MemoryError`]; the file is then unchanged.
    pub fn apply_gated(
        &self,
        target: MemoryTarget,
        ops: &[MemoryOp],
    ) -> Result<MemoryOutcome, MemoryError> {
        self.apply_with(target, ops, true)
    }

    fn apply_with(
        &self,
        target: MemoryTarget,
        ops: &[MemoryOp],
        gated: bool,
    ) -> Result<MemoryOutcome, MemoryError> {
        for op in ops {
            check_op(op)?;
            if gated {
                check_information(op)?;
            }
        }
        hermes_protocol::private_fs::create_dir_all(&self.dir).map_err(|source| {
            MemoryError::Io {
                path: self.dir.clone(),
                source,
            }
        })?;
        let _lock = self.lock(target)?;
        let raw = self.read_raw(target)?;
        let path = self.path(target);
        if !round_trips(&raw) {
            let backup = self.dir.join(format!("{}.bak", target.file_name()));
            hermes_protocol::private_fs::write(&backup, &raw).map_err(|source| {
                MemoryError::Io {
                    path: backup.clone(),
                    source,
                }
            })?;
            return Err(MemoryError::Unparseable { path, backup });
        }
        let before = parse_entries(&raw);
        let mut entries = before.clone();
        let mut actions = Vec::new();
        for op in ops {
            match op {
                MemoryOp::Add { content } if gated => {
                    if let Some(action) = apply_gated_add(&mut entries, content.trim()) {
                        actions.push(action);
                    }
                }
                _ => apply_one(&mut entries, op)?,
            }
        }
        let limit = self.limit(target);
        let old_chars = joined_chars(&before);
        let chars = joined_chars(&entries);
        // A file already over its limit (hand edits) may still shrink.
        if chars > limit && chars > old_chars {
            return Err(MemoryError::OverLimit {
                file: target.file_name(),
                needed: chars,
                limit,
                entries: before,
            });
        }
        let changed = entries != before;
        if changed {
            write_atomic(&self.dir, &path, &entries.join(ENTRY_DELIMITER))?;
        }
        Ok(MemoryOutcome {
            entries,
            chars,
            limit,
            changed,
            gated: actions,
        })
    }

    /// Takes the lock Python Hermes 0.19.0 takes around a memory update
    /// (`tools/memory_tool.py` `_file_lock`): an exclusive `flock(2)` on `<file>.lock` beside
    /// the file (`memories/MEMORY.md.lock`, `memories/USER.md.lock`), so both programs can
    /// update the same memory at once without losing entries.
    fn lock(&self, target: MemoryTarget) -> Result<File, MemoryError> {
        let path = self.dir.join(format!("{}.lock", target.file_name()));
        let file =
            hermes_protocol::private_fs::open_append(&path).map_err(|source| MemoryError::Io {
                path: path.clone(),
                source,
            })?;
        // Released when the file is closed (dropped) at the end of `apply`.
        file.lock()
            .map_err(|source| MemoryError::Io { path, source })?;
        Ok(file)
    }
}

fn check_op(op: &MemoryOp) -> Result<(), MemoryError> {
    let (content, old_text) = match op {
        MemoryOp::Add { content } => (Some(content), None),
        MemoryOp::Replace { old_text, content } => (Some(content), Some(old_text)),
        MemoryOp::Remove { old_text } => (None, Some(old_text)),
    };
    if old_text.is_some_and(|t| t.trim().is_empty()) {
        return Err(MemoryError::Empty("old_text"));
    }
    if let Some(content) = content {
        if content.trim().is_empty() {
            return Err(MemoryError::Empty("content"));
        }
        if let Some(f) = scan_for_injection(content, ScanScope::Strict).first() {
            return Err(MemoryError::Blocked {
                category: f.category.as_str().to_string(),
            });
        }
    }
    Ok(())
}

/// The information threshold for the content of an add or replace (gated path only).
fn check_information(op: &MemoryOp) -> Result<(), MemoryError> {
    match op {
        MemoryOp::Add { content } | MemoryOp::Replace { content, .. } => {
            gate::check_information(content).map_err(MemoryError::LowInformation)
        }
        MemoryOp::Remove { .. } => Ok(()),
    }
}

/// One gated add: supersede a conflicting entry, merge into a near-duplicate, or append.
/// An exact duplicate is a near-duplicate whose merge changes nothing (no action reported).
fn apply_gated_add(entries: &mut Vec<String>, content: &str) -> Option<GateAction> {
    let (index, after, action) = match gate::judge(entries, content) {
        Verdict::Add => {
            entries.push(content.to_string());
            return None;
        }
        Verdict::Merge { index, similarity } => {
            let before = entries[index].clone();
            let after = gate::merged_text(&before, content);
            let action = (before != content).then(|| GateAction::Merged {
                before: before.clone(),
                after: after.clone(),
                similarity,
            });
            (index, after, action)
        }
        Verdict::Supersede { index, conflict } => {
            let old = entries[index].clone();
            let action = GateAction::Superseded {
                old,
                new: content.to_string(),
                conflict,
            };
            (index, content.to_string(), Some(action))
        }
    };
    // Copies of the updated entry elsewhere collapse into it (as with replace).
    let old = entries[index].clone();
    let mut kept: Vec<String> = Vec::with_capacity(entries.len());
    for (j, e) in entries.iter().enumerate() {
        if j == index {
            if !kept.contains(&after) {
                kept.push(after.clone());
            }
        } else if *e != old && (*e != after || !kept.contains(&after)) {
            kept.push(e.clone());
        }
    }
    *entries = kept;
    action
}

/// Index of the single distinct entry containing `old_text` (identical entries count as one).
fn find_unique(entries: &[String], old_text: &str) -> Result<usize, MemoryError> {
    let needle = old_text.trim();
    let mut first: Option<usize> = None;
    let mut distinct: Vec<&str> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if e.contains(needle) {
            first.get_or_insert(i);
            if !distinct.contains(&e.as_str()) {
                distinct.push(e);
            }
        }
    }
    match (first, distinct.len()) {
        (Some(i), 1) => Ok(i),
        (None, _) => Err(MemoryError::NoMatch {
            old_text: old_text.to_string(),
        }),
        (_, count) => Err(MemoryError::Ambiguous {
            old_text: old_text.to_string(),
            count,
        }),
    }
}

fn apply_one(entries: &mut Vec<String>, op: &MemoryOp) -> Result<(), MemoryError> {
    match op {
        MemoryOp::Add { content } => {
            let content = content.trim().to_string();
            if !entries.contains(&content) {
                entries.push(content);
            }
        }
        MemoryOp::Replace { old_text, content } => {
            let i = find_unique(entries, old_text)?;
            let old = entries[i].clone();
            let content = content.trim().to_string();
            // Identical copies of the old entry collapse into the replacement.
            let mut kept: Vec<String> = Vec::with_capacity(entries.len());
            for (j, e) in entries.iter().enumerate() {
                if j == i {
                    kept.push(content.clone());
                } else if *e != old {
                    kept.push(e.clone());
                }
            }
            // The replacement may now duplicate another entry: keep the first.
            let mut seen: Vec<String> = Vec::with_capacity(kept.len());
            for e in kept {
                if e != content || !seen.contains(&e) {
                    seen.push(e);
                }
            }
            *entries = seen;
        }
        MemoryOp::Remove { old_text } => {
            let i = find_unique(entries, old_text)?;
            let old = entries[i].clone();
            entries.retain(|e| *e != old);
        }
    }
    Ok(())
}

fn write_atomic(dir: &Path, path: &Path, content: &str) -> Result<(), MemoryError> {
    let io = |source| MemoryError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    tmp.write_all(content.as_bytes()).map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}
