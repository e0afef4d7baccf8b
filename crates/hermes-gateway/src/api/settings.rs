//! Settings of the API server: where it listens, the Bearer key, the turn caps.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::api::ApiError;
use crate::serve::ServeLimits;

/// Default interval of SSE keep-alive comments while a turn runs (Python Hermes:
/// `CHAT_COMPLETIONS_SSE_KEEPALIVE_SECONDS`, 30 s; shorter here so proxies with a 30 s idle
/// limit keep the stream).
pub const DEFAULT_SSE_KEEPALIVE: Duration = Duration::from_secs(15);

/// Default listen host (`API_SERVER_HOST`): loopback only.
pub const DEFAULT_API_HOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// Default listen port (`API_SERVER_PORT`).
pub const DEFAULT_API_PORT: u16 = 8642;
/// Default cap on turns running at once over all sessions.
pub const DEFAULT_MAX_CONCURRENT_TURNS: usize = 8;

/// How the API server runs (issue 7 §1; env var names as in the Python system).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiSettings {
    /// `API_SERVER_ENABLED`: whether `hermes gateway run` starts the server (default false).
    pub enabled: bool,
    /// `API_SERVER_HOST` (default `127.0.0.1`). Without a key only loopback addresses are
    /// accepted (see [`crate::api::serve`]).
    pub host: IpAddr,
    /// `API_SERVER_PORT` (default 8642).
    pub port: u16,
    /// `API_SERVER_KEY`: the Bearer token every route except `/health` requires. `None`
    /// (unset or empty) means no authentication, which is only allowed on loopback.
    pub key: Option<String>,
    /// Profile name used in the session keys handed to the agent factory (`main` unless
    /// `-p/--profile`).
    pub profile: String,
    /// Turns that may run at once over all sessions; a request beyond it gets 429.
    pub max_concurrent_turns: usize,
    /// `API_SERVER_ALLOWED_HOSTS` (comma-separated names): `Host` values served besides the
    /// bound address (and `localhost` on loopback); any other `Host` gets 421.
    pub allowed_hosts: Vec<String>,
    /// `API_SERVER_CORS_ORIGINS` (Python Hermes' name; comma-separated, `*` for any):
    /// browser origins allowed to call; other browser cross-site requests get 403.
    pub cors_origins: Vec<String>,
    /// Connection and request limits (`API_SERVER_MAX_CONNECTIONS` sets the connection cap).
    pub limits: ServeLimits,
    /// Interval of `: keepalive` SSE comments while a streamed turn runs.
    pub sse_keepalive: Duration,
}

impl Default for ApiSettings {
    fn default() -> Self {
        ApiSettings {
            enabled: false,
            host: DEFAULT_API_HOST,
            port: DEFAULT_API_PORT,
            key: None,
            profile: "main".to_string(),
            max_concurrent_turns: DEFAULT_MAX_CONCURRENT_TURNS,
            allowed_hosts: Vec::new(),
            cors_origins: Vec::new(),
            limits: ServeLimits::default(),
            sse_keepalive: DEFAULT_SSE_KEEPALIVE,
        }
    }
}

impl std::fmt::Debug for ApiSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiSettings")
            .field("enabled", &self.enabled)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("key", &self.key.as_ref().map(|_| "<set>"))
            .field("profile", &self.profile)
            .field("max_concurrent_turns", &self.max_concurrent_turns)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("cors_origins", &self.cors_origins)
            .field("limits", &self.limits)
            .field("sse_keepalive", &self.sse_keepalive)
            .finish()
    }
}

