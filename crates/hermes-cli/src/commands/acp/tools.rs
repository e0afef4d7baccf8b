//! hermes' tools as an ACP session runs them ([`wrap`]), and its approver ([`AcpApprover`]):
//!
//! - `write_file` and `patch` ask the editor's user first (`session/request_permission`),
//!   as the session's [`Mode`] says: `default` asks for every edit, `accept_edits` only
//!   outside the workspace and the temp dir, `dont_ask` never; "allow always" allows the
//!   rest of the session's edits;
//! - when the client offers `fs/read_text_file` / `fs/write_text_file`, `read_file`,
//!   `write_file` and `patch` read and write through it, so the model sees the editor's
//!   unsaved buffers and the editor sees the edits; the sandbox's path policy
//!   ([`hermes_tools::SandboxPolicy`]) is checked first either way;
//! - when the client offers terminals, the `terminal` tool's foreground commands run in them
//!   ([`super::terminal`]), approved and sandboxed as in the CLI;
//! - `todo` results become the client's plan;
//! - a dangerous command (the REPL's approval question) is a permission request naming the
//!   running call, with "allow once", "allow for this session" and "reject".
//!
//! Every other tool, and every MCP tool, runs as it does in the CLI; each tool's result is
//! kept for the call's final `tool_call_update` ([`super::session::Outcomes`]).

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    ContentBlock, Diff, PermissionOption, PermissionOptionKind, ReadTextFileRequest,
    RequestPermissionOutcome, RequestPermissionRequest, SessionUpdate, TextContent,
    ToolCallContent, ToolCallLocation, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
    WriteTextFileRequest,
};
use hermes_protocol::ToolSpec;
use hermes_tools::{
    Approval, ApprovalRequest, Approver, Parallelism, Tool, ToolContext, ToolOutput, ToolSource,
};
use serde_json::Value;

use super::session::{Mode, Shared};
use super::updates::plan_of_todos;

/// What a wrapped tool does differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Nothing: the tool runs as in the CLI (its result is kept for the client).
    Plain,
    Read,
    Write,
    Patch,
    Todo,
}

/// The tool list of one ACP session: `tools` with `read_file`, `write_file`, `patch` and
/// `todo` wrapped for the session behind `shared` (see the module doc).
pub fn wrap(tools: &[Arc<dyn Tool>], shared: &Arc<Shared>) -> Vec<Arc<dyn Tool>> {
    // The client's terminals: a terminal/process pair of the session's own.
    let in_client = shared.link.caps.terminal.then(|| {
        hermes_tools::terminal::tools_with_runner(Arc::new(super::terminal::ClientTerminal {
            shared: shared.clone(),
        }))
    });
    tools
        .iter()
        .map(|tool| {
            let name = tool.spec().name;
            if let Some(pair) = &in_client
                && let Some(t) = pair.iter().find(|t| t.spec().name == name)
            {
                return session_tool(t.clone(), Role::Plain, shared);
            }
            let role = match name.as_str() {
                "read_file" => Role::Read,
                "write_file" => Role::Write,
                "patch" => Role::Patch,
                "todo" => Role::Todo,
                _ => Role::Plain,
            };
            session_tool(tool.clone(), role, shared)
        })
        .collect()
}

fn session_tool(inner: Arc<dyn Tool>, role: Role, shared: &Arc<Shared>) -> Arc<dyn Tool> {
    Arc::new(SessionTool {
        inner,
        role,
        shared: shared.clone(),
    })
}

/// The MCP tools of one ACP session: `source`'s, each result kept for the client.
pub fn wrap_source(source: Arc<dyn ToolSource>, shared: &Arc<Shared>) -> Arc<dyn ToolSource> {
    Arc::new(SessionSource {
        inner: source,
        shared: shared.clone(),
    })
}

/// See [`wrap_source`].
struct SessionSource {
    inner: Arc<dyn ToolSource>,
    shared: Arc<Shared>,
}

impl ToolSource for SessionSource {
    fn generation(&self) -> u64 {
        self.inner.generation()
    }
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.inner
            .tools()
            .into_iter()
            .map(|tool| session_tool(tool, Role::Plain, &self.shared))
            .collect()
    }
}

/// A tool of the session (see [`wrap`]).
struct SessionTool {
    inner: Arc<dyn Tool>,
    role: Role,
    shared: Arc<Shared>,
}

