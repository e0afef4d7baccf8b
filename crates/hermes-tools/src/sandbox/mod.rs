//! The OS sandbox of everything the agent executes (issue 18 item 1; ARCHITECTURE §8).
//!
//! One [`SandboxPolicy`] says what may be read and written. Commands of the `terminal` and
//! `process` tools run through the launcher (the hermes binary re-executed with
//! [`LAUNCHER_ARG`], see [`launcher`]), which applies the policy to itself with Landlock and
//! seccomp ([`enforce`]) and then execs `bash`. The file tools check paths against the same
//! policy ([`SandboxPolicy::check_read`], [`SandboxPolicy::check_write`]). User-configured
//! hooks and MCP servers are the user's own programs and do not go through here.
//!
//! Modes (`terminal.sandbox.mode`): `workspace-write` (default) writes only in the
//! workspace (the session's working directory), the temp directory, `/dev/shm` and
//! `writable_paths`; `read-only` writes nowhere; `off` runs commands as before (warned). In
//! every mode the secrets of HERMES_HOME are unreadable and its control files, and the places
//! under `~` that run code later or hold credentials, unwritable ([`policy`] lists them; in
//! `off` only the file tools enforce this).
//!
//! When the kernel cannot enforce the sandbox ([`kernel_support`]), commands are refused or
//! run unsandboxed with a warning, per `terminal.sandbox.unsupported`. `network: false`
//! holds in every mode, `off` and that fallback included (the launcher's seccomp filter). `terminal.backend`
//! `docker` and `ssh` run commands elsewhere ([`backend`]); other values refuse.

pub mod backend;
pub mod confine;
pub mod enforce;
pub mod launcher;
pub mod policy;
pub mod tree;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use hermes_protocol::HermesHome;
use hermes_protocol::config::{SandboxMode, TerminalConfig, UnsupportedPolicy};

pub use backend::Backend;
pub use confine::confined;
pub use enforce::{FORCE_UNSUPPORTED_ENV, KernelSupport, MIN_LANDLOCK_ABI, kernel_support};
pub use launcher::{LAUNCHER_ARG, LAUNCHER_FAILED, LauncherError, launcher_main};
pub use policy::{HERMES_CONTROL_PATHS, PolicyInputs, SandboxPolicy, secret_paths};

/// The sandbox settings of one agent (from `terminal:` in `config.yaml` and the front end),
/// carried in [`crate::ToolContext::sandbox`].
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxSettings {
    /// `terminal.sandbox.mode`.
    pub mode: SandboxMode,
    /// `terminal.sandbox.writable_paths`, `~` expanded.
    pub writable_paths: Vec<PathBuf>,
    /// `terminal.sandbox.network`.
    pub network: bool,
    /// `terminal.sandbox.unix_sockets`.
    pub unix_sockets: bool,
    /// `terminal.sandbox.unsupported`, or the front end's default.
    pub unsupported: UnsupportedPolicy,
    /// The launcher binary (the running hermes executable, as `/proc/self/exe` where there
    /// is one, so that the file on disk being replaced changes nothing); `None` = no
    /// launcher, treated as an unsupported kernel.
    pub launcher: Option<PathBuf>,
    /// More paths nothing the agent runs may write, in every mode (the hermes executable's
    /// path: a replaced binary would run unsandboxed the next time you start hermes).
    pub protected_paths: Vec<PathBuf>,
    /// `terminal.backend`.
    pub backend: Backend,
    /// The user's home (`$HOME`) for the protected locations under `~`.
    pub user_home: Option<PathBuf>,
    /// The temp directory writable in `workspace-write`.
    pub temp_dir: PathBuf,
}

impl Default for SandboxSettings {
    /// `workspace-write`, network on, `unsupported: refuse`, the local backend, `$HOME` and
    /// the process temp directory, and no launcher (so commands are refused until a front
    /// end sets [`SandboxSettings::launcher`]).
    fn default() -> Self {
        SandboxSettings {
            mode: SandboxMode::WorkspaceWrite,
            writable_paths: Vec::new(),
            network: true,
            unix_sockets: false,
            unsupported: UnsupportedPolicy::Refuse,
            launcher: None,
            protected_paths: Vec::new(),
            backend: Backend::Local,
            user_home: std::env::var_os("HOME").map(PathBuf::from),
            temp_dir: std::env::temp_dir(),
        }
    }
}

impl SandboxSettings {
    /// Settings from the `terminal:` section; `default_unsupported` applies when
    /// `terminal.sandbox.unsupported` is not set (`warn` for the REPL, `refuse` for the
    /// gateway, API server and cron); `launcher` is the hermes executable.
    pub fn from_config(
        terminal: &TerminalConfig,
        default_unsupported: UnsupportedPolicy,
        launcher: Option<PathBuf>,
    ) -> SandboxSettings {
        let base = SandboxSettings::default();
        let home = base.user_home.clone();
        SandboxSettings {
            mode: terminal.sandbox.mode,
            writable_paths: terminal
                .sandbox
                .writable_paths
                .iter()
                .map(|p| expand_tilde(p, home.as_deref()))
                .collect(),
            network: terminal.sandbox.network,
            unix_sockets: terminal.sandbox.unix_sockets,
            unsupported: terminal.sandbox.unsupported.unwrap_or(default_unsupported),
            launcher,
            backend: Backend::from_config(terminal),
            ..base
        }
    }

