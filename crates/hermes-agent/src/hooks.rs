//! Lifecycle hooks (FEATURES §12): user scripts in `HERMES_HOME/hooks/<name>/HOOK.yaml`
//! that observe what the agent, the CLI and the gateway do.
//!
//! A `HOOK.yaml` names the events it wants and a shell command:
//!
//! ```yaml
//! name: log-turns
//! description: append every finished turn to a file
//! events: [agent:end, "command:*"]
//! command: ./log.sh        # run with `sh -c` in the hook's directory
//! timeout: 10              # seconds, default 10
//! ```
//!
//! The command gets the event as one JSON object on stdin —
//! `{"event": "agent:end", "session_id": "…", "platform": "cli", "data": {…}}` — and the
//! event name in `HERMES_HOOK_EVENT`. Hooks run in the background: firing never waits for
//! them, a failure or a timeout (the whole process group is killed) is logged and nothing
//! else happens. `command:*` matches every `command:<name>` event (any `<prefix>:*` works
//! the same way).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use hermes_protocol::HermesHome;
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;

/// Default time a hook may run (FEATURES §12), in seconds.
pub const DEFAULT_HOOK_TIMEOUT_S: f64 = 10.0;

/// The lifecycle events (seeds 001 §18.4.1); `command:<name>` is one event per slash
/// command.
pub const HOOK_EVENTS: &[&str] = &[
    "gateway:startup",
    "session:start",
    "session:end",
    "session:reset",
    "agent:start",
    "agent:step",
    "agent:end",
    "command:*",
];

/// Largest stderr kept from a failed hook for the log, in bytes.
const STDERR_KEEP: u64 = 4096;

/// One loaded hook.
#[derive(Debug, Clone, PartialEq)]
pub struct HookSpec {
    /// `name:` from the file, else the directory name.
    pub name: String,
    /// `description:` (may be empty).
    pub description: String,
    /// Event patterns (`agent:end`, `command:*`).
    pub events: Vec<String>,
    /// Shell command, run with `sh -c` in [`HookSpec::dir`].
    pub command: String,
    /// Time limit; the process group is killed after it.
    pub timeout: Duration,
    /// The hook's directory.
    pub dir: PathBuf,
}

impl HookSpec {
    /// True when one of the hook's patterns matches `event`.
    pub fn wants(&self, event: &str) -> bool {
        self.events.iter().any(|p| event_matches(p, event))
    }
}

/// True when `pattern` is `event`, or `<prefix>:*` and `event` is `<prefix>:<something>`.
pub fn event_matches(pattern: &str, event: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) if prefix.ends_with(':') => {
            event.len() > prefix.len() && event.starts_with(prefix)
        }
        _ => pattern == event,
    }
}

/// A `HOOK.yaml` that could not be used; the hook is skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {reason}; hook skipped", path.display())]
pub struct HookLoadError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HookFile {
    name: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    events: Vec<String>,
    command: Option<String>,
    timeout: Option<f64>,
}

/// One event as hooks receive it on stdin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookEvent {
    /// Event name (`agent:end`, `command:new`, …).
    pub event: String,
    /// Session id, when the event belongs to a session.
    pub session_id: Option<String>,
    /// Where it happened: `cli`, a platform name, `api_server`, `cron`.
    pub platform: Option<String>,
    /// Event details (an object; fields depend on the event).
    pub data: serde_json::Value,
}

impl HookEvent {
    /// An event with no session or platform and empty data.
    pub fn new(event: impl Into<String>) -> HookEvent {
        HookEvent {
            event: event.into(),
            session_id: None,
            platform: None,
            data: serde_json::Value::Object(Default::default()),
        }
    }
}

/// How one hook run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOutcome {
    /// Exit status 0.
    Succeeded,
    /// Non-zero exit (code, or 128 + signal) with the start of its stderr.
    Failed {
        /// Exit code.
        code: i32,
        /// First 4 KiB of stderr, lossy UTF-8.
        stderr: String,
    },
    /// Still running at the timeout; its process group was killed.
    TimedOut,
    /// `sh` could not be started.
    SpawnFailed(String),
}

