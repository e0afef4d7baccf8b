//! Wiring of the OS sandbox (issue 18 item 1; `hermes_tools::sandbox`): the hidden launcher
//! subcommand, the settings every front end hands its agents, and the start-up / `doctor`
//! warnings.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hermes_protocol::config::{SandboxMode, UnsupportedPolicy};
use hermes_tools::SandboxSettings;
use hermes_tools::sandbox::{Backend, KernelSupport, LAUNCHER_ARG, LAUNCHER_FAILED};

use crate::assembly::app::App;

/// When the first argument is the launcher's, restricts this process and execs the command
/// (never returns on success); returns `None` otherwise. Called first thing in `main`.
pub fn launcher_if_requested() -> Option<std::process::ExitCode> {
    let mut args = std::env::args_os();
    let _binary = args.next();
    if args.next().as_deref() != Some(std::ffi::OsStr::new(LAUNCHER_ARG)) {
        return None;
    }
    let rest: Vec<OsString> = args.collect();
    let error = hermes_tools::sandbox::launcher_main(&rest);
    errln!("hermes sandbox: {error}");
    Some(std::process::ExitCode::from(LAUNCHER_FAILED as u8))
}

/// The sandbox settings of `app`'s agents. `default_unsupported` is the front end's answer
/// when `terminal.sandbox.unsupported` is not set: `Warn` where a user watches a terminal,
/// `Refuse` for the gateway, the API server and cron.
pub fn settings(app: &App, default_unsupported: UnsupportedPolicy) -> Arc<SandboxSettings> {
    let exe = match std::env::current_exe() {
        Ok(p) => Some(p),
        Err(e) => {
            tracing::warn!(error = %e, "cannot find the hermes executable for the sandbox launcher");
            None
        }
    };
    let mut settings =
        SandboxSettings::from_config(&app.config.terminal, default_unsupported, launcher(&exe));
    // The binary on disk runs unsandboxed the next time hermes starts: nothing the agent
    // runs may replace it (its folder's entries included, see the sandbox's tree rules).
    settings.protected_paths = exe.into_iter().collect();
    Arc::new(settings)
}

/// The program that re-executes this binary as the launcher: `/proc/self/exe` where the
/// kernel has it — the running executable itself, even when the file at its path has been
/// replaced or deleted since (a path would run whatever is there now, unsandboxed) — else
/// the executable's path.
fn launcher(exe: &Option<PathBuf>) -> Option<PathBuf> {
    let own = Path::new("/proc/self/exe");
    if own.exists() {
        return Some(own.to_path_buf());
    }
    exe.clone()
}

/// What to tell the user at start (and in `doctor`) about the sandbox: `(is_warning, text)`.
pub fn status(settings: &SandboxSettings) -> (bool, String) {
    match &settings.backend {
        Backend::Local => {}
        other => {
            return (
                matches!(other, Backend::Unknown(_)),
                format!("terminal.backend: {}", other.describe()),
            );
        }
    }
    if settings.mode == SandboxMode::Off {
        return (
            true,
            "terminal.sandbox is off: commands the agent runs can read and write anything you \
             can"
            .into(),
        );
    }
    let network = if settings.network {
        "network allowed"
    } else {
        "network blocked"
    };
    match hermes_tools::sandbox::kernel_support() {
        KernelSupport::Available { abi } => (
            false,
            format!(
                "sandbox: {} (Landlock ABI {abi}+, {network})",
                settings.mode.as_str()
            ),
        ),
        KernelSupport::Unsupported { reason } => (
            true,
            match settings.unsupported {
                UnsupportedPolicy::Refuse => format!(
                    "sandbox unavailable ({reason}): commands will be refused \
                     (terminal.sandbox.unsupported: refuse)"
                ),
                UnsupportedPolicy::Warn => format!(
                    "sandbox unavailable ({reason}): commands run UNSANDBOXED \
                     (terminal.sandbox.unsupported: warn)"
                ),
            },
        ),
    }
}

/// Prints the start-up warning once, when there is one (REPL, one-shot, gateway), and the
/// warning about a workspace that holds your home folder ([`workspace_warning`]) when one of
/// `tools` can write there (a session offered no such tool, e.g. the small local model's
/// default, has nothing to warn about).
pub fn warn_at_start(
    settings: &SandboxSettings,
    workspace: &Path,
    tools: &[std::sync::Arc<dyn hermes_tools::Tool>],
) {
    let (warning, text) = status(settings);
    if warning {
        errln!("warning: {text}");
    } else {
        tracing::info!("{text}");
    }
    let writes = tools.iter().any(|t| {
        matches!(
            t.spec().name.as_str(),
            "terminal" | "process" | "write_file" | "patch" | "execute_code"
        )
    });
    if writes && let Some(text) = workspace_warning(settings, workspace) {
        errln!("warning: {text}");
    }
}

/// A warning when commands may write in `workspace` and it is your home folder or holds it
/// (the gateway under systemd starts in `~`): everything there but the protected files is
/// then writable, including configuration other programs run code from.
pub fn workspace_warning(settings: &SandboxSettings, workspace: &Path) -> Option<String> {
    if settings.mode != SandboxMode::WorkspaceWrite || settings.backend != Backend::Local {
        return None;
    }
    let home = settings.user_home.as_deref()?;
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (ws, home) = (canonical(workspace), canonical(home));
    home.starts_with(&ws).then(|| {
        format!(
            "the workspace {} holds your home folder: commands may write everything in it but \
             the protected files (editor and tool settings included); start hermes in a \
             project folder or set terminal.cwd",
            ws.display()
        )
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_home_workspace_warning_reads_as_one_sentence() {
        let home = tempfile::tempdir().unwrap();
        let settings = SandboxSettings {
            user_home: Some(home.path().to_path_buf()),
            ..SandboxSettings::default()
        };
        let text = workspace_warning(&settings, home.path()).unwrap();
        assert!(!text.contains("  "), "{text}");
        assert!(
            text.contains("but the protected files") && text.contains("in a project folder"),
            "{text}"
        );
        let elsewhere = tempfile::tempdir().unwrap();
        assert_eq!(workspace_warning(&settings, elsewhere.path()), None);
    }
}
