//! One page download for `web_extract`: a reqwest client (rustls with ring) with timeouts,
//! at most [`MAX_REDIRECTS`] redirects (each checked by [`super::ssrf::check_url`]), the
//! [`super::ssrf::GuardedResolver`] unless private URLs are allowed, no proxies from the
//! environment (the address policy must see the real destination), and a byte cap on the
//! body ([`MAX_DOWNLOAD_BYTES`]); binary media types and compressed bodies (none is asked
//! for) are refused before the body is read, and a body the server calls text but whose bytes
//! are binary after it.

use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_ENCODING, CONTENT_TYPE, USER_AGENT};
use reqwest::redirect::Policy;

use super::readable::{BodyKind, classify, declares_utf16, decode_body, sniff};
use super::ssrf::{GuardedResolver, check_url, find_refusal};

/// Most bytes of one body that are read; the rest is not downloaded (5 MiB).
pub const MAX_DOWNLOAD_BYTES: usize = 5 * 1024 * 1024;
/// Most redirects followed for one URL.
pub const MAX_REDIRECTS: usize = 5;
/// Connect timeout of one fetch.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Whole-request timeout of one fetch (headers and body).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

const ACCEPT_VALUE: &str = "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5";

/// A downloaded text body.
#[derive(Debug, Clone)]
pub(crate) struct Page {
    /// The URL the body came from (after redirects).
    pub(crate) final_url: reqwest::Url,
    /// How to read it.
    pub(crate) kind: BodyKind,
    /// The body, decoded ([`decode_body`]).
    pub(crate) body: String,
    /// True when the download stopped at [`MAX_DOWNLOAD_BYTES`].
    pub(crate) download_cut: bool,
}

/// Installs the `ring` rustls provider once (reqwest is built with `rustls-no-provider`).
pub(crate) fn init_tls() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Err: another thread installed a provider first; that one is fine.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// Downloads pages under the address policy.
#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    client: reqwest::Client,
    allow_private: bool,
}

impl Fetcher {
    /// A fetcher; `allow_private` is `web.allow_private_urls`.
    ///
    /// # Errors
    /// The TLS/HTTP stack could not be set up (message for the model).
    pub(crate) fn new(allow_private: bool) -> Result<Fetcher, String> {
        init_tls();
        let policy = Policy::custom(move |attempt| {
            match redirect_check(attempt.previous().len(), attempt.url(), allow_private) {
                Ok(()) => attempt.follow(),
                Err(msg) => attempt.error(msg),
            }
        });
        let mut builder = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .redirect(policy)
            .no_proxy();
        if !allow_private {
            builder = builder.dns_resolver(GuardedResolver);
        }
        let client = builder
            .build()
            .map_err(|e| format!("cannot set up the HTTP client: {e}"))?;
        Ok(Fetcher {
            client,
            allow_private,
        })
    }

