//! The `terminal` tool's foreground commands in the editor's terminal (ACP `terminal/*`),
//! when the client offers it: the editor shows the command and its output live inside the
//! tool call. The command is the one hermes would run itself — approved by the same rules
//! and wrapped in the same OS sandbox (`hermes __sandbox-exec …`), so running it in the
//! editor's process changes where it shows, not what it may do. The variables hermes treats
//! as secrets are set empty, since the editor's own environment may hold them. A client
//! that stops answering cannot hold the turn: after the command ends, times out or is
//! interrupted, each request about its terminal waits at most [`CLIENT_WAIT`].

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, EnvVariable, KillTerminalRequest, ReleaseTerminalRequest, SessionUpdate,
    Terminal, TerminalId, TerminalOutputRequest, ToolCallContent, ToolCallUpdate,
    ToolCallUpdateFields, WaitForTerminalExitRequest,
};
use hermes_tools::ToolContext;
use hermes_tools::terminal::{Ending, Finished, ForegroundJob, ForegroundRunner};

use super::session::{ClientLink, Shared};

/// How the sandbox settings name the hermes binary as the launcher.
const SELF_EXE: &str = "/proc/self/exe";

/// Output the client keeps of one command, in bytes (the tool caps it further).
const OUTPUT_BYTE_LIMIT: u64 = 1024 * 1024;

/// How long hermes waits for the client to kill, report on or release a terminal (and, after
/// an interrupt, to start one): a client that never answers must not hold the turn.
const CLIENT_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// `request` to the client, its answer or `None` when it failed or took over [`CLIENT_WAIT`].
async fn bounded<R: agent_client_protocol::JsonRpcRequest>(
    link: &ClientLink,
    request: R,
) -> Option<R::Response> {
    match tokio::time::timeout(CLIENT_WAIT, link.request(request)).await {
        Ok(Ok(answer)) => Some(answer),
        Ok(Err(e)) => {
            tracing::info!(error = %e.message, "acp: a terminal request failed");
            None
        }
        Err(_) => {
            tracing::warn!("acp: the client did not answer a terminal request in time");
            None
        }
    }
}

/// Kills and releases terminal `id` (each step bounded by [`CLIENT_WAIT`]).
async fn kill_and_release(link: &ClientLink, id: TerminalId) {
    let sid = link.session_id.clone();
    let _ = bounded(link, KillTerminalRequest::new(sid.clone(), id.clone())).await;
    let _ = bounded(link, ReleaseTerminalRequest::new(sid, id)).await;
}

/// Runs foreground commands through the client of one session.
pub struct ClientTerminal {
    /// The session.
    pub shared: Arc<Shared>,
}

/// Kills and releases the client's terminal when the call's future is dropped (an interrupt
/// drops it) before it was released.
struct Release {
    link: ClientLink,
    id: TerminalId,
    armed: bool,
}

impl Drop for Release {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let link = self.link.clone();
        let id = self.id.clone();
        tokio::spawn(async move { kill_and_release(&link, id).await });
    }
}

/// The exit code of a status the client reported: the code, or 128 + the signal's number
/// (as a shell reports it).
fn exit_code(code: Option<u32>, signal: Option<&str>) -> i32 {
    if let Some(c) = code {
        return i32::try_from(c).unwrap_or(-1);
    }
    let number = match signal.map(|s| s.trim_start_matches("SIG")) {
        Some("HUP") => 1,
        Some("INT") => 2,
        Some("QUIT") => 3,
        Some("KILL") => 9,
        Some("PIPE") => 13,
        Some("TERM") => 15,
        _ => return -1,
    };
    128 + number
}

