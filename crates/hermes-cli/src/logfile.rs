//! Internal logs (issue 20 item 1): every `tracing` record goes to `HERMES_HOME/logs/`
//! (`agent.log` INFO+, `errors.log` WARNING+, the file names of Python Hermes'
//! `hermes_logging.py`), as plain text without ANSI codes, secrets redacted, each file capped
//! at [`MAX_BYTES`] and rotated into [`BACKUPS`] numbered backups (`agent.log.1` is the
//! newest), like Python's `RotatingFileHandler(5 MiB × 3)`. The REPL and `chat -q` never draw
//! a log line on the terminal: problems reach the user as one friendly line from the CLI.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use hermes_protocol::SecretRedactor;
use tracing_subscriber::fmt::MakeWriter;

/// Size cap of one log file in bytes (5 MiB, as in Python Hermes).
pub const MAX_BYTES: u64 = 5 * 1024 * 1024;
/// Number of rotated backups kept per log file.
pub const BACKUPS: u32 = 3;
/// The main log's file name inside `logs/`.
pub const AGENT_LOG: &str = "agent.log";
/// The warnings-and-errors log's file name inside `logs/`.
pub const ERRORS_LOG: &str = "errors.log";

/// An append-only log file that rotates when a write would pass `max_bytes`.
#[derive(Debug)]
struct Rotating {
    path: PathBuf,
    file: File,
    size: u64,
    max_bytes: u64,
}

impl Rotating {
    fn open(path: &Path, max_bytes: u64) -> io::Result<Rotating> {
        let file = hermes_protocol::private_fs::open_append(path)?;
        let size = file.metadata()?.len();
        Ok(Rotating {
            path: path.to_path_buf(),
            file,
            size,
            max_bytes,
        })
    }

    fn backup(&self, n: u32) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    }

    fn rotate(&mut self) -> io::Result<()> {
        for n in (1..BACKUPS).rev() {
            let from = self.backup(n);
            if from.exists() {
                std::fs::rename(&from, self.backup(n + 1))?;
            }
        }
        std::fs::rename(&self.path, self.backup(1))?;
        self.file = hermes_protocol::private_fs::open_append(&self.path)?;
        self.size = 0;
        Ok(())
    }

    fn write_record(&mut self, bytes: &[u8]) -> io::Result<()> {
        let len = bytes.len() as u64;
        if self.size > 0 && self.size + len > self.max_bytes {
            self.rotate()?;
        }
        self.file.write_all(bytes)?;
        self.size += len;
        Ok(())
    }
}

/// A [`MakeWriter`] for one rotating log file: each record is collected whole, its secrets
/// masked (every value the home's [`SecretRedactor`] knows, then the key shapes
/// `hermes_llm::redact_secrets` recognises), then appended. A failed write drops the record
/// (a log line must never break the program), and is never reported on the terminal.
#[derive(Debug, Clone)]
pub struct LogFile {
    inner: Arc<Mutex<Rotating>>,
    redactor: Arc<SecretRedactor>,
}

impl LogFile {
    /// Opens (creating) `path` for appending, rotating at `max_bytes`; `redactor` masks the
    /// home's known secret values in every record.
    ///
    /// # Errors
    /// The file cannot be opened or its size read.
    pub fn open(path: &Path, max_bytes: u64, redactor: Arc<SecretRedactor>) -> io::Result<LogFile> {
        Ok(LogFile {
            inner: Arc::new(Mutex::new(Rotating::open(path, max_bytes)?)),
            redactor,
        })
    }
}

/// One record being formatted; written to the file when dropped.
#[derive(Debug)]
pub struct Record {
    target: Arc<Mutex<Rotating>>,
    redactor: Arc<SecretRedactor>,
    buf: Vec<u8>,
}

impl Write for Record {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let raw = String::from_utf8_lossy(&self.buf);
        let text = hermes_llm::redact_secrets(&self.redactor.redact(&raw));
        if let Ok(mut file) = self.target.lock() {
            let _ = file.write_record(text.as_bytes());
        }
    }
}

impl<'a> MakeWriter<'a> for LogFile {
    type Writer = Record;
    fn make_writer(&'a self) -> Record {
        Record {
            target: Arc::clone(&self.inner),
            redactor: Arc::clone(&self.redactor),
            buf: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_at_the_cap_and_keeps_three_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.log");
        let log = LogFile::open(&path, 100, Arc::default()).unwrap();
        for i in 0..20 {
            let mut w = log.make_writer();
            writeln!(w, "line {i:02} {}", "x".repeat(30)).unwrap();
        }
        assert!(std::fs::metadata(&path).unwrap().len() <= 100);
        for n in 1..=3 {
            let backup = dir.path().join(format!("agent.log.{n}"));
            assert!(std::fs::metadata(&backup).unwrap().len() <= 100, "{n}");
        }
        assert!(!dir.path().join("agent.log.4").exists());
        let current = std::fs::read_to_string(&path).unwrap();
        assert!(current.contains("line 19"), "{current}");
    }

    #[test]
    fn secrets_are_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.log");
        let log = LogFile::open(&path, MAX_BYTES, Arc::default()).unwrap();
        let mut w = log.make_writer();
        writeln!(
            w,
            "WARN call failed OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz"
        )
        .unwrap();
        drop(w);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("abcdefghijklmnop"), "{text}");
    }
}
