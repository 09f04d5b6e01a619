//! Writes: appends and repairs, each one `BEGIN IMMEDIATE` transaction
//! (SPEC §4.3).

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use crate::backend::limits::Limits;
use crate::backend::rows::checks::{self, check_contiguous};
use crate::backend::{Expect, Revision, StoredLog};
use crate::codec::chunk_rows::{PackLimits, pack};
use crate::error::{Error, Result};
use crate::model::event::Event;
use crate::model::header::{SESSION_FORMAT_VERSION, SessionHeader};
use crate::model::json::quote;

use super::reader::{self, SessionRow};
use super::rows::{self, EncodedRow};
use super::sql_error;
use crate::backend::rows::StoredRow;
use crate::backend::rows::seal::{Inserted, Written};

fn begin<'c>(conn: &'c mut Connection, label: &str) -> Result<Transaction<'c>> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| sql_error(label, "cannot start a write transaction", e))
}

/// Inserts the rows of `events`; returns them as a read fetches them back,
/// and what a read counts of them against `maxLogBytes`.
fn insert_rows(
    tx: &Transaction<'_>,
    label: &str,
    id: &str,
    events: &[Event],
) -> Result<(Vec<StoredRow>, u64)> {
    let mut inserted = Vec::new();
    let mut charge = 0u64;
    let mut stmt = tx
        .prepare_cached(
            "INSERT INTO events (session_id, seq, type, time, data, source_event_seqs, surface_op, ignorable) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )
        .map_err(|e| sql_error(label, "cannot prepare the event insert", e))?;
    for record in pack(events, &PackLimits::SQLITE) {
        let row: EncodedRow = rows::encode_record(&record).map_err(|why| {
            Error::invalid(format!(
                "cannot store an event of session {}: {why}",
                quote(id)
            ))
        })?;
        stmt.execute(params![
            id,
            row.seq,
            row.event_type,
            row.time,
            row.data,
            row.source_event_seqs,
            row.surface_op,
            row.ignorable
        ])
        .map_err(|e| {
            sql_error(
                label,
                &format!(
                    "cannot insert the row at seq {} of session {}",
                    row.seq,
                    quote(id)
                ),
                e,
            )
        })?;
        charge += row.charge;
        inserted.push(StoredRow::from(row));
    }
    Ok((inserted, charge))
}

fn bump_revision(tx: &Transaction<'_>, label: &str, id: &str) -> Result<(String, i64)> {
    tx.query_row(
        "UPDATE sessions SET revision = revision + 1 WHERE id = ?1 RETURNING incarnation, revision",
        [id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .map_err(|e| {
        sql_error(
            label,
            &format!("cannot bump the revision of session {}", quote(id)),
            e,
        )
    })
}

/// Inserts the `sessions` row of a first append (absent header fields are
/// NULL; `delegation_depth` too). Ids are Rust strings, so they cannot hold
/// the lone surrogates with which the original stored U+FFFD instead
/// (MANIFEST `sqlite-edge-lone-surrogate`).
fn insert_session(tx: &Transaction<'_>, label: &str, header: &SessionHeader) -> Result<()> {
    let incarnation = crate::uuid::uuid_v4();
    let h = header;
    tx.execute(
        "INSERT INTO sessions (id, version, created_at, cwd, parent_session, seed_length, origin, \
         delegation_depth, agent_preset, incarnation, revision) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0)",
        params![
            h.id,
            SESSION_FORMAT_VERSION,
            h.created_at as i64,
            h.cwd,
            h.parent_session,
            h.seed_length.map(|v| v as i64),
            h.origin,
            h.delegation_depth.map(|v| v as i64),
            h.agent_preset,
            incarnation
        ],
    )
    .map_err(|e| sql_error(label, &format!("cannot insert session {}", quote(&h.id)), e))?;
    Ok(())
}

/// Appends `events` to the session of `header` (SPEC §4.3): under the write
/// lock, the stored tail is checked against `events[0].seq` before any
/// change, the session row is inserted on the first append, the rows are
/// inserted and the revision bumped, all in one transaction. Returns the new
/// (incarnation, revision) and what was written ([`Written`]).
pub fn append(
    conn: &mut Connection,
    label: &str,
    header: &SessionHeader,
    events: &[Event],
    expect: Expect<'_>,
    limits: &Limits,
) -> Result<((String, i64), Written)> {
    let id = header.id.as_str();
    if events.is_empty() {
        // Nothing to write; a session is materialized only by events.
        return match reader::session_row(conn, label, id)? {
            Some(row) => {
                let at = (row.incarnation, row.revision);
                Ok((at.clone(), Written::nothing_at(at)))
            }
            None => Err(Error::invalid(format!(
                "the first append to session {} must carry at least one event",
                quote(id)
            ))),
        };
    }
    check_contiguous(id, events)?;
    let tx = begin(conn, label)?;
    let existing: Option<SessionRow> = reader::session_row(&tx, label, id)?;
    if let Some(row) = &existing {
        if row.version != SESSION_FORMAT_VERSION {
            return Err(crate::model::header::version_refusal(
                id,
                &row.version.to_string(),
                None,
            ));
        }
    }
    let stored_next = match &existing {
        None => 0,
        Some(_) => reader::last_logical_seq(&tx, label, id, limits)?.map_or(0, |s| s + 1),
    };
    let already = checks::check_append_target(
        id,
        expect,
        existing.is_some(),
        stored_next,
        events,
        |from| match &existing {
            Some(row) => reader::stored_suffix(&tx, label, row, from, limits),
            None => Ok(Vec::new()),
        },
    )?;
    let before = existing.map(|row| (row.incarnation, row.revision));
    let events = &events[already..];
    if events.is_empty() {
        // All stored already (a retry after an ambiguous commit).
        let at = before.expect("a skipped prefix is stored");
        return Ok((at.clone(), Written::nothing_at(at)));
    }
    if before.is_none() {
        insert_session(&tx, label, header)?;
    }
    let (rows, charge) = insert_rows(&tx, label, id, events)?;
    let rev = bump_revision(&tx, label, id)?;
    let written = Written {
        before,
        inserted: Inserted {
            rows,
            events: events.len() as u64,
            whole_batch: already == 0,
            charge: Some(charge),
        },
    };
    let committed = match crate::fault::check(crate::fault::Op::SqliteCommit) {
        Ok(()) => tx.commit().and_then(|()| {
            crate::fault::check(crate::fault::Op::SqliteCommitAck).map_err(commit_fault)
        }),
        // An injected failed `COMMIT`: rolled back, settled like a real one.
        Err(e) => {
            drop(tx);
            Err(commit_fault(e))
        }
    };
    if let Err(e) = committed {
        let e = sql_error(
            label,
            &format!("cannot commit the append to session {}", quote(id)),
            e,
        );
        return settle_commit(conn, label, id, events, &rev, e, limits).map(|at| (at, written));
    }
    Ok((rev, written))
}

/// An injected `COMMIT` failure, as SQLite reports a failed write: a
/// failed `COMMIT` (`Op::SqliteCommit`, rolled back) or a lost commit
/// acknowledgement (`Op::SqliteCommitAck`: the commit happened, the caller
/// is told it failed).
fn commit_fault(e: std::io::Error) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_IOERR_FSYNC),
        Some(e.to_string()),
    )
}

