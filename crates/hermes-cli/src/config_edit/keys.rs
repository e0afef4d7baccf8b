//! Surgical edits of scalar keys in one top-level section of `config.yaml` (`hermes model
//! set` writes `model.provider`, `model.default`, `model.base_url` and removes the old
//! provider's keys): only the lines of those keys change, so comments, blank lines, key order
//! and quoting elsewhere stay byte for byte. Like [`crate::config_edit`] for `mcp_servers`,
//! every edit is checked by parsing the result; when the file has a shape this editor does not
//! rewrite line by line, the edit is refused and the caller rewrites the whole file.

use serde_json::{Map, Value};

use crate::config_edit::EditError;

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// The plain key of a `key:` line (no quotes), without indentation.
fn key_of(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let end = t.find(':')?;
    let after = &t[end + 1..];
    (after.is_empty() || after.starts_with([' ', '\t'])).then(|| t[..end].trim_end())
}

/// The ` # comment` ending `line` (with the spaces before it), when it has one outside
/// quotes; kept when the key's value changes.
fn trailing_comment(line: &str) -> Option<&str> {
    let (mut single, mut double) = (false, false);
    let bytes = line.as_bytes();
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && i > 0 && bytes[i - 1] == b' ' => {
                // With the spaces before it, so an aligned comment stays where it was.
                let from = line[..i].trim_end_matches(' ').len();
                return Some(line[from..].trim_end());
            }
            _ => {}
        }
    }
    None
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

/// `value` as one line of YAML (quoted when YAML needs it).
fn scalar(value: &str) -> Result<String, EditError> {
    let text = yaml_serde::to_string(&Value::String(value.to_string()))
        .map_err(|e| EditError::Parse(e.to_string()))?;
    let line = text.trim_end_matches('\n');
    if line.contains('\n') {
        return Err(EditError::Layout);
    }
    Ok(line.to_string())
}

/// Sets the string keys `set` and removes the keys `remove` under the top-level `section` of
/// `text`, touching no other line: a changed key keeps its position and trailing comment, a
/// new key goes after the section's last line, a removed key loses its lines (with the lines
/// of its nested value). A missing section is appended; a section written as a bare value
/// (`model: some-name`) becomes a block with the keys of `set`.
///
/// # Errors
/// [`EditError::Parse`] for a file that does not parse; [`EditError::Layout`] when the
/// section is not a plain block mapping this editor can change line by line (the result is
/// parsed and compared with the intended settings before it is returned).
pub fn edit_section(
    text: &str,
    section: &str,
    set: &[(&str, &str)],
    remove: &[&str],
) -> Result<String, EditError> {
    let old = parse(text)?;
    let want = intended(&old, section, set, remove);
    let trailing_newline = text.ends_with('\n') || text.is_empty();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let start = lines
        .iter()
        .position(|l| indent_of(l) == 0 && key_of(l) == Some(section));
    match start {
        None => {
            lines.push(format!("{section}:"));
            for (k, v) in set {
                lines.push(format!("  {k}: {}", scalar(v)?));
            }
        }
        Some(start) => {
            let inline = lines[start]
                .split_once(':')
                .map(|(_, v)| v.trim())
                .unwrap_or("");
            if !inline.is_empty() && !inline.starts_with('#') {
                // `model: name` → a block holding only the keys set.
                let mut block = vec![format!("{section}:")];
                for (k, v) in set {
                    block.push(format!("  {k}: {}", scalar(v)?));
                }
                lines.splice(start..=start, block);
            } else {
                edit_block(&mut lines, start, set, remove)?;
            }
        }
    }
    checked(&lines, trailing_newline, &want)
}

/// `lines` joined (with the old file's final newline), when they parse to `want`.
fn checked(
    lines: &[String],
    trailing_newline: bool,
    want: &Map<String, Value>,
) -> Result<String, EditError> {
    let mut out = lines.join("\n");
    if trailing_newline && !out.is_empty() {
        out.push('\n');
    }
    if parse(&out).map_err(|_| EditError::Layout)? != *want {
        return Err(EditError::Layout);
    }
    Ok(out)
}

