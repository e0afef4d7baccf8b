//! Typed provider errors and their classes (FEATURES §2; `vectors/error_classifier.json`).
//!
//! [`classify`] maps an HTTP status (or none, for connection failures) plus the provider's
//! message text to an [`ErrorClass`]; [`LlmError::from_http`] parses an OpenAI-shaped error body
//! (`{"error":{"message","type","code"}}`), lets a structured code decide first, and reads
//! `Retry-After`. The recovery flags ([`ErrorClass::retryable`] and friends) follow the table in
//! FEATURES §2.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

use crate::redact::redact_secrets;

/// Longest provider-requested wait honoured, in seconds (FEATURES §2: `Retry-After` ≤ 600 s).
pub const MAX_RETRY_AFTER_SECS: u64 = 600;

/// Longest provider message kept in [`LlmError::message`], in chars (bodies can hold tracebacks).
const MAX_MESSAGE_CHARS: usize = 2000;

/// The class of a provider failure, which decides the recovery (FEATURES §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// 401/403: bad or missing key (401 rotates credential, both fall back).
    Auth,
    /// The key can never work (revoked account); stop and tell the user.
    AuthPermanent,
    /// Out of credits/quota.
    Billing,
    /// 429: too many requests.
    RateLimit,
    /// 503/529: the provider is overloaded.
    Overloaded,
    /// 5xx.
    ServerError,
    /// Connection dropped, reset or timed out.
    Timeout,
    /// The endpoint could not be reached at all: connection refused, host name not found, no
    /// route. Retrying the same address cannot help, so the call is not retried; the fallback
    /// chain is tried at once (fast failover), else the turn stops with one clear line.
    ConnectionFailed,
    /// The prompt does not fit the context window.
    ContextOverflow,
    /// 413.
    PayloadTooLarge,
    /// 404 / unknown model.
    ModelNotFound,
    /// 400 with a malformed request.
    FormatError,
    /// Refused by content policy.
    ContentPolicy,
    /// A thinking-block signature was rejected.
    ThinkingSignature,
    /// TLS certificate verification failed.
    SslCertVerification,
    /// Anything else.
    Unknown,
}

impl ErrorClass {
    /// The snake_case name used in `vectors/error_classifier.json` and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Auth => "auth",
            ErrorClass::AuthPermanent => "auth_permanent",
            ErrorClass::Billing => "billing",
            ErrorClass::RateLimit => "rate_limit",
            ErrorClass::Overloaded => "overloaded",
            ErrorClass::ServerError => "server_error",
            ErrorClass::Timeout => "timeout",
            ErrorClass::ConnectionFailed => "connection_failed",
            ErrorClass::ContextOverflow => "context_overflow",
            ErrorClass::PayloadTooLarge => "payload_too_large",
            ErrorClass::ModelNotFound => "model_not_found",
            ErrorClass::FormatError => "format_error",
            ErrorClass::ContentPolicy => "content_policy",
            ErrorClass::ThinkingSignature => "thinking_signature",
            ErrorClass::SslCertVerification => "ssl_cert_verification",
            ErrorClass::Unknown => "unknown",
        }
    }

    /// True when the same request may be sent again (possibly after compression or after
    /// stripping thinking blocks): rate_limit, overloaded, server_error, timeout,
    /// context_overflow, payload_too_large, thinking_signature, unknown (FEATURES §2).
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorClass::RateLimit
                | ErrorClass::Overloaded
                | ErrorClass::ServerError
                | ErrorClass::Timeout
                | ErrorClass::ContextOverflow
                | ErrorClass::PayloadTooLarge
                | ErrorClass::ThinkingSignature
                | ErrorClass::Unknown
        )
    }

    /// True when the history should be compressed before retrying (context_overflow,
    /// payload_too_large; FEATURES §2).
    pub fn should_compress(self) -> bool {
        matches!(
            self,
            ErrorClass::ContextOverflow | ErrorClass::PayloadTooLarge
        )
    }

    /// True when the next credential of the pool should be tried: auth (as for HTTP 401),
    /// billing, rate_limit. For HTTP 403 the answer is false even though the class is auth;
    /// use [`LlmError::rotate_credential`], which knows the status.
    pub fn rotate_credential(self) -> bool {
        matches!(
            self,
            ErrorClass::Auth | ErrorClass::Billing | ErrorClass::RateLimit
        )
    }

    /// True when the fallback provider chain should be tried: auth, billing, rate_limit,
    /// connection_failed, model_not_found, format_error, content_policy (FEATURES §2).
    pub fn fallback(self) -> bool {
        matches!(
            self,
            ErrorClass::Auth
                | ErrorClass::ConnectionFailed
                | ErrorClass::Billing
                | ErrorClass::RateLimit
                | ErrorClass::ModelNotFound
                | ErrorClass::FormatError
                | ErrorClass::ContentPolicy
        )
    }
}

