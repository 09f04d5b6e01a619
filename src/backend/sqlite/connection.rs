//! How the database file is found, checked and opened (SPEC §4.1; B 06,
//! B 07, D10, D11, D12).
//!
//! - **Lazily.** `Store::open` only checks what exists (the parent directory,
//!   the file). The file is created (mode 0600, and its parent `mkdir -p`
//!   0700, each new directory's parent fsynced) at the first *write*, like
//!   the original; a store opened and closed unused leaves nothing behind.
//! - **Reads change nothing.** A read of a missing file finds no sessions
//!   and creates nothing; an empty (pristine) file is not initialised by a
//!   read; the journal mode is only set by a writer.
//! - **Read-only media and full disks.** A WAL database normally needs its
//!   `-shm` file, which cannot be created on a read-only mount or a full
//!   disk. When the normal open fails there, a read falls back to the file
//!   opened `immutable` (a read-only mount: nobody can change it; refused
//!   when a `-wal` holds frames, which `immutable` would not read) or with
//!   `locking_mode = EXCLUSIVE` (no `-shm`, a heap wal-index, and a lock
//!   that keeps writers out while the read runs; the connection is closed
//!   after each read, so writers wait no longer than one read).
//! - **Paths.** The path is a file path, never a URI: a `path` starting with
//!   `file:` names a file of that name (SQLite would take it as a URI). The
//!   parent directory is resolved (`realpath`, so a symlinked home or data
//!   directory works) and SQLite opens `<resolved parent>/<name>` with
//!   `SQLITE_OPEN_NOFOLLOW`; the file itself must not be a symbolic link.
//!   Every check runs on the file SQLite opens.
//! - **Reads side by side.** A read that finds the connection busy (a
//!   write, or another thread's read) runs on a side connection of its own
//!   instead of waiting, when the file is a WAL database opened normally
//!   (WAL readers never block each other or the writer). A side connection
//!   is checked like the first (the file's owner and mode, the same file
//!   identity, the same store id); at most two are kept.
//!   One that cannot be had sends the read to the main connection.

use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use rusqlite::{Connection, OpenFlags};

use super::{access, reader, schema, sql_error};
use crate::error::{Error, Result};
use crate::model::json::quote;

use super::{JournalMode, MEMORY_PATH};

/// What identifies the database in revision tokens.
#[derive(Clone, Debug)]
pub struct Ident {
    /// `persistence_state.store_id`.
    pub store_id: String,
    /// `file:<dev>:<ino>:<birthtime-ns>` or `memory`.
    pub revision_prefix: String,
}

enum State {
    /// Nothing opened yet (or the last fallback read connection closed).
    Unopened,
    /// Opened by a read: `ident` is `None` while the file is pristine.
    Reading {
        conn: Connection,
        ident: Option<Ident>,
        /// A fallback connection (immutable or exclusive): closed after use.
        fallback: bool,
    },
    /// Opened, initialised and set up for writing.
    Writable {
        conn: Connection,
        ident: Ident,
    },
    Closed,
}

/// The idle side connections kept for reads (see the module docs).
const SIDE_CONNECTIONS: usize = 2;

/// Read connections beside the main one.
#[derive(Default)]
struct Side {
    /// The file and identity the main connection established: side reads
    /// are allowed. `None` until then, and for a fallback open, a pristine
    /// file, a database in memory or a journal mode other than WAL.
    ready: Option<(PathBuf, Ident)>,
    idle: Vec<Connection>,
    closed: bool,
}

/// The database of one store, opened when first needed.
pub struct Database {
    /// The file as configured (`None` in memory).
    path: Option<PathBuf>,
    label: String,
    journal_mode: JournalMode,
    busy_timeout_ms: u32,
    state: Mutex<State>,
    side: Mutex<Side>,
}

/// `path` as SQLite must see it: a file path, never a URI.
fn plain(path: &Path) -> PathBuf {
    if path.as_os_str().as_encoded_bytes().starts_with(b"file:") {
        Path::new(".").join(path)
    } else {
        path.to_path_buf()
    }
}

