//! Headless runs (FEATURES §1 Cron): a fresh agent per run with the `hermes-cron` toolset
//! (file + terminal; never `cronjob`, `clarify`, memory or messaging tools), dangerous
//! commands denied, source `cron`, our preamble as the call-time system prompt, the job's
//! skills and optional script output as context, and an inactivity timeout.

use std::path::PathBuf;
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

/// Makes the model client of a run; the argument is the job's model override.
pub type ClientFactory =
    Arc<dyn Fn(Option<&str>) -> Result<Arc<dyn ModelClient>, String> + Send + Sync>;

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
}

/// Runs jobs with a fresh agent each time.
pub struct AgentRunner {
    opts: HeadlessOptions,
}

impl AgentRunner {
    /// A runner with these options.
    pub fn new(opts: HeadlessOptions) -> AgentRunner {
        AgentRunner { opts }
    }

    async fn run_script(&self, script: &str) -> Result<String, (RunStatus, String)> {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c")
            .arg(script)
            .current_dir(&self.opts.cwd)
            .kill_on_drop(true)
            .stdin(std::process::Stdio::null());
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
            Ok(Ok(out)) => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
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
        let script_out = match &job.script {
            Some(s) => match self.run_script(s).await {
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
        let client = match (self.opts.clients)(job.model.as_deref()) {
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
        let tools = match registry.select(&ToolsetSelection::new(
            vec![CRON_TOOLSET.name.to_string()],
            Vec::<String>::new(),
        )) {
            Ok(set) => set.tools().to_vec(),
            Err(e) => return failed(RunStatus::Failed, e.to_string(), None),
        };
        let deps = AgentDeps {
            client,
            tools,
            store: self.opts.store.clone(),
            approver: Arc::new(FixedApprover(Approval::Deny)),
            prompt: self.opts.prompt.clone(),
            home: self.opts.home.clone(),
        };
        let opts = AgentOptions {
            max_turns: self.opts.max_turns,
            api_max_retries: self.opts.api_max_retries,
            yolo: false,
            cwd: self.opts.cwd.clone(),
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
        let mut input = job.prompt.clone();
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
        let status = match out.status {
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::Timeout => "timeout",
        };
        let store = self.opts.store.clone();
        let _ = tokio::task::spawn_blocking(move || store.end_session(&session_id, status)).await;
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
