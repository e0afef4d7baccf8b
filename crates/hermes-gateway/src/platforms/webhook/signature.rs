//! The webhook signature scheme: `X-Hermes-Signature: sha256=<hex>`, the lowercase hex
//! HMAC-SHA256 (RFC 2104, FIPS 180-4) of the raw request body keyed with `WEBHOOK_SECRET`.
//! The same scheme signs inbound requests (checked here) and outbound callbacks (so the
//! receiver can check them).

use hmac::{KeyInit, Mac};
use sha2::Sha256;

use crate::error::PlatformError;

/// Name of the signature header.
pub const SIGNATURE_HEADER: &str = "X-Hermes-Signature";

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
    fn empty_secret_is_refused() {
        assert!(matches!(Signer::new(b""), Err(PlatformError::Auth { .. })));
    }
}
