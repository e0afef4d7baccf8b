//! The status line (issue 9 item 5): model, provider, context used (tokens and % of the
//! context window), session cost and the turn's elapsed time. Shown under each answer while
//! enabled; `/statusbar` toggles it.

use super::style::{Line, Span, Style, truncate, width};
use crate::render::skin::Skin;

/// What the status line shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatusBar {
    /// Model name.
    pub model: String,
    /// Provider id.
    pub provider: String,
    /// Tokens of the context: the prompt of the turn's last model call (estimated as the
    /// turn's prompt tokens divided by its model calls when several were made).
    pub context_tokens: Option<u64>,
    /// The model's context window in tokens, when known.
    pub context_window: Option<u64>,
    /// Cost of the session so far in US dollars, when the price is known.
    pub cost_usd: Option<f64>,
    /// Wall time of the last turn in milliseconds.
    pub elapsed_ms: u64,
}

/// Token counts as `950`, `12.3k`, `1.2M`.
pub fn format_tokens(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        format!("{:.1}M", n as f64 / 1_000_000.0)
    }
}

/// Draws the status line for a screen `width` columns wide. Parts are dropped from the
/// right-hand end of the priority list (provider, then cost) when the line would not fit;
/// what remains is shortened with `…`.
pub fn status_line(skin: &Skin, bar: &StatusBar, width_cols: usize) -> Line {
    let c = &skin.colors;
    let ctx = match (bar.context_tokens, bar.context_window) {
        (Some(t), Some(w)) if w > 0 => {
            let pct = (t as f64 * 100.0 / w as f64).round() as u64;
            Some(format!(
                "ctx {}/{} ({pct}%)",
                format_tokens(t),
                format_tokens(w)
            ))
        }
        (Some(t), _) => Some(format!("ctx {}", format_tokens(t))),
        _ => None,
    };
    let cost = if bar.provider == "local" {
        Some("free (local)".to_string())
    } else {
        bar.cost_usd.map(|c| format!("${c:.4}"))
    };
    let elapsed = super::progress::format_duration(bar.elapsed_ms);
    // (text, priority: lower is dropped first)
    let parts: Vec<(String, u8)> = [
        (Some(bar.model.clone()), 4),
        (Some(bar.provider.clone()), 0),
        (ctx, 3),
        (cost, 1),
        (Some(elapsed), 2),
    ]
    .into_iter()
    .filter_map(|(t, p)| t.filter(|t| !t.is_empty()).map(|t| (t, p)))
    .collect();
    let join = |parts: &[(String, u8)]| {
        parts
            .iter()
            .map(|(t, _)| t.as_str())
            .collect::<Vec<_>>()
            .join(" · ")
    };
    let mut kept = parts;
    while width(&join(&kept)) > width_cols && kept.len() > 1 {
        let Some(i) = kept
            .iter()
            .enumerate()
            .min_by_key(|(_, (_, p))| *p)
            .map(|(i, _)| i)
        else {
            break;
        };
        kept.remove(i);
    }
    vec![Span::new(
        &truncate(&join(&kept), width_cols),
        Style::fg(c.status_bar),
    )]
}
