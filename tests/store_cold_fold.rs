//! The cold append's folding read (issue 16, `src/store/cold_fold.rs`,
//! `src/model/log_fold.rs`): without a usable checkpoint a cold append
//! streams the log through the load's rules and drops each event once it
//! is folded. These tests check that
//! - the folded state (revision, next seq, size count, header, the rules'
//!   state) or the refusal equals a full read's, on every upstream fixture
//!   root (strict and not) and on generated logs of every local backend;
//! - a cold append decides what a load decides (accepts what it loads,
//!   refuses with the load's error);
//! - a cold append on a long log holds a stretch of it, never the whole
//!   log (the store's `cold_reads` counter), except to adopt a torn tail.

mod support;

use std::fs;
use std::path::Path;

use dsh_persist::backend::EventSink;
use dsh_persist::model::event::Event;
use dsh_persist::model::header::SessionHeader;
use dsh_persist::model::log_fold::LogFold;
use dsh_persist::model::validate::{LogState, session_view};
use dsh_persist::model::vocabulary::Vocabulary;
use dsh_persist::store::{
    BackendConfig, ColdReads, Compression, JsonlConfig, SqliteConfig, Store, StoreConfig,
};

/// What a cold append continues from: (revision, next seq, log bytes,
/// header, rules), `Torn` (it adopts the torn tail from a full read), or
/// the refusal.
#[derive(Debug, PartialEq)]
enum State {
    Clean(String, u64, u64, SessionHeader, Box<LogState>),
    Torn(String),
    Refused(String),
}

fn vocab_of(store: &Store) -> Vocabulary {
    Vocabulary::with_extra(store.config().extra_event_types.iter().cloned())
}

/// The state a full read gives: the load's read and rules, then the fold
/// of the events it kept.
fn full_state(store: &Store, id: &str) -> State {
    let mut stored = match store.backend().read(id) {
        Ok(Some(s)) => s,
        Ok(None) => return State::Refused("not stored".into()),
        Err(e) => return State::Refused(e.to_string()),
    };
    if stored.torn.is_some() {
        return State::Torn(stored.revision.0);
    }
    if let Some(p) = stored.header.problem() {
        return State::Refused(format!("header: {p}"));
    }
    let vocab = vocab_of(store);
    let raw = stored.raw_log.clone();
    if let Err(e) = session_view(
        id,
        raw.as_deref(),
        &vocab,
        store.config().strict,
        &mut stored.events,
    ) {
        return State::Refused(e.to_string());
    }
    State::Clean(
        stored.revision.0.clone(),
        stored.events.len() as u64,
        stored.log_bytes,
        stored.header.clone(),
        Box::new(LogState::fold(&stored.events)),
    )
}

struct Folding<'a> {
    fold: LogFold<'a>,
    id: &'a str,
    vocab: &'a Vocabulary,
    strict: bool,
    largest: usize,
}

impl EventSink for Folding<'_> {
    fn events(&mut self, events: &mut Vec<Event>) {
        self.largest = self.largest.max(events.len());
        for e in events.iter_mut() {
            self.fold.push(e);
        }
    }
    fn restart(&mut self) {
        self.fold = LogFold::new(self.id, self.vocab, self.strict);
    }
}

/// The state a folding read gives (what the store's cold append builds),
/// and the largest stretch it was handed.
fn folded_state(store: &Store, id: &str) -> (State, usize) {
    let vocab = vocab_of(store);
    let strict = store.config().strict;
    let mut sink = Folding {
        fold: LogFold::new(id, &vocab, strict),
        id,
        vocab: &vocab,
        strict,
        largest: 0,
    };
    let log = match store.backend().read_folding(id, &mut sink) {
        Ok(Some(l)) => l,
        Ok(None) => return (State::Refused("not stored".into()), 0),
        Err(e) => return (State::Refused(e.to_string()), sink.largest),
    };
    let largest = sink.largest;
    if log.torn {
        return (State::Torn(log.revision.0), largest);
    }
    if let Some(p) = log.header.problem() {
        return (State::Refused(format!("header: {p}")), largest);
    }
    assert_eq!(sink.fold.event_count() as u64, log.event_count, "{id}");
    let state = match sink.fold.finish(log.raw_log.as_deref()) {
        Ok(rules) => State::Clean(
            log.revision.0,
            log.event_count,
            log.log_bytes,
            log.header,
            Box::new(rules),
        ),
        Err(e) => State::Refused(e.to_string()),
    };
    (state, largest)
}

