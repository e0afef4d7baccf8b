#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! The store's conformance suite (`conformance/`) on SQLite.

mod conformance;

fn db() -> Option<conformance::Db> {
    Some(conformance::Db::sqlite())
}

conformance_tests!(db);
