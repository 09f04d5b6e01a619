//! The rows of `../shared/interop/DIFFERENCES.md` judged **bug**, each
//! built from its description, through the public `Store` on real files:
//! we now decide like the original (open, refuse or repair), with its error
//! kind and, where the row quotes it, its message. Plus the one-rule-set
//! property (issue 13): random events through `append`; every acknowledged
//! session loads, every refused append leaves the store's bytes unchanged.

mod support;

use std::path::{Path, PathBuf};

use dsh_persist::ErrorKind;
use dsh_persist::backend::Location;
use dsh_persist::model::event::Event;
use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::{
    BackendConfig, Compression, JsonlConfig, SqliteConfig, Store, StoreConfig,
};
use support::TempDir;
use support::rng::Rng;

fn jsonl(dir: &Path, compression: Compression) -> Store {
    let mut c = JsonlConfig::new(dir.join("root"));
    c.compression = compression;
    Store::open(StoreConfig::with_backend(BackendConfig::Jsonl(c))).unwrap()
}

fn sqlite(dir: &Path) -> Store {
    Store::open(StoreConfig::with_backend(BackendConfig::Sqlite(
        SqliteConfig::new(dir.join("s.db").display().to_string()),
    )))
    .unwrap()
}

fn header(id: &str) -> SessionHeader {
    let mut h = SessionHeader::new(id, 1000);
    h.cwd = Some("/w".into());
    h
}

fn path_of(store: &Store, id: &str) -> PathBuf {
    match store.locate(&header(id)).unwrap() {
        Some(Location::Jsonl { path }) => PathBuf::from(path),
        other => panic!("{other:?}"),
    }
}

const HEADER_LINE: &str =
    r#"{"type":"session","version":0,"id":"s","createdAt":1000,"cwd":"/w","delegationDepth":0}"#;

/// Writes an uncompressed log for session "s" as the original would.
fn write_raw(store: &Store, header_line: &str, lines: &[&str]) -> PathBuf {
    let path = path_of(store, "s");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut text = format!("{header_line}\n");
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

const T1: &str = r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#;
const E1: &str =
    r#"{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}"#;

#[test]
fn a1_2_a_gapped_line_that_is_itself_a_turn_end_is_committed_corruption() {
    let dir = TempDir::new("d-a1-2");
    let store = jsonl(dir.path(), Compression::None);
    let path = write_raw(
        &store,
        HEADER_LINE,
        &[
            T1,
            r#"{"type":"turn/end","seq":7,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}"#,
        ],
    );
    let before = std::fs::read(&path).unwrap();
    let e = store.load("s").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption);
    assert_eq!(
        e.to_string(),
        "corrupt session log: seq gap in committed region at line 2 (expected 1, got 7)"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before, "nothing deleted");
}

#[test]
fn a1_3_a_bad_line_inside_a_complete_zstd_frame_is_corruption_not_a_tail() {
    for bad in [
        r#"{"type":"step/start","seq":9,"time":2,"data":{"turn":1,"step":1}}"#,
        "not json",
    ] {
        let dir = TempDir::new("d-a1-3");
        let store = jsonl(dir.path(), Compression::Zstd);
        store.create(header("s")).unwrap();
        store.append("s", vec![Event::parse(T1).unwrap()]).unwrap();
        let path = path_of(&store, "s");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend(
            dsh_persist::backend::jsonl::codec_zstd::encode_frame(format!("{bad}\n").as_bytes())
                .unwrap(),
        );
        std::fs::write(&path, &bytes).unwrap();
        let store = jsonl(dir.path(), Compression::Zstd);
        let e = store.load("s").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corruption);
        assert_eq!(
            e.to_string(),
            "corrupt Zstandard session log: complete frame contains a torn JSONL record"
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "the file is not repaired"
        );
    }
}

#[test]
fn a1_4_records_with_an_invalid_envelope_are_kept_and_refused_by_session_validation() {
    for (i, bad) in [
        r#"{"type":"todo/write","seq":1,"time":1.5,"data":{}}"#,
        r#"{"type":"todo/write","seq":1,"time":1,"deta":{}}"#,
        r#"{"type":"todo/write","seq":1,"time":1,"data":{},"x":1}"#,
        r#"{"type":"todo/write","seq":1,"time":1,"data":{},"ignorable":false}"#,
        r#"{"type":"todo/write","seq":1,"time":1}"#,
    ]
    .iter()
    .enumerate()
    {
        let dir = TempDir::new("d-a1-4");
        let store = jsonl(dir.path(), Compression::None);
        // In the tail (no later turn/end): kept, never deleted.
        let path = write_raw(&store, HEADER_LINE, &[T1, bad]);
        let before = std::fs::read(&path).unwrap();
        let view = store.read_from("s", 0).unwrap();
        assert_eq!(view.events.len(), 2, "{i}: read_from returns it");
        assert_eq!(view.events[1].to_json(), *bad, "{i}: verbatim");
        for e in [
            store.inspect("s").unwrap_err(),
            store.load("s").unwrap_err(),
        ] {
            assert_eq!(e.kind(), ErrorKind::Corruption, "{i}");
            assert_eq!(
                e.to_string(),
                "stored session \"s\" failed validation: Error: seed event at index 1 has an invalid event envelope",
                "{i}"
            );
        }
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "{i}: nothing deleted"
        );
    }
}

#[test]
fn a1_5_invalid_utf8_decodes_as_replacement_and_loads() {
    let dir = TempDir::new("d-a1-5");
    let store = jsonl(dir.path(), Compression::None);
    let path = write_raw(&store, HEADER_LINE, &[T1]);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(
        b"{\"type\":\"todo/write\",\"seq\":1,\"time\":1,\"data\":{\"t\":\"a\xffb\"}}\n",
    );
    std::fs::write(&path, &bytes).unwrap();
    let view = store.read_from("s", 0).unwrap();
    assert_eq!(view.events[1].data.as_str(), "{\"t\":\"a\u{fffd}b\"}");
    // In the tail: kept, so load closes the open turn after it.
    let loaded = store.load("s").unwrap();
    assert_eq!(loaded.events[1].data.as_str(), "{\"t\":\"a\u{fffd}b\"}");
    assert_eq!(loaded.events.last().unwrap().type_str(), "turn/end");
}

