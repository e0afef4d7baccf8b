//! Schedule syntax, next-run computation and display (FEATURES §1 Cron;
//! `vectors/cron_schedule.json`; case C37).
//!
//! Accepted forms:
//! - `every <duration>`: a recurring interval measured in elapsed time (`every 30m`);
//! - a 5-field cron expression (`minute hour day-of-month month day-of-week`), evaluated on the
//!   wall clock of the configured IANA time zone;
//! - an ISO timestamp (`2026-02-03T14:00`, local to the zone, or with an offset/`Z`): one run;
//! - a bare duration (`45m`, `2 hours`): one run that long after now.
//!
//! Durations are a number and a unit: `m`/`min`/`mins`/`minute(s)`, `h`/`hr(s)`/`hour(s)`,
//! `d`/`day(s)`, with or without a space between them.

use std::str::FromStr;

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use croner::Cron;
use serde::{Deserialize, Serialize};

/// How far in the past a one-shot may be when it is created (FEATURES §1: 2 minutes).
pub const ONE_SHOT_PAST_GRACE: Duration = Duration::minutes(2);

/// A parsed schedule, as stored in `jobs.json` (`{"kind": "interval", "minutes": 30}`, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Schedule {
    /// Every `minutes` minutes of elapsed time.
    Interval {
        /// Interval length in minutes (≥ 1).
        minutes: u64,
    },
    /// A 5-field cron expression evaluated in the configured time zone.
    Cron {
        /// The expression as written.
        expr: String,
    },
    /// One run at an instant.
    Once {
        /// When to run (UTC).
        #[serde(with = "crate::record::time")]
        run_at: DateTime<Utc>,
    },
}

/// Why a schedule text was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// The text matches none of the accepted forms.
    #[error(
        "cannot read schedule `{0}`: use `every 30m`, a 5-field cron expression like `0 9 * * *`, an ISO time like `2026-02-03T14:00`, or a delay like `45m`"
    )]
    Unrecognized(String),
    /// A cron expression that croner rejects.
    #[error("invalid cron expression `{expr}`: {reason}")]
    BadCron {
        /// The expression.
        expr: String,
        /// croner's explanation.
        reason: String,
    },
    /// A one-shot time more than [`ONE_SHOT_PAST_GRACE`] in the past.
    #[error("`{0}` is in the past; a one-time job needs a future time")]
    InPast(String),
    /// A local time that does not exist in the zone (skipped by a DST change).
    #[error("`{0}` does not exist in time zone {1} (skipped by a daylight-saving change)")]
    NonexistentLocalTime(String, String),
    /// An unknown IANA time zone name.
    #[error("unknown time zone `{0}` (use an IANA name such as Europe/Berlin)")]
    UnknownTimeZone(String),
}

/// Parses an IANA time-zone name (`config.yaml` `timezone`); `None` means UTC.
pub fn parse_timezone(name: Option<&str>) -> Result<Tz, ScheduleError> {
    match name.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(Tz::UTC),
        Some(n) => Tz::from_str(n).map_err(|_| ScheduleError::UnknownTimeZone(n.to_string())),
    }
}

/// Parses a duration (`30m`, `2h`, `1d`, `45 minutes`, `3 hrs`) into whole minutes.
/// Returns `None` for anything else, and for zero.
pub fn parse_duration_minutes(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let split = t.find(|c: char| !c.is_ascii_digit())?;
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().ok()?;
    let per = match unit.trim() {
        "m" | "min" | "mins" | "minute" | "minutes" => 1,
        "h" | "hr" | "hrs" | "hour" | "hours" => 60,
        "d" | "day" | "days" => 1440,
        _ => return None,
    };
    n.checked_mul(per).filter(|m| *m > 0)
}

/// Formats minutes as the shortest exact unit: `30m`, `2h`, `1d`.
fn format_minutes(m: u64) -> String {
    if m.is_multiple_of(1440) {
        format!("{}d", m / 1440)
    } else if m.is_multiple_of(60) {
        format!("{}h", m / 60)
    } else {
        format!("{m}m")
    }
}

fn parse_cron(expr: &str) -> Result<Cron, ScheduleError> {
    if expr.split_whitespace().count() != 5 {
        return Err(ScheduleError::Unrecognized(expr.to_string()));
    }
    Cron::from_str(expr).map_err(|e| ScheduleError::BadCron {
        expr: expr.to_string(),
        reason: e.to_string(),
    })
}

