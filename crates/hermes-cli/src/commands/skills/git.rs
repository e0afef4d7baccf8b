//! `hermes skills install <git url>` (FEATURES §7, issue 4 item 4): the repository is cloned
//! with the `git` program into a temporary folder (shallow, no prompts), its `.git` folder is
//! dropped, and the skill folder inside goes through the same checks and install as a local
//! folder ([`crate::commands::skills::install`]). `file://` URLs and local repository paths work
//! offline.
//!
//! Which folder of the repository is the skill: `<url>#<path>` names it; otherwise the
//! repository root when it holds a `SKILL.md`, else the only folder below it that does.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// Environment variable naming the git program to run (default `git` on `PATH`).
pub const GIT_PROGRAM_ENV: &str = "HERMES_GIT";

/// Folder depth searched below a cloned repository's root for `SKILL.md`.
const SEARCH_DEPTH: usize = 3;

/// A cloned repository in a temporary folder (removed on drop) and the skill folder in it.
pub struct ClonedSkill {
    _tmp: tempfile::TempDir,
    /// The skill folder inside the clone.
    pub dir: PathBuf,
}

/// Splits `url#path` into the clone URL and the optional folder inside the repository.
pub fn split_source(source: &str) -> (&str, Option<&str>) {
    match source.rsplit_once('#') {
        Some((url, path)) if !path.is_empty() => (url, Some(path)),
        Some((url, _)) => (url, None),
        None => (source, None),
    }
}

/// The folder name a clone of `url` gets: its last path segment without `.git`
/// (`https://host/a/deploy-flow.git` → `deploy-flow`), `skill` when there is none.
pub fn repo_name(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    let last = trimmed
        .rsplit(['/', ':'])
        .next()
        .unwrap_or("")
        .trim_end_matches(".git");
    if last.is_empty() {
        "skill".to_string()
    } else {
        last.to_string()
    }
}

/// Clones `source` (`<url>[#<path>]`) and finds the skill folder in it.
///
/// # Errors
/// `git` missing (with what to do instead), a failed clone (git's own message), a `#path`
/// that leaves the repository or does not exist, or no / several `SKILL.md` folders without
/// a `#path` choosing one.
pub fn clone_skill(source: &str) -> Result<ClonedSkill> {
    let (url, sub) = split_source(source);
    let git = std::env::var(GIT_PROGRAM_ENV).unwrap_or_else(|_| "git".to_string());
    let tmp = tempfile::Builder::new()
        .prefix("hermes-skill-")
        .tempdir()
        .context("creating a temporary folder for the clone")?;
    let repo = tmp.path().join(repo_name(url));
    let output = Command::new(&git)
        .args(["clone", "--depth", "1", "--quiet", "--"])
        .arg(url)
        .arg(&repo)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output();
    let output = match output {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "installing from a git URL needs the `{git}` program, which was not found; install \
             git, or clone the repository yourself and run `hermes skills install <folder>`"
        ),
        Err(e) => bail!("could not run `{git}`: {e}"),
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        bail!(
            "git clone of {url} failed ({}): {}",
            output.status,
            stderr.trim()
        );
    }
    let git_dir = repo.join(".git");
    if git_dir.exists() {
        std::fs::remove_dir_all(&git_dir)
            .with_context(|| format!("removing {}", git_dir.display()))?;
    }
    let dir = match sub {
        Some(path) => {
            let rel = Path::new(path);
            if rel.is_absolute()
                || rel
                    .components()
                    .any(|c| matches!(c, std::path::Component::ParentDir))
            {
                bail!("`#{path}` must be a folder inside the repository");
            }
            let dir = repo.join(rel);
            if !dir.join("SKILL.md").is_file() {
                bail!("{url} has no SKILL.md in `{path}`");
            }
            dir
        }
        None => find_skill_dir(&repo, url)?,
    };
    Ok(ClonedSkill { _tmp: tmp, dir })
}

/// The repository root when it is a skill, else the only skill folder below it.
fn find_skill_dir(repo: &Path, url: &str) -> Result<PathBuf> {
    if repo.join("SKILL.md").is_file() {
        return Ok(repo.to_path_buf());
    }
    let mut found = Vec::new();
    let mut stack = vec![(repo.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            let path = entry.path();
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if hidden || !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if path.join("SKILL.md").is_file() {
                found.push(path);
            } else if depth + 1 < SEARCH_DEPTH {
                stack.push((path, depth + 1));
            }
        }
    }
    found.sort();
    match found.len() {
        0 => bail!("{url} holds no SKILL.md (searched {SEARCH_DEPTH} folders deep)"),
        1 => Ok(found.remove(0)),
        _ => {
            let names: Vec<String> = found
                .iter()
                .map(|p| p.strip_prefix(repo).unwrap_or(p).display().to_string())
                .collect();
            bail!(
                "{url} holds several skills ({}); choose one with `{url}#<folder>`",
                names.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_split_into_url_and_folder() {
        assert_eq!(
            split_source("https://h/a/b.git#skills/x"),
            ("https://h/a/b.git", Some("skills/x"))
        );
        assert_eq!(split_source("file:///tmp/r"), ("file:///tmp/r", None));
        assert_eq!(split_source("file:///tmp/r#"), ("file:///tmp/r", None));
    }

    #[test]
    fn repo_names_drop_dot_git() {
        assert_eq!(
            repo_name("https://github.com/a/deploy-flow.git"),
            "deploy-flow"
        );
        assert_eq!(repo_name("git@github.com:a/b.git"), "b");
        assert_eq!(repo_name("file:///tmp/skills/"), "skills");
        assert_eq!(repo_name(""), "skill");
    }
}
