//! The Matrix client-server API calls the adapter needs, over our reqwest (Matrix spec v1.x,
//! "Client-Server API"): `/login`, `/account/whoami`, `/sync`, `PUT /rooms/{id}/send/{type}/{txn}`,
//! `/join`, `/joined_members`, `/messages`, `/typing`, and the content
//! repository (`/_matrix/media/v3/upload`, authenticated `/_matrix/client/v1/media/download`).
//!
//! Errors follow the spec's standard error body `{"errcode", "error", "retry_after_ms"}`:
//! `M_LIMIT_EXCEEDED` (HTTP 429) is [`PlatformError::RateLimited`] with the server's wait (or
//! the `Retry-After` header), `M_UNKNOWN_TOKEN` / `M_MISSING_TOKEN` / 401 is `Auth`, other 4xx
//! are `Rejected`, 5xx and network failures `Transport`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::{Method, RequestBuilder, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::PLATFORM;
use crate::error::PlatformError;

/// Per-request timeout of every call but `/sync` (which adds its long-poll time).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Used when a 429 names no wait.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// Percent-encodes one path segment (room ids `!a:b`, event ids `$x`, txn ids): everything but
/// RFC 3986's unreserved characters.
pub(crate) fn enc(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len() + 8);
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Maps a non-success answer to a [`PlatformError`]: see the module docs. `what` names the
/// call for the log (never a token).
pub(crate) fn matrix_error(
    what: &str,
    status: StatusCode,
    retry_after_header: Option<&str>,
    body: &str,
) -> PlatformError {
    let parsed: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let errcode = parsed.get("errcode").and_then(Value::as_str).unwrap_or("");
    let message = parsed
        .get("error")
        .and_then(Value::as_str)
        .unwrap_or_else(|| body.get(..body.len().min(200)).unwrap_or(""));
    if status == StatusCode::TOO_MANY_REQUESTS || errcode == "M_LIMIT_EXCEEDED" {
        let wait = parsed
            .get("retry_after_ms")
            .and_then(Value::as_u64)
            .map(Duration::from_millis)
            .or_else(|| {
                retry_after_header
                    .and_then(|h| h.trim().parse::<u64>().ok())
                    .map(Duration::from_secs)
            })
            .unwrap_or(DEFAULT_RETRY_AFTER);
        return PlatformError::RateLimited {
            platform: PLATFORM.into(),
            retry_after: wait,
        };
    }
    let detail = format!("{what}: HTTP {} {errcode} {message}", status.as_u16());
    if status == StatusCode::UNAUTHORIZED
        || matches!(
            errcode,
            "M_UNKNOWN_TOKEN" | "M_MISSING_TOKEN" | "M_USER_DEACTIVATED"
        )
    {
        PlatformError::Auth {
            platform: PLATFORM.into(),
            detail,
        }
    } else if status.is_server_error() {
        PlatformError::transport(PLATFORM, detail)
    } else {
        PlatformError::Rejected {
            platform: PLATFORM.into(),
            detail,
        }
    }
}

/// A small typed client for one homeserver and one access token.
#[derive(Clone)]
pub(crate) struct Client {
    http: reqwest::Client,
    base: String,
}

static TXN_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A transaction id unique to this process (time, a counter and random bits): the same id is
/// reused when one send is retried, so the homeserver stores the event once.
pub(crate) fn new_txn_id() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let n = TXN_COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("hermes{millis}.{n}.{:08x}", rand::random::<u32>())
}

impl Client {
    /// A client for `homeserver` (`https://matrix.example.org`, without a trailing slash).
    /// Errors: `Transport` when the HTTP client cannot be built.
    pub(crate) fn new(homeserver: &str) -> Result<Client, PlatformError> {
        hermes_llm::init_tls();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .build()
            .map_err(|e| PlatformError::transport(PLATFORM, format!("HTTP client: {e}")))?;
        Ok(Client {
            http,
            base: homeserver.trim_end_matches('/').to_string(),
        })
    }

    /// A request to `path` (starting with `/_matrix/…`) with the bearer token, if any.
    pub(crate) fn request(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
    ) -> RequestBuilder {
        let req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .timeout(REQUEST_TIMEOUT);
        match token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    /// Sends `req` and decodes a success answer as `T`; see [`matrix_error`] for failures.
    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        what: &str,
        req: RequestBuilder,
    ) -> Result<T, PlatformError> {
        let resp = req
            .send()
            .await
            .map_err(|e| PlatformError::transport(PLATFORM, format!("{what}: {e}")))?;
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = resp.text().await.map_err(|e| {
            PlatformError::transport(PLATFORM, format!("{what}: reading the answer: {e}"))
        })?;
        if !status.is_success() {
            return Err(matrix_error(what, status, retry_after.as_deref(), &body));
        }
        serde_json::from_str(&body)
            .map_err(|e| PlatformError::protocol(PLATFORM, format!("{what}: {e}")))
    }

