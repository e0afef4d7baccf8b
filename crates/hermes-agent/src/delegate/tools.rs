//! Which tools a subagent gets (FEATURES §4): the toolsets it asked for, intersected with
//! what its parent is offered, minus the tools no subagent may use.

use std::sync::Arc;

use hermes_tools::{Registry, Tool, ToolsetSelection};

/// Tools a subagent never gets, whatever it asks for: `delegate_task` (no recursion),
/// `clarify` (there is no user to ask), `memory` (children do not write the parent's
/// memory), and the tools that act outside the session — scheduling (`cronjob`) and
/// messaging (`send_message`).
pub const SUBAGENT_BLOCKED_TOOLS: &[&str] = &[
    "delegate_task",
    "clarify",
    "memory",
    "cronjob",
    "send_message",
];

/// Toolsets made only of [`SUBAGENT_BLOCKED_TOOLS`]; asking for one by name is an error.
pub const SUBAGENT_BLOCKED_TOOLSETS: &[&str] =
    &["delegation", "clarify", "memory", "cronjob", "messaging"];

/// The parent's tools a subagent may use at all: `parent` minus [`SUBAGENT_BLOCKED_TOOLS`]
/// and the tools of [`SUBAGENT_BLOCKED_TOOLSETS`], in the parent's order.
pub fn allowed_for_subagent(parent: &[Arc<dyn Tool>]) -> Vec<Arc<dyn Tool>> {
    parent
        .iter()
        .filter(|t| {
            let name = t.spec().name;
            !SUBAGENT_BLOCKED_TOOLS.contains(&name.as_str())
                && !SUBAGENT_BLOCKED_TOOLSETS.contains(&t.toolset())
        })
        .cloned()
        .collect()
}

/// The tools of a subagent that asked for `requested` toolsets (`None` or empty: everything
/// its parent may pass on). A partly covered toolset (a preset such as `hermes-cli` when the
/// parent has only some of its tools) gives the intersection.
///
/// # Errors
/// Text for the model when a requested toolset is unknown to the parent (not one of its
/// toolsets nor a preset), is one a subagent may never have, or leaves no tool at all.
pub fn child_tools(
    parent: &[Arc<dyn Tool>],
    requested: Option<&[String]>,
) -> Result<Vec<Arc<dyn Tool>>, String> {
    let allowed = allowed_for_subagent(parent);
    let requested = match requested {
        Some(r) if !r.is_empty() => r,
        _ => return Ok(allowed),
    };
    let mut registry = Registry::new();
    for tool in &allowed {
        // Names in one agent's list are distinct; a duplicate would simply be skipped.
        let _ = registry.register(tool.clone());
    }
    let available = available_toolsets(&allowed);
    for name in requested {
        if SUBAGENT_BLOCKED_TOOLSETS.contains(&name.as_str()) {
            return Err(format!(
                "toolset `{name}` is never given to a subagent; the toolsets you can pass on \
                 are: {}",
                available.join(", ")
            ));
        }
    }
    let selected = registry
        .select(&ToolsetSelection::new(
            requested.to_vec(),
            Vec::<String>::new(),
        ))
        .map_err(|e| {
            format!(
                "toolset `{}` is not one of yours, and a subagent only gets tools you have; \
                 the toolsets you can pass on are: {}",
                e.name,
                available.join(", ")
            )
        })?;
    let tools = selected.tools().to_vec();
    if tools.is_empty() {
        return Err(format!(
            "none of the tools of toolsets {} are yours to pass on; the toolsets you can pass \
             on are: {}",
            requested.join(", "),
            available.join(", ")
        ));
    }
    Ok(tools)
}

/// The toolset names of `tools`, sorted and de-duplicated.
fn available_toolsets(tools: &[Arc<dyn Tool>]) -> Vec<String> {
    let mut names: Vec<String> = tools.iter().map(|t| t.toolset().to_string()).collect();
    names.sort();
    names.dedup();
    names
}
