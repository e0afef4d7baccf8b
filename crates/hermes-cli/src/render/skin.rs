//! Skins: the data-driven look of the terminal (seeds 001 §18.4.4, FEATURES §1 CLI).
//!
//! A skin is a YAML file: colors, spinner frames and verbs, the prompt symbol, the banner, the
//! tool-line format and per-tool emoji. Built-in skins live in `crates/hermes-cli/skins/`
//! (`default`, `mono`, `poseidon`); users add `HERMES_HOME/skins/<name>.yaml` (or `.yml`).
//! Every skin starts from the built-in `default` and overrides only the keys it names, so a
//! user file may be a single line. `display.skin` picks the skin at start, `/skin [name]`
//! switches it for the session. A broken file is reported with its path, line and column and
//! the default skin is used instead.
//!
//! This module only loads and describes skins; drawing happens in [`crate::render`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::render::style::Rgb;

/// The built-in skins: name and YAML text.
const BUILTIN: [(&str, &str); 3] = [
    ("default", include_str!("../../skins/default.yaml")),
    ("mono", include_str!("../../skins/mono.yaml")),
    ("poseidon", include_str!("../../skins/poseidon.yaml")),
];

/// A fully resolved skin: every key has a value (missing ones came from `default`).
#[derive(Debug, Clone, PartialEq)]
pub struct Skin {
    /// Skin name (`default`, `mono`, or the user file's stem).
    pub name: String,
    /// One-line description shown by `/skin`.
    pub description: String,
    /// Colors by role.
    pub colors: Palette,
    /// Spinner frames, drawn in order (one frame per tick of 100 ms).
    pub spinner_frames: Vec<String>,
    /// Words shown beside the spinner while waiting for the model (`thinking`…).
    pub thinking_verbs: Vec<String>,
    /// Agent name used in the banner (`{agent}`).
    pub agent_name: String,
    /// Text of the input prompt (`❯ `).
    pub prompt_symbol: String,
    /// Banner shown when the REPL starts. Placeholders: `{agent}`, `{version}`, `{model}`,
    /// `{provider}`, `{session}`.
    pub banner: String,
    /// The marker at the start of tool lines (`{prefix}` in [`Skin::tool_line`]).
    pub tool_prefix: String,
    /// Tool-line format. Placeholders: `{prefix}`, `{emoji}`, `{name}`, `{args}`,
    /// `{duration}`, `{status}` (`✓` or `✗`).
    pub tool_line: String,
    /// Emoji per tool name, overriding the built-in table.
    pub tool_emojis: BTreeMap<String, String>,
    /// syntect theme for fenced code (one of syntect's default themes).
    pub code_theme: String,
}

/// Colors by role; each is a 24-bit color.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Palette {
    /// Banner first part (agent name and version).
    pub banner_title: Rgb,
    /// Banner text.
    pub banner_text: Rgb,
    /// Banner secondary text.
    pub banner_dim: Rgb,
    /// Accents: tool names, spinner.
    pub ui_accent: Rgb,
    /// Labels.
    pub ui_label: Rgb,
    /// Success marks.
    pub ui_ok: Rgb,
    /// Errors.
    pub ui_error: Rgb,
    /// Warnings, retries, fallbacks.
    pub ui_warn: Rgb,
    /// Secondary text: durations, reasoning, status messages.
    pub ui_dim: Rgb,
    /// The prompt symbol.
    pub prompt: Rgb,
    /// Markdown headings.
    pub md_heading: Rgb,
    /// Inline code.
    pub md_code: Rgb,
    /// Links.
    pub md_link: Rgb,
    /// Block quotes.
    pub md_quote: Rgb,
    /// The status line.
    pub status_bar: Rgb,
}

/// A skin file as written: every key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SkinFile {
    name: Option<String>,
    description: Option<String>,
    colors: BTreeMap<String, String>,
    spinner: SpinnerFile,
    branding: BrandingFile,
    tool_prefix: Option<String>,
    tool_line: Option<String>,
    tool_emojis: BTreeMap<String, String>,
    code_theme: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SpinnerFile {
    frames: Option<Vec<String>>,
    thinking_verbs: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct BrandingFile {
    agent_name: Option<String>,
    prompt_symbol: Option<String>,
    banner: Option<String>,
}

/// A skin that could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SkinError {
    /// No built-in skin and no file in `HERMES_HOME/skins/` has this name.
    #[error("unknown skin `{name}` (available: {available})")]
    Unknown {
        /// The name asked for.
        name: String,
        /// Comma-separated names that exist.
        available: String,
    },
    /// The file could not be read.
    #[error("cannot read skin file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The YAML is malformed or a value has the wrong type.
    #[error("skin file {path} line {line}, column {column}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A value parsed but makes no sense (a bad color, no spinner frames).
    #[error("skin file {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the key.
        message: String,
    },
}

impl Skin {
    /// The built-in `default` skin.
    pub fn builtin_default() -> Skin {
        // The embedded default is complete and checked by the tests; should it ever fail to
        // parse, a minimal palette keeps the terminal usable rather than panicking.
        match resolve(BUILTIN[0].1, Path::new("default.yaml"), None) {
            Ok((skin, _)) => skin,
            Err(_) => Skin::fallback(),
        }
    }

