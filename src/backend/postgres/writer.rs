//! Writes: an append or a repair is one transaction (`synchronous_commit =
//! on`, so `COMMIT` returns once the server's WAL is flushed), under a row
//! lock on the session (`SELECT … FOR UPDATE`), so concurrent writers on
//! other hosts are ordered and a stale one is refused by the tail check.
//! Every committed batch sends a notification (see [`super::NOTIFY_SUFFIX`]).
//!
//! A retry never duplicates a batch: before running an append again after
//! a failure, the writer checks whether the batch is already stored (the
//! same rows, byte for byte, at the same seqs: the connection broke after
//! the server committed), and returns that as success.

use crate::backend::Expect;
use crate::backend::limits::Limits;
use crate::backend::rows::seal::{Inserted, Written};
use crate::backend::rows::{self, EncodedRow, StoredRow, Value, checks, scan};
use crate::codec::chunk_rows::{PackLimits, pack};
use crate::error::{Error, Result};
use crate::model::event::Event;
use crate::model::header::{SESSION_FORMAT_VERSION, SessionHeader, version_refusal};
use crate::model::json::quote;

use super::Fail;
use super::pool::Conn;
use super::reader::{self, LAST_ROW_SQL, RANGE_SQL, SESSION_SQL, SUFFIX_SQL};

const LOCK_SESSION_SQL: &str = "SELECT id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, incarnation, revision FROM sessions WHERE id = $1 FOR UPDATE";

const INSERT_SESSION_SQL: &str = "INSERT INTO sessions (id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, incarnation, revision) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0) ON CONFLICT (id) DO NOTHING";

/// All rows of a batch in one statement (one round trip).
const INSERT_ROWS_SQL: &str = "INSERT INTO events (session_id, seq, type, time, data, data_zstd, source_event_seqs, surface_op, ignorable) \
     SELECT $1, r.* FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::bytea[], $7::bytea[], $8::text[], $9::smallint[]) AS r";

/// Bumps the revision and notifies `<schema>.batches` with
/// `{"id","kind","from","next","revision"}` (`id` null for ids too long
/// for a notification's 8,000-byte payload); the notification is sent when
/// the transaction commits, and only then.
const BUMP_SQL: &str = "UPDATE sessions SET revision = revision + 1 WHERE id = $1 \
     RETURNING incarnation, revision, \
     pg_notify($2, json_build_object('id', CASE WHEN octet_length($1) <= 7000 THEN $1 END, 'kind', $3::text, 'from', $4::bigint, 'next', $5::bigint, 'revision', revision)::text)::text";

const DELETE_TORN_SQL: &str = "DELETE FROM events WHERE session_id = $1 AND (seq >= $2 OR seq < 0)";

/// The rows of a batch, encoded once (they are compared on a retry).
pub struct Batch {
    pub rows: Vec<EncodedRow>,
}

impl Batch {
    pub fn encode(id: &str, events: &[Event]) -> Result<Batch> {
        let mut rows = Vec::new();
        for record in pack(events, &PackLimits::SQLITE) {
            let row = rows::encode_record(&record).map_err(|why| {
                Error::invalid(format!(
                    "cannot store an event of session {}: {why}",
                    quote(id)
                ))
            })?;
            if row.event_type.contains('\0') {
                return Err(nul_refusal(id, "an event type"));
            }
            rows.push(row);
        }
        Ok(Batch { rows })
    }

    /// Whether `stored` (ordered by seq) holds exactly these rows.
    fn is(&self, stored: &[StoredRow]) -> bool {
        stored.len() == self.rows.len()
            && self.rows.iter().zip(stored).all(|(e, s)| {
                e.seq == s.seq
                    && s.event_type == Value::Text(e.event_type.clone())
                    && e.time == s.time
                    && e.data == s.data
                    && s.source_event_seqs == e.source_event_seqs.clone().into()
                    && s.surface_op == e.surface_op.clone().into()
                    && s.ignorable == e.ignorable.into()
            })
    }
}

