//! The fuzz targets' bodies, shared by the cargo-fuzz crate (`fuzz/`) and
//! the stable smoke test (`tests/fuzz_smoke.rs`, which includes this file).
//!
//! Each target decodes untrusted bytes with one of the library's parsers and
//! must never panic; where a parse succeeds, it also checks a round trip
//! (what was accepted is written back and re-read to the same thing).

use std::io::Write as _;
use std::path::PathBuf;

use dsh_persist::backend::jsonl::Compression;
use dsh_persist::backend::jsonl::codec_zstd::FrameDecoder;
use dsh_persist::backend::jsonl::frames;
use dsh_persist::backend::jsonl::reader;
use dsh_persist::backend::rows::Value;
use dsh_persist::backend::sqlite::rows::{self, StoredRow};
use dsh_persist::backend::sqlite::varint;
use dsh_persist::codec::chunk_rows::{PackedRow, Record};
use dsh_persist::model::event::Event;
use dsh_persist::model::header::{HeaderSource, SessionHeader};
use dsh_persist::model::json;
use dsh_persist::model::validate::LogState;
use dsh_persist::model::vocabulary::Vocabulary;
use dsh_persist::store::append_checkpoint::{self, Checkpoint};
use dsh_persist::store::cache_files;
use dsh_persist::store::catalog::search_index::{self, Doc};
use dsh_persist::store::catalog::summary::SessionSummary;
use dsh_persist::store::catalog::summary_index;
use dsh_persist::store::catalog::text::Role;

/// A target body.
pub type Target = fn(&[u8]);

/// The targets by name (the names of `fuzz/fuzz_targets/*.rs`).
pub const TARGETS: &[(&str, Target)] = &[
    ("record_line", record_line),
    ("jsonl_log", jsonl_log),
    ("zstd_frames", zstd_frames),
    ("chunk_row", chunk_row),
    ("sqlite_row", sqlite_row),
    ("header", header),
    ("json_canonical", json_canonical),
    ("c_abi", c_abi),
    ("store_files", store_files),
    ("append_checkpoint", append_checkpoint),
    ("catalog_index", catalog_index),
];

fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// A little reader of structured input from raw bytes.
struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }

    fn i64(&mut self) -> i64 {
        let mut v = [0u8; 8];
        for b in &mut v {
            *b = self.byte();
        }
        i64::from_le_bytes(v)
    }

    /// A length-prefixed piece (1 length byte).
    fn piece(&mut self) -> &'a [u8] {
        let n = (self.byte() as usize).min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
}

fn records_equal(a: &Record, b: &Record) -> bool {
    let (mut x, mut y) = (String::new(), String::new());
    a.write_json(&mut x);
    b.write_json(&mut y);
    x == y
}

fn expand(r: &Record) -> Vec<Event> {
    let mut out = Vec::new();
    r.expand_into(&mut out);
    out
}

/// `Record::parse_line`: a JSONL record line (event or packed row).
pub fn record_line(data: &[u8]) {
    let Some(line) = text(data) else { return };
    let Ok(record) = Record::parse_line(line) else {
        return;
    };
    let members = expand(&record);
    assert_eq!(members.len() as u64, record.member_count());
    for (i, e) in members.iter().enumerate() {
        assert_eq!(e.seq, record.first_seq() + i as u64);
    }
    let mut again = String::new();
    record.write_json(&mut again);
    let reparsed = Record::parse_line(&again)
        .unwrap_or_else(|e| panic!("written record does not parse: {e}: {again}"));
    assert!(
        records_equal(&record, &reparsed),
        "round trip differs: {again}"
    );
}

/// The whole JSONL read path (raw encoding): header, line rules, torn tails,
/// corruption, over a file holding the input.
pub fn jsonl_log(data: &[u8]) {
    thread_local! {
        // <root>/<project>/<session>/<file>: the layout the reader opens;
        // the root is removed when the thread ends.
        static ROOT: ScratchDir = ScratchDir(scratch("jsonl"));
    }
    ROOT.with(|root| {
        let dir = root.0.join("p").join("s");
        std::fs::create_dir_all(&dir).unwrap();
        let path = &dir.join("session.jsonl");
        let mut f = std::fs::File::create(path).unwrap();
        f.write_all(data).unwrap();
        drop(f);
        let _ = reader::read_log(path, Compression::None, &Default::default());
        let _ = reader::read_text(path, Compression::None, &Default::default());
    });
}