/// After `COMMIT` reported `error`, finds out what is stored (SPEC §4.3,
/// reliability D9): a commit error does not say whether the transaction
/// reached the database. When a fresh read sees exactly this append (the
/// revision it bumped and its last event), it is committed and the append
/// succeeds; when it sees the state before, the error stands (nothing was
/// written; a retry is safe). When it cannot tell, the error says so; a
/// retry through the same session then compares the stored events with the
/// batch and never writes them twice.
fn settle_commit(
    conn: &mut Connection,
    label: &str,
    id: &str,
    events: &[Event],
    rev: &(String, i64),
    error: Error,
    limits: &Limits,
) -> Result<(String, i64)> {
    let check = (|| -> Result<bool> {
        let Some(row) = reader::session_row(conn, label, id)? else {
            return Ok(false);
        };
        if (row.incarnation.as_str(), row.revision) != (rev.0.as_str(), rev.1) {
            return Ok(false);
        }
        let last = events.last().expect("a non-empty batch");
        let stored = reader::stored_suffix(conn, label, &row, last.seq, limits)?;
        Ok(stored.len() == 1 && checks::same_event(&stored[0], last))
    })();
    match check {
        Ok(true) => Ok(rev.clone()),
        Ok(false) => Err(error),
        Err(why) => Err(error.context(&format!(
            "the append may or may not be stored (checking failed: {why}); retrying it through the same session never stores it twice"
        ))),
    }
}

