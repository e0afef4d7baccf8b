//! Toolset definitions and selection (FEATURES §4): `-t/--toolsets`, `config.yaml`
//! `toolsets:` and `agent.disabled_toolsets`.
//!
//! A *base* toolset is the set of registered tools whose [`Tool::toolset`](crate::Tool::toolset)
//! has that name (`file`, `terminal`, later `mcp-<server>` …). A *composite* toolset
//! ([`ToolsetDef`]) names tools and includes other toolsets; resolution follows includes
//! depth-first, visiting each toolset once (diamonds and cycles are harmless), and the
//! disabled toolsets are subtracted last.

/// A named composite toolset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolsetDef {
    /// Name used with `-t` and in `config.yaml`.
    pub name: &'static str,
    /// One-line description for `hermes tools`.
    pub description: &'static str,
    /// Other toolsets (base or composite) this one contains.
    pub includes: &'static [&'static str],
    /// Individual tool names this one contains.
    pub tools: &'static [&'static str],
}

/// The built-in composite toolsets. Base toolsets (`file`, `terminal`) come from the tools.
pub const TOOLSET_DEFS: &[ToolsetDef] = &[
    ToolsetDef {
        name: "hermes-cli",
        description: "Default for the CLI: files, terminal, web, todo, clarify, memory, skills, session search, delegation and the declarative tools.",
        includes: &[
            "file",
            "terminal",
            "web",
            "todo",
            "clarify",
            "memory",
            "skills",
            "session_search",
            "delegation",
            crate::declared::DECLARATIVE_TOOLSET,
        ],
        tools: &[],
    },
    // Always defined, so a toolset list naming it stays valid while HERMES_HOME/tools is
    // empty; its tools are the registered tools of the base toolset of the same name.
    ToolsetDef {
        name: crate::declared::DECLARATIVE_TOOLSET,
        description: "HTTP tools declared in HERMES_HOME/tools/*.yaml (`hermes tools check`).",
        includes: &[],
        tools: &[],
    },
    ToolsetDef {
        name: LOCAL_TOOLSET,
        description: "Default for a capable local model: files, terminal, memory and todo, with short schemas.",
        includes: &["file", "terminal", "memory", "todo"],
        tools: &[],
    },
    ToolsetDef {
        name: "safe",
        description: "Read-only: reads files and the web; no terminal, no writes.",
        includes: &["web"],
        tools: &["read_file", "search_files"],
    },
];

/// The default toolset of the CLI (FEATURES §4).
pub const DEFAULT_TOOLSET: &str = "hermes-cli";

/// The default toolset of the embedded provider for a model file of at least
/// [`SMALL_LOCAL_MODEL_BYTES`] (issue 19: tools sized to the model).
pub const LOCAL_TOOLSET: &str = "hermes-local";

/// Local model files below this size get no tools by default. Tried on the default model
/// (SmolLM2-135M, 90 MB): asked to read a file, remember a fact or run `ls` with the
/// matching tool offered, it called none of them and answered from its own text, so every
/// schema only cost prompt tokens. `-t`/`toolsets:` still offer any toolset.
pub const SMALL_LOCAL_MODEL_BYTES: u64 = 1 << 30;

/// Which toolsets to enable and which to subtract afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsetSelection {
    /// Toolset names to enable (base or composite), in the user's order.
    pub enabled: Vec<String>,
    /// Toolset names removed after everything else is resolved (`agent.disabled_toolsets`).
    pub disabled: Vec<String>,
}

impl Default for ToolsetSelection {
    /// `hermes-cli`, nothing disabled.
    fn default() -> ToolsetSelection {
        ToolsetSelection {
            enabled: vec![DEFAULT_TOOLSET.to_string()],
            disabled: Vec::new(),
        }
    }
}

impl ToolsetSelection {
    /// A selection of `enabled` minus `disabled`.
    pub fn new(
        enabled: impl IntoIterator<Item = impl Into<String>>,
        disabled: impl IntoIterator<Item = impl Into<String>>,
    ) -> ToolsetSelection {
        ToolsetSelection {
            enabled: enabled.into_iter().map(Into::into).collect(),
            disabled: disabled.into_iter().map(Into::into).collect(),
        }
    }

    /// Parses a `-t` value: comma- or whitespace-separated names (`"file, terminal"`); empty
    /// pieces are ignored. An empty string yields an empty selection.
    pub fn parse(list: &str) -> ToolsetSelection {
        ToolsetSelection {
            enabled: split_list(list),
            disabled: Vec::new(),
        }
    }

    /// Returns this selection with `disabled` (e.g. `agent.disabled_toolsets`) added.
    pub fn with_disabled(
        mut self,
        disabled: impl IntoIterator<Item = impl Into<String>>,
    ) -> ToolsetSelection {
        self.disabled.extend(disabled.into_iter().map(Into::into));
        self
    }
}

fn split_list(list: &str) -> Vec<String> {
    list.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A toolset name that is neither built in nor the toolset of a registered tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown toolset `{name}`; known toolsets: {}", known.join(", "))]
pub struct UnknownToolset {
    /// The name asked for.
    pub name: String,
    /// Every known toolset name, sorted.
    pub known: Vec<String>,
}