#[test]
fn a1_7_deeply_nested_stored_data_is_read() {
    let dir = TempDir::new("d-a1-7");
    let store = jsonl(dir.path(), Compression::None);
    let deep = format!("{}1{}", "[".repeat(2000), "]".repeat(2000));
    let line = format!(r#"{{"type":"todo/write","seq":1,"time":1,"data":{{"d":{deep}}}}}"#);
    let end =
        r#"{"type":"turn/end","seq":2,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}"#;
    write_raw(&store, HEADER_LINE, &[T1, &line, end]);
    assert_eq!(store.load("s").unwrap().events.len(), 3);
}

#[test]
fn a1_9_and_b11_malformed_turn_ends_are_refused() {
    for data in [
        r#"{"turn":0,"reason":{"kind":"completed"}}"#,
        r#"{"turn":1,"reason":{"kind":"completed","x":1}}"#,
        r#"{"turn":1,"reason":null}"#,
        r#"{"turn":1,"step":1,"reason":{"kind":"completed"}}"#,
    ] {
        let dir = TempDir::new("d-a1-9");
        let store = jsonl(dir.path(), Compression::None);
        let line = format!(r#"{{"type":"turn/end","seq":1,"time":2,"data":{data}}}"#);
        write_raw(&store, HEADER_LINE, &[T1, &line]);
        let e = store.read_from("s", 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corruption);
        assert_eq!(
            e.to_string(),
            "session \"s\" contains malformed pre-react-loop turn/end at seq 1",
            "{data}"
        );
        assert!(
            store
                .inspect("s")
                .unwrap_err()
                .to_string()
                .contains("malformed pre-react-loop turn/end")
        );
    }
}

#[test]
fn a1_10_lenient_header_lines_are_listed_and_refused_at_load() {
    for line in [
        r#"{"type":"session","version":0,"id":"s","createdAt":1000,"cwd":"/w","seedLength":1.5,"delegationDepth":0}"#,
        r#"{"type":"session","version":0,"id":"s","createdAt":1000,"cwd":"/w","parentSession":5,"delegationDepth":0}"#,
    ] {
        let dir = TempDir::new("d-a1-10");
        let store = jsonl(dir.path(), Compression::None);
        write_raw(&store, line, &[T1, E1]);
        let listed = store.list().unwrap();
        assert_eq!(listed.len(), 1, "{line}");
        // Listed as written (the original's fromHeaderLine).
        let json = listed[0].to_json();
        assert!(
            json.contains(r#""seedLength":1.5"#) || json.contains(r#""parentSession":5"#),
            "{json}"
        );
        assert_eq!(store.read_from("s", 0).unwrap().events.len(), 2);
        let e = store.load("s").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corruption);
        assert!(
            e.to_string()
                .starts_with("stored session \"s\" failed validation: Error: session metadata"),
            "{e}"
        );
    }
}

#[test]
fn a1_11_and_b15_a_bad_zstd_header_frame_fails_the_listing() {
    let dir = TempDir::new("d-a1-11");
    let store = jsonl(dir.path(), Compression::Zstd);
    store.create(header("s")).unwrap();
    store
        .append(
            "s",
            vec![Event::parse(T1).unwrap(), Event::parse(E1).unwrap()],
        )
        .unwrap();
    let path = path_of(&store, "s");
    let good = std::fs::read(&path).unwrap();
    let first = dsh_persist::backend::jsonl::frames::first_frame(&good)
        .unwrap()
        .unwrap();
    // A checksum byte of the header frame flipped.
    let mut bad = good.clone();
    bad[first.end as usize - 1] ^= 0xff;
    std::fs::write(&path, &bad).unwrap();
    let e = jsonl(dir.path(), Compression::Zstd).list().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption);
    assert!(e.to_string().contains("header frame"), "{e}");
    // A first frame holding the header and an event line.
    let two = dsh_persist::backend::jsonl::codec_zstd::encode_frame(
        format!("{HEADER_LINE}\n{T1}\n").as_bytes(),
    )
    .unwrap();
    std::fs::write(&path, &two).unwrap();
    let s = jsonl(dir.path(), Compression::Zstd);
    for e in [s.list().unwrap_err(), s.load("s").unwrap_err()] {
        assert_eq!(
            e.to_string(),
            "corrupt Zstandard session log: first frame is not exactly one header line"
        );
    }
}

#[test]
fn a1_17_trailing_bytes_after_the_last_frame_are_a_torn_frame() {
    let dir = TempDir::new("d-a1-17");
    let store = jsonl(dir.path(), Compression::Zstd);
    store.create(header("s")).unwrap();
    store
        .append(
            "s",
            vec![Event::parse(T1).unwrap(), Event::parse(E1).unwrap()],
        )
        .unwrap();
    let path = path_of(&store, "s");
    let good = std::fs::read(&path).unwrap();
    let mut bytes = good.clone();
    bytes.push(b'\n');
    std::fs::write(&path, &bytes).unwrap();
    let store = jsonl(dir.path(), Compression::Zstd);
    assert_eq!(store.load("s").unwrap().events.len(), 2);
    assert_eq!(std::fs::read(&path).unwrap(), good, "load truncated them");
}

#[test]
fn a1_17b_and_b13_header_keys_this_build_does_not_know_are_ignored() {
    let dir = TempDir::new("d-17b");
    let store = jsonl(dir.path(), Compression::None);
    let line = r#"{"type":"session","version":0,"id":"s","createdAt":1000,"cwd":"/w","delegationDepth":0,"pad":"x","parentSesshon":"p"}"#;
    write_raw(&store, line, &[T1, E1]);
    let listed = store.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0].to_json(),
        r#"{"version":0,"id":"s","createdAt":1000,"cwd":"/w","delegationDepth":0}"#
    );
    assert_eq!(store.load("s").unwrap().events.len(), 2);
    // The host's create still refuses an unknown key (a design choice).
    assert_eq!(
        SessionHeader::parse(
            r#"{"id":"a","pad":1}"#,
            dsh_persist::model::header::HeaderSource::Host
        )
        .unwrap_err()
        .kind(),
        ErrorKind::InvalidArgument
    );
}

