//! Images attached to a user turn (issue 26 item 2): sent as `image_url` parts of the user
//! message (OpenAI Chat Completions' documented shape) when the session sends images, stored
//! with the message so a resumed session sends them again, and left out otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Harness;
use hermes_testkit::MockResponse;
use serde_json::Value;

/// A PNG file's first bytes (enough for the type check).
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

/// The `image_url` URLs of the last user message of `request`.
fn image_urls(request: &Value) -> Vec<String> {
    let messages = request["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    user["content"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter(|p| p["type"] == "image_url")
                .map(|p| p["image_url"]["url"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn an_attached_picture_is_sent_as_an_image_part_and_kept() {
    let mut h = Harness::new().await;
    h.opts.send_images = true;
    let png = h.path("cat.png");
    std::fs::write(&png, PNG).unwrap();
    let mut agent = h.agent().await;
    h.mock.push(MockResponse::text("A cat."));
    assert!(agent.attach_images(std::slice::from_ref(&png)).is_empty());
    h.turn(&mut agent, "what is this?").await;
    let requests = h.mock.requests();
    let urls = image_urls(&requests[0]);
    assert_eq!(urls.len(), 1, "{:#}", requests[0]);
    assert!(urls[0].starts_with("data:image/png;base64,"), "{}", urls[0]);

    // The next turn has no new image; the stored one is still part of the history.
    h.mock.push(MockResponse::text("Still a cat."));
    h.turn(&mut agent, "and now?").await;
    let second = &h.mock.requests()[1];
    let with_image = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user" && m["content"].is_array())
        .count();
    assert_eq!(with_image, 1, "{second:#}");
    assert!(
        image_urls(second).is_empty(),
        "the new message has no image"
    );

    // A resumed session sends the stored image again.
    let id = agent.session_id().to_string();
    let mut resumed = hermes_agent::Agent::start(h.deps.clone(), h.opts.clone(), Some(&id))
        .await
        .unwrap();
    h.mock.push(MockResponse::text("ok"));
    h.turn(&mut resumed, "one more").await;
    let third = h.mock.requests()[2].to_string();
    assert!(third.contains("data:image/png;base64,"), "{third}");
}

#[tokio::test]
async fn a_session_that_sends_no_images_attaches_nothing() {
    let h = Harness::new().await;
    let png = h.path("cat.png");
    std::fs::write(&png, PNG).unwrap();
    let mut agent = h.agent().await;
    h.mock.push(MockResponse::text("I cannot see images."));
    assert!(agent.attach_images(&[png]).is_empty());
    h.turn(&mut agent, "what is this?").await;
    let request = h.mock.requests()[0].to_string();
    assert!(!request.contains("image_url"), "{request}");
}

#[tokio::test]
async fn files_that_are_not_images_are_refused_with_a_reason() {
    let mut h = Harness::new().await;
    h.opts.send_images = true;
    let pdf = h.path("report.pdf");
    std::fs::write(&pdf, b"%PDF-1.7").unwrap();
    let mut agent = h.agent().await;
    let problems = agent.attach_images(&[pdf, h.path("missing.png")]);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].contains("not a PNG, JPEG, GIF or WebP"),
        "{problems:?}"
    );
    assert!(problems[1].contains("cannot read"), "{problems:?}");
    h.mock.push(MockResponse::text("ok"));
    h.turn(&mut agent, "hi").await;
    assert!(!h.mock.requests()[0].to_string().contains("image_url"));
}
