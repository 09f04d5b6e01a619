//! The catalog window of a row store (SQLite, PostgreSQL; see
//! [`crate::backend::catalog`]) from a few indexed rows: the session's
//! primary key `(session_id, seq)` serves the last row and, filtered by
//! `type`, the first and last row of each wanted type; no log is read
//! whole. Packed rows (chunk runs) never hold the wanted types; the last
//! row may be one, and then its last member is the log's last event.
//!
//! The event count comes from the last row, so the rows after the last
//! `turn/end` must run on to it as a load keeps them (SPEC §4.3: there a
//! row that does not decode or breaks contiguity starts the torn tail that
//! a load cuts). Scalar rows are counted on the key; when packed rows are
//! among them (a turn left open while it streamed, or by a crash), those
//! rows alone are fetched and decoded, not the whole log.

use crate::backend::Revision;
use crate::backend::catalog::{Window, WindowSpec};
use crate::backend::limits::Limits;
use crate::backend::rows::{RowBounds, StoredRow, decode_row_bounded};
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
    /// The rows with a seq above `seq`, in seq order (the rows after the
    /// last `turn/end`, when [`TailRun::runs_on_to`] cannot tell).
    fn rows_after(&mut self, seq: i64) -> Result<Vec<StoredRow>>;
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
    /// decode tells) is judged by decoding those rows.
    pub fn runs_on_to(&self, last_seq: i64) -> bool {
        self.packed_before_last == 0 && self.rows == last_seq - self.turn_end_seq
    }
}

/// Whether `rows` (the rows after the `turn/end` at `turn_end_seq`, `-1`
/// for none) decode under `bounds` and run on without a gap from the seq
/// after it, as a load keeps them, and end at `last_seq`.
fn tail_decodes_on(
    rows: &[StoredRow],
    turn_end_seq: i64,
    last_seq: i64,
    bounds: &RowBounds<'_>,
) -> bool {
    let mut expected = (turn_end_seq + 1).max(0) as u64;
    for row in rows {
        match decode_row_bounded(row, bounds) {
            Ok(rec) if rec.first_seq() == expected => expected += rec.member_count(),
            _ => return false,
        }
    }
    rows.last().is_some_and(|r| r.seq == last_seq)
}

/// The events of a row; `None` when it does not decode under `bounds` (a
/// torn tail, corruption, or past a limit: the caller takes a full read,
/// whose rules decide and whose errors name the row).
fn events_of(row: &StoredRow, bounds: &RowBounds<'_>) -> Option<Vec<Event>> {
    let rec = decode_row_bounded(row, bounds).ok()?;
    let mut out = Vec::new();
    rec.into_events_from(0, &mut out);
    Some(out)
}

/// Assembles the window of `header`'s session from `rows`, decoded under
/// the store's `limits` (the rows it decodes count together against
/// `maxLogBytes`, as a load's do; the last row, decoded again among the
/// open turn's, counts twice: at worst a log just under the limit takes
/// the full read). `None` when a row does not decode or
/// goes past a limit, or the rows after the last `turn/end` do not run on
/// to the last row: then the backend reads the log whole (its torn-tail
/// rules decide what is there, and its errors name a limit).
pub fn assemble(
    header: SessionHeader,
    revision: Revision,
    spec: &WindowSpec<'_>,
    limits: &Limits,
    rows: &mut dyn WindowRows,
) -> Result<Option<Window>> {
    let budget = limits.budget();
    let bounds = RowBounds {
        limits,
        budget: &budget,
    };
    let mut events = Vec::new();
    let mut next_seq = 0;
    if let Some(row) = rows.last_row()? {
        let Some(mut last) = events_of(&row, &bounds) else {
            return Ok(None);
        };
        // A seq gap after the last `turn/end` is a torn tail that a load
        // cuts: then the last row does not give the count.
        let run = rows.tail_run(row.seq)?;
        if !run.runs_on_to(row.seq)
            && !tail_decodes_on(
                &rows.rows_after(run.turn_end_seq)?,
                run.turn_end_seq,
                row.seq,
                &bounds,
            )
        {
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
                let Some(found) = events_of(&row, &bounds) else {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::rows::{Value, encode_record};
    use crate::codec::chunk_rows::{PackLimits, pack};

    /// The rows a SQLite store writes for `events`.
    fn rows_of(events: &[Event]) -> Vec<StoredRow> {
        pack(events, &PackLimits::SQLITE)
            .iter()
            .map(|r| StoredRow::from(encode_record(r).unwrap()))
            .collect()
    }

    fn event(line: String) -> Event {
        Event::parse(&line).unwrap()
    }

    /// An open turn after a `turn/end` at seq 4: `turn/start` at 5, text
    /// deltas 6–11 (one packed row), a scalar `session/title` at 12, then
    /// deltas 13–17 (the last row, packed).
    fn open_turn() -> Vec<StoredRow> {
        let delta = |seq: u64| {
            event(format!(
                r#"{{"type":"assistant/chunk","seq":{seq},"time":{seq},"data":{{"turn":2,"step":1,"chunk":{{"type":"text-delta","index":0,"text":"x"}}}}}}"#
            ))
        };
        let mut events = vec![event(
            r#"{"type":"turn/start","seq":5,"time":5,"data":{"turn":2}}"#.into(),
        )];
        events.extend((6..=11).map(delta));
        events.push(event(
            r#"{"type":"session/title","seq":12,"time":12,"data":{"title":"t","messageSeqs":[],"source":{"kind":"fallback"}}}"#.into(),
        ));
        events.extend((13..=17).map(delta));
        let rows = rows_of(&events);
        assert_eq!(
            rows.iter()
                .map(|r| (r.seq, r.is_packed()))
                .collect::<Vec<_>>(),
            [(5, false), (6, true), (12, false), (13, true)],
            "the shape this test needs"
        );
        rows
    }

    /// [`tail_decodes_on`] under the default limits.
    fn check(rows: &[StoredRow], turn_end_seq: i64, last_seq: i64) -> bool {
        let limits = Limits::default();
        let budget = limits.budget();
        let bounds = RowBounds {
            limits: &limits,
            budget: &budget,
        };
        tail_decodes_on(rows, turn_end_seq, last_seq, &bounds)
    }

    #[test]
    fn packed_rows_that_run_on_give_the_count() {
        let rows = open_turn();
        assert!(check(&rows, 4, 13));
        // No `turn/end` at all: the rows must start at seq 0.
        assert!(!check(&rows, -1, 13));
    }

    #[test]
    fn a_gap_a_damaged_row_or_another_last_row_is_left_to_the_full_read() {
        let rows = open_turn();
        assert!(!check(&rows, 3, 13), "a gap before the first");
        let mut gap = rows.clone();
        gap.remove(2);
        assert!(!check(&gap, 4, 13), "a gap after a packed row");
        let mut damaged = rows.clone();
        damaged[1].data = Value::Text("{\"turn\":".into());
        assert!(!check(&damaged, 4, 13), "a row that does not decode");
        assert!(!check(&rows, 4, 12), "not the last row's seq");
        assert!(!check(&rows[..3], 4, 13), "rows missing at the end");
        assert!(!check(&[], 4, 13));
    }

    #[test]
    fn rows_past_the_log_limit_are_left_to_the_full_read() {
        let rows = open_turn();
        let limits = Limits {
            max_log_bytes: 64,
            ..Limits::default()
        };
        let budget = limits.budget();
        let bounds = RowBounds {
            limits: &limits,
            budget: &budget,
        };
        assert!(!tail_decodes_on(&rows, 4, 13, &bounds));
    }
}
