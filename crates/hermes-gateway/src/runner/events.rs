//! Lifecycle hooks fired by the gateway (FEATURES §12; issue 7 part 8): `gateway:startup`,
//! `session:end` and `session:reset` when the gateway ends a session (`/new`, `/reset`, the
//! reset policy), and `command:<name>` for every chat command. `session:start` and the
//! `agent:*` events come from the agents themselves (their options carry the same hooks).
//! Firing never waits for a hook.

use hermes_agent::{HookEvent, Hooks};
use serde_json::{Value, json};

use super::{Inner, lock};

impl Inner {
    fn hooks(&self) -> Hooks {
        lock(&self.hooks).clone()
    }

    /// Fires `event` for `platform`/`session_id` with `data` (a JSON object).
    pub(crate) fn fire(
        &self,
        event: &str,
        platform: Option<&str>,
        session_id: Option<&str>,
        data: Value,
    ) {
        let hooks = self.hooks();
        if hooks.is_empty() {
            return;
        }
        let _detached = hooks.fire(&HookEvent {
            event: event.to_string(),
            session_id: session_id.map(str::to_string),
            platform: platform.map(str::to_string),
            data,
        });
    }

    /// `session:end` for `old` then `session:reset` from `old` to `new`, with `reason`
    /// (`user_reset`, `idle`, `daily`).
    pub(crate) fn fire_reset(&self, platform: &str, key: &str, old: &str, new: &str, reason: &str) {
        // The old session ended; the key's agent goes on with a created one.
        let metrics = hermes_telemetry::metrics();
        metrics.session_transition(hermes_telemetry::SessionLifecycle::Ended);
        metrics.session_transition(hermes_telemetry::SessionLifecycle::Created);
        self.fire(
            "session:end",
            Some(platform),
            Some(old),
            json!({ "session_key": key, "reason": reason }),
        );
        self.fire(
            "session:reset",
            Some(platform),
            Some(new),
            json!({ "session_key": key, "previous_session_id": old, "reason": reason }),
        );
    }
}
