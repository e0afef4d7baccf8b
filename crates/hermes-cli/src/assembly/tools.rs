//! The built-in tools of a session: the registry (built-ins, web, memory, skills, session
//! search, the `cronjob` tool, delegation, the declarative tools of `HERMES_HOME/tools`) and
//! the toolsets enabled by flags or config.

use std::sync::Arc;

use anyhow::Result;
use hermes_store::SessionStore;
use hermes_tools::Registry;

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;

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
/// and (with a store) session search, with config `memory:` applied, then the declarative
/// tools whose files pass their checks (a file with problems is logged and skipped). MCP
/// tools join at session start.
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
        .disabled_for(Some(crate::assembly::runtime::SKILLS_PLATFORM));
    for tool in
        hermes_context::learning_tools_configured(&app.home, store, &app.config.memory, &disabled)
    {
        registry
            .register(tool)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    registry
        .register(crate::assembly::cron::session_tool(app, args)?)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    registry
        .register(std::sync::Arc::new(hermes_agent::DelegateTool::new(
            crate::assembly::delegation::settings(app, None),
        )))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let report = declared_tools(app, &registry.names().into_iter().collect());
    for problem in &report.problems {
        tracing::warn!(%problem, "declarative tool skipped (`hermes tools check` lists every problem)");
    }
    for tool in report.as_tools() {
        registry
            .register(tool)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(registry)
}

/// The declarative tools of `HERMES_HOME/tools/*.yaml` (seed 004 §3.2;
/// `hermes_tools::declared`): `${NAME}`s from `.env` over the environment (as every
/// secret), endpoints under `web.allow_private_urls`, and none named like a tool of
/// `reserved` (the others).
pub fn declared_tools(
    app: &App,
    reserved: &std::collections::HashSet<String>,
) -> hermes_tools::declared::LoadReport {
    let opts = hermes_tools::declared::LoadOptions {
        allow_private_urls: app.config.web.allow_private_urls,
        env: app.env.clone(),
        reserved_names: reserved.clone(),
    };
    hermes_tools::declared::load_dir(&app.home.tools_dir(), &opts)
}

/// The names of every tool of `registry` that is not declarative (what a tool file may not
/// be called).
pub fn builtin_names(registry: &Registry) -> std::collections::HashSet<String> {
    registry
        .names()
        .into_iter()
        .filter(|n| {
            registry
                .get(n)
                .is_some_and(|t| t.toolset() != hermes_tools::DECLARATIVE_TOOLSET)
        })
        .collect()
}

/// The toolsets a terminal session (the REPL, `chat -q`) enables and where the choice came
/// from: `-t`, config `platform_toolsets.cli` (what `hermes tools enable|disable` writes, as
/// in Python Hermes), config `toolsets:`, or the default — `hermes-cli`, or for the embedded
/// model the tools sized to it ([`local_default_toolsets`]).
pub fn enabled_toolsets(app: &App, args: &ChatArgs) -> (Vec<String>, &'static str) {
    if args.toolsets.is_none()
        && let Some(list) = platform_toolsets(app, TERMINAL_PLATFORM)
    {
        return (with_cronjob(list), "config.yaml platform_toolsets.cli");
    }
    base_toolsets(app, args)
}

/// The `platform_toolsets` key of the terminal (Python Hermes' platform name `cli`).
pub const TERMINAL_PLATFORM: &str = "cli";

/// The toolsets of every surface before its own `platform_toolsets.<platform>` list: `-t`,
/// config `toolsets:`, or the default (see [`enabled_toolsets`]). The gateway and cron start
/// from this, so the terminal's `platform_toolsets.cli` never narrows a chat platform.
pub fn base_toolsets(app: &App, args: &ChatArgs) -> (Vec<String>, &'static str) {
    let (toolsets, source) = match &args.toolsets {
        Some(t) => (t.clone(), "-t/--toolsets"),
        None if !app.config.toolsets.is_empty() => {
            (app.config.toolsets.clone(), "config.yaml toolsets")
        }
        None => match local_default_toolsets(app, args) {
            Some(toolsets) => (toolsets, "the default for the local model"),
            None => (
                vec![hermes_tools::DEFAULT_TOOLSET.to_string()],
                "the default",
            ),
        },
    };
    (with_cronjob(toolsets), source)
}

/// `toolsets` plus the cronjob toolset when the default one is in it (interactive sessions
/// may schedule work; cron runs never get this tool).
fn with_cronjob(mut toolsets: Vec<String>) -> Vec<String> {
    if toolsets.iter().any(|t| t == hermes_tools::DEFAULT_TOOLSET)
        && !toolsets.iter().any(|t| t == hermes_cron::CRONJOB_TOOLSET)
    {
        toolsets.push(hermes_cron::CRONJOB_TOOLSET.to_string());
    }
    toolsets
}

/// The `platform_toolsets.<platform>` list of config.yaml, when it has one (Python Hermes'
/// key; non-string items are skipped), with [`with_declarative`].
pub fn platform_toolsets(app: &App, platform: &str) -> Option<Vec<String>> {
    app.config
        .platform_toolsets
        .as_ref()
        .and_then(|v| v.get(platform))
        .and_then(|v| v.as_sequence())
        .map(|s| {
            with_declarative(
                s.iter()
                    .filter_map(|i| i.as_str().map(str::to_string))
                    .collect(),
            )
        })
}

/// `toolsets` (a `platform_toolsets` list) plus the declarative tools' toolset. That toolset
/// is hermes' own: it is never written into config.yaml, where Python Hermes, sharing the
/// file, would warn about a name it does not know; so a list read from the file enables it,
/// and `agent.disabled_toolsets: [declarative]` (what `hermes tools disable declarative`
/// writes) turns it off.
pub fn with_declarative(mut toolsets: Vec<String>) -> Vec<String> {
    if !toolsets
        .iter()
        .any(|t| t == hermes_tools::DECLARATIVE_TOOLSET)
    {
        toolsets.push(hermes_tools::DECLARATIVE_TOOLSET.to_string());
    }
    toolsets
}

/// The default toolsets when the session runs on the embedded provider: none for a model
/// file under [`hermes_tools::SMALL_LOCAL_MODEL_BYTES`] (the default model cannot use
/// tools), else [`hermes_tools::LOCAL_TOOLSET`]. `None` for any other provider.
pub fn local_default_toolsets(app: &App, args: &ChatArgs) -> Option<Vec<String>> {
    let runtime = crate::assembly::runtime::resolve_runtime(app, args).ok()?;
    if runtime.api_mode != hermes_llm::ApiMode::Local {
        return None;
    }
    let path = if runtime.model.is_empty() {
        crate::assembly::runtime::local_model_path(app)
    } else {
        Some(std::path::PathBuf::from(&runtime.model))
    };
    let size = path
        .and_then(|p| std::fs::metadata(p).ok())
        .map_or(0, |m| m.len());
    Some(if size < hermes_tools::SMALL_LOCAL_MODEL_BYTES {
        Vec::new()
    } else {
        vec![hermes_tools::LOCAL_TOOLSET.to_string()]
    })
}