/// Commits the repair of `log` (SPEC §4.3): under the write lock, checks
/// that the session is still at `log.revision`, deletes the torn rows
/// (`seq >= from_seq`), appends `closers`, bumps the revision.
pub fn commit_repair(
    conn: &mut Connection,
    label: &str,
    id: &str,
    log: &StoredLog,
    closers: &[Event],
    token: &dyn Fn(&str, i64) -> Revision,
) -> Result<(String, i64)> {
    let from_seq = checks::repair_plan(id, log, closers)?;
    let tx = begin(conn, label)?;
    let Some(current) = reader::session_row(&tx, label, id)? else {
        return Err(checks::repair_gone(id));
    };
    let now = token(&current.incarnation, current.revision);
    if now != log.revision {
        return Err(checks::repair_moved(id, &log.revision, &now));
    }
    if from_seq.is_none() && closers.is_empty() {
        return Ok((current.incarnation, current.revision));
    }
    if let Some(from) = from_seq {
        tx.execute(
            "DELETE FROM events WHERE session_id = ?1 AND (seq >= ?2 OR seq < 0)",
            params![id, from as i64],
        )
        .map_err(|e| {
            sql_error(
                label,
                &format!("cannot cut the torn tail of session {}", quote(id)),
                e,
            )
        })?;
    }
    insert_rows(&tx, label, id, closers)?;
    let rev = bump_revision(&tx, label, id)?;
    crate::fault::check(crate::fault::Op::SqliteCommit).map_err(|e| Error::io(label, e))?;
    tx.commit().map_err(|e| {
        sql_error(
            label,
            &format!("cannot commit the repair of session {}", quote(id)),
            e,
        )
    })?;
    Ok(rev)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::event::EventType;
    use crate::model::json::JsonText;

    fn turn(n: u64) -> Event {
        Event::new(
            EventType::known("turn/start"),
            0,
            1,
            JsonText::from_trusted(format!("{{\"turn\":{n}}}").as_str()),
        )
    }

    /// A failed `COMMIT` settles as committed only when the stored session
    /// is at the append's revision *and* holds its last event: another
    /// writer's commit that reached the same revision with a different event
    /// at that seq leaves the error standing.
    #[test]
    fn a_commit_is_settled_by_its_revision_and_its_last_event() {
        // Session "s" holds `turn(1)` at seq 0.
        let be = super::super::tests::backend_with(&["s"]);
        let failed = || Error::io_msg("the commit failed");
        be.with_conn(|c| {
            let row = reader::session_row(c, "db", "s")?.expect("stored");
            let at = (row.incarnation.clone(), row.revision);
            let limits = Limits::default();
            let settle = |c: &mut Connection, event: Event, at: &(String, i64)| {
                settle_commit(c, "db", "s", &[event], at, failed(), &limits)
            };
            // The wrong event at the right revision, the right event at
            // another revision or incarnation: not this append.
            let theirs = turn(2);
            assert!(settle(c, theirs, &at).is_err());
            assert!(settle(c, turn(1), &(at.0.clone(), at.1 + 1)).is_err());
            assert!(settle(c, turn(1), &("other".into(), at.1)).is_err());
            // Its event at its revision: committed.
            assert_eq!(settle(c, turn(1), &at)?, at);
            Ok(())
        })
        .unwrap();
    }
}
