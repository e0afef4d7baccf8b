//! Webhook delivery against a loopback server: retried with backoff after a failure.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use hermes_cron::{Deliverer, Outgoing, Target};
use serde_json::Value;

#[derive(Clone, Default)]
struct Hits {
    count: Arc<AtomicUsize>,
    bodies: Arc<std::sync::Mutex<Vec<Value>>>,
}

async fn hook(State(h): State<Hits>, Json(body): Json<Value>) -> StatusCode {
    h.bodies.lock().unwrap().push(body);
    if h.count.fetch_add(1, Ordering::SeqCst) == 0 {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::OK
    }
}

#[tokio::test]
async fn webhook_is_retried_after_a_server_error() {
    let hits = Hits::default();
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(hook))
        .with_state(hits.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let mut d = Deliverer::new(None);
    d.retry_base = std::time::Duration::from_millis(5);
    let url = format!("http://{addr}/hook");
    let targets = Target::parse_list(&format!("local, {url}")).unwrap();
    let out = Outgoing {
        job_id: "j1",
        job_name: "inbox",
        run_id: "r1",
        status: "ok",
        text: "3 new mails",
        output_path: Some("cron/output/j1/x.md"),
        origin: None,
    };
    let results = d.deliver(&targets, &out).await;
    assert_eq!(results.len(), 2);
    assert!(results[1].ok, "{results:?}");
    assert_eq!(results[1].detail, "HTTP 200 (attempt 2)");
    assert_eq!(hits.count.load(Ordering::SeqCst), 2);
    assert_eq!(hits.bodies.lock().unwrap()[1]["text"], "3 new mails");
}

#[test]
fn targets_parse() {
    assert_eq!(Target::parse("origin").unwrap(), Target::Origin);
    assert_eq!(
        Target::parse("telegram").unwrap(),
        Target::Home {
            platform: "telegram".into()
        }
    );
    assert_eq!(
        Target::parse("telegram:-100123:7").unwrap(),
        Target::Chat {
            platform: "telegram".into(),
            chat_id: "-100123".into(),
            thread_id: Some("7".into())
        }
    );
    assert_eq!(
        Target::parse("matrix:!room:example.org").unwrap(),
        Target::Chat {
            platform: "matrix".into(),
            chat_id: "!room:example.org".into(),
            thread_id: None
        }
    );
    assert_eq!(
        Target::parse("email:ops@example.com").unwrap(),
        Target::Chat {
            platform: "email".into(),
            chat_id: "ops@example.com".into(),
            thread_id: None
        }
    );
    assert!(matches!(
        Target::parse("irc:#ops").unwrap(),
        Target::Chat { chat_id, .. } if chat_id == "#ops"
    ));
    assert!(Target::parse("a:b:c:d").is_err());
    assert!(Target::parse("telegram:1 2").is_err());
    assert!(Target::parse("ftp://x").is_err());
    assert_eq!(Target::parse_list(" ").unwrap(), vec![Target::Local]);
}
