//! `hermes tools list|enable|disable|check|test` (FEATURES §1, §4; names as in Python Hermes
//! 0.19.0; `check` and `test` of the declarative tools, [`crate::commands::declared_tools`]):
//! the toolsets, every tool, whether a session would get it, why not, and the health of
//! tools with a health check, from the registry
//! and toolset choice sessions use (`crate::assembly::tools`), so the listing and a real
//! session agree. `enable`/`disable NAME…` change `config.yaml` (comments kept): the
//! `platform_toolsets.<platform>` list (Python Hermes' key) of the terminal (`--platform
//! cli`, the default) or of a gateway platform, whose chats alone it narrows; enabling one
//! also takes it out of `agent.disabled_toolsets` (off everywhere).

use anyhow::Result;
use clap::Subcommand;
use hermes_tools::{Registry, TOOLSET_DEFS, ToolsetSelection};

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;
use crate::assembly::tools::{
    TERMINAL_PLATFORM, base_toolsets, build_registry, enabled_toolsets, platform_toolsets,
};

/// `hermes tools …`
#[derive(Debug, Subcommand)]
pub enum ToolsCmd {
    /// Toolsets and tools, with availability, the reason a tool is left out and the health
    /// of tools with a check; the `platform_toolsets` of the gateway's platforms.
    List {
        /// Show what one place gets: `cli` (the terminal, default) or a gateway platform
        /// (telegram, discord, …), whose `platform_toolsets.<platform>` list applies.
        #[arg(long)]
        platform: Option<String>,
    },
    /// Turn toolsets on (`hermes tools enable web memory`).
    Enable {
        /// Toolset names (`hermes tools list` shows them).
        #[arg(required = true)]
        names: Vec<String>,
        /// Where: `cli` (the terminal, default) or a gateway platform (telegram, discord, …).
        #[arg(long, default_value = "cli")]
        platform: String,
    },
    /// Turn toolsets off (`hermes tools disable web`).
    Disable {
        /// Toolset names (`hermes tools list` shows them).
        #[arg(required = true)]
        names: Vec<String>,
        /// Where: `cli` (the terminal, default) or a gateway platform (telegram, discord, …).
        #[arg(long, default_value = "cli")]
        platform: String,
    },
    /// Check every declarative tool file (HERMES_HOME/tools/*.yaml): each problem with its
    /// file, line and column; exit code 1 when there is one.
    Check,
    /// Call one declarative tool and print its result (`hermes tools test stock '{"sku":"A-1"}'`).
    Test {
        /// The tool's name.
        name: String,
        /// Its arguments as one JSON object (default `{}`).
        json: Option<String>,
    },
    /// A Python Hermes `tools` action hermes does not have.
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// Platforms a toolset list may be set for (the terminal and the gateway's platforms).
const PLATFORMS: &[&str] = &[
    "cli",
    "telegram",
    "discord",
    "slack",
    "webhook",
    "api_server",
];

/// Runs a tools subcommand; returns the process exit code.
pub async fn run(profile: Option<&str>, args: &ChatArgs, action: Option<&ToolsCmd>) -> Result<i32> {
    let app = App::load(profile)?;
    app.warn_config();
    match action {
        None => list(&app, args, None).await,
        Some(ToolsCmd::List { platform }) => list(&app, args, platform.as_deref()).await,
        Some(ToolsCmd::Check) => crate::commands::declared_tools::check(&app, args),
        Some(ToolsCmd::Test { name, json }) => {
            crate::commands::declared_tools::test(&app, args, name, json.as_deref()).await
        }
        Some(ToolsCmd::Enable { names, platform }) => change(&app, names, platform, true),
        Some(ToolsCmd::Disable { names, platform }) => change(&app, names, platform, false),
        Some(ToolsCmd::Other(words)) => Ok(crate::commands::redirect::answer::<ToolsCmd>(
            &["tools"],
            words,
        )),
    }
}

/// `hermes tools list [--platform P]`.
async fn list(app: &App, args: &ChatArgs, platform: Option<&str>) -> Result<i32> {
    if let Some(p) = platform
        && !PLATFORMS.contains(&p)
    {
        errln!(
            "error: unknown platform `{p}`; one of: {}",
            PLATFORMS.join(", ")
        );
        return Ok(2);
    }
    let store = app.open_store()?;
    let registry = build_registry(app, args, Some(store))?;
    let health = crate::commands::declared_tools::health_of(&registry).await;
    outln!(
        "{}",
        list_text(app, args, &registry, platform, &health)?.trim_end()
    );
    let problems = crate::assembly::tools::declared_tools(
        app,
        &crate::assembly::tools::builtin_names(&registry),
    )
    .problems;
    if !problems.is_empty() {
        outln!(
            "{} problem(s) in HERMES_HOME/tools/*.yaml keep tools out (`hermes tools check` lists them).",
            problems.len()
        );
    }
    Ok(0)
}

/// Every `platform_toolsets` entry of config.yaml: platform and its toolsets, in file order.
fn platform_lists(app: &App) -> Vec<(String, Vec<String>)> {
    let Some(map) = app
        .config
        .platform_toolsets
        .as_ref()
        .and_then(|v| v.as_mapping())
    else {
        return Vec::new();
    };
    map.iter()
        .filter_map(|(k, v)| {
            let names = v
                .as_sequence()?
                .iter()
                .filter_map(|i| i.as_str().map(str::to_string))
                .collect();
            Some((k.as_str()?.to_string(), names))
        })
        .collect()
}

/// Whether every tool of toolset `name` is in the selection of toolsets `enabled`.
fn covered(registry: &Registry, enabled: &[String], name: &str) -> bool {
    let want = registry
        .select(&ToolsetSelection::new([name], Vec::<String>::new()))
        .map(|s| s.names())
        .unwrap_or_default();
    let have = registry
        .select(&ToolsetSelection::new(
            enabled.to_vec(),
            Vec::<String>::new(),
        ))
        .map(|s| {
            let mut n = s.names();
            n.extend(s.unavailable().iter().map(|(t, _)| t.clone()));
            n
        })
        .unwrap_or_default();
    !want.is_empty() && want.iter().all(|t| have.contains(t))
}

/// A composite's base toolsets (its includes, expanded).
fn expand(name: &str, out: &mut Vec<String>) {
    match TOOLSET_DEFS.iter().find(|d| d.name == name) {
        // A definition with nothing in it names a base toolset (`declarative`, always defined
        // so that lists naming it stay valid): kept by name.
        Some(def) if def.includes.is_empty() && def.tools.is_empty() => {
            if !out.iter().any(|n| n == name) {
                out.push(name.to_string());
            }
        }
        Some(def) => {
            for inc in def.includes {
                expand(inc, out);
            }
            // A composite's own tools come from the toolsets of those tools.
            for t in def.tools {
                let t = t.to_string();
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
        None => {
            if !out.iter().any(|n| n == name) {
                out.push(name.to_string());
            }
        }
    }
}

/// The toolsets `enabled` with toolset `name` on (`enable`) or off; turning one off spells out the
/// composites that hold it, without it.
fn toggled(registry: &Registry, enabled: &[String], name: &str, enable: bool) -> Vec<String> {
    if enable {
        let mut out = enabled.to_vec();
        if !covered(registry, enabled, name) {
            out.push(name.to_string());
        }
        return out;
    }
    let mut out = Vec::new();
    for n in enabled {
        if n == name {
            continue;
        }
        if TOOLSET_DEFS.iter().any(|d| d.name == n)
            && covered(registry, std::slice::from_ref(n), name)
        {
            let mut parts = Vec::new();
            expand(n, &mut parts);
            for part in parts {
                if part != name && !out.contains(&part) {
                    out.push(part);
                }
            }
            continue;
        }
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    out
}

/// The toolsets `platform` gets (the terminal: `cli`) and where that choice came from: the
/// terminal's as a session resolves them, a gateway platform's `platform_toolsets` list or,
/// without one, the toolsets every surface starts from.
fn place_toolsets(app: &App, args: &ChatArgs, platform: &str) -> (Vec<String>, String) {
    if platform == TERMINAL_PLATFORM {
        let (enabled, source) = enabled_toolsets(app, args);
        return (enabled, source.to_string());
    }
    match platform_toolsets(app, platform) {
        Some(list) => (list, format!("platform_toolsets.{platform}")),
        None => {
            let (enabled, source) = base_toolsets(app, args);
            (
                enabled,
                format!("{source}; no platform_toolsets.{platform} entry"),
            )
        }
    }
}

/// `hermes tools enable|disable NAME… [--platform P]`.
fn change(app: &App, names: &[String], platform: &str, enable: bool) -> Result<i32> {
    if !PLATFORMS.contains(&platform) {
        errln!(
            "error: unknown platform `{platform}`; one of: {}",
            PLATFORMS.join(", ")
        );
        return Ok(2);
    }
    let registry = build_registry(app, &ChatArgs::default(), app.open_store().ok())?;
    let known = registry.toolset_names();
    for name in names {
        if name.contains(':') {
            errln!(
                "error: `{name}`: single MCP tools are chosen with `mcp_servers.<server>.tools` in config.yaml (`hermes config edit`)"
            );
            return Ok(2);
        }
        if !known.contains(name) {
            let near = known
                .iter()
                .map(|k| (strsim::jaro_winkler(name, k), k))
                .filter(|(s, _)| *s > 0.8)
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, k)| format!("; did you mean `{k}`?"))
                .unwrap_or_default();
            errln!("error: unknown toolset `{name}`{near} (`hermes tools list` shows them)");
            return Ok(2);
        }
    }
    let file = app.home.config_file();
    let mut text = std::fs::read_to_string(&file).unwrap_or_default();
    // A platform without a list of its own starts from what it gets today.
    let (current, _) = place_toolsets(app, &ChatArgs::default(), platform);
    // An empty platform list stays (no toolsets there); an empty disabled list goes.
    let set = |text: &str, path: &[&str], items: &[String]| -> Result<String> {
        let value = serde_json::Value::Array(
            items
                .iter()
                .cloned()
                .map(serde_json::Value::String)
                .collect(),
        );
        let out = if items.is_empty() && path[0] == "agent" {
            crate::config_edit::path::unset_path(text, path)
                .map(|o| o.unwrap_or_else(|| text.to_string()))
        } else {
            crate::config_edit::path::set_path(text, path, &value)
        };
        out.map_err(|e| {
            anyhow::anyhow!(
                "{}: {e}; `hermes config edit` opens the file",
                file.display()
            )
        })
    };
    let declarative = hermes_tools::DECLARATIVE_TOOLSET;
    let mut enabled = current;
    for name in names.iter().filter(|n| *n != declarative) {
        enabled = toggled(&registry, &enabled, name, enable);
    }
    // The declarative toolset is never written into the shared file's lists (Python Hermes
    // would warn about it; `assembly::tools::with_declarative`): it is on in every list
    // unless `agent.disabled_toolsets` names it.
    enabled.retain(|n| n != declarative);
    text = set(&text, &["platform_toolsets", platform], &enabled)?;
    let disabled = &app.config.agent.disabled_toolsets;
    if !enable
        && names.iter().any(|n| n == declarative)
        && !disabled.iter().any(|d| d == declarative)
    {
        let mut more = disabled.clone();
        more.push(declarative.to_string());
        text = set(&text, &["agent", "disabled_toolsets"], &more)?;
    }
    // `agent.disabled_toolsets` turns a toolset off everywhere, after the platform lists: one
    // just enabled here leaves it, or the change could never take effect (Python Hermes'
    // `_save_platform_tools` does the same).
    if enable && names.iter().any(|n| disabled.contains(n)) {
        let remaining: Vec<String> = disabled
            .iter()
            .filter(|d| !names.contains(d))
            .cloned()
            .collect();
        text = set(&text, &["agent", "disabled_toolsets"], &remaining)?;
    }
    hermes_protocol::private_fs::create_dir_all(app.home.root())?;
    hermes_protocol::private_fs::write_atomic(&file, &text)
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", file.display()))?;
    outln!(
        "{} for {platform}: {} (in {})",
        if enable { "enabled" } else { "disabled" },
        names.join(", "),
        file.display()
    );
    Ok(0)
}

/// The tool names gateway chats of each platform may use, from `platform_toolsets:` (a
/// platform without an entry is not restricted). Unknown toolset names are logged and
/// skipped.
pub fn platform_tool_names(
    app: &App,
) -> std::collections::HashMap<String, std::collections::HashSet<String>> {
    let mut out = std::collections::HashMap::new();
    let Some(map) = app
        .config
        .platform_toolsets
        .as_ref()
        .and_then(|v| v.as_mapping())
    else {
        return out;
    };
    let Ok(registry) = build_registry(app, &ChatArgs::default(), app.open_store().ok()) else {
        return out;
    };
    let known = registry.toolset_names();
    for (platform, list) in map {
        let (Some(platform), Some(list)) = (platform.as_str(), list.as_sequence()) else {
            continue;
        };
        let listed: Vec<String> = list
            .iter()
            .filter_map(|i| i.as_str().map(str::to_string))
            .collect();
        let names: Vec<String> = crate::assembly::tools::with_declarative(listed)
            .into_iter()
            .filter(|n| {
                let ok = known.contains(n);
                if !ok {
                    tracing::warn!(platform, toolset = %n, "platform_toolsets: unknown toolset skipped");
                }
                ok
            })
            .collect();
        let selection = ToolsetSelection::new(names, app.config.agent.disabled_toolsets.clone());
        if let Ok(set) = registry.select(&selection) {
            out.insert(platform.to_string(), set.names().into_iter().collect());
        }
    }
    out
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

fn list_text(
    app: &App,
    args: &ChatArgs,
    registry: &Registry,
    platform: Option<&str>,
    health: &std::collections::HashMap<String, hermes_tools::ToolHealth>,
) -> Result<String> {
    let (enabled, source) = place_toolsets(app, args, platform.unwrap_or(TERMINAL_PLATFORM));
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
    if platform.is_none() {
        let lists = platform_lists(app);
        if !lists.is_empty() {
            out.push_str("Platform toolsets (platform_toolsets; `--platform P` shows one):\n");
            for (p, names) in lists {
                out.push_str(&format!("  {p:<12} {}\n", names.join(", ")));
            }
        }
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
        let health = health
            .get(name)
            .map(|h| h.describe())
            .filter(|h| !h.is_empty())
            .map(|h| format!(" · {h}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "    {mark} {name:<16} {}{health}\n",
            status(name, &on, &hidden, &without_disabled)
        ));
    }
    out.push_str("\nTools of MCP servers (config.yaml mcp_servers) join at session start.\n");
    Ok(out)
}