fn arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, String> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("missing string argument '{name}'"))
}

/// The tool's answer when the client failed a request.
fn client_error(what: &str, shown: &str, e: &agent_client_protocol::Error) -> String {
    format!("cannot {what} {shown}: the editor answered: {}", e.message)
}

#[async_trait::async_trait]
impl Tool for SessionTool {
    fn spec(&self) -> ToolSpec {
        self.inner.spec()
    }
    fn toolset(&self) -> &'static str {
        self.inner.toolset()
    }
    fn parallelism(&self) -> Parallelism {
        self.inner.parallelism()
    }
    fn available(&self) -> Result<(), String> {
        self.inner.available()
    }
    fn handles_cancel(&self) -> bool {
        self.inner.handles_cancel()
    }
    fn carry_over(&self) -> Option<String> {
        self.inner.carry_over()
    }
    fn for_session(&self) -> Option<Arc<dyn Tool>> {
        self.inner.for_session().map(|inner| {
            Arc::new(SessionTool {
                inner,
                role: self.role,
                shared: self.shared.clone(),
            }) as Arc<dyn Tool>
        })
    }
    fn restore(&self, history: &[hermes_protocol::Message]) {
        self.inner.restore(history);
    }
    fn health(&self) -> hermes_tools::ToolHealth {
        self.inner.health()
    }
    async fn check_health(&self) -> hermes_tools::ToolHealth {
        self.inner.check_health().await
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let out = self.run(args, ctx).await;
        if !ctx.call_id.is_empty() {
            self.shared.outcomes.result(&ctx.call_id, &out.content);
        }
        out
    }
}

