//! `terminal.backend`: where commands run (Python Hermes 0.19.0's key, values and settings).
//!
//! - `local`: on this machine, inside the OS sandbox (the rest of [`super`]).
//! - `docker`: in a container through the docker CLI. With `container_persistent` (the
//!   default) one container per hermes process is started on first use
//!   (`docker run -d --rm --init --name hermes-… image sh -c <idle loop>`) and every command is
//!   a `docker exec`; the container removes itself after `lifetime_seconds` without a command
//!   (each exec touches a stamp file the loop watches). Without it, each command is a
//!   `docker run --rm`. Security, resource, mount, env and network arguments follow Python's
//!   `tools/environments/docker.py`: `--cap-drop ALL` plus the few caps it adds back,
//!   `no-new-privileges`, tmpfs `/tmp` `/var/tmp` `/run`, `--pids-limit 256`, `--cpus`,
//!   `--memory`, `docker_volumes`, `docker_env` / `docker_forward_env`, `--network=none`
//!   when `docker_network` is false, `--user uid:gid` with `docker_run_as_host_user`, the
//!   working directory at `/workspace` with `docker_mount_cwd_to_workspace`, and
//!   `docker_extra_args` verbatim.
//! - `ssh`: on a host through the ssh client, with Python's options (a ControlMaster socket
//!   under the temp directory, `BatchMode=yes`, `StrictHostKeyChecking=accept-new`,
//!   `ConnectTimeout=10`, `-p`, `-i`), running `bash -c <quoted command>`.
//!
//! Any other value refuses to run commands, naming it — never silently on the host.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use hermes_protocol::config::TerminalConfig;

/// Settings of the `docker` backend (the `terminal.docker_*` / `container_*` keys).
#[derive(Debug, Clone, PartialEq)]
pub struct DockerBackend {
    /// The docker client (`docker` on PATH by default).
    pub program: PathBuf,
    /// `docker_image`.
    pub image: String,
    /// `docker_volumes` (`-v` values).
    pub volumes: Vec<String>,
    /// `docker_env`.
    pub env: BTreeMap<String, String>,
    /// `docker_forward_env` (passed as `-e NAME`: docker copies the value).
    pub forward_env: Vec<String>,
    /// `docker_network`.
    pub network: bool,
    /// `docker_extra_args`.
    pub extra_args: Vec<String>,
    /// `docker_run_as_host_user`: `--user uid:gid` of this process.
    pub run_as: Option<String>,
    /// `container_cpu`.
    pub cpus: f64,
    /// `container_memory` in MB.
    pub memory_mb: u64,
    /// `container_persistent`.
    pub persistent: bool,
    /// `lifetime_seconds`: idle time after which the persistent container ends.
    pub lifetime_s: u64,
    /// `docker_mount_cwd_to_workspace`.
    pub mount_cwd: bool,
    /// Name of this process's persistent container.
    pub container: String,
}

/// Settings of the `ssh` backend (the `terminal.ssh_*` keys).
#[derive(Debug, Clone, PartialEq)]
pub struct SshBackend {
    /// The ssh client (`ssh` on PATH by default).
    pub program: PathBuf,
    /// `ssh_host` (required).
    pub host: Option<String>,
    /// `ssh_user`.
    pub user: Option<String>,
    /// `ssh_port` (22 when unset).
    pub port: u16,
    /// `ssh_key`.
    pub key: Option<PathBuf>,
    /// Folder of the ControlMaster socket.
    pub control_dir: PathBuf,
}

/// The execution backend of the terminal tools.
#[derive(Debug, Clone, PartialEq)]
pub enum Backend {
    /// On this machine, inside the OS sandbox (`local`, the default).
    Local,
    /// In a container (`docker`).
    Docker(Box<DockerBackend>),
    /// On another host (`ssh`).
    Ssh(SshBackend),
    /// A value this build cannot run commands with; kept to name it in the refusal.
    Unknown(String),
}

/// Python's security arguments of every container (`_BASE_SECURITY_ARGS`, `/run` tmpfs).
const SECURITY_ARGS: &[&str] = &[
    "--cap-drop",
    "ALL",
    "--cap-add",
    "DAC_OVERRIDE",
    "--cap-add",
    "CHOWN",
    "--cap-add",
    "FOWNER",
    "--security-opt",
    "no-new-privileges",
    "--tmpfs",
    "/tmp:rw,nosuid,size=512m",
    "--tmpfs",
    "/var/tmp:rw,noexec,nosuid,size=256m",
    "--tmpfs",
    "/run:rw,noexec,nosuid,size=64m",
    "--pids-limit",
    "256",
];

/// The stamp file every `docker exec` touches; the idle loop ends the container when it is
/// older than `lifetime_seconds`.
const STAMP: &str = "/tmp/.hermes-last-exec";

