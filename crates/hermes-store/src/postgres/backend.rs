//! [`SessionBackend`] for [`PgStore`]: each method copies its arguments and runs the async
//! operation of `Db` on the store's runtime ([`PgStore::run`]).

use std::time::Duration;

use chrono::{DateTime, Utc};
use hermes_protocol::Message;

use super::PgStore;
use super::messages::OwnedUsage;
use crate::backend::{Provider, SessionBackend};
use crate::claims::ClaimRecord;
use crate::cron_runs::CronRun;
use crate::documents::Document;
use crate::error::StoreError;
use crate::leases::{Lease, LeaseAttempt};
use crate::maintenance::{SchemaReport, SearchIndexReport};
use crate::messages::{UsageRecord, encode};
use crate::types::{
    ModelUsage, NewSession, SearchHit, SearchQuery, SessionRecord, StoreStats, StoredMessage,
};

fn owned_usage(u: &UsageRecord<'_>) -> OwnedUsage {
    OwnedUsage {
        model: u.model.to_string(),
        provider: u.provider.to_string(),
        base_url: u.base_url.to_string(),
        usage: *u.usage,
        cost_usd: u.cost_usd,
    }
}

fn tokens(t: Option<u64>) -> Option<i64> {
    t.map(|t| i64::try_from(t).unwrap_or(i64::MAX))
}

impl SessionBackend for PgStore {
    fn provider(&self) -> Provider {
        Provider::Postgresql
    }

    fn location(&self) -> String {
        self.db.location.clone()
    }

    fn set_retry_budget(&self, budget: Duration) {
        self.db.set_retry_budget(budget);
    }

    fn create_session(&self, new: &NewSession) -> Result<(), StoreError> {
        let new = new.clone();
        self.run(move |db| async move { db.create_session(&new).await })
    }

    fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let id = id.to_string();
        self.run(move |db| async move { db.get_session(&id).await })
    }

    fn find_session(&self, key: &str) -> Result<Option<SessionRecord>, StoreError> {
        let key = key.to_string();
        self.run(move |db| async move { db.find_session(&key).await })
    }

    fn latest_session(&self, source: Option<&str>) -> Result<Option<SessionRecord>, StoreError> {
        let source = source.map(str::to_string);
        self.run(move |db| async move { db.latest_session(source.as_deref()).await })
    }

    fn list_sessions(&self, limit: usize, offset: usize) -> Result<Vec<SessionRecord>, StoreError> {
        self.run(move |db| async move { db.list_sessions(limit, offset).await })
    }

    fn set_title(&self, id: &str, title: &str) -> Result<(), StoreError> {
        let (id, title) = (id.to_string(), title.to_string());
        self.run(move |db| async move { db.set_title(&id, &title).await })
    }

    fn set_title_numbered(&self, id: &str, title: &str) -> Result<String, StoreError> {
        let (id, title) = (id.to_string(), title.to_string());
        self.run(move |db| async move { db.set_title_numbered(&id, &title).await })
    }

    fn set_archived(&self, id: &str, archived: bool) -> Result<(), StoreError> {
        let id = id.to_string();
        self.run(move |db| async move { db.set_archived(&id, archived).await })
    }

    fn end_session(&self, id: &str, reason: &str) -> Result<(), StoreError> {
        let (id, reason) = (id.to_string(), reason.to_string());
        self.run(move |db| async move { db.end_session(&id, &reason).await })
    }

    fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.run(move |db| async move { db.delete_session(&id).await })
    }

    fn prune_sessions(&self, cutoff: DateTime<Utc>) -> Result<usize, StoreError> {
        self.run(move |db| async move { db.prune_sessions(cutoff).await })
    }

    fn latest_session_for_key(
        &self,
        session_key: &str,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let key = session_key.to_string();
        self.run(move |db| async move { db.latest_session_for_key(&key).await })
    }

    fn count_session_keys(&self) -> Result<u64, StoreError> {
        self.run(move |db| async move { db.count_session_keys().await })
    }

    fn last_activity(&self, session_id: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        let id = session_id.to_string();
        self.run(move |db| async move { db.last_activity(&id).await })
    }

    fn set_system_prompt(&self, id: &str, prompt: &str) -> Result<(), StoreError> {
        let (id, prompt) = (id.to_string(), prompt.to_string());
        self.run(move |db| async move { db.set_system_prompt(&id, &prompt).await })
    }

    fn child_sessions(&self, parent_id: &str) -> Result<Vec<SessionRecord>, StoreError> {
        let id = parent_id.to_string();
        self.run(move |db| async move { db.child_sessions(&id).await })
    }

    fn subagent_parent(&self, id: &str) -> Result<Option<String>, StoreError> {
        let id = id.to_string();
        self.run(move |db| async move { db.subagent_parent(&id).await })
    }

    fn set_model_choice(
        &self,
        id: &str,
        model: &str,
        provider: &str,
        choice: Option<&str>,
    ) -> Result<(), StoreError> {
        let (id, model, provider) = (id.to_string(), model.to_string(), provider.to_string());
        let choice = choice.map(str::to_string);
        self.run(move |db| async move {
            db.set_model_choice(&id, &model, &provider, choice.as_deref())
                .await
        })
    }

    fn model_choice(&self, id: &str) -> Result<Option<String>, StoreError> {
        let id = id.to_string();
        self.run(move |db| async move { db.model_choice(&id).await })
    }

    fn route_session(&self, session_key: &str) -> Result<Option<String>, StoreError> {
        let key = session_key.to_string();
        self.run(move |db| async move { db.route_session(&key).await })
    }

    fn record_gateway_peer(
        &self,
        session_id: &str,
        peer: &crate::GatewayPeer,
    ) -> Result<bool, StoreError> {
        let (id, peer) = (session_id.to_string(), peer.clone());
        self.run(move |db| async move { db.record_gateway_peer(&id, &peer).await })
    }

    fn gateway_peer(&self, session_id: &str) -> Result<Option<crate::GatewayPeer>, StoreError> {
        let id = session_id.to_string();
        self.run(move |db| async move { db.gateway_peer(&id).await })
    }

    fn append_message(
        &self,
        session_id: &str,
        message: &Message,
        token_count: Option<u64>,
    ) -> Result<i64, StoreError> {
        let enc = encode(message)?;
        let (id, message, tokens) = (session_id.to_string(), message.clone(), tokens(token_count));
        self.run(
            move |db| async move { db.append_message(&id, &message, &enc, tokens, None).await },
        )
    }

    fn append_message_checked(
        &self,
        session_id: &str,
        message: &Message,
        token_count: Option<u64>,
        expected_version: u64,
    ) -> Result<i64, StoreError> {
        let enc = encode(message)?;
        let (id, message, tokens) = (session_id.to_string(), message.clone(), tokens(token_count));
        self.run(move |db| async move {
            db.append_message(&id, &message, &enc, tokens, Some(expected_version))
                .await
        })
    }

    fn append_message_with_usage_checked(
        &self,
        session_id: &str,
        message: &Message,
        usage: &UsageRecord<'_>,
        expected_version: u64,
    ) -> Result<i64, StoreError> {
        self.append_message_traced(session_id, message, None, Some(usage), expected_version)
    }

    fn append_message_traced(
        &self,
        session_id: &str,
        message: &Message,
        trace_id: Option<&str>,
        usage: Option<&UsageRecord<'_>>,
        expected_version: u64,
    ) -> Result<i64, StoreError> {
        let enc = encode(message)?.traced(trace_id);
        let (id, message, usage) = (
            session_id.to_string(),
            message.clone(),
            usage.map(owned_usage),
        );
        self.run(move |db| async move {
            match &usage {
                Some(usage) => {
                    db.append_message_with_usage_checked(
                        &id,
                        &message,
                        &enc,
                        usage,
                        expected_version,
                    )
                    .await
                }
                None => {
                    db.append_message(&id, &message, &enc, None, Some(expected_version))
                        .await
                }
            }
        })
    }

    fn load_messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        let id = session_id.to_string();
        self.run(move |db| async move { db.load_messages(&id, true).await })
    }

    fn load_all_messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        let id = session_id.to_string();
        self.run(move |db| async move { db.load_messages(&id, false).await })
    }

    fn load_all_messages_tolerant(
        &self,
        session_id: &str,
    ) -> Result<Vec<Result<StoredMessage, StoreError>>, StoreError> {
        let id = session_id.to_string();
        let rows = self.run(move |db| async move { db.load_rows(&id, false).await })?;
        Ok(rows.into_iter().filter_map(Result::transpose).collect())
    }

    fn deactivate_messages_from(
        &self,
        session_id: &str,
        message_id: i64,
    ) -> Result<usize, StoreError> {
        let id = session_id.to_string();
        self.run(move |db| async move { db.deactivate_messages(&id, message_id, None).await })
            .map(|(changed, _)| changed)
    }

    fn deactivate_messages_checked(
        &self,
        session_id: &str,
        message_id: i64,
        expected_version: u64,
    ) -> Result<u64, StoreError> {
        let id = session_id.to_string();
        self.run(move |db| async move {
            db.deactivate_messages(&id, message_id, Some(expected_version))
                .await
        })
        .map(|(_, version)| version)
    }

    fn replace_active_from(
        &self,
        session_id: &str,
        from_id: Option<i64>,
        replacement: &[Message],
    ) -> Result<Vec<i64>, StoreError> {
        let rows = encoded(replacement)?;
        let id = session_id.to_string();
        self.run(move |db| async move { db.replace_active(&id, from_id, &rows, None).await })
            .map(|(ids, _)| ids)
    }

    fn replace_active_checked(
        &self,
        session_id: &str,
        from_id: Option<i64>,
        replacement: &[Message],
        expected_version: u64,
    ) -> Result<(Vec<i64>, u64), StoreError> {
        self.replace_active_traced(session_id, from_id, replacement, &[], expected_version)
    }

    fn replace_active_traced(
        &self,
        session_id: &str,
        from_id: Option<i64>,
        replacement: &[Message],
        trace_ids: &[Option<String>],
        expected_version: u64,
    ) -> Result<(Vec<i64>, u64), StoreError> {
        let rows: Vec<_> = replacement
            .iter()
            .cloned()
            .zip(crate::messages::encode_traced(replacement, trace_ids)?)
            .collect();
        let id = session_id.to_string();
        self.run(move |db| async move {
            db.replace_active(&id, from_id, &rows, Some(expected_version))
                .await
        })
    }

    fn add_usage(&self, session_id: &str, usage: &UsageRecord<'_>) -> Result<(), StoreError> {
        let id = session_id.to_string();
        let usage = owned_usage(usage);
        self.run(move |db| async move { db.add_usage(&id, &usage).await })
    }

    fn usage_by_model(&self, session_id: &str) -> Result<Vec<ModelUsage>, StoreError> {
        let id = session_id.to_string();
        self.run(move |db| async move { db.usage_by_model(&id).await })
    }

    fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>, StoreError> {
        let query = query.clone();
        self.run(move |db| async move { db.search(&query).await })
    }

    fn record_cron_runs(&self, runs: &[CronRun]) -> Result<usize, StoreError> {
        let runs = runs.to_vec();
        self.run(move |db| async move { db.record_cron_runs(&runs).await })
    }

    fn cron_runs(&self, job_id: Option<&str>, limit: usize) -> Result<Vec<CronRun>, StoreError> {
        let job = job_id.map(str::to_string);
        self.run(move |db| async move { db.cron_runs(job.as_deref(), limit).await })
    }

    fn latest_cron_runs(&self) -> Result<Vec<CronRun>, StoreError> {
        self.run(move |db| async move { db.latest_cron_runs().await })
    }

    fn acquire_lease(
        &self,
        session_id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<LeaseAttempt, StoreError> {
        let (id, holder) = (session_id.to_string(), holder.to_string());
        self.run(move |db| async move { db.acquire_lease(&id, &holder, ttl).await })
    }

    fn renew_lease(&self, lease: &mut Lease, ttl: Duration) -> Result<bool, StoreError> {
        let held = lease.clone();
        let renewed = self.run(move |db| async move { db.renew_lease(&held, ttl).await })?;
        if let Some(expires_at) = renewed {
            lease.expires_at = expires_at;
        }
        Ok(renewed.is_some())
    }

    fn release_lease(&self, lease: &Lease) -> Result<bool, StoreError> {
        let lease = lease.clone();
        self.run(move |db| async move { db.release_lease(&lease).await })
    }

    fn break_lease(&self, session_id: &str) -> Result<bool, StoreError> {
        let id = session_id.to_string();
        self.run(move |db| async move { db.break_lease(&id).await })
    }

    fn leases(&self, prefix: &str) -> Result<Vec<Lease>, StoreError> {
        let prefix = prefix.to_string();
        self.run(move |db| async move { db.leases(&prefix).await })
    }

    fn claim(
        &self,
        scope: &str,
        key: &str,
        holder: &str,
        payload: Option<&str>,
    ) -> Result<bool, StoreError> {
        let (scope, key, holder) = (scope.to_string(), key.to_string(), holder.to_string());
        let payload = payload.map(str::to_string);
        self.run(move |db| async move { db.claim(&scope, &key, &holder, payload.as_deref()).await })
    }

    fn finish_claim(&self, scope: &str, key: &str) -> Result<bool, StoreError> {
        let (scope, key) = (scope.to_string(), key.to_string());
        self.run(move |db| async move { db.finish_claim(&scope, &key).await })
    }

    fn release_claim(&self, scope: &str, key: &str, holder: &str) -> Result<bool, StoreError> {
        let (scope, key, holder) = (scope.to_string(), key.to_string(), holder.to_string());
        self.run(move |db| async move { db.release_claim(&scope, &key, &holder).await })
    }

    fn open_claims(&self, scope: &str, limit: usize) -> Result<Vec<ClaimRecord>, StoreError> {
        let scope = scope.to_string();
        self.run(move |db| async move { db.open_claims(&scope, limit).await })
    }

    fn get_claim(&self, scope: &str, key: &str) -> Result<Option<ClaimRecord>, StoreError> {
        let (scope, key) = (scope.to_string(), key.to_string());
        self.run(move |db| async move { db.get_claim(&scope, &key).await })
    }

    fn adopt_claim(
        &self,
        scope: &str,
        key: &str,
        from: &str,
        to: &str,
    ) -> Result<bool, StoreError> {
        let (scope, key, from, to) = (
            scope.to_string(),
            key.to_string(),
            from.to_string(),
            to.to_string(),
        );
        self.run(move |db| async move { db.adopt_claim(&scope, &key, &from, &to).await })
    }

    fn prune_claims(&self, before: f64) -> Result<usize, StoreError> {
        self.run(move |db| async move { db.prune_claims(before).await })
    }

    fn document(&self, scope: &str, name: &str) -> Result<Option<Document>, StoreError> {
        let (scope, name) = (scope.to_string(), name.to_string());
        self.run(move |db| async move { db.document(&scope, &name).await })
    }

    fn put_document(
        &self,
        scope: &str,
        name: &str,
        body: &str,
        expected: Option<i64>,
    ) -> Result<bool, StoreError> {
        let (scope, name, body) = (scope.to_string(), name.to_string(), body.to_string());
        self.run(move |db| async move { db.put_document(&scope, &name, &body, expected).await })
    }

    fn stats(&self) -> Result<StoreStats, StoreError> {
        self.run(move |db| async move { db.stats().await })
    }

    fn schema_version(&self) -> Result<i64, StoreError> {
        self.run(move |db| async move { db.schema_version().await })
    }

    fn schema_check(&self) -> Result<SchemaReport, StoreError> {
        self.run(move |db| async move { db.schema_check().await })
    }

    fn integrity_check(&self) -> Result<String, StoreError> {
        self.run(move |db| async move { db.integrity_check().await })
    }

    fn journal_mode(&self) -> Result<String, StoreError> {
        // PostgreSQL always writes ahead; there is no mode to report.
        Ok("wal".to_string())
    }

    fn search_index_check(&self) -> Result<SearchIndexReport, StoreError> {
        self.run(move |db| async move { db.search_index_check().await })
    }

    fn rebuild_search_index(&self) -> Result<u64, StoreError> {
        self.run(move |db| async move { db.rebuild_search_index().await })
    }

    fn write_probe(&self) -> Result<(), StoreError> {
        self.run(move |db| async move { db.write_probe().await })
    }

    fn release_memory(&self) -> Result<(), StoreError> {
        // The server owns the caches; the client holds only its pooled connections.
        Ok(())
    }
}

fn encoded(messages: &[Message]) -> Result<Vec<(Message, crate::messages::Encoded)>, StoreError> {
    messages
        .iter()
        .map(|m| Ok((m.clone(), encode(m)?)))
        .collect()
}
