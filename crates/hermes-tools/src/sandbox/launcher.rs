//! The launcher: the hermes binary re-executed as
//! `hermes __sandbox-exec --policy <json> -- <program> [args…]`. It restricts itself
//! ([`super::enforce::restrict_current_process`]) and then execs the program, so the
//! restrictions are in place before the first instruction of the command and no pre-exec
//! hook runs in a forked copy of the multi-threaded parent (the approach of codex's
//! `linux-sandbox`).
//!
//! The binary's `main` calls [`launcher_main`] first thing when its first argument is
//! [`LAUNCHER_ARG`], before any other initialization.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::Path;

use super::enforce::{EnforceError, restrict_current_process};
use super::policy::SandboxPolicy;

/// The hidden first argument that turns the binary into the launcher.
pub const LAUNCHER_ARG: &str = "__sandbox-exec";

/// Exit status of the launcher when it could not restrict itself or exec the program (the
/// shell's "found but could not run" status).
pub const LAUNCHER_FAILED: i32 = 126;

/// Why [`launcher_main`] returned (it returns only on failure).
#[derive(Debug, thiserror::Error)]
pub enum LauncherError {
    /// The arguments were not `--policy <json> -- <program> [args…]`.
    #[error("usage: {LAUNCHER_ARG} --policy <json> -- <program> [args...]: {0}")]
    Usage(String),
    /// The policy JSON did not parse.
    #[error("bad sandbox policy: {0}")]
    Policy(#[from] serde_json::Error),
    /// The restrictions could not be applied; the program was not run.
    #[error("cannot enforce the sandbox, the command was not run: {0}")]
    Enforce(#[from] EnforceError),
    /// `execvp` failed.
    #[error("cannot run {program}: {source}")]
    Exec {
        /// The program.
        program: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Builds the launcher's argument list (after the binary itself) for `policy` and `program`.
///
/// # Errors
/// The JSON error (not expected for a policy built by [`SandboxPolicy::new`]).
pub fn launcher_args(
    policy: &SandboxPolicy,
    program: &OsStr,
    args: &[OsString],
) -> Result<Vec<OsString>, serde_json::Error> {
    let mut out: Vec<OsString> = vec![
        LAUNCHER_ARG.into(),
        "--policy".into(),
        serde_json::to_string(policy)?.into(),
        "--".into(),
        program.to_os_string(),
    ];
    out.extend(args.iter().cloned());
    Ok(out)
}

/// Runs the launcher with `args`, the arguments after [`LAUNCHER_ARG`]. On success it does
/// not return (the process becomes the program); the caller prints the error and exits
/// with [`LAUNCHER_FAILED`].
pub fn launcher_main(args: &[OsString]) -> LauncherError {
    match run(args) {
        Ok(never) => match never {},
        Err(e) => e,
    }
}

fn run(args: &[OsString]) -> Result<std::convert::Infallible, LauncherError> {
    let mut it = args.iter();
    if it.next().map(OsString::as_os_str) != Some(OsStr::new("--policy")) {
        return Err(LauncherError::Usage("expected --policy".into()));
    }
    let json = it
        .next()
        .and_then(|j| j.to_str())
        .ok_or_else(|| LauncherError::Usage("--policy needs a UTF-8 JSON value".into()))?;
    let policy: SandboxPolicy = serde_json::from_str(json)?;
    if it.next().map(OsString::as_os_str) != Some(OsStr::new("--")) {
        return Err(LauncherError::Usage(
            "expected -- before the program".into(),
        ));
    }
    let program = it
        .next()
        .ok_or_else(|| LauncherError::Usage("no program given".into()))?;
    let rest: Vec<&OsString> = it.collect();
    restrict_current_process(&policy)?;
    let error = std::process::Command::new(program).args(rest).exec();
    Err(LauncherError::Exec {
        program: Path::new(program).display().to_string(),
        source: error,
    })
}
