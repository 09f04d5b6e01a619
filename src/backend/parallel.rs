//! Two halves of a large read on two threads.

use std::sync::Mutex;

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
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("dsh-read".into())
            .spawn_scoped(scope, || take().map(|f| f()));
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

#[cfg(test)]
mod tests {
    use super::*;

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
