//! The values `hermes sessiondb migrate` carries from SQLite to PostgreSQL (`import.rs`):
//! typed cells, the columns both stores have, and the per-session checksum over them.

use rusqlite::types::ValueRef;
use sha2::{Digest, Sha256};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use super::db::{Db, read};
use crate::error::StoreError;

/// One value on its way from SQLite to a PostgreSQL column of type `TEXT`, `BIGINT` or
/// `DOUBLE PRECISION`.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Cell {
    Text(Option<String>),
    Int(Option<i64>),
    Float(Option<f64>),
}

impl ToSql for Cell {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Cell::Text(v) => v.to_sql(ty, out),
            Cell::Int(v) => v.to_sql(ty, out),
            Cell::Float(v) => v.to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        <String as ToSql>::accepts(ty) || <i64 as ToSql>::accepts(ty) || <f64 as ToSql>::accepts(ty)
    }

    to_sql_checked!();
}

impl Cell {
    /// Hash input: a tag and the exact value (floats by their bits).
    pub(super) fn feed(&self, h: &mut Sha256) {
        match self {
            Cell::Text(None) | Cell::Int(None) | Cell::Float(None) => h.update([0u8]),
            Cell::Text(Some(s)) => {
                h.update([1u8]);
                h.update((s.len() as u64).to_le_bytes());
                h.update(s.as_bytes());
            }
            Cell::Int(Some(i)) => {
                h.update([2u8]);
                h.update(i.to_le_bytes());
            }
            Cell::Float(Some(f)) => {
                h.update([3u8]);
                h.update(f.to_bits().to_le_bytes());
            }
        }
    }

    pub(super) fn from_pg(
        row: &tokio_postgres::Row,
        i: usize,
        kind: Kind,
    ) -> Result<Cell, StoreError> {
        Ok(match kind {
            Kind::Text => Cell::Text(row.try_get(i)?),
            Kind::Int => Cell::Int(row.try_get(i)?),
            Kind::Float => Cell::Float(row.try_get(i)?),
        })
    }
}

/// The PostgreSQL type of a copied column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Text,
    Int,
    Float,
}

/// A column both stores have.
#[derive(Debug, Clone)]
pub(super) struct Column {
    pub(super) name: String,
    pub(super) kind: Kind,
}

/// SQLite's value as a cell of `kind`; `where_` names it in an error.
pub(super) fn convert(
    v: ValueRef<'_>,
    kind: Kind,
    where_: &dyn Fn() -> String,
) -> Result<Cell, StoreError> {
    let bad = |what: &str| StoreError::Import {
        detail: format!("{}: {what} cannot be stored as {kind:?}", where_()),
    };
    Ok(match (kind, v) {
        (Kind::Text, ValueRef::Null) => Cell::Text(None),
        (Kind::Text, ValueRef::Text(t)) => {
            Cell::Text(Some(String::from_utf8_lossy(t).into_owned()))
        }
        (Kind::Text, ValueRef::Blob(b)) => {
            Cell::Text(Some(String::from_utf8_lossy(b).into_owned()))
        }
        (Kind::Text, ValueRef::Integer(i)) => Cell::Text(Some(i.to_string())),
        (Kind::Text, ValueRef::Real(f)) => Cell::Text(Some(f.to_string())),
        (Kind::Int, ValueRef::Null) => Cell::Int(None),
        (Kind::Int, ValueRef::Integer(i)) => Cell::Int(Some(i)),
        (Kind::Int, ValueRef::Real(f)) if f.fract() == 0.0 => Cell::Int(Some(f as i64)),
        (Kind::Int, ValueRef::Text(t)) => {
            let s = String::from_utf8_lossy(t);
            Cell::Int(Some(s.trim().parse().map_err(|_| bad(&format!("`{s}`")))?))
        }
        (Kind::Float, ValueRef::Null) => Cell::Float(None),
        (Kind::Float, ValueRef::Real(f)) => Cell::Float(Some(f)),
        (Kind::Float, ValueRef::Integer(i)) => Cell::Float(Some(i as f64)),
        (Kind::Float, ValueRef::Text(t)) => {
            let s = String::from_utf8_lossy(t);
            Cell::Float(Some(s.trim().parse().map_err(|_| bad(&format!("`{s}`")))?))
        }
        (_, other) => return Err(bad(&format!("{:?}", other.data_type()))),
    })
}

