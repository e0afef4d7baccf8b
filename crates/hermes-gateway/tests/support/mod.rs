//! Loopback fakes shared by the adapter tests.
#![allow(dead_code)]

#[cfg(feature = "telegram")]
pub mod telegram_fake;
