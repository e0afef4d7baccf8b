//! Twilio's request signature (Twilio docs, "Webhooks security — validating signatures from
//! Twilio"): `X-Twilio-Signature` is the base64 HMAC-SHA1, keyed with the account's auth
//! token, of the full public URL Twilio called followed by every POST parameter sorted by
//! name, each written as name then value with no separators. Twilio may sign the URL with
//! or without the scheme's default port (`:443`), so both spellings are tried, as Python
//! Hermes and Twilio's own helper libraries do.

use base64::Engine;
use hmac::{KeyInit, Mac};
use sha1::Sha1;

/// The signature header.
pub const SIGNATURE_HEADER: &str = "X-Twilio-Signature";

fn mac(auth_token: &str) -> hmac::Hmac<Sha1> {
    <hmac::Hmac<Sha1> as KeyInit>::new_from_slice(auth_token.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"))
}

fn signed_data(url: &str, params: &[(String, String)]) -> Vec<u8> {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    // By name, then by value for repeated names (Twilio's helper libraries).
    sorted.sort();
    let mut data = url.as_bytes().to_vec();
    for (k, v) in sorted {
        data.extend_from_slice(k.as_bytes());
        data.extend_from_slice(v.as_bytes());
    }
    data
}

/// The `X-Twilio-Signature` value of a POST of `params` to `url` (what Twilio sends; tests
/// sign with it).
pub fn sign(auth_token: &str, url: &str, params: &[(String, String)]) -> String {
    let mut m = mac(auth_token);
    m.update(&signed_data(url, params));
    base64::engine::general_purpose::STANDARD.encode(m.finalize().into_bytes())
}

/// `url` with the scheme's default port added or removed, `None` for another port.
fn port_variant(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let default = match scheme.to_ascii_lowercase().as_str() {
        "https" => "443",
        "http" => "80",
        _ => return None,
    };
    let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(split);
    let (userinfo, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (format!("{u}@"), h),
        None => (String::new(), authority),
    };
    // An IPv6 literal's colons are inside its brackets.
    let port_at = host.rfind(':').filter(|i| !host[*i..].contains(']'));
    let host = match port_at {
        Some(i) if &host[i + 1..] == default => host[..i].to_string(),
        Some(_) => return None,
        None => format!("{host}:{default}"),
    };
    Some(format!("{scheme}://{userinfo}{host}{tail}"))
}

/// True when `header` is Twilio's signature of `params` posted to `url` (or to `url`
/// with its default port toggled); compared in constant time.
pub(crate) fn verify(
    auth_token: &str,
    url: &str,
    params: &[(String, String)],
    header: Option<&str>,
) -> bool {
    let Some(given) = header
        .map(str::trim)
        .and_then(|h| base64::engine::general_purpose::STANDARD.decode(h).ok())
    else {
        return false;
    };
    let check = |u: &str| {
        let mut m = mac(auth_token);
        m.update(&signed_data(u, params));
        m.verify_slice(&given).is_ok()
    };
    check(url) || port_variant(url).is_some_and(|v| check(&v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn twilio_documented_example_verifies() {
        // The worked example of Twilio's "Webhooks security" page: auth token 12345, this
        // URL and these parameters give 0/KCTR6DLpKmkAf8muzZqo1nDgQ=.
        let url = "https://mycompany.com/myapp.php?foo=1&bar=2";
        let p = params(&[
            ("CallSid", "CA1234567890ABCDE"),
            ("Caller", "+12349013030"),
            ("Digits", "1234"),
            ("From", "+12349013030"),
            ("To", "+18005551212"),
        ]);
        assert_eq!(sign("12345", url, &p), "0/KCTR6DLpKmkAf8muzZqo1nDgQ=");
        assert!(verify(
            "12345",
            url,
            &p,
            Some("0/KCTR6DLpKmkAf8muzZqo1nDgQ=")
        ));
        assert!(!verify(
            "54321",
            url,
            &p,
            Some("0/KCTR6DLpKmkAf8muzZqo1nDgQ=")
        ));
        let mut changed = p.clone();
        changed[2].1 = "1235".into();
        assert!(!verify(
            "12345",
            url,
            &changed,
            Some("0/KCTR6DLpKmkAf8muzZqo1nDgQ=")
        ));
        assert!(!verify("12345", url, &p, None));
        assert!(!verify("12345", url, &p, Some("not base64!")));
    }

    #[test]
    fn the_default_port_may_be_signed_or_not() {
        let p = params(&[("Body", "hi")]);
        let with_port = sign("t", "https://sms.example.com:443/webhooks/twilio", &p);
        assert!(verify(
            "t",
            "https://sms.example.com/webhooks/twilio",
            &p,
            Some(&with_port)
        ));
        let without = sign("t", "https://sms.example.com/webhooks/twilio", &p);
        assert!(verify(
            "t",
            "https://sms.example.com:443/webhooks/twilio",
            &p,
            Some(&without)
        ));
        let other_port = sign("t", "https://sms.example.com:8443/webhooks/twilio", &p);
        assert!(!verify(
            "t",
            "https://sms.example.com/webhooks/twilio",
            &p,
            Some(&other_port)
        ));
        assert_eq!(
            port_variant("http://[::1]/x").as_deref(),
            Some("http://[::1]:80/x")
        );
        assert_eq!(port_variant("ftp://h/x"), None);
    }
}
