//! The stdio side of a server: spawning the child in its own process group (killed with the
//! group when dropped, so children are never orphaned), its stderr routed to a log file and
//! `tracing` (never the user's terminal), and a stdout filter that passes only JSON-RPC lines
//! to the SDK (case C29: log lines on stdout are skipped and counted; a JSON-RPC object after
//! log text on the same line is recovered). Every live child is also listed in a process-wide
//! registry so a front end that must exit at once (SIGTERM, a hung-up terminal) can end them
//! all synchronously with [`terminate_all_children`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop, ProcessGroup};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::process::ChildStdin;

/// Longest stdout line read from a server (bytes); longer lines are dropped as noise. The
/// SDK's own limit is 16 MiB, so a 10 MB result still passes.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// What the stdout filter does with one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineVerdict {
    /// A JSON-RPC object: passed on unchanged.
    Forward,
    /// Log text followed by a JSON-RPC object: the object (from this byte offset) is passed on.
    Recovered(usize),
    /// Not JSON-RPC: skipped and logged.
    Ignored,
}

fn is_jsonrpc(bytes: &[u8]) -> bool {
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(serde_json::Value::Object(m)) => m.contains_key("jsonrpc"),
        // A batch is an array of JSON-RPC objects.
        Ok(serde_json::Value::Array(a)) => {
            !a.is_empty() && a.iter().all(|v| v.get("jsonrpc").is_some())
        }
        _ => false,
    }
}

/// Classifies one stdout line (without its newline).
pub fn classify_line(line: &[u8]) -> LineVerdict {
    let trimmed = line.trim_ascii();
    if trimmed.is_empty() {
        return LineVerdict::Ignored;
    }
    if is_jsonrpc(trimmed) {
        return LineVerdict::Forward;
    }
    // Log text then a JSON object on the same line: try each `{` (a few at most).
    for (tries, (i, _)) in line
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'{')
        .enumerate()
    {
        if tries >= 8 {
            break;
        }
        if i > 0 && is_jsonrpc(line[i..].trim_ascii()) {
            return LineVerdict::Recovered(i);
        }
    }
    LineVerdict::Ignored
}

/// Counters of one stdio connection.
#[derive(Debug, Default)]
pub struct StdioStats {
    /// stdout lines that were not (only) JSON-RPC.
    pub ignored_lines: AtomicUsize,
}

/// A running stdio server process. Dropping it kills the whole process group.
pub struct StdioChild {
    child: Box<dyn ChildWrapper>,
    /// Counters (shared with the stdout filter task).
    pub stats: Arc<StdioStats>,
}

impl std::fmt::Debug for StdioChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioChild")
            .field("pid", &self.child.id())
            .finish()
    }
}

impl StdioChild {
    /// The child's process id (the process group id too).
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Waits up to `grace` for the child to exit (after stdin was closed), then kills its
    /// process group.
    pub async fn shutdown(mut self, grace: Duration) {
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
        }
    }
}

impl Drop for StdioChild {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        if let Some(pid) = self.child.id() {
            live_children().remove(&pid);
        }
    }
}

/// Process group ids (= pids) of the stdio children this process started and has not
/// dropped yet.
fn live_children() -> std::sync::MutexGuard<'static, std::collections::BTreeSet<u32>> {
    static LIVE: std::sync::Mutex<std::collections::BTreeSet<u32>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Ends every live stdio child's process group without an async runtime: SIGTERM, up to
/// `grace` for them to go, then SIGKILL. For a front end about to `exit` (SIGTERM received,
/// terminal hung up), where the normal async shutdown cannot run. Returns how many groups
/// were signalled.
pub fn terminate_all_children(grace: Duration) -> usize {
    use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
    let groups: Vec<Pid> = live_children()
        .iter()
        .filter_map(|p| i32::try_from(*p).ok().and_then(Pid::from_raw))
        .collect();
    for g in &groups {
        let _ = kill_process_group(*g, Signal::TERM);
    }
    let deadline = std::time::Instant::now() + grace;
    while std::time::Instant::now() < deadline
        && groups.iter().any(|g| test_kill_process_group(*g).is_ok())
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    for g in &groups {
        let _ = kill_process_group(*g, Signal::KILL);
    }
    groups.len()
}

