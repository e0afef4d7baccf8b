//! Observability of a hermes process (issue 24): the process-wide [`Metrics`] rendered in
//! the Prometheus text format, the [`SessionLifecycle`] states the gateway reports, process
//! readings for `/_status`, and the W3C [`trace`] context of the current span.
//!
//! Owns: metric names, labels and buckets, and their cardinality bounds. Must not: know the
//! agent, the store or any platform — those crates record into it; it depends on nothing of
//! hermes (only on `tracing` and the OpenTelemetry API). Nothing recorded here carries
//! message content, prompts, secrets, or session and user ids.

pub mod lifecycle;
pub mod metrics;
pub mod process;
pub mod trace;

pub use lifecycle::SessionLifecycle;
pub use metrics::{CONTENT_TYPE, LabelCap, MAX_LABEL_VALUES, Metrics, OTHER, metrics};
