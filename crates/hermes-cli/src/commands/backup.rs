//! `hermes backup [-o PATH] [--include-secrets]` and `hermes import ZIP [--force]` (issue 20;
//! Python Hermes' `hermes backup` / `hermes import`, whose zip layout they share: paths
//! relative to HERMES_HOME, an optional `.hermes/` prefix on import).
//!
//! The backup skips what is regenerated or machine-bound (Python's exclusions: caches,
//! virtualenvs, `node_modules`, `.git`, earlier backups, SQLite `-wal`/`-shm` side files,
//! pid files; and hermes' `models/` and `cache/`), takes `state.db` as a consistent snapshot
//! (`VACUUM INTO`) rather than the live file, and leaves the secrets out — `.env`,
//! `auth.json`, `auth.hermes.json`, `mcp-tokens/` — unless `--include-secrets` is given
//! (unlike Python Hermes, which always includes them). The zip is written owner-only.
//!
//! The import refuses entries that would land outside HERMES_HOME, never restores runtime
//! files of another machine (`gateway.pid`, `gateway_state.json`, …), asks before it
//! overwrites an existing setup (or needs `--force` without a terminal), and writes secret
//! files with mode 0600.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::assembly::app::App;

/// Flags of `hermes backup`.
#[derive(Debug, Clone, Args)]
pub struct BackupArgs {
    /// Where to write the zip (a folder gets `hermes-backup-<time>.zip` inside; default: the
    /// home folder).
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// Also include the secrets: `.env`, `auth.json`, `auth.hermes.json`, `mcp-tokens/`.
    #[arg(long)]
    pub include_secrets: bool,
    /// A label added to the file name (`hermes-backup-<time>-<label>.zip`).
    #[arg(short = 'l', long)]
    pub label: Option<String>,
}

/// Flags of `hermes import`.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The backup zip.
    pub zipfile: PathBuf,
    /// Overwrite an existing setup without asking.
    #[arg(short = 'f', long)]
    pub force: bool,
}

/// Folder names never backed up (Python Hermes' `_EXCLUDED_DIRS`, plus hermes' `models`
/// and `cache`, which `hermes model pull` and the tools fill again).
const EXCLUDED_DIRS: &[&str] = &[
    "hermes-agent",
    "__pycache__",
    ".git",
    "node_modules",
    "backups",
    "checkpoints",
    ".venv",
    "venv",
    "site-packages",
    ".cache",
    ".tox",
    ".nox",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    "models",
    "cache",
];

/// File-name endings never backed up.
const EXCLUDED_SUFFIXES: &[&str] = &[".pyc", ".pyo", ".db-wal", ".db-shm", ".db-journal"];

/// Machine-bound runtime files: never backed up, never restored (Python's lists).
const RUNTIME_NAMES: &[&str] = &[
    "gateway.pid",
    "cron.pid",
    "gateway_state.json",
    "gateway.lock",
    "processes.json",
];

/// Files holding secrets (left out unless asked for; restored with mode 0600).
const SECRET_NAMES: &[&str] = &[".env", "auth.json", "auth.hermes.json"];
/// Folders holding secrets.
const SECRET_DIRS: &[&str] = &["mcp-tokens"];

/// Whether `rel` (a path inside the home) is a secret.
fn is_secret(rel: &Path) -> bool {
    let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
    SECRET_NAMES.contains(&name)
        || rel
            .components()
            .any(|c| SECRET_DIRS.iter().any(|d| c.as_os_str() == *d))
}

/// Whether `rel` is left out of every backup.
fn excluded(rel: &Path) -> bool {
    let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if RUNTIME_NAMES.contains(&name) || EXCLUDED_SUFFIXES.iter().any(|s| name.ends_with(s)) {
        return true;
    }
    let dirs: Vec<_> = rel.components().collect();
    dirs[..dirs.len().saturating_sub(1)]
        .iter()
        .enumerate()
        .any(|(i, c)| {
            let part = c.as_os_str().to_str().unwrap_or("");
            // `models`/`cache`/`hermes-agent` only at the top (a skill may have such a folder).
            let top_only = matches!(part, "models" | "cache" | "hermes-agent");
            EXCLUDED_DIRS.contains(&part) && (!top_only || i == 0)
        })
}

