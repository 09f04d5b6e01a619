//! Fault injection at the backends' I/O points (cargo feature
//! `fault-injection`, off by default).
//!
//! Every durable I/O call of the backends goes through one of the wrappers
//! below (`create`, `write_all`, `sync`, `sync_dir`, `hard_link`,
//! `remove_file`, `set_len`, `check(Op::SqliteCommit)`). Without the
//! feature they are inlined pass-throughs. With it, a test can `arm` a
//! `Plan`: every call is counted (process-wide, background writer threads
//! included), and the `fail_at`-th call fails with an injected `io::Error`
//! instead of running (a failing `write_all` first writes half of its
//! bytes, like a short write before `EIO`). A *sticky* plan makes every later call fail too (a
//! disk that went away), so rollbacks fail as well.
//!
//! Armed scopes are serialized by a process-wide lock held by the
//! `Armed` guard, so tests of one binary never count each other's calls
//! while armed.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// One kind of I/O point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Creating a new log's temp file (`O_CREAT | O_EXCL`).
    Create,
    /// Writing bytes to a log file (JSONL temp file or append).
    Write,
    /// `fsync` of a file.
    Fsync,
    /// `fsync` of a directory.
    DirFsync,
    /// Publishing a log with `link(tmp, final)`.
    Link,
    /// `ftruncate` (torn-tail repair, append rollback).
    Truncate,
    /// Removing a file (the temp file after `link`).
    Unlink,
    /// Executing `COMMIT` of a SQLite write transaction: a failure here is
    /// a `COMMIT` that failed and rolled back (an append then checks what
    /// is stored, as after a real failed commit; a repair fails).
    SqliteCommit,
    /// The reply to a PostgreSQL `COMMIT` that did commit (a failure here
    /// is a reply lost with the connection: the batch is stored, but the
    /// writer does not know).
    PostgresCommitReply,
    /// Right after a SQLite `COMMIT` that succeeded: a failure here is a
    /// lost acknowledgement (the commit is stored, the caller is told it
    /// failed, as when the fsync of the commit reports an error).
    SqliteCommitAck,
}

/// Which call fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// 1-based index of the failing call among all counted calls; 0 counts
    /// without ever failing.
    pub fail_at: u64,
    /// Whether every call after the first failure fails too.
    pub sticky: bool,
    /// A second call (1-based) that fails too; 0 for none. With it, a
    /// failed write or fsync can be followed by a failed rollback while the
    /// calls after that succeed (an ambiguous write that a retry resolves).
    pub also_at: u64,
}

impl Plan {
    /// Fail only the `n`-th call.
    pub fn once(n: u64) -> Plan {
        Plan {
            fail_at: n,
            sticky: false,
            also_at: 0,
        }
    }

    /// Fail the `n`-th call and every later one.
    pub fn sticky(n: u64) -> Plan {
        Plan {
            fail_at: n,
            sticky: true,
            also_at: 0,
        }
    }

    /// Fail exactly the `a`-th and the `b`-th call.
    pub fn calls(a: u64, b: u64) -> Plan {
        Plan {
            fail_at: a,
            sticky: false,
            also_at: b,
        }
    }

    /// Count calls, fail none.
    pub fn count_only() -> Plan {
        Plan::once(0)
    }
}

#[cfg(feature = "fault-injection")]
mod imp {
    use super::{Op, Plan};
    use parking_lot::{Mutex, MutexGuard};
    use std::io;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[derive(Default)]
    struct State {
        plan: Option<Plan>,
        trace: Vec<Op>,
        fired: Vec<(u64, Op)>,
    }

    static ARMED: AtomicBool = AtomicBool::new(false);
    static STATE: Mutex<State> = Mutex::new(State {
        plan: None,
        trace: Vec::new(),
        fired: Vec::new(),
    });
    static SCOPE: Mutex<()> = Mutex::new(());

    /// An armed plan; dropping it disarms. Holds the process-wide fault
    /// scope lock.
    pub struct Armed {
        _scope: MutexGuard<'static, ()>,
    }

    impl Armed {
        /// The calls counted so far, in order.
        pub fn trace(&self) -> Vec<Op> {
            STATE.lock().trace.clone()
        }

