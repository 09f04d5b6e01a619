//! The catalog reads of a PostgreSQL session: the window from indexed rows
//! (see [`crate::backend::rows::window`]), fetched in one read-only
//! repeatable-read transaction, and the follower's wait on the
//! `<schema>.batches` notifications the writer already sends.

use std::time::Duration;

use super::reader::{SESSION_SQL, session, stored_row};
use super::{Conn, Fail};
use crate::backend::catalog::{ChangeWaiter, POLL_INTERVAL, WindowSpec};
use crate::backend::rows::StoredRow;
use crate::backend::rows::window::{TailRun, WindowRows};
use crate::backend::sqlite::reader::SessionRow;
use crate::error::Result;

const LAST_SQL: &str = "SELECT seq, type, time, data, data_zstd, source_event_seqs, surface_op, ignorable FROM events WHERE session_id = $1 ORDER BY seq DESC LIMIT 1";
const FIRST_OF_SQL: &str = "SELECT seq, type, time, data, data_zstd, source_event_seqs, surface_op, ignorable FROM events WHERE session_id = $1 AND type = $2 ORDER BY seq ASC LIMIT 1";
const LAST_OF_SQL: &str = "SELECT seq, type, time, data, data_zstd, source_event_seqs, surface_op, ignorable FROM events WHERE session_id = $1 AND type = $2 ORDER BY seq DESC LIMIT 1";
/// See [`WindowRows::tail_run`]: both scans seek the `(session_id, seq)` key.
const TAIL_RUN_SQL: &str = "WITH te(s) AS (SELECT coalesce((SELECT seq FROM events WHERE session_id = $1 AND type = 'turn/end' ORDER BY seq DESC LIMIT 1), -1::bigint)) \
     SELECT te.s::bigint, count(e.seq)::bigint, coalesce(sum(CASE WHEN e.ignorable = 0 AND e.seq < $2 THEN 1 ELSE 0 END), 0)::bigint \
     FROM te LEFT JOIN events e ON e.session_id = $1 AND e.seq > te.s GROUP BY te.s";
const AFTER_SQL: &str = "SELECT seq, type, time, data, data_zstd, source_event_seqs, surface_op, ignorable FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq";
const BYTES_SQL: &str = "SELECT coalesce(sum(octet_length(type) + coalesce(octet_length(data), 0) + coalesce(octet_length(data_zstd), 0) + coalesce(octet_length(source_event_seqs), 0) + coalesce(octet_length(surface_op), 0) + 16), 0)::bigint FROM events WHERE session_id = $1";

/// The rows of one window, fetched.
pub struct Fetched {
    pub session: SessionRow,
    last: Option<StoredRow>,
    typed: Vec<(String, bool, Option<StoredRow>)>,
    bytes: i64,
    tail: Option<TailRun>,
    /// The rows after the last `turn/end`, fetched when the tail run
    /// cannot tell the count.
    after: Vec<StoredRow>,
}

/// Fetches what the window of `id` needs. `None` when not stored. The
/// rows after the last `turn/end` are fetched only while they store at most
/// `max_stored` bytes (`maxLogBytes`): past it they are dropped, and the
/// caller's full read reports the limit.
pub fn fetch(
    conn: &mut Conn,
    id: &str,
    spec: &WindowSpec<'_>,
    max_stored: u64,
) -> std::result::Result<Option<Fetched>, Fail> {
    let session_stmt = conn.prep(SESSION_SQL)?;
    let last_stmt = conn.prep(LAST_SQL)?;
    let first_of = conn.prep(FIRST_OF_SQL)?;
    let last_of = conn.prep(LAST_OF_SQL)?;
    let bytes_stmt = conn.prep(BYTES_SQL)?;
    let tail_stmt = conn.prep(TAIL_RUN_SQL)?;
    let after_stmt = conn.prep(AFTER_SQL)?;
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
    let last = tx
        .query_opt(&last_stmt, &[&id])?
        .map(|r| stored_row(&r))
        .transpose()?;
    let mut typed = Vec::new();
    for (types, first) in [(spec.first_of, true), (spec.last_of, false)] {
        for t in types {
            let stmt = if first { &first_of } else { &last_of };
            let row = tx
                .query_opt(stmt, &[&id, t])?
                .map(|r| stored_row(&r))
                .transpose()?;
            typed.push((t.to_string(), first, row));
        }
    }
    let bytes: i64 = tx.query_one(&bytes_stmt, &[&id])?.get(0);
    let tail = match &last {
        Some(row) => {
            let r = tx.query_one(&tail_stmt, &[&id, &row.seq])?;
            Some(TailRun {
                turn_end_seq: r.get(0),
                rows: r.get(1),
                packed_before_last: r.get(2),
            })
        }
        None => None,
    };
    let mut after = Vec::new();
    if let (Some(run), Some(row)) = (&tail, &last) {
        if !run.runs_on_to(row.seq) {
            let mut stored = 0u64;
            let params: [&(dyn postgres::types::ToSql + Sync); 2] = [&id, &run.turn_end_seq];
            let mut rows = tx.query_raw(&after_stmt, params)?;
            while let Some(r) = postgres::fallible_iterator::FallibleIterator::next(&mut rows)? {
                let r = stored_row(&r)?;
                stored = stored.saturating_add(r.stored_len());
                if stored > max_stored {
                    after.clear();
                    break;
                }
                after.push(r);
            }
        }
    }
    tx.commit()?;
    Ok(Some(Fetched {
        session,
        last,
        typed,
        bytes,
        tail,
        after,
    }))
}

impl WindowRows for Fetched {
    fn last_row(&mut self) -> Result<Option<StoredRow>> {
        Ok(self.last.take())
    }

    fn row_of_type(&mut self, event_type: &str, first: bool) -> Result<Option<StoredRow>> {
        Ok(self
            .typed
            .iter_mut()
            .find(|(t, f, _)| t == event_type && *f == first)
            .and_then(|(_, _, r)| r.take()))
    }

    fn stored_bytes(&mut self) -> Result<u64> {
        Ok(self.bytes.max(0) as u64)
    }

    fn rows_after(&mut self, _seq: i64) -> Result<Vec<StoredRow>> {
        // Fetched with the tail run, after its `turn/end`.
        Ok(std::mem::take(&mut self.after))
    }

    fn tail_run(&mut self, last_seq: i64) -> Result<TailRun> {
        // Fetched with the last row; a mismatch cannot happen, and would
        // only send the caller to the full read.
        Ok(self.tail.unwrap_or(TailRun {
            turn_end_seq: last_seq,
            rows: -1,
            packed_before_last: 0,
        }))
    }
}

/// Waits on `LISTEN "<schema>.batches"` on a dedicated connection; when
/// that connection cannot be had or breaks, polls instead.
pub struct NotifyWaiter {
    pub client: Option<postgres::Client>,
}

impl ChangeWaiter for NotifyWaiter {
    fn wait(&mut self, timeout: Duration) -> Result<()> {
        let Some(client) = self.client.as_mut() else {
            std::thread::sleep(timeout.min(POLL_INTERVAL));
            return Ok(());
        };
        // A notification, or the timeout (at most a second: the caller
        // reads again after each return, so a change missed between its
        // read and the LISTEN is seen within that second).
        let broken = {
            let mut n = client.notifications();
            let mut iter = n.timeout_iter(timeout.min(Duration::from_secs(1)));
            postgres::fallible_iterator::FallibleIterator::next(&mut iter).is_err()
        };
        if broken {
            self.client = None;
        }
        Ok(())
    }
}