/// What `f` returned, as text to compare (ok, or the error).
fn outcome<T>(r: dsh_persist::Result<T>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => format!("{:?}: {e}", e.kind()),
    }
}

#[test]
fn the_folded_state_equals_a_full_read_on_every_fixture_root() {
    let (mut clean, mut refused, mut torn) = (0, 0, 0);
    for case in support::cases()["roots"].as_array().unwrap() {
        for strict in [false, true] {
            let (_tmp, copy) = support::fixture_copy(case["path"].as_str().unwrap());
            let mut config = support::case_store_config(case, &copy);
            config.strict = strict;
            let Ok(store) = Store::open(config.clone()) else {
                continue;
            };
            let Ok(list) = store.list() else {
                continue;
            };
            for id in list.iter().map(|h| h.id.as_str()) {
                let full = full_state(&store, id);
                let (folded, _) = folded_state(&store, id);
                assert_eq!(folded, full, "{} {id} strict={strict}", case["path"]);
                match full {
                    State::Clean(..) => clean += 1,
                    State::Refused(_) => refused += 1,
                    State::Torn(_) => torn += 1,
                }
                // Through the store: a cold (empty) append on a fresh
                // store decides what an inspection decides, and folds the
                // log unless it must adopt a torn tail.
                let fresh = Store::open(config.clone()).unwrap();
                let appended = outcome(fresh.append(id, Vec::new()));
                let reads = fresh.cold_reads();
                let inspected = outcome(Store::open(config.clone()).unwrap().inspect(id));
                assert_eq!(appended, inspected, "{} {id} strict={strict}", case["path"]);
                // (An append refused before it reads, as an inspection
                // is, reads nothing.)
                if appended == "ok" {
                    assert_eq!(reads.folded, 1, "{id}: {reads:?}");
                }
                if !matches!(folded, State::Torn(_)) {
                    assert_eq!(reads.kept, 0, "{id}: {reads:?}");
                }
            }
        }
    }
    assert!(
        clean >= 20 && refused >= 5 && torn >= 2,
        "{clean} clean, {refused} refused, {torn} torn"
    );
}

fn jsonl(root: &Path, compression: Compression) -> StoreConfig {
    let mut c = JsonlConfig::new(root);
    c.compression = compression;
    StoreConfig::with_backend(BackendConfig::Jsonl(c))
}

fn sqlite(root: &Path) -> StoreConfig {
    StoreConfig::with_backend(BackendConfig::Sqlite(SqliteConfig::new(
        root.join("s.db").display().to_string(),
    )))
}

/// Writes `events` to a new session `id` in batches of varying sizes.
fn write_log(config: &StoreConfig, id: &str, events: &[Event]) {
    let store = Store::open(config.clone()).unwrap();
    store.create(SessionHeader::new(id, 1)).unwrap();
    let mut at = 0;
    let mut k = 7usize;
    while at < events.len() {
        let n = (50 + k % 450).min(events.len() - at);
        store.append(id, events[at..at + n].to_vec()).unwrap();
        at += n;
        k = k.wrapping_mul(31).wrapping_add(17);
    }
    store.close().unwrap();
}

/// A cold append of the next events on a fresh store without a
/// checkpoint: what it read.
fn cold_append(config: &StoreConfig, id: &str, next: &[Event]) -> ColdReads {
    let store = Store::open(config.clone()).unwrap();
    if let Some(dir) = store.backend().cache_dir() {
        let _ = fs::remove_dir_all(dir);
    }
    store.append(id, next.to_vec()).unwrap();
    let reads = store.cold_reads();
    store.close().unwrap();
    reads
}

