//! Write-behind batching of a live session (SPEC §6.1).
//!
//! Appends only queue events in memory; a [`WriteController`] turns them
//! into durable batches:
//!
//! - the first pending event arms a fixed deadline (`writeBatchMaxDelayMs`);
//!   later events join without moving it;
//! - at the deadline the pending events are written as **one** batch, on a
//!   background thread; events arriving during that write form the next
//!   batch with their own deadline (if it passed during the write, the next
//!   write starts right after);
//! - `flush()` writes until nothing is pending, joining a write in flight;
//!   it returns the write error if a write fails;
//! - a failed background write keeps its events at the front of the queue,
//!   records the error (retrievable, reported once through the callback) and
//!   pauses automatic retry until the next append; `flush()` and `close()`
//!   retry at once;
//! - a new controller is held: it arms no deadline until `release` (the
//!   store releases a live session's once it has published the session);
//!   `flush()` and `close()` write regardless.
//!
//! One [`Scheduler`] thread per store drives the deadlines.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};
use crate::model::event::Event;

/// Where a controller writes its batches.
pub trait BatchSink: Send + Sync {
    /// Durably writes one contiguous batch. Called with no controller lock
    /// held, never concurrently for one controller.
    fn write_batch(&self, batch: &[Event]) -> Result<()>;
}

/// Called once per failure episode of a background write.
pub type ErrorCallback = Arc<dyn Fn(&Error) + Send + Sync>;

#[derive(Default)]
struct State {
    pending: Vec<Event>,
    deadline: Option<Instant>,
    writing: bool,
    paused: bool,
    /// From [`WriteController::new`] until [`WriteController::release`]:
    /// events queue, but no deadline is armed (flush and close still write).
    held: bool,
    closed: bool,
    error: Option<Error>,
    error_reported: bool,
    batches_written: u64,
    events_written: u64,
}

/// The write-behind queue of one live session.
pub struct WriteController {
    state: Mutex<State>,
    done: Condvar,
    delay: Duration,
    sink: Box<dyn BatchSink>,
    scheduler: Arc<Scheduler>,
    on_error: Mutex<Option<ErrorCallback>>,
    me: Weak<WriteController>,
}

impl WriteController {
    /// A controller that writes nothing by itself until [`release`]d (a
    /// flush or close still writes): a new live session queues its seed
    /// before it is published, and a session refused at publication (then
    /// discarded) must leave nothing written.
    ///
    /// [`release`]: WriteController::release
    pub fn new(sink: Box<dyn BatchSink>, delay: Duration, scheduler: Arc<Scheduler>) -> Arc<Self> {
        let state = State {
            held: true,
            ..State::default()
        };
        Arc::new_cyclic(|me| WriteController {
            state: Mutex::new(state),
            done: Condvar::new(),
            delay,
            sink,
            scheduler,
            on_error: Mutex::new(None),
            me: me.clone(),
        })
    }

    /// Sets the callback told about background write failures.
    pub fn set_error_callback(&self, cb: Option<ErrorCallback>) {
        *self.on_error.lock() = cb;
    }

    /// Queues events. Never touches the disk.
    pub fn enqueue(&self, events: impl IntoIterator<Item = Event>) -> Result<()> {
        self.admit(|| Ok(events))
    }

    /// Queues the events `decide` returns, deciding under the queue's lock:
    /// a closed queue refuses before `decide` runs, and a close cannot come
    /// between the two. So whatever `decide` commits (the live session's
    /// rule state) is committed exactly when its events are queued: a
    /// refused append leaves no trace for the next append, or for the
    /// append state saved at close, to trip on. `decide` must not block (it
    /// runs the rule checks of one append); an error from it queues nothing.
    pub fn admit<I: IntoIterator<Item = Event>>(
        &self,
        decide: impl FnOnce() -> Result<I>,
    ) -> Result<()> {
        let mut st = self.state.lock();
        if st.closed {
            return Err(Error::Closed("the live session is closed".into()));
        }
        let events = decide()?;
        let before = st.pending.len();
        st.pending.extend(events);
        if st.pending.len() == before {
            return Ok(());
        }
        if st.paused || st.deadline.is_none() {
            st.paused = false;
            self.arm(st);
        }
        Ok(())
    }

    /// Arms the deadline of the pending events (not while held).
    fn arm(&self, mut st: parking_lot::MutexGuard<'_, State>) {
        if st.held {
            return;
        }
        let at = Instant::now() + self.delay;
        st.deadline = Some(at);
        drop(st);
        self.scheduler.schedule(at, self.me.clone());
    }

