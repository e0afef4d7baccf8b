//! Managed background processes (`terminal(background=true)`) and the `process` tool
//! (FEATURES §4: `process(action: list|poll|log|kill, id)`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hermes_protocol::ToolSpec;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::exec::{exit_code, pump, shell_command};
use super::output::{MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES, OutputBuffer, cap_output};
use crate::file::{opt_str, opt_u64};
use crate::tool::{Parallelism, Tool, ToolContext, ToolOutput};

/// Raw output kept per background process: the first and the last this many bytes.
const KEEP_BYTES: usize = 256 * 1024;
/// Lines returned by `process(action="log")` when `lines` is not given.
pub const DEFAULT_LOG_LINES: usize = 100;

/// State of a background process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessStatus {
    /// Still running.
    Running,
    /// Exited by itself with this code (128 + signal when a signal ended it).
    Exited(i32),
    /// Killed through [`ProcessRegistry::kill`] or registry shutdown.
    Killed,
}

impl std::fmt::Display for ProcessStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProcessStatus::Running => f.write_str("running"),
            ProcessStatus::Exited(c) => write!(f, "exited (exit code {c})"),
            ProcessStatus::Killed => f.write_str("killed"),
        }
    }
}

/// A snapshot of one background process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Registry id (`proc_1`, `proc_2`, …).
    pub id: String,
    /// The shell command.
    pub command: String,
    /// OS process id of the shell (also the process group id).
    pub pid: Option<u32>,
    /// Current state.
    pub status: ProcessStatus,
    /// Seconds since start.
    pub runtime_s: u64,
}

struct Managed {
    command: String,
    pid: Option<u32>,
    started: Instant,
    output: Arc<Mutex<OutputBuffer>>,
    status: Arc<Mutex<ProcessStatus>>,
    kill: CancellationToken,
    done: CancellationToken,
}

impl Managed {
    fn info(&self, id: &str) -> ProcessInfo {
        ProcessInfo {
            id: id.to_string(),
            command: self.command.clone(),
            pid: self.pid,
            status: *self.status.lock().unwrap_or_else(|e| e.into_inner()),
            runtime_s: self.started.elapsed().as_secs(),
        }
    }
}

/// The background processes of one agent session, shared by the `terminal` and `process`
/// tools of [`super::tools`] (the registry lives inside the tool objects, not in
/// `ToolContext`). Each process runs `bash -c` in its own process group with output captured;
/// dropping the registry kills every process group still running.
pub struct ProcessRegistry {
    procs: Mutex<BTreeMap<u64, (String, Arc<Managed>)>>,
    next: AtomicU64,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for ProcessRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessRegistry")
            .field("processes", &self.list())
            .finish()
    }
}

impl Default for ProcessRegistry {
    fn default() -> ProcessRegistry {
        ProcessRegistry::new()
    }
}

impl Drop for ProcessRegistry {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl ProcessRegistry {
    /// An empty registry.
    pub fn new() -> ProcessRegistry {
        ProcessRegistry {
            procs: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(1),
            shutdown: CancellationToken::new(),
        }
    }

    /// Starts `command` in `workdir` as a background process and returns its snapshot at once;
    /// it runs in the same sandbox (or on the same backend) as foreground commands
    /// ([`crate::sandbox`], settings from `ctx`). Must be called inside a tokio runtime (a
    /// task watches the process).
    ///
    /// # Errors
    /// The refusal text, or the spawn error text.
    pub fn spawn(
        &self,
        command: &str,
        workdir: &Path,
        ctx: &ToolContext,
    ) -> Result<ProcessInfo, String> {
        let mut child = shell_command(command, workdir, ctx)?
            .spawn()
            .map_err(|e| format!("cannot start background process: {e}"))?;
        let output = Arc::new(Mutex::new(OutputBuffer::new(KEEP_BYTES, KEEP_BYTES)));
        pump(child.stdout().take(), output.clone());
        pump(child.stderr().take(), output.clone());
        let managed = Arc::new(Managed {
            command: command.to_string(),
            pid: child.id(),
            started: Instant::now(),
            output,
            status: Arc::new(Mutex::new(ProcessStatus::Running)),
            kill: CancellationToken::new(),
            done: CancellationToken::new(),
        });
        let (status, kill, done, shutdown) = (
            managed.status.clone(),
            managed.kill.clone(),
            managed.done.clone(),
            self.shutdown.clone(),
        );
        tokio::spawn(async move {
            let new_status = tokio::select! {
                s = child.wait() => ProcessStatus::Exited(s.map(exit_code).unwrap_or(-1)),
                _ = kill.cancelled() => ProcessStatus::Killed,
                _ = shutdown.cancelled() => ProcessStatus::Killed,
            };
            if new_status == ProcessStatus::Killed {
                let _ = child.start_kill();
                let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
            }
            *status.lock().unwrap_or_else(|e| e.into_inner()) = new_status;
            done.cancel();
        });
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let id = format!("proc_{n}");
        let info = managed.info(&id);
        self.procs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(n, (id, managed));
        Ok(info)
    }

