//! Slack adapter (Socket Mode).
