//! Turning a [`SandboxPolicy`] into kernel restrictions on the current process: Landlock
//! (file system; TCP when the network is off; signal and abstract-socket scoping) and a
//! seccomp filter. Called only by the launcher ([`super::launcher`]), which then execs the
//! command; restrictions are inherited by every descendant and cannot be lifted.
//!
//! Landlock rules (see [`super::tree`] for the "tree minus paths" construction):
//! - read (`ReadFile`, `ReadDir`, `Execute`) on `/` minus [`SandboxPolicy::deny_read`]; the
//!   ancestor directories of a secret may still be listed (names, not contents);
//! - write (every write right of ABI 3: create, remove, rename, link, truncate) on each of
//!   [`SandboxPolicy::writable`] minus [`SandboxPolicy::deny_write`];
//! - write on the device files of [`super::policy::WRITABLE_DEVICES`].
//!
//! Landlock's `Refer` right makes the kernel refuse a link or rename that would give a file
//! more rights at its new place than at its old one, so a hard link or `mv` cannot carry a
//! read-only file into a writable tree.
//!
//! seccomp is used where Landlock has no rule, each case failing with `EPERM`:
//! - always, `ioctl(TIOCSTI)` / `ioctl(TIOCLINUX)` (typing into a terminal);
//! - with `network: false`, `socket(2)` and `socketpair(2)` of any family but `AF_UNIX`;
//!   Landlock (ABI 4+) also denies TCP bind and connect;
//! - `io_uring_setup(2)` (its `IORING_OP_SOCKET` makes sockets without `socket(2)`) unless
//!   both `network` and `unix_sockets` are true;
//! - unless `unix_sockets` is true or the mode is `off`, `socket(2)` of `AF_UNIX`. Landlock's
//!   file rules do not cover connecting to a Unix socket by path, and such sockets are doors
//!   out of the sandbox: a tmux server's or the D-Bus session bus's runs commands
//!   unsandboxed, ssh-agent's signs logins, the docker daemon's is root. Abstract-namespace
//!   sockets are scoped by Landlock as well. `socketpair(2)` stays allowed: a pair has no
//!   address and joins only the process that made it with its own children; only stream
//!   and seqpacket pairs, since a datagram end can be re-aimed at any path (`sendto`).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
};

use super::policy::{SandboxPolicy, WRITABLE_DEVICES};
use super::tree::{Grant, tree_minus};
use hermes_protocol::config::SandboxMode;

/// The oldest Landlock ABI the sandbox accepts: 3 (Linux 6.2), the first that controls
/// truncation, so a read-only file cannot be emptied with `truncate(2)`.
pub const MIN_LANDLOCK_ABI: u32 = 3;

/// Test hook: when this variable is set (to anything), [`kernel_support`] reports the kernel
/// as unsupported, so the `terminal.sandbox.unsupported` fallback can be tested on a kernel
/// that has Landlock.
pub const FORCE_UNSUPPORTED_ENV: &str = "HERMES_SANDBOX_TEST_UNSUPPORTED";

/// Whether this kernel can enforce the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelSupport {
    /// Landlock at this ABI or newer (at least [`MIN_LANDLOCK_ABI`]).
    Available {
        /// The highest ABI level probed successfully.
        abi: u32,
    },
    /// No usable Landlock; the text says why (for the one warning at start).
    Unsupported {
        /// e.g. "this kernel has no Landlock".
        reason: String,
    },
}

/// Probes the running kernel once (cached) and returns whether the sandbox can be enforced;
/// [`FORCE_UNSUPPORTED_ENV`] overrides the answer at every call.
pub fn kernel_support() -> KernelSupport {
    if std::env::var_os(FORCE_UNSUPPORTED_ENV).is_some() {
        return KernelSupport::Unsupported {
            reason: format!("forced by {FORCE_UNSUPPORTED_ENV} (a test hook)"),
        };
    }
    static PROBED: OnceLock<KernelSupport> = OnceLock::new();
    PROBED.get_or_init(probe).clone()
}

/// Asks for the rights of one ABI level on a fresh ruleset.
type Probe = fn(Ruleset) -> Result<Ruleset, landlock::RulesetError>;

