//! The tolerant `SKILL.md` parser (FEATURES §7; case C22): YAML frontmatter between `---`
//! fences, then a Markdown body.
//!
//! Tolerates one leading byte-order mark, CRLF line endings, folded/literal block scalars,
//! unknown keys, and loosely typed fields (`version: 1.0` as a number, `author` as a list,
//! `platforms` as one string). Every reader of frontmatter in hermes goes through
//! [`parse_skill_md`].

use serde::Deserialize;
use yaml_serde::Value;

/// Why a `SKILL.md` could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontmatterError {
    /// The file does not start with a `---` line.
    #[error("no YAML frontmatter: the file must start with a `---` line")]
    Missing,
    /// The opening fence has no closing `---` line.
    #[error("the frontmatter has no closing `---` line")]
    Unclosed,
    /// The frontmatter is not valid YAML or not a mapping.
    #[error("invalid YAML in the frontmatter: {0}")]
    Yaml(String),
}

/// The frontmatter fields hermes uses; anything else is kept only in [`SkillMeta::extra`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SkillMeta {
    /// `name` (may be absent in installed files; the directory name is used then).
    pub name: Option<String>,
    /// `description`, block scalars already folded by YAML.
    pub description: Option<String>,
    /// `version`, as written (numbers rendered as text).
    pub version: Option<String>,
    /// `platforms`: `macos`, `linux`, `windows`; empty means every platform.
    pub platforms: Vec<String>,
    /// `metadata.hermes.tags`.
    pub tags: Vec<String>,
    /// `metadata.hermes.requires_toolsets`: shown only when all of these toolsets are on.
    pub requires_toolsets: Vec<String>,
    /// `metadata.hermes.requires_tools`: shown only when all of these tools are present.
    pub requires_tools: Vec<String>,
    /// `metadata.hermes.fallback_for_toolsets`: hidden when any of these toolsets is on.
    pub fallback_for_toolsets: Vec<String>,
    /// `metadata.hermes.fallback_for_tools`: hidden when any of these tools is present.
    pub fallback_for_tools: Vec<String>,
    /// The whole frontmatter mapping, for fields hermes does not interpret.
    pub extra: Value,
}

/// A parsed `SKILL.md`.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedSkill {
    /// The frontmatter.
    pub meta: SkillMeta,
    /// The Markdown after the closing fence, with LF line endings and leading blank lines
    /// removed.
    pub body: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawMeta {
    name: Value,
    description: Value,
    version: Value,
    platforms: Value,
    metadata: Value,
}

/// Text of a scalar (strings as is, numbers and booleans rendered); `None` for null, lists
/// and maps.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
    .filter(|s| !s.is_empty())
}

