//! The preconditions of a row store's appends and repairs (SPEC §4.3),
//! checked under its write lock before anything changes; one set of rules
//! and messages for SQLite and PostgreSQL.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::backend::limits::Limits;
use crate::backend::{Expect, StoredLog, TornTail};
use crate::error::{Error, Result};
use crate::model::event::Event;
use crate::model::header::SessionHeader;
use crate::model::json::quote;

/// What a row store knows of a session's log size: (incarnation,
/// revision, size count) from its last clean read or append of it.
pub type KnownLogBytes = Mutex<HashMap<String, (String, i64, u64)>>;

/// Notes the size count a clean read of `id` found at (incarnation, revision).
pub fn note_log_bytes(
    known: &KnownLogBytes,
    id: &str,
    incarnation: &str,
    revision: i64,
    bytes: u64,
) {
    known
        .lock()
        .insert(id.to_string(), (incarnation.to_string(), revision, bytes));
}

/// The size count noted for `id` when it is at the revision `token` makes
/// of the noted (incarnation, revision).
pub fn known_log_bytes(
    known: &KnownLogBytes,
    id: &str,
    revision: &crate::backend::Revision,
    token: impl Fn(&str, i64) -> crate::backend::Revision,
) -> Option<u64> {
    let sizes = known.lock();
    let (inc, rev, bytes) = sizes.get(id)?;
    (token(inc, *rev) == *revision).then_some(*bytes)
}

/// The write bounds of an append to a row store (`maxRecordBytes` per
/// event, `maxLogBytes` by [`Limits::check_log_append`] when the size
/// before it is known: a new session's, or one this store noted). Returns
/// what was known and the size after the append.
#[allow(clippy::type_complexity)]
pub fn check_append_bounds(
    limits: &Limits,
    known: &KnownLogBytes,
    header: &SessionHeader,
    events: &[Event],
    expect: Expect<'_>,
) -> Result<(Option<(String, i64, u64)>, Option<u64>)> {
    let id = header.id.as_str();
    for e in events {
        limits.check_event(e, id)?;
    }
    let before = match expect {
        // A read of a row store counts its rows only (the header is the
        // session row), so a new session's count starts at 0.
        Expect::New => Some((String::new(), -1, 0)),
        Expect::At(_) => known.lock().get(id).cloned(),
    };
    let after = match &before {
        Some((_, _, bytes)) => Some(limits.check_log_append(*bytes, events, id)?),
        None => None,
    };
    Ok((before, after))
}

/// Notes `id`'s log size after an append that took its session row to
/// (`inc`, `rev`), from what [`check_append_bounds`] returned (`checked`):
/// the size known before plus what a read counts of the rows inserted
/// (`charge`), so this store and a fresh one that reads the log count the
/// same; the checked upper bound when the charge is not known. Forgotten
/// when another writer wrote in between (the revision moved by more than
/// this append).
pub fn note_append(
    known: &KnownLogBytes,
    id: &str,
    expect: Expect<'_>,
    checked: (Option<(String, i64, u64)>, Option<u64>),
    (inc, rev): (&str, i64),
    charge: Option<u64>,
) {
    let mut sizes = known.lock();
    match checked {
        (Some((k_inc, k_rev, before)), Some(bound))
            if matches!(expect, Expect::New) || (k_inc == inc && k_rev + 1 == rev) =>
        {
            let after = charge.map_or(bound, |c| before.saturating_add(c));
            sizes.insert(id.to_string(), (inc.to_string(), rev, after));
        }
        _ => {
            sizes.remove(id);
        }
    }
}

/// Checks that `events` continue each other from `events[0].seq`.
pub fn check_contiguous(id: &str, events: &[Event]) -> Result<()> {
    let Some(first) = events.first().map(|e| e.seq) else {
        return Ok(());
    };
    for (i, e) in events.iter().enumerate() {
        if e.seq != first + i as u64 {
            return Err(Error::invalid(format!(
                "append to session {} is not contiguous: event {i} has seq {}, expected {}",
                quote(id),
                e.seq,
                first + i as u64
            )));
        }
    }
    Ok(())
}

