//! Harness of the Python interop suite (issue 17, "How it is checked"): one temporary
//! HERMES_HOME driven by both real programs — the `hermes` binary of this workspace and
//! Python Hermes 0.19.0 (`$HERMES_PYTHON_HERMES/bin/hermes`, the venv made by
//! `scripts/python-hermes.sh`) — against one loopback mock model both reach as a `custom`
//! OpenAI-compatible provider.
//!
//! The mock is a scripted model ([`brain`]): it reads its instructions from the latest user
//! message, so any number of turns from either program, in any order and at the same time,
//! get deterministic answers. A line `CALL <tool> <json arguments>` in the user message makes
//! it call that tool (several such lines: one call per model request, in order); once every
//! call has its tool result, or when there is none, it answers `Noted: <first other line>`.
//! Requests without tools (titles and other side calls) get a short text.
//!
//! Assertions are collected in a [`Checks`] list rather than stopping at the first failure,
//! so one run reports everything that holds and everything that does not (with the failing
//! program's own message).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use hermes_testkit::{MockProvider, MockResponse, TempHome};
use serde_json::Value;

/// How long one program run may take before it is killed (a hang bound, not a timing check).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(150);

/// The venv of the real Python Hermes 0.19.0, from `HERMES_PYTHON_HERMES`. `None` (after
/// printing why) when it is unset or has no `bin/hermes`: the test then skips.
pub fn python_venv(test: &str) -> Option<PathBuf> {
    let Some(venv) = std::env::var_os("HERMES_PYTHON_HERMES").filter(|v| !v.is_empty()) else {
        eprintln!(
            "{test}: skipped: HERMES_PYTHON_HERMES is not set (run scripts/python-hermes.sh and \
             export its output; .ci/run does)"
        );
        return None;
    };
    let venv = PathBuf::from(venv);
    if !venv.join("bin/hermes").is_file() {
        eprintln!(
            "{test}: skipped: {} has no bin/hermes (HERMES_PYTHON_HERMES must name the venv made \
             by scripts/python-hermes.sh)",
            venv.display()
        );
        return None;
    }
    Some(venv)
}

/// Which program runs a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prog {
    /// This workspace's `hermes` binary.
    Ours,
    /// Python Hermes 0.19.0.
    Py,
}

impl Prog {
    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Prog::Ours => "hermes",
            Prog::Py => "python-hermes",
        }
    }

    /// The other program.
    pub fn other(self) -> Prog {
        match self {
            Prog::Ours => Prog::Py,
            Prog::Py => Prog::Ours,
        }
    }
}

/// One finished (or timed-out) program run.
#[derive(Debug, Clone)]
pub struct Run {
    /// Which program ran.
    pub prog: Prog,
    /// The arguments, joined for messages.
    pub args: String,
    /// Exit code (`None`: killed by a signal or the timeout).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// Exit code 0.
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// Stdout and stderr together.
    pub fn text(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }

    /// `<prog> <args>: exit N: <the end of its stderr/stdout>` for failure reports.
    pub fn brief(&self) -> String {
        // The start of a message says what failed; a long one (a schema dump) is cut in the
        // middle.
        let cut = |s: &str, n: usize| -> String {
            let s = s.trim();
            let chars: Vec<char> = s.chars().collect();
            let text = if chars.len() <= 2 * n {
                s.to_string()
            } else {
                let head: String = chars[..n].iter().collect();
                let tail: String = chars[chars.len() - n..].iter().collect();
                format!("{head} […] {tail}")
            };
            text.replace('\n', "\n      ")
        };
        format!(
            "`{} {}` exit {:?}\n      stderr: {}\n      stdout: {}",
            self.prog.name(),
            self.args.replace('\n', "\\n"),
            self.code,
            cut(&self.stderr, 300),
            cut(&self.stdout, 200)
        )
    }

    /// The session id the run printed (both programs print ids like `20260101_120000_ab12cd`:
    /// hermes as `session <id>: …` on stderr, Python as `session_id: <id>`); the last one.
    pub fn session_id(&self) -> Option<String> {
        session_ids(&self.text()).pop()
    }
}