/// A list of strings from a sequence or a comma-separated scalar.
fn list(v: &Value) -> Vec<String> {
    match v {
        Value::Sequence(items) => items.iter().filter_map(scalar).collect(),
        other => scalar(other)
            .map(|s| {
                s.split(',')
                    .map(|p| p.trim().to_string())
                    .filter(|p| !p.is_empty())
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn hermes_list(metadata: &Value, key: &str) -> Vec<String> {
    metadata
        .get("hermes")
        .and_then(|h| h.get(key))
        .map(list)
        .unwrap_or_default()
}

/// Splits `text` into frontmatter and body and parses the frontmatter.
///
/// One leading U+FEFF is stripped (interior ones are data), CRLF becomes LF, and the fences
/// are lines holding `---` (trailing spaces allowed).
///
/// # Errors
/// [`FrontmatterError`] when the fences are missing or the YAML is invalid.
pub fn parse_skill_md(text: &str) -> Result<ParsedSkill, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = text.replace("\r\n", "\n");
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or(FrontmatterError::Missing)?;
    if first.trim_end() != "---" {
        return Err(FrontmatterError::Missing);
    }
    let mut yaml = String::new();
    let mut offset = first.len();
    let mut closed = false;
    for line in lines {
        offset += line.len();
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err(FrontmatterError::Unclosed);
    }
    let body = text[offset..].trim_start_matches('\n').to_string();
    let extra: Value = if yaml.trim().is_empty() {
        Value::Mapping(Default::default())
    } else {
        yaml_serde::from_str(&yaml).map_err(|e| FrontmatterError::Yaml(e.to_string()))?
    };
    if !matches!(extra, Value::Mapping(_)) {
        return Err(FrontmatterError::Yaml(
            "the frontmatter is not a mapping of keys to values".to_string(),
        ));
    }
    let raw: RawMeta =
        yaml_serde::from_value(extra.clone()).map_err(|e| FrontmatterError::Yaml(e.to_string()))?;
    let meta = SkillMeta {
        name: scalar(&raw.name),
        description: scalar(&raw.description),
        version: scalar(&raw.version),
        platforms: list(&raw.platforms)
            .into_iter()
            .map(|p| p.to_ascii_lowercase())
            .collect(),
        tags: hermes_list(&raw.metadata, "tags"),
        requires_toolsets: hermes_list(&raw.metadata, "requires_toolsets"),
        requires_tools: hermes_list(&raw.metadata, "requires_tools"),
        fallback_for_toolsets: hermes_list(&raw.metadata, "fallback_for_toolsets"),
        fallback_for_tools: hermes_list(&raw.metadata, "fallback_for_tools"),
        extra,
    };
    Ok(ParsedSkill { meta, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_c22_bom_and_crlf_keep_the_frontmatter() {
        let bom = "\u{feff}---\nname: pdf-tools\ndescription: Extract text from PDFs\nplatforms: [macos]\n---\n# Steps\n";
        let crlf = "---\r\nname: pdf-tools\r\ndescription: Extract text from PDFs\r\n---\r\n\r\n# Steps\r\n";
        for (text, platforms) in [(bom, vec!["macos".to_string()]), (crlf, vec![])] {
            let p = parse_skill_md(text).unwrap();
            assert_eq!(p.meta.name.as_deref(), Some("pdf-tools"));
            assert_eq!(
                p.meta.description.as_deref(),
                Some("Extract text from PDFs")
            );
            assert_eq!(p.meta.platforms, platforms);
            assert_eq!(p.body, "# Steps\n");
        }
    }

    #[test]
    fn interior_bom_is_data_and_block_scalars_fold() {
        let p = parse_skill_md(
            "---\nname: x\ndescription: >\n  one\n  two\nversion: 1.0\nauthor: [a, b]\nweird: {k: v}\n---\nbody \u{feff}here\n",
        )
        .unwrap();
        assert_eq!(p.meta.description.as_deref(), Some("one two"));
        assert_eq!(p.meta.version.as_deref(), Some("1.0"));
        assert_eq!(p.body, "body \u{feff}here\n");
    }

    #[test]
    fn broken_files_are_errors_not_panics() {
        assert_eq!(parse_skill_md("# no fm"), Err(FrontmatterError::Missing));
        assert_eq!(parse_skill_md(""), Err(FrontmatterError::Missing));
        assert_eq!(
            parse_skill_md("---\nname: x\n"),
            Err(FrontmatterError::Unclosed)
        );
        assert!(matches!(
            parse_skill_md("---\nname: [unclosed\n---\n"),
            Err(FrontmatterError::Yaml(_))
        ));
        assert!(matches!(
            parse_skill_md("---\n- a\n- b\n---\n"),
            Err(FrontmatterError::Yaml(_))
        ));
    }

    #[test]
    fn hermes_metadata_conditions_are_read() {
        let p = parse_skill_md(
            "---\nname: x\ndescription: d\nmetadata:\n  hermes:\n    tags: [a]\n    requires_tools: [terminal]\n    fallback_for_toolsets: web\n---\n",
        )
        .unwrap();
        assert_eq!(p.meta.tags, vec!["a"]);
        assert_eq!(p.meta.requires_tools, vec!["terminal"]);
        assert_eq!(p.meta.fallback_for_toolsets, vec!["web"]);
    }
}
