//! The IMAP side: one TLS connection (implicit TLS, as Python Hermes' `IMAP4_SSL`), `LOGIN`,
//! `SELECT INBOX`, then new mail by UID — announced by `IDLE` (RFC 2177) where the server
//! has it, else found by polling every `EMAIL_POLL_INTERVAL` seconds.
//!
//! The cursor is the highest UID handed to the gateway, kept with `UIDVALIDITY` in the
//! state file and advanced only after the message reached the gateway's inbound queue: a
//! restart fetches exactly what came after it (nothing replayed, nothing lost). On the very
//! first connection, or when `UIDVALIDITY` changed (the mailbox was rebuilt, old UIDs mean
//! nothing), the cursor starts at the mailbox's end, so old mail is never answered. Messages
//! are read with `BODY.PEEK[]` and flagged `\Seen` once handled.

use std::sync::Arc;

use async_imap::extensions::idle::IdleResponse;
use futures::TryStreamExt as _;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_rustls::client::TlsStream;
use tokio_util::sync::CancellationToken;

use super::{EmailAdapter, PLATFORM};
use crate::error::PlatformError;
use crate::platform::InboundMessage;

type Session = async_imap::Session<TlsStream<TcpStream>>;

/// How one connection ended.
pub(crate) enum End {
    /// Cancelled or the gateway went away.
    Stopped,
    /// Lost; reconnect. `ready` tells whether we got as far as the mailbox.
    Dropped { reason: String, ready: bool },
}

fn dropped(ready: bool) -> impl Fn(async_imap::error::Error) -> End {
    move |e| End::Dropped {
        reason: e.to_string(),
        ready,
    }
}

/// Connects, logs in and selects INBOX. A refused login is `Err` (retrying cannot fix it).
async fn open(adapter: &EmailAdapter) -> Result<Result<Session, End>, PlatformError> {
    let s = &adapter.settings;
    let lost = |reason: String| {
        Ok(Err(End::Dropped {
            reason,
            ready: false,
        }))
    };
    let tcp = match tokio::time::timeout(
        s.connect_timeout,
        TcpStream::connect((s.imap_host.as_str(), s.imap_port)),
    )
    .await
    {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return lost(format!("connect {}:{}: {e}", s.imap_host, s.imap_port)),
        Err(_) => {
            return lost(format!(
                "connect {}:{}: timed out",
                s.imap_host, s.imap_port
            ));
        }
    };
    let name = rustls::pki_types::ServerName::try_from(s.imap_host.clone())
        .map_err(|e| super::bad("EMAIL_IMAP_HOST", e))?;
    let connector = tokio_rustls::TlsConnector::from(adapter.tls.clone());
    let tls = match tokio::time::timeout(s.connect_timeout, connector.connect(name, tcp)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return lost(format!("TLS with {}: {e}", s.imap_host)),
        Err(_) => return lost(format!("TLS with {}: timed out", s.imap_host)),
    };
    let mut client = async_imap::Client::new(tls);
    match tokio::time::timeout(s.connect_timeout, client.read_response()).await {
        Ok(Ok(Some(_))) => {}
        Ok(Ok(None)) => return lost("the server closed before its greeting".into()),
        Ok(Err(e)) => return lost(format!("greeting: {e}")),
        Err(_) => return lost("no greeting".into()),
    }
    let session = match client.login(&s.address, &s.password).await {
        Ok(session) => session,
        Err((async_imap::error::Error::No(detail), _)) => {
            return Err(PlatformError::Auth {
                platform: PLATFORM.into(),
                detail: format!("IMAP login as {} refused: {detail}", s.address),
            });
        }
        Err((e, _)) => return lost(format!("login: {e}")),
    };
    Ok(Ok(session))
}

