//! Which model client a turn starts on: the primary (`deps.client`), replaced by `/model`
//! through [`Agent::set_client`], unless it is cooling down after a rate-limit or billing
//! fallback, in which case the turn starts on the first fallback provider (issue 3 item 7:
//! fallback is turn-scoped, "with a cooldown after rate-limit/billing fallbacks").

use std::sync::Arc;
use std::time::Duration;

use hermes_llm::{ErrorClass, LlmError, ModelClient};
use hermes_protocol::AgentEvent;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;

use crate::agent::Agent;

/// How long the primary is skipped after a rate-limit or billing fallback when the provider
/// did not say when its limit resets: one hour, the credential cooldown of FEATURES §2 for
/// 429/402 applied to the whole provider.
pub const PRIMARY_COOLDOWN: Duration = Duration::from_secs(3600);

impl Agent {
    /// Replaces the primary model client for the following turns (`/model`): the next turn
    /// starts on `client`; a cooldown of the previous primary is forgotten. The stored system
    /// prompt of the session is kept, so the cached prompt prefix stays the same.
    pub fn set_client(&mut self, client: Arc<dyn ModelClient>) {
        self.deps.client = client.clone();
        self.active = client;
        self.primary_cooldown = None;
    }

    /// Sets up the clients of a new turn: the primary first (with its spare keys), unless it
    /// is cooling down and a fallback exists — then the first fallback, with a status line.
    pub(crate) fn start_turn_clients(&mut self, events: &UnboundedSender<AgentEvent>) {
        self.active = self.deps.client.clone();
        self.recovery
            .reset_turn(self.deps.client.spare_credentials());
        let Some(until) = self.primary_cooldown else {
            return;
        };
        let now = Instant::now();
        if now >= until {
            self.primary_cooldown = None;
            return;
        }
        let Some(first) = self.fallbacks.first().cloned() else {
            return;
        };
        let left = until.duration_since(now).as_secs_f64().ceil() as u64;
        let _ = events.send(AgentEvent::Status {
            message: format!(
                "{} / {} is cooling down for {left} s more after a rate limit or billing \
                 error; using {} / {} for this turn",
                self.deps.client.provider(),
                self.deps.client.model(),
                first.provider(),
                first.model()
            ),
        });
        self.recovery.turn.next_fallback = 1;
        self.recovery.spare_credentials = first.spare_credentials();
        self.active = first;
    }

    /// Called when the turn leaves the client that failed with `error` for a fallback: when
    /// that client is the primary and the error is a rate limit or a billing failure, the
    /// primary is skipped until the provider's reset time (`Retry-After`) or for
    /// [`PRIMARY_COOLDOWN`].
    pub(crate) fn note_fallback_from(&mut self, error: &LlmError) {
        if !Arc::ptr_eq(&self.active, &self.deps.client) {
            return;
        }
        if matches!(error.class, ErrorClass::RateLimit | ErrorClass::Billing) {
            let wait = error.retry_after.unwrap_or(PRIMARY_COOLDOWN);
            self.primary_cooldown = Some(Instant::now() + wait);
        }
    }
}