    /// Ends the hold of [`WriteController::new`]: events queued
    /// meanwhile get their deadline now.
    pub fn release(&self) {
        let mut st = self.state.lock();
        if !st.held {
            return;
        }
        st.held = false;
        if !st.closed && !st.pending.is_empty() && st.deadline.is_none() {
            self.arm(st);
        }
    }

    /// Writes until nothing is pending (events arriving meanwhile included).
    pub fn flush(&self) -> Result<()> {
        let mut st = self.state.lock();
        loop {
            if st.writing {
                self.done.wait(&mut st);
                continue;
            }
            if st.pending.is_empty() {
                return Ok(());
            }
            st.paused = false;
            self.write_once(&mut st)?;
        }
    }

    /// Stops admitting events and drains (final flush).
    pub fn close(&self) -> Result<()> {
        self.state.lock().closed = true;
        self.flush()
    }

    /// Stops admitting events and drops the pending ones (a host that gives
    /// up after a failed close). Waits for a write in flight.
    pub fn discard(&self) -> usize {
        let mut st = self.state.lock();
        st.closed = true;
        while st.writing {
            self.done.wait(&mut st);
        }
        st.deadline = None;
        std::mem::take(&mut st.pending).len()
    }

    /// The last background write error, while it is unresolved.
    pub fn background_error(&self) -> Option<Error> {
        self.state.lock().error.clone()
    }

    /// Number of events not yet durable.
    pub fn pending_len(&self) -> usize {
        self.state.lock().pending.len()
    }

    /// (batches, events) written so far.
    pub fn written(&self) -> (u64, u64) {
        let st = self.state.lock();
        (st.batches_written, st.events_written)
    }

    /// Called by the scheduler when a deadline may have passed.
    fn on_deadline(&self) {
        let mut st = self.state.lock();
        loop {
            let due = st.deadline.is_some_and(|d| d <= Instant::now());
            if st.writing || st.paused || st.pending.is_empty() || !due {
                return;
            }
            if self.write_once(&mut st).is_err() {
                return;
            }
        }
    }

    /// Writes the whole pending queue as one batch, releasing the lock
    /// around the write. On failure the batch goes back to the front.
    fn write_once(&self, st: &mut parking_lot::MutexGuard<'_, State>) -> Result<()> {
        let batch = std::mem::take(&mut st.pending);
        st.deadline = None;
        st.writing = true;
        let result = parking_lot::MutexGuard::unlocked(st, || {
            // A panicking sink must not leave `writing` set (every later
            // flush and close would wait forever, and a panic on the timer
            // thread would end it): it becomes a failed write, so the batch
            // is kept and the error reported like any other.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.sink.write_batch(&batch)
            }))
            .unwrap_or_else(|payload| {
                let what = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a non-text payload".into());
                Err(Error::invariant(format!("a batch write panicked: {what}")))
            })
        });
        st.writing = false;
        let outcome = match result {
            Ok(()) => {
                st.batches_written += 1;
                st.events_written += batch.len() as u64;
                st.error = None;
                st.error_reported = false;
                // Events that arrived during the write armed their own
                // deadline through `enqueue`; nothing else to do.
                Ok(())
            }
            Err(e) => {
                let mut rest = std::mem::take(&mut st.pending);
                st.pending = batch;
                st.pending.append(&mut rest);
                st.paused = true;
                st.deadline = None;
                st.error = Some(e.clone());
                if !st.error_reported {
                    st.error_reported = true;
                    if let Some(cb) = self.on_error.lock().clone() {
                        parking_lot::MutexGuard::unlocked(st, || cb(&e));
                    }
                }
                Err(e)
            }
        };
        self.done.notify_all();
        outcome
    }
}

// ---------------------------------------------------------------------------

struct Entry {
    at: Instant,
    order: u64,
    ctrl: Weak<WriteController>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.order) == (other.at, other.order)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.order).cmp(&(other.at, other.order))
    }
}

#[derive(Default)]
struct SchedState {
    heap: BinaryHeap<Reverse<Entry>>,
    stop: bool,
}

/// One timer thread per store: fires deadlines and runs each due write on a
/// short-lived worker thread, so one slow disk write never delays another
/// session's deadline. The thread starts with the first deadline (a store
/// that only reads never starts it).
pub struct Scheduler {
    state: Arc<(Mutex<SchedState>, Condvar)>,
    order: AtomicU64,
    thread: Mutex<TimerThread>,
}

enum TimerThread {
    NotStarted,
    Running(JoinHandle<()>),
    Stopped,
}

