//! Reads: session rows, full logs with torn-tail detection, seeking suffix
//! reads (SPEC §4.3).

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{Error, Result};
use crate::model::event::Event;
use crate::model::header::{SESSION_FORMAT_VERSION, SessionHeader, version_refusal};
use crate::model::json::quote;
use crate::model::session_list::SessionList;

use super::rows::scan::{self, ReadCtx, limit_subject};
use super::rows::seal::{Col, RowSeal};
use super::rows::{self, Fetched, ROW_COLUMNS, StoredRow};
use super::sql_error;
use crate::backend::limits::Limits;

/// One `sessions` row.
#[derive(Clone, Debug)]
pub struct SessionRow {
    pub header: SessionHeader,
    /// The stored `version` column (0 for every log this build writes).
    pub version: i64,
    pub incarnation: String,
    pub revision: i64,
}

const SESSION_COLUMNS: &str = "id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, incarnation, revision";

/// [`list_headers`]' first query: the columns of a plain row (version 0,
/// every optional header column NULL and a valid revision: what most
/// sessions hold), in the fifth column the incarnation of a row whose
/// version is 0 and optional columns NULL, else `NULL`, then the revision
/// and the rowid. Column positions match `LIST_FROM_SQL` up to the
/// fourth (the constant in place of `version` costs nothing per row and is
/// never read), so a value of a wrong type is reported at the same index. The incarnation must be a UUID and the revision an
/// integer in 0..=2^53-1 for the row to be plain: both are checked in Rust,
/// where it costs a few nanoseconds (a GLOB of the UUID pattern took a
/// third of a listing; `typeof` and `BETWEEN` of the revision in SQL a
/// fifth of the query). Fetching the five NULL columns one by one costs
/// about a fifth of a listing; the test for them in SQL is cheaper.
pub const LIST_PLAIN_SQL: &str = "SELECT id, 0, created_at, cwd, CASE WHEN version = 0 AND parent_session IS NULL AND seed_length IS NULL AND origin IS NULL AND delegation_depth IS NULL AND agent_preset IS NULL THEN incarnation END, revision, rowid FROM sessions ORDER BY rowid";

/// The rowid of a row of [`LIST_PLAIN_SQL`] that is not plain: flagged in
/// SQL, an incarnation that is not a UUID, or a revision that is not an
/// integer in range.
fn not_plain(r: &rusqlite::Row<'_>) -> rusqlite::Result<Option<i64>> {
    let plain = match r.get_ref(4)? {
        ValueRef::Text(t) if is_uuid_bytes(t) => matches!(
            r.get_ref(5)?,
            ValueRef::Integer(v) if (0..=crate::model::json::MAX_SAFE_INTEGER).contains(&v)
        ),
        _ => false,
    };
    if plain { Ok(None) } else { r.get(6).map(Some) }
}

/// What a byte of a UUID's text is: 1 a hex digit, 2 the dash.
const UUID_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        if b.is_ascii_hexdigit() {
            t[c] = 1;
        } else if b == b'-' {
            t[c] = 2;
        }
        c += 1;
    }
    t
};

/// The class ([`UUID_CLASS`]) each byte of a UUID's text must have.
const UUID_SHAPE: [u8; 36] = {
    let mut s = [1u8; 36];
    s[8] = 2;
    s[13] = 2;
    s[18] = 2;
    s[23] = 2;
    s
};

/// [`crate::uuid::is_uuid`] of stored bytes (a valid one is ASCII, so its
/// lossy text is the same bytes).
fn is_uuid_bytes(b: &[u8]) -> bool {
    // One table look-up per byte, without an early exit (this runs for
    // every listed row).
    b.len() == 36
        && b.iter()
            .zip(UUID_SHAPE)
            .fold(true, |ok, (&c, want)| ok & (UUID_CLASS[c as usize] == want))
}

/// [`list_headers`]' query from the first row that is not plain on: the
/// columns of [`SESSION_COLUMNS`].
const LIST_FROM_SQL: &str = "SELECT id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, incarnation, revision FROM sessions WHERE rowid >= ?1 ORDER BY rowid";

/// Compiles the `list` query into the connection's statement cache (at
/// open, right after the schema was verified), so a first `list` runs it
/// at once.
pub fn prepare_list(conn: &Connection, label: &str) -> Result<()> {
    conn.prepare_cached(LIST_PLAIN_SQL)
        .map(drop)
        .map_err(|e| sql_error(label, "cannot prepare the session listing", e))
}

