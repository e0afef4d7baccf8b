//! The file tools' I/O under the commands' Landlock rules (issue 18 item 1: one policy,
//! enforced by the same code).
//!
//! `read_file`, `write_file`, `patch` and `search_files` run in hermes' own process. Their
//! path checks ([`SandboxPolicy::check_read`], [`SandboxPolicy::check_write`]) resolve
//! symlinks first, but a check and the `open` that follows are two steps: a command the
//! agent left running in the background can swap a checked directory for a symlink to
//! `~/.ssh` or `HERMES_HOME` in between (it won 8 times out of 60 in a test). [`confined`]
//! therefore runs each call on a fresh thread that first restricts itself with the same
//! Landlock rules the launcher applies to commands — Landlock restricts the calling thread
//! only — so the kernel refuses what the check would have refused, whatever changed on disk
//! in between. The thread ends with the call (its restrictions cannot be lifted).
//!
//! Not confined (the path checks alone apply): the mode `off`, and a kernel without Landlock
//! (`terminal.sandbox.unsupported` governs commands only).

use hermes_protocol::config::SandboxMode;

use super::enforce::{KernelSupport, kernel_support, restrict_current_thread};
use super::policy::SandboxPolicy;

/// Whether [`confined`] restricts its thread for `policy` on this kernel.
pub fn confines(policy: &SandboxPolicy) -> bool {
    policy.mode != SandboxMode::Off && matches!(kernel_support(), KernelSupport::Available { .. })
}

/// Runs `job(&policy)` on a new thread restricted by `policy` (see the module text) and
/// returns its answer.
///
/// # Errors
/// The job's error text, or why the thread could not be started or restricted (the job is
/// then not run).
pub async fn confined<T, F>(policy: SandboxPolicy, job: F) -> Result<T, String>
where
    T: Send + 'static,
    F: FnOnce(&SandboxPolicy) -> Result<T, String> + Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("hermes-file-tool".into())
        .spawn(move || {
            let out = if confines(&policy) {
                match restrict_current_thread(&policy) {
                    Ok(()) => job(&policy),
                    Err(e) => Err(format!(
                        "cannot apply the sandbox to this file operation, it was not done: {e}"
                    )),
                }
            } else {
                job(&policy)
            };
            let _ = tx.send(out);
        })
        .map_err(|e| format!("cannot start the file operation: {e}"))?;
    rx.await
        .map_err(|_| "the file operation ended without an answer".to_string())?
}
