//! `hermes chat -q` when the model stream breaks after text was shown and the call is
//! retried: `--json` reports `stream_restarted` before the retried deltas, and on a color
//! terminal the abandoned part is followed by a dim notice and then the whole answer, once.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Env, stderr, stdout};
use hermes_testkit::MockResponse;
use serde_json::Value;

const ANSWER: &str = "Water the plants every morning before work.";

/// For the terminal: the cut attempt's first third holds a finished heading, which the
/// terminal draws before the stream breaks.
const MARKDOWN_ANSWER: &str = "# Plants\n\nWater them every morning before work.\n";

/// The answer's stream cut after its role chunk and first text piece (no finish_reason, no
/// `[DONE]`), which the agent retries, then the whole answer.
fn push_cut_then_whole(env: &Env, answer: &str) {
    let full = MockResponse::text(answer);
    let body = String::from_utf8(full.body.to_vec()).unwrap();
    let head: String = body.split_inclusive("\n\n").take(2).collect();
    env.mock.push(MockResponse::from_bytes(
        200,
        vec![("content-type".into(), "text/event-stream".into())],
        head,
    ));
    env.mock.push(full);
}

#[tokio::test]
async fn json_output_reports_the_restart_before_the_retried_deltas() {
    let env = Env::new().await;
    push_cut_then_whole(&env, ANSWER);
    let out = env.run(&["chat", "-q", "plants?", "--json"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let restart = events
        .iter()
        .position(|e| e["type"] == "stream_restarted")
        .expect("a stream_restarted event");
    assert_eq!(events[restart]["attempt"], 2);
    assert!(
        events[restart]["reason"]
            .as_str()
            .unwrap()
            .contains("ended before")
    );
    let deltas = |range: &[Value]| -> String {
        range
            .iter()
            .filter(|e| e["type"] == "text_delta")
            .map(|e| e["text"].as_str().unwrap().to_string())
            .collect()
    };
    let before = deltas(&events[..restart]);
    assert!(
        !before.is_empty() && ANSWER.starts_with(&before),
        "{before}"
    );
    assert_eq!(deltas(&events[restart..]), ANSWER);
    assert_eq!(events.last().unwrap()["final_text"], ANSWER);
}

#[tokio::test]
async fn piped_output_prints_the_answer_once() {
    let env = Env::new().await;
    push_cut_then_whole(&env, ANSWER);
    let out = env.run(&["chat", "-q", "plants?"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim_end(), ANSWER);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_terminal_shows_the_cut_part_a_notice_and_the_whole_answer_once() {
    let env = Env::new().await;
    push_cut_then_whole(&env, MARKDOWN_ANSWER);
    let home = env.home.path().to_path_buf();
    let cwd = env.cwd.path().to_path_buf();
    let (out, code) = tokio::task::spawn_blocking(move || {
        common::run_on_color_pty(&home, &cwd, &["chat", "-q", "plants?"])
    })
    .await
    .unwrap();
    let mut screen = vt100::Parser::new(200, 80, 0);
    screen.process(&out);
    let text = screen.screen().contents();
    assert_eq!(code, 0, "{text}");
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let notice = lines
        .iter()
        .position(|l| l.starts_with("↻ the answer above was cut off"))
        .unwrap_or_else(|| panic!("no restart notice:\n{text}"));
    let body = "Water them every morning before work.";
    assert_eq!(
        lines.iter().filter(|l| l.contains(body)).count(),
        1,
        "the paragraph once:\n{text}"
    );
    let headings: Vec<usize> = (0..lines.len()).filter(|&i| lines[i] == "Plants").collect();
    assert_eq!(headings.len(), 2, "drawn before the cut and again:\n{text}");
    assert!(headings[0] < notice && notice < headings[1], "{text}");
    let answer = lines.iter().position(|l| l.contains(body)).unwrap();
    assert!(
        notice < answer,
        "the notice comes before the answer:\n{text}"
    );
}
