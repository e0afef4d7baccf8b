//! Who holds a lease: an identity that names this machine and process, so another process
//! on the same machine can tell that a holder killed with `kill -9` is gone instead of
//! waiting for its lease to expire. Used by the cron job leases (`cron/jobs.json`) and the
//! session leases of the store.
//!
//! An owner id is a `:`-separated list holding `<host>:pid<N>` somewhere, e.g.
//! `web-1:pid4242:3f9a` (cron) or `cli:web-1:pid4242:0` (a turn). Ids without a
//! `pid<N>` segment are never judged; `pid<N>` first (older cron leases) counts as this
//! machine's.

/// This machine's host name (`/proc/sys/kernel/hostname`), empty when unknown.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// `<host>:pid<N>` of this process, the part of an owner id that [`owner_is_gone`] reads.
pub fn this_process() -> String {
    format!("{}:pid{}", host_name(), std::process::id())
}

/// Whether `owner` names a process of this machine that no longer runs. Another machine's
/// owner, or one without a `pid<N>` segment, is never judged gone from here (a recycled
/// pid makes a dead owner look alive: the lease then expires as usual).
pub fn owner_is_gone(owner: &str) -> bool {
    let parts: Vec<&str> = owner.split(':').collect();
    let Some(i) = parts.iter().position(|p| {
        p.strip_prefix("pid")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    }) else {
        return false;
    };
    if i > 0 && parts[i - 1] != host_name() {
        return false;
    }
    match parts[i][3..].parse::<u32>() {
        Ok(pid) if pid > 0 => !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_process_is_not_gone_and_a_dead_one_is() {
        let me = this_process();
        assert!(!owner_is_gone(&format!("{me}:abc")));
        assert!(!owner_is_gone(&format!("cli:{me}:0")));
        // A child that has exited and been reaped is gone.
        let mut child = std::process::Command::new("true")
            .spawn()
            .unwrap_or_else(|e| panic!("spawn: {e}"));
        let pid = child.id();
        let _ = child.wait();
        let host = host_name();
        assert!(owner_is_gone(&format!("cli:{host}:pid{pid}:0")));
        assert!(owner_is_gone(&format!("pid{pid}:abc")), "older cron form");
        // Another machine's owner, or no pid segment: never judged.
        assert!(!owner_is_gone(&format!("cli:other-host-x:pid{pid}:0")));
        assert!(!owner_is_gone("cli:4242:0"));
        assert!(!owner_is_gone("pidfoo:1"));
    }
}
