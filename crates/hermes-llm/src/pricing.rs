//! Model prices and the cost of a call (FEATURES §2 "usage and cost"): a dated price table
//! (`data/prices.json`, USD per million tokens, sources named in the file) and
//! [`cost_usd`]. A model that is not in the table has no cost (`None`, shown as "unknown").
//!
//! Token accounting follows [`Usage`]: `input_tokens` is the whole prompt including cache
//! reads and writes, so the cost is `(input − cache_read − cache_write)·input_price +
//! cache_read·cache_read_price + cache_write·cache_write_price + output·output_price`
//! (cache writes without a price of their own are billed as input; reasoning tokens are part
//! of the output).

use std::sync::LazyLock;

use hermes_protocol::Usage;
use serde::Deserialize;

const PRICES_JSON: &str = include_str!("../data/prices.json");

/// Prices of one model family, USD per million tokens.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Price {
    /// Model name prefix (without vendor prefix, lowercase).
    pub prefix: String,
    /// Uncached prompt tokens.
    pub input: f64,
    /// Generated tokens.
    pub output: f64,
    /// Prompt tokens read from the cache.
    pub cache_read: f64,
    /// Prompt tokens written to the cache (`None`: billed as input).
    pub cache_write: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Table {
    updated: String,
    models: Vec<Price>,
}

static TABLE: LazyLock<Table> = LazyLock::new(|| {
    serde_json::from_str(PRICES_JSON).unwrap_or_else(|e| {
        tracing::error!(error = %e, "the built-in price table does not parse; costs are unknown");
        Table {
            updated: String::new(),
            models: Vec::new(),
        }
    })
});

/// The date (`YYYY-MM-DD`) the price table was last checked.
pub fn prices_updated() -> &'static str {
    &TABLE.updated
}

/// The price entry for a model: the longest prefix matching the name after its last `/`.
pub fn price_for(model: &str) -> Option<&'static Price> {
    let lower = model.trim().to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or("");
    TABLE
        .models
        .iter()
        .filter(|p| name.starts_with(&p.prefix))
        .max_by_key(|p| p.prefix.len())
}

/// The cost of one call (or of summed usage of one model) in USD; `None` when the model has
/// no price.
pub fn cost_usd(model: &str, usage: &Usage) -> Option<f64> {
    let p = price_for(model)?;
    let cached = usage.cache_read_tokens + usage.cache_write_tokens;
    let fresh = usage.input_tokens.saturating_sub(cached) as f64;
    let per = 1_000_000.0;
    Some(
        (fresh * p.input
            + usage.cache_read_tokens as f64 * p.cache_read
            + usage.cache_write_tokens as f64 * p.cache_write.unwrap_or(p.input)
            + usage.output_tokens as f64 * p.output)
            / per,
    )
}

/// [`cost_usd`] for a call to `provider`: the embedded model (`local`) costs nothing.
pub fn provider_cost_usd(provider: &str, model: &str, usage: &Usage) -> Option<f64> {
    if provider == "local" {
        return Some(0.0);
    }
    cost_usd(model, usage)
}

/// A session's cost for display: `free (local)` for the embedded model, else
/// [`format_cost`].
pub fn format_provider_cost(provider: &str, cost: Option<f64>) -> String {
    if provider == "local" {
        return "free (local)".to_string();
    }
    format_cost(cost)
}

/// A cost for display: `$0.0123`, or `unknown`.
pub fn format_cost(cost: Option<f64>) -> String {
    match cost {
        Some(c) => format!("${c:.4}"),
        None => "unknown".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_parses_and_longest_prefix_wins() {
        assert!(TABLE.models.len() > 20);
        assert_eq!(prices_updated().len(), 10);
        let p = price_for("anthropic/claude-sonnet-4.5").map(|p| p.input);
        assert_eq!(p, Some(3.0));
        let mini = price_for("gpt-4o-mini-2024-07-18").map(|p| p.prefix.as_str());
        assert_eq!(mini, Some("gpt-4o-mini"));
        assert_eq!(price_for("my-local-model"), None);
        assert_eq!(price_for("deepseek-v3o3"), None, "prefix, not substring");
    }

    #[test]
    fn cost_splits_cached_and_fresh_prompt_tokens() {
        // claude-sonnet-4: 3 in, 15 out, 0.3 cache read, 3.75 cache write.
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 600_000,
            cache_write_tokens: 200_000,
            reasoning_tokens: 0,
        };
        let c = cost_usd("claude-sonnet-4-5", &usage).unwrap_or(f64::NAN);
        let expected = 0.2 * 3.0 + 0.6 * 0.3 + 0.2 * 3.75 + 0.1 * 15.0;
        assert!((c - expected).abs() < 1e-9, "{c} vs {expected}");
        assert_eq!(cost_usd("unknown-model", &usage), None);
        assert_eq!(format_cost(None), "unknown");
        assert_eq!(format_cost(Some(0.01234)), "$0.0123");
    }
}
