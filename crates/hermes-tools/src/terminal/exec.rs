//! Running one shell command in its own process group (tokio::process + process-wrap).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, ProcessSession};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinHandle;

use super::output::OutputBuffer;
use crate::sandbox::secret_env_names;
use crate::tool::ToolContext;

/// How long output is still drained after the shell exits. A backgrounded grandchild may hold
/// the pipe open forever (case C28), so EOF is not awaited beyond this.
pub(crate) const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(750);

/// Raw bytes kept in memory for a foreground command, head and tail each.
const KEEP_BYTES: usize = 512 * 1024;

/// How a foreground command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The shell exited with this code (128 + signal when killed by a signal).
    Exited(i32),
    /// The timeout elapsed; the process group was killed.
    TimedOut,
    /// The cancel token fired; the process group was killed.
    Cancelled,
}

/// What a foreground command left: how it ended and its output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// How it ended.
    pub ending: Ending,
    /// Captured stdout and stderr (interleaved as read), ANSI stripped, not yet capped.
    pub output: String,
}

/// One foreground command, ready to run: the whole argument list (the sandbox launcher or
/// the backend's client in front, see [`shell_job`]), where, with which environment
/// changes, and for how long at most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForegroundJob {
    /// Program and arguments.
    pub argv: Vec<OsString>,
    /// Working directory of the process.
    pub workdir: PathBuf,
    /// Variables to set.
    pub env: Vec<(String, String)>,
    /// Variables to remove (the secrets hermes knows; see
    /// [`crate::sandbox::secret_env_names`]).
    pub unset: Vec<String>,
    /// Longest run before the command is killed.
    pub timeout: Duration,
}

/// Runs the `terminal` tool's foreground commands somewhere other than a child process of
/// hermes: an ACP client's terminal (`terminal/create`), so the editor shows the command.
/// The job is already approved and wrapped in the sandbox; the runner must stop it on
/// `timeout` and on `ctx.cancel`.
#[async_trait::async_trait]
pub trait ForegroundRunner: Send + Sync {
    /// Runs `job` to its end.
    ///
    /// # Errors
    /// Text for the model when the command could not be started.
    async fn run(&self, job: ForegroundJob, ctx: &ToolContext) -> Result<Finished, String>;
}

/// The job `bash -c 'set +m; exec 2>&1; <command>'` (not interactive, not a login shell, job
/// control off — case C28; stderr joined to stdout so the two stay in order), pagers
/// disabled, wrapped by [`crate::sandbox::SandboxSettings::wrap`]: inside the launcher's
/// sandbox, or on the configured backend. The variables of `HERMES_HOME/.env` are removed
/// from its environment.
///
/// # Errors
/// The refusal text for the model when the command may not run (see `wrap`).
pub fn shell_job(
    command: &str,
    workdir: &Path,
    timeout: Duration,
    ctx: &ToolContext,
) -> Result<ForegroundJob, String> {
    // On a remote backend the working directory is the backend's; the local client runs in
    // the session's directory.
    let remote = !matches!(ctx.sandbox.backend, crate::sandbox::Backend::Local);
    let (workdir, remote_workdir) = if remote {
        (ctx.cwd.as_path(), (workdir != ctx.cwd).then_some(workdir))
    } else {
        (workdir, None)
    };
    let argv: Vec<OsString> = vec![
        "bash".into(),
        "-c".into(),
        format!("set +m\nexec 2>&1\n{command}").into(),
    ];
    let argv = ctx
        .sandbox
        .wrap(&argv, &ctx.cwd, remote_workdir, &ctx.home)?;
    if argv.is_empty() {
        return Err("no command given".into());
    }
    Ok(ForegroundJob {
        argv,
        workdir: workdir.to_path_buf(),
        env: [
            ("PAGER", "cat"),
            ("GIT_PAGER", "cat"),
            ("GIT_TERMINAL_PROMPT", "0"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        unset: secret_env_names(&ctx.home),
        timeout,
    })
}

/// [`shell_job`] as a child process with stdin closed, stdout/stderr piped, in its own
/// session and process group (no controlling terminal).
///
/// # Errors
/// As [`shell_job`].
pub(crate) fn shell_command(
    command: &str,
    workdir: &Path,
    ctx: &ToolContext,
) -> Result<CommandWrap, String> {
    let job = shell_job(command, workdir, Duration::ZERO, ctx)?;
    let Some((program, args)) = job.argv.split_first() else {
        return Err("no command given".into());
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(&job.workdir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in &job.env {
        cmd.env(k, v);
    }
    for name in &job.unset {
        cmd.env_remove(name);
    }
    let mut wrapped = CommandWrap::from(cmd);
    wrapped.wrap(ProcessSession);
    Ok(wrapped)
}

/// Spawns a task that copies `reader` into `buffer` until EOF or error.
pub(crate) fn pump<R>(reader: Option<R>, buffer: Arc<Mutex<OutputBuffer>>) -> Option<JoinHandle<()>>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let mut reader = reader?;
    Some(tokio::spawn(async move {
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            match reader.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buffer
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(&chunk[..n]),
            }
        }
    }))
}

/// Exit code of a status: the code, or 128 + signal number when killed by a signal.
pub(crate) fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(-1)
}

/// Kills the process group when dropped before [`GroupGuard::disarm`] (future dropped).
struct GroupGuard {
    child: Box<dyn ChildWrapper>,
    armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.child.start_kill();
        }
    }
}

/// Runs `command` in the foreground: waits for the shell to exit, the timeout, or `cancel`
/// (the latter two kill the whole process group). After the shell exits, output is drained
/// for at most [`DRAIN_AFTER_EXIT`]; processes the command backgrounded keep running.
///
/// # Errors
/// The refusal text, or the spawn error (e.g. `bash` missing or `workdir` not a directory).
pub(crate) async fn run_foreground(
    command: &str,
    workdir: &Path,
    timeout: Duration,
    ctx: &ToolContext,
) -> Result<Finished, String> {
    let cancel = &ctx.cancel;
    let mut child = shell_command(command, workdir, ctx)?
        .spawn()
        .map_err(|e| format!("cannot run command: {e}"))?;
    let buffer = Arc::new(Mutex::new(OutputBuffer::new(KEEP_BYTES, KEEP_BYTES)));
    let readers: Vec<JoinHandle<()>> = [
        pump(child.stdout().take(), buffer.clone()),
        pump(child.stderr().take(), buffer.clone()),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut guard = GroupGuard { child, armed: true };
    let ending = tokio::select! {
        status = guard.child.wait() => Ending::Exited(status.map(exit_code).unwrap_or(-1)),
        _ = tokio::time::sleep(timeout) => Ending::TimedOut,
        _ = cancel.cancelled() => Ending::Cancelled,
    };
    if !matches!(ending, Ending::Exited(_)) {
        let _ = guard.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(5), guard.child.wait()).await;
    }
    guard.armed = false;
    let drain = futures_join(readers);
    let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, drain.0).await;
    for handle in drain.1 {
        handle.abort();
    }
    let output = buffer.lock().unwrap_or_else(|e| e.into_inner()).render();
    Ok(Finished { ending, output })
}

/// A future that waits for every reader task, plus abort handles for them.
fn futures_join(
    readers: Vec<JoinHandle<()>>,
) -> (
    impl std::future::Future<Output = ()>,
    Vec<tokio::task::AbortHandle>,
) {
    let aborts = readers.iter().map(JoinHandle::abort_handle).collect();
    let fut = async move {
        for r in readers {
            let _ = r.await;
        }
    };
    (fut, aborts)
}
