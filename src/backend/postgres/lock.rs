//! Writer exclusion across hosts: one session-level advisory lock per
//! session id, held on a connection of its own by a [`PgWriterLock`] guard.
//!
//! A live session holds its guard for its whole life, a cold append for
//! the call. The lock belongs to the guard's connection, so when a host
//! dies (or its network does) the server ends that connection and releases
//! the lock; nothing stale is left behind. Readers ask
//! [`super::PostgresBackend::writer_held`] without taking anything.
//!
//! Through [`crate::backend::Backend::lock_writer`] the guard is the
//! store's [`crate::backend::WriterLock`] like the file backends' locks;
//! [`crate::backend::Backend::writer_holder`] names the holder from
//! `pg_locks` and `pg_stat_activity` (the server process, the client's
//! address and application name, as far as the role may see them).
//!
//! The key is a 64-bit FNV-1a hash of the schema and the id, the same on
//! every host and build. Two ids whose keys collided would exclude each
//! other's writers (never let two writers in), with odds of about 2^-64.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::model::json::quote;

use super::pool::{Conn, pg_error};

/// The advisory lock key of `id`'s writer in `schema`.
pub fn lock_key(schema: &str, id: &str) -> i64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    for b in b"dsh-persist writer\0"
        .iter()
        .chain(schema.as_bytes())
        .chain(b"\0")
        .chain(id.as_bytes())
    {
        h ^= u64::from(*b);
        h = h.wrapping_mul(PRIME);
    }
    h as i64
}

/// The writer locks this process holds, by the server they are on (the
/// backend's label) and the server process of the holding connection: a
/// holder found in `pg_locks` is this process when it is listed here
/// (another store handle, or this one).
static PROCESS_LOCKS: LazyLock<Mutex<HashSet<(String, i32)>>> = LazyLock::new(Mutex::default);

/// Whether the connection served by server process `pid` on the server of
/// `label` holds one of this process's writer locks.
pub fn held_in_this_process(label: &str, pid: i32) -> bool {
    PROCESS_LOCKS.lock().contains(&(label.to_string(), pid))
}

/// The two 32-bit halves `pg_locks` shows an advisory bigint key as
/// (`classid`, `objid`, with `objsubid = 1`).
pub fn key_halves(key: i64) -> (u32, u32) {
    let k = key as u64;
    ((k >> 32) as u32, k as u32)
}

/// The exclusive writer lock of one session id, held until dropped (or
/// until its connection is lost: see [`PgWriterLock::check`]).
pub struct PgWriterLock {
    conn: Option<Conn>,
    key: i64,
    id: String,
    label: String,
    /// The backend's set of pids whose connections hold its locks.
    own: Arc<Mutex<HashSet<i32>>>,
}

impl std::fmt::Debug for PgWriterLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgWriterLock")
            .field("id", &self.id)
            .field("key", &self.key)
            .finish()
    }
}

impl PgWriterLock {
    /// Tries to take the lock of `id` on `conn`: `Ok(None)` when another
    /// connection holds it.
    pub(super) fn try_take(
        mut conn: Conn,
        schema: &str,
        id: &str,
        label: &str,
        own: Arc<Mutex<HashSet<i32>>>,
    ) -> Result<Option<PgWriterLock>> {
        let key = lock_key(schema, id);
        let got: bool = conn
            .client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
            .map_err(|e| {
                pg_error(
                    label,
                    &format!("cannot take the writer lock of session {}", quote(id)),
                    &e,
                )
            })?
            .get(0);
        if !got {
            let _ = conn.client.close();
            return Ok(None);
        }
        own.lock().insert(conn.pid);
        PROCESS_LOCKS.lock().insert((label.to_string(), conn.pid));
        Ok(Some(PgWriterLock {
            conn: Some(conn),
            key,
            id: id.to_string(),
            label: label.to_string(),
            own,
        }))
    }

    /// The session id this lock is for.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The advisory key (see [`lock_key`]).
    pub fn key(&self) -> i64 {
        self.key
    }

    /// Fails when the lock's connection is gone (the server restarted or
    /// ended it): the lock is then no longer held, and another writer may
    /// have taken it.
    pub fn check(&mut self) -> Result<()> {
        let label = &self.label;
        let Some(conn) = self.conn.as_mut() else {
            return Err(Error::invariant("writer lock used after release"));
        };
        let still: bool = conn
            .client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_locks WHERE locktype = 'advisory' \
                 AND pid = pg_backend_pid() AND classid = $1 AND objid = $2 AND objsubid = 1 AND granted)",
                &[&key_halves(self.key).0, &key_halves(self.key).1],
            )
            .map_err(|e| {
                pg_error(
                    label,
                    &format!("the writer lock of session {} was lost", quote(&self.id)),
                    &e,
                )
            })?
            .get(0);
        if !still {
            return Err(Error::io_msg(format!(
                "{label}: the writer lock of session {} is no longer held",
                quote(&self.id)
            )));
        }
        Ok(())
    }
}

impl Drop for PgWriterLock {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            self.own.lock().remove(&conn.pid);
            PROCESS_LOCKS
                .lock()
                .remove(&(std::mem::take(&mut self.label), conn.pid));
            // Closing the connection releases the lock as well; unlocking
            // first makes the release independent of how fast the server
            // notices the closed socket.
            let _ = conn
                .client
                .execute("SELECT pg_advisory_unlock($1)", &[&self.key]);
            let _ = conn.client.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_and_tell_schema_and_id_apart() {
        // Pinned: every host and build must agree on the key.
        assert_eq!(lock_key("dsh", "s1"), lock_key("dsh", "s1"));
        assert_ne!(lock_key("dsh", "s1"), lock_key("dsh", "s2"));
        assert_ne!(lock_key("dsh", "s1"), lock_key("dsh2", "s1"));
        assert_ne!(lock_key("ds", "hs1"), lock_key("dsh", "s1"));
        // FNV-1a 64 of "dsh-persist writer\0dsh\0s1", computed independently.
        assert_eq!(lock_key("dsh", "s1"), 0x2420_1109_5206_f509);
        let (hi, lo) = key_halves(-2);
        assert_eq!((hi, lo), (0xffff_ffff, 0xffff_fffe));
    }
}
