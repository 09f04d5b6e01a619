//! Resource bounds of reads, and the same bounds on writes.
//!
//! A store is read from files anyone may have touched, so no stored byte may
//! make a read allocate without bound: a 512 KiB Zstandard file can decode to
//! 16 GiB, a 30 KiB SQLite BLOB to a gigabyte. Two limits bound every read,
//! both set in the store configuration:
//!
//! - **`maxRecordBytes`** (default 256 MiB): the longest *record*. JSONL: one
//!   line (header line included), without its `\n`, as decoded; SQLite: one
//!   `events` row, the bytes of its `type`, decoded `data`, `surface_op` and
//!   `source_event_seqs` together. Decoding stops as soon as a record grows
//!   past it, so the partial line or row never needs more memory than that.
//!   It also bounds each Zstandard frame's pending output (a frame is decoded
//!   in 256 KiB steps and its complete lines are consumed at once), and the
//!   header frame a listing decodes (one header line).
//! - **`maxLogBytes`** (default 1 GiB): the decoded size of one log. JSONL:
//!   every decoded line plus its `\n`; SQLite: the records of its rows; and
//!   for every event a packed chunk row expands to, [`PACKED_MEMBER_CHARGE`]
//!   more ([`expansion_charge`]: the events, not the rows, take the memory).
//!   The count is shared by the threads of a parallel read. A compressed JSONL
//!   file larger than twice this limit is refused before it is read (a
//!   Zstandard frame adds a few bytes per 128 KiB block and per frame, so a
//!   log that decodes within the limit is never that large).
//!
//! Going over a limit is a `corruption` error naming the file or session,
//! the byte offset or seq, and the limit; it is never a torn tail (a load
//! never deletes what a reader with larger limits could read) and never an
//! abort. Raising the limits in the configuration reads such a log.
//!
//! The writers enforce the same bounds, so a log this library wrote is always
//! readable with the limits it was written with: an event whose record could
//! exceed `maxRecordBytes` is refused when it is appended ([`record_bound`]
//! is an upper bound of its JSONL line and its SQLite row alike), JSONL chunk
//! rows are packed no larger than the limit, and an append that would bring a
//! log past [`Limits::log_write_limit`] is refused ([`Limits::check_log_append`],
//! the one rule that the writers and the live sessions apply: a live session
//! counts its log as the writer will and refuses the event at `append`, so
//! it never acknowledges an event its write-behind batch would refuse).
//!
//! Memory: one read holds at most about `maxLogBytes` of decoded records
//! (the events it returns) plus one partial record per decoding thread (two
//! threads), so its peak is about `2 × maxLogBytes + 6 × maxRecordBytes` in
//! the worst case (the events are copies of the decoded text; a packed row
//! being parsed holds the spans of its members, up to four times its bytes:
//! a 70 MB row of one-letter deltas peaked at 455 MB). Hosts with less
//! memory set smaller limits.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::codec::chunk_rows::Record;
use crate::error::{Error, Result};
use crate::model::event::Event;
use crate::model::header::SessionHeader;
use crate::model::json::{MAX_SAFE_INTEGER, quote};

/// Default `maxRecordBytes`: 256 MiB.
pub const DEFAULT_MAX_RECORD_BYTES: u64 = 256 << 20;

/// Default `maxLogBytes`: 1 GiB.
pub const DEFAULT_MAX_LOG_BYTES: u64 = 1 << 30;

/// Smallest accepted `maxRecordBytes`: a SQLite chunk row holds up to 1 MiB
/// of `data` (SPEC §4.2) and must stay readable.
pub const MIN_MAX_RECORD_BYTES: u64 = 2 << 20;

/// Bytes of envelope a JSONL chunk row adds to its `data` (`{"type":
/// "tool-call-chunks","seq0":…,"time0":…,"data":…}`), with room to spare:
/// packing keeps a row's `data` this far below `maxRecordBytes`.
pub const PACKED_ENVELOPE_BYTES: usize = 4096;

/// The read and write bounds of one store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `maxRecordBytes`.
    pub max_record_bytes: u64,
    /// `maxLogBytes`.
    pub max_log_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_record_bytes: DEFAULT_MAX_RECORD_BYTES,
            max_log_bytes: DEFAULT_MAX_LOG_BYTES,
        }
    }
}

