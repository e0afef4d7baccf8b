//! The IRC adapter's registration against a scripted server on loopback, for what Debian's
//! ngircd does not offer: IRCv3 SASL PLAIN (`sasl-3.1`), `account-tag` identities, NickServ,
//! and the exact PING/PONG exchange (RFC 2812 §3.7.2-3). Each script plays the server's side
//! line by line as the specifications describe it.
#![cfg(feature = "irc")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use base64::Engine as _;
use hermes_gateway::{InboundMessage, IrcAdapter, IrcSettings, PlatformAdapter, PlatformError};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const HANG: Duration = Duration::from_secs(20);

struct Script {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    seen: Vec<String>,
}

impl Script {
    async fn accept(listener: &TcpListener) -> Script {
        let (stream, _): (TcpStream, _) = tokio::time::timeout(HANG, listener.accept())
            .await
            .expect("the adapter connects")
            .unwrap();
        let (r, w) = stream.into_split();
        Script {
            reader: BufReader::new(r),
            writer: w,
            seen: Vec::new(),
        }
    }

    /// Reads client lines until one starts with `prefix`; returns it (without CR LF).
    async fn expect(&mut self, prefix: &str) -> String {
        loop {
            let mut line = String::new();
            let n = tokio::time::timeout(HANG, self.reader.read_line(&mut line))
                .await
                .unwrap_or_else(|_| panic!("no `{prefix}` line; got {:?}", self.seen))
                .unwrap();
            assert!(
                n > 0,
                "connection closed before `{prefix}`; got {:?}",
                self.seen
            );
            let line = line.trim_end().to_string();
            self.seen.push(line.clone());
            if line.starts_with(prefix) {
                return line;
            }
        }
    }

    async fn send(&mut self, line: &str) {
        self.writer
            .write_all(format!("{line}\r\n").as_bytes())
            .await
            .unwrap();
    }

    async fn welcome(&mut self, nick: &str) {
        self.send(&format!(":srv 001 {nick} :Welcome")).await;
    }
}

struct Bot {
    inbound: mpsc::Receiver<InboundMessage>,
    task: JoinHandle<Result<(), PlatformError>>,
    cancel: CancellationToken,
}

async fn start(configure: impl FnOnce(&mut IrcSettings)) -> (TcpListener, Bot) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut s = IrcSettings::new("127.0.0.1", vec!["#hermes".into()]);
    s.tls = false;
    s.port = listener.local_addr().unwrap().port();
    s.nickserv_wait = Duration::from_secs(5);
    s.reconnect_initial = Duration::from_millis(50);
    configure(&mut s);
    let adapter = std::sync::Arc::new(IrcAdapter::new(s).unwrap());
    let (tx, rx) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let task = tokio::spawn(async move { adapter.run(tx, c).await });
    (
        listener,
        Bot {
            inbound: rx,
            task,
            cancel,
        },
    )
}

#[tokio::test]
async fn sasl_plain_runs_before_registration_ends_and_accounts_identify_senders() {
    let (listener, mut bot) = start(|s| {
        s.sasl_username = Some("hermes-acct".into());
        s.sasl_password = Some("s3cret".into());
    })
    .await;
    let mut srv = Script::accept(&listener).await;
    srv.expect("CAP LS 302").await;
    srv.expect("USER hermes-bot").await;
    srv.send(":srv CAP * LS * :multi-prefix sasl=PLAIN,EXTERNAL")
        .await;
    srv.send(":srv CAP * LS :account-tag extended-join").await;
    assert_eq!(srv.expect("CAP REQ").await, "CAP REQ :account-tag sasl");
    srv.send(":srv CAP * ACK :account-tag sasl").await;
    srv.expect("AUTHENTICATE PLAIN").await;
    srv.send("AUTHENTICATE +").await;
    let auth = srv.expect("AUTHENTICATE ").await;
    let payload = base64::engine::general_purpose::STANDARD
        .decode(auth.trim_start_matches("AUTHENTICATE "))
        .unwrap();
    assert_eq!(payload, b"hermes-acct\0hermes-acct\0s3cret");
    srv.send(":srv 900 hermes-bot hermes-bot!u@h hermes-acct :You are now logged in")
        .await;
    srv.send(":srv 903 hermes-bot :SASL authentication successful")
        .await;
    srv.expect("CAP END").await;
    srv.welcome("hermes-bot").await;
    srv.expect("JOIN #hermes").await;
    srv.send(":hermes-bot!u@h JOIN #hermes").await;
    // The account tag is the identity; the same nick without a login is nobody.
    srv.send("@account=Alice :alice!a@h PRIVMSG hermes-bot :hi")
        .await;
    srv.send(":alice!x@elsewhere PRIVMSG hermes-bot :hi too")
        .await;
    let first = tokio::time::timeout(HANG, bot.inbound.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.source.user_id.as_deref(), Some("alice"));
    let second = tokio::time::timeout(HANG, bot.inbound.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.source.user_id, None, "not logged in: no identity");
    bot.cancel.cancel();
    srv.expect("QUIT").await;
    assert!(bot.task.await.unwrap().is_ok());
}

