//! Surgical edits of one dotted key of `config.yaml` at any depth (`hermes config set
//! agent.max_turns 50`, `hermes config unset display.skin`): only the lines of that key
//! change — a changed value keeps its line and trailing comment, a new key is added at the
//! end of its parent's block (creating the missing parents), a removed key loses its lines
//! and so does a parent left empty. Like the rest of [`crate::config_edit`], the result is
//! parsed and compared with the intended settings; a layout this editor does not rewrite
//! line by line (flow mappings, anchors, a scalar where a mapping is needed) is refused.

use serde_json::{Map, Value};

use crate::config_edit::EditError;

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// The plain key of a `key:` line, without indentation (quoted keys are not edited).
fn key_of(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if t.starts_with(['"', '\'', '-', '#']) {
        return None;
    }
    let end = t.find(':')?;
    let after = &t[end + 1..];
    (after.is_empty() || after.starts_with([' ', '\t'])).then(|| t[..end].trim_end())
}

/// What follows `key:` on its line, comment excluded.
fn inline_value(line: &str) -> &str {
    let after = line.split_once(':').map(|(_, v)| v).unwrap_or("");
    let v = match after.find(" #") {
        Some(i) => &after[..i],
        None => after,
    };
    v.trim()
}

/// The ` # comment` at the end of `line`, outside quotes.
fn trailing_comment(line: &str) -> &str {
    let (mut single, mut double) = (false, false);
    let bytes = line.as_bytes();
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && i > 0 && bytes[i - 1] == b' ' => {
                let from = line[..i].trim_end_matches(' ').len();
                return line[from..].trim_end();
            }
            _ => {}
        }
    }
    ""
}

fn parse(text: &str) -> Result<Map<String, Value>, EditError> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match yaml_serde::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(_) => Err(EditError::Parse("the top level is not a mapping".into())),
        Err(e) => Err(EditError::Parse(e.to_string())),
    }
}

/// `value` as the text after `key: ` on one line: a YAML scalar, or a JSON-style flow list
/// or mapping.
fn inline(value: &Value) -> Result<String, EditError> {
    match value {
        Value::Array(items) if items.iter().all(|v| !v.is_array() && !v.is_object()) => {
            let parts = items.iter().map(inline).collect::<Result<Vec<_>, _>>()?;
            Ok(format!("[{}]", parts.join(", ")))
        }
        Value::Array(_) | Value::Object(_) => {
            serde_json::to_string(value).map_err(|e| EditError::Parse(e.to_string()))
        }
        other => {
            let text = yaml_serde::to_string(other).map_err(|e| EditError::Parse(e.to_string()))?;
            let line = text.trim_end_matches('\n');
            if line.contains('\n') {
                return Err(EditError::Layout);
            }
            Ok(line.to_string())
        }
    }
}

/// The line range `[start, end)` of the block of the key at line `at` (its own line and
/// every deeper or blank line after it, trailing blank lines and comments excluded).
fn block_end(lines: &[String], at: usize) -> usize {
    let indent = indent_of(&lines[at]);
    let mut end = at + 1;
    let mut i = at + 1;
    while i < lines.len() {
        let l = &lines[i];
        if !is_blank_or_comment(l) {
            let deeper = indent_of(l) > indent;
            let list_item = indent_of(l) == indent && l.trim_start().starts_with('-');
            if !deeper && !list_item {
                break;
            }
            end = i + 1;
        }
        i += 1;
    }
    end
}

/// The line of key `name` directly inside the block `[from, to)` whose children are indented
/// by `indent` (any indentation deeper than `parent_indent` when unknown).
fn find_child(
    lines: &[String],
    from: usize,
    to: usize,
    parent_indent: Option<usize>,
    name: &str,
) -> Option<usize> {
    let child_indent = lines[from..to]
        .iter()
        .find(|l| !is_blank_or_comment(l))
        .map(|l| indent_of(l));
    let want = match (parent_indent, child_indent) {
        (None, _) => 0,
        (Some(_), Some(c)) => c,
        (Some(_), None) => return None,
    };
    (from..to).find(|&i| {
        let l = &lines[i];
        !is_blank_or_comment(l) && indent_of(l) == want && key_of(l) == Some(name)
    })
}

