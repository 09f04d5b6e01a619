//! The store: one opened backend plus the coordinator around it (SPEC §6).
//!
//! - Operations on one session id are serialized; different ids run
//!   concurrently.
//! - Cold sessions are read, converted (§1.9), validated (§1.8) and closed
//!   (§5). `inspect` keeps the closers in memory; `load` and `prepare` commit
//!   the repair. Up to `preparedSessionCacheSize` cold inspections are kept
//!   and reused only while their revision is current.
//! - Live sessions are registered by id; an id that is stored, live,
//!   created or reserved cannot be created again.
//! - **One writer per id** (across processes and store handles): every write
//!   runs under the backend's writer lock of the id ([`Backend::lock_writer`]).
//!   A live session (start, resume, fork) holds it for its whole life; a
//!   cold `append` (materializing a created session included) and a repair
//!   (`load`, `prepare`) hold it for the call. A second writer gets `busy`
//!   (`conflict` when it would create the id).
//! - **Readers never repair under a writer.** `load` of an id another
//!   writer holds writes nothing: it returns the durable log when that is
//!   balanced, else `busy`. `inspect`, `read_from`, `read_raw`, `list` take
//!   no lock and treat the incomplete last write of a live writer as not
//!   there yet (no closers, nothing recovered from it).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::append_checkpoint;
use super::cache::{Inspection, InspectionCache};
use super::cancel::{Cancel, checkpoint, shield};
use super::cold_fold::{ColdReadCounters, ColdReads, TailFold};
use super::config::StoreConfig;
use super::id_locks::IdLocks;
use super::live::{LiveInner, LiveSession};
use super::view::SessionView;
use super::write_behind::Scheduler;
use crate::backend::{Backend, BackendKind, Expect, Location, RawArtifact, Revision, WriterLock};
use crate::error::{Error, Result};
use crate::model::event::Event;
use crate::model::header::{SessionHeader, now_ms};
use crate::model::json::{self, quote};
use crate::model::seed;
use crate::model::session_list::SessionList;
use crate::model::validate::{LogState, check_lossless, read_from_view, session_view};
use crate::model::vocabulary::Vocabulary;
use crate::store::view::has_open_turn;

/// Milliseconds since the epoch, as event `time` is assigned.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

#[derive(Default)]
struct Registry {
    live: HashMap<String, Weak<LiveInner>>,
    /// `create`d, not yet materialized.
    created: HashMap<String, SessionHeader>,
    /// Prepared (resume), not yet published or released.
    reserved: HashSet<String>,
}

/// What the store keeps to append to a cold session without re-reading it.
#[derive(Clone)]
struct Tail {
    revision: Revision,
    next_seq: u64,
    header: SessionHeader,
    /// The rules' fold over the stored log (as a load converts it).
    rules: LogState,
    /// Whether this tail is the persisted checkpoint as it is on disk
    /// (nothing to write at close).
    persisted: bool,
}

pub(crate) struct Shared {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) config: StoreConfig,
    pub(crate) vocab: Vocabulary,
    pub(crate) clock: Clock,
    pub(crate) scheduler: Arc<Scheduler>,
    ids: IdLocks,
    registry: Mutex<Registry>,
    cache: Mutex<InspectionCache>,
    tails: Mutex<HashMap<String, Tail>>,
    cold_reads: ColdReadCounters,
    closed: AtomicBool,
}

impl Shared {
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            Err(Error::Closed("the store is closed".into()))
        } else {
            Ok(())
        }
    }

    /// Persists the append state of every session this store appended to
    /// cold whose log is still as the store left it (best effort).
    pub(crate) fn save_checkpoints(&self) {
        let mut tails: Vec<(String, Tail)> = self
            .tails
            .lock()
            .drain()
            .filter(|(_, t)| !t.persisted && !t.revision.0.is_empty())
            .collect();
        // The longest logs first, and a bounded number: a store that
        // appended to 100k small sessions must not spend its close writing
        // 100k files that each save less than they cost.
        tails.sort_by_key(|(_, t)| std::cmp::Reverse(t.next_seq));
        tails.truncate(append_checkpoint::MAX_SAVED_AT_CLOSE);
        for (id, t) in tails {
            self.save_checkpoint(&id, t.header, t.revision, t.next_seq, t.rules);
        }
    }

    /// Persists the append state of `id` at `revision` (a cold tail, or a
    /// live session that closed) when the log is still at `revision` and
    /// the backend knows its next seq and size count exactly (best effort;
    /// see [`append_checkpoint`]).
    pub(crate) fn save_checkpoint(
        &self,
        id: &str,
        header: SessionHeader,
        revision: Revision,
        next_seq: u64,
        rules: LogState,
    ) {
        let Some(dir) = self.backend.cache_dir() else {
            return;
        };
        if !matches!(self.backend.revision(id), Ok(Some(r)) if r == revision) {
            return;
        }
        // The next seq and size count as a full read would find them (and
        // a row store's seal of its rows).
        let Some(state) = self.backend.append_state(&header, &revision) else {
            return;
        };
        if state.next_seq != next_seq || rules.event_count() as u64 != next_seq {
            return;
        }
        let c = append_checkpoint::Checkpoint {
            revision,
            header,
            next_seq,
            log_bytes: state.log_bytes,
            seal: state.seal,
            rules,
        };
        append_checkpoint::save(&dir, id, &append_checkpoint::rules_key(&self.config), &c);
    }

    pub(crate) fn unregister_live(&self, id: &str, inner: &LiveInner) {
        let mut reg = self.registry.lock();
        if reg
            .live
            .get(id)
            .is_some_and(|w| std::ptr::eq(w.as_ptr(), inner as *const LiveInner))
        {
            reg.live.remove(id);
        }
    }

    fn live(&self, id: &str) -> Option<Arc<LiveInner>> {
        self.registry.lock().live.get(id).and_then(Weak::upgrade)
    }
}

/// An opened store. `Send + Sync`, cheap to clone; any thread may call any
/// operation.
#[derive(Clone)]
pub struct Store {
    shared: Arc<Shared>,
}

