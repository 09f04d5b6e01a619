//! Follow: the events of a session as another process appends them
//! ([`Store::follow`], [`Follower::next_batch`]). Each look reads only what
//! is new (JSONL: the bytes after the remembered offset; SQLite and
//! PostgreSQL: the rows with `seq` past the last one handed out); between
//! looks it waits on the backend's [`ChangeWaiter`] (PostgreSQL: `LISTEN`
//! on the `<schema>.batches` channel; the others: a short poll). Lock-free:
//! a write in progress is handed out once it is complete.

use std::time::{Duration, Instant};

use crate::backend::catalog::{ChangeWaiter, FollowCursor, WindowSpec};
use crate::error::{Error, Result};
use crate::model::event::Event;
use crate::model::json::quote;
use crate::store::Store;

/// A follower of one session.
pub struct Follower {
    store: Store,
    id: String,
    cursor: FollowCursor,
    waiter: Box<dyn ChangeWaiter>,
}

fn not_found(id: &str) -> Error {
    Error::not_found(format!("session {} not found", quote(id)))
}

impl Store {
    /// A follower of `id` that hands out the events from seq `from` on
    /// (`None`: only those appended after this call).
    pub fn follow(&self, id: &str, from: Option<u64>) -> Result<Follower> {
        let waiter = self.backend().change_waiter(id)?;
        let next_seq = match from {
            Some(s) => {
                if self.backend().revision(id)?.is_none() {
                    return Err(not_found(id));
                }
                s
            }
            None => {
                let spec = WindowSpec {
                    first_of: &[],
                    last_of: &[],
                };
                self.backend()
                    .read_window(id, &spec)?
                    .ok_or_else(|| not_found(id))?
                    .next_seq
            }
        };
        Ok(Follower {
            store: self.clone(),
            id: id.to_string(),
            cursor: FollowCursor {
                next_seq,
                offset: None,
            },
            waiter,
        })
    }
}

impl Follower {
    /// The session followed.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The seq of the next event to hand out.
    pub fn next_seq(&self) -> u64 {
        self.cursor.next_seq
    }

    /// The new events, waiting up to `timeout` for some (empty when none
    /// came). Fails with `not_found` when the session is gone.
    pub fn next_batch(&mut self, timeout: Duration) -> Result<Vec<Event>> {
        let deadline = Instant::now() + timeout;
        loop {
            self.store.flush_live(&self.id)?;
            let events = self
                .store
                .backend()
                .read_after(&self.id, &mut self.cursor)?
                .ok_or_else(|| not_found(&self.id))?;
            if !events.is_empty() {
                return Ok(events);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(Vec::new());
            }
            self.waiter.wait(deadline - now)?;
        }
    }
}