        /// Number of calls counted so far.
        pub fn calls(&self) -> u64 {
            STATE.lock().trace.len() as u64
        }

        /// The injected failures: (call index, point).
        pub fn fired(&self) -> Vec<(u64, Op)> {
            STATE.lock().fired.clone()
        }

        /// Stops failing and counting (the scope lock stays held).
        pub fn disarm(&self) {
            ARMED.store(false, Ordering::Release);
            STATE.lock().plan = None;
        }
    }

    impl Drop for Armed {
        fn drop(&mut self) {
            self.disarm();
        }
    }

    /// Arms `plan` for the calling scope (waits for any other armed scope).
    pub fn arm(plan: Plan) -> Armed {
        let scope = SCOPE.lock();
        {
            let mut s = STATE.lock();
            s.plan = Some(plan);
            s.trace.clear();
            s.fired.clear();
        }
        ARMED.store(true, Ordering::Release);
        Armed { _scope: scope }
    }

    pub fn check(op: Op) -> io::Result<()> {
        if !ARMED.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut s = STATE.lock();
        let Some(plan) = s.plan else {
            return Ok(());
        };
        s.trace.push(op);
        let n = s.trace.len() as u64;
        let fail = plan.fail_at != 0 && (n == plan.fail_at || plan.sticky && n > plan.fail_at)
            || plan.also_at != 0 && n == plan.also_at;
        if fail {
            s.fired.push((n, op));
            return Err(io::Error::other(format!(
                "injected fault: {op:?} (I/O call {n})"
            )));
        }
        Ok(())
    }
}

#[cfg(feature = "fault-injection")]
pub use imp::{Armed, arm};

/// Counts one call of `op`; fails it when the armed plan says so. Always
/// `Ok` without the `fault-injection` feature.
#[inline]
pub fn check(op: Op) -> io::Result<()> {
    #[cfg(feature = "fault-injection")]
    {
        imp::check(op)
    }
    #[cfg(not(feature = "fault-injection"))]
    {
        let _ = op;
        Ok(())
    }
}

/// `open()`, the creation of a new file (an injected failure creates
/// nothing).
#[inline]
pub fn create<T>(open: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    check(Op::Create)?;
    open()
}

/// `w.write_all(bytes)`; an injected failure writes the first half first.
#[inline]
pub fn write_all(w: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    if let Err(e) = check(Op::Write) {
        w.write_all(&bytes[..bytes.len() / 2])?;
        return Err(e);
    }
    w.write_all(bytes)
}

/// `file.sync_all()`.
#[inline]
pub fn sync(file: &File) -> io::Result<()> {
    check(Op::Fsync)?;
    file.sync_all()
}

/// `dir.sync_all()` of an opened directory.
#[inline]
pub fn sync_dir(dir: &File) -> io::Result<()> {
    check(Op::DirFsync)?;
    dir.sync_all()
}

/// `std::fs::hard_link(from, to)`.
#[inline]
pub fn hard_link(from: &Path, to: &Path) -> io::Result<()> {
    check(Op::Link)?;
    std::fs::hard_link(from, to)
}

/// `std::fs::remove_file(path)`.
#[inline]
pub fn remove_file(path: &Path) -> io::Result<()> {
    check(Op::Unlink)?;
    std::fs::remove_file(path)
}

/// `file.set_len(len)`.
#[inline]
pub fn set_len(file: &File, len: u64) -> io::Result<()> {
    check(Op::Truncate)?;
    file.set_len(len)
}

/// `linkat(dir, from, dir, to)`: [`hard_link`] inside one opened directory.
#[inline]
pub fn link_at(dir: &std::os::fd::OwnedFd, from: &str, to: &str) -> io::Result<()> {
    check(Op::Link)?;
    Ok(rustix::fs::linkat(
        dir,
        from,
        dir,
        to,
        rustix::fs::AtFlags::empty(),
    )?)
}

/// `unlinkat(dir, name)`: [`remove_file`] inside one opened directory.
#[inline]
pub fn unlink_at(dir: &std::os::fd::OwnedFd, name: &str) -> io::Result<()> {
    check(Op::Unlink)?;
    Ok(rustix::fs::unlinkat(
        dir,
        name,
        rustix::fs::AtFlags::empty(),
    )?)
}
