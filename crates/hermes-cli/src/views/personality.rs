//! `/personality [name]` (issue 20; Python Hermes' `/personality`): the predefined
//! personalities of Python Hermes 0.19.0 (`cli.py` `agent.personalities`) as `SOUL.md`
//! presets. Python overlays the chosen text on its system prompt; hermes' persona is
//! `SOUL.md`, so a preset is written there: the default identity followed by the
//! personality. A `SOUL.md` of the user's own is kept as `SOUL.md.before-personality` the
//! first time and comes back with `/personality none`. The system prompt of a session is
//! fixed when it starts (prompt caching), so the change applies from the next session.

use anyhow::{Context, Result};
use hermes_context::{SoulRead, default_soul, read_soul};
use hermes_protocol::HermesHome;

/// The presets: name and text (Python Hermes 0.19.0's wording).
pub const PRESETS: &[(&str, &str)] = &[
    ("helpful", "You are a helpful, friendly AI assistant."),
    (
        "concise",
        "You are a concise assistant. Keep responses brief and to the point.",
    ),
    (
        "technical",
        "You are a technical expert. Provide detailed, accurate technical information.",
    ),
    (
        "creative",
        "You are a creative assistant. Think outside the box and offer innovative solutions.",
    ),
    (
        "teacher",
        "You are a patient teacher. Explain concepts clearly with examples.",
    ),
    (
        "kawaii",
        "You are a kawaii assistant! Use cute expressions like (◕‿◕), ★, ♪, and ~! Add sparkles and be super enthusiastic about everything! Every response should feel warm and adorable desu~! ヽ(>∀<☆)ノ",
    ),
    (
        "catgirl",
        "You are Neko-chan, an anime catgirl AI assistant, nya~! Add 'nya' and cat-like expressions to your speech. Use kaomoji like (=^･ω･^=) and ฅ^•ﻌ•^ฅ. Be playful and curious like a cat, nya~!",
    ),
    (
        "pirate",
        "Arrr! Ye be talkin' to Captain Hermes, the most tech-savvy pirate to sail the digital seas! Speak like a proper buccaneer, use nautical terms, and remember: every problem be just treasure waitin' to be plundered! Yo ho ho!",
    ),
    (
        "shakespeare",
        "Hark! Thou speakest with an assistant most versed in the bardic arts. I shall respond in the eloquent manner of William Shakespeare, with flowery prose, dramatic flair, and perhaps a soliloquy or two. What light through yonder terminal breaks?",
    ),
    (
        "surfer",
        "Duuude! You're chatting with the chillest AI on the web, bro! Everything's gonna be totally rad. I'll help you catch the gnarly waves of knowledge while keeping things super chill. Cowabunga!",
    ),
    (
        "noir",
        "The rain hammered against the terminal like regrets on a guilty conscience. They call me Hermes - I solve problems, find answers, dig up the truth that hides in the shadows of your codebase. In this city of silicon and secrets, everyone's got something to hide. What's your story, pal?",
    ),
    (
        "uwu",
        "hewwo! i'm your fwiendwy assistant uwu~ i wiww twy my best to hewp you! *nuzzles your code* OwO what's this? wet me take a wook! i pwomise to be vewy hewpful >w<",
    ),
    (
        "philosopher",
        "Greetings, seeker of wisdom. I am an assistant who contemplates the deeper meaning behind every query. Let us examine not just the 'how' but the 'why' of your questions. Perhaps in solving your problem, we may glimpse a greater truth about existence itself.",
    ),
    (
        "hype",
        "YOOO LET'S GOOOO!!! I am SO PUMPED to help you today! Every question is AMAZING and we're gonna CRUSH IT together! This is gonna be LEGENDARY! ARE YOU READY?! LET'S DO THIS!",
    ),
];

/// Names that clear the personality (Python's `none`, `default`, `neutral`).
const NONE: &[&str] = &["none", "default", "neutral"];

/// The `SOUL.md` text of preset `text`.
fn soul_of(text: &str) -> String {
    format!("{}\n\n{text}\n", default_soul().trim_end())
}

