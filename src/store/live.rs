//! Live sessions (SPEC §6.1): the sessions this process is writing.
//!
//! A live session assigns `seq` and `time`, validates each event (lossless
//! JSON, vocabulary, surface rules, the strict turn/step trace), commits it
//! to memory and queues it for write-behind. Appends never wait for disk.
//!
//! A live session holds its id's writer lock from start (or resume, fork)
//! until it is closed, so no other process or store handle writes the id
//! meanwhile. A close whose final drain fails keeps everything: the pending
//! events, the lock, the registration; appends are refused from then on, and
//! `close` (or `flush`) may be retried (reliability D16).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};

use super::coordinator::Shared;
use super::view::{has_open_turn, opens_turn};
use super::write_behind::{BatchSink, ErrorCallback, WriteController};
use crate::backend::{Backend, Expect, Revision, WriterLock, limits};
use crate::codec::chunk_rows::is_row_tag;
use crate::error::{Error, Result};
use crate::model::event::{Event, EventType};
use crate::model::header::SessionHeader;
use crate::model::json::{self, JsonText};
use crate::model::validate::{LogState, check_lossless};
use crate::model::vocabulary;
use crate::plan::PlanFold;

/// Surface options of one append (SPEC §6.1 `append(type, data, options)`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppendOptions {
    /// `"append"` or `{"op":"replace","start":S,"end":E}` as JSON text.
    pub surface_op: Option<String>,
    pub source_event_seqs: Option<Vec<u64>>,
    pub ignorable: bool,
}

impl AppendOptions {
    /// Parses `{surfaceOp?, sourceEventSeqs?, ignorable?}`.
    pub fn parse(text: &str) -> Result<AppendOptions> {
        let fields = json::object_fields(text)
            .map_err(|e| Error::invalid(format!("append options are not a JSON object: {e}")))?;
        let mut o = AppendOptions::default();
        for (k, v) in fields {
            match k.decode().as_ref() {
                "surfaceOp" => {
                    o.surface_op =
                        Some(json::canonicalize(v).map_err(|e| {
                            Error::invalid(format!("append options surfaceOp: {e}"))
                        })?)
                }
                "sourceEventSeqs" => {
                    let items = json::array_items(v).map_err(|_| {
                        Error::invalid(
                            "append options sourceEventSeqs must be an array of integers",
                        )
                    })?;
                    let seqs = items
                        .iter()
                        .map(|i| json::as_safe_uint(i))
                        .collect::<Option<Vec<u64>>>()
                        .ok_or_else(|| {
                            Error::invalid("append options sourceEventSeqs must hold non-negative safe integers")
                        })?;
                    o.source_event_seqs = Some(seqs);
                }
                "ignorable" => match v.trim() {
                    "true" => o.ignorable = true,
                    "false" => o.ignorable = false,
                    _ => {
                        return Err(Error::invalid(
                            "append options ignorable must be true or false",
                        ));
                    }
                },
                other => {
                    return Err(Error::invalid(format!(
                        "append options have unknown key {} — options are {{ surfaceOp, sourceEventSeqs, ignorable }}",
                        json::quote(other)
                    )));
                }
            }
        }
        Ok(o)
    }
}

struct LiveLog {
    events: Vec<Event>,
    /// The rules' fold over `events` (SPEC 1.8/1.9, the same a load runs).
    rules: LogState,
    /// The plan state folded from `events` (SPEC §7).
    plan: PlanFold,
    /// Whether the last turn boundary of `events` is a `turn/start`
    /// ([`has_open_turn`], kept as the log grows: asked per step).
    turn_open: bool,
}

/// A live session's log size count (`maxLogBytes`,
/// [`crate::backend::limits::Limits::check_log_append`]), shared by its
/// appends and its batch writer: the stored log's count (exact, as a read
/// counts it, once the backend has written or read the log) plus the upper
/// bounds of the events not written yet. An append that would bring it over
/// the limit is refused at once, with no disk I/O, rather than acknowledged
/// and then refused by the write-behind batch; and as batches are written
/// the bounds give way to the stored count, so a long session is not
/// refused for the bounds of events long written (a packed chunk stores a
/// fraction of its bound).
#[derive(Debug)]
struct LogCount {
    stored: u64,
    pending: u64,
}

