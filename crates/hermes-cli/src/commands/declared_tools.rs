//! `hermes tools check` and `hermes tools test <name> [json]`: the declarative HTTP tools of
//! `HERMES_HOME/tools/*.yaml` (seed 004 §3.2; `hermes_tools::declared`), and the health of
//! the tools that have a check, for `hermes tools list` and `hermes doctor`.
//!
//! `check` prints every problem as `file:line:column: message` and exits 1 when there is
//! one, else prints one summary line and exits 0. `test` calls one tool the way a model's call
//! runs — arguments coerced and validated against `input_schema`, the health check first when
//! the tool has one, so a down endpoint is answered by its fallback — and prints the result;
//! exit 0 for a result, 1 for an error result, 2 for a usage error.
//!
//! What a tool file or its service wrote (a key, a name, an answer) reaches the terminal
//! with its control characters in caret notation
//! ([`crate::render::style::visible_controls`]), never as escape sequences.

use std::collections::HashMap;

use anyhow::Result;
use hermes_tools::{Registry, Tool, ToolContext, ToolHealth};

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;
use crate::assembly::tools::{build_registry, builtin_names, declared_tools};
use crate::render::style::visible_controls;

/// The health of every tool of `registry` that has a check, checked now (each bounded by the
/// tool's own timeout; all at once).
pub async fn health_of(registry: &Registry) -> HashMap<String, ToolHealth> {
    let tools: Vec<_> = registry
        .names()
        .into_iter()
        .filter_map(|n| registry.get(&n).map(|t| (n, t)))
        .filter(|(_, t)| t.health() != ToolHealth::NoCheck)
        .collect();
    let checks = tools
        .iter()
        .map(|(name, tool)| async move { (name.clone(), tool.check_health().await) });
    futures::future::join_all(checks)
        .await
        .into_iter()
        .collect()
}

/// `hermes tools check`.
pub fn check(app: &App, args: &ChatArgs) -> Result<i32> {
    // With the store, as a session has it: a file named like a tool that needs the store
    // (`session_search`) is refused here as it is in sessions.
    let registry = build_registry(app, args, app.open_store().ok())?;
    let report = declared_tools(app, &builtin_names(&registry));
    let dir = app.home.tools_dir();
    for problem in &report.problems {
        outln!("{}", visible_controls(&problem.to_string(), ""));
    }
    for tool in &report.tools {
        if let Err(reason) = tool.available() {
            outln!(
                "{}: note: `{}` is unavailable until {reason}",
                tool.file().display(),
                tool.declaration().name
            );
        }
    }
    if !report.problems.is_empty() {
        let files: std::collections::BTreeSet<_> =
            report.problems.iter().map(|p| p.file.clone()).collect();
        outln!(
            "{} problem(s) in {} of {} tool file(s) in {}",
            report.problems.len(),
            files.len(),
            report.files.len(),
            dir.display()
        );
        return Ok(1);
    }
    if report.files.is_empty() {
        outln!(
            "no declarative tools: {} has no *.yaml files",
            dir.display()
        );
    } else {
        let names: Vec<&str> = report
            .tools
            .iter()
            .map(|t| t.declaration().name.as_str())
            .collect();
        outln!(
            "{} declarative tool(s) OK in {}: {}",
            names.len(),
            dir.display(),
            names.join(", ")
        );
    }
    Ok(0)
}

/// `hermes tools test <name> [json]`.
pub async fn test(app: &App, args: &ChatArgs, name: &str, json: Option<&str>) -> Result<i32> {
    // With the store, as a session has it: a file named like a tool that needs the store
    // (`session_search`) is refused here as it is in sessions.
    let registry = build_registry(app, args, app.open_store().ok())?;
    let report = declared_tools(app, &builtin_names(&registry));
    let Some(tool) = report.tools.iter().find(|t| t.declaration().name == name) else {
        let broken = report.problems.iter().any(|p| {
            p.file
                .file_stem()
                .is_some_and(|s| s.to_string_lossy() == name)
        });
        if broken {
            errln!("error: the file of `{name}` has problems; `hermes tools check` lists them");
        } else {
            errln!(
                "error: no declarative tool `{name}` in {} (`hermes tools check` lists them)",
                app.home.tools_dir().display()
            );
        }
        return Ok(2);
    };
    if let Err(reason) = tool.available() {
        errln!("error: `{name}` cannot run: {reason}");
        return Ok(1);
    }
    let raw = json.unwrap_or("{}");
    let value = match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(_) => {
            errln!("error: the arguments are one JSON object, e.g. '{{\"sku\": \"A-1\"}}'");
            return Ok(2);
        }
        Err(e) => {
            errln!("error: the arguments are not valid JSON: {e}");
            return Ok(2);
        }
    };
    let args = match hermes_tools::prepare_args(&tool.spec(), value) {
        Ok(args) => args,
        Err(refusal) => {
            outln!("{}", visible_controls(&refusal.content, ""));
            return Ok(1);
        }
    };
    let health = tool.check_health().await;
    if health != ToolHealth::NoCheck {
        errln!("health: {}", visible_controls(&health.describe(), ""));
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| app.home.root().to_path_buf());
    let ctx = ToolContext::for_tests(cwd, app.home.clone());
    let out = tool.call(args, &ctx).await;
    outln!("{}", visible_controls(&out.content, ""));
    Ok(if out.is_error { 1 } else { 0 })
}