#[tokio::test]
async fn a_failed_sasl_login_stops_the_adapter_with_an_auth_error() {
    let (listener, bot) = start(|s| s.sasl_password = Some("wrong".into())).await;
    let mut srv = Script::accept(&listener).await;
    srv.expect("USER").await;
    srv.send(":srv CAP * LS :sasl").await;
    srv.expect("CAP REQ :sasl").await;
    srv.send(":srv CAP * ACK :sasl").await;
    srv.expect("AUTHENTICATE PLAIN").await;
    srv.send("AUTHENTICATE +").await;
    srv.expect("AUTHENTICATE ").await;
    srv.send(":srv 904 hermes-bot :SASL authentication failed")
        .await;
    let ended = tokio::time::timeout(HANG, bot.task).await.unwrap().unwrap();
    let err = ended.expect_err("no retry with a wrong password");
    assert!(matches!(err, PlatformError::Auth { .. }), "{err}");
    assert!(err.to_string().contains("IRC_SASL_PASSWORD"), "{err}");
}

#[tokio::test]
async fn sasl_configured_on_a_server_without_it_is_an_error_not_a_silent_plain_login() {
    let (listener, bot) = start(|s| s.sasl_password = Some("pw".into())).await;
    let mut srv = Script::accept(&listener).await;
    srv.expect("USER").await;
    srv.send(":srv CAP * LS :multi-prefix").await;
    let ended = tokio::time::timeout(HANG, bot.task).await.unwrap().unwrap();
    assert!(
        matches!(ended, Err(PlatformError::Auth { .. })),
        "{ended:?}"
    );
}

#[tokio::test]
async fn nick_in_use_falls_back_nickserv_identifies_before_join_and_pings_are_answered() {
    let (listener, bot) = start(|s| s.nickserv_password = Some("ns-pass".into())).await;
    let mut srv = Script::accept(&listener).await;
    srv.expect("NICK hermes-bot").await;
    srv.expect("USER").await;
    // A server without CAP: an unknown-command numeric, then the nick is taken twice.
    srv.send(":srv 421 * CAP :Unknown command").await;
    srv.send(":srv 433 * hermes-bot :Nickname is already in use")
        .await;
    srv.expect("NICK hermes-bot_").await;
    srv.send(":srv 433 * hermes-bot_ :Nickname is already in use")
        .await;
    srv.expect("NICK hermes-bot_1").await;
    srv.welcome("hermes-bot_1").await;
    srv.expect("PRIVMSG NickServ :IDENTIFY ns-pass").await;
    srv.send("PING :tok-42").await;
    assert_eq!(srv.expect("PONG").await, "PONG :tok-42");
    srv.send(":NickServ!s@services NOTICE hermes-bot_1 :You are now identified")
        .await;
    let join = srv.expect("JOIN").await;
    assert_eq!(join, "JOIN #hermes");
    let at = |p: &str| srv.seen.iter().position(|l| l.contains(p)).unwrap();
    assert!(
        at("IDENTIFY") < at("JOIN"),
        "JOIN after IDENTIFY: {:?}",
        srv.seen
    );
    bot.cancel.cancel();
    assert!(bot.task.await.unwrap().is_ok());
}

#[tokio::test]
async fn a_dropped_connection_is_reconnected_and_the_queued_reply_sent_after_the_join() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut s = IrcSettings::new("127.0.0.1", vec!["#hermes".into()]);
    s.tls = false;
    s.port = listener.local_addr().unwrap().port();
    s.reconnect_initial = Duration::from_millis(50);
    let adapter = std::sync::Arc::new(IrcAdapter::new(s).unwrap());
    let (tx, _rx) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    let (a, c) = (adapter.clone(), cancel.clone());
    let task = tokio::spawn(async move { a.run(tx, c).await });
    let mut srv = Script::accept(&listener).await;
    srv.expect("USER").await;
    drop(srv); // the server vanishes before welcoming us
    // A reply sent while disconnected waits in the queue …
    let target = hermes_gateway::ChatTarget {
        chat_id: "#hermes".into(),
        thread_id: None,
        reply_to: None,
    };
    let (a, t) = (adapter.clone(), target.clone());
    let sending = tokio::spawn(async move { a.send(&t, "kept while offline").await });
    let mut srv = Script::accept(&listener).await;
    srv.expect("USER").await;
    srv.welcome("hermes-bot").await;
    srv.expect("JOIN #hermes").await;
    srv.send(":hermes-bot!u@h JOIN #hermes").await;
    // … and goes out once, after the rejoin.
    assert_eq!(
        srv.expect("PRIVMSG").await,
        "PRIVMSG #hermes :kept while offline"
    );
    tokio::time::timeout(HANG, sending)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(adapter.queued_lines(), 0);
    cancel.cancel();
    assert!(task.await.unwrap().is_ok());
}
