//! Writing results to stdout without panicking when the reader has gone away
//! (`hermes sessions list | head -2`): `println!` panics on a broken pipe, `outln!` stops
//! quietly instead.

use std::io::Write;
use std::sync::{Arc, OnceLock};

use hermes_protocol::SecretRedactor;

/// The home's secrets, known once logging is set up (`main`).
static REDACTOR: OnceLock<Arc<SecretRedactor>> = OnceLock::new();

/// Sets the redactor every line written to the terminal goes through (once per process).
pub fn set_redactor(redactor: Arc<SecretRedactor>) {
    let _ = REDACTOR.set(redactor);
}

/// `text` as it may reach the terminal: every secret value of the home replaced by its
/// marker, and secret-looking assignments and tokens masked (`hermes_llm::redact_secrets`:
/// `api_key=…` in a URL, `Bearer …`), as in the log files. Command output, warnings and
/// error lines all pass through here, so a key in a server URL or an error message is not
/// shown (the user pass of issue 20).
pub fn mask(text: &str) -> String {
    let known = match REDACTOR.get() {
        Some(r) => r.redact(text),
        None => std::borrow::Cow::Borrowed(text),
    };
    hermes_llm::redact_secrets(&known)
}

/// Writes `text` and a newline to stdout, secrets masked ([`mask`]); a closed pipe ends the
/// process with status 0, as with other command-line tools.
pub fn line(text: String) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{}", mask(&text))
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

/// Writes `text` and a newline to stderr, secrets masked ([`mask`]); a closed stderr is
/// ignored.
pub fn err_line(text: String) {
    let _ = writeln!(std::io::stderr().lock(), "{}", mask(&text));
}

/// A writer for the stderr log layer: each formatted record masked ([`mask`]) as a whole
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
