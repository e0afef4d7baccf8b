#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! The store's conformance suite (`conformance/`) on PostgreSQL: a fresh schema per test on
//! the server `HERMES_TEST_PG_DSN` names (`.ci/run` starts one on loopback and sets it);
//! skipped, saying so, when it is not set.

mod conformance;

fn db() -> Option<conformance::Db> {
    conformance::Db::postgres()
}

conformance_tests!(db);