fn bad_session_row(id: &str, field: &str, value: &str, must: &str) -> Error {
    Error::corruption(format!(
        "session {} row has {field} {value}, not {must}",
        quote(id)
    ))
}

/// The first column of a row that the original's `decodeSessionRow`
/// refuses (DIFFERENCES A.1 #12): (column, value shown, what it must be).
type Invalid = Option<(&'static str, String, &'static str)>;

const SAFE_UINT: &str = "a non-negative safe integer";

/// The first text column of a header the original refuses: an empty id, a
/// relative cwd, an origin other than "subagent".
fn invalid_text(id: &str, cwd: Option<&str>, origin: Option<&str>) -> Invalid {
    if id.is_empty() {
        return Some(("id", quote(""), "a non-empty string"));
    }
    if let Some(cwd) = cwd.filter(|c| !crate::model::header::is_absolute(c)) {
        return Some(("cwd", quote(cwd), "an absolute path"));
    }
    if let Some(o) = origin.filter(|o| *o != "subagent") {
        return Some(("origin", quote(o), "\"subagent\""));
    }
    None
}

/// The first of the revision columns (9, 10) the original refuses: an
/// incarnation that is not a UUID, a negative revision.
fn invalid_revision(incarnation: &str, revision: i64) -> Invalid {
    if !crate::uuid::is_uuid(incarnation) {
        return Some(("incarnation", quote(incarnation), "a UUID"));
    }
    if !(0..=crate::model::json::MAX_SAFE_INTEGER).contains(&revision) {
        return Some(("revision", revision.to_string(), SAFE_UINT));
    }
    None
}

/// The header of a row whose first columns are those of [`LIST_HEADERS_SQL`].
fn header_from_sql(r: &rusqlite::Row<'_>) -> rusqlite::Result<(SessionHeader, Invalid)> {
    // TEXT columns are read lossily (U+FFFD for invalid UTF-8), as the
    // original's driver reads them.
    let id = rows::text_lossy_required(r, 0)?;
    let created_at: i64 = r.get(2)?;
    let seed_length: Option<i64> = r.get(5)?;
    let delegation_depth: Option<i64> = r.get(7)?;
    let mut invalid = None;
    let mut uint = |name: &'static str, v: i64| {
        if (0..=crate::model::json::MAX_SAFE_INTEGER).contains(&v) {
            v as u64
        } else {
            if invalid.is_none() {
                invalid = Some((name, v.to_string(), SAFE_UINT));
            }
            0
        }
    };
    let created_at = uint("created_at", created_at);
    let seed_length = seed_length.map(|v| uint("seed_length", v));
    let delegation_depth = delegation_depth.map(|v| uint("delegation_depth", v));
    let header = SessionHeader {
        version: r.get(1)?,
        created_at,
        cwd: rows::text_lossy(r, 3)?,
        parent_session: rows::text_lossy(r, 4)?,
        seed_length,
        origin: rows::text_lossy(r, 6)?,
        delegation_depth,
        agent_preset: rows::text_lossy(r, 8)?,
        id,
        invalid: None,
    };
    let invalid = invalid
        .or_else(|| invalid_text(&header.id, header.cwd.as_deref(), header.origin.as_deref()));
    Ok((header, invalid))
}

/// A row of [`SESSION_COLUMNS`] (or of [`LIST_FROM_SQL`]): its header, and
/// its incarnation and revision checked too.
fn checked_header_from_sql(r: &rusqlite::Row<'_>) -> rusqlite::Result<(SessionHeader, Invalid)> {
    let (header, invalid) = header_from_sql(r)?;
    let incarnation = rows::text_lossy_required(r, 9)?;
    let revision: i64 = r.get(10)?;
    Ok((
        header,
        invalid.or_else(|| invalid_revision(&incarnation, revision)),
    ))
}

fn session_from_sql(r: &rusqlite::Row<'_>) -> rusqlite::Result<(SessionRow, Invalid)> {
    let (header, invalid) = header_from_sql(r)?;
    let incarnation = rows::text_lossy_required(r, 9)?;
    let revision: i64 = r.get(10)?;
    let invalid = invalid.or_else(|| invalid_revision(&incarnation, revision));
    Ok((
        SessionRow {
            version: header.version,
            header,
            incarnation,
            revision,
        },
        invalid,
    ))
}