    /// Fetches `url`.
    ///
    /// # Errors
    /// A one-line message for the model: not a URL, refused by the address policy, connect
    /// or timeout failure, an HTTP error status, or a binary media type.
    pub(crate) async fn fetch(&self, url: &str) -> Result<Page, String> {
        let parsed = reqwest::Url::parse(url.trim())
            .map_err(|e| format!("not a valid URL ({e}); give a full http:// or https:// URL"))?;
        check_url(&parsed, self.allow_private)?;
        let mut resp = self
            .client
            .get(parsed)
            .header(ACCEPT, ACCEPT_VALUE)
            .header(
                USER_AGENT,
                concat!("hermes-agent/", env!("CARGO_PKG_VERSION"), " (web_extract)"),
            )
            .send()
            .await
            .map_err(|e| describe(&e))?;
        let status = resp.status();
        if status.is_redirection() {
            // reqwest hands back redirects it will not follow (e.g. to a `file:` URL).
            let location = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            let why = match resp.url().join(location) {
                Ok(target) => check_url(&target, self.allow_private)
                    .err()
                    .unwrap_or_else(|| "not followed".to_string()),
                Err(e) => format!("not a valid URL ({e})"),
            };
            return Err(format!(
                "redirect not followed: HTTP {} to `{location}`: {why}",
                status.as_u16()
            ));
        }
        if !status.is_success() {
            return Err(format!(
                "HTTP {}{}",
                status.as_u16(),
                status
                    .canonical_reason()
                    .map(|r| format!(" {r}"))
                    .unwrap_or_default()
            ));
        }
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        // No Accept-Encoding is sent (reqwest is built without decompression), so a compressed
        // body is a server ignoring the request; refused by name rather than read as garbage.
        if let Some(encoding) = resp
            .headers()
            .get(CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("identity"))
        {
            return Err(format!(
                "refused: the server sent a `{encoding}`-compressed body though none was asked \
                 for; web_extract reads uncompressed pages only"
            ));
        }
        let declared = classify(content_type.as_deref());
        if let Some(BodyKind::Binary(media)) = &declared {
            return Err(binary_refusal(media));
        }
        let final_url = resp.url().clone();
        let mut body: Vec<u8> = Vec::new();
        let mut download_cut = false;
        while let Some(chunk) = resp.chunk().await.map_err(|e| describe(&e))? {
            let room = MAX_DOWNLOAD_BYTES - body.len();
            if chunk.len() >= room {
                body.extend_from_slice(&chunk[..room]);
                download_cut = chunk.len() > room || resp.chunk().await.ok().flatten().is_some();
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let kind = match declared {
            // A server that calls an image or archive text is not believed: the bytes decide
            // (unless the charset is UTF-16, whose text has NUL bytes).
            Some(kind) if declares_utf16(content_type.as_deref()) => kind,
            Some(kind) => match sniff(&body) {
                BodyKind::Binary(_) => {
                    return Err(format!(
                        "refused: the server calls it `{}` but the body is binary data \
                         (web_extract reads HTML, plain text, Markdown and JSON)",
                        content_type.as_deref().unwrap_or_default().trim()
                    ));
                }
                _ => kind,
            },
            None => sniff(&body),
        };
        if let BodyKind::Binary(media) = &kind {
            return Err(binary_refusal(media));
        }
        Ok(Page {
            final_url,
            body: decode_body(&body, content_type.as_deref(), &kind),
            kind,
            download_cut,
        })
    }
}

/// Whether a redirect to `target` may be followed after `requested` URLs were already
/// requested (the first one included): at most [`MAX_REDIRECTS`] redirects, and the target
/// must pass [`check_url`] (a literal private IP is refused here; a host name is checked when
/// it resolves).
fn redirect_check(
    requested: usize,
    target: &reqwest::Url,
    allow_private: bool,
) -> Result<(), String> {
    if requested > MAX_REDIRECTS {
        return Err(format!("more than {MAX_REDIRECTS} redirects"));
    }
    check_url(target, allow_private)
}

fn binary_refusal(media: &str) -> String {
    format!(
        "refused: `{media}` is not a text page (web_extract reads HTML, plain text, Markdown and JSON)"
    )
}

/// A one-line description of a failed request: the address-policy refusal, the redirect
/// problem, a timeout, or the innermost cause.
fn describe(err: &reqwest::Error) -> String {
    if let Some(refused) = find_refusal(err) {
        return refused.to_string();
    }
    let mut innermost: &(dyn std::error::Error + 'static) = err;
    while let Some(next) = innermost.source() {
        innermost = next;
    }
    if err.is_redirect() {
        format!("redirect not followed: {innermost}")
    } else if err.is_timeout() {
        format!(
            "timed out (connect {} s, whole request {} s)",
            CONNECT_TIMEOUT.as_secs(),
            REQUEST_TIMEOUT.as_secs()
        )
    } else if err.is_connect() {
        format!("could not connect: {innermost}")
    } else {
        format!("request failed: {innermost}")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn redirects_are_bounded_and_checked_like_the_first_url() {
        let u = |s: &str| reqwest::Url::parse(s).unwrap();
        assert!(redirect_check(1, &u("https://example.com/next"), false).is_ok());
        assert!(redirect_check(5, &u("https://example.com/next"), false).is_ok());
        assert_eq!(
            redirect_check(6, &u("https://example.com/next"), false),
            Err("more than 5 redirects".to_string())
        );
        let e = redirect_check(1, &u("http://10.0.0.8/admin"), false).unwrap_err();
        assert!(e.contains("10.0.0.8 is a private network address"), "{e}");
        let e =
            redirect_check(1, &u("http://169.254.169.254/latest/meta-data/"), false).unwrap_err();
        assert!(e.contains("cloud metadata"), "{e}");
        assert!(redirect_check(1, &u("http://10.0.0.8/admin"), true).is_ok());
        assert!(redirect_check(1, &u("gopher://example.com/"), true).is_err());
    }
}
