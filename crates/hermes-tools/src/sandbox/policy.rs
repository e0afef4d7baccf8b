//! The one sandbox policy (issue 18 item 1; ARCHITECTURE §8): which paths the agent may read
//! and write. The launcher turns it into Landlock rules ([`super::enforce`]); the file tools
//! ask [`SandboxPolicy::check_read`] / [`SandboxPolicy::check_write`]. Both read the same
//! fields, so there is one list, not two.

use std::path::{Path, PathBuf};

use hermes_protocol::HermesHome;
use hermes_protocol::config::SandboxMode;
use serde::{Deserialize, Serialize};

use super::tree::is_within;
use crate::safety::canonicalize_lenient;

/// Files and folders of HERMES_HOME that nothing the agent runs may read: the secrets (of
/// the session's home, the base home of a profile, the default `~/.hermes` and every
/// `profiles/*` of those; see [`HermesHome::related_homes`]).
pub const HERMES_SECRET_PATHS: &[&str] = &[".env", "auth.json", "mcp-tokens"];

/// Files and folders of HERMES_HOME that nothing the agent runs may write: its control files
/// (what runs code later or holds identity and state), besides [`HERMES_SECRET_PATHS`]. The
/// agent changes memory, skills and cron jobs only through their own tools, which write
/// in-process, outside the sandbox.
///
/// HERMES_HOME as a whole is unwritable unless a writable tree lies inside it (a workspace
/// under HERMES_HOME); only then does this list alone apply.
pub const HERMES_CONTROL_PATHS: &[&str] = &[
    "config.yaml",
    "hooks",
    "cron",
    "pairing",
    "platforms/pairing",
    "state.db",
    "state.db-wal",
    "state.db-shm",
    "state.db-journal",
    "SOUL.md",
    "memories",
    "skills",
    // Declarative tools (`tools/*.yaml`): a file written there would send its headers —
    // `${NAME}` secrets from `.env` — wherever it says, from the next session on.
    "tools",
    "plugins",
    "profiles",
    ".container-mode",
    "scripts",
    "bin",
    "hermes-agent",
    "logs",
];

/// Paths under the user's home that run code later or hold credentials: never written.
pub const HOME_PROTECTED_PATHS: &[&str] = &[
    ".ssh",
    ".gnupg",
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
    ".inputrc",
    ".pam_environment",
    ".xprofile",
    ".xinitrc",
    ".config/fish",
    ".config/systemd",
    ".config/autostart",
    ".config/environment.d",
    ".config/git",
    ".config/gh",
    ".gitconfig",
    ".git-credentials",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".local/share/keyrings",
    ".local/bin",
    "bin",
    ".cargo/bin",
    ".cargo/config",
    ".cargo/config.toml",
    ".bash_aliases",
    ".tmux.conf",
    ".config/tmux",
    ".hermes",
];

/// Device files every sandboxed command may open for writing, in every mode (they store
/// nothing).
pub const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// System trees the file tools never write, whatever the mode (the command sandbox covers
/// them by not listing them as writable).
const SYSTEM_PROTECTED: &[&str] = &["/etc"];

/// A resolved policy for one session: absolute, canonical paths. Serialized as JSON for the
/// launcher (`hermes __sandbox-exec --policy <json>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    /// What may be written.
    pub mode: SandboxMode,
    /// Trees writable in [`SandboxMode::WorkspaceWrite`] (the workspace, the temp directory,
    /// `writable_paths`); empty in the other modes.
    pub writable: Vec<PathBuf>,
    /// Trees nothing may read (the secrets).
    pub deny_read: Vec<PathBuf>,
    /// Trees nothing may write (a superset of `deny_read`).
    pub deny_write: Vec<PathBuf>,
    /// False: commands get no network sockets (see [`super::enforce`]).
    pub network: bool,
    /// False: commands cannot create Unix-domain sockets (only socket pairs), so they
    /// cannot connect to one by path (see [`super::enforce`]). Ignored in mode `off`.
    #[serde(default)]
    pub unix_sockets: bool,
}

/// The inputs of [`SandboxPolicy::new`].
#[derive(Debug, Clone)]
pub struct PolicyInputs<'a> {
    /// `terminal.sandbox.mode`.
    pub mode: SandboxMode,
    /// The session's working directory.
    pub workspace: &'a Path,
    /// The temp directory (`$TMPDIR` or `/tmp`).
    pub temp_dir: &'a Path,
    /// `terminal.sandbox.writable_paths`, `~` already expanded.
    pub writable_paths: &'a [PathBuf],
    /// The hermes home.
    pub hermes_home: &'a HermesHome,
    /// The user's home (`$HOME`), if known.
    pub user_home: Option<&'a Path>,
    /// `terminal.sandbox.network`.
    pub network: bool,
    /// `terminal.sandbox.unix_sockets`.
    pub unix_sockets: bool,
    /// More paths nothing may write, whatever the mode (the hermes executable, which is
    /// also the launcher: replacing it would let the next command run unsandboxed).
    pub protected: &'a [PathBuf],
}