impl LogCount {
    fn total(&self) -> u64 {
        self.stored.saturating_add(self.pending)
    }
}

/// Writes a live session's batches to the backend.
struct LiveSink {
    backend: Arc<dyn Backend>,
    header: SessionHeader,
    /// `None` until the first batch materializes the session (shared
    /// with [`LiveInner`], for the checkpoint at close).
    revision: Arc<Mutex<Option<Revision>>>,
    /// The session's writer lock (shared with [`LiveInner`]), verified
    /// before each batch.
    writer: Arc<Mutex<Option<WriterLock>>>,
    /// The log's size count (shared with [`LiveInner`]).
    count: Arc<Mutex<LogCount>>,
}

impl BatchSink for LiveSink {
    fn write_batch(&self, batch: &[Event]) -> Result<()> {
        // A lock that can be lost while held (PostgreSQL's, with its
        // connection on a server restart) is verified first: without it
        // another writer may hold the session, and nothing is written.
        if let Some(lock) = self.writer.lock().as_ref() {
            lock.check().map_err(|e| {
                Error::io_msg(format!(
                    "live session {} lost its writer lock, so its batch at seq {} was not written (another writer may hold the session now; abandon this session and resume it): {e}",
                    json::quote(&self.header.id),
                    batch.first().map_or(0, |e| e.seq)
                ))
            })?;
        }
        let mut rev = self.revision.lock();
        let expect = match rev.as_ref() {
            None => Expect::New,
            Some(r) => Expect::At(r),
        };
        let new = self.backend.append(&self.header, batch, expect)?;
        let written = limits::log_growth(batch);
        let mut count = self.count.lock();
        count.pending = count.pending.saturating_sub(written);
        count.stored = self
            .backend
            .log_bytes_at(&self.header, &new)
            .unwrap_or(count.stored.saturating_add(written));
        drop(count);
        *rev = Some(new);
        Ok(())
    }
}

pub(crate) struct LiveInner {
    shared: Arc<Shared>,
    header: SessionHeader,
    log: RwLock<LiveLog>,
    ctrl: Arc<WriteController>,
    /// A close began: appends are refused.
    closing: AtomicBool,
    /// A close finished its drain: the id is released.
    closed: AtomicBool,
    /// The id's writer lock, held until the close succeeds (or the last
    /// handle is dropped); shared with the batch writer, which verifies it.
    writer: Arc<Mutex<Option<WriterLock>>>,
    /// The stored revision after the last batch (the batch writer's).
    revision: Arc<Mutex<Option<Revision>>>,
    /// The log's size count (shared with the batch writer).
    count: Arc<Mutex<LogCount>>,
}

/// A session this process is writing. Cheap to clone (a handle); `Send +
/// Sync`: any thread may append, flush or read. Close it to make everything
/// durable; dropping the last handle drains it as a fallback.
#[derive(Clone)]
pub struct LiveSession {
    inner: Arc<LiveInner>,
}

