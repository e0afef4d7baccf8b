//! Files and folders only their owner can read: every file hermes creates under
//! `HERMES_HOME` is mode 0600 and every folder 0700 (issue 18 item 2), whatever the umask.
//!
//! The helpers set the mode when the file or folder is created (`OpenOptionsExt::mode`,
//! `DirBuilderExt::mode`), and tighten an existing one that is readable by others, so a
//! home written by an older version or another program is repaired on the next write.
//! [`loose_modes`] finds what is still loose (for `hermes doctor`, `--fix` repairs).
//! SQLite databases: [`prepare_sqlite`] creates the file 0600 before SQLite opens it; SQLite
//! on Unix gives its `-wal` and `-shm` files the mode of the database file.
//! On other platforms the helpers are the plain `std::fs` calls.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Mode of files hermes creates under `HERMES_HOME` (owner read/write).
pub const PRIVATE_FILE_MODE: u32 = 0o600;
/// Mode of folders hermes creates under `HERMES_HOME` (owner only).
pub const PRIVATE_DIR_MODE: u32 = 0o700;

/// Creates `path` and its missing parents with mode 0700; an existing `path` that others
/// can read or enter is tightened to 0700 when we may (parents that exist are left as they
/// are; a folder we cannot change is used as it is).
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(PRIVATE_DIR_MODE)
            .create(path)?;
        tighten_best_effort(path);
        Ok(())
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(path)
    }
}

/// Opens `path` for writing, created with mode 0600 (parents 0700) and truncated; an
/// existing file readable by others is tightened first.
pub fn create(path: &Path) -> io::Result<File> {
    open(path, false)
}

/// Opens `path` for appending, created with mode 0600 (parents 0700) when missing; an
/// existing file readable by others is tightened.
pub fn open_append(path: &Path) -> io::Result<File> {
    open(path, true)
}