/// Spawns `command args` with exactly `env` in `cwd`, stderr appended to `log_file` (when
/// given) and to `tracing` at debug level. Returns the child, the filtered stdout to read
/// JSON-RPC from, and the child's stdin.
///
/// # Errors
/// The spawn error (command not found, not executable, bad `cwd`).
pub fn spawn(
    server: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: &Path,
    log_file: Option<PathBuf>,
) -> std::io::Result<(StdioChild, DuplexStream, ChildStdin)> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .env_clear()
        .envs(env)
        .current_dir(cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut wrapped = CommandWrap::from(cmd);
    wrapped.wrap(ProcessGroup::leader());
    wrapped.wrap(KillOnDrop);
    let mut child = wrapped.spawn()?;
    if let Some(pid) = child.id() {
        live_children().insert(pid);
    }
    let stdin = child
        .stdin()
        .take()
        .ok_or_else(|| std::io::Error::other("child stdin missing"))?;
    let stdout = child
        .stdout()
        .take()
        .ok_or_else(|| std::io::Error::other("child stdout missing"))?;
    let stats = Arc::new(StdioStats::default());
    let (mut to_sdk, from_filter) = tokio::io::duplex(1 << 16);
    // The server's own secrets (its environment's key/token variables) are masked in its log
    // file; what reaches `tracing` is masked again by the process's log writers.
    let redactor = hermes_protocol::SecretRedactor::new(
        env.iter()
            .filter(|(name, _)| hermes_protocol::secrets::is_secret_name(name))
            .map(|(name, value)| (format!("mcp_servers.{server}.env.{name}"), value)),
    );
    let log = Arc::new(LogSink::open(server, log_file, redactor));
    if let Some(stderr) = child.stderr().take() {
        let log = log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                log.write("stderr", &line).await;
            }
        });
    }
    let filter_stats = stats.clone();
    tokio::spawn(async move {
        let mut reader = BufReader::new(stdout);
        let mut line = Vec::new();
        loop {
            line.clear();
            match (&mut reader)
                .take(MAX_LINE_BYTES as u64)
                .read_until(b'\n', &mut line)
                .await
            {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let body = line.strip_suffix(b"\n").unwrap_or(&line);
            let body = body.strip_suffix(b"\r").unwrap_or(body);
            let forward: Option<&[u8]> = match classify_line(body) {
                LineVerdict::Forward => Some(body),
                LineVerdict::Recovered(at) => {
                    filter_stats.ignored_lines.fetch_add(1, Ordering::Relaxed);
                    log.write("stdout", &String::from_utf8_lossy(&body[..at]))
                        .await;
                    Some(&body[at..])
                }
                LineVerdict::Ignored => {
                    if !body.trim_ascii().is_empty() {
                        filter_stats.ignored_lines.fetch_add(1, Ordering::Relaxed);
                        log.write("stdout", &String::from_utf8_lossy(body)).await;
                    }
                    None
                }
            };
            if let Some(msg) = forward
                && (to_sdk.write_all(msg).await.is_err() || to_sdk.write_all(b"\n").await.is_err())
            {
                break;
            }
        }
        let _ = to_sdk.shutdown().await;
    });
    Ok((StdioChild { child, stats }, from_filter, stdin))
}

/// Where a server's stderr and stdout noise go.
struct LogSink {
    server: String,
    redactor: hermes_protocol::SecretRedactor,
    file: tokio::sync::Mutex<Option<tokio::fs::File>>,
    path: Option<PathBuf>,
}

impl LogSink {
    fn open(
        server: &str,
        path: Option<PathBuf>,
        redactor: hermes_protocol::SecretRedactor,
    ) -> LogSink {
        LogSink {
            server: server.to_string(),
            redactor,
            file: tokio::sync::Mutex::new(None),
            path,
        }
    }

    async fn write(&self, stream: &str, line: &str) {
        let line = self.redactor.redact(line);
        tracing::debug!(server = %self.server, stream, "{line}");
        let Some(path) = &self.path else { return };
        let mut file = self.file.lock().await;
        if file.is_none() {
            let path = path.clone();
            *file = tokio::task::spawn_blocking(move || {
                hermes_protocol::private_fs::open_append(&path)
            })
            .await
            .ok()
            .and_then(Result::ok)
            .map(tokio::fs::File::from_std);
        }
        if let Some(f) = file.as_mut() {
            let _ = f.write_all(format!("[{stream}] {line}\n").as_bytes()).await;
            // tokio's File hands writes to a blocking thread: flush so the line is on disk.
            let _ = f.flush().await;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_servers_secret_env_values_are_masked_in_its_log_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp-gh.log");
        let redactor =
            hermes_protocol::SecretRedactor::new([("GITHUB_TOKEN", "ghp_plantedsecret123")]);
        let sink = LogSink::open("gh", Some(path.clone()), redactor);
        sink.write("stderr", "auth with ghp_plantedsecret123 ok")
            .await;
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("ghp_plantedsecret123"), "{text}");
        assert!(text.contains("[REDACTED:GITHUB_TOKEN]"), "{text}");
    }

    #[test]
    fn classifies_log_noise() {
        let resp = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        assert_eq!(classify_line(resp), LineVerdict::Forward);
        assert_eq!(
            classify_line(b"level=info msg=mem.init budget_mb=512"),
            LineVerdict::Ignored
        );
        let mixed = br#"level=info msg=ready {"jsonrpc":"2.0","id":1,"result":{}}"#;
        assert_eq!(classify_line(mixed), LineVerdict::Recovered(21));
        assert_eq!(classify_line(br#"{"not":"rpc"}"#), LineVerdict::Ignored);
        assert_eq!(classify_line(b"   "), LineVerdict::Ignored);
    }
}