/// Refuses the row of session `id` when it holds an out-of-range integer.
fn check_row(id: &str, invalid: Invalid) -> Result<()> {
    match invalid {
        Some((field, value, must)) => Err(bad_session_row(id, field, &value, must)),
        None => Ok(()),
    }
}

/// Every session row, in rowid (insertion) order. A session row exists only
/// once its first append committed, so these are the materialized sessions.
pub fn list_sessions(conn: &Connection, label: &str) -> Result<Vec<SessionRow>> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY rowid"
        ))
        .map_err(|e| sql_error(label, "cannot list sessions", e))?;
    let rows = stmt
        .query_map([], session_from_sql)
        .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(|e| sql_error(label, "cannot list sessions", e))?;
    rows.into_iter()
        .map(|(row, invalid)| check_row(&row.header.id, invalid).map(|()| row))
        .collect()
}

/// The headers of [`list_sessions`], read in one pass without the revision
/// columns. A row with an out-of-range integer is refused like there, after
/// every row was read (an SQL error comes first).
///
/// Plain rows (see [`LIST_PLAIN_SQL`]) are read with three columns; from the
/// first other row on, the rest is read with every header column by a second
/// query that runs while the first is still active, so both see the same
/// snapshot of the database.
pub fn list_headers(conn: &Connection, label: &str) -> Result<SessionList> {
    let err = |e| sql_error(label, "cannot list sessions", e);
    let mut stmt = conn.prepare_cached(LIST_PLAIN_SQL).map_err(err)?;
    let mut rows = stmt.query([]).map_err(err)?;
    let mut out = SessionList::new();
    let mut first_invalid: Option<(usize, Invalid)> = None;
    let mut note = |at: usize, invalid: Invalid| {
        if invalid.is_some() && first_invalid.is_none() {
            first_invalid = Some((at, invalid));
        }
    };
    while let Some(r) = rows.next().map_err(err)? {
        if let Some(rowid) = not_plain(r).map_err(err)? {
            let mut rest = conn.prepare_cached(LIST_FROM_SQL).map_err(err)?;
            let mut rest_rows = rest.query([rowid]).map_err(err)?;
            while let Some(r) = rest_rows.next().map_err(err)? {
                crate::store::cancel::checkpoint()?;
                let invalid = push_listed_row(&mut out, r).map_err(err)?;
                note(out.len() - 1, invalid);
            }
            break;
        }
        crate::store::cancel::checkpoint()?;
        let invalid = push_plain_row(&mut out, r).map_err(err)?;
        note(out.len() - 1, invalid);
    }
    if let Some((at, invalid)) = first_invalid {
        let id = out.get(at).map(|h| h.id).unwrap_or_default();
        check_row(id, invalid)?;
    }
    Ok(out)
}

/// Appends the header of a plain row of [`LIST_PLAIN_SQL`] or
/// [`LIST_FROM_SQL`] (their first four columns match) to `out`, its texts
/// copied from SQLite's buffers into the list's (no allocation per row).
/// Reads the values by reference (one conversion per column); a value of
/// another type is reported as [`rusqlite::Row::get`] reports it.
fn push_plain_row(out: &mut SessionList, r: &rusqlite::Row<'_>) -> rusqlite::Result<Invalid> {
    let id = rows::text_ref_lossy_required(r, 0)?;
    let created_at = match r.get_ref(2)? {
        ValueRef::Integer(v) => v,
        _ => r.get(2)?,
    };
    let cwd = match r.get_ref(3)? {
        ValueRef::Null => None,
        _ => Some(rows::text_ref_lossy_required(r, 3)?),
    };
    let mut invalid = None;
    let created_at = if (0..=crate::model::json::MAX_SAFE_INTEGER).contains(&created_at) {
        created_at as u64
    } else {
        invalid = Some(("created_at", created_at.to_string(), SAFE_UINT));
        0
    };
    let invalid = invalid.or_else(|| invalid_text(&id, cwd.as_deref(), None));
    out.push_plain(&id, created_at, cwd.as_deref());
    Ok(invalid)
}