#[test]
fn the_folded_state_equals_a_full_read_on_generated_logs() {
    let t = support::TempDir::new("cold-fold-gen");
    generated_logs_agree(vec![
        ("zstd", jsonl(&t.path().join("z"), Compression::Zstd)),
        ("none", jsonl(&t.path().join("n"), Compression::None)),
        ("sqlite", sqlite(t.path())),
    ]);
}

#[test]
fn the_folded_state_equals_a_full_read_on_generated_postgres_logs() {
    let Some(url) = support::pg::url("cold fold on PostgreSQL") else {
        return;
    };
    let schema = support::pg::Schema::new(&url, "coldfold");
    let config = StoreConfig::with_backend(BackendConfig::Postgres(schema.config()));
    generated_logs_agree(vec![("postgres", config)]);
    support::pg::drop_schema(&url, &schema.name);
}

fn generated_logs_agree(kinds: Vec<(&str, StoreConfig)>) {
    let events = support::workload(12_000);
    for (name, config) in kinds {
        for strict in [false, true] {
            let mut config = config.clone();
            config.strict = strict;
            let id = format!("gen-{strict}");
            // Ends inside a turn (an open turn is folded, not closed).
            let cut = events.len() - 5;
            write_log(&config, &id, &events[..cut - 40]);
            let store = Store::open(config.clone()).unwrap();
            let full = full_state(&store, &id);
            assert!(matches!(full, State::Clean(..)), "{name}: {full:?}");
            assert_eq!(folded_state(&store, &id).0, full, "{name} strict={strict}");
            drop(store);
            // A cold append continues from it; then the state again.
            let reads = cold_append(&config, &id, &events[cut - 40..cut]);
            assert_eq!((reads.folded, reads.kept), (1, 0), "{name}: {reads:?}");
            let store = Store::open(config.clone()).unwrap();
            let full = full_state(&store, &id);
            assert_eq!(folded_state(&store, &id).0, full, "{name} strict={strict}");
            let State::Clean(_, next, ..) = full else {
                panic!("{name}: {full:?}")
            };
            assert_eq!(next, cut as u64);
        }
    }
}

#[test]
fn a_cold_append_holds_a_stretch_of_a_long_log_not_the_log() {
    let events = support::workload(100_000);
    let n = events.len() - 50;
    let t = support::TempDir::new("cold-fold-long");
    for (name, config) in [
        ("zstd", jsonl(&t.path().join("z"), Compression::Zstd)),
        ("none", jsonl(&t.path().join("n"), Compression::None)),
        ("sqlite", sqlite(t.path())),
    ] {
        write_log(&config, "long", &events[..n]);
        let reads = cold_append(&config, "long", &events[n..]);
        assert_eq!((reads.folded, reads.kept), (1, 0), "{name}: {reads:?}");
        assert!(
            reads.most_events_held * 3 < n as u64,
            "{name}: a cold append held {} of {n} events at once",
            reads.most_events_held
        );
        // What it appended loads back (a load closes its open turn).
        let view = Store::open(config.clone()).unwrap().load("long").unwrap();
        assert!(view.events.len() >= events.len());
        for (a, b) in view.events.iter().zip(&events) {
            assert_eq!(a.to_json(), b.to_json(), "{name}");
        }
    }
}

#[test]
fn a_torn_tail_is_read_whole_to_be_adopted() {
    let events = support::workload(600);
    let t = support::TempDir::new("cold-fold-torn");
    let config = jsonl(t.path(), Compression::None);
    write_log(&config, "torn", &events[..500]);
    let store = Store::open(config.clone()).unwrap();
    let header = store.list().unwrap().remove(0);
    let Some(dsh_persist::backend::Location::Jsonl { path }) = store.locate(&header).unwrap()
    else {
        panic!("a JSONL location")
    };
    drop(store);
    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
    std::io::Write::write_all(&mut f, b"{\"type\":\"assistant/ch").unwrap();
    drop(f);
    let reads = cold_append(&config, "torn", &events[500..510]);
    assert_eq!((reads.folded, reads.kept), (1, 1), "{reads:?}");
    assert_eq!(reads.most_events_held, 500);
    let view = Store::open(config).unwrap().load("torn").unwrap();
    assert!(view.events.len() >= 510);
}
