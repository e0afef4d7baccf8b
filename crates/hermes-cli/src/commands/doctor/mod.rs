//! `hermes doctor`: checks what a session needs and says what is wrong and how to fix it —
//! config.yaml, the runtime resolution trace (keys redacted), whether the provider answers
//! (a GET of its models endpoint, 5 s timeout), the local model, `state.db`
//! integrity and size, MCP servers, the Matrix homeserver when Matrix is set up, the
//! declarative tools and their health, skills that
//! failed to load, and the disk use of
//! HERMES_HOME. Exit code 1 when something is broken, 0 otherwise (warnings included).
//! `--fix` makes the safe repairs of [`crate::commands::doctor::fix`] and reports what it changed.

pub mod fix;
#[cfg(feature = "matrix")]
mod matrix;
mod pgstore;
mod platforms;

use std::path::Path;

use anyhow::Result;
use hermes_protocol::HermesHome;
use hermes_protocol::config::Config;

use crate::assembly::app::App;
use crate::assembly::args::ChatArgs;

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// Healthy.
    Ok,
    /// Works, but worth a look (exit code stays 0).
    Warn,
    /// Something a session needs is broken (exit code 1).
    Broken,
    /// `--fix` repaired it (exit code stays 0).
    Fixed,
}

/// The collected findings.
#[derive(Default)]
pub(crate) struct Report {
    lines: Vec<(Level, String)>,
}

impl Report {
    /// Records one finding.
    pub(crate) fn add(&mut self, level: Level, text: impl Into<String>) {
        self.lines.push((level, text.into()));
    }

    fn broken(&self) -> bool {
        self.lines.iter().any(|(l, _)| *l == Level::Broken)
    }

    fn print(&self) {
        for (level, text) in &self.lines {
            let mark = match level {
                Level::Ok => "ok   ",
                Level::Warn => "warn ",
                Level::Broken => "FAIL ",
                Level::Fixed => "fixed",
            };
            outln!("{mark} {text}");
        }
    }
}

