//! Typing while an answer streams (issue 20): what the user types during a turn is neither
//! echoed into the answer nor lost. While a turn runs, the terminal's echo is off (the line
//! discipline stays canonical, so Backspace and Ctrl-U still edit the line, and Ctrl-C still
//! interrupts). Each line finished with Enter is read off the terminal between events and
//! queued (lines arriving together, a paste, make one message); the REPL sends the queued
//! messages in order once the turn ends, each shown after the prompt as if typed then. A line not finished yet stays in the terminal's buffer, and the
//! line editor picks it up as typed text at the next prompt (the kernel hands pending
//! canonical input over when the editor switches to raw mode).
//!
//! The terminal settings saved at the start of a turn are put back when the turn ends, before
//! a question is asked during it (approvals, clarify, MCP elicitation), when the guard drops,
//! on a panic in any thread, and on the exit paths of `crate::repl::terminate`. A SIGKILL
//! cannot be caught: then `stty sane` (or `reset`) brings the echo back.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::sync::Mutex;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::termios::{LocalModes, OptionalActions, Termios, tcgetattr, tcsetattr};

/// The settings to restore, while echo is off.
static SAVED: Mutex<Option<Termios>> = Mutex::new(None);

/// Puts back the terminal settings saved when echo was turned off, if it is off (safe to
/// call from any thread, any number of times).
pub fn restore_terminal() {
    let saved = SAVED.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(saved) = saved {
        let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &saved);
    }
}

/// Turns the terminal's echo off, saving its settings; nothing when standard input is not a
/// terminal or echo is off already. The first call also makes a panic anywhere in the
/// process put the terminal back before the panic is reported.
fn silence() {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return;
    }
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
    });
    let mut saved = SAVED.lock().unwrap_or_else(|e| e.into_inner());
    if saved.is_some() {
        return;
    }
    let Ok(current) = tcgetattr(&stdin) else {
        return;
    };
    let mut quiet = current.clone();
    quiet
        .local_modes
        .remove(LocalModes::ECHO | LocalModes::ECHONL);
    // Ctrl-C interrupts the turn but keeps the line being typed (the kernel would flush it).
    quiet.local_modes.insert(LocalModes::NOFLSH);
    if tcsetattr(&stdin, OptionalActions::Now, &quiet).is_ok() {
        *saved = Some(current);
    }
}

/// Reads the answer to a question asked during a turn (an approval) from the terminal, with
/// echo on: the line, or `None` when Ctrl-C was pressed meanwhile or the input ended (the
/// user pass of issue 20: Ctrl-C at the approval question only echoed `^C`). Needs the
/// multi-threaded runtime (the Ctrl-C watch runs beside the blocked read).
pub fn read_answer() -> Option<String> {
    match read_line_or_ctrl_c() {
        Answer::Line(line) => Some(line),
        Answer::Interrupted | Answer::Ended => None,
    }
}

/// What the terminal gave for a question: a line (with its newline), Ctrl-C, or the end of
/// the input.
pub enum Answer {
    /// A line the user finished with Enter.
    Line(String),
    /// Ctrl-C was pressed before a line was finished.
    Interrupted,
    /// Standard input ended or cannot be read.
    Ended,
}

/// Waits for one line on standard input while watching for Ctrl-C (a blocked `read_line`
/// would only echo `^C`): standard input is polled every 100 ms and read only when a line is
/// ready. Needs the multi-threaded runtime.
pub fn read_line_or_ctrl_c() -> Answer {
    use std::io::BufRead;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let interrupted = Arc::new(AtomicBool::new(false));
    let watch = tokio::runtime::Handle::try_current().ok().map(|rt| {
        let flag = interrupted.clone();
        rt.spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                flag.store(true, Ordering::SeqCst);
            }
        })
    });
    let answer = tokio::task::block_in_place(|| {
        let stdin = std::io::stdin();
        loop {
            if interrupted.load(Ordering::SeqCst) {
                return Answer::Interrupted;
            }
            let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
            let wait = Timespec {
                tv_sec: 0,
                tv_nsec: 100_000_000,
            };
            match poll(&mut fds, Some(&wait)) {
                Ok(0) => continue,
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return Answer::Ended,
            }
            let mut line = String::new();
            return match stdin.lock().read_line(&mut line) {
                Ok(0) | Err(_) => Answer::Ended,
                Ok(_) => Answer::Line(line),
            };
        }
    });
    if let Some(watch) = watch {
        watch.abort();
    }
    answer
}

