//! `hermes tools list` (FEATURES §1, §4): the toolsets, every tool, whether a session would
//! get it, and why not. Also the registry and toolset choice sessions use, so the listing and
//! a real session agree.

use std::sync::Arc;

use anyhow::Result;
use clap::Subcommand;
use hermes_store::SessionStore;
use hermes_tools::{Registry, TOOLSET_DEFS, ToolsetSelection};

use crate::app::App;
use crate::args::ChatArgs;

/// `hermes tools …`
#[derive(Debug, Subcommand)]
pub enum ToolsCmd {
    /// Toolsets and tools, with availability and the reason a tool is left out.
    List,
}

/// The `web` toolset's tools (`web_extract`, `web_search`) from config `web:` and the
/// environment/`.env` keys (FEATURES §4; `hermes_tools::web`).
///
/// # Errors
/// An invalid `web.*` value, named with the config file's path.
pub fn web_tools(app: &App) -> Result<Vec<Arc<dyn hermes_tools::Tool>>> {
    hermes_tools::web::tools(&app.config.web, &app.env)
        .map_err(|e| anyhow::anyhow!("{}: {e}", app.home.config_file().display()))
}

/// Every tool a CLI session can have: the built-in tools, the web tools, then memory, skills
/// and (with a store) session search, with config `memory:` applied. MCP tools join at
/// session start.
///
/// # Errors
/// A duplicate tool name (a programming error) or an invalid `web.*` value.
pub fn build_registry(
    app: &App,
    args: &ChatArgs,
    store: Option<Arc<SessionStore>>,
) -> Result<Registry> {
    let mut registry = Registry::builtin();
    for tool in web_tools(app)? {
        registry
            .register(tool)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let disabled = app
        .config
        .skills
        .disabled_for(Some(crate::session::SKILLS_PLATFORM));
    for tool in
        hermes_context::learning_tools_configured(&app.home, store, &app.config.memory, &disabled)
    {
        registry
            .register(tool)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    registry
        .register(crate::cron_cmd::session_tool(app, args)?)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    registry
        .register(std::sync::Arc::new(hermes_agent::DelegateTool::new(
            crate::delegation::settings(app, None),
        )))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(registry)
}

/// The toolsets to enable and where the choice came from: `-t`, config `toolsets:`, or the
/// default `hermes-cli`.
pub fn enabled_toolsets(app: &App, args: &ChatArgs) -> (Vec<String>, &'static str) {
    let (mut toolsets, source) = match &args.toolsets {
        Some(t) => (t.clone(), "-t/--toolsets"),
        None if !app.config.toolsets.is_empty() => {
            (app.config.toolsets.clone(), "config.yaml toolsets")
        }
        None => (
            vec![hermes_tools::DEFAULT_TOOLSET.to_string()],
            "the default",
        ),
    };
    // Interactive sessions may schedule work; cron runs never get this tool.
    if toolsets.iter().any(|t| t == hermes_tools::DEFAULT_TOOLSET) {
        toolsets.push(hermes_cron::CRONJOB_TOOLSET.to_string());
    }
    (toolsets, source)
}

/// Runs a tools subcommand; returns the process exit code.
pub fn run(profile: Option<&str>, args: &ChatArgs, action: Option<&ToolsCmd>) -> Result<i32> {
    let app = App::load(profile)?;
    app.warn_config();
    match action.unwrap_or(&ToolsCmd::List) {
        ToolsCmd::List => {
            let store = app.open_store()?;
            let registry = build_registry(&app, args, Some(store))?;
            print!("{}", list_text(&app, args, &registry)?);
            Ok(0)
        }
    }
}

/// The state of one tool for the current settings.
fn status(
    name: &str,
    on: &[String],
    hidden: &[(String, String)],
    without_disabled: &[String],
) -> String {
    if on.iter().any(|n| n == name) {
        return "on".to_string();
    }
    if let Some((_, reason)) = hidden.iter().find(|(n, _)| n == name) {
        return format!("hidden: {reason}");
    }
    if without_disabled.iter().any(|n| n == name) {
        return "off: in agent.disabled_toolsets".to_string();
    }
    "off: toolset not enabled".to_string()
}

fn list_text(app: &App, args: &ChatArgs, registry: &Registry) -> Result<String> {
    let (enabled, source) = enabled_toolsets(app, args);
    let disabled = app.config.agent.disabled_toolsets.clone();
    let sel = registry
        .select(&ToolsetSelection::new(enabled.clone(), disabled.clone()))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let on = sel.names();
    let hidden = sel.unavailable().to_vec();
    let undisabled = registry
        .select(&ToolsetSelection::new(
            enabled.clone(),
            Vec::<String>::new(),
        ))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut without_disabled = undisabled.names();
    without_disabled.extend(undisabled.unavailable().iter().map(|(n, _)| n.clone()));

    let mut out = format!("Enabled toolsets ({source}): {}\n", enabled.join(", "));
    if !disabled.is_empty() {
        out.push_str(&format!(
            "Disabled toolsets (agent.disabled_toolsets): {}\n",
            disabled.join(", ")
        ));
    }
    out.push_str("\nComposite toolsets:\n");
    for def in TOOLSET_DEFS {
        let mut parts: Vec<&str> = def.includes.to_vec();
        parts.extend(def.tools);
        out.push_str(&format!(
            "  {:<12} {} [{}]\n",
            def.name,
            def.description,
            parts.join(", ")
        ));
    }
    out.push_str("\nTools by toolset:\n");
    let mut by_set: Vec<(String, String)> = registry
        .names()
        .into_iter()
        .filter_map(|n| registry.get(&n).map(|t| (t.toolset().to_string(), n)))
        .collect();
    by_set.sort_by(|a, b| a.0.cmp(&b.0));
    let mut current = "";
    for (set, name) in &by_set {
        if set != current {
            out.push_str(&format!("  {set}\n"));
            current = set;
        }
        let mark = if on.contains(name) { "✓" } else { "·" };
        out.push_str(&format!(
            "    {mark} {name:<16} {}\n",
            status(name, &on, &hidden, &without_disabled)
        ));
    }
    out.push_str("\nTools of MCP servers (config.yaml mcp_servers) join at session start.\n");
    Ok(out)
}