impl Scheduler {
    pub fn start() -> Arc<Scheduler> {
        Arc::new(Scheduler {
            state: Arc::default(),
            order: AtomicU64::new(0),
            thread: Mutex::new(TimerThread::NotStarted),
        })
    }

    fn schedule(&self, at: Instant, ctrl: Weak<WriteController>) {
        {
            let (lock, cv) = &*self.state;
            let mut st = lock.lock();
            st.heap.push(Reverse(Entry {
                at,
                order: self.order.fetch_add(1, Ordering::Relaxed),
                ctrl,
            }));
            cv.notify_one();
        }
        self.start_thread();
    }

    /// Starts the timer thread unless it runs or was stopped. When no
    /// thread can be started, the deadlines stay queued: the next flush or
    /// append writes the events, and the next deadline tries again.
    fn start_thread(&self) {
        let mut thread = self.thread.lock();
        if !matches!(*thread, TimerThread::NotStarted) {
            return;
        }
        let st = self.state.clone();
        match std::thread::Builder::new()
            .name("dsh-persist-timer".into())
            .spawn(move || Scheduler::run(&st))
        {
            Ok(h) => *thread = TimerThread::Running(h),
            Err(e) => eprintln!("dsh-persist: could not start the write-behind timer thread: {e}"),
        }
    }

    fn run(state: &(Mutex<SchedState>, Condvar)) {
        let (lock, cv) = state;
        let mut st = lock.lock();
        loop {
            if st.stop {
                return;
            }
            let next_at = st.heap.peek().map(|Reverse(e)| e.at);
            match next_at {
                None => cv.wait(&mut st),
                Some(at) if at > Instant::now() => {
                    cv.wait_until(&mut st, at);
                }
                Some(_) => {
                    let Some(Reverse(entry)) = st.heap.pop() else {
                        continue;
                    };
                    if let Some(ctrl) = entry.ctrl.upgrade() {
                        let spawned = std::thread::Builder::new()
                            .name("dsh-persist-write".into())
                            .spawn(move || ctrl.on_deadline());
                        if let Err(e) = spawned {
                            // No thread available: the events stay pending
                            // and the next flush or append writes them.
                            eprintln!("dsh-persist: could not start a write thread: {e}");
                        }
                    }
                }
            }
        }
    }