/// Checks an append against what is stored: whether the session exists as
/// `expect` says, and that the batch starts at the stored next seq
/// (`stored_next`, 0 for a session without rows).
///
/// A batch starting below `stored_next` may be the retry of an append whose
/// commit was ambiguous (reported failed, yet stored: reliability D9): its
/// first events may be stored already. `stored_from(first_seq)` reads the
/// stored events with `seq >= first_seq` (inside the caller's write
/// transaction); when exactly the batch's first `stored_next − first_seq`
/// events are stored there, returns that count (they are not written
/// again). Anything else is another writer's append: a conflict.
pub fn check_append_target(
    id: &str,
    expect: Expect<'_>,
    exists: bool,
    stored_next: u64,
    events: &[Event],
    stored_from: impl FnOnce(u64) -> Result<Vec<Event>>,
) -> Result<usize> {
    match (expect, exists) {
        (Expect::New, true) => {
            return Err(Error::conflict(format!(
                "session {} already exists in this backend",
                quote(id)
            )));
        }
        (Expect::At(_), false) => {
            return Err(Error::conflict(format!(
                "session {} is no longer stored; another writer removed it",
                quote(id)
            )));
        }
        _ => {}
    }
    let first_seq = events.first().map_or(stored_next, |e| e.seq);
    if first_seq == stored_next {
        return Ok(0);
    }
    if exists && first_seq < stored_next {
        let n = (stored_next - first_seq) as usize;
        if n <= events.len() {
            let stored = stored_from(first_seq)?;
            if stored.len() == n && stored.iter().zip(events).all(|(a, b)| same_event(a, b)) {
                return Ok(n);
            }
        }
    }
    Err(Error::conflict(format!(
        "stale append to session {}: the stored log continues at seq {stored_next}, but this batch starts at seq {first_seq} (another writer appended)",
        quote(id)
    )))
}

/// Whether two events are the same stored record (a row store keeps no
/// envelope key order, so that is not compared).
pub fn same_event(a: &Event, b: &Event) -> bool {
    a.event_type() == b.event_type()
        && a.seq == b.seq
        && a.time == b.time
        && a.data == b.data
        && a.surface_op() == b.surface_op()
        && a.source_event_seqs() == b.source_event_seqs()
        && a.ignorable == b.ignorable
}

/// The first seq of the torn rows a repair of `log` deletes (`None`: no torn
/// tail), after checking that `closers` continue the intact log.
pub fn repair_plan(id: &str, log: &StoredLog, closers: &[Event]) -> Result<Option<u64>> {
    let from_seq = match &log.torn {
        None => None,
        Some(TornTail::Sqlite { from_seq }) => Some(*from_seq),
        Some(other) => {
            return Err(Error::invariant(format!(
                "row-store repair of session {} got a torn tail of another backend: {other:?}",
                quote(id)
            )));
        }
    };
    if let Some(first) = closers.first() {
        check_contiguous(id, closers)?;
        if first.seq != log.events.len() as u64 {
            return Err(Error::invalid(format!(
                "closers of session {} start at seq {}, but the intact log ends before seq {}",
                quote(id),
                first.seq,
                log.events.len()
            )));
        }
    }
    Ok(from_seq)
}

/// The conflict of a repair whose session moved since it was read.
pub fn repair_moved(
    id: &str,
    read: &impl std::fmt::Display,
    now: &impl std::fmt::Display,
) -> Error {
    Error::conflict(format!(
        "session {} changed since it was read (revision {read} is now {now}); read it again before repairing",
        quote(id)
    ))
}