impl LiveSession {
    /// Builds a live session over `history` (events already stored, at
    /// `stored`: its revision and size count) and `seed` (events to persist
    /// with the first batch), holding the id's writer lock `writer`. Refuses
    /// a seed that would bring the new log over `maxLogBytes`.
    pub(crate) fn start(
        shared: Arc<Shared>,
        header: SessionHeader,
        history: Vec<Event>,
        stored: Option<(Revision, u64)>,
        seed: Vec<Event>,
        writer: Option<WriterLock>,
    ) -> Result<LiveSession> {
        let (stored_revision, stored_bytes) = match stored {
            Some((rev, bytes)) => (Some(rev), bytes),
            None => (None, limits::new_log_bytes(&header)),
        };
        if !seed.is_empty() {
            shared
                .config
                .backend
                .limits()
                .check_log_append(stored_bytes, &seed, &header.id)?;
        }
        let count = Arc::new(Mutex::new(LogCount {
            stored: stored_bytes,
            pending: limits::log_growth(&seed),
        }));
        let writer = Arc::new(Mutex::new(writer));
        let revision = Arc::new(Mutex::new(stored_revision));
        let sink = LiveSink {
            backend: shared.backend.clone(),
            header: header.clone(),
            revision: revision.clone(),
            writer: writer.clone(),
            count: count.clone(),
        };
        // Held until the store publishes the session (`release_writes`):
        // a session refused at publication is abandoned with nothing written.
        let ctrl = WriteController::new(
            Box::new(sink),
            Duration::from_millis(shared.config.write_batch_max_delay_ms),
            shared.scheduler.clone(),
        );
        // History and seeds were validated when read (or come from a live
        // session); they are folded, not judged again: a log written before
        // strict mode may not follow the strict trace.
        let mut events = history;
        events.extend(seed.iter().cloned());
        let rules = LogState::fold(&events);
        let plan = PlanFold::of(&events);
        let turn_open = has_open_turn(&events);
        let session = LiveSession {
            inner: Arc::new(LiveInner {
                shared,
                header,
                log: RwLock::new(LiveLog {
                    events,
                    rules,
                    plan,
                    turn_open,
                }),
                ctrl,
                closing: AtomicBool::new(false),
                closed: AtomicBool::new(false),
                writer,
                revision,
                count,
            }),
        };
        if !seed.is_empty() {
            // Cannot fail: the controller is new and open.
            let _ = session.inner.ctrl.enqueue(seed);
        }
        Ok(session)
    }

    pub fn id(&self) -> &str {
        &self.inner.header.id
    }

    pub fn header(&self) -> &SessionHeader {
        &self.inner.header
    }

    pub(crate) fn inner(&self) -> &Arc<LiveInner> {
        &self.inner
    }

    fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::Closed(format!(
                "live session {} is closed",
                json::quote(self.id())
            )));
        }
        if self.inner.closing.load(Ordering::Acquire) {
            return Err(Error::Closed(format!(
                "live session {} is closing and takes no more events; if its close failed, retry close (its pending events are kept)",
                json::quote(self.id())
            )));
        }
        self.inner.shared.check_open()
    }

    /// Appends one event: `data_json` is host JSON (canonicalized), options
    /// as parsed by [`AppendOptions::parse`]. Returns the assigned seq.
    pub fn append(
        &self,
        event_type: &str,
        data_json: &str,
        options: &AppendOptions,
    ) -> Result<u64> {
        let data = check_lossless(event_type, data_json)?;
        self.append_data(event_type, data, options)
    }

    /// Like [`LiveSession::append`] with data that is already canonical.
    pub fn append_data(
        &self,
        event_type: &str,
        data: JsonText,
        options: &AppendOptions,
    ) -> Result<u64> {
        self.check_open()?;
        if event_type.is_empty() {
            return Err(Error::invalid("event type must be a non-empty string"));
        }
        if is_row_tag(event_type)
            || vocabulary::static_name(event_type).is_some() && !vocabulary::is_known(event_type)
        {
            return Err(Error::invalid(format!(
                "event type {} is reserved by the storage format",
                json::quote(event_type)
            )));
        }
        if !options.ignorable && !self.inner.shared.vocab.knows(event_type) {
            return Err(Error::invalid(format!(
                "event type {} is unknown to this harness; mark it ignorable or register it with extraEventTypes",
                json::quote(event_type)
            )));
        }
        let mut log = self.inner.log.write();
        let seq = log.events.len() as u64;
        let time = (self.inner.shared.clock)();
        let mut event = Event::new(EventType::new(event_type), seq, time, data);
        if let Some(op) = &options.surface_op {
            event.set_surface_op(Some(JsonText::from_trusted(op.as_str())));
        }
        if let Some(seqs) = &options.source_event_seqs {
            let text = format!(
                "[{}]",
                seqs.iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            );
            event.set_source_event_seqs(Some(JsonText::from_trusted(text)));
        }
        event.ignorable = options.ignorable;
        // What a reader would refuse, or the writer (the log's size), is
        // refused now, not at the write.
        let limits = self.inner.shared.config.backend.limits();
        limits.check_event(&event, self.id())?;
        // Only this append (under the log's write lock) adds to the count;
        // the batch writer may lower it meanwhile, which keeps this check.
        let total = self.inner.count.lock().total();
        let bound =
            limits.check_log_append(total, std::slice::from_ref(&event), self.id())? - total;
        // Checked and queued in one step of the queue (`admit`): a session
        // closed meanwhile refuses the event before its rules are run, so
        // neither the rule state nor the in-memory log (pushed after) gets
        // ahead of what was queued. The rules are those a load applies (one
        // rule set), with the strict trace every live append keeps (SPEC
        // 1.6); one event, so the state is unchanged when they refuse it.
        // Counted when queued; the batch writer subtracts what it writes.
        let rules = &mut log.rules;
        self.inner.ctrl.admit(|| {
            rules.check_append(
                self.id(),
                &self.inner.shared.vocab,
                true,
                false,
                std::slice::from_ref(&event),
            )?;
            self.inner.count.lock().pending += bound;
            Ok([event.clone()])
        })?;
        log.plan.push(&event);
        if let Some(open) = opens_turn(&event) {
            log.turn_open = open;
        }
        log.events.push(event);
        Ok(seq)
    }

    /// Lets the write queue write by itself (a new session's is held until
    /// the store has published it).
    pub(crate) fn release_writes(&self) {
        self.inner.ctrl.release();
    }

    /// Appends the `session/end-seed` marker that ends a seed (SPEC §1.7).
    pub(crate) fn append_end_seed(&self) -> Result<u64> {
        self.append_data(
            crate::model::seed::END_SEED,
            JsonText::from_trusted("{}"),
            &AppendOptions::default(),
        )
    }

    /// Writes every pending event now (SPEC §6.1 `flush`).
    pub fn flush(&self) -> Result<()> {
        self.inner.ctrl.flush()
    }

    /// Committed events with `seq >= from` (cheap clones).
    pub fn events(&self, from: u64) -> Vec<Event> {
        let log = self.inner.log.read();
        let start = (from.min(log.events.len() as u64)) as usize;
        log.events[start..].to_vec()
    }

    /// All committed events.
    pub fn snapshot(&self) -> Vec<Event> {
        self.events(0)
    }

    /// Number of committed events (the next seq).
    pub fn len(&self) -> u64 {
        self.inner.log.read().events.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the last turn is open.
    pub fn has_open_turn(&self) -> bool {
        self.inner.log.read().turn_open
    }

    /// The plan state folded from the committed events (SPEC §7), kept as
    /// the log grows: no copy or scan of the log.
    pub fn plan_fold(&self) -> PlanFold {
        self.inner.log.read().plan
    }

    /// The model-visible transcript (SPEC §1.5 `derive_messages`), from the
    /// surface the rules keep as the log grows (the same fold, without a
    /// pass over every event: asked per request).
    pub fn messages(&self) -> Vec<JsonText> {
        self.inner.log.read().rules.messages()
    }

    /// The unresolved background write error, if any.
    pub fn background_error(&self) -> Option<Error> {
        self.inner.ctrl.background_error()
    }

    /// Told once per failure episode of a background write.
    pub fn set_error_callback(&self, cb: Option<ErrorCallback>) {
        self.inner.ctrl.set_error_callback(cb);
    }

    /// Events not yet durable.
    pub fn pending_len(&self) -> usize {
        self.inner.ctrl.pending_len()
    }

    /// (batches, events) written so far.
    pub fn written(&self) -> (u64, u64) {
        self.inner.ctrl.written()
    }

    /// Final drain, then releases the id (and its writer lock). Safe to
    /// call twice. When the drain fails, the error is returned and nothing
    /// is released: the pending events stay queued, appends are refused,
    /// and `close` may be called again to retry the drain.
    pub fn close(&self) -> Result<()> {
        self.inner.close()
    }

    /// Gives up on a session whose close failed: drops the events not yet
    /// durable (returns how many), releases the id and its writer lock.
    /// Nothing is written.
    pub fn abandon(&self) -> usize {
        let dropped = self.inner.ctrl.discard();
        self.inner.closing.store(true, Ordering::Release);
        if !self.inner.closed.swap(true, Ordering::AcqRel) {
            drop(self.inner.writer.lock().take());
            self.inner
                .shared
                .unregister_live(&self.inner.header.id, &self.inner);
        }
        dropped
    }
}

