//! Schedule parsing and next-run times: `vectors/cron_schedule.json`, case C37 and DST
//! transitions in Europe/Berlin and America/Toronto (2026/2027).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use hermes_cron::{Schedule, ScheduleError, parse_duration_minutes, parse_timezone};
use serde_json::Value;

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .unwrap_or_else(|e| panic!("{s}: {e}"))
        .with_timezone(&Utc)
}

#[test]
fn cron_schedule_vectors() {
    let path = hermes_testkit::shared_path("vectors/cron_schedule.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let now = t(v["now"].as_str().unwrap());
    let tz = Tz::UTC;
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 9);
    for c in cases {
        let input = c["in"].as_str().unwrap();
        let got = Schedule::parse(input, now, tz);
        if c["error"].as_bool() == Some(true) {
            assert!(got.is_err(), "{input} should be rejected, got {got:?}");
            continue;
        }
        let got = got.unwrap_or_else(|e| panic!("{input}: {e}"));
        match c["kind"].as_str().unwrap() {
            "interval" => assert_eq!(
                got,
                Schedule::Interval {
                    minutes: c["minutes"].as_u64().unwrap()
                },
                "{input}"
            ),
            "cron" => assert_eq!(
                got,
                Schedule::Cron {
                    expr: c["expr"].as_str().unwrap().to_string()
                },
                "{input}"
            ),
            "once" => {
                let expected = if let Some(m) = c["offset_minutes"].as_i64() {
                    now + Duration::minutes(m)
                } else {
                    let local = c["run_at_local"].as_str().unwrap();
                    t(&format!("{local}:00Z"))
                };
                assert_eq!(got, Schedule::Once { run_at: expected }, "{input}");
            }
            k => panic!("unknown kind {k}"),
        }
    }
    for d in v["durations"].as_array().unwrap() {
        let text = d[0].as_str().unwrap();
        assert_eq!(parse_duration_minutes(text), d[1].as_u64(), "{text}");
    }
}

#[test]
fn iso_one_shot_is_local_to_the_configured_zone() {
    let tz = parse_timezone(Some("Europe/Berlin")).unwrap();
    let s = Schedule::parse("2026-02-03T14:00", t("2026-01-01T00:00:00Z"), tz).unwrap();
    assert_eq!(
        s,
        Schedule::Once {
            run_at: t("2026-02-03T13:00:00Z")
        }
    );
}

#[test]
fn past_one_shots_are_rejected_beyond_two_minutes() {
    let now = t("2026-01-01T12:00:00Z");
    let ok = Schedule::parse("2026-01-01T11:59", now, Tz::UTC);
    assert!(ok.is_ok(), "{ok:?}");
    let err = Schedule::parse("2026-01-01T11:57", now, Tz::UTC);
    assert!(matches!(err, Err(ScheduleError::InPast(_))), "{err:?}");
}

#[test]
fn rejects_unknown_zone_and_six_field_cron() {
    assert!(parse_timezone(Some("Mars/Olympus")).is_err());
    assert!(Schedule::parse("0 0 9 * * *", Utc::now(), Tz::UTC).is_err());
    assert!(Schedule::parse("61 9 * * *", Utc::now(), Tz::UTC).is_err());
    assert!(Schedule::parse("every 0m", Utc::now(), Tz::UTC).is_err());
}

#[test]
fn case_c37_cron_wall_clock_hour_survives_dst_changes() {
    let tz = parse_timezone(Some("Europe/Berlin")).unwrap();
    let s = Schedule::Cron {
        expr: "30 7 * * *".into(),
    };
    let autumn = s.next_after(t("2026-10-24T07:30:00+02:00"), tz).unwrap();
    assert_eq!(autumn, t("2026-10-25T07:30:00+01:00"));
    let spring = s.next_after(t("2027-03-27T07:30:00+01:00"), tz).unwrap();
    assert_eq!(spring, t("2027-03-28T07:30:00+02:00"));
    // And it stays right for the rest of the season.
    assert_eq!(
        s.next_after(autumn, tz).unwrap(),
        t("2026-10-26T07:30:00+01:00")
    );
    assert_eq!(
        s.next_after(spring, tz).unwrap(),
        t("2027-03-29T07:30:00+02:00")
    );
    // The reporter's weekday 09:00 job (Fri 2026-10-23 -> Mon 2026-10-26).
    let weekday = Schedule::Cron {
        expr: "0 9 * * 1-5".into(),
    };
    assert_eq!(
        weekday
            .next_after(t("2026-10-23T09:00:00+02:00"), tz)
            .unwrap(),
        t("2026-10-26T09:00:00+01:00")
    );
}

