//! Installed skills (`hermes skills list`, `/skills`) and `-s` preloading of the first
//! user message (`chat -s`, the REPL).

use std::path::Path;

use anyhow::Result;
use hermes_context::skill_invocation_message;
use hermes_context::skills::SkillCatalog;
use hermes_protocol::HermesHome;

/// The listing of `hermes skills list` and `/skills`: `category/name  description` per line,
/// then one line per `SKILL.md` that failed to load.
pub fn list_text(root: &Path, disabled: &std::collections::BTreeSet<String>) -> String {
    let catalog = SkillCatalog::load(root);
    let mut out = String::new();
    if catalog.skills.is_empty() {
        out.push_str(&format!(
            "no skills installed in {} (hermes skills install <dir>)\n",
            root.display()
        ));
    }
    for s in &catalog.skills {
        let label = match &s.category {
            Some(c) => format!("{c}/{}", s.name),
            None => s.name.clone(),
        };
        let desc: String = s
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let short: String = desc.chars().take(90).collect();
        let ellipsis = if desc.chars().count() > 90 { "…" } else { "" };
        let off = if disabled.contains(&s.name) {
            "(disabled) "
        } else {
            ""
        };
        out.push_str(&format!("{label:<36} {off}{short}{ellipsis}\n"));
    }
    for e in &catalog.errors {
        out.push_str(&format!("skipped {}: {}\n", e.path.display(), e.message));
    }
    out
}

/// The first user message with `skills` preloaded (`-s a,b`): each skill's invocation message
/// in order, the user's `text` as the instruction of the last one. No skills: `text` itself.
///
/// # Errors
/// An unknown or invalid skill name.
pub fn preload_message(
    home: &HermesHome,
    skills: &[String],
    text: &str,
    disabled: &std::collections::BTreeSet<String>,
) -> Result<String> {
    let names: Vec<&str> = skills
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect();
    if let Some(off) = names.iter().find(|n| disabled.contains(**n)) {
        anyhow::bail!(
            "-s {off}: the skill is disabled (skills.disabled in config.yaml; `hermes config \
             edit` to enable it)"
        );
    }
    let Some((last, first)) = names.split_last() else {
        return Ok(text.to_string());
    };
    let mut parts = Vec::with_capacity(names.len());
    for name in first {
        parts.push(
            skill_invocation_message(home, name, "")
                .map_err(|e| anyhow::anyhow!("-s {name}: {e}"))?,
        );
    }
    parts.push(
        skill_invocation_message(home, last, text)
            .map_err(|e| anyhow::anyhow!("-s {last}: {e}"))?,
    );
    Ok(parts.join("\n\n"))
}