/// A failed model call, classified.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct LlmError {
    /// The class (decides retry / rotate / fallback / compress).
    pub class: ErrorClass,
    /// HTTP status, or the status implied by an in-stream error (case C08: 400).
    pub status: Option<u16>,
    /// Human-readable message including the provider's own text (secrets redacted).
    pub message: String,
    /// Provider-requested wait (`Retry-After`), capped at 600 s by the caller.
    pub retry_after: Option<Duration>,
}

impl LlmError {
    /// Builds an error with an explicit class; the message is passed through
    /// [`redact_secrets`].
    pub fn new(class: ErrorClass, status: Option<u16>, message: impl AsRef<str>) -> LlmError {
        LlmError {
            class,
            status,
            message: redact_secrets(message.as_ref()),
            retry_after: None,
        }
    }

    /// Builds an error from an HTTP status and response body (any shape; OpenAI-shaped
    /// `{"error":{"message","type","code"}}` is understood, as are `{"error":"text"}`,
    /// `{"message":…}` and plain text). A structured `code`/`type` decides before the message
    /// text (`insufficient_quota` → billing, `context_length_exceeded` → context_overflow;
    /// FEATURES §2). `Retry-After` (seconds or HTTP date, RFC 9110 §10.2.3) is read from
    /// `headers` and capped at [`MAX_RETRY_AFTER_SECS`].
    pub fn from_http(status: u16, headers: &HeaderMap, body: &str) -> LlmError {
        let parsed = ProviderErrorBody::parse(body);
        let class = parsed
            .code_class()
            .unwrap_or_else(|| classify(Some(status), &parsed.text_for_classify()));
        let text = if parsed.message.is_empty() {
            if body.trim().is_empty() {
                "(empty body)".to_string()
            } else {
                body.trim().to_string()
            }
        } else {
            parsed.message.clone()
        };
        let mut err = LlmError::new(
            class,
            Some(status),
            format!("HTTP {status}: {}", clip(&text)),
        );
        err.retry_after = retry_after_from_headers(headers);
        err
    }

    /// Builds the error for a JSON payload that reported a failure inside a successful (200)
    /// response: `{"error":{…}}` or the DeepInfra-style `error_type`/`error_message` fields
    /// (case C08). The status is the payload's numeric `error.code` when it is a 4xx/5xx,
    /// else 400, and the class comes from the payload's own content.
    pub fn from_in_stream(value: &serde_json::Value) -> Option<LlmError> {
        let err_field = value.get("error").filter(|v| !v.is_null());
        let err_type = value.get("error_type").and_then(|v| v.as_str());
        let err_msg = value.get("error_message").and_then(|v| v.as_str());
        if err_field.is_none() && err_type.is_none() && err_msg.is_none() {
            return None;
        }
        let mut parsed = match err_field {
            Some(e) => ProviderErrorBody::from_error_value(e),
            None => ProviderErrorBody::default(),
        };
        if parsed.message.is_empty() {
            parsed.message = err_msg.unwrap_or_default().to_string();
        }
        if parsed.kind.is_none() {
            parsed.kind = err_type.map(str::to_string);
        }
        let status = parsed
            .numeric_code
            .filter(|c| (400..600).contains(c))
            .unwrap_or(400);
        let class = parsed
            .code_class()
            .unwrap_or_else(|| classify(Some(status), &parsed.text_for_classify()));
        let kind = parsed.kind.clone().unwrap_or_else(|| "error".to_string());
        let message = if parsed.message.is_empty() {
            "(no message)".to_string()
        } else {
            parsed.message.clone()
        };
        Some(LlmError::new(
            class,
            Some(status),
            format!(
                "provider error inside a 200 stream ({kind}): {}",
                clip(&message)
            ),
        ))
    }

