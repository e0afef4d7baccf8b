//! Full-text search over messages (FEATURES §10 `session_search` discovery).
//!
//! The query is parsed by the sanitizer, then:
//! 1. the rendered FTS5 expression runs against `messages_fts` (`unicode61`, ranked by
//!    `bm25` over the newest 5,000 matches: [`RANK_WINDOW`]), which finds words, tool names
//!    and tool arguments;
//! 2. when any term contains CJK characters, the same terms also run as substring matches
//!    (`LIKE '%term%'`) against the `trigram` table `messages_fts_trigram` (the trigram index serves
//!    terms of 3+ chars; shorter ones scan), because `unicode61` keeps a run of CJK characters
//!    as one token and cannot find `笔记` inside `我的笔记本`. Its extra hits are appended
//!    after the ranked ones with rank `0.0`. OR-groups keep their meaning; `NOT term`
//!    excludes, and AND (explicit or implicit) requires every term of a group. Only groups
//!    with a CJK term run this way: a group of non-CJK words is the word search's. (The
//!    trigram table is Python's and indexes every message; a CJK term of one or two
//!    characters cannot use it and scans it.)
//!
//! Inactive messages are included (FEATURES §9) and flagged in [`SearchHit::active`].

use hermes_protocol::Role;
use rusqlite::{Connection, Row, ToSql};

use crate::error::StoreError;
use crate::sanitize::{Item, Op, parse_query, render};
use crate::store::{SqliteStore, from_ts};
use crate::types::{SearchHit, SearchQuery};

/// Hits returned when [`SearchQuery::limit`] is 0.
pub(crate) const DEFAULT_LIMIT: usize = 20;

/// Matches ranked per word search: the newest this many (by message id). A query matching
/// more messages returns the best `limit` of its newest 5,000 matches, which bounds a frequent
/// term's cost (`bm25` reads every ranked match's positions, ~1.5 µs each) — at 1M messages
/// the slowest of the fixed benchmark queries match ~15,000 (issue 6: p99 ≤ 20 ms). Queries
/// with fewer matches are ranked over all of them.
pub(crate) const RANK_WINDOW: i64 = 5_000;

/// Chars of context kept on each side of a substring hit in its snippet.
const SNIPPET_CONTEXT: usize = 40;

const HIT_COLUMNS: &str = "m.id, m.session_id, m.role, s.title, s.started_at, m.active";

impl SqliteStore {
    /// Searches message text, tool names and tool arguments; best hits first.
    ///
    /// `query.text` goes through [`crate::sanitize_fts_query`], so any input is a valid query;
    /// a query without letters or digits returns no hits. Errors only for database failures.
    pub fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>, StoreError> {
        let items = parse_query(&query.text);
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let limit = if query.limit == 0 {
            DEFAULT_LIMIT
        } else {
            query.limit
        };
        let filters = Filters {
            session_id: query.session_id.as_deref(),
            role: query.role.map(Role::as_str),
            limit: i64::try_from(limit).unwrap_or(i64::MAX),
        };
        let conn = self.lock();
        let mut hits =
            word_search(&conn, &render(&items), &filters).map_err(self.sql_err("search"))?;
        if has_cjk_term(&items) && hits.len() < limit {
            let extra =
                substring_search(&conn, &items, &filters).map_err(self.sql_err("search"))?;
            for hit in extra {
                if hits.len() >= limit {
                    break;
                }
                if !hits.iter().any(|h| h.message_id == hit.message_id) {
                    hits.push(hit);
                }
            }
        }
        Ok(hits)
    }
}

struct Filters<'a> {
    session_id: Option<&'a str>,
    role: Option<&'static str>,
    limit: i64,
}

fn hit_from_row(row: &Row<'_>, snippet: String, rank: f64) -> rusqlite::Result<SearchHit> {
    let role: String = row.get(2)?;
    Ok(SearchHit {
        message_id: row.get(0)?,
        session_id: row.get(1)?,
        role: Role::parse(&role).unwrap_or(Role::User),
        session_title: row.get(3)?,
        started_at: from_ts(row.get(4)?),
        active: row.get::<_, i64>(5)? != 0,
        snippet,
        rank,
    })
}

