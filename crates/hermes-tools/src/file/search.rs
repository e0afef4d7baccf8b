//! `search_files(pattern, path?, glob?, target?, limit?, case_insensitive?, hidden?)`:
//! ripgrep semantics through the `ignore` walker and `grep-searcher` (FEATURES §4).

use std::path::{Path, PathBuf};

use globset::{Glob, GlobMatcher};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::Lossy};
use hermes_protocol::ToolSpec;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{opt_bool, opt_str, opt_u64, req_str};
use crate::tool::{Parallelism, Tool, ToolContext, ToolOutput};

/// Results returned when `limit` is not given.
pub const DEFAULT_MAX_RESULTS: u64 = 100;
/// Characters of a matching line shown before it is cut.
const MAX_MATCH_LINE_CHARS: usize = 300;

/// `search_files`: searches file contents (`target: "content"`, default) for a regex and
/// returns `path:line:text` rows, or lists files (`target: "files"`) whose name or relative
/// path matches `pattern` as a glob. `.gitignore`/`.ignore` rules are respected and hidden
/// files skipped unless `hidden: true`; `glob` further restricts the files searched. At most
/// `limit` rows (default [`DEFAULT_MAX_RESULTS`]); a note says when more exist. Paths are
/// shown relative to the working directory when they are inside it.
#[derive(Debug, Clone, Copy, Default)]
pub struct SearchFilesTool;

struct Query {
    pattern: String,
    root: PathBuf,
    /// `root` canonicalized, for the sandbox policy.
    canonical_root: PathBuf,
    policy: crate::sandbox::SandboxPolicy,
    cwd: PathBuf,
    glob: Option<GlobMatcher>,
    files_mode: bool,
    limit: usize,
    case_insensitive: bool,
    hidden: bool,
}

fn glob_matcher(pattern: &str) -> Result<GlobMatcher, String> {
    Glob::new(pattern)
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("invalid glob `{pattern}`: {e}"))
}

fn glob_hit(g: &GlobMatcher, path: &Path, root: &Path) -> bool {
    let rel = path.strip_prefix(root).unwrap_or(path);
    g.is_match(rel) || path.file_name().is_some_and(|n| g.is_match(n))
}

fn display(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

fn run(q: Query, cancel: CancellationToken) -> Result<String, String> {
    if !q.root.exists() {
        return Err(format!("search path not found: {}", q.root.display()));
    }
    let walker = ignore::WalkBuilder::new(&q.root)
        .hidden(!q.hidden)
        .require_git(false)
        .sort_by_file_path(|a, b| a.cmp(b))
        .build();
    let name_glob = if q.files_mode {
        Some(glob_matcher(&q.pattern)?)
    } else {
        None
    };
    let matcher = if q.files_mode {
        None
    } else {
        Some(
            RegexMatcherBuilder::new()
                .case_insensitive(q.case_insensitive)
                .build(&q.pattern)
                .map_err(|e| format!("invalid regex `{}`: {e}", q.pattern))?,
        )
    };
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let mut rows: Vec<String> = Vec::new();
    let mut more = false;
    for entry in walker {
        if cancel.is_cancelled() {
            return Err("search cancelled".into());
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        // The walk does not follow symlinks, so below the canonical root every path is
        // canonical: files the sandbox keeps secret are skipped, unread.
        let canonical = q
            .canonical_root
            .join(path.strip_prefix(&q.root).unwrap_or(path));
        if !q.policy.may_read_canonical(&canonical) {
            continue;
        }
        if let Some(g) = &q.glob
            && !glob_hit(g, path, &q.root)
        {
            continue;
        }
        if let Some(g) = &name_glob {
            if glob_hit(g, path, &q.root) {
                if rows.len() >= q.limit {
                    more = true;
                    break;
                }
                rows.push(display(path, &q.cwd));
            }
            continue;
        }
        let Some(m) = &matcher else { continue };
        let shown = display(path, &q.cwd);
        let _ = searcher.search_path(
            m,
            path,
            Lossy(|line_no, line| {
                if rows.len() >= q.limit {
                    more = true;
                    return Ok(false);
                }
                let text = line.trim_end_matches(['\n', '\r']);
                let text = if text.chars().count() > MAX_MATCH_LINE_CHARS {
                    let cut: String = text.chars().take(MAX_MATCH_LINE_CHARS).collect();
                    format!("{cut}…")
                } else {
                    text.to_string()
                };
                rows.push(format!("{shown}:{line_no}:{text}"));
                Ok(true)
            }),
        );
        if more {
            break;
        }
    }
    if rows.is_empty() {
        return Ok(if q.files_mode {
            format!("No files matching `{}`.", q.pattern)
        } else {
            format!("No matches for `{}`.", q.pattern)
        });
    }
    let mut out = rows.join("\n");
    if more {
        out.push_str(&format!(
            "\n[results capped at {}; narrow the pattern, path or glob, or raise limit]",
            q.limit
        ));
    }
    Ok(out)
}

#[async_trait::async_trait]
impl Tool for SearchFilesTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "search_files".into(),
            description: "Search file contents with a regex (ripgrep semantics, .gitignore \
                          respected) and get `path:line:text` rows, or with target=\"files\" \
                          list files whose name matches `pattern` as a glob."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regex for content search; glob (e.g. \"*.rs\") for target=files."},
                    "path": {"type": "string", "description": "Directory or file to search (default: working directory)."},
                    "glob": {"type": "string", "description": "Only search files matching this glob (e.g. \"*.py\")."},
                    "target": {"type": "string", "enum": ["content", "files"], "description": "content (default) or files."},
                    "limit": {"type": "integer", "minimum": 1, "description": "Maximum rows (default 100)."},
                    "case_insensitive": {"type": "boolean", "description": "Ignore case (default false)."},
                    "hidden": {"type": "boolean", "description": "Include hidden files (default false)."}
                },
                "required": ["pattern"]
            }),
        }
    }
    fn toolset(&self) -> &'static str {
        super::TOOLSET
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Safe
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let parsed = (|| -> Result<Query, String> {
            let target = opt_str(&args, "target").unwrap_or("content");
            let files_mode = match target {
                "content" => false,
                "files" => true,
                other => {
                    return Err(format!(
                        "target must be \"content\" or \"files\", got `{other}`"
                    ));
                }
            };
            let root = ctx.resolve_path(opt_str(&args, "path").unwrap_or("."));
            let policy = ctx.policy();
            let canonical_root = policy.check_read(&root)?;
            Ok(Query {
                pattern: req_str(&args, "pattern")?.to_string(),
                root,
                canonical_root,
                policy,
                cwd: ctx.cwd.clone(),
                glob: opt_str(&args, "glob").map(glob_matcher).transpose()?,
                files_mode,
                limit: opt_u64(&args, "limit")?
                    .unwrap_or(DEFAULT_MAX_RESULTS)
                    .max(1) as usize,
                case_insensitive: opt_bool(&args, "case_insensitive")?.unwrap_or(false),
                hidden: opt_bool(&args, "hidden")?.unwrap_or(false),
            })
        })();
        let q = match parsed {
            Ok(q) => q,
            Err(e) => return ToolOutput::error(e),
        };
        let cancel = ctx.cancel.clone();
        let policy = q.policy.clone();
        match crate::sandbox::confined(policy, move |_| run(q, cancel)).await {
            Ok(t) => ToolOutput::ok(t),
            Err(e) => ToolOutput::error(e),
        }
    }
}
