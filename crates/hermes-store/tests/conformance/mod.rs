//! The conformance suite of the session store: the definition of the behaviour every
//! implementation of `SessionBackend` must have. Each test is a function taking a [`Db`]
//! (one empty database; [`Db::open`] opens another handle on it, as another process would);
//! `conformance_sqlite.rs` runs them all on SQLite, `conformance_postgres.rs` on PostgreSQL
//! when `HERMES_TEST_PG_DSN` is set (`.ci/run` starts a server and sets it).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, dead_code)]

pub mod history;
pub mod records;
pub mod replicas;
pub mod search;
pub mod sessions;
pub mod subagents;

use hermes_store::SessionStore;

/// One empty database of one implementation.
pub struct Db {
    open: Box<dyn Fn() -> SessionStore>,
    sql: Box<dyn Fn(&str)>,
    _dir: Option<tempfile::TempDir>,
}

impl Db {
    /// A new handle on this database.
    pub fn open(&self) -> SessionStore {
        (self.open)()
    }

    /// Runs `sql` (statements without parameters) on the database directly, outside the
    /// store: what another program or a hand edit would do to it.
    pub fn sql(&self, sql: &str) {
        (self.sql)(sql)
    }

    /// A SQLite database in a temporary directory.
    pub fn sqlite() -> Db {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let raw = path.clone();
        Db {
            open: Box::new(move || SessionStore::open(&path).unwrap()),
            sql: Box::new(move |sql| {
                rusqlite::Connection::open(&raw)
                    .unwrap()
                    .execute_batch(sql)
                    .unwrap()
            }),
            _dir: Some(dir),
        }
    }

    /// A PostgreSQL database (a fresh schema on the server `HERMES_TEST_PG_DSN` names), or
    /// `None` when the variable is not set.
    pub fn postgres() -> Option<Db> {
        let dsn = std::env::var("HERMES_TEST_PG_DSN")
            .ok()
            .filter(|v| !v.is_empty())?;
        let schema = format!("conformance_{:016x}", rand_u64());
        let options = hermes_store::PgOptions::new(dsn.clone()).with_schema(schema.clone());
        Some(Db {
            open: Box::new(move || {
                SessionStore::from_backend(hermes_store::PgStore::open(&options).unwrap())
            }),
            sql: Box::new(move |sql| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    let (client, conn) = tokio_postgres::connect(&dsn, tokio_postgres::NoTls)
                        .await
                        .unwrap();
                    tokio::spawn(conn);
                    client
                        .batch_execute(&format!("SET search_path = {schema}, public; {sql}"))
                        .await
                        .unwrap();
                })
            }),
            _dir: None,
        })
    }
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    h.finish()
}

/// One `#[test]` per conformance test, on the database `$db()` returns (`Option<Db>`: a
/// `None` skips, printing why).
#[macro_export]
macro_rules! conformance_tests {
    ($db:path) => {
        $crate::conformance_tests!($db;
            history::checked_writes_succeed_at_the_current_version_and_report_the_new_one,
            history::a_change_from_another_connection_refuses_every_checked_write,
            history::ending_a_session_moves_its_version_on,
            history::a_reply_and_its_usage_commit_together_or_not_at_all,
            history::trace_ids_are_stored_with_their_messages,
            records::one_lease_holder_at_a_time_across_handles_with_increasing_tokens,
            records::an_expired_lease_is_taken_over_and_the_old_holder_fenced_off,
            records::concurrent_acquirers_get_one_lease,
            records::cron_runs_round_trip_newest_first_and_import_is_idempotent,
            records::a_model_choice_is_kept_with_the_session_and_can_be_cleared,
            records::repeated_titles_are_numbered,
            records::concurrent_appends_from_two_handles_all_commit_once,
            records::compaction_replaces_the_active_tail_in_one_transaction,
            records::health_checks_pass_on_a_new_store,
            records::a_store_is_usable_from_any_thread,
            replicas::an_inbound_message_is_claimed_once_across_handles,
            replicas::claims_are_finished_listed_and_withdrawn,
            replicas::an_orphaned_claim_is_adopted_once_and_old_done_claims_are_pruned,
            replicas::named_leases_are_listed_by_prefix,
            replicas::a_taken_over_holder_cannot_write_into_the_session,
            replicas::documents_are_replaced_only_from_the_version_read,
            replicas::concurrent_document_updates_all_land,
            search::cjk_substring_is_found_through_the_trigram_index,
            search::cjk_query_keeps_not_and_or_meaning,
            search::tool_names_and_arguments_are_searchable,
            search::filters_by_session_and_role_and_limits,
            search::hits_carry_session_metadata_snippet_and_rank,
            search::inactive_messages_stay_searchable_and_are_flagged,
            search::a_frequent_term_is_ranked_over_its_newest_matches,
            search::any_user_text_is_a_valid_query,
            sessions::create_session_is_idempotent_and_keeps_the_prompt_byte_for_byte,
            sessions::message_roundtrip_keeps_tool_calls_reasoning_and_ids,
            sessions::an_unreadable_row_fails_the_load_and_is_named_by_the_tolerant_one,
            sessions::tool_call_arguments_are_stored_verbatim,
            sessions::appending_to_an_unknown_session_is_an_error_and_writes_nothing,
            sessions::messages_survive_reopen_because_each_is_committed,
            sessions::deactivate_hides_messages_from_load_but_keeps_them,
            sessions::usage_accumulates_per_session_and_per_model,
            sessions::find_latest_list_title_end_delete,
            sessions::export_markdown_and_json,
            sessions::prune_and_session_key_lookup,
            sessions::archived_sessions_are_hidden_but_kept,
            sessions::routed_key_count_and_last_activity,
            sessions::a_gateway_peer_is_recorded_on_its_session,
            subagents::subagent_sessions_are_linked_but_never_the_latest_or_listed,
            subagents::stats_do_not_count_a_childs_tokens_twice,
        );
    };
    ($db:path; $($module:ident :: $name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                match $db() {
                    Some(db) => conformance::$module::$name(&db),
                    None => eprintln!("skipped: HERMES_TEST_PG_DSN is not set"),
                }
            }
        )*
    };
}
