//! OAuth pieces of hermes-mcp through the public API: `auth: oauth` in config, the 0600 token
//! file, and the loopback redirect listener of `hermes mcp login`. The full flows (discovery,
//! registration, PKCE, token use and refresh) run against the conformance suite's servers in
//! `tests/conformance.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};

use hermes_mcp::config::{ConfigError, OAuthSettings, Transport, parse_section};
use hermes_mcp::oauth::{Approver, FileTokenStore, LoopbackApprover, token_path};
use rmcp::transport::auth::{CredentialStore, StoredCredentials};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn env(k: &str) -> Option<String> {
    (k == "SECRET").then(|| "s3cret".to_string())
}

#[test]
fn auth_oauth_is_parsed_with_its_client_settings() {
    let yaml: yaml_serde::Value = yaml_serde::from_str(
        "remote:\n  url: https://mcp.example.com/mcp\n  auth: oauth\n  oauth:\n    client_id: hermes-cli\n    client_secret: '${SECRET}'\n    scopes: [files:read]\n    redirect_uri: http://127.0.0.1:8976/callback\nplain:\n  url: https://other.example.com/mcp\n",
    )
    .unwrap();
    let servers = parse_section(Some(&yaml)).unwrap();
    let remote = servers["remote"].resolve("remote", &env).unwrap();
    let Transport::Http { oauth, .. } = remote.transport else {
        panic!("http expected")
    };
    assert_eq!(
        oauth,
        Some(OAuthSettings {
            client_id: Some("hermes-cli".into()),
            client_secret: Some("s3cret".into()),
            client_metadata_url: None,
            scopes: vec!["files:read".into()],
            redirect_uri: Some("http://127.0.0.1:8976/callback".into()),
        })
    );
    let plain = servers["plain"].resolve("plain", &env).unwrap();
    assert!(matches!(
        plain.transport,
        Transport::Http { oauth: None, .. }
    ));
}

#[test]
fn unknown_auth_kinds_and_auth_on_stdio_are_refused() {
    let yaml: yaml_serde::Value = yaml_serde::from_str(
        "a:\n  url: https://x/mcp\n  auth: basic\nb:\n  command: srv\n  auth: oauth\nc:\n  url: https://x/mcp\n  oauth: {client_idd: x}\n",
    )
    .unwrap();
    let err = parse_section(Some(&yaml)).unwrap_err();
    assert!(
        matches!(&err, ConfigError::Shape(m) if m.contains("client_idd")),
        "{err}"
    );
    let yaml: yaml_serde::Value = yaml_serde::from_str(
        "a:\n  url: https://x/mcp\n  auth: basic\nb:\n  command: srv\n  auth: oauth\n",
    )
    .unwrap();
    let servers = parse_section(Some(&yaml)).unwrap();
    let a = servers["a"].resolve("a", &env).unwrap_err().to_string();
    assert!(
        a.contains("mcp_servers.a.auth") && a.contains("basic"),
        "{a}"
    );
    let b = servers["b"].resolve("b", &env).unwrap_err().to_string();
    assert!(
        b.contains("mcp_servers.b.auth") && b.contains("url:"),
        "{b}"
    );
}

#[tokio::test]
async fn token_file_is_private_and_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = token_path(&dir.path().join("mcp-tokens"), "my server/1");
    assert_eq!(path.file_name().unwrap(), "my_server_1.json");
    let store = FileTokenStore::new(path.clone());
    assert!(store.load().await.unwrap().is_none(), "no file yet");
    let creds = StoredCredentials::new("client-1".into(), None, vec!["a".into()], Some(7));
    store.save(creds).await.unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "token file mode {mode:o}");
    let dir_mode = std::fs::metadata(path.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700, "token folder mode {dir_mode:o}");
    let back = store.load().await.unwrap().unwrap();
    assert_eq!(back.client_id, "client-1");
    assert_eq!(back.granted_scopes, vec!["a".to_string()]);
    assert_eq!(back.token_received_at, Some(7));
    store.clear().await.unwrap();
    assert!(!path.exists());
    store.clear().await.unwrap();

    std::fs::write(&path, "not json").unwrap();
    let err = store.load().await.unwrap_err().to_string();
    assert!(err.contains("my_server_1.json"), "{err}");
}

