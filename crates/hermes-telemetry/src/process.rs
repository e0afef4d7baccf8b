//! Readings of this process for `/_status` (issue 24 §3): resident memory and uptime.

use std::sync::OnceLock;
use std::time::Instant;

/// When the process first asked for its uptime (the front ends call [`mark_start`] as
/// they start, so that is the process start for practical purposes).
static STARTED: OnceLock<Instant> = OnceLock::new();

/// Records the process start (idempotent; later calls keep the first instant).
pub fn mark_start() {
    STARTED.get_or_init(Instant::now);
}

/// Seconds since [`mark_start`] (0 when it was never called).
pub fn uptime_seconds() -> f64 {
    STARTED.get().map_or(0.0, |t| t.elapsed().as_secs_f64())
}

/// A `kB` field of `/proc/self/status` (`VmRSS`, `VmHWM`, …) in bytes, when readable.
fn status_field_bytes(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// Resident memory now and its peak, in bytes (`VmRSS` and `VmHWM` of `/proc/self/status`);
/// `None` where the file does not exist (not Linux) or lacks the field.
pub fn resident_bytes() -> (Option<u64>, Option<u64>) {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return (None, None);
    };
    (
        status_field_bytes(&status, "VmRSS:"),
        status_field_bytes(&status, "VmHWM:"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_read_in_bytes() {
        let status = "Name:\thermes\nVmHWM:\t   2048 kB\nVmRSS:\t   1024 kB\n";
        assert_eq!(status_field_bytes(status, "VmRSS:"), Some(1024 * 1024));
        assert_eq!(status_field_bytes(status, "VmHWM:"), Some(2048 * 1024));
        assert_eq!(status_field_bytes(status, "VmSwap:"), None);
    }
}