impl SessionTool {
    /// The call, as the module doc says.
    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let fs = &self.shared.link.caps.fs;
        match self.role {
            Role::Plain => self.inner.call(args, ctx).await,
            Role::Todo => {
                let out = self.inner.call(args, ctx).await;
                if !out.is_error
                    && let Some(plan) = plan_of_todos(&out.content)
                {
                    self.shared.link.notify(SessionUpdate::Plan(plan));
                }
                out
            }
            Role::Read if fs.read_text_file => self.read_through_client(&args, ctx).await,
            Role::Read => self.inner.call(args, ctx).await,
            Role::Write | Role::Patch => {
                if let Err(refusal) = self.allow_edit(&args, ctx).await {
                    return ToolOutput::error(refusal);
                }
                match self.role {
                    Role::Write if fs.write_text_file => {
                        self.write_through_client(&args, ctx).await
                    }
                    Role::Patch if fs.write_text_file && fs.read_text_file => {
                        self.patch_through_client(&args, ctx).await
                    }
                    _ => self.inner.call(args, ctx).await,
                }
            }
        }
    }

    /// `Err(what to tell the model)` when the user does not allow this edit, or the sandbox
    /// refuses it (checked first: the user is never asked about an edit that cannot be made).
    async fn allow_edit(&self, args: &Value, ctx: &ToolContext) -> Result<(), String> {
        let shown = arg(args, "path")?;
        let path = ctx.resolve_path(shown);
        checked(&path, ctx, true)?;
        let ask = match self.shared.mode() {
            Mode::DontAsk => false,
            Mode::AcceptEdits => {
                !(path.starts_with(&self.shared.cwd) || path.starts_with(std::env::temp_dir()))
            }
            Mode::Default => true,
        };
        if !ask
            || self
                .shared
                .edits_allowed
                .lock()
                .map(|a| *a)
                .unwrap_or(false)
        {
            return Ok(());
        }
        self.shared.running.newest(|id, _| id == ctx.call_id).await;
        let diff = match self.role {
            Role::Write => Diff::new(
                &path,
                args.get("content").and_then(Value::as_str).unwrap_or(""),
            ),
            _ => Diff::new(
                &path,
                args.get("new_string").and_then(Value::as_str).unwrap_or(""),
            )
            .old_text(
                args.get("old_string")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            ),
        };
        let call = ToolCallUpdate::new(
            ctx.call_id.clone(),
            ToolCallUpdateFields::new()
                .kind(ToolKind::Edit)
                .title(format!("Edit {shown}"))
                .locations(vec![ToolCallLocation::new(&path)])
                .content(vec![ToolCallContent::Diff(diff)]),
        );
        let options = vec![
            PermissionOption::new("allow_once", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new(
                "allow_always",
                "Allow edits for this session",
                PermissionOptionKind::AllowAlways,
            ),
            PermissionOption::new("reject_once", "Reject", PermissionOptionKind::RejectOnce),
        ];
        match ask_user(&self.shared, call, options, ctx).await.as_deref() {
            Some("allow_once") => Ok(()),
            Some("allow_always") => {
                if let Ok(mut allowed) = self.shared.edits_allowed.lock() {
                    *allowed = true;
                }
                Ok(())
            }
            Some(_) => Err(format!(
                "the user rejected this edit of {shown}; it was not made. Ask what they want \
                 instead of trying again."
            )),
            None => Err(format!(
                "the edit of {shown} was not made: the question was cancelled"
            )),
        }
    }

    async fn read_through_client(&self, args: &Value, ctx: &ToolContext) -> ToolOutput {
        let shown = match arg(args, "path") {
            Ok(s) => s.to_string(),
            Err(e) => return ToolOutput::error(e),
        };
        let num = |k: &str| args.get(k).and_then(Value::as_u64);
        let offset = num("offset").unwrap_or(1);
        let limit = num("limit").unwrap_or(hermes_tools::file::DEFAULT_READ_LIMIT);
        let target = match checked(&ctx.resolve_path(&shown), ctx, false) {
            Ok(t) => t,
            Err(e) => return ToolOutput::error(e),
        };
        if target.is_dir() {
            return ToolOutput::error(format!(
                "{shown} is a directory, not a file; use search_files with target=\"files\" to \
                 list it"
            ));
        }
        let link = &self.shared.link;
        let request = ReadTextFileRequest::new(link.session_id.clone(), target);
        match link.request(request).await {
            Ok(answer) => {
                match hermes_tools::file::page_of_text(&answer.content, &shown, offset, limit) {
                    Ok(page) => ToolOutput::ok(page),
                    Err(e) => ToolOutput::error(e),
                }
            }
            Err(e) => ToolOutput::error(client_error("read", &shown, &e)),
        }
    }

    async fn write_through_client(&self, args: &Value, ctx: &ToolContext) -> ToolOutput {
        let (shown, content) = match (arg(args, "path"), arg(args, "content")) {
            (Ok(p), Ok(c)) => (p.to_string(), c.to_string()),
            (Err(e), _) | (_, Err(e)) => return ToolOutput::error(e),
        };
        let target = match checked(&ctx.resolve_path(&shown), ctx, true) {
            Ok(t) => t,
            Err(e) => return ToolOutput::error(e),
        };
        if target.is_dir() {
            return ToolOutput::error(format!("{shown} is a directory"));
        }
        let existed = target.exists();
        let link = &self.shared.link;
        let request = WriteTextFileRequest::new(link.session_id.clone(), target, content.clone());
        match link.request(request).await {
            Ok(_) => ToolOutput::ok(format!(
                "{} {shown}: {} bytes, {} lines",
                if existed { "Overwrote" } else { "Created" },
                content.len(),
                content.lines().count()
            )),
            Err(e) => ToolOutput::error(client_error("write", &shown, &e)),
        }
    }

    async fn patch_through_client(&self, args: &Value, ctx: &ToolContext) -> ToolOutput {
        let parsed = (|| -> Result<_, String> {
            Ok((
                arg(args, "path")?.to_string(),
                arg(args, "old_string")?.to_string(),
                arg(args, "new_string")?.to_string(),
                args.get("replace_all")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            ))
        })();
        let (shown, old, new, all) = match parsed {
            Ok(v) => v,
            Err(e) => return ToolOutput::error(e),
        };
        let target = match checked(&ctx.resolve_path(&shown), ctx, true) {
            Ok(t) => t,
            Err(e) => return ToolOutput::error(e),
        };
        let link = &self.shared.link;
        let read = ReadTextFileRequest::new(link.session_id.clone(), target.clone());
        let content = match link.request(read).await {
            Ok(answer) => answer.content,
            Err(e) => return ToolOutput::error(client_error("read", &shown, &e)),
        };
        let outcome = match hermes_tools::file::apply_patch(&content, &old, &new, all) {
            Ok(o) => o,
            Err(e) => return ToolOutput::error(e),
        };
        let write = WriteTextFileRequest::new(link.session_id.clone(), target, outcome.content);
        match link.request(write).await {
            Ok(_) => ToolOutput::ok(format!(
                "Patched {shown}: {} replacement{} ({} match)",
                outcome.replacements,
                if outcome.replacements == 1 { "" } else { "s" },
                outcome.strategy
            )),
            Err(e) => ToolOutput::error(client_error("write", &shown, &e)),
        }
    }
}

