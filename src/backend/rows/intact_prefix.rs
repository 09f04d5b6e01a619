//! The intact prefix of a session's rows (issue 19, `salvage`): the events
//! of every row, in seq order from 0, before the first row that cannot be
//! decoded or that breaks the seq chain. Shared by SQLite and PostgreSQL.

use super::{StoredRow, decode_row_ref};
use crate::model::event::Event;

/// The events before the first bad row of `rows` (ordered by seq), and why
/// it stops there (`None`: every row is intact).
pub fn intact_prefix(rows: &[StoredRow]) -> (Vec<Event>, Option<String>) {
    let mut events = Vec::new();
    for row in rows {
        let expected = events.len() as u64;
        if row.seq < 0 {
            // Rows below seq 0 are never committed events.
            return (events, Some(format!("a row has seq {}", row.seq)));
        }
        let record = match decode_row_ref(row) {
            Ok(r) => r,
            Err(why) => {
                return (
                    events,
                    Some(format!(
                        "the row at seq {} cannot be decoded: {why}",
                        row.seq
                    )),
                );
            }
        };
        if record.first_seq() != expected {
            return (
                events,
                Some(format!(
                    "the row at seq {} follows seq {}: rows are missing",
                    row.seq,
                    expected as i64 - 1
                )),
            );
        }
        record.into_events(&mut events);
    }
    (events, None)
}
