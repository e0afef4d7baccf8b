//! The agent's identity: `SOUL.md` in `HERMES_HOME` (ARCHITECTURE §4), seeded with our own
//! default text on first run, else the built-in default (FEATURES §5).

use std::fs::{self, OpenOptions};
use std::io::{self, Write};

use hermes_protocol::HermesHome;

use crate::fragments::Fragment;

/// The built-in identity text, also written to a fresh `SOUL.md`.
pub fn default_soul() -> &'static str {
    Fragment::IdentityDefault.raw()
}

/// Writes the default identity to `HERMES_HOME/SOUL.md` when the file does not exist yet
/// (creating `HERMES_HOME` if needed). An existing file, even an empty one, is never touched,
/// so a user's edits survive.
///
/// # Errors
/// Any I/O error creating the folder or the file, except that the file already existing
/// (also when another process created it concurrently) is success.
pub fn ensure_soul(home: &HermesHome) -> io::Result<()> {
    hermes_protocol::private_fs::create_dir_all(home.root())?;
    let path = home.soul_file();
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(hermes_protocol::private_fs::PRIVATE_FILE_MODE);
    }
    match opts.open(&path) {
        Ok(mut file) => {
            file.write_all(default_soul().as_bytes())?;
            file.sync_all()
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// What reading `SOUL.md` gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SoulRead {
    /// The trimmed identity text.
    Text(String),
    /// No `SOUL.md` in `HERMES_HOME`.
    Missing,
    /// The file exists but holds only whitespace.
    Blank,
    /// The file could not be read; the I/O error message.
    Unreadable(String),
}

/// Reads `HERMES_HOME/SOUL.md`. A leading byte-order mark is removed and the text trimmed.
/// `SOUL.md` is the user's own file and is not injection-scanned: a persona such as "You are
/// now a pirate" is its purpose.
pub fn read_soul(home: &HermesHome) -> SoulRead {
    match fs::read(home.soul_file()) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text).trim();
            if text.is_empty() {
                SoulRead::Blank
            } else {
                SoulRead::Text(text.to_string())
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => SoulRead::Missing,
        Err(e) => SoulRead::Unreadable(e.to_string()),
    }
}
