//! The persisted append checkpoint (issue 16, `src/store/append_checkpoint.rs`):
//! a fresh store that appends cold continues from the checkpoint a closed
//! store left instead of reading the whole log. These tests check that it
//! stands for exactly what a full read builds, and that appends decide the
//! same either way:
//! - on every upstream fixture root: the checkpoint written after a cold
//!   (empty) append equals the fold of a full read;
//! - on logs built from the bench workload (JSONL and SQLite) in random
//!   batches, some of them broken: two identical stores, one reopened with
//!   its checkpoint and one with its cache removed before each reopen,
//!   accept and refuse the same batches with the same errors and end with
//!   identical bytes; a checkpoint found is used (no read of the log);
//! - an inspect followed by an append leaves one too (the full read seals
//!   a row store's rows), equal to a full read, and it is used;
//! - a checkpoint of an earlier revision (the log grew since, written by a
//!   writer that left none) and a damaged one are not used, nor one folded
//!   under other reading settings (an append would acknowledge events behind
//!   a log its load refuses);
//! - SQLite: a hand edit of a row or of the session row that keeps the
//!   revision (the `sqlite3` shell) is seen by the seal of the rows
//!   (`src/backend/rows/seal.rs`): the checkpoint is not used, the log is
//!   read, and the append decides as a load would;
//! - PostgreSQL with a `cacheDir` (the server test of `.ci/run`): the same
//!   decisions, stale and damaged checkpoints, live sessions, deletes,
//!   writers taking turns and hand edits (`psql`); without one, nothing is
//!   kept.

mod support;

use std::cell::RefCell;
use std::fs;
use std::path::{Path, PathBuf};

use dsh_persist::model::event::Event;
use dsh_persist::model::header::SessionHeader;
use dsh_persist::model::validate::{LogState, session_view};
use dsh_persist::model::vocabulary::Vocabulary;
use dsh_persist::store::append_checkpoint;
use dsh_persist::store::{BackendConfig, Store, StoreConfig};

/// The full-read state of `id` in `store`: (revision, next seq, log bytes,
/// header, fold), as the store builds it without a checkpoint.
fn full_read_state(store: &Store, id: &str) -> Option<(String, u64, u64, SessionHeader, LogState)> {
    let mut stored = store.backend().read(id).ok()??;
    if stored.torn.is_some() || stored.header.problem().is_some() {
        return None;
    }
    let cfg = store.config();
    let vocab = Vocabulary::with_extra(cfg.extra_event_types.iter().cloned());
    session_view(id, None, &vocab, cfg.strict, &mut stored.events).ok()?;
    Some((
        stored.revision.0.clone(),
        stored.events.len() as u64,
        stored.log_bytes,
        stored.header.clone(),
        LogState::fold(&stored.events),
    ))
}

fn checkpoint_of(store: &Store, id: &str) -> Option<append_checkpoint::Checkpoint> {
    let dir = store.backend().cache_dir()?;
    let rev = store.backend().revision(id).ok()??;
    append_checkpoint::load(
        &dir,
        id,
        &rev,
        &append_checkpoint::rules_key(store.config()),
        store.config().backend.limits().max_log_bytes,
    )
}

