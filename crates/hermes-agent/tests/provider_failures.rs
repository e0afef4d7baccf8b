//! A turn that survives provider failures (issue 3, "How it is checked", scenario bullets), in
//! tokio's paused time: 429 with `retry-after: 2` then success; three 529s then success; an
//! interrupt during a backoff sleep ends the turn without waiting out the sleep; a rate-limit
//! fallback keeps the primary cooling down for the provider's reset time.
//!
//! The other bullets live next to the code they exercise: persistent 401 on key A rotates to
//! key B (`credential_pool.rs`), primary 404 → fallback and the primary again next turn
//! (`recovery.rs`), overflow → compression then retry (`compression.rs`).
//!
//! The mock provider answers over loopback sockets. With a paused clock tokio jumps to the
//! next timer whenever the runtime waits for I/O, which would fire the client's read timeouts;
//! [`ClockHold`] keeps a blocking task running, which inhibits that auto-advance (documented
//! in `tokio::time::pause`), so the clock moves only through `tokio::time::advance`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::Harness;
use hermes_agent::{Agent, validate_tool_pairs};
use hermes_llm::{OpenAiChatClient, OpenAiChatConfig};
use hermes_protocol::{AgentEvent, TurnOutcome};
use hermes_testkit::{MockProvider, MockResponse};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Keeps the paused clock still while it lives (see the module doc). If a test hangs, the
/// hold lets go after two minutes of real time, the clock runs on, and the test's own
/// (paused-time) timeouts fail it instead of hanging forever.
struct ClockHold {
    _release: std::sync::mpsc::Sender<()>,
}

fn hold_clock() -> ClockHold {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    tokio::task::spawn_blocking(move || {
        let _ = rx.recv_timeout(std::time::Duration::from_secs(120));
    });
    ClockHold { _release: tx }
}

fn error(status: u16, headers: &[(&str, &str)], message: &str) -> MockResponse {
    let mut h = vec![("content-type".to_string(), "application/json".to_string())];
    h.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    MockResponse::from_bytes(
        status,
        h,
        format!(r#"{{"error":{{"message":"{message}"}}}}"#),
    )
}

/// A turn running in its own task: its events, its interrupt token and the agent back at
/// the end.
struct RunningTurn {
    events: UnboundedReceiver<AgentEvent>,
    cancel: CancellationToken,
    task: JoinHandle<(Agent, TurnOutcome)>,
}

fn start_turn(mut agent: Agent, input: &str) -> RunningTurn {
    let (tx, events) = unbounded_channel();
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    let input = input.to_string();
    let task = tokio::spawn(async move {
        let outcome = agent.run_turn(&input, &tx, token).await;
        (agent, outcome)
    });
    RunningTurn {
        events,
        cancel,
        task,
    }
}

impl RunningTurn {
    /// The next status line of the turn.
    async fn next_status(&mut self) -> String {
        loop {
            let event = tokio::time::timeout(Duration::from_secs(86_400), self.events.recv())
                .await
                .expect("no status line (hang)")
                .expect("the turn ended without the expected status line");
            if let AgentEvent::Status { message } = event {
                return message;
            }
        }
    }

    async fn finish(self) -> (Agent, TurnOutcome, Vec<AgentEvent>) {
        let (agent, outcome) = tokio::time::timeout(Duration::from_secs(86_400), self.task)
            .await
            .expect("turn hung")
            .unwrap();
        let mut rest = self.events;
        let mut events = Vec::new();
        while let Ok(e) = rest.try_recv() {
            events.push(e);
        }
        (agent, outcome, events)
    }
}

/// A harness with the production backoff (2 s base, 60 s cap).
async fn harness() -> Harness {
    let mut h = Harness::new().await;
    h.opts.retry_base = Duration::from_secs(2);
    h.opts.retry_max = Duration::from_secs(60);
    h
}

/// Lets the agent task run (and, were the clock moving, issue a request) without moving time.
async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

/// The whole seconds of "…, retrying in N s (k/m)".
fn announced_wait(status: &str) -> u64 {
    let after = status.split("retrying in ").nth(1).expect(status);
    after.split(' ').next().unwrap().parse().expect(status)
}

#[tokio::test(start_paused = true)]
async fn rate_limited_with_retry_after_2_then_success() {
    let _hold = hold_clock();
    let h = harness().await;
    let agent = h.agent().await;
    h.mock.push(error(
        429,
        &[("retry-after", "2")],
        "Rate limit reached for requests",
    ));
    h.mock.push(MockResponse::text("answered after the wait"));
    let start = Instant::now();
    let mut turn = start_turn(agent, "hello");
    let status = turn.next_status().await;
    assert_eq!(status, "rate limited, retrying in 2 s (1/3)");

    // The retry waits for the provider's 2 s, not for the 2 s backoff plus jitter.
    tokio::time::advance(Duration::from_millis(1_900)).await;
    settle().await;
    assert_eq!(h.mock.requests().len(), 1, "no retry before Retry-After");
    tokio::time::advance(Duration::from_millis(100)).await;
    let (agent, outcome, events) = turn.finish().await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(common::final_text(&events), "answered after the wait");
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(2),
        "slept 2 s of paused time"
    );
    assert_eq!(h.checked_requests().len(), 2);
    let stored = h.store.load_messages(agent.session_id()).unwrap();
    assert_eq!(stored.len(), 2, "user message and the one answer");
}