impl Backend {
    /// The backend named by `terminal.backend` (case-insensitive, blank = `local`).
    pub fn from_config(terminal: &TerminalConfig) -> Backend {
        let name = terminal.backend.trim().to_ascii_lowercase();
        match name.as_str() {
            "" | "local" => Backend::Local,
            "docker" => Backend::Docker(Box::new(DockerBackend {
                program: "docker".into(),
                image: terminal.docker_image.clone(),
                volumes: terminal.docker_volumes.clone(),
                env: terminal.docker_env.clone(),
                forward_env: terminal.docker_forward_env.clone(),
                network: terminal.docker_network,
                extra_args: terminal.docker_extra_args.clone(),
                run_as: terminal.docker_run_as_host_user.then(host_user).flatten(),
                cpus: terminal.container_cpu,
                memory_mb: terminal.container_memory,
                persistent: terminal.container_persistent,
                lifetime_s: terminal.lifetime_seconds.max(1),
                mount_cwd: terminal.docker_mount_cwd_to_workspace,
                container: format!("hermes-{}-{:08x}", std::process::id(), rand_u32()),
            })),
            "ssh" => Backend::Ssh(SshBackend {
                program: "ssh".into(),
                host: terminal.ssh_host.clone().filter(|h| !h.trim().is_empty()),
                user: terminal.ssh_user.clone(),
                port: terminal.ssh_port.unwrap_or(22),
                key: terminal.ssh_key.clone(),
                control_dir: std::env::temp_dir().join("hermes-ssh"),
            }),
            _ => Backend::Unknown(terminal.backend.clone()),
        }
    }

    /// One line for the user: where commands run.
    pub fn describe(&self) -> String {
        match self {
            Backend::Local => "local (inside the OS sandbox)".into(),
            Backend::Docker(d) => format!(
                "docker (image {}, {})",
                d.image,
                if d.persistent {
                    "one container per process"
                } else {
                    "a container per command"
                }
            ),
            Backend::Ssh(s) => format!(
                "ssh ({})",
                s.host.as_deref().unwrap_or("terminal.ssh_host is not set")
            ),
            Backend::Unknown(name) => {
                format!("`{name}` is not a backend this build supports; commands are refused")
            }
        }
    }

    /// The argv that runs `argv` (`bash -c <script>` or any program) on this backend.
    /// `workspace` is the host working directory (mounted at `/workspace` when configured);
    /// `workdir` a directory the model asked for, on the backend's side.
    ///
    /// # Errors
    /// The refusal text for a backend that cannot run commands.
    pub fn wrap(
        &self,
        argv: &[OsString],
        workspace: &Path,
        workdir: Option<&Path>,
    ) -> Result<Vec<OsString>, String> {
        match self {
            Backend::Local => Ok(argv.to_vec()),
            Backend::Docker(d) => Ok(d.wrap(argv, workspace, workdir)),
            Backend::Ssh(s) => s.wrap(argv, workdir),
            Backend::Unknown(name) => Err(format!(
                "Refused: terminal.backend `{name}` is not one this build can run commands \
                 with (local, docker, ssh); nothing was run."
            )),
        }
    }
}

impl DockerBackend {
    /// `docker run` arguments shared by both lifetimes (after `run`, before the image).
    fn run_args(&self, workspace: &Path) -> Vec<String> {
        let mut a: Vec<String> = SECURITY_ARGS.iter().map(|s| s.to_string()).collect();
        if self.run_as.is_none() {
            a.extend(["--cap-add", "SETUID", "--cap-add", "SETGID"].map(String::from));
        }
        if self.cpus > 0.0 {
            a.extend(["--cpus".to_string(), format!("{}", self.cpus)]);
        }
        if self.memory_mb > 0 {
            a.extend(["--memory".to_string(), format!("{}m", self.memory_mb)]);
        }
        if !self.network {
            a.push("--network=none".into());
        }
        if self.mount_cwd && !self.volumes.iter().any(|v| v.contains(":/workspace")) {
            a.extend([
                "-v".to_string(),
                format!("{}:/workspace", workspace.display()),
            ]);
        }
        for v in &self.volumes {
            a.extend(["-v".to_string(), v.clone()]);
        }
        for (k, v) in &self.env {
            a.extend(["-e".to_string(), format!("{k}={v}")]);
        }
        for k in &self.forward_env {
            a.extend(["-e".to_string(), k.clone()]);
        }
        if let Some(user) = &self.run_as {
            a.extend(["--user".to_string(), user.clone()]);
        }
        a.extend(self.extra_args.iter().cloned());
        a
    }