/// The document `old` with the edit applied, for checking the text.
fn intended(
    old: &Map<String, Value>,
    section: &str,
    set: &[(&str, &str)],
    remove: &[&str],
) -> Map<String, Value> {
    let mut doc = old.clone();
    let entry = doc
        .entry(section.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Some(table) = entry.as_object_mut() {
        for k in remove {
            table.remove(*k);
        }
        for (k, v) in set {
            table.insert((*k).to_string(), Value::String((*v).to_string()));
        }
    }
    doc
}

/// Edits the block mapping whose key line is `lines[start]`.
fn edit_block(
    lines: &mut Vec<String>,
    start: usize,
    set: &[(&str, &str)],
    remove: &[&str],
) -> Result<(), EditError> {
    let end = |lines: &Vec<String>| {
        let mut end = start + 1;
        let mut last = start + 1;
        while end < lines.len() {
            let l = &lines[end];
            if !is_blank_or_comment(l) {
                if indent_of(l) == 0 {
                    break;
                }
                last = end + 1;
            }
            end += 1;
        }
        last
    };
    let indent = lines[start + 1..end(lines)]
        .iter()
        .find(|l| !is_blank_or_comment(l))
        .map(|l| indent_of(l))
        .unwrap_or(2);
    // Lines `[from, to)` of the child `key`: its line and the deeper lines of its value.
    let child = |lines: &Vec<String>, key: &str| {
        let stop = end(lines);
        let from = (start + 1..stop).find(|&i| {
            let l = &lines[i];
            !is_blank_or_comment(l) && indent_of(l) == indent && key_of(l) == Some(key)
        })?;
        let mut to = from + 1;
        let mut last = from + 1;
        while to < stop {
            let l = &lines[to];
            if !l.trim().is_empty() {
                if indent_of(l) <= indent && !l.trim_start().starts_with('#') {
                    break;
                }
                if indent_of(l) > indent {
                    last = to + 1;
                }
            }
            to += 1;
        }
        Some((from, last))
    };
    for key in remove {
        if let Some((from, to)) = child(lines, key) {
            lines.drain(from..to);
        }
    }
    let pad = " ".repeat(indent);
    for (key, value) in set {
        let line = format!("{pad}{key}: {}", scalar(value)?);
        match child(lines, key) {
            Some((from, to)) => {
                let comment = trailing_comment(&lines[from]).map(str::to_string);
                let line = match comment {
                    Some(c) if to == from + 1 => format!("{line}{c}"),
                    _ => line,
                };
                lines.splice(from..to, [line]);
            }
            None => {
                let at = end(lines);
                lines.insert(at, line);
            }
        }
    }
    Ok(())
}

/// Sets the top-level `key` to the flow list `[a, b, …]` of `items` (`hermes setup` writes
/// `toolsets:` this way): the key's line and the lines of its old value (a block list or a
/// flow list) become one line, a trailing comment on the key's line stays, and every other
/// line is untouched. A missing key is appended.
///
/// # Errors
/// [`EditError::Parse`] for a file that does not parse; [`EditError::Layout`] when the result
/// would not parse to the old settings with `key` replaced (an item YAML cannot write plain
/// inside a flow list, say).
pub fn set_list(text: &str, key: &str, items: &[String]) -> Result<String, EditError> {
    let mut want = parse(text)?;
    want.insert(
        key.to_string(),
        Value::Array(items.iter().cloned().map(Value::String).collect()),
    );
    let rendered = items
        .iter()
        .map(|i| scalar(i))
        .collect::<Result<Vec<_>, _>>()?
        .join(", ");
    let trailing_newline = text.ends_with('\n') || text.is_empty();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    match lines
        .iter()
        .position(|l| indent_of(l) == 0 && key_of(l) == Some(key))
    {
        None => lines.push(format!("{key}: [{rendered}]")),
        Some(start) => {
            // The old value: deeper lines, and `- item` lines at the key's own indentation;
            // blank lines and comments after its last line belong to what follows.
            let mut end = start + 1;
            let mut i = start + 1;
            while i < lines.len() {
                let l = &lines[i];
                if !is_blank_or_comment(l) {
                    if indent_of(l) == 0 && !l.starts_with("- ") && l != "-" {
                        break;
                    }
                    end = i + 1;
                }
                i += 1;
            }
            let comment = trailing_comment(&lines[start]).unwrap_or("").to_string();
            lines.splice(start..end, [format!("{key}: [{rendered}]{comment}")]);
        }
    }
    checked(&lines, trailing_newline, &want)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const CONFIG: &str = "\
# my hermes settings
model:
  provider: custom          # the llama.cpp box
  base_url: http://127.0.0.1:8080/v1
  default: first
  api_keys:
    - sk-one
    - sk-two

# agent loop
agent:
  max_turns: 7   # keep it short
";

    #[test]
    fn only_the_changed_keys_change_byte_for_byte() {
        let out = edit_section(
            CONFIG,
            "model",
            &[("provider", "anthropic"), ("default", "claude-sonnet-4")],
            &["base_url", "api_keys", "model"],
        )
        .unwrap();
        assert_eq!(
            out,
            "\
# my hermes settings
model:
  provider: anthropic          # the llama.cpp box
  default: claude-sonnet-4

# agent loop
agent:
  max_turns: 7   # keep it short
"
        );
    }

    #[test]
    fn new_keys_go_after_the_section_and_odd_values_are_quoted() {
        let out = edit_section(
            CONFIG,
            "model",
            &[("base_url", "http://x:1/v1"), ("default", "a: b")],
            &[],
        )
        .unwrap();
        assert!(
            out.contains("  base_url: http://x:1/v1\n  default: 'a: b'\n  api_keys:\n"),
            "{out}"
        );
        let text = "agent:\n  max_turns: 3\n";
        let out = edit_section(text, "model", &[("default", "m")], &[]).unwrap();
        assert_eq!(out, "agent:\n  max_turns: 3\nmodel:\n  default: m\n");
        let out = edit_section(
            "model: old-name  # bare\nagent: {}\n",
            "model",
            &[("default", "new")],
            &["model"],
        )
        .unwrap();
        assert_eq!(out, "model:\n  default: new\nagent: {}\n");
    }

    #[test]
    fn a_flow_mapping_is_refused() {
        let e = edit_section(
            "model: {default: x}\n",
            "model",
            &[("provider", "openai")],
            &[],
        );
        assert!(e.is_err(), "{e:?}");
    }

    #[test]
    fn set_list_replaces_a_block_or_flow_list_and_keeps_everything_else() {
        let text = "# tools\ntoolsets:   # what the agent may use\n  - terminal\n  - file\n\n# loop\nagent:\n  max_turns: 7\n";
        let out = set_list(text, "toolsets", &["web".into(), "file".into()]).unwrap();
        assert_eq!(
            out,
            "# tools\ntoolsets: [web, file]   # what the agent may use\n\n# loop\nagent:\n  max_turns: 7\n"
        );
        let flow = "toolsets: [terminal]\nmodel: m\n";
        assert_eq!(
            set_list(flow, "toolsets", &["all".into()]).unwrap(),
            "toolsets: [all]\nmodel: m\n"
        );
        let same_indent = "toolsets:\n- terminal\n- file\nmodel: m\n";
        assert_eq!(
            set_list(same_indent, "toolsets", &["file".into()]).unwrap(),
            "toolsets: [file]\nmodel: m\n"
        );
        assert_eq!(
            set_list("model: m\n", "toolsets", &["web".into()]).unwrap(),
            "model: m\ntoolsets: [web]\n"
        );
        // An item YAML writes plain but a flow list would split is refused, not mangled.
        assert_eq!(
            set_list(flow, "toolsets", &["a, b".into()]),
            Err(EditError::Layout)
        );
    }
}
