//! The read-only walk of a session database for `verify`, and the probe
//! that tells a session database from other files ([`probe_file`]).
//!
//! [`SqliteBackend::scan`] reads, in one read transaction, every row of
//! `sessions` (each through the same row reader the store uses, so a row
//! with an out-of-range column is a finding of its own instead of failing
//! the whole listing) and every distinct session id present in `events`
//! (a skip scan over the primary key: one index probe per id): ids with
//! event rows but no session row are `orphan_events` findings. It never
//! writes; it runs on the backend's own connection, so it leaves no
//! `-wal`/`-shm` files beyond the ones that connection already owns.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::schema::APPLICATION_ID;
use super::{SqliteBackend, reader, sql_error};
use crate::backend::scan::{Finding, FindingKind, ScannedSession, StoreScan};
use crate::error::{Error, Result};
use crate::model::json::quote;

/// Every distinct `events.session_id` without a `sessions` row, with its
/// row count and seq range; one index probe per distinct id.
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

impl SqliteBackend {
    /// Walks the whole database (see the module docs). Fails only when the
    /// database cannot be read at all.
    pub fn scan(&self) -> Result<StoreScan> {
        let db = self
            .path()
            .map_or_else(|| super::MEMORY_PATH.into(), Path::to_path_buf);
        let label = self.label.clone();
        // A missing or pristine file holds no sessions (and is not created).
        Ok(self
            .db
            .read(|conn, _| scan_conn(conn, &label, &db))?
            .unwrap_or_default())
    }
}

fn scan_conn(conn: &mut Connection, label: &str, db: &Path) -> Result<StoreScan> {
    let err = |what: &str| {
        let what = what.to_string();
        move |e| sql_error(label, &what, e)
    };
    // One snapshot for every query (a deferred transaction that only reads).
    let tx = conn
        .transaction()
        .map_err(err("cannot start a read transaction"))?;
    let mut scan = StoreScan::default();
    let rows: Vec<(i64, Option<String>)> = {
        let mut stmt = tx
            .prepare("SELECT rowid, id FROM sessions ORDER BY id")
            .map_err(err("cannot list the sessions rows"))?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(err("cannot list the sessions rows"))?
    };
    for (rowid, id) in rows {
        let Some(id) = id else {
            scan.sessions.push(ScannedSession {
                id: None,
                path: db.to_path_buf(),
                findings: vec![Finding::new(
                    FindingKind::Unreadable(crate::error::ErrorKind::Corruption),
                    db,
                    format!("{label}: the sessions row with rowid {rowid} has a NULL id"),
                )],
            });
            continue;
        };
        let mut findings = Vec::new();
        match reader::session_row(&tx, label, &id) {
            Ok(Some(_)) => {}
            Ok(None) => findings.push(Finding::from_error(
                db,
                &Error::invariant(format!(
                    "{label}: the sessions row of {} vanished inside one read transaction",
                    quote(&id)
                )),
            )),
            Err(e) => findings.push(Finding::from_error(db, &e)),
        }
        scan.sessions.push(ScannedSession {
            id: Some(id),
            path: db.to_path_buf(),
            findings,
        });
    }
    let orphans: Vec<(String, i64, i64, i64)> = {
        let mut stmt = tx
            .prepare(ORPHAN_EVENTS_SQL)
            .map_err(err("cannot list the session ids of the events rows"))?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(err("cannot list the session ids of the events rows"))?
    };
    for (id, count, min, max) in orphans {
        let message = format!(
            "{label} holds {count} events row(s) (seq {min} to {max}) of session {} but no sessions row for it; the store never reads them (they were written without foreign keys)",
            quote(&id)
        );
        scan.sessions.push(ScannedSession {
            id: Some(id),
            path: db.to_path_buf(),
            findings: vec![Finding::new(FindingKind::OrphanEvents, db, message)],
        });
    }
    scan.sessions.sort_by(|a, b| a.id.cmp(&b.id));
    tx.rollback()
        .map_err(err("cannot end the read transaction"))?;
    Ok(scan)
}

/// What the first bytes of a file say about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Zero bytes: SQLite would take it for a new database.
    Empty,
    /// Not a SQLite database (no `SQLite format 3\0` header).
    NotSqlite,
    /// A SQLite database with this `application_id`
    /// ([`APPLICATION_ID`] for a session database).
    Sqlite { application_id: u32 },
}

impl Probe {
    /// A session database of this format.
    pub fn is_session_database(self) -> bool {
        self == Probe::Sqlite {
            application_id: APPLICATION_ID as u32,
        }
    }
}

/// The SQLite file header's magic string (its first 16 bytes).
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Offset of the big-endian `application_id` in the 100-byte file header.
const APPLICATION_ID_OFFSET: usize = 68;

