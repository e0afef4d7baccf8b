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

impl LayerKind {
    /// Every kind, in prompt order.
    pub const ALL: [LayerKind; 9] = [
        LayerKind::Identity,
        LayerKind::ToolGuidance,
        LayerKind::ToolUseDiscipline,
        LayerKind::SystemMessage,
        LayerKind::Memory,
        LayerKind::UserProfile,
        LayerKind::SkillsIndex,
        LayerKind::ContextFile,
        LayerKind::Metadata,
    ];

    /// The layer's snake_case name, as `hermes debug prompt` shows it (`"identity"`,
    /// `"tool_guidance"`, `"skills_index"`, …).
    pub fn name(self) -> &'static str {
        match self {
            LayerKind::Identity => "identity",
            LayerKind::ToolGuidance => "tool_guidance",
            LayerKind::ToolUseDiscipline => "tool_use_discipline",
            LayerKind::SystemMessage => "system_message",
            LayerKind::Memory => "memory",
            LayerKind::UserProfile => "user_profile",
            LayerKind::SkillsIndex => "skills_index",
            LayerKind::ContextFile => "context_files",
            LayerKind::Metadata => "metadata",
        }
    }
}

/// One layer's share of a system prompt's text: what [`BuiltPrompt::layer_sizes`] and
/// [`BuiltPrompt::split_stored`] return.
///
/// The shares partition the text: a layer's span runs from its first byte to the first byte
/// of the next layer, so the blank line that joins two layers counts with the earlier one and
/// the `bytes` of all layers add up to the text's length. `tokens` are
/// [`TokenEstimator`](crate::TokenEstimator) estimates attributed cumulatively (the estimate
/// of the text up to the span's end minus the estimate up to its start), so they add up to
/// `TokenEstimator::estimate_text` of the whole text — the number the agent budgets with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerSize {
    /// The layer's kind; `None` for stored text no layer of the reference build accounts for.
    pub kind: Option<LayerKind>,
    /// [`LayerKind::name`], or several names joined by `+` when a stored span covers layers
    /// that changed together, or `"unmatched"`.
    pub name: String,
    /// Byte offset of the span in the text.
    pub start: usize,
    /// Length of the span in bytes (UTF-8).
    pub bytes: usize,
    /// Estimated tokens of the span (see the type's docs).
    pub tokens: u64,
    /// False when the span's text differs from the reference build's layer (a stored prompt
    /// whose memory, skills or files changed since); always true for a built prompt.
    pub same_as_build: bool,
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

    /// The sizes of the sections in prompt order, partitioning [`BuiltPrompt::text`] (see
    /// [`LayerSize`]: the bytes add up to `text.len()`, the tokens to the estimate of the whole
    /// text).
    pub fn layer_sizes(&self) -> Vec<LayerSize> {
        let mut spans = Vec::with_capacity(self.sections.len());
        let mut at = 0;
        for (kind, section) in &self.sections {
            spans.push((Some(*kind), kind.name().to_string(), at, true));
            at += section.len() + SEPARATOR.len();
        }
        sized(&self.text, spans)
    }

    /// Splits `stored` (a session's stored system prompt) along this build's sections.
    ///
    /// The prompt has no markers between layers, so the split anchors on this build's section
    /// texts: each is looked for verbatim, in order, where a layer can start (the text's start
    /// or after a blank line) and end (a blank line or the text's end). Stored text between
    /// two anchors goes to the sections of this build that were not found there (joined by `+`
    /// and marked `same_as_build: false`), or to `"unmatched"` when there are none. Build the
    /// reference with the session's model, provider, date and directory for the best match.
    /// Returns `None` when no section is found at all (show the prompt as one block then).
    pub fn split_stored(&self, stored: &str) -> Option<Vec<LayerSize>> {
        // (section index, start) of each section found, in order.
        let mut anchors: Vec<(usize, usize)> = Vec::new();
        let mut cursor = 0;
        for (i, (_, section)) in self.sections.iter().enumerate() {
            if let Some(start) = find_layer(stored, section, cursor) {
                anchors.push((i, start));
                cursor = start + section.len();
            }
        }
        if anchors.is_empty() {
            return None;
        }
        let names = |range: std::ops::Range<usize>| -> (Option<LayerKind>, String) {
            let kinds: Vec<LayerKind> = self.sections[range].iter().map(|(k, _)| *k).collect();
            match kinds.as_slice() {
                [] => (None, "unmatched".to_string()),
                [one] => (Some(*one), one.name().to_string()),
                many => (
                    None,
                    many.iter().map(|k| k.name()).collect::<Vec<_>>().join("+"),
                ),
            }
        };
        let mut spans = Vec::new();
        // Stored text from `from` to `to` no anchor accounts for, given to the sections
        // `missing` of this build; the blank line it starts with stays with the layer before.
        let gap = |from: usize, to: usize, missing: std::ops::Range<usize>| {
            let text = &stored[from..to];
            if text.trim_matches('\n').is_empty() {
                return None;
            }
            let lead = if from == 0 {
                0
            } else {
                text.len() - text.trim_start_matches('\n').len()
            };
            let (kind, name) = names(missing);
            Some((kind, name, from + lead, false))
        };
        let mut next_section = 0;
        let mut end_of_previous = 0;
        for &(i, start) in &anchors {
            spans.extend(gap(end_of_previous, start, next_section..i));
            let (kind, section) = &self.sections[i];
            spans.push((Some(*kind), kind.name().to_string(), start, true));
            next_section = i + 1;
            end_of_previous = start + section.len();
        }
        spans.extend(gap(
            end_of_previous,
            stored.len(),
            next_section..self.sections.len(),
        ));
        // Leading blank lines before the first layer count with it.
        if let Some(first) = spans.first_mut() {
            first.2 = 0;
        }
        Some(sized(stored, spans))
    }
}

