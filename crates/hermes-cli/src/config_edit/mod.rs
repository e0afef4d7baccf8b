//! Surgical edits of `config.yaml` for `hermes mcp add/remove` (FEATURES §11): only the lines
//! of one `mcp_servers:` entry change, so the user's comments, blank lines, key order and
//! quoting elsewhere stay as they were. Each edit is checked by parsing the result: the
//! section must hold exactly the expected servers and every other top-level key must be
//! unchanged, else the edit is refused (and the caller falls back to rewriting the file).

//!
//! [`keys`] does the same for other top-level sections (`model:`, lists such as `toolsets:`),
//! [`path`] for one dotted key at any depth (`hermes config set|unset`).

pub mod keys;
pub mod path;

use serde_json::Value;

/// Why a surgical edit was not possible.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The file is not YAML or not a mapping at the top.
    #[error("config.yaml does not parse: {0}")]
    Parse(String),
    /// `mcp_servers:` has a shape this editor does not rewrite line by line (a flow mapping
    /// with entries, a tag, an anchor, …).
    #[error("`mcp_servers` in config.yaml is not a plain block mapping")]
    Layout,
    /// No server of that name.
    #[error("no MCP server named `{0}`")]
    Missing(String),
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// The key of a `key:` line (plain, single- or double-quoted), without indentation.
fn key_of(line: &str) -> Option<String> {
    let t = line.trim_start();
    let (key, rest) = if let Some(q) = t.strip_prefix('"') {
        let end = q.find('"')?;
        (q[..end].to_string(), &q[end + 1..])
    } else if let Some(q) = t.strip_prefix('\'') {
        let end = q.find('\'')?;
        (q[..end].to_string(), &q[end + 1..])
    } else {
        let end = t.find(':')?;
        (t[..end].trim_end().to_string(), &t[end..])
    };
    let rest = rest.trim_start();
    let after = rest.strip_prefix(':')?;
    (after.is_empty() || after.starts_with([' ', '\t'])).then_some(key)
}

/// What follows `key:` on its line, without a trailing comment.
fn inline_value(line: &str) -> &str {
    let after = line.split_once(':').map(|(_, v)| v).unwrap_or("");
    let v = match after.find(" #") {
        Some(i) => &after[..i],
        None => after,
    };
    v.trim()
}

/// The `mcp_servers:` section: index of its key line and the end (exclusive) of its block.
fn section(lines: &[&str]) -> Option<(usize, usize)> {
    let start = lines
        .iter()
        .position(|l| indent_of(l) == 0 && key_of(l).as_deref() == Some("mcp_servers"))?;
    let mut end = start + 1;
    let mut last_content = start + 1;
    while end < lines.len() {
        let l = lines[end];
        if !is_blank_or_comment(l) {
            if indent_of(l) == 0 {
                break;
            }
            last_content = end + 1;
        }
        end += 1;
    }
    // Blank lines and comments after the last entry belong to what follows.
    Some((start, last_content))
}

/// The child indentation used inside the section (2 when it has no entries yet).
fn child_indent(lines: &[&str], start: usize, end: usize) -> usize {
    lines[start + 1..end]
        .iter()
        .find(|l| !is_blank_or_comment(l))
        .map(|l| indent_of(l))
        .unwrap_or(2)
}

/// Lines `[from, to)` of the entry `name` inside the section.
fn entry(lines: &[&str], start: usize, end: usize, name: &str) -> Option<(usize, usize)> {
    let indent = child_indent(lines, start, end);
    let from = (start + 1..end).find(|&i| {
        let l = lines[i];
        !is_blank_or_comment(l) && indent_of(l) == indent && key_of(l).as_deref() == Some(name)
    })?;
    let mut to = from + 1;
    let mut last = from + 1;
    while to < end {
        let l = lines[to];
        if !l.trim().is_empty() {
            if indent_of(l) <= indent {
                break;
            }
            last = to + 1;
        }
        to += 1;
    }
    Some((from, last))
}

fn parse(text: &str) -> Result<serde_json::Map<String, Value>, EditError> {
    if text.trim().is_empty() {
        return Ok(serde_json::Map::new());
    }
    match yaml_serde::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(Value::Null) => Ok(serde_json::Map::new()),
        Ok(_) => Err(EditError::Parse("the top level is not a mapping".into())),
        Err(e) => Err(EditError::Parse(e.to_string())),
    }
}