/// Resolves a wall-clock time in `tz`; in an autumn overlap the earlier instant is used.
fn local_to_utc(naive: NaiveDateTime, tz: Tz, text: &str) -> Result<DateTime<Utc>, ScheduleError> {
    match tz.from_local_datetime(&naive) {
        LocalResult::Single(t) => Ok(t.with_timezone(&Utc)),
        LocalResult::Ambiguous(early, _) => Ok(early.with_timezone(&Utc)),
        LocalResult::None => Err(ScheduleError::NonexistentLocalTime(
            text.to_string(),
            tz.name().to_string(),
        )),
    }
}

fn parse_iso(text: &str, tz: Tz) -> Option<Result<DateTime<Utc>, ScheduleError>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(Ok(t.with_timezone(&Utc)));
    }
    for fmt in ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"] {
        if let Ok(n) = NaiveDateTime::parse_from_str(text, fmt) {
            return Some(local_to_utc(n, tz, text));
        }
    }
    None
}

impl Schedule {
    /// Parses schedule text at `now` in zone `tz`. One-shot delays are resolved against
    /// `now`; a one-shot more than 2 minutes before `now` is rejected.
    pub fn parse(text: &str, now: DateTime<Utc>, tz: Tz) -> Result<Schedule, ScheduleError> {
        let t = text.trim();
        let lower = t.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix("every ") {
            return parse_duration_minutes(rest)
                .map(|minutes| Schedule::Interval { minutes })
                .ok_or_else(|| ScheduleError::Unrecognized(t.to_string()));
        }
        if let Some(minutes) = parse_duration_minutes(t) {
            let offset = i64::try_from(minutes)
                .ok()
                .and_then(Duration::try_minutes)
                .ok_or_else(|| ScheduleError::Unrecognized(t.to_string()))?;
            return Ok(Schedule::Once {
                run_at: now + offset,
            });
        }
        if let Some(res) = parse_iso(t, tz) {
            let run_at = res?;
            if run_at < now - ONE_SHOT_PAST_GRACE {
                return Err(ScheduleError::InPast(t.to_string()));
            }
            return Ok(Schedule::Once { run_at });
        }
        if t.split_whitespace().count() == 5 {
            parse_cron(t)?;
            return Ok(Schedule::Cron {
                expr: t.split_whitespace().collect::<Vec<_>>().join(" "),
            });
        }
        Err(ScheduleError::Unrecognized(t.to_string()))
    }

    /// True for schedules that run more than once.
    pub fn is_recurring(&self) -> bool {
        !matches!(self, Schedule::Once { .. })
    }

    /// The first run time of a job created at `now`: the one-shot time, `now + interval`, or
    /// the first cron occurrence after `now`.
    pub fn first_run(&self, now: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        match self {
            Schedule::Once { run_at } => Some(*run_at),
            _ => self.next_after(now, tz),
        }
    }

    /// The next run strictly after `after`; `None` for one-shots (they run once) and for
    /// cron expressions with no future match.
    ///
    /// Cron expressions are matched on the naive wall-clock time of `tz` and the zone is
    /// attached to the result, so the UTC offset is the one of that date (case C37). A
    /// wall-clock time skipped by a spring change runs at the first valid instant after the
    /// gap; a time repeated by an autumn change runs once, at its first occurrence. The result
    /// is always later than `after`.
    pub fn next_after(&self, after: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        match self {
            Schedule::Once { .. } => None,
            Schedule::Interval { minutes } => {
                let m = i64::try_from(*minutes).ok()?;
                Some(after + Duration::try_minutes(m)?)
            }
            Schedule::Cron { expr } => {
                let cron = parse_cron(expr).ok()?;
                // Whole seconds: croner keeps the fraction of `from`, and a cron run is due
                // on the minute (Python writes `…T18:00:00+00:00`).
                let mut from = after.with_nanosecond(0).unwrap_or(after).with_timezone(&tz);
                // Guard (C37, "never a next run in the past"): croner matches wall-clock time;
                // inside a repeated autumn hour a match can map to its first instant, at or
                // before `after`. Then take the later instant of that wall time, or search on.
                for _ in 0..8 {
                    let next = cron.find_next_occurrence(&from, false).ok()?;
                    let utc = next.with_timezone(&Utc);
                    if utc > after {
                        return Some(utc);
                    }
                    if let Some(late) = tz.from_local_datetime(&next.naive_local()).latest() {
                        let late = late.with_timezone(&Utc);
                        if late > after {
                            return Some(late);
                        }
                    }
                    from = next;
                }
                None
            }
        }
    }

