//! Platform adapters, one module per platform, each behind its cargo feature
//! (FEATURES §1 Gateway). Adapters speak their platform's wire protocol and report stable
//! user ids; they never authorize, route or chunk.

#[cfg(any(
    feature = "discord",
    feature = "slack",
    feature = "telegram",
    feature = "webhook"
))]
pub(crate) mod backoff;
#[cfg(any(feature = "discord", feature = "slack", feature = "telegram"))]
pub(crate) mod http;
#[cfg(any(feature = "discord", feature = "slack"))]
pub(crate) mod media;

#[cfg(feature = "discord")]
pub mod discord;
#[cfg(feature = "slack")]
pub mod slack;
#[cfg(feature = "telegram")]
pub mod telegram;
#[cfg(feature = "webhook")]
pub mod webhook;
