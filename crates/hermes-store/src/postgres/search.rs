//! Full-text search on PostgreSQL, through the same sanitizer as SQLite's FTS5 search
//! (`crate::sanitize`) and with the same shape of results (`crate::search`):
//! 1. the parsed terms become a `tsquery` — each term a phrase of its words in the `simple`
//!    configuration (`hermes_term_query`, a trailing `*` a prefix on its last word), terms of
//!    an OR-group joined by `&&` (`NOT term` as `&& !!term`), groups by `||`, which keeps
//!    FTS5's precedence (NOT, then AND, then OR) — matched against the GIN-indexed
//!    `messages.search_tsv`, ranked by `ts_rank` (length-normalized, as BM25 is) over the
//!    newest [`RANK_WINDOW`] matches; [`SearchHit::rank`] is the negated rank, so lower is
//!    better as with SQLite's `bm25`;
//! 2. when a term has CJK characters, the OR-groups with a CJK term also run as
//!    case-insensitive substring matches (`ILIKE`) served by the `pg_trgm` index, their extra
//!    hits appended with rank `0.0`, as SQLite does with its trigram table.
//!
//! Snippets mark matched words with `>>>` and `<<<` (`ts_headline`, about 16 words).

use hermes_protocol::Role;
use tokio_postgres::Row;

use super::db::{Db, read};
use super::schema::{SEARCH_TEXT, TSV_CHARS};
use crate::error::StoreError;
use crate::sanitize::{Item, Op, parse_query};
use crate::search::{
    DEFAULT_LIMIT, RANK_WINDOW, cjk_groups, escape_like, has_cjk_term, substring_snippet,
};
use crate::store::from_ts;
use crate::types::{SearchHit, SearchQuery};

/// The `tsquery` SQL for `items` over the parameters `$1` (term texts, `text[]`) and `$2`
/// (prefix flags, `bool[]`), with those arrays.
fn tsquery(items: &[Item]) -> (String, Vec<String>, Vec<bool>) {
    let mut groups: Vec<Vec<String>> = vec![Vec::new()];
    let mut terms = Vec::new();
    let mut prefixes = Vec::new();
    let mut negate = false;
    for item in items {
        match item {
            Item::Op(Op::Or) => groups.push(Vec::new()),
            Item::Op(Op::Not) => negate = true,
            Item::Op(Op::And) => {}
            Item::Term { text, prefix, .. } => {
                terms.push(text.clone());
                prefixes.push(*prefix);
                let k = terms.len();
                let q = format!("hermes_term_query(($1::text[])[{k}], ($2::bool[])[{k}])");
                if let Some(group) = groups.last_mut() {
                    group.push(if negate { format!("!!{q}") } else { q });
                }
                negate = false;
            }
        }
    }
    let sql = groups
        .into_iter()
        .filter(|g| !g.is_empty())
        .map(|g| format!("({})", g.join(" && ")))
        .collect::<Vec<_>>()
        .join(" || ");
    (sql, terms, prefixes)
}

fn hit_from_row(row: &Row, snippet: String, rank: f64) -> Result<SearchHit, StoreError> {
    let role: String = row.try_get(2)?;
    Ok(SearchHit {
        message_id: row.try_get(0)?,
        session_id: row.try_get(1)?,
        role: Role::parse(&role).unwrap_or(Role::User),
        session_title: row.try_get(3)?,
        started_at: from_ts(row.try_get(4)?),
        active: row.try_get::<_, i64>(5)? != 0,
        snippet,
        rank,
    })
}