/// Runs every check and prints one line per finding; returns the exit code.
pub async fn run(profile: Option<&str>, args: &ChatArgs, fix: bool) -> Result<i32> {
    let home = HermesHome::resolve(profile)
        .ok_or_else(|| anyhow::anyhow!("cannot find a home directory; set HERMES_HOME"))?;
    let mut report = Report::default();
    report.add(
        Level::Ok,
        format!("HERMES_HOME is {}", home.root().display()),
    );
    crate::commands::doctor::fix::check_home(&home, fix, &mut report);

    // config.yaml: a broken file stops the checks that need it.
    match Config::load(&home.config_file()) {
        Ok(loaded) => {
            report.add(Level::Ok, "config.yaml parses");
            for w in loaded.warnings {
                report.add(Level::Warn, format!("config.yaml: {w}"));
            }
        }
        Err(e) => {
            report.add(Level::Broken, e.to_string());
            report.print();
            return Ok(1);
        }
    }
    let app = App::load(profile)?;

    let resolved = crate::assembly::runtime::resolve_runtime(&app, args);
    // The local model matters only when it is the one in use (issue 20 item 10).
    let needs_local = match &resolved {
        Ok(rt) => rt.api_mode == hermes_llm::ApiMode::Local,
        Err(_) => true,
    };
    let in_use = resolved
        .as_ref()
        .map(|rt| format!("{} on {}", rt.model, rt.provider))
        .unwrap_or_default();
    match resolved {
        Ok(rt) => {
            report.add(
                Level::Ok,
                format!("model: {} on {} ({:?})", rt.model, rt.provider, rt.api_mode),
            );
            for step in &rt.trace {
                report.add(Level::Ok, format!("  resolution: {step}"));
            }
            check_reachable(&rt, &mut report).await;
        }
        Err(e) => report.add(Level::Broken, format!("{e:#}")),
    }
    for (i, f) in app.config.fallback_providers.iter().enumerate() {
        report.add(
            Level::Ok,
            format!(
                "fallback {}: {} / {}",
                i + 1,
                f.provider.as_deref().unwrap_or("(provider not set)"),
                f.default.as_deref().unwrap_or("(model not set)")
            ),
        );
    }

    match crate::assembly::runtime::local_model_path(&app) {
        Some(p) => report.add(
            Level::Ok,
            format!(
                "local model: {} ({})",
                p.display(),
                human_bytes(file_size(&p))
            ),
        ),
        None if app.config.local.model_path.is_some() => report.add(
            Level::Broken,
            "local.model_path is set but the file is missing (relative paths are looked up in \
             HERMES_HOME/models/)",
        ),
        None if needs_local => report.add(
            Level::Warn,
            "no local model installed (`hermes model pull` gives hermes an offline model)",
        ),
        None => report.add(
            Level::Ok,
            format!(
                "no local model installed (not needed: sessions use {in_use}; `hermes model pull` adds an offline one)"
            ),
        ),
    }

    #[cfg(feature = "local")]
    fix::check_prompt_cache(&app, fix, &mut report);
    check_store(&app, fix, &mut report);
    check_shared_files(&app, &mut report);
    check_mcp(&app, &mut report).await;
    platforms::check_platforms(&app, profile, &mut report).await;
    #[cfg(feature = "matrix")]
    matrix::check(&app, &mut report).await;
    check_web(&app, &mut report);
    check_declared_tools(&app, args, &mut report).await;
    let sandbox = crate::assembly::sandbox::settings(
        &app,
        hermes_protocol::config::UnsupportedPolicy::Refuse,
    );
    let (warning, text) = crate::assembly::sandbox::status(&sandbox);
    report.add(if warning { Level::Warn } else { Level::Ok }, text);
    let workspace = match &app.config.terminal.cwd {
        Some(p) => p.clone(),
        None => std::env::current_dir().unwrap_or_else(|_| app.home.root().to_path_buf()),
    };
    if let Some(text) = crate::assembly::sandbox::workspace_warning(&sandbox, &workspace) {
        report.add(Level::Warn, text);
    }

    let catalog = hermes_context::skills::SkillCatalog::load(&app.home.skills_dir());
    report.add(
        Level::Ok,
        format!("skills: {} loaded", catalog.skills.len()),
    );
    for e in &catalog.errors {
        report.add(
            Level::Warn,
            format!("skill skipped: {}: {}", e.path.display(), e.message),
        );
    }

    report.add(
        Level::Ok,
        format!(
            "disk use of HERMES_HOME: {}",
            human_bytes(dir_size(home.root()))
        ),
    );
    report.print();
    Ok(if report.broken() { 1 } else { 0 })
}

/// The files shared with Python Hermes: a malformed `auth.json` (chats on pooled keys fail)
/// or `cron/jobs.json` (cron stops) is broken; neither is rewritten.
fn check_shared_files(app: &App, report: &mut Report) {
    let auth = app.home.auth_file();
    if auth.exists() {
        match hermes_llm::auth_file::check(&auth) {
            Ok(n) => report.add(Level::Ok, format!("auth.json: {n} pooled API key(s)")),
            Err(e) => report.add(Level::Broken, format!("auth.json: {e}")),
        }
    }
    let jobs = hermes_cron::JobStore::new(&app.home);
    let path = jobs.jobs_path();
    if path.exists() {
        match std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|b| hermes_cron::parse_jobs_file(&path, &b).map_err(|e| e.to_string()))
        {
            Ok(f) => report.add(
                Level::Ok,
                format!("cron/jobs.json: {} job(s)", f.jobs.len()),
            ),
            Err(e) => report.add(Level::Broken, format!("cron/jobs.json: {e}")),
        }
    }
}

/// The `web` toolset: an invalid `web.*` value is broken (sessions refuse to start); otherwise
/// which backend `web_search` uses (or why it is off) and what `web_extract` may fetch.
fn check_web(app: &App, report: &mut Report) {
    match hermes_tools::WebSettings::resolve(&app.config.web, &app.env) {
        Err(e) => report.add(Level::Broken, format!("config.yaml: {e}")),
        Ok(web) => {
            let fetch = if web.allow_private_urls {
                "web_extract may fetch loopback and private addresses (web.allow_private_urls)"
            } else {
                "web_extract fetches public addresses only"
            };
            let search = match &web.search {
                Ok(backend) => format!("web_search through {}", backend.name()),
                Err(reason) => format!("web_search is off ({reason})"),
            };
            report.add(Level::Ok, format!("web: {search}; {fetch}"));
        }
    }
}