/// `hermes backup`: writes the zip and prints its path; returns the exit code.
pub fn backup(profile: Option<&str>, args: &BackupArgs) -> Result<i32> {
    let app = App::load(profile)?;
    let root = app.home.root().to_path_buf();
    if !root.is_dir() {
        bail!("no hermes home at {} to back up", root.display());
    }
    let stamp = chrono::Local::now().format("%Y-%m-%d-%H%M%S");
    let label = args
        .label
        .as_deref()
        .map(|l| format!("-{}", l.replace(['/', '\\', ' '], "_")))
        .unwrap_or_default();
    let file_name = format!("hermes-backup-{stamp}{label}.zip");
    let mut out = match &args.output {
        Some(p) if p.is_dir() => p.join(&file_name),
        Some(p) => p.clone(),
        None => dirs_home().join(&file_name),
    };
    if out
        .extension()
        .is_none_or(|e| !e.eq_ignore_ascii_case("zip"))
    {
        out.set_extension(match out.extension() {
            Some(e) => format!("{}.zip", e.to_string_lossy()),
            None => "zip".into(),
        });
    }
    let out_abs = std::path::absolute(&out).unwrap_or(out.clone());
    if let Some(parent) = out_abs.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let mut files = Vec::new();
    let mut secrets_left = Vec::new();
    collect(&root, &root, &out_abs, &mut files)?;
    files.retain(|rel| {
        if !args.include_secrets && is_secret(rel) {
            secrets_left.push(rel.display().to_string());
            return false;
        }
        true
    });
    let tmp_dir = tempfile::tempdir().context("a temporary folder for the database snapshot")?;
    let file = hermes_protocol::private_fs::create(&out_abs)
        .with_context(|| format!("creating {}", out_abs.display()))?;
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o600);
    let mut bytes = 0u64;
    for rel in &files {
        let abs = root.join(rel);
        let name = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let source = if rel.extension().is_some_and(|e| e == "db") {
            let snap = tmp_dir.path().join(format!("snapshot-{}.db", bytes));
            match snapshot_db(&abs, &snap) {
                Ok(()) => snap,
                Err(e) => {
                    errln!("warning: {}: {e:#}; copied as it is", rel.display());
                    abs.clone()
                }
            }
        } else {
            abs.clone()
        };
        let mut data = Vec::new();
        std::fs::File::open(&source)
            .and_then(|mut f| f.read_to_end(&mut data))
            .with_context(|| format!("reading {}", abs.display()))?;
        zip.start_file(name, options)
            .with_context(|| format!("writing {}", out_abs.display()))?;
        zip.write_all(&data)
            .with_context(|| format!("writing {}", out_abs.display()))?;
        bytes += data.len() as u64;
    }
    zip.finish()
        .with_context(|| format!("writing {}", out_abs.display()))?
        .sync_all()
        .with_context(|| format!("writing {}", out_abs.display()))?;
    outln!("{}", out_abs.display());
    errln!(
        "backed up {} files ({:.1} MB) from {}",
        files.len(),
        bytes as f64 / 1e6,
        root.display()
    );
    if !secrets_left.is_empty() {
        errln!(
            "secrets left out ({}); add --include-secrets to keep them in the zip",
            secrets_left.join(", ")
        );
    }
    Ok(0)
}

/// The user's home folder (where a backup goes by default).
fn dirs_home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Every file under `dir` (relative to `root`), without the excluded ones, symlinks, or
/// the backup being written.
fn collect(root: &Path, dir: &Path, out: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        if kind.is_symlink() || path == out {
            continue;
        }
        if kind.is_dir() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let top = rel.components().count() == 1;
            let top_only = matches!(name.as_ref(), "models" | "cache" | "hermes-agent");
            if EXCLUDED_DIRS.contains(&name.as_ref()) && (!top_only || top) {
                continue;
            }
            collect(root, &path, out, files)?;
        } else if kind.is_file() && !excluded(&rel) {
            files.push(rel);
        }
    }
    Ok(())
}