impl Db {
    pub(crate) async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>, StoreError> {
        let items = parse_query(&query.text);
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let limit = if query.limit == 0 {
            DEFAULT_LIMIT
        } else {
            query.limit
        };
        let limit_sql = i64::try_from(limit).unwrap_or(i64::MAX);
        let session_id = query.session_id.as_deref();
        let role = query.role.map(Role::as_str);
        let (expr, terms, prefixes) = tsquery(&items);
        let best_sql = format!(
            "WITH q AS (SELECT {expr} AS q) \
             SELECT w.id, (-ts_rank(w.search_tsv, q.q, 1))::float8 AS rank FROM \
             (SELECT m.id, m.search_tsv FROM messages m, q WHERE m.search_tsv @@ q.q \
              AND ($3::text IS NULL OR m.session_id = $3) AND ($4::text IS NULL OR m.role = $4) \
              ORDER BY m.id DESC LIMIT $6) w, q \
             ORDER BY rank, w.id DESC LIMIT $5"
        );
        let detail_sql = format!(
            "WITH q AS (SELECT {expr} AS q) \
             SELECT m.id, m.session_id, m.role, s.title, s.started_at, m.active, \
             ts_headline('simple'::regconfig, left({SEARCH_TEXT}, {TSV_CHARS}), q.q, \
             'StartSel=>>>, StopSel=<<<, MaxWords=16, MinWords=6, ShortWord=0, \
             MaxFragments=1, FragmentDelimiter=…') \
             FROM messages m JOIN sessions s ON s.id = m.session_id, q \
             WHERE m.id = ANY($3)"
        );
        let mut hits = read!(self, "search", |c| {
            let best = c
                .query(
                    &best_sql,
                    &[
                        &terms,
                        &prefixes,
                        &session_id,
                        &role,
                        &limit_sql,
                        &RANK_WINDOW,
                    ],
                )
                .await?;
            let mut ranked: Vec<(i64, f64)> = Vec::with_capacity(best.len());
            for r in &best {
                ranked.push((r.try_get(0)?, r.try_get(1)?));
            }
            if ranked.is_empty() {
                return Ok(Vec::new());
            }
            let ids: Vec<i64> = ranked.iter().map(|r| r.0).collect();
            let rows = c.query(&detail_sql, &[&terms, &prefixes, &ids]).await?;
            let mut found = Vec::with_capacity(rows.len());
            for row in &rows {
                found.push(hit_from_row(row, row.try_get(6)?, 0.0)?);
            }
            // Back into rank order; a row deleted between the two queries is left out.
            let mut hits = Vec::with_capacity(ranked.len());
            for (id, rank) in ranked {
                if let Some(at) = found.iter().position(|h| h.message_id == id) {
                    let mut hit = found.swap_remove(at);
                    hit.rank = rank;
                    hits.push(hit);
                }
            }
            Ok(hits)
        })?;
        if has_cjk_term(&items) && hits.len() < limit {
            let extra = self
                .substring_search(&items, session_id, role, limit_sql)
                .await?;
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

    async fn substring_search(
        &self,
        items: &[Item],
        session_id: Option<&str>,
        role: Option<&str>,
        limit: i64,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let mut patterns = Vec::new();
        let mut positives = Vec::new();
        let mut sql_groups = Vec::new();
        for group in cjk_groups(items) {
            let mut conds = Vec::new();
            for (positive, text) in group {
                patterns.push(format!("%{}%", escape_like(&text)));
                let cond = format!(
                    "{SEARCH_TEXT} ILIKE ($4::text[])[{}] ESCAPE '\\'",
                    patterns.len()
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
        if sql_groups.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT m.id, m.session_id, m.role, s.title, s.started_at, m.active, {SEARCH_TEXT} \
             FROM messages m JOIN sessions s ON s.id = m.session_id \
             WHERE ({}) AND ($1::text IS NULL OR m.session_id = $1) \
             AND ($2::text IS NULL OR m.role = $2) ORDER BY m.id DESC LIMIT $3",
            sql_groups.join(" OR ")
        );
        read!(self, "search", |c| {
            let rows = c
                .query(&sql, &[&session_id, &role, &limit, &patterns])
                .await?;
            let mut hits = Vec::with_capacity(rows.len());
            for row in &rows {
                let body: String = row.try_get(6)?;
                hits.push(hit_from_row(
                    row,
                    substring_snippet(&body, &positives),
                    0.0,
                )?);
            }
            Ok(hits)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn or_groups_and_not_keep_fts5_precedence() {
        let (sql, terms, prefixes) = tsquery(&parse_query("alpha beta* NOT gamma OR delta"));
        assert_eq!(terms, vec!["alpha", "beta", "gamma", "delta"]);
        assert_eq!(prefixes, vec![false, true, false, false]);
        assert_eq!(
            sql,
            "(hermes_term_query(($1::text[])[1], ($2::bool[])[1]) && \
             hermes_term_query(($1::text[])[2], ($2::bool[])[2]) && \
             !!hermes_term_query(($1::text[])[3], ($2::bool[])[3])) || \
             (hermes_term_query(($1::text[])[4], ($2::bool[])[4]))"
        );
    }
}