fn probe() -> KernelSupport {
    let hard = |r: Ruleset| r.set_compatibility(CompatLevel::HardRequirement);
    let probes: [(u32, Probe); 6] = [
        (6, |r| {
            r.handle_access(AccessFs::from_all(ABI::V5))?
                .scope(Scope::from_all(ABI::V6))
        }),
        (5, |r| r.handle_access(AccessFs::from_all(ABI::V5))),
        (4, |r| {
            r.handle_access(AccessFs::from_all(ABI::V3))?
                .handle_access(AccessNet::from_all(ABI::V4))
        }),
        (3, |r| r.handle_access(AccessFs::from_all(ABI::V3))),
        (2, |r| r.handle_access(AccessFs::from_all(ABI::V2))),
        (1, |r| r.handle_access(AccessFs::from_all(ABI::V1))),
    ];
    for (abi, build) in probes {
        if build(hard(Ruleset::default()))
            .and_then(|r| r.create())
            .is_ok()
        {
            if abi < MIN_LANDLOCK_ABI {
                return KernelSupport::Unsupported {
                    reason: format!(
                        "this kernel's Landlock is ABI {abi}; the sandbox needs ABI \
                         {MIN_LANDLOCK_ABI} (Linux 6.2) or newer"
                    ),
                };
            }
            return KernelSupport::Available { abi };
        }
    }
    KernelSupport::Unsupported {
        reason: "this kernel has no Landlock (not built in, or not enabled at boot)".into(),
    }
}

/// Why the restrictions could not be applied. The launcher then exits without running the
/// command: it never runs it unrestricted.
#[derive(Debug, thiserror::Error)]
pub enum EnforceError {
    /// A Landlock call failed (kernel too old, or a rule could not be added).
    #[error("Landlock: {0}")]
    Landlock(#[from] landlock::RulesetError),
    /// Landlock reported the ruleset as not fully enforced.
    #[error("Landlock could not fully enforce the policy ({0})")]
    NotEnforced(String),
    /// The seccomp filter could not be built or loaded.
    #[error("seccomp: {0}")]
    Seccomp(String),
    /// A capability could not be dropped (a command run as root).
    #[error("capabilities: {0}")]
    Capabilities(String),
}

/// Applies `policy` to the current process (and so to whatever it execs). Must be called in
/// a process that runs nothing else afterwards but the command (the launcher).
///
/// # Errors
/// [`EnforceError`] when any restriction could not be applied in full.
pub fn restrict_current_process(policy: &SandboxPolicy) -> Result<(), EnforceError> {
    if policy.mode != SandboxMode::Off {
        drop_capabilities()?;
        apply_landlock(policy)?;
    }
    let unix_sockets = policy.unix_sockets || policy.mode == SandboxMode::Off;
    apply_seccomp(policy.network, unix_sockets)
}

/// Applies the Landlock part of `policy` (file system; TCP when the network is off) to the
/// calling thread only — Landlock restricts threads — for the file tools' I/O
/// ([`super::confine`]). Nothing is applied in mode `off`. The restriction lasts as long as
/// the thread: run it on a thread of its own.
///
/// # Errors
/// [`EnforceError`] when the rules could not be applied in full.
pub fn restrict_current_thread(policy: &SandboxPolicy) -> Result<(), EnforceError> {
    if policy.mode == SandboxMode::Off {
        return Ok(());
    }
    apply_landlock(policy)
}

fn apply_landlock(policy: &SandboxPolicy) -> Result<(), EnforceError> {
    let required = AccessFs::from_all(ABI::V3);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(required)?
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::IoctlDev)?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)?;
    if !policy.network {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    let mut created = ruleset.create()?;

    let read = AccessFs::from_read(ABI::V3);
    // No device nodes anywhere: a block node for the disk (root has CAP_MKNOD) would be raw
    // read and write access to every file on it, whatever the rules say.
    let write = AccessFs::from_write(ABI::V3) & !(AccessFs::MakeBlock | AccessFs::MakeChar);
    let secret_files = inodes(&policy.deny_read);
    // Block devices are left out of the read rules: reading the disk under the file system
    // (root may open /dev/sda) would read every secret on it.
    let mut unreadable = policy.deny_read.clone();
    block_devices(std::path::Path::new("/dev"), 3, &mut unreadable);
    for grant in tree_minus(std::path::Path::new("/"), &unreadable) {
        let access = match grant {
            Grant::Subtree(_) => read,
            Grant::Ancestor(_) => BitFlags::from(AccessFs::ReadDir),
        };
        created = add_rule(created, grant.path(), access, &secret_files)?;
    }
    let control_files = inodes(&policy.deny_write);
    for root in &policy.writable {
        for grant in tree_minus(root, &policy.deny_write) {
            if let Grant::Subtree(path) = grant {
                created = add_rule(created, &path, write, &control_files)?;
            }
        }
    }
    for device in WRITABLE_DEVICES {
        let path = std::path::Path::new(device);
        if path.exists() {
            created = add_rule(
                created,
                path,
                BitFlags::from(AccessFs::WriteFile) | AccessFs::Truncate,
                &[],
            )?;
        }
    }
    let status = created.restrict_self()?;
    match status.ruleset {
        // Fully: everything asked for. Partially: the best-effort extras (device ioctls,
        // TCP, scoping) are missing on an older kernel; the required file rights are not.
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
        other => Err(EnforceError::NotEnforced(format!("{other:?}"))),
    }
}

