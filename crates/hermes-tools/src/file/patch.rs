//! `patch(path, old_string, new_string, replace_all?)`: targeted find-and-replace edits.

use hermes_protocol::ToolSpec;
use serde_json::{Value, json};

use super::{opt_bool, req_str};
use crate::tool::{Access, Parallelism, Tool, ToolContext, ToolOutput};

/// `patch`: replaces `old_string` with `new_string` in one file; see [`apply_patch`] for the
/// matching rules. The path goes through
/// [`crate::sandbox::SandboxPolicy::check_write`]; the write is atomic.
#[derive(Debug, Clone, Copy, Default)]
pub struct PatchTool;

/// What [`apply_patch`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchOutcome {
    /// The new file content.
    pub content: String,
    /// Number of regions replaced.
    pub replacements: usize,
    /// `"exact"`, `"trailing-whitespace"` or `"indentation"`: the strategy that matched.
    pub strategy: &'static str,
}

/// Replaces `old` with `new` in `content` (FEATURES §4; case C25).
///
/// - Line endings: a file whose every newline is CRLF is edited in LF form and written back
///   with CRLF throughout, so `old`/`new` may use either; mixed files are matched as they are.
/// - Exact substring match first; it must be unique unless `replace_all`.
/// - Otherwise whole lines are compared ignoring trailing whitespace, then ignoring
///   indentation. For an indentation-tolerant match each replacement line is re-indented by
///   the difference between the matched file line's indentation and `old`'s line: one common
///   delta when all lines agree, else each line keeps its own delta anchored to the line of
///   the match at the same position (the last one for extra lines), so a column-0 first line
///   copied without its indent does not shift the others (C25).
///
/// # Errors
/// Empty `old`, `old == new`, no match, or several matches without `replace_all` (the message
/// gives the count).
pub fn apply_patch(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<PatchOutcome, String> {
    if old.is_empty() {
        return Err("old_string is empty; use write_file to create or replace a whole file".into());
    }
    if old == new {
        return Err("old_string and new_string are identical; nothing to change".into());
    }
    let newlines = content.matches('\n').count();
    let crlf = newlines > 0 && content.matches("\r\n").count() == newlines;
    let (work, old, new) = if crlf {
        (
            content.replace("\r\n", "\n"),
            old.replace("\r\n", "\n"),
            new.replace("\r\n", "\n"),
        )
    } else if !content.contains("\r\n") {
        (
            content.to_string(),
            old.replace("\r\n", "\n"),
            new.replace("\r\n", "\n"),
        )
    } else {
        (content.to_string(), old.to_string(), new.to_string())
    };
    let outcome = replace_in(&work, &old, &new, replace_all)?;
    Ok(if crlf {
        PatchOutcome {
            content: outcome.content.replace('\n', "\r\n"),
            ..outcome
        }
    } else {
        outcome
    })
}

fn too_many(count: usize) -> String {
    format!(
        "old_string matches {count} places; include more surrounding lines to make it unique, \
         or set replace_all=true to replace every match"
    )
}

fn replace_in(work: &str, old: &str, new: &str, replace_all: bool) -> Result<PatchOutcome, String> {
    let count = work.matches(old).count();
    if count == 1 || (count > 1 && replace_all) {
        return Ok(PatchOutcome {
            content: work.replace(old, new),
            replacements: count,
            strategy: "exact",
        });
    }
    if count > 1 {
        return Err(too_many(count));
    }
    let file_lines: Vec<&str> = work.split_inclusive('\n').collect();
    let old_trimmed = old.strip_suffix('\n').unwrap_or(old);
    let new_trimmed = if old_trimmed.len() < old.len() {
        new.strip_suffix('\n').unwrap_or(new)
    } else {
        new
    };
    let old_lines: Vec<&str> = old_trimmed.split('\n').collect();
    let new_lines: Vec<&str> = new_trimmed.split('\n').collect();
    type Eq = fn(&str, &str) -> bool;
    let strategies: [(&'static str, Eq); 2] = [
        ("trailing-whitespace", |a, b| a.trim_end() == b.trim_end()),
        ("indentation", |a, b| a.trim() == b.trim()),
    ];
    for (name, eq) in strategies {
        let starts = find_windows(&file_lines, &old_lines, eq);
        if starts.is_empty() {
            continue;
        }
        if starts.len() > 1 && !replace_all {
            return Err(too_many(starts.len()));
        }
        let mut out = String::new();
        let mut i = 0;
        let mut next = starts.iter().peekable();
        while i < file_lines.len() {
            if next.peek() == Some(&&i) {
                next.next();
                let window = &file_lines[i..i + old_lines.len()];
                let replaced = reindent(window, &old_lines, &new_lines);
                out.push_str(&replaced.join("\n"));
                if window.last().is_some_and(|l| l.ends_with('\n')) {
                    out.push('\n');
                }
                i += old_lines.len();
            } else {
                out.push_str(file_lines[i]);
                i += 1;
            }
        }
        return Ok(PatchOutcome {
            content: out,
            replacements: starts.len(),
            strategy: name,
        });
    }
    Err(
        "old_string was not found in the file (also tried ignoring trailing whitespace and \
         indentation); read the file again and copy the exact text"
            .into(),
    )
}

/// Non-overlapping start indices of windows of `file` whose lines equal `old` under `eq`.
fn find_windows(file: &[&str], old: &[&str], eq: fn(&str, &str) -> bool) -> Vec<usize> {
    let mut out = Vec::new();
    if old.iter().all(|l| l.trim().is_empty()) || old.len() > file.len() {
        return out;
    }
    let mut i = 0;
    while i + old.len() <= file.len() {
        let hit = old
            .iter()
            .zip(&file[i..i + old.len()])
            .all(|(o, f)| eq(o, f.trim_end_matches('\n')));
        if hit {
            out.push(i);
            i += old.len();
        } else {
            i += 1;
        }
    }
    out
}

fn indent_of(s: &str) -> &str {
    &s[..s.len() - s.trim_start().len()]
}

/// Re-indents `new` for a match of `old` on `window` (see [`apply_patch`]).
fn reindent(window: &[&str], old: &[&str], new: &[&str]) -> Vec<String> {
    // Per old line: (delta in chars, file indentation); blank lines inherit a neighbour's.
    let mut deltas: Vec<Option<(isize, String)>> = old
        .iter()
        .zip(window)
        .map(|(o, f)| {
            let f = f.trim_end_matches('\n');
            if o.trim().is_empty() {
                None
            } else {
                let fi = indent_of(f);
                Some((
                    fi.chars().count() as isize - indent_of(o).chars().count() as isize,
                    fi.to_string(),
                ))
            }
        })
        .collect();
    let first = deltas
        .iter()
        .flatten()
        .next()
        .cloned()
        .unwrap_or((0, String::new()));
    let mut prev = first.clone();
    for d in deltas.iter_mut() {
        match d {
            Some(v) => prev = v.clone(),
            None => *d = Some(prev.clone()),
        }
    }
    let per_line: Vec<(isize, String)> = deltas.into_iter().flatten().collect();
    let consistent = per_line.iter().all(|(d, _)| *d == first.0);
    new.iter()
        .enumerate()
        .map(|(m, line)| {
            if line.trim().is_empty() {
                return line.trim_end_matches('\r').to_string();
            }
            let (delta, file_indent) = if consistent {
                first.clone()
            } else {
                per_line
                    .get(m.min(per_line.len().saturating_sub(1)))
                    .cloned()
                    .unwrap_or_default()
            };
            shift(line, delta, &file_indent)
        })
        .collect()
}

/// Adds `delta` indentation characters (taken from `file_indent`, else spaces) or removes
/// up to `-delta` leading whitespace characters.
fn shift(line: &str, delta: isize, file_indent: &str) -> String {
    if delta > 0 {
        let add: String = file_indent
            .chars()
            .chain(std::iter::repeat(' '))
            .take(delta.unsigned_abs())
            .collect();
        format!("{add}{line}")
    } else if delta < 0 {
        let own = indent_of(line);
        let drop: usize = own
            .chars()
            .take(delta.unsigned_abs())
            .map(char::len_utf8)
            .sum();
        line[drop..].to_string()
    } else {
        line.to_string()
    }
}

#[async_trait::async_trait]
impl Tool for PatchTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "patch".into(),
            description: "Replace old_string with new_string in a file. old_string must match \
                          exactly one place unless replace_all is true; include surrounding \
                          lines to make it unique. Whitespace/indentation differences are \
                          tolerated; line endings and indentation of the file are kept."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File to edit."},
                    "old_string": {"type": "string", "description": "Exact text to replace."},
                    "new_string": {"type": "string", "description": "Replacement text."},
                    "replace_all": {"type": "boolean", "description": "Replace every match (default false)."}
                },
                "required": ["path", "old_string", "new_string"]
            }),
        }
    }
    fn toolset(&self) -> &'static str {
        super::TOOLSET
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::PathScoped {
            arg: "path",
            access: Access::Write,
        }
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let parsed = (|| -> Result<_, String> {
            Ok((
                req_str(&args, "path")?.to_string(),
                req_str(&args, "old_string")?.to_string(),
                req_str(&args, "new_string")?.to_string(),
                opt_bool(&args, "replace_all")?.unwrap_or(false),
            ))
        })();
        let (shown, old, new, all) = match parsed {
            Ok(v) => v,
            Err(e) => return ToolOutput::error(e),
        };
        let path = ctx.resolve_path(&shown);
        let policy = ctx.policy();
        let job = move |policy: &crate::sandbox::SandboxPolicy| -> Result<String, String> {
            let target = policy.check_write(&path)?;
            let bytes = std::fs::read(&target).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => {
                    format!("file not found: {shown}; use write_file to create it")
                }
                _ => format!("cannot read {shown}: {e}"),
            })?;
            let content = String::from_utf8(bytes)
                .map_err(|_| format!("{shown} is not UTF-8 text; patch only edits text files"))?;
            let outcome = apply_patch(&content, &old, &new, all)?;
            super::write::write_confined(&target, outcome.content.as_bytes())
                .map_err(|e| format!("cannot write {shown}: {e}"))?;
            Ok(format!(
                "Patched {shown}: {} replacement{} ({} match)",
                outcome.replacements,
                if outcome.replacements == 1 { "" } else { "s" },
                outcome.strategy
            ))
        };
        match crate::sandbox::confined(policy, job).await {
            Ok(t) => ToolOutput::ok(t),
            Err(e) => ToolOutput::error(e),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn indentation_tolerant_match_reindents_consistently() {
        let file = "fn a() {\n    if x {\n        y();\n    }\n}\n";
        let out = apply_patch(file, "if x {\n    y();\n}", "if x {\n    z();\n}", false).unwrap();
        assert_eq!(out.strategy, "indentation");
        assert_eq!(
            out.content,
            "fn a() {\n    if x {\n        z();\n    }\n}\n"
        );
    }

    #[test]
    fn inconsistent_deltas_anchor_each_line() {
        let file = "def run():\n    while n:\n        n -= 1 \n        log(n)\n";
        let out = apply_patch(
            file,
            "while n:\n        n -= 1\n        log(n)",
            "while n:\n        n -= 2\n        log(n, 'x')",
            false,
        )
        .unwrap();
        assert_eq!(
            out.content,
            "def run():\n    while n:\n        n -= 2\n        log(n, 'x')\n"
        );
    }
}
