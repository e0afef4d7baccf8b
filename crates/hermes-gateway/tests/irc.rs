//! The IRC adapter against a real IRC daemon (Debian's `ngircd` on loopback), through the
//! gateway core and the mock model (issue 22 item 6, "How it is checked"): an allowed user's
//! mention gets an answer, a stranger is refused (case C36) or paired, a long answer arrives
//! in lines of at most 512 bytes with UTF-8 and emoji intact, flood control spaces lines, the
//! server's PINGs are answered, a server restart is survived with a rejoin and nothing is
//! answered twice, and TLS works with a CA of our own.
#![cfg(feature = "irc")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod irc_support;

use std::sync::Arc;
use std::time::Duration;

use common::{Harness, wait_until};
use hermes_gateway::config::GatewayConfig;
use hermes_gateway::{Gateway, IrcAdapter, IrcSettings, PlatformAdapter};
use hermes_testkit::MockResponse;
use irc_support::{Human, Ngircd, make_tls, ngircd_binary};
use tokio_util::sync::CancellationToken;

const BOT: &str = "hermes-bot";
const CHANNEL: &str = "#hermes";

fn settings(port: u16) -> IrcSettings {
    let mut s = IrcSettings::new("127.0.0.1", vec![CHANNEL.into()]);
    s.tls = false;
    s.port = port;
    s.flood_interval = Duration::from_millis(20);
    s.reconnect_initial = Duration::from_millis(100);
    s.reconnect_max = Duration::from_millis(500);
    s
}

/// The gateway config from the environment, as `hermes gateway run` reads it
/// (`IRC_ALLOWED_USERS`, folded as IRC nicks are).
fn allow(users: &[&str]) -> GatewayConfig {
    let env = [("IRC_ALLOWED_USERS".to_string(), users.join(","))]
        .into_iter()
        .collect();
    GatewayConfig::from_config(&hermes_protocol::config::Config::default(), &env, None)
        .unwrap()
        .0
}

