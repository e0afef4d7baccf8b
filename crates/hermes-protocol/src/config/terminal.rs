//! `terminal:` section of `config.yaml` (FEATURES §4, §13; issue 18 item 1).
//!
//! Key names follow Python Hermes 0.19.0 (`terminal.backend`, `cwd`, `timeout`, the
//! `docker_*`, `container_*` and `ssh_*` keys, with its defaults). `terminal.sandbox` is ours:
//! the OS sandbox every command of the `local` backend runs in. It accepts a bare mode
//! (`sandbox: read-only`) or a table:
//!
//! ```yaml
//! terminal:
//!   sandbox:
//!     mode: workspace-write      # workspace-write (default) | read-only | off
//!     writable_paths: [~/.cache] # more trees commands may write (workspace-write only)
//!     network: true              # false: no network sockets for commands
//!     unsupported: refuse        # refuse | warn, when the kernel has no usable Landlock
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::DEFAULT_TERMINAL_TIMEOUT_S;

/// Python Hermes' default `terminal.docker_image`.
pub const DEFAULT_DOCKER_IMAGE: &str = "nikolaik/python-nodejs:python3.11-nodejs20";

/// `terminal:` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TerminalConfig {
    /// Working directory for tools (default: the process's cwd).
    pub cwd: Option<PathBuf>,
    /// Default command timeout in seconds (default 180).
    pub timeout: u64,
    /// Where commands run: `local` (default; inside the OS sandbox), `docker` or `ssh`. Kept
    /// as written: any other value makes the terminal tools refuse, naming it.
    pub backend: String,
    /// The OS sandbox of the `local` backend.
    pub sandbox: SandboxConfig,
    /// Image of the `docker` backend (Python's default [`DEFAULT_DOCKER_IMAGE`]).
    pub docker_image: String,
    /// Names of host environment variables copied into the container.
    pub docker_forward_env: Vec<String>,
    /// Variables set in the container (`KEY: value`).
    pub docker_env: BTreeMap<String, String>,
    /// `host_path:container_path[:opts]` bind mounts (`docker run -v` syntax).
    pub docker_volumes: Vec<String>,
    /// Mount the working directory at `/workspace` (default false).
    pub docker_mount_cwd_to_workspace: bool,
    /// Network in the container (default true; false runs it with `--network=none`).
    pub docker_network: bool,
    /// Extra `docker run` arguments, verbatim.
    pub docker_extra_args: Vec<String>,
    /// Run as the host user's `uid:gid` (default false).
    pub docker_run_as_host_user: bool,
    /// CPUs of the container (default 1).
    pub container_cpu: f64,
    /// Memory of the container in MB (default 5120).
    pub container_memory: u64,
    /// Disk of the container in MB (default 51200; passed only where docker supports it).
    pub container_disk: u64,
    /// Keep one container for the session (default true) instead of one per command.
    pub container_persistent: bool,
    /// Seconds an idle persistent container lives (Python's `lifetime_seconds`, default 300).
    pub lifetime_seconds: u64,
    /// Host of the `ssh` backend.
    pub ssh_host: Option<String>,
    /// User of the `ssh` backend.
    pub ssh_user: Option<String>,
    /// Port of the `ssh` backend (default 22).
    pub ssh_port: Option<u16>,
    /// Private key file of the `ssh` backend.
    pub ssh_key: Option<PathBuf>,
}

impl Default for TerminalConfig {
    fn default() -> Self {
        TerminalConfig {
            cwd: None,
            timeout: DEFAULT_TERMINAL_TIMEOUT_S,
            backend: "local".into(),
            sandbox: SandboxConfig::default(),
            docker_image: DEFAULT_DOCKER_IMAGE.into(),
            docker_forward_env: Vec::new(),
            docker_env: BTreeMap::new(),
            docker_volumes: Vec::new(),
            docker_mount_cwd_to_workspace: false,
            docker_network: true,
            docker_extra_args: Vec::new(),
            docker_run_as_host_user: false,
            container_cpu: 1.0,
            container_memory: 5120,
            container_disk: 51200,
            container_persistent: true,
            lifetime_seconds: 300,
            ssh_host: None,
            ssh_user: None,
            ssh_port: None,
            ssh_key: None,
        }
    }
}

/// What commands may write (`terminal.sandbox.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Writes only in the workspace, the temp directory and `writable_paths` (default).
    #[default]
    WorkspaceWrite,
    /// No writes at all.
    ReadOnly,
    /// No OS sandbox (as before issue 18); only when the user sets it, and warned about.
    Off,
}

impl SandboxMode {
    /// The name as written in `config.yaml`.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::Off => "off",
        }
    }
}

/// What to do when the kernel cannot enforce the sandbox (`terminal.sandbox.unsupported`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnsupportedPolicy {
    /// Refuse to run commands (the default of the gateway, the API server and cron).
    Refuse,
    /// Run them without the sandbox, warning once (the default of the REPL).
    Warn,
}

