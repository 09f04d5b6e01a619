//! Writer locks: one writer per session id, across processes and across
//! store handles in one process (the lock behind [`Backend::lock_writer`]
//! and [`Backend::writer_holder`] of the file backends).
//!
//! A lock is a small file `<lock dir>/<name>@lock` (mode 0600) holding no
//! data. The holder keeps it open with two kernel locks on it:
//!
//! - an exclusive `flock` (`LOCK_EX | LOCK_NB`, what `File::try_lock` does
//!   from Rust 1.89 on; called through rustix here, which keeps the crate's
//!   minimum Rust version): the exclusion itself. `flock`
//!   locks belong to the open file description, so two handles in one
//!   process that open the file separately exclude each other too;
//! - a POSIX record lock (`fcntl(F_SETLK)`, whole file) that only serves to
//!   be *seen*: `fcntl(F_GETLK)` reports it, with the holder's pid, without
//!   taking any lock. That is how readers ask "is a writer on this id?"
//!   without ever disturbing a writer (a reader that took even a shared
//!   `flock` for a moment could make a writer's `try_lock` fail).
//!
//! The kernel drops both when the holder's descriptor closes, so a crashed
//! or killed process never leaves a stale lock: the file may stay behind
//! (empty, harmless), the lock does not. On release the holder unlinks the
//! file while it still holds the lock; an acquirer therefore checks, after
//! locking, that the path still names the file it locked, and starts over
//! if not.
//!
//! POSIX record locks are per process, and closing *any* descriptor of the
//! file drops them. So within one process every lock file is opened only
//! under `HELD`, the table of the locks this process holds: an id held
//! here is refused from the table (never opened a second time), and a probe
//! of an id not held here cannot close a descriptor that carries one of our
//! record locks.
//!
//! Where the lock directory lives is the backend's choice (JSONL: inside
//! the root; SQLite: beside the database). It never depends on a session's
//! cwd, so creators of one id under two cwds contend for one lock.
//!
//! [`Backend::lock_writer`]: super::Backend::lock_writer
//! [`Backend::writer_holder`]: super::Backend::writer_holder

use std::collections::HashSet;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use rustix::fs::{FlockOperation, OFlags};
use rustix::process::{Flock, FlockOffsetType, FlockType};

use super::{WriterHolder, WriterLock};
use crate::error::{Error, Result};
use crate::model::json::quote;

/// Name of the lock directory inside a JSONL root, and the suffix of the
/// one beside a SQLite database file.
pub const LOCK_DIR_NAME: &str = ".dsh-persist-locks";

/// Identity of one lock in this process: the lock directory's device and
/// inode (so two spellings of one directory are one lock) and the name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct LockKey {
    dev: u64,
    ino: u64,
    name: String,
}

/// The writer locks held in this process (see the module docs).
static HELD: LazyLock<Mutex<HashSet<LockKey>>> = LazyLock::new(Mutex::default);

/// Namespaces of in-process lock spaces (no files).
static NEXT_SPACE: AtomicU64 = AtomicU64::new(1);

/// Where a backend's writer locks live.
#[derive(Debug)]
pub enum LockSpace {
    /// Lock files in this directory (created, mode 0700, on first use).
    Files(PathBuf),
    /// This process only, in a namespace of its own: for storage no other
    /// process can open (a private in-memory database, test backends).
    Process(u64),
}

impl LockSpace {
    /// A space of lock files in `dir`.
    pub fn files(dir: PathBuf) -> LockSpace {
        LockSpace::Files(dir)
    }

    /// A fresh in-process space.
    pub fn process() -> LockSpace {
        LockSpace::Process(NEXT_SPACE.fetch_add(1, Ordering::Relaxed))
    }

    /// Takes the writer lock of `id` without waiting: `Error::Busy` naming
    /// the session and the holder when another writer has it.
    pub fn lock(&self, id: &str) -> Result<WriterLock> {
        let name = lock_name(id);
        match self {
            LockSpace::Process(ns) => {
                let key = LockKey {
                    dev: u64::MAX,
                    ino: *ns,
                    name,
                };
                let mut held = HELD.lock();
                if !held.insert(key.clone()) {
                    return Err(busy(id, &WriterHolder::this_process()));
                }
                Ok(WriterLock::new(id, ProcessLock { key }))
            }
            LockSpace::Files(dir) => lock_file(dir, id, name),
        }
    }