/// A consistent copy of the SQLite database `src` at `dst` (`VACUUM INTO`), readable while
/// hermes writes to it.
fn snapshot_db(src: &Path, dst: &Path) -> Result<()> {
    let conn = rusqlite::Connection::open_with_flags(
        src,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .context("opening the database")?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    let target = dst.to_string_lossy().into_owned();
    conn.execute("VACUUM INTO ?1", [target])
        .context("taking a snapshot")?;
    Ok(())
}

/// Where the entry `name` of a backup goes inside the home: `None` for one that would land
/// outside it (absolute, `..`) or for a machine-bound runtime file.
fn target_of(name: &str, prefix: &str) -> Option<PathBuf> {
    let rel = name.strip_prefix(prefix).unwrap_or(name);
    let path = Path::new(rel);
    if rel.is_empty()
        || path
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
    {
        return None;
    }
    let file = path.file_name()?.to_str()?;
    (!RUNTIME_NAMES.contains(&file)).then(|| path.to_path_buf())
}

/// The folder all entries share when it is `.hermes/` or `hermes/` (a zipped home folder).
fn common_prefix(names: &[String]) -> String {
    let firsts: std::collections::BTreeSet<&str> = names
        .iter()
        .filter_map(|n| n.split_once('/').map(|(first, _)| first))
        .collect();
    let all_nested = names.iter().all(|n| n.contains('/'));
    match firsts.iter().next() {
        Some(p) if all_nested && firsts.len() == 1 && matches!(*p, ".hermes" | "hermes") => {
            format!("{p}/")
        }
        _ => String::new(),
    }
}

/// `hermes import ZIP`: restores the backup into the home; returns the exit code.
pub fn import(profile: Option<&str>, args: &ImportArgs) -> Result<i32> {
    let home = hermes_protocol::HermesHome::resolve(profile)
        .context("cannot find a home directory; set HERMES_HOME")?;
    let root = home.root().to_path_buf();
    let file = std::fs::File::open(&args.zipfile)
        .with_context(|| format!("opening {}", args.zipfile.display()))?;
    let mut zip = zip::ZipArchive::new(file)
        .with_context(|| format!("{} is not a zip file", args.zipfile.display()))?;
    let names: Vec<String> = (0..zip.len())
        .filter_map(|i| {
            zip.by_index(i)
                .ok()
                .and_then(|f| f.name().ok().map(|n| n.to_string()))
        })
        .filter(|n| !n.ends_with('/'))
        .collect();
    let markers = ["config.yaml", ".env", "state.db"];
    if !names
        .iter()
        .any(|n| markers.contains(&n.rsplit('/').next().unwrap_or("")))
    {
        errln!(
            "error: {} does not look like a hermes backup (no config.yaml, .env or state.db in it)",
            args.zipfile.display()
        );
        return Ok(1);
    }
    let prefix = common_prefix(&names);
    let existing = home.config_file().exists() || home.env_file().exists();
    if existing && !args.force {
        use std::io::{BufRead, IsTerminal};
        if !std::io::stdin().is_terminal() {
            errln!(
                "error: {} already has a setup; pass --force to overwrite it with the backup",
                root.display()
            );
            return Ok(1);
        }
        eprint!(
            "{} already has a setup; overwrite it with the backup's files? [y/N] ",
            root.display()
        );
        std::io::stderr().flush().ok();
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        if !matches!(line.trim().to_lowercase().as_str(), "y" | "yes") {
            errln!("cancelled");
            return Ok(1);
        }
    }
    hermes_protocol::private_fs::create_dir_all(&root)
        .with_context(|| format!("creating {}", root.display()))?;
    // First every entry is read in full (the zip's checksums checked) into a staging folder
    // inside the home; only a backup that reads back whole replaces anything, one rename a
    // file. A damaged zip leaves the home as it was.
    let staging = tempfile::Builder::new()
        .prefix(".import-")
        .tempdir_in(&root)
        .with_context(|| format!("creating a staging folder in {}", root.display()))?;
    let (mut staged, mut refused) = (Vec::new(), Vec::new());
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).with_context(|| {
            format!(
                "{} is damaged; nothing was restored",
                args.zipfile.display()
            )
        })?;
        let name = entry
            .name()
            .map(|n| n.to_string())
            .context("reading an entry's name from the backup")?;
        if name.ends_with('/') {
            continue;
        }
        let Some(rel) = target_of(&name, &prefix) else {
            refused.push(name);
            continue;
        };
        let path = staging.path().join(&rel);
        if let Some(parent) = path.parent() {
            hermes_protocol::private_fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let mut data = Vec::new();
        entry.read_to_end(&mut data).with_context(|| {
            format!("reading {name} from the backup failed; nothing was restored")
        })?;
        // Every restored file is private (0600; 0700 for an executable, such as a skill's
        // script), like every file hermes creates under the home.
        hermes_protocol::private_fs::write(&path, &data)
            .with_context(|| format!("writing {}", path.display()))?;
        #[cfg(unix)]
        if entry.unix_mode().is_some_and(|m| m & 0o100 != 0) {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))
                .with_context(|| format!("making {} executable", path.display()))?;
        }
        staged.push(rel);
    }
    for rel in &staged {
        let target = root.join(rel);
        if let Some(parent) = target.parent() {
            hermes_protocol::private_fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        if rel.extension().is_some_and(|e| e == "db") {
            // The snapshot replaces the database: its old side files must go with it.
            for side in ["-wal", "-shm"] {
                let mut p = target.clone().into_os_string();
                p.push(side);
                let _ = std::fs::remove_file(PathBuf::from(p));
            }
        }
        std::fs::rename(staging.path().join(rel), &target)
            .with_context(|| format!("moving {} into place", target.display()))?;
    }
    let restored = staged.len();
    outln!("restored {restored} files into {}", root.display());
    if !refused.is_empty() {
        errln!(
            "skipped {} entries (outside the home, or another machine's runtime files): {}",
            refused.len(),
            refused.join(", ")
        );
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_outside_the_home_and_runtime_files_are_refused() {
        assert_eq!(
            target_of("config.yaml", ""),
            Some(PathBuf::from("config.yaml"))
        );
        assert_eq!(
            target_of(".hermes/skills/a/SKILL.md", ".hermes/"),
            Some(PathBuf::from("skills/a/SKILL.md"))
        );
        assert_eq!(target_of("../etc/passwd", ""), None);
        assert_eq!(target_of("/etc/passwd", ""), None);
        assert_eq!(target_of("a/../../x", ""), None);
        assert_eq!(target_of("gateway.pid", ""), None);
        assert_eq!(target_of("profiles/w/gateway_state.json", ""), None);
    }

    #[test]
    fn exclusions_and_secrets() {
        assert!(excluded(Path::new("state.db-wal")));
        assert!(excluded(Path::new("models/x.gguf")));
        assert!(!excluded(Path::new("skills/models/SKILL.md")));
        assert!(excluded(Path::new("skills/x/node_modules/a.js")));
        assert!(!excluded(Path::new("state.db")));
        assert!(is_secret(Path::new(".env")));
        assert!(is_secret(Path::new("profiles/w/auth.json")));
        assert!(is_secret(Path::new("mcp-tokens/github.json")));
        assert!(!is_secret(Path::new("config.yaml")));
        assert_eq!(
            common_prefix(&[".hermes/config.yaml".into(), ".hermes/a/b".into()]),
            ".hermes/"
        );
        assert_eq!(common_prefix(&["config.yaml".into(), "a/b".into()]), "");
    }
}
