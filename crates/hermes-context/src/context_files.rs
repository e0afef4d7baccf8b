//! Project context files (FEATURES §5): discovery, safe symlink handling, the injection scan,
//! and the size cap.
//!
//! First match wins: `.hermes.md` / `HERMES.md` (from the working directory up to the git
//! root; the working directory only outside a git repository), then `AGENTS.md`, `CLAUDE.md`, and `.cursorrules` plus `.cursor/rules/*.mdc` in the
//! working directory. `@path` import lines are expanded one level. Links are followed only to regular files inside the project (the git
//! root, or the working directory when there is none); loops, dangling links and links that
//! leave the project are skipped with a note, and the search goes on. A file, import or
//! pointer target that lands on a secret is skipped too: the sandbox's unreadable locations
//! (`HERMES_HOME/.env`, `auth.json`, `mcp-tokens/`, passed in by the caller) and files named
//! like key material (`.env`, `.env.*`, `.netrc`, `*.pem`, `*.key`, ssh private keys), so a
//! hostile `AGENTS.md` cannot pull them into the prompt with `@../.hermes/.env`. This module
//! reads files with blocking I/O.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::fragments::Fragment;
use crate::injection::{Finding, ScanScope, scan_for_injection};

/// Smallest context-file cap in chars (also the cap when the context window is unknown).
pub const CONTEXT_CAP_MIN_CHARS: usize = 20_000;
/// Largest context-file cap in chars.
pub const CONTEXT_CAP_MAX_CHARS: usize = 500_000;
/// Share of the cap kept from the start of an over-long file, in percent.
pub const HEAD_PERCENT: usize = 70;
/// Share of the cap kept from the end of an over-long file, in percent.
pub const TAIL_PERCENT: usize = 20;
/// Files larger than this many bytes are not read at all (a context file is prose, not data).
pub const MAX_READ_BYTES: u64 = 8 * 1024 * 1024;
/// How many pointer hops (a file whose whole content names another file) are followed.
pub const MAX_POINTER_HOPS: usize = 4;

/// The cap in chars for the project context of a model with a window of `context_window`
/// tokens: `clamp(0.24 · ctx, 20,000, 500,000)`, and 20,000 when the window is unknown
/// (FEATURES §5; `../shared/vectors/numeric_policies.json` `context_file_cap_chars`).
pub fn context_file_cap_chars(context_window: Option<u64>) -> usize {
    let Some(ctx) = context_window else {
        return CONTEXT_CAP_MIN_CHARS;
    };
    let scaled = ctx.saturating_mul(24) / 100;
    let scaled = usize::try_from(scaled).unwrap_or(CONTEXT_CAP_MAX_CHARS);
    scaled.clamp(CONTEXT_CAP_MIN_CHARS, CONTEXT_CAP_MAX_CHARS)
}

/// Shortens `text` to at most `cap_chars` chars (plus the marker) when it is longer: keeps the
/// first 70 % and the last 20 % of the cap and puts a marker between them that names `file`,
/// the number of chars left out and `full_path`, where the whole file can be read. Returns the
/// text and whether it was shortened. Cuts fall on char boundaries.
pub fn truncate_head_tail(
    text: &str,
    cap_chars: usize,
    file: &str,
    full_path: &str,
) -> (String, bool) {
    let total = text.chars().count();
    if total <= cap_chars {
        return (text.to_string(), false);
    }
    let head_chars = cap_chars * HEAD_PERCENT / 100;
    let tail_chars = cap_chars * TAIL_PERCENT / 100;
    let omitted = total - head_chars - tail_chars;
    let head_end = text
        .char_indices()
        .nth(head_chars)
        .map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(total - tail_chars)
        .map_or(text.len(), |(i, _)| i);
    let omitted_text = omitted.to_string();
    let marker = Fragment::ContextTruncated.render(&[
        ("omitted", omitted_text.as_str()),
        ("file", file),
        ("path", full_path),
    ]);
    let mut out = String::with_capacity(head_end + marker.len() + text.len() - tail_start);
    out.push_str(&text[..head_end]);
    out.push_str(&marker);
    out.push_str(&text[tail_start..]);
    (out, true)
}

/// A context file that passed the checks and was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedContextFile {
    /// Name as shown to the model: relative to the working directory (`AGENTS.md`,
    /// `../HERMES.md`, `.cursor/rules/style.mdc`).
    pub name: String,
    /// The path where it was found (working directory joined with `name`).
    pub path: PathBuf,
    /// The file's text (a leading byte-order mark removed), not yet capped.
    pub text: String,
}

