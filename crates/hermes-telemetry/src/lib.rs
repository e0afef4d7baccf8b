//! Observability of a hermes process (issue 24): the process-wide [`Metrics`] rendered in
//! the Prometheus text format, the [`SessionLifecycle`] states the gateway reports, and
//! process readings for `/_status`.
//!
//! Owns: metric names, labels and buckets, and their cardinality bounds. Must not: know the
//! agent, the store or any platform — those crates record into it; it depends on nothing of
//! hermes. Nothing recorded here carries message content, prompts, secrets, or session and
//! user ids.

pub mod lifecycle;
pub mod metrics;
pub mod process;

pub use lifecycle::SessionLifecycle;
pub use metrics::{CONTENT_TYPE, LabelCap, MAX_LABEL_VALUES, Metrics, OTHER, metrics};
