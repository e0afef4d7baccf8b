//! Headless runs (FEATURES §1 Cron): a fresh agent per run with the `hermes-cron` toolset
//! (file + terminal; never `cronjob`, `clarify`, memory or messaging tools), dangerous
//! commands denied, source `cron`, our preamble as the call-time system prompt, the job's
//! skills and optional script output as context, and an inactivity timeout.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hermes_agent::{Agent, AgentDeps, AgentOptions, SystemPromptSource};
use hermes_llm::ModelClient;
use hermes_protocol::{HermesHome, TurnOutcome};
use hermes_store::SessionStore;
use hermes_tools::{Approval, FixedApprover, Registry, ToolsetDef, ToolsetSelection};
use tokio_util::sync::CancellationToken;

use crate::job::Job;
use crate::scheduler::{JobRunner, RunOutput, RunStatus};

/// `end_reason` of every run's session (Python Hermes' value).
pub const CRON_END_REASON: &str = "cron_complete";

/// The preamble every headless run gets (model-visible; `prompts/cron_preamble.md`).
pub const CRON_PREAMBLE: &str = include_str!("../prompts/cron_preamble.md");

/// The toolset of headless runs: files, terminal, web and `delegate_task` (the web tools
/// and `delegate_task` come from [`HeadlessOptions::extra_tools`]).
pub const CRON_TOOLSET: ToolsetDef = ToolsetDef {
    name: "hermes-cron",
    description: "Scheduled jobs: files, terminal, web and delegation (when offered); no cronjob, clarify, memory or messaging.",
    includes: &["file", "terminal", "web", "delegation"],
    tools: &[],
};

/// The model a run asks for: the job's `provider`, `base_url` and `model` overrides (each
/// `None`: the configured default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelChoice {
    /// Provider override (`openrouter`, `custom`, `custom:<name>`, …).
    pub provider: Option<String>,
    /// Base URL override.
    pub base_url: Option<String>,
    /// Model override.
    pub model: Option<String>,
}

impl ModelChoice {
    /// The overrides of `job`.
    pub fn of(job: &Job) -> ModelChoice {
        ModelChoice {
            provider: job.provider.clone(),
            base_url: job.base_url.clone(),
            model: job.model.clone(),
        }
    }
}

/// Makes the model client of a run from the job's [`ModelChoice`].
pub type ClientFactory =
    Arc<dyn Fn(&ModelChoice) -> Result<Arc<dyn ModelClient>, String> + Send + Sync>;

/// Most characters of another job's output given as `context_from` context (Python's 8,000).
pub const CONTEXT_FROM_MAX_CHARS: usize = 8000;

/// What a headless run needs from its front end.
#[derive(Clone)]
pub struct HeadlessOptions {
    /// The hermes home.
    pub home: HermesHome,
    /// Working directory of tools and scripts.
    pub cwd: PathBuf,
    /// Session store (runs are sessions with `source = "cron"`).
    pub store: Arc<SessionStore>,
    /// Builds the stored system prompt.
    pub prompt: Arc<dyn SystemPromptSource>,
    /// Model clients.
    pub clients: ClientFactory,
    /// Iteration budget per run.
    pub max_turns: u32,
    /// Retries of failed model calls.
    pub api_max_retries: u32,
    /// Terminal tool timeout in seconds.
    pub terminal_timeout_s: u64,
    /// A run with no agent event (or script output) for this long is stopped (600 s).
    pub inactivity: Duration,
    /// Tools registered after the built-ins, built by the front end from its config (the
    /// `web` toolset's `web_extract` and `web_search`); only those in [`CRON_TOOLSET`] are
    /// offered. A name that is already registered is skipped.
    pub extra_tools: Vec<Arc<dyn hermes_tools::Tool>>,
    /// The sandbox of the jobs' commands and file tools (issue 18; `unsupported` defaults to
    /// `refuse` for cron).
    pub sandbox: Arc<hermes_tools::SandboxSettings>,
    /// `timezone` of `config.yaml`: the local time in run session ids and titles.
    pub timezone: chrono_tz::Tz,
}

/// The session id of a run started at `started` (local time): Python Hermes'
/// `cron_<job id>_<YYYYmmdd_HHMMSS>` (`cron/scheduler.py`, `run_job`).
pub fn cron_session_id(job_id: &str, started: chrono::DateTime<chrono_tz::Tz>) -> String {
    format!("cron_{job_id}_{}", started.format("%Y%m%d_%H%M%S"))
}