fn nul_refusal(id: &str, what: &str) -> Error {
    Error::invalid(format!(
        "session {}: {what} holds U+0000, which PostgreSQL text cannot store",
        quote(id)
    ))
}

/// PostgreSQL text cannot hold NUL; refuse such a header up front.
pub fn check_header(h: &SessionHeader) -> Result<()> {
    let fields = [
        ("the id", Some(&h.id)),
        ("cwd", h.cwd.as_ref()),
        ("parentSession", h.parent_session.as_ref()),
        ("origin", h.origin.as_ref()),
        ("agentPreset", h.agent_preset.as_ref()),
    ];
    for (what, v) in fields {
        if v.is_some_and(|v| v.contains('\0')) {
            return Err(nul_refusal(&h.id, what));
        }
    }
    Ok(())
}

fn insert_rows(
    tx: &mut postgres::Transaction<'_>,
    stmt: &postgres::Statement,
    id: &str,
    batch: &Batch,
) -> std::result::Result<(), Fail> {
    if batch.rows.is_empty() {
        return Ok(());
    }
    let n = batch.rows.len();
    let mut seqs = Vec::with_capacity(n);
    let mut types = Vec::with_capacity(n);
    let mut times = Vec::with_capacity(n);
    let mut texts: Vec<Option<&str>> = Vec::with_capacity(n);
    let mut blobs: Vec<Option<&[u8]>> = Vec::with_capacity(n);
    let mut sources: Vec<Option<&[u8]>> = Vec::with_capacity(n);
    let mut ops: Vec<Option<&str>> = Vec::with_capacity(n);
    let mut ignorable: Vec<Option<i16>> = Vec::with_capacity(n);
    for r in &batch.rows {
        seqs.push(r.seq);
        types.push(r.event_type.as_str());
        times.push(r.time);
        match &r.data {
            Value::Text(t) => {
                texts.push(Some(t));
                blobs.push(None);
            }
            Value::Blob(b) => {
                texts.push(None);
                blobs.push(Some(b));
            }
            other => {
                return Err(Fail::Done(Error::invariant(format!(
                    "encoded data of session {} is {other:?}",
                    quote(id)
                ))));
            }
        }
        sources.push(r.source_event_seqs.as_deref());
        ops.push(r.surface_op.as_deref());
        ignorable.push(r.ignorable.map(|v| v as i16));
    }
    tx.execute(
        stmt,
        &[
            &id, &seqs, &types, &times, &texts, &blobs, &sources, &ops, &ignorable,
        ],
    )?;
    Ok(())
}

/// What a write names in its notification.
pub struct Notify<'a> {
    pub channel: &'a str,
    pub kind: &'static str,
}

fn bump(
    tx: &mut postgres::Transaction<'_>,
    stmt: &postgres::Statement,
    id: &str,
    notify: &Notify<'_>,
    from: i64,
    next: i64,
) -> std::result::Result<(String, i64), Fail> {
    let row = tx.query_one(stmt, &[&id, &notify.channel, &notify.kind, &from, &next])?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}

/// The fault point between the server's commit and our seeing it: with
/// the `fault-injection` feature a test can make the acknowledgement of a
/// `COMMIT` that did commit get lost, as when the connection breaks then.
fn commit_reply() -> std::result::Result<(), Fail> {
    crate::fault::check(crate::fault::Op::PostgresCommitReply)
        .map_err(|e| Fail::Lost(format!("the reply to COMMIT was lost: {e}")))
}

