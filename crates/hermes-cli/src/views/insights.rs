//! `hermes insights [--days N] [--source S]` and `/insights [days]` (issue 20; Python Hermes'
//! `agent/insights.py`): what the sessions of the last days used — sessions, turns, messages,
//! tool calls, tokens and cost overall, per model, per source, and the most used tools —
//! read from `state.db` (sessions started in the window; subagent sessions count in their
//! parent's tokens, as `/usage` does, and are not listed).

use std::collections::BTreeMap;

use anyhow::Result;
use hermes_protocol::Role;
use hermes_store::SessionStore;

/// What one window of sessions used.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Insights {
    /// The window, in days.
    pub days: u32,
    /// Only sessions of this source, when set.
    pub source: Option<String>,
    /// Sessions started in the window.
    pub sessions: u64,
    /// Stored messages of those sessions (active and inactive).
    pub messages: u64,
    /// User messages (turns).
    pub turns: u64,
    /// Tool calls the model made.
    pub tool_calls: u64,
    /// Prompt tokens (cache reads included).
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub cache_read_tokens: u64,
    /// Cost in USD of the calls whose price is known.
    pub cost_usd: f64,
    /// Sessions whose cost is unknown (no price for their model).
    pub unpriced_sessions: u64,
    /// Per model: (sessions, tokens, cost).
    pub models: BTreeMap<String, (u64, u64, f64)>,
    /// Per source (`cli`, `cron`, a platform): (sessions, messages, tokens).
    pub sources: BTreeMap<String, (u64, u64, u64)>,
    /// Tool name → calls.
    pub tools: BTreeMap<String, u64>,
}

/// Gathers the insights of the sessions started in the last `days` days (optionally only
/// those of `source`).
///
/// # Errors
/// A store read that fails.
pub fn gather(store: &SessionStore, days: u32, source: Option<&str>) -> Result<Insights> {
    let cutoff = chrono::Utc::now() - chrono::Duration::days(i64::from(days));
    let mut out = Insights {
        days,
        source: source.map(str::to_string),
        ..Insights::default()
    };
    let page = 200;
    let mut offset = 0;
    'pages: loop {
        let batch = store.list_sessions(page, offset)?;
        let last_page = batch.len() < page;
        for s in batch {
            if s.started_at < cutoff {
                // Newest first: everything after this is older.
                break 'pages;
            }
            if source.is_some_and(|want| s.source != want) {
                continue;
            }
            out.sessions += 1;
            out.messages += s.message_count;
            out.input_tokens += s.input_tokens;
            out.output_tokens += s.output_tokens;
            out.cache_read_tokens += s.cache_read_tokens;
            match s.cost_usd {
                Some(c) => out.cost_usd += c,
                None if s.input_tokens + s.output_tokens > 0 => out.unpriced_sessions += 1,
                None => {}
            }
            let tokens = s.input_tokens + s.output_tokens;
            let m = out.models.entry(s.model.clone()).or_default();
            m.0 += 1;
            m.1 += tokens;
            m.2 += s.cost_usd.unwrap_or(0.0);
            let src = out.sources.entry(s.source.clone()).or_default();
            src.0 += 1;
            src.1 += s.message_count;
            src.2 += tokens;
            for stored in store.load_all_messages(&s.id)? {
                let msg = &stored.message;
                match msg.role {
                    Role::User => out.turns += 1,
                    Role::Assistant => {
                        for call in &msg.tool_calls {
                            out.tool_calls += 1;
                            *out.tools.entry(call.name.clone()).or_default() += 1;
                        }
                    }
                    _ => {}
                }
            }
        }
        if last_page {
            break;
        }
        offset += page;
    }
    Ok(out)
}

/// Thousands separators: `12345` → `12,345`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl Insights {
    /// The report as text for the terminal.
    pub fn text(&self) -> String {
        let scope = match &self.source {
            Some(s) => format!("the last {} days ({s})", self.days),
            None => format!("the last {} days", self.days),
        };
        if self.sessions == 0 {
            return format!("No sessions in {scope}.");
        }
        let mut lines = vec![format!("Insights for {scope}"), String::new()];
        let cost = if self.unpriced_sessions > 0 {
            format!(
                "${:.4} (+ {} session(s) without a known price)",
                self.cost_usd, self.unpriced_sessions
            )
        } else {
            format!("${:.4}", self.cost_usd)
        };
        let rows = [
            ("Sessions", grouped(self.sessions)),
            ("Turns", grouped(self.turns)),
            ("Messages", grouped(self.messages)),
            ("Tool calls", grouped(self.tool_calls)),
            ("Input tokens", grouped(self.input_tokens)),
            ("  cache reads", grouped(self.cache_read_tokens)),
            ("Output tokens", grouped(self.output_tokens)),
            ("Cost", cost),
        ];
        for (k, v) in rows {
            lines.push(format!("  {k:<15} {v}"));
        }
        lines.push(String::new());
        lines.push(format!(
            "  {:<32} {:>8} {:>14} {:>10}",
            "Model", "Sessions", "Tokens", "Cost"
        ));
        let mut models: Vec<_> = self.models.iter().collect();
        models.sort_by(|a, b| b.1.1.cmp(&a.1.1).then(a.0.cmp(b.0)));
        for (name, (sessions, tokens, cost)) in models {
            let short: String = name.chars().take(32).collect();
            lines.push(format!(
                "  {short:<32} {sessions:>8} {:>14} {:>10}",
                grouped(*tokens),
                format!("${cost:.4}")
            ));
        }
        lines.push(String::new());
        lines.push(format!(
            "  {:<16} {:>8} {:>10} {:>14}",
            "Source", "Sessions", "Messages", "Tokens"
        ));
        for (name, (sessions, messages, tokens)) in &self.sources {
            lines.push(format!(
                "  {name:<16} {sessions:>8} {:>10} {:>14}",
                grouped(*messages),
                grouped(*tokens)
            ));
        }
        if !self.tools.is_empty() {
            lines.push(String::new());
            lines.push(format!("  {:<28} {:>8} {:>7}", "Tool", "Calls", "%"));
            let mut tools: Vec<_> = self.tools.iter().collect();
            tools.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            for (name, calls) in tools.iter().take(15) {
                let pct = **calls as f64 * 100.0 / self.tool_calls.max(1) as f64;
                lines.push(format!("  {name:<28} {:>8} {pct:>6.1}%", grouped(**calls)));
            }
            if tools.len() > 15 {
                lines.push(format!("  … and {} more tools", tools.len() - 15));
            }
        }
        lines.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::grouped;

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1234567), "1,234,567");
    }
}
