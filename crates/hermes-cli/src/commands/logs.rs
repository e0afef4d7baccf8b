//! `hermes logs [NAME] [-n N] [-f] [--level L] [--session ID] [--since T] [--component C]`:
//! shows the internal logs in `HERMES_HOME/logs/` (flags as in Python Hermes 0.19.0's
//! `hermes logs`, `hermes_cli/logs.py`). `NAME` is `agent` (default), `errors`, `gateway`
//! (the gateway's lines of `agent.log`: hermes writes one main log where Python Hermes adds a
//! `gateway.log`), or `list` (the files with their sizes).

use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::assembly::app::App;

/// `hermes logs …`
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Log to view: `agent` (default), `errors`, `gateway` (the gateway's lines of agent.log),
    /// or `list` to show the files.
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
    /// Only lines from the last TIME: a number and a unit, `s`, `m`, `h` or `d` (`30m`, `2d`).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only lines of one component: gateway, agent, tools, cli or cron.
    #[arg(long, value_name = "NAME")]
    pub component: Option<String>,
}

/// The `tracing` targets (crate names) of each `--component` name. Python Hermes' names
/// (`COMPONENT_PREFIXES` in `hermes_logging.py`) map onto the crates doing that work.
const COMPONENTS: &[(&str, &[&str])] = &[
    ("gateway", &["hermes_gateway"]),
    ("agent", &["hermes_agent", "hermes_llm", "hermes_context"]),
    ("tools", &["hermes_tools", "hermes_mcp"]),
    ("cli", &["hermes_cli", "hermes"]),
    ("cron", &["hermes_cron"]),
];

/// The cut-off of `--since`: `<n><s|m|h|d>` before now (Python Hermes' `_parse_since`);
/// `None` for any other text.
fn since_cutoff(
    text: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<chrono::DateTime<chrono::Utc>> {
    let text = text.trim().to_ascii_lowercase();
    let unit = text.chars().last()?;
    let value: i64 = text[..text.len() - unit.len_utf8()].trim().parse().ok()?;
    let span = match unit {
        's' => chrono::Duration::try_seconds(value)?,
        'm' => chrono::Duration::try_minutes(value)?,
        'h' => chrono::Duration::try_hours(value)?,
        'd' => chrono::Duration::try_days(value)?,
        _ => return None,
    };
    now.checked_sub_signed(span)
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
#[derive(Default)]
struct Filter {
    min: Option<u8>,
    session: Option<String>,
    since: Option<chrono::DateTime<chrono::Utc>>,
    targets: Option<&'static [&'static str]>,
}

impl Filter {
    /// Whether a line (`<timestamp> <LEVEL> <target>: <message>`, the target possibly after
    /// span names ending in `:`) passes. A line without a timestamp or level (a continuation)
    /// passes the time and level tests, as in Python Hermes; the component test needs the
    /// target, so such a line fails it.
    fn keep(&self, line: &str) -> bool {
        let mut words = line.split_whitespace();
        let stamp = words.next();
        let level = words.next();
        if let (Some(since), Some(stamp)) = (self.since, stamp) {
            let at = chrono::DateTime::parse_from_rfc3339(stamp);
            if at.is_ok_and(|at| at < since) {
                return false;
            }
        }
        if let Some(min) = self.min
            && level.and_then(rank).is_some_and(|l| l < min)
        {
            return false;
        }
        if let Some(targets) = self.targets {
            let target = words.find(|w| w.starts_with("hermes") && w.ends_with(':'));
            let crate_name =
                target.map(|t| t.trim_end_matches(':').split("::").next().unwrap_or(""));
            if !crate_name.is_some_and(|c| targets.contains(&c)) {
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
    let mut component = args.component.as_deref();
    let file = match args.log_name.as_str() {
        "agent" => crate::logfile::AGENT_LOG,
        "errors" => crate::logfile::ERRORS_LOG,
        "gateway" => {
            component = Some("gateway");
            crate::logfile::AGENT_LOG
        }
        other => bail!("unknown log `{other}`: use agent, errors, gateway or list"),
    };
    let targets = match component {
        Some(name) => Some(
            COMPONENTS
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, t)| *t)
                .with_context(|| {
                    format!("--component {name}: use gateway, agent, tools, cli or cron")
                })?,
        ),
        None => None,
    };
    let since = match &args.since {
        Some(t) => Some(since_cutoff(t, chrono::Utc::now()).with_context(|| {
            format!("--since {t}: use a number and s, m, h or d (30m, 1h, 2d)")
        })?),
        None => None,
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
        since,
        targets,
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
    // An empty answer says so (on stderr: a pipe gets only log lines).
    if kept.is_empty() {
        errln!("no line of {} matches", path.display());
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
            ..Filter::default()
        };
        assert!(f.keep("2026-12-01T18:37:29Z  WARN hermes_mcp: lost session=abc1"));
        assert!(!f.keep("2026-12-01T18:37:29Z  INFO hermes_mcp: ok session=abc1"));
        assert!(!f.keep("2026-12-01T18:37:29Z ERROR hermes_mcp: lost session=zzz"));
    }

    #[test]
    fn since_and_component_filters() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-01T19:00:00Z")
            .unwrap()
            .to_utc();
        let f = Filter {
            since: since_cutoff("30m", now),
            targets: Some(COMPONENTS[0].1),
            ..Filter::default()
        };
        let gateway = "2026-12-01T18:45:00.123456Z  INFO turn{session=s1}: hermes_gateway::runner: reply sent";
        assert!(f.keep(gateway));
        assert!(
            !f.keep(&gateway.replace("18:45", "18:15")),
            "older than 30 min"
        );
        assert!(!f.keep("2026-12-01T18:45:00Z  INFO hermes_agent::turn: done"));
        assert!(!f.keep("a continuation line without target"));
        assert_eq!(
            since_cutoff("2D", now),
            Some(now - chrono::Duration::days(2))
        );
        for bad in ["", "h", "1w", "-", "1.5h", "99999999999999999d", "1é"] {
            assert_eq!(since_cutoff(bad, now), None, "{bad}");
        }
    }
}
