//! TLS to PostgreSQL (`sslmode=require`, `sslrootcert`): against the loopback test server of
//! `scripts/pg-test-server.sh`, which takes TLS with a certificate from its own throwaway CA
//! (`scripts/pg-test-server.sh ca`, `HERMES_TEST_PG_CA`). With the CA the store connects
//! over TLS (the server says so in `pg_stat_ssl`); without it, or naming a host the
//! certificate does not, it fails at once with the reason; `sslmode` unset stays plain.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use hermes_store::{NewSession, PgOptions, PgStore, SessionStore};

fn server() -> Option<(String, String)> {
    let dsn = std::env::var("HERMES_TEST_PG_DSN")
        .ok()
        .filter(|v| !v.is_empty());
    let ca = std::env::var("HERMES_TEST_PG_CA")
        .ok()
        .filter(|v| !v.is_empty());
    match (dsn, ca) {
        (Some(dsn), Some(ca)) => Some((dsn, ca)),
        _ => {
            eprintln!("skipped: HERMES_TEST_PG_DSN or HERMES_TEST_PG_CA is not set");
            None
        }
    }
}

fn tag() -> String {
    format!(
        "tlstest_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

fn with_params(dsn: &str, params: &str) -> String {
    let sep = if dsn.contains('?') { '&' } else { '?' };
    format!("{dsn}{sep}{params}")
}

/// Creates a session through `options` and returns the store (its connections stay open);
/// the error text when that fails.
fn create(options: &PgOptions) -> Result<SessionStore, String> {
    let store = SessionStore::from_backend(PgStore::open(options).map_err(|e| e.to_string())?);
    store
        .create_session(&NewSession {
            id: "s".into(),
            source: "cli".into(),
            model: "m".into(),
            provider: "p".into(),
            ..NewSession::default()
        })
        .map_err(|e| e.to_string())?;
    Ok(store)
}

/// Whether the server sees a connection with `application_name = tag` and whether it is TLS.
fn seen_with_tls(dsn: &str, tag: &str) -> Option<bool> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (admin, conn) = tokio_postgres::connect(dsn, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let rows = admin
            .query(
                "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
                 WHERE a.application_name = $1",
                &[&tag],
            )
            .await
            .unwrap();
        rows.first().map(|r| r.get::<_, bool>(0))
    })
}

#[test]
fn require_with_the_servers_ca_connects_over_tls() {
    let Some((dsn, ca)) = server() else { return };
    // The CA in the DSN, as libpq takes it, with libpq's `verify-full`.
    let t = tag();
    let options = PgOptions::new(with_params(
        &dsn,
        &format!("sslmode=verify-full&sslrootcert={ca}&application_name={t}"),
    ))
    .with_schema(t.clone());
    let _open = create(&options).unwrap();
    assert_eq!(seen_with_tls(&dsn, &t), Some(true));

    // The CA from the settings (`sessiondb.postgresql.sslrootcert` / `PGSSLROOTCERT`).
    let t = tag();
    let mut options = PgOptions::new(with_params(
        &dsn,
        &format!("sslmode=require&application_name={t}"),
    ))
    .with_schema(t.clone());
    options.ssl_root_cert = Some(ca.into());
    let _open = create(&options).unwrap();
    assert_eq!(seen_with_tls(&dsn, &t), Some(true));

    // No sslmode: plain TCP, as before.
    let t = tag();
    let options =
        PgOptions::new(with_params(&dsn, &format!("application_name={t}"))).with_schema(t.clone());
    let _open = create(&options).unwrap();
    assert_eq!(seen_with_tls(&dsn, &t), Some(false));
}

#[test]
fn an_unverifiable_server_is_refused_at_once_with_the_reason() {
    let Some((dsn, ca)) = server() else { return };
    // The system's roots do not know the test CA.
    let t = tag();
    let options = PgOptions::new(with_params(&dsn, "sslmode=require")).with_schema(t);
    let started = Instant::now();
    let e = create(&options).unwrap_err();
    eprintln!("refused as expected: {e}");
    assert!(e.contains("TLS") && e.contains("certificate"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "a certificate failure is not retried like a lost connection ({:?})",
        started.elapsed()
    );
    // The right CA, but a host name the certificate does not name (connecting to the same
    // address: libpq's `hostaddr`).
    let parsed: tokio_postgres::Config = dsn.parse().unwrap();
    let port = parsed.get_ports().first().copied().unwrap_or(5432);
    let user = parsed.get_user().unwrap_or("hermes");
    let db = parsed.get_dbname().unwrap_or("hermes_test");
    let mut options = PgOptions::new(format!(
        "host=db.wrong.example hostaddr=127.0.0.1 port={port} user={user} dbname={db} \
         sslmode=require sslrootcert={ca}"
    ))
    .with_schema(tag());
    options.retry_budget = Duration::from_secs(3);
    let e = create(&options).unwrap_err();
    assert!(e.contains("certificate"), "{e}");
    // A CA file that is not one.
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("ca.pem");
    std::fs::write(&bogus, "nothing here").unwrap();
    let mut options = PgOptions::new(with_params(&dsn, "sslmode=require")).with_schema(tag());
    options.ssl_root_cert = Some(bogus);
    let e = create(&options).unwrap_err();
    assert!(e.contains("no certificate"), "{e}");
}
