//! The tool interface (ARCHITECTURE §3; CONVENTIONS pattern 3).

use std::path::PathBuf;
use std::sync::Arc;

use hermes_protocol::{HermesHome, ToolSpec};

use crate::health::ToolHealth;
use crate::sandbox::{SandboxPolicy, SandboxSettings};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Read or write access of a path-scoped tool (FEATURES §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads the path.
    Read,
    /// Writes the path.
    Write,
}

/// How a tool may run beside others in one batch (FEATURES §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parallelism {
    /// Always alone (e.g. `clarify`, `terminal`).
    Never,
    /// Read-only and pathless: may run with anything.
    Safe,
    /// Touches the path in argument `arg` with this access.
    PathScoped {
        /// Name of the argument holding the path.
        arg: &'static str,
        /// Read or write.
        access: Access,
    },
}

/// What a tool returns: text for the model, and whether it is an error.
///
/// "Tell the model" failures (bad path, command failed) are `is_error = true` results, never
/// panics or `Err` (CONVENTIONS pattern 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// Text for the model.
    pub content: String,
    /// True when the call failed or was refused.
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            is_error: false,
        }
    }
    /// An error result for the model.
    pub fn error(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            is_error: true,
        }
    }
}

/// A request for the user to approve a dangerous command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    /// The command text.
    pub command: String,
    /// Why it needs approval (e.g. "recursive delete").
    pub reason: String,
}

/// The user's answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// Run it this once.
    Once,
    /// Run it and stop asking for this kind of command in this session.
    Session,
    /// Do not run it.
    Deny,
}

/// Asks the user (REPL prompt, gateway `/approve`) or applies a fixed policy (one-shot, cron).
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// Decides on one dangerous command.
    async fn approve(&self, request: &ApprovalRequest) -> Approval;
}

/// Everything a tool call may use besides its arguments.
#[derive(Clone)]
pub struct ToolContext {
    /// Working directory for relative paths and commands.
    pub cwd: PathBuf,
    /// The hermes home (deny-list, spill files).
    pub home: HermesHome,
    /// Cancelled on interrupt; long tools must stop promptly.
    pub cancel: CancellationToken,
    /// Approval policy for dangerous commands.
    pub approver: Arc<dyn Approver>,
    /// Skip approval for dangerous (not hard-line) commands (`--yolo`).
    pub yolo: bool,
    /// Default terminal timeout in seconds.
    pub terminal_timeout_s: u64,
    /// Called with progress text while the tool runs.
    pub progress: Arc<dyn Fn(String) + Send + Sync>,
    /// The OS sandbox of commands and the path policy of the file tools
    /// ([`crate::sandbox`]); the workspace is [`ToolContext::cwd`].
    pub sandbox: Arc<SandboxSettings>,
    /// The toolsets of the tools the session is offered (sorted, distinct; `None` when
    /// unknown, in tests). A tool that starts work outside the turn (`cronjob`) grants no
    /// toolset beyond these.
    pub session_toolsets: Option<Arc<Vec<String>>>,
    /// The id of the tool call being run (the model's `tool_call.id`, as in
    /// `AgentEvent::ToolStarted`), so a front end's tool or approver can refer to it (ACP's
    /// permission requests name the call they are about); empty outside a call.
    pub call_id: String,
}

