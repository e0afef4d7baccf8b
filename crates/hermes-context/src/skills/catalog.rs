//! Finding and indexing installed skills (FEATURES §7): `skills/<category>/<name>/SKILL.md`,
//! the prompt's skills index with platform filtering and conditional activation, and a disk
//! snapshot of the parsed catalog keyed by every `SKILL.md`'s mtime and size, behind an
//! in-process cache with the same key.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

use crate::fragments::Fragment;
use crate::skills::frontmatter::parse_skill_md;

/// Longest description shown in the index, in chars; longer ones end in "…" (FEATURES §7).
pub const INDEX_DESCRIPTION_MAX_CHARS: usize = 1_024;
/// File name of the disk snapshot of the catalog inside the skills directory.
pub const SNAPSHOT_FILE: &str = ".skills_index.json";
/// Directory depth searched below the skills root for `SKILL.md` files.
const MAX_DEPTH: usize = 4;

/// One installed skill, as listed in the index (the body is read on demand).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// Frontmatter `name`, else the directory name.
    pub name: String,
    /// Frontmatter `description` (may be empty).
    pub description: String,
    /// The path between the root and the skill directory (`apple`, `a/b`); `None` at top level.
    pub category: Option<String>,
    /// The skill directory.
    pub dir: PathBuf,
    /// `platforms` (lower case); empty means all.
    pub platforms: Vec<String>,
    /// `metadata.hermes.tags`.
    pub tags: Vec<String>,
    /// `metadata.hermes.requires_toolsets`.
    pub requires_toolsets: Vec<String>,
    /// `metadata.hermes.requires_tools`.
    pub requires_tools: Vec<String>,
    /// `metadata.hermes.fallback_for_toolsets`.
    pub fallback_for_toolsets: Vec<String>,
    /// `metadata.hermes.fallback_for_tools`.
    pub fallback_for_tools: Vec<String>,
}

/// A `SKILL.md` that could not be loaded; it is skipped, never fatal (case C22).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillLoadError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub message: String,
}

/// Every skill under one root.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillCatalog {
    /// The skills, sorted by category then name.
    pub skills: Vec<SkillEntry>,
    /// Files that were skipped, with the reason.
    pub errors: Vec<SkillLoadError>,
}

/// What decides which skills the index shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexFilter<'a> {
    /// This machine's platform: `linux`, `macos` or `windows` ([`current_platform`]).
    pub platform: &'a str,
    /// Names of the tools the session offers.
    pub tool_names: &'a [String],
    /// Names of the toolsets that are on.
    pub toolsets: &'a [String],
}

/// `std::env::consts::OS` in the names skills use (`macos`, `linux`, `windows`).
pub fn current_platform() -> &'static str {
    std::env::consts::OS
}

/// One `(path, mtime in ns, size in bytes)` per `SKILL.md`, sorted: the snapshot key.
type Manifest = Vec<(PathBuf, u128, u64)>;

#[derive(Serialize, Deserialize)]
struct Snapshot {
    manifest: Manifest,
    catalog: SkillCatalog,
}

/// The in-process layer of [`SkillCatalog::load_cached`]: one `(manifest, catalog)` per
/// skills root.
type MemoryCache = HashMap<PathBuf, (Manifest, SkillCatalog)>;

static MEMORY_CACHE: LazyLock<Mutex<MemoryCache>> = LazyLock::new(|| Mutex::new(HashMap::new()));

fn memory_cache_get(root: &Path, key: &Manifest) -> Option<SkillCatalog> {
    let cache = MEMORY_CACHE.lock().ok()?;
    cache
        .get(root)
        .filter(|(manifest, _)| manifest == key)
        .map(|(_, catalog)| catalog.clone())
}

fn memory_cache_put(root: &Path, key: &Manifest, catalog: &SkillCatalog) {
    if let Ok(mut cache) = MEMORY_CACHE.lock() {
        cache.insert(root.to_path_buf(), (key.clone(), catalog.clone()));
    }
}

