//! Writing results to stdout without panicking when the reader has gone away
//! (`hermes sessions list | head -2`): `println!` panics on a broken pipe, `outln!` stops
//! quietly instead.

use std::io::Write;

use crate::masking::mask;

/// Writes `text` and a newline to stdout, secrets masked ([`crate::masking::mask`]); a closed pipe ends the
/// process with status 0, as with other command-line tools.
pub fn line(text: String) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{}", mask(&text))
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

/// Writes `text` and a newline to stderr, secrets masked ([`crate::masking::mask`]); a closed stderr is
/// ignored.
pub fn err_line(text: String) {
    let _ = writeln!(std::io::stderr().lock(), "{}", mask(&text));
}

/// A writer for the stderr log layer: each formatted record masked ([`crate::masking::mask`]) as a whole
/// (tracing-subscriber writes one record in one call).
pub struct MaskedStderr;

impl Write for MaskedStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().lock().write_all(mask(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
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

/// `eprintln!` with secrets masked ([`err_line`]).
macro_rules! errln {
    () => {
        $crate::render::output::err_line(String::new())
    };
    ($($arg:tt)*) => {
        $crate::render::output::err_line(format!($($arg)*))
    };
}