/// `path` through the sandbox's path policy for reading or writing: the real target, or why
/// not (the same refusals as the local file tools give).
fn checked(path: &Path, ctx: &ToolContext, write: bool) -> Result<std::path::PathBuf, String> {
    let policy = ctx.policy();
    if write {
        policy.check_write(path)
    } else {
        policy.check_read(path)
    }
}

/// Asks the client's user about `call`; the chosen option id, or `None` when the question
/// was cancelled (the client's `cancelled` outcome, the turn's interrupt, a failed request).
async fn ask_user(
    shared: &Shared,
    call: ToolCallUpdate,
    options: Vec<PermissionOption>,
    ctx: &ToolContext,
) -> Option<String> {
    let link = &shared.link;
    let request = RequestPermissionRequest::new(link.session_id.clone(), call, options);
    let answer = tokio::select! {
        answer = link.request(request) => answer,
        () = ctx.cancel.cancelled() => return None,
    };
    match answer {
        Ok(r) => match r.outcome {
            RequestPermissionOutcome::Selected(s) => Some(s.option_id.0.to_string()),
            _ => None,
        },
        Err(e) => {
            tracing::info!(error = %e, "acp: a permission request failed");
            None
        }
    }
}

/// The approver of an ACP session's dangerous commands (the REPL's approval question):
/// a permission request about the running command.
pub struct AcpApprover {
    /// The session.
    pub shared: Arc<Shared>,
}

/// Tools whose commands go through the approver.
fn runs_commands(name: &str) -> bool {
    matches!(name, "terminal" | "process" | "execute_code")
}

#[async_trait::async_trait]
impl Approver for AcpApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let allowed = self
            .shared
            .commands_allowed
            .lock()
            .map(|a| a.contains_key(&request.reason))
            .unwrap_or(false);
        if allowed {
            return Approval::Session;
        }
        let call_id = self
            .shared
            .running
            .newest(|_, name| runs_commands(name))
            .await
            .unwrap_or_else(|| format!("approval-{}", next_request_number()));
        let call = ToolCallUpdate::new(
            call_id,
            ToolCallUpdateFields::new()
                .kind(ToolKind::Execute)
                .title(format!("Run `{}` ({})", request.command, request.reason))
                .content(vec![ToolCallContent::from(ContentBlock::Text(
                    TextContent::new(format!(
                        "hermes asks before running this command: {}\n\n{}",
                        request.reason, request.command
                    )),
                ))]),
        );
        let options = vec![
            PermissionOption::new("allow_once", "Allow once", PermissionOptionKind::AllowOnce),
            PermissionOption::new(
                "allow_session",
                "Allow for this session",
                PermissionOptionKind::AllowAlways,
            ),
            PermissionOption::new("deny", "Deny", PermissionOptionKind::RejectOnce),
        ];
        // An interrupted turn drops this future, which withdraws the request
        // (`$/cancel_request`); the client answers `cancelled` to its open questions anyway.
        let link = &self.shared.link;
        let question = RequestPermissionRequest::new(link.session_id.clone(), call, options);
        match link.request(question).await.map(|r| r.outcome) {
            Ok(RequestPermissionOutcome::Selected(s)) => match &*s.option_id.0 {
                "allow_once" => Approval::Once,
                "allow_session" => {
                    if let Ok(mut a) = self.shared.commands_allowed.lock() {
                        a.insert(request.reason.clone(), true);
                    }
                    Approval::Session
                }
                _ => Approval::Deny,
            },
            Ok(_) => Approval::Deny,
            Err(e) => {
                tracing::info!(error = %e, "acp: an approval request failed");
                Approval::Deny
            }
        }
    }
}

/// A number for a permission request that found no running call to name.
fn next_request_number() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed).to_string()
}