    /// Names of the built-in skins, default first.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(n, _)| *n).collect()
    }

    /// Loads skin `name`: `HERMES_HOME/skins/<name>.yaml` (or `.yml`) when present, else the
    /// built-in of that name. Returns the skin and warnings (unknown keys, by dotted path).
    ///
    /// Errors: [`SkinError::Unknown`] when neither exists; [`SkinError::Parse`] with line and
    /// column for broken YAML; [`SkinError::Invalid`] for a bad color or empty frame list.
    pub fn load(skins_dir: &Path, name: &str) -> Result<(Skin, Vec<String>), SkinError> {
        let name = name.trim();
        for ext in ["yaml", "yml"] {
            let path = skins_dir.join(format!("{name}.{ext}"));
            if path.is_file() {
                let text = std::fs::read_to_string(&path).map_err(|source| SkinError::Io {
                    path: path.clone(),
                    source,
                })?;
                return resolve(&text, &path, Some(name));
            }
        }
        match BUILTIN.iter().find(|(n, _)| *n == name) {
            Some((n, text)) => resolve(text, Path::new(&format!("{n}.yaml")), None),
            None => Err(SkinError::Unknown {
                name: name.to_string(),
                available: Skin::available(skins_dir).join(", "),
            }),
        }
    }

    /// Loads skin `name` (or `default` when `None`), falling back to the default skin on any
    /// error. Returns the skin and the messages to show (the error, warnings).
    pub fn load_or_default(skins_dir: &Path, name: Option<&str>) -> (Skin, Vec<String>) {
        let Some(name) = name.filter(|n| !n.trim().is_empty()) else {
            return (Skin::builtin_default(), Vec::new());
        };
        match Skin::load(skins_dir, name) {
            Ok((skin, warnings)) => (skin, warnings),
            Err(e) => (
                Skin::builtin_default(),
                vec![format!("{e}; using the default skin")],
            ),
        }
    }

    /// Every skin name that [`Skin::load`] accepts: built-ins, then files in `skins_dir`
    /// (sorted, without duplicates).
    pub fn available(skins_dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = Skin::builtin_names()
            .into_iter()
            .map(String::from)
            .collect();
        let mut user = Vec::new();
        if let Ok(entries) = std::fs::read_dir(skins_dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                let is_yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
                if let (true, Some(stem)) = (is_yaml, path.file_stem().and_then(|s| s.to_str())) {
                    user.push(stem.to_string());
                }
            }
        }
        user.sort();
        for n in user {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        names
    }

    /// The emoji for a tool: the skin's `tool_emojis`, else the built-in table (MCP tools
    /// `mcp__server__tool` get a plug), else a wrench.
    pub fn tool_emoji(&self, tool: &str) -> &str {
        if let Some(e) = self.tool_emojis.get(tool) {
            return e;
        }
        if tool.starts_with("mcp__") {
            return "🔌";
        }
        match tool {
            "read_file" => "📖",
            "write_file" => "📝",
            "patch" => "🩹",
            "search_files" => "🔎",
            "terminal" => "💻",
            "process" => "🔄",
            "web_search" => "🔍",
            "web_extract" | "browser" => "🌐",
            "memory" => "🧠",
            "skill_view" | "skills_list" | "skill_manage" => "📚",
            "session_search" => "🗂",
            "cronjob" => "⏰",
            "todo" => "📋",
            "delegate_task" => "🤝",
            "execute_code" => "🐍",
            "send_message" => "📨",
            "clarify" => "❓",
            _ => "🔧",
        }
    }

    /// A minimal skin used only if the embedded default could not be read.
    fn fallback() -> Skin {
        let gray = Rgb(170, 170, 170);
        Skin {
            name: "default".into(),
            description: String::new(),
            colors: Palette {
                banner_title: gray,
                banner_text: gray,
                banner_dim: gray,
                ui_accent: gray,
                ui_label: gray,
                ui_ok: gray,
                ui_error: gray,
                ui_warn: gray,
                ui_dim: gray,
                prompt: gray,
                md_heading: gray,
                md_code: gray,
                md_link: gray,
                md_quote: gray,
                status_bar: gray,
            },
            spinner_frames: vec!["-".into(), "\\".into(), "|".into(), "/".into()],
            thinking_verbs: vec!["thinking".into()],
            agent_name: "hermes".into(),
            prompt_symbol: "> ".into(),
            banner: "{agent} {version}".into(),
            tool_prefix: ">".into(),
            tool_line: "{prefix} {name} {args}  {duration} {status}".into(),
            tool_emojis: BTreeMap::new(),
            code_theme: "base16-ocean.dark".into(),
        }
    }
}

