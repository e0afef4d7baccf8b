//! A `hermes` process on a pseudo-terminal (expectrl) with the terminal's side played by the
//! test: cursor position queries (`ESC [6n`, sent by reedline before it draws the prompt)
//! are answered, everything written is kept with escapes removed.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use expectrl::process::unix::WaitStatus;
use expectrl::session::OsSession;
use expectrl::{Expect, Session};

/// Generous bound that only catches a hang.
pub const BOUND: Duration = Duration::from_secs(90);

/// A `hermes` process on a pty, with the terminal's side played by the test: cursor position
/// queries (`ESC [6n`, sent by reedline before it draws the prompt) are answered.
pub struct Term {
    pub session: OsSession,
    /// Everything the program wrote, escapes removed.
    pub seen: String,
    /// Where the next [`Term::wait_for`] starts looking.
    pub mark: usize,
    /// Cursor position queries seen so far.
    pub queries: usize,
}

impl Term {
    pub fn spawn(home: &Path, cwd: &Path, args: &[&str]) -> Term {
        Term::spawn_with(home, cwd, args, &[])
    }

    pub fn spawn_with(home: &Path, cwd: &Path, args: &[&str], vars: &[(&str, String)]) -> Term {
        Term::spawn_sized(home, cwd, args, vars, false, 120, 40)
    }

    /// `hermes args…` on a `cols`×`rows` pty; `color` drops NO_COLOR and sets
    /// TERM=xterm-256color (Markdown rendering and wrapping on), else NO_COLOR and TERM=xterm.
    pub fn spawn_sized(
        home: &Path,
        cwd: &Path,
        args: &[&str],
        vars: &[(&str, String)],
        color: bool,
        cols: u16,
        rows: u16,
    ) -> Term {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermes"));
        cmd.env_clear()
            .env("HERMES_HOME", home)
            .env("HOME", home)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("TERM", if color { "xterm-256color" } else { "xterm" })
            .envs(vars.iter().map(|(k, v)| (k.to_string(), v.clone())))
            .current_dir(cwd)
            .args(args);
        if !color {
            cmd.env("NO_COLOR", "1");
        }
        let mut session = Session::spawn(cmd).unwrap();
        session
            .get_process_mut()
            .set_window_size(cols, rows)
            .unwrap();
        Term {
            session,
            seen: String::new(),
            mark: 0,
            queries: 0,
        }
    }

    /// Resizes the terminal (the kernel sends the program SIGWINCH).
    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.session
            .get_process_mut()
            .set_window_size(cols, rows)
            .unwrap();
    }

    /// What was written after the mark.
    pub fn since_mark(&self) -> &str {
        &self.seen[self.mark..]
    }

    /// Reads what is available, answering cursor position queries.
    pub fn pump(&mut self) {
        let mut buf = [0u8; 4096];
        loop {
            match self.session.try_read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    let chunk = String::from_utf8_lossy(&buf[..n]).into_owned();
                    for _ in 0..chunk.matches("\x1b[6n").count() {
                        self.queries += 1;
                        self.session.send("\x1b[1;1R").unwrap();
                    }
                    let plain = strip_ansi_escapes::strip_str(&chunk);
                    self.seen.push_str(&plain);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(_) => return,
            }
        }
    }

    /// Waits until `needle` appears after the mark, then moves the mark past it.
    pub fn wait_for(&mut self, needle: &str) {
        let start = Instant::now();
        loop {
            self.pump();
            if let Some(i) = self.seen[self.mark..].find(needle) {
                self.mark += i + needle.len();
                return;
            }
            assert!(
                start.elapsed() < BOUND,
                "never saw {needle:?}; output after the mark:\n{}",
                &self.seen[self.mark..]
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until reedline has asked for the cursor position `n` times in all (it does once
    /// each time it draws a fresh prompt).
    pub fn wait_for_prompt_number(&mut self, n: usize) {
        let start = Instant::now();
        while self.queries < n {
            self.pump();
            assert!(
                start.elapsed() < BOUND,
                "prompt {n} never came; output:\n{}",
                &self.seen[self.mark..]
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn send(&mut self, text: &str) {
        self.session.send(text).unwrap();
    }

    /// Waits for the process to end and returns its exit code.
    pub fn exit_code(&mut self) -> i32 {
        let start = Instant::now();
        loop {
            self.pump();
            match self.session.get_process().status() {
                Ok(WaitStatus::Exited(_, code)) => return code,
                Ok(WaitStatus::Signaled(_, sig, _)) => panic!("killed by {sig:?}"),
                _ => {}
            }
            assert!(start.elapsed() < BOUND, "hermes did not exit");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

pub fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < BOUND, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