/// One connection: log in, catch up, then wait for new mail until it drops or `cancel`.
pub(crate) async fn run(
    adapter: &EmailAdapter,
    inbound: &mpsc::Sender<InboundMessage>,
    cancel: &CancellationToken,
) -> Result<End, PlatformError> {
    let mut session = match tokio::select! {
        opened = open(adapter) => opened?,
        () = cancel.cancelled() => return Ok(End::Stopped),
    } {
        Ok(s) => s,
        Err(end) => return Ok(end),
    };
    let idle = adapter.settings.use_idle
        && session
            .capabilities()
            .await
            .map(|c| c.has_str("IDLE"))
            .unwrap_or(false);
    let mailbox = match session.select("INBOX").await {
        Ok(m) => m,
        Err(e) => return Ok(dropped(false)(e)),
    };
    let validity = mailbox.uid_validity.unwrap_or(0);
    // Where the mailbox ends now: UIDNEXT - 1, or the highest UID when the server gave no
    // UIDNEXT (so a first start never answers old mail).
    let start = match mailbox.uid_next {
        Some(next) => next.saturating_sub(1),
        None => match session.uid_search("ALL").await {
            Ok(uids) => uids.into_iter().max().unwrap_or(0),
            Err(e) => return Ok(dropped(false)(e)),
        },
    };
    let reset = adapter.state.with(|st| {
        if st.uid_validity == Some(validity) {
            false
        } else {
            st.uid_validity = Some(validity);
            st.last_uid = start;
            true
        }
    });
    if reset {
        tracing::info!(
            platform = PLATFORM,
            uid_validity = validity,
            from_uid = start,
            "email: new mailbox (first start or UIDVALIDITY changed); mail already in it is not answered"
        );
        adapter.state.save().await;
    }
    adapter.set_connected(true);
    tracing::info!(
        platform = PLATFORM,
        idle,
        "email: IMAP connected, watching INBOX"
    );
    loop {
        match catch_up(adapter, &mut session, validity, inbound).await {
            Ok(true) => {}
            Ok(false) => return Ok(End::Stopped),
            Err(e) => return Ok(dropped(true)(e)),
        }
        if idle {
            let mut handle = session.idle();
            if let Err(e) = handle.init().await {
                return Ok(dropped(true)(e));
            }
            let (wait, _stop) = handle.wait_with_timeout(adapter.settings.idle_timeout);
            let woke = tokio::select! {
                r = wait => r,
                () = cancel.cancelled() => return Ok(End::Stopped),
            };
            match woke {
                Ok(IdleResponse::NewData(_) | IdleResponse::Timeout) => {}
                Ok(IdleResponse::ManualInterrupt) => {}
                Err(e) => return Ok(dropped(true)(e)),
            }
            session = match handle.done().await {
                Ok(s) => s,
                Err(e) => return Ok(dropped(true)(e)),
            };
        } else {
            tokio::select! {
                () = tokio::time::sleep(adapter.settings.poll_interval) => {}
                () = cancel.cancelled() => {
                    let _ = session.logout().await;
                    return Ok(End::Stopped);
                }
            }
            if let Err(e) = session.noop().await {
                return Ok(dropped(true)(e));
            }
        }
    }
}

/// Fetches and hands over every message after the cursor, oldest first. `Ok(false)` when
/// the gateway went away.
async fn catch_up(
    adapter: &EmailAdapter,
    session: &mut Session,
    validity: u32,
    inbound: &mpsc::Sender<InboundMessage>,
) -> Result<bool, async_imap::error::Error> {
    let last = adapter.state.with(|s| s.last_uid);
    let mut found: Vec<(u32, u32)> = session
        .uid_fetch(format!("{}:*", last.saturating_add(1)), "(UID RFC822.SIZE)")
        .await?
        .try_filter_map(|f| async move { Ok(f.uid.map(|u| (u, f.size.unwrap_or(0)))) })
        .try_collect()
        .await?;
    // `n:*` also names the last message when nothing is newer than n.
    found.retain(|(uid, _)| *uid > last);
    found.sort_unstable();
    found.dedup();
    for (uid, size) in found {
        let too_large = u64::from(size) > adapter.settings.max_message_bytes;
        let query = if too_large {
            "(UID BODY.PEEK[HEADER])"
        } else {
            "(UID BODY.PEEK[])"
        };
        let fetched: Vec<_> = session
            .uid_fetch(uid.to_string(), query)
            .await?
            .try_collect()
            .await?;
        let raw = fetched
            .iter()
            .find(|f| f.uid == Some(uid))
            .and_then(|f| if too_large { f.header() } else { f.body() })
            .map(<[u8]>::to_vec);
        let message = match raw {
            Some(raw) => {
                let oversize = too_large.then_some(u64::from(size));
                adapter.to_inbound(&raw, validity, uid, oversize).await
            }
            None => {
                tracing::warn!(
                    platform = PLATFORM,
                    uid,
                    "email: the server sent no body for a new message; skipped"
                );
                None
            }
        };
        if let Some(msg) = message
            && inbound.send(msg).await.is_err()
        {
            return Ok(false);
        }
        adapter.state.with(|s| s.last_uid = s.last_uid.max(uid));
        adapter.state.save().await;
        // Shown as read in the mailbox; a server that refuses this loses nothing.
        match session.uid_store(uid.to_string(), "+FLAGS (\\Seen)").await {
            Ok(stream) => {
                let _ = stream.try_collect::<Vec<_>>().await;
            }
            Err(e) => {
                tracing::debug!(platform = PLATFORM, uid, error = %e, "email: could not flag a message seen")
            }
        }
    }
    Ok(true)
}

/// rustls (ring) trusting the system roots and the PEM certificates of `extra`.
pub(crate) fn tls_config(
    extra: Option<&std::path::Path>,
) -> Result<Arc<rustls::ClientConfig>, PlatformError> {
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    if let Some(path) = extra {
        let shown = |e: &dyn std::fmt::Display| {
            super::bad("EMAIL_TLS_CA_FILE", format!("{}: {e}", path.display()))
        };
        let before = roots.len();
        for cert in rustls::pki_types::CertificateDer::pem_file_iter(path).map_err(|e| shown(&e))? {
            roots
                .add(cert.map_err(|e| shown(&e))?)
                .map_err(|e| shown(&e))?;
        }
        if roots.len() == before {
            return Err(shown(&"no certificates"));
        }
    }
    if roots.is_empty() {
        return Err(super::bad(
            "EMAIL_TLS_CA_FILE",
            "no trusted root certificates on this system (set EMAIL_TLS_CA_FILE)",
        ));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| super::bad("EMAIL_IMAP_HOST", e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
