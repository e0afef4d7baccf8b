//! The tool-result budget (FEATURES §3, layers one and two; numeric_policies.json
//! `tool_result_budget_chars`): oversized results are saved to a file and replaced by a
//! preview plus the path, so the model can page through them with `read_file`.

use std::path::{Path, PathBuf};

/// Characters of a spilled result kept inline as a preview (FEATURES §3).
pub const SPILL_PREVIEW_CHARS: usize = 1_500;

/// Character budgets for tool results, scaled to the model's context window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultBudget {
    /// Most characters of one result before it is spilled.
    pub per_result: usize,
    /// Most characters of all results of one assistant turn before the largest are spilled.
    pub per_turn: usize,
}

impl ResultBudget {
    /// Budgets for a context window of `context_tokens` tokens: per result
    /// `clamp(0.6·ctx, 8,000, 100,000)` chars, per turn `clamp(1.2·ctx, 16,000, 200,000)`
    /// chars; unknown window → 100,000 / 200,000 (FEATURES §3).
    pub fn for_context(context_tokens: Option<u64>) -> ResultBudget {
        match context_tokens {
            None => ResultBudget {
                per_result: 100_000,
                per_turn: 200_000,
            },
            Some(ctx) => ResultBudget {
                per_result: (ctx.saturating_mul(6) / 10).clamp(8_000, 100_000) as usize,
                per_turn: (ctx.saturating_mul(12) / 10).clamp(16_000, 200_000) as usize,
            },
        }
    }
}

/// One tool result of a turn, as the budget sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetItem {
    /// Tool call id (used in the spill file name).
    pub call_id: String,
    /// Tool name (`read_file` is exempt from the per-result layer: it pages instead).
    pub tool_name: String,
    /// Result text; replaced by a preview when spilled.
    pub content: String,
    /// Where the full text was saved, once spilled.
    pub spilled_to: Option<PathBuf>,
}

impl BudgetItem {
    /// An unspilled item.
    pub fn new(
        call_id: impl Into<String>,
        tool_name: impl Into<String>,
        content: impl Into<String>,
    ) -> BudgetItem {
        BudgetItem {
            call_id: call_id.into(),
            tool_name: tool_name.into(),
            content: content.into(),
            spilled_to: None,
        }
    }
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

fn spill(item: &mut BudgetItem, dir: &Path) -> std::io::Result<()> {
    hermes_protocol::private_fs::create_dir_all(dir)?;
    let safe: String = item
        .call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    let path = dir.join(format!("{}-{safe}.txt", item.tool_name));
    // Under HERMES_HOME/cache: owner-only (issue 18 item 2).
    hermes_protocol::private_fs::write_atomic(&path, item.content.as_bytes())?;
    let total = chars(&item.content);
    let preview: String = item.content.chars().take(SPILL_PREVIEW_CHARS).collect();
    item.content = format!(
        "{preview}\n… [result too large: {total} chars; the full text was saved to {} — read it \
         with read_file using offset/limit]",
        path.display()
    );
    item.spilled_to = Some(path);
    Ok(())
}

/// Applies layers one and two of the result budget to the results of one assistant turn,
/// saving spilled texts under `spill_dir` (e.g. `HERMES_HOME/cache/tool_results/<session>`).
///
/// Layer one: every result over `budget.per_result` chars (except `read_file`) is spilled.
/// Layer two: while the sum over all results exceeds `budget.per_turn` chars, the largest
/// result not yet spilled (including `read_file`) is spilled. A spilled result becomes a
/// [`SPILL_PREVIEW_CHARS`]-char preview plus the file path. Order is unchanged.
///
/// # Errors
/// The I/O error of writing a spill file; items spilled before it keep their new text.
pub fn apply_result_budget(
    items: &mut [BudgetItem],
    budget: ResultBudget,
    spill_dir: &Path,
) -> std::io::Result<()> {
    for item in items.iter_mut() {
        if item.tool_name != "read_file" && chars(&item.content) > budget.per_result {
            spill(item, spill_dir)?;
        }
    }
    loop {
        let total: usize = items.iter().map(|i| chars(&i.content)).sum();
        if total <= budget.per_turn {
            return Ok(());
        }
        let largest = items
            .iter_mut()
            .filter(|i| i.spilled_to.is_none() && chars(&i.content) > SPILL_PREVIEW_CHARS)
            .max_by_key(|i| chars(&i.content));
        match largest {
            Some(item) => spill(item, spill_dir)?,
            None => return Ok(()),
        }
    }
}
