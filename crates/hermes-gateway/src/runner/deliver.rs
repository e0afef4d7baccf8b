//! The one place the runner hands reply text to a platform. Until the delivery module
//! (`render_chunks`: Markdown-aware splitting and per-platform formatting) is wired in, replies
//! go out as escaped plain text split on line boundaries within the platform limit.

use crate::error::PlatformError;
use crate::platform::{ChatTarget, LengthUnit, Markup, PlatformAdapter, PlatformLimits};

/// Length of `text` in the platform's unit.
fn measure(text: &str, unit: LengthUnit) -> usize {
    match unit {
        LengthUnit::Utf16 => text.encode_utf16().count(),
        LengthUnit::Chars => text.chars().count(),
    }
}

/// `text` escaped so the platform shows it literally (Telegram MarkdownV2 reserves
/// `_*[]()~\`>#+-=|{}.!` and `\`; the others render plain text as is apart from Slack's
/// `&`, `<`, `>`).
pub fn plain(limits: &PlatformLimits, text: &str) -> String {
    match limits.markup {
        Markup::TelegramMarkdownV2 => {
            let mut out = String::with_capacity(text.len() + 16);
            for c in text.chars() {
                if "_*[]()~`>#+-=|{}.!\\".contains(c) {
                    out.push('\\');
                }
                out.push(c);
            }
            out
        }
        Markup::SlackMrkdwn => text
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;"),
        Markup::Plain | Markup::DiscordMarkdown => text.to_string(),
    }
}

/// Splits `text` into escaped chunks that each fit the limit, preferring line boundaries.
pub fn chunks(text: &str, limits: &PlatformLimits) -> Vec<String> {
    let max = limits.max_message_len.max(16);
    let mut out = Vec::new();
    let mut current = String::new();
    for piece in text.split_inclusive('\n') {
        let mut rest = piece;
        while !rest.is_empty() {
            let candidate = format!("{current}{rest}");
            if measure(&plain(limits, &candidate), limits.length_unit) <= max {
                current = candidate;
                rest = "";
                continue;
            }
            if !current.is_empty() {
                out.push(plain(limits, current.trim_end_matches('\n')));
                current.clear();
                continue;
            }
            // A single line longer than the limit: cut it by characters.
            let mut cut = String::new();
            let mut used = 0usize;
            for (i, c) in rest.char_indices() {
                let escaped = plain(limits, &c.to_string());
                let n = measure(&escaped, limits.length_unit);
                if used + n > max {
                    out.push(plain(limits, &cut));
                    rest = &rest[i..];
                    cut.clear();
                    break;
                }
                used += n;
                cut.push(c);
            }
            if !cut.is_empty() {
                current = cut;
                rest = "";
            }
        }
    }
    let last = current.trim_end_matches('\n');
    if !last.trim().is_empty() {
        out.push(plain(limits, last));
    }
    out
}

/// Sends `text` to `target` as one or more messages.
pub async fn deliver(
    adapter: &dyn PlatformAdapter,
    target: &ChatTarget,
    text: &str,
) -> Result<(), PlatformError> {
    for chunk in chunks(text, &adapter.limits()) {
        adapter.send(target, &chunk).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize, markup: Markup) -> PlatformLimits {
        PlatformLimits {
            max_message_len: max,
            length_unit: LengthUnit::Utf16,
            markup,
            supports_edit: true,
        }
    }

    #[test]
    fn long_text_splits_on_lines_within_the_limit_and_loses_nothing() {
        let text: String = (0..40).map(|i| format!("line {i}. done!\n")).collect();
        let l = limits(64, Markup::TelegramMarkdownV2);
        let parts = chunks(&text, &l);
        assert!(parts.len() > 1);
        for p in &parts {
            assert!(p.encode_utf16().count() <= 64, "{p}");
            assert!(!p.ends_with('\\'), "{p}");
        }
        let joined = parts.join("\n").replace('\\', "");
        assert_eq!(joined, text.trim_end().replace('\\', ""));
    }

    #[test]
    fn one_huge_line_is_cut_by_characters() {
        let text = "é".repeat(50);
        let parts = chunks(&text, &limits(16, Markup::Plain));
        assert_eq!(parts.concat(), text);
        assert!(parts.iter().all(|p| p.chars().count() <= 16));
    }
}