/// A scratch directory removed when dropped (a thread-local one: when its
/// thread ends).
struct ScratchDir(PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A scratch directory of this process and thread for `what`.
fn scratch(what: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "dsh-fuzz-{what}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ))
}

/// The input split at `\x00` into the JSON texts of a little script.
fn pieces(data: &[u8]) -> Vec<std::ffi::CString> {
    data.split(|b| *b == 0)
        .map(|p| std::ffi::CString::new(p).unwrap_or_default())
        .collect()
}

/// The C ABI entry points with JSON inputs: the first byte of each piece
/// (split at NUL) picks a call, the rest of the piece is its JSON (or id);
/// stores are a fresh JSONL root and an in-memory SQLite database. Every
/// call must return a status (a `DSH_PANIC` is a finding too), and every
/// returned string is freed.
pub fn c_abi(data: &[u8]) {
    use dsh_persist::ffi::dsh_status;
    use dsh_persist::ffi::plan::*;
    use dsh_persist::ffi::session::*;
    use dsh_persist::ffi::store::*;
    use dsh_persist::ffi::strings::dsh_free;
    use std::os::raw::c_char;
    use std::ptr::{null, null_mut};

    let root = scratch("abi");
    let _ = std::fs::remove_dir_all(&root);
    let configs = [
        format!(
            r#"{{"backend":"jsonl","root":{},"writeBatchMaxDelayMs":0}}"#,
            json::quote(&root.display().to_string())
        ),
        r#"{"backend":"sqlite","path":":memory:"}"#.to_string(),
    ];
    let ok = |st: dsh_status| {
        assert_ne!(st, dsh_status::DSH_PANIC, "a call panicked");
        st == dsh_status::DSH_OK
    };
    let script = pieces(data);
    for (k, config) in configs.iter().enumerate() {
        let config = std::ffi::CString::new(config.as_str()).unwrap();
        let mut store = null_mut();
        // SAFETY: valid C strings and out pointers; handles are used only
        // while open and closed once.
        unsafe {
            if !ok(dsh_store_open(config.as_ptr(), &mut store)) {
                continue;
            }
            let mut plan = null_mut();
            ok(dsh_plan_new(c"{\"section\":\"plan\"}".as_ptr(), &mut plan));
            let mut sessions: Vec<*mut dsh_session> = Vec::new();
            let take = |out: *mut c_char| {
                if !out.is_null() {
                    dsh_free(out);
                }
            };
            for piece in &script {
                let bytes = piece.as_bytes();
                let (&op, rest) = bytes.split_first().unwrap_or((&0, &[]));
                let arg = std::ffi::CString::new(rest).unwrap_or_default();
                let arg = arg.as_ptr();
                let id = c"s".as_ptr();
                let mut out: *mut c_char = null_mut();
                let mut seq = 0u64;
                let last = sessions.last().copied().unwrap_or(null_mut());
                match (op as usize + k) % 14 {
                    0 => {
                        ok(dsh_store_create(store, arg));
                    }
                    1 => {
                        ok(dsh_store_append(store, id, arg));
                    }
                    2 => {
                        ok(dsh_store_load(store, arg, &mut out));
                    }
                    3 => {
                        ok(dsh_store_inspect(store, id, &mut out));
                    }
                    4 => {
                        ok(dsh_store_read_from(store, arg, u64::from(op), &mut out));
                    }
                    5 => {
                        ok(dsh_store_list(store, &mut out));
                        take(out);
                        out = null_mut();
                        ok(dsh_store_list_snapshots(store, &mut out));
                    }
                    6 => {
                        ok(dsh_store_locate(store, arg, &mut out));
                    }
                    7 => {
                        let mut s = null_mut();
                        if ok(dsh_session_start(store, arg, &mut s)) {
                            sessions.push(s);
                        }
                    }
                    8 => {
                        let mut s = null_mut();
                        if ok(dsh_session_resume(store, arg, &mut s)) {
                            sessions.push(s);
                        }
                    }
                    9 => {
                        let mut s = null_mut();
                        if ok(dsh_session_fork(store, id, i64::from(op) - 3, arg, &mut s)) {
                            sessions.push(s);
                        }
                    }
                    10 => {
                        let ty = if op & 1 == 0 {
                            c"turn/start"
                        } else {
                            c"user/message"
                        };
                        let opts = if op & 2 == 0 { null() } else { arg };
                        ok(dsh_session_append(last, ty.as_ptr(), arg, opts, &mut seq));
                    }
                    11 => {
                        ok(dsh_session_flush(last));
                        ok(dsh_session_events(last, 0, &mut out));
                        take(out);
                        out = null_mut();
                        ok(dsh_session_messages(last, &mut out));
                    }
                    12 => {
                        ok(dsh_plan_command(plan, last, arg, op & 1 == 1, &mut out));
                    }
                    _ => {
                        if let Some(s) = sessions.pop() {
                            ok(dsh_session_close(s));
                            // A second close is detected, not a double free.
                            assert_eq!(dsh_session_close(s), dsh_status::DSH_CLOSED);
                        }
                    }
                }
                take(out);
            }
            for s in sessions {
                ok(dsh_session_close(s));
            }
            dsh_plan_free(plan);
            ok(dsh_store_close(store));
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// A whole store from the input: the first byte picks a JSONL root (zstd
/// or raw; the rest split at `\x00\x00` into logs placed in project and
/// session directories named by their first bytes) or a SQLite file (the
/// rest is the database file). Every store operation must return a result,
/// never panic; load may repair the copy.
pub fn store_files(data: &[u8]) {
    use dsh_persist::store::Store;
    let Some((&kind, rest)) = data.split_first() else {
        return;
    };
    let dir = scratch("store");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = match kind % 3 {
        2 => {
            let db = dir.join("s.db");
            let mut f = std::fs::File::create(&db).unwrap();
            f.write_all(rest).unwrap();
            drop(f);
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
            format!(
                r#"{{"backend":"sqlite","path":{}}}"#,
                json::quote(&db.display().to_string())
            )
        }
        z => {
            let compression = if z == 0 { "zstd" } else { "none" };
            let file = if z == 0 {
                "session.jsonl.zstd"
            } else {
                "session.jsonl"
            };
            let root = dir.join("root");
            for (i, log) in split2(rest).into_iter().enumerate() {
                let project = match log.first().map(|b| b % 3) {
                    Some(0) => "_no-cwd".to_string(),
                    Some(1) => "--w--".to_string(),
                    _ => format!("--p{i}--"),
                };
                let session = match log.get(1).map(|b| b % 4) {
                    Some(0) => "s".to_string(),
                    Some(1) => "t".to_string(),
                    _ => format!("x{i}"),
                };
                let sdir = root.join(project).join(session);
                std::fs::create_dir_all(&sdir).unwrap();
                std::fs::write(sdir.join(file), log.get(2..).unwrap_or(&[])).unwrap();
            }
            format!(
                r#"{{"backend":"jsonl","root":{},"compression":"{compression}","maxRecordBytes":4194304,"maxLogBytes":16777216}}"#,
                json::quote(&root.display().to_string())
            )
        }
    };
    if let Ok(store) = Store::open_json(&config) {
        let mut ids: Vec<String> = store
            .list()
            .map(|l| l.into_iter().map(|h| h.id).collect())
            .unwrap_or_default();
        let _ = store.list_snapshots();
        ids.extend(["s".to_string(), "t".to_string()]);
        for id in &ids {
            let _ = store.inspect(id);
            let _ = store.read_from(id, 1);
            let _ = store.read_raw(id);
            let _ = store.load(id);
            let _ = store.load(id);
        }
        let _ = store.close();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The session id, revision and rules key of the `append_checkpoint`
/// target's checkpoints (its seeds are encoded with them).
const CKPT_ID: &str = "s";
const CKPT_REVISION: &str = "jsonl:1:2:3:4:5";
const CKPT_RULES: &str = "k";

/// The append checkpoint's decoder (`append_checkpoint::decode`) and what
/// continues from a decoded checkpoint. The first byte picks the events
/// appended after it; the rest is the body of a checkpoint file, wrapped
/// with the magic line and a valid hash (so inputs get past the integrity
/// check). A checkpoint the decoder accepts must encode to bytes that
/// decode to it again, and an append checked against its rules (strict and
/// not, event by event and as one batch) must return a result, never panic.
pub fn append_checkpoint(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let revision = dsh_persist::backend::Revision(CKPT_REVISION.into());
    let bytes = append_checkpoint::wrap_body(body);
    let Some(c) = append_checkpoint::decode(&bytes, CKPT_ID, &revision, CKPT_RULES) else {
        return;
    };
    let again = append_checkpoint::encode(CKPT_ID, CKPT_RULES, &c);
    assert_eq!(
        append_checkpoint::decode(&again, CKPT_ID, &revision, CKPT_RULES).as_ref(),
        Some(&c),
        "a decoded checkpoint encodes to bytes that decode to it"
    );
    let _ = c.append_state();
    let turn = c.rules.open_turn().unwrap_or(1);
    let next = c.next_seq;
    // Replace targets: seqs at and before the log's end.
    let start = next.saturating_sub(u64::from(pick >> 4));
    let end = start.saturating_add(u64::from(pick & 3));
    let candidates = [
        format!(
            r#""type":"turn/start","data":{{"turn":{}}}"#,
            turn.saturating_add(1)
        ),
        format!(r#""type":"step/start","data":{{"turn":{turn},"step":1}}"#),
        r#""type":"user/message","data":{"content":[],"source":{"kind":"user"},"role":"user","id":"u"},"surfaceOp":"append""#.to_string(),
        format!(
            r#""type":"tool/result","data":{{"turn":{turn},"step":1,"message":{{"source":{{"kind":"tool","callId":"c"}},"content":[{{"type":"tool-result","toolCallId":"c","content":[],"isError":false}}],"role":"user","id":"r"}}}},"sourceEventSeqs":[{start}],"surfaceOp":{{"op":"replace","start":{start},"end":{end}}}"#
        ),
        format!(
            r#""type":"assistant/message","data":{{"turn":{turn},"step":1,"message":{{"role":"assistant","content":[],"source":{{"kind":"model"}},"id":"a"}}}},"surfaceOp":"append""#
        ),
        format!(r#""type":"step/end","data":{{"turn":{turn},"step":1}}"#),
        format!(r#""type":"turn/end","data":{{"turn":{turn}}}"#),
    ];
    let chosen: Vec<&String> = candidates
        .iter()
        .enumerate()
        .filter(|(i, _)| pick & (1 << (i % 8)) != 0 || pick == 0)
        .map(|(_, c)| c)
        .collect();
    let batch: Vec<Event> = chosen
        .iter()
        .zip(next..)
        .filter_map(|(c, seq)| Event::parse(&format!(r#"{{{c},"seq":{seq},"time":1}}"#)).ok())
        .collect();
    let vocab = Vocabulary::default();
    for strict in [false, true] {
        let _ = c
            .rules
            .clone()
            .check_append(CKPT_ID, &vocab, strict, true, &batch);
        let mut rules = c.rules.clone();
        for e in &batch {
            let _ = rules.check_append(CKPT_ID, &vocab, strict, true, std::slice::from_ref(e));
        }
    }
}

/// The session id and revision of the search index inputs and seeds.
const INDEX_ID: &str = "s1";
const INDEX_REVISION: &str = "r1";

/// The catalog's two index files (a crafted file passes their hash, which
/// is an integrity check, not a secret). The first byte picks the file:
/// even, the summary index; odd, the search index of `INDEX_ID` at
/// `INDEX_REVISION`. The rest is the file's bytes without their hash (so
/// inputs get past the integrity check; the seeds start with the magic
/// line). What a decoder accepts must encode to bytes that decode to it
/// again.
pub fn catalog_index(data: &[u8]) {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let bytes = cache_files::sealed(file.to_vec());
    if pick % 2 == 0 {
        let Some(rows) = summary_index::decode(&bytes) else {
            return;
        };
        let again = summary_index::decode(&summary_index::encode(&rows))
            .expect("an encoded summary index decodes");
        let values = |rows: &std::collections::HashMap<String, SessionSummary>| {
            let mut v: Vec<(String, String)> = rows
                .iter()
                .map(|(id, r)| (id.clone(), format!("{} {}", r.revision.0, r.to_value())))
                .collect();
            v.sort();
            v
        };
        assert_eq!(values(&again), values(&rows), "summary rows round trip");
    } else {
        let revision = dsh_persist::backend::Revision(INDEX_REVISION.into());
        let Some(docs) = search_index::decode(&bytes, INDEX_ID, &revision) else {
            return;
        };
        let again = search_index::decode(
            &search_index::encode(INDEX_ID, &revision, &docs),
            INDEX_ID,
            &revision,
        )
        .expect("an encoded search index decodes");
        let texts = |d: &[Doc]| {
            d.iter()
                .map(|d| (d.seq, d.role.name(), d.text.clone(), d.folded.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(texts(&again), texts(&docs), "search texts round trip");
    }
}

/// `catalog_index` seeds: a summary index and a search index with texts of
/// each kind (ASCII, non-ASCII, empty), the hash cut off.
fn catalog_index_seeds() -> Vec<Vec<u8>> {
    let unhashed = |mut bytes: Vec<u8>| {
        bytes.truncate(bytes.len() - 8);
        bytes
    };
    let row = |id: &str, i: u64, title: Option<&str>| SessionSummary {
        header: SessionHeader::new(id, 0),
        created_at: 0,
        revision: dsh_persist::backend::Revision(format!("rev-{i}")),
        updated_at: i as i64 - 1,
        event_count: 10 * i,
        turn_count: i,
        title: title.map(str::to_string),
        first_prompt: Some(format!("first prompt {i} \u{e9}")),
        last_prompt: (i % 2 == 0).then(|| "last".to_string()),
        open_turn: i % 2 == 1,
        bytes: 1000 + i,
    };
    let rows: std::collections::HashMap<String, SessionSummary> = [
        row("a", 1, Some("A title")),
        row("b", 2, None),
        row("\u{e9}t\u{e9}", 3, Some("")),
    ]
    .into_iter()
    .map(|r| (r.header.id.clone(), r))
    .collect();
    let mut summary = vec![0u8];
    summary.extend(unhashed(summary_index::encode(&rows)));
    let docs = [
        Doc::new(1, Role::User, "Find the README".into()),
        Doc::new(2, Role::Assistant, "Voil\u{e0}: \u{1f600} done".into()),
        Doc::new(3, Role::Tool, String::new()),
    ];
    let revision = dsh_persist::backend::Revision(INDEX_REVISION.into());
    let mut search = vec![1u8];
    search.extend(unhashed(search_index::encode(INDEX_ID, &revision, &docs)));
    // The seeds reach the round trip (a seed the decoder refused would
    // leave it to chance).
    let sealed = |seed: &[u8]| cache_files::sealed(seed[1..].to_vec());
    assert_eq!(
        summary_index::decode(&sealed(&summary)).map(|r| r.len()),
        Some(3)
    );
    assert_eq!(
        search_index::decode(&sealed(&search), INDEX_ID, &revision).map(|d| d.len()),
        Some(3)
    );
    vec![summary, search]
}

/// The body of a checkpoint of `log` (a JSONL log's text: header line,
/// events) as `append_checkpoint`'s seed, when its events are accepted.
fn checkpoint_seed(log: &str, sealed: bool) -> Option<Vec<u8>> {
    let mut lines = log.lines();
    let mut header = SessionHeader::parse_line_lenient(lines.next()?).ok()??;
    header.id = CKPT_ID.into();
    let header = SessionHeader::parse_line_lenient(&header.to_jsonl_line()).ok()??;
    let events = lines
        .map(Event::parse)
        .collect::<Result<Vec<_>, _>>()
        .ok()?;
    let mut rules = LogState::new();
    rules
        .check_append(CKPT_ID, &Vocabulary::default(), false, true, &events)
        .ok()?;
    let c = Checkpoint {
        revision: dsh_persist::backend::Revision(CKPT_REVISION.into()),
        header,
        next_seq: rules.event_count() as u64,
        log_bytes: log.len() as u64,
        seal: sealed.then(dsh_persist::backend::rows::seal::RowSeal::new),
        rules,
    };
    let bytes = append_checkpoint::encode(CKPT_ID, CKPT_RULES, &c);
    append_checkpoint::intact_body(&bytes).map(|b| {
        let mut seed = vec![0u8];
        seed.extend_from_slice(b);
        seed
    })
}

/// `data` split at each `\x00\x00`.
fn split2(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i + 1 < data.len() {
        if data[i] == 0 && data[i + 1] == 0 {
            out.push(&data[start..i]);
            i += 2;
            start = i;
        } else {
            i += 1;
        }
    }
    out.push(&data[start..]);
    out
}

/// `frames::scan` (the structural Zstandard frame scan), then the streaming
/// decoder over every complete frame and the torn one.
pub fn zstd_frames(data: &[u8]) {
    let Ok(scan) = frames::scan(data) else {
        return;
    };
    let mut pos = 0u64;
    for f in &scan.frames {
        assert_eq!(f.start, pos, "frames are back to back");
        assert!(f.end > f.start && f.end <= data.len() as u64);
        pos = f.end;
    }
    if let Some(t) = scan.torn_start {
        assert!(t >= pos && t <= data.len() as u64);
    }
    let mut dec = FrameDecoder::new();
    let mut out = Vec::new();
    let mut total = 0usize;
    let bounds = scan
        .frames
        .iter()
        .map(|f| (f.start as usize, f.end as usize))
        .chain(scan.torn_start.map(|t| (t as usize, data.len())));
    for (a, b) in bounds {
        out.clear();
        let _ = dec.decode(&data[a..b], &mut out, |o| {
            total += o.len();
            o.clear();
            // Bound the work of one input (a frame may expand a lot).
            if total > 64 << 20 {
                Err(dsh_persist::Error::io_msg("fuzz output cap"))
            } else {
                Ok(())
            }
        });
    }
}

const ROW_TAGS: [&str; 4] = [
    "text-chunks",
    "reasoning-chunks",
    "tool-call-chunks",
    "x-chunks",
];

/// `PackedRow::from_parts` (the SQLite decode of a packed row).
pub fn chunk_row(data: &[u8]) {
    let mut b = Bytes(data);
    let tag = ROW_TAGS[(b.byte() % 4) as usize];
    let seq0 = b.i64() as u64 >> (b.byte() % 64);
    let time0 = b.i64();
    let Some(body) = text(b.rest()) else { return };
    let Ok(row) = PackedRow::from_parts(tag, seq0, time0, body) else {
        return;
    };
    let record = Record::Packed(row.clone());
    let members = expand(&record);
    assert_eq!(members.len() as u64, row.member_count());
    assert!(!members.is_empty());
    assert_eq!(members[0].seq, seq0);
    assert_eq!(members[0].time, time0);
    let again = PackedRow::from_parts(row.tag(), row.seq0(), row.time0(), row.data_json())
        .unwrap_or_else(|e| panic!("written row does not decode: {e}"));
    assert!(records_equal(&record, &Record::Packed(again)));
}

fn value(b: &mut Bytes<'_>) -> Value {
    match b.byte() % 5 {
        0 => Value::Null,
        1 => Value::Integer(b.i64()),
        2 => Value::Real(f64::from_bits(b.i64() as u64)),
        3 => Value::Text(String::from_utf8_lossy(b.piece()).into_owned()),
        _ => Value::Blob(b.piece().to_vec()),
    }
}

/// The SQLite row decoder: `varint::decode` of `source_event_seqs` and
/// `rows::decode_row` of a whole row.
pub fn sqlite_row(data: &[u8]) {
    let mut b = Bytes(data);
    if b.byte() % 2 == 0 {
        let blob = b.rest();
        if let Ok(seqs) = varint::decode(blob) {
            assert_eq!(
                varint::encode(&seqs),
                blob,
                "accepted varints are canonical"
            );
            let _ = varint::decode_to_json(blob);
        }
        return;
    }
    let seq = b.i64() >> (b.byte() % 64);
    let time = b.i64() >> (b.byte() % 64);
    let event_type = match b.byte() % 4 {
        0 => Value::Text(ROW_TAGS[(b.byte() % 4) as usize].to_string()),
        1 => Value::Text("assistant/chunk".into()),
        _ => value(&mut b),
    };
    let source_event_seqs = value(&mut b);
    let surface_op = value(&mut b);
    let ignorable = match b.byte() % 4 {
        0 => Value::Integer(0),
        1 => Value::Integer(1),
        2 => Value::Null,
        _ => value(&mut b),
    };
    let data = match b.byte() % 3 {
        0 => Value::Text(String::from_utf8_lossy(b.rest()).into_owned()),
        1 => Value::Blob(b.rest().to_vec()),
        _ => value(&mut b),
    };
    let row = StoredRow {
        seq,
        event_type,
        time,
        data,
        source_event_seqs,
        surface_op,
        ignorable,
    };
    let Ok(record) = rows::decode_row(row) else {
        return;
    };
    let enc = rows::encode_record(&record)
        .unwrap_or_else(|e| panic!("a decoded record does not encode: {e}"));
    let back = rows::decode_row(StoredRow {
        seq: enc.seq,
        event_type: Value::Text(enc.event_type),
        time: enc.time,
        data: enc.data,
        source_event_seqs: enc.source_event_seqs.map_or(Value::Null, Value::Blob),
        surface_op: enc.surface_op.map_or(Value::Null, Value::Text),
        ignorable: enc.ignorable.map_or(Value::Null, Value::Integer),
    })
    .unwrap_or_else(|e| panic!("a re-encoded row does not decode: {e}"));
    assert!(records_equal(&record, &back));
}

/// `SessionHeader::parse` from a host and as a JSONL line.
pub fn header(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Some(t) = text(rest) else { return };
    let source = if sel % 2 == 0 {
        HeaderSource::Host
    } else {
        HeaderSource::JsonlLine
    };
    let Ok(h) = SessionHeader::parse(t, source) else {
        return;
    };
    let line = h.to_jsonl_line();
    let again = SessionHeader::parse(&line, HeaderSource::JsonlLine)
        .unwrap_or_else(|e| panic!("a written header line does not parse: {e}: {line}"));
    assert_eq!(again.to_jsonl_line(), line, "header line round trip");
    let _ = SessionHeader::peek_id_version(t);
}

/// `json::canonicalize` (host JSON to stored text): accepted text is
/// canonical after one pass.
pub fn json_canonical(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let Ok(c) = json::canonicalize(t) else {
        return;
    };
    let again =
        json::canonicalize(&c).unwrap_or_else(|e| panic!("canonical text rejected: {e}: {c}"));
    assert_eq!(again, c, "canonicalize is not idempotent");
    let _ = json::JsonText::parse_verbatim(t);
}

// ---------------------------------------------------------------------------
// Seeds from the upstream fixtures.

fn files(dir: &std::path::Path, suffix: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, suffix, out);
        } else if p.to_string_lossy().ends_with(suffix) {
            out.push(p);
        }
    }
}

fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_piece(out: &mut Vec<u8>, selector: u8, bytes: &[u8]) {
    let n = bytes.len().min(255);
    out.push(selector);
    out.push(n as u8);
    out.extend_from_slice(&bytes[..n]);
}

/// Scripts for [`c_abi`]: op byte then JSON, pieces split at NUL.
const C_ABI_SEEDS: &[&[u8]] = &[
    b"\x00{\"id\":\"s\",\"cwd\":\"/w\"}\x00\x01[{\"type\":\"turn/start\",\"seq\":0,\"time\":1,\"data\":{\"turn\":1}}]\x00\x02s\x00\x03\x00\x05",
    b"\x07{\"id\":\"s\"}\x00\x0a{\"turn\":1}\x00\x0b\x00\x0c/plan\x00\x0d\x00\x08s\x00\x09{\"id\":\"c\"}",
    b"\x00{\"id\":\"a\\u0000b\"}\x00\x07{\"id\":\"\\ud800\"}\x00\x06{\"id\":\"..\",\"cwd\":\"/../..\"}",
];

/// Small seed inputs per target, drawn from the fixture tree at `fixtures`
/// (the upstream fixtures: JSONL logs, Zstandard logs, SQLite databases).
pub fn seeds(fixtures: &std::path::Path) -> Vec<(&'static str, Vec<u8>)> {
    const MAX_FILE: u64 = 64 * 1024;
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    let mut jsonl = Vec::new();
    files(fixtures, ".jsonl", &mut jsonl);
    let mut lines_taken = 0;
    for p in &jsonl {
        let Ok(meta) = std::fs::metadata(p) else {
            continue;
        };
        if meta.len() > MAX_FILE {
            continue;
        }
        let bytes = std::fs::read(p).unwrap_or_default();
        out.push(("jsonl_log", bytes.clone()));
        let text = String::from_utf8_lossy(&bytes).into_owned();
        for (i, line) in text.lines().enumerate() {
            if line.len() > 4096 {
                continue;
            }
            if i == 0 {
                let mut h = vec![1u8];
                h.extend_from_slice(line.as_bytes());
                out.push(("header", h));
                continue;
            }
            let ty = json::get_field(line, "type").and_then(json::as_str);
            if let Some(tag) = ty.map(|t| t.decode().into_owned()) {
                if let Some(k) = ROW_TAGS[..3].iter().position(|t| *t == tag) {
                    let seq0 = json::get_field(line, "seq0").and_then(json::as_safe_int);
                    let time0 = json::get_field(line, "time0").and_then(json::as_safe_int);
                    let data = json::get_field(line, "data");
                    if let (Some(s), Some(t), Some(d)) = (seq0, time0, data) {
                        let mut b = vec![k as u8];
                        put_i64(&mut b, s);
                        b.push(0);
                        put_i64(&mut b, t);
                        b.extend_from_slice(d.as_bytes());
                        out.push(("chunk_row", b));
                    }
                }
            }
            if lines_taken >= 400 {
                continue;
            }
            lines_taken += 1;
            out.push(("record_line", line.as_bytes().to_vec()));
            if let Some(data) = json::get_field(line, "data") {
                out.push(("json_canonical", data.as_bytes().to_vec()));
            }
        }
    }
    let mut zstd = Vec::new();
    files(fixtures, ".zstd", &mut zstd);
    for p in &zstd {
        if std::fs::metadata(p).is_ok_and(|m| m.len() <= MAX_FILE) {
            let bytes = std::fs::read(p).unwrap_or_default();
            out.push(("zstd_frames", bytes.clone()));
            let mut whole = vec![0u8, 0, 0];
            whole.extend(bytes);
            out.push(("store_files", whole));
        }
    }
    for p in jsonl.iter().take(40) {
        if std::fs::metadata(p).is_ok_and(|m| m.len() <= MAX_FILE) {
            let mut whole = vec![1u8, 0, 0];
            whole.extend(std::fs::read(p).unwrap_or_default());
            out.push(("store_files", whole));
        }
    }
    for (i, p) in jsonl.iter().enumerate() {
        if std::fs::metadata(p).is_ok_and(|m| m.len() <= MAX_FILE) {
            let log = String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
            if let Some(seed) = checkpoint_seed(&log, i % 2 == 1) {
                out.push(("append_checkpoint", seed));
            }
        }
    }
    for seed in catalog_index_seeds() {
        out.push(("catalog_index", seed));
    }
    for script in C_ABI_SEEDS {
        out.push(("c_abi", script.to_vec()));
    }
    let mut dbs = Vec::new();
    files(fixtures, ".db", &mut dbs);
    for p in &dbs {
        if std::fs::metadata(p).is_ok_and(|m| m.len() <= MAX_FILE) {
            let mut whole = vec![2u8];
            whole.extend(std::fs::read(p).unwrap_or_default());
            out.push(("store_files", whole));
        }
        // `immutable=1`: read the fixture without creating -wal/-shm files
        // next to it (the fixtures are never modified).
        let uri = format!("file:{}?immutable=1", p.display());
        let Ok(conn) = rusqlite::Connection::open_with_flags(
            uri,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
                | rusqlite::OpenFlags::SQLITE_OPEN_URI,
        ) else {
            continue;
        };
        let Ok(mut stmt) = conn.prepare(&format!(
            "SELECT {} FROM events ORDER BY session_id, seq LIMIT 300",
            rows::ROW_COLUMNS
        )) else {
            continue;
        };
        let Ok(found) = stmt.query_map([], StoredRow::from_sql) else {
            continue;
        };
        for row in found.flatten() {
            let mut b = vec![1u8];
            put_i64(&mut b, row.seq);
            b.push(0);
            put_i64(&mut b, row.time);
            b.push(0);
            match &row.event_type {
                Value::Text(t) => {
                    b.push(2);
                    put_piece(&mut b, 3, t.as_bytes());
                }
                _ => b.push(3),
            }
            for v in [&row.source_event_seqs, &row.surface_op] {
                match v {
                    Value::Blob(x) => {
                        put_piece(&mut b, 4, x);
                        if let Value::Blob(x) = v {
                            let mut vb = vec![0u8];
                            vb.extend_from_slice(x);
                            out.push(("sqlite_row", vb));
                        }
                    }
                    Value::Text(x) => put_piece(&mut b, 3, x.as_bytes()),
                    _ => b.push(0),
                }
            }
            b.push(match row.ignorable {
                Value::Integer(0) => 0,
                Value::Integer(1) => 1,
                _ => 2,
            });
            match &row.data {
                Value::Blob(x) => {
                    b.push(1);
                    b.extend_from_slice(x);
                }
                Value::Text(x) => {
                    b.push(0);
                    b.extend_from_slice(x.as_bytes());
                }
                _ => b.push(2),
            }
            out.push(("sqlite_row", b));
        }
    }
    for extra in [
        r#"{"id":"s","createdAt":1}"#,
        r#"{"id":"s","cwd":"/x","parentSession":"p","seedLength":3,"origin":"fork","delegationDepth":1}"#,
    ] {
        let mut h = vec![0u8];
        h.extend_from_slice(extra.as_bytes());
        out.push(("header", h));
    }
    for extra in [
        r#"{"a":[1,2.5e10,-0.0,"\u00e9\ud83d\ude00"],"b":{"c":null,"d":true}}"#,
        r#"[1e400, 0.1, 123456789012345678901234567890]"#,
        r#""\ud800""#,
    ] {
        out.push(("json_canonical", extra.as_bytes().to_vec()));
    }
    out
}
