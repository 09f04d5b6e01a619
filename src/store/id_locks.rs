//! Per-session-id serialization: operations on one id run one at a time,
//! operations on different ids run concurrently.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::{Mutex, RawMutex, lock_api::ArcMutexGuard};

/// A map of per-id mutexes, created on demand and dropped when unused.
#[derive(Default)]
pub struct IdLocks {
    map: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

/// Holds one id's lock; releases it (and forgets an unused entry) on drop.
pub struct IdGuard<'a> {
    locks: &'a IdLocks,
    id: String,
    guard: Option<ArcMutexGuard<RawMutex, ()>>,
}

impl IdLocks {
    /// Blocks until `id` is free, then holds it.
    pub fn lock(&self, id: &str) -> IdGuard<'_> {
        let m = self.map.lock().entry(id.to_string()).or_default().clone();
        IdGuard {
            locks: self,
            id: id.to_string(),
            guard: Some(m.lock_arc()),
        }
    }
}

impl Drop for IdGuard<'_> {
    fn drop(&mut self) {
        if let Some(g) = self.guard.take() {
            let m = ArcMutexGuard::mutex(&g).clone();
            drop(g);
            let mut map = self.locks.map.lock();
            // Ours plus the map's: nobody else waits for this id.
            if Arc::strong_count(&m) == 2 {
                map.remove(&self.id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_per_id_and_entries_are_dropped() {
        let locks = Arc::new(IdLocks::default());
        let counter = Arc::new(Mutex::new((0u32, 0u32))); // (inside, max inside)
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (locks, counter) = (locks.clone(), counter.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let _g = locks.lock("same");
                        let mut c = counter.lock();
                        c.0 += 1;
                        c.1 = c.1.max(c.0);
                        drop(c);
                        std::thread::yield_now();
                        counter.lock().0 -= 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(counter.lock().1, 1);
        assert!(locks.map.lock().is_empty());
        let _a = locks.lock("a");
        let _b = locks.lock("b"); // different ids do not block each other
    }
}
