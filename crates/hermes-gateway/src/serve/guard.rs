//! Request checks every network surface runs before its routes (issue 18 §3): the `Host`
//! header names this listener (defeats DNS rebinding: a page on `evil.example` whose name
//! now resolves to 127.0.0.1 still sends `Host: evil.example`), browsers' cross-site
//! requests are refused (`Origin` not allowed, `Sec-Fetch-Site: cross-site|same-site`),
//! optionally only `application/json` bodies are accepted (a cross-site form or
//! `text/plain` POST needs no CORS preflight, so this is what stops it), and the body is
//! read within a time and size limit.
//!
//! Each surface renders a [`Refusal`] in its own error shape (the API: an OpenAI error
//! object; the webhook: `{ok:false,error}`).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use http_body_util::BodyExt;

/// Why a request was refused before reaching a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// 400, 403, 408, 413, 415 or 421.
    pub status: StatusCode,
    /// A stable machine-readable code (`host_not_allowed`, `cross_site_request`, …).
    pub code: &'static str,
    /// What was wrong and how to fix it.
    pub message: String,
}

impl Refusal {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            code,
            message: message.into(),
        }
    }
}

/// Which `Host` header values a listener answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPolicy {
    bound: SocketAddr,
    names: Vec<String>,
}

impl HostPolicy {
    /// The policy of a listener bound to `bound`, also answering the configured `names`
    /// (host names such as `hermes.example.com`, with or without `:port`; compared without
    /// case). Always accepted: the bound `ip:port`; `localhost:port` and any loopback IP when
    /// bound to loopback; any IP literal with the bound port when bound to an unspecified
    /// address (`0.0.0.0`, `::`) — an IP literal cannot be rebound, a name can.
    pub fn new(bound: SocketAddr, names: &[String]) -> HostPolicy {
        HostPolicy {
            bound,
            names: names
                .iter()
                .map(|n| n.trim().to_ascii_lowercase())
                .filter(|n| !n.is_empty())
                .collect(),
        }
    }

    /// Whether `host` (a `Host` header value) names this listener.
    pub fn allows(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let Some((name, port)) = split_host_port(&host) else {
            return false;
        };
        if self.names.iter().any(|n| *n == host || *n == name) {
            return true;
        }
        if port.unwrap_or(80) != self.bound.port() {
            return false;
        }
        let bound = self.bound.ip();
        match name.parse::<IpAddr>() {
            Ok(ip) => {
                ip == bound || bound.is_unspecified() || (bound.is_loopback() && ip.is_loopback())
            }
            Err(_) => name == "localhost" && (bound.is_loopback() || bound.is_unspecified()),
        }
    }
}

/// `name[:port]` or `[v6][:port]` → (name without brackets, port). `None` when malformed.
fn split_host_port(host: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = host.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        return match after.strip_prefix(':') {
            Some(p) => Some((ip, Some(p.parse().ok()?))),
            None if after.is_empty() => Some((ip, None)),
            None => None,
        };
    }
    match host.rsplit_once(':') {
        Some((name, p)) if !name.contains(':') => Some((name, Some(p.parse().ok()?))),
        Some(_) => None,
        None if host.is_empty() => None,
        None => Some((host, None)),
    }
}

/// Which browser origins may call a listener.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrowserPolicy {
    /// Allowed `Origin` values (`https://app.example.com`; `*` allows every origin). Empty:
    /// no browser page may call, except one served from the listener's own origin.
    pub origins: Vec<String>,
}

impl BrowserPolicy {
    /// Checks the browser headers of a request whose `Host` already passed. Requests without
    /// `Origin` and `Sec-Fetch-Site` (curl, SDKs, servers) pass.
    ///
    /// Errors: 403 `cross_site_request` for an `Origin` that is neither allowed nor the
    /// listener's own, or for `Sec-Fetch-Site: cross-site`/`same-site` without an allowed
    /// `Origin`.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let origin = headers
            .get(header::ORIGIN)
            .map(|v| v.to_str().unwrap_or(""));
        let refuse = |what: String| {
            Refusal::new(
                StatusCode::FORBIDDEN,
                "cross_site_request",
                format!(
                    "{what}: browser pages of other sites may not call this server (allow an \
                     origin with API_SERVER_CORS_ORIGINS)"
                ),
            )
        };
        if let Some(origin) = origin {
            let origin = origin.trim();
            if self.origins.iter().any(|o| o == "*" || o == origin) {
                return Ok(());
            }
            let host = headers
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let same = origin
                .split_once("://")
                .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host));
            if !same {
                return Err(refuse(format!("Origin `{origin}` is not allowed")));
            }
            return Ok(());
        }
        let site = headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if site == "cross-site" || site == "same-site" {
            return Err(refuse(format!("Sec-Fetch-Site: {site}")));
        }
        Ok(())
    }
}

/// Everything [`guard`] checks, with the surface's error renderer.
#[derive(Clone)]
pub struct Guard {
    /// `Host` check.
    pub hosts: HostPolicy,
    /// `Origin` / `Sec-Fetch-Site` check.
    pub browsers: BrowserPolicy,
    /// Refuse bodies of POST/PUT/PATCH requests that are not `application/json` (415); a
    /// request without a body passes.
    pub require_json: bool,
    /// Longest wait for the whole body.
    pub body_timeout: Duration,
    /// Largest body in bytes (413 beyond).
    pub max_body_bytes: usize,
    /// Renders a refusal in the surface's error shape.
    pub render: Arc<dyn Fn(Refusal) -> Response + Send + Sync>,
}