/// A session prepared for resume (SPEC §6 `prepare`): its repair is
/// committed and its id reserved. Publish it with [`Store::publish`]; drop
/// it to release the reservation.
pub struct PreparedSession {
    shared: Arc<Shared>,
    header: SessionHeader,
    events: Vec<Event>,
    revision: Revision,
    /// The stored log's size count (`maxLogBytes`).
    log_bytes: u64,
    published: bool,
    /// The writer lock, handed to the live session on publish.
    writer: Option<WriterLock>,
}

impl PreparedSession {
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The balanced log the live session will start from.
    pub fn events(&self) -> &[Event] {
        &self.events
    }
}

impl Drop for PreparedSession {
    fn drop(&mut self) {
        if !self.published {
            self.shared.registry.lock().reserved.remove(&self.header.id);
        }
    }
}

fn not_found(id: &str) -> Error {
    Error::not_found(format!("session {} not found", quote(id)))
}

fn already_exists(id: &str) -> Error {
    Error::conflict_code(
        "SESSION_ALREADY_EXISTS",
        format!("session {} already exists in this backend", quote(id)),
    )
}

/// The refusal of a creation whose id another writer holds.
fn held_by_another(id: &str, busy: &Error) -> Error {
    Error::conflict_code(
        "SESSION_ALREADY_EXISTS",
        format!(
            "session {} already exists or is being created by another writer: {busy}",
            quote(id)
        ),
    )
}

/// Whether `a` and `b` are one stored record: JSONL keeps the bytes (so the
/// lines must be identical), the row stores (SQLite, PostgreSQL) the fields
/// (they keep no envelope key order).
fn same_stored(kind: BackendKind, a: &Event, b: &Event) -> bool {
    match kind {
        BackendKind::Jsonl => a.to_json() == b.to_json(),
        BackendKind::Sqlite | BackendKind::Postgres => {
            crate::backend::rows::checks::same_event(a, b)
        }
    }
}

impl Store {
    /// Opens a store from its configuration (SPEC §11).
    pub fn open(config: StoreConfig) -> Result<Store> {
        let backend = super::open_backend(&config.backend)?;
        Ok(Store::with_backend(backend, config, None))
    }

    /// Opens a store from configuration JSON.
    pub fn open_json(config_json: &str) -> Result<Store> {
        Store::open(StoreConfig::parse(config_json)?)
    }

    /// A store over any backend (tests, fault injection, embedding), with an
    /// optional clock (ms since the epoch; default the system's). The clock
    /// stamps the events live sessions append and the `createdAt` of the
    /// headers the store makes itself (a fork without a child header,
    /// `salvage`, an `import` without a header line) and is `prune`'s "now".
    pub fn with_backend(
        backend: Arc<dyn Backend>,
        config: StoreConfig,
        clock: Option<Clock>,
    ) -> Store {
        let vocab = Vocabulary::with_extra(config.extra_event_types.iter().cloned());
        let cache = InspectionCache::new(config.prepared_session_cache_size);
        Store {
            shared: Arc::new(Shared {
                backend,
                vocab,
                clock: clock.unwrap_or_else(|| Arc::new(now_ms)),
                scheduler: Scheduler::start(),
                ids: IdLocks::default(),
                registry: Mutex::default(),
                cache: Mutex::new(cache),
                tails: Mutex::default(),
                cold_reads: ColdReadCounters::default(),
                closed: AtomicBool::new(false),
                config,
            }),
        }
    }

    pub fn config(&self) -> &StoreConfig {
        &self.shared.config
    }

