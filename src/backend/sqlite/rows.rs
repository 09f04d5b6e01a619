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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::limits::{Budget, Limits};

    /// One event row as SQLite returns it: type 12 bytes, data 7, source
    /// seqs 2, surface op 8: 29 stored bytes.
    const ROW_SQL: &str = r#"SELECT 3, 'user/message', 1, '{"a":1}', x'0102', '"append"', NULL"#;
    const STORED: u64 = 12 + 7 + 2 + 8;

    fn fetch(max_record: u64) -> Fetched {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.query_row(ROW_SQL, [], |r| StoredRow::fetch(r, max_record))
            .unwrap()
    }

    /// The check before the copy and the decoding agree at the limit: a row
    /// storing exactly `maxRecordBytes` is read (and decodes under that
    /// limit), one byte more is refused before anything is copied.
    #[test]
    fn a_row_storing_exactly_the_record_limit_is_read() {
        let Fetched::Row(row, stored) = fetch(STORED) else {
            panic!("a row of exactly the limit was refused");
        };
        assert_eq!((row.seq, stored), (3, STORED));
        assert_eq!(row.data, Value::Text(r#"{"a":1}"#.into()));
        let limits = Limits {
            max_record_bytes: STORED,
            ..Limits::default()
        };
        let budget = Budget::unlimited();
        let bounds = RowBounds {
            limits: &limits,
            budget: &budget,
        };
        decode_row_bounded(&row, &bounds).expect("decodes under the same limit");
        match fetch(STORED - 1) {
            Fetched::TooLong { seq, stored } => assert_eq!((seq, stored), (3, STORED)),
            Fetched::Row(..) => panic!("a row over the limit was copied"),
        }
    }

    #[test]
    fn text_that_is_not_utf8_reads_with_replacement_characters() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let (text, required, value): (Option<String>, String, Value) = conn
            .query_row(
                "SELECT CAST(x'61ff62' AS TEXT), CAST(x'61ff62' AS TEXT), CAST(x'61ff62' AS TEXT)",
                [],
                |r| Ok((text_lossy(r, 0)?, text_lossy_required(r, 1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(text.as_deref(), Some("a\u{FFFD}b"));
        assert_eq!(required, "a\u{FFFD}b");
        assert_eq!(value, Value::Text("a\u{FFFD}b".into()));
        let none: Option<String> = conn
            .query_row("SELECT NULL", [], |r| text_lossy(r, 0))
            .unwrap();
        assert_eq!(none, None);
    }
}