/// Parses one skin file and lays it over the default (`None` base means: this is a built-in
/// file laid over the embedded default; the default itself is laid over nothing).
fn resolve(
    text: &str,
    path: &Path,
    user_name: Option<&str>,
) -> Result<(Skin, Vec<String>), SkinError> {
    let mut warnings = Vec::new();
    let file = parse_file(text, path, &mut warnings)?;
    let is_default_file = path == Path::new("default.yaml") && user_name.is_none();
    let base = if is_default_file {
        SkinFile::default()
    } else {
        parse_file(BUILTIN[0].1, Path::new("default.yaml"), &mut Vec::new())?
    };
    let merged = merge(base, file);
    let mut skin = build(merged, path)?;
    if let Some(n) = user_name {
        n.clone_into(&mut skin.name);
    }
    Ok((skin, warnings))
}

fn parse_file(text: &str, path: &Path, warnings: &mut Vec<String>) -> Result<SkinFile, SkinError> {
    if text.trim().is_empty() {
        return Ok(SkinFile::default());
    }
    let de = yaml_serde::Deserializer::from_str(text);
    serde_ignored::deserialize(de, |p| {
        warnings.push(format!("{}: unknown key `{p}` ignored", path.display()));
    })
    .map_err(|e: yaml_serde::Error| {
        let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        SkinError::Parse {
            path: path.to_path_buf(),
            line,
            column,
            message: e.to_string(),
        }
    })
}

fn merge(base: SkinFile, over: SkinFile) -> SkinFile {
    let mut colors = base.colors;
    colors.extend(over.colors);
    let mut tool_emojis = base.tool_emojis;
    tool_emojis.extend(over.tool_emojis);
    SkinFile {
        name: over.name.or(base.name),
        description: over.description.or(base.description),
        colors,
        spinner: SpinnerFile {
            frames: over.spinner.frames.or(base.spinner.frames),
            thinking_verbs: over.spinner.thinking_verbs.or(base.spinner.thinking_verbs),
        },
        branding: BrandingFile {
            agent_name: over.branding.agent_name.or(base.branding.agent_name),
            prompt_symbol: over.branding.prompt_symbol.or(base.branding.prompt_symbol),
            banner: over.branding.banner.or(base.branding.banner),
        },
        tool_prefix: over.tool_prefix.or(base.tool_prefix),
        tool_line: over.tool_line.or(base.tool_line),
        tool_emojis,
        code_theme: over.code_theme.or(base.code_theme),
    }
}

fn build(f: SkinFile, path: &Path) -> Result<Skin, SkinError> {
    let invalid = |message: String| SkinError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let known = [
        "banner_title",
        "banner_text",
        "banner_dim",
        "ui_accent",
        "ui_label",
        "ui_ok",
        "ui_error",
        "ui_warn",
        "ui_dim",
        "prompt",
        "md_heading",
        "md_code",
        "md_link",
        "md_quote",
        "status_bar",
    ];
    if let Some(unknown) = f.colors.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(invalid(format!(
            "unknown color `colors.{unknown}` (known: {})",
            known.join(", ")
        )));
    }
    let color = |key: &str| -> Result<Rgb, SkinError> {
        let value = f
            .colors
            .get(key)
            .ok_or_else(|| invalid(format!("`colors.{key}` is missing")))?;
        Rgb::parse_hex(value).ok_or_else(|| {
            invalid(format!(
                "`colors.{key}`: `{value}` is not a color (write #RRGGBB or #RGB)"
            ))
        })
    };
    let colors = Palette {
        banner_title: color("banner_title")?,
        banner_text: color("banner_text")?,
        banner_dim: color("banner_dim")?,
        ui_accent: color("ui_accent")?,
        ui_label: color("ui_label")?,
        ui_ok: color("ui_ok")?,
        ui_error: color("ui_error")?,
        ui_warn: color("ui_warn")?,
        ui_dim: color("ui_dim")?,
        prompt: color("prompt")?,
        md_heading: color("md_heading")?,
        md_code: color("md_code")?,
        md_link: color("md_link")?,
        md_quote: color("md_quote")?,
        status_bar: color("status_bar")?,
    };
    let frames = f.spinner.frames.unwrap_or_default();
    if frames.is_empty() || frames.iter().any(|fr| fr.is_empty() || fr.contains('\n')) {
        return Err(invalid(
            "`spinner.frames` needs at least one non-empty, single-line frame".into(),
        ));
    }
    let text =
        |v: Option<String>, key: &str| v.ok_or_else(|| invalid(format!("`{key}` is missing")));
    Ok(Skin {
        name: text(f.name, "name")?,
        description: f.description.unwrap_or_default(),
        colors,
        spinner_frames: frames,
        thinking_verbs: f
            .spinner
            .thinking_verbs
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| vec!["thinking".into()]),
        agent_name: text(f.branding.agent_name, "branding.agent_name")?,
        prompt_symbol: text(f.branding.prompt_symbol, "branding.prompt_symbol")?,
        banner: text(f.branding.banner, "branding.banner")?,
        tool_prefix: text(f.tool_prefix, "tool_prefix")?,
        tool_line: text(f.tool_line, "tool_line")?,
        tool_emojis: f.tool_emojis,
        code_theme: text(f.code_theme, "code_theme")?,
    })
}

#[cfg(test)]
mod tests;