#[test]
fn a1_17c_a_duplicate_key_keeps_the_last_value() {
    let dir = TempDir::new("d-17c");
    let store = jsonl(dir.path(), Compression::None);
    write_raw(
        &store,
        HEADER_LINE,
        &[
            T1,
            r#"{"type":"todo/write","seq":1,"time":5,"time":6,"data":{"todos":[]}}"#,
        ],
    );
    let view = store.read_from("s", 0).unwrap();
    assert_eq!(view.events.len(), 2, "the record is part of the log");
    assert_eq!(view.events[1].time, 6);
}

#[test]
fn b10_b12_legacy_triggers_and_steering() {
    let dir = TempDir::new("d-b10");
    let store = jsonl(dir.path(), Compression::None);
    write_raw(
        &store,
        HEADER_LINE,
        &[
            r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1,"trigger":{"kind":"message","source":{"kind":"user"}}}}"#,
            E1,
        ],
    );
    assert_eq!(
        store.load("s").unwrap().events[0].data.as_str(),
        r#"{"turn":1}"#
    );
    let dir = TempDir::new("d-b12");
    let store = jsonl(dir.path(), Compression::None);
    write_raw(
        &store,
        HEADER_LINE,
        &[r#"{"type":"steering/message","seq":0,"time":1,"data":null,"surfaceOp":"append"}"#],
    );
    let e = store.read_from("s", 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption);
    assert_eq!(
        e.to_string(),
        "session \"s\" contains malformed pre-react-loop steering/message at seq 0"
    );
}

#[test]
fn b14_list_refuses_a_header_id_that_names_no_path() {
    let dir = TempDir::new("d-b14");
    let store = jsonl(dir.path(), Compression::None);
    let sdir = dir.path().join("root").join("_no-cwd").join("invalid-id");
    std::fs::create_dir_all(&sdir).unwrap();
    std::fs::write(
        sdir.join("session.jsonl"),
        "{\"type\":\"session\",\"version\":0,\"id\":\"\",\"createdAt\":1,\"delegationDepth\":0}\n",
    )
    .unwrap();
    let e = store.list().unwrap_err();
    assert!(e.to_string().contains("cannot name a storage path"), "{e}");
}

#[test]
fn b17_a_foreign_version_with_a_numeric_id_is_format_unsupported() {
    let dir = TempDir::new("d-b17");
    let store = jsonl(dir.path(), Compression::None);
    write_raw(&store, r#"{"type":"session","version":42,"id":123}"#, &[]);
    let e = store.load("s").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::FormatUnsupported);
    assert!(
        e.to_string()
            .starts_with("session \"123\" uses log format v42"),
        "{e}"
    );
}

fn stores(dir: &Path) -> Vec<(&'static str, Store)> {
    vec![
        ("jsonl-zstd", jsonl(&dir.join("z"), Compression::Zstd)),
        ("jsonl-none", jsonl(&dir.join("n"), Compression::None)),
        ("sqlite", sqlite(dir)),
    ]
}

fn events(json: &str) -> Vec<Event> {
    dsh_persist::model::json::array_items(json)
        .unwrap()
        .iter()
        .map(|e| Event::parse(e).unwrap())
        .collect()
}

