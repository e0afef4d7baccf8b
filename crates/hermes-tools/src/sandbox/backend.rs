//! `terminal.backend`: where commands run (Python Hermes' key and values).

use std::ffi::OsString;
use std::path::Path;

use hermes_protocol::config::TerminalConfig;

/// The execution backend of the terminal tools.
#[derive(Debug, Clone, PartialEq)]
pub enum Backend {
    /// On this machine, inside the OS sandbox (`local`, the default).
    Local,
    /// A value this build cannot run commands with; kept to name it in the refusal.
    Unknown(String),
}

impl Backend {
    /// The backend named by `terminal.backend` (case-insensitive, blank = `local`).
    pub fn from_config(terminal: &TerminalConfig) -> Backend {
        let name = terminal.backend.trim().to_ascii_lowercase();
        match name.as_str() {
            "" | "local" => Backend::Local,
            _ => Backend::Unknown(terminal.backend.clone()),
        }
    }

    /// One line for the user: where commands run.
    pub fn describe(&self) -> String {
        match self {
            Backend::Local => "local (inside the OS sandbox)".into(),
            Backend::Unknown(name) => {
                format!("`{name}` is not a backend this build supports; commands are refused")
            }
        }
    }

    /// The argv that runs `argv` on this backend in `workdir`.
    ///
    /// # Errors
    /// The refusal text for a backend that cannot run commands.
    pub fn wrap(&self, argv: &[OsString], _workdir: &Path) -> Result<Vec<OsString>, String> {
        match self {
            Backend::Local => Ok(argv.to_vec()),
            Backend::Unknown(name) => Err(format!(
                "Refused: terminal.backend `{name}` is not one this build can run commands \
                 with (local, docker, ssh); nothing was run."
            )),
        }
    }
}