/// The file SQLite opens: the resolved parent directory and the file name.
fn resolved(path: &Path) -> Result<PathBuf> {
    let parent = access::parent_dir(path);
    let name = path.file_name().ok_or_else(|| {
        Error::invalid(format!(
            "session database path {} does not name a file",
            quote(&path.display().to_string())
        ))
    })?;
    let real = std::fs::canonicalize(&parent).map_err(|e| {
        Error::io(
            format!(
                "cannot resolve session database parent {}",
                quote(&parent.display().to_string())
            ),
            e,
        )
    })?;
    Ok(real.join(name))
}

/// `file:` URI of an absolute path, percent-encoded, with `query`.
fn uri(path: &Path, query: &str) -> String {
    let mut out = String::from("file:");
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.push('?');
    out.push_str(query);
    out
}

/// Less than 1 MiB free for this user: too little for a `-shm` and `-wal`.
fn disk_full(dir: &Path) -> bool {
    rustix::fs::statvfs(dir).is_ok_and(|v| v.f_bavail.saturating_mul(v.f_frsize) < 1 << 20)
}

/// Fails when `file` has a `-wal` holding frames (commits that may not be
/// in the main file yet): the read-only fallback cannot read them without
/// the `-shm` SQLite could not open, so it must not read at all.
fn wal_free(file: &Path, label: &str) -> Result<()> {
    let wal = access::companion(file, "-wal");
    // A WAL's header is 32 bytes; each frame follows it.
    match std::fs::symlink_metadata(&wal) {
        Ok(m) if m.len() > 32 => Err(Error::io_msg(format!(
            "{label}: cannot read on this read-only mount: {} holds commits that may not be in the database file yet, and SQLite cannot read them without creating its -shm file; mount it read-write (or copy the database with its -wal elsewhere) and read again",
            quote(&wal.display().to_string())
        ))),
        _ => Ok(()),
    }
}

fn read_only_mount(dir: &Path) -> bool {
    rustix::fs::statvfs(dir).is_ok_and(|v| v.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY))
}

impl Database {
    /// Checks the configured path (no file is created or opened, except an
    /// in-memory database, which is initialised at once).
    pub fn open(
        path: &str,
        journal_mode: JournalMode,
        busy_timeout_ms: u32,
        label: String,
    ) -> Result<Database> {
        let mut db = Database {
            path: None,
            label,
            journal_mode,
            busy_timeout_ms,
            state: Mutex::new(State::Unopened),
            side: Mutex::new(Side::default()),
        };
        if path == MEMORY_PATH {
            let conn =
                Connection::open_in_memory().map_err(|e| sql_error(&db.label, "cannot open", e))?;
            let (conn, ident) = db.set_up_writable(conn, None)?;
            *db.state.get_mut() = State::Writable { conn, ident };
            return Ok(db);
        }
        if path.is_empty() {
            return Err(Error::invalid("session database path must not be empty"));
        }
        let path = plain(Path::new(path));
        let uid = access::current_uid()?;
        // A missing parent is made at the first write; one that is not a
        // directory is refused by `check_parent`.
        if access::parent_is_there(&path)? {
            let file = resolved(&path)?;
            access::check_parent(&file, uid)?;
            if access::check_existing(&file, uid)? {
                // An existing file is identified now (a foreign database is
                // refused at open), read-only: nothing is written.
                let (conn, ident, fallback) = db.open_for_reading(&file)?;
                if !fallback {
                    if let Some(ident) = &ident {
                        db.allow_side_reads(&file, ident);
                    }
                    *db.state.get_mut() = State::Reading {
                        conn,
                        ident,
                        fallback,
                    };
                }
            }
        }
        db.path = Some(path);
        Ok(db)
    }