impl LiveInner {
    pub(crate) fn close(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Ok(());
        }
        self.closing.store(true, Ordering::Release);
        // On failure: pending events, lock and registration are kept.
        self.ctrl.close()?;
        if !self.closed.swap(true, Ordering::AcqRel) {
            // Everything is durable: the append state for a later cold
            // append in a fresh process (still under the writer lock).
            let revision = self.revision.lock().clone();
            if let Some(revision) = revision {
                let (next, rules) = {
                    let log = self.log.read();
                    (log.events.len() as u64, log.rules.clone())
                };
                self.shared.save_checkpoint(
                    &self.header.id,
                    self.header.clone(),
                    revision,
                    next,
                    rules,
                );
            }
            drop(self.writer.lock().take());
            self.shared.unregister_live(&self.header.id, self);
        }
        Ok(())
    }

    pub(crate) fn flush(&self) -> Result<()> {
        self.ctrl.flush()
    }

    pub(crate) fn snapshot(&self) -> Vec<Event> {
        self.log.read().events.clone()
    }

    pub(crate) fn header(&self) -> &SessionHeader {
        &self.header
    }
}

impl Drop for LiveInner {
    fn drop(&mut self) {
        if !self.closed.load(Ordering::Acquire) {
            let _ = self.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key of the options object, each value form, and each refusal
    /// with what it names (the C ABI's and the bindings' text path).
    #[test]
    fn append_options_parse_every_key_and_name_every_refusal() {
        assert_eq!(
            AppendOptions::parse("{}").unwrap(),
            AppendOptions::default()
        );
        let all = AppendOptions::parse(
            r#"{"surfaceOp": {"op":"replace", "start":1,"end":2}, "sourceEventSeqs":[3, 0],
               "ignorable": true}"#,
        )
        .unwrap();
        assert_eq!(
            all,
            AppendOptions {
                surface_op: Some(r#"{"op":"replace","start":1,"end":2}"#.into()),
                source_event_seqs: Some(vec![3, 0]),
                ignorable: true,
            }
        );
        let plain = AppendOptions::parse(r#"{"surfaceOp":"append","ignorable":false}"#).unwrap();
        assert_eq!(plain.surface_op.as_deref(), Some(r#""append""#));
        assert!(!plain.ignorable);
        // The last of a repeated key wins, as in JSON.parse.
        assert!(
            !AppendOptions::parse(r#"{"ignorable":true,"ignorable":false}"#)
                .unwrap()
                .ignorable
        );
        for (text, names) in [
            ("[]", "append options are not a JSON object"),
            (r#"{"x":1}"#, r#"append options have unknown key "x""#),
            (r#"{"ignorable":1}"#, "ignorable must be true or false"),
            (r#"{"ignorable":"true"}"#, "ignorable must be true or false"),
            (
                r#"{"sourceEventSeqs":1}"#,
                "sourceEventSeqs must be an array",
            ),
            (r#"{"sourceEventSeqs":[-1]}"#, "non-negative safe integers"),
            (r#"{"sourceEventSeqs":[1.5]}"#, "non-negative safe integers"),
            (
                r#"{"sourceEventSeqs":[9007199254740992]}"#,
                "non-negative safe integers",
            ),
        ] {
            let err = AppendOptions::parse(text).unwrap_err();
            assert_eq!(
                err.kind(),
                crate::error::ErrorKind::InvalidArgument,
                "{text}"
            );
            assert!(err.to_string().contains(names), "{text}: {err}");
        }
    }
}