impl SandboxPolicy {
    /// Resolves the policy: every path canonicalized (a missing tail is kept lexically), the
    /// protected lists expanded under HERMES_HOME and the user's home, in both their written
    /// and canonical spellings so neither slips by.
    pub fn new(inputs: &PolicyInputs<'_>) -> SandboxPolicy {
        let root = inputs.hermes_home.root();
        // The session's HERMES_HOME, and the default `~/.hermes` when that is another one
        // (a profile lives inside it; a custom home leaves the default one on disk).
        let mut homes = vec![root.to_path_buf()];
        if let Some(default) = inputs.user_home.map(|h| h.join(".hermes"))
            && default != root
        {
            homes.push(default);
        }
        let deny_read = secret_paths(inputs.hermes_home, inputs.user_home);
        let mut writable = Vec::new();
        if inputs.mode == SandboxMode::WorkspaceWrite {
            for p in [inputs.workspace, inputs.temp_dir, Path::new("/dev/shm")]
                .into_iter()
                .chain(inputs.writable_paths.iter().map(PathBuf::as_path))
            {
                if let Ok(c) = canonicalize_lenient(p)
                    && !writable.contains(&c)
                {
                    writable.push(c);
                }
            }
        }
        let mut deny_write = deny_read.clone();
        for home in &homes {
            // Commands have no business writing anywhere in HERMES_HOME, unless the
            // workspace (or another writable tree) is inside it; then its control files.
            let canonical = canonicalize_lenient(home).unwrap_or_else(|_| home.clone());
            if !writable.iter().any(|w| is_within(w, &canonical)) {
                push_forms(&mut deny_write, home);
            }
            for name in HERMES_CONTROL_PATHS {
                push_forms(&mut deny_write, &home.join(name));
            }
        }
        if let Some(home) = inputs.user_home {
            for name in HOME_PROTECTED_PATHS {
                let path = home.join(name);
                // `~/.hermes` is the default HERMES_HOME; a custom home elsewhere keeps its own
                // list above, and the default one stays protected as a whole.
                if *name == ".hermes" && is_within(root, &path) {
                    continue;
                }
                push_forms(&mut deny_write, &path);
            }
        }
        for p in SYSTEM_PROTECTED {
            push_forms(&mut deny_write, Path::new(p));
        }
        for p in inputs.protected {
            push_forms(&mut deny_write, p);
        }
        SandboxPolicy {
            mode: inputs.mode,
            writable,
            deny_read,
            deny_write,
            network: inputs.network,
            unix_sockets: inputs.unix_sockets,
        }
    }

    /// Checks that the agent may read `path` (absolute, or relative to the process working
    /// directory) and returns its canonical form.
    ///
    /// # Errors
    /// A message for the model naming the protected location, or the resolution error.
    pub fn check_read(&self, path: &Path) -> Result<PathBuf, String> {
        let canonical = resolve(path)?;
        if let Some(p) = self.deny_read.iter().find(|d| is_within(&canonical, d)) {
            return Err(format!(
                "reading {} is denied by the sandbox: {} holds secrets",
                path.display(),
                p.display()
            ));
        }
        if is_process_file(&canonical) {
            return Err(format!(
                "reading {} is denied by the sandbox: a process's own files under /proc \
                 (environment, memory, open files) hold its secrets",
                path.display()
            ));
        }
        Ok(canonical)
    }

    /// True when [`SandboxPolicy::check_read`] allows `canonical` (already canonical).
    pub fn may_read_canonical(&self, canonical: &Path) -> bool {
        !self.deny_read.iter().any(|d| is_within(canonical, d)) && !is_process_file(canonical)
    }