/// The settings with `path` set to `value` (missing parents become mappings).
fn intended_set(mut map: Map<String, Value>, path: &[&str], value: &Value) -> Map<String, Value> {
    fn go(map: &mut Map<String, Value>, path: &[&str], value: &Value) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        if rest.is_empty() {
            map.insert(first.to_string(), value.clone());
            return;
        }
        let entry = map
            .entry(first.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        if let Value::Object(inner) = entry {
            go(inner, rest, value);
        }
    }
    go(&mut map, path, value);
    map
}

/// The settings with `path` removed, and parents left empty removed too. `None` when the
/// key is not set.
fn intended_unset(mut map: Map<String, Value>, path: &[&str]) -> Option<Map<String, Value>> {
    fn go(map: &mut Map<String, Value>, path: &[&str]) -> bool {
        let Some((first, rest)) = path.split_first() else {
            return false;
        };
        if rest.is_empty() {
            return map.remove(*first).is_some();
        }
        let Some(Value::Object(inner)) = map.get_mut(*first) else {
            return false;
        };
        let removed = go(inner, rest);
        if removed && inner.is_empty() {
            map.remove(*first);
        }
        removed
    }
    go(&mut map, path).then_some(map)
}

fn finish(
    lines: &[String],
    trailing_newline: bool,
    want: &Map<String, Value>,
) -> Result<String, EditError> {
    let mut out = lines.join("\n");
    if trailing_newline && !out.is_empty() {
        out.push('\n');
    }
    let got = parse(&out)?;
    if &got != want {
        return Err(EditError::Layout);
    }
    Ok(out)
}

/// Sets the dotted key `path` (`["agent", "max_turns"]`) to `value` in `text`.
///
/// # Errors
/// [`EditError::Parse`] for a file that does not parse; [`EditError::Layout`] when the
/// edit cannot be made line by line (the result would not parse to the intended settings).
pub fn set_path(text: &str, path: &[&str], value: &Value) -> Result<String, EditError> {
    let old = parse(text)?;
    let want = intended_set(old, path, value);
    let trailing_newline = text.ends_with('\n') || text.is_empty();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let (mut from, mut to) = (0usize, lines.len());
    let mut parent_indent: Option<usize> = None;
    for (depth, name) in path.iter().enumerate() {
        let last = depth + 1 == path.len();
        match find_child(&lines, from, to, parent_indent, name) {
            Some(at) => {
                if last {
                    let end = block_end(&lines, at);
                    let indent = indent_of(&lines[at]);
                    let comment = trailing_comment(&lines[at]).to_string();
                    let line = format!("{}{name}: {}{comment}", " ".repeat(indent), inline(value)?);
                    lines.splice(at..end, [line]);
                    return finish(&lines, trailing_newline, &want);
                }
                let v = inline_value(&lines[at]);
                if !v.is_empty() && !v.starts_with('#') {
                    // A scalar (or flow value) where a mapping is needed.
                    return Err(EditError::Layout);
                }
                parent_indent = Some(indent_of(&lines[at]));
                from = at + 1;
                to = block_end(&lines, at);
            }
            None => {
                // Add the rest of the path at the end of the current block.
                let base = match parent_indent {
                    None => 0,
                    Some(p) => lines[from..to]
                        .iter()
                        .find(|l| !is_blank_or_comment(l))
                        .map(|l| indent_of(l))
                        .unwrap_or(p + 2),
                };
                let mut new = Vec::new();
                for (i, n) in path[depth..].iter().enumerate() {
                    let pad = " ".repeat(base + 2 * i);
                    if depth + i + 1 == path.len() {
                        new.push(format!("{pad}{n}: {}", inline(value)?));
                    } else {
                        new.push(format!("{pad}{n}:"));
                    }
                }
                let at = if parent_indent.is_none() {
                    lines.len()
                } else {
                    to
                };
                lines.splice(at..at, new);
                return finish(&lines, trailing_newline, &want);
            }
        }
    }
    Err(EditError::Layout)
}