impl Guard {
    /// Runs the header checks: host, browser, content type.
    ///
    /// Errors: 421 `host_not_allowed`, 403 `cross_site_request`, 415
    /// `unsupported_media_type`.
    pub fn check_head(&self, method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !self.hosts.allows(host) {
            return Err(Refusal::new(
                StatusCode::MISDIRECTED_REQUEST,
                "host_not_allowed",
                format!(
                    "Host `{host}` does not name this server; use its address, or add the \
                     name to the allowed hosts (API_SERVER_ALLOWED_HOSTS)"
                ),
            ));
        }
        self.browsers.check(headers)?;
        // An empty POST (no body at all) carries nothing to parse and is let through.
        let declared_empty = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() == "0");
        let no_body = !headers.contains_key(header::TRANSFER_ENCODING)
            && (declared_empty || !headers.contains_key(header::CONTENT_LENGTH));
        let has_body = matches!(*method, Method::POST | Method::PUT | Method::PATCH) && !no_body;
        if self.require_json && has_body {
            let ct = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let essence = ct.split(';').next().unwrap_or("").trim();
            if !essence.eq_ignore_ascii_case("application/json") {
                return Err(Refusal::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "unsupported_media_type",
                    format!(
                        "Content-Type `{ct}` is not accepted; send the body as \
                         application/json"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Reads `body` whole within the time and size limits.
    ///
    /// Errors: 408 `body_timeout`, 413 `body_too_large`, 400 `body_unreadable`.
    pub async fn read_body(&self, body: Body) -> Result<Bytes, Refusal> {
        let max = self.max_body_bytes;
        let too_large = || {
            Refusal::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("the request body is larger than {max} bytes"),
            )
        };
        let read = async {
            let mut body = body;
            let mut out = Vec::new();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| {
                    Refusal::new(
                        StatusCode::BAD_REQUEST,
                        "body_unreadable",
                        format!("the request body could not be read: {e}"),
                    )
                })?;
                if let Ok(data) = frame.into_data() {
                    if out.len() + data.len() > max {
                        return Err(too_large());
                    }
                    out.extend_from_slice(&data);
                }
            }
            Ok(Bytes::from(out))
        };
        match tokio::time::timeout(self.body_timeout, read).await {
            Ok(r) => r,
            Err(_) => Err(Refusal::new(
                StatusCode::REQUEST_TIMEOUT,
                "body_timeout",
                format!(
                    "the request body did not arrive within {} s",
                    self.body_timeout.as_secs_f64()
                ),
            )),
        }
    }
}

/// axum middleware (`from_fn_with_state(Arc<Guard>, guard)`): the header checks, then the
/// body read whole under the limits (the route sees a complete in-memory body). A declared
/// `Content-Length` over the limit is refused before reading.
pub async fn guard(State(g): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    if let Err(r) = g.check_head(&parts.method, &parts.headers) {
        tracing::warn!(code = r.code, "refused a request: {}", r.message);
        return (g.render)(r);
    }
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > g.max_body_bytes as u64) {
        return (g.render)(Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the request body is larger than {} bytes", g.max_body_bytes),
        ));
    }
    let bytes = match g.read_body(body).await {
        Ok(b) => b,
        Err(r) => return (g.render)(r),
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(bound: &str, names: &[&str]) -> HostPolicy {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        HostPolicy::new(bound.parse().unwrap(), &names)
    }

    #[test]
    fn loopback_listener_answers_its_address_and_localhost_only() {
        let p = policy("127.0.0.1:8642", &[]);
        assert!(p.allows("127.0.0.1:8642"));
        assert!(p.allows("localhost:8642"));
        assert!(p.allows("LOCALHOST:8642"));
        assert!(p.allows("[::1]:8642"));
        assert!(!p.allows("evil.example:8642"), "rebinding name");
        assert!(!p.allows("127.0.0.1:9999"), "other port");
        assert!(!p.allows("127.0.0.1"), "no port means 80");
        assert!(!p.allows(""));
        assert!(!p.allows("127.0.0.1:8642:1"));
    }

    #[test]
    fn configured_names_and_unspecified_binds() {
        let p = policy("0.0.0.0:8642", &["hermes.example.com"]);
        assert!(p.allows("hermes.example.com"));
        assert!(p.allows("hermes.example.com:443"));
        assert!(p.allows("192.168.1.20:8642"));
        assert!(!p.allows("192.168.1.20:80"));
        assert!(!p.allows("evil.example:8642"));
        let v6 = policy("[::]:80", &[]);
        assert!(v6.allows("[fe80::1]"));
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn browser_requests_need_an_allowed_or_own_origin() {
        let none = BrowserPolicy::default();
        assert!(none.check(&headers(&[])).is_ok(), "non-browser client");
        let e = none
            .check(&headers(&[("origin", "https://evil.example")]))
            .unwrap_err();
        assert_eq!(e.status, StatusCode::FORBIDDEN);
        assert!(
            none.check(&headers(&[("sec-fetch-site", "cross-site")]))
                .is_err()
        );
        assert!(
            none.check(&headers(&[("sec-fetch-site", "same-origin")]))
                .is_ok()
        );
        assert!(none.check(&headers(&[("origin", "null")])).is_err());
        let own = headers(&[
            ("origin", "http://127.0.0.1:8642"),
            ("host", "127.0.0.1:8642"),
        ]);
        assert!(none.check(&own).is_ok());
        let some = BrowserPolicy {
            origins: vec!["https://app.example".into()],
        };
        assert!(
            some.check(&headers(&[
                ("origin", "https://app.example"),
                ("sec-fetch-site", "cross-site")
            ]))
            .is_ok()
        );
        assert!(
            some.check(&headers(&[("origin", "https://other.example")]))
                .is_err()
        );
    }
}