/// The hooks of a home, cheap to clone and share. Empty by default (no hooks, firing does
/// nothing).
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    specs: Arc<Vec<HookSpec>>,
}

/// Handles of the hook runs one [`Hooks::fire`] started; dropping it detaches them (they
/// keep running to completion or timeout).
#[derive(Debug, Default)]
pub struct FiredHooks {
    runs: Vec<(String, JoinHandle<HookOutcome>)>,
}

impl FiredHooks {
    /// How many hooks were started.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// True when no hook matched.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Waits for every run; returns `(hook name, outcome)` in hook order (tests, shutdown).
    pub async fn wait(self) -> Vec<(String, HookOutcome)> {
        let mut out = Vec::with_capacity(self.runs.len());
        for (name, handle) in self.runs {
            let outcome = handle
                .await
                .unwrap_or_else(|e| HookOutcome::SpawnFailed(format!("hook task failed: {e}")));
            out.push((name, outcome));
        }
        out
    }
}

impl Hooks {
    /// Hooks from already-built specs (tests, embedding).
    pub fn from_specs(specs: Vec<HookSpec>) -> Hooks {
        Hooks {
            specs: Arc::new(specs),
        }
    }

    /// Reads every `HERMES_HOME/hooks/<name>/HOOK.yaml`, in directory-name order. Files
    /// that cannot be used are returned as errors (file and reason) and skipped; a missing
    /// `hooks/` directory means no hooks.
    pub fn discover(home: &HermesHome) -> (Hooks, Vec<HookLoadError>) {
        Self::discover_in(&home.root().join("hooks"))
    }

    /// [`Hooks::discover`] on an explicit hooks directory.
    pub fn discover_in(dir: &Path) -> (Hooks, Vec<HookLoadError>) {
        let mut errors = Vec::new();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return (Hooks::default(), errors);
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        let mut specs = Vec::new();
        for d in dirs {
            let file = d.join("HOOK.yaml");
            if !file.exists() {
                continue;
            }
            match load_hook(&file, &d) {
                Ok(spec) => specs.push(spec),
                Err(reason) => errors.push(HookLoadError { path: file, reason }),
            }
        }
        (Hooks::from_specs(specs), errors)
    }

    /// The loaded hooks.
    pub fn specs(&self) -> &[HookSpec] {
        &self.specs
    }

    /// True when there are no hooks.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// Starts every hook that wants `event.event` in the background and returns at once.
    /// Outside a tokio runtime nothing runs (logged).
    pub fn fire(&self, event: &HookEvent) -> FiredHooks {
        let mut fired = FiredHooks::default();
        let wanted: Vec<&HookSpec> = self
            .specs
            .iter()
            .filter(|h| h.wants(&event.event))
            .collect();
        if wanted.is_empty() {
            return fired;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(event = %event.event, "hooks not run: no async runtime");
            return fired;
        };
        let payload = match serde_json::to_vec(event) {
            Ok(p) => Arc::new(p),
            Err(e) => {
                tracing::warn!(error = %e, "hook event could not be serialized");
                return fired;
            }
        };
        for spec in wanted {
            let spec = spec.clone();
            let payload = payload.clone();
            let name = spec.name.clone();
            let event_name = event.event.clone();
            let handle = runtime.spawn(async move {
                let outcome = run_hook(&spec, &event_name, &payload).await;
                match &outcome {
                    HookOutcome::Succeeded => {
                        tracing::debug!(hook = %spec.name, event = %event_name, "hook ran");
                    }
                    HookOutcome::Failed { code, stderr } => tracing::warn!(
                        hook = %spec.name, event = %event_name, code, stderr = %stderr,
                        "hook failed"
                    ),
                    HookOutcome::TimedOut => tracing::warn!(
                        hook = %spec.name, event = %event_name,
                        timeout_s = spec.timeout.as_secs_f64(),
                        "hook timed out; its process group was killed"
                    ),
                    HookOutcome::SpawnFailed(e) => tracing::warn!(
                        hook = %spec.name, event = %event_name, error = %e,
                        "hook could not be started"
                    ),
                }
                outcome
            });
            fired.runs.push((name, handle));
        }
        fired
    }
}