    /// `GET /_matrix/client/v3/sync` with `since` (none: an initial sync) and the long-poll
    /// `timeout`; the request itself may take that long plus a margin.
    pub(crate) async fn sync(
        &self,
        token: &str,
        since: Option<&str>,
        filter: &str,
        timeout: Duration,
    ) -> Result<Value, PlatformError> {
        let mut query: Vec<(&str, String)> = vec![
            ("timeout", timeout.as_millis().to_string()),
            ("filter", filter.to_string()),
        ];
        if let Some(s) = since {
            query.push(("since", s.to_string()));
        }
        let req = self
            .request(Method::GET, "/_matrix/client/v3/sync", Some(token))
            .query(&query)
            .timeout(timeout + Duration::from_secs(30));
        self.call("sync", req).await
    }

    /// `PUT /rooms/{room}/send/{type}/{txn}`: the event id. The same `txn` sent again (a
    /// retry) returns the same event instead of a second one.
    pub(crate) async fn send_event(
        &self,
        token: &str,
        room: &str,
        event_type: &str,
        txn: &str,
        content: &Value,
    ) -> Result<String, PlatformError> {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/send/{}/{}",
            enc(room),
            enc(event_type),
            enc(txn)
        );
        let answer: Value = self
            .call(
                "send",
                self.request(Method::PUT, &path, Some(token)).json(content),
            )
            .await?;
        answer
            .get("event_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| PlatformError::protocol(PLATFORM, "send: no event_id in the answer"))
    }

    /// `POST /join/{room}` (accepting an invite).
    pub(crate) async fn join(&self, token: &str, room: &str) -> Result<(), PlatformError> {
        let path = format!("/_matrix/client/v3/join/{}", enc(room));
        let req = self
            .request(Method::POST, &path, Some(token))
            .json(&serde_json::json!({}));
        self.call::<Value>("join", req).await.map(|_| ())
    }

    /// `GET /rooms/{room}/joined_members`: the joined user ids.
    pub(crate) async fn joined_members(
        &self,
        token: &str,
        room: &str,
    ) -> Result<Vec<String>, PlatformError> {
        let path = format!("/_matrix/client/v3/rooms/{}/joined_members", enc(room));
        let answer: Value = self
            .call(
                "joined_members",
                self.request(Method::GET, &path, Some(token)),
            )
            .await?;
        Ok(answer
            .get("joined")
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default())
    }

