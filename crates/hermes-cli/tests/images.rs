//! `hermes chat --image PATH` (issue 26 item 2; Python Hermes' flag): the picture goes to a
//! model that takes images as an `image_url` part, decided by `model.supports_vision` and
//! `agent.image_input_mode`; otherwise the message names the file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, stderr, stdout};
use hermes_testkit::MockResponse;

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

fn last_user(env: &Env) -> serde_json::Value {
    let requests = env.mock.requests();
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

#[tokio::test]
async fn an_image_goes_to_a_model_declared_to_take_images() {
    let env = Env::with_config("").await;
    let config = env.home.home().config_file();
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace(
            "  default: mock-model\n",
            "  default: mock-model\n  supports_vision: \"true\"\n",
        ),
    )
    .unwrap();
    std::fs::write(env.cwd.path().join("chart.png"), PNG).unwrap();
    env.mock.push(MockResponse::text("A chart."));
    let out = env
        .run(&["chat", "-q", "what does it show?", "--image", "chart.png"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "A chart.");
    let user = last_user(&env);
    let parts = user["content"].as_array().expect("parts");
    assert!(
        parts[0]["text"]
            .as_str()
            .unwrap()
            .contains("what does it show?")
    );
    assert!(parts[0]["text"].as_str().unwrap().contains("chart.png"));
    assert!(
        parts[1]["image_url"]["url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,"),
        "{user:#}"
    );
}

#[tokio::test]
async fn text_mode_and_unknown_models_get_the_file_named_instead() {
    for extra in ["", "agent:\n  image_input_mode: text\n"] {
        let env = Env::with_config(extra).await;
        std::fs::write(env.cwd.path().join("chart.png"), PNG).unwrap();
        env.mock.push(MockResponse::text("I see a file name."));
        let out = env.run(&["chat", "--image", "chart.png"]).await;
        assert!(out.status.success(), "{}", stderr(&out));
        let user = last_user(&env);
        let text = user["content"].as_str().expect("text only");
        assert!(text.starts_with("[attached image: "), "{text}");
        assert!(text.ends_with("chart.png]"), "{text}");
    }
}

#[tokio::test]
async fn a_missing_or_unreadable_image_says_why() {
    let env = Env::with_config("agent:\n  image_input_mode: native\n").await;
    let out = env.run(&["chat", "-q", "hi", "--image", "nope.png"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("--image nope.png: no such file"),
        "{}",
        stderr(&out)
    );
    assert!(env.mock.requests().is_empty());

    std::fs::write(env.cwd.path().join("notes.txt"), "plain text").unwrap();
    env.mock.push(MockResponse::text("ok"));
    let out = env.run(&["chat", "-q", "hi", "--image", "notes.txt"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a PNG, JPEG, GIF or WebP image"),
        "{}",
        stderr(&out)
    );
    assert!(!last_user(&env).to_string().contains("image_url"));
}
