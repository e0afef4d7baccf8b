//! Full-text search on PostgreSQL, through the same sanitizer as SQLite's FTS5 search
//! (`crate::sanitize`) and with the same shape of results (`crate::search`):
//! 1. the parsed terms become a `tsquery` — each term a phrase of its words in the `simple`
//!    configuration (`hermes_term_query`, a trailing `*` a prefix on its last word), terms of
//!    an OR-group joined by `&&` (`NOT term` as `&& !!term`), groups by `||`, which keeps
//!    FTS5's precedence (NOT, then AND, then OR) — matched against the GIN-indexed
//!    `messages.search_tsv`, ranked by `ts_rank` (length-normalized, as BM25 is) over the
//!    newest [`RANK_WINDOW`] matches; [`SearchHit::rank`] is the negated rank, so lower is
//!    better as with SQLite's `bm25`;
//! 2. those newest matches are gathered a few id slices at a time, newest first: the word
//!    index's second column is the message's slice (`ARRAY[id >> SLICE_BITS]`, 65,536 ids;
//!    schema version 4), so a query naming slices fetches only their matches (a GIN bitmap
//!    has no order: one query over all ids fetches every match of a frequent word before
//!    keeping the newest). The first step takes the newest slice (two when it holds less
//!    than half a slice of ids); each next one as many slices below as the density of the
//!    matches counted so far says hold the missing ones, plus [`SPAN_MARGIN`]; the step
//!    that would reach the oldest slice (at once when nothing matched so far: a rare term)
//!    takes all the ids left, without naming slices. A step expected to find
//!    [`SPLIT_MATCHES`] (the first step whenever it stays above the oldest slice, then one
//!    slice wider) runs as two queries at once, each over alternate slices of the step (the
//!    ids shared evenly), the second on another pooled connection when one is free:
//!    fetching the matched rows is most of the time, and two server processes do it in
//!    parallel. A step to the oldest slice is split only up to [`MAX_SPLIT_SLICES`], its
//!    parts naming their slices. Each query returns all the matches of its slices as arrays
//!    of ids and ranks, the rank computed as each row is fetched (no sort or `LIMIT` on the
//!    server: the bitmap scan fetches every match anyway, and a small `LIMIT` under
//!    `ORDER BY id DESC` can make the planner walk the primary key backwards through every
//!    newer message instead); the newest of a step's matches still missing from the
//!    window are kept, and the window's [`RANK_WINDOW`] ranked by rank then newest first,
//!    cut to `limit`, are what one query over the whole window returns;
//! 3. when a term has CJK characters, the OR-groups with a CJK term also run as
//!    case-insensitive substring matches (`ILIKE`) served by the `pg_trgm` index, their extra
//!    hits appended with rank `0.0`, as SQLite does with its trigram table.
//!
//! Snippets mark matched words with `>>>` and `<<<` (`ts_headline`, about 16 words).

use hermes_protocol::Role;
use tokio_postgres::Row;
use tokio_postgres::types::{ToSql, Type};

use super::db::{Db, read};
use super::schema::{SEARCH_TEXT, SLICE_BITS, TSV_CHARS};
use crate::error::StoreError;
use crate::sanitize::{Item, Op, parse_query};
use crate::search::{
    DEFAULT_LIMIT, RANK_WINDOW, cjk_groups, escape_like, has_cjk_term, substring_snippet,
};
use crate::store::from_ts;
use crate::types::{SearchHit, SearchQuery};

/// How much further than the density of the matches counted so far suggests the next query
/// reaches, so that it usually holds all the missing ones (one more query when it does not).
const SPAN_MARGIN: f64 = 1.15;

/// A step of the window expected to find at least this many matches runs as two queries
/// over alternate slices of it, at once on two pooled connections: most of a query's time
/// is fetching the matched rows, which two server processes do in parallel.
const SPLIT_MATCHES: i64 = 1_000;

/// A step that reaches the oldest slice is split only when it has at most this many
/// slices (each part names its slices: a long list makes the index scan slower than one
/// query over all the ids left).
const MAX_SPLIT_SLICES: i64 = 32;

