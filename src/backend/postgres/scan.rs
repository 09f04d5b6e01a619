//! The read-only walk of a PostgreSQL store for `verify`.
//!
//! [`PostgresBackend::scan`] reads, in one read-only repeatable-read
//! transaction (one snapshot), every row of `sessions` (each through the
//! same row reader the store uses, so a row with an out-of-range column is
//! a finding of its own instead of failing the whole listing) and every
//! distinct session id present in `events` (a loose index scan over the
//! primary key: one index probe per id); ids with event rows but no session
//! row are `orphan_events` findings. The foreign key from `events` to
//! `sessions` normally rules those out; they appear when it was dropped or
//! bypassed (`session_replication_role = replica`, a restore without
//! constraints). It never writes and takes no lock a writer waits for.
//!
//! A server has no file to name, so every finding's path is the store's
//! label (`PostgreSQL server at host:port (database "d", schema "s")`,
//! never with the password).

use std::path::PathBuf;

use postgres::IsolationLevel;

use super::pool::{Conn, pg_error};
use super::{Fail, PostgresBackend, reader};
use crate::backend::scan::{Finding, FindingKind, ScannedSession, StoreScan};
use crate::error::Result;
use crate::model::json::quote;

/// Every session row in id order, with [`reader::SESSION_COLUMNS`].
const SESSIONS_SQL: &str = "SELECT id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, incarnation, revision FROM sessions ORDER BY id";

/// Every distinct `events.session_id` without a `sessions` row, with its
/// row count and seq range; one index probe per distinct id (PostgreSQL
/// has no skip scan of its own).
const ORPHAN_EVENTS_SQL: &str = "WITH RECURSIVE ids(id) AS (
  SELECT (SELECT min(session_id) FROM events)
  UNION ALL
  SELECT (SELECT min(session_id) FROM events WHERE session_id > ids.id) FROM ids WHERE ids.id IS NOT NULL
)
SELECT id,
  (SELECT count(*) FROM events WHERE session_id = ids.id),
  (SELECT min(seq) FROM events WHERE session_id = ids.id),
  (SELECT max(seq) FROM events WHERE session_id = ids.id)
FROM ids
WHERE id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM sessions WHERE sessions.id = ids.id)
ORDER BY id";

impl PostgresBackend {
    /// Walks the whole store (see the module docs). Fails only when the
    /// tables cannot be read at all (after the backend's retries).
    pub fn scan(&self) -> Result<StoreScan> {
        let label = self.label().to_string();
        self.run(&|| "cannot scan the store".to_string(), |conn, _| {
            scan_conn(conn, &label)
        })
    }
}

fn scan_conn(conn: &mut Conn, label: &str) -> std::result::Result<StoreScan, Fail> {
    let sessions_stmt = conn.prep(SESSIONS_SQL)?;
    let orphans_stmt = conn.prep(ORPHAN_EVENTS_SQL)?;
    let path = PathBuf::from(label);
    let mut tx = conn
        .client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()?;
    let mut scan = StoreScan::default();
    for row in tx.query(&sessions_stmt, &[])? {
        // The id first, so a row whose other columns fail is still named.
        let id = row.try_get::<_, String>(0).ok();
        let finding = match reader::session_from_row(&row) {
            Ok(_) => None,
            Err(Fail::Done(e)) => Some(Finding::from_error(&path, &e)),
            Err(Fail::Pg(e)) => {
                let what = match &id {
                    Some(id) => format!("cannot read the sessions row of {}", quote(id)),
                    None => "cannot read the id of a sessions row".to_string(),
                };
                Some(Finding::from_error(&path, &pg_error(label, &what, &e)))
            }
            Err(other) => return Err(other),
        };
        scan.sessions.push(ScannedSession {
            id,
            path: path.clone(),
            findings: finding.into_iter().collect(),
        });
    }
    for row in tx.query(&orphans_stmt, &[])? {
        let id: String = row.try_get(0)?;
        let (count, min, max): (i64, i64, i64) =
            (row.try_get(1)?, row.try_get(2)?, row.try_get(3)?);
        let message = format!(
            "{label} holds {count} events row(s) (seq {min} to {max}) of session {} but no sessions row for it; the store never reads them (the foreign key from events to sessions was dropped or bypassed)",
            quote(&id)
        );
        scan.sessions.push(ScannedSession {
            id: Some(id),
            path: path.clone(),
            findings: vec![Finding::new(FindingKind::OrphanEvents, &path, message)],
        });
    }
    tx.commit()?;
    scan.sessions.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(scan)
}