/// A context file that was found but not loaded because the injection scan flagged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedContextFile {
    /// Name as shown to the model (see [`LoadedContextFile::name`]).
    pub name: String,
    /// The path where it was found.
    pub path: PathBuf,
    /// What the scan found (at least one).
    pub findings: Vec<Finding>,
}

/// The result of context-file discovery for one working directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextFiles {
    /// Files to put in the prompt, in order (one file, or `.cursorrules` and `.mdc` rules).
    pub loaded: Vec<LoadedContextFile>,
    /// Files of the winning match that the injection scan rejected.
    pub blocked: Vec<BlockedContextFile>,
    /// Human-readable notes about skipped or rejected files, for logs and the user.
    pub notes: Vec<String>,
}

enum Resolved {
    Missing,
    Skipped(String),
    File { real: PathBuf, text: String },
}

impl ContextFiles {
    /// Finds the project context for `cwd` (see the module docs for the order), never
    /// reading inside `secrets` (canonical paths, e.g. [`hermes_tools::sandbox::secret_paths`]).
    /// Never fails: unreadable or unsafe candidates become notes.
    pub fn discover(cwd: &Path, secrets: &[PathBuf]) -> ContextFiles {
        let mut found = ContextFiles::default();
        // Work on the real path: lexical ancestors of `a/../b` are not its real parents.
        let cwd_real = fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        let cwd = cwd_real.as_path();
        let git_root = find_git_root(cwd);
        let root = fs::canonicalize(git_root.as_deref().unwrap_or(cwd))
            .unwrap_or_else(|_| cwd.to_path_buf());

        // 1. .hermes.md / HERMES.md from cwd up to the git root (cwd only without a git root).
        let mut dirs: Vec<(PathBuf, usize)> = vec![(cwd.to_path_buf(), 0)];
        if let Some(git_root) = &git_root {
            let mut up = 0;
            let mut dir = cwd.to_path_buf();
            while dir != *git_root {
                let Some(parent) = dir.parent() else { break };
                dir = parent.to_path_buf();
                up += 1;
                dirs.push((dir.clone(), up));
            }
        }
        for (dir, up) in &dirs {
            for file_name in [".hermes.md", "HERMES.md"] {
                let name = format!("{}{file_name}", "../".repeat(*up));
                if found.try_single(&dir.join(file_name), name, &root, secrets) {
                    return found;
                }
            }
        }

        // 2. AGENTS.md, CLAUDE.md in cwd (lower-case spellings accepted too).
        for file_name in ["AGENTS.md", "agents.md", "CLAUDE.md", "claude.md"] {
            if found.try_single(&cwd.join(file_name), file_name.to_string(), &root, secrets) {
                return found;
            }
        }

        // 3. .cursorrules plus .cursor/rules/*.mdc in cwd, as one group.
        let mut group: Vec<(PathBuf, String)> =
            vec![(cwd.join(".cursorrules"), ".cursorrules".to_string())];
        let rules_dir = cwd.join(".cursor").join("rules");
        if let Ok(entries) = fs::read_dir(&rules_dir) {
            let mut mdc: Vec<String> = entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| n.ends_with(".mdc"))
                .collect();
            mdc.sort();
            for n in mdc {
                group.push((rules_dir.join(&n), format!(".cursor/rules/{n}")));
            }
        }
        for (path, name) in group {
            found.try_single(&path, name, &root, secrets);
        }
        found
    }

    /// Tries one candidate; returns true when it was a match (loaded or blocked).
    fn try_single(&mut self, path: &Path, name: String, root: &Path, secrets: &[PathBuf]) -> bool {
        match resolve(path, &name, root, secrets) {
            Resolved::Missing => false,
            Resolved::Skipped(note) => {
                tracing::debug!(file = %name, %note, "context file skipped");
                self.notes.push(note);
                false
            }
            Resolved::File { real, text } => {
                let text = self.expand_imports(&text, &real, &name, root, secrets);
                let findings = scan_for_injection(&text, ScanScope::Context);
                if findings.is_empty() {
                    self.loaded.push(LoadedContextFile {
                        name,
                        path: path.to_path_buf(),
                        text,
                    });
                } else {
                    let cats: Vec<&str> = findings.iter().map(|f| f.category.as_str()).collect();
                    self.notes.push(format!(
                        "{name} skipped: flagged by injection scan ({})",
                        cats.join(", ")
                    ));
                    tracing::warn!(file = %name, categories = ?cats, "context file flagged by injection scan");
                    self.blocked.push(BlockedContextFile {
                        name,
                        path: path.to_path_buf(),
                        findings,
                    });
                }
                true
            }
        }
    }

    /// Replaces import lines (`@AGENTS.md`, `@./docs/rules.md`: a line holding only `@` and a
    /// relative path, as Claude Code and Gemini CLI write them) with the imported file's text,
    /// one level deep. The import goes through the same link checks as the file itself; one
    /// that cannot be resolved safely stays as written and gets a note.
    fn expand_imports(
        &mut self,
        text: &str,
        real: &Path,
        name: &str,
        root: &Path,
        secrets: &[PathBuf],
    ) -> String {
        let base = real.parent().unwrap_or(root);
        let mut out = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            let trimmed = line.trim();
            let target = trimmed
                .strip_prefix('@')
                .filter(|t| !t.is_empty() && !t.contains(char::is_whitespace))
                .filter(|t| !Path::new(t).is_absolute() && !t.starts_with('~'));
            let Some(target) = target else {
                out.push_str(line);
                continue;
            };
            let import_name = format!("{name} import @{target}");
            match resolve(&base.join(target), &import_name, root, secrets) {
                Resolved::File {
                    real: imported,
                    text: imported_text,
                } if imported != real => {
                    out.push_str(imported_text.trim_end());
                    out.push('\n');
                }
                Resolved::Skipped(note) => {
                    self.notes.push(note);
                    out.push_str(line);
                }
                Resolved::Missing => {
                    self.notes
                        .push(format!("{import_name} skipped: the file does not exist"));
                    out.push_str(line);
                }
                Resolved::File { .. } => out.push_str(line),
            }
        }
        out
    }

    /// Whether nothing was found (no file loaded and none blocked).
    pub fn is_empty(&self) -> bool {
        self.loaded.is_empty() && self.blocked.is_empty()
    }

    /// The prompt section for these files with the whole text capped at `cap_chars` chars
    /// (shared evenly among the loaded files), or `None` when nothing was found. Blocked files
    /// appear as one line each naming the file and the first category found.
    pub fn render(&self, cap_chars: usize) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut parts: Vec<String> = Vec::new();
        for b in &self.blocked {
            let category = b
                .findings
                .first()
                .map_or("unknown", |f| f.category.as_str());
            parts.push(
                Fragment::ContextBlocked
                    .render(&[("file", b.name.as_str()), ("category", category)])
                    .trim_end()
                    .to_string(),
            );
        }
        if !self.loaded.is_empty() {
            let share = cap_chars / self.loaded.len();
            let names: Vec<&str> = self.loaded.iter().map(|f| f.name.as_str()).collect();
            let mut content: Vec<String> = Vec::new();
            for f in &self.loaded {
                let path = f.path.display().to_string();
                let (text, _) = truncate_head_tail(f.text.trim(), share, &f.name, &path);
                content.push(text);
            }
            let joined_names = names.join("`, `");
            let joined_content = content.join("\n\n");
            parts.push(
                Fragment::ContextFile
                    .render(&[
                        ("file", joined_names.as_str()),
                        ("content", joined_content.as_str()),
                    ])
                    .trim_end()
                    .to_string(),
            );
        }
        Some(parts.join("\n\n"))
    }
}

