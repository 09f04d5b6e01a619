//! Two halves of a large read on two threads.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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

/// `f` of every item of `items`: with `two_threads`, on this thread and a
/// worker (as [`join`]), each taking the next item not yet taken; else
/// on this thread, one after the other. The results in
/// the order of `items`; or, when an item fails, the error of the first
/// failed item in that order, the one a plain loop would return: items are
/// taken in order and every item taken is finished, so each item before a
/// failed one has run. After a failure no new item is taken.
pub fn map_in_order<T, R, F>(items: &[T], two_threads: bool, f: F) -> Result<Vec<R>>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> Result<R> + Sync,
{
    if !two_threads || items.len() < 2 {
        return items.iter().map(&f).collect();
    }
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let run = || {
        let mut done = Vec::new();
        while !failed.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            let r = f(item);
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            done.push((i, r));
        }
        done
    };
    let (mut all, theirs) = join(run, run);
    all.extend(theirs?);
    all.sort_unstable_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

/// For each item its `held` value (`held[i]` for `items[i]`), or, where
/// it has none, `f(item)`: the items without one go through
/// [`map_in_order`] (on two threads with `two_threads`, when two or more
/// are left). The values in the order of `items`; or the error of the
/// first failed item, as [`map_in_order`] returns it.
pub fn fill_in_order<T, R, F>(
    items: &[T],
    held: Vec<Option<R>>,
    two_threads: bool,
    f: F,
) -> Result<Vec<R>>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> Result<R> + Sync,
{
    let missing: Vec<&T> = items
        .iter()
        .zip(&held)
        .filter(|(_, held)| held.is_none())
        .map(|(item, _)| item)
        .collect();
    let mut made = map_in_order(&missing, two_threads, |item| f(item))?.into_iter();
    held.into_iter()
        .map(|held| match held {
            Some(value) => Ok(value),
            None => made
                .next()
                .ok_or_else(|| Error::invariant("an item's read went missing")),
        })
        .collect()
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
    fn map_in_order_keeps_the_order_of_the_items() {
        let items: Vec<u64> = (0..1000).collect();
        let got = map_in_order(&items, true, |i| Ok(i * 3)).unwrap();
        assert_eq!(got, items.iter().map(|i| i * 3).collect::<Vec<_>>());
        assert!(
            map_in_order(&[] as &[u64], true, |i| Ok(*i))
                .unwrap()
                .is_empty()
        );
        assert_eq!(map_in_order(&[7u64], true, |i| Ok(*i)).unwrap(), vec![7]);
    }

    #[test]
    fn map_in_order_fails_with_the_first_failed_item_as_a_loop_would() {
        let items: Vec<u64> = (0..400).collect();
        for _ in 0..20 {
            let err = map_in_order(&items, true, |i| {
                // Item 150 fails late: the other thread has run on to
                // the later failures by then.
                if *i == 150 {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                if *i == 150 || *i >= 300 {
                    return Err(Error::corruption(format!("item {i}")));
                }
                std::thread::yield_now();
                Ok(*i)
            })
            .unwrap_err();
            assert_eq!(err.to_string(), Error::corruption("item 150").to_string());
        }
    }

    #[test]
    fn fill_in_order_calls_f_only_for_items_without_a_held_value() {
        let items: Vec<u64> = (0..100).collect();
        let held: Vec<Option<u64>> = items
            .iter()
            .map(|i| (i % 3 == 0).then_some(1000 + i))
            .collect();
        let calls = AtomicUsize::new(0);
        let got = fill_in_order(&items, held, true, |i| {
            calls.fetch_add(1, Ordering::Relaxed);
            assert!(i % 3 != 0, "f called for held item {i}");
            Ok(2000 + i)
        })
        .unwrap();
        let want: Vec<u64> = items
            .iter()
            .map(|i| if i % 3 == 0 { 1000 + i } else { 2000 + i })
            .collect();
        assert_eq!(got, want);
        assert_eq!(calls.load(Ordering::Relaxed), 66);
        // The first failing item's error, as a loop over the rest gives it.
        let held: Vec<Option<u64>> = items.iter().map(|_| None).collect();
        let err = fill_in_order(&items, held, true, |i| {
            if *i == 40 || *i == 70 {
                return Err(Error::corruption(format!("item {i}")));
            }
            Ok(*i)
        })
        .unwrap_err();
        assert_eq!(err.to_string(), Error::corruption("item 40").to_string());
    }

    #[test]
    fn map_in_order_carries_the_cancel_token_to_its_worker() {
        let token = crate::store::cancel::Cancel::new();
        token.cancel();
        let items: Vec<u64> = (0..50).collect();
        // Only the worker checks the token: the call fails only if the
        // worker sees it (this thread sleeps, so the worker takes items).
        let on_worker = || std::thread::current().name() == Some("dsh-read");
        let got = token.scope(|| {
            map_in_order(&items, true, |i| {
                if on_worker() {
                    crate::store::cancel::checkpoint()?;
                } else {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                Ok(*i)
            })
        });
        assert!(matches!(got, Err(Error::Cancelled(_))), "{got:?}");
        // Without two threads, nothing runs on a worker.
        let one = token.scope(|| {
            map_in_order(&items, false, |i| {
                assert!(!on_worker());
                Ok(*i)
            })
        });
        assert_eq!(one.unwrap(), items);
    }

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