fn find_skill_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let skill = dir.join("SKILL.md");
        if depth > 0 && skill.is_file() {
            out.push(skill);
            continue; // support folders of a skill hold no further skills
        }
        if depth >= MAX_DEPTH {
            continue;
        }
        let Ok(read) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            let name = entry.file_name();
            let hidden = name.to_string_lossy().starts_with('.');
            if !hidden && entry.path().is_dir() {
                stack.push((entry.path(), depth + 1));
            }
        }
    }
    out.sort();
    out
}

fn manifest(files: &[PathBuf]) -> Manifest {
    files
        .iter()
        .map(|p| {
            let meta = fs::metadata(p).ok();
            let mtime = meta
                .as_ref()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            (p.clone(), mtime, meta.map_or(0, |m| m.len()))
        })
        .collect()
}

fn load_one(root: &Path, path: &Path) -> Result<SkillEntry, String> {
    let bytes = fs::read(path).map_err(|e| e.to_string())?;
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?;
    let parsed = parse_skill_md(&text).map_err(|e| e.to_string())?;
    let dir = path.parent().unwrap_or(root).to_path_buf();
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let category = dir
        .parent()
        .and_then(|p| p.strip_prefix(root).ok())
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .filter(|c| !c.is_empty());
    let m = parsed.meta;
    Ok(SkillEntry {
        name: m.name.unwrap_or(dir_name),
        description: m.description.unwrap_or_default(),
        category,
        dir,
        platforms: m.platforms,
        tags: m.tags,
        requires_toolsets: m.requires_toolsets,
        requires_tools: m.requires_tools,
        fallback_for_toolsets: m.fallback_for_toolsets,
        fallback_for_tools: m.fallback_for_tools,
    })
}

impl SkillCatalog {
    /// Parses every `SKILL.md` under `root` (up to 4 levels, hidden directories skipped).
    /// A missing root is an empty catalog. Blocking I/O.
    pub fn load(root: &Path) -> SkillCatalog {
        SkillCatalog::from_files(root, &find_skill_files(root))
    }

    fn from_files(root: &Path, files: &[PathBuf]) -> SkillCatalog {
        let mut catalog = SkillCatalog::default();
        for path in files {
            match load_one(root, path) {
                Ok(skill) => catalog.skills.push(skill),
                Err(message) => {
                    tracing::warn!(path = %path.display(), %message, "skill skipped");
                    catalog.errors.push(SkillLoadError {
                        path: path.clone(),
                        message,
                    });
                }
            }
        }
        catalog
            .skills
            .sort_by(|a, b| (&a.category, &a.name).cmp(&(&b.category, &b.name)));
        catalog
    }

    /// Like [`SkillCatalog::load`], but reuses `root/.skills_index.json` when every
    /// `SKILL.md`'s path, mtime and size still match it, and rewrites it otherwise. A broken
    /// or unwritable snapshot only costs a full parse. Blocking I/O.
    ///
    /// In front of the disk snapshot sits an in-process cache per root with the same key, so
    /// a process that builds many prompts (the gateway) stats the files but neither reads
    /// nor parses anything while no skill changed (FEATURES §7).
    pub fn load_cached(root: &Path) -> SkillCatalog {
        // A span for the prompt's skills index (issue 24 §1): how many skills and where they
        // came from (`memory`, `snapshot` or `parsed`).
        let span = tracing::info_span!(
            "skills.load",
            "hermes.skills.count" = tracing::field::Empty,
            "hermes.skills.source" = tracing::field::Empty,
        );
        let _entered = span.enter();
        let (catalog, source) = SkillCatalog::load_cached_from(root);
        span.record("hermes.skills.count", catalog.skills.len());
        span.record("hermes.skills.source", source);
        catalog
    }

