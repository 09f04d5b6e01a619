//! The catalog window of a row store (SQLite, PostgreSQL; see
//! [`crate::backend::catalog`]) from a few indexed rows: the session's
//! primary key `(session_id, seq)` serves the last row and, filtered by
//! `type`, the first and last row of each wanted type; no log is read
//! whole. Packed rows (chunk runs) never hold the wanted types; the last
//! row may be one, and then its last member is the log's last event.

use crate::backend::Revision;
use crate::backend::catalog::{Window, WindowSpec};
use crate::backend::rows::{StoredRow, decode_row_ref};
use crate::error::Result;
use crate::model::event::Event;
use crate::model::header::SessionHeader;

/// The row queries of one read transaction.
pub trait WindowRows {
    /// The row with the highest seq.
    fn last_row(&mut self) -> Result<Option<StoredRow>>;
    /// The row of `event_type` with the lowest (`first`) or highest seq.
    fn row_of_type(&mut self, event_type: &str, first: bool) -> Result<Option<StoredRow>>;
    /// The stored size of the session's rows (their values' lengths).
    fn stored_bytes(&mut self) -> Result<u64>;
    /// The rows after the last `turn/end` row (all rows when there is
    /// none): the seq of that row (`-1`: none), how many rows follow it,
    /// and how many of those below `last_seq` are packed.
    fn tail_run(&mut self, last_seq: i64) -> Result<TailRun>;
}

/// The shape of the rows after the last `turn/end` (see
/// [`WindowRows::tail_run`]), counted on the `(session_id, seq)` key.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TailRun {
    pub turn_end_seq: i64,
    pub rows: i64,
    pub packed_before_last: i64,
}

impl TailRun {
    /// Whether the rows after the last `turn/end` run on to `last_seq`
    /// without a gap: one scalar row per seq. Anything else (a gap a load
    /// cuts as a torn tail, or packed rows whose member counts only a
    /// decode tells) sends the caller to the full read.
    pub fn runs_on_to(&self, last_seq: i64) -> bool {
        self.packed_before_last == 0 && self.rows == last_seq - self.turn_end_seq
    }
}

/// The events of a row; `None` when it does not decode (a torn tail, or
/// corruption: the caller takes a full read, whose rules decide).
fn events_of(row: &StoredRow) -> Option<Vec<Event>> {
    let rec = decode_row_ref(row).ok()?;
    let mut out = Vec::new();
    rec.into_events_from(0, &mut out);
    Some(out)
}

/// Assembles the window of `header`'s session from `rows`. `None` when a
/// row does not decode, or the rows after the last `turn/end` do not run
/// on to the last row: then the backend reads the log whole (its torn-tail
/// rules decide what is there).
pub fn assemble(
    header: SessionHeader,
    revision: Revision,
    spec: &WindowSpec<'_>,
    rows: &mut dyn WindowRows,
) -> Result<Option<Window>> {
    let mut events = Vec::new();
    let mut next_seq = 0;
    if let Some(row) = rows.last_row()? {
        let Some(mut last) = events_of(&row) else {
            return Ok(None);
        };
        // A seq gap after the last `turn/end` is a torn tail that a load
        // cuts: then the last row does not give the count.
        if !rows.tail_run(row.seq)?.runs_on_to(row.seq) {
            return Ok(None);
        }
        if let Some(e) = last.pop() {
            next_seq = e.seq + 1;
            events.push(e);
        }
    }
    for (types, first) in [(spec.first_of, true), (spec.last_of, false)] {
        for t in types {
            if let Some(row) = rows.row_of_type(t, first)? {
                let Some(found) = events_of(&row) else {
                    return Ok(None);
                };
                events.extend(found);
            }
        }
    }
    events.sort_by_key(|e| e.seq);
    events.dedup_by_key(|e| e.seq);
    let bytes = rows.stored_bytes()?;
    Ok(Some(Window {
        header,
        revision,
        next_seq,
        bytes,
        events,
    }))
}
