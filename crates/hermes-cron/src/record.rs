//! Serde helpers for the shapes Python Hermes 0.19.0 writes into `cron/jobs.json`
//! (`cron/jobs.py` of the PyPI package): nullable fields, a string or a list where a list is
//! meant, and ISO timestamps with an offset (`2026-12-01T20:33:12.541470+00:00`) or, in files
//! written by old versions, without one.

use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serializer};

/// `null` (or a missing key, with `#[serde(default)]`) reads as the type's default.
pub(crate) fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// `"local"` when `deliver` is missing or `null` (Python's default target).
pub(crate) fn deliver<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Deliver {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<Deliver>::deserialize(d)? {
        Some(Deliver::One(s)) if !s.trim().is_empty() => s,
        Some(Deliver::Many(v)) if !v.is_empty() => v.join(","),
        _ => "local".to_string(),
    })
}

/// `true` when `enabled` is missing or `null`.
pub(crate) fn enabled<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(true))
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

fn clean(items: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in items {
        let s = s.trim().to_string();
        if !s.is_empty() && !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// A list of names given as a list, a single string, or `null` (Python's `skills`).
pub(crate) fn names<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => Vec::new(),
        Some(OneOrMany::One(s)) => clean(vec![s]),
        Some(OneOrMany::Many(v)) => clean(v),
    })
}

/// Like [`names`], but an empty result is `None` (Python's `context_from`,
/// `enabled_toolsets`: `null` means "not set").
pub(crate) fn opt_names<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let v = names(d)?;
    Ok((!v.is_empty()).then_some(v))
}

/// Parses an ISO timestamp as Python's `datetime.fromisoformat` writes it; a naive one (old
/// files) is taken as UTC.
pub(crate) fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    let t = text.trim();
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        return Some(dt.with_timezone(&Utc));
    }
    for fmt in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S%.f",
    ] {
        if let Ok(n) = NaiveDateTime::parse_from_str(t, fmt) {
            return Some(n.and_utc());
        }
    }
    None
}

/// The form both programs read: RFC 3339 with a `+00:00` offset (what Python's `isoformat`
/// writes for UTC).
pub(crate) fn format_time(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, false)
}

/// `Option<DateTime<Utc>>` in the form of [`format_time`] / [`parse_time`].
pub(crate) mod opt_time {
    use super::*;

    /// Writes `null` or the timestamp.
    pub(crate) fn serialize<S: Serializer>(
        t: &Option<DateTime<Utc>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&format_time(t)),
            None => s.serialize_none(),
        }
    }

    /// Reads `null`, a missing key (with `#[serde(default)]`) or a timestamp.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<DateTime<Utc>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(s) if s.trim().is_empty() => Ok(None),
            Some(s) => parse_time(&s)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom(format!("`{s}` is not an ISO time"))),
        }
    }
}

/// `DateTime<Utc>` in the form of [`format_time`] / [`parse_time`].
pub(crate) mod time {
    use super::*;

    /// Writes the timestamp.
    pub(crate) fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_time(t))
    }

    /// Reads a timestamp.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let s = String::deserialize(d)?;
        parse_time(&s).ok_or_else(|| serde::de::Error::custom(format!("`{s}` is not an ISO time")))
    }
}