/// The nearest ancestor of `cwd` (itself included) holding a `.git` directory or file. The
/// walk is lexical, so pass a canonical path.
pub fn find_git_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| fs::symlink_metadata(dir.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

/// If the whole (trimmed) text is one path-like token, returns it: a committed symlink that
/// was checked out as a plain file holds just its target (`CLAUDE.md`, `/srv/project/.hermes.md`).
fn pointer_target(text: &str) -> Option<&str> {
    let t = text.trim();
    if t.is_empty() || t.len() > 300 || t.starts_with('@') || t.contains(char::is_whitespace) {
        return None;
    }
    let lower = t.to_ascii_lowercase();
    let looks_like_path = t.starts_with('/')
        || t.starts_with("./")
        || t.starts_with("../")
        || t.starts_with('~')
        || lower.ends_with(".md")
        || lower.ends_with(".mdc")
        || lower.ends_with(".cursorrules");
    looks_like_path.then_some(t)
}

/// Resolves `path` safely: follows links (real ones and checked-out pointer files) only to
/// regular files inside `root` that are neither inside `secrets` nor named like key material.
fn resolve(path: &Path, name: &str, root: &Path, secrets: &[PathBuf]) -> Resolved {
    if fs::symlink_metadata(path).is_err() {
        return Resolved::Missing;
    }
    let mut current = path.to_path_buf();
    for _ in 0..=MAX_POINTER_HOPS {
        let real = match fs::canonicalize(&current) {
            Ok(p) => p,
            Err(e) => {
                return Resolved::Skipped(format!(
                    "{name} skipped: it is a link that cannot be resolved (loop or missing target: {e})"
                ));
            }
        };
        if !real.starts_with(root) {
            return Resolved::Skipped(format!(
                "{name} skipped: it links to {} outside the project",
                real.display()
            ));
        }
        if secrets.iter().any(|d| real.starts_with(d))
            || hermes_tools::safety::is_key_material_name(&real)
        {
            return Resolved::Skipped(format!(
                "{name} skipped: {} holds secrets, which never go into the prompt",
                real.display()
            ));
        }
        // Read what was checked: the canonical path opened with no symlink followed (a
        // command swapping the file for a link to `.env` meanwhile gets ELOOP), then the
        // open file itself checked (a regular file, not a secret under another name).
        let mut file = match hermes_tools::safety::open_no_symlinks(&real) {
            Ok(f) => f,
            Err(e) => return Resolved::Skipped(format!("{name} skipped: cannot read it ({e})")),
        };
        let meta = match file.metadata() {
            Ok(m) => m,
            Err(e) => return Resolved::Skipped(format!("{name} skipped: cannot read it ({e})")),
        };
        if !meta.is_file() {
            return Resolved::Skipped(format!("{name} skipped: it is not a regular file"));
        }
        if hermes_tools::safety::is_same_file_as_any(&meta, secrets) {
            return Resolved::Skipped(format!(
                "{name} skipped: {} is a link to a file that holds secrets",
                real.display()
            ));
        }
        if meta.len() > MAX_READ_BYTES {
            return Resolved::Skipped(format!(
                "{name} skipped: {} bytes is larger than the {MAX_READ_BYTES}-byte read limit",
                meta.len()
            ));
        }
        // Bounded too: the file may grow after the size check.
        let mut bytes = Vec::new();
        if let Err(e) = (&mut file).take(MAX_READ_BYTES).read_to_end(&mut bytes) {
            return Resolved::Skipped(format!("{name} skipped: cannot read it ({e})"));
        }
        let text = String::from_utf8_lossy(&bytes);
        let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text).to_string();
        let Some(target) = pointer_target(&text) else {
            return Resolved::File { real, text };
        };
        if target.starts_with('~') {
            return Resolved::Skipped(format!(
                "{name} skipped: it only points to {target}, outside the project"
            ));
        }
        let base = real.parent().unwrap_or(root);
        let next = base.join(target);
        if fs::symlink_metadata(&next).is_err() {
            let shown = if Path::new(target).is_absolute() {
                target.to_string()
            } else {
                next.display().to_string()
            };
            return Resolved::Skipped(format!(
                "{name} skipped: it only points to {shown}, which does not exist"
            ));
        }
        current = next;
    }
    Resolved::Skipped(format!(
        "{name} skipped: more than {MAX_POINTER_HOPS} pointer hops"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_head_and_tail_on_char_boundaries() {
        let text: String = "é".repeat(100);
        let (out, cut) = truncate_head_tail(&text, 10, "A.md", "/p/A.md");
        assert!(cut);
        assert!(out.starts_with(&"é".repeat(7)));
        assert!(out.ends_with(&"é".repeat(2)));
        assert!(out.contains("91 characters of `A.md`"));
        assert!(out.contains("/p/A.md"));
        let (same, cut) = truncate_head_tail("short", 10, "A.md", "/p/A.md");
        assert_eq!((same.as_str(), cut), ("short", false));
    }

    #[test]
    fn pointer_detection_is_narrow() {
        assert_eq!(pointer_target("CLAUDE.md\n"), Some("CLAUDE.md"));
        assert_eq!(
            pointer_target("/srv/project/.hermes.md"),
            Some("/srv/project/.hermes.md")
        );
        assert_eq!(pointer_target("# Rules\nUse tabs."), None);
        assert_eq!(pointer_target("tabs"), None);
    }
}
