//! Writing results to stdout without panicking when the reader has gone away
//! (`hermes sessions list | head -2`): `println!` panics on a broken pipe, `outln!` stops
//! quietly instead.

use std::io::Write;

/// Writes `text` and a newline to stdout; a closed pipe ends the process with status 0, as
/// with other command-line tools.
pub fn line(text: String) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}")
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

/// `println!` for command output that may be piped into `head` and friends.
macro_rules! outln {
    () => {
        $crate::render::output::line(String::new())
    };
    ($($arg:tt)*) => {
        $crate::render::output::line(format!($($arg)*))
    };
}