async fn get(addr: &str, target: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {target} HTTP/1.1\r\nhost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test]
async fn loopback_approver_shows_the_url_and_returns_the_redirect() {
    let shown = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = shown.clone();
    let approver = LoopbackApprover::bind(
        None,
        Arc::new(move |u: &str| seen.lock().unwrap().push(u.to_string())),
    )
    .await
    .unwrap();
    let redirect = approver.redirect_uri();
    assert!(
        redirect.starts_with("http://127.0.0.1:") && redirect.ends_with("/callback"),
        "{redirect}"
    );
    let addr = redirect
        .trim_start_matches("http://")
        .trim_end_matches("/callback")
        .to_string();
    let task = tokio::spawn(async move {
        approver
            .approve("https://auth.example.com/authorize?x=1&state=xyz")
            .await
    });
    // A connection closed without a request is skipped.
    drop(tokio::net::TcpStream::connect(&addr).await.unwrap());
    // A rebinding Host is refused with 421, even carrying a code, and the wait goes on.
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    s.write_all(b"GET /callback?code=evil HTTP/1.1\r\nhost: evil.example\r\n\r\n")
        .await
        .unwrap();
    let mut refused = String::new();
    s.read_to_string(&mut refused).await.unwrap();
    assert!(refused.starts_with("HTTP/1.1 421"), "{refused}");
    // A stray request (a browser's favicon) is answered 404 and does not end the wait.
    let stray = get(&addr, "/favicon.ico").await;
    assert!(stray.starts_with("HTTP/1.1 404"), "{stray}");
    // A forged redirect from another local process (another state, or none) is refused
    // with 400 and does not end the login (issue 18 H7).
    for forged in [
        "/callback?code=evil&state=guess",
        "/callback?code=evil",
        "/callback?error=access_denied",
    ] {
        let page = get(&addr, forged).await;
        assert!(page.starts_with("HTTP/1.1 400"), "{forged}: {page}");
    }
    let page = get(&addr, "/callback?code=abc&state=xyz").await;
    assert!(
        page.starts_with("HTTP/1.1 200") && page.contains("close this tab"),
        "{page}"
    );
    let callback = tokio::time::timeout(std::time::Duration::from_secs(30), task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(callback, format!("{redirect}?code=abc&state=xyz"));
    assert_eq!(
        shown.lock().unwrap().as_slice(),
        ["https://auth.example.com/authorize?x=1&state=xyz"]
    );
}

#[tokio::test]
async fn loopback_approver_refuses_a_non_loopback_redirect_uri() {
    let err = LoopbackApprover::bind(Some("https://example.com/cb"), Arc::new(|_: &str| {}))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("https://example.com/cb"), "{err}");
}

/// Issue 18 §3: five silent sockets (each would hold a one-at-a-time listener for its whole
/// head timeout) do not delay the real redirect, and `Host: [::1]:<port>` names the listener.
#[tokio::test]
async fn silent_sockets_do_not_stall_the_login() {
    let approver = LoopbackApprover::bind(None, Arc::new(|_: &str| {}))
        .await
        .unwrap();
    let redirect = approver.redirect_uri();
    let addr = redirect
        .trim_start_matches("http://")
        .trim_end_matches("/callback")
        .to_string();
    let port = addr.rsplit_once(':').unwrap().1.to_string();
    let task = tokio::spawn(async move { approver.approve("https://auth.example.com/a").await });
    let mut silent = Vec::new();
    for _ in 0..5 {
        silent.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
    }
    let started = std::time::Instant::now();
    let page = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        s.write_all(
            format!("GET /callback?code=v6&state=s HTTP/1.1\r\nhost: [::1]:{port}\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    })
    .await
    .expect("the redirect waited behind the silent sockets");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    let callback = tokio::time::timeout(std::time::Duration::from_secs(5), task)
        .await
        .expect("the login did not end")
        .unwrap()
        .unwrap();
    assert_eq!(callback, format!("{redirect}?code=v6&state=s"));
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    drop(silent);
}
