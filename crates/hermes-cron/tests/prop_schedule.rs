//! Property tests of the schedule parser (issue 6 part 5; FEATURES §1 Cron, case C37): any
//! text is a schedule or a typed error, never a panic; a schedule survives the `jobs.json`
//! round trip; next-run times are always later than the time asked about, in every zone,
//! across daylight-saving changes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{DateTime, Duration, TimeZone, Utc};
use chrono_tz::Tz;
use hermes_cron::{Schedule, parse_duration_minutes};
use proptest::prelude::*;

const ZONES: &[Tz] = &[
    Tz::UTC,
    Tz::Europe__Berlin,
    Tz::America__Toronto,
    Tz::America__New_York,
    Tz::Australia__Lord_Howe,
    Tz::Asia__Kolkata,
    Tz::Pacific__Chatham,
    Tz::America__Santiago,
];

fn cron_field(max: u32) -> impl Strategy<Value = String> {
    prop_oneof![
        Just("*".to_string()),
        (0..=max).prop_map(|v| v.to_string()),
        (0..=max, 0..=max).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
        (1..=max.max(1)).prop_map(|s| format!("*/{s}")),
        (0..=max, 0..=max).prop_map(|(a, b)| format!("{a},{b}")),
        Just("?".to_string()),
        Just("L".to_string()),
        Just("MON-FRI".to_string()),
        (0..200u32).prop_map(|v| v.to_string()),
        "[0-9*/,-]{1,5}",
    ]
}

/// Schedule-looking text: cron expressions (valid and not), intervals, delays, ISO times and
/// noise.
fn schedule_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (cron_field(59), cron_field(23), cron_field(31), cron_field(12), cron_field(7))
            .prop_map(|(a, b, c, d, e)| format!("{a} {b} {c} {d} {e}")),
        2 => (0u64..100_000, prop_oneof![Just("m"), Just("h"), Just("d"), Just(" minutes"), Just(" hrs"), Just("s"), Just("")])
            .prop_map(|(n, u)| format!("every {n}{u}")),
        1 => (0u64..100_000, prop_oneof![Just("m"), Just("h"), Just("d"), Just("w")])
            .prop_map(|(n, u)| format!("{n}{u}")),
        1 => (2020i32..2100, 0u32..14, 0u32..33, 0u32..26, 0u32..61)
            .prop_map(|(y, mo, d, h, mi)| format!("{y}-{mo:02}-{d:02}T{h:02}:{mi:02}")),
        1 => "\\PC{0,24}",
        1 => "[0-9a-z */,:-]{0,20}",
    ]
}

fn instant() -> impl Strategy<Value = DateTime<Utc>> {
    // 2024-01-01 .. 2030-01-01, minute resolution plus some seconds.
    (0i64..(6 * 365 * 24 * 60), 0i64..60).prop_map(|(m, s)| {
        Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap()
            + Duration::minutes(m)
            + Duration::seconds(s)
    })
}

/// Property cases: `n`, or 20 × `n` with `HERMES_LONG_TESTS=1` (README "Two commands").
fn cases(n: u32) -> u32 {
    match std::env::var("HERMES_LONG_TESTS") {
        Ok(v) if !v.is_empty() && v != "0" => n * 20,
        _ => n,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    #[test]
    fn parse_never_panics_and_next_runs_move_forward(
        text in schedule_text(),
        now in instant(),
        zone in 0..ZONES.len(),
    ) {
        let tz = ZONES[zone];
        let Ok(schedule) = Schedule::parse(&text, now, tz) else {
            return Ok(());
        };
        // jobs.json round trip.
        let json = serde_json::to_string(&schedule).unwrap();
        let back: Schedule = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(&back, &schedule);

        if let Some(first) = schedule.first_run(now, tz)
            && schedule.is_recurring()
        {
            prop_assert!(first > now, "{:?}: first run {} not after {}", schedule, first, now);
        }
        // A few successive runs, each strictly later than the one before.
        let mut at = now;
        for _ in 0..4 {
            match schedule.next_after(at, tz) {
                Some(next) => {
                    prop_assert!(schedule.is_recurring(), "{:?} is one-shot but has a next run", schedule);
                    prop_assert!(next > at, "{:?} in {}: {} is not after {}", schedule, tz, next, at);
                    at = next;
                }
                None => break,
            }
        }
    }

    /// Durations: `Some` only for a positive whole number of minutes, never fewer than the
    /// number written (units are minutes or larger).
    #[test]
    fn durations_parse_to_positive_minutes(n in 0u64..1_000_000, unit in prop_oneof![Just("m"), Just("h"), Just("d"), Just(" minutes"), Just(" hours"), Just("x")]) {
        let text = format!("{n}{unit}");
        if let Some(minutes) = parse_duration_minutes(&text) {
            prop_assert!(minutes >= 1);
            prop_assert!(minutes >= n);
        }
    }
}