/// Ranked word search in two steps, so the cost of a frequent term is one bounded pass over
/// its doclist and not a snippet and two joins per match:
/// 1. the best `limit` rowids by `bm25` among the newest [`RANK_WINDOW`] matches — from the
///    FTS table alone when no filter is set, else joined with `messages` for the filters;
/// 2. the columns and the snippet of those rows only, in one query bounded by their rowid
///    range.
fn word_search(conn: &Connection, fts: &str, f: &Filters<'_>) -> rusqlite::Result<Vec<SearchHit>> {
    let best: Vec<(i64, f64)> = if f.session_id.is_none() && f.role.is_none() {
        let mut st = conn.prepare_cached(
            "SELECT rowid, rank FROM (SELECT rowid, rank FROM messages_fts \
             WHERE messages_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?3) ORDER BY rank LIMIT ?2",
        )?;
        st.query_map(rusqlite::params![fts, f.limit, RANK_WINDOW], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<rusqlite::Result<_>>()?
    } else {
        let mut st = conn.prepare_cached(
            "SELECT rowid, rank FROM (SELECT messages_fts.rowid, messages_fts.rank \
             FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid \
             WHERE messages_fts MATCH ?1 AND (?2 IS NULL OR m.session_id = ?2) \
             AND (?3 IS NULL OR m.role = ?3) ORDER BY messages_fts.rowid DESC LIMIT ?5) \
             ORDER BY rank LIMIT ?4",
        )?;
        st.query_map(
            rusqlite::params![fts, f.session_id, f.role, f.limit, RANK_WINDOW],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?
        .collect::<rusqlite::Result<_>>()?
    };
    let (Some(low), Some(high)) = (
        best.iter().map(|b| b.0).min(),
        best.iter().map(|b| b.0).max(),
    ) else {
        return Ok(Vec::new());
    };
    // One query for all rows: a prefix term's doclists are merged once per query, so a
    // lookup per row would repeat that merge `limit` times. FTS5 gets the rowid range and
    // skips the rest of the doclist; the unary `+` keeps the `IN` list from being handed to
    // FTS5 as one `rowid =` lookup per value, and it filters rows before their snippet.
    let marks = vec!["?"; best.len()].join(", ");
    let mut st = conn.prepare(&format!(
        "SELECT {HIT_COLUMNS}, snippet(messages_fts, -1, '>>>', '<<<', '…', 16) \
         FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid \
         JOIN sessions s ON s.id = m.session_id \
         WHERE messages_fts MATCH ? AND messages_fts.rowid BETWEEN ? AND ? \
         AND +messages_fts.rowid IN ({marks})"
    ))?;
    let mut params: Vec<&dyn ToSql> = vec![&fts, &low, &high];
    params.extend(best.iter().map(|(rowid, _)| rowid as &dyn ToSql));
    let mut found = st
        .query_map(params.as_slice(), |row| hit_from_row(row, row.get(6)?, 0.0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    // Back into rank order; a row deleted between the two steps is simply not reported.
    let mut hits = Vec::with_capacity(best.len());
    for (rowid, rank) in best {
        if let Some(at) = found.iter().position(|h| h.message_id == rowid) {
            let mut hit = found.swap_remove(at);
            hit.rank = rank;
            hits.push(hit);
        }
    }
    Ok(hits)
}

/// Code-point ranges treated as CJK (Hangul, kana, Bopomofo, ideographs and their
/// extensions).
pub(crate) const CJK_RANGES: &[(u32, u32)] = &[
    (0x1100, 0x11FF),   // Hangul Jamo
    (0x2E80, 0x2FDF),   // CJK radicals
    (0x3040, 0x30FF),   // Hiragana, Katakana
    (0x3100, 0x312F),   // Bopomofo
    (0x3130, 0x318F),   // Hangul compatibility Jamo
    (0x31F0, 0x31FF),   // Katakana extensions
    (0x3400, 0x4DBF),   // CJK extension A
    (0x4E00, 0x9FFF),   // CJK unified ideographs
    (0xAC00, 0xD7AF),   // Hangul syllables
    (0xF900, 0xFAFF),   // CJK compatibility ideographs
    (0xFF66, 0xFF9F),   // half-width Katakana
    (0x20000, 0x323AF), // CJK extensions B–H
];

fn is_cjk(c: char) -> bool {
    let c = c as u32;
    CJK_RANGES.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

pub(crate) fn has_cjk_term(items: &[Item]) -> bool {
    items
        .iter()
        .any(|i| matches!(i, Item::Term { text, .. } if text.chars().any(is_cjk)))
}

/// The OR-groups of `items` that have a positive CJK term, each a list of `(positive, term)`
/// (AND within a group; `NOT term` is a negative): what the substring search runs. Groups
/// without a positive CJK term are the word search's.
pub(crate) fn cjk_groups(items: &[Item]) -> Vec<Vec<(bool, String)>> {
    let mut groups: Vec<Vec<(bool, String)>> = vec![Vec::new()];
    let mut negate = false;
    for item in items {
        match item {
            Item::Op(Op::Or) => groups.push(Vec::new()),
            Item::Op(Op::Not) => negate = true,
            Item::Op(Op::And) => {}
            Item::Term { text, .. } => {
                if let Some(group) = groups.last_mut() {
                    group.push((!negate, text.clone()));
                }
                negate = false;
            }
        }
    }
    groups.retain(|g| {
        g.iter()
            .any(|(positive, text)| *positive && text.chars().any(is_cjk))
    });
    groups
}

/// `(a AND b AND NOT c) OR (d)` over `LIKE` conditions; returns the SQL and the patterns.
fn like_expression(items: &[Item]) -> (String, Vec<String>, Vec<String>) {
    let mut params = Vec::new();
    let mut positives = Vec::new();
    let mut sql_groups = Vec::new();
    for group in cjk_groups(items) {
        let mut conds = Vec::new();
        for (positive, text) in group {
            params.push(format!("%{}%", escape_like(&text)));
            let cond = format!(
                "messages_fts_trigram.content LIKE ?{} ESCAPE '\\'",
                params.len() + 3
            );
            if positive {
                conds.push(cond);
                positives.push(text);
            } else {
                conds.push(format!("NOT ({cond})"));
            }
        }
        sql_groups.push(format!("({})", conds.join(" AND ")));
    }
    (sql_groups.join(" OR "), params, positives)
}

pub(crate) fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn substring_search(
    conn: &Connection,
    items: &[Item],
    f: &Filters<'_>,
) -> rusqlite::Result<Vec<SearchHit>> {
    let (expr, patterns, positives) = like_expression(items);
    if expr.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT {HIT_COLUMNS}, messages_fts_trigram.content \
         FROM messages_fts_trigram JOIN messages m ON m.id = messages_fts_trigram.rowid \
         JOIN sessions s ON s.id = m.session_id \
         WHERE ({expr}) AND (?1 IS NULL OR m.session_id = ?1) \
         AND (?2 IS NULL OR m.role = ?2) ORDER BY m.id DESC LIMIT ?3"
    );
    let mut params: Vec<&dyn ToSql> = vec![&f.session_id, &f.role, &f.limit];
    for p in &patterns {
        params.push(p);
    }
    let mut st = conn.prepare(&sql)?;
    let rows = st.query_map(params.as_slice(), |row| {
        let body: String = row.get(6)?;
        hit_from_row(row, substring_snippet(&body, &positives), 0.0)
    })?;
    rows.collect()
}

/// Up to [`SNIPPET_CONTEXT`] chars either side of the first positive term found in `body`
/// (ASCII case-insensitive), the term wrapped in `>>>`/`<<<`.
pub(crate) fn substring_snippet(body: &str, terms: &[String]) -> String {
    let chars: Vec<char> = body.chars().collect();
    let lower: Vec<char> = chars.iter().map(|c| c.to_ascii_lowercase()).collect();
    for term in terms {
        let needle: Vec<char> = term.chars().map(|c| c.to_ascii_lowercase()).collect();
        if needle.is_empty() || needle.len() > lower.len() {
            continue;
        }
        if let Some(at) = lower
            .windows(needle.len())
            .position(|w| w == needle.as_slice())
        {
            let end = at + needle.len();
            let from = at.saturating_sub(SNIPPET_CONTEXT);
            let to = (end + SNIPPET_CONTEXT).min(chars.len());
            let mut out = String::new();
            if from > 0 {
                out.push('…');
            }
            out.extend(&chars[from..at]);
            out.push_str(">>>");
            out.extend(&chars[at..end]);
            out.push_str("<<<");
            out.extend(&chars[end..to]);
            if to < chars.len() {
                out.push('…');
            }
            return out;
        }
    }
    chars.iter().take(SNIPPET_CONTEXT * 2).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_expression_keeps_or_groups_and_not() {
        let items = parse_query("笔记 OR 记录 NOT draft");
        let (sql, params, positives) = like_expression(&items);
        assert_eq!(params, vec!["%笔记%", "%记录%", "%draft%"]);
        assert_eq!(positives, vec!["笔记", "记录"]);
        assert!(sql.contains(" OR "));
        assert!(sql.contains("NOT (messages_fts_trigram.content LIKE ?6"));
    }

    #[test]
    fn like_expression_leaves_groups_without_cjk_to_the_word_search() {
        let items = parse_query("笔记 OR note-book NOT draft");
        let (sql, params, positives) = like_expression(&items);
        assert_eq!(params, vec!["%笔记%"]);
        assert_eq!(positives, vec!["笔记"]);
        assert!(!sql.contains(" OR "), "{sql}");
    }

    #[test]
    fn escapes_like_wildcards() {
        assert_eq!(escape_like("a%b_c\\"), "a\\%b\\_c\\\\");
    }

    #[test]
    fn snippet_marks_the_term() {
        assert_eq!(
            substring_snippet("我的笔记本", &["笔记".to_string()]),
            "我的>>>笔记<<<本"
        );
    }
}