    /// Checks that the agent may write `path` and returns its canonical form: never inside a
    /// protected location; in `workspace-write` only inside [`SandboxPolicy::writable`]; in
    /// `read-only` never; in `off` anywhere else.
    ///
    /// # Errors
    /// A message for the model saying why, or the resolution error.
    pub fn check_write(&self, path: &Path) -> Result<PathBuf, String> {
        let canonical = resolve(path)?;
        if let Some(p) = self.deny_write.iter().find(|d| is_within(&canonical, d)) {
            return Err(format!(
                "writing {} is denied by the sandbox: it is inside the protected location {}",
                path.display(),
                p.display()
            ));
        }
        match self.mode {
            SandboxMode::Off => Ok(canonical),
            SandboxMode::ReadOnly => Err(format!(
                "writing {} is denied: terminal.sandbox is read-only",
                path.display()
            )),
            SandboxMode::WorkspaceWrite => {
                if self.writable.iter().any(|w| is_within(&canonical, w)) {
                    Ok(canonical)
                } else {
                    Err(format!(
                        "writing {} is denied by the sandbox (workspace-write): writable are \
                         only {} (add more with terminal.sandbox.writable_paths)",
                        path.display(),
                        self.writable
                            .iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                }
            }
        }
    }
}

/// The locations nothing the agent sees may be read from ([`SandboxPolicy::deny_read`]):
/// [`HERMES_SECRET_PATHS`] of `home`, of the base home of a profile, of every profile of
/// each (`<home>/profiles/*`) and of the default `~/.hermes` under `user_home`, each as
/// written and canonicalized. Anything else that reads files on the model's behalf (the
/// project context files and their `@` imports) refuses these too.
///
/// Copies of a secret file next to it are secrets too: every entry of a home whose name
/// starts with `.env` or `auth.json` (`.env.bak`, `.env~`, `.env.swp`, `auth.json.old`), as
/// found when the policy is built (it is built for every command).
///
/// A profile made after the policy was built (while a background command runs) is
/// covered too: `<home>/profiles/.later`, an entry no profile can be named, makes the
/// `profiles` folder an ancestor in the Landlock rules ([`super::tree`]), so only the
/// profiles that exist now get rules (each without its secrets) and later ones get none.
pub fn secret_paths(home: &HermesHome, user_home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for home in &home.related_homes(user_home) {
        for name in HERMES_SECRET_PATHS {
            push_forms(&mut out, &home.join(name));
        }
        push_forms(&mut out, &home.join("profiles").join(".later"));
        let Ok(entries) = std::fs::read_dir(home) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(".env") || name.starts_with("auth.json") {
                push_forms(&mut out, &entry.path());
            }
        }
    }
    out
}

/// Whether `canonical` lies in a process's folder of `/proc` (`/proc/<pid>/…`; `self`
/// resolves to one): the file tools run in hermes' own process, outside Landlock, and the
/// environment of another hermes (its exported keys) was readable there (the attack pass of
/// issue 18). `/proc/cpuinfo` and the like stay readable.
fn is_process_file(canonical: &Path) -> bool {
    let mut parts = canonical.components().skip(1);
    matches!(parts.next(), Some(std::path::Component::Normal(p)) if p == "proc")
        && matches!(parts.next(), Some(std::path::Component::Normal(p))
            if p.to_str().is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())))
}

fn resolve(path: &Path) -> Result<PathBuf, String> {
    canonicalize_lenient(path).map_err(|e| format!("cannot resolve path {}: {e}", path.display()))
}

