//! TLS to the PostgreSQL server, with libpq's names (`sslmode`, `sslrootcert`):
//! - `sslmode=require` (or `verify-ca` / `verify-full`, read as `require`) connects over TLS
//!   and always verifies the server: its certificate must chain to `sslrootcert` when one is
//!   given (the DSN's `sslrootcert`, else `sessiondb.postgresql.sslrootcert`, else
//!   `PGSSLROOTCERT`), else to the system's trusted roots, and name the host connected to.
//!   hermes never accepts an unverified certificate: that would give the password and every
//!   message to whoever sits between it and the server. (libpq's `require` alone does not
//!   verify; hermes does what libpq calls `verify-full`.)
//! - `sslmode=disable`, `prefer` or none: plain TCP, as before TLS was supported (a
//!   `prefer` that tried TLS would now refuse the self-signed certificates many servers
//!   have, such as Debian's default one).
//!
//! The TLS stack is rustls (ring) through `tokio-postgres-rustls`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::StoreError;

/// The DSN for the driver and the `sslrootcert` it named: `sslrootcert` removed (the driver
/// does not know it) and `sslmode=verify-ca|verify-full` written as `sslmode=require`
/// (verification is always on, module docs). Both DSN forms: a `postgresql://` URL (query
/// parameters) and libpq's `key=value` pairs (values plain or in single quotes).
pub(crate) fn driver_dsn(dsn: &str) -> (String, Option<PathBuf>) {
    let trimmed = dsn.trim_start();
    if trimmed.starts_with("postgresql://") || trimmed.starts_with("postgres://") {
        url_dsn(trimmed).unwrap_or_else(|| (dsn.to_string(), None))
    } else {
        keyword_dsn(dsn)
    }
}

fn url_dsn(dsn: &str) -> Option<(String, Option<PathBuf>)> {
    let mut url = url::Url::parse(dsn).ok()?;
    let mut root = None;
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .filter_map(|(k, v)| match k.as_ref() {
            "sslrootcert" => {
                root = Some(PathBuf::from(v.as_ref()));
                None
            }
            "sslmode" if v == "verify-ca" || v == "verify-full" => {
                Some((k.into_owned(), "require".to_string()))
            }
            _ => Some((k.into_owned(), v.into_owned())),
        })
        .collect();
    if pairs.is_empty() {
        url.set_query(None);
    } else {
        url.query_pairs_mut().clear().extend_pairs(pairs);
    }
    Some((url.to_string(), root))
}

/// One `key=value` of libpq's keyword form: (key, raw value text, value).
fn keyword_pairs(dsn: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut chars = dsn.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        if key.is_empty() {
            break;
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next_if_eq(&'=').is_none() {
            // Not `key=value`: keep it for the driver to report.
            out.push((key.clone(), String::new(), String::new()));
            continue;
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let (mut raw, mut value) = (String::new(), String::new());
        if chars.next_if_eq(&'\'').is_some() {
            raw.push('\'');
            while let Some(c) = chars.next() {
                raw.push(c);
                match c {
                    '\\' => {
                        if let Some(n) = chars.next() {
                            raw.push(n);
                            value.push(n);
                        }
                    }
                    '\'' => break,
                    _ => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                raw.push(c);
                value.push(c);
            }
        }
        out.push((key, raw, value));
    }
    out
}

fn keyword_dsn(dsn: &str) -> (String, Option<PathBuf>) {
    let mut root = None;
    let mut kept = Vec::new();
    for (key, raw, value) in keyword_pairs(dsn) {
        match key.as_str() {
            "sslrootcert" => root = Some(PathBuf::from(value)),
            "sslmode" if value == "verify-ca" || value == "verify-full" => {
                kept.push("sslmode=require".to_string());
            }
            _ if raw.is_empty() && value.is_empty() => kept.push(key),
            _ => kept.push(format!("{key}={raw}")),
        }
    }
    (kept.join(" "), root)
}

/// The connector: rustls with ring, trusting only the certificates in `root` (PEM) when
/// given, else the system's roots. Not `required`: one that trusts nothing (the driver asks
/// for a connector for every connection, and uses it only when TLS is required).
///
/// Errors: `root` unreadable or holding no certificate; no system roots at all.
pub(crate) fn connector(
    required: bool,
    root: Option<&Path>,
) -> Result<MakeRustlsConnect, StoreError> {
    let config_error = |detail: String| StoreError::Config { detail };
    let mut roots = rustls::RootCertStore::empty();
    match root {
        _ if !required => {}
        Some(path) => {
            use rustls::pki_types::pem::PemObject as _;
            let certs = rustls::pki_types::CertificateDer::pem_file_iter(path)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| {
                    config_error(format!(
                        "sslrootcert {}: cannot read certificates: {e}",
                        path.display()
                    ))
                })?;
            if certs.is_empty() {
                return Err(config_error(format!(
                    "sslrootcert {}: no certificate in the file",
                    path.display()
                )));
            }
            for cert in certs {
                roots
                    .add(cert)
                    .map_err(|e| config_error(format!("sslrootcert {}: {e}", path.display())))?;
            }
        }
        None => {
            let native = rustls_native_certs::load_native_certs();
            for cert in native.certs {
                let _ = roots.add(cert);
            }
            if roots.is_empty() {
                return Err(config_error(
                    "sslmode=require: the system has no trusted root certificates; name the \
                     server's CA with sslrootcert"
                        .into(),
                ));
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| config_error(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_dsns_lose_sslrootcert_and_verify_modes_become_require() {
        let (dsn, root) = driver_dsn(
            "postgresql://u:p@db.example:5432/h?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&application_name=x",
        );
        assert_eq!(root, Some(PathBuf::from("/etc/ca.pem")));
        assert_eq!(
            dsn,
            "postgresql://u:p@db.example:5432/h?sslmode=require&application_name=x"
        );
        let (dsn, root) = driver_dsn("postgresql://h/db?sslrootcert=/ca.pem");
        assert_eq!(root, Some(PathBuf::from("/ca.pem")));
        assert_eq!(dsn, "postgresql://h/db");
        let plain = "postgresql://h/db";
        assert_eq!(driver_dsn(plain), (plain.to_string(), None));
    }

    #[test]
    fn keyword_dsns_lose_sslrootcert_and_keep_quoted_values() {
        let (dsn, root) = driver_dsn(
            "host=db port=5432 password='a b\\'c' sslrootcert = '/my certs/ca.pem' sslmode=verify-ca",
        );
        assert_eq!(root, Some(PathBuf::from("/my certs/ca.pem")));
        assert_eq!(dsn, "host=db port=5432 password='a b\\'c' sslmode=require");
        let parsed: tokio_postgres::Config = dsn.parse().unwrap();
        assert_eq!(parsed.get_password(), Some(&b"a b'c"[..]));
        assert_eq!(
            parsed.get_ssl_mode(),
            tokio_postgres::config::SslMode::Require
        );
    }

    #[test]
    fn a_root_file_without_certificates_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate").unwrap();
        let Err(e) = connector(true, Some(&path)) else {
            panic!("accepted a file without certificates")
        };
        assert!(e.to_string().contains("no certificate"), "{e}");
        let Err(e) = connector(true, Some(&dir.path().join("missing.pem"))) else {
            panic!("accepted a missing file")
        };
        assert!(e.to_string().contains("cannot read"), "{e}");
    }
}
