//! Declarative HTTP tools (seed 004 §3.2, "YAML beats code"; issue 26 item 4): a tool
//! declared in `HERMES_HOME/tools/<name>.yaml` — name, description, version, input and
//! output JSON Schemas, an HTTP endpoint with `${NAME}` secrets in its headers, a timeout, a
//! health endpoint and a fallback — checked when it is loaded and served as a [`Tool`] of the
//! `declarative` toolset ([`DeclaredTool`]).
//!
//! [`load_dir`] reads every `*.yaml` / `*.yml` file of the folder, in name order, and
//! returns the tools of the files that passed and every problem of those that did not, each
//! as `file:line:column: message` ([`Problem`]; `hermes tools check` prints them). The checks
//! ([`spec`]): YAML syntax; no unknown keys; required keys present with the right types;
//! `input_schema` and `output_schema` valid JSON Schema of draft 2020-12 or 7, with `default`s
//! that match their schemas; URL templates that parse, are http or https, use `{arg}`s that
//! are properties of `input_schema` and only after the host, and pass the web tools' address
//! guard ([`crate::web::ssrf`]; private and metadata addresses need
//! `web.allow_private_urls: true`); a tool name that is the file's name and no built-in's.

pub mod locate;
mod monitor;
mod schema_check;
pub mod spec;
pub mod template;
mod tool;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use spec::{DeclaredSpec, Fallback};
pub use tool::{DECLARATIVE_TOOLSET, DeclaredTool, MAX_RESPONSE_BYTES};

use crate::tool::Tool;

/// Largest tool file read (64 KiB); a larger one is a problem.
pub const MAX_FILE_BYTES: u64 = hermes_protocol::yaml::MAX_TOOL_FILE_BYTES;

/// Most values a tool file may expand to through YAML aliases (an alias bomb is a problem,
/// not a memory exhaustion; [`hermes_protocol::yaml::from_str_bounded`]).
pub const MAX_FILE_VALUES: usize = hermes_protocol::yaml::MAX_TOOL_FILE_VALUES;

/// Most problems of one file that are listed (with their place); the rest are counted.
pub const MAX_PROBLEMS_LISTED: usize = 50;

/// What loading needs besides the files.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `web.allow_private_urls`: endpoints on loopback, private or metadata addresses.
    pub allow_private_urls: bool,
    /// The variables `${NAME}` may use: `HERMES_HOME/.env` over the process environment.
    pub env: BTreeMap<String, String>,
    /// Names already taken (the built-in tools): a file may not declare one.
    pub reserved_names: HashSet<String>,
}

/// One problem of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file.
    pub file: PathBuf,
    /// 1-based line of the offending key (or of the syntax error).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong, naming the key (`input_schema.properties.n.default: …`).
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file.display(),
            self.line,
            self.column,
            self.message
        )
    }
}

/// The result of [`load_dir`].
#[derive(Debug, Default)]
pub struct LoadReport {
    /// Every tool file found, in name order.
    pub files: Vec<PathBuf>,
    /// The tools of the files without problems, in file order.
    pub tools: Vec<Arc<DeclaredTool>>,
    /// Every problem of the other files, in file order.
    pub problems: Vec<Problem>,
}

impl LoadReport {
    /// The tools as [`Tool`]s, for a registry.
    pub fn as_tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools
            .iter()
            .map(|t| t.clone() as Arc<dyn Tool>)
            .collect()
    }
}

/// Loads every tool file of `dir` (`HERMES_HOME/tools`); a missing folder has none.
pub fn load_dir(dir: &Path, opts: &LoadOptions) -> LoadReport {
    let mut report = LoadReport::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return report;
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let mut seen = HashSet::new();
    for file in files {
        match load_file(&file, opts) {
            Ok(tool) => {
                let name = tool.declaration().name.clone();
                if seen.insert(name.clone()) {
                    report.tools.push(Arc::new(tool));
                } else {
                    report.problems.push(Problem {
                        file: file.clone(),
                        line: 1,
                        column: 1,
                        message: format!("another file already declares the tool `{name}`"),
                    });
                }
            }
            Err(problems) => report.problems.extend(problems),
        }
        report.files.push(file);
    }
    report
}

/// Loads one tool file.
///
/// # Errors
/// Every problem of the file, with line and column.
pub fn load_file(file: &Path, opts: &LoadOptions) -> Result<DeclaredTool, Vec<Problem>> {
    let problem = |line, column, message: String| Problem {
        file: file.to_path_buf(),
        line,
        column,
        message,
    };
    let size = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    if size > MAX_FILE_BYTES {
        return Err(vec![problem(
            1,
            1,
            format!("the file is {size} bytes; a tool file is at most {MAX_FILE_BYTES}"),
        )]);
    }
    let text = std::fs::read_to_string(file)
        .map_err(|e| vec![problem(1, 1, format!("cannot read the file: {e}"))])?;
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let spec = check_text(&text, &stem, opts).map_err(|found| {
        found
            .into_iter()
            .map(|(line, column, message)| problem(line, column, message))
            .collect::<Vec<_>>()
    })?;
    Ok(DeclaredTool::new(
        spec,
        file,
        &opts.env,
        opts.allow_private_urls,
    ))
}

/// Checks the text of a tool file named `<stem>.yaml`.
///
/// # Errors
/// `(line, column, message)` of every problem, in order of place.
pub fn check_text(
    text: &str,
    stem: &str,
    opts: &LoadOptions,
) -> Result<DeclaredSpec, Vec<(usize, usize, String)>> {
    let doc = hermes_protocol::yaml::from_str_bounded(text, MAX_FILE_VALUES).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((1, 1));
        let message = e
            .to_string()
            .replacen(&format!(" at line {line} column {column}"), "", 1);
        vec![(line, column, format!("not valid YAML: {message}"))]
    })?;
    let mut found = match spec::check(&doc, stem, &opts.env, opts.allow_private_urls) {
        Ok(spec) if opts.reserved_names.contains(&spec.name) => vec![(
            vec![locate::Seg::key("name")],
            format!(
                "`{}` is the name of a built-in tool; pick another name",
                spec.name
            ),
        )],
        Ok(spec) => return Ok(spec),
        Err(found) => found,
    };
    // Each place is found by reading the document again: only the first problems are
    // placed and listed (a file of thousands of unknown keys must not take minutes).
    let unlisted = found.len().saturating_sub(MAX_PROBLEMS_LISTED);
    let mut out: Vec<(usize, usize, String)> = found
        .drain(..)
        .take(MAX_PROBLEMS_LISTED)
        .map(|(path, message)| {
            let (line, column) = locate::locate_nearest(text, &path);
            let message = if path.is_empty() {
                message
            } else {
                format!("{}: {message}", locate::display_path(&path))
            };
            (line, column, message)
        })
        .collect();
    out.sort_by_key(|(l, c, _)| (*l, *c));
    if unlisted > 0 {
        out.push((
            1,
            1,
            format!("{unlisted} more problem(s) not listed; fix these first"),
        ));
    }
    Err(out)
}