    fn load_cached_from(root: &Path) -> (SkillCatalog, &'static str) {
        let files = find_skill_files(root);
        let key = manifest(&files);
        if let Some(hit) = memory_cache_get(root, &key) {
            return (hit, "memory");
        }
        let snap_path = root.join(SNAPSHOT_FILE);
        if let Ok(bytes) = fs::read(&snap_path)
            && let Ok(snap) = serde_json::from_slice::<Snapshot>(&bytes)
            && snap.manifest == key
        {
            memory_cache_put(root, &snap.manifest, &snap.catalog);
            return (snap.catalog, "snapshot");
        }
        let catalog = SkillCatalog::from_files(root, &files);
        memory_cache_put(root, &key, &catalog);
        if root.is_dir() {
            let snap = Snapshot {
                manifest: key,
                catalog,
            };
            if let Ok(json) = serde_json::to_vec(&snap)
                && let Err(e) = hermes_protocol::private_fs::write(&snap_path, json)
            {
                tracing::debug!(error = %e, "skills snapshot not written");
            }
            return (snap.catalog, "parsed");
        }
        (catalog, "parsed")
    }

    /// The catalog without the skills named in `disabled` (`skills.disabled`).
    pub fn without(mut self, disabled: &std::collections::BTreeSet<String>) -> SkillCatalog {
        self.skills.retain(|s| !disabled.contains(&s.name));
        self
    }

    /// The skill called `name` (frontmatter name or directory name).
    pub fn find(&self, name: &str) -> Option<&SkillEntry> {
        self.skills.iter().find(|s| s.name == name).or_else(|| {
            self.skills
                .iter()
                .find(|s| s.dir.file_name().is_some_and(|d| d == name))
        })
    }

    /// Skills the index shows for `filter`: platform matches (or the skill names none), every
    /// `requires_*` is present, and no `fallback_for_*` is present (FEATURES §7).
    pub fn visible<'a>(&'a self, filter: &IndexFilter<'_>) -> Vec<&'a SkillEntry> {
        let has_tool = |t: &String| filter.tool_names.contains(t);
        let has_set = |t: &String| filter.toolsets.contains(t);
        self.skills
            .iter()
            .filter(|s| {
                (s.platforms.is_empty() || s.platforms.iter().any(|p| p == filter.platform))
                    && s.requires_tools.iter().all(has_tool)
                    && s.requires_toolsets.iter().all(has_set)
                    && !s.fallback_for_tools.iter().any(has_tool)
                    && !s.fallback_for_toolsets.iter().any(has_set)
            })
            .collect()
    }

    /// The skills-index layer ([`crate::LayerKind::SkillsIndex`]): visible skills grouped by
    /// category (sorted; top-level skills under `general`), names sorted, descriptions on one
    /// line and cut to [`INDEX_DESCRIPTION_MAX_CHARS`] with "…". `None` when nothing is visible.
    pub fn render_index(&self, filter: &IndexFilter<'_>) -> Option<String> {
        let mut rows: Vec<(&str, &str, String)> = self
            .visible(filter)
            .into_iter()
            .map(|s| {
                (
                    s.category.as_deref().unwrap_or("general"),
                    s.name.as_str(),
                    one_line(&s.description),
                )
            })
            .collect();
        if rows.is_empty() {
            return None;
        }
        rows.sort();
        let mut text = String::new();
        let mut current: Option<&str> = None;
        for (category, name, description) in rows {
            if current != Some(category) {
                if current.is_some() {
                    text.push('\n');
                }
                text.push_str(category);
                text.push_str(":\n");
                current = Some(category);
            }
            if description.is_empty() {
                text.push_str(&format!("- {name}\n"));
            } else {
                text.push_str(&format!("- {name}: {description}\n"));
            }
        }
        Some(
            Fragment::SkillsIndex
                .render(&[("skills", text.trim_end())])
                .trim()
                .to_string(),
        )
    }
}

fn one_line(s: &str) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > INDEX_DESCRIPTION_MAX_CHARS {
        let mut cut: String = flat.chars().take(INDEX_DESCRIPTION_MAX_CHARS - 1).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}