impl Limits {
    /// Checks a configured pair: `2 MiB ≤ maxRecordBytes ≤ maxLogBytes ≤
    /// 2^53 − 1`.
    pub fn new(max_record_bytes: u64, max_log_bytes: u64) -> Result<Limits> {
        let max = MAX_SAFE_INTEGER as u64;
        if !(MIN_MAX_RECORD_BYTES..=max).contains(&max_record_bytes) {
            return Err(Error::invalid(format!(
                "store config maxRecordBytes must be an integer from {MIN_MAX_RECORD_BYTES} to {max}, not {max_record_bytes}"
            )));
        }
        if !(max_record_bytes..=max).contains(&max_log_bytes) {
            return Err(Error::invalid(format!(
                "store config maxLogBytes must be an integer from maxRecordBytes ({max_record_bytes}) to {max}, not {max_log_bytes}"
            )));
        }
        Ok(Limits {
            max_record_bytes,
            max_log_bytes,
        })
    }

    /// `maxRecordBytes` as a buffer size.
    pub fn record(&self) -> usize {
        usize::try_from(self.max_record_bytes).unwrap_or(usize::MAX)
    }

    /// The largest decoded size an append may bring a log to: `maxLogBytes`
    /// less a sixteenth, the room a crash repair needs for its closers (a
    /// repair must never make an acknowledged log unreadable).
    pub fn log_write_limit(&self) -> u64 {
        self.max_log_bytes - self.max_log_bytes / 16
    }

    /// The most `data` text a JSONL chunk row may pack.
    pub fn packed_data_bytes(&self) -> usize {
        self.record().saturating_sub(PACKED_ENVELOPE_BYTES)
    }

    /// The count of a salvage, which reads what a full read refuses: up to
    /// twice `maxLogBytes` (as a raw JSONL salvage reads its file).
    pub fn salvage_budget(&self) -> Budget {
        Budget {
            used: AtomicU64::new(0),
            limit: self.max_log_bytes.saturating_mul(2),
        }
    }

    /// A fresh count of decoded bytes for one read.
    pub fn budget(&self) -> Budget {
        Budget {
            used: AtomicU64::new(0),
            limit: self.max_log_bytes,
        }
    }

    /// Refuses an event whose record could exceed `maxRecordBytes` (the
    /// write side of the bound; `invalid_argument`).
    pub fn check_event(&self, event: &Event, session: &str) -> Result<()> {
        let bound = record_bound(event);
        if bound > self.max_record_bytes {
            return Err(Error::invalid(format!(
                "event {} at seq {} of session {} is a record of up to {bound} bytes, over the maxRecordBytes limit of {} bytes; a reader would refuse it (split the data, or raise maxRecordBytes in the store config)",
                quote(event.type_str()),
                event.seq,
                quote(session),
                self.max_record_bytes
            )));
        }
        Ok(())
    }

    /// The one rule for a log's size on write (every backend's writer and
    /// every live session apply it): appending `events` to a log counted at
    /// `before` bytes brings it to `before +` [`log_growth`]`(events)`, which
    /// must stay within [`Limits::log_write_limit`]. Returns the new count.
    /// A new log starts at [`new_log_bytes`]. The count is an upper bound of
    /// the decoded size on every backend, so a log it admits always reads
    /// back within `maxLogBytes`. Refusal: `invalid_argument` naming the
    /// session, the first seq of `events` and the limit.
    pub fn check_log_append(&self, before: u64, events: &[Event], session: &str) -> Result<u64> {
        let total = before.saturating_add(log_growth(events));
        if total > self.log_write_limit() {
            let seq = events.first().map_or(0, |e| e.seq);
            return Err(Error::invalid(format!(
                "appending at seq {seq} to session {} would bring its log to {total} bytes, over the {} bytes an append may reach (maxLogBytes {} less a sixteenth kept for crash repairs); start a new session, or raise maxLogBytes in the store config",
                quote(session),
                self.log_write_limit(),
                self.max_log_bytes
            )));
        }
        Ok(total)
    }

    /// The read-side error for a record over `maxRecordBytes`; `subject`
    /// names the file or session and `place` the byte or seq.
    pub fn record_error(&self, subject: &str, place: &str) -> Error {
        Error::corruption(format!(
            "{subject}: the record {place} is longer than the maxRecordBytes limit of {} bytes; this library never writes such a record (raise maxRecordBytes in the store config to read it)",
            self.max_record_bytes
        ))
    }

