//! `hermes skills {list,show,install,remove}` (FEATURES §7). The listing and `-s/--skills`
//! preloading, shared with the REPL, are in `crate::views::skills`.
//!
//! Install copies a skill folder from a local directory into `HERMES_HOME/skills/` after the
//! same checks the agent's own skill writes get: a parseable `SKILL.md` with a valid name and a
//! description, the context injection scan over every text file, size caps, no symlinks. A git
//! URL is cloned first ([`crate::commands::skills::git`]) and its skill folder installed the same way.

pub mod git;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use hermes_context::skills::{
    SKILL_MD_MAX_CHARS, SUPPORT_FILE_MAX_BYTES, SkillCatalog, parse_skill_md, valid_skill_name,
};
use hermes_context::{ScanScope, scan_for_injection};

use crate::assembly::app::App;
use crate::views::skills::list_text;

/// Most files a skill folder may hold when installed.
pub const INSTALL_MAX_FILES: usize = 200;

/// `hermes skills …`
#[derive(Debug, Subcommand)]
pub enum SkillsCmd {
    /// Installed skills by category, and files that failed to load.
    List,
    /// One skill's SKILL.md and its supporting files.
    Show {
        /// Skill name.
        name: String,
    },
    /// Copy a skill folder (holding SKILL.md) into HERMES_HOME/skills after a safety scan.
    Install {
        /// A local folder, or a git URL (`https://…`, `git@…`, `file://…`; `#<folder>` picks
        /// a folder inside the repository) cloned with `git` first.
        source: String,
        /// Category folder to install under (default: top level).
        #[arg(long)]
        category: Option<String>,
        /// Replace an installed skill of the same name.
        #[arg(long)]
        force: bool,
    },
    /// Delete an installed skill.
    Remove {
        /// Skill name.
        name: String,
    },
    /// A Python Hermes `skills` action hermes does not have.
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// Runs a skills subcommand; returns the process exit code.
pub fn run(profile: Option<&str>, action: &SkillsCmd) -> Result<i32> {
    let app = App::load(profile)?;
    let root = app.home.skills_dir();
    match action {
        SkillsCmd::Other(words) => Ok(crate::commands::redirect::answer::<SkillsCmd>(
            &["skills"],
            words,
        )),
        SkillsCmd::List => {
            let disabled = app
                .config
                .skills
                .disabled_for(Some(crate::assembly::runtime::SKILLS_PLATFORM));
            outln!("{}", list_text(&root, &disabled).trim_end());
            Ok(0)
        }
        SkillsCmd::Show { name } => {
            print!("{}", show_text(&root, name)?);
            Ok(0)
        }
        SkillsCmd::Install {
            source,
            category,
            force,
        } => {
            let dest = install(&root, source, category.as_deref(), *force)?;
            outln!("installed {}", dest.display());
            Ok(0)
        }
        SkillsCmd::Remove { name } => {
            let dir = remove(&root, name)?;
            outln!("removed {}", dir.display());
            Ok(0)
        }
    }
}

fn show_text(root: &Path, name: &str) -> Result<String> {
    let catalog = SkillCatalog::load(root);
    let Some(skill) = catalog.find(name) else {
        bail!("no skill named {name:?} (hermes skills list)");
    };
    let text = fs::read_to_string(skill.dir.join("SKILL.md"))
        .with_context(|| format!("reading {}", skill.dir.display()))?;
    let mut out = format!("# {} ({})\n\n{}", skill.name, skill.dir.display(), text);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    let files: Vec<PathBuf> = walk(&skill.dir)?
        .into_iter()
        .filter(|p| p.file_name().is_none_or(|n| n != "SKILL.md"))
        .collect();
    if !files.is_empty() {
        out.push_str("\nSupporting files:\n");
        for f in files {
            let rel = f.strip_prefix(&skill.dir).unwrap_or(&f);
            out.push_str(&format!("  {}\n", rel.display()));
        }
    }
    Ok(out)
}

/// Every file under `dir`, sorted. Symlinks are errors (a skill must not point outside itself).
fn walk(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_symlink() {
                bail!(
                    "{} is a symbolic link; skills are installed without links",
                    entry.path().display()
                );
            } else if kind.is_dir() {
                stack.push(entry.path());
            } else {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A git source: a URL (`scheme://`, `git@host:`) or a `….git` repository path, each
/// optionally followed by `#<folder>`.
fn looks_like_url(source: &str) -> bool {
    let (url, _) = crate::commands::skills::git::split_source(source);
    url.contains("://") || url.starts_with("git@") || url.ends_with(".git")
}

/// Checks the folder `src` as a skill and returns its name. Every text file is scanned.
fn check_skill_dir(src: &Path) -> Result<(String, Vec<PathBuf>)> {
    let skill_md = src.join("SKILL.md");
    let text = fs::read_to_string(&skill_md)
        .with_context(|| format!("{} has no readable SKILL.md", src.display()))?;
    if text.chars().count() > SKILL_MD_MAX_CHARS {
        bail!("SKILL.md is over {SKILL_MD_MAX_CHARS} chars");
    }
    let parsed = parse_skill_md(&text).map_err(|e| anyhow::anyhow!("SKILL.md: {e}"))?;
    let dir_name = src
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let name = parsed.meta.name.clone().unwrap_or(dir_name);
    if !valid_skill_name(&name) {
        bail!("skill name {name:?} is not valid (lowercase letters, digits, `.`, `_`, `-`)");
    }
    if parsed
        .meta
        .description
        .as_deref()
        .is_none_or(|d| d.trim().is_empty())
    {
        bail!("SKILL.md needs a `description` in its frontmatter");
    }
    if parsed.body.trim().is_empty() {
        bail!("SKILL.md has no instructions after the frontmatter");
    }
    let files = walk(src)?;
    if files.len() > INSTALL_MAX_FILES {
        bail!(
            "the folder holds {} files, over {INSTALL_MAX_FILES}",
            files.len()
        );
    }
    for f in &files {
        let bytes = fs::read(f).with_context(|| format!("reading {}", f.display()))?;
        if bytes.len() > SUPPORT_FILE_MAX_BYTES {
            bail!(
                "{} is over {SUPPORT_FILE_MAX_BYTES} bytes",
                f.strip_prefix(src).unwrap_or(f).display()
            );
        }
        // Binary assets are copied unscanned; every text file must pass the scan.
        if let Ok(text) = String::from_utf8(bytes)
            && let Some(finding) = scan_for_injection(&text, ScanScope::Context).first()
        {
            bail!(
                "refused: {} was flagged by the safety scan ({}): {}",
                f.strip_prefix(src).unwrap_or(f).display(),
                finding.category,
                finding.excerpt
            );
        }
    }
    Ok((name, files))
}

/// Installs the skill folder `source` — a local folder, or a git URL (`https://…`, `git@…`,
/// `file://…`, `….git`, optionally `#<folder>`) cloned first — under `root` (in `category`
/// when given) and returns the installed folder. The copy is staged in a hidden folder and renamed into place.
///
/// # Errors
/// A failed git clone (see [`crate::commands::skills::git::clone_skill`]), a folder that is not a valid
/// skill, a scan finding, an existing skill of that name without `force`, or a filesystem
/// failure. Nothing is installed then.
pub fn install(root: &Path, source: &str, category: Option<&str>, force: bool) -> Result<PathBuf> {
    if looks_like_url(source) {
        // The clone lives in a temporary folder until the install below has copied it.
        let cloned = crate::commands::skills::git::clone_skill(source)?;
        return install_dir(root, &cloned.dir, category, force);
    }
    let src = Path::new(source);
    if !src.is_dir() {
        bail!("{source} is not a directory");
    }
    install_dir(root, src, category, force)
}

/// [`install`] for a local folder.
fn install_dir(root: &Path, src: &Path, category: Option<&str>, force: bool) -> Result<PathBuf> {
    if let Some(c) = category
        && !valid_skill_name(c)
    {
        bail!("category {c:?} is not valid (lowercase letters, digits, `.`, `_`, `-`)");
    }
    let (name, files) = check_skill_dir(src)?;
    let parent = match category {
        Some(c) => root.join(c),
        None => root.to_path_buf(),
    };
    if let Some(existing) = SkillCatalog::load(root).find(&name) {
        if !force {
            bail!(
                "a skill named {name:?} is installed at {}; use --force to replace it",
                existing.dir.display()
            );
        }
        fs::remove_dir_all(&existing.dir)
            .with_context(|| format!("removing {}", existing.dir.display()))?;
    }
    let dest = parent.join(&name);
    if dest.exists() {
        bail!(
            "{} exists and is not a skill; move it away first",
            dest.display()
        );
    }
    hermes_protocol::private_fs::create_dir_all(&parent)
        .with_context(|| format!("creating {}", parent.display()))?;
    // A hidden folder (skipped by the catalog) until complete, then renamed into place.
    let staging = parent.join(format!(".install-{name}-{}", std::process::id()));
    let result = copy_files(src, &files, &staging).and_then(|()| {
        fs::rename(&staging, &dest).with_context(|| format!("moving into {}", dest.display()))
    });
    if result.is_err() {
        let _ = fs::remove_dir_all(&staging);
    }
    result.map(|()| dest)
}

fn copy_files(src: &Path, files: &[PathBuf], to_dir: &Path) -> Result<()> {
    hermes_protocol::private_fs::create_dir_all(to_dir)
        .with_context(|| format!("creating {}", to_dir.display()))?;
    for f in files {
        let rel = f.strip_prefix(src).unwrap_or(f);
        let to = to_dir.join(rel);
        // Contents only: permissions of a read-only source would make the copy undeletable.
        // Folders 0700, files 0600 (issue 18 item 2).
        hermes_protocol::private_fs::write(&to, fs::read(f)?)
            .with_context(|| format!("writing {}", to.display()))?;
        copy_exec_bit(f, &to)?;
    }
    Ok(())
}

#[cfg(unix)]
fn copy_exec_bit(from: &Path, to: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if fs::metadata(from)?.permissions().mode() & 0o111 != 0 {
        fs::set_permissions(to, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn copy_exec_bit(_from: &Path, _to: &Path) -> Result<()> {
    Ok(())
}

/// Deletes the installed skill `name` and returns its former folder.
///
/// # Errors
/// No such skill, a folder outside `root`, or a filesystem failure.
pub fn remove(root: &Path, name: &str) -> Result<PathBuf> {
    let catalog = SkillCatalog::load(root);
    let Some(skill) = catalog.find(name) else {
        bail!("no skill named {name:?} (hermes skills list)");
    };
    let root_c = fs::canonicalize(root)?;
    let dir_c = fs::canonicalize(&skill.dir)?;
    if !dir_c.starts_with(&root_c) || dir_c == root_c {
        bail!("{} is not inside {}", dir_c.display(), root_c.display());
    }
    fs::remove_dir_all(&dir_c).with_context(|| format!("removing {}", dir_c.display()))?;
    Ok(skill.dir.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_sources_are_recognised() {
        assert!(looks_like_url("https://github.com/a/b"));
        assert!(looks_like_url("git@github.com:a/b.git"));
        assert!(!looks_like_url("./skills/deploy"));
        assert!(looks_like_url("/srv/repos/skills.git#ops/deploy"));
    }
}