/// Appends the header of a row of [`LIST_FROM_SQL`] to `out`: packed like
/// [`push_plain_row`] when the row is plain (version 0, the optional
/// columns NULL), else read whole; its incarnation and revision checked
/// too, after the header's columns (as [`checked_header_from_sql`]).
fn push_listed_row(out: &mut SessionList, r: &rusqlite::Row<'_>) -> rusqlite::Result<Invalid> {
    let plain = matches!(r.get_ref(1)?, ValueRef::Integer(0))
        && (4..=8).try_fold(true, |all, i| {
            Ok::<_, rusqlite::Error>(all && matches!(r.get_ref(i)?, ValueRef::Null))
        })?;
    if !plain {
        let (header, invalid) = checked_header_from_sql(r)?;
        out.push(header);
        return Ok(invalid);
    }
    let invalid = push_plain_row(out, r)?;
    let incarnation = rows::text_ref_lossy_required(r, 9)?;
    let revision: i64 = r.get(10)?;
    Ok(invalid.or_else(|| invalid_revision(&incarnation, revision)))
}

/// The session row of `id`, if stored.
pub fn session_row(conn: &Connection, label: &str, id: &str) -> Result<Option<SessionRow>> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"
        ))
        .map_err(|e| sql_error(label, "cannot read a session row", e))?;
    let row = stmt
        .query_row([id], session_from_sql)
        .optional()
        .map_err(|e| sql_error(label, &format!("cannot read session {}", quote(id)), e))?;
    row.map(|(row, invalid)| check_row(&row.header.id, invalid).map(|()| row))
        .transpose()
}

/// A session row whose log this build may read: the stored `version` must
/// be the supported one (SPEC §3.5 wording, without a raw log path).
fn readable(row: SessionRow) -> Result<SessionRow> {
    if row.version != SESSION_FORMAT_VERSION {
        return Err(version_refusal(
            &row.header.id,
            &row.version.to_string(),
            None,
        ));
    }
    Ok(row)
}

/// Rows fetched by one read, bounded before they are copied: a row that
/// stores more than `maxRecordBytes`, or rows that store more than
/// `maxLogBytes` together (a valid log stores no more than it decodes to),
/// fail the read.
struct FetchBounds<'a> {
    limits: &'a Limits,
    label: &'a str,
    id: &'a str,
    stored: u64,
}

impl<'a> FetchBounds<'a> {
    fn new(limits: &'a Limits, label: &'a str, id: &'a str) -> Self {
        FetchBounds {
            limits,
            label,
            id,
            stored: 0,
        }
    }

    fn row(&mut self, r: &rusqlite::Row<'_>) -> Result<StoredRow> {
        crate::store::cancel::checkpoint()?;
        let ctx = || format!("cannot read the events of session {}", quote(self.id));
        match StoredRow::fetch(r, self.limits.max_record_bytes)
            .map_err(|e| sql_error(self.label, &ctx(), e))?
        {
            Fetched::TooLong { seq, stored } => Err(self.limits.record_error(
                &limit_subject(self.label, self.id),
                &format!("of the row at seq {seq} (it stores {stored} bytes)"),
            )),
            Fetched::Row(row, stored) => {
                self.stored = self.stored.saturating_add(stored);
                if self.stored > self.limits.max_log_bytes {
                    return Err(self.limits.log_error(
                        &limit_subject(self.label, self.id),
                        &format!("its rows up to seq {} store more", row.seq),
                    ));
                }
                Ok(row)
            }
        }
    }
}

pub(super) fn select_rows(
    conn: &Connection,
    label: &str,
    sql: &str,
    params: impl rusqlite::Params,
    id: &str,
    limits: &Limits,
) -> Result<Vec<StoredRow>> {
    let ctx = || format!("cannot read the events of session {}", quote(id));
    let mut stmt = conn
        .prepare_cached(sql)
        .map_err(|e| sql_error(label, &ctx(), e))?;
    let mut rows = stmt
        .query(params)
        .map_err(|e| sql_error(label, &ctx(), e))?;
    let mut bounds = FetchBounds::new(limits, label, id);
    let mut out = Vec::new();
    while let Some(r) = rows.next().map_err(|e| sql_error(label, &ctx(), e))? {
        out.push(bounds.row(r)?);
    }
    Ok(out)
}

/// What [`read_log`] and [`fold_log`] run on the connection their caller
/// lends them: fetch the session row and stream its rows.
pub type FetchRows<'f> = dyn FnMut(&mut Connection) -> Result<Option<SessionRow>> + 'f;

