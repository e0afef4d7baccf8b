//! Path resolution for the safety checks, and the protected-location check of the sandbox
//! policy for callers without a session (FEATURES §4; issue 18).

use std::path::{Component, Path, PathBuf};

use hermes_protocol::HermesHome;

/// Checks that a tool may write `path`, using `$HOME` as the user's home directory.
///
/// See [`check_write_path_in`] for the rules; returns the canonical path to write.
///
/// # Errors
/// A message for the model naming the denied location, or the I/O error of canonicalization.
pub fn check_write_path(path: &Path, home: &HermesHome) -> Result<PathBuf, String> {
    let user_home = std::env::var_os("HOME").map(PathBuf::from);
    check_write_path_in(path, home, user_home.as_deref())
}

/// Checks `path` (absolute, or relative to the process working directory) against the
/// protected locations of the sandbox policy alone (as in `terminal.sandbox: off`) and
/// returns its canonical form: [`crate::sandbox::SandboxPolicy::check_write`] with no
/// writable-area limit. The list is the policy's ([`crate::sandbox::policy`]): HERMES_HOME's
/// secrets and control files, `~/.ssh`, shell start-up files, credential files, `/etc`, ….
///
/// # Errors
/// A message for the model naming the denied location, or the I/O error of canonicalization.
pub fn check_write_path_in(
    path: &Path,
    home: &HermesHome,
    user_home: Option<&Path>,
) -> Result<PathBuf, String> {
    let policy = crate::sandbox::SandboxPolicy::new(&crate::sandbox::PolicyInputs {
        mode: hermes_protocol::config::SandboxMode::Off,
        workspace: Path::new("/"),
        temp_dir: Path::new("/"),
        writable_paths: &[],
        hermes_home: home,
        user_home,
        network: true,
        unix_sockets: true,
        protected: &[],
    });
    policy.check_write(path)
}

/// Resolves `.` and `..` without touching the file system.
pub(crate) fn lexical_normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Canonicalizes `path`; when it does not exist, canonicalizes the nearest existing ancestor
/// and appends the missing components (FEATURES §3, path overlap rule).
pub(crate) fn canonicalize_lenient(path: &Path) -> std::io::Result<PathBuf> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    };
    if let Ok(c) = absolute.canonicalize() {
        return Ok(c);
    }
    let normalized = lexical_normalize(&absolute);
    let mut existing = normalized.clone();
    let mut tail: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(c) = existing.canonicalize() {
            let mut out = c;
            for part in tail.iter().rev() {
                out.push(part);
            }
            return Ok(out);
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                tail.push(name);
                existing = parent.to_path_buf();
            }
            _ => return Ok(normalized),
        }
    }
}

/// Opens `path` for reading without following a symlink in any component
/// (`openat2(RESOLVE_NO_SYMLINKS)`), so a path checked in its canonical form cannot be
/// swapped for a link between the check and the read. Pass a canonical path.
///
/// # Errors
/// The OS error; `ELOOP` when a component is (now) a symlink.
pub fn open_no_symlinks(path: &Path) -> std::io::Result<std::fs::File> {
    use rustix::fs::{CWD, Mode, OFlags, ResolveFlags};
    let fd = rustix::fs::openat2(
        CWD,
        path,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS,
    )?;
    Ok(std::fs::File::from(fd))
}

/// Whether a file name is one that holds key material by convention: `.env` and `.env.*`,
/// `.netrc`, `.git-credentials`, `*.pem`, `*.key`, and ssh private keys (`id_rsa`,
/// `id_ed25519`, …, not their `.pub` halves).
pub fn is_key_material_name(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let lower = name.to_ascii_lowercase();
    lower == ".env"
        || lower.starts_with(".env.")
        || lower == ".netrc"
        || lower == ".git-credentials"
        || lower.ends_with(".pem")
        || lower.ends_with(".key")
        || (lower.starts_with("id_") && !lower.ends_with(".pub") && !lower.contains('.'))
}

/// Whether the open file `meta` is one of the files at `secrets` (same device and inode):
/// a hard link to `.env` under another name is still `.env`.
pub fn is_same_file_as_any(meta: &std::fs::Metadata, secrets: &[PathBuf]) -> bool {
    use std::os::unix::fs::MetadataExt;
    secrets.iter().any(|s| {
        std::fs::metadata(s)
            .is_ok_and(|m| m.is_file() && m.dev() == meta.dev() && m.ino() == meta.ino())
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn lenient_canonicalization_of_missing_tail() {
        let p = canonicalize_lenient(Path::new("/nonexistent-hermes-dir/a/../b.txt")).unwrap();
        assert_eq!(p, PathBuf::from("/nonexistent-hermes-dir/b.txt"));
    }

    #[test]
    fn etc_is_denied_and_tmp_is_not() {
        let home = HermesHome::new("/nonexistent-hermes-home");
        assert!(check_write_path_in(Path::new("/etc/passwd"), &home, None).is_err());
        assert!(check_write_path_in(Path::new("/etc/../etc/x/new"), &home, None).is_err());
        assert!(check_write_path_in(Path::new("/tmp/hermes-ok.txt"), &home, None).is_ok());
        assert!(
            check_write_path_in(Path::new("/nonexistent-hermes-home/.env"), &home, None).is_err()
        );
        let uh = Path::new("/nonexistent-user");
        assert!(
            check_write_path_in(Path::new("/nonexistent-user/.bashrc"), &home, Some(uh)).is_err()
        );
        assert!(
            check_write_path_in(Path::new("/nonexistent-user/.ssh/id"), &home, Some(uh)).is_err()
        );
        assert!(check_write_path_in(Path::new("/nonexistent-user/notes"), &home, Some(uh)).is_ok());
    }
}
