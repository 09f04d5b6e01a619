//! Two halves of a large read on two threads.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};

use crate::error::{Error, Result};

/// Runs `second` on a new scoped thread while `first` runs on this one, and
/// returns both results. When no thread can be started, both run here,
/// `first` first. A panic in `second` becomes an invariant error.
pub fn join<RA, RB, A, B>(first: A, second: B) -> (RA, Result<RB>)
where
    A: FnOnce() -> RA,
    B: FnOnce() -> RB + Send,
    RB: Send,
{
    let slot = Mutex::new(Some(second));
    let take = || slot.lock().ok().and_then(|mut s| s.take());
    // The worker checks the caller's cancel token too.
    let token = crate::store::cancel::current();
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("dsh-read".into())
            .spawn_scoped(scope, || {
                crate::store::cancel::scoped(token.as_ref(), || take().map(|f| f()))
            });
        let a = first();
        let b = match worker {
            Ok(handle) => match handle.join() {
                Ok(Some(b)) => Ok(b),
                Ok(None) => Err(Error::invariant("a read worker found no work")),
                Err(_) => Err(Error::invariant("a read worker panicked")),
            },
            Err(_) => take()
                .map(|f| f())
                .ok_or_else(|| Error::invariant("a read worker lost its work")),
        };
        (a, b)
    })
}

/// Stretches of work in order, shared by two threads: a worker takes them
/// from the front as they come ([`StretchQueue::pop_front`] waits), the
/// producer, once it closed the queue, from the back. The worker's
/// stretches are thus a prefix of the whole, in order.
pub struct StretchQueue<T> {
    state: Mutex<(VecDeque<T>, bool)>,
    ready: Condvar,
}

impl<T> Default for StretchQueue<T> {
    fn default() -> Self {
        StretchQueue {
            state: Mutex::new((VecDeque::new(), false)),
            ready: Condvar::new(),
        }
    }
}

impl<T> StretchQueue<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, (VecDeque<T>, bool)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a stretch at the back.
    pub fn push(&self, item: T) {
        self.lock().0.push_back(item);
        self.ready.notify_one();
    }

    /// No more stretches will come; a waiting worker wakes up.
    pub fn close(&self) {
        self.lock().1 = true;
        self.ready.notify_all();
    }

    /// A guard that closes the queue when dropped (on every way out).
    pub fn closer(&self) -> Closer<'_, T> {
        Closer(self)
    }

    /// The first stretch, waiting for one; `None` once the queue is closed
    /// and empty.
    pub fn pop_front(&self) -> Option<T> {
        let mut st = self.lock();
        loop {
            if let Some(item) = st.0.pop_front() {
                return Some(item);
            }
            if st.1 {
                return None;
            }
            st = self.ready.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The last stretch, without waiting.
    pub fn pop_back(&self) -> Option<T> {
        self.lock().0.pop_back()
    }
}

/// Closes a [`StretchQueue`] when dropped.
pub struct Closer<'a, T>(&'a StretchQueue<T>);

impl<T> Drop for Closer<'_, T> {
    fn drop(&mut self) {
        self.0.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worker_takes_a_prefix_and_the_producer_the_rest() {
        let q = StretchQueue::default();
        let (front, back) = std::thread::scope(|s| {
            let worker = s.spawn(|| {
                let mut got = Vec::new();
                while let Some(i) = q.pop_front() {
                    got.push(i);
                }
                got
            });
            for i in 0..100 {
                q.push(i);
            }
            q.close();
            let mut back = Vec::new();
            while let Some(i) = q.pop_back() {
                back.push(i);
            }
            (worker.join().unwrap(), back)
        });
        let mut all = front.clone();
        all.extend(back.iter().rev());
        assert_eq!(all, (0..100).collect::<Vec<_>>());
        // A dropped closer ends a waiting worker.
        let q: StretchQueue<u8> = StretchQueue::default();
        std::thread::scope(|s| {
            let w = s.spawn(|| q.pop_front());
            drop(q.closer());
            assert_eq!(w.join().unwrap(), None);
        });
    }

    #[test]
    fn both_halves_run_and_a_panic_is_an_error() {
        let data = [1, 2, 3, 4];
        let (a, b) = join(
            || data[..2].iter().sum::<i32>(),
            || data[2..].iter().sum::<i32>(),
        );
        assert_eq!((a, b.unwrap()), (3, 7));
        let (a, b) = join(|| 1, || -> i32 { panic!("worker") });
        assert_eq!(a, 1);
        assert!(b.unwrap_err().to_string().contains("panicked"));
    }
}