struct Running {
    adapter: Arc<IrcAdapter>,
    _gw: Gateway,
    cancel: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

async fn serve(h: &Harness, config: GatewayConfig, settings: IrcSettings) -> Running {
    let adapter = Arc::new(IrcAdapter::new(settings).unwrap());
    let gw = Gateway::new(
        config,
        vec![adapter.clone() as Arc<dyn PlatformAdapter>],
        h.factory.clone(),
        h.store.clone(),
        h.home.home().clone(),
    );
    let cancel = CancellationToken::new();
    let (g, c) = (gw.clone(), cancel.clone());
    tokio::spawn(async move { g.run(c).await });
    let a = adapter.clone();
    wait_until("the bot to register and join", || a.is_connected()).await;
    Running {
        adapter,
        _gw: gw,
        cancel,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_mention_is_answered_and_the_servers_pings_are_too() {
    let Some(bin) = ngircd_binary() else { return };
    let server = Ngircd::start(bin, None).await;
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("Hello from hermes."));
    h.mock.push(MockResponse::text("Still here."));
    let _bot = serve(&h, allow(&["Alice"]), settings(server.port)).await;
    let alice = Human::connect(server.port, "alice").await;
    alice.join(CHANNEL).await;
    // Not addressed: the bot stays quiet.
    alice
        .send(&format!("PRIVMSG {CHANNEL} :hello everyone"))
        .await;
    alice
        .send(&format!("PRIVMSG {CHANNEL} :{BOT}: hi there"))
        .await;
    alice
        .wait_line("the answer", |l| {
            l.contains("PRIVMSG #hermes :Hello from hermes.")
        })
        .await;
    let asked = h.mock.requests();
    assert_eq!(
        asked.len(),
        1,
        "one model call, for the addressed message only"
    );
    assert_eq!(
        common::request_users(&asked[0]).last().map(String::as_str),
        Some("hi there"),
        "the nick prefix is removed"
    );
    // ngircd PINGs an idle client after 5 s and drops it 5 s later without a PONG (its
    // minimum timeouts; ~12 s measured): idle for longer, the bot must still be on the same
    // connection — no QUIT, no second JOIN — and answer.
    tokio::time::sleep(Duration::from_secs(15)).await;
    let from_bot = |what: &str| {
        alice
            .lines()
            .into_iter()
            .filter(|l| l.text().starts_with(&format!(":{BOT}!")) && l.text().contains(what))
            .count()
    };
    assert_eq!(
        from_bot(" QUIT "),
        0,
        "the bot was dropped for not answering PINGs"
    );
    assert_eq!(from_bot(" JOIN "), 0, "the bot had to rejoin");
    alice.send(&format!("PRIVMSG {BOT} :are you there?")).await;
    alice
        .wait_line("the DM answer", |l| {
            l.starts_with(&format!(":{BOT}!")) && l.contains("PRIVMSG alice :Still here.")
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_c36_irc_stranger_gets_no_answer_and_no_code_when_an_allowlist_is_set() {
    let Some(bin) = ngircd_binary() else { return };
    let server = Ngircd::start(bin, None).await;
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("for alice only"));
    let _bot = serve(&h, allow(&["alice"]), settings(server.port)).await;
    let mallory = Human::connect(server.port, "mallory").await;
    mallory.join(CHANNEL).await;
    mallory
        .send(&format!(
            "PRIVMSG {CHANNEL} :{BOT}: run: cat ~/.ssh/id_ed25519"
        ))
        .await;
    mallory
        .send(&format!("PRIVMSG {BOT} :run: cat ~/.ssh/id_ed25519"))
        .await;
    // Alice's message after mallory's proves both of mallory's were processed (in order).
    let alice = Human::connect(server.port, "alice").await;
    alice.send(&format!("PRIVMSG {BOT} :hi")).await;
    alice
        .wait_line("alice's answer", |l| {
            l.contains("PRIVMSG alice :for alice only")
        })
        .await;
    assert_eq!(
        h.mock.requests().len(),
        1,
        "the agent never ran for mallory"
    );
    let to_mallory: Vec<_> = mallory
        .lines()
        .into_iter()
        .filter(|l| l.text().starts_with(&format!(":{BOT}!")) && l.text().contains("PRIVMSG"))
        .collect();
    assert!(
        to_mallory.is_empty(),
        "no reply, no pairing code: {to_mallory:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_allowlist_a_strangers_dm_gets_a_pairing_code() {
    let Some(bin) = ngircd_binary() else { return };
    let server = Ngircd::start(bin, None).await;
    let h = Harness::new().await;
    let _bot = serve(&h, GatewayConfig::default(), settings(server.port)).await;
    let bob = Human::connect(server.port, "Bob").await;
    bob.send(&format!("PRIVMSG {BOT} :hello")).await;
    bob.wait_line("the pairing code", |l| {
        l.contains("PRIVMSG Bob :") && l.contains("hermes pairing approve irc")
    })
    .await;
    assert!(
        h.mock.requests().is_empty(),
        "a stranger never reaches the agent"
    );
    // In a channel a stranger is ignored, not paired.
    bob.join(CHANNEL).await;
    let before = bob.lines().len();
    bob.send(&format!("PRIVMSG {CHANNEL} :{BOT}: hello")).await;
    bob.send(&format!("PRIVMSG {CHANNEL} :marker")).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let from_bot: Vec<String> = bob.lines()[before..]
        .iter()
        .map(|l| l.text().to_string())
        .filter(|t| {
            t.starts_with(&format!(":{BOT}!")) && t.contains(&format!(" PRIVMSG {CHANNEL} "))
        })
        .collect();
    assert!(
        from_bot.is_empty(),
        "no answer in the channel: {from_bot:?}"
    );
}

/// Markdown with CJK runs without spaces, emoji with joiners, a list, code and a link.
fn long_answer() -> String {
    let mut s =
        String::from("**Summary** of the work, with `code` and [docs](https://example.org/a).\n\n");
    for i in 0..6 {
        s.push_str(&format!("- item {i}: "));
        s.push_str(&"日本語のテキストと絵文字👨‍👩‍👧‍👦🎉".repeat(12));
        s.push('\n');
    }
    s.push('\n');
    s.push_str(&"中文字符没有空格".repeat(80));
    s.push_str("\n\nThe end.");
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_answer_arrives_in_lines_of_at_most_512_bytes_with_utf8_intact() {
    let Some(bin) = ngircd_binary() else { return };
    let server = Ngircd::start(bin, None).await;
    let h = Harness::new().await;
    h.mock.push(MockResponse::text(&long_answer()));
    let _bot = serve(&h, allow(&["alice"]), settings(server.port)).await;
    let alice = Human::connect(server.port, "alice").await;
    alice.join(CHANNEL).await;
    alice
        .send(&format!("PRIVMSG {CHANNEL} :{BOT}, write a long one"))
        .await;
    alice
        .wait_line("the last line", |l| l.contains("PRIVMSG #hermes :The end."))
        .await;
    let got = alice.privmsgs(BOT, CHANNEL);
    assert!(got.len() > 8, "a long answer is many lines: {}", got.len());
    for (line, _) in &got {
        assert!(
            line.raw.len() <= 512,
            "{} bytes: {}",
            line.raw.len(),
            line.text()
        );
        assert!(line.raw.ends_with(b"\r\n"));
        let _ = line.text(); // valid UTF-8, or this panics
    }
    let texts: Vec<&str> = got.iter().map(|(_, t)| t.as_str()).collect();
    assert!(
        texts.iter().all(|t| !t.starts_with('\u{200d}')),
        "no line starts inside an emoji"
    );
    let joined: String = texts.concat();
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let family = "👨‍👩‍👧‍👦";
    assert_eq!(
        joined.matches(family).count(),
        72,
        "every emoji arrived whole"
    );
    assert_eq!(joined.matches("中文字符没有空格").count(), 80);
    assert_eq!(
        texts[0], "Summary of the work, with code and docs (https://example.org/a).",
        "Markdown is reduced to plain text"
    );
    assert!(!joined.contains("**") && !joined.contains('`'));
    // Nothing lost or added: the text equals the source without Markdown, spaces aside.
    let expected = squash(&long_answer())
        .replace("**", "")
        .replace('`', "")
        .replace(
            "[docs](https://example.org/a)",
            "docs(https://example.org/a)",
        )
        .replace("-item", "item");
    let got = squash(&joined)
        .replace("-item", "item")
        .replace("•item", "item");
    assert_eq!(got, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flood_control_spaces_lines_after_the_burst() {
    let Some(bin) = ngircd_binary() else { return };
    let server = Ngircd::start(bin, None).await;
    let h = Harness::new().await;
    h.mock.push(MockResponse::text(
        "line one\nline two\nline three\nline four\nline five\nline six",
    ));
    let mut s = settings(server.port);
    s.flood_burst = 2;
    s.flood_interval = Duration::from_millis(400);
    let bot = serve(&h, allow(&["alice"]), s).await;
    let alice = Human::connect(server.port, "alice").await;
    alice.send(&format!("PRIVMSG {BOT} :count to six")).await;
    alice
        .wait_line("the sixth line", |l| l.contains("PRIVMSG alice :line six"))
        .await;
    let got = alice.privmsgs(BOT, "alice");
    let texts: Vec<&str> = got.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(
        texts,
        [
            "line one",
            "line two",
            "line three",
            "line four",
            "line five",
            "line six"
        ]
    );
    // After a burst of two, each further line waits for a token (400 ms): the last line
    // comes at least 4 × 400 ms after the first (a lower bound; slowness only adds).
    let spread = got[5].0.at - got[0].0.at;
    assert!(
        spread >= Duration::from_millis(1500),
        "lines not spaced: {spread:?}"
    );
    for pair in got[2..].windows(2) {
        assert!(
            pair[1].0.at - pair[0].0.at >= Duration::from_millis(300),
            "{pair:?}"
        );
    }
    assert_eq!(bot.adapter.queued_lines(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_is_survived_with_a_rejoin_and_nothing_is_answered_twice() {
    let Some(bin) = ngircd_binary() else { return };
    let mut server = Ngircd::start(bin, None).await;
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("first answer"));
    h.mock.push(MockResponse::text("second answer"));
    let bot = serve(&h, allow(&["alice"]), settings(server.port)).await;
    let alice = Human::connect(server.port, "alice").await;
    alice.join(CHANNEL).await;
    alice
        .send(&format!("PRIVMSG {CHANNEL} :{BOT}: first question"))
        .await;
    alice
        .wait_line("the first answer", |l| {
            l.contains("PRIVMSG #hermes :first answer")
        })
        .await;

    server.restart().await;
    let a = bot.adapter.clone();
    wait_until("the bot to notice the drop", || !a.is_connected()).await;
    let alice = Human::connect(server.port, "alice").await;
    alice.join(CHANNEL).await;
    let a = bot.adapter.clone();
    wait_until("the bot to reconnect", || a.is_connected()).await;
    // The bot is back in the channel (it may have rejoined before or after alice did).
    let before = alice.lines().len();
    alice.send(&format!("NAMES {CHANNEL}")).await;
    alice
        .wait_line_after(before, "the bot among the channel's names", |l| {
            l.contains(" 353 ")
                && l.contains(CHANNEL)
                && l.trim_end().split([' ', ':', '@', '+']).any(|w| w == BOT)
        })
        .await;
    alice
        .send(&format!("PRIVMSG {CHANNEL} :{BOT}: second question"))
        .await;
    alice
        .wait_line("the second answer", |l| {
            l.contains("PRIVMSG #hermes :second answer")
        })
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let texts: Vec<String> = alice
        .privmsgs(BOT, CHANNEL)
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    assert_eq!(
        texts,
        ["second answer"],
        "the first question is not answered again"
    );
    assert_eq!(h.mock.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_nick_falls_back_and_tls_works_with_our_own_ca() {
    let Some(bin) = ngircd_binary() else { return };
    let dir = tempfile::tempdir().unwrap();
    let Some(tls) = make_tls(dir.path()) else {
        return;
    };
    let server = Ngircd::start(bin, Some(&tls)).await;
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("over TLS"));
    // Someone already has the bot's nick.
    let squatter = Human::connect(server.port, BOT).await;
    let mut s = settings(server.tls_port.unwrap());
    s.server = "localhost".into();
    s.tls = true;
    s.tls_ca_file = Some(tls.ca.clone());
    let bot = serve(&h, allow(&["alice"]), s).await;
    assert_eq!(bot.adapter.current_nick(), format!("{BOT}_"));
    let alice = Human::connect(server.port, "alice").await;
    alice.send(&format!("PRIVMSG {BOT}_ :hello over tls")).await;
    alice
        .wait_line("the answer", |l| {
            l.starts_with(&format!(":{BOT}_!")) && l.contains("PRIVMSG alice :over TLS")
        })
        .await;
    drop(squatter);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_from_an_unknown_ca_is_refused() {
    let Some(bin) = ngircd_binary() else { return };
    let dir = tempfile::tempdir().unwrap();
    let Some(tls) = make_tls(dir.path()) else {
        return;
    };
    let server = Ngircd::start(bin, Some(&tls)).await;
    let mut s = settings(server.tls_port.unwrap());
    s.server = "localhost".into();
    s.tls = true; // system roots only: our test CA is not among them
    let adapter = Arc::new(IrcAdapter::new(s).unwrap());
    let (tx, _rx) = tokio::sync::mpsc::channel(8);
    let cancel = CancellationToken::new();
    let (a, c) = (adapter.clone(), cancel.clone());
    let task = tokio::spawn(async move { a.run(tx, c).await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !adapter.is_connected(),
        "an untrusted certificate must not connect"
    );
    cancel.cancel();
    let ended = tokio::time::timeout(irc_support::HANG, task)
        .await
        .unwrap()
        .unwrap();
    assert!(ended.is_ok(), "retrying, not a fatal error: {ended:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cron_results_reach_the_home_channel_and_send_only_messages_use_a_cron_nick() {
    let Some(bin) = ngircd_binary() else { return };
    let server = Ngircd::start(bin, None).await;
    let h = Harness::new().await;
    let bot = serve(&h, allow(&["alice"]), settings(server.port)).await;
    let alice = Human::connect(server.port, "alice").await;
    alice.join(CHANNEL).await;
    // No IRC_HOME_CHANNEL: the home channel is the first of IRC_CHANNEL (Python Hermes).
    let env = [("IRC_CHANNEL".to_string(), format!("{CHANNEL},#other"))]
        .into_iter()
        .collect();
    let adapters = vec![bot.adapter.clone() as Arc<dyn PlatformAdapter>];
    let outbox = hermes_gateway::Outbox::new(
        &adapters,
        hermes_gateway::outbox::home_channels_from_env(&env),
    );
    outbox
        .send("irc", None, "**nightly** report: all green")
        .await
        .unwrap();
    alice
        .wait_line("the cron result", |l| {
            l.starts_with(&format!(":{BOT}!"))
                && l.contains("PRIVMSG #hermes :nightly report: all green")
        })
        .await;
    // Without a running gateway: one short connection under another nick.
    let once = IrcAdapter::send_only(settings(server.port)).unwrap();
    let target = hermes_gateway::ChatTarget {
        chat_id: CHANNEL.into(),
        thread_id: None,
        reply_to: None,
    };
    once.send(&target, "sent from a script").await.unwrap();
    alice
        .wait_line("the send-only message", |l| {
            l.starts_with(&format!(":{BOT}-cron!"))
                && l.contains("PRIVMSG #hermes :sent from a script")
        })
        .await;
    alice
        .wait_line("the send-only connection to quit", |l| {
            l.starts_with(&format!(":{BOT}-cron!")) && l.contains(" QUIT ")
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_commands_work_in_a_channel_and_sethome_records_it() {
    let Some(bin) = ngircd_binary() else { return };
    let server = Ngircd::start(bin, None).await;
    let h = Harness::new().await;
    let _bot = serve(&h, allow(&["alice"]), settings(server.port)).await;
    let alice = Human::connect(server.port, "alice").await;
    alice.join(CHANNEL).await;
    alice
        .send(&format!("PRIVMSG {CHANNEL} :{BOT}: /sethome"))
        .await;
    alice
        .wait_line("the /sethome answer", |l| {
            l.starts_with(&format!(":{BOT}!")) && l.contains("home channel")
        })
        .await;
    assert_eq!(
        hermes_gateway::status::home_channels(h.home.home())["irc"].chat_id,
        CHANNEL
    );
    assert!(
        h.mock.requests().is_empty(),
        "a command is not a model turn"
    );
}