/// Adds one path-beneath rule; a non-directory gets only the rights that apply to files. A
/// path that cannot be opened (vanished since it was listed) gets no rule: denied.
///
/// The path is opened without following any symlink in any of its components
/// (`openat2(RESOLVE_NO_SYMLINKS)`), and a symlink gets no rule: a rule is attached to the
/// inode the path names when it is added, so a folder swapped for a symlink to `~/.ssh`
/// between listing the tree and adding its rules would otherwise grant `~/.ssh` itself. A
/// symlink's target is covered, or not, by the rules of where it really is.
///
/// A file whose inode is one of `excluded` (a hard link to a secret or control file made
/// before the sandbox, under another name) gets no rule either: the rule would grant the
/// excluded file itself. Links inside a granted subtree are not searched for; the kernel's
/// `Refer` check keeps sandboxed commands from making new ones.
fn add_rule(
    created: landlock::RulesetCreated,
    path: &std::path::Path,
    access: BitFlags<AccessFs>,
    excluded: &[(u64, u64)],
) -> Result<landlock::RulesetCreated, EnforceError> {
    use rustix::fs::{CWD, FileType, Mode, OFlags, ResolveFlags};
    let Ok(fd) = rustix::fs::openat2(
        CWD,
        path,
        OFlags::PATH | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS,
    ) else {
        return Ok(created);
    };
    let Ok(stat) = rustix::fs::fstat(&fd) else {
        return Ok(created);
    };
    let access = match FileType::from_raw_mode(stat.st_mode) {
        FileType::Directory => access,
        FileType::Symlink => return Ok(created),
        _ if excluded.contains(&(stat.st_dev, stat.st_ino)) => {
            return Ok(created);
        }
        _ => access & AccessFs::from_file(ABI::V3),
    };
    if access.is_empty() {
        return Ok(created);
    }
    Ok(created.add_rule(PathBeneath::new(fd, access))?)
}

/// Appends the block-device nodes under `dir` (symlinks not followed, `depth` levels).
fn block_devices(dir: &std::path::Path, depth: u32, out: &mut Vec<std::path::PathBuf>) {
    use std::os::unix::fs::FileTypeExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_block_device() {
            out.push(entry.path());
        } else if kind.is_dir() && depth > 1 {
            block_devices(&entry.path(), depth - 1, out);
        }
    }
}

/// The capabilities a sandboxed command run as root keeps: Docker's default set for
/// containers without `MKNOD`, `NET_RAW` and `SETFCAP` — enough to own, chmod and chown
/// files and switch users, as package managers do. Everything else (`SYS_ADMIN`,
/// `SYS_RAWIO`, `SYS_PTRACE`, `DAC_READ_SEARCH`'s `open_by_handle_at`, `NET_ADMIN`, `BPF`,
/// `SYS_MODULE`, `LINUX_IMMUTABLE`…) is reach beyond the file rules.
const KEPT_CAPABILITIES: rustix::thread::CapabilitySet = {
    use rustix::thread::CapabilitySet as C;
    C::CHOWN
        .union(C::DAC_OVERRIDE)
        .union(C::FOWNER)
        .union(C::FSETID)
        .union(C::KILL)
        .union(C::SETGID)
        .union(C::SETUID)
        .union(C::SETPCAP)
        .union(C::NET_BIND_SERVICE)
        .union(C::SYS_CHROOT)
        .union(C::AUDIT_WRITE)
};