    /// Who holds the writer lock of `id` now, without taking any lock;
    /// `None` when nobody does.
    pub fn holder(&self, id: &str) -> Result<Option<WriterHolder>> {
        let name = lock_name(id);
        match self {
            LockSpace::Process(ns) => {
                let key = LockKey {
                    dev: u64::MAX,
                    ino: *ns,
                    name,
                };
                Ok(HELD.lock().contains(&key).then(WriterHolder::this_process))
            }
            LockSpace::Files(dir) => {
                let Some(key) = dir_key(dir, &name)? else {
                    return Ok(None);
                };
                let held = HELD.lock();
                if held.contains(&key) {
                    return Ok(Some(WriterHolder::this_process()));
                }
                let path = dir.join(&name);
                let file = match OpenOptions::new()
                    .read(true)
                    .custom_flags(lock_file_flags())
                    .open(&path)
                {
                    Ok(f) => f,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                    Err(e) => return Err(open_lock_error(&path, e)),
                };
                check_lock_file(&file, &path)?;
                let holder = probe(&file);
                // Safe to close while `held` is locked: this process holds
                // no record lock on this file (it is not in the table).
                drop(file);
                drop(held);
                Ok(holder)
            }
        }
    }
}

/// The refusal of a second writer.
pub fn busy(id: &str, holder: &WriterHolder) -> Error {
    Error::Busy(format!(
        "session {} is being written by {}; only one writer may hold a session at a time — close that session (or wait for its append to finish) and retry; reads (inspect, read_from, list) work meanwhile",
        quote(id),
        holder.describe()
    ))
}

fn io_err(what: &str, path: &Path, e: io::Error) -> Error {
    Error::io(format!("{what} {}", path.display()), e)
}

/// Flags of every open of a lock file: a link planted there is refused
/// (`O_NOFOLLOW`), and the open never waits (`O_NONBLOCK`: a FIFO planted
/// there would otherwise hang a probe's read-only open until some process
/// opened it for writing). Lock files are never read or written, so
/// `O_NONBLOCK` changes nothing else; `flock` and record locks ignore it.
fn lock_file_flags() -> i32 {
    (OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK).bits() as i32
}

/// The metadata of the open lock file, refusing one that is not a regular
/// file (a FIFO, socket, device or directory planted at `path`): the store
/// only ever makes regular files there, and a lock on anything else is not
/// one a writer would see.
fn check_lock_file(file: &File, path: &Path) -> Result<fs::Metadata> {
    let meta = file
        .metadata()
        .map_err(|e| io_err("cannot stat the writer lock", path, e))?;
    if meta.is_file() {
        Ok(meta)
    } else {
        Err(not_a_lock_file(path))
    }
}

/// An open of the lock file at `path` failed with `e`: what a link
/// (`ELOOP`, `O_NOFOLLOW`), a directory (`EISDIR` for a writable open) or a
/// socket (`ENXIO`) there answers is reported as the file that is not a
/// regular one.
fn open_lock_error(path: &Path, e: io::Error) -> Error {
    use rustix::io::Errno;
    let errno = e.raw_os_error().map(Errno::from_raw_os_error);
    match errno {
        Some(Errno::LOOP | Errno::ISDIR | Errno::NXIO) => not_a_lock_file(path),
        _ => io_err("cannot open the writer lock", path, e),
    }
}

fn not_a_lock_file(path: &Path) -> Error {
    Error::io_msg(format!(
        "the writer lock {} is not a regular file (a link, directory, FIFO, socket or device was put there; the store only makes regular files): remove it",
        quote(&path.display().to_string())
    ))
}

/// The table key of `name` in `dir`; `None` when the directory is absent.
fn dir_key(dir: &Path, name: &str) -> Result<Option<LockKey>> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => Ok(Some(LockKey {
            dev: m.dev(),
            ino: m.ino(),
            name: name.to_string(),
        })),
        Ok(_) => Err(Error::io_msg(format!(
            "the writer lock directory {} is not a directory; remove it",
            dir.display()
        ))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("cannot stat the writer lock directory", dir, e)),
    }
}