/// Slices for the query after one that reached down to slice `lowest`, the search having
/// found `collected` matches among the ids from that slice's first to `top` and still
/// wanting `want`: as many as that density says hold them, plus [`SPAN_MARGIN`] (everything
/// left when nothing matched yet).
fn next_width(top: i64, lowest: i64, collected: i64, want: i64) -> i64 {
    if collected <= 0 {
        return i64::MAX;
    }
    let first_id = lowest.saturating_mul(1 << SLICE_BITS);
    let covered = top.saturating_sub(first_id).saturating_add(1).max(1);
    let reach = want as f64 * covered as f64 / collected as f64 * SPAN_MARGIN;
    // `as` saturates.
    ((reach / (1i64 << SLICE_BITS) as f64).ceil() as i64).max(1)
}

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

/// Where one query of the window looks: the named slices (`ARRAY[id >> SLICE_BITS]`), or
/// every id up to the given one (the oldest slices, not named).
enum Part {
    Slices(Vec<i64>),
    Upto(i64),
}

/// The queries that gather a search's window (`Db::search`) and what they share.
struct Window<'a> {
    slices_sql: String,
    upto_sql: String,
    terms: &'a [String],
    prefixes: &'a [bool],
    session_id: Option<&'a str>,
    role: Option<&'a str>,
}

impl Window<'_> {
    /// The matches in `part` as `(id, rank)`, in no particular order.
    async fn part(
        &self,
        c: &tokio_postgres::Client,
        part: &Part,
    ) -> Result<Vec<(i64, f64)>, StoreError> {
        let (sql, bound): (&str, (&(dyn ToSql + Sync), Type)) = match part {
            Part::Slices(slices) => (&self.slices_sql, (slices, Type::INT8_ARRAY)),
            Part::Upto(last) => (&self.upto_sql, (last, Type::INT8)),
        };
        let row = c
            .query_typed_one(
                sql,
                &[
                    (&self.terms, Type::TEXT_ARRAY),
                    (&self.prefixes, Type::BOOL_ARRAY),
                    (&self.session_id, Type::TEXT),
                    (&self.role, Type::TEXT),
                    bound,
                ],
            )
            .await?;
        let ids: Option<Vec<i64>> = row.try_get(0)?;
        let ranks: Option<Vec<f64>> = row.try_get(1)?;
        Ok(ids
            .unwrap_or_default()
            .into_iter()
            .zip(ranks.unwrap_or_default())
            .collect())
    }
}