/// The title of a finished run's session, as Python Hermes gives it: the job's name with its
/// whitespace collapsed, cut to 60 characters (`cron <id>` when blank), then ` · ` and the
/// local end time as `Mon DD HH:MM`. The store numbers a title that is taken (`… #2`).
pub fn cron_session_title(
    job_id: &str,
    job_name: &str,
    ended: chrono::DateTime<chrono_tz::Tz>,
) -> String {
    let name = job_name.split_whitespace().collect::<Vec<_>>().join(" ");
    let name: String = name.chars().take(60).collect();
    let base = match name.trim() {
        "" => format!("cron {job_id}"),
        n => n.to_string(),
    };
    format!("{base} · {}", ended.format("%b %d %H:%M"))
}

/// Runs jobs with a fresh agent each time.
pub struct AgentRunner {
    opts: HeadlessOptions,
    /// What unpinned jobs resolve to now, for Python's drift guard ([`crate::drift`]).
    defaults: Option<crate::drift::DefaultsResolver>,
}

impl AgentRunner {
    /// A runner with these options.
    pub fn new(opts: HeadlessOptions) -> AgentRunner {
        AgentRunner {
            opts,
            defaults: None,
        }
    }

    /// The same runner, refusing to run an unpinned job whose provider or model snapshot no
    /// longer matches what `resolve` gives (Python's drift guard, [`crate::drift`]).
    pub fn with_drift_guard(self, resolve: crate::drift::DefaultsResolver) -> AgentRunner {
        AgentRunner {
            defaults: Some(resolve),
            ..self
        }
    }