    fn default_workdir(&self) -> &'static str {
        if self.mount_cwd || self.volumes.iter().any(|v| v.contains(":/workspace")) {
            "/workspace"
        } else {
            "/root"
        }
    }

    fn wrap(&self, argv: &[OsString], workspace: &Path, workdir: Option<&Path>) -> Vec<OsString> {
        let wd = workdir
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| self.default_workdir().to_string());
        let program: OsString = self.program.clone().into_os_string();
        if !self.persistent {
            let mut out: Vec<OsString> = vec![program, "run".into(), "--rm".into(), "-i".into()];
            out.push("--init".into());
            out.extend(self.run_args(workspace).into_iter().map(OsString::from));
            out.extend(["-w".into(), wd.into(), self.image.clone().into()]);
            out.extend(argv.iter().cloned());
            return out;
        }
        // Start the container when it is not running (a local `sh` does this, so hermes never
        // blocks on `docker run`), then exec the command in it, touching the idle stamp.
        let idle_loop = format!(
            "touch {STAMP}; while [ $(( $(date +%s) - $(stat -c %Y {STAMP}) )) -lt {} ]; do \
             sleep 5; done",
            self.lifetime_s
        );
        let mut start: Vec<String> = vec![
            "run".into(),
            "-d".into(),
            "--rm".into(),
            "--init".into(),
            "--name".into(),
            self.container.clone(),
            "--label".into(),
            "hermes-agent=1".into(),
            "-w".into(),
            self.default_workdir().into(),
        ];
        start.extend(self.run_args(workspace));
        start.extend([self.image.clone(), "sh".into(), "-c".into(), idle_loop]);
        let quoted_start = start
            .iter()
            .map(|s| shlex::try_quote(s).map(|q| q.into_owned()))
            .collect::<Result<Vec<_>, _>>()
            .unwrap_or_default()
            .join(" ");
        let d = shlex::try_quote(&self.program.to_string_lossy())
            .map(|q| q.into_owned())
            .unwrap_or_default();
        let c = &self.container;
        let launcher = format!(
            "{d} container inspect -f '{{{{.State.Running}}}}' {c} 2>/dev/null | grep -q true \
             || {d} {quoted_start} >/dev/null || exit 125; \
             {d} exec {c} touch {STAMP}; exec {d} exec -w \"$0\" {c} \"$@\""
        );
        let mut out: Vec<OsString> = vec!["sh".into(), "-c".into(), launcher.into(), wd.into()];
        out.extend(argv.iter().cloned());
        out
    }
}

impl SshBackend {
    fn wrap(&self, argv: &[OsString], workdir: Option<&Path>) -> Result<Vec<OsString>, String> {
        let host = self.host.as_deref().ok_or_else(|| {
            "Refused: terminal.backend is `ssh` but terminal.ssh_host is not set; nothing was \
             run."
                .to_string()
        })?;
        if let Err(e) = std::fs::create_dir_all(&self.control_dir) {
            return Err(format!(
                "cannot create the ssh control folder {}: {e}",
                self.control_dir.display()
            ));
        }
        let target = match &self.user {
            Some(u) if !u.is_empty() => format!("{u}@{host}"),
            _ => host.to_string(),
        };
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        format!("{target}:{}", self.port).hash(&mut hasher);
        let socket = self
            .control_dir
            .join(format!("{:016x}.sock", hasher.finish()));
        let mut out: Vec<OsString> = vec![self.program.clone().into_os_string()];
        for opt in [
            format!("ControlPath={}", socket.display()),
            "ControlMaster=auto".into(),
            "ControlPersist=300".into(),
            "BatchMode=yes".into(),
            "StrictHostKeyChecking=accept-new".into(),
            "ConnectTimeout=10".into(),
        ] {
            out.extend(["-o".into(), opt.into()]);
        }
        if self.port != 22 {
            out.extend(["-p".into(), self.port.to_string().into()]);
        }
        if let Some(k) = &self.key {
            out.extend(["-i".into(), k.clone().into_os_string()]);
        }
        out.push(target.into());
        // The remote side gets one shell string: every word quoted for it.
        let mut words: Vec<String> = Vec::new();
        if let Some(wd) = workdir {
            words.push(format!("cd {} &&", quote(&wd.to_string_lossy())?));
        }
        for a in argv {
            words.push(quote(&a.to_string_lossy())?);
        }
        out.push(words.join(" ").into());
        Ok(out)
    }
}

fn quote(s: &str) -> Result<String, String> {
    shlex::try_quote(s)
        .map(|q| q.into_owned())
        .map_err(|e| format!("cannot quote a command word for the remote shell: {e}"))
}

/// `uid:gid` of this process, from `/proc/self/status` (no unsafe `getuid`).
fn host_user() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_string)
    };
    Some(format!("{}:{}", field("Uid:")?, field("Gid:")?))
}

fn rand_u32() -> u32 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::time::SystemTime::now().hash(&mut hasher);
    std::process::id().hash(&mut hasher);
    hasher.finish() as u32
}
