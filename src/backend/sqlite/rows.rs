//! The `events` rows of schema 17 in SQLite: the shared row encoding
//! ([`crate::backend::rows`], re-exported here) plus how its values map to
//! SQLite's storage classes.
//!
//! Stored bytes are untrusted: TEXT that is not valid UTF-8 is read with
//! U+FFFD in place of each bad sequence, as the original's SQLite driver
//! reads it, and a row storing more than `maxRecordBytes` is refused before
//! anything of it is copied ([`StoredRow::fetch`]).

use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

pub use crate::backend::rows::*;

/// The column list matching [`StoredRow`], for SELECTs.
pub const ROW_COLUMNS: &str = "seq, type, time, data, source_event_seqs, surface_op, ignorable";

/// Stored TEXT as a string: valid UTF-8 as is (the fast check), else with
/// U+FFFD in place of each invalid sequence, as the original reads it.
pub fn lossy_string(t: &[u8]) -> String {
    lossy_str(t).into_owned()
}

/// [`lossy_string`] borrowed where the text is valid UTF-8.
pub fn lossy_str(t: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(t) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(t),
    }
}

/// A column value as stored, TEXT read lossily (invalid UTF-8 becomes
/// U+FFFD, never a panic).
pub fn value_lossy(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Integer(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) => Value::Text(lossy_string(t)),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

/// An optional TEXT column read lossily; any other type is reported as
/// [`rusqlite::Row::get`] reports it.
pub fn text_lossy(r: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<Option<String>> {
    match r.get_ref(idx)? {
        ValueRef::Null => Ok(None),
        ValueRef::Text(t) => Ok(Some(lossy_string(t))),
        _ => r.get(idx),
    }
}

/// A required TEXT column read lossily (see [`text_lossy`]).
pub fn text_lossy_required(r: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<String> {
    text_ref_lossy_required(r, idx).map(std::borrow::Cow::into_owned)
}

/// [`text_lossy_required`] borrowed from the row where the text is valid
/// UTF-8.
pub fn text_ref_lossy_required<'r>(
    r: &'r rusqlite::Row<'_>,
    idx: usize,
) -> rusqlite::Result<std::borrow::Cow<'r, str>> {
    match r.get_ref(idx)? {
        ValueRef::Text(t) => Ok(lossy_str(t)),
        _ => r.get::<_, String>(idx).map(std::borrow::Cow::Owned),
    }
}

/// The stored bytes of a TEXT or BLOB value (0 for the others).
fn stored_len(v: ValueRef<'_>) -> u64 {
    match v {
        ValueRef::Text(b) | ValueRef::Blob(b) => b.len() as u64,
        _ => 0,
    }
}

/// A row fetched with [`StoredRow::fetch`].
#[derive(Debug)]
pub enum Fetched {
    /// The row and the bytes it stores (type, data, surface op, source seqs).
    Row(StoredRow, u64),
    /// A row storing more than `maxRecordBytes`: nothing of it was copied.
    TooLong { seq: i64, stored: u64 },
}

impl StoredRow {
    /// Reads a row selected with [`ROW_COLUMNS`] (TEXT read lossily).
    pub fn from_sql(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredRow> {
        Ok(StoredRow {
            seq: r.get(0)?,
            event_type: value_lossy(r.get_ref(1)?),
            time: r.get(2)?,
            data: value_lossy(r.get_ref(3)?),
            source_event_seqs: value_lossy(r.get_ref(4)?),
            surface_op: value_lossy(r.get_ref(5)?),
            ignorable: r.get(6)?,
        })
    }

    /// [`StoredRow::from_sql`], refusing before any copy a row that stores
    /// more than `max_record` bytes (its decoded record is at least as long).
    pub fn fetch(r: &rusqlite::Row<'_>, max_record: u64) -> rusqlite::Result<Fetched> {
        let mut stored = 0u64;
        for idx in [1, 3, 4, 5] {
            stored += stored_len(r.get_ref(idx)?);
        }
        if stored > max_record {
            return Ok(Fetched::TooLong {
                seq: r.get(0)?,
                stored,
            });
        }
        Ok(Fetched::Row(StoredRow::from_sql(r)?, stored))
    }
}

impl FromSql for Value {
    /// TEXT read lossily, as [`value_lossy`].
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        Ok(value_lossy(value))
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
