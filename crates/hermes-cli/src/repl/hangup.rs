//! Exit when the REPL's terminal goes away.
//!
//! A REPL whose terminal closes without a SIGHUP reaching it (its pty master closed by a
//! tmux/ssh/IDE session that died, while the process is not the session leader) would
//! otherwise live on: crossterm's input loop then sees a permanently readable descriptor
//! whose reads return 0 and retries at once, burning a core forever (crossterm issue #793).
//! The watchdog asks the kernel once a second whether standard input has hung up
//! (`poll(2)` with no requested events still reports `POLLHUP`/`POLLERR`/`POLLNVAL`) and
//! ends the process with status 129 (128 + SIGHUP, the status a SIGHUP would give).
//! Completed messages are already committed to the store, so nothing acknowledged is lost.

use std::io::IsTerminal;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};

/// How often standard input is checked.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Exit status after a hangup (128 + SIGHUP).
const HANGUP_STATUS: i32 = 129;

/// Starts the watchdog thread when standard input is a terminal; otherwise does nothing
/// (piped input ends the REPL through Ctrl-D/EOF handling instead).
pub fn watch_stdin() {
    if !std::io::stdin().is_terminal() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("tty-hangup-watchdog".to_string())
        .spawn(|| {
            loop {
                std::thread::sleep(CHECK_EVERY);
                if stdin_hung_up() {
                    tracing::warn!("the terminal hung up; exiting");
                    crate::repl::terminate::end_children_and_exit(HANGUP_STATUS);
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "terminal hangup watchdog not started");
    }
}

/// True when the kernel reports standard input as hung up, in error, or closed.
fn stdin_hung_up() -> bool {
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(&stdin, PollFlags::empty())];
    // A zero timeout: only the current state is wanted.
    match poll(&mut fds, Some(&Timespec::default())) {
        Ok(_) => fds[0]
            .revents()
            .intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL),
        Err(_) => false,
    }
}