    /// Runs the job's script and returns its stdout.
    ///
    /// As Python Hermes 0.19.0 does (`cron/scheduler.py` `_run_job_script`), `script` names a
    /// file under `HERMES_HOME/scripts/` (relative to it, or absolute inside it); `.sh` and
    /// `.bash` files run with `bash`, anything else with `python3`, in the script's directory.
    /// A path outside that directory is refused. A value with whitespace that is no such file
    /// is a shell command line from older hermes versions and runs with `sh -c` in `cwd`.
    async fn run_script(&self, script: &str, cwd: &Path) -> Result<String, (RunStatus, String)> {
        let mut cmd = match resolve_script(&self.opts.home.root().join("scripts"), script) {
            ScriptKind::File(path) => {
                let interpreter = match path.extension().and_then(|e| e.to_str()) {
                    Some(e) if e.eq_ignore_ascii_case("sh") || e.eq_ignore_ascii_case("bash") => {
                        "bash"
                    }
                    _ => "python3",
                };
                let mut cmd = tokio::process::Command::new(interpreter);
                cmd.arg(&path);
                if let Some(dir) = path.parent() {
                    cmd.current_dir(dir);
                }
                cmd
            }
            ScriptKind::Command(line) => {
                let mut cmd = tokio::process::Command::new("sh");
                cmd.arg("-c").arg(line).current_dir(cwd);
                cmd
            }
            ScriptKind::Refused(why) => return Err((RunStatus::Failed, why)),
        };
        // The user's own script, outside the sandbox, with `HERMES_HOME/.env` in its
        // environment (winning over the process's, as everywhere): Python Hermes has
        // loaded `.env` into its environment before it runs one (the switching pass of
        // issue 17: a script reading its token got none under hermes).
        if let Ok(text) = std::fs::read_to_string(self.opts.home.env_file()) {
            cmd.envs(hermes_protocol::config::parse_env_file(&text));
        }
        cmd.kill_on_drop(true).stdin(std::process::Stdio::null());
        let res = tokio::time::timeout(self.opts.inactivity, cmd.output()).await;
        match res {
            Err(_) => Err((
                RunStatus::Timeout,
                format!(
                    "script ran longer than {} s",
                    self.opts.inactivity.as_secs()
                ),
            )),
            Ok(Err(e)) => Err((RunStatus::Failed, format!("script could not start: {e}"))),
            Ok(Ok(out)) if !out.status.success() => Err((
                RunStatus::Failed,
                format!(
                    "script exited with {}: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            )),
            Ok(Ok(out)) => Ok(String::from_utf8_lossy(&out.stdout).trim().to_string()),
        }
    }

    /// The latest output of each `context_from` job, as Python adds it before the prompt
    /// (`cron/output/<id>/*.md`, newest by modification time, at most
    /// [`CONTEXT_FROM_MAX_CHARS`]). Ids that are not 12-hex-like and jobs with no output yet
    /// are skipped.
    fn context_from_text(&self, job: &Job) -> String {
        let mut out = String::new();
        let base = self.opts.home.root().join("cron").join("output");
        for id in job.context_from.iter().flatten() {
            if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit()) {
                tracing::warn!(job = %job.id, source = %id, "context_from: invalid job id skipped");
                continue;
            }
            let Ok(dir) = std::fs::read_dir(base.join(id)) else {
                continue;
            };
            let newest = dir
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
                .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
                .max_by_key(|(t, _)| *t);
            let Some((_, path)) = newest else { continue };
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let mut shown: String = text.chars().take(CONTEXT_FROM_MAX_CHARS).collect();
            if text.chars().count() > CONTEXT_FROM_MAX_CHARS {
                shown.push_str("\n\n[... output truncated ...]");
            }
            out.push_str(&format!(
                "[Output of the preceding job `{id}`]\n```\n{shown}\n```\n\n"
            ));
        }
        out
    }

    /// The directory the run works in: the job's `workdir` when it is an existing directory,
    /// else the configured one (a missing workdir is logged, as Python does).
    ///
    /// Errors: the workdir now resolves to another folder (it, or a folder on its path, was
    /// replaced by a symlink since it was checked). Workdirs are stored as real paths (the
    /// `cronjob` tool and `hermes cron create|edit --workdir` resolve them), and the run's
    /// sandbox is built on this folder, so following the symlink would let whoever swapped
    /// it choose where the job may write (issue 18).
    fn cwd_of(&self, job: &Job) -> Result<PathBuf, String> {
        match job.workdir.as_deref().map(PathBuf::from) {
            Some(dir) if dir.is_dir() => match std::fs::canonicalize(&dir) {
                Ok(real) if real == dir => Ok(dir),
                Ok(real) => Err(format!(
                    "workdir {} now leads to {} through a symlink; the job does not run there \
                     (set the real folder with `hermes cron edit {} --workdir DIR`)",
                    dir.display(),
                    real.display(),
                    job.id
                )),
                Err(e) => Err(format!("workdir {}: {e}", dir.display())),
            },
            Some(dir) => {
                tracing::warn!(job = %job.id, workdir = %dir.display(), "cron workdir missing; using the default directory");
                Ok(self.opts.cwd.clone())
            }
            None => Ok(self.opts.cwd.clone()),
        }
    }

    fn skills_text(&self, job: &Job) -> String {
        let mut text = String::new();
        for name in &job.skills {
            match find_skill(&self.opts.home.skills_dir(), name) {
                Some(body) => {
                    text.push_str(&format!("\n\n[Skill `{name}`]\n{body}"));
                }
                None => tracing::warn!(skill = %name, "cron job skill not found"),
            }
        }
        text
    }
}

/// What a job's `script` value names.
enum ScriptKind {
    /// A file inside the scripts directory.
    File(PathBuf),
    /// A shell command line (hermes before the shared format).
    Command(String),
    /// Not allowed or not found (the message says which).
    Refused(String),
}

fn resolve_script(scripts_dir: &Path, script: &str) -> ScriptKind {
    let raw = script.trim();
    let expanded = match raw.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(rest))
            .unwrap_or_else(|| PathBuf::from(raw)),
        None => PathBuf::from(raw),
    };
    let candidate = if expanded.is_absolute() {
        expanded
    } else {
        scripts_dir.join(&expanded)
    };
    let root = std::fs::canonicalize(scripts_dir).unwrap_or_else(|_| scripts_dir.to_path_buf());
    match std::fs::canonicalize(&candidate) {
        Ok(path) if !path.starts_with(&root) => ScriptKind::Refused(format!(
            "Blocked: script path resolves outside the scripts directory ({}): {raw}",
            root.display()
        )),
        Ok(path) if path.is_file() => ScriptKind::File(path),
        Ok(path) => ScriptKind::Refused(format!("Script path is not a file: {}", path.display())),
        Err(_) if raw.chars().any(char::is_whitespace) => ScriptKind::Command(raw.to_string()),
        Err(_) => ScriptKind::Refused(format!("Script not found: {}", candidate.display())),
    }
}

/// Reads `skills/**/<name>/SKILL.md` (at most three levels deep).
fn find_skill(dir: &std::path::Path, name: &str) -> Option<String> {
    fn walk(dir: &std::path::Path, name: &str, depth: u32) -> Option<PathBuf> {
        let direct = dir.join(name).join("SKILL.md");
        if direct.is_file() {
            return Some(direct);
        }
        if depth == 0 {
            return None;
        }
        std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .filter(|e| e.path().is_dir())
            .find_map(|e| walk(&e.path(), name, depth - 1))
    }
    std::fs::read_to_string(walk(dir, name, 2)?).ok()
}