/// The declarative tools of `HERMES_HOME/tools` (seed 004 §3.2): files with problems warn
/// (their tools are left out; `hermes tools check` lists the problems), and each loaded tool
/// says whether it can run and, when it has a `health_endpoint`, its health checked now.
async fn check_declared_tools(app: &App, args: &ChatArgs, report: &mut Report) {
    let Ok(registry) = crate::assembly::tools::build_registry(app, args, app.open_store().ok())
    else {
        return;
    };
    let loaded = crate::assembly::tools::declared_tools(
        app,
        &crate::assembly::tools::builtin_names(&registry),
    );
    if loaded.files.is_empty() {
        return;
    }
    if !loaded.problems.is_empty() {
        report.add(
            Level::Warn,
            format!(
                "declarative tools: {} problem(s) in HERMES_HOME/tools/*.yaml keep tools out (`hermes tools check` lists them)",
                loaded.problems.len()
            ),
        );
    }
    use hermes_tools::{Tool, ToolHealth};
    for tool in &loaded.tools {
        let name = &tool.declaration().name;
        if let Err(reason) = tool.available() {
            report.add(Level::Warn, format!("tool {name}: unavailable: {reason}"));
            continue;
        }
        match tool.check_health().await {
            ToolHealth::NoCheck => report.add(
                Level::Ok,
                format!("tool {name}: loaded (no health_endpoint)"),
            ),
            h @ ToolHealth::Unhealthy { .. } => {
                report.add(Level::Warn, format!("tool {name}: {}", h.describe()))
            }
            h => report.add(Level::Ok, format!("tool {name}: {}", h.describe())),
        }
    }
}

/// One short GET of the provider's models endpoint (hermes-llm `reachability`): unreachable
/// or a rejected key is broken; another HTTP status only warns (many local servers have no
/// `/models`).
async fn check_reachable(rt: &hermes_llm::Runtime, report: &mut Report) {
    use hermes_llm::reachability::{PROBE_TIMEOUT, Reachability, probe};
    match probe(rt, PROBE_TIMEOUT).await {
        Reachability::Reachable { url, status } => {
            report.add(
                Level::Ok,
                format!("provider reachable: GET {url} → {status}"),
            );
        }
        Reachability::KeyRejected { url, status } => report.add(
            Level::Broken,
            format!(
                "provider {} refused the API key: GET {url} → {status}; check the key \
                 (`hermes auth list`, HERMES_HOME/.env)",
                rt.provider
            ),
        ),
        Reachability::OtherStatus { url, status } => report.add(
            Level::Warn,
            format!("provider answered but could not list models: GET {url} → {status}"),
        ),
        Reachability::Unreachable { url, reason } => report.add(
            Level::Broken,
            format!(
                "provider {} is not reachable at {url}: {reason}; check the network, \
                 model.base_url, or that the local server is running",
                rt.provider
            ),
        ),
        Reachability::NotApplicable => {}
    }
}

/// What to do about a damaged `state.db` (not repaired automatically: it holds the history).
const DAMAGED_DB: &str = "hermes does not repair it automatically: keep a copy, then restore a \
     backup or move the file away so that a new one is created";

