//! Process memory of a long-running `hermes gateway run` (issue 7 "Memory": ≤ 15 MB idle).
//!
//! Two measures, both Linux-only and both at the boundary with the C library and the kernel,
//! which is why this is the one module of the workspace allowed `unsafe` (CONVENTIONS
//! "Workspace": `unsafe_code` is forbidden "except where a dependency boundary needs it"):
//!
//! - [`cap_malloc_arenas`]: glibc gives every thread that allocates under contention an arena
//!   of its own, up to 8 per core, and an arena keeps the pages it once used. A gateway's
//!   threads come and go (tokio's blocking pool), so the arenas pile up; two are plenty for a
//!   process that mostly waits on the network.
//! - [`ProcessMemory`], the gateway's idle release ([`hermes_gateway::idle`]): `malloc_trim(0)`
//!   returns the free pages of every arena, then `madvise(MADV_PAGEOUT)` (Linux 5.4) hands the
//!   executable's resident code and read-only data back to the kernel. Start-up alone touches
//!   about 15 MB of the binary's code that serving a message never needs again; the next
//!   message reads back the few megabytes it does need (about 20 ms on an SSD, measured by hand:
//!   docs/benchmarks.md).

#![allow(unsafe_code)]

use hermes_gateway::MemoryRelease;

/// Sets glibc's `M_ARENA_MAX` to 2 unless the user chose a value (`MALLOC_ARENA_MAX`, or
/// `glibc.malloc.arena_max` in `GLIBC_TUNABLES`). Call it before the async runtime starts
/// its threads: glibc reads the limit when a second thread first needs an arena.
/// Does nothing on other C libraries and systems.
pub(crate) fn cap_malloc_arenas() {
    let chosen = std::env::var_os("MALLOC_ARENA_MAX").is_some()
        || std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("glibc.malloc.arena_max"));
    if chosen {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt has no preconditions; it only records the limit under glibc's own
        // lock. Called from `main` before any other thread exists.
        let _ = unsafe { libc::mallopt(libc::M_ARENA_MAX, 2) };
    }
}

/// The `hermes` binary's idle release: trims the allocator, then pages out the executable.
/// Logs what it did at `info` (`hermes -v gateway run` or `HERMES_LOG=info`).
#[derive(Debug, Default)]
pub(crate) struct ProcessMemory;

impl MemoryRelease for ProcessMemory {
    fn release(&self) {
        let before = rss_kib();
        trim_allocator();
        let advised = match page_out_executable() {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::info!(error = %e, "idle: the executable's pages stay resident");
                0
            }
        };
        tracing::info!(
            rss_before_kib = before,
            rss_after_kib = rss_kib(),
            advised_kib = advised / 1024,
            "idle: memory given back to the system"
        );
    }
}

/// Returns the free pages of every malloc arena to the kernel (glibc only).
fn trim_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim has no preconditions; it takes each arena's lock itself.
        let _ = unsafe { libc::malloc_trim(0) };
    }
}

/// Bytes of heap in use (glibc's `mallinfo2().uordblks`, every arena), for `/_status`;
/// `None` on other C libraries.
pub(crate) fn heap_in_use_bytes() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 has no preconditions; it reads the arenas under their locks and
        // returns a plain struct by value.
        let info = unsafe { libc::mallinfo2() };
        Some(info.uordblks as u64)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

/// The resident set in KiB (`VmRSS` of `/proc/self/status`), when readable.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A mapping of the address space: `[start, end)` in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    pub start: usize,
    pub end: usize,
}

/// The file a mapping shows: device (major, minor) and inode, as `/proc/<pid>/maps` prints
/// them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId {
    pub major: u32,
    pub minor: u32,
    pub inode: u64,
}

/// The mappings of `file` in an `smaps` text (proc(5)) that only hold clean pages of the
/// file: not writable, no anonymous (copied-on-write) pages, something resident. Those are
/// what the kernel may drop at any time and read back from the file, so paging them out
/// changes nothing the process sees. The relocated read-only data of a position-independent
/// binary has anonymous pages and is left alone.
pub(crate) fn clean_file_mappings(smaps: &str, file: FileId) -> Vec<Range> {
    /// One mapping: its range, whether it is a read-only mapping of `file`, and its `Rss:`
    /// and `Anonymous:` fields in KiB.
    struct Mapping {
        range: Range,
        of_file: bool,
        rss: u64,
        anonymous: u64,
    }
    let mut mappings: Vec<Mapping> = Vec::new();
    for line in smaps.lines() {
        if let Some((range, of_file)) = mapping_header(line, file) {
            mappings.push(Mapping {
                range,
                of_file,
                rss: 0,
                anonymous: 0,
            });
        } else if let Some(m) = mappings.last_mut() {
            if let Some(kib) = field_kib(line, "Rss:") {
                m.rss = kib;
            } else if let Some(kib) = field_kib(line, "Anonymous:") {
                m.anonymous = kib;
            }
        }
    }
    mappings
        .into_iter()
        .filter(|m| m.of_file && m.rss > 0 && m.anonymous == 0)
        .map(|m| m.range)
        .collect()
}