    /// A human-readable description: `every 30m`, `cron 0 9 * * * (At 09:00 …)`,
    /// `once at 2026-02-03 14:00 CET`.
    pub fn display(&self, tz: Tz) -> String {
        match self {
            Schedule::Interval { minutes } => format!("every {}", format_minutes(*minutes)),
            Schedule::Cron { expr } => match parse_cron(expr) {
                Ok(c) => format!(
                    "{expr} ({}, {})",
                    c.describe().trim_end_matches('.'),
                    tz.name()
                ),
                Err(_) => expr.clone(),
            },
            Schedule::Once { run_at } => format!(
                "once at {}",
                run_at.with_timezone(&tz).format("%Y-%m-%d %H:%M %Z")
            ),
        }
    }

    /// The short text Python Hermes 0.19.0 stores as `schedule.display` and
    /// `schedule_display` (`cron/jobs.py` `parse_schedule`): `every 120m`, the cron
    /// expression, or `once at 2026-02-03 14:00` (wall clock of `tz`).
    pub fn python_display(&self, tz: Tz) -> String {
        match self {
            Schedule::Interval { minutes } => format!("every {minutes}m"),
            Schedule::Cron { expr } => expr.clone(),
            Schedule::Once { run_at } => format!(
                "once at {}",
                run_at.with_timezone(&tz).format("%Y-%m-%d %H:%M")
            ),
        }
    }
}

/// A job's `schedule` object as stored in `jobs.json`: the parsed [`Schedule`] and every other
/// key of the object (Python's `display`, and keys of later versions), kept as they were.
/// Dereferences to the [`Schedule`].
#[derive(Debug, Clone, PartialEq)]
pub struct JobSchedule {
    schedule: Schedule,
    extra: serde_json::Map<String, serde_json::Value>,
}

impl JobSchedule {
    /// A stored schedule with Python's `display` text for it in zone `tz`.
    pub fn new(schedule: Schedule, tz: Tz) -> JobSchedule {
        let mut extra = serde_json::Map::new();
        extra.insert("display".into(), schedule.python_display(tz).into());
        JobSchedule { schedule, extra }
    }

    /// The parsed schedule.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// The keys hermes does not interpret (`display`, …).
    pub fn extra(&self) -> &serde_json::Map<String, serde_json::Value> {
        &self.extra
    }
}

impl std::ops::Deref for JobSchedule {
    type Target = Schedule;
    fn deref(&self) -> &Schedule {
        &self.schedule
    }
}

impl Serialize for JobSchedule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = match serde_json::to_value(&self.schedule) {
            Ok(serde_json::Value::Object(m)) => m,
            Ok(_) => return Err(serde::ser::Error::custom("schedule is not an object")),
            Err(e) => return Err(serde::ser::Error::custom(e)),
        };
        for (k, v) in &self.extra {
            map.entry(k.clone()).or_insert_with(|| v.clone());
        }
        map.serialize(s)
    }
}

impl<'de> Deserialize<'de> for JobSchedule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<JobSchedule, D::Error> {
        let mut extra = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let kind = extra
            .get("kind")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_string();
        let known: &[&str] = match kind.as_str() {
            "interval" => &["kind", "minutes"],
            "cron" => &["kind", "expr"],
            "once" => &["kind", "run_at"],
            other => {
                return Err(serde::de::Error::custom(format!(
                    "schedule kind `{other}` is not interval, cron or once"
                )));
            }
        };
        let mut own = serde_json::Map::new();
        for k in known {
            if let Some(v) = extra.remove(*k) {
                own.insert((*k).to_string(), v);
            }
        }
        let schedule = serde_json::from_value(serde_json::Value::Object(own))
            .map_err(serde::de::Error::custom)?;
        Ok(JobSchedule { schedule, extra })
    }
}