#[test]
fn b02_b03_a2_25_what_a_load_converts_is_appendable_at_store_level() {
    let dir = TempDir::new("d-b02");
    for (kind, store) in stores(dir.path()) {
        store.create(header("legacy")).unwrap();
        store
            .append(
                "legacy",
                events(
                    r#"[{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}},
                    {"type":"step/start","seq":1,"time":2,"data":{"turn":1,"step":1}},
                    {"type":"assistant/message","seq":2,"time":3,"surfaceOp":"append","data":{"turn":1,"step":1,"content":[{"type":"tool-call","id":"call-1","name":"read","arguments":"{}"}],"provenance":{"provider":"mock","model":"mock"}}},
                    {"type":"tool/call","seq":3,"time":4,"data":{"turn":1,"step":1,"callId":"call-1","name":"read","arguments":"{}"}},
                    {"type":"tool/result","seq":4,"time":5,"sourceEventSeqs":[3],"surfaceOp":"append","data":{"turn":1,"step":1,"callId":"call-1","content":[{"type":"text","text":"full"}],"isError":false}},
                    {"type":"tool/result","seq":5,"time":6,"sourceEventSeqs":[4],"surfaceOp":{"op":"replace","start":4,"end":4},"data":{"turn":1,"step":1,"callId":"call-1","content":[{"type":"text","text":"pruned"}],"isError":false}},
                    {"type":"step/end","seq":6,"time":7,"data":{"turn":1,"step":1}},
                    {"type":"steering/message","seq":7,"time":8,"surfaceOp":"append","data":{"turn":1,"content":[{"type":"text","text":"flat"}],"source":{"kind":"user"}}},
                    {"type":"turn/end","seq":8,"time":9,"data":{"turn":1,"reason":{"kind":"completed"}}}]"#,
                ),
            )
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        let view = store.inspect("legacy").unwrap();
        for seq in [4, 5] {
            assert!(
                view.events[seq]
                    .data
                    .as_str()
                    .contains(r#""id":"legacy-message:legacy:4""#),
                "{kind}: {}",
                view.events[seq].data.as_str()
            );
        }
        assert_eq!(view.events[7].type_str(), "user/message", "{kind}");
        // What a load refuses stays refused at append: a surface event
        // without surfaceOp, an unknown required type, the fallback header.
        store.create(header("refused")).unwrap();
        for bad in [
            r#"[{"type":"user/message","seq":0,"time":1,"data":{"id":"m","role":"user","content":[],"source":{"kind":"user"}}}]"#,
            r#"[{"type":"future/event","seq":0,"time":1,"data":{}}]"#,
            r#"[{"type":"request/header","seq":0,"time":1,"data":{"header":{"config":{"provider":"p","model":"m"}},"reason":"fallback"}}]"#,
        ] {
            let e = store.append("refused", events(bad)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{kind}: {e}");
            assert!(
                e.to_string().contains("at seq 0"),
                "{kind}: names the seq: {e}"
            );
        }
        let e = store
            .append_json(
                "refused",
                r#"[{"type":"todo/write","seq":0,"time":-0,"data":{"todos":[]}}]"#,
            )
            .unwrap_err();
        assert!(
            e.to_string().contains("not losslessly JSON-serializable"),
            "{kind}: {e}"
        );
        store.close().unwrap();
    }
}

/// The files of a store, byte for byte (SQLite: the database, its WAL).
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.to_string_lossy().ends_with("-shm") {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Candidate events, valid and invalid, that a host might hand in.
const CANDIDATES: &[(&str, &str, &str)] = &[
    ("turn/start", r#"{"turn":T}"#, ""),
    ("turn/start", r#"{"turn":T,"trigger":{"kind":"user"}}"#, ""),
    ("turn/start", r#"{"turn":T,"trigger":"x"}"#, ""),
    (
        "turn/end",
        r#"{"turn":T,"reason":{"kind":"completed"}}"#,
        "",
    ),
    ("turn/end", r#"{"turn":T,"reason":{"kind":"aborted"}}"#, ""),
    (
        "turn/end",
        r#"{"turn":T,"reason":{"kind":"completed","x":1}}"#,
        "",
    ),
    ("turn/end", r#"{"turn":T}"#, ""),
    (
        "user/message",
        r#"{"id":"m","role":"user","content":[],"source":{"kind":"user"}}"#,
        r#","surfaceOp":"append""#,
    ),
    (
        "user/message",
        r#"{"content":[],"source":{"kind":"user"}}"#,
        r#","surfaceOp":"append""#,
    ),
    (
        "user/message",
        r#"{"role":"user","content":[],"source":{"kind":"user"}}"#,
        r#","surfaceOp":"append""#,
    ),
    (
        "user/message",
        r#"{"id":"m","role":"user","content":[],"source":{"kind":"user"}}"#,
        "",
    ),
    (
        "user/message",
        r#"{"id":"m","role":"user","content":"x","source":{"kind":"user"}}"#,
        r#","surfaceOp":"append""#,
    ),
    (
        "steering/message",
        r#"{"turn":1,"content":[],"source":{"kind":"user"}}"#,
        r#","surfaceOp":"append""#,
    ),
    ("steering/message", r#"{"x":1}"#, r#","ignorable":true"#),
    ("mode/set", r#"{}"#, r#","ignorable":true"#),
    ("request/header-delta", r#"{}"#, r#","ignorable":true"#),
    (
        "request/header",
        r#"{"header":{"config":{"provider":"p","model":"m"}},"reason":"initial"}"#,
        "",
    ),
    (
        "request/header",
        r#"{"header":{"config":{"provider":"p"}},"reason":"initial"}"#,
        "",
    ),
    (
        "request/header",
        r#"{"header":{"config":{"provider":"p","model":"m"},"adapterDefaults":{"maxTokens":true}},"reason":"initial"}"#,
        "",
    ),
    (
        "request/header",
        r#"{"header":{"config":{"provider":"p","model":"m"}},"reason":"fallback"}"#,
        "",
    ),
    ("zz/unknown", r#"{}"#, r#","ignorable":true"#),
    ("zz/unknown", r#"{}"#, ""),
    ("todo/write", r#"{"todos":[]}"#, r#","surfaceOp":"append""#),
    (
        "assistant/chunk",
        r#"{"turn":T,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}"#,
        "",
    ),
    (
        "tool/result",
        r#"{"turn":T,"step":1,"callId":"c","content":[],"isError":false}"#,
        r#","surfaceOp":"append""#,
    ),
];

#[test]
fn acknowledged_appends_load_and_refused_appends_change_nothing() {
    let rounds: u64 = std::env::var("DSH_INTEROP_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B);
    let dir = TempDir::new("d-prop");
    let (mut acked, mut refused) = (0, 0);
    for round in 0..rounds {
        for (kind, store) in stores(&dir.path().join(round.to_string())) {
            let id = format!("p{round}");
            store.create(header(&id)).unwrap();
            let mut next = 0u64;
            let mut turn = 1u64;
            for _ in 0..8 {
                let n = 1 + rng.below(3);
                let mut batch = String::from("[");
                for k in 0..n {
                    let (ty, data, extra) = CANDIDATES[rng.below(CANDIDATES.len() as u64) as usize];
                    if k > 0 {
                        batch.push(',');
                    }
                    batch.push_str(&format!(
                        r#"{{"type":"{ty}","seq":{},"time":1,"data":{}{extra}}}"#,
                        next + k,
                        data.replace('T', &turn.to_string())
                    ));
                }
                batch.push(']');
                let before = snapshot(&dir.path().join(round.to_string()));
                match store.append_json(&id, &batch) {
                    Ok(()) => {
                        acked += 1;
                        next += n;
                        if batch.contains("\"turn/end\"") {
                            turn += 1;
                        }
                        // Acknowledged: a fresh store loads it (inspect, so
                        // later appends continue the same bytes).
                        let fresh = match kind {
                            "jsonl-zstd" => jsonl(
                                &dir.path().join(round.to_string()).join("z"),
                                Compression::Zstd,
                            ),
                            "jsonl-none" => jsonl(
                                &dir.path().join(round.to_string()).join("n"),
                                Compression::None,
                            ),
                            _ => sqlite(&dir.path().join(round.to_string())),
                        };
                        let view = fresh.inspect(&id).unwrap_or_else(|e| {
                            panic!("{kind} round {round}: acknowledged {batch} but: {e}")
                        });
                        assert!(view.events.len() as u64 >= next, "{kind}");
                        fresh.close().unwrap();
                    }
                    Err(e) => {
                        refused += 1;
                        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{kind}: {batch}: {e}");
                        assert_eq!(
                            snapshot(&dir.path().join(round.to_string())),
                            before,
                            "{kind}: a refused append changed the store: {batch}"
                        );
                    }
                }
            }
            store.close().unwrap();
        }
    }
    assert!(
        acked > 0 && refused > 0,
        "acknowledged {acked}, refused {refused}"
    );
}

/// A.1 #13: a row whose columns fail the original's `decodeEventRow` (an
/// empty `type`, a `time` beyond 2^53, `data` that is a number,
/// `source_event_seqs` as TEXT, a negative `seq`) is a hard error for the
/// whole read, wherever it is: never a torn tail that `load` deletes.
#[test]
fn a1_13_a_damaged_sqlite_events_row_fails_the_read_and_is_kept() {
    let damages = [
        (
            "UPDATE events SET type = '' WHERE seq = 3",
            "stored type must not be empty",
        ),
        (
            "UPDATE events SET time = 1152921504606846976 WHERE seq = 3",
            "is not a safe integer",
        ),
        (
            "UPDATE events SET data = 1.5 WHERE seq = 3",
            "stored data must be a string or blob",
        ),
        (
            "UPDATE events SET data = 7 WHERE seq = 3",
            "stored data must be a string or blob",
        ),
        (
            "UPDATE events SET source_event_seqs = '[1]' WHERE seq = 3",
            "source_event_seqs must be a blob",
        ),
        (
            "UPDATE events SET seq = -1 WHERE seq = 3",
            "stored seq must be a non-negative safe integer",
        ),
    ];
    for (i, (sql, want)) in damages.iter().enumerate() {
        let dir = TempDir::new(&format!("a1-13-{i}"));
        let store = sqlite(dir.path());
        store.create(header("s")).unwrap();
        // A complete turn, then an open one: seq 3 is after the last turn/end.
        store.append("s", events(&format!("[{T1},{E1}]"))).unwrap();
        store
            .append(
                "s",
                events(r#"[{"type":"turn/start","seq":2,"time":3,"data":{"turn":2}},{"type":"user/message","seq":3,"time":3,"surfaceOp":"append","data":{"id":"u","role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}}]"#),
            )
            .unwrap();
        store.close().unwrap();
        let db = dir.path().join("s.db");
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(sql).unwrap();
        drop(conn);
        let store = sqlite(dir.path());
        for (what, r) in [
            ("load", store.load("s").map(|_| ())),
            ("inspect", store.inspect("s").map(|_| ())),
        ] {
            let e = r.expect_err(&format!("{sql}: {what} accepted a damaged row"));
            assert_eq!(e.kind(), ErrorKind::Corruption, "{sql}: {what}: {e}");
            assert!(e.to_string().contains(want), "{sql}: {what}: {e}");
        }
        store.close().unwrap();
        let conn = rusqlite::Connection::open(&db).unwrap();
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 4, "{sql}: the damaged row was deleted");
    }
}

/// A.3 (message only): creating an id that is stored is refused in the
/// original's words, "session "s" already exists in this backend", on
/// every backend, with our kind (`conflict`, code SESSION_ALREADY_EXISTS).
#[test]
fn a3_creating_a_stored_id_says_it_already_exists_in_this_backend() {
    let dir = TempDir::new("a3-exists");
    for (kind, store) in stores(dir.path()) {
        store.create(header("s")).unwrap();
        store.append("s", events(&format!("[{T1},{E1}]"))).unwrap();
        let e = store.create(header("s")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict, "{kind}: {e}");
        assert!(
            e.to_string()
                .starts_with("session \"s\" already exists in this backend"),
            "{kind}: {e}"
        );
    }
}

/// A complete turn whose four chunk deltas the SQLite store packs into one
/// row (seq 1, `ignorable = 0`), then its `turn/end` at seq 5.
fn packed_turn() -> Vec<Event> {
    let mut json = vec![T1.to_string()];
    for (i, t) in ["a", "b", "c", "d"].iter().enumerate() {
        json.push(format!(
            r#"{{"type":"assistant/chunk","seq":{},"time":2,"data":{{"turn":1,"step":1,"chunk":{{"type":"text-delta","index":0,"text":"{t}"}}}}}}"#,
            i + 1
        ));
    }
    json.push(
        r#"{"type":"turn/end","seq":5,"time":3,"data":{"turn":1,"reason":{"kind":"completed"}}}"#
            .into(),
    );
    events(&format!("[{}]", json.join(",")))
}

/// A.1 #14: `read_from(k)` next to a malformed packed row that starts
/// fewer than 1024 seqs before `k` fails closed, as the original's does
/// ("invalid committed physical row at seq N"), instead of returning the
/// suffix after it (the shared row scan: SQLite and PostgreSQL).
#[test]
fn a1_14_read_from_next_to_a_malformed_packed_row_fails_closed() {
    let dir = TempDir::new("a1-14");
    let store = sqlite(dir.path());
    store.create(header("s")).unwrap();
    store.append("s", packed_turn()).unwrap();
    store.close().unwrap();
    let db = dir.path().join("s.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let packed: i64 = conn
        .query_row(
            "SELECT count(*) FROM events WHERE seq = 1 AND ignorable = 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        packed, 1,
        "the chunks were not packed into the row at seq 1"
    );
    let store = sqlite(dir.path());
    assert_eq!(store.read_from("s", 5).unwrap().events.len(), 1);
    store.close().unwrap();
    conn.execute_batch("UPDATE events SET data = '{not json' WHERE seq = 1")
        .unwrap();
    drop(conn);
    let store = sqlite(dir.path());
    for k in [2, 5] {
        let e = store
            .read_from("s", k)
            .expect_err("read_from returned a suffix");
        assert_eq!(e.kind(), ErrorKind::Corruption, "k {k}: {e}");
        assert!(
            e.to_string()
                .contains("invalid committed physical row at seq 1"),
            "k {k}: {e}"
        );
    }
}

/// A.1 #12: a `sessions` row whose columns the original's
/// `decodeSessionRow` refuses (an incarnation that is not a UUID, an
/// origin other than "subagent", a relative cwd, a negative revision, an
/// empty id) fails `list` and every read as `corruption`, naming the
/// session and the column.
#[test]
fn a1_12_a_damaged_sessions_row_fails_list_and_load() {
    let damages = [
        (
            "incarnation = 'not-a-uuid'",
            "s",
            "incarnation \"not-a-uuid\", not a UUID",
        ),
        (
            "origin = 'other'",
            "s",
            "origin \"other\", not \"subagent\"",
        ),
        (
            "cwd = 'relative/dir'",
            "s",
            "cwd \"relative/dir\", not an absolute path",
        ),
        (
            "revision = -1",
            "s",
            "revision -1, not a non-negative safe integer",
        ),
        (
            "revision = 9007199254740992",
            "s",
            "revision 9007199254740992, not a non-negative safe integer",
        ),
        ("id = ''", "", "id \"\", not a non-empty string"),
    ];
    for (i, (set, id, want)) in damages.iter().enumerate() {
        let dir = TempDir::new(&format!("a1-12-{i}"));
        let store = sqlite(dir.path());
        // A plain session before the damaged one, and one after it.
        for s in ["a", "s", "z"] {
            store.create(header(s)).unwrap();
            store.append(s, events(&format!("[{T1},{E1}]"))).unwrap();
        }
        store.close().unwrap();
        let conn = rusqlite::Connection::open(dir.path().join("s.db")).unwrap();
        if id.is_empty() {
            conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        }
        conn.execute_batch(&format!("UPDATE sessions SET {set} WHERE id = 's'"))
            .unwrap();
        drop(conn);
        let store = sqlite(dir.path());
        let want = format!("session \"{id}\" row has {want}");
        let mut results = vec![("list", store.list().map(|_| ()))];
        if !id.is_empty() {
            results.push(("load", store.load(id).map(|_| ())));
            results.push(("read_from", store.read_from(id, 0).map(|_| ())));
        }
        for (what, r) in results {
            let e = r.expect_err(&format!("{set}: {what} accepted a damaged row"));
            assert_eq!(e.kind(), ErrorKind::Corruption, "{set}: {what}: {e}");
            assert!(e.to_string().contains(&want), "{set}: {what}: {e}");
        }
        // The other sessions still load.
        store.load("a").unwrap();
    }
}

/// A.3 (message only): a JSONL log whose header id/cwd identify another
/// artifact, and a SQLite session row with a negative `created_at`, are
/// refused in the original's words ("session artifact "<p>" holds the
/// header of session "s" …", "session "s" row has created_at -1, …"),
/// with our kind (`corruption`).
#[test]
fn a3_misplaced_headers_and_bad_session_rows_use_the_original_wording() {
    let dir = TempDir::new("a3-wording");
    let store = jsonl(dir.path(), Compression::None);
    let path = write_raw(
        &store,
        &HEADER_LINE.replace("\"/w\"", "\"/elsewhere\""),
        &[T1, E1],
    );
    let e = store.list().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    let want = format!(
        "session artifact \"{}\" holds the header of session \"s\"",
        path.display()
    );
    assert!(e.to_string().contains(&want), "{e}");

    let store = sqlite(dir.path());
    store.create(header("s")).unwrap();
    store.append("s", events(&format!("[{T1},{E1}]"))).unwrap();
    store.close().unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("s.db")).unwrap();
    conn.execute_batch("UPDATE sessions SET created_at = -1")
        .unwrap();
    drop(conn);
    let store = sqlite(dir.path());
    for (what, r) in [
        ("list", store.list().map(|_| ())),
        ("load", store.load("s").map(|_| ())),
    ] {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corruption, "{what}: {e}");
        assert!(
            e.to_string()
                .contains("session \"s\" row has created_at -1, "),
            "{what}: {e}"
        );
    }
}

/// The events of a view as JSON lines (envelope key order included).
fn lines(view: &dsh_persist::store::SessionView) -> Vec<String> {
    view.events.iter().map(Event::to_json).collect()
}

/// Every store kind of the A.1 #15 / exception (2) checks: both JSONL
/// encodings, SQLite, and PostgreSQL when the test server is there (a
/// throw-away schema, dropped with `dir`).
fn every_kind(dir: &TempDir, test: &str) -> Vec<(&'static str, Store)> {
    let mut out = stores(dir.path());
    if let Some(url) = support::pg::url(test) {
        let schema = support::pg::unique_schema(test);
        let (u, s) = (url.clone(), schema.clone());
        dir.on_drop_once("pg-schema", move || support::pg::drop_schema(&u, &s));
        let config = dsh_persist::store::PostgresConfig::new(url).with_schema(schema);
        out.push((
            "postgres",
            Store::open(StoreConfig::with_backend(BackendConfig::Postgres(config))).unwrap(),
        ));
    }
    out
}

/// An open turn whose tool call was recorded (`tool/call`) but not
/// answered: its closers are a `tool/result` with `sourceEventSeqs` and
/// `surfaceOp`, a `step/end` and a `turn/end`.
fn open_turn_with_recorded_call() -> Vec<Event> {
    let turn = |seq: u64, ty: &str, data: String, op: bool| {
        Event::parse(&format!(
            r#"{{"type":"{ty}","seq":{seq},"time":{},"data":{data}{}}}"#,
            10 + seq,
            if op { r#","surfaceOp":"append""# } else { "" }
        ))
        .unwrap()
    };
    vec![
        turn(0, "turn/start", r#"{"turn":1}"#.into(), false),
        turn(
            1,
            "user/message",
            support::conv::user_message("u1", "go"),
            true,
        ),
        turn(2, "step/start", r#"{"turn":1,"step":1}"#.into(), false),
        turn(
            3,
            "assistant/message",
            support::conv::assistant_message(1, 1, "a1", "Let me look.", &[("c1", "bash")]),
            true,
        ),
        turn(4, "tool/call", support::conv::tool_call(1, 1, "c1"), false),
    ]
}

/// A.1 #15: the original's row stores return a repaired log as re-read
/// from the rows, so the closers of a SQLite (and PostgreSQL, the same row
/// code) `load` come with the keys a read of the rows gives
/// (`…, sourceEventSeqs, surfaceOp`), equal to every later load and
/// inspect; JSONL returns the closers as written (`…, surfaceOp,
/// sourceEventSeqs`), which is also what a read of the file gives. An
/// inspect before the repair keeps the closers in memory, in the order the
/// original's synthesizes them.
#[test]
fn a1_15_a_repairing_load_returns_what_a_later_read_of_the_store_gives() {
    let dir = TempDir::new("a1-15");
    for (kind, store) in every_kind(&dir, "a1_15") {
        let id = format!("open-{}", std::process::id());
        store.create(header(&id)).unwrap();
        store.append(&id, open_turn_with_recorded_call()).unwrap();
        let before = lines(&store.inspect(&id).unwrap());
        assert_eq!(before.len(), 8, "{kind}");
        assert!(
            before[5].ends_with(r#""surfaceOp":"append","sourceEventSeqs":[4]}"#),
            "{kind}: inspect synthesizes in the closer order: {}",
            before[5]
        );
        let loaded = lines(&store.load(&id).unwrap());
        let want_closer = if kind.starts_with("jsonl") {
            r#""surfaceOp":"append","sourceEventSeqs":[4]}"#
        } else {
            r#""sourceEventSeqs":[4],"surfaceOp":"append"}"#
        };
        assert!(loaded[5].ends_with(want_closer), "{kind}: {}", loaded[5]);
        assert_eq!(loaded[..5], before[..5], "{kind}");
        assert_eq!(
            lines(&store.inspect(&id).unwrap()),
            loaded,
            "{kind}: inspect after"
        );
        assert_eq!(
            lines(&store.load(&id).unwrap()),
            loaded,
            "{kind}: a second load"
        );
        assert_eq!(
            lines(&store.read_from(&id, 0).unwrap()),
            loaded,
            "{kind}: read_from"
        );
        // A resume that repairs publishes what a later read gives, too.
        let other = format!("{id}-resumed");
        store.create(header(&other)).unwrap();
        store
            .append(&other, open_turn_with_recorded_call())
            .unwrap();
        let live = store.resume(&other).unwrap();
        let resumed: Vec<String> = live.snapshot()[..8].iter().map(Event::to_json).collect();
        live.close().unwrap();
        assert!(
            resumed[5].ends_with(want_closer),
            "{kind}: resume: {}",
            resumed[5]
        );
        assert_eq!(
            lines(&store.read_from(&other, 0).unwrap())[..8],
            resumed[..],
            "{kind}: resume"
        );
        store.close().unwrap();
    }
}

fn jsonl_packed(dir: &Path, compression: Compression, pack_chunks: bool) -> Store {
    let mut c = JsonlConfig::new(dir.join("root"));
    c.compression = compression;
    c.pack_chunks = pack_chunks;
    Store::open(StoreConfig::with_backend(BackendConfig::Jsonl(c))).unwrap()
}

fn delta_event(seq: u64, text: &str) -> Event {
    Event::parse(&format!(
        r#"{{"type":"assistant/chunk","seq":{seq},"time":20,"data":{}}}"#,
        support::conv::text_delta(1, 1, text)
    ))
    .unwrap()
}

/// The first batch of the A.1 #16 session (no chunk deltas: its frame is
/// the same whatever `packChunks`), then the torn batch: six deltas and an
/// assistant message of ~200 KB of poorly compressible text, so its zstd
/// frame spans several blocks and a cut near its end leaves the deltas
/// decodable.
fn a1_16_batches() -> (Vec<Event>, Vec<Event>) {
    let first = open_turn_with_recorded_call()[..3].to_vec();
    let mut torn: Vec<Event> = (0..6)
        .map(|i| delta_event(3 + i, &format!("piece {i} ")))
        .collect();
    let noise = support::incompressible_text(200_000);
    torn.push(
        Event::parse(&format!(
            r#"{{"type":"assistant/message","seq":9,"time":21,"data":{},"surfaceOp":"append"}}"#,
            support::conv::assistant_message(1, 1, "a1", &noise, &[])
        ))
        .unwrap(),
    );
    (first, torn)
}

/// A.1 #16: the repair of a torn zstd frame whose decodable prefix holds
/// chunk deltas re-encodes the recovered events with the reading store's
/// `packChunks` (the original's MANIFEST: "packChunks only affects bytes
/// written by a repair"): the repaired file is byte for byte what a store
/// with that `packChunks` writes when it appends the recovered events and
/// the closers as one batch. Both directions.
#[test]
fn a1_16_a_torn_frame_repair_re_encodes_with_the_readers_pack_chunks() {
    for writer_packs in [true, false] {
        let tag = if writer_packs { "packed" } else { "unpacked" };
        let dir = TempDir::new("a1-16");
        let (first, torn) = a1_16_batches();
        let writer = jsonl_packed(&dir.path().join("w"), Compression::Zstd, writer_packs);
        writer.create(header("s")).unwrap();
        writer.append("s", first.clone()).unwrap();
        writer.append("s", torn).unwrap();
        writer.close().unwrap();
        let path = path_of(&jsonl(&dir.path().join("w"), Compression::Zstd), "s");
        let full = std::fs::read(&path).unwrap();
        std::fs::write(&path, &full[..full.len() - 3 * 1024]).unwrap();

        let reader = jsonl_packed(&dir.path().join("w"), Compression::Zstd, !writer_packs);
        let view = reader.load("s").unwrap();
        // The six deltas were recovered, the message was torn; the closers
        // (step/end, turn/end) follow.
        let types: Vec<&str> = view.events.iter().map(|e| e.type_str()).collect();
        assert_eq!(types.len(), 11, "{tag}: {types:?}");
        assert_eq!(types[3..9], ["assistant/chunk"; 6], "{tag}");
        assert_eq!(types[9..], ["step/end", "turn/end"], "{tag}");
        reader.close().unwrap();
        let repaired = std::fs::read(&path).unwrap();

        let reference = jsonl_packed(&dir.path().join("r"), Compression::Zstd, !writer_packs);
        reference.create(header("s")).unwrap();
        reference.append("s", first).unwrap();
        reference.append("s", view.events[3..].to_vec()).unwrap();
        reference.close().unwrap();
        let want = std::fs::read(path_of(
            &jsonl(&dir.path().join("r"), Compression::Zstd),
            "s",
        ))
        .unwrap();
        assert_eq!(
            repaired, want,
            "{tag} log repaired by a store with packChunks {}",
            !writer_packs
        );
        // And the bytes are not those of the stored form.
        let stored_form = {
            let d = TempDir::new("a1-16-same");
            let same = jsonl_packed(d.path(), Compression::Zstd, writer_packs);
            same.create(header("s")).unwrap();
            same.append("s", view.events[..3].to_vec()).unwrap();
            same.append("s", view.events[3..].to_vec()).unwrap();
            same.close().unwrap();
            std::fs::read(path_of(&jsonl(d.path(), Compression::Zstd), "s")).unwrap()
        };
        assert_ne!(repaired, stored_form, "{tag}");
    }
}

/// A.1 #16 on uncompressed JSONL: a torn tail there is the partial last
/// line only; the repair cuts it and appends the closers, and the intact
/// lines keep their stored bytes (a packed row stays packed under a store
/// that does not pack): nothing is re-encoded, as in the original.
#[test]
fn a1_16_uncompressed_repairs_keep_the_intact_lines_as_stored() {
    for writer_packs in [true, false] {
        let dir = TempDir::new("a1-16n");
        let (first, torn) = a1_16_batches();
        let writer = jsonl_packed(dir.path(), Compression::None, writer_packs);
        writer.create(header("s")).unwrap();
        writer.append("s", first).unwrap();
        writer.append("s", torn[..6].to_vec()).unwrap();
        writer.close().unwrap();
        let path = path_of(&jsonl(dir.path(), Compression::None), "s");
        let intact = std::fs::read(&path).unwrap();
        let mut bytes = intact.clone();
        bytes.extend_from_slice(br#"{"type":"assistant/message","seq":9,"ti"#);
        std::fs::write(&path, &bytes).unwrap();
        let reader = jsonl_packed(dir.path(), Compression::None, !writer_packs);
        let view = reader.load("s").unwrap();
        assert_eq!(view.events.len(), 11);
        reader.close().unwrap();
        let repaired = std::fs::read(&path).unwrap();
        assert!(repaired.starts_with(&intact), "packs {writer_packs}");
        let mut closers = String::new();
        for e in &view.events[9..] {
            closers.push_str(&e.to_json());
            closers.push('\n');
        }
        assert_eq!(&repaired[intact.len()..], closers.as_bytes());
    }
}

/// What `dsh-persist --json verify` prints for the store at `root`.
fn verify_json(root: &Path) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dsh-persist"))
        .arg("-s")
        .arg(root)
        .args(["--json", "verify"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The JSONL directory of an id given as UTF-16 code units, with a log
/// holding `header_id_json` as its header's id (a store the original
/// wrote: its create accepts such ids).
fn write_foreign_id_log(root: &Path, units: &[u16], header_id_json: &str) -> PathBuf {
    let seg = dsh_persist::backend::jsonl::layout::escape_id_utf16(units).unwrap();
    let dir = root.join("--w--").join(seg);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("session.jsonl");
    std::fs::write(
        &path,
        format!(
            "{{\"type\":\"session\",\"version\":0,\"id\":{header_id_json},\"createdAt\":1000,\"cwd\":\"/w\",\"delegationDepth\":0}}\n{T1}\n{E1}\n"
        ),
    )
    .unwrap();
    path
}

/// DIFFERENCES, exception (2), JSONL: a session whose id holds a lone
/// surrogate (a directory `~D800x` the original's create made) is listed
/// with its id as stored, `read_from` reaches it by the id's
/// U+FFFD spelling (the one form Rust and C strings can carry), `load`
/// refuses its header as the original's does (A.1 #10), and `verify`'s
/// check names that problem — not a misplaced artifact. Two ids that
/// differ only in lone surrogates are a conflict naming both directories.
#[test]
fn exception_2_a_lone_surrogate_id_is_listed_and_reachable() {
    let dir = TempDir::new("x2-lone");
    let store = jsonl(dir.path(), Compression::None);
    let root = dir.path().join("root");
    let path = write_foreign_id_log(&root, &[0xD800, u16::from(b'x')], r#""\ud800x""#);
    let listed = store.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert!(
        listed[0].to_json().contains(r#""id":"\ud800x""#),
        "{}",
        listed[0].to_json()
    );
    let id = "\u{FFFD}x";
    assert_eq!(listed[0].id, id);
    assert_eq!(store.read_from(id, 0).unwrap().events.len(), 2);
    let before = std::fs::read(&path).unwrap();
    let e = store.load(id).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    assert!(e.to_string().contains("lone surrogate"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // The read side of verify: every scanned session is read back by id.
    let text = verify_json(&root);
    assert!(text.contains("\"sessions\":1"), "{text}");
    assert!(!text.contains("misplaced"), "{text}");
    assert!(
        text.contains("lone surrogate"),
        "verify names the header problem: {text}"
    );
    // A twin whose lone surrogate differs: the U+FFFD spelling is ambiguous.
    write_foreign_id_log(&root, &[0xDC00, u16::from(b'x')], r#""\udc00x""#);
    let store = jsonl(dir.path(), Compression::None);
    assert_eq!(store.list().unwrap().len(), 2);
    let e = store.read_from(id, 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert!(
        e.to_string().contains("~D800x") && e.to_string().contains("~DC00x"),
        "{e}"
    );
}

/// DIFFERENCES, exception (2), U+0000: ids the original wrote with U+0000
/// (a JSONL directory `a~0000b`, a SQLite row) are listed, verify checks
/// them clean, and every read reaches them (the C ABI through the
/// `_id_json` calls, tests/c/test_id_json.c, which also checks that the C
/// ABI's create still refuses a new one).
#[test]
fn exception_2_ids_with_nul_written_by_the_original_are_listed_and_load() {
    let dir = TempDir::new("x2-nul");
    let store = jsonl(dir.path(), Compression::None);
    let root = dir.path().join("root");
    write_foreign_id_log(&root, &[0x61, 0, 0x62], r#""a\u0000b""#);
    let listed = store.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, "a\0b");
    assert!(listed[0].to_json().contains(r#""id":"a\u0000b""#));
    assert_eq!(store.load("a\0b").unwrap().events.len(), 2);
    let text = verify_json(&root);
    assert!(text.contains("\"sessions\":1,\"ok\":1"), "{text}");

    // SQLite: the row as the original's better-sqlite3 writes it (TEXT
    // with an embedded U+0000).
    let db = dir.path().join("s.db");
    let sq = sqlite(dir.path());
    sq.create(header("ab")).unwrap();
    sq.append("ab", events(&format!("[{T1},{E1}]"))).unwrap();
    sq.close().unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    conn.execute(
        "UPDATE events SET session_id = ?1 WHERE session_id = 'ab'",
        ["a\0b"],
    )
    .unwrap();
    conn.execute("UPDATE sessions SET id = ?1 WHERE id = 'ab'", ["a\0b"])
        .unwrap();
    drop(conn);
    let sq = sqlite(dir.path());
    let listed = sq.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, "a\0b");
    assert_eq!(sq.load("a\0b").unwrap().events.len(), 2);
    sq.close().unwrap();
    let text = verify_json(&db);
    assert!(text.contains("\"sessions\":1,\"ok\":1"), "{text}");
}