fn check_store(app: &App, fix: bool, report: &mut Report) {
    match app.store_choice() {
        Ok(hermes_store::StoreChoice::Postgresql(options)) => {
            return pgstore::check(&options, report);
        }
        Ok(hermes_store::StoreChoice::Sqlite(_)) => {}
        Err(e) => {
            report.add(Level::Broken, format!("{e:#}"));
            return;
        }
    }
    let path = app.home.state_db();
    if !path.exists() {
        report.add(
            Level::Ok,
            "state.db not created yet (first session creates it)",
        );
        return;
    }
    match hermes_store::SessionStore::open(&path) {
        Ok(store) => {
            match store.integrity_check() {
                Ok(r) if r == "ok" => report.add(Level::Ok, "state.db integrity ok"),
                Ok(r) => report.add(
                    Level::Broken,
                    format!(
                        "state.db integrity check failed: {}; {DAMAGED_DB}",
                        r.trim()
                    ),
                ),
                Err(e) => report.add(Level::Broken, format!("state.db: {e}")),
            }
            match store.schema_check() {
                Ok(s) if s.is_current() => report.add(
                    Level::Ok,
                    format!(
                        "state.db schema version {} (shared with Python Hermes)",
                        s.supported
                    ),
                ),
                Ok(s) => report.add(
                    Level::Warn,
                    format!(
                        "state.db schema version {} differs from the {} this hermes writes{}",
                        s.found
                            .map_or_else(|| "none".to_string(), |v| v.to_string()),
                        s.supported,
                        if s.missing.is_empty() {
                            String::new()
                        } else {
                            format!("; missing columns: {}", s.missing.join(", "))
                        }
                    ),
                ),
                Err(e) => report.add(Level::Broken, format!("state.db schema check: {e}")),
            }
            match store.write_probe() {
                Ok(()) => report.add(Level::Ok, "state.db accepts writes (probe rolled back)"),
                Err(e) => report.add(
                    Level::Broken,
                    format!("state.db cannot store messages: {e}; every turn would fail"),
                ),
            }
            crate::commands::doctor::fix::check_search_index(&store, fix, report);
            if let Ok(stats) = store.stats() {
                report.add(
                    Level::Ok,
                    format!(
                        "state.db: {} sessions, {} messages, {}",
                        stats.sessions,
                        stats.messages,
                        human_bytes(stats.db_bytes)
                    ),
                );
            }
        }
        Err(e @ hermes_store::StoreError::SchemaMismatch { .. }) => {
            report.add(Level::Broken, format!("state.db cannot be used: {e}"))
        }
        Err(e) => report.add(
            Level::Broken,
            format!("state.db cannot be opened: {e}; {DAMAGED_DB}"),
        ),
    }
}

async fn check_mcp(app: &App, report: &mut Report) {
    let specs = crate::assembly::mcp::configured(app);
    if specs.is_empty() {
        return;
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| app.home.root().to_path_buf());
    let builtin = hermes_tools::Registry::builtin()
        .select(&hermes_tools::ToolsetSelection::default())
        .map(|s| s.tools().to_vec())
        .unwrap_or_default();
    let Some(manager) =
        crate::assembly::mcp::start_for_session(app, &cwd, &builtin, Default::default()).await
    else {
        report.add(Level::Ok, "MCP: every configured server is disabled");
        return;
    };
    for r in manager.reports() {
        match &r.state {
            hermes_mcp::server::ServerState::Ready => report.add(
                Level::Ok,
                format!(
                    "MCP server {}: ready, {} tools",
                    r.name,
                    crate::assembly::mcp::exposed_tool_count(&manager, &r.name)
                ),
            ),
            hermes_mcp::server::ServerState::Failed(e) => report.add(
                Level::Broken,
                format!(
                    "MCP server {}: {}",
                    r.name,
                    crate::assembly::mcp::friendly_reason(e)
                ),
            ),
            hermes_mcp::server::ServerState::Starting => report.add(
                Level::Warn,
                format!(
                    "MCP server {}: no answer to initialize within {} s (`hermes mcp test {}` waits its connect_timeout)",
                    r.name,
                    crate::assembly::mcp::DISCOVERY_WAIT.as_secs(),
                    r.name
                ),
            ),
            other => report.add(Level::Warn, format!("MCP server {}: {other:?}", r.name)),
        }
    }
    manager.shutdown().await;
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Bytes under `root`, not following symlinks.
fn dir_size(root: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                Ok(t) if t.is_file() => total += entry.metadata().map(|m| m.len()).unwrap_or(0),
                _ => {}
            }
        }
    }
    total
}

/// `1536` → `1.5 KiB`.
fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn human_bytes_picks_a_unit() {
        assert_eq!(super::human_bytes(512), "512 B");
        assert_eq!(super::human_bytes(1536), "1.5 KiB");
        assert_eq!(super::human_bytes(98 * 1024 * 1024), "98.0 MiB");
    }
}