/// `start-end perms offset major:minor inode [path]` → the range, and whether it is a
/// read-only mapping of `file`. `None` for lines that are not mapping headers.
fn mapping_header(line: &str, file: FileId) -> Option<(Range, bool)> {
    let mut parts = line.split_whitespace();
    let (start, end) = parts.next()?.split_once('-')?;
    let range = Range {
        start: usize::from_str_radix(start, 16).ok()?,
        end: usize::from_str_radix(end, 16).ok()?,
    };
    let perms = parts.next()?;
    let _offset = parts.next()?;
    let (major, minor) = parts.next()?.split_once(':')?;
    let inode: u64 = parts.next()?.parse().ok()?;
    let same_file = u32::from_str_radix(major, 16).ok() == Some(file.major)
        && u32::from_str_radix(minor, 16).ok() == Some(file.minor)
        && inode == file.inode;
    Some((range, same_file && perms.len() == 4 && !perms.contains('w')))
}

/// `Name:   12 kB` → 12.
fn field_kib(line: &str, name: &str) -> Option<u64> {
    line.strip_prefix(name)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The running executable as `/proc/<pid>/maps` names it. `st_dev` is split as glibc's
/// `major()`/`minor()` do (sys/sysmacros.h).
fn executable_id() -> std::io::Result<FileId> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata("/proc/self/exe")?;
    let dev = meta.dev();
    Ok(FileId {
        major: (((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff)) as u32,
        minor: (((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff)) as u32,
        inode: meta.ino(),
    })
}

/// Pages out the executable's clean mappings ([`clean_file_mappings`]); returns the bytes
/// advised.
///
/// Errors: `/proc/self` unreadable, or `madvise` refused (`EINVAL` before Linux 5.4).
#[cfg(target_os = "linux")]
pub(crate) fn page_out_executable() -> std::io::Result<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps")?;
    let mut advised = 0u64;
    for range in clean_file_mappings(&smaps, executable_id()?) {
        let len = range.end - range.start;
        // SAFETY: the range is a whole mapping of the running executable that is read-only
        // and holds no anonymous pages (`clean_file_mappings`), so every resident page is an
        // unmodified page of the file. Paging it out is what the kernel does on its own under
        // memory pressure: the next access reads the same bytes back from the file. No Rust
        // object is created, moved or freed; the address is only passed to the kernel.
        let done = unsafe {
            libc::madvise(
                std::ptr::without_provenance_mut(range.start),
                len,
                libc::MADV_PAGEOUT,
            )
        };
        if done != 0 {
            return Err(std::io::Error::last_os_error());
        }
        advised += len as u64;
    }
    Ok(advised)
}

/// Other systems: nothing to page out.
#[cfg(not(target_os = "linux"))]
pub(crate) fn page_out_executable() -> std::io::Result<u64> {
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXE: FileId = FileId {
        major: 0xfd,
        minor: 1,
        inode: 4242,
    };

    /// An abridged smaps of a position-independent executable: code, read-only data, the
    /// relocated read-only data (anonymous pages), writable data, then a shared library.
    const SMAPS: &str = "\
5600a0000000-5600a0400000 r--p 00000000 fd:01 4242                       /opt/hermes/bin/hermes
Size:               4096 kB
Rss:                3712 kB
Anonymous:             0 kB
VmFlags: rd mr mw me sd
5600a0400000-5600a1d00000 r-xp 00400000 fd:01 4242                       /opt/hermes/bin/hermes
Size:              25600 kB
Rss:               15800 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me sd
5600a1d00000-5600a1f00000 r--p 01d00000 fd:01 4242                       /opt/hermes/bin/hermes
Size:               2048 kB
Rss:                2048 kB
Anonymous:          2044 kB
5600a1f00000-5600a1f10000 rw-p 01f00000 fd:01 4242                       /opt/hermes/bin/hermes
Size:                 64 kB
Rss:                  40 kB
Anonymous:             8 kB
5600a2000000-5600a2001000 r--p 00000000 fd:01 4242                       /opt/hermes/bin/hermes
Size:                  4 kB
Rss:                   0 kB
Anonymous:             0 kB
7f0000000000-7f0000200000 r-xp 00028000 fd:01 999                        /usr/lib/x86_64-linux-gnu/libc.so.6
Size:               2048 kB
Rss:                1100 kB
Anonymous:             0 kB
7f0000200000-7f0000300000 r-xp 00000000 fd:02 4242                       /mnt/other/file
Size:               1024 kB
Rss:                1024 kB
Anonymous:             0 kB
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
Rss:                 132 kB
Anonymous:           132 kB
";

    #[test]
    fn only_clean_resident_read_only_mappings_of_the_executable_are_paged_out() {
        assert_eq!(
            clean_file_mappings(SMAPS, EXE),
            vec![
                Range {
                    start: 0x5600_a000_0000,
                    end: 0x5600_a040_0000
                },
                Range {
                    start: 0x5600_a040_0000,
                    end: 0x5600_a1d0_0000
                },
            ],
            "relocated data, writable data, empty mappings, libraries and another \
             device's inode 4242 stay"
        );
        let other = FileId { inode: 1, ..EXE };
        assert!(clean_file_mappings(SMAPS, other).is_empty());
        assert!(clean_file_mappings("", EXE).is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn paging_out_the_running_test_binary_keeps_it_running() {
        fn work(n: u64) -> u64 {
            (1..=n).map(|i| i * i % 7).sum()
        }
        let before = work(1000);
        trim_allocator();
        let advised = page_out_executable().expect("page out");
        assert!(advised > 0, "the test binary has resident code to page out");
        assert_eq!(
            work(1000),
            before,
            "code read back from the file runs the same"
        );
        assert!(rss_kib().is_some_and(|kib| kib > 0));
    }
}