/// Removes the dotted key `path` from `text`, with parents left empty. `Ok(None)` when the
/// key is not set.
///
/// # Errors
/// As [`set_path`].
pub fn unset_path(text: &str, path: &[&str]) -> Result<Option<String>, EditError> {
    let old = parse(text)?;
    let Some(want) = intended_unset(old, path) else {
        return Ok(None);
    };
    let trailing_newline = text.ends_with('\n');
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // The line of each key along the path.
    let mut chain = Vec::new();
    let (mut from, mut to) = (0usize, lines.len());
    let mut parent_indent: Option<usize> = None;
    for name in path {
        let at = find_child(&lines, from, to, parent_indent, name).ok_or(EditError::Layout)?;
        chain.push(at);
        parent_indent = Some(indent_of(&lines[at]));
        from = at + 1;
        to = block_end(&lines, at);
    }
    // Remove the key, then each parent whose block has nothing left.
    let mut remove = chain.pop().ok_or(EditError::Layout)?;
    loop {
        let end = block_end(&lines, remove);
        lines.drain(remove..end);
        let Some(parent) = chain.pop() else { break };
        let end = block_end(&lines, parent);
        let empty = lines[parent + 1..end]
            .iter()
            .all(|l| is_blank_or_comment(l));
        if !empty {
            break;
        }
        remove = parent;
    }
    finish(&lines, trailing_newline, &want).map(Some)
}

/// The value at the dotted key `path` of the settings `root`, if set.
pub fn get_path<'a>(root: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(root, |v, k| v.get(k))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    const CONFIG: &str = "\
# my settings
model:
  provider: custom   # the box
  default: first

agent:
  max_turns: 90      # budget
display:
  skin: mono
toolsets: [hermes-cli]
";

    #[test]
    fn a_changed_value_keeps_its_comment_and_nothing_else_moves() {
        let out = set_path(CONFIG, &["agent", "max_turns"], &json!(50)).unwrap();
        assert_eq!(
            out,
            CONFIG.replace("max_turns: 90      # budget", "max_turns: 50      # budget")
        );
        let out = set_path(CONFIG, &["toolsets"], &json!(["file", "web"])).unwrap();
        assert!(out.contains("toolsets: [file, web]\n"), "{out}");
        assert!(out.starts_with("# my settings\n"));
    }

    #[test]
    fn new_keys_and_parents_are_added_at_the_end_of_their_block() {
        let out = set_path(CONFIG, &["display", "statusbar"], &json!(false)).unwrap();
        assert!(
            out.contains("display:\n  skin: mono\n  statusbar: false\n"),
            "{out}"
        );
        let out = set_path(CONFIG, &["terminal", "timeout"], &json!(60)).unwrap();
        assert!(out.ends_with("terminal:\n  timeout: 60\n"), "{out}");
        let out = set_path("", &["model", "default"], &json!("x")).unwrap();
        assert_eq!(out, "model:\n  default: x\n");
        assert!(out.contains("default: x"));
    }

    #[test]
    fn unset_removes_the_key_and_an_emptied_parent() {
        let out = unset_path(CONFIG, &["display", "skin"]).unwrap().unwrap();
        assert!(!out.contains("display"), "{out}");
        assert!(out.contains("# budget"));
        let out = unset_path(CONFIG, &["model", "default"]).unwrap().unwrap();
        assert!(
            out.contains("model:\n  provider: custom   # the box\n\nagent:"),
            "{out}"
        );
        assert_eq!(unset_path(CONFIG, &["nope"]).unwrap(), None);
    }

    #[test]
    fn a_scalar_where_a_mapping_is_needed_is_refused() {
        let text = "model: some-model\n";
        assert_eq!(
            set_path(text, &["model", "provider"], &json!("x")),
            Err(EditError::Layout)
        );
    }
}
