//! Session reset policy (`session_reset`, issue 7 part 7): whether a chat's next message
//! starts a fresh session.

use chrono::{DateTime, Duration, Local, TimeZone, Timelike, Utc};

use crate::config::{ResetMode, ResetPolicy};

/// Why a session is being replaced; stored as the session's end reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetReason {
    /// No message for `idle_minutes`.
    Idle,
    /// The daily reset hour passed since the last message.
    Daily,
}

impl ResetReason {
    /// The end reason written to the store.
    pub fn as_str(self) -> &'static str {
        match self {
            ResetReason::Idle => "idle_reset",
            ResetReason::Daily => "daily_reset",
        }
    }
}

/// Whether a session last active at `last` must be reset at `now` (times in UTC; the daily
/// hour is local time of `tz`).
pub fn due_reset<Tz: TimeZone>(
    policy: &ResetPolicy,
    last: DateTime<Utc>,
    now: DateTime<Utc>,
    tz: &Tz,
) -> Option<ResetReason> {
    let idle = matches!(policy.mode, ResetMode::Idle | ResetMode::Both);
    let daily = matches!(policy.mode, ResetMode::Daily | ResetMode::Both);
    let minutes = i64::try_from(policy.idle_minutes).unwrap_or(i64::MAX / 120);
    if idle && now - last >= Duration::minutes(minutes) {
        return Some(ResetReason::Idle);
    }
    if daily {
        let local_now = now.with_timezone(tz);
        // The most recent moment the clock showed `at_hour:00` (today's or yesterday's).
        let mut boundary = local_now
            .with_hour(policy.at_hour)
            .and_then(|t| t.with_minute(0))
            .and_then(|t| t.with_second(0))
            .and_then(|t| t.with_nanosecond(0))?;
        if boundary > local_now {
            boundary -= Duration::days(1);
        }
        if last < boundary.with_timezone(&Utc) {
            return Some(ResetReason::Daily);
        }
    }
    None
}

/// [`due_reset`] in the machine's local time zone.
pub fn due_reset_local(
    policy: &ResetPolicy,
    last: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Option<ResetReason> {
    due_reset(policy, last, now, &Local)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn policy(mode: ResetMode) -> ResetPolicy {
        ResetPolicy {
            mode,
            idle_minutes: 60,
            at_hour: 4,
        }
    }

    #[test]
    fn none_never_resets() {
        let p = policy(ResetMode::None);
        assert_eq!(
            due_reset(
                &p,
                at("2026-01-01T00:00:00Z"),
                at("2026-03-01T00:00:00Z"),
                &Utc
            ),
            None
        );
    }

    #[test]
    fn idle_counts_minutes_since_the_last_message() {
        let p = policy(ResetMode::Idle);
        let last = at("2026-01-01T10:00:00Z");
        assert_eq!(due_reset(&p, last, at("2026-01-01T10:59:00Z"), &Utc), None);
        assert_eq!(
            due_reset(&p, last, at("2026-01-01T11:00:00Z"), &Utc),
            Some(ResetReason::Idle)
        );
    }

    #[test]
    fn daily_resets_once_the_hour_has_passed_since_the_last_message() {
        let p = policy(ResetMode::Daily);
        let last = at("2026-01-01T23:00:00Z");
        assert_eq!(due_reset(&p, last, at("2026-01-02T03:59:00Z"), &Utc), None);
        assert_eq!(
            due_reset(&p, last, at("2026-01-02T04:00:00Z"), &Utc),
            Some(ResetReason::Daily)
        );
        // Both: the idle rule applies too.
        let both = policy(ResetMode::Both);
        assert_eq!(
            due_reset(
                &both,
                at("2026-01-02T05:00:00Z"),
                at("2026-01-02T06:30:00Z"),
                &Utc
            ),
            Some(ResetReason::Idle)
        );
    }
}