/// The queries of one step of the window: the slices `lowest..=next` (`upto`: everything
/// from `next` down), one query or (`split`) two over alternate slices of them, which
/// share the ids (and the matches) about evenly, whatever the density's trend; the top
/// slice holds only the ids up to `top`. An `upto` step is split only when it has at most
/// [`MAX_SPLIT_SLICES`] slices above `bottom`, its parts then naming their slices.
fn step_parts(top: i64, next: i64, lowest: i64, upto: bool, bottom: i64, split: bool) -> Vec<Part> {
    let lowest = if upto { bottom.min(next) } else { lowest };
    let slices = next - lowest + 1;
    if split && slices >= 2 && (!upto || slices <= MAX_SPLIT_SLICES) {
        // Newest first, each slice to the part with fewer ids so far.
        let mut parts: [(Vec<i64>, i64); 2] = [(Vec::new(), 0), (Vec::new(), 0)];
        for slice in (lowest..=next).rev() {
            let first_id = slice.saturating_mul(1 << SLICE_BITS);
            let ids = top.min(first_id + (1 << SLICE_BITS) - 1) - first_id + 1;
            let part = if parts[1].1 < parts[0].1 { 1 } else { 0 };
            parts[part].0.push(slice);
            parts[part].1 += ids.max(0);
        }
        let [(a, _), (b, _)] = parts;
        vec![Part::Slices(a), Part::Slices(b)]
    } else if upto {
        let last_id = next
            .saturating_add(1)
            .saturating_mul(1 << SLICE_BITS)
            .saturating_sub(1);
        vec![Part::Upto(last_id)]
    } else {
        vec![Part::Slices((lowest..=next).collect())]
    }
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
        // The matches among the slices `$5` (`bigint[]`) or the ids up to `$5` (`bigint`),
        // as arrays of ids and ranks, ranked as the rows are fetched. All of them, not the
        // newest few (the client keeps those): the bitmap scan fetches every match before
        // any sort anyway, and with `ORDER BY id DESC LIMIT` a small limit can make the
        // planner walk the primary key backwards instead, through every newer message.
        let window_sql = |bound: &str| {
            format!(
                "WITH q AS (SELECT {expr} AS q) \
                 SELECT array_agg(m.id), array_agg((-ts_rank(m.search_tsv, q.q, 1))::float8) \
                 FROM messages m, q WHERE m.search_tsv @@ q.q AND {bound} \
                 AND ($3::text IS NULL OR m.session_id = $3) \
                 AND ($4::text IS NULL OR m.role = $4)"
            )
        };
        let window = Window {
            slices_sql: window_sql(&format!("ARRAY[m.id >> {SLICE_BITS}] && $5::bigint[]")),
            upto_sql: window_sql("m.id <= $5::bigint"),
            terms: &terms,
            prefixes: &prefixes,
            session_id,
            role,
        };
        let span_sql = "SELECT max(id), min(id) FROM messages \
             WHERE ($1::text IS NULL OR session_id = $1) AND ($2::text IS NULL OR role = $2)";
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
            let span = c
                .query_typed_one(span_sql, &[(&session_id, Type::TEXT), (&role, Type::TEXT)])
                .await?;
            let (Some(top), Some(bottom)) = (
                span.try_get::<_, Option<i64>>(0)?,
                span.try_get::<_, Option<i64>>(1)?,
            ) else {
                return Ok(Vec::new());
            };
            // The window so far, newest first.
            let mut ranked: Vec<(i64, f64)> = Vec::new();
            let mut want = RANK_WINDOW;
            let bottom_slice = bottom >> SLICE_BITS;
            // The newest slice not searched yet, and how many to search from it down.
            let mut next = top >> SLICE_BITS;
            let mut width = if top & ((1 << SLICE_BITS) - 1) < 1 << (SLICE_BITS - 1) {
                2
            } else {
                1
            };
            // Matches expected in the next step (none known before the first).
            let mut expected = 0.0;
            let mut spare: Option<deadpool_postgres::Client> = None;
            let mut first = true;
            loop {
                // The first step is split whenever it stays above the oldest slice, one
                // slice wider (its matches are not counted yet, and always wanted).
                let worth = if first {
                    next.saturating_sub(width) > bottom_slice
                } else {
                    expected >= SPLIT_MATCHES as f64
                };
                let split = worth && {
                    if spare.is_none() {
                        spare = self.spare_client().await;
                    }
                    spare.is_some()
                };
                if first && split {
                    width += 1;
                }
                let lowest = next.saturating_sub(width - 1);
                let upto = lowest <= bottom_slice;
                let parts = step_parts(top, next, lowest, upto, bottom_slice, split);
                let found = match (&parts[..], &spare) {
                    ([a, b], Some(other)) => {
                        let (a, b) = tokio::join!(window.part(c, a), window.part(other, b));
                        let mut a = a?;
                        a.extend(b?);
                        a
                    }
                    _ => {
                        let mut found = Vec::new();
                        for part in &parts {
                            found.extend(window.part(c, part).await?);
                        }
                        found
                    }
                };
                // The step's newest, until the window is full.
                let mut found = found;
                found.sort_unstable_by_key(|r| std::cmp::Reverse(r.0));
                let take = found.len().min(usize::try_from(want).unwrap_or(0));
                ranked.extend_from_slice(&found[..take]);
                want -= take as i64;
                if want <= 0 || upto {
                    break;
                }
                first = false;
                let collected = RANK_WINDOW - want;
                width = next_width(top, lowest, collected, want);
                next = lowest - 1;
                // The density so far over the ids the next step covers.
                let covered = top - lowest.saturating_mul(1 << SLICE_BITS) + 1;
                let ids = (width as f64).min((next - bottom_slice + 1) as f64)
                    * (1i64 << SLICE_BITS) as f64;
                expected = (collected as f64 * ids / covered.max(1) as f64).min(want as f64);
            }
            // What `ORDER BY rank, id DESC LIMIT limit` over the whole window returns.
            ranked.sort_by(|a, b| {
                a.1.partial_cmp(&b.1)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(b.0.cmp(&a.0))
            });
            ranked.truncate(limit);
            if ranked.is_empty() {
                return Ok(Vec::new());
            }
            let ids: Vec<i64> = ranked.iter().map(|r| r.0).collect();
            let rows = c
                .query_typed(
                    &detail_sql,
                    &[
                        (&terms, Type::TEXT_ARRAY),
                        (&prefixes, Type::BOOL_ARRAY),
                        (&ids, Type::INT8_ARRAY),
                    ],
                )
                .await?;
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
