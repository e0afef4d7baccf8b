//! Platform adapters, one module per platform, each behind its cargo feature.

#[cfg(any(feature = "telegram", feature = "webhook"))]
pub mod backoff;
#[cfg(feature = "telegram")]
pub mod telegram;