    /// Maps a transport failure from reqwest: certificate problems → ssl_cert_verification;
    /// an endpoint that cannot be reached (connection refused, host name not found, no route;
    /// a connect that merely timed out is excluded) → connection_failed, with a message that
    /// names the address; everything else (reset, timeout, body read) → timeout (FEATURES §2:
    /// rebuild the connection and retry).
    pub fn from_transport(err: &reqwest::Error) -> LlmError {
        let mut text = err.to_string();
        let mut source = std::error::Error::source(err);
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        let lower = text.to_lowercase();
        if looks_like_cert_error(&lower) {
            return LlmError::new(
                ErrorClass::SslCertVerification,
                None,
                format!("network error: {text}"),
            );
        }
        if (err.is_connect() && !err.is_timeout()) || looks_like_connect_failure(&lower) {
            let reason = connect_failure_reason(&lower);
            let at = err
                .url()
                .map(|u| {
                    let mut base = u.clone();
                    base.set_query(None);
                    format!(" at {base}")
                })
                .unwrap_or_default();
            return LlmError::new(
                ErrorClass::ConnectionFailed,
                None,
                format!(
                    "cannot connect to the model provider{at} ({reason}); check that the server \
                     is running and that model.base_url is right"
                ),
            );
        }
        LlmError::new(ErrorClass::Timeout, None, format!("network error: {text}"))
    }

    /// [`ErrorClass::retryable`] of this error's class.
    pub fn retryable(&self) -> bool {
        self.class.retryable()
    }

    /// [`ErrorClass::should_compress`] of this error's class.
    pub fn should_compress(&self) -> bool {
        self.class.should_compress()
    }

    /// Whether to rotate the credential: as [`ErrorClass::rotate_credential`], except that an
    /// auth error with HTTP 403 does not rotate (the key is valid but not allowed; FEATURES §2).
    pub fn rotate_credential(&self) -> bool {
        if self.class == ErrorClass::Auth && self.status == Some(403) {
            return false;
        }
        self.class.rotate_credential()
    }

    /// [`ErrorClass::fallback`] of this error's class.
    pub fn fallback(&self) -> bool {
        self.class.fallback()
    }
}

/// Classifies a provider failure from its HTTP status (`None` for transport errors) and the
/// whole error text (FEATURES §2; examples in `vectors/error_classifier.json`).
///
/// Message patterns that identify a cause regardless of status (thinking signature, context
/// overflow, content policy) win on 4xx; otherwise the status decides: 401/403 auth (403 with
/// a deactivated account → auth_permanent), 402 billing (unless the text says it resets / try
/// again later → rate_limit), 404 model_not_found, 413 payload_too_large, 429 rate_limit,
/// 503/529 overloaded, other 5xx server_error, other 4xx format_error. Without a status, TLS
/// certificate text → ssl_cert_verification, connection refused / unknown host text →
/// connection_failed, other connection/timeout text → timeout, else unknown.
pub fn classify(status: Option<u16>, body_or_message: &str) -> ErrorClass {
    let m = body_or_message.to_lowercase();
    let Some(status) = status else {
        if looks_like_cert_error(&m) {
            return ErrorClass::SslCertVerification;
        }
        if looks_like_context_overflow(&m) {
            return ErrorClass::ContextOverflow;
        }
        if looks_like_connect_failure(&m) {
            return ErrorClass::ConnectionFailed;
        }
        if looks_like_network_error(&m) {
            return ErrorClass::Timeout;
        }
        return ErrorClass::Unknown;
    };
    match status {
        401 => ErrorClass::Auth,
        403 => {
            if looks_like_permanent_auth(&m) {
                ErrorClass::AuthPermanent
            } else {
                ErrorClass::Auth
            }
        }
        402 => {
            if m.contains("reset") || m.contains("try again later") {
                ErrorClass::RateLimit
            } else {
                ErrorClass::Billing
            }
        }
        429 => ErrorClass::RateLimit,
        413 => ErrorClass::PayloadTooLarge,
        404 => ErrorClass::ModelNotFound,
        503 | 529 => ErrorClass::Overloaded,
        500..=599 => {
            if m.contains("overloaded") {
                ErrorClass::Overloaded
            } else if looks_like_context_overflow(&m) {
                ErrorClass::ContextOverflow
            } else {
                ErrorClass::ServerError
            }
        }
        400..=499 => {
            if m.contains("signature") && m.contains("thinking") {
                ErrorClass::ThinkingSignature
            } else if looks_like_context_overflow(&m) {
                ErrorClass::ContextOverflow
            } else if looks_like_content_policy(&m) {
                ErrorClass::ContentPolicy
            } else if looks_like_model_not_found(&m) {
                ErrorClass::ModelNotFound
            } else if m.contains("insufficient credits") || m.contains("insufficient_quota") {
                ErrorClass::Billing
            } else {
                ErrorClass::FormatError
            }
        }
        _ => ErrorClass::Unknown,
    }
}