#[test]
fn berlin_gap_and_overlap_hours() {
    let tz = parse_timezone(Some("Europe/Berlin")).unwrap();
    // 02:30 does not exist on 2026-03-29: the run happens right after the gap, once.
    let gap = Schedule::Cron {
        expr: "30 2 * * *".into(),
    };
    let first = gap.next_after(t("2026-03-28T02:30:00+01:00"), tz).unwrap();
    assert_eq!(first, t("2026-03-29T03:00:00+02:00"));
    assert_eq!(
        gap.next_after(first, tz).unwrap(),
        t("2026-03-30T02:30:00+02:00")
    );
    // 02:30 happens twice on 2026-10-25: it runs once, at the first one.
    let first = gap.next_after(t("2026-10-24T02:30:00+02:00"), tz).unwrap();
    assert_eq!(first, t("2026-10-25T02:30:00+02:00"));
    let second = gap.next_after(first, tz).unwrap();
    assert_eq!(second, t("2026-10-26T02:30:00+01:00"));
}

#[test]
fn toronto_transitions_2026_and_2027() {
    let tz = parse_timezone(Some("America/Toronto")).unwrap();
    let daily = Schedule::Cron {
        expr: "0 8 * * *".into(),
    };
    // DST starts 2026-03-08 02:00 EST.
    assert_eq!(
        daily
            .next_after(t("2026-03-07T08:00:00-05:00"), tz)
            .unwrap(),
        t("2026-03-08T08:00:00-04:00")
    );
    // DST ends 2026-11-01 02:00 EDT.
    assert_eq!(
        daily
            .next_after(t("2026-10-31T08:00:00-04:00"), tz)
            .unwrap(),
        t("2026-11-01T08:00:00-05:00")
    );
    // 2027: starts 03-14, ends 11-07.
    assert_eq!(
        daily
            .next_after(t("2027-03-13T08:00:00-05:00"), tz)
            .unwrap(),
        t("2027-03-14T08:00:00-04:00")
    );
    assert_eq!(
        daily
            .next_after(t("2027-11-06T08:00:00-04:00"), tz)
            .unwrap(),
        t("2027-11-07T08:00:00-05:00")
    );
    // 01:30 repeats on 2026-11-01: once, at the EDT instant; never a time in the past.
    let late = Schedule::Cron {
        expr: "30 1 * * *".into(),
    };
    let first = late.next_after(t("2026-10-31T01:30:00-04:00"), tz).unwrap();
    assert_eq!(first, t("2026-11-01T01:30:00-04:00"));
    assert_eq!(
        late.next_after(first, tz).unwrap(),
        t("2026-11-02T01:30:00-05:00")
    );
    // Evaluated from inside the repeated hour (01:10 EST), the result is still in the future.
    let inside = t("2026-11-01T01:10:00-05:00");
    let next = late.next_after(inside, tz).unwrap();
    assert!(next > inside, "{next}");
}

#[test]
fn intervals_and_display() {
    let tz = Tz::UTC;
    let now = t("2026-01-01T00:00:00Z");
    let s = Schedule::parse("every 2h", now, tz).unwrap();
    assert_eq!(s.first_run(now, tz), Some(t("2026-01-01T02:00:00Z")));
    assert_eq!(s.display(tz), "every 2h");
    let c = Schedule::parse("0 9 * * *", now, tz).unwrap();
    assert!(
        c.display(tz).starts_with("0 9 * * * ("),
        "{}",
        c.display(tz)
    );
    let o = Schedule::parse("45 minutes", now, tz).unwrap();
    assert_eq!(o.display(tz), "once at 2026-01-01 00:45 UTC");
    assert!(!o.is_recurring());
}

/// A cron job's next run is on the minute, whatever fraction of a second it was created at,
/// as Python writes it; its description reads cleanly (stop 31's switch pass).
#[test]
fn cron_next_runs_are_whole_seconds_and_describe_cleanly() {
    let tz: chrono_tz::Tz = chrono_tz::UTC;
    let s = hermes_cron::Schedule::Cron {
        expr: "0 */6 * * *".into(),
    };
    let after = chrono::DateTime::parse_from_rfc3339("2026-12-02T14:19:07.737739769Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let next = s.next_after(after, tz).unwrap();
    assert_eq!(next.to_rfc3339(), "2026-12-02T18:00:00+00:00");
    let shown = s.display(tz);
    assert!(!shown.contains(".,"), "{shown}");
}