    /// The database file as configured (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn closed(&self) -> Error {
        Error::Closed(format!("{} is closed", self.label))
    }

    fn flags() -> OpenFlags {
        OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_NOFOLLOW
    }

    /// Connection pragmas, identity (initialising a pristine file), journal
    /// pragmas and the list statement.
    fn set_up_writable(
        &self,
        mut conn: Connection,
        file: Option<&Path>,
    ) -> Result<(Connection, Ident)> {
        schema::apply_connection_pragmas(&conn, &self.label, self.busy_timeout_ms)?;
        let store_id = schema::ensure_identity(&mut conn, &self.label)?;
        schema::apply_journal_pragmas(&conn, &self.label, self.journal_mode, file.is_none())?;
        reader::prepare_list(&conn, &self.label)?;
        let revision_prefix = match file {
            None => "memory".to_string(),
            Some(p) => super::file_identity(p)?,
        };
        Ok((
            conn,
            Ident {
                store_id,
                revision_prefix,
            },
        ))
    }

    /// Opens `file` (which exists) for reading: the identity is checked,
    /// nothing is written. `None` ident while the file is pristine.
    fn open_for_reading(&self, file: &Path) -> Result<(Connection, Option<Ident>, bool)> {
        let dir = access::parent_dir(file);
        // On a (nearly) full disk the normal open would leave a half-made
        // `-shm` behind: go to the fallback at once.
        let normal = if disk_full(&dir) {
            Err(Error::io_msg(format!(
                "{}: cannot open: the disk is full",
                self.label
            )))
        } else {
            Connection::open_with_flags(file, Self::flags() | OpenFlags::SQLITE_OPEN_READ_WRITE)
                .map_err(|e| sql_error(&self.label, "cannot open", e))
                .and_then(|conn| self.reading_identity(conn, file))
        };
        match normal {
            Ok((conn, ident)) => Ok((conn, ident, false)),
            Err(first) if first.kind() == crate::ErrorKind::Io => {
                let fallback = if read_only_mount(&dir) {
                    // `immutable` reads the main file alone: commits still
                    // in a `-wal` would be silently missing.
                    wal_free(file, &self.label)?;
                    Connection::open_with_flags(
                        uri(file, "mode=ro&immutable=1"),
                        Self::flags()
                            | OpenFlags::SQLITE_OPEN_READ_ONLY
                            | OpenFlags::SQLITE_OPEN_URI,
                    )
                    .map_err(|e| sql_error(&self.label, "cannot open", e))
                } else {
                    // Read-write (an exclusive lock needs a writable
                    // descriptor), but nothing is written by a read.
                    Connection::open_with_flags(
                        file,
                        Self::flags() | OpenFlags::SQLITE_OPEN_READ_WRITE,
                    )
                    .map_err(|e| sql_error(&self.label, "cannot open", e))
                    .and_then(|conn| {
                        conn.execute_batch("PRAGMA locking_mode = EXCLUSIVE")
                            .map_err(|e| {
                                sql_error(&self.label, "cannot set PRAGMA locking_mode", e)
                            })?;
                        Ok(conn)
                    })
                };
                match fallback.and_then(|conn| self.reading_identity(conn, file)) {
                    Ok((conn, ident)) => Ok((conn, ident, true)),
                    // The first failure says more about the file.
                    Err(_) => Err(first),
                }
            }
            Err(e) => Err(e),
        }
    }

    fn reading_identity(
        &self,
        mut conn: Connection,
        file: &Path,
    ) -> Result<(Connection, Option<Ident>)> {
        schema::apply_connection_pragmas(&conn, &self.label, self.busy_timeout_ms)?;
        let ident = match schema::read_store_id(&mut conn, &self.label)? {
            None => None,
            Some(store_id) => {
                reader::prepare_list(&conn, &self.label)?;
                Some(Ident {
                    store_id,
                    revision_prefix: super::file_identity(file)?,
                })
            }
        };
        Ok((conn, ident))
    }

    /// Runs a read on the connection. `Ok(None)` without calling `f` when
    /// there is no database yet (no file, or a pristine one): nothing is
    /// created or written.
    pub fn read<T>(
        &self,
        f: impl FnOnce(&mut Connection, &Ident) -> Result<T>,
    ) -> Result<Option<T>> {
        let mut state = match self.state.try_lock() {
            Some(state) => state,
            None => match self.side_connection() {
                Some((mut conn, ident)) => {
                    let out = f(&mut conn, &ident);
                    self.return_side(conn);
                    return out.map(Some);
                }
                None => self.state.lock(),
            },
        };
        loop {
            match &mut *state {
                State::Closed => return Err(self.closed()),
                State::Writable { conn, ident } => return f(conn, ident).map(Some),
                State::Reading {
                    conn,
                    ident,
                    fallback,
                } => {
                    if ident.is_none() {
                        // Pristine when opened: another store may have
                        // initialised it since.
                        if let Some(store_id) = schema::read_store_id(conn, &self.label)? {
                            let file = self.path.as_deref().map(resolved).transpose()?;
                            let found = Ident {
                                store_id,
                                revision_prefix: match &file {
                                    Some(p) => super::file_identity(p)?,
                                    None => "memory".into(),
                                },
                            };
                            if let (Some(file), false) = (&file, *fallback) {
                                self.allow_side_reads(file, &found);
                            }
                            *ident = Some(found);
                        }
                    }
                    let out = match ident {
                        None => Ok(None),
                        Some(ident) => f(conn, ident).map(Some),
                    };
                    if *fallback {
                        *state = State::Unopened;
                    }
                    return out;
                }
                State::Unopened => {
                    let Some(path) = &self.path else {
                        return Err(Error::invariant("an in-memory database was never opened"));
                    };
                    if !access::parent_is_there(path)? {
                        return Ok(None);
                    }
                    let file = resolved(path)?;
                    let uid = access::current_uid()?;
                    if !access::check_existing(&file, uid)? {
                        return Ok(None);
                    }
                    let (conn, ident, fallback) = self.open_for_reading(&file)?;
                    if let (Some(ident), false) = (&ident, fallback) {
                        self.allow_side_reads(&file, ident);
                    }
                    *state = State::Reading {
                        conn,
                        ident,
                        fallback,
                    };
                }
            }
        }
    }

    /// Runs a write, first creating and initialising the database if needed.
    pub fn write<T>(&self, f: impl FnOnce(&mut Connection, &Ident) -> Result<T>) -> Result<T> {
        let mut state = self.state.lock();
        match &mut *state {
            State::Closed => return Err(self.closed()),
            State::Writable { conn, ident } => return f(conn, ident),
            State::Reading { .. } | State::Unopened => {}
        }
        // Drop a reading connection first: the writer opens its own.
        *state = State::Unopened;
        let Some(path) = &self.path else {
            return Err(Error::invariant("an in-memory database was never opened"));
        };
        let uid = access::current_uid()?;
        // Before anything is made: a name with no room for SQLite's own
        // files is refused.
        access::check_name_room(path)?;
        let parent = access::parent_dir(path);
        crate::backend::dirs::create_dir_all(&parent)?;
        let file = resolved(path)?;
        access::check_parent(&file, uid)?;
        access::prepare_file(&file, uid)?;
        let conn =
            Connection::open_with_flags(&file, Self::flags() | OpenFlags::SQLITE_OPEN_READ_WRITE)
                .map_err(|e| sql_error(&self.label, "cannot open", e))?;
        let (conn, ident) = self.set_up_writable(conn, Some(&file))?;
        self.allow_side_reads(&file, &ident);
        *state = State::Writable { conn, ident };
        match &mut *state {
            State::Writable { conn, ident } => f(conn, ident),
            _ => Err(Error::invariant("the database was just opened for writing")),
        }
    }

    /// The identity, when the database is open and initialised.
    pub fn ident(&self) -> Option<Ident> {
        match &*self.state.lock() {
            State::Writable { ident, .. } => Some(ident.clone()),
            State::Reading { ident, .. } => ident.clone(),
            _ => None,
        }
    }

    /// Whether reads may run on side connections (a WAL database file).
    pub fn side_reads(&self) -> bool {
        self.path.is_some() && self.journal_mode == JournalMode::Wal
    }

    /// The main connection has opened `file` (resolved) normally and found
    /// `ident`: side connections may be opened on it.
    fn allow_side_reads(&self, file: &Path, ident: &Ident) {
        if self.journal_mode != JournalMode::Wal {
            return;
        }
        let mut side = self.side.lock();
        if !side.closed {
            side.ready = Some((file.to_path_buf(), ident.clone()));
        }
    }

    /// An idle side connection, or a new one checked like the main one.
    /// `None` (the read goes to the main connection): side reads are not
    /// allowed (yet), the store is closing, or the open or a check failed.
    fn side_connection(&self) -> Option<(Connection, Ident)> {
        let (file, ident) = {
            let mut side = self.side.lock();
            if side.closed {
                return None;
            }
            let (file, ident) = side.ready.clone()?;
            if let Some(conn) = side.idle.pop() {
                return Some((conn, ident));
            }
            (file, ident)
        };
        // The checks of the first open, on the file SQLite opens now.
        let uid = access::current_uid().ok()?;
        if !access::check_existing(&file, uid).ok()? || disk_full(&access::parent_dir(&file)) {
            return None;
        }
        let conn =
            Connection::open_with_flags(&file, Self::flags() | OpenFlags::SQLITE_OPEN_READ_WRITE)
                .ok()?;
        let (conn, found) = self.reading_identity(conn, &file).ok()?;
        let found = found?;
        let same =
            found.store_id == ident.store_id && found.revision_prefix == ident.revision_prefix;
        same.then_some((conn, ident))
    }

    /// Keeps a side connection for the next read (or closes it).
    fn return_side(&self, conn: Connection) {
        let mut side = self.side.lock();
        if !side.closed && side.ready.is_some() && side.idle.len() < SIDE_CONNECTIONS {
            side.idle.push(conn);
            return;
        }
        drop(side);
        drop(conn);
    }

    /// Closes the connection; later calls fail as closed.
    pub fn close(&self) -> Result<()> {
        let idle = {
            let mut side = self.side.lock();
            side.closed = true;
            side.ready = None;
            std::mem::take(&mut side.idle)
        };
        drop(idle);
        let state = std::mem::replace(&mut *self.state.lock(), State::Closed);
        match state {
            State::Writable { conn, .. } | State::Reading { conn, .. } => conn
                .close()
                .map_err(|(_, e)| sql_error(&self.label, "cannot close", e)),
            State::Unopened | State::Closed => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_prefixed_paths_stay_paths() {
        assert_eq!(plain(Path::new("file:x.db")), PathBuf::from("./file:x.db"));
        assert_eq!(
            plain(Path::new("/a/file:x.db")),
            PathBuf::from("/a/file:x.db")
        );
        assert_eq!(
            uri(Path::new("/a b/x?.db"), "immutable=1"),
            "file:/a%20b/x%3F.db?immutable=1"
        );
    }

    /// A private directory for one test, removed on drop.
    struct Dir(PathBuf);

    impl Dir {
        fn new(tag: &str) -> Dir {
            static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir = std::env::temp_dir()
                .join(format!("dsh-connection-{tag}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir(&dir).unwrap();
            std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .unwrap();
            Dir(dir)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn open(path: &Path, mode: JournalMode) -> Database {
        Database::open(path.to_str().unwrap(), mode, 5_000, "test database".into()).unwrap()
    }

    /// A database file made and initialised by a writer, then closed.
    fn initialised(dir: &Dir, mode: JournalMode) -> PathBuf {
        let path = dir.0.join("sessions.db");
        let w = open(&path, mode);
        w.write(|_, _| Ok(())).unwrap();
        w.close().unwrap();
        path
    }

    fn store_id(c: &mut Connection, _: &Ident) -> Result<String> {
        c.query_row("SELECT store_id FROM persistence_state", [], |r| r.get(0))
            .map_err(|e| sql_error("test", "store id", e))
    }

    /// Runs a read on another thread while this one holds the main
    /// connection; its result, or `None` if it did not finish while held.
    fn read_while_held(db: &Database) -> Option<Result<Option<String>>> {
        let held = db.state.lock();
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel();
            s.spawn(move || tx.send(db.read(store_id)).unwrap());
            let got = rx.recv_timeout(std::time::Duration::from_secs(30)).ok();
            drop(held);
            got
        })
    }

    /// Every open passes [`Database::flags`]: SQLite itself then refuses a
    /// symbolic link put in place of the file after our checks ran.
    #[test]
    fn the_open_flags_refuse_a_symlink_swapped_in() {
        let dir = Dir::new("nofollow");
        let path = initialised(&dir, JournalMode::Wal);
        let link = dir.0.join("link.db");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let flags = Database::flags() | OpenFlags::SQLITE_OPEN_READ_WRITE;
        let err = Connection::open_with_flags(&link, flags)
            .and_then(|c| c.query_row("SELECT count(*) FROM sessions", [], |r| r.get::<_, i64>(0)))
            .unwrap_err();
        assert_eq!(
            err.sqlite_error_code(),
            Some(rusqlite::ErrorCode::CannotOpen),
            "{err}"
        );
        // The file itself opens with the same flags.
        let c = Connection::open_with_flags(&path, flags).unwrap();
        let n: i64 = c
            .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0);
    }

    #[test]
    fn a_read_finding_the_connection_busy_runs_beside_it() {
        let dir = Dir::new("side");
        let path = initialised(&dir, JournalMode::Wal);
        let db = open(&path, JournalMode::Wal);
        assert!(db.side_reads());
        let expected = db.ident().unwrap().store_id;
        let got = read_while_held(&db).expect("the read ran on a side connection");
        assert_eq!(got.unwrap(), Some(expected.clone()));
        // The side connection is kept for the next busy read.
        assert_eq!(db.side.lock().idle.len(), 1);
        assert_eq!(read_while_held(&db).unwrap().unwrap(), Some(expected));
        assert_eq!(db.side.lock().idle.len(), 1);
        // Closed: no side connection is kept or opened, and reads fail.
        db.close().unwrap();
        assert!(db.side.lock().idle.is_empty());
        assert!(db.side_connection().is_none());
        assert_eq!(
            db.read(store_id).unwrap_err().kind(),
            crate::ErrorKind::Closed
        );
    }

    /// However many reads ran side by side, at most [`SIDE_CONNECTIONS`]
    /// idle connections stay open, and none once the store is closed.
    #[test]
    fn at_most_two_side_connections_are_kept() {
        let dir = Dir::new("side-bound");
        let path = initialised(&dir, JournalMode::Wal);
        let db = open(&path, JournalMode::Wal);
        let side: Vec<_> = (0..SIDE_CONNECTIONS + 2)
            .map(|_| db.side_connection().expect("a side connection").0)
            .collect();
        for conn in side {
            db.return_side(conn);
        }
        assert_eq!(db.side.lock().idle.len(), SIDE_CONNECTIONS);
        let (conn, _) = db.side_connection().unwrap();
        assert_eq!(db.side.lock().idle.len(), SIDE_CONNECTIONS - 1);
        db.close().unwrap();
        db.return_side(conn);
        assert!(db.side.lock().idle.is_empty());
    }

    #[test]
    fn side_connections_are_checked_like_the_first() {
        let dir = Dir::new("side-checks");
        let path = initialised(&dir, JournalMode::Wal);
        let db = open(&path, JournalMode::Wal);
        assert!(db.side_connection().is_some());
        // Another file (another inode) in its place: refused.
        let copy = dir.0.join("copy.db");
        std::fs::copy(&path, &copy).unwrap();
        std::fs::rename(&copy, &path).unwrap();
        assert!(db.side_connection().is_none());
        // A link in its place: refused.
        std::fs::rename(&path, dir.0.join("real.db")).unwrap();
        std::os::unix::fs::symlink(dir.0.join("real.db"), &path).unwrap();
        assert!(db.side_connection().is_none());
        db.close().unwrap();
    }

    #[test]
    fn no_side_reads_without_wal_or_before_the_identity() {
        // A rollback journal: a reader could hold a writer up.
        let dir = Dir::new("side-delete");
        let path = initialised(&dir, JournalMode::Delete);
        let db = open(&path, JournalMode::Delete);
        assert!(!db.side_reads());
        assert!(db.side_connection().is_none());
        db.close().unwrap();
        // A pristine (empty) file: nothing to check a side connection
        // against until a writer initialises it.
        let dir = Dir::new("side-pristine");
        let path = dir.0.join("sessions.db");
        std::fs::write(&path, b"").unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        let db = open(&path, JournalMode::Wal);
        assert_eq!(db.read(store_id).unwrap(), None);
        assert!(db.side_connection().is_none());
        db.write(|_, _| Ok(())).unwrap();
        assert!(db.side_connection().is_some());
        db.close().unwrap();
    }
}