/// One attempt of an append (see [`crate::backend::Backend::append`]).
/// On a retry (`retry`), first checks whether an earlier attempt's batch
/// is already stored.
#[allow(clippy::too_many_arguments)]
pub fn append(
    conn: &mut Conn,
    header: &SessionHeader,
    events: &[Event],
    batch: &Batch,
    next_seq: u64,
    expect: Expect<'_>,
    notify: &Notify<'_>,
    retry: bool,
    limits: &Limits,
    sealing: bool,
) -> std::result::Result<((String, i64), Written), Fail> {
    let id = header.id.as_str();
    let first_seq = events.first().map_or(next_seq, |e| e.seq);
    if retry {
        if let Some(done) = already_stored(conn, id, batch)? {
            return Ok((done, Written::unknown()));
        }
    }
    let lock_stmt = conn.prep(LOCK_SESSION_SQL)?;
    let last_stmt = conn.prep(LAST_ROW_SQL)?;
    let insert_session_stmt = conn.prep(INSERT_SESSION_SQL)?;
    let insert_stmt = conn.prep(INSERT_ROWS_SQL)?;
    let bump_stmt = conn.prep(BUMP_SQL)?;
    let suffix_stmt = conn.prep(SUFFIX_SQL)?;
    let mut tx = conn.client.transaction()?;
    let existing = reader::session(&mut tx, &lock_stmt, id)?;
    if let Some(row) = &existing {
        if row.version != SESSION_FORMAT_VERSION {
            return Err(Fail::Done(version_refusal(
                id,
                &row.version.to_string(),
                None,
            )));
        }
    }
    let stored_next = match &existing {
        None => 0,
        Some(_) => match tx.query_opt(&last_stmt, &[&id])? {
            None => 0,
            Some(r) => scan::last_logical_seq_of(id, reader::stored_row(&r)?)? + 1,
        },
    };
    // A batch starting below the stored next seq may re-send events an
    // ambiguous commit stored (reliability D9): those rows are read here,
    // under the row lock, for the check to compare.
    let stored_below = match &existing {
        Some(_) if first_seq < stored_next => {
            let (from, k) = scan::suffix_lookback_seq(first_seq);
            let rows = tx
                .query(&suffix_stmt, &[&id, &from, &k])?
                .iter()
                .map(reader::stored_row)
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Some(rows)
        }
        _ => None,
    };
    let already = checks::check_append_target(
        id,
        expect,
        existing.is_some(),
        stored_next,
        events,
        |from| match stored_below {
            Some(rows) => scan::scan_suffix(rows, from, &scan::ReadCtx::new(limits, "", id)),
            None => Ok(Vec::new()),
        },
    )?;
    let rest;
    let (batch, first_seq) = match (already, &existing) {
        (0, _) => (batch, first_seq),
        (n, Some(row)) if n == events.len() => {
            // All stored already: nothing to write.
            let done = (row.incarnation.clone(), row.revision);
            tx.commit()?;
            return Ok((done.clone(), Written::nothing_at(done)));
        }
        (n, _) => {
            rest = Batch::encode(id, &events[n..])?;
            (&rest, events[n].seq)
        }
    };
    if existing.is_none() {
        let h = header;
        let inserted = tx.execute(
            &insert_session_stmt,
            &[
                &h.id,
                &SESSION_FORMAT_VERSION,
                &(h.created_at as i64),
                &h.cwd,
                &h.parent_session,
                &h.seed_length.map(|v| v as i64),
                &h.origin,
                &h.delegation_depth.map(|v| v as i64),
                &h.agent_preset,
                &crate::uuid::uuid_v4(),
            ],
        )?;
        if inserted == 0 {
            // Another writer created it since our look.
            return Err(Fail::Done(Error::conflict(format!(
                "session {} already exists in this backend",
                quote(id)
            ))));
        }
    }
    insert_rows(&mut tx, &insert_stmt, id, batch)?;
    // What was inserted, as a read fetches it back (for the seal of an
    // append checkpoint), when this backend keeps seals.
    let written = Written {
        before: existing.map(|row| (row.incarnation, row.revision)),
        inserted: Inserted {
            rows: if sealing {
                batch.rows.iter().cloned().map(StoredRow::from).collect()
            } else {
                Vec::new()
            },
            events: next_seq - first_seq,
            whole_batch: sealing && already == 0,
            charge: Some(batch.rows.iter().map(|r| r.charge).sum()),
        },
    };
    let rev = bump(
        &mut tx,
        &bump_stmt,
        id,
        notify,
        first_seq as i64,
        next_seq as i64,
    )?;
    tx.commit()?;
    commit_reply()?;
    Ok((rev, written))
}