/// Drops every capability but [`KEPT_CAPABILITIES`] from the bounding, ambient, inheritable,
/// permitted and effective sets, so neither this process nor anything it execs (a set-uid
/// or file-capability binary included) holds them. A process without capabilities (not
/// root) has nothing to drop; `no_new_privs`, which Landlock and seccomp set, keeps it from
/// gaining any on exec.
fn drop_capabilities() -> Result<(), EnforceError> {
    use rustix::io::Errno;
    use rustix::thread::{self, CapabilitySet, CapabilitySets};
    let err = |what: &str, e: Errno| EnforceError::Capabilities(format!("{what}: {e}"));
    let sets = thread::capabilities(None).map_err(|e| err("capget", e))?;
    if sets.permitted.is_empty() && sets.inheritable.is_empty() {
        return Ok(());
    }
    if sets.effective.contains(CapabilitySet::SETPCAP) {
        for bit in 0..64 {
            let cap = CapabilitySet::from_bits_retain(1 << bit);
            if KEPT_CAPABILITIES.contains(cap) {
                continue;
            }
            match thread::remove_capability_from_bounding_set(cap) {
                Ok(()) => {}
                Err(Errno::INVAL) => break, // past the kernel's last capability
                Err(e) => return Err(err("PR_CAPBSET_DROP", e)),
            }
        }
    }
    match thread::clear_ambient_capability_set() {
        Ok(()) | Err(Errno::INVAL) => {} // EINVAL: a kernel without ambient capabilities
        Err(e) => return Err(err("PR_CAP_AMBIENT_CLEAR_ALL", e)),
    }
    let kept = CapabilitySets {
        effective: sets.effective & KEPT_CAPABILITIES,
        permitted: sets.permitted & KEPT_CAPABILITIES,
        inheritable: sets.inheritable & KEPT_CAPABILITIES,
    };
    thread::set_capabilities(None, kept).map_err(|e| err("capset", e))
}

/// The (device, inode) pairs of the existing regular files among `paths`.
fn inodes(paths: &[std::path::PathBuf]) -> Vec<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    paths
        .iter()
        .filter_map(|p| std::fs::symlink_metadata(p).ok())
        .filter(|m| m.is_file())
        .map(|m| (m.dev(), m.ino()))
        .collect()
}

const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;

fn apply_seccomp(network: bool, unix_sockets: bool) -> Result<(), EnforceError> {
    fn err(e: impl std::fmt::Display) -> EnforceError {
        EnforceError::Seccomp(e.to_string())
    }
    let cond = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(err)
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(
        libc::SYS_ioctl,
        vec![
            SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, TIOCSTI)?]).map_err(err)?,
            SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, TIOCLINUX)?]).map_err(err)?,
        ],
    );
    // A rule list denies the call when any rule matches; an empty list denies it always.
    let family = |op: SeccompCmpOp| -> Result<Vec<SeccompRule>, EnforceError> {
        Ok(vec![
            SeccompRule::new(vec![cond(0, op, libc::AF_UNIX as u64)?]).map_err(err)?,
        ])
    };
    match (network, unix_sockets) {
        (true, true) => {}
        (true, false) => {
            rules.insert(libc::SYS_socket, family(SeccompCmpOp::Eq)?);
        }
        (false, true) => {
            rules.insert(libc::SYS_socket, family(SeccompCmpOp::Ne)?);
        }
        (false, false) => {
            rules.insert(libc::SYS_socket, Vec::new());
        }
    }
    if !network {
        rules.insert(libc::SYS_socketpair, family(SeccompCmpOp::Ne)?);
    } else if !unix_sockets {
        // A datagram end of a pair can still `sendto`/`connect` any path-bound datagram
        // socket (syslog, journald, a service's NOTIFY_SOCKET): only stream and seqpacket
        // pairs, which stay joined to their peer. The type's low 4 bits; flags are above.
        // (SOCK_PACKET, 10, is refused for AF_UNIX by the kernel.)
        let mut deny = Vec::new();
        for kind in [libc::SOCK_DGRAM, libc::SOCK_RAW, libc::SOCK_RDM] {
            let kind = cond(1, SeccompCmpOp::MaskedEq(0xf), kind as u64)?;
            deny.push(SeccompRule::new(vec![kind]).map_err(err)?);
        }
        rules.insert(libc::SYS_socketpair, deny);
    }
    // io_uring creates sockets without socket(2) (IORING_OP_SOCKET), so it is refused
    // whenever any socket family is.
    if !(network && unix_sockets) {
        rules.insert(libc::SYS_io_uring_setup, Vec::new());
    }
    let arch: seccompiler::TargetArch = std::env::consts::ARCH.try_into().map_err(err)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(err)?;
    let program: seccompiler::BpfProgram = filter.try_into().map_err(err)?;
    seccompiler::apply_filter(&program).map_err(err)
}