#[test]
fn checkpoints_equal_a_full_read_on_every_fixture_root() {
    let mut compared = 0;
    for case in support::cases()["roots"].as_array().unwrap() {
        let (_tmp, copy) = support::fixture_copy(case["path"].as_str().unwrap());
        let config = support::case_store_config(case, &copy);
        let Ok(store) = Store::open(config.clone()) else {
            continue;
        };
        let Ok(list) = store.list() else {
            continue;
        };
        let ids: Vec<String> = list.into_iter().map(|h| h.id).collect();
        for id in &ids {
            // A cold empty append reads the log and keeps its tail.
            let _ = store.append(id, Vec::new());
        }
        store.close().unwrap();
        let store = Store::open(config).unwrap();
        for id in &ids {
            let full = full_read_state(&store, id);
            let ckpt = checkpoint_of(&store, id);
            match (full, ckpt) {
                (Some((rev, next, bytes, header, rules)), Some(c)) => {
                    assert_eq!(c.revision.0, rev, "{id}");
                    assert_eq!(c.next_seq, next, "{id}");
                    assert_eq!(c.log_bytes, bytes, "{id}");
                    // (the checkpoint keeps the header as its JSONL line;
                    // a row store's adoption takes the session row's)
                    assert_eq!(c.header.to_jsonl_line(), header.to_jsonl_line(), "{id}");
                    assert_eq!(c.rules, rules, "{id}: the rules' state");
                    compared += 1;
                }
                (None, Some(_)) => panic!("{id}: a checkpoint for a log a load refuses"),
                _ => {}
            }
        }
    }
    assert!(compared >= 10, "only {compared} sessions compared");
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One way of breaking an event that some rule refuses (or, for a few,
/// that the rules accept: the decision must only be the same both ways).
fn break_event(e: &mut Event, how: u64) {
    use dsh_persist::model::json::JsonText;
    match how {
        0 => e.seq += 1,
        1 => e.set_surface_op(None),
        2 => e.set_surface_op(Some(JsonText::from_trusted(
            r#"{"op":"replace","start":1,"end":0}"#,
        ))),
        3 => e.set_event_type(dsh_persist::model::event::EventType::new("future/required")),
        4 => e.set_surface_op(Some(JsonText::from_trusted(r#""append""#))),
        5 => e.data = JsonText::from_trusted(r#"{"turn":99,"step":1}"#),
        _ => e.set_source_event_seqs(Some(JsonText::from_trusted("[0]"))),
    }
}

fn redacted(r: &dsh_persist::Result<()>, root: &Path) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(e) => format!("{:?}: {}", e.kind(), support::redact(&e.to_string(), root)),
    }
}

fn cache_of(config: &StoreConfig) -> PathBuf {
    Store::open(config.clone())
        .unwrap()
        .backend()
        .cache_dir()
        .unwrap()
}

fn decisions_match(make: impl Fn(&Path) -> StoreConfig, strict: bool) {
    let events = support::workload(6000);
    let (ta, tb) = (
        support::TempDir::new("ckpt-a"),
        support::TempDir::new("ckpt-b"),
    );
    let with = |p: &Path| {
        let mut c = make(p);
        c.strict = strict;
        c
    };
    let (ca, cb) = (with(ta.path()), with(tb.path()));
    let cache_b = cache_of(&cb);
    let header = SessionHeader::new("gen", 1);
    for c in [&ca, &cb] {
        let s = Store::open(c.clone()).unwrap();
        s.create(header.clone()).unwrap();
        s.append("gen", events[..3].to_vec()).unwrap();
        s.close().unwrap();
    }
    let mut rng = Rng(0x5eed_0000_0000_0001 ^ u64::from(strict));
    let mut at = 3usize;
    let (mut accepted, mut refused, mut resumed) = (0, 0, 0);
    while at < events.len() && accepted + refused < 120 {
        let k = (1 + rng.below(150) as usize).min(events.len() - at);
        let mut batch = events[at..at + k].to_vec();
        let broken = rng.below(4) == 0;
        if broken {
            let i = rng.below(k as u64) as usize;
            break_event(&mut batch[i], rng.below(7));
        }
        let _ = fs::remove_dir_all(&cache_b);
        let a = Store::open(ca.clone()).unwrap();
        let had_checkpoint = checkpoint_of(&a, "gen").is_some();
        let ra = a.append("gen", batch.clone());
        if had_checkpoint {
            // Used: the log was not read.
            assert_eq!(a.cold_reads(), Default::default(), "batch at {at}");
            resumed += 1;
        }
        a.close().unwrap();
        let b = Store::open(cb.clone()).unwrap();
        assert!(checkpoint_of(&b, "gen").is_none());
        let rb = b.append("gen", batch);
        b.close().unwrap();
        assert_eq!(
            redacted(&ra, ta.path()),
            redacted(&rb, tb.path()),
            "batch at {at} of {k} (broken: {broken})"
        );
        match ra {
            Ok(()) => {
                accepted += 1;
                at += k;
            }
            Err(_) => refused += 1,
        }
        if (accepted + refused) % 10 == 0 {
            let a = Store::open(ca.clone()).unwrap();
            let c = checkpoint_of(&a, "gen").expect("a checkpoint after close");
            let (rev, next, bytes, h, rules) = full_read_state(&a, "gen").unwrap();
            assert_eq!((c.revision.0, c.next_seq, c.log_bytes), (rev, next, bytes));
            assert_eq!(c.header.to_jsonl_line(), h.to_jsonl_line());
            assert_eq!(c.rules, rules, "after {accepted} appends");
        }
    }
    assert!(
        accepted > 20 && refused > 5,
        "{accepted} accepted, {refused} refused"
    );
    assert!(
        resumed > 20,
        "only {resumed} appends resumed from a checkpoint"
    );
    let va = Store::open(ca).unwrap().load("gen").unwrap().to_json();
    let vb = Store::open(cb).unwrap().load("gen").unwrap().to_json();
    assert_eq!(va, vb);
}

#[test]
fn jsonl_appends_decide_the_same_with_and_without_a_checkpoint() {
    decisions_match(|p| StoreConfig::jsonl(p.display().to_string()), false);
}

#[test]
fn jsonl_strict_appends_decide_the_same_with_and_without_a_checkpoint() {
    decisions_match(|p| StoreConfig::jsonl(p.display().to_string()), true);
}

#[test]
fn sqlite_appends_decide_the_same_with_and_without_a_checkpoint() {
    decisions_match(sqlite_config, false);
}

#[test]
fn sqlite_strict_appends_decide_the_same_with_and_without_a_checkpoint() {
    decisions_match(sqlite_config, true);
}

fn sqlite_config(dir: &Path) -> StoreConfig {
    StoreConfig::sqlite(dir.join("sessions.db").display().to_string())
}

fn jsonl_config(dir: &Path) -> StoreConfig {
    StoreConfig::jsonl(dir.display().to_string())
}

/// PostgreSQL stores with a `cacheDir` inside the temp dir each is made
/// for: a schema of its own per dir, dropped with the returned maker.
fn pg_config(url: &str, tag: &str) -> impl Fn(&Path) -> StoreConfig + use<> {
    let made: RefCell<Vec<(PathBuf, support::pg::Schema)>> = RefCell::default();
    let (url, tag) = (url.to_string(), tag.to_string());
    move |dir: &Path| {
        let mut made = made.borrow_mut();
        if !made.iter().any(|(d, _)| d == dir) {
            made.push((dir.to_path_buf(), support::pg::Schema::new(&url, &tag)));
        }
        let (_, schema) = made.iter().find(|(d, _)| d == dir).unwrap();
        let mut c = schema.config();
        c.cache_dir = Some(dir.join("pg-cache"));
        StoreConfig::with_backend(BackendConfig::Postgres(c))
    }
}

#[test]
fn postgres_appends_decide_the_same_with_and_without_a_checkpoint() {
    let Some(url) = support::pg::url("postgres_appends_decide_the_same") else {
        return;
    };
    decisions_match(pg_config(&url, "ckpt_decide"), false);
}

#[test]
fn a_stale_or_damaged_checkpoint_is_not_used() {
    stale_or_damaged(jsonl_config);
}

#[test]
fn a_stale_or_damaged_sqlite_checkpoint_is_not_used() {
    stale_or_damaged(sqlite_config);
}

#[test]
fn a_stale_or_damaged_postgres_checkpoint_is_not_used() {
    let Some(url) = support::pg::url("a_stale_or_damaged_postgres_checkpoint") else {
        return;
    };
    stale_or_damaged(pg_config(&url, "ckpt_stale"));
}

fn stale_or_damaged(make: impl Fn(&Path) -> StoreConfig) {
    let events = support::workload(400);
    let t = support::TempDir::new("ckpt-stale");
    let config = make(t.path());
    let s = Store::open(config.clone()).unwrap();
    s.create(SessionHeader::new("s", 1)).unwrap();
    s.append("s", events[..100].to_vec()).unwrap();
    s.close().unwrap();
    let dir = cache_of(&config);
    let file = append_checkpoint::file_of(&dir, "s");
    let old = fs::read(&file).unwrap();
    // Another writer appends and leaves no checkpoint of its own (the old
    // one is put back): the log grew past what the checkpoint describes.
    let s = Store::open(config.clone()).unwrap();
    s.append("s", events[100..200].to_vec()).unwrap();
    s.close().unwrap();
    fs::write(&file, &old).unwrap();
    let s = Store::open(config.clone()).unwrap();
    assert!(
        checkpoint_of(&s, "s").is_none(),
        "describes an older revision"
    );
    // The append continues at the real end (seq 200), not the checkpoint's.
    let err = s.append("s", events[100..110].to_vec()).unwrap_err();
    assert!(err.to_string().contains("expected 200"), "{err}");
    s.append("s", events[200..300].to_vec()).unwrap();
    s.close().unwrap();
    // A damaged checkpoint of the current revision is refused by its hash.
    let mut bad = fs::read(&file).unwrap();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x20;
    fs::write(&file, &bad).unwrap();
    let s = Store::open(config.clone()).unwrap();
    assert!(checkpoint_of(&s, "s").is_none());
    s.append("s", events[300..400].to_vec()).unwrap();
    s.close().unwrap();
    let v = Store::open(config).unwrap().load("s").unwrap();
    // (load may close an open last turn after them)
    assert!(v.events.len() >= 400);
    for (a, b) in v.events[..400].iter().zip(&events) {
        assert_eq!(a.to_json(), b.to_json());
    }
}

/// A checkpoint stands for a read under the settings it was folded with
/// (strict, `extraEventTypes`, the limits). A store that reads with other
/// settings, here without the extra event type the log holds, does not use
/// it: it reads the log and refuses the append as its load refuses the log,
/// instead of acknowledging events behind a log it would not open.
#[test]
fn a_checkpoint_folded_under_other_settings_is_not_used() {
    for make in [jsonl_config, sqlite_config] {
        let t = support::TempDir::new("ckpt-settings");
        let events = support::workload(600);
        let n = 1 + events
            .iter()
            .rposition(|e| e.type_str() == "turn/end")
            .unwrap();
        let event = |seq: usize, text: &str| {
            Event::parse(&format!(
                r#"{{"type":{text},"seq":{seq},"time":5,"data":{{"turn":99}}}}"#
            ))
            .unwrap()
        };
        let mut with_extra = make(t.path());
        with_extra.extra_event_types = vec!["x/custom".into()];
        let s = Store::open(with_extra.clone()).unwrap();
        s.create(SessionHeader::new("s", 1)).unwrap();
        s.append("s", events[..n].to_vec()).unwrap();
        s.append("s", vec![event(n, "\"x/custom\"")]).unwrap();
        s.close().unwrap();
        let s = Store::open(with_extra.clone()).unwrap();
        assert!(checkpoint_of(&s, "s").is_some(), "a checkpoint after close");
        s.close().unwrap();

        let plain = make(t.path());
        let s = Store::open(plain).unwrap();
        assert!(
            checkpoint_of(&s, "s").is_none(),
            "folded under other settings"
        );
        let load = s.inspect("s").unwrap_err();
        let append = s
            .append("s", vec![event(n + 1, "\"turn/start\"")])
            .unwrap_err();
        assert_eq!(append.kind(), load.kind(), "{append} / {load}");
        s.close().unwrap();
        // Nothing was written: the log still ends at the custom event.
        let s = Store::open(with_extra).unwrap();
        assert_eq!(s.read_from("s", 0).unwrap().events.len(), n + 1);
        s.close().unwrap();
    }
}

#[test]
fn a_live_session_leaves_a_checkpoint_when_it_closes() {
    live_checkpoint(jsonl_config);
}

#[test]
fn a_live_sqlite_session_leaves_a_checkpoint_when_it_closes() {
    live_checkpoint(sqlite_config);
}

#[test]
fn a_live_postgres_session_leaves_a_checkpoint_when_it_closes() {
    let Some(url) = support::pg::url("a_live_postgres_session_leaves_a_checkpoint") else {
        return;
    };
    live_checkpoint(pg_config(&url, "ckpt_live"));
}

fn live_checkpoint(make: impl Fn(&Path) -> StoreConfig) {
    let t = support::TempDir::new("ckpt-live");
    let config = make(t.path());
    let store = Store::open(config.clone()).unwrap();
    let live = store.start(SessionHeader::new("live", 1)).unwrap();
    let mut n = 0;
    for turn in 1..=3 {
        n += support::conv::complete_turn(&live, turn);
    }
    live.close().unwrap();
    drop(live);
    let store = Store::open(config.clone()).unwrap();
    let c = checkpoint_of(&store, "live").expect("a checkpoint after the close");
    let (rev, next, bytes, header, rules) = full_read_state(&store, "live").unwrap();
    assert_eq!((c.revision.0, c.next_seq, c.log_bytes), (rev, next, bytes));
    assert_eq!(next, n as u64);
    assert_eq!(c.header.to_jsonl_line(), header.to_jsonl_line());
    assert_eq!(c.rules, rules);
    // A cold append continues from it.
    let more = format!(r#"[{{"type":"turn/start","seq":{n},"time":0,"data":{{"turn":4}}}}]"#);
    store.append_json("live", &more).unwrap();
    assert_eq!(
        store.cold_reads(),
        Default::default(),
        "the log was not read"
    );
    let other = more.replace(r#""turn":4"#, r#""turn":5"#);
    let err = store.append_json("live", &other).unwrap_err();
    assert!(err.to_string().contains("seq"), "{err}");
}

#[test]
fn an_inspect_then_an_append_leaves_a_checkpoint() {
    inspect_then_append(jsonl_config);
}

#[test]
fn a_sqlite_inspect_then_an_append_leaves_a_checkpoint() {
    inspect_then_append(sqlite_config);
}

#[test]
fn a_postgres_inspect_then_an_append_leaves_a_checkpoint() {
    let Some(url) = support::pg::url("a_postgres_inspect_then_an_append_leaves_a_checkpoint")
    else {
        return;
    };
    inspect_then_append(pg_config(&url, "ckpt_inspect"));
}

/// A host that shows a session's history and then goes on with it: a
/// fresh store inspects the log (the full read, with the rows of a row
/// store sealed on both of its threads; the inspection is retained) and
/// appends from that read; its close leaves a checkpoint that equals a
/// full read, and the next process's cold append continues from it
/// without reading the log. (A load hands its events to the caller, so
/// an append after it folds the log again, and that fold seals.)
fn inspect_then_append(make: impl Fn(&Path) -> StoreConfig) {
    let events = support::workload(1200);
    let t = support::TempDir::new("ckpt-load");
    let config = make(t.path());
    let n = with_checkpoint(&config, &events);
    // No checkpoint left from the writes: the next one comes from the load.
    fs::remove_dir_all(cache_of(&config).join("append")).unwrap();
    let s = Store::open(config.clone()).unwrap();
    assert!(checkpoint_of(&s, "s").is_none());
    assert_eq!(s.inspect("s").unwrap().events.len(), n);
    s.append("s", events[n..n + 10].to_vec()).unwrap();
    assert_eq!(
        s.cold_reads(),
        Default::default(),
        "the inspection's read served"
    );
    s.close().unwrap();
    let s = Store::open(config.clone()).unwrap();
    let c = checkpoint_of(&s, "s").expect("a checkpoint after inspect + append");
    let (rev, next, bytes, header, rules) = full_read_state(&s, "s").unwrap();
    assert_eq!((c.revision.0, c.next_seq, c.log_bytes), (rev, next, bytes));
    assert_eq!(next, n as u64 + 10);
    assert_eq!(c.header.to_jsonl_line(), header.to_jsonl_line());
    assert_eq!(c.rules, rules);
    s.append("s", events[n + 10..n + 20].to_vec()).unwrap();
    assert_eq!(
        s.cold_reads(),
        Default::default(),
        "the checkpoint was used"
    );
    // What it accepted, a load accepts (and closes the open turn after).
    let loaded = s.load("s").unwrap().events;
    assert!(loaded.len() >= n + 20, "{} events", loaded.len());
    for (a, b) in loaded[n..n + 20].iter().zip(&events[n..n + 20]) {
        assert_eq!(a.to_json(), b.to_json());
    }
}

#[test]
fn a_close_saves_the_checkpoints_of_the_longest_logs_only() {
    let events = support::workload(200);
    let t = support::TempDir::new("ckpt-many");
    let config = StoreConfig::jsonl(t.path().display().to_string());
    let s = Store::open(config.clone()).unwrap();
    let extra = 6;
    let sessions = append_checkpoint::MAX_SAVED_AT_CLOSE + extra;
    for i in 0..sessions {
        let id = format!("s{i:03}");
        s.create(SessionHeader::new(&id, 1)).unwrap();
        s.append(&id, events[..10 + i].to_vec()).unwrap();
    }
    s.close().unwrap();
    let dir = cache_of(&config);
    let saved = fs::read_dir(dir.join("append")).unwrap().count();
    assert_eq!(saved, append_checkpoint::MAX_SAVED_AT_CLOSE);
    let s = Store::open(config).unwrap();
    for i in 0..sessions {
        let id = format!("s{i:03}");
        assert_eq!(checkpoint_of(&s, &id).is_some(), i >= extra, "{id}");
    }
}

/// A SQLite store holding session "s" (the workload's first two turns,
/// 1,067 events, in rows both scalar and packed), closed with its
/// checkpoint: the config, the database's path and the event count.
fn sqlite_with_checkpoint(t: &support::TempDir, events: &[Event]) -> (StoreConfig, PathBuf, usize) {
    let config = sqlite_config(t.path());
    let n = with_checkpoint(&config, events);
    (config, t.path().join("sessions.db"), n)
}

/// Session "s" of `config` holding `events` up to the last turn/end in
/// the first 1,100, appended in batches of 60 and closed: its checkpoint
/// is there. Returns how many events it holds.
fn with_checkpoint(config: &StoreConfig, events: &[Event]) -> usize {
    let n = 1 + events[..1100]
        .iter()
        .rposition(|e| e.type_str() == "turn/end")
        .unwrap();
    let s = Store::open(config.clone()).unwrap();
    s.create(SessionHeader::new("s", 1)).unwrap();
    for batch in events[..n].chunks(60) {
        s.append("s", batch.to_vec()).unwrap();
    }
    s.close().unwrap();
    let s = Store::open(config.clone()).unwrap();
    assert!(checkpoint_of(&s, "s").is_some(), "a checkpoint after close");
    n
}

/// An edit in the `sqlite3` shell: it changes rows, not the revision.
fn hand_edit(db: &Path, sql: &str) {
    let c = rusqlite::Connection::open(db).unwrap();
    let changed = c.execute(sql, []).unwrap();
    assert_eq!(changed, 1, "{sql}");
}

/// The revision of "s", and what a load says of it.
fn revision_and_load(config: &StoreConfig) -> (String, String) {
    let s = Store::open(config.clone()).unwrap();
    let rev = s.backend().revision("s").unwrap().unwrap().0;
    let load = match s.load("s") {
        Ok(v) => format!("{} events", v.events.len()),
        Err(e) => e.to_string(),
    };
    (rev, load)
}

#[test]
fn a_hand_edit_of_a_sqlite_row_is_seen_through_the_checkpoint() {
    let events = support::workload(1200);
    let t = support::TempDir::new("ckpt-edit-row");
    let (config, db, n) = sqlite_with_checkpoint(&t, &events);
    let seq = {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.query_row(MIDDLE_SCALAR_ROW_SQL, [], |r| r.get::<_, i64>(0))
            .unwrap()
    };
    a_type_edit_is_seen(&config, &events, n, seq, &mut |sql| hand_edit(&db, sql));
}

/// A middle scalar row of session "s" (seq 100 to 200).
const MIDDLE_SCALAR_ROW_SQL: &str = "SELECT seq FROM events WHERE session_id = 's' AND ignorable IS NULL AND seq BETWEEN 100 AND 200 ORDER BY seq LIMIT 1";

/// Session "s" of `config` holds `events[..n]` and has its checkpoint; an
/// edit by hand (`edit` runs one `UPDATE` in the database's own shell) gives
/// the row at `seq` a type no reader knows. A load refuses the log and the
/// revision stays; the checkpoint still names the revision, but its seal
/// does not match the rows, so the append reads the log and refuses as the
/// load does. Undone by hand (the same bytes again), the checkpoint stands
/// for the rows once more and is used.
fn a_type_edit_is_seen(
    config: &StoreConfig,
    events: &[Event],
    n: usize,
    seq: i64,
    edit: &mut dyn FnMut(&str),
) {
    let (rev, load) = revision_and_load(config);
    assert_eq!(load, format!("{n} events"));
    edit(&format!(
        "UPDATE events SET type = 'future/required' WHERE session_id = 's' AND seq = {seq}"
    ));
    let (rev_after, load) = revision_and_load(config);
    assert_eq!(rev_after, rev, "a hand edit keeps the revision");
    assert!(load.contains("future/required"), "{load}");
    let s = Store::open(config.clone()).unwrap();
    assert!(checkpoint_of(&s, "s").is_some());
    let err = s.append("s", events[n..n + 10].to_vec()).unwrap_err();
    assert_eq!(err.to_string(), load);
    assert_eq!(s.cold_reads().folded, 1, "the log was read");
    drop(s);
    edit(&format!(
        "UPDATE events SET type = '{}' WHERE session_id = 's' AND seq = {seq}",
        events[seq as usize].type_str()
    ));
    let s = Store::open(config.clone()).unwrap();
    s.append("s", events[n..n + 10].to_vec()).unwrap();
    assert_eq!(
        s.cold_reads(),
        Default::default(),
        "the checkpoint was used"
    );
}

#[test]
fn a_hand_edit_of_a_packed_sqlite_row_is_seen_through_the_checkpoint() {
    let events = support::workload(1200);
    let t = support::TempDir::new("ckpt-edit-packed");
    let (config, db, n) = sqlite_with_checkpoint(&t, &events);
    // A chunk's text in a packed row, same length: nothing a load
    // refuses, but another log.
    hand_edit(
        &db,
        "UPDATE events SET data = replace(data, '\" run\"', '\"_run\"') WHERE session_id = 's' AND seq = (SELECT min(seq) FROM events WHERE session_id = 's' AND ignorable = 0 AND typeof(data) = 'text' AND instr(data, '\" run\"') > 0)",
    );
    let s = Store::open(config.clone()).unwrap();
    s.append("s", events[n..n + 10].to_vec()).unwrap();
    assert_eq!(s.cold_reads().folded, 1, "the log was read");
    s.close().unwrap();
    // The checkpoint that append left is of the edited rows: used next.
    let s = Store::open(config).unwrap();
    s.append("s", events[n + 10..n + 20].to_vec()).unwrap();
    assert_eq!(s.cold_reads(), Default::default());
    let v = s.load("s").unwrap();
    assert!(v.events.len() >= n + 20);
    assert!(v.to_json().contains("\"_run\""));
}

#[test]
fn a_hand_edit_of_the_sqlite_session_row_is_seen_through_the_checkpoint() {
    let events = support::workload(1200);
    let t = support::TempDir::new("ckpt-edit-header");
    let (config, db, n) = sqlite_with_checkpoint(&t, &events);
    hand_edit(&db, "UPDATE sessions SET cwd = '/elsewhere' WHERE id = 's'");
    let s = Store::open(config.clone()).unwrap();
    s.append("s", events[n..n + 10].to_vec()).unwrap();
    assert_eq!(s.cold_reads().folded, 1, "the log was read");
    s.close().unwrap();
    // (a read, not a load: a load would close the open turn)
    let s = Store::open(config.clone()).unwrap();
    let stored = s.backend().read("s").unwrap().unwrap();
    assert_eq!(stored.header.cwd.as_deref(), Some("/elsewhere"));
    // The checkpoint that append left has the new header.
    s.append("s", events[n + 10..n + 20].to_vec()).unwrap();
    assert_eq!(s.cold_reads(), Default::default());
    s.close().unwrap();
    // A header a read refuses is refused through a checkpoint too.
    hand_edit(&db, "UPDATE sessions SET created_at = -5 WHERE id = 's'");
    let s = Store::open(config).unwrap();
    let load = s.load("s").unwrap_err();
    assert!(load.to_string().contains("created_at -5"), "{load}");
    let err = s.append("s", events[n + 20..n + 30].to_vec()).unwrap_err();
    assert_eq!(err.to_string(), load.to_string());
}

/// Session "s" created in a store of `config` with `events`, then closed
/// (leaving its checkpoint).
fn stored_session(config: &StoreConfig, events: &[Event]) {
    let s = Store::open(config.clone()).unwrap();
    s.create(SessionHeader::new("s", 1)).unwrap();
    s.append("s", events.to_vec()).unwrap();
    s.close().unwrap();
}

#[test]
fn a_hand_edit_of_a_postgres_row_is_seen_through_the_checkpoint() {
    let Some(url) = support::pg::url("a_hand_edit_of_a_postgres_row") else {
        return;
    };
    let events = support::workload(1200);
    let t = support::TempDir::new("ckpt-edit-pg");
    let schema = support::pg::Schema::new(&url, "ckpt_edit");
    let mut pg = schema.config();
    pg.cache_dir = Some(t.path().join("pg-cache"));
    let config = StoreConfig::with_backend(BackendConfig::Postgres(pg));
    let n = with_checkpoint(&config, &events);
    // Edits in psql.
    let mut admin = schema.admin();
    let seq: i64 = admin.query_one(MIDDLE_SCALAR_ROW_SQL, &[]).unwrap().get(0);
    let mut edit = |sql: &str| assert_eq!(admin.execute(sql, &[]).unwrap(), 1, "{sql}");
    a_type_edit_is_seen(&config, &events, n, seq, &mut edit);
    // An edit of the session row is seen too; the checkpoint that append
    // leaves has the new header.
    edit("UPDATE sessions SET cwd = '/elsewhere' WHERE id = 's'");
    let s = Store::open(config.clone()).unwrap();
    s.append("s", events[n + 10..n + 20].to_vec()).unwrap();
    assert_eq!(s.cold_reads().folded, 1, "the log was read");
    s.close().unwrap();
    let s = Store::open(config).unwrap();
    s.append("s", events[n + 20..n + 30].to_vec()).unwrap();
    assert_eq!(s.cold_reads(), Default::default());
    let stored = s.backend().read("s").unwrap().unwrap();
    assert_eq!(stored.header.cwd.as_deref(), Some("/elsewhere"));
    assert_eq!(stored.events.len(), n + 30);
}

#[test]
fn a_postgres_store_without_a_cache_dir_keeps_nothing_and_a_shared_one_is_refused() {
    let Some(url) = support::pg::url("a_postgres_store_without_a_cache_dir") else {
        return;
    };
    let events = support::workload(300);
    let schema = support::pg::Schema::new(&url, "ckpt_none");
    let config = StoreConfig::with_backend(BackendConfig::Postgres(schema.config()));
    stored_session(&config, &events[..100]);
    let s = Store::open(config.clone()).unwrap();
    assert_eq!(s.backend().cache_dir(), None);
    // Every cold append reads the log.
    s.append("s", events[100..150].to_vec()).unwrap();
    assert_eq!(s.cold_reads().folded, 1);
    s.close().unwrap();
    // A cacheDir others may write to is refused at open, naming it.
    let t = support::TempDir::new("ckpt-shared-pg");
    let shared = t.path().join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let mut pg = schema.config();
    pg.cache_dir = Some(shared.clone());
    let err = match Store::open(StoreConfig::with_backend(BackendConfig::Postgres(pg))) {
        Ok(_) => panic!("a world-writable cacheDir was taken"),
        Err(e) => e,
    };
    assert_eq!(err.kind(), dsh_persist::ErrorKind::InvalidArgument);
    assert!(
        err.to_string().contains(&shared.display().to_string()),
        "{err}"
    );
}

#[test]
fn a_delete_removes_the_checkpoint() {
    let events = support::workload(100);
    for_each_kind("ckpt_delete", |make| {
        let t = support::TempDir::new("ckpt-delete");
        let config = make(t.path());
        stored_session(&config, &events);
        let file = append_checkpoint::file_of(&cache_of(&config), "s");
        assert!(file.is_file(), "{}", file.display());
        let s = Store::open(config.clone()).unwrap();
        s.delete("s").unwrap();
        assert!(!file.exists(), "{}", file.display());
        // A new session of that id starts clean.
        s.create(SessionHeader::new("s", 2)).unwrap();
        s.append("s", events[..10].to_vec()).unwrap();
        s.close().unwrap();
        let v = Store::open(config).unwrap().load("s").unwrap();
        assert_eq!(v.header.created_at, 2);
    });
}

/// Runs `body` with a maker of JSONL, SQLite and (with the test server)
/// PostgreSQL stores that keep checkpoints.
fn for_each_kind(tag: &str, body: impl Fn(&dyn Fn(&Path) -> StoreConfig)) {
    body(&jsonl_config);
    body(&sqlite_config);
    if let Some(url) = support::pg::url(tag) {
        body(&pg_config(&url, tag));
    }
}

#[test]
fn writers_taking_turns_continue_from_each_others_checkpoints() {
    let events = support::workload(1200);
    for_each_kind("ckpt_turns", |make| {
        let t = support::TempDir::new("ckpt-turns");
        let config = make(t.path());
        stored_session(&config, &events[..40]);
        // Each round a fresh store (another process, as far as the
        // checkpoint knows) appends one batch and closes.
        for (round, batch) in events[40..].chunks(40).enumerate() {
            let s = Store::open(config.clone()).unwrap();
            s.append("s", batch.to_vec()).unwrap();
            assert_eq!(s.cold_reads(), Default::default(), "round {round}");
            s.close().unwrap();
        }
        let v = Store::open(config).unwrap().load("s").unwrap();
        for (a, b) in v.events.iter().zip(&events) {
            assert_eq!(a.to_json(), b.to_json());
        }
        assert!(v.events.len() >= events.len());
    });
}