fn open(path: &Path, append: bool) -> io::Result<File> {
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
        && !parent.exists()
    {
        create_dir_all(parent)?;
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.create(true);
    if append {
        opts.append(true);
    } else {
        opts.write(true).truncate(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(PRIVATE_FILE_MODE);
    }
    let file = opts.open(path)?;
    tighten_best_effort(path);
    Ok(file)
}

/// Writes `contents` to `path` (created 0600, parents 0700; truncated if it exists).
pub fn write(path: &Path, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let mut f = create(path)?;
    f.write_all(contents.as_ref())?;
    f.flush()
}

/// Writes `contents` to `path` atomically: a temp file (0600) in the same folder, synced,
/// then renamed over `path`. A reader sees the old or the new file, never half of one.
pub fn write_atomic(path: &Path, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = create(&tmp)?;
        f.write_all(contents.as_ref())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Tightens an existing `path`: a file readable or writable by group or others gets mode
/// 0600 (0700 when it is executable: skill scripts keep working), a folder 0700. A missing
/// path or a symlink is left alone.
pub fn tighten(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        if let Some(target) = target_mode(path)? {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(target))?;
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// [`tighten`], ignoring a failure (a file owned by another user, a read-only mount): the
/// write that follows must not fail because an existing file could not be tightened;
/// `hermes doctor` reports what stays loose ([`loose_modes`]).
fn tighten_best_effort(path: &Path) {
    let _ = tighten(path);
}

/// The mode `path` should get, or `None` when it is already private (or missing, or a
/// symlink).
#[cfg(unix)]
fn target_mode(path: &Path) -> io::Result<Option<u32>> {
    use std::os::unix::fs::PermissionsExt;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if meta.file_type().is_symlink() {
        return Ok(None);
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 == 0 {
        return Ok(None);
    }
    Ok(Some(if meta.is_dir() {
        PRIVATE_DIR_MODE
    } else if mode & 0o100 != 0 {
        0o700
    } else {
        PRIVATE_FILE_MODE
    }))
}

/// Makes a SQLite database at `path` private before SQLite opens it: creates the folder
/// (0700) and an empty file (0600) when missing — SQLite accepts an empty file as a new
/// database and creates `-wal`/`-shm` with the database file's mode — and tightens an
/// existing database and its `-wal`/`-shm`/`-journal` files.
pub fn prepare_sqlite(path: &Path) -> io::Result<()> {
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        create_dir_all(parent)?;
    }
    if !path.exists() {
        let mut opts = std::fs::OpenOptions::new();
        opts.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(PRIVATE_FILE_MODE);
        }
        opts.open(path)?;
    }
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        tighten_best_effort(Path::new(&p));
    }
    Ok(())
}

/// One file or folder under a home that others can read or enter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LooseMode {
    /// The file or folder.
    pub path: PathBuf,
    /// Its permission bits (e.g. `0o644`).
    pub mode: u32,
    /// True for a folder.
    pub is_dir: bool,
}

/// Every file and folder under `root` (and `root` itself) whose mode lets group or others
/// in, without following symlinks. With `fix`, each is tightened ([`tighten`]) and the
/// ones that could not be are returned with the error text. Returns `(loose, failures)`.
pub fn loose_modes(root: &Path, fix: bool) -> (Vec<LooseMode>, Vec<(PathBuf, String)>) {
    let mut loose = Vec::new();
    let mut failures = Vec::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mut stack = vec![root.to_path_buf()];
        while let Some(path) = stack.pop() {
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                continue;
            }
            let mode = meta.permissions().mode() & 0o7777;
            if mode & 0o077 != 0 {
                loose.push(LooseMode {
                    path: path.clone(),
                    mode,
                    is_dir: meta.is_dir(),
                });
                if fix && let Err(e) = tighten(&path) {
                    failures.push((path.clone(), e.to_string()));
                }
            }
            if meta.is_dir()
                && let Ok(entries) = std::fs::read_dir(&path)
            {
                stack.extend(entries.flatten().map(|e| e.path()));
            }
        }
        loose.sort_by(|a, b| a.path.cmp(&b.path));
    }
    #[cfg(not(unix))]
    let _ = (root, fix);
    (loose, failures)
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn created_files_and_folders_are_private_whatever_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("home");
        write(&root.join("a/b/file.txt"), "x").unwrap();
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&root.join("a/b")), 0o700);
        assert_eq!(mode(&root.join("a/b/file.txt")), 0o600);
        write_atomic(&root.join("c.json"), "{}").unwrap();
        assert_eq!(mode(&root.join("c.json")), 0o600);
        assert_eq!(
            std::fs::read_dir(&root).unwrap().count(),
            2,
            "no temp file left"
        );
        let mut f = open_append(&root.join("logs/x.log")).unwrap();
        f.write_all(b"line\n").unwrap();
        assert_eq!(mode(&root.join("logs/x.log")), 0o600);
    }

    #[test]
    fn existing_loose_files_are_tightened_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(root.join("state.db"), "").unwrap();
        std::fs::set_permissions(
            root.join("state.db"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        std::fs::write(root.join("run.sh"), "").unwrap();
        std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let (loose, _) = loose_modes(root, false);
        assert_eq!(loose.len(), 3, "{loose:?}");
        assert_eq!(mode(&root.join("state.db")), 0o644, "report only");
        let (_, failures) = loose_modes(root, true);
        assert!(failures.is_empty());
        assert_eq!(mode(&root.join("state.db")), 0o600);
        assert_eq!(mode(&root.join("run.sh")), 0o700);
        assert_eq!(mode(root), 0o700);
        assert!(loose_modes(root, false).0.is_empty());
        std::fs::set_permissions(
            root.join("state.db"),
            std::fs::Permissions::from_mode(0o666),
        )
        .unwrap();
        write(&root.join("state.db"), "y").unwrap();
        assert_eq!(mode(&root.join("state.db")), 0o600);
    }

    #[test]
    fn sqlite_files_are_created_private() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("h/state.db");
        prepare_sqlite(&db).unwrap();
        assert_eq!(mode(&db), 0o600);
        assert_eq!(std::fs::metadata(&db).unwrap().len(), 0);
        let wal = dir.path().join("h/state.db-wal");
        std::fs::write(&wal, "").unwrap();
        std::fs::set_permissions(&wal, std::fs::Permissions::from_mode(0o644)).unwrap();
        prepare_sqlite(&db).unwrap();
        assert_eq!(mode(&wal), 0o600);
    }
}