fn load_hook(file: &Path, dir: &Path) -> Result<HookSpec, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read: {e}"))?;
    let parsed: HookFile = yaml_serde::from_str(&text).map_err(|e| format!("invalid YAML: {e}"))?;
    let command = parsed
        .command
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| "`command` is missing or empty".to_string())?;
    if parsed.events.is_empty() {
        return Err("`events` is missing or empty".to_string());
    }
    for e in &parsed.events {
        let known = HOOK_EVENTS.contains(&e.as_str())
            || (e.starts_with("command:") && e.len() > "command:".len());
        if !known {
            return Err(format!(
                "unknown event `{e}` (known: {}, command:<name>)",
                HOOK_EVENTS.join(", ")
            ));
        }
    }
    let timeout = match parsed.timeout {
        None => DEFAULT_HOOK_TIMEOUT_S,
        Some(t) if t.is_finite() && t > 0.0 && t <= 86_400.0 => t,
        Some(t) => {
            return Err(format!(
                "`timeout` must be between 0 and 86400 seconds, got {t}"
            ));
        }
    };
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(HookSpec {
        name: parsed
            .name
            .filter(|n| !n.trim().is_empty())
            .unwrap_or(dir_name),
        description: parsed.description,
        events: parsed.events,
        command,
        timeout: Duration::from_secs_f64(timeout),
        dir: dir.to_path_buf(),
    })
}

/// Runs one hook to completion or timeout.
async fn run_hook(spec: &HookSpec, event: &str, payload: &[u8]) -> HookOutcome {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.dir)
        .env("HERMES_HOOK_EVENT", event)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut wrapped = CommandWrap::from(cmd);
    wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    let mut child = match wrapped.spawn() {
        Ok(c) => c,
        Err(e) => return HookOutcome::SpawnFailed(e.to_string()),
    };
    let stdin = child.stdin().take();
    let stderr = child.stderr().take();
    let stderr_task = tokio::spawn(async move {
        let mut buf = Vec::new();
        if let Some(s) = stderr {
            let _ = s.take(STDERR_KEEP).read_to_end(&mut buf).await;
        }
        String::from_utf8_lossy(&buf).into_owned()
    });
    let payload = payload.to_vec();
    let run = async {
        if let Some(mut stdin) = stdin {
            // A hook that ignores stdin may close it early; that is fine.
            let _ = stdin.write_all(&payload).await;
            let _ = stdin.shutdown().await;
        }
        child.wait().await
    };
    let status = tokio::time::timeout(spec.timeout, run).await;
    match status {
        Ok(Ok(status)) => {
            let code = exit_code(status);
            if code == 0 {
                stderr_task.abort();
                HookOutcome::Succeeded
            } else {
                let stderr = tokio::time::timeout(Duration::from_secs(1), stderr_task)
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .unwrap_or_default();
                HookOutcome::Failed { code, stderr }
            }
        }
        Ok(Err(e)) => HookOutcome::SpawnFailed(e.to_string()),
        Err(_) => {
            let _ = child.start_kill();
            let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
            stderr_task.abort();
            HookOutcome::TimedOut
        }
    }
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(-1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_one_namespace() {
        assert!(event_matches("command:*", "command:new"));
        assert!(!event_matches("command:*", "command:"));
        assert!(!event_matches("command:*", "agent:end"));
        assert!(event_matches("agent:end", "agent:end"));
        assert!(!event_matches("agent:end", "agent:start"));
    }
}