/// Creates the lock directory (mode 0700) when missing.
/// Creates the lock directory (0700). A missing parent (the directory of a
/// SQLite database not written yet) is made as the first write would make
/// it (`mkdir -p`, 0700, each new directory's parent fsynced): a writer
/// takes its lock before its first write.
fn ensure_dir(dir: &Path) -> Result<()> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        crate::backend::dirs::create_dir_all(parent)?;
    }
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io_err("cannot create the writer lock directory", dir, e)),
    }
}

/// Who holds a record lock on `file`, as `F_GETLK` reports it.
fn probe(file: &File) -> Option<WriterHolder> {
    let want = Flock {
        start: 0,
        length: 0,
        pid: None,
        typ: FlockType::WriteLock,
        offset_type: FlockOffsetType::Set,
    };
    match rustix::process::fcntl_getlk(file, &want) {
        Ok(Some(lock)) => Some(WriterHolder {
            pid: lock
                .pid
                .map(|p| p.as_raw_nonzero().get())
                .filter(|p| *p > 0)
                .map(|p| p as u32),
            this_process: false,
            remote: None,
        }),
        // Not held, or a file system without record locks: nothing known.
        _ => None,
    }
}

/// Attempts before giving up on a lock file that keeps being replaced.
const LOCK_ATTEMPTS: usize = 32;

fn lock_file(dir: &Path, id: &str, name: String) -> Result<WriterLock> {
    ensure_dir(dir)?;
    let key = dir_key(dir, &name)?.ok_or_else(|| {
        Error::io_msg(format!(
            "the writer lock directory {} vanished while locking session {}",
            dir.display(),
            quote(id)
        ))
    })?;
    let path = dir.join(&name);
    let mut held = HELD.lock();
    if held.contains(&key) {
        return Err(busy(id, &WriterHolder::this_process()));
    }
    for _ in 0..LOCK_ATTEMPTS {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(lock_file_flags())
            .open(&path)
            .map_err(|e| open_lock_error(&path, e))?;
        // Its identity, for the check after locking (an open file's device
        // and inode do not change).
        let ours = check_lock_file(&file, &path)?;
        #[cfg(test)]
        tests::AFTER_OPEN.with(|hook| {
            if let Some(hook) = hook.borrow_mut().as_mut() {
                hook(&path);
            }
        });
        match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                // The holder sets its record lock right after its flock:
                // give it that moment to become visible.
                let holder = (0..3)
                    .find_map(|_| {
                        probe(&file).or_else(|| {
                            std::thread::yield_now();
                            None
                        })
                    })
                    .unwrap_or(WriterHolder {
                        pid: None,
                        this_process: false,
                        remote: None,
                    });
                drop(file);
                return Err(busy(id, &holder));
            }
            Err(e) => {
                return Err(io_err("cannot lock the writer lock", &path, e.into()));
            }
        }
        // The previous holder may have unlinked the file between our open
        // and our lock: then we hold a lock nobody else can see.
        match fs::symlink_metadata(&path) {
            Ok(m) if m.dev() == ours.dev() && m.ino() == ours.ino() => {}
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_err("cannot stat the writer lock", &path, e)),
        }
        // The visible marker for probes; the exclusion is the flock.
        let _ = rustix::fs::fcntl_lock(&file, FlockOperation::NonBlockingLockExclusive);
        held.insert(key.clone());
        return Ok(WriterLock::new(
            id,
            FileLock {
                file: Some(file),
                path,
                key,
            },
        ));
    }
    Err(Error::Busy(format!(
        "the writer lock of session {} at {} kept being replaced ({LOCK_ATTEMPTS} attempts); another writer is taking and releasing it",
        quote(id),
        path.display()
    )))
}

/// A held lock file (see the module docs).
struct FileLock {
    file: Option<File>,
    path: PathBuf,
    key: LockKey,
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let mut held = HELD.lock();
        if let Some(file) = self.file.take() {
            // Unlink while still holding the lock, and only the file we
            // hold (an acquirer that opened it meanwhile sees it gone and
            // starts over).
            if let (Ok(ours), Ok(now)) = (file.metadata(), fs::symlink_metadata(&self.path)) {
                if ours.dev() == now.dev() && ours.ino() == now.ino() {
                    let _ = fs::remove_file(&self.path);
                }
            }
            drop(file);
        }
        held.remove(&self.key);
    }
}