/// What a read found.
#[derive(Debug)]
pub struct LogRead {
    pub session: SessionRow,
    pub events: Vec<Event>,
    /// The seq of the first torn row (full reads only).
    pub torn_from: Option<u64>,
    /// Full reads: the decoded size of the log (its rows' records), as
    /// counted against `maxLogBytes`.
    pub log_bytes: u64,
}

/// The rows a read fetched under the connection lock; decoding them
/// ([`FetchedRows::scan_suffix`], and in tests `scan_log`) needs no lock.
#[derive(Debug)]
pub struct FetchedRows {
    pub session: SessionRow,
    pub rows: Vec<StoredRow>,
}

/// Fetches the session row and all its event rows, ordered by seq, in one
/// read transaction. `None` when the session is not stored. The reference
/// that [`read_log`] (the pipelined read used by the backend) is tested
/// against.
#[cfg(test)]
pub fn fetch_log(conn: &mut Connection, label: &str, id: &str) -> Result<Option<FetchedRows>> {
    fetch(conn, label, id, None, &Limits::default())
}

/// Fetches the session row and all its event rows, ordered by seq, under
/// `limits` (issue 19, `salvage`). `None` when the session is not stored.
pub fn fetch_all(
    conn: &mut Connection,
    label: &str,
    id: &str,
    limits: &Limits,
) -> Result<Option<FetchedRows>> {
    fetch(conn, label, id, None, limits)
}

/// Fetches the rows a `read_from(id, k)` needs (SPEC §4.3): seeks to
/// `seq >= k`, plus the packed rows starting up to `max_members − 1` before
/// `k` that may cover `k`.
pub fn fetch_suffix(
    conn: &mut Connection,
    label: &str,
    id: &str,
    k: u64,
    limits: &Limits,
) -> Result<Option<FetchedRows>> {
    fetch(conn, label, id, Some(k), limits)
}

/// Opens a read transaction and reads the session row of `id` in it,
/// refusing a stored version this build does not read. `None` when the
/// session is not stored.
pub(super) fn begin_read<'c>(
    conn: &'c mut Connection,
    label: &str,
    id: &str,
) -> Result<Option<(rusqlite::Transaction<'c>, SessionRow)>> {
    let tx = conn
        .transaction()
        .map_err(|e| sql_error(label, "cannot start a read transaction", e))?;
    let Some(session) = session_row(&tx, label, id)? else {
        return Ok(None);
    };
    Ok(Some((tx, readable(session)?)))
}

fn fetch(
    conn: &mut Connection,
    label: &str,
    id: &str,
    from: Option<u64>,
    limits: &Limits,
) -> Result<Option<FetchedRows>> {
    let Some((tx, session)) = begin_read(conn, label, id)? else {
        return Ok(None);
    };
    let rows = match from {
        None => select_rows(
            &tx,
            label,
            &format!("SELECT {ROW_COLUMNS} FROM events WHERE session_id = ?1 ORDER BY seq"),
            [id],
            id,
            limits,
        )?,
        Some(k) => select_suffix_rows(&tx, label, id, k, limits)?,
    };
    tx.finish()
        .map_err(|e| sql_error(label, "cannot end a read transaction", e))?;
    Ok(Some(FetchedRows { session, rows }))
}

/// The rows with `seq >= k` plus the packed rows starting up to
/// `max_members − 1` before `k` that may cover `k`.
fn select_suffix_rows(
    conn: &Connection,
    label: &str,
    id: &str,
    k: u64,
    limits: &Limits,
) -> Result<Vec<StoredRow>> {
    let (from, k_sql) = scan::suffix_lookback_seq(k);
    select_rows(
        conn,
        label,
        &format!(
            "SELECT {ROW_COLUMNS} FROM events WHERE session_id = ?1 AND seq >= ?2 \
             AND (seq >= ?3 OR ignorable = 0) ORDER BY seq"
        ),
        params![id, from, k_sql],
        id,
        limits,
    )
}

/// The stored events of `session` with `seq >= k`, read on `conn` (inside
/// the caller's transaction).
pub fn stored_suffix(
    conn: &Connection,
    label: &str,
    session: &SessionRow,
    k: u64,
    limits: &Limits,
) -> Result<Vec<Event>> {
    let rows = select_suffix_rows(conn, label, &session.header.id, k, limits)?;
    let fetched = FetchedRows {
        session: session.clone(),
        rows,
    };
    Ok(fetched.scan_suffix(k, limits, label)?.events)
}