/// `terminal.sandbox`: a bare [`SandboxMode`] or a table (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SandboxConfig {
    /// `mode` (default `workspace-write`).
    pub mode: SandboxMode,
    /// `writable_paths`: more trees writable in `workspace-write` (`~` expands to `$HOME`).
    pub writable_paths: Vec<PathBuf>,
    /// `network` (default true): false blocks network sockets for commands.
    pub network: bool,
    /// `unix_sockets` (default false): whether sandboxed commands may open Unix-domain
    /// sockets to connect to by path (ssh-agent, tmux, D-Bus, X11, the docker daemon…).
    /// Such a socket is a door out of the sandbox — a tmux or D-Bus socket runs commands
    /// unsandboxed — and Landlock does not cover it, so it is off unless the user opts in.
    /// Socket pairs (`socketpair(2)`, pipes between processes) work either way.
    pub unix_sockets: bool,
    /// `unsupported`; `None` takes the front end's default ([`UnsupportedPolicy`]).
    pub unsupported: Option<UnsupportedPolicy>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            mode: SandboxMode::WorkspaceWrite,
            writable_paths: Vec::new(),
            network: true,
            unix_sockets: false,
            unsupported: None,
        }
    }
}

/// The table form of [`SandboxConfig`].
#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct SandboxTable {
    mode: SandboxMode,
    writable_paths: Vec<PathBuf>,
    network: bool,
    unix_sockets: bool,
    unsupported: Option<UnsupportedPolicy>,
}

impl Default for SandboxTable {
    fn default() -> Self {
        let d = SandboxConfig::default();
        SandboxTable {
            mode: d.mode,
            writable_paths: d.writable_paths,
            network: d.network,
            unix_sockets: d.unix_sockets,
            unsupported: d.unsupported,
        }
    }
}

impl<'de> Deserialize<'de> for SandboxConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SandboxVisitor;
        impl<'de> Visitor<'de> for SandboxVisitor {
            type Value = SandboxConfig;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a sandbox mode (`workspace-write`, `read-only`, `off`) or a table with \
                     `mode`, `writable_paths`, `network`, `unix_sockets`, `unsupported`",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SandboxConfig, E> {
                let mode = SandboxMode::deserialize(de::value::StrDeserializer::<E>::new(v))?;
                Ok(SandboxConfig {
                    mode,
                    ..SandboxConfig::default()
                })
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<SandboxConfig, E> {
                // `sandbox: off` is `false` to YAML 1.1 readers; accept both spellings.
                Ok(SandboxConfig {
                    mode: if v {
                        SandboxMode::WorkspaceWrite
                    } else {
                        SandboxMode::Off
                    },
                    ..SandboxConfig::default()
                })
            }
            fn visit_unit<E: de::Error>(self) -> Result<SandboxConfig, E> {
                Ok(SandboxConfig::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<SandboxConfig, A::Error> {
                let t = SandboxTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(SandboxConfig {
                    mode: t.mode,
                    writable_paths: t.writable_paths,
                    network: t.network,
                    unix_sockets: t.unix_sockets,
                    unsupported: t.unsupported,
                })
            }
        }
        deserializer.deserialize_any(SandboxVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use std::path::Path;

    #[test]
    fn sandbox_accepts_a_bare_mode_and_a_table() {
        let c = Config::parse("terminal:\n  sandbox: read-only\n", Path::new("c.yaml")).unwrap();
        assert_eq!(c.config.terminal.sandbox.mode, SandboxMode::ReadOnly);
        assert!(c.config.terminal.sandbox.network);
        let c = Config::parse(
            "terminal:\n  sandbox:\n    mode: off\n    network: false\n    writable_paths: [/srv/x]\n    unsupported: warn\n",
            Path::new("c.yaml"),
        )
        .unwrap();
        let s = &c.config.terminal.sandbox;
        assert_eq!(s.mode, SandboxMode::Off);
        assert!(!s.network);
        assert_eq!(s.writable_paths, vec![PathBuf::from("/srv/x")]);
        assert_eq!(s.unsupported, Some(UnsupportedPolicy::Warn));
        let c = Config::parse("terminal:\n  timeout: 5\n", Path::new("c.yaml")).unwrap();
        assert_eq!(c.config.terminal.sandbox, SandboxConfig::default());
        assert_eq!(c.config.terminal.backend, "local");
    }

    #[test]
    fn bad_sandbox_values_are_errors_with_a_line() {
        let e = Config::parse("terminal:\n  sandbox: wide-open\n", Path::new("c.yaml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("wide-open") && e.contains("line 2"), "{e}");
        let e = Config::parse(
            "terminal:\n  sandbox:\n    mode: read-only\n    netwrk: false\n",
            Path::new("c.yaml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("netwrk"), "{e}");
    }

    #[test]
    fn python_terminal_keys_are_read() {
        let c = Config::parse(
            "terminal:\n  backend: docker\n  docker_image: alpine:3\n  docker_volumes: ['/a:/b']\n  container_persistent: false\n  ssh_host: h\n  ssh_port: 2222\n",
            Path::new("c.yaml"),
        )
        .unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let t = &c.config.terminal;
        assert_eq!(t.backend, "docker");
        assert_eq!(t.docker_image, "alpine:3");
        assert_eq!(t.docker_volumes, vec!["/a:/b".to_string()]);
        assert!(!t.container_persistent);
        assert_eq!(t.ssh_port, Some(2222));
    }
}
