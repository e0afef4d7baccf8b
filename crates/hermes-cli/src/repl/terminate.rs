//! Ending a chat or REPL run on SIGTERM or SIGHUP without orphaning MCP servers (FEATURES
//! §11: "child processes never orphaned"). Stdio MCP servers run in their own process groups,
//! so the default action of these signals (the kernel ending hermes on the spot) would leave
//! a server that ignores the end of its stdin running. The handler ends every server's
//! process group ([`hermes_mcp::stdio::terminate_all_children`]) and exits with 128 + the
//! signal number, the status the signal itself would have given. Completed messages are
//! already committed to the store, so nothing acknowledged is lost. SIGKILL cannot be
//! caught: then the servers see their stdin close, which ends every well-behaved server.

use std::time::Duration;

/// How long servers get to exit after SIGTERM before their groups are killed.
pub const CHILD_GRACE: Duration = Duration::from_secs(1);

/// True until the front end handles Ctrl-C itself ([`handling_ctrl_c`]): while a session
/// starts (MCP servers spawning) Ctrl-C ends the process as its default action would, but
/// with the servers' process groups (the user pass of issue 20: Ctrl-C during the REPL's
/// MCP wait left a server running with parent 1).
static STARTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// From now on the caller handles Ctrl-C (the REPL's prompt and turns, a turn of
/// `chat -q`): SIGINT no longer ends the process from here.
pub fn handling_ctrl_c() {
    STARTING.store(false, std::sync::atomic::Ordering::SeqCst);
}

/// Installs the handler (on the running tokio runtime): SIGTERM and SIGHUP always, SIGINT
/// until [`handling_ctrl_c`]. A signal that cannot be hooked keeps its default action.
pub fn exit_cleanly_on_signals() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        for (kind, number) in [(SignalKind::terminate(), 15), (SignalKind::hangup(), 1)] {
            let Ok(mut stream) = signal(kind) else {
                continue;
            };
            tokio::spawn(async move {
                if stream.recv().await.is_some() {
                    tracing::warn!(signal = number, "terminating; stopping MCP servers");
                    end_children_and_exit(128 + number);
                }
            });
        }
        if let Ok(mut stream) = signal(SignalKind::interrupt()) {
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    if STARTING.load(std::sync::atomic::Ordering::SeqCst) {
                        tracing::info!("interrupted while starting; stopping MCP servers");
                        end_children_and_exit(130);
                    }
                }
            });
        }
    }
}

/// Puts the terminal's echo back, ends every MCP stdio server, then the process with
/// `status`.
pub fn end_children_and_exit(status: i32) -> ! {
    crate::repl::typeahead::restore_terminal();
    hermes_mcp::stdio::terminate_all_children(CHILD_GRACE);
    std::process::exit(status)
}
