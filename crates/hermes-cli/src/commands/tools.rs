//! `hermes tools list` (FEATURES §1, §4): the toolsets, every tool, whether a session would
//! get it, and why not, from the registry and toolset choice sessions use
//! (`crate::assembly::tools`), so the listing and a real session agree.

use anyhow::Result;
use clap::Subcommand;
use hermes_tools::{Registry, TOOLSET_DEFS, ToolsetSelection};

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;
use crate::assembly::tools::{build_registry, enabled_toolsets};

/// `hermes tools …`
#[derive(Debug, Subcommand)]
pub enum ToolsCmd {
    /// Toolsets and tools, with availability and the reason a tool is left out.
    List,
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
