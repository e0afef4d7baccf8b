//! Twilio SMS adapter against a loopback fake of Twilio's REST API (axum), with webhook
//! requests signed as Twilio signs them, alone and behind the gateway core with the mock
//! model.
//!
//! Payload sources (Twilio docs): "Messaging webhooks" (the form fields of an incoming
//! message: `MessageSid`, `SmsSid`, `AccountSid`, `From`, `To`, `Body`, `NumMedia`,
//! `OptOutType`), "Webhooks security" (`X-Twilio-Signature`), "Message resource" (create
//! answer `{"sid": "SM…", "status": "queued", …}`), "Error and warning dictionary" (21610
//! unsubscribed recipient, 20429 too many requests), "Twilio support for opt-out keywords".
#![cfg(feature = "sms")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use common::{Harness, wait_until};
use hermes_gateway::config::GatewayConfig;
use hermes_gateway::platforms::sms::segments;
use hermes_gateway::platforms::sms::{SIGNATURE_HEADER, sign};
use hermes_gateway::{
    ChatTarget, Gateway, InboundMessage, PlatformAdapter, PlatformError, SmsAdapter, SmsSettings,
};
use hermes_testkit::MockResponse;
use serde_json::json;
use support::{HttpFake, Recorded, status_json, within};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const SID: &str = "AC00000000000000000000000000000001";
const TOKEN: &str = "twilio-auth-token";
const NUMBER: &str = "+15550001111";
const USER: &str = "+15557654321";
const PUBLIC_URL: &str = "https://sms.example.com/webhooks/twilio";
const MESSAGES: &str = "/2010-04-01/Accounts/AC00000000000000000000000000000001/Messages.json";

