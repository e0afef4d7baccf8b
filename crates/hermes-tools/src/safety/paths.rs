//! The write deny-list, checked on canonical paths (FEATURES §4).

use std::path::{Component, Path, PathBuf};

use hermes_protocol::HermesHome;

/// Shell start-up files under the user's home that a tool must never write.
const SHELL_RC_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".cshrc",
    ".tcshrc",
    ".kshrc",
    ".config/fish/config.fish",
];

/// Directories under the user's home that a tool must never write into.
const HOME_DENIED_DIRS: &[&str] = &[".ssh", ".gnupg"];

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

/// Checks that a tool may write `path` (absolute, or relative to the process working
/// directory) and returns its canonical form.
///
/// The path is canonicalized with symlinks resolved: an existing file directly, a new file
/// through its nearest existing parent (the missing tail is appended after `.`/`..` are
/// resolved lexically). Denied (FEATURES §4): anything under `<user_home>/.ssh` or
/// `<user_home>/.gnupg`, the shell rc files (`~/.bashrc`, `~/.zshrc`, `~/.profile`,
/// `~/.bash_profile`, …), `HERMES_HOME/.env`, and anything under `/etc`. Denied locations
/// are canonicalized the same way, so a symlink pointing into one of them is caught.
///
/// # Errors
/// A message for the model naming the denied location, or the I/O error of canonicalization.
pub fn check_write_path_in(
    path: &Path,
    home: &HermesHome,
    user_home: Option<&Path>,
) -> Result<PathBuf, String> {
    let canonical = canonicalize_lenient(path)
        .map_err(|e| format!("cannot resolve path {}: {e}", path.display()))?;
    let mut denied_dirs: Vec<PathBuf> = vec![PathBuf::from("/etc")];
    let mut denied_files: Vec<PathBuf> = vec![home.env_file()];
    if let Some(uh) = user_home {
        denied_dirs.extend(HOME_DENIED_DIRS.iter().map(|d| uh.join(d)));
        denied_files.extend(SHELL_RC_FILES.iter().map(|f| uh.join(f)));
    }
    for dir in &denied_dirs {
        for form in forms(dir) {
            if canonical.starts_with(&form) {
                return Err(format!(
                    "writing {} is denied: it is inside the protected location {}",
                    path.display(),
                    dir.display()
                ));
            }
        }
    }
    for file in &denied_files {
        for form in forms(file) {
            if canonical == form {
                return Err(format!(
                    "writing {} is denied: {} is a protected file",
                    path.display(),
                    file.display()
                ));
            }
        }
    }
    Ok(canonical)
}

/// A denied location as written and canonicalized (both, so neither spelling slips by).
fn forms(p: &Path) -> Vec<PathBuf> {
    let mut v = vec![lexical_normalize(p)];
    if let Ok(c) = canonicalize_lenient(p)
        && !v.contains(&c)
    {
        v.push(c);
    }
    v
}

/// Resolves `.` and `..` without touching the file system.
fn lexical_normalize(p: &Path) -> PathBuf {
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
