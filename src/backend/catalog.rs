//! What the catalog operations (rich listing, search, follow; see
//! [`crate::store::catalog`]) ask of a backend, beyond the full reads: a
//! *window* of a log (a few chosen events instead of all of them), the
//! events appended after a cursor, and a way to wait for the next change.
//!
//! Every method here is a lock-free read: no writer lock is taken, nothing
//! is repaired, and an incomplete last write (a live writer's batch in
//! progress, or a crash leftover) is simply "not there yet". The default
//! implementations read the whole log; each backend overrides them with a
//! cheaper read (JSONL: the head and tail frames or lines, and appended
//! bytes from a remembered offset; SQLite and PostgreSQL: indexed rows).

use std::time::Duration;

use crate::backend::{Revision, ScannedSuffix, StoredLog};
use crate::error::Result;
use crate::model::event::Event;
use crate::model::header::SessionHeader;

/// The name of the cache directory beside a store's writer-lock directory
/// (JSONL: at the root; SQLite: `<database>.dsh-persist-cache`). It holds
/// only what the store can rebuild (the search index); the original never
/// reads it, and `verify` does not count it as foreign.
pub const CACHE_DIR_NAME: &str = ".dsh-persist-cache";

/// Which events a window must hold: the first event of each type in
/// `first_of`, the last event of each type in `last_of`, and the last event
/// of the log.
#[derive(Clone, Copy, Debug)]
pub struct WindowSpec<'a> {
    pub first_of: &'a [&'a str],
    pub last_of: &'a [&'a str],
}

/// A partial read of one stored log.
#[derive(Clone, Debug)]
pub struct Window {
    pub header: SessionHeader,
    pub revision: Revision,
    /// The seq after the last complete event (the event count).
    pub next_seq: u64,
    /// Bytes the log takes in storage (JSONL: the file size; the row stores:
    /// the stored sizes of its rows' values).
    pub bytes: u64,
    /// At least the events [`WindowSpec`] asks for (when the log has them),
    /// ascending by seq, without duplicates; may hold more.
    pub events: Vec<Event>,
}

impl Window {
    /// The window of a whole, already read log (the default path).
    pub fn from_events(
        header: SessionHeader,
        revision: Revision,
        bytes: u64,
        events: Vec<Event>,
        spec: &WindowSpec<'_>,
    ) -> Window {
        let next_seq = events.last().map_or(0, |e| e.seq + 1);
        let mut keep = vec![false; events.len()];
        for t in spec.first_of {
            if let Some(i) = events.iter().position(|e| e.type_str() == *t) {
                keep[i] = true;
            }
        }
        for t in spec.last_of {
            if let Some(i) = events.iter().rposition(|e| e.type_str() == *t) {
                keep[i] = true;
            }
        }
        if let Some(k) = keep.last_mut() {
            *k = true;
        }
        let events = events
            .into_iter()
            .zip(keep)
            .filter_map(|(e, k)| k.then_some(e))
            .collect();
        Window {
            header,
            revision,
            next_seq,
            bytes,
            events,
        }
    }
}

/// Tracks which of a [`WindowSpec`]'s wishes a read found so far (the
/// backends that walk a log from both ends use it to stop early).
#[derive(Debug)]
pub struct WindowNeeds<'a> {
    spec: WindowSpec<'a>,
    first_found: Vec<bool>,
    last_found: Vec<bool>,
}

impl<'a> WindowNeeds<'a> {
    pub fn new(spec: &WindowSpec<'a>) -> Self {
        WindowNeeds {
            spec: *spec,
            first_found: vec![false; spec.first_of.len()],
            last_found: vec![false; spec.last_of.len()],
        }
    }

    /// Notes an event seen walking forward from the head; whether it is wanted.
    pub fn see_forward(&mut self, e: &Event) -> bool {
        let mut wanted = false;
        for (i, t) in self.spec.first_of.iter().enumerate() {
            if !self.first_found[i] && e.type_str() == *t {
                self.first_found[i] = true;
                wanted = true;
            }
        }
        wanted
    }

    /// Notes an event seen walking backward from the tail; whether it is wanted.
    pub fn see_backward(&mut self, e: &Event) -> bool {
        let mut wanted = false;
        for (i, t) in self.spec.last_of.iter().enumerate() {
            if !self.last_found[i] && e.type_str() == *t {
                self.last_found[i] = true;
                wanted = true;
            }
        }
        wanted
    }

    pub fn head_done(&self) -> bool {
        self.first_found.iter().all(|f| *f)
    }

    pub fn tail_done(&self) -> bool {
        self.last_found.iter().all(|f| *f)
    }
}

/// Where a follower stands in one session's log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FollowCursor {
    /// The next seq to hand out.
    pub next_seq: u64,
    /// JSONL: the file (device, inode) and the byte offset after the last
    /// complete record read, so the next read starts there.
    pub offset: Option<(u64, u64, u64)>,
}

/// Waits for a session's log to change (a poll interval, or a database
/// notification).
pub trait ChangeWaiter: Send {
    /// Returns when the log may have changed or after `timeout`, whichever
    /// comes first. Spurious returns are allowed.
    fn wait(&mut self, timeout: Duration) -> Result<()>;
}

/// How often a polling follower looks again.
pub const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// A waiter that sleeps one poll interval (or less, within `timeout`).
pub struct PollWaiter;

impl ChangeWaiter for PollWaiter {
    fn wait(&mut self, timeout: Duration) -> Result<()> {
        std::thread::sleep(timeout.min(POLL_INTERVAL));
        Ok(())
    }
}

/// The default window: a whole read, reduced. `bytes`: the size the
/// window reports, as the backend's quick window measures it (a row store:
/// its rows as stored); `None`: the length of the events' JSON lines.
pub fn window_of_log(log: StoredLog, spec: &WindowSpec<'_>, bytes: Option<u64>) -> Window {
    let durable = log.durable_len();
    let mut events = log.events;
    events.truncate(durable);
    let bytes = bytes.unwrap_or_else(|| events.iter().map(|e| e.to_json().len() as u64 + 1).sum());
    Window::from_events(log.header, log.revision, bytes, events, spec)
}

/// The default follow read: a suffix read from the cursor's seq (the row
/// stores seek to it), complete writes only.
pub fn suffix_after(scanned: ScannedSuffix, cursor: &mut FollowCursor) -> Vec<Event> {
    let mut events = scanned.events;
    events.truncate(events.len() - scanned.recovered_events.min(events.len()));
    events.retain(|e| e.seq >= cursor.next_seq);
    if let Some(last) = events.last() {
        cursor.next_seq = last.seq + 1;
    }
    events
}
