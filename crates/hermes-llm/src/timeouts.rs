//! How long one model call may wait: for the connection, for each piece of the response,
//! and in total (issue 18 §6: a hung model is cut, the total wait of one call is bounded).

use std::time::Duration;

use hermes_protocol::config::ModelConfig;

/// Default [`Timeouts::connect`]: 30 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default [`Timeouts::stream_idle`] (`model.stream_idle_timeout`): 60 s.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default [`Timeouts::total`] (`model.request_timeout_seconds`): 1800 s, the default of
/// Python Hermes' `HERMES_API_TIMEOUT`.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(1800);

/// The time limits of one model call. A limit that is hit ends the call with an error of
/// class `timeout` (retryable, FEATURES §2), whose message names the config key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Longest wait for the TCP (and TLS) connection.
    pub connect: Duration,
    /// Longest silence: from sending the request to the response head, and between two
    /// pieces of the response body (`model.stream_idle_timeout`, seconds in config).
    pub stream_idle: Duration,
    /// Longest whole call, from connecting to the last byte of the body
    /// (`model.request_timeout_seconds`).
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: DEFAULT_CONNECT_TIMEOUT,
            stream_idle: DEFAULT_STREAM_IDLE_TIMEOUT,
            total: DEFAULT_REQUEST_TIMEOUT,
        }
    }
}

impl Timeouts {
    /// All three limits set to `limit` (short utility calls such as listing models).
    pub fn all(limit: Duration) -> Timeouts {
        Timeouts {
            connect: limit,
            stream_idle: limit,
            total: limit,
        }
    }

    /// The limits a `model:` section asks for: `stream_idle_timeout` and
    /// `request_timeout_seconds` (seconds, fractions allowed), defaults for what is unset.
    /// A value that is not a positive finite number keeps the default and is reported in
    /// the returned warnings, naming the key.
    pub fn from_section(section: &ModelConfig) -> (Timeouts, Vec<String>) {
        let mut t = Timeouts::default();
        let mut warnings = Vec::new();
        let mut read = |key: &str, value: Option<f64>, slot: &mut Duration| {
            let Some(v) = value else { return };
            match Duration::try_from_secs_f64(v) {
                Ok(d) if !d.is_zero() => *slot = d,
                _ => warnings.push(format!(
                    "model.{key} `{v}` is not a positive number of seconds; using {} s",
                    slot.as_secs_f64()
                )),
            }
        };
        read(
            "stream_idle_timeout",
            section.stream_idle_timeout,
            &mut t.stream_idle,
        );
        read(
            "request_timeout_seconds",
            section.request_timeout_seconds,
            &mut t.total,
        );
        (t, warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_config_values() {
        let (t, w) = Timeouts::from_section(&ModelConfig::default());
        assert_eq!(t, Timeouts::default());
        assert_eq!(t.stream_idle, Duration::from_secs(60));
        assert!(w.is_empty());
        let section = ModelConfig {
            stream_idle_timeout: Some(2.5),
            request_timeout_seconds: Some(90.0),
            ..ModelConfig::default()
        };
        let (t, w) = Timeouts::from_section(&section);
        assert_eq!(t.stream_idle, Duration::from_millis(2500));
        assert_eq!(t.total, Duration::from_secs(90));
        assert!(w.is_empty());
    }

    #[test]
    fn unusable_values_warn_and_keep_the_default() {
        let section = ModelConfig {
            stream_idle_timeout: Some(0.0),
            request_timeout_seconds: Some(-3.0),
            ..ModelConfig::default()
        };
        let (t, w) = Timeouts::from_section(&section);
        assert_eq!(t, Timeouts::default());
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("model.stream_idle_timeout"), "{w:?}");
        assert!(w[1].contains("model.request_timeout_seconds"), "{w:?}");
    }
}
