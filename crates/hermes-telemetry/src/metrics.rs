//! The process-wide metrics (issue 24 §2), rendered in the Prometheus text format (version
//! 0.0.4) by [`Metrics::render`].
//!
//! Names follow the Prometheus conventions: one `hermes_` namespace, the unit in the name
//! (`_seconds`, `_bytes`, `_usd`), `_total` on counters (added by the encoder). Labels are
//! bounded: platforms, outcomes, error classes, token kinds and lifecycle states are closed
//! sets chosen by the code; tool, model, provider and MCP server names come from the
//! configuration and are capped by [`LabelCap`] (the first [`MAX_LABEL_VALUES`] distinct
//! values of a label keep their name, later ones count as `other`). No session, user or
//! chat id is ever a label.
//!
//! Counters and histograms are recorded where the event happens ([`Metrics::model_call`] in
//! the agent loop, [`Metrics::tool_call`] in the tool batch, …). Gauges describe the state of
//! the serving process and are set by it just before rendering ([`Metrics::set_sessions`],
//! [`Metrics::set_queue_depth`], …), so they never drift from what they describe.

use std::collections::HashSet;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, OnceLock};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use crate::lifecycle::SessionLifecycle;

/// Distinct values a configuration-named label (tool, model, provider, MCP server) keeps
/// before further ones are counted as [`OTHER`].
pub const MAX_LABEL_VALUES: usize = 200;

/// The label value of everything past a label's cap, and of empty names.
pub const OTHER: &str = "other";

/// The `Content-Type` of [`Metrics::render`]'s output.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Model call latency buckets, in seconds (a first token in 50 ms to a 5-minute reasoning
/// call).
const MODEL_SECONDS: &[f64] = &[
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0,
];
/// Tool call buckets, in seconds (a file read to a long build).
const TOOL_SECONDS: &[f64] = &[
    0.001, 0.005, 0.025, 0.1, 0.25, 1.0, 2.5, 10.0, 30.0, 60.0, 180.0, 600.0,
];
/// Store write and session resume buckets, in seconds.
const FAST_SECONDS: &[f64] = &[
    0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0,
];

fn model_histogram() -> Histogram {
    Histogram::new(MODEL_SECONDS.iter().copied())
}

fn tool_histogram() -> Histogram {
    Histogram::new(TOOL_SECONDS.iter().copied())
}

/// Longest label value kept, in bytes: a longer name (a model named by a chat user's
/// `/model`, up to a whole message) counts as [`OTHER`], so 200 names cannot make a scrape
/// of megabytes.
pub const MAX_LABEL_BYTES: usize = 128;

/// Keeps a label's distinct values bounded: the first [`MAX_LABEL_VALUES`] names seen pass
/// through, later ones (and empty names, and names over [`MAX_LABEL_BYTES`]) become
/// [`OTHER`].
#[derive(Debug, Default)]
pub struct LabelCap {
    seen: Mutex<HashSet<String>>,
}

impl LabelCap {
    /// The label value to record for `name`.
    pub fn value(&self, name: &str) -> String {
        if name.is_empty() || name.len() > MAX_LABEL_BYTES {
            return OTHER.to_string();
        }
        let Ok(mut seen) = self.seen.lock() else {
            return OTHER.to_string();
        };
        if seen.contains(name) {
            return name.to_string();
        }
        if seen.len() >= MAX_LABEL_VALUES {
            return OTHER.to_string();
        }
        seen.insert(name.to_string());
        name.to_string()
    }
}

/// `platform`: where a message or turn came from (`cli`, `telegram`, `api_server`, `cron`,
/// `acp`, …; a closed set chosen by the front ends).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PlatformLabel {
    /// The platform's name.
    pub platform: String,
}

/// A turn's platform and how it ended.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TurnLabels {
    platform: String,
    /// `completed`, `interrupted`, `failed`, `budget_exhausted`.
    outcome: String,
}

