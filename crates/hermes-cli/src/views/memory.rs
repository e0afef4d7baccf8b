//! The entries of `MEMORY.md` and `USER.md` with their usage of the char limits
//! (`hermes memory show`, `/memory`; FEATURES §6).

use hermes_context::memory::{MemoryTarget, configured_memory_provider, joined_chars, usage_text};
use hermes_protocol::HermesHome;
use hermes_protocol::config::MemoryConfig;

fn describe(target: MemoryTarget) -> &'static str {
    match target {
        MemoryTarget::Memory => "agent notes",
        MemoryTarget::User => "user profile",
    }
}

fn enabled(config: &MemoryConfig, target: MemoryTarget) -> bool {
    match target {
        MemoryTarget::Memory => config.memory_enabled,
        MemoryTarget::User => config.user_profile_enabled,
    }
}

/// Both files as text for `hermes memory show` and `/memory`: per file a header
/// `MEMORY.md (agent notes) — <percent>% — <chars>/<limit>`, `off` when config turns it off,
/// then the numbered entries. Files are read now (not the session's frozen snapshot), through
/// the memory provider `memory.provider` chooses; a last `note:` line names an external
/// provider hermes does not implement.
pub fn memory_report(home: &HermesHome, config: &MemoryConfig) -> String {
    let store = configured_memory_provider(home, config);
    let mut out = String::new();
    for target in [MemoryTarget::Memory, MemoryTarget::User] {
        let limit = store.limit(target);
        let state = if enabled(config, target) {
            String::new()
        } else {
            " — off in config.yaml".to_string()
        };
        match store.list(target) {
            Ok(entries) => {
                let usage = usage_text(joined_chars(&entries), limit);
                out.push_str(&format!(
                    "{} ({}) — {usage}{state}\n",
                    target.file_name(),
                    describe(target)
                ));
                if entries.is_empty() {
                    out.push_str("  (empty)\n");
                }
                for (i, e) in entries.iter().enumerate() {
                    let text = e.replace('\n', "\n     ");
                    out.push_str(&format!("  {}. {text}\n", i + 1));
                }
            }
            Err(e) => out.push_str(&format!("{}: {e}\n", target.file_name())),
        }
    }
    if let Some(warning) = config.provider_warning() {
        out.push_str(&format!("note: {warning}\n"));
    }
    out
}
