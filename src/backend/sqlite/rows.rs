//! The `events` rows of schema 17 in SQLite: the shared row encoding
//! ([`crate::backend::rows`], re-exported here) plus how its values map to
//! SQLite's storage classes.

use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

pub use crate::backend::rows::*;

/// The column list matching [`StoredRow`], for SELECTs.
pub const ROW_COLUMNS: &str = "seq, type, time, data, source_event_seqs, surface_op, ignorable";

impl StoredRow {
    /// Reads a row selected with [`ROW_COLUMNS`].
    pub fn from_sql(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredRow> {
        Ok(StoredRow {
            seq: r.get(0)?,
            event_type: r.get(1)?,
            time: r.get(2)?,
            data: r.get(3)?,
            source_event_seqs: r.get(4)?,
            surface_op: r.get(5)?,
            ignorable: r.get(6)?,
        })
    }
}

impl FromSql for Value {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        Ok(match value {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Integer(i),
            ValueRef::Real(f) => Value::Real(f),
            // As rusqlite's own `Value` reads TEXT: invalid UTF-8 is an error.
            ValueRef::Text(t) => Value::Text(
                std::str::from_utf8(t)
                    .map_err(|e| rusqlite::types::FromSqlError::Other(Box::new(e)))?
                    .to_string(),
            ),
            ValueRef::Blob(b) => Value::Blob(b.to_vec()),
        })
    }
}

impl ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Integer(i) => ValueRef::Integer(*i),
            Value::Real(f) => ValueRef::Real(*f),
            Value::Text(t) => ValueRef::Text(t.as_bytes()),
            Value::Blob(b) => ValueRef::Blob(b),
        }))
    }
}