/// Every session id (`YYYYMMDD_HHMMSS_<hex>`) in `text`, in order.
pub fn session_ids(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| {
            let parts: Vec<&str> = w.split('_').collect();
            parts.len() == 3
                && parts[0].len() == 8
                && parts[0].bytes().all(|b| b.is_ascii_digit())
                && parts[1].len() == 6
                && parts[1].bytes().all(|b| b.is_ascii_digit())
                && !parts[2].is_empty()
                && parts[2].bytes().all(|b| b.is_ascii_hexdigit())
        })
        .map(str::to_string)
        .collect()
}

/// The text of a message's `content` (a string or a list of text parts).
pub fn text_of(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// The `CALL <tool> <json>` lines of a user message: (tool name, arguments as JSON text).
pub fn directives(user_text: &str) -> Vec<(String, String)> {
    user_text
        .lines()
        .filter_map(|line| {
            let rest = line.trim().strip_prefix("CALL ")?;
            let (name, args) = rest.split_once(' ')?;
            let args: Value = serde_json::from_str(args.trim()).ok()?;
            Some((name.to_string(), args.to_string()))
        })
        .collect()
}

fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The scripted model: the answer to one chat request (see the module doc).
pub fn brain(request: &Value) -> MockResponse {
    let stream = request
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let text = |t: &str| {
        if stream {
            MockResponse::text(t)
        } else {
            MockResponse::text_json(t)
        }
    };
    let has_tools = request
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    let messages = request
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(last_user) = messages
        .iter()
        .rposition(|m| m.get("role").and_then(Value::as_str) == Some("user"))
    else {
        return text("Side answer.");
    };
    if !has_tools {
        return text("Side answer.");
    }
    let user_text = text_of(&messages[last_user]);
    let calls = directives(&user_text);
    let done = messages[last_user + 1..]
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .count();
    if done < calls.len() {
        let (name, args) = &calls[done];
        let id = format!("call_{done}_{:012x}", fnv(&user_text) & 0xffff_ffff_ffff);
        return if stream {
            MockResponse::tool_calls(&[(&id, name, args)])
        } else {
            MockResponse::tool_calls_json(&[(&id, name, args)])
        };
    }
    let first = user_text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("CALL "))
        .unwrap_or("");
    let first: String = first.chars().take(120).collect();
    text(&format!("Noted: {first}"))
}

/// Python Hermes' config.yaml beside ours (the bench's: `bench/harness/homes.py`):
/// `context_length` spares it a probe of the endpoint and of OpenRouter's model list at every
/// start (no network here), `security.tirith_enabled: false` its download of a scanner.
pub fn shared_config(base_url: &str) -> String {
    format!(
        "model:\n  provider: custom\n  base_url: {base_url}\n  default: interop-model\n  \
         context_length: 200000\nsecurity:\n  tirith_enabled: false\n"
    )
}

/// One HERMES_HOME shared by both programs, the mock model and a working directory.
pub struct Shared {
    /// The scripted model.
    pub mock: MockProvider,
    /// The home (also HOME of both programs).
    pub home: TempHome,
    /// The working directory of every run.
    pub cwd: tempfile::TempDir,
    /// The Python Hermes venv.
    pub venv: PathBuf,
    /// Holds the private `hermes` binary.
    bin_dir: tempfile::TempDir,
    /// That binary.
    pub ours: PathBuf,
}