/// The columns of `table` PostgreSQL stores and SQLite has, in PostgreSQL's order.
pub(super) async fn common_columns(
    db: &Db,
    table: &'static str,
    sqlite: &[String],
) -> Result<Vec<Column>, StoreError> {
    let rows = read!(db, "import", |c| {
        Ok(c.query(
            "SELECT column_name::text, data_type::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1 \
             AND is_generated = 'NEVER' AND column_name <> 'hermes_seq' \
             ORDER BY ordinal_position",
            &[&table],
        )
        .await?)
    })?;
    let mut out = Vec::new();
    for r in rows {
        let name: String = r.try_get(0)?;
        let ty: String = r.try_get(1)?;
        let kind = match ty.as_str() {
            "bigint" | "integer" => Kind::Int,
            "double precision" | "real" => Kind::Float,
            _ => Kind::Text,
        };
        if sqlite.iter().any(|s| s == &name) {
            out.push(Column { name, kind });
        }
    }
    Ok(out)
}

pub(super) fn sqlite_columns(
    conn: &rusqlite::Connection,
    table: &str,
) -> Result<Vec<String>, StoreError> {
    let mut st = conn
        .prepare(&format!("PRAGMA table_info({table})"))
        .map_err(src_err("table_info"))?;
    let names = st
        .query_map([], |r| r.get::<_, String>(1))
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(src_err("table_info"))?;
    Ok(names)
}

pub(super) fn src_err(op: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
    move |source| StoreError::Sqlite {
        op,
        db: "migrate source".into(),
        source,
    }
}

/// Rows of `sql` (selecting `columns` in order) as cells.
pub(super) fn read_rows(
    conn: &rusqlite::Connection,
    table: &str,
    columns: &[Column],
    sql: &str,
    params: &[&dyn rusqlite::ToSql],
) -> Result<Vec<Vec<Cell>>, StoreError> {
    let mut st = conn.prepare_cached(sql).map_err(src_err("read"))?;
    let mut rows = st.query(params).map_err(src_err("read"))?;
    let mut out = Vec::new();
    let mut n = 0usize;
    while let Some(row) = rows.next().map_err(src_err("read"))? {
        n += 1;
        let mut cells = Vec::with_capacity(columns.len());
        for (i, col) in columns.iter().enumerate() {
            let v = row.get_ref(i).map_err(src_err("read"))?;
            let where_ = || format!("{table}.{} of row {n}", col.name);
            cells.push(convert(v, col.kind, &where_)?);
        }
        out.push(cells);
    }
    Ok(out)
}

pub(super) fn select(columns: &[Column], table: &str, rest: &str) -> String {
    let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    format!("SELECT {} FROM {table} {rest}", names.join(", "))
}

pub(super) fn insert(columns: &[Column], table: &str, rest: &str) -> String {
    let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    let marks: Vec<String> = (1..=columns.len()).map(|i| format!("${i}")).collect();
    format!(
        "INSERT INTO {table} ({}) VALUES ({}) {rest}",
        names.join(", "),
        marks.join(", ")
    )
}

pub(super) fn params(cells: &[Cell]) -> Vec<&(dyn ToSql + Sync)> {
    cells.iter().map(|c| c as &(dyn ToSql + Sync)).collect()
}

/// The message columns the checksum covers: every copied column but the row id and the
/// session (which the target may renumber or which is the key).
pub(super) fn checked(columns: &[Column]) -> Vec<usize> {
    columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.name != "id" && c.name != "session_id")
        .map(|(i, _)| i)
        .collect()
}

pub(super) fn checksum(messages: &[(Vec<Cell>, [Option<String>; 3])]) -> String {
    let mut h = Sha256::new();
    for (cells, extras) in messages {
        for c in cells {
            c.feed(&mut h);
        }
        for extra in extras {
            Cell::Text(extra.clone()).feed(&mut h);
        }
    }
    hex::encode(h.finalize())
}