/// Adds `p` as written (lexically normalized) and canonicalized, without duplicates.
fn push_forms(out: &mut Vec<PathBuf>, p: &Path) {
    let lexical = crate::safety::lexical_normalize(p);
    if !out.contains(&lexical) {
        out.push(lexical);
    }
    if let Ok(c) = canonicalize_lenient(p)
        && !out.contains(&c)
    {
        out.push(c);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// The file tools read no process's files under /proc, hermes' own and another
    /// hermes' included (the attack pass of issue 18); machine-wide files stay readable.
    #[test]
    fn process_files_under_proc_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let p = policy(
            SandboxMode::WorkspaceWrite,
            d,
            d,
            &d.join("hh"),
            &d.join("uh"),
        );
        let me = std::process::id();
        for path in [
            "/proc/self/environ".to_string(),
            format!("/proc/{me}/environ"),
            format!("/proc/{me}/maps"),
            "/proc/1/cmdline".to_string(),
            "/proc/thread-self/environ".to_string(),
        ] {
            let err = p.check_read(Path::new(&path)).unwrap_err();
            assert!(err.contains("/proc"), "{path}: {err}");
        }
        assert!(p.check_read(Path::new("/proc/cpuinfo")).is_ok());
        assert!(!p.may_read_canonical(Path::new("/proc/1/environ")));
    }

    fn policy(mode: SandboxMode, ws: &Path, tmp: &Path, hh: &Path, uh: &Path) -> SandboxPolicy {
        SandboxPolicy::new(&PolicyInputs {
            mode,
            workspace: ws,
            temp_dir: tmp,
            writable_paths: &[],
            hermes_home: &HermesHome::new(hh),
            user_home: Some(uh),
            network: true,
            unix_sockets: false,
            protected: &[],
        })
    }

    #[test]
    fn workspace_write_allows_only_the_writable_trees() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().canonicalize().unwrap();
        for s in ["ws", "tmp", "hh", "uh", "other"] {
            std::fs::create_dir(r.join(s)).unwrap();
        }
        let p = policy(
            SandboxMode::WorkspaceWrite,
            &r.join("ws"),
            &r.join("tmp"),
            &r.join("hh"),
            &r.join("uh"),
        );
        assert!(p.check_write(&r.join("ws/new/file")).is_ok());
        assert!(p.check_write(&r.join("tmp/x")).is_ok());
        assert!(p.check_write(&r.join("ws/../other/x")).is_err());
        assert!(p.check_write(&r.join("uh/.bashrc")).is_err());
        assert!(p.check_write(&r.join("hh/config.yaml")).is_err());
        assert!(p.check_read(&r.join("hh/.env")).is_err());
        assert!(p.check_read(&r.join("hh/mcp-tokens/x.json")).is_err());
        assert!(p.check_read(&r.join("hh/config.yaml")).is_ok());
        // A symlink in the workspace that points at a protected file is resolved first.
        std::fs::write(r.join("uh/.gitconfig"), "").unwrap();
        std::os::unix::fs::symlink(r.join("uh/.gitconfig"), r.join("ws/gc")).unwrap();
        assert!(p.check_write(&r.join("ws/gc")).is_err());
    }

    #[test]
    fn hermes_home_is_unwritable_as_a_whole_unless_the_workspace_is_inside_it() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().canonicalize().unwrap();
        for s in [
            "uh/.hermes/logs",
            "uh/.hermes/scripts",
            "uh/.local/bin",
            "tmp",
        ] {
            std::fs::create_dir_all(r.join(s)).unwrap();
        }
        let hh = r.join("uh/.hermes");
        let home_ws = policy(
            SandboxMode::WorkspaceWrite,
            &r.join("uh"),
            &r.join("tmp"),
            &hh,
            &r.join("uh"),
        );
        for p in [
            "uh/.hermes/logs/agent.log",
            "uh/.hermes/scripts/x.sh",
            "uh/.hermes/new",
            "uh/.local/bin/git",
        ] {
            assert!(home_ws.check_write(&r.join(p)).is_err(), "{p}");
        }
        assert!(home_ws.check_write(&r.join("uh/notes.txt")).is_ok());
        // A workspace inside HERMES_HOME stays usable; the control files stay protected.
        let inside = policy(
            SandboxMode::WorkspaceWrite,
            &hh.join("work"),
            &r.join("tmp"),
            &hh,
            &r.join("uh"),
        );
        assert!(inside.check_write(&hh.join("work/a.txt")).is_ok());
        assert!(inside.check_write(&hh.join("scripts/x.sh")).is_err());
        assert!(inside.check_write(&hh.join("config.yaml")).is_err());
    }

    #[test]
    fn other_profiles_secrets_are_unreadable() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().canonicalize().unwrap();
        // The session runs in profile `a` of a custom home; `b` is a sibling profile, and
        // the default `~/.hermes` has a profile `w` of its own.
        for s in [
            "base/profiles/a",
            "base/profiles/b/mcp-tokens",
            "uh/.hermes/profiles/w",
            "ws",
        ] {
            std::fs::create_dir_all(r.join(s)).unwrap();
        }
        let p = policy(
            SandboxMode::WorkspaceWrite,
            &r.join("ws"),
            &r.join("ws"),
            &r.join("base/profiles/a"),
            &r.join("uh"),
        );
        for denied in [
            "base/.env",
            "base/auth.json",
            "base/profiles/b/.env",
            "base/profiles/b/auth.json",
            "base/profiles/b/mcp-tokens/gh.json",
            "uh/.hermes/.env",
            "uh/.hermes/profiles/w/.env",
            "uh/.hermes/profiles/w/auth.json",
            "uh/.hermes/profiles/w/mcp-tokens",
        ] {
            assert!(p.check_read(&r.join(denied)).is_err(), "{denied}");
        }
        assert!(p.check_read(&r.join("base/profiles/b/config.yaml")).is_ok());
    }

    #[test]
    fn read_only_and_off() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().canonicalize().unwrap();
        let ro = policy(SandboxMode::ReadOnly, &r, &r, &r.join("hh"), &r.join("uh"));
        assert!(ro.check_write(&r.join("x")).is_err());
        assert!(ro.writable.is_empty());
        let off = policy(SandboxMode::Off, &r, &r, &r.join("hh"), &r.join("uh"));
        assert!(off.check_write(Path::new("/nonexistent-hermes/x")).is_ok());
        assert!(off.check_write(&r.join("uh/.ssh/authorized_keys")).is_err());
        assert!(off.check_read(&r.join("hh/auth.json")).is_err());
    }

    #[test]
    fn policy_round_trips_as_json() {
        let d = tempfile::tempdir().unwrap();
        let p = policy(
            SandboxMode::WorkspaceWrite,
            d.path(),
            d.path(),
            d.path(),
            d.path(),
        );
        let back: SandboxPolicy =
            serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }
}
