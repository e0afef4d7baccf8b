//! Tool health (seed 004 §3, "the tool contract": `health_check() -> HealthStatus` and
//! `fallback(input)`; issue 26 item 4).
//!
//! A tool may declare a health check ([`crate::Tool::health`]): a declarative HTTP tool probes
//! its `health_endpoint`, an MCP tool reports its server's state and circuit breaker. The agent
//! reads [`crate::Tool::health`] (cached, no I/O) before every model request: a tool that is
//! [`ToolHealth::Unhealthy`] without a fallback is left out of the tools offered to the model
//! until it is healthy again ([`ToolHealth::hides_tool`]), and a call that still names it is
//! answered at once instead of waiting for a timeout. One with a fallback stays offered and
//! answers with its fallback. `hermes tools list` and `hermes doctor` run
//! [`crate::Tool::check_health`] (bounded by the tool's own timeout) and show the result.

/// What a tool's health check says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolHealth {
    /// The tool declares no health check (every built-in tool).
    NoCheck,
    /// It has a check that has not run yet; the tool is offered (as healthy).
    Unknown,
    /// The last check passed.
    Healthy,
    /// The last check (or the last call) failed.
    Unhealthy {
        /// Why, in words, for `hermes tools list` and the model (`HTTP 503 from the health
        /// endpoint`, `circuit breaker open: retry in 42 s`). Never holds a secret.
        reason: String,
        /// True when calls are answered by the tool's fallback (a `fallback_text` or
        /// `fallback_endpoint`, or an MCP breaker's immediate answer): the tool stays
        /// offered. False: the tool is hidden from the model until healthy again.
        fallback: bool,
    },
}

impl ToolHealth {
    /// True when the agent leaves the tool out of the model's tool list: unhealthy without
    /// a fallback.
    pub fn hides_tool(&self) -> bool {
        matches!(
            self,
            ToolHealth::Unhealthy {
                fallback: false,
                ..
            }
        )
    }

    /// A short phrase for listings: `healthy`, `not checked yet`, `unhealthy: … (answered
    /// by its fallback)`, `unhealthy: … (hidden from the model until healthy)`; empty for
    /// [`ToolHealth::NoCheck`].
    pub fn describe(&self) -> String {
        match self {
            ToolHealth::NoCheck => String::new(),
            ToolHealth::Unknown => "health not checked yet".to_string(),
            ToolHealth::Healthy => "healthy".to_string(),
            ToolHealth::Unhealthy {
                reason,
                fallback: true,
            } => format!("unhealthy: {reason} (answered by its fallback)"),
            ToolHealth::Unhealthy {
                reason,
                fallback: false,
            } => format!("unhealthy: {reason} (hidden from the model until healthy)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unhealthy_without_fallback_hides() {
        assert!(!ToolHealth::NoCheck.hides_tool());
        assert!(!ToolHealth::Unknown.hides_tool());
        assert!(!ToolHealth::Healthy.hides_tool());
        let down = |fallback| ToolHealth::Unhealthy {
            reason: "HTTP 503".into(),
            fallback,
        };
        assert!(!down(true).hides_tool());
        assert!(down(false).hides_tool());
        assert!(down(true).describe().contains("fallback"));
        assert!(down(false).describe().contains("hidden"));
    }
}