    /// The read-side error for a log over `maxLogBytes`.
    pub fn log_error(&self, subject: &str, place: &str) -> Error {
        Error::corruption(format!(
            "{subject}: the log decodes to more than the maxLogBytes limit of {} bytes ({place}); this library never writes such a log (raise maxLogBytes in the store config to read it)",
            self.max_log_bytes
        ))
    }
}

/// The decoded bytes one read has produced so far, shared by its threads.
#[derive(Debug)]
pub struct Budget {
    used: AtomicU64,
    limit: u64,
}

impl Budget {
    /// Counts `n` more decoded bytes; `false` once the total is over the
    /// limit (and from then on).
    pub fn charge(&self, n: u64) -> bool {
        let before = self.used.fetch_add(n, Ordering::Relaxed);
        before.saturating_add(n) <= self.limit
    }

    /// Bytes counted so far.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// A budget that never runs out (reads of one row, tests).
    pub fn unlimited() -> Budget {
        Budget {
            used: AtomicU64::new(0),
            limit: u64::MAX,
        }
    }
}

/// Envelope bytes of a JSONL event line beyond its JSON values, with room
/// to spare: `{"type":,"seq":,"time":,"data":,"sourceEventSeqs":,
/// "surfaceOp":,"ignorable":true}` and two numbers of at most 20 digits.
const ENVELOPE_BOUND: u64 = 160;

/// The shortest record line a log can hold, its `\n` included:
/// `{"type":"a","seq":0,"time":0,"data":0}` (the four keys are required, the
/// type is not empty).
pub const MIN_RECORD_LINE: u64 = 40;

/// What a read counts against `maxLogBytes` for a JSONL line of `len` bytes
/// (its `\n` not included): its bytes and `\n`, and at least
/// [`MIN_RECORD_LINE`], so a file of short lines that no writer writes
/// (blank ones, torn ones) costs no more lines to parse than a log of the
/// same count (a 1 GiB file of `\n`s was a billion lines, minutes of
/// parsing). A line that parses is never shorter, so the count of every
/// log that reads cleanly is its decoded size.
pub fn line_charge(len: usize) -> u64 {
    (len as u64).saturating_add(1).max(MIN_RECORD_LINE)
}

/// What a read counts against `maxLogBytes` for each event a packed chunk
/// row expands to, beyond the row's own bytes: about what the member's
/// line would count unpacked (a short delta's line is 110–140 bytes), so
/// the events a read builds stay about the size of what it counts. Without
/// it a crafted 70 MB line of ten million two-byte deltas built 2.5 GB of
/// events under a 1 GiB limit (the row's bytes are seven per member). It
/// never makes a log this library wrote unreadable: a member's
/// [`record_bound`], which its append counted, is at least 250 bytes more
/// than its share of the row (its data's envelope, the type six times,
/// `ENVELOPE_BOUND`).
pub const PACKED_MEMBER_CHARGE: u64 = 128;

/// What a read counts against `maxLogBytes` for `record` beyond its stored
/// bytes: [`PACKED_MEMBER_CHARGE`] per member of a packed row, nothing for
/// an event. The readers and the writers' size counts of every backend
/// add it, so they count alike.
pub fn expansion_charge(record: &Record) -> u64 {
    match record {
        Record::Packed(row) => row.member_count().saturating_mul(PACKED_MEMBER_CHARGE),
        Record::Event(_) => 0,
    }
}

/// The place of a `maxLogBytes` error at a packed row of `members` events
/// (`place` names the line or row).
pub fn expansion_place(place: &str, members: u64) -> String {
    format!(
        "{place}, a packed chunk row of {members} events, each counted as {PACKED_MEMBER_CHARGE} bytes more than its share of the row"
    )
}

/// An upper bound of the record an event becomes on either backend: its
/// JSONL line (the type escaped at worst six bytes per byte) and its SQLite
/// row (type, data, surface op and source seqs, each stored as text or a
/// varint BLOB no longer than its JSON).
pub fn record_bound(event: &Event) -> u64 {
    let texts = event.data.as_str().len()
        + event.surface_op().map_or(0, |t| t.as_str().len())
        + event
            .source_event_seqs()
            .as_ref()
            .map_or(0, |t| t.as_str().len());
    texts as u64 + 6 * event.type_str().len() as u64 + ENVELOPE_BOUND
}

