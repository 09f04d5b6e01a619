//! Reads: session rows, the rows of a log, suffixes by index seek.

use postgres::GenericClient;
use postgres::fallible_iterator::FallibleIterator;

use crate::backend::rows::{StoredRow, Value, scan};
use crate::backend::sqlite::reader::SessionRow;
use crate::error::{Error, Result};
use crate::model::header::{SESSION_FORMAT_VERSION, SessionHeader, version_refusal};
use crate::model::json::{MAX_SAFE_INTEGER, quote};

use super::Fail;
use super::pool::Conn;

/// The columns of a session row, in [`session_from_row`]'s order.
pub const SESSION_COLUMNS: &str = "id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, incarnation, revision";

pub const LIST_SQL: &str = "SELECT id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, incarnation, revision FROM sessions ORDER BY list_order";

pub const SESSION_SQL: &str = "SELECT id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, incarnation, revision FROM sessions WHERE id = $1";

/// The event columns, in [`stored_row`]'s order.
pub const ROW_COLUMNS: &str =
    "seq, type, time, data, data_zstd, source_event_seqs, surface_op, ignorable";

pub const LOG_SQL: &str = "SELECT seq, type, time, data, data_zstd, source_event_seqs, surface_op, ignorable FROM events WHERE session_id = $1 ORDER BY seq";

pub const SUFFIX_SQL: &str = "SELECT seq, type, time, data, data_zstd, source_event_seqs, surface_op, ignorable FROM events WHERE session_id = $1 AND seq >= $2 AND (seq >= $3 OR ignorable = 0) ORDER BY seq";

pub const RANGE_SQL: &str = "SELECT seq, type, time, data, data_zstd, source_event_seqs, surface_op, ignorable FROM events WHERE session_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq";

pub const LAST_ROW_SQL: &str = "SELECT seq, type, time, data, data_zstd, source_event_seqs, surface_op, ignorable FROM events WHERE session_id = $1 ORDER BY seq DESC LIMIT 1";

fn uint(id: &str, field: &str, v: i64) -> Result<u64> {
    if (0..=MAX_SAFE_INTEGER).contains(&v) {
        Ok(v as u64)
    } else {
        Err(Error::corruption(format!(
            "session {} row has {field} {v}, not a non-negative safe integer",
            quote(id)
        )))
    }
}

/// A session row selected with [`SESSION_COLUMNS`]; out-of-range integers
/// are corruption (as in SQLite).
pub fn session_from_row(r: &postgres::Row) -> std::result::Result<SessionRow, Fail> {
    let id: String = r.try_get(0)?;
    let created_at = uint(&id, "created_at", r.try_get(2)?)?;
    let seed_length = r
        .try_get::<_, Option<i64>>(5)?
        .map(|v| uint(&id, "seed_length", v))
        .transpose()?;
    let delegation_depth = r
        .try_get::<_, Option<i64>>(7)?
        .map(|v| uint(&id, "delegation_depth", v))
        .transpose()?;
    let version: i64 = r.try_get(1)?;
    Ok(SessionRow {
        header: SessionHeader {
            version,
            created_at,
            cwd: r.try_get(3)?,
            parent_session: r.try_get(4)?,
            seed_length,
            origin: r.try_get(6)?,
            delegation_depth,
            agent_preset: r.try_get(8)?,
            id,
            invalid: None,
        },
        version,
        incarnation: r.try_get(9)?,
        revision: r.try_get(10)?,
    })
}

/// An event row selected with [`ROW_COLUMNS`].
pub fn stored_row(r: &postgres::Row) -> std::result::Result<StoredRow, postgres::Error> {
    let data = match (
        r.try_get::<_, Option<String>>(3)?,
        r.try_get::<_, Option<Vec<u8>>>(4)?,
    ) {
        (Some(t), None) => Value::Text(t),
        (None, Some(b)) => Value::Blob(b),
        // The table's CHECK forbids both and neither; were it dropped,
        // the row does not decode.
        _ => Value::Null,
    };
    Ok(StoredRow {
        seq: r.try_get(0)?,
        event_type: Value::Text(r.try_get(1)?),
        time: r.try_get(2)?,
        data,
        source_event_seqs: r.try_get::<_, Option<Vec<u8>>>(5)?.into(),
        surface_op: r.try_get::<_, Option<String>>(6)?.into(),
        ignorable: r.try_get::<_, Option<i16>>(7)?.map(i64::from).into(),
    })
}

/// Every session row in insertion order.
pub fn list(conn: &mut Conn) -> std::result::Result<Vec<SessionRow>, Fail> {
    let stmt = conn.prep(LIST_SQL)?;
    let rows = conn.client.query(&stmt, &[])?;
    rows.iter().map(session_from_row).collect()
}

/// The session row of `id`, if stored.
pub fn session(
    client: &mut impl GenericClient,
    stmt: &postgres::Statement,
    id: &str,
) -> std::result::Result<Option<SessionRow>, Fail> {
    client
        .query_opt(stmt, &[&id])?
        .map(|r| session_from_row(&r))
        .transpose()
}

/// A session row whose log this build may read.
fn readable(row: SessionRow) -> std::result::Result<SessionRow, Fail> {
    if row.version != SESSION_FORMAT_VERSION {
        return Err(Fail::Done(version_refusal(
            &row.header.id,
            &row.version.to_string(),
            None,
        )));
    }
    Ok(row)
}

/// Reads the session row and hands every event row of `id` to `sink`, in
/// one read-only repeatable-read transaction (one snapshot). `None` when
/// the session is not stored.
pub fn read_log(
    conn: &mut Conn,
    id: &str,
    sink: &mut dyn FnMut(StoredRow),
) -> std::result::Result<Option<SessionRow>, Fail> {
    let session_stmt = conn.prep(SESSION_SQL)?;
    let log_stmt = conn.prep(LOG_SQL)?;
    let mut tx = conn
        .client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()?;
    let Some(session) = session(&mut tx, &session_stmt, id)? else {
        tx.commit()?;
        return Ok(None);
    };
    let session = readable(session)?;
    {
        let mut rows = tx.query_raw(&log_stmt, [&id as &(dyn postgres::types::ToSql + Sync)])?;
        while let Some(r) = rows.next()? {
            crate::store::cancel::checkpoint()?;
            sink(stored_row(&r)?);
        }
    }
    tx.commit()?;
    Ok(Some(session))
}

/// Reads the session row and the rows a `read_from(id, k)` needs: a seek to
/// `seq >= k` plus the packed rows that may cover `k`
/// ([`scan::suffix_lookback_seq`]).
pub fn fetch_suffix(
    conn: &mut Conn,
    id: &str,
    k: u64,
) -> std::result::Result<Option<(SessionRow, Vec<StoredRow>)>, Fail> {
    let session_stmt = conn.prep(SESSION_SQL)?;
    let suffix_stmt = conn.prep(SUFFIX_SQL)?;
    let mut tx = conn
        .client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()?;
    let Some(session) = session(&mut tx, &session_stmt, id)? else {
        tx.commit()?;
        return Ok(None);
    };
    let session = readable(session)?;
    let (from, k_sql) = scan::suffix_lookback_seq(k);
    let mut rows = Vec::new();
    for r in tx.query(&suffix_stmt, &[&id, &from, &k_sql])?.iter() {
        crate::store::cancel::checkpoint()?;
        rows.push(stored_row(r)?);
    }
    tx.commit()?;
    Ok(Some((session, rows)))
}