fn failed(status: RunStatus, error: String, session_id: Option<String>) -> RunOutput {
    RunOutput {
        status,
        text: String::new(),
        error: Some(error),
        session_id,
    }
}

#[async_trait::async_trait]
impl JobRunner for AgentRunner {
    async fn run(&self, job: &Job, cancel: CancellationToken) -> RunOutput {
        let cwd = match self.cwd_of(job) {
            Ok(cwd) => cwd,
            Err(e) => return failed(RunStatus::Failed, e, None),
        };
        let script_out = match &job.script {
            Some(s) => match self.run_script(s, &cwd).await {
                Ok(out) => Some(out),
                Err((status, e)) => return failed(status, e, None),
            },
            None => None,
        };
        if job.no_agent {
            return RunOutput {
                status: RunStatus::Ok,
                text: script_out.unwrap_or_default(),
                error: None,
                session_id: None,
            };
        }
        if let Some(resolve) = &self.defaults
            && let Some(why) = crate::drift::drifted(job, &resolve(job.base_url.as_deref()))
        {
            tracing::warn!(job = %job.id, "{why}");
            return failed(RunStatus::Failed, why, None);
        }
        let client = match (self.opts.clients)(&ModelChoice::of(job)) {
            Ok(c) => c,
            Err(e) => return failed(RunStatus::Failed, e, None),
        };
        let mut registry = Registry::builtin();
        for tool in &self.opts.extra_tools {
            if let Err(e) = registry.register(tool.clone()) {
                tracing::debug!(error = %e, "extra cron tool skipped");
            }
        }
        if let Err(e) = registry.define_toolset(CRON_TOOLSET) {
            tracing::debug!(error = %e, "hermes-cron toolset already defined");
        }
        let mut tools = match registry.select(&ToolsetSelection::new(
            vec![CRON_TOOLSET.name.to_string()],
            Vec::<String>::new(),
        )) {
            Ok(set) => set.tools().to_vec(),
            Err(e) => return failed(RunStatus::Failed, e.to_string(), None),
        };
        // `enabled_toolsets` narrows the cron toolset; it never widens it (as in Python,
        // where a job's list cannot bypass the cron policy).
        if let Some(sets) = &job.enabled_toolsets {
            let allowed =
                match registry.select(&ToolsetSelection::new(sets.clone(), Vec::<String>::new())) {
                    Ok(set) => set.names(),
                    Err(e) => {
                        return failed(
                            RunStatus::Failed,
                            format!("enabled_toolsets of job {}: {e}", job.id),
                            None,
                        );
                    }
                };
            tools.retain(|t| allowed.iter().any(|n| n == t.spec().name.as_str()));
        }
        let deps = AgentDeps {
            client,
            tools,
            store: self.opts.store.clone(),
            approver: Arc::new(FixedApprover(Approval::Deny)),
            prompt: self.opts.prompt.clone(),
            home: self.opts.home.clone(),
        };
        let store = self.opts.store.clone();
        let tz = self.opts.timezone;
        let base_id = cron_session_id(&job.id, chrono::Utc::now().with_timezone(&tz));
        // Two runs of a job in one second (a manual run beside the scheduled one) must not
        // collide on the id: the second gets a suffix.
        let free_id = {
            let base_id = base_id.clone();
            move || {
                let mut id = base_id.clone();
                let mut n = 1;
                while matches!(store.get_session(&id), Ok(Some(_))) {
                    n += 1;
                    id = format!("{base_id}_{n}");
                }
                id
            }
        };
        let run_id = tokio::task::spawn_blocking(free_id)
            .await
            .unwrap_or(base_id);
        let opts = AgentOptions {
            session_id: Some(run_id),
            max_turns: self.opts.max_turns,
            api_max_retries: self.opts.api_max_retries,
            yolo: false,
            cwd: cwd.clone(),
            terminal_timeout_s: self.opts.terminal_timeout_s,
            source: "cron".to_string(),
            ephemeral_prompt: Some(CRON_PREAMBLE.trim().to_string()),
            sandbox: self.opts.sandbox.clone(),
            ..AgentOptions::default()
        };
        let mut agent = match Agent::start(deps, opts, None).await {
            Ok(a) => a,
            Err(e) => return failed(RunStatus::Failed, e.to_string(), None),
        };
        let session_id = agent.session_id().to_string();
        let mut input = self.context_from_text(job);
        input.push_str(&job.prompt);
        input.push_str(&self.skills_text(job));
        if let Some(out) = script_out {
            input.push_str(&format!(
                "\n\n[Output of the job's script]\n{}",
                out.trim_end()
            ));
        }
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let turn_cancel = cancel.child_token();
        let timed_out = std::sync::atomic::AtomicBool::new(false);
        let watchdog = async {
            loop {
                match tokio::time::timeout(self.opts.inactivity, rx.recv()).await {
                    Ok(Some(_)) => continue,
                    Ok(None) => std::future::pending::<()>().await,
                    Err(_) => {
                        timed_out.store(true, std::sync::atomic::Ordering::SeqCst);
                        turn_cancel.cancel();
                        std::future::pending::<()>().await;
                    }
                }
            }
        };
        let (outcome, final_text) = tokio::select! {
            biased;
            outcome = run_turn_text(&mut agent, &input, &tx, turn_cancel.clone()) => outcome,
            () = watchdog => (TurnOutcome::Failed, String::new()),
        };
        let timed_out = timed_out.load(std::sync::atomic::Ordering::SeqCst);
        let out = match outcome {
            TurnOutcome::Completed | TurnOutcome::BudgetExhausted => RunOutput {
                status: RunStatus::Ok,
                text: final_text,
                error: None,
                session_id: Some(session_id.clone()),
            },
            // The watchdog fired: whatever the interrupted model call reported (a cancelled
            // stream may surface as a failed call), the run timed out.
            TurnOutcome::Interrupted | TurnOutcome::Failed if timed_out => failed(
                RunStatus::Timeout,
                format!(
                    "no activity for {} s; the run was stopped",
                    self.opts.inactivity.as_secs()
                ),
                Some(session_id.clone()),
            ),
            TurnOutcome::Interrupted => failed(
                RunStatus::Failed,
                "the run was interrupted (scheduler stopping)".into(),
                Some(session_id.clone()),
            ),
            TurnOutcome::Failed => failed(RunStatus::Failed, final_text, Some(session_id.clone())),
        };
        // As Python does: the session is titled from the job, then ended `cron_complete`
        // whatever the outcome (the run's status is in the run history and jobs.json).
        let store = self.opts.store.clone();
        let title = cron_session_title(&job.id, &job.name, chrono::Utc::now().with_timezone(&tz));
        let _ = tokio::task::spawn_blocking(move || {
            if let Err(e) = store.set_title_numbered(&session_id, &title) {
                tracing::debug!(error = %e, "cron session title not set");
            }
            store.end_session(&session_id, CRON_END_REASON)
        })
        .await;
        out
    }
}