/// The conflict of a repair whose session is gone.
pub fn repair_gone(id: &str) -> Error {
    Error::conflict(format!(
        "session {} is no longer stored; cannot repair it",
        quote(id)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Revision;

    fn noted(known: &KnownLogBytes) -> Option<(String, i64, u64)> {
        known.lock().get("s").cloned()
    }

    /// An append notes the size after it only when it continues what was
    /// known: the same incarnation, the revision moved by exactly this
    /// append (or a new session). Anything else means another writer wrote
    /// in between, and the size is forgotten (the next append reads it),
    /// never taken as the known size plus this append's rows.
    #[test]
    fn an_append_notes_its_size_only_after_what_was_known() {
        let rev = Revision("r".into());
        let known = KnownLogBytes::default();
        let checked = |inc: &str, rev: i64| (Some((inc.to_string(), rev, 1000)), Some(5000));
        // An append to "s" known at ("i", 4) that took it to `after`.
        let append_at_4 = |after: (&str, i64), charge: Option<u64>| {
            note_append(
                &known,
                "s",
                Expect::At(&rev),
                checked("i", 4),
                after,
                charge,
            )
        };
        // Continues: 1000 before, 300 charged.
        append_at_4(("i", 5), Some(300));
        assert_eq!(noted(&known), Some(("i".into(), 5, 1300)));
        // The charge unknown: the checked upper bound.
        append_at_4(("i", 5), None);
        assert_eq!(noted(&known), Some(("i".into(), 5, 5000)));
        // Another writer's rows in between, or another incarnation: forgotten.
        for after in [("i", 6), ("i", 4), ("j", 5)] {
            append_at_4(("i", 5), Some(1));
            append_at_4(after, Some(300));
            assert_eq!(noted(&known), None, "{after:?}");
        }
        // Nothing known before: nothing noted.
        note_append(
            &known,
            "s",
            Expect::At(&rev),
            (None, None),
            ("i", 5),
            Some(300),
        );
        assert_eq!(noted(&known), None);
        // A new session: whatever its first revision.
        note_append(
            &known,
            "s",
            Expect::New,
            checked("", -1),
            ("k", 0),
            Some(300),
        );
        assert_eq!(noted(&known), Some(("k".into(), 0, 1300)));
    }

    fn events(from: u64, n: u64, tag: &str) -> Vec<Event> {
        (from..from + n)
            .map(|seq| {
                Event::parse(&format!(
                    r#"{{"type":"session/title","seq":{seq},"time":1,"data":"{tag}{seq}"}}"#
                ))
                .unwrap()
            })
            .collect()
    }

    /// The append preconditions: a new session must not exist, a stored
    /// one must; a batch continues at the stored next seq, or is the retry
    /// of an ambiguous commit whose first events are stored exactly (their
    /// count returned, they are not written again); anything else is
    /// another writer's: a conflict.
    #[test]
    fn an_append_continues_the_stored_log_or_retries_its_own_commit() {
        let rev = Revision("r".into());
        let at = Expect::At(&rev);
        let stored = events(0, 10, "t");
        let from = |k: u64| -> Result<Vec<Event>> { Ok(stored[k as usize..].to_vec()) };
        let conflict = |r: Result<usize>, want: &str| {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::Conflict, "{e}");
            assert!(e.to_string().contains(want), "{e}");
        };
        // Even a batch equal to what is stored: a new session exists.
        conflict(
            check_append_target("s", Expect::New, true, 10, &events(0, 10, "t"), from),
            "already exists",
        );
        conflict(
            check_append_target("s", at, false, 0, &events(0, 1, "t"), from),
            "no longer stored",
        );
        let new = check_append_target("s", Expect::New, false, 0, &events(0, 3, "t"), from);
        assert_eq!(new.unwrap(), 0);
        let next = check_append_target("s", at, true, 10, &events(10, 3, "t"), from);
        assert_eq!(next.unwrap(), 0);
        // The retry of a batch from seq 7 whose first three events are stored.
        let mut retry = events(7, 3, "t");
        retry.extend(events(10, 2, "t"));
        assert_eq!(
            check_append_target("s", at, true, 10, &retry, from).unwrap(),
            3
        );
        // Stored, but not these events; fewer than are stored; a gap.
        let mut other = events(7, 1, "x");
        other.extend(events(8, 4, "t"));
        for batch in [other, events(7, 2, "t"), events(11, 1, "t")] {
            conflict(
                check_append_target("s", at, true, 10, &batch, from),
                "stale append to session \"s\": the stored log continues at seq 10",
            );
        }
    }
}
