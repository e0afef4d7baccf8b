//! The system prompt builder (FEATURES §5; ARCHITECTURE §2 step 1).
//!
//! The prompt is built once per session from typed layers in a fixed order and stored by the
//! agent; resumed sessions reuse the stored bytes. For that reason [`PromptBuilder::build`] is
//! deterministic: the same inputs and the same files give the same bytes (the date is an input,
//! there is no clock time, and directory listings are sorted).

use std::path::Path;

use chrono::NaiveDate;
use hermes_protocol::HermesHome;

use crate::context_files::{ContextFiles, context_file_cap_chars, truncate_head_tail};
use crate::fragments::{Fragment, render_guidance};
use crate::soul::{SoulRead, default_soul, read_soul};

/// Context windows at or below this many tokens get [`PromptProfile::Compact`] when the
/// profile is automatic.
pub const COMPACT_WINDOW_MAX_TOKENS: u64 = 16_384;
/// Cap in chars for the project context in the compact profile.
pub const COMPACT_CONTEXT_CAP_CHARS: usize = 2_000;
/// Cap in chars for a custom `SOUL.md` in the compact profile.
pub const COMPACT_IDENTITY_MAX_CHARS: usize = 600;

/// How much text the system prompt spends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PromptProfile {
    /// Every layer at full length.
    Full,
    /// For small local context windows: a short identity, terse tool guidance and a project
    /// context capped at [`COMPACT_CONTEXT_CAP_CHARS`] — a few hundred tokens in all.
    Compact,
}

impl PromptProfile {
    /// Parses the `agent.prompt_profile` config value (`full` or `compact`, any case).
    pub fn parse(s: &str) -> Option<PromptProfile> {
        match s.trim().to_ascii_lowercase().as_str() {
            "full" => Some(PromptProfile::Full),
            "compact" => Some(PromptProfile::Compact),
            _ => None,
        }
    }

    /// The automatic choice: [`PromptProfile::Compact`] for a known window of at most
    /// [`COMPACT_WINDOW_MAX_TOKENS`] tokens, else [`PromptProfile::Full`].
    pub fn auto(context_window: Option<u64>) -> PromptProfile {
        match context_window {
            Some(ctx) if ctx <= COMPACT_WINDOW_MAX_TOKENS => PromptProfile::Compact,
            _ => PromptProfile::Full,
        }
    }

    /// The config value's profile, or [`PromptProfile::auto`] when it is unset or not
    /// recognised.
    pub fn resolve(setting: Option<&str>, context_window: Option<u64>) -> PromptProfile {
        setting
            .and_then(PromptProfile::parse)
            .unwrap_or_else(|| PromptProfile::auto(context_window))
    }

    /// `"full"` or `"compact"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PromptProfile::Full => "full",
            PromptProfile::Compact => "compact",
        }
    }
}

/// The layers of the system prompt, in prompt order (FEATURES §5). The derived ordering is the
/// prompt order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LayerKind {
    /// `SOUL.md` or the built-in identity.
    Identity,
    /// Guidance for the tools present (file, terminal; later memory, session_search, skills).
    ToolGuidance,
    /// Tool-use discipline for models that need it (added by the caller).
    ToolUseDiscipline,
    /// The caller's (user's or gateway's) system message.
    SystemMessage,
    /// Memory snapshot (added by the caller).
    Memory,
    /// User-profile snapshot (added by the caller).
    UserProfile,
    /// Skills index (added by the caller).
    SkillsIndex,
    /// Project context file, or the line saying why it was not loaded.
    ContextFile,
    /// Date, model and provider.
    Metadata,
}

/// Everything the builder needs. Borrowed, so building allocates only the output.
#[derive(Debug, Clone)]
pub struct PromptInputs<'a> {
    /// `HERMES_HOME`, for `SOUL.md`.
    pub home: &'a HermesHome,
    /// Working directory, where context files are searched.
    pub cwd: &'a Path,
    /// Names of the tools the model will be offered; guidance is given only for these.
    pub tool_names: &'a [String],
    /// Model name for the metadata line.
    pub model: &'a str,
    /// Provider name for the metadata line.
    pub provider: &'a str,
    /// Session date for the metadata line (no clock time, so the prompt is stable all day and
    /// on resume).
    pub date: NaiveDate,
    /// Full or compact.
    pub profile: PromptProfile,
    /// The model's context window in tokens, if known (sizes the context-file cap).
    pub context_window: Option<u64>,
    /// The caller's system message, placed after the tool guidance.
    pub extra_system: Option<String>,
    /// Whether to search `cwd` for project context files.
    pub load_context_files: bool,
}

/// The assembled system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltPrompt {
    /// The prompt text: the sections' texts joined by one blank line.
    pub text: String,
    /// The non-empty sections in prompt order.
    pub sections: Vec<(LayerKind, String)>,
    /// Notes for logs and the user (skipped or flagged files, identity fallbacks), e.g.
    /// `"AGENTS.md skipped: flagged by injection scan (role hijack)"`.
    pub notes: Vec<String>,
}

