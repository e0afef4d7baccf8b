//! `/model` in a chat (issue 7 item 6; FEATURES §1 CLI `/model`, the REPL's behaviour):
//! without words it names the session's provider and model; `/model [PROVIDER] MODEL` switches
//! that chat's session for the following turns.
//!
//! The words are parsed at once ([`check`]: a malformed command or an unknown provider is
//! answered without touching anything); the switch itself runs in the session's queue after
//! the running turn, never interrupting it ([`switch`]): the factory resolves and connects the
//! model ([`crate::AgentFactory::model_client`]), the choice is written to the session's row
//! in the store (`SessionStore::set_model_choice`, JSON of [`ModelChoice`]), and only then the
//! agent changes client. An agent rebuilt after an LRU eviction or a restart gets the stored
//! choice back ([`stored_choice`] → [`crate::AgentSpec::model`]); a fresh session started by
//! `/new` or a reset keeps it ([`carry`]).

use hermes_llm::{ModelChoice, parse_choice};

use super::Inner;
use crate::routing::CachedAgent;

/// How the command is used, appended to answers.
const USAGE: &str = "Switch with /model MODEL or /model PROVIDER MODEL.";

/// Parses the words of `/model WORDS`; `Err` is the chat reply (what is wrong, what works).
pub(crate) fn check(words: &str) -> Result<ModelChoice, String> {
    parse_choice(words).map_err(|e| format!("/model: {e}"))
}

/// `/model` without words: the provider and model of the session `key` routes to, and
/// whether they were picked with `/model`.
pub(crate) async fn describe(inner: &Inner, key: &str) -> String {
    let store = inner.store.clone();
    let k = key.to_string();
    let found = tokio::task::spawn_blocking(move || {
        let record = store.latest_session_for_key(&k)?;
        let choice = match &record {
            Some(r) => store.model_choice(&r.id)?,
            None => None,
        };
        Ok::<_, hermes_store::StoreError>(record.map(|r| (r, choice)))
    })
    .await;
    match found {
        Ok(Ok(Some((record, choice)))) => format!(
            "Model: {} ({}), {}. {USAGE}",
            record.model,
            record.provider,
            if choice.is_some() {
                "picked with /model for this chat"
            } else {
                "as configured"
            }
        ),
        Ok(Ok(None)) => {
            format!("No session yet in this chat; it will use the configured model. {USAGE}")
        }
        Ok(Err(e)) => format!("Could not read the session: {e}"),
        Err(e) => format!("Could not read the session: {e}"),
    }
}

/// The choice stored for `session_id`, when there is one that still parses (a damaged value
/// is logged and ignored: the configured model is used).
pub(crate) async fn stored_choice(inner: &Inner, session_id: &str) -> Option<ModelChoice> {
    let store = inner.store.clone();
    let sid = session_id.to_string();
    let text = tokio::task::spawn_blocking(move || store.model_choice(&sid))
        .await
        .ok()?
        .map_err(
            |e| tracing::warn!(session = session_id, error = %e, "could not read the model choice"),
        )
        .ok()??;
    serde_json::from_str(&text)
        .map_err(|e| {
            tracing::warn!(session = session_id, error = %e, "ignoring a damaged model choice");
        })
        .ok()
}

/// `/model WORDS` for the checked-out agent: resolves and connects the model, records the
/// choice with the session, then switches the agent. Returns the chat reply; on any failure
/// the session, the store and the agent stay as they were.
pub(crate) async fn switch(inner: &Inner, cached: &mut CachedAgent, words: &str) -> String {
    let typed = match check(words) {
        Ok(c) => c,
        Err(reply) => return reply,
    };
    // A model alone stays on the provider picked earlier in this chat.
    let choice = ModelChoice {
        provider: typed.provider.or_else(|| {
            cached
                .model_choice
                .as_ref()
                .and_then(|c| c.provider.clone())
        }),
        model: typed.model,
    };
    let client = match inner.factory.model_client(&choice).await {
        Ok(client) => client,
        Err(e) => {
            let current = cached.agent.client();
            return format!(
                "/model: {e}. Still using {} ({}).",
                current.model(),
                current.provider()
            );
        }
    };
    let json = match serde_json::to_string(&choice) {
        Ok(j) => j,
        Err(e) => return format!("/model: could not record the choice: {e}"),
    };
    let store = inner.store.clone();
    let sid = cached.agent.session_id().to_string();
    let (model, provider) = (client.model().to_string(), client.provider().to_string());
    let (m, p) = (model.clone(), provider.clone());
    let saved =
        tokio::task::spawn_blocking(move || store.set_model_choice(&sid, &m, &p, Some(&json)))
            .await;
    match saved {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return format!("/model: could not record the choice: {e}"),
        Err(e) => return format!("/model: could not record the choice: {e}"),
    }
    cached.agent.set_client(client);
    cached.model_choice = Some(choice);
    format!("Switched to {model} ({provider}) for this chat.")
}

/// Records the agent's choice on the session it runs now (after `/new` or a reset started a
/// fresh one), so the new session keeps the chat's model after an eviction or a restart.
pub(crate) async fn carry(inner: &Inner, cached: &CachedAgent) {
    let Some(choice) = &cached.model_choice else {
        return;
    };
    let Ok(json) = serde_json::to_string(choice) else {
        return;
    };
    let store = inner.store.clone();
    let sid = cached.agent.session_id().to_string();
    let client = cached.agent.client();
    let (m, p) = (client.model().to_string(), client.provider().to_string());
    let saved =
        tokio::task::spawn_blocking(move || store.set_model_choice(&sid, &m, &p, Some(&json)))
            .await;
    if !matches!(saved, Ok(Ok(()))) {
        tracing::warn!(
            session = cached.agent.session_id(),
            "could not record the model choice on the new session"
        );
    }
}