#[async_trait::async_trait]
impl ForegroundRunner for ClientTerminal {
    async fn run(&self, job: ForegroundJob, ctx: &ToolContext) -> Result<Finished, String> {
        let link = &self.shared.link;
        let sid = link.session_id.clone();
        let mut argv = job.argv.iter().map(|a| {
            a.to_str()
                .map(str::to_string)
                .ok_or_else(|| "the command line is not UTF-8 text".to_string())
        });
        let mut program = argv.next().ok_or("no command given")??;
        // The sandbox launcher names this binary as `/proc/self/exe`, which in the editor's
        // process would be the editor: name the file itself.
        if program == SELF_EXE {
            program = std::env::current_exe()
                .map_err(|e| format!("cannot find the hermes binary: {e}"))?
                .to_str()
                .ok_or("the hermes binary's path is not UTF-8")?
                .to_string();
        }
        let args = argv.collect::<Result<Vec<_>, _>>()?;
        let env = job
            .env
            .iter()
            .map(|(k, v)| EnvVariable::new(k.clone(), v.clone()))
            .chain(job.unset.iter().map(|k| EnvVariable::new(k.clone(), "")))
            .collect();
        let create = CreateTerminalRequest::new(sid.clone(), program)
            .args(args)
            .env(env)
            .cwd(job.workdir.clone())
            .output_byte_limit(OUTPUT_BYTE_LIMIT);
        let starting = link.clone();
        let mut create = Box::pin(async move { starting.request(create).await });
        let created = tokio::select! {
            created = &mut create => created,
            () = ctx.cancel.cancelled() => {
                // A terminal the client starts after all is killed and released.
                let link = link.clone();
                tokio::spawn(async move {
                    if let Ok(Ok(answer)) = tokio::time::timeout(CLIENT_WAIT, create).await {
                        kill_and_release(&link, answer.terminal_id).await;
                    }
                });
                return Ok(Finished {
                    ending: Ending::Cancelled,
                    output: String::new(),
                });
            }
        };
        let id = created
            .map_err(|e| format!("the editor could not start the command: {}", e.message))?
            .terminal_id;
        let mut release = Release {
            link: link.clone(),
            id: id.clone(),
            armed: true,
        };
        self.shared
            .running
            .newest(|call, _| call == ctx.call_id)
            .await;
        self.shared.outcomes.terminal(&ctx.call_id, id.clone());
        link.notify(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            ctx.call_id.clone(),
            ToolCallUpdateFields::new()
                .content(vec![ToolCallContent::Terminal(Terminal::new(id.clone()))]),
        )));
        let wait = link.request(WaitForTerminalExitRequest::new(sid.clone(), id.clone()));
        let ending = tokio::select! {
            exit = wait => match exit {
                Ok(status) => Ending::Exited(exit_code(
                    status.exit_status.exit_code,
                    status.exit_status.signal.as_deref(),
                )),
                Err(e) => return Err(format!("the editor lost the command: {}", e.message)),
            },
            () = tokio::time::sleep(job.timeout) => Ending::TimedOut,
            () = ctx.cancel.cancelled() => Ending::Cancelled,
        };
        // A client that does not answer the kill will not answer for the output either.
        let answering = matches!(ending, Ending::Exited(_))
            || bounded(link, KillTerminalRequest::new(sid.clone(), id.clone()))
                .await
                .is_some();
        let output = if answering {
            bounded(link, TerminalOutputRequest::new(sid.clone(), id.clone())).await
        } else {
            None
        };
        let output = output
            .map(|o| {
                let text = strip_ansi_escapes::strip_str(&o.output);
                if o.truncated {
                    format!("[earlier output dropped by the editor]\n{text}")
                } else {
                    text
                }
            })
            .unwrap_or_default();
        release.armed = false;
        let releasing = link.clone();
        tokio::spawn(async move {
            bounded(&releasing, ReleaseTerminalRequest::new(sid, id)).await;
        });
        Ok(Finished { ending, output })
    }
}

#[cfg(test)]
mod tests {
    use super::exit_code;

    #[test]
    fn signals_are_reported_as_a_shell_does() {
        assert_eq!(exit_code(Some(3), None), 3);
        assert_eq!(exit_code(None, Some("SIGKILL")), 137);
        assert_eq!(exit_code(None, Some("TERM")), 143);
        assert_eq!(exit_code(None, None), -1);
    }
}
