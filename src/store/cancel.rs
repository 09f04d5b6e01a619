//! Cancellation of long reads (issue 18): a [`Cancel`] token a host sets
//! from any thread, checked by loads, inspections, `read_from`, lists and
//! scans between chunks, frames and rows.
//!
//! The token reaches the read loops as the *ambient* token of the calling
//! thread: [`Cancel::scope`] installs it for the length of one call, and
//! [`checkpoint`] (a thread-local read and a relaxed atomic load) fails
//! with [`Error::Cancelled`] once it is set. The read helpers that use a
//! second thread ([`crate::backend::parallel`], the pipelined row read)
//! carry the token over with [`current`] and [`Cancel::scope`]. This keeps
//! the `Backend` trait free of a token parameter: every backend's loops
//! call `checkpoint()`, and a call made without a token never sees one.
//!
//! A cancelled call changes nothing: the store checks the token only before
//! it writes (a repair runs to its end under [`shield`]) and before it
//! updates its caches.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::error::{Error, Result};

/// A cancel token: cheap to clone (clones share the flag), set once.
#[derive(Clone, Debug, Default)]
pub struct Cancel {
    inner: Arc<Flag>,
}

#[derive(Debug, Default)]
struct Flag {
    cancelled: AtomicBool,
    /// With [`Cancel::after_checkpoints`]: checkpoints left before the
    /// token cancels itself (0: no countdown).
    countdown: AtomicU64,
}

impl Cancel {
    /// A token that is not cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Asks every call running under this token to stop at its next
    /// checkpoint, and every later call under it to stop at its first.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::Relaxed);
    }

    /// A token that cancels itself at its `n`-th checkpoint (`n` ≥ 1): the
    /// call stops there, in the middle of its work, at the same place
    /// every run. For tests of cancellation; a host may also use it to
    /// bound the work of one call.
    pub fn after_checkpoints(n: u64) -> Cancel {
        let t = Cancel::new();
        t.inner.countdown.store(n.max(1), Ordering::Relaxed);
        t
    }

    /// Whether [`Cancel::cancel`] was called (or the countdown ran out).
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Relaxed)
    }

    /// One checkpoint: counts down, then answers [`Cancel::is_cancelled`].
    fn check(&self) -> bool {
        let f = &self.inner;
        let counted = f
            .countdown
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        if counted == Ok(1) {
            self.cancel();
        }
        self.is_cancelled()
    }

    /// Runs `f` with this token as the thread's ambient token (the previous
    /// one comes back afterwards, also on a panic).
    pub fn scope<R>(&self, f: impl FnOnce() -> R) -> R {
        let _restore = Restore(AMBIENT.with(|a| a.replace(Some(self.clone()))));
        f()
    }
}

thread_local! {
    static AMBIENT: RefCell<Option<Cancel>> = const { RefCell::new(None) };
}

/// Puts the previous ambient token back when dropped.
struct Restore(Option<Cancel>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        AMBIENT.with(|a| *a.borrow_mut() = previous);
    }
}

/// The ambient token of this thread, to carry to a helper thread.
pub fn current() -> Option<Cancel> {
    AMBIENT.with(|a| a.borrow().clone())
}

/// Runs `f` under `token` when there is one (a helper thread's body).
pub fn scoped<R>(token: Option<&Cancel>, f: impl FnOnce() -> R) -> R {
    match token {
        Some(t) => t.scope(f),
        None => f(),
    }
}

/// Runs `f` with no ambient token: work that must finish once started (a
/// repair's write) is not cancelled halfway.
pub fn shield<R>(f: impl FnOnce() -> R) -> R {
    let _restore = Restore(AMBIENT.with(|a| a.replace(None)));
    f()
}

/// Fails with [`Error::Cancelled`] when the ambient token is set.
pub fn checkpoint() -> Result<()> {
    let cancelled = AMBIENT.with(|a| a.borrow().as_ref().is_some_and(Cancel::check));
    if cancelled {
        Err(Error::Cancelled(
            "the operation was cancelled; nothing was changed".to_string(),
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_sees_only_the_scoped_token() {
        let t = Cancel::new();
        assert!(checkpoint().is_ok());
        t.cancel();
        assert!(checkpoint().is_ok(), "no token outside a scope");
        let e = t.scope(checkpoint).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Cancelled);
        assert!(t.scope(|| shield(checkpoint)).is_ok());
        assert!(checkpoint().is_ok(), "the scope ended");
    }

    #[test]
    fn a_helper_thread_carries_the_token() {
        let t = Cancel::new();
        t.cancel();
        let r = t.scope(|| {
            let token = current();
            std::thread::spawn(move || scoped(token.as_ref(), checkpoint))
                .join()
                .unwrap()
        });
        assert!(r.is_err());
    }

    #[test]
    fn a_countdown_cancels_at_its_checkpoint() {
        let t = Cancel::after_checkpoints(3);
        t.scope(|| {
            assert!(checkpoint().is_ok());
            assert!(checkpoint().is_ok());
            assert!(checkpoint().is_err());
            assert!(checkpoint().is_err(), "stays cancelled");
        });
    }

    #[test]
    fn scopes_nest_and_restore() {
        let (a, b) = (Cancel::new(), Cancel::new());
        b.cancel();
        a.scope(|| {
            assert!(b.scope(checkpoint).is_err());
            assert!(checkpoint().is_ok(), "a is back");
        });
    }
}
