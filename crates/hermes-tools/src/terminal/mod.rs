//! The `terminal` toolset (FEATURES §4): `terminal(command, timeout?, background?, workdir?)`
//! and `process(action, id?)`.
//!
//! Commands run as `bash -c` (never interactive or login; job control off with `set +m`) in
//! their own process group, killed as a group on timeout, cancel or drop. Output is captured
//! from stdout and stderr, ANSI stripped and capped ([`MAX_OUTPUT_BYTES`] /
//! [`MAX_OUTPUT_LINES`], head and tail kept). After the shell exits, output is drained for a
//! bounded time rather than until EOF, so commands that background a process return at once
//! (case C28). Dangerous commands go through `ctx.approver` unless `ctx.yolo`; hard-line ones
//! are always refused ([`crate::safety`]).

mod exec;
mod output;
mod process;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_protocol::ToolSpec;
use serde_json::{Value, json};

pub use output::{MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES, cap_output};
pub use process::{DEFAULT_LOG_LINES, ProcessInfo, ProcessRegistry, ProcessStatus, ProcessTool};

use crate::file::{opt_bool, opt_str, opt_u64, req_str};
use crate::safety::{CommandSafety, classify_command};
use crate::tool::{Approval, ApprovalRequest, Parallelism, Tool, ToolContext, ToolOutput};
use exec::run_foreground;
pub use exec::{Ending, Finished, ForegroundJob, ForegroundRunner, shell_job};

/// Toolset name of these tools.
pub const TOOLSET: &str = "terminal";

/// The `terminal` tools (terminal, process) sharing one new [`ProcessRegistry`].
pub fn tools() -> Vec<Arc<dyn Tool>> {
    tools_with(Arc::new(ProcessRegistry::new()))
}

/// The `terminal` tools (terminal, process) sharing `registry`.
pub fn tools_with(registry: Arc<ProcessRegistry>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(TerminalTool::new(registry.clone())),
        Arc::new(ProcessTool::new(registry)),
    ]
}

/// The `terminal` tools (terminal, process) with a new registry, whose foreground commands
/// `runner` runs (background processes stay local children).
pub fn tools_with_runner(runner: Arc<dyn ForegroundRunner>) -> Vec<Arc<dyn Tool>> {
    let registry = Arc::new(ProcessRegistry::new());
    let mut terminal = TerminalTool::new(registry.clone());
    terminal.runner = Some(runner);
    vec![Arc::new(terminal), Arc::new(ProcessTool::new(registry))]
}

/// `terminal`: runs a shell command (see the module docs). Result text is the output followed
/// by `[exit code: N]`; a non-zero exit, timeout, cancel, refusal or denial is an error result.
/// `Approval::Session` answers are remembered per reason for the life of this tool object.
pub struct TerminalTool {
    registry: Arc<ProcessRegistry>,
    session_approved: Mutex<HashSet<String>>,
    /// Runs foreground commands instead of a local child ([`tools_with_runner`]).
    runner: Option<Arc<dyn ForegroundRunner>>,
}

impl TerminalTool {
    /// A terminal tool whose background processes go to `registry`.
    pub fn new(registry: Arc<ProcessRegistry>) -> TerminalTool {
        TerminalTool {
            registry,
            session_approved: Mutex::new(HashSet::new()),
            runner: None,
        }
    }

    /// The background process registry.
    pub fn registry(&self) -> &Arc<ProcessRegistry> {
        &self.registry
    }

    /// `Some(error)` when the command must not run.
    async fn gate(&self, command: &str, ctx: &ToolContext) -> Option<ToolOutput> {
        match classify_command(command) {
            CommandSafety::Safe => None,
            CommandSafety::Blocked { reason } => Some(ToolOutput::error(format!(
                "Blocked: {reason}. This command is never run, not even with --yolo."
            ))),
            CommandSafety::Dangerous { reason } => {
                if ctx.yolo
                    || self
                        .session_approved
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .contains(&reason)
                {
                    return None;
                }
                let request = ApprovalRequest {
                    command: command.to_string(),
                    reason: reason.clone(),
                };
                match ctx.approver.approve(&request).await {
                    Approval::Once => None,
                    Approval::Session => {
                        self.session_approved
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(reason);
                        None
                    }
                    Approval::Deny => Some(ToolOutput::error(format!(
                        "This command was not approved ({reason}); it was not run. Do not retry \
                         it; choose a safer approach or ask the user to run it."
                    ))),
                }
            }
        }
    }
}