fn form_value(body: &str, key: &str) -> Option<String> {
    url::form_urlencoded::parse(body.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

fn twilio_fake() -> impl Fn(&Recorded) -> support::Answer + Send + Sync {
    let n = AtomicU32::new(0);
    let once = AtomicU32::new(0);
    move |r: &Recorded| {
        use base64::Engine;
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{SID}:{TOKEN}"));
        if r.header("authorization") != Some(format!("Basic {basic}")) {
            return status_json(
                401,
                json!({"code": 20003, "message": "Authenticate", "status": 401}),
            );
        }
        if r.path != MESSAGES {
            return status_json(
                404,
                json!({"code": 20404, "message": "not found", "status": 404}),
            );
        }
        let body = r.text();
        match form_value(&body, "To").as_deref() {
            Some("+15550000429") if once.fetch_add(1, Ordering::SeqCst) == 0 => (
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                vec![("retry-after".into(), "1".into())],
                br#"{"code": 20429, "message": "Too Many Requests", "status": 429}"#.to_vec(),
            ),
            Some("+15550021610") => status_json(
                400,
                json!({"code": 21610, "message": "Attempt to send to unsubscribed recipient",
                "more_info": "https://www.twilio.com/docs/errors/21610", "status": 400}),
            ),
            Some(to) => {
                let i = n.fetch_add(1, Ordering::SeqCst);
                status_json(
                    201,
                    json!({"sid": format!("SM{i:032}"), "status": "queued", "to": to, "from": NUMBER,
                    "body": form_value(&body, "Body"), "num_segments": "1", "account_sid": SID}),
                )
            }
            None => status_json(
                400,
                json!({"code": 21604, "message": "A 'To' phone number is required.", "status": 400}),
            ),
        }
    }
}

struct Sms {
    api: HttpFake,
    adapter: Arc<SmsAdapter>,
    url: String,
}

async fn sms_in(dir: &tempfile::TempDir, max_segments: usize) -> Sms {
    let api = HttpFake::start(twilio_fake()).await;
    let mut s = SmsSettings::new(SID, TOKEN, NUMBER);
    s.webhook_url = Some(PUBLIC_URL.into());
    s.bind = ([127, 0, 0, 1], 0).into();
    s.api_base_url = api.url.clone();
    s.max_segments = max_segments;
    s.opt_out_file = Some(dir.path().join("gateway").join("sms_opt_outs.json"));
    s.retry_max = Duration::from_millis(50);
    let adapter = Arc::new(SmsAdapter::bind(s).unwrap());
    let url = format!("http://{}/webhooks/twilio", adapter.webhook_addr().unwrap());
    Sms { api, adapter, url }
}

fn run_alone(adapter: &Arc<SmsAdapter>) -> (mpsc::Receiver<InboundMessage>, CancellationToken) {
    let (tx, rx) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    let (a, c) = (adapter.clone(), cancel.clone());
    tokio::spawn(async move { a.run(tx, c).await });
    (rx, cancel)
}

/// An incoming message's fields as Twilio posts them ("Messaging webhooks").
fn incoming(sid: &str, from: &str, body: &str) -> Vec<(String, String)> {
    [
        ("ToCountry", "US"),
        ("SmsMessageSid", sid),
        ("NumMedia", "0"),
        ("SmsSid", sid),
        ("SmsStatus", "received"),
        ("Body", body),
        ("To", NUMBER),
        ("NumSegments", "1"),
        ("MessageSid", sid),
        ("AccountSid", SID),
        ("From", from),
        ("ApiVersion", "2010-04-01"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

async fn post(url: &str, params: &[(String, String)], signature: Option<String>) -> u16 {
    let body: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params)
        .finish();
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        // Twilio calls the public name; the proxy passes it on.
        .header("host", "sms.example.com");
    if let Some(s) = signature {
        req = req.header(SIGNATURE_HEADER, s);
    }
    within("the webhook answer", req.body(body).send())
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn deliver(url: &str, params: &[(String, String)]) -> u16 {
    post(url, params, Some(sign(TOKEN, PUBLIC_URL, params))).await
}

fn bodies_to(api: &HttpFake, to: &str) -> Vec<String> {
    api.requests_to(MESSAGES)
        .iter()
        .map(Recorded::text)
        .filter(|b| form_value(b, "To").as_deref() == Some(to))
        .filter_map(|b| form_value(&b, "Body"))
        .collect()
}

fn target(chat: &str) -> ChatTarget {
    ChatTarget {
        chat_id: chat.into(),
        thread_id: None,
        reply_to: None,
    }
}

#[tokio::test]
async fn signed_messages_arrive_once_and_bad_signatures_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = sms_in(&dir, 10).await;
    let (mut rx, cancel) = run_alone(&s.adapter);
    let params = incoming("SM1", USER, "hello there");
    assert_eq!(post(&s.url, &params, None).await, 403);
    assert_eq!(
        post(
            &s.url,
            &params,
            Some(sign("wrong-token", PUBLIC_URL, &params))
        )
        .await,
        403
    );
    // Signed for another URL (the local address instead of the public one Twilio called).
    assert_eq!(
        post(&s.url, &params, Some(sign(TOKEN, &s.url, &params))).await,
        403
    );
    let mut tampered = params.clone();
    tampered[5].1 = "hello there!".into();
    assert_eq!(
        post(&s.url, &tampered, Some(sign(TOKEN, PUBLIC_URL, &params))).await,
        403
    );
    let no_from: Vec<_> = params
        .iter()
        .filter(|(k, _)| k != "From")
        .cloned()
        .collect();
    assert_eq!(deliver(&s.url, &no_from).await, 400);
    assert!(
        rx.try_recv().is_err(),
        "nothing refused reaches the gateway"
    );

    assert_eq!(deliver(&s.url, &params).await, 200);
    let msg = within("the message", rx.recv()).await.unwrap();
    assert_eq!(msg.source.platform, "sms");
    assert_eq!(msg.source.chat_id.as_deref(), Some(USER));
    assert_eq!(msg.source.user_id.as_deref(), Some(USER));
    assert_eq!(msg.message_id.as_deref(), Some("SM1"));
    assert_eq!(msg.text, "hello there");
    // Twilio retries a webhook it saw fail: the same MessageSid is not forwarded again.
    assert_eq!(deliver(&s.url, &params).await, 200);
    assert_eq!(deliver(&s.url, &incoming("SM2", USER, "next")).await, 200);
    assert_eq!(
        within("the next message", rx.recv()).await.unwrap().text,
        "next"
    );
    // Our own number echoed back is not a message.
    assert_eq!(deliver(&s.url, &incoming("SM3", NUMBER, "echo")).await, 200);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(rx.try_recv().is_err());
    cancel.cancel();
}

#[tokio::test]
async fn stop_is_honoured_until_start_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let s = sms_in(&dir, 10).await;
    let (mut rx, cancel) = run_alone(&s.adapter);
    assert_eq!(
        deliver(&s.url, &incoming("SM10", USER, " Stop ")).await,
        200
    );
    assert!(s.adapter.is_opted_out(USER));
    let err = s
        .adapter
        .send(&target(USER), "are you there?")
        .await
        .unwrap_err();
    assert!(
        matches!(err, PlatformError::Rejected { .. }) && err.to_string().contains("opted out"),
        "{err}"
    );
    assert!(
        bodies_to(&s.api, USER).is_empty(),
        "nothing is sent to an opted-out number"
    );
    // A message from the opted-out number, and HELP, run no turn.
    assert_eq!(
        deliver(&s.url, &incoming("SM11", USER, "hello?")).await,
        200
    );
    assert_eq!(deliver(&s.url, &incoming("SM12", USER, "HELP")).await, 200);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        rx.try_recv().is_err(),
        "keywords and opted-out messages are not turns"
    );
    cancel.cancel();

    // A restart keeps the opt-out.
    let again = sms_in(&dir, 10).await;
    assert!(again.adapter.is_opted_out(USER));
    assert!(again.adapter.send(&target(USER), "hi").await.is_err());
    let (mut rx, cancel) = run_alone(&again.adapter);
    // "yes" opts back in only because the number is opted out; START works always.
    assert_eq!(
        deliver(&again.url, &incoming("SM13", USER, "yes")).await,
        200
    );
    assert!(!again.adapter.is_opted_out(USER));
    again
        .adapter
        .send(&target(USER), "welcome back")
        .await
        .unwrap();
    assert_eq!(bodies_to(&again.api, USER), vec!["welcome back"]);
    assert_eq!(
        deliver(&again.url, &incoming("SM14", USER, "yes")).await,
        200
    );
    assert_eq!(
        within("an ordinary yes", rx.recv()).await.unwrap().text,
        "yes"
    );
    // Twilio's own 21610 records the opt-out too.
    let err = again
        .adapter
        .send(&target("+15550021610"), "hi")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("opted out"), "{err}");
    assert!(again.adapter.is_opted_out("+15550021610"));
    cancel.cancel();
}

#[tokio::test]
async fn replies_go_out_in_capped_segments_cut_between_graphemes_and_429_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let s = sms_in(&dir, 3).await;
    let gsm = "plain words ".repeat(50);
    s.adapter.send(&target(USER), gsm.trim_end()).await.unwrap();
    let sent = bodies_to(&s.api, USER);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(segments::count(&sent[0]), 3);
    assert!(sent[0].ends_with(" more characters)"), "{}", sent[0]);
    // One emoji makes the reply UCS-2 (67 units a segment); every emoji stays whole.
    let ucs = format!("{} 👍🏽", "long words ".repeat(30));
    s.adapter.send(&target("+15550000002"), &ucs).await.unwrap();
    let sent = bodies_to(&s.api, "+15550000002");
    assert!(segments::count(&sent[0]) <= 3, "{}", sent[0]);
    assert!(!sent[0].contains('\u{FFFD}'));
    let short = "Ça va? Très bien.";
    s.adapter
        .send(&target("+15550000003"), short)
        .await
        .unwrap();
    assert_eq!(bodies_to(&s.api, "+15550000003"), vec![short]);

    // 429 with Retry-After: retried once, sent once.
    s.adapter.send(&target("+15550000429"), "hi").await.unwrap();
    let tries = s
        .api
        .requests_to(MESSAGES)
        .iter()
        .filter(|r| r.text().contains("To=%2B15550000429"))
        .count();
    assert_eq!(tries, 2);
}