/// Reads and decodes a whole log (SPEC §4.3), like the test-only `fetch_log`
/// followed by `FetchedRows::scan_log` (its reference), but pipelined
/// ([`scan::read_pipelined`]): a second thread decodes stretches of rows
/// while this one fetches the rest under the connection lock
/// (`with_conn`). The outcome is that of `scan_log`.
///
/// Bounded by `limits` (see [`crate::backend::limits`]): rows are checked
/// as they are fetched and as they are decoded, and a row past a limit
/// fails the read. With `seal`, the rows read are sealed into it.
pub fn read_log<W>(
    with_conn: W,
    label: &str,
    id: &str,
    limits: &Limits,
    seal: Option<&mut RowSeal>,
) -> Result<Option<LogRead>>
where
    W: FnOnce(&mut FetchRows<'_>) -> Result<Option<SessionRow>>,
{
    let ctx = ReadCtx::new(limits, label, id);
    let read = scan::read_pipelined(&ctx, seal, |sink| {
        with_conn(&mut |conn| stream_rows(conn, label, id, limits, sink))
    })?;
    Ok(read.map(|(session, events, torn, log_bytes)| LogRead {
        session,
        events,
        // A torn row with a negative seq sorts first: everything is torn.
        torn_from: torn.map(|s| s.max(0) as u64),
        log_bytes,
    }))
}

/// Every row of the log of `id`, in seq order, handed to `sink` (under one
/// read transaction); the session row, or `None` when not stored.
fn stream_rows(
    conn: &mut Connection,
    label: &str,
    id: &str,
    limits: &Limits,
    sink: &mut dyn FnMut(StoredRow),
) -> Result<Option<SessionRow>> {
    let mut fetched = FetchBounds::new(limits, label, id);
    each_row(conn, label, id, &mut |r| {
        sink(fetched.row(r)?);
        Ok(())
    })
}

/// Runs `f` on every `events` row of `id` as SQLite hands it over (the
/// columns of [`ROW_COLUMNS`], in seq order, under one read transaction
/// with the session row); the session row, or `None` when not stored.
fn each_row(
    conn: &mut Connection,
    label: &str,
    id: &str,
    f: &mut dyn FnMut(&rusqlite::Row<'_>) -> Result<()>,
) -> Result<Option<SessionRow>> {
    let ctx = || format!("cannot read the events of session {}", quote(id));
    let Some((tx, session)) = begin_read(conn, label, id)? else {
        return Ok(None);
    };
    {
        let mut stmt = tx
            .prepare_cached(&format!(
                "SELECT {ROW_COLUMNS} FROM events WHERE session_id = ?1 ORDER BY seq"
            ))
            .map_err(|e| sql_error(label, &ctx(), e))?;
        let mut rows = stmt.query([id]).map_err(|e| sql_error(label, &ctx(), e))?;
        while let Some(r) = rows.next().map_err(|e| sql_error(label, &ctx(), e))? {
            f(r)?;
        }
    }
    tx.finish()
        .map_err(|e| sql_error(label, "cannot end a read transaction", e))?;
    Ok(Some(session))
}

/// [`read_log`] as a folding read: the events are handed to `events` as
/// each stretch of rows is decoded and judged (see
/// [`scan::fold_rows`]); `LogRead::events` stays empty and the count
/// is returned beside it. Every fetched row is fed to `seal` too.
pub fn fold_log<W>(
    with_conn: W,
    label: &str,
    id: &str,
    limits: &Limits,
    events: &mut dyn crate::backend::EventSink,
    seal: &mut RowSeal,
) -> Result<Option<(LogRead, u64)>>
where
    W: FnOnce(&mut FetchRows<'_>) -> Result<Option<SessionRow>>,
{
    let ctx = ReadCtx::new(limits, label, id);
    let read = scan::fold_rows(&ctx, events, |sink| {
        with_conn(&mut |conn| {
            stream_rows(conn, label, id, limits, &mut |row| {
                seal.feed(&row);
                sink(row)
            })
        })
    })?;
    Ok(read.map(|(session, handed, torn, log_bytes)| {
        (
            LogRead {
                session,
                events: Vec::new(),
                torn_from: torn.map(|s| s.max(0) as u64),
                log_bytes,
            },
            handed,
        )
    }))
}

/// Feeds every row of the log of `id` to `seal` as the database holds it
/// (in seq order, under one read transaction), copying and decoding
/// nothing; the session row, or `None` when not stored.
pub fn seal_rows(
    conn: &mut Connection,
    label: &str,
    id: &str,
    seal: &mut RowSeal,
) -> Result<Option<SessionRow>> {
    let ctx = || format!("cannot read the events of session {}", quote(id));
    each_row(conn, label, id, &mut |r| {
        crate::store::cancel::checkpoint()?;
        let mut cols = [Col::Null; 7];
        for (i, c) in cols.iter_mut().enumerate() {
            *c = match r.get_ref(i).map_err(|e| sql_error(label, &ctx(), e))? {
                ValueRef::Null => Col::Null,
                ValueRef::Integer(v) => Col::Integer(v),
                ValueRef::Real(v) => Col::Real(v),
                ValueRef::Text(t) => Col::Text(t),
                ValueRef::Blob(b) => Col::Blob(b),
            };
        }
        seal.feed_columns(cols);
        Ok(())
    })
}

impl FetchedRows {
    /// Decodes a full log: the intact events and the torn tail, if any
    /// (the reference for [`read_log`]).
    #[cfg(test)]
    pub fn scan_log(self) -> Result<LogRead> {
        let (events, torn) = scan::scan_all_rows(self.rows, scan::PARALLEL_MIN_ROWS)?;
        Ok(LogRead {
            session: self.session,
            events,
            // A torn row with a negative seq sorts first: everything is torn.
            torn_from: torn.map(|s| s.max(0) as u64),
            log_bytes: 0,
        })
    }

    /// Decodes a suffix fetched for `k`: the events with `seq >= k`. The
    /// last-turn/end rule applies to the rows read; a torn tail is dropped.
    pub fn scan_suffix(self, k: u64, limits: &Limits, label: &str) -> Result<LogRead> {
        let ctx = ReadCtx::new(limits, label, &self.session.header.id);
        let events = scan::scan_suffix(self.rows, k, &ctx)?;
        Ok(LogRead {
            session: self.session,
            events,
            torn_from: None,
            log_bytes: 0,
        })
    }
}

/// The last logical seq of the stored log of `id` (`None` when it has no
/// rows), from its last row. Fails when that row does not decode.
pub fn last_logical_seq(
    conn: &Connection,
    label: &str,
    id: &str,
    limits: &Limits,
) -> Result<Option<u64>> {
    let rows = select_rows(
        conn,
        label,
        &format!(
            "SELECT {ROW_COLUMNS} FROM events WHERE session_id = ?1 ORDER BY seq DESC LIMIT 1"
        ),
        [id],
        id,
        limits,
    )?;
    rows.into_iter()
        .next()
        .map(|row| scan::last_logical_seq_of(id, row))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_bytes_agree_with_is_uuid() {
        let good = "0123abcd-ef45-6789-ABCD-ef0123456789";
        let mut cases = vec![good.to_string(), String::new(), "x".repeat(36)];
        for i in 0..good.len() {
            for c in ['-', 'g', 'G', '0', 'f', 'F', '/', ':', '@', '`', '\u{e9}'] {
                let mut s: Vec<char> = good.chars().collect();
                s[i] = c;
                cases.push(s.into_iter().collect());
            }
        }
        cases.push(format!("{good}0"));
        cases.push(good[..35].to_string());
        for case in &cases {
            assert_eq!(
                is_uuid_bytes(case.as_bytes()),
                crate::uuid::is_uuid(case),
                "{case:?}"
            );
        }
        assert!(is_uuid_bytes(good.as_bytes()));
    }

    /// The ids of the rows that leave the listing's first query after
    /// `sql` changed them ([`not_plain`] names each by its rowid).
    fn leaving_the_first_query(ids: &[&str], sql: &str) -> Vec<String> {
        let be = super::super::tests::backend_with(ids);
        be.with_conn(|c| {
            c.execute_batch(sql).unwrap();
            let mut stmt = c.prepare(LIST_PLAIN_SQL).unwrap();
            let mut rows = stmt.query([]).unwrap();
            let mut left = Vec::new();
            while let Some(r) = rows.next().unwrap() {
                let id: String = r.get(0).unwrap();
                if let Some(at) = not_plain(r).unwrap() {
                    assert_eq!(at, r.get::<_, i64>(6).unwrap(), "{id}");
                    left.push(id);
                }
            }
            Ok(left)
        })
        .unwrap()
    }

    /// Which rows the listing's first query keeps: a row that needs its
    /// other columns, or whose revision columns the original refuses,
    /// leaves it; every other row stays (the fast path most listings take
    /// from start to end).
    #[test]
    fn plain_rows_stay_on_the_first_query_and_others_leave_it() {
        let ids = [
            "plain", "version", "parent", "seed", "origin", "depth", "preset", "inc", "rev",
            "revneg", "nocwd",
        ];
        let left = leaving_the_first_query(
            &ids,
            "UPDATE sessions SET version = 1 WHERE id = 'version';
             UPDATE sessions SET parent_session = 'p' WHERE id = 'parent';
             UPDATE sessions SET seed_length = 0 WHERE id = 'seed';
             UPDATE sessions SET origin = 'subagent' WHERE id = 'origin';
             UPDATE sessions SET delegation_depth = 0 WHERE id = 'depth';
             UPDATE sessions SET agent_preset = 'a' WHERE id = 'preset';
             UPDATE sessions SET incarnation = upper(incarnation) || 'x' WHERE id = 'inc';
             UPDATE sessions SET revision = 9007199254740992 WHERE id = 'rev';
             UPDATE sessions SET revision = -1 WHERE id = 'revneg';
             UPDATE sessions SET cwd = NULL WHERE id = 'nocwd';",
        );
        assert_eq!(left, &ids[1..10]);
        // The boundary revisions and an upper-case incarnation are plain.
        let left = leaving_the_first_query(
            &["zero", "max", "upper"],
            "UPDATE sessions SET revision = 0 WHERE id = 'zero';
             UPDATE sessions SET revision = 9007199254740991 WHERE id = 'max';
             UPDATE sessions SET incarnation = upper(incarnation) WHERE id = 'upper';",
        );
        assert!(left.is_empty(), "{left:?}");
    }

    /// [`FetchBounds`] refuses the row that brings the bytes a read has
    /// fetched over `maxLogBytes` (before the decoded size is known), naming
    /// its seq; rows storing exactly the limit are read.
    #[test]
    fn fetched_rows_are_bounded_by_the_log_limit() {
        use crate::backend::{Backend, Expect};
        use crate::model::event::EventType;
        use crate::model::json::JsonText;
        let be = super::super::SqliteBackend::open(&super::super::SqliteConfig::memory()).unwrap();
        let events: Vec<Event> = (0..3u64)
            .map(|seq| {
                let data = format!("{{\"turn\":1,\"pad\":\"{}\"}}", "x".repeat(seq as usize));
                Event::new(
                    EventType::known("turn/start"),
                    seq,
                    1,
                    JsonText::from_trusted(data),
                )
            })
            .collect();
        be.append(&SessionHeader::new("s", 5), &events, Expect::New)
            .unwrap();
        let fetch_all = |limits: &Limits| -> Result<(Vec<u64>, u64)> {
            be.with_conn(|c| {
                let mut stmt = c
                    .prepare(&format!("SELECT {ROW_COLUMNS} FROM events ORDER BY seq"))
                    .unwrap();
                let mut rows = stmt.query([]).unwrap();
                let mut bounds = FetchBounds::new(limits, "db", "s");
                let mut seqs = Vec::new();
                while let Some(r) = rows.next().unwrap() {
                    seqs.push(bounds.row(r)?.seq as u64);
                }
                Ok((seqs, bounds.stored))
            })
        };
        let (seqs, stored) = fetch_all(&Limits::default()).unwrap();
        assert_eq!(seqs, [0, 1, 2]);
        let exact = Limits {
            max_log_bytes: stored,
            ..Limits::default()
        };
        assert_eq!(fetch_all(&exact).unwrap(), (seqs, stored));
        let under = Limits {
            max_log_bytes: stored - 1,
            ..Limits::default()
        };
        let err = fetch_all(&under).unwrap_err().to_string();
        assert!(
            err.contains(&format!(
                "limit of {} bytes (its rows up to seq 2 store more)",
                stored - 1
            )),
            "{err}"
        );
    }
}