/// Reads the file header of `path` (nothing is written, no connection is
/// opened). When the header's `application_id` is not ours but a `-wal`
/// file exists, the id may not be checkpointed yet: then it is read with
/// `PRAGMA application_id` on a read-only connection (which sees the WAL).
pub fn probe_file(path: &Path) -> Result<Probe> {
    let shown = || quote(&path.display().to_string());
    let mut file =
        File::open(path).map_err(|e| Error::io(format!("cannot open {}", shown()), e))?;
    let mut head = [0u8; 100];
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(format!("cannot read {}", shown()), e)),
        }
    }
    if n == 0 {
        return Ok(Probe::Empty);
    }
    if n < head.len() || &head[..16] != SQLITE_MAGIC {
        return Ok(Probe::NotSqlite);
    }
    let mut id = [0u8; 4];
    id.copy_from_slice(&head[APPLICATION_ID_OFFSET..APPLICATION_ID_OFFSET + 4]);
    let application_id = u32::from_be_bytes(id);
    if application_id != APPLICATION_ID as u32 {
        let wal = super::access::companion(path, "-wal");
        if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
            if let Some(from_wal) = application_id_from_connection(path) {
                return Ok(Probe::Sqlite {
                    application_id: from_wal,
                });
            }
        }
    }
    Ok(Probe::Sqlite { application_id })
}

/// `PRAGMA application_id` through a read-only connection.
fn application_id_from_connection(path: &Path) -> Option<u32> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(path, flags).ok()?;
    let id: i64 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .ok()?;
    drop(conn);
    Some(id as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::test_dir::TempDir;

    /// A 100-byte SQLite file header with `application_id` `id`.
    fn header(id: u32) -> Vec<u8> {
        let mut h = vec![0u8; 100];
        h[..16].copy_from_slice(SQLITE_MAGIC);
        h[APPLICATION_ID_OFFSET..APPLICATION_ID_OFFSET + 4].copy_from_slice(&id.to_be_bytes());
        h
    }

    fn probe(dir: &Path, name: &str, bytes: &[u8]) -> Probe {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        probe_file(&path).unwrap()
    }

    #[test]
    fn the_first_hundred_bytes_tell_the_kind_of_file() {
        let tmp = TempDir::new("probe-kinds");
        let d = tmp.dir();
        let ours = APPLICATION_ID as u32;
        assert_eq!(probe(d, "empty", b""), Probe::Empty);
        // The magic, but shorter than the file header.
        assert_eq!(probe(d, "short", &header(ours)[..99]), Probe::NotSqlite);
        // Longer than the header, without the magic.
        assert_eq!(
            probe(d, "text", "{\"v\":1}\n".repeat(200).as_bytes()),
            Probe::NotSqlite
        );
        // Exactly the header: the read stops at its end.
        let p = probe(d, "ours", &header(ours));
        assert_eq!(
            p,
            Probe::Sqlite {
                application_id: ours
            }
        );
        assert!(p.is_session_database());
        // A header followed by pages.
        let mut long = header(7);
        long.resize(4096, 0xAA);
        let p = probe(d, "foreign", &long);
        assert_eq!(p, Probe::Sqlite { application_id: 7 });
        assert!(!p.is_session_database());
        assert!(!Probe::Empty.is_session_database());
        assert!(!Probe::NotSqlite.is_session_database());
    }

    #[test]
    fn a_file_that_cannot_be_read_is_an_io_error() {
        let tmp = TempDir::new("probe-unreadable");
        let d = tmp.dir();
        // A directory opens, and its read fails (EISDIR).
        let e = probe_file(d).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{e}");
        assert!(e.to_string().contains("cannot read"), "{e}");
        let e = probe_file(&d.join("missing")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{e}");
        assert!(e.to_string().contains("cannot open"), "{e}");
    }

    #[test]
    fn an_application_id_still_in_the_wal_is_read_through_a_connection() {
        let tmp = TempDir::new("probe-wal");
        let db = tmp.join("s.db");
        let first = Connection::open(&db).unwrap();
        first
            .execute_batch("PRAGMA journal_mode = wal; CREATE TABLE t(x INTEGER);")
            .unwrap();
        drop(first);
        let writer = Connection::open(&db).unwrap();
        writer
            .execute_batch(&format!(
                "PRAGMA wal_autocheckpoint = 0; PRAGMA application_id = {APPLICATION_ID}; INSERT INTO t VALUES (1);"
            ))
            .unwrap();
        // The precondition: the file's own header does not hold the id yet.
        let bytes = std::fs::read(&db).unwrap();
        assert_eq!(
            &bytes[APPLICATION_ID_OFFSET..APPLICATION_ID_OFFSET + 4],
            &[0; 4]
        );
        let p = probe_file(&db).unwrap();
        assert!(p.is_session_database(), "{p:?}");
        drop(writer);
    }
}
