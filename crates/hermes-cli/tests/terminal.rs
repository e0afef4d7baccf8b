//! Issue 20 in a pseudo-terminal (expectrl), against the mock provider: a long paragraph
//! shows while it streams (item 2), a resize re-wraps the next answer (item 3), `/resume`
//! switches in place and picks from a list (item 4), an opened-and-quit REPL or a `/new`
//! leaves no empty session and a skill message is titled with the user's words (item 6),
//! and Tab with nothing to complete draws nothing (item 10).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use hermes_testkit::MockResponse;

use common::term::Term;
use common::{Env, stdout};

/// No background learning review (it would take a queued mock answer at `/new` and
/// `/resume`).
const NO_REVIEW: &str = "memory:\n  nudge_interval: 0\nskills:\n  creation_nudge_interval: 0\n";

/// A paragraph of `n` numbered words (`tag1 tag2 …`), one line of source.
fn paragraph(tag: &str, n: usize) -> String {
    (1..=n)
        .map(|i| format!("{tag}{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_paragraph_shows_while_it_is_still_streaming() {
    let env = Env::new().await;
    // Two thirds of a 150-word single-line paragraph, then the stream stays open: nothing
    // ends the paragraph, so before issue 20 the screen stayed blank.
    let text = paragraph("word", 150);
    let cut = MockResponse::text(&text).first_sse_events(3);
    env.mock.push(MockResponse::sse(cut).hang());
    env.mock
        .set_fallback(Some(MockResponse::text("(unexpected)")));
    let (home, cwd) = (env.home.path().to_path_buf(), env.cwd.path().to_path_buf());
    tokio::task::spawn_blocking(move || {
        let mut t = Term::spawn_sized(&home, &cwd, &[], &[], true, 100, 40);
        t.wait_for("hermes 0");
        t.wait_for_prompt_number(1);
        t.send("tell me a long story\r");
        // Words of the second third are on the screen although the answer is not over.
        t.wait_for("word1 ");
        t.wait_for("word90 ");
        assert!(!t.seen.contains("word150"), "{}", t.seen);
        // Each screen line is a whole number of words within the width.
        let shown = &t.seen[t.seen.find("word1 ").unwrap()..];
        for line in shown.lines().take_while(|l| l.contains("word")) {
            assert!(line.trim_end().chars().count() <= 100, "{line:?}");
        }
        t.send("\x03");
        t.wait_for("interrupted");
        t.wait_for_prompt_number(2);
        t.send("\x04");
        assert_eq!(t.exit_code(), 0, "output:\n{}", t.seen);
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn after_a_resize_the_next_answer_wraps_at_the_new_width() {
    let env = Env::new().await;
    env.mock.push(MockResponse::text(&paragraph("alpha", 60)));
    env.mock.push(MockResponse::text(&paragraph("beta", 60)));
    let (home, cwd) = (env.home.path().to_path_buf(), env.cwd.path().to_path_buf());
    tokio::task::spawn_blocking(move || {
        let mut t = Term::spawn_sized(&home, &cwd, &[], &[], true, 100, 40);
        t.wait_for("hermes 0");
        t.wait_for_prompt_number(1);
        t.send("first\r");
        t.wait_for("alpha60");
        t.wait_for_prompt_number(2);
        let first = t.seen.clone();
        t.resize(40, 40);
        t.send("second\r");
        t.wait_for("beta60");
        t.wait_for_prompt_number(3);
        t.send("\x04");
        assert_eq!(t.exit_code(), 0, "output:\n{}", t.seen);
        let lines_of = |text: &str, tag: &str| -> Vec<String> {
            let start = text.find(&format!("{tag}1 ")).unwrap();
            let end = text.find(&format!("{tag}60")).unwrap() + tag.len() + 2;
            text[start..end]
                .lines()
                .map(|l| l.trim_end().to_string())
                .collect()
        };
        let wide = lines_of(&first, "alpha");
        assert!(wide.iter().any(|l| l.chars().count() > 40), "{wide:?}");
        assert!(wide.iter().all(|l| l.chars().count() <= 100), "{wide:?}");
        let narrow = lines_of(&t.seen, "beta");
        assert!(narrow.len() >= 10, "{narrow:?}");
        assert!(narrow.iter().all(|l| l.chars().count() <= 40), "{narrow:?}");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_switches_in_place_and_picks_from_the_recent_sessions() {
    let env = Env::with_config(NO_REVIEW).await;
    env.mock.push(MockResponse::text("Noted the garden plan."));
    env.mock.push(MockResponse::text("Noted the budget."));
    env.run_ok(&["chat", "-q", "plan the garden beds"]).await;
    env.run_ok(&["chat", "-q", "sum up the budget"]).await;
    env.mock.push(MockResponse::text("Back to the garden."));
    env.mock.push(MockResponse::text("Back to the budget."));
    let (home, cwd) = (env.home.path().to_path_buf(), env.cwd.path().to_path_buf());
    tokio::task::spawn_blocking(move || {
        let mut t = Term::spawn(&home, &cwd, &[]);
        t.wait_for("hermes 0");
        t.wait_for_prompt_number(1);
        // By title: the REPL switches and shows where the conversation was.
        t.send("/resume plan the garden beds\r");
        t.wait_for("resumed session");
        t.wait_for("you: plan the garden beds");
        t.wait_for("hermes: Noted the garden plan.");
        t.wait_for_prompt_number(2);
        t.send("what next?\r");
        t.wait_for("Back to the garden.");
        t.wait_for_prompt_number(3);
        // Alone: a numbered list of the other sessions, then the pick.
        t.send("/resume\r");
        t.wait_for("sum up the budget");
        t.wait_for("resume which?");
        t.send("1\r");
        t.wait_for("resumed session");
        t.wait_for("you: sum up the budget");
        t.wait_for_prompt_number(4);
        t.send("and now?\r");
        t.wait_for("Back to the budget.");
        t.wait_for_prompt_number(5);
        // An unknown session says so and changes nothing.
        t.send("/resume no such thing\r");
        t.wait_for("no session matches `no such thing`");
        t.wait_for_prompt_number(6);
        t.send("\x04");
        assert_eq!(t.exit_code(), 0, "output:\n{}", t.seen);
    })
    .await
    .unwrap();
    // Each resumed session got the new turn, with its own history before it.
    let requests = env.mock.requests();
    let garden = requests[2]["messages"].to_string();
    assert!(
        garden.contains("plan the garden beds") && garden.contains("what next?"),
        "{garden}"
    );
    assert!(!garden.contains("budget"), "{garden}");
    let budget = requests[3]["messages"].to_string();
    assert!(
        budget.contains("sum up the budget") && budget.contains("and now?"),
        "{budget}"
    );
    assert!(!budget.contains("garden"), "{budget}");
    // The REPL's own first session never got a message: it was never written.
    let list = stdout(&env.run_ok(&["sessions", "list"]).await);
    assert_eq!(
        list.lines().count(),
        3,
        "header and the two sessions: {list}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_are_written_with_their_first_message_and_skill_turns_take_the_users_words() {
    let env = Env::with_config(NO_REVIEW).await;
    let skill = env.home.home().skills_dir().join("triage");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: triage\ndescription: Sort bug reports\n---\nLabel each report by area.\n",
    )
    .unwrap();
    env.mock.push(MockResponse::text("Sorted."));
    env.mock.push(MockResponse::text("Hello there."));
    let (home, cwd) = (env.home.path().to_path_buf(), env.cwd.path().to_path_buf());
    tokio::task::spawn_blocking(move || {
        // Opened and quit, with two /new on the way: nothing to list.
        let mut t = Term::spawn(&home, &cwd, &[]);
        t.wait_for("hermes 0");
        t.wait_for_prompt_number(1);
        t.send("/new\r");
        t.wait_for("new session");
        t.wait_for_prompt_number(2);
        t.send("/new\r");
        t.wait_for("new session");
        t.wait_for_prompt_number(3);
        t.send("\x04");
        assert_eq!(t.exit_code(), 0, "output:\n{}", t.seen);

        // A skill turn, then a plain one after /new.
        let mut t = Term::spawn(&home, &cwd, &[]);
        t.wait_for("hermes 0");
        t.wait_for_prompt_number(1);
        t.send("/triage the crash reports from today\r");
        t.wait_for("Sorted.");
        t.wait_for_prompt_number(2);
        t.send("/new\r");
        t.wait_for("new session");
        t.wait_for_prompt_number(3);
        t.send("hi\r");
        t.wait_for("Hello there.");
        t.wait_for_prompt_number(4);
        t.send("/new\r");
        t.wait_for("new session");
        t.wait_for_prompt_number(5);
        t.send("\x04");
        assert_eq!(t.exit_code(), 0, "output:\n{}", t.seen);
    })
    .await
    .unwrap();
    let list = stdout(&env.run_ok(&["sessions", "list"]).await);
    let rows: Vec<&str> = list.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{list}");
    assert!(list.lines().next().unwrap().contains("Source"), "{list}");
    assert!(rows.iter().all(|r| r.contains(" cli ")), "{list}");
    assert!(
        rows.iter()
            .any(|r| r.ends_with("the crash reports from today")),
        "titled with the user's words, not the skill preface: {list}"
    );
    assert!(!list.contains("loaded the skill"), "{list}");

    // `-s` in one-shot mode too.
    env.mock.push(MockResponse::text("Done."));
    env.run_ok(&["-s", "triage", "chat", "-q", "label yesterday's reports"])
        .await;
    let list = stdout(&env.run_ok(&["sessions", "list", "--source", "cli"]).await);
    assert!(
        list.lines()
            .nth(1)
            .unwrap()
            .ends_with("label yesterday's reports"),
        "{list}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tab_with_nothing_to_complete_draws_nothing_and_start_is_not_offered() {
    let env = Env::new().await;
    let (home, cwd) = (env.home.path().to_path_buf(), env.cwd.path().to_path_buf());
    tokio::task::spawn_blocking(move || {
        let mut t = Term::spawn(&home, &cwd, &[]);
        t.wait_for("hermes 0");
        t.wait_for_prompt_number(1);
        t.send("/zzqq");
        t.wait_for("/zzqq");
        t.send("\t");
        // `/sta` completes to `/status`: `/start` (a Telegram greeting) is not offered.
        t.send("\x15/statu");
        t.wait_for("/statu");
        t.send("\t");
        t.wait_for("/status");
        t.send("\x15");
        std::thread::sleep(std::time::Duration::from_millis(300));
        t.pump();
        assert!(!t.seen.contains("NO RECORDS FOUND"), "{}", t.seen);
        assert!(
            !t.seen.contains("| /"),
            "the prompt never turns into `| `: {}",
            t.seen
        );
        t.send("\x04");
        assert_eq!(t.exit_code(), 0, "output:\n{}", t.seen);
    })
    .await
    .unwrap();
}

/// One streamed answer whose usage says 9,833 prompt tokens of which 4,911 were cache reads.
fn cached_answer() -> MockResponse {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        serde_json::json!({"id": "c", "object": "chat.completion.chunk", "created": 0,
            "model": "mock-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let usage = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "created": 0,
        "model": "mock-model", "choices": [],
        "usage": {"prompt_tokens": 9833, "completion_tokens": 5, "total_tokens": 9838,
            "prompt_tokens_details": {"cached_tokens": 4911}}});
    let mut body = String::new();
    for v in [
        chunk(
            serde_json::json!({"role": "assistant", "content": "cached reply"}),
            None,
        ),
        chunk(serde_json::json!({}), Some("stop")),
        usage,
    ] {
        body.push_str(&format!("data: {v}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    MockResponse::sse(body)
}

/// Issue 20 item 5: the status line's context share counts cached prompt tokens once
/// (`ctx 9.8k/20.0k (49%)`, not the 14.7k / 74% of counting the 4,911 cache reads twice).
#[tokio::test(flavor = "multi_thread")]
async fn the_context_share_counts_cached_tokens_once() {
    let env = Env::new().await;
    std::fs::write(
        env.home.home().config_file(),
        format!(
            "model:\n  provider: custom\n  base_url: {}\n  default: mock-model\n  context_length: 20000\n{NO_REVIEW}",
            env.mock.base_url()
        ),
    )
    .unwrap();
    env.mock.push(cached_answer());
    let (home, cwd) = (env.home.path().to_path_buf(), env.cwd.path().to_path_buf());
    tokio::task::spawn_blocking(move || {
        let mut t = Term::spawn_sized(&home, &cwd, &[], &[], true, 120, 40);
        t.wait_for_prompt_number(1);
        t.send("hello\r");
        t.wait_for("cached reply");
        t.wait_for("ctx ");
        t.wait_for_prompt_number(2);
        assert!(t.seen.contains("ctx 9.8k/20.0k (49%)"), "{}", t.seen);
        assert!(!t.seen.contains("14.7k"), "{}", t.seen);
        t.send("\x04");
        assert_eq!(t.exit_code(), 0, "output:\n{}", t.seen);
    })
    .await
    .unwrap();
}

/// Issue 20 (Python Hermes' slash commands): `/insights` reports the session just used,
/// `/platforms` lists the gateway's platforms and their setup, `/personality` lists the
/// presets, writes one to SOUL.md and refuses an unknown name with the known ones.
#[tokio::test(flavor = "multi_thread")]
async fn insights_platforms_and_personality_answer_in_the_repl() {
    let env = Env::with_config(NO_REVIEW).await;
    env.mock.push(MockResponse::text("hi there"));
    let soul = env.home.home().soul_file();
    let (home, cwd) = (env.home.path().to_path_buf(), env.cwd.path().to_path_buf());
    tokio::task::spawn_blocking(move || {
        let mut t = Term::spawn_sized(&home, &cwd, &[], &[], true, 120, 60);
        t.wait_for_prompt_number(1);
        t.send("hello\r");
        t.wait_for("hi there");
        t.wait_for_prompt_number(2);

        t.send("/insights 7\r");
        t.wait_for("Insights for the last 7 days");
        t.wait_for("Sessions");
        t.wait_for("mock-model");
        t.wait_for_prompt_number(3);

        t.send("/platforms\r");
        t.wait_for("telegram");
        t.wait_for("webhook");
        t.wait_for_prompt_number(4);

        t.send("/personality\r");
        t.wait_for("Personalities (/personality <name>");
        t.wait_for("concise");
        t.wait_for_prompt_number(5);
        t.send("/personality concise\r");
        t.wait_for("Personality set to `concise` in SOUL.md");
        t.wait_for_prompt_number(6);
        t.send("/personality grumpy\r");
        t.wait_for("no personality `grumpy`; known: none, helpful");
        t.wait_for_prompt_number(7);
        t.send("\x04");
        assert_eq!(t.exit_code(), 0, "output:\n{}", t.seen);
    })
    .await
    .unwrap();
    let text = std::fs::read_to_string(soul).unwrap();
    assert!(
        text.contains("You are a concise assistant. Keep responses brief and to the point."),
        "{text}"
    );
}