impl Shared {
    /// A fresh home whose config.yaml selects the mock model for both programs; `None` when
    /// Python Hermes is not available (the reason is printed).
    pub async fn new(test: &str) -> Option<Shared> {
        let venv = python_venv(test)?;
        let mock = MockProvider::start().await;
        mock.set_responder(|req| Some(brain(req)));
        let home = TempHome::new().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.yaml"),
            shared_config(&mock.base_url()),
        )
        .unwrap();
        // Python checks PyPI for a newer release unless this 6-hour cache is fresh.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        std::fs::write(
            home.path().join(".update_check"),
            format!(r#"{{"ts": {now}, "behind": 0, "rev": null, "ver": "0.19.0"}}"#),
        )
        .unwrap();
        // Beside the build (same file system, so a hard link), removed with this value.
        let bin_dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .or_else(|_| tempfile::tempdir())
            .unwrap();
        let ours = private_binary(bin_dir.path());
        Some(Shared {
            mock,
            home,
            cwd,
            venv,
            bin_dir,
            ours,
        })
    }

    /// The home's root.
    pub fn root(&self) -> &Path {
        self.home.path()
    }

    /// Runs `prog args…` on the shared home (only PATH, HOME, HERMES_HOME, LANG, NO_COLOR,
    /// COLUMNS from here), killed after [`RUN_TIMEOUT`].
    pub async fn run(&self, prog: Prog, args: &[&str]) -> Run {
        self.run_with(prog, args, None).await
    }

    /// Same, with `stdin` as its standard input.
    pub async fn run_stdin(&self, prog: Prog, args: &[&str], stdin: &str) -> Run {
        self.run_with(prog, args, Some(stdin.to_string())).await
    }

    /// Runs one program (see [`Shared::run`]); blocking work on a blocking thread.
    async fn run_with(&self, prog: Prog, args: &[&str], stdin: Option<String>) -> Run {
        let program = match prog {
            Prog::Ours => self.ours.clone(),
            Prog::Py => self.venv.join("bin/hermes"),
        };
        let home = self.root().to_path_buf();
        let cwd = self.cwd.path().to_path_buf();
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        tokio::task::spawn_blocking(move || {
            let mut cmd = assert_cmd::Command::new(program);
            cmd.env_clear()
                .env("HERMES_HOME", &home)
                .env("HOME", &home)
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("LANG", "C.UTF-8")
                .env("NO_COLOR", "1")
                .env("COLUMNS", "200")
                .current_dir(&cwd)
                .args(&args)
                .timeout(RUN_TIMEOUT);
            if let Some(input) = stdin {
                cmd.write_stdin(input);
            }
            let out = cmd.output().unwrap();
            Run {
                prog,
                args: args.join(" "),
                code: out.status.code(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        })
        .await
        .unwrap()
    }

    /// One one-shot chat turn (`chat -q QUERY`, resuming `resume` when given: `-r` for
    /// hermes, `--resume` for Python). Python runs with `-Q` (its quiet mode still prints the
    /// session id); hermes without it (its `-Q` drops the closing `session <id>: …` line).
    pub async fn chat(&self, prog: Prog, query: &str, resume: Option<&str>) -> Run {
        let mut args = match prog {
            Prog::Ours => vec!["chat", "-q", query],
            Prog::Py => vec!["chat", "-Q", "-q", query],
        };
        if let Some(id) = resume {
            args.push(match prog {
                Prog::Ours => "-r",
                Prog::Py => "--resume",
            });
            args.push(id);
        }
        self.run(prog, &args).await
    }

    /// The chat requests whose latest user message contains `marker`.
    pub fn requests_for(&self, marker: &str) -> Vec<Value> {
        self.mock
            .requests()
            .into_iter()
            .filter(|r| {
                r.get("messages")
                    .and_then(Value::as_array)
                    .and_then(|ms| {
                        ms.iter()
                            .rev()
                            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
                    })
                    .is_some_and(|m| text_of(m).contains(marker))
            })
            .collect()
    }

    /// The tool results the model was shown in the turn whose user message contains `marker`.
    pub fn tool_results_for(&self, marker: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in self.requests_for(marker) {
            for m in r
                .get("messages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if m.get("role").and_then(Value::as_str) == Some("tool") {
                    let t = text_of(m);
                    if !out.contains(&t) {
                        out.push(t);
                    }
                }
            }
        }
        out
    }

    /// The system prompt the model got in the turn whose user message contains `marker`.
    pub fn system_prompt_for(&self, marker: &str) -> String {
        self.requests_for(marker)
            .first()
            .and_then(|r| r.get("messages").and_then(Value::as_array).cloned())
            .and_then(|ms| {
                ms.iter()
                    .find(|m| m.get("role").and_then(Value::as_str) == Some("system"))
                    .map(text_of)
            })
            .unwrap_or_default()
    }

    /// Every user and assistant text the model was sent in the turn containing `marker`
    /// (the history a resumed session brought back), joined.
    pub fn history_for(&self, marker: &str) -> String {
        self.requests_for(marker)
            .first()
            .and_then(|r| r.get("messages").and_then(Value::as_array).cloned())
            .map(|ms| {
                ms.iter()
                    .filter(|m| {
                        matches!(
                            m.get("role").and_then(Value::as_str),
                            Some("user" | "assistant")
                        )
                    })
                    .map(text_of)
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }

    /// A file of the home as text ("" when missing).
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root().join(rel)).unwrap_or_default()
    }

    /// The `SKILL.md` files under `skills/` (any category depth) of a skill folder named `name`.
    pub fn skill_files(&self, name: &str) -> Vec<PathBuf> {
        fn walk(dir: &Path, name: &str, out: &mut Vec<PathBuf>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let path = e.path();
                if path.is_dir() {
                    if path.file_name().is_some_and(|n| n == name)
                        && path.join("SKILL.md").is_file()
                    {
                        out.push(path.join("SKILL.md"));
                    }
                    walk(&path, name, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root().join("skills"), name, &mut out);
        out
    }

    /// `cron/jobs.json`'s jobs (empty when missing or unreadable).
    pub fn jobs(&self) -> Vec<Value> {
        serde_json::from_str::<Value>(&self.read("cron/jobs.json"))
            .ok()
            .and_then(|v| v.get("jobs").and_then(Value::as_array).cloned())
            .unwrap_or_default()
    }

    /// The job of `cron/jobs.json` with this name.
    pub fn job_named(&self, name: &str) -> Option<Value> {
        self.jobs()
            .into_iter()
            .find(|j| j.get("name").and_then(Value::as_str) == Some(name))
    }
}

/// A private link (or, across file systems, a copy) of this workspace's `hermes` binary in
/// `dir`: a shared `CARGO_TARGET_DIR` (several worktrees building into one) could otherwise
/// replace the file under a running suite, so the checks would mix two builds.
fn private_binary(dir: &Path) -> PathBuf {
    let path = dir.join("hermes");
    let built = env!("CARGO_BIN_EXE_hermes");
    if std::fs::hard_link(built, &path).is_err() {
        std::fs::copy(built, &path).unwrap();
    }
    path
}

/// Named assertions of one test, collected so a run reports all of them.
pub struct Checks {
    test: String,
    passed: Vec<String>,
    failed: Vec<String>,
}

impl Checks {
    /// An empty list for `test`.
    pub fn new(test: &str) -> Checks {
        Checks {
            test: test.to_string(),
            passed: Vec::new(),
            failed: Vec::new(),
        }
    }

    /// Records `what` as passed when `ok`, else as failed with `detail()`.
    pub fn check(&mut self, what: &str, ok: bool, detail: impl FnOnce() -> String) -> bool {
        if ok {
            self.passed.push(what.to_string());
        } else {
            self.failed.push(format!("{what}\n      {}", detail()));
        }
        ok
    }

    /// Records that `run` exited 0.
    pub fn ran(&mut self, what: &str, run: &Run) -> bool {
        self.check(what, run.ok(), || run.brief())
    }

    /// Adds another list's results (of a task that ran beside this one).
    pub fn absorb(&mut self, other: Checks) {
        self.passed.extend(other.passed);
        self.failed.extend(other.failed);
    }

    /// Prints every result and fails the test when any check failed.
    pub fn finish(self) {
        let mut report = format!(
            "{}: {} passed, {} failed\n",
            self.test,
            self.passed.len(),
            self.failed.len()
        );
        for p in &self.passed {
            report.push_str(&format!("  PASS {p}\n"));
        }
        for f in &self.failed {
            report.push_str(&format!("  FAIL {f}\n"));
        }
        eprintln!("{report}");
        assert!(
            self.failed.is_empty(),
            "{}: {} of {} checks failed (each with the failing program's message above)",
            self.test,
            self.failed.len(),
            self.failed.len() + self.passed.len()
        );
    }
}