#[tokio::test(start_paused = true)]
async fn three_overloaded_529s_then_success() {
    let _hold = hold_clock();
    let h = harness().await;
    let agent = h.agent().await;
    for _ in 0..3 {
        h.mock.push(error(529, &[], "Overloaded"));
    }
    h.mock.push(MockResponse::text("finally"));
    let start = Instant::now();
    let mut turn = start_turn(agent, "hello");
    let mut slept = 0;
    // Backoff 2 s·2^(k−1) plus up to 50 % jitter, announced rounded up.
    for (k, (low, high)) in [(2, 3), (4, 6), (8, 12)].into_iter().enumerate() {
        let status = turn.next_status().await;
        let wait = announced_wait(&status);
        assert_eq!(
            status,
            format!("provider overloaded, retrying in {wait} s ({}/3)", k + 1)
        );
        assert!((low..=high).contains(&wait), "{status}");
        settle().await;
        assert_eq!(
            h.mock.requests().len(),
            k + 1,
            "no retry before the backoff"
        );
        tokio::time::advance(Duration::from_secs(wait)).await;
        slept += wait;
    }
    let (_, outcome, events) = turn.finish().await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(common::final_text(&events), "finally");
    assert_eq!(start.elapsed(), Duration::from_secs(slept));
    assert_eq!(h.checked_requests().len(), 4);
}

#[tokio::test(start_paused = true)]
async fn interrupt_during_a_backoff_sleep_ends_the_turn_at_once() {
    let _hold = hold_clock();
    let h = harness().await;
    let agent = h.agent().await;
    h.mock
        .push(error(429, &[("retry-after", "600")], "Slow down"));
    let start = Instant::now();
    let mut turn = start_turn(agent, "hello");
    let status = turn.next_status().await;
    assert_eq!(status, "rate limited, retrying in 600 s (1/3)");
    turn.cancel.cancel();
    let (mut agent, outcome, events) = turn.finish().await;
    assert_eq!(outcome, TurnOutcome::Interrupted);
    assert_eq!(common::final_text(&events), "Interrupted.");
    assert_eq!(
        start.elapsed(),
        Duration::ZERO,
        "the 600 s sleep was not waited out"
    );
    assert_eq!(h.mock.requests().len(), 1, "no retry after the interrupt");
    let stored: Vec<_> = h
        .store
        .load_messages(agent.session_id())
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    assert_eq!(stored.len(), 1, "the user message is kept");
    validate_tool_pairs(&stored).unwrap();

    // The session goes on.
    h.mock.push(MockResponse::text("here now"));
    let (outcome, _) = h.turn(&mut agent, "again").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    h.checked_requests();
}

#[tokio::test(start_paused = true)]
async fn rate_limit_fallback_skips_the_primary_until_its_reset_time() {
    let _hold = hold_clock();
    let mut h = harness().await;
    h.opts.api_max_retries = 0;
    let backup = MockProvider::start().await;
    let backup_client =
        OpenAiChatClient::new(OpenAiChatConfig::new(backup.base_url(), "backup-model")).unwrap();
    let mut agent = h.agent().await;
    agent.set_fallbacks(vec![Arc::new(backup_client)]);

    h.mock
        .push(error(429, &[("retry-after", "120")], "Rate limit reached"));
    backup.push(MockResponse::text("backup 1"));
    let (outcome, events) = h.turn(&mut agent, "one").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(common::final_text(&events), "backup 1");

    // Within the provider's 120 s the next turn starts on the fallback and says why.
    tokio::time::advance(Duration::from_secs(60)).await;
    backup.push(MockResponse::text("backup 2"));
    let (outcome, events) = h.turn(&mut agent, "two").await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(common::final_text(&events), "backup 2");
    assert_eq!(h.mock.requests().len(), 1, "the primary was skipped");
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::Status { message } if message.contains("cooling down for 60 s more"))));

    // After the reset time the primary answers again.
    tokio::time::advance(Duration::from_secs(61)).await;
    h.mock.push(MockResponse::text("primary again"));
    let (_, events) = h.turn(&mut agent, "three").await;
    assert_eq!(common::final_text(&events), "primary again");
    assert_eq!(backup.requests().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_404_fallback_sets_no_cooldown() {
    let _hold = hold_clock();
    let h = harness().await;
    let backup = MockProvider::start().await;
    let backup_client =
        OpenAiChatClient::new(OpenAiChatConfig::new(backup.base_url(), "backup-model")).unwrap();
    let mut agent = h.agent().await;
    agent.set_fallbacks(vec![Arc::new(backup_client)]);
    h.mock
        .push(error(404, &[], "The model `mock-model` does not exist"));
    backup.push(MockResponse::text("backup"));
    h.turn(&mut agent, "one").await;
    h.mock.push(MockResponse::text("primary"));
    let (_, events) = h.turn(&mut agent, "two").await;
    assert_eq!(common::final_text(&events), "primary");
}

#[tokio::test(start_paused = true)]
async fn set_client_switches_the_model_for_the_following_turns() {
    let _hold = hold_clock();
    let h = harness().await;
    let other = MockProvider::start().await;
    let mut agent = h.agent().await;
    h.mock.push(MockResponse::text("from the first model"));
    h.turn(&mut agent, "one").await;
    agent.set_client(Arc::new(
        OpenAiChatClient::new(OpenAiChatConfig::new(other.base_url(), "other-model")).unwrap(),
    ));
    other.push(MockResponse::text("from the second model"));
    let (_, events) = h.turn(&mut agent, "two").await;
    assert_eq!(common::final_text(&events), "from the second model");
    let request = &other.requests()[0];
    assert_eq!(request["model"], "other-model");
    // The conversation goes on: the earlier turn is in the request.
    assert_eq!(
        common::roles(request),
        ["system", "user", "assistant", "user"]
    );
    assert_eq!(h.mock.requests().len(), 1);
}