    fn find(&self, id: &str) -> Option<Arc<Managed>> {
        self.procs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .find(|(pid, _)| pid == id)
            .map(|(_, m)| m.clone())
    }

    /// Snapshots of every process, oldest first.
    pub fn list(&self) -> Vec<ProcessInfo> {
        self.procs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .map(|(id, m)| m.info(id))
            .collect()
    }

    /// The snapshot of process `id`.
    pub fn get(&self, id: &str) -> Option<ProcessInfo> {
        self.find(id).map(|m| m.info(id))
    }

    /// The last `lines` lines of the captured output (ANSI stripped) of process `id`.
    pub fn log(&self, id: &str, lines: usize) -> Option<String> {
        let m = self.find(id)?;
        let text = m.output.lock().unwrap_or_else(|e| e.into_inner()).render();
        let all: Vec<&str> = text.lines().collect();
        let start = all.len().saturating_sub(lines);
        Some(all[start..].join("\n"))
    }

    /// Kills the process group of `id` (if still running) and waits up to 10 s for it to be
    /// reaped; returns the final snapshot.
    ///
    /// # Errors
    /// Unknown id.
    pub async fn kill(&self, id: &str) -> Result<ProcessInfo, String> {
        let m = self
            .find(id)
            .ok_or_else(|| format!("no background process with id `{id}`"))?;
        m.kill.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(10), m.done.cancelled()).await;
        Ok(m.info(id))
    }

    /// Waits until process `id` is no longer running, at most `limit`; returns its snapshot.
    pub async fn wait(&self, id: &str, limit: Duration) -> Option<ProcessInfo> {
        let m = self.find(id)?;
        let _ = tokio::time::timeout(limit, m.done.cancelled()).await;
        Some(m.info(id))
    }
}

fn describe(p: &ProcessInfo) -> String {
    let pid = p.pid.map_or_else(|| "?".to_string(), |p| p.to_string());
    format!(
        "{}  pid {pid}  {}  {}s  {}",
        p.id, p.status, p.runtime_s, p.command
    )
}

/// `process(action, id?, lines?)`: `list` all background processes, `poll` one (status, exit
/// code, runtime and its last 20 output lines), `log` its last `lines` output lines (default
/// [`DEFAULT_LOG_LINES`]) or `kill` its process group.
pub struct ProcessTool {
    registry: Arc<ProcessRegistry>,
}

impl ProcessTool {
    /// A `process` tool over `registry` (share it with the `terminal` tool).
    pub fn new(registry: Arc<ProcessRegistry>) -> ProcessTool {
        ProcessTool { registry }
    }
}

#[async_trait::async_trait]
impl Tool for ProcessTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "process".into(),
            description: "Manage background processes started with terminal(background=true): \
                          list, poll (status and exit code), log (recent output), kill."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["list", "poll", "log", "kill"]},
                    "id": {"type": "string", "description": "Process id (e.g. proc_1); required except for list."},
                    "lines": {"type": "integer", "minimum": 1, "description": "Lines for log (default 100)."}
                },
                "required": ["action"]
            }),
        }
    }
    fn toolset(&self) -> &'static str {
        super::TOOLSET
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::Never
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolOutput {
        let action = opt_str(&args, "action").unwrap_or("");
        if action == "list" {
            let all = self.registry.list();
            if all.is_empty() {
                return ToolOutput::ok("No background processes.");
            }
            return ToolOutput::ok(all.iter().map(describe).collect::<Vec<_>>().join("\n"));
        }
        if !matches!(action, "poll" | "log" | "kill") {
            return ToolOutput::error(format!(
                "action must be one of list, poll, log, kill; got `{action}`"
            ));
        }
        let Some(id) = opt_str(&args, "id") else {
            return ToolOutput::error(format!("action `{action}` needs an `id`"));
        };
        let unknown = || {
            let known: Vec<String> = self.registry.list().into_iter().map(|p| p.id).collect();
            ToolOutput::error(format!(
                "no background process with id `{id}`; known: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ))
        };
        match action {
            "poll" => match self.registry.get(id) {
                Some(p) => {
                    let tail = self.registry.log(id, 20).unwrap_or_default();
                    ToolOutput::ok(format!("{}\n--- last output ---\n{tail}", describe(&p)))
                }
                None => unknown(),
            },
            "log" => {
                let lines = match opt_u64(&args, "lines") {
                    Ok(n) => n.map_or(DEFAULT_LOG_LINES, |n| n as usize),
                    Err(e) => return ToolOutput::error(e),
                };
                match self.registry.log(id, lines) {
                    Some(text) => {
                        ToolOutput::ok(cap_output(&text, MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES))
                    }
                    None => unknown(),
                }
            }
            _ => match self.registry.kill(id).await {
                Ok(p) => ToolOutput::ok(format!("Killed: {}", describe(&p))),
                Err(_) => unknown(),
            },
        }
    }
}
