//! The loopback redirect listener of `hermes mcp login` (RFC 8252 §7.3: native apps receive
//! the authorization response on `http://127.0.0.1:<port>/…`).
//!
//! Hardened like the gateway's listeners (issue 18 §3): a connection must send its request
//! head within [`HEAD_TIMEOUT`], and each connection is served in its own task (silent
//! sockets cannot delay the real redirect, however many), and the `Host` header must name
//! the listener (`127.0.0.1:<port>`, `localhost:<port>` or `[::1]:<port>`; anything else,
//! such as a DNS-rebinding name, gets 421 and does not end the wait).

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Mutex;

use crate::oauth::{Approver, OAuthError};

/// Longest wait for one connection's request head.
pub const HEAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether the request `head` carries a `Host` naming the loopback listener on `port`.
fn host_is_loopback(head: &str, port: u16) -> bool {
    head.lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("host"))
        .is_some_and(|(_, v)| {
            let v = v.trim().to_ascii_lowercase();
            v == format!("127.0.0.1:{port}")
                || v == format!("localhost:{port}")
                || v == format!("[::1]:{port}")
        })
}

/// Shows the authorization URL to the user (prints it, opens a browser…).
pub type ShowUrl = Arc<dyn Fn(&str) + Send + Sync>;

/// Approval by the user in a browser: the URL is shown through `show`, and the answer is
/// the first request to the listener whose query carries `code` or `error`.
pub struct LoopbackApprover {
    listener: Mutex<TcpListener>,
    redirect_uri: String,
    show: ShowUrl,
    port: u16,
}

impl std::fmt::Debug for LoopbackApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackApprover")
            .field("redirect_uri", &self.redirect_uri)
            .finish()
    }
}

impl LoopbackApprover {
    /// Listens for the redirect. `redirect_uri` (the server's `oauth.redirect_uri`) must be
    /// an `http://` URL on a loopback host with an explicit port; without one hermes listens
    /// on `127.0.0.1` at a free port and uses `http://127.0.0.1:<port>/callback`.
    ///
    /// # Errors
    /// [`OAuthError::Approval`] for a redirect URI that is not loopback `http://host:port/…`;
    /// [`OAuthError::Io`] when the address cannot be bound.
    pub async fn bind(redirect_uri: Option<&str>, show: ShowUrl) -> Result<Self, OAuthError> {
        let (addr, path) = match redirect_uri {
            None => ("127.0.0.1:0".to_string(), "/callback".to_string()),
            Some(uri) => split_loopback(uri).ok_or_else(|| {
                OAuthError::Approval(format!(
                    "redirect_uri `{uri}` must look like http://127.0.0.1:<port>/<path> (or localhost)"
                ))
            })?,
        };
        let listener = TcpListener::bind(&addr)
            .await
            .map_err(|source| OAuthError::Io {
                what: format!("listening on {addr}"),
                source,
            })?;
        let port = listener
            .local_addr()
            .map_err(|source| OAuthError::Io {
                what: "reading the listener address".into(),
                source,
            })?
            .port();
        let redirect_uri = match redirect_uri {
            Some(uri) => uri.to_string(),
            None => format!("http://127.0.0.1:{port}{path}"),
        };
        Ok(Self {
            listener: Mutex::new(listener),
            redirect_uri,
            show,
            port,
        })
    }
}

/// `http://<loopback>:<port>/<path>` → (`host:port`, `/path`).
fn split_loopback(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = authority.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    let host = match host {
        "localhost" | "127.0.0.1" => "127.0.0.1",
        "[::1]" => "[::1]",
        _ => return None,
    };
    Some((format!("{host}:{port}"), path.to_string()))
}

const DONE_PAGE: &str = "hermes: authorization received, you can close this tab.\n";

#[async_trait::async_trait]
impl Approver for LoopbackApprover {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    async fn approve(&self, auth_url: &str) -> Result<String, OAuthError> {
        (self.show)(auth_url);
        // Only the redirect carrying the `state` of this request is the answer: any local
        // process can reach the listener, and a forged redirect must not end the login.
        let expected = query_param(auth_url, "state");
        let listener = self.listener.lock().await;
        // Each connection is served in its own task, so silent or slow sockets (each cut
        // after HEAD_TIMEOUT) never delay the real redirect; at most MAX_PENDING at once.
        let mut pending = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let (sock, _) = accepted.map_err(|source| OAuthError::Io {
                        what: "accepting the redirect".into(),
                        source,
                    })?;
                    if pending.len() >= MAX_PENDING {
                        drop(sock); // too many open at once: this one is refused
                        continue;
                    }
                    pending.spawn(serve_connection(sock, self.port, expected.clone()));
                }
                Some(done) = pending.join_next(), if !pending.is_empty() => {
                    if let Ok(Some(target)) = done {
                        let base = self
                            .redirect_uri
                            .find("://")
                            .and_then(|i| self.redirect_uri[i + 3..].find('/').map(|j| i + 3 + j))
                            .map_or(self.redirect_uri.as_str(), |end| &self.redirect_uri[..end]);
                        return Ok(format!("{base}{target}"));
                    }
                }
            }
        }
    }
}

/// Connections handled at once by [`LoopbackApprover`]; more are closed on arrival.
pub const MAX_PENDING: usize = 64;

/// The value of query parameter `name` of `url` (absolute, or a request target `/p?q`).
fn query_param(url: &str, name: &str) -> Option<String> {
    let parsed = url::Url::parse(url)
        .or_else(|_| url::Url::parse("http://127.0.0.1").and_then(|b| b.join(url)))
        .ok()?;
    parsed
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Reads one request head (within [`HEAD_TIMEOUT`]), answers it, and returns its target
/// when it is the authorization answer: its query carries `code` or `error`, and the
/// `state` of the request (`expected`, when the authorization URL had one). A redirect with
/// another state gets 400 and the wait goes on.
async fn serve_connection(
    mut sock: tokio::net::TcpStream,
    port: u16,
    expected: Option<String>,
) -> Option<String> {
    let mut buf = vec![0u8; 8192];
    let mut len = 0;
    let read_head = async {
        while len < buf.len() {
            match sock.read(&mut buf[len..]).await {
                Ok(0) | Err(_) => break,
                Ok(n) => len += n,
            }
            if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
    };
    if tokio::time::timeout(HEAD_TIMEOUT, read_head).await.is_err() {
        return None; // a silent connection: dropped
    }
    let head = String::from_utf8_lossy(&buf[..len]).into_owned();
    if !host_is_loopback(&head, port) {
        let body = "Host does not name this listener\n";
        let reply = format!(
            "HTTP/1.1 421 Misdirected Request\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = sock.write_all(reply.as_bytes()).await;
        let _ = sock.shutdown().await;
        return None;
    }
    let target = head
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("/")
        .to_string();
    let looks_like_answer =
        query_param(&target, "code").is_some() || query_param(&target, "error").is_some();
    let state_ok = expected
        .as_deref()
        .is_none_or(|want| query_param(&target, "state").as_deref() == Some(want));
    let is_answer = looks_like_answer && state_ok;
    let (status, body) = if is_answer {
        ("200 OK", DONE_PAGE)
    } else if looks_like_answer {
        (
            "400 Bad Request",
            "this redirect does not belong to the pending authorization (state mismatch)\n",
        )
    } else {
        ("404 Not Found", "not the OAuth redirect\n")
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = sock.write_all(reply.as_bytes()).await;
    let _ = sock.shutdown().await;
    is_answer.then_some(target)
}