fn looks_like_context_overflow(m: &str) -> bool {
    const PATTERNS: &[&str] = &[
        "maximum context length",
        "context length",
        "context_length_exceeded",
        "context window",
        "context size",
        "prompt is too long",
        "prompt is longer than",
        "input is too long",
        "too many tokens",
        "exceeds the context",
        "exceed context",
        "reduce the length of the messages",
    ];
    PATTERNS.iter().any(|p| m.contains(p))
}

fn looks_like_content_policy(m: &str) -> bool {
    const PATTERNS: &[&str] = &[
        "content policy",
        "content_policy",
        "content management policy",
        "flagged",
        "safety system",
        "content_filter",
    ];
    PATTERNS.iter().any(|p| m.contains(p))
}

fn looks_like_model_not_found(m: &str) -> bool {
    m.contains("model_not_found")
        || m.contains("model not found")
        || m.contains("unknown model")
        || (m.contains("model") && m.contains("does not exist"))
        || m.contains("no endpoints found")
}

fn looks_like_permanent_auth(m: &str) -> bool {
    m.contains("deactivated") || m.contains("suspended") || m.contains("banned")
}

fn looks_like_cert_error(m: &str) -> bool {
    m.contains("certificate") || m.contains("cert verify") || m.contains("unknownissuer")
}

/// Text of a failure to reach the endpoint at all (nothing listens, no such host, no route).
fn looks_like_connect_failure(m: &str) -> bool {
    CONNECT_FAILURES.iter().any(|(p, _)| m.contains(p))
}

/// Connect-failure patterns and the few words shown for each.
const CONNECT_FAILURES: &[(&str, &str)] = &[
    ("connection refused", "connection refused"),
    ("dns error", "host name not found"),
    ("failed to lookup address", "host name not found"),
    ("name or service not known", "host name not found"),
    ("no such host", "host name not found"),
    ("nodename nor servname", "host name not found"),
    ("no route to host", "no route to host"),
    ("network is unreachable", "network unreachable"),
    ("host is unreachable", "host unreachable"),
];

/// The few words that say why a connect failed ("connection refused", "host name not found").
fn connect_failure_reason(m: &str) -> &'static str {
    CONNECT_FAILURES
        .iter()
        .find(|(p, _)| m.contains(p))
        .map(|(_, r)| *r)
        .unwrap_or("could not connect")
}

fn looks_like_network_error(m: &str) -> bool {
    const PATTERNS: &[&str] = &[
        "timed out",
        "timeout",
        "connection reset",
        "connection refused",
        "connection closed",
        "connection aborted",
        "broken pipe",
        "unexpected eof",
        "network",
        "error sending request",
        "error decoding response body",
        "stream ended",
    ];
    PATTERNS.iter().any(|p| m.contains(p))
}

fn clip(text: &str) -> String {
    if text.chars().count() <= MAX_MESSAGE_CHARS {
        return text.to_string();
    }
    let mut out: String = text.chars().take(MAX_MESSAGE_CHARS).collect();
    out.push('…');
    out
}

/// The fields of an error body that matter for classification.
#[derive(Debug, Default, Clone)]
struct ProviderErrorBody {
    message: String,
    kind: Option<String>,
    code: Option<String>,
    numeric_code: Option<u16>,
}