    /// Stops the timer thread (pending deadlines are dropped; live sessions
    /// are drained by the store before this).
    pub fn stop(&self) {
        {
            let (lock, cv) = &*self.state;
            lock.lock().stop = true;
            cv.notify_all();
        }
        let thread = std::mem::replace(&mut *self.thread.lock(), TimerThread::Stopped);
        if let TimerThread::Running(h) = thread {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::event::EventType;
    use crate::model::json::JsonText;
    use std::sync::atomic::AtomicUsize;

    /// Records batches; can be told to fail or to block until released.
    #[derive(Default)]
    struct Sink {
        batches: Mutex<Vec<Vec<u64>>>,
        fail_next: AtomicUsize,
        gate: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
        entered: Mutex<Option<std::sync::mpsc::Sender<()>>>,
    }

    impl BatchSink for Arc<Sink> {
        fn write_batch(&self, batch: &[Event]) -> Result<()> {
            if let Some(tx) = self.entered.lock().as_ref() {
                let _ = tx.send(());
            }
            if let Some(rx) = self.gate.lock().as_ref() {
                let _ = rx.recv();
            }
            if self.fail_next.load(Ordering::SeqCst) > 0 {
                self.fail_next.fetch_sub(1, Ordering::SeqCst);
                return Err(Error::io_msg("disk full (test)"));
            }
            self.batches
                .lock()
                .push(batch.iter().map(|e| e.seq).collect());
            Ok(())
        }
    }

    fn ev(seq: u64) -> Event {
        Event::new(
            EventType::new("todo/write"),
            seq,
            0,
            JsonText::from_trusted("{}"),
        )
    }

    fn controller(delay_ms: u64) -> (Arc<Sink>, Arc<WriteController>) {
        let sink = Arc::new(Sink::default());
        let c = WriteController::new(
            Box::new(sink.clone()),
            Duration::from_millis(delay_ms),
            Scheduler::start(),
        );
        c.release();
        (sink, c)
    }

    /// Waits (bounded, so a deadline that never fires fails the test
    /// instead of hanging it) for the sink to enter a write.
    fn started(entered: &std::sync::mpsc::Receiver<()>) {
        entered
            .recv_timeout(Duration::from_secs(10))
            .expect("no batch write started within 10 s");
    }

    fn wait_for(cond: impl Fn() -> bool) {
        let start = Instant::now();
        while !cond() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "condition not reached"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn admit_decides_under_the_queue_and_a_closed_queue_runs_nothing() {
        let (sink, c) = controller(60_000);
        let e = c
            .admit(|| -> Result<[Event; 1]> { Err(Error::invalid("refused (test)")) })
            .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
        assert_eq!(c.pending_len(), 0, "a refusal queues nothing");
        c.admit(|| Ok([ev(0)])).unwrap();
        assert_eq!(c.pending_len(), 1);
        c.close().unwrap();
        assert_eq!(*sink.batches.lock(), vec![vec![0]]);
        let mut ran = false;
        let e = c
            .admit(|| {
                ran = true;
                Ok([ev(1)])
            })
            .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Closed);
        assert!(!ran, "a closed queue refuses before deciding");
        assert_eq!(c.pending_len(), 0);
    }

    #[test]
    fn a_held_queue_writes_only_after_release_or_when_flushed() {
        let sink = Arc::new(Sink::default());
        let held = |sink: &Arc<Sink>| {
            WriteController::new(
                Box::new(sink.clone()),
                Duration::from_millis(0),
                Scheduler::start(),
            )
        };
        let c = held(&sink);
        c.enqueue([ev(0), ev(1)]).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        assert!(sink.batches.lock().is_empty(), "no deadline while held");
        c.release();
        wait_for(|| !sink.batches.lock().is_empty());
        assert_eq!(*sink.batches.lock(), vec![vec![0, 1]]);
        // Held, a flush still writes; discarded, nothing is written.
        let (sink2, sink3) = (Arc::new(Sink::default()), Arc::new(Sink::default()));
        let c = held(&sink2);
        c.enqueue([ev(0)]).unwrap();
        c.flush().unwrap();
        assert_eq!(*sink2.batches.lock(), vec![vec![0]]);
        let c = held(&sink3);
        c.enqueue([ev(0)]).unwrap();
        assert_eq!(c.discard(), 1);
        c.release();
        std::thread::sleep(Duration::from_millis(30));
        assert!(sink3.batches.lock().is_empty());
    }

    /// A queue released with nothing queued (a new session without a
    /// seed) arms no deadline: its first append, however much later, arms
    /// its own and is written by itself. (A deadline armed at the release
    /// would pass with nothing to write, and the append after it would
    /// find a deadline set and never arm one.)
    #[test]
    fn a_queue_released_empty_writes_its_first_append_by_itself() {
        let (sink, c) = controller(10);
        std::thread::sleep(Duration::from_millis(50));
        c.enqueue([ev(0)]).unwrap();
        wait_for(|| !sink.batches.lock().is_empty());
        assert_eq!(*sink.batches.lock(), vec![vec![0]]);
    }

    /// A flush leaves its deadline scheduled; when that stale deadline
    /// passes, events queued after the flush wait for their own. (The
    /// check is skipped if this thread was held up past the new deadline.)
    #[test]
    fn a_superseded_deadline_does_not_write_early() {
        let (sink, c) = controller(400);
        c.enqueue([ev(0)]).unwrap();
        c.flush().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let armed = Instant::now();
        c.enqueue([ev(1)]).unwrap(); // its deadline: about armed + 400 ms
        std::thread::sleep(Duration::from_millis(200)); // the stale one passed
        let seen = sink.batches.lock().clone();
        if armed.elapsed() < Duration::from_millis(400) {
            assert_eq!(seen, vec![vec![0]], "written before its own deadline");
        }
        wait_for(|| sink.batches.lock().len() == 2);
        assert_eq!(*sink.batches.lock(), vec![vec![0], vec![1]]);
    }

    #[test]
    fn appends_inside_one_window_make_one_batch() {
        let (sink, c) = controller(40);
        for s in 0..5 {
            c.enqueue([ev(s)]).unwrap();
        }
        assert!(
            sink.batches.lock().is_empty(),
            "nothing is written before the deadline"
        );
        wait_for(|| !sink.batches.lock().is_empty());
        assert_eq!(*sink.batches.lock(), vec![vec![0, 1, 2, 3, 4]]);
        assert_eq!(c.written(), (1, 5));
    }

    #[test]
    fn events_arriving_during_a_slow_write_form_the_next_batch() {
        let (sink, c) = controller(0);
        let (gate_tx, gate_rx) = std::sync::mpsc::channel();
        let (in_tx, in_rx) = std::sync::mpsc::channel();
        *sink.gate.lock() = Some(gate_rx);
        *sink.entered.lock() = Some(in_tx);
        c.enqueue([ev(0), ev(1)]).unwrap();
        started(&in_rx); // first write is in flight
        c.enqueue([ev(2)]).unwrap();
        c.enqueue([ev(3)]).unwrap();
        gate_tx.send(()).unwrap();
        started(&in_rx); // follow-up write started
        gate_tx.send(()).unwrap();
        wait_for(|| sink.batches.lock().len() == 2);
        assert_eq!(*sink.batches.lock(), vec![vec![0, 1], vec![2, 3]]);
    }

    #[test]
    fn flush_writes_everything_now() {
        let (sink, c) = controller(60_000);
        c.enqueue([ev(0), ev(1)]).unwrap();
        c.flush().unwrap();
        assert_eq!(*sink.batches.lock(), vec![vec![0, 1]]);
        c.flush().unwrap();
        assert_eq!(
            sink.batches.lock().len(),
            1,
            "an empty flush writes nothing"
        );
    }

    #[test]
    fn concurrent_flushes_join_one_barrier() {
        let (sink, c) = controller(60_000);
        for s in 0..10 {
            c.enqueue([ev(s)]).unwrap();
        }
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || c.flush())
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        let all: Vec<u64> = sink.batches.lock().iter().flatten().copied().collect();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        assert_eq!(c.pending_len(), 0);
    }

    #[test]
    fn failure_keeps_events_pauses_and_reports_once() {
        let (sink, c) = controller(0);
        let reports = Arc::new(AtomicUsize::new(0));
        let r2 = reports.clone();
        c.set_error_callback(Some(Arc::new(move |_| {
            r2.fetch_add(1, Ordering::SeqCst);
        })));
        sink.fail_next.store(1, Ordering::SeqCst);
        c.enqueue([ev(0), ev(1)]).unwrap();
        wait_for(|| c.background_error().is_some());
        assert_eq!(reports.load(Ordering::SeqCst), 1);
        assert_eq!(c.pending_len(), 2, "failed events stay queued");
        std::thread::sleep(Duration::from_millis(30));
        assert!(
            sink.batches.lock().is_empty(),
            "no automatic retry while paused"
        );
        // The next append re-arms a window; the retry writes old + new in order.
        c.enqueue([ev(2)]).unwrap();
        wait_for(|| !sink.batches.lock().is_empty());
        assert_eq!(*sink.batches.lock(), vec![vec![0, 1, 2]]);
        assert!(c.background_error().is_none());
    }

    #[test]
    fn flush_returns_the_error_and_retries_at_once() {
        let (sink, c) = controller(60_000);
        sink.fail_next.store(1, Ordering::SeqCst);
        c.enqueue([ev(0)]).unwrap();
        let e = c.flush().unwrap_err();
        assert!(e.to_string().contains("disk full"));
        assert_eq!(c.pending_len(), 1);
        c.flush().unwrap();
        assert_eq!(*sink.batches.lock(), vec![vec![0]]);
    }

    #[test]
    fn close_drains_and_refuses_more() {
        let (sink, c) = controller(60_000);
        c.enqueue([ev(0), ev(1), ev(2)]).unwrap();
        c.close().unwrap();
        assert_eq!(*sink.batches.lock(), vec![vec![0, 1, 2]]);
        assert!(matches!(c.enqueue([ev(3)]), Err(Error::Closed(_))));
    }

    /// The timer thread ends before `stop` returns, and when the last
    /// handle on the scheduler is dropped without `stop` (a store dropped
    /// unclosed): no thread outlives its store. The thread holds the only
    /// other reference to the scheduler's state, so the count tells.
    #[test]
    fn the_timer_thread_ends_with_stop_and_with_drop() {
        for by_drop in [false, true] {
            let s = Scheduler::start();
            s.schedule(Instant::now() + Duration::from_secs(3600), Weak::new());
            assert!(matches!(*s.thread.lock(), TimerThread::Running(_)));
            let state = s.state.clone();
            assert_eq!(Arc::strong_count(&state), 3, "the thread holds one");
            if by_drop {
                drop(s);
            } else {
                s.stop();
                assert!(matches!(*s.thread.lock(), TimerThread::Stopped));
                // A stopped scheduler starts no thread again.
                s.schedule(Instant::now(), Weak::new());
                assert!(matches!(*s.thread.lock(), TimerThread::Stopped));
            }
            assert_eq!(
                Arc::strong_count(&state),
                if by_drop { 1 } else { 2 },
                "by drop {by_drop}: the timer thread still runs"
            );
        }
    }
}