/// Whether `batch` is stored as is (same bytes at the same seqs); then the
/// session's current (incarnation, revision).
fn already_stored(
    conn: &mut Conn,
    id: &str,
    batch: &Batch,
) -> std::result::Result<Option<(String, i64)>, Fail> {
    let (Some(first), Some(last)) = (batch.rows.first(), batch.rows.last()) else {
        return Ok(None);
    };
    let range_stmt = conn.prep(RANGE_SQL)?;
    let session_stmt = conn.prep(SESSION_SQL)?;
    let mut tx = conn
        .client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()?;
    let Some(session) = reader::session(&mut tx, &session_stmt, id)? else {
        tx.commit()?;
        return Ok(None);
    };
    let stored = tx
        .query(&range_stmt, &[&id, &first.seq, &last.seq])?
        .iter()
        .map(reader::stored_row)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    tx.commit()?;
    Ok(batch
        .is(&stored)
        .then_some((session.incarnation, session.revision)))
}

/// One attempt of a repair (see [`crate::backend::Backend::commit_repair`]):
/// `token` makes a revision token of (incarnation, revision), `read` is
/// the token the repair was computed from.
#[allow(clippy::too_many_arguments)]
pub fn commit_repair(
    conn: &mut Conn,
    id: &str,
    from_seq: Option<u64>,
    closers: &Batch,
    next_seq: u64,
    read: &crate::backend::Revision,
    token: &dyn Fn(&str, i64) -> crate::backend::Revision,
    notify: &Notify<'_>,
    retry: bool,
) -> std::result::Result<(String, i64), Fail> {
    let lock_stmt = conn.prep(LOCK_SESSION_SQL)?;
    let delete_stmt = conn.prep(DELETE_TORN_SQL)?;
    let insert_stmt = conn.prep(INSERT_ROWS_SQL)?;
    let bump_stmt = conn.prep(BUMP_SQL)?;
    let range_stmt = conn.prep(RANGE_SQL)?;
    let mut tx = conn.client.transaction()?;
    let Some(current) = reader::session(&mut tx, &lock_stmt, id)? else {
        return Err(Fail::Done(checks::repair_gone(id)));
    };
    let now = token(&current.incarnation, current.revision);
    if now != *read {
        if retry && repaired(&mut tx, &range_stmt, id, from_seq, closers)? {
            // An earlier attempt committed; its reply was lost.
            tx.commit()?;
            return Ok((current.incarnation, current.revision));
        }
        return Err(Fail::Done(checks::repair_moved(id, read, &now)));
    }
    if from_seq.is_none() && closers.rows.is_empty() {
        tx.commit()?;
        return Ok((current.incarnation, current.revision));
    }
    if let Some(from) = from_seq {
        tx.execute(&delete_stmt, &[&id, &(from as i64)])?;
    }
    insert_rows(&mut tx, &insert_stmt, id, closers)?;
    let from = from_seq
        .or(closers.rows.first().map(|r| r.seq as u64))
        .unwrap_or(next_seq);
    let rev = bump(
        &mut tx,
        &bump_stmt,
        id,
        notify,
        from as i64,
        next_seq as i64,
    )?;
    tx.commit()?;
    commit_reply()?;
    Ok(rev)
}

/// Whether the log already ends as the repair would leave it: no rows from
/// the cut on but exactly the closers.
fn repaired(
    tx: &mut postgres::Transaction<'_>,
    range_stmt: &postgres::Statement,
    id: &str,
    from_seq: Option<u64>,
    closers: &Batch,
) -> std::result::Result<bool, Fail> {
    let first = match (from_seq, closers.rows.first()) {
        (Some(f), Some(c)) => f.min(c.seq as u64) as i64,
        (Some(f), None) => f as i64,
        (None, Some(c)) => c.seq,
        (None, None) => return Ok(false),
    };
    let stored = tx
        .query(range_stmt, &[&id, &first, &i64::MAX])?
        .iter()
        .map(reader::stored_row)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(closers.is(&stored))
}
