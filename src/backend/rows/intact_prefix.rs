//! The intact prefix of a session's rows (issue 19, `salvage`): the events
//! of every row, in seq order from 0, before the first row that cannot be
//! decoded or that breaks the seq chain. Shared by SQLite and PostgreSQL.

use super::{RowBounds, RowFailure, StoredRow, decode_row_bounded};
use crate::backend::limits::Limits;
use crate::model::event::Event;

/// The events before the first bad row of `rows` (ordered by seq), and why
/// it stops there (`None`: every row is intact). Rows are decoded under
/// `limits`, their decoded bytes and the events of packed rows counted up
/// to twice `maxLogBytes` ([`Limits::salvage_budget`]): a row past a limit
/// stops the prefix too.
pub fn intact_prefix(rows: &[StoredRow], limits: &Limits) -> (Vec<Event>, Option<String>) {
    let budget = limits.salvage_budget();
    let bounds = RowBounds {
        limits,
        budget: &budget,
    };
    let mut events = Vec::new();
    for row in rows {
        let expected = events.len() as u64;
        if row.seq < 0 {
            // Rows below seq 0 are never committed events.
            return (events, Some(format!("a row has seq {}", row.seq)));
        }
        let record = match decode_row_bounded(row, &bounds) {
            Ok(r) => r,
            Err(f) => {
                let why = match f {
                    RowFailure::Invalid(m) | RowFailure::Column(m) => m,
                    RowFailure::RecordLimit => format!(
                        "it holds a record of more than {} bytes (maxRecordBytes)",
                        limits.max_record_bytes
                    ),
                    RowFailure::LogLimit | RowFailure::ExpansionLimit(_) => format!(
                        "the rows up to it decode to more than {} bytes (twice maxLogBytes)",
                        limits.max_log_bytes.saturating_mul(2)
                    ),
                };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::rows::encode_record;
    use crate::codec::chunk_rows::{PackLimits, pack};

    /// turn/start, then 3000 one-letter text deltas in packed rows of at
    /// most 1024 (three rows), as a SQLite store writes them.
    fn rows() -> Vec<StoredRow> {
        let mut events = vec![
            Event::parse(r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#).unwrap(),
        ];
        for seq in 1..=3000 {
            events.push(
                Event::parse(&format!(
                    r#"{{"type":"assistant/chunk","seq":{seq},"time":1,"data":{{"turn":1,"step":1,"chunk":{{"type":"text-delta","index":0,"text":"a"}}}}}}"#
                ))
                .unwrap(),
            );
        }
        pack(&events, &PackLimits::SQLITE)
            .iter()
            .map(|r| encode_record(r).unwrap().into())
            .collect()
    }

    #[test]
    fn a_salvage_counts_the_events_of_packed_rows() {
        let rows = rows();
        assert_eq!(rows.len(), 4);
        let limits = |max_log_bytes| Limits {
            max_log_bytes,
            ..Limits::default()
        };
        let (events, stopped) = intact_prefix(&rows, &limits(300_000));
        assert_eq!((events.len(), stopped), (3001, None));
        // Twice 150 000 bytes: reached at the third packed row (its events
        // with the first two rows' count over 3 × 1024 × 128 bytes).
        let (events, stopped) = intact_prefix(&rows, &limits(150_000));
        assert_eq!(events.len(), 1 + 1024 * 2);
        assert_eq!(
            stopped.as_deref(),
            Some(
                "the row at seq 2049 cannot be decoded: the rows up to it decode to more than 300000 bytes (twice maxLogBytes)"
            )
        );
        // A row over maxRecordBytes stops it where it is (turn/start's
        // type and data are 20 bytes).
        let limits = Limits {
            max_record_bytes: 19,
            ..Limits::default()
        };
        let (events, stopped) = intact_prefix(&rows, &limits);
        assert_eq!(events.len(), 0);
        assert_eq!(
            stopped.as_deref(),
            Some(
                "the row at seq 0 cannot be decoded: it holds a record of more than 19 bytes (maxRecordBytes)"
            )
        );
    }
}
