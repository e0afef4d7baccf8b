//! `hermes prompt-size [--json]` (Python Hermes' `hermes prompt-size`): what a new session
//! would send before the first message — the system prompt, section by section, and the
//! built-in tool schemas — in bytes and estimated tokens. Built the way a session builds
//! them (`crate::assembly`), without connecting anywhere: MCP servers' tools, which join at
//! session start, are not counted.

use anyhow::Result;
use clap::Args;
use hermes_tools::ToolsetSelection;

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;

/// Flags of `hermes prompt-size`.
#[derive(Debug, Clone, Args)]
pub struct PromptSizeArgs {
    /// One JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// One measured part.
struct Part {
    name: String,
    bytes: usize,
    tokens: u64,
}

/// What a session would send before its first message, as `crate::assembly` builds it: the
/// measurement `hermes prompt-size` and `hermes debug prompt` show.
pub(crate) struct PromptMeasure {
    /// The model and provider the prompt is built for.
    pub model: String,
    /// Provider name.
    pub provider: String,
    /// Whether the compact prompt profile is in force.
    pub compact: bool,
    /// The prompt source, to rebuild the prompt for another model, date or directory.
    pub source: crate::assembly::prompt::CliPrompt,
    /// The prompt, section by section.
    pub built: hermes_context::BuiltPrompt,
    /// The built-in tool schemas the agent would send, in order.
    pub specs: Vec<hermes_protocol::ToolSpec>,
    /// Whether MCP servers are configured (their tools are not counted).
    pub mcp_configured: bool,
}

impl PromptMeasure {
    /// The tool names, in order.
    pub fn tool_names(&self) -> Vec<String> {
        self.specs.iter().map(|s| s.name.clone()).collect()
    }
}

/// Builds the prompt and tool schemas a new session would get, without connecting anywhere.
pub(crate) fn measure(app: &App, chat: &ChatArgs) -> Result<PromptMeasure> {
    let runtime = crate::assembly::runtime::resolve_runtime(app, chat)?;
    let (toolsets, _) = crate::assembly::tools::enabled_toolsets(app, chat);
    let store = app.open_store()?;
    let registry = crate::assembly::tools::build_registry(app, chat, Some(store))?;
    let selection = registry
        .select(&ToolsetSelection::new(
            toolsets.clone(),
            app.config.agent.disabled_toolsets.clone(),
        ))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut tools = selection.tools().to_vec();
    let compact = crate::assembly::runtime::prompt_is_compact(app, chat, runtime.api_mode);
    crate::assembly::delegation::configure(app, compact, &mut tools);
    let cwd = match &app.config.terminal.cwd {
        Some(p) => p.clone(),
        None => std::env::current_dir()?,
    };
    let source = crate::assembly::prompt::CliPrompt::new(
        app.home.clone(),
        cwd,
        compact,
        app.config.model.to_config().context_length,
        toolsets,
    )
    .with_memory(app.config.memory.clone())
    .with_disabled_skills(
        app.config
            .skills
            .disabled_for(Some(crate::assembly::runtime::SKILLS_PLATFORM)),
    )
    .with_tool_use_enforcement(app.config.agent.tool_use_enforcement_setting());
    let specs: Vec<hermes_protocol::ToolSpec> = tools.iter().map(|t| t.spec()).collect();
    let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
    let built = source.built(&runtime.model, &runtime.provider, &names);
    Ok(PromptMeasure {
        model: runtime.model,
        provider: runtime.provider,
        compact,
        source,
        built,
        specs,
        mcp_configured: app.config.mcp_servers.is_some(),
    })
}

/// Bytes of a tool schema as sent (its JSON text).
pub(crate) fn spec_bytes(spec: &hermes_protocol::ToolSpec) -> usize {
    serde_json::to_string(spec).map(|s| s.len()).unwrap_or(0)
}

/// Runs `hermes prompt-size`; returns the exit code.
pub fn run(profile: Option<&str>, chat: &ChatArgs, args: &PromptSizeArgs) -> Result<i32> {
    let app = App::load(profile)?;
    app.warn_config();
    let PromptMeasure {
        model,
        provider,
        compact,
        built,
        specs,
        mcp_configured,
        ..
    } = measure(&app, chat)?;
    let estimator = hermes_context::TokenEstimator::new();
    let sections: Vec<Part> = built
        .sections
        .iter()
        .map(|(kind, text)| Part {
            name: format!("{kind:?}"),
            bytes: text.len(),
            tokens: estimator.estimate_text(text),
        })
        .collect();
    let tool_parts: Vec<Part> = specs
        .iter()
        .map(|spec| Part {
            name: spec.name.clone(),
            bytes: spec_bytes(spec),
            tokens: estimator.estimate_tool(spec),
        })
        .collect();
    let sum = |parts: &[Part]| {
        (
            parts.iter().map(|p| p.bytes).sum::<usize>(),
            parts.iter().map(|p| p.tokens).sum::<u64>(),
        )
    };
    let prompt_total = (built.text.len(), estimator.estimate_text(&built.text));
    let tools_total = sum(&tool_parts);
    if args.json {
        let part_json =
            |p: &Part| serde_json::json!({"name": p.name, "bytes": p.bytes, "tokens": p.tokens});
        let value = serde_json::json!({
            "model": model,
            "provider": provider,
            "profile": if compact { "compact" } else { "full" },
            "system_prompt": {
                "bytes": prompt_total.0,
                "tokens": prompt_total.1,
                "sections": sections.iter().map(part_json).collect::<Vec<_>>(),
            },
            "tools": {
                "count": tool_parts.len(),
                "bytes": tools_total.0,
                "tokens": tools_total.1,
                "schemas": tool_parts.iter().map(part_json).collect::<Vec<_>>(),
            },
            "total": {"bytes": prompt_total.0 + tools_total.0, "tokens": prompt_total.1 + tools_total.1},
        });
        outln!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(0);
    }
    outln!(
        "{} on {} ({} prompt profile); tokens are estimates",
        model,
        provider,
        if compact { "compact" } else { "full" }
    );
    outln!();
    outln!("{:<28} {:>9} {:>8}", "System prompt", "bytes", "tokens");
    for p in &sections {
        outln!("  {:<26} {:>9} {:>8}", p.name, p.bytes, p.tokens);
    }
    outln!(
        "  {:<26} {:>9} {:>8}",
        "total",
        prompt_total.0,
        prompt_total.1
    );
    outln!();
    outln!(
        "{:<28} {:>9} {:>8}",
        format!("Tool schemas ({})", tool_parts.len()),
        "bytes",
        "tokens"
    );
    let mut sorted: Vec<&Part> = tool_parts.iter().collect();
    sorted.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(&b.name)));
    for p in sorted {
        outln!("  {:<26} {:>9} {:>8}", p.name, p.bytes, p.tokens);
    }
    outln!(
        "  {:<26} {:>9} {:>8}",
        "total",
        tools_total.0,
        tools_total.1
    );
    outln!();
    outln!(
        "{:<28} {:>9} {:>8}",
        "Everything",
        prompt_total.0 + tools_total.0,
        prompt_total.1 + tools_total.1
    );
    if mcp_configured {
        outln!("(tools of MCP servers join at session start and are not counted here)");
    }
    Ok(0)
}