/// A provider failure's class (`hermes_llm::ErrorClass::as_str`).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    class: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelLabels {
    provider: String,
    model: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    model: String,
    /// `input`, `output`, `cache_read`, `cache_write`, `reasoning`.
    kind: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CostLabels {
    model: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
    /// `ok`, `error`, `denied`, `cancelled`.
    outcome: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolNameLabels {
    tool: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TriggerLabels {
    /// What started a compression: `threshold`, `overflow`, `manual`.
    trigger: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BusyLabels {
    /// `display.busy_input_mode`: `interrupt`, `queue`, `steer`.
    mode: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: String,
}

/// Every metric of the process. One instance lives for the process ([`metrics`]); tests may
/// build their own with [`Metrics::new`].
pub struct Metrics {
    registry: Registry,
    inbound_messages: Family<PlatformLabel, Counter>,
    turns: Family<TurnLabels, Counter>,
    api_errors: Family<ErrorLabels, Counter>,
    model_calls: Family<ModelLabels, Histogram, fn() -> Histogram>,
    first_token: Family<ModelLabels, Histogram, fn() -> Histogram>,
    tokens: Family<TokenLabels, Counter>,
    cost: Family<CostLabels, Counter<f64, AtomicU64>>,
    tool_calls: Family<ToolLabels, Counter>,
    tool_seconds: Family<ToolNameLabels, Histogram, fn() -> Histogram>,
    compressions: Family<TriggerLabels, Counter>,
    busy_events: Family<BusyLabels, Counter>,
    queue_depth: Family<PlatformLabel, Gauge>,
    live_agents: Gauge,
    sessions: Family<StateLabels, Gauge>,
    lifecycle: Family<StateLabels, Counter>,
    resume_seconds: Histogram,
    store_bytes: Gauge,
    store_writes: Histogram,
    mcp_up: Family<ServerLabels, Gauge>,
    mcp_breaker_open: Family<ServerLabels, Gauge>,
    cron_runs: Family<OutcomeLabels, Counter>,
    tools_cap: LabelCap,
    models_cap: LabelCap,
    providers_cap: LabelCap,
    servers_cap: LabelCap,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

/// The process's metrics, created on first use.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

impl Metrics {
    /// A registry with every metric at zero.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("hermes");
        let inbound_messages = Family::default();
        registry.register(
            "inbound_messages",
            "Messages received for the agent (chat platforms, API requests), by platform",
            Clone::clone(&inbound_messages),
        );
        let turns = Family::default();
        registry.register(
            "turns",
            "Agent turns finished, by platform and outcome",
            Clone::clone(&turns),
        );
        let api_errors = Family::default();
        registry.register(
            "api_errors",
            "Failed model API calls (each failed attempt, retried or not), by error class",
            Clone::clone(&api_errors),
        );
        let model_calls: Family<ModelLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(model_histogram);
        registry.register_with_unit(
            "model_call_duration",
            "Model API call attempts, from request to the complete response",
            Unit::Seconds,
            Clone::clone(&model_calls),
        );
        let first_token: Family<ModelLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(model_histogram);
        registry.register_with_unit(
            "model_time_to_first_token",
            "Time from a model request to its first streamed text, reasoning or tool call",
            Unit::Seconds,
            Clone::clone(&first_token),
        );
        let tokens = Family::default();
        registry.register(
            "tokens",
            "Tokens used, by model and kind (input, output, cache_read, cache_write, reasoning)",
            Clone::clone(&tokens),
        );
        let cost = Family::default();
        registry.register(
            "cost_usd",
            "Estimated cost in US dollars, by model (known prices only)",
            Clone::clone(&cost),
        );
        let tool_calls = Family::default();
        registry.register(
            "tool_calls",
            "Tool calls finished, by tool and outcome",
            Clone::clone(&tool_calls),
        );
        let tool_seconds: Family<ToolNameLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(tool_histogram);
        registry.register_with_unit(
            "tool_call_duration",
            "Tool call run time, by tool",
            Unit::Seconds,
            Clone::clone(&tool_seconds),
        );
        let compressions = Family::default();
        registry.register(
            "compressions",
            "Context compressions, by trigger",
            Clone::clone(&compressions),
        );
        let busy_events = Family::default();
        registry.register(
            "busy_events",
            "Messages that arrived while their session's turn ran, by busy_input_mode",
            Clone::clone(&busy_events),
        );
        let queue_depth = Family::default();
        registry.register(
            "queue_depth",
            "Messages waiting for their session's turn, by platform",
            Clone::clone(&queue_depth),
        );
        let live_agents = Gauge::default();
        registry.register(
            "live_agents",
            "Agents held in memory (running a turn or idle in the cache)",
            Clone::clone(&live_agents),
        );
        let sessions = Family::default();
        registry.register(
            "sessions",
            "Gateway sessions by lifecycle state (active, idle, released)",
            Clone::clone(&sessions),
        );
        let lifecycle = Family::default();
        registry.register(
            "session_transitions",
            "Session lifecycle transitions, by the state entered",
            Clone::clone(&lifecycle),
        );
        let resume_seconds = Histogram::new(FAST_SECONDS.iter().copied());
        registry.register_with_unit(
            "session_resume_duration",
            "Time to bring a released session back into memory from the store",
            Unit::Seconds,
            resume_seconds.clone(),
        );
        let store_bytes = Gauge::default();
        registry.register_with_unit(
            "store_size",
            "Size of the session store",
            Unit::Bytes,
            Clone::clone(&store_bytes),
        );
        let store_writes = Histogram::new(FAST_SECONDS.iter().copied());
        registry.register_with_unit(
            "store_write_duration",
            "Session store message writes, from call to commit",
            Unit::Seconds,
            store_writes.clone(),
        );
        let mcp_up = Family::default();
        registry.register(
            "mcp_server_up",
            "1 when the MCP server answers, 0 when it is down",
            Clone::clone(&mcp_up),
        );
        let mcp_breaker_open = Family::default();
        registry.register(
            "mcp_server_breaker_open",
            "1 while the MCP server's circuit breaker refuses calls",
            Clone::clone(&mcp_breaker_open),
        );
        let cron_runs = Family::default();
        registry.register(
            "cron_runs",
            "Cron job runs, by outcome",
            Clone::clone(&cron_runs),
        );
        Metrics {
            registry,
            inbound_messages,
            turns,
            api_errors,
            model_calls,
            first_token,
            tokens,
            cost,
            tool_calls,
            tool_seconds,
            compressions,
            busy_events,
            queue_depth,
            live_agents,
            sessions,
            lifecycle,
            resume_seconds,
            store_bytes,
            store_writes,
            mcp_up,
            mcp_breaker_open,
            cron_runs,
            tools_cap: LabelCap::default(),
            models_cap: LabelCap::default(),
            providers_cap: LabelCap::default(),
            servers_cap: LabelCap::default(),
        }
    }

    /// Every metric in the Prometheus text format ([`CONTENT_TYPE`]).
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail; a metric that could not be encoded is left out
        // rather than failing the scrape.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }

    /// A chat message arrived on `platform`.
    pub fn inbound_message(&self, platform: &str) {
        self.inbound_messages
            .get_or_create(&PlatformLabel {
                platform: platform.to_string(),
            })
            .inc();
    }

    /// A turn on `platform` ended with `outcome` (`completed`, `interrupted`, `failed`,
    /// `budget_exhausted`).
    pub fn turn_finished(&self, platform: &str, outcome: &str) {
        self.turns
            .get_or_create(&TurnLabels {
                platform: platform.to_string(),
                outcome: outcome.to_string(),
            })
            .inc();
    }

    /// A model call attempt failed with the error class `class`.
    pub fn api_error(&self, class: &str) {
        self.api_errors
            .get_or_create(&ErrorLabels {
                class: class.to_string(),
            })
            .inc();
    }

    /// A model call attempt to `provider`/`model` took `seconds`; `first_token` is the time to
    /// its first streamed piece, when one came.
    pub fn model_call(&self, provider: &str, model: &str, seconds: f64, first_token: Option<f64>) {
        let labels = ModelLabels {
            provider: self.providers_cap.value(provider),
            model: self.models_cap.value(model),
        };
        self.model_calls.get_or_create(&labels).observe(seconds);
        if let Some(t) = first_token {
            self.first_token.get_or_create(&labels).observe(t);
        }
    }

    /// `count` tokens of `kind` (`input`, `output`, `cache_read`, `cache_write`,
    /// `reasoning`) were used on `model`.
    pub fn tokens(&self, model: &str, kind: &str, count: u64) {
        if count == 0 {
            return;
        }
        self.tokens
            .get_or_create(&TokenLabels {
                model: self.models_cap.value(model),
                kind: kind.to_string(),
            })
            .inc_by(count);
    }

    /// `usd` of estimated cost on `model` (ignored unless positive and finite).
    pub fn cost(&self, model: &str, usd: f64) {
        if !(usd.is_finite() && usd > 0.0) {
            return;
        }
        self.cost
            .get_or_create(&CostLabels {
                model: self.models_cap.value(model),
            })
            .inc_by(usd);
    }

    /// A call of `tool` ended with `outcome` (`ok`, `error`, `denied`, `cancelled`) after
    /// `seconds`.
    pub fn tool_call(&self, tool: &str, outcome: &str, seconds: f64) {
        let tool = self.tools_cap.value(tool);
        self.tool_calls
            .get_or_create(&ToolLabels {
                tool: tool.clone(),
                outcome: outcome.to_string(),
            })
            .inc();
        self.tool_seconds
            .get_or_create(&ToolNameLabels { tool })
            .observe(seconds);
    }

    /// The history was compressed; `trigger` is `threshold`, `overflow` or `manual`.
    pub fn compression(&self, trigger: &str) {
        self.compressions
            .get_or_create(&TriggerLabels {
                trigger: trigger.to_string(),
            })
            .inc();
    }

    /// A message arrived while its session's turn ran and was handled per `mode`.
    pub fn busy_event(&self, mode: &str) {
        self.busy_events
            .get_or_create(&BusyLabels {
                mode: mode.to_string(),
            })
            .inc();
    }

    /// A session entered `state`.
    pub fn session_transition(&self, state: SessionLifecycle) {
        self.lifecycle
            .get_or_create(&StateLabels {
                state: state.as_str().to_string(),
            })
            .inc();
    }

    /// A released session took `seconds` to come back into memory.
    pub fn session_resumed(&self, seconds: f64) {
        self.resume_seconds.observe(seconds);
    }

    /// A store write took `seconds` from call to commit.
    pub fn store_write(&self, seconds: f64) {
        self.store_writes.observe(seconds);
    }

    /// A cron job run ended with `outcome` (`ok`, `silent`, `failed`, `timeout`).
    pub fn cron_run(&self, outcome: &str) {
        self.cron_runs
            .get_or_create(&OutcomeLabels {
                outcome: outcome.to_string(),
            })
            .inc();
    }

    /// Messages waiting per platform now (platforms not named are set to 0).
    pub fn set_queue_depth<'a>(&self, depths: impl IntoIterator<Item = (&'a str, i64)>) {
        self.queue_depth.clear();
        for (platform, n) in depths {
            self.queue_depth
                .get_or_create(&PlatformLabel {
                    platform: platform.to_string(),
                })
                .set(n);
        }
    }

    /// Agents in memory now.
    pub fn set_live_agents(&self, n: i64) {
        self.live_agents.set(n);
    }

    /// Sessions per lifecycle state now.
    pub fn set_sessions(&self, counts: &[(SessionLifecycle, i64)]) {
        for (state, n) in counts {
            self.sessions
                .get_or_create(&StateLabels {
                    state: state.as_str().to_string(),
                })
                .set(*n);
        }
    }

    /// The session store's size now, in bytes.
    pub fn set_store_bytes(&self, bytes: u64) {
        self.store_bytes
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }

    /// The MCP servers' health now: `(name, up, breaker_open)`.
    pub fn set_mcp_servers<'a>(&self, servers: impl IntoIterator<Item = (&'a str, bool, bool)>) {
        self.mcp_up.clear();
        self.mcp_breaker_open.clear();
        for (name, up, open) in servers {
            let labels = ServerLabels {
                server: self.servers_cap.value(name),
            };
            self.mcp_up.get_or_create(&labels).set(i64::from(up));
            self.mcp_breaker_open
                .get_or_create(&labels)
                .set(i64::from(open));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_units_and_totals() {
        let m = Metrics::new();
        m.turn_finished("telegram", "completed");
        m.model_call("openrouter", "m", 1.5, Some(0.2));
        m.api_error("rate_limit");
        m.cost("m", 0.25);
        let text = m.render();
        assert!(text.contains("hermes_turns_total{platform=\"telegram\",outcome=\"completed\"} 1"));
        assert!(text.contains("hermes_api_errors_total{class=\"rate_limit\"} 1"));
        assert!(text.contains("# TYPE hermes_model_call_duration_seconds histogram"));
        assert!(text.contains(
            "hermes_model_time_to_first_token_seconds_count{provider=\"openrouter\",model=\"m\"} 1"
        ));
        assert!(text.contains("hermes_cost_usd_total{model=\"m\"} 0.25"));
    }

    #[test]
    fn configuration_named_labels_are_capped() {
        let m = Metrics::new();
        for i in 0..MAX_LABEL_VALUES + 50 {
            m.tool_call(&format!("tool_{i}"), "ok", 0.01);
        }
        let text = m.render();
        let series = text
            .lines()
            .filter(|l| l.starts_with("hermes_tool_calls_total{"))
            .count();
        assert_eq!(series, MAX_LABEL_VALUES + 1);
        assert!(text.contains("hermes_tool_calls_total{tool=\"other\",outcome=\"ok\"} 50"));
        // A name seen before the cap keeps its series.
        m.tool_call("tool_0", "ok", 0.01);
        assert!(
            m.render()
                .contains("hermes_tool_calls_total{tool=\"tool_0\",outcome=\"ok\"} 2")
        );
    }

    #[test]
    fn overlong_label_values_count_as_other() {
        let m = Metrics::new();
        let long = "m".repeat(MAX_LABEL_BYTES + 1);
        m.model_call("custom", &long, 1.0, None);
        m.tokens(&long, "input", 5);
        m.model_call("custom", &"n".repeat(MAX_LABEL_BYTES), 1.0, None);
        let text = m.render();
        assert!(
            !text.contains(&long),
            "an overlong model name became a label"
        );
        assert!(text.contains("hermes_tokens_total{model=\"other\",kind=\"input\"} 5"));
        assert!(text.contains(&format!("model=\"{}\"", "n".repeat(MAX_LABEL_BYTES))));
    }
}