#[async_trait::async_trait]
impl Tool for TerminalTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "terminal".into(),
            description: "Run a shell command with bash and return its output and exit code. \
                          Output is capped at 50,000 bytes / 2,000 lines. Use background=true \
                          for servers and long jobs, then the process tool to poll/log/kill."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The shell command."},
                    "timeout": {"type": "integer", "minimum": 1, "description": "Seconds before the command is killed (default 180)."},
                    "background": {"type": "boolean", "description": "Start as a managed background process and return its id at once."},
                    "workdir": {"type": "string", "description": "Working directory (default: the session's)."}
                },
                "required": ["command"]
            }),
        }
    }
    fn toolset(&self) -> &'static str {
        TOOLSET
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Never
    }
    /// A [`ForegroundRunner`] watches the cancel token itself and stops the command where it
    /// runs (the agent waits for that, so an editor's terminal is killed and released before
    /// the turn ends); a local child is killed when the call is dropped.
    fn handles_cancel(&self) -> bool {
        self.runner.is_some()
    }
    fn available(&self) -> Result<(), String> {
        let found = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("bash").is_file()));
        if found {
            Ok(())
        } else {
            Err("bash was not found on PATH".into())
        }
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let parsed = (|| -> Result<_, String> {
            Ok((
                req_str(&args, "command")?.to_string(),
                opt_u64(&args, "timeout")?
                    .unwrap_or(ctx.terminal_timeout_s)
                    .max(1),
                opt_bool(&args, "background")?.unwrap_or(false),
                opt_str(&args, "workdir").map(|w| {
                    if matches!(ctx.sandbox.backend, crate::sandbox::Backend::Local) {
                        ctx.resolve_path(w)
                    } else {
                        std::path::PathBuf::from(w)
                    }
                }),
            ))
        })();
        let (command, timeout_s, background, workdir) = match parsed {
            Ok(v) => v,
            Err(e) => return ToolOutput::error(e),
        };
        if command.trim().is_empty() {
            return ToolOutput::error("command is empty");
        }
        let workdir = workdir.unwrap_or_else(|| ctx.cwd.clone());
        let local = matches!(ctx.sandbox.backend, crate::sandbox::Backend::Local);
        if local && !workdir.is_dir() {
            return ToolOutput::error(format!(
                "working directory {} does not exist or is not a directory",
                workdir.display()
            ));
        }
        if let Some(refusal) = self.gate(&command, ctx).await {
            return refusal;
        }
        if background {
            return match self.registry.spawn(&command, &workdir, ctx) {
                Ok(p) => ToolOutput::ok(format!(
                    "Started background process {} (pid {}). Use process with action \
                     \"poll\", \"log\" or \"kill\" and id \"{}\".",
                    p.id,
                    p.pid.map_or_else(|| "?".into(), |p| p.to_string()),
                    p.id
                )),
                Err(e) => ToolOutput::error(e),
            };
        }
        let timeout = Duration::from_secs(timeout_s);
        let finished = match &self.runner {
            Some(runner) => match shell_job(&command, &workdir, timeout, ctx) {
                Ok(job) => runner.run(job, ctx).await,
                Err(e) => Err(e),
            },
            None => run_foreground(&command, &workdir, timeout, ctx).await,
        };
        let finished = match finished {
            Ok(f) => f,
            Err(e) => return ToolOutput::error(e),
        };
        let text = cap_output(&finished.output, MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES);
        let body = if text.trim().is_empty() {
            "(no output)".to_string()
        } else {
            text.trim_end_matches('\n').to_string()
        };
        match finished.ending {
            Ending::Exited(code) => {
                let out = format!("{body}\n[exit code: {code}]");
                if code == 0 {
                    ToolOutput::ok(out)
                } else {
                    ToolOutput::error(out)
                }
            }
            Ending::TimedOut => ToolOutput::error(format!(
                "{body}\n[timed out after {timeout_s} s; the process group was killed. Use \
                 background=true for long-running commands]"
            )),
            Ending::Cancelled => ToolOutput::error(format!(
                "{body}\n[cancelled by the user; the process group was killed]"
            )),
        }
    }
}