/// One tool. Registration is explicit: each toolset module lists its tools.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// Name, description and argument schema shown to the model.
    fn spec(&self) -> ToolSpec;
    /// The toolset this tool belongs to (`file`, `terminal`, …).
    fn toolset(&self) -> &'static str;
    /// How it may run beside other tools.
    fn parallelism(&self) -> Parallelism;
    /// `Err(reason)` when this machine cannot run the tool (missing binary or key); such a
    /// tool is left out of the schema list.
    fn available(&self) -> Result<(), String> {
        Ok(())
    }
    /// Runs the call with already-coerced arguments.
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolOutput;
    /// True when the tool watches [`ToolContext::cancel`] itself and, once it fires, ends
    /// promptly with a result of its own (`delegate_task`: its subagents stop, their
    /// sessions stay consistent, and the result says `interrupted`). The agent then waits
    /// for that result instead of dropping the call and answering "cancelled by user".
    /// `false` (the default) for every other tool.
    fn handles_cancel(&self) -> bool {
        false
    }
    /// Session state the model must still see after context compression (e.g. the `todo`
    /// list): the agent appends this text to the compression summary. `None` (the default)
    /// for stateless tools.
    fn carry_over(&self) -> Option<String> {
        None
    }
    /// A new instance with its own per-session state, for tools that keep some (`todo`):
    /// every agent calls this once at start, so agents built from one shared tool list (the
    /// gateway's chats) never share a list. `None` (the default) keeps this instance.
    fn for_session(&self) -> Option<Arc<dyn Tool>> {
        None
    }
    /// Called when the agent starts a session (`history` empty) or resumes one (`history` is
    /// the active messages): a stateful tool rebuilds its per-session state from it. The
    /// default does nothing.
    fn restore(&self, _history: &[hermes_protocol::Message]) {}
    /// The tool's health as last checked ([`crate::health`]): cheap, no I/O, read by the
    /// agent before every model request (an unhealthy tool without a fallback is not
    /// offered). A tool with a periodic check may start it from here. The default,
    /// [`ToolHealth::NoCheck`], is right for every tool without a check.
    fn health(&self) -> ToolHealth {
        ToolHealth::NoCheck
    }
    /// Runs the tool's health check now and returns the result, taking at most the tool's
    /// own timeout (`hermes tools list`, `hermes doctor`). The default returns
    /// [`Tool::health`].
    async fn check_health(&self) -> ToolHealth {
        self.health()
    }
}

/// An [`Approver`] that always gives the same answer: `FixedApprover(Approval::Deny)` is the
/// policy of one-shot mode without `--yolo` and of cron (FEATURES §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedApprover(pub Approval);

#[async_trait::async_trait]
impl Approver for FixedApprover {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        self.0
    }
}

impl ToolContext {
    /// A context for tests and headless use: `cwd`, hermes home `home`, a fresh cancel token,
    /// approvals denied ([`FixedApprover`]), no `--yolo`, the default 180 s terminal timeout,
    /// progress discarded and the sandbox [`SandboxSettings::off`] (tests of the sandbox set
    /// [`ToolContext::sandbox`] themselves).
    #[doc(hidden)]
    pub fn for_tests(cwd: impl Into<PathBuf>, home: HermesHome) -> ToolContext {
        ToolContext {
            cwd: cwd.into(),
            home,
            cancel: CancellationToken::new(),
            approver: Arc::new(FixedApprover(Approval::Deny)),
            yolo: false,
            terminal_timeout_s: hermes_protocol::config::DEFAULT_TERMINAL_TIMEOUT_S,
            progress: Arc::new(|_| {}),
            sandbox: Arc::new(SandboxSettings::off()),
            session_toolsets: None,
            call_id: String::new(),
        }
    }

    /// This context for the call with id `call_id`.
    pub fn for_call(&self, call_id: &str) -> ToolContext {
        ToolContext {
            call_id: call_id.to_string(),
            ..self.clone()
        }
    }

    /// The sandbox policy of this call: [`ToolContext::sandbox`] resolved for the workspace
    /// [`ToolContext::cwd`] and hermes home [`ToolContext::home`].
    pub fn policy(&self) -> SandboxPolicy {
        self.sandbox.policy(&self.cwd, &self.home)
    }

    /// Resolves a tool's path argument: `~` and `~/…` expand to `$HOME`, relative paths are
    /// joined to [`ToolContext::cwd`].
    pub fn resolve_path(&self, path: &str) -> PathBuf {
        let expanded = if path == "~" || path.starts_with("~/") {
            match std::env::var_os("HOME") {
                Some(h) => {
                    PathBuf::from(h).join(path.trim_start_matches('~').trim_start_matches('/'))
                }
                None => PathBuf::from(path),
            }
        } else {
            PathBuf::from(path)
        };
        if expanded.is_absolute() {
            expanded
        } else {
            self.cwd.join(expanded)
        }
    }
}

/// Tools that can change while a session runs (an MCP server's list after
/// `notifications/tools/list_changed`, case C32). The agent asks before every model call.
pub trait ToolSource: Send + Sync {
    /// A number that changes whenever [`ToolSource::tools`] would return a different list.
    fn generation(&self) -> u64;
    /// The current tools, in a stable order; they go after the built-in tools.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
}