/// Runs a turn and picks the final text from its `TurnFinished` event.
async fn run_turn_text(
    agent: &mut Agent,
    input: &str,
    tx: &tokio::sync::mpsc::UnboundedSender<hermes_protocol::AgentEvent>,
    cancel: CancellationToken,
) -> (TurnOutcome, String) {
    let (inner_tx, mut inner_rx) = tokio::sync::mpsc::unbounded_channel();
    let forward = tx.clone();
    {
        let relay = async {
            let mut text = String::new();
            while let Some(ev) = inner_rx.recv().await {
                if let hermes_protocol::AgentEvent::TurnFinished { final_text, .. } = &ev {
                    text = final_text.clone();
                }
                let _ = forward.send(ev);
            }
            text
        };
        let turn = async {
            let o = agent.run_turn(input, &inner_tx, cancel).await;
            drop(inner_tx);
            o
        };
        let (o, text) = tokio::join!(turn, relay);
        (o, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn run_sessions_are_named_as_python_names_them() {
        let tz: chrono_tz::Tz = "Asia/Shanghai".parse().unwrap_or(chrono_tz::Tz::UTC);
        let at = chrono::Utc
            .with_ymd_and_hms(2026, 3, 4, 1, 2, 3)
            .single()
            .map(|t| t.with_timezone(&tz));
        let Some(at) = at else {
            panic!("a valid instant");
        };
        assert_eq!(cron_session_id("a1b2c3", at), "cron_a1b2c3_20260304_090203");
        assert_eq!(
            cron_session_title("a1b2c3", "  nightly\n\treport  ", at),
            "nightly report · Mar 04 09:02"
        );
        assert_eq!(
            cron_session_title("a1b2c3", " \n ", at),
            "cron a1b2c3 · Mar 04 09:02"
        );
        let long = "x".repeat(80);
        assert_eq!(
            cron_session_title("a1b2c3", &long, at),
            format!("{} · Mar 04 09:02", "x".repeat(60))
        );
    }
}
