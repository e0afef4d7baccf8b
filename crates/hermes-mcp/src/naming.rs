//! Provider-safe tool names (FEATURES §11; case C31): `mcp__<server>__<tool>` made of
//! `[A-Za-z0-9_-]`, at most 64 characters, unique, with a reverse map to the server's own name.

use std::collections::{BTreeMap, HashSet};

/// Longest exposed tool name: the strictest provider pattern is `^[a-zA-Z0-9_-]{1,64}$`
/// (case C31).
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Prefix of every MCP tool name.
pub const PREFIX: &str = "mcp__";

/// Replaces every character outside `[A-Za-z0-9_-]` with `_` (so `calendar.updateEvent`
/// becomes `calendar_updateEvent`; each non-ASCII character becomes one `_`).
pub fn sanitize_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a 64-bit of `s`, as 6 lowercase hex digits: a short, stable suffix that separates
/// names that sanitize or truncate to the same text.
fn short_hash(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:06x}", h & 0xff_ffff)
}

/// The exposed name of `tool` on `server` before uniqueness is enforced:
/// `mcp__<server>__<tool>` sanitized; longer than 64 characters it is cut and ends in
/// `_<6 hex of the original names>`.
pub fn exposed_name(server: &str, tool: &str) -> String {
    let full = format!("{PREFIX}{}__{}", sanitize_part(server), sanitize_part(tool));
    if full.len() <= MAX_TOOL_NAME_LEN {
        return full;
    }
    with_suffix(&full, &short_hash(&format!("{server}\u{0}{tool}")))
}

fn with_suffix(name: &str, suffix: &str) -> String {
    let keep = MAX_TOOL_NAME_LEN - suffix.len() - 1;
    // Sanitized names are ASCII, so byte slicing is on char boundaries.
    let head = &name[..name.len().min(keep)];
    format!("{head}_{suffix}")
}

/// Assigns unique exposed names to one server's tools, given the names already taken (the
/// built-in tools and other servers' tools). Returns `exposed → original` in input order of
/// assignment; a tool whose name collides gets a hash suffix, and if that collides too, a
/// counter is mixed into the hash.
pub fn assign_names<'a>(
    server: &str,
    tools: impl IntoIterator<Item = &'a str>,
    taken: &HashSet<String>,
) -> BTreeMap<String, String> {
    let mut used: HashSet<String> = taken.clone();
    let mut out = BTreeMap::new();
    for tool in tools {
        let mut name = exposed_name(server, tool);
        let mut n = 0u32;
        while used.contains(&name) {
            let seed = format!("{server}\u{0}{tool}\u{0}{n}");
            name = with_suffix(&exposed_name(server, tool), &short_hash(&seed));
            n += 1;
        }
        used.insert(name.clone());
        out.insert(name, tool.to_string());
    }
    out
}

/// Whether `name` is a valid exposed tool name (`^[A-Za-z0-9_-]{1,64}$`).
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn short_names_stay_readable() {
        assert_eq!(
            exposed_name("gws", "calendar.updateEvent"),
            "mcp__gws__calendar_updateEvent"
        );
        assert_eq!(
            exposed_name("everything", "get-sum"),
            "mcp__everything__get-sum"
        );
    }

    #[test]
    fn long_names_are_cut_with_a_hash() {
        let long = "x".repeat(70);
        let a = exposed_name("srv", &long);
        let b = exposed_name("srv", &format!("{long}y"));
        assert_eq!(a.len(), 64);
        assert!(is_valid_name(&a) && is_valid_name(&b));
        assert_ne!(a, b);
    }

    #[test]
    fn collisions_get_distinct_names_and_never_take_builtins() {
        let taken: HashSet<String> = ["mcp__s__read".to_string()].into();
        let map = assign_names("s", ["a.b", "a_b", "a/b", "read"], &taken);
        assert_eq!(map.len(), 4);
        assert!(!map.contains_key("mcp__s__read"));
        assert!(map.keys().all(|k| is_valid_name(k)));
        assert_eq!(map["mcp__s__a_b"], "a.b");
    }
}
