//! A throw-away `HERMES_HOME`.

use std::path::Path;

use hermes_protocol::HermesHome;

/// A temporary directory used as `HERMES_HOME`; deleted when dropped.
#[derive(Debug)]
pub struct TempHome {
    dir: tempfile::TempDir,
    home: HermesHome,
}

impl TempHome {
    /// Creates an empty temporary home. Errors when the OS temp dir is not writable.
    pub fn new() -> std::io::Result<TempHome> {
        let dir = tempfile::tempdir()?;
        let home = HermesHome::new(dir.path());
        Ok(TempHome { dir, home })
    }

    /// The home layout.
    pub fn home(&self) -> &HermesHome {
        &self.home
    }

    /// The root folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}
