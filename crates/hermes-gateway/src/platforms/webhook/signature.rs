//! The webhook signature scheme: `X-Hermes-Signature: sha256=<hex>`, the lowercase hex
//! HMAC-SHA256 (RFC 2104, FIPS 180-4) keyed with `WEBHOOK_SECRET`.
//!
//! Inbound requests sign `<timestamp>.<raw body>`, where `<timestamp>` is the
//! `X-Hermes-Timestamp` header (Unix seconds); a timestamp outside the replay window (5
//! minutes either way by default) is refused, so a captured request cannot be replayed
//! later (issue 18 §3; the scheme Stripe and Slack use). Outbound callbacks sign the raw
//! body (receivers de-duplicate by `X-Hermes-Delivery`).

use hmac::{KeyInit, Mac};
use sha2::Sha256;

use crate::error::PlatformError;

/// Name of the signature header.
pub const SIGNATURE_HEADER: &str = "X-Hermes-Signature";
/// Name of the inbound timestamp header (Unix seconds, covered by the signature).
pub const TIMESTAMP_HEADER: &str = "X-Hermes-Timestamp";

type HmacSha256 = hmac::Hmac<Sha256>;

/// Signs and checks bodies with one secret.
#[derive(Clone)]
pub struct Signer {
    mac: HmacSha256,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signer(<secret>)")
    }
}

impl Signer {
    /// A signer for `secret`. Errors: `Auth` when the secret is empty (an empty key would
    /// let anyone sign).
    pub fn new(secret: &[u8]) -> Result<Signer, PlatformError> {
        let empty = || PlatformError::Auth {
            platform: "webhook".into(),
            detail: "WEBHOOK_SECRET is empty; inbound webhooks need a shared secret".into(),
        };
        if secret.is_empty() {
            return Err(empty());
        }
        let mac = HmacSha256::new_from_slice(secret).map_err(|_| empty())?;
        Ok(Signer { mac })
    }

    /// The header value for `body`: `sha256=` followed by 64 lowercase hex digits.
    pub fn sign(&self, body: &[u8]) -> String {
        let mut m = self.mac.clone();
        m.update(body);
        format!("sha256={}", hex::encode(m.finalize().into_bytes()))
    }

    /// The inbound header value for `body` sent at `timestamp` (Unix seconds): the signature
    /// of `<timestamp>.<body>`.
    pub fn sign_timestamped(&self, timestamp: i64, body: &[u8]) -> String {
        let mut m = self.mac.clone();
        m.update(timestamp.to_string().as_bytes());
        m.update(b".");
        m.update(body);
        format!("sha256={}", hex::encode(m.finalize().into_bytes()))
    }

    /// Checks an inbound request: `timestamp` (the `X-Hermes-Timestamp` value) must be Unix
    /// seconds within `window_s` of `now` (either way), and `signature` a valid signature of
    /// `<timestamp>.<body>`.
    ///
    /// Errors: why it was refused (missing or malformed timestamp, outside the window, bad
    /// signature), fit for the 401 answer.
    pub fn verify_timestamped(
        &self,
        body: &[u8],
        timestamp: Option<&str>,
        signature: Option<&str>,
        now: i64,
        window_s: u64,
    ) -> Result<(), String> {
        let Some(ts) = timestamp.map(str::trim).filter(|t| !t.is_empty()) else {
            return Err(format!(
                "missing {TIMESTAMP_HEADER} (Unix seconds, signed together with the body)"
            ));
        };
        let Ok(ts) = ts.parse::<i64>() else {
            return Err(format!("{TIMESTAMP_HEADER} `{ts}` is not Unix seconds"));
        };
        if now.abs_diff(ts) > window_s {
            return Err(format!(
                "{TIMESTAMP_HEADER} is more than {window_s} s away from the server's clock \
                 (a stale or replayed request)"
            ));
        }
        let mut prefixed = Vec::with_capacity(body.len() + 21);
        prefixed.extend_from_slice(ts.to_string().as_bytes());
        prefixed.push(b'.');
        prefixed.extend_from_slice(body);
        if self.verify(&prefixed, signature) {
            Ok(())
        } else {
            Err(format!(
                "missing or invalid {SIGNATURE_HEADER} (expected sha256=<hex HMAC-SHA256 of \
                 \"<{TIMESTAMP_HEADER}>.<body>\">)"
            ))
        }
    }

    /// True when `header` is a valid signature of `body` (prefix `sha256=`, hex
    /// case-insensitive, compared in constant time). A missing or malformed header is false.
    pub fn verify(&self, body: &[u8], header: Option<&str>) -> bool {
        let Some(value) = header.map(str::trim) else {
            return false;
        };
        let Some(hex_part) = value.strip_prefix("sha256=") else {
            return false;
        };
        let Ok(expected) = hex::decode(hex_part) else {
            return false;
        };
        let mut m = self.mac.clone();
        m.update(body);
        m.verify_slice(&expected).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_4231_test_case_2_matches() {
        // RFC 4231 §4.3: key "Jefe", data "what do ya want for nothing?"
        let signer = Signer::new(b"Jefe").unwrap();
        assert_eq!(
            signer.sign(b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn verification_accepts_only_the_right_signature() {
        let s = Signer::new(b"s3cret").unwrap();
        let other = Signer::new(b"other").unwrap();
        let body = br#"{"text":"hi"}"#;
        let sig = s.sign(body);
        assert!(s.verify(body, Some(&sig)));
        let upper_hex = format!("sha256={}", sig[7..].to_ascii_uppercase());
        assert!(s.verify(body, Some(&upper_hex)));
        assert!(!s.verify(br#"{"text":"hi!"}"#, Some(&sig)));
        assert!(!other.verify(body, Some(&sig)));
        assert!(!s.verify(body, None));
        assert!(!s.verify(body, Some("sha256=zz")));
        assert!(!s.verify(body, Some(&sig[7..])));
        assert!(!s.verify(body, Some("sha256=")));
    }

    #[test]
    fn timestamped_signatures_expire_and_cover_the_timestamp() {
        let s = Signer::new(b"s3cret").unwrap();
        let body = br#"{"text":"hi"}"#;
        let now = 1_700_000_000;
        let sig = s.sign_timestamped(now, body);
        let ts = now.to_string();
        assert!(
            s.verify_timestamped(body, Some(&ts), Some(&sig), now, 300)
                .is_ok()
        );
        assert!(
            s.verify_timestamped(body, Some(&ts), Some(&sig), now + 299, 300)
                .is_ok()
        );
        let late = s
            .verify_timestamped(body, Some(&ts), Some(&sig), now + 301, 300)
            .unwrap_err();
        assert!(late.contains("replayed"), "{late}");
        let moved = (now + 1).to_string();
        assert!(
            s.verify_timestamped(body, Some(&moved), Some(&sig), now, 300)
                .is_err(),
            "the timestamp is covered by the signature"
        );
        assert!(
            s.verify_timestamped(body, None, Some(&sig), now, 300)
                .unwrap_err()
                .contains(TIMESTAMP_HEADER)
        );
        assert!(
            s.verify_timestamped(body, Some("soon"), Some(&sig), now, 300)
                .is_err()
        );
        let body_only = s.sign(body);
        assert!(
            s.verify_timestamped(body, Some(&ts), Some(&body_only), now, 300)
                .is_err()
        );
    }

    #[test]
    fn empty_secret_is_refused() {
        assert!(matches!(Signer::new(b""), Err(PlatformError::Auth { .. })));
    }
}
