//! # hermes-testkit
//!
//! Test helpers shared by the hermes crates: [`MockProvider`], an in-process OpenAI-compatible
//! server that replays recorded wire fixtures (also in odd-sized chunks) and scripted answers
//! and captures every request (optionally stalling, drip-feeding or failing);
//! [`RawHttpServer`] for faults below HTTP framing (slow-loris headers, a body cut off by a
//! closed socket); [`check_request_invariants`] for the request-shape invariants of
//! CONVENTIONS pattern 4; fixture paths; [`TempHome`]. It depends on no hermes crate except
//! `hermes-protocol` and must never be a normal (non-dev) dependency of a shipped crate.

mod home;
mod invariants;
mod mock;
mod raw;
mod response;

use std::path::PathBuf;

pub use home::TempHome;
pub use invariants::{assert_request_invariants, check_request_invariants};
pub use mock::{CapturedRequest, MockProvider, Responder};
pub use raw::{RawFault, RawHttpServer};
pub use response::{Chunking, MockResponse};

/// The shared reference folder (`<repo parent>/shared`), located from this crate's manifest dir.
pub fn shared_path(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")).join(rel)
}

/// `shared/fixtures/providers/<rel>`, e.g. `fixture_path("openai_chat/stream_text_with_usage.sse")`.
pub fn fixture_path(rel: &str) -> PathBuf {
    shared_path("fixtures/providers").join(rel)
}