impl ProviderErrorBody {
    fn parse(body: &str) -> ProviderErrorBody {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
            return ProviderErrorBody {
                message: body.trim().to_string(),
                ..ProviderErrorBody::default()
            };
        };
        match value.get("error").filter(|v| !v.is_null()) {
            Some(e) => ProviderErrorBody::from_error_value(e),
            None => {
                let mut out = ProviderErrorBody::from_error_value(&value);
                if out.message.is_empty() {
                    out.message = body.trim().to_string();
                }
                out
            }
        }
    }

    fn from_error_value(e: &serde_json::Value) -> ProviderErrorBody {
        if let Some(s) = e.as_str() {
            return ProviderErrorBody {
                message: s.to_string(),
                ..ProviderErrorBody::default()
            };
        }
        let str_field = |k: &str| e.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let mut message = str_field("message").unwrap_or_default();
        // OpenRouter wraps the upstream text in `metadata.raw`.
        if let Some(raw) = e
            .get("metadata")
            .and_then(|m| m.get("raw"))
            .and_then(|v| v.as_str())
            .filter(|raw| !message.contains(raw))
        {
            message = format!("{message} ({raw})");
        }
        let numeric_code = e
            .get("code")
            .and_then(|v| v.as_u64())
            .and_then(|c| u16::try_from(c).ok());
        ProviderErrorBody {
            message,
            kind: str_field("type"),
            code: str_field("code"),
            numeric_code,
        }
    }

    /// The class decided by a structured code or type, if it is one we know.
    fn code_class(&self) -> Option<ErrorClass> {
        for key in [self.code.as_deref(), self.kind.as_deref()]
            .into_iter()
            .flatten()
        {
            let class = match key {
                "insufficient_quota" | "billing_hard_limit_reached" => ErrorClass::Billing,
                "context_length_exceeded" | "string_above_max_length" => {
                    ErrorClass::ContextOverflow
                }
                "invalid_api_key" | "authentication_error" => ErrorClass::Auth,
                "model_not_found" => ErrorClass::ModelNotFound,
                "overloaded_error" => ErrorClass::Overloaded,
                "content_policy_violation" | "content_filter" => ErrorClass::ContentPolicy,
                _ => continue,
            };
            return Some(class);
        }
        None
    }

    fn text_for_classify(&self) -> String {
        match &self.kind {
            Some(k) => format!("{} {k}", self.message),
            None => self.message.clone(),
        }
    }
}

/// Reads `retry-after-ms` / `Retry-After` (delta seconds, possibly fractional, or an HTTP
/// date) and caps the wait at [`MAX_RETRY_AFTER_SECS`]. Returns `None` when absent or
/// unparseable.
pub fn retry_after_from_headers(headers: &HeaderMap) -> Option<Duration> {
    let cap = Duration::from_secs(MAX_RETRY_AFTER_SECS);
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0).min(cap));
    }
    let raw = headers.get("retry-after")?.to_str().ok()?.trim();
    parse_retry_after(raw, SystemTime::now()).map(|d| d.min(cap))
}

/// Parses one `Retry-After` value relative to `now`: delta seconds or an IMF-fixdate. A date
/// in the past yields zero. Not capped.
pub fn parse_retry_after(raw: &str, now: SystemTime) -> Option<Duration> {
    if let Ok(secs) = raw.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Some(Duration::from_secs_f64(secs.min(1e9)));
        }
        return None;
    }
    let when = httpdate::parse_http_date(raw).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn structured_code_decides_before_text() {
        let body = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        let e = LlmError::from_http(429, &HeaderMap::new(), body);
        assert_eq!(e.class, ErrorClass::Billing);
        assert!(e.message.contains("exceeded your current quota"));
        // Without the code, the same text on 429 is a rate limit.
        assert_eq!(
            classify(Some(429), "You exceeded your current quota"),
            ErrorClass::RateLimit
        );
    }

    #[test]
    fn retry_after_seconds_date_and_cap() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(retry_after_from_headers(&h), Some(Duration::from_secs(7)));
        h.insert("retry-after", HeaderValue::from_static("86400"));
        assert_eq!(retry_after_from_headers(&h), Some(Duration::from_secs(600)));
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:40:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn in_stream_error_fields_c08_shape() {
        let v = serde_json::json!({"choices": null, "error_type": "BadRequestError",
            "error_message": "prompt is longer than the model context window (40960 > 32768 tokens)"});
        let e = LlmError::from_in_stream(&v).unwrap();
        assert_eq!(e.status, Some(400));
        assert_eq!(e.class, ErrorClass::ContextOverflow);
        assert!(e.message.contains("context window"));
        let ok = serde_json::json!({"choices": [], "error": null});
        assert!(LlmError::from_in_stream(&ok).is_none());
        let or = serde_json::json!({"error": {"code": 502, "message": "upstream died"}});
        let e = LlmError::from_in_stream(&or).unwrap();
        assert_eq!((e.status, e.class), (Some(502), ErrorClass::ServerError));
    }

    #[test]
    fn auth_rotation_depends_on_status() {
        let e401 = LlmError::new(classify(Some(401), "bad key"), Some(401), "x");
        let e403 = LlmError::new(classify(Some(403), "Forbidden"), Some(403), "x");
        assert!(e401.rotate_credential());
        assert!(!e403.rotate_credential());
        assert!(e403.fallback());
    }
}
