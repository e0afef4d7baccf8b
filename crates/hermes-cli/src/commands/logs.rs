//! `hermes logs [NAME] [-n N] [-f] [--level L] [--session ID]`: shows the internal logs in
//! `HERMES_HOME/logs/` (flags as in Python Hermes 0.19.0's `hermes logs`). `NAME` is `agent`
//! (default), `errors`, or `list` (the files with their sizes).

use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::assembly::app::App;

/// `hermes logs …`
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Log to view: `agent` (default), `errors`, or `list` to show the files.
    #[arg(default_value = "agent")]
    pub log_name: String,
    /// Number of lines to show.
    #[arg(short = 'n', long = "lines", default_value_t = 50)]
    pub lines: usize,
    /// Follow the log as it grows (like `tail -f`).
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Minimum level to show: DEBUG, INFO, WARNING (or WARN), ERROR.
    #[arg(long, value_name = "LEVEL")]
    pub level: Option<String>,
    /// Only lines containing this session id (substring).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

/// Severity rank of a level name (TRACE 0 … ERROR 4); `None` for an unknown name.
fn rank(level: &str) -> Option<u8> {
    match level.to_ascii_uppercase().as_str() {
        "TRACE" => Some(0),
        "DEBUG" => Some(1),
        "INFO" => Some(2),
        "WARN" | "WARNING" => Some(3),
        "ERROR" | "CRITICAL" => Some(4),
        _ => None,
    }
}

/// The filter of one `hermes logs` call.
struct Filter {
    min: Option<u8>,
    session: Option<String>,
}

impl Filter {
    /// Whether a line (`<timestamp> <LEVEL> <target>: <message>`) passes; a line without a
    /// level (a continuation) passes the level test.
    fn keep(&self, line: &str) -> bool {
        if let Some(min) = self.min {
            let level = line.split_whitespace().nth(1).and_then(rank);
            if level.is_some_and(|l| l < min) {
                return false;
            }
        }
        self.session
            .as_ref()
            .is_none_or(|s| line.contains(s.as_str()))
    }
}

/// Runs `hermes logs …`.
pub fn run(profile: Option<&str>, args: &LogsArgs) -> Result<i32> {
    let app = App::load(profile)?;
    let dir = app.home.logs_dir();
    if args.log_name == "list" {
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        names.sort();
        if names.is_empty() {
            println!("no log files in {}", dir.display());
        }
        for path in names {
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            println!("{:<16} {:>10} bytes", name.unwrap_or_default(), size);
        }
        return Ok(0);
    }
    let file = match args.log_name.as_str() {
        "agent" => crate::logfile::AGENT_LOG,
        "errors" => crate::logfile::ERRORS_LOG,
        other => bail!("unknown log `{other}`: use agent, errors or list"),
    };
    let min = match &args.level {
        Some(l) => Some(
            rank(l).with_context(|| format!("--level {l}: use DEBUG, INFO, WARNING or ERROR"))?,
        ),
        None => None,
    };
    let filter = Filter {
        min,
        session: args.session.clone(),
    };
    let path = dir.join(file);
    if !path.exists() && !args.follow {
        println!("no log yet: {}", path.display());
        return Ok(0);
    }
    show(&path, &filter, args.lines, args.follow)
}

fn show(path: &Path, filter: &Filter, lines: usize, follow: bool) -> Result<i32> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let kept: Vec<&str> = text.lines().filter(|l| filter.keep(l)).collect();
    for line in &kept[kept.len().saturating_sub(lines)..] {
        println!("{line}");
    }
    if !follow {
        return Ok(0);
    }
    let mut pos = text.len() as u64;
    let mut pending = String::new();
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let Ok(mut file) = std::fs::File::open(path) else {
            continue;
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len < pos {
            pos = 0; // rotated: start the new file from its beginning
        }
        file.seek(SeekFrom::Start(pos))
            .with_context(|| format!("reading {}", path.display()))?;
        let mut reader = BufReader::new(file);
        loop {
            let n = reader
                .read_line(&mut pending)
                .with_context(|| format!("reading {}", path.display()))?;
            if n == 0 || !pending.ends_with('\n') {
                pos += n as u64;
                break;
            }
            pos += n as u64;
            let line = pending.trim_end_matches('\n');
            if filter.keep(line) {
                println!("{line}");
            }
            pending.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_and_session_filters() {
        let f = Filter {
            min: rank("warning"),
            session: Some("abc".into()),
        };
        assert!(f.keep("2026-12-01T18:37:29Z  WARN hermes_mcp: lost session=abc1"));
        assert!(!f.keep("2026-12-01T18:37:29Z  INFO hermes_mcp: ok session=abc1"));
        assert!(!f.keep("2026-12-01T18:37:29Z ERROR hermes_mcp: lost session=zzz"));
    }
}