    /// The backend (read-only uses such as the CLI's verify).
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.shared.backend
    }

    /// JSONL: `true` (`read_raw` works); SQLite: `false`.
    pub fn supports_raw_artifacts(&self) -> bool {
        self.shared.backend.kind() == crate::backend::BackendKind::Jsonl
    }

    /// Where the session of `header` lives (no I/O).
    pub fn locate(&self, header: &SessionHeader) -> Result<Option<Location>> {
        self.shared.check_open()?;
        self.shared.backend.locate(header)
    }

    /// Takes the writer lock of `id` to create it: another holder means the
    /// id is taken (a conflict, like an id that is stored or live).
    fn lock_to_create(&self, id: &str) -> Result<WriterLock> {
        self.shared.backend.lock_writer(id).map_err(|e| match e {
            Error::Busy(_) => held_by_another(id, &e),
            other => other,
        })
    }

    /// Fails with a conflict when `id` is stored, live, created or reserved
    /// (here or, when `probe_writers`, by a writer elsewhere; a caller that
    /// holds the writer lock itself skips that).
    fn ensure_free(&self, id: &str, probe_writers: bool) -> Result<()> {
        {
            let reg = self.shared.registry.lock();
            if reg.live.get(id).is_some_and(|w| w.strong_count() > 0)
                || reg.created.contains_key(id)
                || reg.reserved.contains(id)
            {
                return Err(already_exists(id));
            }
        }
        if self.shared.backend.revision(id)?.is_some() {
            return Err(already_exists(id));
        }
        if !probe_writers {
            return Ok(());
        }
        if let Some(holder) = self.shared.backend.writer_holder(id)? {
            // Live (not yet written) in another process or store handle.
            let busy = crate::backend::writer_lock::busy(id, &holder);
            return Err(held_by_another(id, &busy));
        }
        Ok(())
    }

    /// Registers a new session (nothing is written until its first append).
    pub fn create(&self, header: SessionHeader) -> Result<()> {
        self.shared.check_open()?;
        let _g = self.shared.ids.lock(&header.id);
        self.ensure_free(&header.id, true)?;
        self.shared
            .registry
            .lock()
            .created
            .insert(header.id.clone(), header);
        Ok(())
    }

    /// Parses `events_json` (an array of whole events, keeping each one's
    /// key order; `data` canonicalized) and appends it durably.
    pub fn append_json(&self, id: &str, events_json: &str) -> Result<()> {
        let items = json::array_items(events_json)
            .map_err(|e| Error::invalid(format!("events must be a JSON array of events: {e}")))?;
        let mut events = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            for key in ["seq", "time"] {
                // `-0` reads as 0 but does not survive a JavaScript round
                // trip: refused like in data (DIFFERENCES A.2 #22).
                if let Some(v) = json::get_field(item, key)
                    .filter(|v| json::as_f64(v).is_some_and(|f| f == 0.0 && f.is_sign_negative()))
                {
                    let ty = json::get_field(item, "type")
                        .and_then(json::as_str)
                        .map_or_else(String::new, |t| t.decode().into_owned());
                    return Err(Error::invalid(format!(
                        "event {} {key} is not losslessly JSON-serializable: number {} is negative zero",
                        quote(&ty),
                        v.trim()
                    )));
                }
            }
            let mut e = Event::parse(item)
                .map_err(|m| Error::invalid(format!("event at index {i}: {m}")))?;
            e.data = check_lossless(e.type_str(), e.data.as_str())?;
            if let Some(op) = e.surface_op() {
                let op = json::JsonText::canonical(op.as_str())
                    .map_err(|m| Error::invalid(format!("event at index {i} surfaceOp: {m}")))?;
                e.set_surface_op(Some(op));
            }
            if let Some(s) = e.source_event_seqs() {
                let s = json::JsonText::canonical(s.as_str()).map_err(|m| {
                    Error::invalid(format!("event at index {i} sourceEventSeqs: {m}"))
                })?;
                e.set_source_event_seqs(Some(s));
            }
            events.push(e);
        }
        self.append(id, events)
    }

    /// Appends whole events durably (SPEC §6 `append`): the first seq must be
    /// the stored next seq, the batch contiguous, types known (or
    /// ignorable), surface rules kept. Nothing is written on failure.
    pub fn append(&self, id: &str, events: Vec<Event>) -> Result<()> {
        self.shared.check_open()?;
        let _g = self.shared.ids.lock(id);
        if self.shared.live(id).is_some() {
            return Err(Error::conflict(format!(
                "session {} is live in this process; append through its live session",
                quote(id)
            )));
        }
        let created = self.shared.registry.lock().created.get(id).cloned();
        // The writer lock for the call (an empty append writes nothing).
        let _writer = match (&created, events.is_empty()) {
            (_, true) => None,
            (Some(_), false) => {
                let writer = self.lock_to_create(id)?;
                // Another writer may have created and released the id
                // since `create` found it free: the same refusal as a
                // creation that finds it stored (SESSION_ALREADY_EXISTS),
                // whichever backend and project directory it went to.
                if self.shared.backend.revision(id)?.is_some() {
                    return Err(already_exists(id));
                }
                Some(writer)
            }
            (None, false) => Some(self.shared.backend.lock_writer(id)?),
        };
        let is_new = created.is_some();
        let (tail, adopt) = match created {
            Some(header) => (
                Tail {
                    revision: Revision(String::new()),
                    next_seq: 0,
                    header,
                    rules: LogState::new(),
                    persisted: false,
                },
                None,
            ),
            None => self.tail(id)?,
        };
        if events.is_empty() {
            if adopt.is_none() {
                self.put_tail(id, tail);
            }
            return Ok(());
        }
        self.append_to_tail(id, tail, adopt, is_new, events)
    }

    /// Keeps `tail` for the next append: one that matches what is stored
    /// (not a created session's, not one whose torn tail a repair must cut
    /// first).
    fn put_tail(&self, id: &str, tail: Tail) {
        if !tail.revision.0.is_empty() {
            self.shared.tails.lock().insert(id.to_string(), tail);
        }
    }

    /// The checks and the write of [`Store::append`], on the tail taken out
    /// of the store's cache (under the id's lock and its writer lock): it is
    /// advanced in place and put back after the write; a refusal leaves it
    /// unchanged and puts it back; a failed write drops it (the next append
    /// reads the stored state again).
    fn append_to_tail(
        &self,
        id: &str,
        mut tail: Tail,
        adopt: Option<Arc<Inspection>>,
        is_new: bool,
        events: Vec<Event>,
    ) -> Result<()> {
        let mut events = events;
        // Put back unchanged after a refusal (a torn tail's is not: the
        // next append must adopt the torn tail again).
        let adopting = adopt.is_some();
        let keep = |tail: Tail| {
            if !adopting {
                self.put_tail(id, tail);
            }
        };
        if !is_new && events[0].seq < tail.next_seq {
            // A retry of an append whose outcome was unclear (it failed after
            // its bytes or rows may have become durable): what is stored at
            // these seqs, exactly these events, is not written twice.
            match self.already_stored(id, &events, tail.next_seq) {
                Ok(Some(n)) => {
                    events.drain(..n);
                    if events.is_empty() {
                        keep(tail);
                        return Ok(());
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    keep(tail);
                    return Err(e);
                }
            }
        }
        if let Err(e) = self.check_batch(id, &mut tail, &events) {
            keep(tail);
            return Err(e);
        }
        let revision = match adopt {
            // DIFFERENCES B 05, like the original: a cold append to a log
            // with a torn tail adopts it (under the writer lock): the torn
            // fragment is cut, the records recovered from it are kept, and
            // the batch is appended; an open turn stays open for the batch
            // to continue.
            Some(insp) => {
                self.shared.cache.lock().remove(id);
                self.shared.tails.lock().remove(id);
                self.shared.backend.commit_repair(id, &insp.stored, &events)
            }
            None => {
                let expect = if tail.next_seq == 0 && tail.revision.0.is_empty() {
                    Expect::New
                } else {
                    Expect::At(&tail.revision)
                };
                self.shared.backend.append(&tail.header, &events, expect)
            }
        };
        // A failed write: the tail (its rules advanced) is dropped.
        tail.revision = revision?;
        tail.next_seq += events.len() as u64;
        tail.persisted = false;
        self.shared.registry.lock().created.remove(id);
        self.shared.tails.lock().insert(id.to_string(), tail);
        Ok(())
    }

    /// The batch checks of an append: contiguous seqs from the stored
    /// next seq, no storage-format tags, the rules; on success the tail's
    /// rules have advanced over the batch, on a refusal they are unchanged.
    fn check_batch(&self, id: &str, tail: &mut Tail, events: &[Event]) -> Result<()> {
        for (i, e) in events.iter().enumerate() {
            let want = tail.next_seq + i as u64;
            if e.seq != want {
                return Err(Error::invalid(if i == 0 {
                    format!(
                        "append seq mismatch for {}: expected {want} at index 0, got {}",
                        quote(id),
                        e.seq
                    )
                } else {
                    format!(
                        "append seq mismatch for {}: expected {want} at index {i}, got {}",
                        quote(id),
                        e.seq
                    )
                }));
            }
            let name = e.type_str();
            if crate::codec::chunk_rows::is_row_tag(name) {
                return Err(Error::invalid(format!(
                    "event type {} at seq {} is reserved by the storage format",
                    quote(name),
                    e.seq
                )));
            }
        }
        // The rules a load applies (one rule set, SPEC 1.8/1.9): what this
        // acknowledges loads back; older shapes a load converts are taken.
        // On a refusal the rules' state is unchanged.
        tail.rules.check_append(
            id,
            &self.shared.vocab,
            self.shared.config.strict,
            true,
            events,
        )?;
        Ok(())
    }

    /// The append state of a stored session, reusing the last one while the
    /// revision is current (a stat of the log: another writer's append
    /// changes it). With a torn tail, also the inspection whose repair the
    /// append commits (the tail then continues after the recovered events).
    fn tail(&self, id: &str) -> Result<(Tail, Option<Arc<Inspection>>)> {
        let current = self
            .shared
            .backend
            .revision(id)?
            .ok_or_else(|| not_found(id))?;
        // Taken out (not copied: its rules grow with the log); the append
        // puts it back.
        if let Some(t) = self.shared.tails.lock().remove(id) {
            if t.revision == current {
                return Ok((t, None));
            }
        }
        // A retained inspection is taken out and used, a new one is not
        // retained (the append changes the revision, so neither would be
        // current again): the log is read and judged once, its fold kept,
        // its events freed.
        let current_insp = self.shared.cache.lock().take(id, &current);
        let insp = match current_insp {
            Some(hit) => hit,
            None => {
                // A checkpoint an earlier writer persisted for exactly this
                // revision: nothing to read.
                if let Some(t) = self.checkpointed_tail(id, &current)? {
                    return Ok((t, None));
                }
                // Else the log is folded as it is read, its events
                // dropped; only a torn tail to adopt is read again whole.
                if let Some(t) = self.folded_tail(id)? {
                    return Ok((t, None));
                }
                let insp = self.read_inspection(id)?;
                self.shared.cold_reads.kept(insp.stored.events.len() as u64);
                Arc::new(insp)
            }
        };
        let tail = Tail {
            revision: insp.stored.revision.clone(),
            next_seq: insp.stored.events.len() as u64,
            header: insp.stored.header.clone(),
            rules: LogState::fold(&insp.stored.events),
            persisted: false,
        };
        let adopt = insp.stored.torn.is_some().then_some(insp);
        Ok((tail, adopt))
    }

    /// The tail of `id` from a folding read ([`super::cold_fold`]): the
    /// rules and the refusals of a load, without keeping the log. `None`
    /// when the log has a torn tail (the append adopts it from a full
    /// read).
    fn folded_tail(&self, id: &str) -> Result<Option<Tail>> {
        let mut sink = TailFold::new(id, &self.shared.vocab, self.shared.config.strict);
        let log = self
            .shared
            .backend
            .read_folding(id, &mut sink)?
            .ok_or_else(|| not_found(id))?;
        self.shared.cold_reads.folded(sink.largest);
        if log.torn {
            return Ok(None);
        }
        if let Some(problem) = log.header.problem() {
            // As a load refuses it (see `read_inspection`).
            return Err(Error::failed_validation(id, problem.to_string()));
        }
        let rules = sink.fold.finish(log.raw_log.as_deref())?;
        if rules.event_count() as u64 != log.event_count {
            return Err(Error::invariant(format!(
                "session {}: the fold saw {} events, the read {}",
                quote(id),
                rules.event_count(),
                log.event_count
            )));
        }
        Ok(Some(Tail {
            revision: log.revision,
            next_seq: log.event_count,
            header: log.header,
            rules,
            persisted: false,
        }))
    }

    /// What this store's cold appends read without a checkpoint so far
    /// (folded or kept whole, and the most events one read held at once;
    /// see [`super::cold_fold`]).
    #[doc(hidden)]
    pub fn cold_reads(&self) -> ColdReads {
        self.shared.cold_reads.get()
    }

    fn rules_key(&self) -> String {
        append_checkpoint::rules_key(&self.shared.config)
    }

    /// The tail a persisted checkpoint gives for `id` at `current` (see
    /// [`super::append_checkpoint`]), handed to the backend too (the next
    /// seq and size count a clean read would have noted).
    fn checkpointed_tail(&self, id: &str, current: &Revision) -> Result<Option<Tail>> {
        let Some(dir) = self.shared.backend.cache_dir() else {
            return Ok(None);
        };
        let Some(c) = append_checkpoint::load(
            &dir,
            id,
            current,
            &self.rules_key(),
            self.shared.config.backend.limits().max_log_bytes,
        ) else {
            return Ok(None);
        };
        let Some(header) =
            self.shared
                .backend
                .adopt_append_state(&c.header, current, &c.append_state())?
        else {
            // The rows are not those the checkpoint was folded from (a
            // hand edit that kept the revision): the log is read.
            return Ok(None);
        };
        Ok(Some(Tail {
            revision: c.revision,
            next_seq: c.next_seq,
            header,
            rules: c.rules,
            persisted: true,
        }))
    }

    /// How many of `events` (starting below `next`, the stored next seq)
    /// are stored already, exactly, at their seqs; `None` when the stored
    /// events there differ (or reach past the batch).
    fn already_stored(&self, id: &str, events: &[Event], next: u64) -> Result<Option<usize>> {
        let first = events[0].seq;
        let n = (next - first) as usize;
        if n > events.len() {
            return Ok(None);
        }
        let Some(scanned) = self.shared.backend.read_from(id, first)? else {
            return Ok(None);
        };
        let stored: Vec<&Event> = scanned
            .events
            .iter()
            .filter(|e| e.seq >= first && e.seq < next)
            .collect();
        let kind = self.shared.backend.kind();
        Ok((stored.len() == n
            && stored
                .iter()
                .zip(events)
                .all(|(a, b)| same_stored(kind, a, b)))
        .then_some(n))
    }

    /// The view of a cold inspection: the balanced log (closers in memory),
    /// or, while a writer elsewhere holds the id and the log ends in an
    /// incomplete write or an open turn, the complete writes only, as they
    /// are (its open turn is the writer's to finish, its incomplete last
    /// write is not there yet).
    fn cold_view(&self, id: &str, insp: &Inspection) -> Result<SessionView> {
        let unfinished = insp.stored.torn.is_some() || !insp.closers.is_empty();
        let events = if unfinished && self.shared.backend.writer_holder(id)?.is_some() {
            insp.stored.events[..insp.stored.durable_len()].to_vec()
        } else {
            let mut events = Vec::with_capacity(insp.stored.events.len() + insp.closers.len());
            events.extend(insp.stored.events.iter().cloned());
            events.extend(insp.closers.iter().cloned());
            events
        };
        Ok(SessionView {
            header: insp.stored.header.clone(),
            events,
        })
    }

    /// Reads, converts, validates and closes a cold session, or reuses the
    /// retained inspection while its revision is current.
    fn inspection(&self, id: &str) -> Result<Arc<Inspection>> {
        let current = self
            .shared
            .backend
            .revision(id)?
            .ok_or_else(|| not_found(id))?;
        if let Some(hit) = self.shared.cache.lock().get(id, &current) {
            return Ok(hit);
        }
        let insp = Arc::new(self.read_inspection(id)?);
        // Cancelled after the read: the cache is left as it was.
        checkpoint()?;
        self.shared.cache.lock().put(id, insp.clone());
        Ok(insp)
    }

    fn read_inspection(&self, id: &str) -> Result<Inspection> {
        let mut stored = self.shared.backend.read(id)?.ok_or_else(|| not_found(id))?;
        if let Some(problem) = stored.header.problem() {
            // A header line the original's readers accept but that fails
            // validation: read_from serves it, a session is refused.
            return Err(Error::failed_validation(id, problem.to_string()));
        }
        let closers = session_view(
            id,
            stored.raw_log.as_deref(),
            &self.shared.vocab,
            self.shared.config.strict,
            &mut stored.events,
        )?;
        Ok(Inspection { stored, closers })
    }

    /// An inspection owned by the caller (taken out of the cache when it is
    /// current, so a load does not copy a large log).
    fn take_inspection(&self, id: &str) -> Result<Inspection> {
        let current = self
            .shared
            .backend
            .revision(id)?
            .ok_or_else(|| not_found(id))?;
        if let Some(hit) = self.shared.cache.lock().take(id, &current) {
            if let Err(e) = checkpoint() {
                // Cancelled: the cache keeps what it had.
                self.shared.cache.lock().put(id, hit);
                return Err(e);
            }
            return Ok(Arc::try_unwrap(hit).unwrap_or_else(|a| (*a).clone()));
        }
        let insp = self.read_inspection(id)?;
        checkpoint()?;
        Ok(insp)
    }

    /// Commits the repair of an inspection (torn tail and closers) and
    /// returns the balanced log with its new revision.
    /// Commits the repair an inspection found (if any). Returns the header,
    /// the balanced events, the revision and the log's size count (what the
    /// read counted plus the closers, for the live session's `maxLogBytes`
    /// count). Not cancellable: a repair, once begun, runs to its end.
    fn commit(
        &self,
        id: &str,
        insp: Inspection,
    ) -> Result<(SessionHeader, Vec<Event>, Revision, u64)> {
        shield(|| self.commit_now(id, insp))
    }

    /// [`Store::commit`] as the writer of `id` (its lock held): a repair
    /// refused because the log moved since it was read is read again and
    /// retried. Under the lock, only a write that was already in flight when
    /// the last writer's lock went away can move it — on PostgreSQL the
    /// advisory lock and the writes are separate connections, so a killed
    /// writer's last transaction may commit after its lock is released.
    fn commit_as_writer(
        &self,
        id: &str,
        mut insp: Inspection,
    ) -> Result<(SessionHeader, Vec<Event>, Revision, u64)> {
        const ATTEMPTS: usize = 5;
        for attempt in 1.. {
            let read = insp.stored.revision.clone();
            match self.commit(id, insp) {
                Err(e @ Error::Conflict { .. }) if attempt < ATTEMPTS => {
                    if self.shared.backend.revision(id)?.as_ref() == Some(&read) {
                        return Err(e);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5 * attempt as u64));
                    insp = self.take_inspection(id)?;
                }
                other => return other,
            }
        }
        unreachable!("the loop returns by its last attempt")
    }

    fn commit_now(
        &self,
        id: &str,
        insp: Inspection,
    ) -> Result<(SessionHeader, Vec<Event>, Revision, u64)> {
        let Inspection {
            stored,
            mut closers,
        } = insp;
        let log_bytes = stored
            .log_bytes
            .saturating_add(crate::backend::limits::log_growth(&closers));
        let revision = if stored.torn.is_some() || !closers.is_empty() {
            self.shared.cache.lock().remove(id);
            self.shared.tails.lock().remove(id);
            let revision = self.shared.backend.commit_repair(id, &stored, &closers)?;
            // What a later read of the repaired log gives (A.1 #15).
            self.shared.backend.as_read_back(&mut closers);
            revision
        } else {
            stored.revision.clone()
        };
        let mut events = stored.events;
        events.extend(closers);
        Ok((stored.header, events, revision, log_bytes))
    }

    /// SPEC §6 `load`: cold — commit the repair and return the balanced
    /// log; live — flush, then return the snapshot when no turn is open.
    pub fn load(&self, id: &str) -> Result<SessionView> {
        self.shared.check_open()?;
        checkpoint()?;
        if let Some(live) = self.shared.live(id) {
            shield(|| live.flush())?;
            let events = live.snapshot();
            if super::view::has_open_turn(&events) {
                return Err(Error::conflict(format!(
                    "session {} is live in this process with an open turn; an open live turn is never closed synthetically — close the turn or the session first",
                    quote(id)
                )));
            }
            return Ok(SessionView {
                header: live.header().clone(),
                events,
            });
        }
        let _g = self.shared.ids.lock(id);
        let insp = self.take_inspection(id)?;
        if insp.stored.torn.is_none() && insp.closers.is_empty() {
            let (header, events, _, _) = self.commit(id, insp)?;
            return Ok(SessionView { header, events });
        }
        // A repair writes: only as the writer.
        let writer = match self.shared.backend.lock_writer(id) {
            Ok(w) => w,
            Err(Error::Busy(why)) => return self.load_under_writer(id, insp, &why),
            Err(e) => return Err(e),
        };
        // What is on disk now (a writer may have finished since the read).
        let current = self.shared.backend.revision(id)?;
        let insp = if current.as_ref() == Some(&insp.stored.revision) {
            insp
        } else {
            self.take_inspection(id)?
        };
        let (header, events, _, _) = self.commit_as_writer(id, insp)?;
        drop(writer);
        Ok(SessionView { header, events })
    }

    /// `load` of an id another writer holds (another process or store
    /// handle): nothing is written. The complete writes are returned when
    /// they end balanced; an open turn there is the writer's, so `busy`.
    fn load_under_writer(&self, id: &str, insp: Inspection, busy: &str) -> Result<SessionView> {
        checkpoint()?;
        let durable = insp.stored.durable_len();
        let result = if has_open_turn(&insp.stored.events[..durable]) {
            Err(Error::Busy(format!(
                "cannot load session {} now: its stored log ends inside an open turn that its writer is still writing; nothing was changed (inspect or read_from show it meanwhile): {busy}",
                quote(id)
            )))
        } else {
            Ok(SessionView {
                header: insp.stored.header.clone(),
                events: insp.stored.events[..durable].to_vec(),
            })
        };
        self.shared.cache.lock().put(id, Arc::new(insp));
        result
    }

    /// SPEC §6 `inspect`: an immutable balanced view; nothing is written.
    pub fn inspect(&self, id: &str) -> Result<SessionView> {
        self.shared.check_open()?;
        checkpoint()?;
        if let Some(live) = self.shared.live(id) {
            return Ok(SessionView {
                header: live.header().clone(),
                events: live.snapshot(),
            });
        }
        let _g = self.shared.ids.lock(id);
        let insp = self.inspection(id)?;
        self.cold_view(id, &insp)
    }

    /// SPEC §6 `read_from`: stored events with `seq >= from`, no repair, no
    /// closers. A live session is flushed first.
    pub fn read_from(&self, id: &str, from: i64) -> Result<SessionView> {
        self.shared.check_open()?;
        if from < 0 {
            return Err(Error::invalid(format!(
                "read_from start must be a non-negative integer, got {from}"
            )));
        }
        checkpoint()?;
        if let Some(live) = self.shared.live(id) {
            shield(|| live.flush())?;
        }
        let from = from as u64;
        let mut scanned = self
            .shared
            .backend
            .read_from(id, from)?
            .ok_or_else(|| not_found(id))?;
        if scanned.events.first().is_some_and(|e| e.seq > 0)
            && needs_history_for_legacy(&scanned.events)
        {
            // A legacy tool/result replace inherits the id of the message it
            // shadows, which lies before a seeking backend's suffix.
            scanned = self
                .shared
                .backend
                .read_from(id, 0)?
                .ok_or_else(|| not_found(id))?;
        }
        let mut events = scanned.events;
        if scanned.recovered_events > 0 && self.shared.backend.writer_holder(id)?.is_some() {
            // A live writer's incomplete last write: not there yet.
            events.truncate(events.len().saturating_sub(scanned.recovered_events));
        }
        read_from_view(
            id,
            scanned.raw_log.as_deref(),
            &self.shared.vocab,
            &mut events,
        )?;
        // The events are contiguous and ascending (backend contract): keep
        // the suffix, and free the (possibly large) prefix off this thread.
        let start = events.partition_point(|e| e.seq < from);
        let events = if start == 0 {
            events
        } else {
            let suffix = events.split_off(start);
            release(events);
            suffix
        };
        Ok(SessionView {
            header: scanned.header,
            events,
        })
    }

    /// The decoded artifact (JSONL); `None` when not stored.
    pub fn read_raw(&self, id: &str) -> Result<Option<RawArtifact>> {
        self.shared.check_open()?;
        checkpoint()?;
        let mut raw = self.shared.backend.read_raw(id)?;
        if let Some(r) = raw.as_mut() {
            // An uncompressed log ending in part of a line that a live
            // writer is still writing: that part is not there yet.
            if !r.content.ends_with('\n') && self.shared.backend.writer_holder(id)?.is_some() {
                let keep = r.content.rfind('\n').map_or(0, |i| i + 1);
                r.content.truncate(keep);
            }
        }
        Ok(raw)
    }

    /// Flushes the live session `id` of this store, if any (catalog reads
    /// see what the backend holds).
    pub fn flush_live(&self, id: &str) -> Result<()> {
        self.shared.check_open()?;
        if let Some(live) = self.shared.live(id) {
            live.flush()?;
        }
        Ok(())
    }

    /// Flushes every live session of this store (as [`Store::flush_live`]
    /// each, in id order); a failure names the session.
    pub fn flush_all_live(&self) -> Result<()> {
        self.shared.check_open()?;
        let mut live: Vec<(String, Arc<LiveInner>)> = self
            .shared
            .registry
            .lock()
            .live
            .iter()
            .filter_map(|(id, w)| Some((id.clone(), w.upgrade()?)))
            .collect();
        live.sort_by(|a, b| a.0.cmp(&b.0));
        for (id, inner) in live {
            inner
                .flush()
                .map_err(|e| e.context(&format!("session {}", quote(&id))))?;
        }
        Ok(())
    }

    /// Headers of the materialized sessions, as headers of their own
    /// ([`Store::listing`] returns the same list, packed).
    pub fn list(&self) -> Result<Vec<SessionHeader>> {
        self.listing().map(Vec::from)
    }

    /// Headers of the materialized sessions, in one [`SessionList`]: the
    /// texts of the plain headers (most of them) in one buffer, none of
    /// them allocated on its own. What the C ABI's `dsh_store_list` and
    /// the CLI's `list` read.
    pub fn listing(&self) -> Result<SessionList> {
        self.shared.check_open()?;
        checkpoint()?;
        self.shared.backend.list()
    }

    /// Headers plus revision tokens, without reading logs.
    pub fn list_snapshots(&self) -> Result<Vec<(SessionHeader, Revision)>> {
        self.shared.check_open()?;
        checkpoint()?;
        self.shared.backend.list_snapshots()
    }

    /// [`Store::load`] under `cancel`: checked between the chunks, frames
    /// or rows of the read and once more before the repair is committed;
    /// a cancelled load returns [`Error::Cancelled`] and changes nothing
    /// (no repair, the inspection cache as it was). Once the repair began,
    /// it finishes.
    pub fn load_with_cancel(&self, id: &str, cancel: &Cancel) -> Result<SessionView> {
        cancel.scope(|| self.load(id))
    }

    /// [`Store::inspect`] under `cancel` (see [`Store::load_with_cancel`]).
    pub fn inspect_with_cancel(&self, id: &str, cancel: &Cancel) -> Result<SessionView> {
        cancel.scope(|| self.inspect(id))
    }

    /// [`Store::read_from`] under `cancel` (a live session's flush, once
    /// begun, finishes).
    pub fn read_from_with_cancel(
        &self,
        id: &str,
        from: i64,
        cancel: &Cancel,
    ) -> Result<SessionView> {
        cancel.scope(|| self.read_from(id, from))
    }

    /// [`Store::read_raw`] under `cancel` (checked before the read).
    pub fn read_raw_with_cancel(&self, id: &str, cancel: &Cancel) -> Result<Option<RawArtifact>> {
        cancel.scope(|| self.read_raw(id))
    }

    /// [`Store::list`] under `cancel` (checked between sessions).
    pub fn list_with_cancel(&self, cancel: &Cancel) -> Result<Vec<SessionHeader>> {
        cancel.scope(|| self.list())
    }

    /// [`Store::list_snapshots`] under `cancel` (checked between sessions).
    pub fn list_snapshots_with_cancel(
        &self,
        cancel: &Cancel,
    ) -> Result<Vec<(SessionHeader, Revision)>> {
        cancel.scope(|| self.list_snapshots())
    }

    /// [`Store::resume`] under `cancel`: checked while the log is read;
    /// once the repair or the publication began, it finishes.
    pub fn resume_with_cancel(&self, id: &str, cancel: &Cancel) -> Result<LiveSession> {
        let p = cancel.scope(|| self.prepare(id))?;
        self.publish(p)
    }

    /// SPEC §6 `prepare`: commit the pending repair, reserve the id, and
    /// return the exact session resume will publish.
    pub fn prepare(&self, id: &str) -> Result<PreparedSession> {
        self.shared.check_open()?;
        checkpoint()?;
        let _g = self.shared.ids.lock(id);
        {
            let reg = self.shared.registry.lock();
            if reg.live.get(id).is_some_and(|w| w.strong_count() > 0) {
                return Err(Error::conflict(format!(
                    "session {} is already live in this process",
                    quote(id)
                )));
            }
            if reg.reserved.contains(id) {
                return Err(Error::conflict(format!(
                    "session {} is already prepared for resume",
                    quote(id)
                )));
            }
        }
        let writer = self.shared.backend.lock_writer(id)?;
        let insp = self.take_inspection(id)?;
        let (header, events, revision, log_bytes) = self.commit_as_writer(id, insp)?;
        self.shared.registry.lock().reserved.insert(id.to_string());
        Ok(PreparedSession {
            shared: self.shared.clone(),
            header,
            events,
            revision,
            log_bytes,
            published: false,
            writer: Some(writer),
        })
    }

    /// Publishes a prepared session as live: appends the
    /// `session/end-seed` marker unless the log already ends with one.
    pub fn publish(&self, mut prepared: PreparedSession) -> Result<LiveSession> {
        self.shared.check_open()?;
        let id = prepared.header.id.clone();
        let _g = self.shared.ids.lock(&id);
        let events = std::mem::take(&mut prepared.events);
        let marker = seed::needs_end_seed_marker(&events);
        let live = LiveSession::start(
            self.shared.clone(),
            prepared.header.clone(),
            events,
            Some((prepared.revision.clone(), prepared.log_bytes)),
            Vec::new(),
            prepared.writer.take(),
        )?;
        prepared.published = true;
        self.go_live(live, marker, true)
    }

    /// Makes a new live session (its writes held) visible: the end-seed
    /// marker first when `marker`, then registration, unless the store was
    /// closed meanwhile. That check runs under the registry lock, which
    /// `close` takes to collect the sessions it drains, so a session is
    /// either drained by that close or refused here. `reserved`: the id
    /// was reserved by `prepare`, and is released either way. A refused
    /// session is abandoned: nothing of it is written.
    fn go_live(&self, live: LiveSession, marker: bool, reserved: bool) -> Result<LiveSession> {
        let id = live.id().to_string();
        let registered = (|| {
            if marker {
                live.append_end_seed()?;
            }
            let mut reg = self.shared.registry.lock();
            if reserved {
                reg.reserved.remove(&id);
            }
            self.shared.check_open()?;
            reg.live.insert(id.clone(), Arc::downgrade(live.inner()));
            Ok(())
        })();
        if let Err(e) = registered {
            if reserved {
                self.shared.registry.lock().reserved.remove(&id);
            }
            live.abandon();
            return Err(e);
        }
        live.release_writes();
        Ok(live)
    }

    /// Resume = prepare + publish.
    pub fn resume(&self, id: &str) -> Result<LiveSession> {
        let p = self.prepare(id)?;
        self.publish(p)
    }

    /// Starts a new live session (nothing is written until its first batch).
    pub fn start(&self, header: SessionHeader) -> Result<LiveSession> {
        self.start_with_seed(header, Vec::new())
    }

    /// Starts a live session from seed events (e.g. a subagent's inherited
    /// history): the seed is persisted with the first batch, followed by one
    /// `session/end-seed` marker unless the seed ends with one (SPEC §1.7).
    pub fn start_with_seed(
        &self,
        header: SessionHeader,
        seed_events: Vec<Event>,
    ) -> Result<LiveSession> {
        self.shared.check_open()?;
        let id = header.id.clone();
        let _g = self.shared.ids.lock(&id);
        let writer = self.lock_to_create(&id)?;
        self.ensure_free(&id, false)?;
        for (i, e) in seed_events.iter().enumerate() {
            if e.seq != i as u64 {
                return Err(Error::invalid(format!(
                    "seed event at index {i} has seq {} (a seed starts at seq 0 and is contiguous)",
                    e.seq
                )));
            }
        }
        let marker = !seed_events.is_empty() && seed::needs_end_seed_marker(&seed_events);
        let live = LiveSession::start(
            self.shared.clone(),
            header,
            Vec::new(),
            None,
            seed_events,
            Some(writer),
        )?;
        self.go_live(live, marker, false)
    }

    /// SPEC §1.7 fork: a new live session seeded with the prefix of
    /// `source_id` up to `boundary` (inclusive; `None` = the last event).
    /// `child`: the new header (its cwd, parentSession and seedLength are
    /// set from the parent); `None` generates an id.
    pub fn fork(
        &self,
        source_id: &str,
        boundary: Option<i64>,
        child: Option<SessionHeader>,
    ) -> Result<LiveSession> {
        self.shared.check_open()?;
        let (parent, events) = if let Some(live) = self.shared.live(source_id) {
            (live.header().clone(), live.snapshot())
        } else {
            let _g = self.shared.ids.lock(source_id);
            let insp = match self.inspection(source_id) {
                Err(Error::NotFound { .. }) => {
                    return Err(Error::not_found_code(
                        "SESSION_NOT_FOUND",
                        format!("cannot fork: session {} not found", quote(source_id)),
                    ));
                }
                other => other?,
            };
            let view = self.cold_view(source_id, &insp)?;
            (view.header, view.events)
        };
        let prefix = seed::fork_prefix_len(&events, boundary)?;
        let child = child.unwrap_or_else(|| SessionHeader::new(new_session_id(), self.now_ms()));
        let header = seed::fork_child_header(&parent, child, prefix);
        let mut seed_events = events;
        seed_events.truncate(prefix);
        self.start_with_seed(header, seed_events)
    }

    /// Stops admitting events, drains every live session, closes storage.
    /// Returns the first drain error, after trying all.
    pub fn close(&self) -> Result<()> {
        if self.shared.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let live: Vec<Arc<LiveInner>> = self
            .shared
            .registry
            .lock()
            .live
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        let mut first_err = None;
        for l in live {
            if let Err(e) = l.close() {
                first_err.get_or_insert(e);
            }
        }
        self.shared.scheduler.stop();
        self.shared.save_checkpoints();
        // A session whose final drain failed keeps its pending events and
        // may retry its close (reliability D16): storage stays open for it
        // (it is released with the last handle).
        if first_err.is_none() {
            if let Err(e) = self.shared.backend.close() {
                first_err.get_or_insert(e);
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Whether `id` is live in this process.
    pub fn is_live(&self, id: &str) -> bool {
        self.shared.live(id).is_some()
    }
}

// Session management (issue 19; the operations live in `src/store/manage/`).

/// What this store has registered for an id, besides what is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Registered {
    Live,
    Created,
    Reserved,
    Nothing,
}

impl Store {
    /// Runs `f` with the per-id lock of `id` held (operations on one id
    /// are serialized).
    pub(crate) fn with_id_lock<T>(&self, id: &str, f: impl FnOnce() -> T) -> T {
        let _g = self.shared.ids.lock(id);
        f()
    }

    /// What this store has registered for `id`.
    pub(crate) fn registered(&self, id: &str) -> Registered {
        let reg = self.shared.registry.lock();
        if reg.live.get(id).is_some_and(|w| w.strong_count() > 0) {
            Registered::Live
        } else if reg.reserved.contains(id) {
            Registered::Reserved
        } else if reg.created.contains_key(id) {
            Registered::Created
        } else {
            Registered::Nothing
        }
    }

    /// Drops the registration of a `create`d, never written id.
    pub(crate) fn forget_created(&self, id: &str) -> bool {
        self.shared.registry.lock().created.remove(id).is_some()
    }

    /// Forgets what the store keeps about the stored state of `id` (the
    /// append tail, the retained inspection).
    pub(crate) fn invalidate(&self, id: &str) {
        self.shared.cache.lock().remove(id);
        self.shared.tails.lock().remove(id);
    }

    /// The vocabulary and strictness the rules run with.
    pub(crate) fn rules_config(&self) -> (&Vocabulary, bool) {
        (&self.shared.vocab, self.shared.config.strict)
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        self.shared.check_open()
    }

    /// The store's clock (see [`Store::with_backend`]), never before 1970:
    /// the `createdAt` of the headers the store makes itself.
    pub(crate) fn now_ms(&self) -> u64 {
        (self.shared.clock)().max(0) as u64
    }
}

/// Whether a suffix holds a pre-identity `tool/result` surface replace,
/// whose conversion (SPEC §1.9 rule 4) needs the shadowed message.
fn needs_history_for_legacy(events: &[Event]) -> bool {
    events.iter().any(|e| {
        e.event_type() == "tool/result"
            && e.surface_op()
                .as_ref()
                .is_some_and(|op| op.as_str().contains("replace"))
            && e.data_field("message").is_none()
    })
}

/// Events at or above this count are freed on a background thread.
const BACKGROUND_RELEASE_MIN: usize = 4096;

/// Frees `events`: a large vector (a JSONL `read_from` drops every event
/// before the start, ~100k allocations for the benchmark log, several ms) is
/// handed to a short-lived thread so the caller does not wait for it.
fn release(events: Vec<Event>) {
    if events.len() < BACKGROUND_RELEASE_MIN {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("dsh-release".into())
        .spawn(move || drop(events));
    // Could not spawn: the closure (and the events) were dropped here.
    let _ = spawned;
}

/// A random session id (UUID v4 text) for forks without a child header.
pub fn new_session_id() -> String {
    crate::uuid::uuid_v4()
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.scheduler.stop();
        if !self.closed.load(Ordering::Acquire) {
            // A store dropped without `close`: its append checkpoints are
            // still worth keeping (best effort, like at close).
            self.save_checkpoints();
        }
    }
}