/// What joins two sections in [`BuiltPrompt::text`].
const SEPARATOR: &str = "\n\n";

/// The first place at or after `from` where `section` appears in `text` as a whole layer:
/// starting at the text's start or after a blank line, ending at a blank line or the end.
fn find_layer(text: &str, section: &str, from: usize) -> Option<usize> {
    if section.is_empty() {
        return None;
    }
    let hay = text.get(from..)?;
    hay.match_indices(section)
        .map(|(i, _)| from + i)
        .find(|&start| {
            let end = start + section.len();
            let starts = start == 0 || text[..start].ends_with(SEPARATOR);
            let ends = end == text.len() || text[end..].starts_with(SEPARATOR);
            starts && ends
        })
}

/// [`LayerSize`]s of `text` from `(kind, name, start, same_as_build)` spans in order, each
/// running to the next one's start (the last to the end).
fn sized(text: &str, spans: Vec<(Option<LayerKind>, String, usize, bool)>) -> Vec<LayerSize> {
    let estimator = crate::TokenEstimator::new();
    let starts: Vec<usize> = spans.iter().map(|s| s.2).collect();
    spans
        .into_iter()
        .enumerate()
        .map(|(i, (kind, name, start, same_as_build))| {
            let end = starts.get(i + 1).copied().unwrap_or(text.len()).max(start);
            let before = estimator.estimate_text(&text[..start]);
            let through = estimator.estimate_text(&text[..end]);
            LayerSize {
                kind,
                name,
                start,
                bytes: end - start,
                tokens: through - before,
                same_as_build,
            }
        })
        .collect()
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
            .join(SEPARATOR);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TokenEstimator;

    fn built(sections: &[(LayerKind, &str)]) -> BuiltPrompt {
        let sections: Vec<(LayerKind, String)> =
            sections.iter().map(|(k, t)| (*k, t.to_string())).collect();
        BuiltPrompt {
            text: sections
                .iter()
                .map(|(_, t)| t.as_str())
                .collect::<Vec<_>>()
                .join(SEPARATOR),
            sections,
            notes: Vec::new(),
        }
    }

    fn check_partition(text: &str, layers: &[LayerSize]) {
        assert_eq!(layers.iter().map(|l| l.bytes).sum::<usize>(), text.len());
        assert_eq!(
            layers.iter().map(|l| l.tokens).sum::<u64>(),
            TokenEstimator::new().estimate_text(text)
        );
        let mut at = 0;
        for l in layers {
            assert_eq!(l.start, at, "{layers:?}");
            at += l.bytes;
        }
    }

    #[test]
    fn layer_sizes_partition_the_text() {
        let p = built(&[
            (LayerKind::Identity, "You are hermes.\n\nBe brief."),
            (LayerKind::Memory, "mem: 日本語"),
            (LayerKind::Metadata, "Date: today"),
        ]);
        let layers = p.layer_sizes();
        check_partition(&p.text, &layers);
        let names: Vec<&str> = layers.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["identity", "memory", "metadata"]);
        assert_eq!(layers[0].bytes, "You are hermes.\n\nBe brief.\n\n".len());
        assert!(layers.iter().all(|l| l.same_as_build));
    }

    #[test]
    fn a_stored_prompt_splits_along_the_build_and_marks_what_changed() {
        let now = built(&[
            (LayerKind::Identity, "You are hermes."),
            (LayerKind::Memory, "memory now"),
            (LayerKind::SkillsIndex, "skills now"),
            (LayerKind::Metadata, "Date: today"),
        ]);
        // Same text: the same layers.
        assert_eq!(now.split_stored(&now.text), Some(now.layer_sizes()));
        // Memory and skills changed since: one span for both, marked.
        let stored = "You are hermes.\n\nmemory then\n\nskills then\n\nDate: today";
        let layers = now.split_stored(stored).unwrap();
        check_partition(stored, &layers);
        let got: Vec<(&str, bool)> = layers
            .iter()
            .map(|l| (l.name.as_str(), l.same_as_build))
            .collect();
        assert_eq!(
            got,
            [
                ("identity", true),
                ("memory+skills_index", false),
                ("metadata", true)
            ]
        );
        // Only the metadata differs: it keeps its name.
        let stored = "You are hermes.\n\nmemory now\n\nskills now\n\nDate: yesterday";
        let layers = now.split_stored(stored).unwrap();
        check_partition(stored, &layers);
        assert_eq!(layers.last().unwrap().name, "metadata");
        assert_eq!(layers.last().unwrap().kind, Some(LayerKind::Metadata));
        assert!(!layers.last().unwrap().same_as_build);
        // A section's text inside another one is not an anchor.
        let stored = "Intro: You are hermes. really\n\nmemory now";
        let layers = now.split_stored(stored).unwrap();
        check_partition(stored, &layers);
        assert_eq!(layers[0].name, "identity");
        assert!(!layers[0].same_as_build);
        // Nothing in common: no split.
        assert_eq!(now.split_stored("something else entirely"), None);
    }
}