/// A lock held in an in-process space.
struct ProcessLock {
    key: LockKey,
}

impl Drop for ProcessLock {
    fn drop(&mut self) {
        HELD.lock().remove(&self.key);
    }
}

/// The lock file name of `id`: the id escaped like a JSONL session
/// directory, then `@lock`. `@` never occurs in an escaped id, so no lock
/// file is ever named like a session directory (a reader that looks for
/// `<dir>/<escaped id>/` never meets a lock file instead). Ids whose
/// escaped form is long (or not a valid id at all) get a prefix plus a
/// 128-bit hash, so every name fits a file system's 255 bytes.
pub fn lock_name(id: &str) -> String {
    match crate::backend::jsonl::layout::escape_id(id) {
        Ok(e) if e.len() <= 200 => format!("{e}@lock"),
        _ => {
            let prefix: String = id.chars().take(24).collect();
            let prefix = crate::backend::jsonl::layout::escape_id(&prefix).unwrap_or_default();
            let (a, b) = hash128(id.as_bytes());
            format!("{prefix}@{a:016x}{b:016x}@lock")
        }
    }
}

/// Two FNV-1a 64 hashes with different offset bases (a stable name, not a
/// security boundary: a collision only makes two ids share a lock).
fn hash128(bytes: &[u8]) -> (u64, u64) {
    const PRIME: u64 = 0x0000_0100_0000_01B3;
    let mut a: u64 = 0xCBF2_9CE4_8422_2325;
    let mut b: u64 = 0x8422_2325_CBF2_9CE4;
    for &x in bytes {
        a = (a ^ u64::from(x)).wrapping_mul(PRIME);
        b = (b ^ u64::from(x.rotate_left(3))).wrapping_mul(PRIME);
    }
    (a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::test_dir::TempDir;

    type Hook = Box<dyn FnMut(&Path)>;

    thread_local! {
        /// Runs in [`lock_file`] between the open of the lock file and the
        /// `flock` (this thread's locks only).
        pub(super) static AFTER_OPEN: std::cell::RefCell<Option<Hook>> =
            const { std::cell::RefCell::new(None) };
    }

    /// Whether another open of `path` can take its `flock` now (it closes
    /// that descriptor again, which drops this process's record lock on
    /// the file: for tests only).
    fn flock_free(path: &Path) -> bool {
        let f = File::open(path).unwrap();
        rustix::fs::flock(&f, FlockOperation::NonBlockingLockExclusive).is_ok()
    }

    /// The previous holder releases (unlinks the file) between an
    /// acquirer's open and its `flock`: the acquirer then holds a lock on a
    /// file nobody else can see, so it starts over on the file now at the
    /// path, whether that path is empty or already holds a new file.
    #[test]
    fn a_lock_file_unlinked_between_open_and_lock_is_opened_again() {
        let tmp = TempDir::new("lock-race");
        let dir = tmp.dir();
        let space = LockSpace::files(dir.to_path_buf());
        for recreate in [false, true] {
            let mut calls = 0;
            AFTER_OPEN.with(|h| {
                *h.borrow_mut() = Some(Box::new(move |path: &Path| {
                    calls += 1;
                    if calls == 1 {
                        fs::remove_file(path).unwrap();
                        if recreate {
                            fs::write(path, b"").unwrap();
                        }
                    }
                }))
            });
            let lock = space.lock("s");
            AFTER_OPEN.with(|h| h.borrow_mut().take());
            let lock = lock.unwrap_or_else(|e| panic!("recreate {recreate}: {e}"));
            let path = dir.join("s@lock");
            assert!(
                !flock_free(&path),
                "recreate {recreate}: the lock is not on the file at the path"
            );
            drop(lock);
            assert!(!path.exists(), "recreate {recreate}: released");
        }
    }

    #[test]
    fn names_never_look_like_session_dirs_and_fit_a_file_name() {
        assert_eq!(lock_name("s1"), "s1@lock");
        assert_eq!(lock_name("a/b"), "a~002Fb@lock");
        let long = "x".repeat(5000);
        let n = lock_name(&long);
        assert!(n.len() < 255 && n.ends_with("@lock"), "{n}");
        assert_ne!(n, lock_name(&"x".repeat(5001)));
        // Names are part of the on-disk format: two versions of this
        // library writing one store must name one id's lock alike.
        assert_eq!(
            n,
            "xxxxxxxxxxxxxxxxxxxxxxxx@5d45fa080be4e3454adae0d4ba6ccd5c@lock"
        );
        assert!(lock_name("").ends_with("@lock"));
        // The longest id a JSONL root holds still gets a lock file name
        // that fits, distinct from its neighbour's, and can be locked.
        let longest = "x".repeat(crate::backend::jsonl::layout::MAX_SEGMENT_BYTES);
        let n = lock_name(&longest);
        assert!(n.len() <= 255 && n.ends_with("@lock"), "{n}");
        assert_ne!(n, lock_name(&format!("{}y", &longest[1..])));
        let tmp = TempDir::new("lock-longest");
        let dir = tmp.dir();
        let held = LockSpace::files(dir.to_path_buf()).lock(&longest).unwrap();
        assert!(dir.join(&n).exists());
        drop(held);
    }

    #[test]
    fn two_spaces_over_one_dir_exclude_each_other_and_release_on_drop() {
        let tmp = TempDir::new("lock-two");
        let dir = tmp.dir();
        let a = LockSpace::files(dir.join("locks"));
        let b = LockSpace::files(dir.join("locks"));
        assert!(a.holder("s").unwrap().is_none(), "no directory yet");
        let g = a.lock("s").unwrap();
        let e = b.lock("s").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Busy);
        assert!(e.to_string().contains("session \"s\""), "{e}");
        assert!(e.to_string().contains("this process"), "{e}");
        let h = b.holder("s").unwrap().expect("held");
        assert!(h.this_process);
        assert!(b.lock("t").is_ok(), "other ids are free");
        drop(g);
        assert!(b.holder("s").unwrap().is_none());
        assert!(
            !dir.join("locks").join("s@lock").exists(),
            "released locks leave no file"
        );
        let _g2 = b.lock("s").unwrap();
    }

    /// A lock directory that cannot be looked up is an error, never "no
    /// writer": a reader told that nobody writes may repair the log, so an
    /// answer it cannot give must not look like one.
    #[test]
    fn a_lock_directory_that_is_not_one_is_an_error_not_an_absent_writer() {
        let tmp = TempDir::new("lock-notdir");
        let dir = tmp.dir();
        let file = dir.join("locks");
        fs::write(&file, b"a file where the lock directory belongs").unwrap();
        // The directory's place holds a file, or its path runs through one
        // (each error names the file in the way).
        let cases = [
            (file.clone(), ["is not a directory; remove it"; 2]),
            (
                file.join("sub"),
                [
                    "cannot stat the writer lock directory",
                    "cannot create directory",
                ],
            ),
        ];
        for (locks, says) in cases {
            let space = LockSpace::files(locks.clone());
            let errors = [space.holder("s").unwrap_err(), space.lock("s").unwrap_err()];
            for (e, says) in errors.iter().zip(says) {
                assert_eq!(e.kind(), ErrorKind::Io, "{locks:?}: {e}");
                let text = e.to_string();
                assert!(text.contains(says), "{locks:?}: {text}");
                assert!(text.contains(&file.display().to_string()), "{text}");
            }
        }
        // And a directory that cannot be made (a name longer than a file
        // system allows) is reported as such.
        let long = dir.join("l".repeat(300));
        let e = LockSpace::files(long).lock("s").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{e}");
        assert!(
            e.to_string()
                .contains("cannot create the writer lock directory"),
            "{e}"
        );
    }

    #[test]
    fn a_fifo_directory_or_link_as_the_lock_file_is_refused_without_waiting() {
        let tmp = TempDir::new("lock-special");
        let dir = tmp.dir();
        let locks = dir.join("locks");
        fs::create_dir_all(&locks).unwrap();
        let space = LockSpace::files(locks.clone());
        let path = locks.join("s@lock");
        let outside = dir.join("outside");
        fs::write(&outside, b"not a lock").unwrap();
        for planted in ["fifo", "directory", "link"] {
            let fifo = (planted == "fifo").then(|| crate::backend::test_fifo::TestFifo::new(&path));
            match planted {
                "directory" => fs::create_dir(&path).unwrap(),
                "link" => std::os::unix::fs::symlink(&outside, &path).unwrap(),
                _ => {}
            }
            // A probe's read-only open of a FIFO would wait for a writer
            // (holding the lock table: every writer of the process waits).
            let errors = [
                space.holder("s").map(|_| ()).unwrap_err(),
                space.lock("s").map(|_| ()).unwrap_err(),
            ];
            for e in errors {
                assert_eq!(e.kind(), ErrorKind::Io, "{planted}: {e}");
                let text = e.to_string();
                assert!(text.contains("is not a regular file"), "{planted}: {text}");
                assert!(text.contains("s@lock"), "{planted}: {text}");
            }
            let _other = space.lock("t").expect("other ids are free");
            let meta = fs::symlink_metadata(&path).expect("the planted file stays");
            assert!(!meta.is_file(), "{planted}");
            if let Some(fifo) = fifo {
                fifo.assert_never_waited_on();
            }
            if planted == "directory" {
                fs::remove_dir(&path).unwrap();
            } else {
                fs::remove_file(&path).unwrap();
            }
        }
        assert_eq!(fs::read(&outside).unwrap(), b"not a lock", "never opened");
        let _g = space.lock("s").expect("removed: the lock works again");
    }

    #[test]
    fn a_held_lock_file_is_closed_on_exec() {
        let tmp = TempDir::new("lock-cloexec");
        let dir = tmp.dir();
        let space = LockSpace::files(dir.join("locks"));
        let guard = space.lock("s").unwrap();
        let path = dir.join("locks").join("s@lock");
        // The descriptor that holds the lock, found by its path.
        let fd = fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .find(|e| fs::read_link(e.path()).is_ok_and(|t| t == path))
            .expect("the lock file is open")
            .file_name();
        let info = fs::read_to_string(Path::new("/proc/self/fdinfo").join(&fd)).unwrap();
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .map(|f| u32::from_str_radix(f.trim(), 8).unwrap())
            .unwrap();
        assert_ne!(flags & OFlags::CLOEXEC.bits(), 0, "flags {flags:o}");
        assert_ne!(flags & OFlags::NONBLOCK.bits(), 0, "flags {flags:o}");
        drop(guard);
    }

    #[test]
    fn a_stale_lock_file_is_not_a_lock() {
        let tmp = TempDir::new("lock-stale");
        let dir = tmp.dir();
        let locks = dir.join("locks");
        fs::create_dir_all(&locks).unwrap();
        // What a killed holder leaves: the file, no lock.
        fs::write(locks.join("s@lock"), b"").unwrap();
        let space = LockSpace::files(locks);
        assert!(space.holder("s").unwrap().is_none());
        let _g = space.lock("s").unwrap();
    }

    #[test]
    fn process_spaces_are_private() {
        let a = LockSpace::process();
        let b = LockSpace::process();
        let g = a.lock("s").unwrap();
        assert_eq!(a.lock("s").unwrap_err().kind(), ErrorKind::Busy);
        assert!(a.holder("s").unwrap().is_some());
        assert!(b.holder("s").unwrap().is_none());
        let _h = b.lock("s").unwrap();
        drop(g);
        assert!(a.holder("s").unwrap().is_none(), "released on drop");
        let _again = a.lock("s").unwrap();
    }

    /// A holder whose lock file was replaced under it (removed by hand,
    /// then made and locked by another writer) leaves the new file alone
    /// when it releases: it unlinks only the file it holds.
    #[test]
    fn a_release_never_unlinks_a_lock_file_it_does_not_hold() {
        let tmp = TempDir::new("lock-replaced");
        let dir = tmp.dir();
        let space = LockSpace::files(dir.to_path_buf());
        let lock = space.lock("s").unwrap();
        let path = dir.join("s@lock");
        fs::remove_file(&path).unwrap();
        fs::write(&path, b"").unwrap();
        let other = File::open(&path).unwrap();
        rustix::fs::flock(&other, FlockOperation::NonBlockingLockExclusive).unwrap();
        drop(lock);
        assert!(path.exists(), "the other writer's lock file was unlinked");
        drop(other);
    }
}