impl BuiltPrompt {
    /// The text of the section of `kind`, if present.
    pub fn section(&self, kind: LayerKind) -> Option<&str> {
        self.sections
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, t)| t.as_str())
    }
}

/// Assembles the system prompt from [`PromptInputs`] and optional caller-provided layers.
#[derive(Debug, Clone)]
pub struct PromptBuilder<'a> {
    inputs: PromptInputs<'a>,
    extra_layers: Vec<(LayerKind, String)>,
}

impl<'a> PromptBuilder<'a> {
    /// A builder for `inputs`.
    pub fn new(inputs: PromptInputs<'a>) -> PromptBuilder<'a> {
        PromptBuilder {
            inputs,
            extra_layers: Vec::new(),
        }
    }

    /// Adds a layer produced elsewhere (memory block, skills index, tool-use discipline). It is
    /// placed by `kind` in prompt order; layers of the same kind keep the order they were added
    /// in, after the builder's own. Blank text is ignored.
    pub fn with_layer(mut self, kind: LayerKind, text: impl Into<String>) -> PromptBuilder<'a> {
        let text = text.into();
        if !text.trim().is_empty() {
            self.extra_layers.push((kind, text.trim().to_string()));
        }
        self
    }

    /// Builds the prompt. Reads `SOUL.md` and (if enabled) the project context files with
    /// blocking I/O; call it from a blocking-friendly thread. Never fails: problems with files
    /// fall back to defaults and are reported in [`BuiltPrompt::notes`].
    pub fn build(&self) -> BuiltPrompt {
        let inputs = &self.inputs;
        let mut notes: Vec<String> = Vec::new();
        let mut sections: Vec<(LayerKind, String)> = Vec::new();

        sections.push((LayerKind::Identity, self.identity(&mut notes)));

        let guidance_fragment = match inputs.profile {
            PromptProfile::Full => Fragment::GuidanceFull,
            PromptProfile::Compact => Fragment::GuidanceCompact,
        };
        sections.push((
            LayerKind::ToolGuidance,
            render_guidance(guidance_fragment, inputs.tool_names),
        ));

        if let Some(extra) = &inputs.extra_system {
            sections.push((LayerKind::SystemMessage, extra.trim().to_string()));
        }

        if inputs.load_context_files {
            let user_home = std::env::var_os("HOME").map(std::path::PathBuf::from);
            let secrets = hermes_tools::sandbox::secret_paths(inputs.home, user_home.as_deref());
            let files = ContextFiles::discover(inputs.cwd, &secrets);
            notes.extend(files.notes.iter().cloned());
            let mut cap = context_file_cap_chars(inputs.context_window);
            if inputs.profile == PromptProfile::Compact {
                cap = cap.min(COMPACT_CONTEXT_CAP_CHARS);
            }
            if let Some(text) = files.render(cap) {
                sections.push((LayerKind::ContextFile, text));
            }
        }

        let date = inputs.date.format("%Y-%m-%d (%A)").to_string();
        let metadata = Fragment::Metadata.render(&[
            ("date", date.as_str()),
            ("model", inputs.model),
            ("provider", inputs.provider),
        ]);
        sections.push((LayerKind::Metadata, metadata.trim().to_string()));

        sections.extend(self.extra_layers.iter().cloned());
        // Stable sort: the builder's own layers stay ahead of added ones of the same kind.
        sections.sort_by_key(|(kind, _)| *kind);
        sections.retain(|(_, text)| !text.trim().is_empty());

        let text = sections
            .iter()
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join("\n\n");
        BuiltPrompt {
            text,
            sections,
            notes,
        }
    }

    fn identity(&self, notes: &mut Vec<String>) -> String {
        let soul = read_soul(self.inputs.home);
        let custom = match soul {
            SoulRead::Text(text) => Some(text),
            SoulRead::Missing => None,
            SoulRead::Blank => {
                notes.push("SOUL.md is blank; using the built-in identity".to_string());
                None
            }
            SoulRead::Unreadable(e) => {
                notes.push(format!(
                    "SOUL.md unreadable ({e}); using the built-in identity"
                ));
                None
            }
        };
        match self.inputs.profile {
            PromptProfile::Full => {
                let text = custom.unwrap_or_else(|| default_soul().trim().to_string());
                let path = self.inputs.home.soul_file().display().to_string();
                let cap = context_file_cap_chars(None);
                truncate_head_tail(&text, cap, "SOUL.md", &path).0
            }
            PromptProfile::Compact => match custom {
                Some(text) if text != default_soul().trim() => {
                    if text.chars().count() > COMPACT_IDENTITY_MAX_CHARS {
                        let mut cut: String =
                            text.chars().take(COMPACT_IDENTITY_MAX_CHARS - 1).collect();
                        cut.push('…');
                        cut
                    } else {
                        text
                    }
                }
                _ => Fragment::IdentityCompact.raw().trim().to_string(),
            },
        }
    }
}