impl ApiSettings {
    /// Reads `API_SERVER_ENABLED`, `API_SERVER_HOST`, `API_SERVER_PORT` and `API_SERVER_KEY`
    /// through `get` (the process environment merged with `HERMES_HOME/.env` in the
    /// binary; a map in tests). Unset variables keep their defaults.
    ///
    /// Errors: [`ApiError::Setting`] naming the variable when a value cannot be read
    /// (a host that is not an IP address or `localhost`, a port outside 1–65535, an enabled
    /// flag that is not a boolean).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<ApiSettings, ApiError> {
        let mut s = ApiSettings::default();
        let value = |name: &str| get(name).map(|v| v.trim().to_string());
        if let Some(v) = value("API_SERVER_ENABLED").filter(|v| !v.is_empty()) {
            s.enabled = parse_bool(&v).ok_or_else(|| ApiError::Setting {
                name: "API_SERVER_ENABLED",
                detail: format!("`{v}` is not a boolean (use true or false)"),
            })?;
        }
        if let Some(v) = value("API_SERVER_HOST").filter(|v| !v.is_empty()) {
            s.host = parse_host(&v).ok_or_else(|| ApiError::Setting {
                name: "API_SERVER_HOST",
                detail: format!("`{v}` is not an IP address (for example 127.0.0.1 or ::1)"),
            })?;
        }
        if let Some(v) = value("API_SERVER_PORT").filter(|v| !v.is_empty()) {
            s.port =
                v.parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| ApiError::Setting {
                        name: "API_SERVER_PORT",
                        detail: format!("`{v}` is not a port number between 1 and 65535"),
                    })?;
        }
        s.key = value("API_SERVER_KEY").filter(|v| !v.is_empty());
        let list = |v: Option<String>| -> Vec<String> {
            v.map(|v| {
                v.split(',')
                    .map(|x| x.trim().to_string())
                    .filter(|x| !x.is_empty())
                    .collect()
            })
            .unwrap_or_default()
        };
        s.allowed_hosts = list(value("API_SERVER_ALLOWED_HOSTS"));
        s.cors_origins = list(value("API_SERVER_CORS_ORIGINS"));
        if let Some(v) = value("API_SERVER_MAX_CONNECTIONS").filter(|v| !v.is_empty()) {
            s.limits.max_connections =
                v.parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| ApiError::Setting {
                        name: "API_SERVER_MAX_CONNECTIONS",
                        detail: format!("`{v}` is not a positive whole number"),
                    })?;
        }
        Ok(s)
    }

    /// Fails closed before anything listens: without a key only loopback addresses may be
    /// served (front ends call this before announcing the address).
    ///
    /// Errors: [`ApiError::UnprotectedBind`].
    pub fn check_exposure(&self) -> Result<(), ApiError> {
        let addr = self.addr();
        if self.key.is_none() && !addr.ip().is_loopback() {
            return Err(ApiError::UnprotectedBind { addr });
        }
        Ok(())
    }

    /// The address to listen on (`host:port`).
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.host, self.port)
    }
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn parse_host(v: &str) -> Option<IpAddr> {
    if v.eq_ignore_ascii_case("localhost") {
        return Some(DEFAULT_API_HOST);
    }
    v.trim_start_matches('[').trim_end_matches(']').parse().ok()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn defaults_are_loopback_8642_without_key() {
        let s = ApiSettings::from_env(env(&[])).unwrap();
        assert_eq!(s.addr().to_string(), "127.0.0.1:8642");
        assert_eq!(s.key, None);
        assert!(!s.enabled);
    }

    #[test]
    fn reads_every_variable() {
        let s = ApiSettings::from_env(env(&[
            ("API_SERVER_ENABLED", "true"),
            ("API_SERVER_HOST", "0.0.0.0"),
            ("API_SERVER_PORT", "9000"),
            ("API_SERVER_KEY", "sk-test"),
        ]))
        .unwrap();
        assert!(s.enabled);
        assert_eq!(s.addr().to_string(), "0.0.0.0:9000");
        assert_eq!(s.key.as_deref(), Some("sk-test"));
        assert!(s.check_exposure().is_ok());
        assert!(
            !format!("{s:?}").contains("sk-test"),
            "Debug must not show the key"
        );
    }

    #[test]
    fn hosts_origins_and_connection_cap() {
        let s = ApiSettings::from_env(env(&[
            ("API_SERVER_ALLOWED_HOSTS", "hermes.lan, box.example:8642 ,"),
            ("API_SERVER_CORS_ORIGINS", "https://app.example"),
            ("API_SERVER_MAX_CONNECTIONS", "9"),
        ]))
        .unwrap();
        assert_eq!(s.allowed_hosts, vec!["hermes.lan", "box.example:8642"]);
        assert_eq!(s.cors_origins, vec!["https://app.example"]);
        assert_eq!(s.limits.max_connections, 9);
        let e = ApiSettings::from_env(env(&[("API_SERVER_MAX_CONNECTIONS", "0")])).unwrap_err();
        assert!(e.to_string().contains("API_SERVER_MAX_CONNECTIONS"), "{e}");
        let open = ApiSettings::from_env(env(&[("API_SERVER_HOST", "0.0.0.0")])).unwrap();
        assert!(matches!(
            open.check_exposure(),
            Err(ApiError::UnprotectedBind { .. })
        ));
    }

    #[test]
    fn empty_key_means_no_key_and_localhost_is_loopback() {
        let s = ApiSettings::from_env(env(&[
            ("API_SERVER_KEY", "  "),
            ("API_SERVER_HOST", "localhost"),
        ]))
        .unwrap();
        assert_eq!(s.key, None);
        assert!(s.host.is_loopback());
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = ApiSettings::from_env(env(&[("API_SERVER_PORT", "70000")])).unwrap_err();
        assert!(e.to_string().contains("API_SERVER_PORT"), "{e}");
        let e = ApiSettings::from_env(env(&[("API_SERVER_HOST", "my host")])).unwrap_err();
        assert!(e.to_string().contains("API_SERVER_HOST"), "{e}");
        let e = ApiSettings::from_env(env(&[("API_SERVER_ENABLED", "maybe")])).unwrap_err();
        assert!(e.to_string().contains("API_SERVER_ENABLED"), "{e}");
    }
}
