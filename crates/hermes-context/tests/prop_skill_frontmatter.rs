//! Property tests of the SKILL.md frontmatter parser (issue 6 part 5; agentskills.io format,
//! case C22): arbitrary text is an `Ok` or a typed error, never a panic; written frontmatter
//! round-trips; BOM and CRLF line endings change nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_context::skills::{FrontmatterError, parse_skill_md};
use proptest::prelude::*;

/// Lines that look like frontmatter, fences, YAML and Markdown.
fn skill_soup() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("---".to_string()),
        Just("--- ".to_string()),
        Just("name: pdf-tools".to_string()),
        Just("description: >".to_string()),
        Just("  folded text".to_string()),
        Just("platforms: [macos, linux]".to_string()),
        Just("platforms: macos, linux".to_string()),
        Just("metadata:".to_string()),
        Just("  hermes:".to_string()),
        Just("    tags: [a, b]".to_string()),
        Just("    requires_tools: terminal".to_string()),
        Just("version: 1.0".to_string()),
        Just("- item".to_string()),
        Just("key: [unclosed".to_string()),
        Just("key: {a: 1}".to_string()),
        Just("\tname: tab".to_string()),
        Just("&anchor x: *anchor".to_string()),
        Just("\u{feff}".to_string()),
        Just("# Heading".to_string()),
        "\\PC{0,20}",
    ];
    (
        any::<bool>(),
        any::<bool>(),
        proptest::collection::vec(line, 0..16),
    )
        .prop_map(|(bom, crlf, lines)| {
            let sep = if crlf { "\r\n" } else { "\n" };
            let mut text = lines.join(sep);
            if bom {
                text.insert(0, '\u{feff}');
            }
            text
        })
}

fn word() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9-]{0,11}"
}

/// A printable description (ASCII and a few non-ASCII letters; may hold YAML syntax).
fn description() -> impl Strategy<Value = String> {
    "[A-Za-z0-9 .,:#'\"\\[\\]{}&*!|>%@`é世-]{1,40}"
        .prop_filter("not blank", |s| !s.trim().is_empty())
}

/// Markdown body lines (no CR, the first line not blank).
fn body() -> impl Strategy<Value = String> {
    proptest::collection::vec("[^\r\n]{0,30}", 0..6).prop_map(|lines| {
        let text = lines.join("\n");
        text.trim_start_matches('\n').to_string()
    })
}

/// Property cases: `n`, or 20 × `n` with `HERMES_LONG_TESTS=1` (README "Two commands").
fn cases(n: u32) -> u32 {
    match std::env::var("HERMES_LONG_TESTS") {
        Ok(v) if !v.is_empty() && v != "0" => n * 20,
        _ => n,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    /// Anything: an `Ok` or one of the three errors, and a YAML error says something.
    #[test]
    fn arbitrary_text_never_panics(text in skill_soup()) {
        match parse_skill_md(&text) {
            Ok(p) => prop_assert!(!p.body.starts_with('\n')),
            Err(FrontmatterError::Yaml(m)) => prop_assert!(!m.trim().is_empty()),
            Err(_) => {}
        }
    }

    /// A frontmatter written by a YAML serializer reads back field by field (scalars trimmed); the BOM and CRLF
    /// variants of the same file parse to the same result.
    #[test]
    fn written_frontmatter_round_trips(
        name in word(),
        desc in description(),
        tags in proptest::collection::vec(word(), 0..4),
        platforms in proptest::sample::subsequence(vec!["macos", "linux", "windows"], 0..=3),
        body in body(),
    ) {
        let mut doc = yaml_serde::Mapping::new();
        doc.insert("name".into(), name.clone().into());
        doc.insert("description".into(), desc.clone().into());
        doc.insert(
            "platforms".into(),
            yaml_serde::Value::Sequence(platforms.iter().map(|p| (*p).into()).collect()),
        );
        let mut hermes = yaml_serde::Mapping::new();
        hermes.insert(
            "tags".into(),
            yaml_serde::Value::Sequence(tags.iter().map(|t| t.clone().into()).collect()),
        );
        let mut metadata = yaml_serde::Mapping::new();
        metadata.insert("hermes".into(), yaml_serde::Value::Mapping(hermes));
        doc.insert("metadata".into(), yaml_serde::Value::Mapping(metadata));
        let yaml = yaml_serde::to_string(&yaml_serde::Value::Mapping(doc)).unwrap();
        let text = format!("---\n{}\n---\n{body}", yaml.trim_end());

        let p = parse_skill_md(&text).unwrap();
        prop_assert_eq!(p.meta.name.as_deref(), Some(name.as_str()));
        // Scalars are read trimmed.
        prop_assert_eq!(p.meta.description.as_deref(), Some(desc.trim()));
        prop_assert_eq!(&p.meta.tags, &tags);
        let want: Vec<String> = platforms.iter().map(|p| p.to_string()).collect();
        prop_assert_eq!(&p.meta.platforms, &want);
        prop_assert_eq!(&p.body, &body);

        let variant = format!("\u{feff}{}", text.replace('\n', "\r\n"));
        prop_assert_eq!(parse_skill_md(&variant).unwrap(), p);
    }
}
