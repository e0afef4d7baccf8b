//! An interrupt that lands at the same moment as a stream error ends the turn as
//! `Interrupted`, never as `Failed` (a cancelled request usually surfaces as a transport
//! error; front ends such as the API server must see the interrupt they asked for).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::Harness;
use hermes_agent::Agent;
use hermes_llm::{ChatRequest, ErrorClass, EventStream, LlmError, ModelClient};
use hermes_protocol::TurnOutcome;
use tokio_util::sync::CancellationToken;

/// A model whose call fires the turn's cancel token and then fails at once, so both the
/// interrupt and the error are ready when the turn loop looks.
struct CancelThenFail {
    cancel: std::sync::Mutex<CancellationToken>,
}

#[async_trait::async_trait]
impl ModelClient for CancelThenFail {
    async fn stream(&self, _request: &ChatRequest) -> Result<EventStream, LlmError> {
        self.cancel.lock().unwrap().cancel();
        let err = LlmError {
            class: ErrorClass::AuthPermanent,
            status: None,
            message: "connection reset by peer".to_string(),
            retry_after: None,
        };
        Ok(Box::pin(futures::stream::iter([Err(err)])))
    }

    fn provider(&self) -> &str {
        "test"
    }

    fn model(&self) -> &str {
        "cancel-then-fail"
    }
}

#[tokio::test]
async fn interrupt_beats_a_simultaneous_stream_error() {
    let h = Harness::new().await;
    let client = Arc::new(CancelThenFail {
        cancel: std::sync::Mutex::new(CancellationToken::new()),
    });
    let mut deps = h.deps.clone();
    deps.client = client.clone();
    let mut agent = Agent::start(deps, h.opts.clone(), None).await.unwrap();
    // Unordered selection would pick the error about half the time; 24 turns make a
    // regression all but certain to show.
    for round in 0..24 {
        let token = CancellationToken::new();
        *client.cancel.lock().unwrap() = token.clone();
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let outcome = agent.run_turn("hello", &tx, token).await;
        assert_eq!(outcome, TurnOutcome::Interrupted, "round {round}");
    }
}