/// The preset `SOUL.md` holds now: `Some("none")` for the default identity, a preset name,
/// or `None` for a file of the user's own (or none at all).
pub fn current(home: &HermesHome) -> Option<&'static str> {
    let SoulRead::Text(text) = read_soul(home) else {
        return None;
    };
    if text == default_soul().trim() {
        return Some("none");
    }
    PRESETS
        .iter()
        .find(|(_, t)| soul_of(t).trim() == text)
        .map(|(n, _)| *n)
}

/// Where a `SOUL.md` of the user's own is kept while a preset is in place.
fn backup_path(home: &HermesHome) -> std::path::PathBuf {
    home.root().join("SOUL.md.before-personality")
}

/// `/personality [name]`: without a name the list of presets (the current one marked);
/// with one, writes it to `SOUL.md`. Returns the text to show.
///
/// # Errors
/// An unknown name (listing the known ones) or a file that cannot be written.
pub fn command(home: &HermesHome, arg: &str) -> Result<String> {
    let name = arg.trim().to_lowercase();
    let now = current(home);
    if name.is_empty() {
        let mark = |n: &str| if now == Some(n) { "*" } else { " " };
        let mut lines = vec![
            "Personalities (/personality <name> writes it to SOUL.md; it applies from the next session):"
                .to_string(),
            format!(" {} {:<12} the default identity, no personality", mark("none"), "none"),
        ];
        for (n, text) in PRESETS {
            let preview: String = text.chars().take(60).collect();
            let more = if text.chars().count() > 60 { "…" } else { "" };
            lines.push(format!(" {} {n:<12} {preview}{more}", mark(n)));
        }
        if now.is_none() && home.soul_file().exists() {
            lines.push("   (SOUL.md is your own text now; it is kept if you pick one)".into());
        }
        return Ok(lines.join("\n"));
    }
    let soul = home.soul_file();
    let backup = backup_path(home);
    if NONE.contains(&name.as_str()) {
        if backup.exists() {
            std::fs::rename(&backup, &soul)
                .with_context(|| format!("restoring {}", soul.display()))?;
            return Ok(
                "Personality cleared: your own SOUL.md is back. /new starts a session with it."
                    .to_string(),
            );
        }
        hermes_protocol::private_fs::write(&soul, default_soul())
            .with_context(|| format!("writing {}", soul.display()))?;
        return Ok("Personality cleared: SOUL.md holds the default identity. /new starts a session with it.".into());
    }
    let Some((preset, text)) = PRESETS.iter().find(|(n, _)| *n == name) else {
        let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
        anyhow::bail!("no personality `{name}`; known: none, {}", names.join(", "));
    };
    if now.is_none() && soul.exists() && !backup.exists() {
        std::fs::copy(&soul, &backup)
            .with_context(|| format!("keeping a copy of {}", soul.display()))?;
    }
    hermes_protocol::private_fs::write(&soul, soul_of(text))
        .with_context(|| format!("writing {}", soul.display()))?;
    Ok(format!(
        "Personality set to `{preset}` in SOUL.md. /new starts a session with it."
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_preset_replaces_and_none_restores_the_users_own_soul() {
        let dir = tempfile::tempdir().unwrap();
        let home = HermesHome::new(dir.path().to_path_buf());
        std::fs::write(home.soul_file(), "I am my own persona.").unwrap();
        assert_eq!(current(&home), None);
        let out = command(&home, "pirate").unwrap();
        assert!(out.contains("`pirate`"), "{out}");
        assert_eq!(current(&home), Some("pirate"));
        let soul = std::fs::read_to_string(home.soul_file()).unwrap();
        assert!(soul.contains("Captain Hermes"), "{soul}");
        // Another preset keeps the user's original, not the pirate, as the backup.
        command(&home, "Noir").unwrap();
        assert_eq!(current(&home), Some("noir"));
        let list = command(&home, "").unwrap();
        assert!(list.contains(" * noir"), "{list}");
        command(&home, "none").unwrap();
        assert_eq!(
            std::fs::read_to_string(home.soul_file()).unwrap(),
            "I am my own persona."
        );
        let err = command(&home, "jester").unwrap_err().to_string();
        assert!(err.contains("known: none, helpful"), "{err}");
    }
}
