//! Seeds, resume and fork (SPEC §1.7): the pure parts.
//!
//! A live session created from a seed (resume or fork) gets one
//! `session/end-seed {}` marker after the seed unless the seed already ends
//! with one. A fork copies a prefix of its parent that must not end inside
//! an open turn; the child header records the lineage.

use super::event::{Event, EventType};
use super::header::SessionHeader;
use super::json::JsonText;
use crate::error::{Error, Result};

/// The `session/end-seed` type name.
pub const END_SEED: &str = "session/end-seed";

/// How many leading events of `events` a fork at `boundary` copies
/// (`boundary` is the inclusive last seq; `None` means the last event).
///
/// Errors carry a code: `INVALID_BOUNDARY` when the boundary is not a seq of
/// the log, `OPEN_TURN` when the last turn boundary at or before it is a
/// `turn/start` (the prefix would end inside an open turn).
pub fn fork_prefix_len(events: &[Event], boundary: Option<i64>) -> Result<usize> {
    let len = events.len();
    let b = match boundary {
        None if len == 0 => return Ok(0),
        None => len - 1,
        Some(b) => match usize::try_from(b) {
            Ok(b) if b < len => b,
            _ => {
                let range = if len == 0 {
                    "the log is empty".to_string()
                } else {
                    format!("seqs 0..={}", len - 1)
                };
                return Err(Error::invalid_code(
                    "INVALID_BOUNDARY",
                    format!("fork boundary {b} is not a seq of the source log ({range})"),
                ));
            }
        },
    };
    let last_boundary = events[..=b]
        .iter()
        .rev()
        .find(|e| e.event_type() == "turn/start" || e.event_type() == "turn/end");
    if let Some(e) = last_boundary.filter(|e| e.event_type() == "turn/start") {
        return Err(Error::invalid_code(
            "OPEN_TURN",
            format!(
                "fork boundary {b} ends inside the turn opened at seq {}; fork at a turn boundary (before that turn/start or at its turn/end)",
                e.seq
            ),
        ));
    }
    Ok(b + 1)
}

/// Whether a session created from `seed` needs a `session/end-seed` marker
/// appended: always, unless the seed already ends with one.
pub fn needs_end_seed_marker(seed: &[Event]) -> bool {
    seed.last().is_none_or(|e| e.event_type() != END_SEED)
}

/// The `session/end-seed {}` marker event at `seq`.
pub fn end_seed_marker(seq: u64, time: i64) -> Event {
    Event::new(
        EventType::known(END_SEED),
        seq,
        time,
        JsonText::from_trusted("{}"),
    )
}

/// The header of a fork child: `child` (its id, createdAt and any fields the
/// host set) with `parentSession = parent id`, `seedLength = seed_length`
/// and, unless the host gave one, the parent's `cwd`.
pub fn fork_child_header(
    parent: &SessionHeader,
    mut child: SessionHeader,
    seed_length: usize,
) -> SessionHeader {
    child.parent_session = Some(parent.id.clone());
    child.seed_length = Some(seed_length as u64);
    // SPEC 1.7: the child header gets the parent's cwd (a fork continues
    // the parent's work in the same project).
    child.cwd = parent.cwd.clone();
    child
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ty: &str, seq: u64) -> Event {
        Event::parse(&format!(
            r#"{{"type":"{ty}","seq":{seq},"time":0,"data":{{}}}}"#
        ))
        .unwrap()
    }

    fn log() -> Vec<Event> {
        vec![
            ev("turn/start", 0),
            ev("step/start", 1),
            ev("step/end", 2),
            ev("turn/end", 3),
            ev("plan/mode", 4),
            ev("turn/start", 5),
            ev("step/start", 6),
        ]
    }

    #[test]
    fn prefix_lengths() {
        let l = log();
        assert_eq!(fork_prefix_len(&l, Some(3)).unwrap(), 4);
        assert_eq!(fork_prefix_len(&l, Some(4)).unwrap(), 5);
        assert_eq!(fork_prefix_len(&l[..5], None).unwrap(), 5);
        assert_eq!(fork_prefix_len(&[], None).unwrap(), 0);
        let plain = [ev("plan/mode", 0)];
        assert_eq!(fork_prefix_len(&plain, Some(0)).unwrap(), 1);
    }

    #[test]
    fn open_turn_is_refused() {
        let l = log();
        for b in [Some(0), Some(2), Some(5), None] {
            let e = fork_prefix_len(&l, b).unwrap_err();
            assert_eq!(e.code(), Some("OPEN_TURN"), "{b:?}");
            assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
        }
        assert!(
            fork_prefix_len(&l, None)
                .unwrap_err()
                .to_string()
                .contains("opened at seq 5")
        );
    }

    #[test]
    fn bad_boundaries() {
        let l = log();
        for b in [-1, 7, 100] {
            let e = fork_prefix_len(&l, Some(b)).unwrap_err();
            assert_eq!(e.code(), Some("INVALID_BOUNDARY"));
            assert_eq!(
                e.to_string(),
                format!("fork boundary {b} is not a seq of the source log (seqs 0..=6)")
            );
        }
        let e = fork_prefix_len(&[], Some(0)).unwrap_err();
        assert!(e.to_string().contains("the log is empty"));
    }

    #[test]
    fn end_seed_marker_rules() {
        assert!(needs_end_seed_marker(&[]));
        assert!(needs_end_seed_marker(&log()));
        let mut l = log();
        l.push(end_seed_marker(7, 12));
        assert!(!needs_end_seed_marker(&l));
        assert_eq!(
            l[7].to_json(),
            r#"{"type":"session/end-seed","seq":7,"time":12,"data":{}}"#
        );
    }

    #[test]
    fn child_header_lineage() {
        let mut parent = SessionHeader::new("live-parent", 1);
        parent.cwd = Some("/live/project".into());
        parent.origin = Some("subagent".into());
        let child = fork_child_header(&parent, SessionHeader::new("live-fork", 2), 25);
        assert_eq!(child.id, "live-fork");
        assert_eq!(child.created_at, 2);
        assert_eq!(child.cwd.as_deref(), Some("/live/project"));
        assert_eq!(child.parent_session.as_deref(), Some("live-parent"));
        assert_eq!(child.seed_length, Some(25));
        assert_eq!(child.origin, None);
        let mut own = SessionHeader::new("c", 2);
        own.cwd = Some("/elsewhere".into());
        assert_eq!(
            fork_child_header(&parent, own, 0).cwd.as_deref(),
            Some("/live/project"),
            "the child always takes the parent's cwd"
        );
    }
}