fn allow(users: &str) -> GatewayConfig {
    let env = [("SMS_ALLOWED_USERS".to_string(), users.to_string())]
        .into_iter()
        .collect();
    GatewayConfig::from_config(&hermes_protocol::config::Config::default(), &env, None)
        .unwrap()
        .0
}

async fn serve(
    h: &Harness,
    config: GatewayConfig,
    adapter: Arc<SmsAdapter>,
) -> (Gateway, CancellationToken, tokio::task::JoinHandle<()>) {
    let gw = Gateway::new(
        config,
        vec![adapter as Arc<dyn PlatformAdapter>],
        h.factory.clone(),
        h.store.clone(),
        h.home.home().clone(),
    );
    let cancel = CancellationToken::new();
    let (g, c) = (gw.clone(), cancel.clone());
    let task = tokio::spawn(async move {
        let _ = g.run(c).await;
    });
    (gw, cancel, task)
}

#[tokio::test]
async fn allowed_numbers_get_answers_strangers_pairing_or_nothing_and_restarts_replay_nothing() {
    let h = Harness::new().await;
    h.mock.push(MockResponse::text("**Sure** — here it is."));
    let dir = tempfile::tempdir().unwrap();
    let s = sms_in(&dir, 10).await;
    let (gw, cancel, task) = serve(&h, allow("+1 (555) 765-4321"), s.adapter.clone()).await;
    let question = incoming("SM20", USER, "what's up?");
    assert_eq!(deliver(&s.url, &question).await, 200);
    wait_until("the answer", || !bodies_to(&s.api, USER).is_empty()).await;
    common::idle(&gw).await;
    assert_eq!(
        bodies_to(&s.api, USER),
        vec!["Sure — here it is."],
        "Markdown is reduced to plain text"
    );
    // A stranger with an allowlist set gets nothing.
    assert_eq!(
        deliver(&s.url, &incoming("SM21", "+15559999999", "hi")).await,
        200
    );
    common::idle(&gw).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(bodies_to(&s.api, "+15559999999").is_empty());
    cancel.cancel();
    within("the gateway to stop", task).await.unwrap();

    // Restart: Twilio retries the first message; it is not run or answered again.
    let again = sms_in(&dir, 10).await;
    let (gw, cancel, task) = serve(&h, GatewayConfig::default(), again.adapter.clone()).await;
    assert_eq!(deliver(&again.url, &question).await, 200);
    common::idle(&gw).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        bodies_to(&again.api, USER).is_empty(),
        "nothing answered twice"
    );
    assert_eq!(
        h.user_texts(&format!("agent:main:sms:dm:{USER}")),
        vec!["what's up?"]
    );
    // Without an allowlist a stranger gets the pairing code, as on every platform.
    assert_eq!(
        deliver(&again.url, &incoming("SM22", "+15558888888", "hi")).await,
        200
    );
    wait_until("the pairing reply", || {
        !bodies_to(&again.api, "+15558888888").is_empty()
    })
    .await;
    let reply = &bodies_to(&again.api, "+15558888888")[0];
    assert!(reply.contains("hermes pairing approve sms"), "{reply}");
    assert_eq!(h.builds(), 1, "only the allowed number reached an agent");
    cancel.cancel();
    within("the gateway to stop", task).await.unwrap();
}

#[tokio::test]
async fn foreign_hosts_are_refused_and_cron_to_an_opted_out_number_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let s = sms_in(&dir, 10).await;
    let (mut rx, cancel) = run_alone(&s.adapter);
    let params = incoming("SM30", USER, "hi");
    let body: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(&params)
        .finish();
    let foreign = reqwest::Client::new()
        .post(&s.url)
        .header("host", "evil.example")
        .header(SIGNATURE_HEADER, sign(TOKEN, PUBLIC_URL, &params))
        .body(body)
        .send();
    assert_eq!(
        within("the answer", foreign)
            .await
            .unwrap()
            .status()
            .as_u16(),
        421
    );
    assert!(rx.try_recv().is_err());
    assert_eq!(
        deliver(&s.url, &incoming("SM31", USER, "STOPALL")).await,
        200
    );
    let homes = [("sms".to_string(), target(USER))].into_iter().collect();
    let outbox =
        hermes_gateway::Outbox::new(&[s.adapter.clone() as Arc<dyn PlatformAdapter>], homes);
    let err = outbox
        .send("sms", None, "Your daily report")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("opted out"), "{err}");
    assert!(bodies_to(&s.api, USER).is_empty());
    cancel.cancel();
}