/// The terminal as a [`std::io::BufRead`] for questions of several lines (clarify, MCP
/// elicitation): each line comes from [`read_line_or_ctrl_c`]; after Ctrl-C it reads as
/// ended, and [`TerminalAnswers::interrupted`] says so, so the caller stops the turn as
/// Ctrl-C does anywhere else.
#[derive(Default)]
pub struct TerminalAnswers {
    line: Vec<u8>,
    pos: usize,
    interrupted: bool,
    ended: bool,
}

impl TerminalAnswers {
    /// Whether Ctrl-C ended the input.
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }
}

impl std::io::Read for TerminalAnswers {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::io::BufRead;
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl std::io::BufRead for TerminalAnswers {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.pos >= self.line.len() && !self.ended {
            match read_line_or_ctrl_c() {
                Answer::Line(line) => {
                    self.line = line.into_bytes();
                    self.pos = 0;
                }
                Answer::Interrupted => {
                    self.interrupted = true;
                    self.ended = true;
                }
                Answer::Ended => self.ended = true,
            }
        }
        Ok(self.line.get(self.pos..).unwrap_or_default())
    }

    fn consume(&mut self, amount: usize) {
        self.pos = (self.pos + amount).min(self.line.len());
    }
}

/// Lines typed during one turn. Created when the turn starts (echo goes off); dropping it
/// puts the terminal back.
pub struct TypeAhead {
    /// Finished lines, oldest first.
    lines: VecDeque<String>,
    /// Bytes of a line read without its newline yet.
    partial: Vec<u8>,
    /// The terminal said end-of-file (Ctrl-D on an empty line): stop reading this turn.
    eof: bool,
}

impl TypeAhead {
    /// Starts collecting: turns echo off.
    pub fn start() -> TypeAhead {
        silence();
        TypeAhead {
            lines: VecDeque::new(),
            partial: Vec::new(),
            eof: false,
        }
    }

    /// Reads the lines finished since the last call, without waiting (call between events,
    /// every 100 ms or so). Lines that arrived together are one paste, and one message (no
    /// one types two lines within a tick; a pasted block arrives at once).
    pub fn collect(&mut self) {
        let before = self.lines.len();
        self.read_ready();
        if self.lines.len() > before + 1 {
            let pasted: Vec<String> = self.lines.drain(before..).collect();
            self.lines.push_back(pasted.join("\n"));
        }
    }

    fn read_ready(&mut self) {
        let stdin = std::io::stdin();
        let silenced = SAVED.lock().map(|s| s.is_some()).unwrap_or(false);
        if self.eof || !silenced || !stdin.is_terminal() {
            return;
        }
        loop {
            let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
            match poll(&mut fds, Some(&Timespec::default())) {
                Ok(n) if n > 0 && fds[0].revents().contains(PollFlags::IN) => {}
                _ => return,
            }
            // Canonical mode: one read returns at most one finished line.
            let mut buf = [0u8; 4096];
            match rustix::io::read(&stdin, &mut buf) {
                Ok(0) | Err(_) => {
                    self.eof = true;
                    return;
                }
                Ok(n) => self.take_bytes(&buf[..n]),
            }
        }
    }

    fn take_bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' || b == b'\r' {
                let line = String::from_utf8_lossy(&std::mem::take(&mut self.partial)).into_owned();
                self.lines.push_back(line);
            } else {
                self.partial.push(b);
            }
        }
    }

    /// Puts echo back while the user is asked something during the turn.
    pub fn pause(&mut self) {
        self.collect();
        restore_terminal();
    }

    /// Turns echo off again after [`Self::pause`].
    pub fn resume(&mut self) {
        silence();
    }

    /// Ends the turn: the terminal is put back, and the finished lines are returned in the
    /// order typed (blank ones dropped).
    pub fn finish(mut self) -> VecDeque<String> {
        self.collect();
        restore_terminal();
        std::mem::take(&mut self.lines)
            .into_iter()
            .filter(|l| !l.trim().is_empty())
            .collect()
    }
}

impl Drop for TypeAhead {
    fn drop(&mut self) {
        restore_terminal();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_lines_queue_in_order_and_the_partial_one_waits() {
        let mut t = TypeAhead {
            lines: VecDeque::new(),
            partial: Vec::new(),
            eof: false,
        };
        t.take_bytes(b"first\nsec");
        t.take_bytes("ond ✓\n\nthi".as_bytes());
        assert_eq!(t.lines, ["first", "second ✓", ""]);
        assert_eq!(t.partial, b"thi");
        assert_eq!(t.finish(), ["first", "second ✓"]);
    }
}