fn servers_of(doc: &serde_json::Map<String, Value>) -> serde_json::Map<String, Value> {
    doc.get("mcp_servers")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Checks that `new_text` differs from `old` only in `mcp_servers`, which must equal `want`.
fn verify(
    old: &serde_json::Map<String, Value>,
    new_text: &str,
    want: &serde_json::Map<String, Value>,
) -> Result<(), EditError> {
    let new = parse(new_text).map_err(|_| EditError::Layout)?;
    let strip = |m: &serde_json::Map<String, Value>| {
        let mut m = m.clone();
        m.remove("mcp_servers");
        m
    };
    if strip(old) != strip(&new) || servers_of(&new) != *want {
        return Err(EditError::Layout);
    }
    Ok(())
}

/// The order keys of a new entry are written in; others follow by name.
const KEY_ORDER: &[&str] = &["command", "args", "env", "url", "headers"];

/// `{name: entry}` as block YAML (keys in [`KEY_ORDER`]), every line indented by `indent`
/// spaces.
fn entry_yaml(name: &str, entry: &Value, indent: usize) -> Result<String, EditError> {
    let yaml = |v: &Value| yaml_serde::to_value(v).map_err(|e| EditError::Parse(e.to_string()));
    let body = match entry.as_object() {
        Some(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by_key(|k| {
                KEY_ORDER
                    .iter()
                    .position(|o| o == k)
                    .unwrap_or(KEY_ORDER.len())
            });
            let mut m = yaml_serde::Mapping::new();
            for k in keys {
                m.insert(yaml_serde::Value::String(k.clone()), yaml(&map[k])?);
            }
            yaml_serde::Value::Mapping(m)
        }
        None => yaml(entry)?,
    };
    let mut one = yaml_serde::Mapping::new();
    one.insert(yaml_serde::Value::String(name.to_string()), body);
    let text = yaml_serde::to_string(&yaml_serde::Value::Mapping(one))
        .map_err(|e| EditError::Parse(e.to_string()))?;
    let pad = " ".repeat(indent);
    Ok(text
        .lines()
        .filter(|l| *l != "---")
        .map(|l| format!("{pad}{l}\n"))
        .collect())
}

fn join(lines: &[&str], trailing_newline: bool) -> String {
    let mut out = lines.join("\n");
    if trailing_newline && !out.is_empty() {
        out.push('\n');
    }
    out
}

/// Adds the server `name` (or replaces its entry) in `text`, touching no other line.
///
/// # Errors
/// [`EditError::Parse`] for a file that does not parse; [`EditError::Layout`] when the
/// section cannot be edited line by line.
pub fn set_server(text: &str, name: &str, value: &Value) -> Result<String, EditError> {
    let old = parse(text)?;
    let mut want = servers_of(&old);
    want.insert(name.to_string(), value.clone());
    let lines: Vec<&str> = text.lines().collect();
    let out = match section(&lines) {
        None => {
            if old.contains_key("mcp_servers") {
                return Err(EditError::Layout);
            }
            let mut out = text.to_string();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("mcp_servers:\n");
            out.push_str(&entry_yaml(name, value, 2)?);
            out
        }
        Some((start, end)) => {
            let inline = inline_value(lines[start]);
            if !(inline.is_empty() || inline == "{}" || inline == "~" || inline == "null") {
                return Err(EditError::Layout);
            }
            let indent = child_indent(&lines, start, end);
            let block = entry_yaml(name, value, indent)?;
            let mut out: Vec<String> = Vec::new();
            let (from, to) = match entry(&lines, start, end, name) {
                Some(range) => range,
                None => (end, end),
            };
            for (i, l) in lines.iter().enumerate() {
                if i == from {
                    out.push(block.trim_end_matches('\n').to_string());
                }
                if i >= from && i < to {
                    continue;
                }
                if i == start && !inline.is_empty() {
                    // `mcp_servers: {}` becomes a block; a comment after it stays.
                    let comment = l.find(" #").map(|c| &l[c..]).unwrap_or("");
                    out.push(format!("mcp_servers:{comment}"));
                    continue;
                }
                out.push((*l).to_string());
            }
            if from >= lines.len() {
                out.push(block.trim_end_matches('\n').to_string());
            }
            let refs: Vec<&str> = out.iter().map(String::as_str).collect();
            join(&refs, true)
        }
    };
    verify(&old, &out, &want)?;
    Ok(out)
}

/// Removes the server `name` from `text`, touching no other line (comments inside its entry
/// go with it).
///
/// # Errors
/// [`EditError::Missing`] when there is no such server; [`EditError::Parse`] /
/// [`EditError::Layout`] as for [`set_server`].
pub fn remove_server(text: &str, name: &str) -> Result<String, EditError> {
    let old = parse(text)?;
    let mut want = servers_of(&old);
    if want.remove(name).is_none() {
        return Err(EditError::Missing(name.to_string()));
    }
    let lines: Vec<&str> = text.lines().collect();
    let (start, end) = section(&lines).ok_or(EditError::Layout)?;
    let (from, to) = entry(&lines, start, end, name).ok_or(EditError::Layout)?;
    let mut kept: Vec<&str> = Vec::with_capacity(lines.len());
    kept.extend_from_slice(&lines[..from]);
    kept.extend_from_slice(&lines[to..]);
    let out = join(&kept, text.ends_with('\n'));
    verify(&old, &out, &want)?;
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    const COMMENTED: &str = "# my hermes settings\nmodel:\n  provider: openrouter   # cheap\n  default: x/y\n\n# servers I use\nmcp_servers:\n    # the notes server\n    notes:\n        command: npx   # from npm\n        args: [-y, notes]\n\n    \"web search\":\n        url: http://127.0.0.1:9/mcp\n\n# display\ndisplay:\n  tool_progress: all\n";

    #[test]
    fn add_keeps_comments_and_indentation() {
        let out = set_server(
            COMMENTED,
            "demo",
            &json!({"command": "python3", "args": ["s.py"]}),
        )
        .unwrap();
        assert_eq!(
            out,
            "# my hermes settings\nmodel:\n  provider: openrouter   # cheap\n  default: x/y\n\n# servers I use\nmcp_servers:\n    # the notes server\n    notes:\n        command: npx   # from npm\n        args: [-y, notes]\n\n    \"web search\":\n        url: http://127.0.0.1:9/mcp\n    demo:\n      command: python3\n      args:\n      - s.py\n\n# display\ndisplay:\n  tool_progress: all\n"
        );
    }

    #[test]
    fn replace_and_remove_touch_only_the_entry() {
        let out = set_server(COMMENTED, "notes", &json!({"url": "http://x/mcp"})).unwrap();
        assert!(
            out.contains(
                "    # the notes server\n    notes:\n      url: http://x/mcp\n\n    \"web search\":"
            ),
            "{out}"
        );
        let out = remove_server(COMMENTED, "web search").unwrap();
        assert_eq!(
            out,
            COMMENTED.replace(
                "    \"web search\":\n        url: http://127.0.0.1:9/mcp\n",
                ""
            )
        );
        let out = remove_server(COMMENTED, "notes").unwrap();
        assert_eq!(
            out,
            COMMENTED.replace(
                "    notes:\n        command: npx   # from npm\n        args: [-y, notes]\n",
                ""
            )
        );
        assert_eq!(
            remove_server(COMMENTED, "nope"),
            Err(EditError::Missing("nope".into()))
        );
    }

    #[test]
    fn section_created_when_missing_or_empty() {
        let out = set_server(
            "# only a comment\nmodel: x\n",
            "a",
            &json!({"url": "http://a"}),
        )
        .unwrap();
        assert_eq!(
            out,
            "# only a comment\nmodel: x\nmcp_servers:\n  a:\n    url: http://a\n"
        );
        let out = set_server(
            "mcp_servers: {}  # none yet\nmodel: x",
            "a",
            &json!({"url": "http://a"}),
        )
        .unwrap();
        assert_eq!(
            out,
            "mcp_servers: # none yet\n  a:\n    url: http://a\nmodel: x\n"
        );
        assert_eq!(
            set_server("", "a", &json!({"url": "u"})).unwrap(),
            "mcp_servers:\n  a:\n    url: u\n"
        );
        // The last entry removed leaves an empty section that still loads.
        let out = remove_server("mcp_servers:\n  a:\n    url: u\n", "a").unwrap();
        assert_eq!(out, "mcp_servers:\n");
    }

    #[test]
    fn flow_sections_are_refused() {
        assert_eq!(
            set_server("mcp_servers: {a: {url: u}}\n", "b", &json!({"url": "v"})),
            Err(EditError::Layout)
        );
        assert!(matches!(
            set_server("mcp_servers: [\n", "b", &json!({})),
            Err(EditError::Parse(_))
        ));
    }
}