    /// Settings with the sandbox `off` (commands run as before): for tests that are not
    /// about the sandbox, and for `terminal.sandbox: off`.
    pub fn off() -> SandboxSettings {
        SandboxSettings {
            mode: SandboxMode::Off,
            ..SandboxSettings::default()
        }
    }

    /// The resolved policy for a session working in `workspace` with hermes home `home`.
    pub fn policy(&self, workspace: &Path, home: &HermesHome) -> SandboxPolicy {
        SandboxPolicy::new(&PolicyInputs {
            mode: self.mode,
            workspace,
            temp_dir: &self.temp_dir,
            writable_paths: &self.writable_paths,
            hermes_home: home,
            user_home: self.user_home.as_deref(),
            network: self.network,
            unix_sockets: self.unix_sockets,
            protected: &self.protected_paths,
        })
    }

    /// Whether commands of the `local` backend can run sandboxed now: `Ok(None)` yes (or
    /// the mode is `off`), `Ok(Some(warning))` they run unsandboxed under
    /// `unsupported: warn`, `Err(message)` they are refused.
    ///
    /// # Errors
    /// The refusal text for the model.
    pub fn local_readiness(&self) -> Result<Option<String>, String> {
        if self.mode == SandboxMode::Off {
            return Ok(None);
        }
        let reason = match (&self.launcher, kernel_support()) {
            (None, _) => "no sandbox launcher is configured".to_string(),
            (Some(_), KernelSupport::Unsupported { reason }) => reason,
            (Some(_), KernelSupport::Available { .. }) => return Ok(None),
        };
        match self.unsupported {
            UnsupportedPolicy::Refuse => Err(format!(
                "Refused: commands cannot be sandboxed here ({reason}) and \
                 terminal.sandbox.unsupported is `refuse`. Set it to `warn` (runs commands \
                 unsandboxed) or terminal.sandbox.mode to `off` to run them anyway."
            )),
            UnsupportedPolicy::Warn => {
                static WARNED: AtomicBool = AtomicBool::new(false);
                if !WARNED.swap(true, Ordering::Relaxed) {
                    tracing::warn!(%reason, "sandbox unavailable; commands run unsandboxed");
                }
                Ok(Some(format!(
                    "commands run WITHOUT the sandbox: {reason} (terminal.sandbox.unsupported: \
                     warn)"
                )))
            }
        }
    }

    /// The program and arguments that run `argv` (program first) for a session in
    /// `workspace`: through the launcher when sandboxed; when the mode is `off` or
    /// `unsupported: warn` applies, directly, or through the launcher without file rules
    /// when `network` is false (its seccomp filter still blocks sockets); or the docker /
    /// ssh client for those backends (`remote_workdir`: the directory the model asked for,
    /// on the backend's side).
    ///
    /// # Errors
    /// The refusal text for the model (unsupported kernel under `refuse`, unknown backend,
    /// `network: false` without a launcher).
    pub fn wrap(
        &self,
        argv: &[OsString],
        workspace: &Path,
        remote_workdir: Option<&Path>,
        home: &HermesHome,
    ) -> Result<Vec<OsString>, String> {
        let Some((program, args)) = argv.split_first() else {
            return Err("no command given".into());
        };
        match &self.backend {
            Backend::Local => {}
            other => return other.wrap(argv, workspace, remote_workdir),
        }
        let mut policy = self.policy(workspace, home);
        if self.local_readiness()?.is_some() || self.mode == SandboxMode::Off {
            if self.network {
                return Ok(argv.to_vec());
            }
            // Unsandboxed files, but `network: false` still holds: the launcher with the
            // mode `off` applies only its seccomp filter (no Landlock, which may be missing).
            policy.mode = SandboxMode::Off;
            policy.writable.clear();
        }
        let launcher = self.launcher.as_ref().ok_or_else(|| {
            if policy.mode == SandboxMode::Off {
                "Refused: terminal.sandbox.network is false, but no sandbox launcher is \
                 configured to block the network"
                    .to_string()
            } else {
                "no sandbox launcher is configured".to_string()
            }
        })?;
        let mut out = vec![launcher.clone().into_os_string()];
        out.extend(
            launcher::launcher_args(&policy, program, args)
                .map_err(|e| format!("cannot encode the sandbox policy: {e}"))?,
        );
        Ok(out)
    }
}

/// Names removed from every command's environment, so the keys hermes knows are not handed
/// to the programs the agent runs: every variable of `HERMES_HOME/.env` (hermes loaded them
/// at start), and every variable of hermes' own environment that holds a secret
/// ([`hermes_protocol::secrets::is_secret_variable`]: `OPENAI_API_KEY` exported in the shell,
/// `DATABASE_URL=postgres://app:pw@db/app`).
pub fn secret_env_names(home: &HermesHome) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_to_string(home.env_file())
        .map(|t| {
            hermes_protocol::config::parse_env_file(&t)
                .into_keys()
                .collect()
        })
        .unwrap_or_default();
    for (name, value) in std::env::vars_os() {
        if let Some(name) = name.to_str()
            && hermes_protocol::secrets::is_secret_variable(name, value.to_str().unwrap_or(""))
            && !names.iter().any(|n| n == name)
        {
            names.push(name.to_string());
        }
    }
    names
}

fn expand_tilde(p: &Path, home: Option<&Path>) -> PathBuf {
    match (p.strip_prefix("~"), home) {
        (Ok(rest), Some(h)) => h.join(rest),
        _ => p.to_path_buf(),
    }
}
