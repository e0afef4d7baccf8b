//! Pictures from chat platforms (issue 26 item 2): a photo reaches the model request as an
//! image part when the session sends images, and as the note naming the saved file when it
//! does not.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::Ordering;

use common::*;
use hermes_gateway::{Attachment, AttachmentKind};
use hermes_testkit::MockResponse;
use tokio_util::sync::CancellationToken;

/// The user messages of the last model request.
fn last_user(h: &Harness) -> serde_json::Value {
    let requests = h.mock.requests();
    let messages = requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    messages
        .into_iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()
}

async fn photo_turn(send_images: bool) -> (Harness, serde_json::Value, String) {
    let h = Harness::new().await;
    h.factory.send_images.store(send_images, Ordering::SeqCst);
    h.mock.push(MockResponse::text("A red square."));
    let photo = h.home.path().join("cache").join("photo.png");
    std::fs::create_dir_all(photo.parent().unwrap()).unwrap();
    std::fs::write(&photo, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    let (adapter, inject) = FakeAdapter::new("telegram");
    let gw = h.gateway(open_config("telegram"), adapter.clone());
    let cancel = CancellationToken::new();
    let runner = tokio::spawn({
        let gw = gw.clone();
        let cancel = cancel.clone();
        async move { gw.run(cancel).await }
    });
    let mut msg = dm("42", "what is in the picture?");
    msg.attachments.push(Attachment {
        kind: AttachmentKind::Image,
        path: photo.clone(),
        file_name: Some("photo.png".into()),
        mime_type: Some("image/png".into()),
        size_bytes: 16,
    });
    inject.send(msg).await.unwrap();
    wait_until("a reply", || !adapter.texts().is_empty()).await;
    let user = last_user(&h);
    cancel.cancel();
    tokio::time::timeout(std::time::Duration::from_secs(30), runner)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    (h, user, photo.display().to_string())
}

#[tokio::test]
async fn a_photo_reaches_a_model_that_takes_images_as_an_image_part() {
    let (_h, user, photo) = photo_turn(true).await;
    let parts = user["content"].as_array().expect("content parts");
    let text = parts
        .iter()
        .find(|p| p["type"] == "text")
        .and_then(|p| p["text"].as_str())
        .unwrap();
    assert!(text.contains("what is in the picture?"), "{user:#}");
    assert!(
        text.contains(&photo),
        "the saved file is named too: {user:#}"
    );
    let image = parts.iter().find(|p| p["type"] == "image_url").unwrap();
    assert!(
        image["image_url"]["url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,"),
        "{user:#}"
    );
}

#[tokio::test]
async fn a_photo_for_a_model_without_images_is_the_note_of_the_saved_file() {
    let (_h, user, photo) = photo_turn(false).await;
    let text = user["content"].as_str().expect("text content");
    assert!(
        text.contains(&format!("[attached image: {photo}]")),
        "{text}"
    );
    assert!(!user.to_string().contains("image_url"), "{user:#}");
}