/// What appending `events` adds to a log's size count: the sum of their
/// [`record_bound`]s (a packed chunk row is shorter than its members'
/// bounds together).
pub fn log_growth(events: &[Event]) -> u64 {
    events
        .iter()
        .map(record_bound)
        .fold(0u64, u64::saturating_add)
}

/// The size count of a new JSONL log before its first event: the header
/// line and its `\n` (a row store's read counts its rows only, and so does
/// its writer; a live session counts the line on every backend, as an
/// upper bound).
pub fn new_log_bytes(header: &SessionHeader) -> u64 {
    header.to_jsonl_line().len() as u64 + 1
}

/// Grows `buf` so it has at least `min_spare` free bytes, doubling its
/// capacity but never past `cap + min_spare`: a buffer that is never allowed
/// to hold more than `cap` bytes never reserves (nor maps) twice that. An
/// allocation the system refuses is an error, not an abort.
pub fn reserve_bounded(buf: &mut Vec<u8>, min_spare: usize, cap: usize) -> Result<()> {
    if buf.capacity() - buf.len() >= min_spare {
        return Ok(());
    }
    let doubled = buf.capacity().max(min_spare);
    let room = cap.saturating_add(min_spare).saturating_sub(buf.len());
    let grow = doubled.min(room).max(min_spare);
    buf.try_reserve_exact(grow).map_err(|_| {
        Error::io_msg(format!(
            "out of memory: cannot grow a {}-byte read buffer by {grow} bytes (lower maxRecordBytes or maxLogBytes in the store config)",
            buf.len()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::event::EventType;
    use crate::model::json::JsonText;

    #[test]
    fn configured_limits_are_checked() {
        assert_eq!(
            Limits::new(DEFAULT_MAX_RECORD_BYTES, DEFAULT_MAX_LOG_BYTES).unwrap(),
            Limits::default()
        );
        let e = Limits::new(1 << 20, 1 << 30).unwrap_err();
        assert!(e.to_string().contains("maxRecordBytes must be"), "{e}");
        let e = Limits::new(4 << 20, 3 << 20).unwrap_err();
        assert!(e.to_string().contains("maxLogBytes must be"), "{e}");
        let l = Limits::new(4 << 20, 16 << 20).unwrap();
        assert_eq!(l.log_write_limit(), 15 << 20);
        assert_eq!(l.packed_data_bytes(), (4 << 20) - 4096);
    }

    #[test]
    fn the_record_bound_covers_both_backends() {
        let mut e = Event::new(
            EventType::new("a\"\u{1}"),
            u64::MAX,
            i64::MIN,
            JsonText::from_trusted(r#"{"x":"y"}"#),
        );
        e.set_surface_op(Some(JsonText::from_trusted(r#""append""#)));
        e.set_source_event_seqs(Some(JsonText::from_trusted("[9007199254740991,0]")));
        e.ignorable = true;
        let line = e.to_json().len() as u64;
        assert!(record_bound(&e) >= line, "{} < {line}", record_bound(&e));
        let l = Limits::new(2 << 20, 2 << 20).unwrap();
        l.check_event(&e, "s").unwrap();
        let big = Event::new(
            EventType::new("user/message"),
            3,
            1,
            JsonText::from_trusted(format!("\"{}\"", "a".repeat(2 << 20))),
        );
        let err = l.check_event(&big, "s").unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::InvalidArgument);
        assert!(
            err.to_string().contains("at seq 3 of session \"s\""),
            "{err}"
        );
    }

    #[test]
    fn budgets_and_bounded_growth() {
        let b = Limits::new(2 << 20, 2 << 20).unwrap().budget();
        assert!(b.charge(1 << 20));
        assert!(b.charge(1 << 20));
        assert!(!b.charge(1));
        assert!(!b.charge(0), "stays exhausted");
        let mut v: Vec<u8> = Vec::new();
        for _ in 0..100 {
            reserve_bounded(&mut v, 1000, 10_000).unwrap();
            let n = v.len();
            v.resize(n + 1000, 0);
            assert!(
                v.capacity() <= 11_000 || v.len() > 10_000,
                "{}",
                v.capacity()
            );
            if v.len() > 10_000 {
                break;
            }
        }
    }
}