    /// `GET /directory/room/{alias}`: the room id of `#alias:server`.
    pub(crate) async fn resolve_alias(
        &self,
        token: &str,
        alias: &str,
    ) -> Result<String, PlatformError> {
        let path = format!("/_matrix/client/v3/directory/room/{}", enc(alias));
        let answer: Value = self
            .call("directory", self.request(Method::GET, &path, Some(token)))
            .await?;
        answer
            .get("room_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| PlatformError::protocol(PLATFORM, "directory: no room_id"))
    }

    /// `POST /createRoom` for a direct chat with `user`: the new room's id.
    pub(crate) async fn create_dm(&self, token: &str, user: &str) -> Result<String, PlatformError> {
        let body = serde_json::json!({
            "invite": [user],
            "is_direct": true,
            "preset": "trusted_private_chat",
        });
        let answer: Value = self
            .call(
                "createRoom",
                self.request(Method::POST, "/_matrix/client/v3/createRoom", Some(token))
                    .json(&body),
            )
            .await?;
        answer
            .get("room_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| PlatformError::protocol(PLATFORM, "createRoom: no room_id"))
    }

    /// The membership (`join`, `invite`, `leave`, …) of `user` in `room`, `None` when there
    /// is none.
    pub(crate) async fn membership(
        &self,
        token: &str,
        room: &str,
        user: &str,
    ) -> Result<Option<String>, PlatformError> {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/state/m.room.member/{}",
            enc(room),
            enc(user)
        );
        match self
            .call::<Value>("member", self.request(Method::GET, &path, Some(token)))
            .await
        {
            Ok(v) => Ok(v
                .get("membership")
                .and_then(Value::as_str)
                .map(str::to_owned)),
            Err(PlatformError::Rejected { detail, .. }) if detail.contains("M_NOT_FOUND") => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// `GET /joined_rooms`.
    pub(crate) async fn joined_rooms(&self, token: &str) -> Result<Vec<String>, PlatformError> {
        let answer: Value = self
            .call(
                "joined_rooms",
                self.request(Method::GET, "/_matrix/client/v3/joined_rooms", Some(token)),
            )
            .await?;
        Ok(answer
            .get("joined_rooms")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default())
    }

    /// `PUT /rooms/{room}/typing/{user}` for `timeout`.
    pub(crate) async fn typing(
        &self,
        token: &str,
        room: &str,
        user: &str,
        timeout: Duration,
    ) -> Result<(), PlatformError> {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/typing/{}",
            enc(room),
            enc(user)
        );
        let body = serde_json::json!({"typing": true, "timeout": timeout.as_millis() as u64});
        self.call::<Value>(
            "typing",
            self.request(Method::PUT, &path, Some(token)).json(&body),
        )
        .await
        .map(|_| ())
    }

    /// Uploads `bytes` to the content repository: the `mxc://` URI.
    pub(crate) async fn upload(
        &self,
        token: &str,
        bytes: Vec<u8>,
        file_name: &str,
        mime: &str,
    ) -> Result<String, PlatformError> {
        let req = self
            .request(Method::POST, "/_matrix/media/v3/upload", Some(token))
            .query(&[("filename", file_name)])
            .header(reqwest::header::CONTENT_TYPE, mime)
            .timeout(Duration::from_secs(300))
            .body(bytes);
        let answer: Value = self.call("upload", req).await?;
        answer
            .get("content_uri")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| PlatformError::protocol(PLATFORM, "upload: no content_uri"))
    }

    /// The request that downloads `mxc://server/id` (authenticated media, spec v1.11);
    /// `None` for a URI that is not `mxc://<server>/<id>`.
    pub(crate) fn download(&self, token: &str, mxc: &str) -> Option<RequestBuilder> {
        let rest = mxc.strip_prefix("mxc://")?;
        let (server, id) = rest.split_once('/')?;
        if server.is_empty() || id.is_empty() || id.contains('/') {
            return None;
        }
        let path = format!(
            "/_matrix/client/v1/media/download/{}/{}",
            enc(server),
            enc(id)
        );
        Some(
            self.request(Method::GET, &path, Some(token))
                .timeout(Duration::from_secs(300)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_are_percent_encoded() {
        assert_eq!(enc("!abc:example.org"), "%21abc%3Aexample.org");
        assert_eq!(enc("$ev/x+y"), "%24ev%2Fx%2By");
        assert_eq!(enc("m.room.message"), "m.room.message");
    }

    #[test]
    fn errors_map_to_their_kind() {
        let e = matrix_error(
            "send",
            StatusCode::TOO_MANY_REQUESTS,
            None,
            r#"{"errcode":"M_LIMIT_EXCEEDED","error":"Too many","retry_after_ms":1500}"#,
        );
        assert!(
            matches!(e, PlatformError::RateLimited { retry_after, .. } if retry_after == Duration::from_millis(1500))
        );
        let e = matrix_error("send", StatusCode::TOO_MANY_REQUESTS, Some("3"), "{}");
        assert!(
            matches!(e, PlatformError::RateLimited { retry_after, .. } if retry_after == Duration::from_secs(3))
        );
        let e = matrix_error(
            "sync",
            StatusCode::UNAUTHORIZED,
            None,
            r#"{"errcode":"M_UNKNOWN_TOKEN","error":"Invalid access token passed."}"#,
        );
        assert!(matches!(e, PlatformError::Auth { .. }), "{e}");
        let e = matrix_error(
            "send",
            StatusCode::FORBIDDEN,
            None,
            r#"{"errcode":"M_FORBIDDEN","error":"not in room"}"#,
        );
        assert!(
            matches!(&e, PlatformError::Rejected { detail, .. } if detail.contains("M_FORBIDDEN"))
        );
        let e = matrix_error("sync", StatusCode::BAD_GATEWAY, None, "<html>");
        assert!(e.is_retryable());
    }

    #[test]
    fn txn_ids_differ_and_are_path_safe() {
        let (a, b) = (new_txn_id(), new_txn_id());
        assert_ne!(a, b);
        assert_eq!(enc(&a), a);
    }

    #[test]
    fn download_requests_only_for_mxc_uris() {
        let c = Client::new("http://127.0.0.1:1").unwrap();
        assert!(c.download("t", "mxc://localhost/abc").is_some());
        assert!(c.download("t", "https://evil/abc").is_none());
        assert!(c.download("t", "mxc://localhost/a/../b").is_none());
        assert!(c.download("t", "mxc:///abc").is_none());
    }
}
