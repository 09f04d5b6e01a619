//! The model rules against the logs the original wrote: legacy conversion,
//! read/session validation, closers (byte-exact) and derived messages,
//! compared with the original's `readFrom` / `inspect` / `afterLoad` dumps.
//!
//! Logs are read here with a minimal line reader (the JSONL backend is not
//! under test): records are parsed with the codec, and a torn tail is cut at
//! the first line that is unterminated, unparsable or out of sequence (the
//! fixtures used here have no `turn/end` after such a line).

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use dsh_persist::codec::chunk_rows::Record;
use dsh_persist::model::event::Event;
use dsh_persist::model::header::SessionHeader;
use dsh_persist::model::invariants::TurnTrace;
use dsh_persist::model::legacy::convert_legacy;
use dsh_persist::model::repair::closers;
use dsh_persist::model::surface::derive_messages;
use dsh_persist::model::validate::{read_from_view, session_view};
use dsh_persist::model::vocabulary::Vocabulary;
use dsh_persist::{Error, ErrorKind};
use serde_json::Value;

struct StoredLog {
    path: PathBuf,
    header_line: String,
    events: Vec<Event>,
}

fn fixture_root(name: &str) -> PathBuf {
    support::fixtures_dir().join("jsonl").join(name)
}

fn session_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            session_files(&p, out);
        } else if p.file_name().unwrap() == "session.jsonl" {
            out.push(p);
        }
    }
}

/// Every session of a compression-none root, by header id.
fn read_root(name: &str) -> BTreeMap<String, StoredLog> {
    let mut files = Vec::new();
    session_files(&fixture_root(name), &mut files);
    let mut out = BTreeMap::new();
    for path in files {
        let text = fs::read_to_string(&path).unwrap();
        let mut lines = text.split_inclusive('\n');
        let header_line = lines.next().unwrap().trim_end_matches('\n').to_string();
        let (id, _) = SessionHeader::peek_id_version(&header_line).unwrap();
        let mut events = Vec::new();
        for line in lines {
            let Some(line) = line.strip_suffix('\n') else {
                break;
            };
            let Ok(rec) = Record::parse_line(line) else {
                break;
            };
            if rec.first_seq() != events.len() as u64 {
                break;
            }
            rec.into_events(&mut events);
        }
        out.insert(
            id,
            StoredLog {
                path,
                header_line,
                events,
            },
        );
    }
    out
}

fn to_values(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .map(|e| support::parse(&e.to_json()))
        .collect()
}

fn expected_events(session: &Value, key: &str) -> Vec<Value> {
    let r = support::resolve(session, key);
    r["ok"]["events"]
        .as_array()
        .unwrap_or_else(|| panic!("{key} is not ok: {r}"))
        .clone()
}

fn is_torn(id: &str) -> bool {
    id.starts_with("torn-")
}

/// The balanced view `inspect` returns: converted, validated, plus closers.
fn inspect(id: &str, log: &StoredLog, strict: bool) -> Result<(Vec<Event>, Vec<Event>), Error> {
    let mut events = log.events.clone();
    let raw = log.path.display().to_string();
    let c = session_view(id, Some(&raw), &Vocabulary::default(), strict, &mut events)?;
    Ok((events, c))
}

#[test]
fn unpacked_corpus_inspect_matches_the_original() {
    let expected = support::expected("jsonl-none-unpacked");
    let logs = read_root("jsonl-none-unpacked");
    assert!(logs.len() >= 25, "found {} sessions", logs.len());
    let mut with_closers = Vec::new();
    for (id, log) in &logs {
        let session = &expected["sessions"][id];
        let (events, c) = inspect(id, log, false).unwrap_or_else(|e| panic!("{id}: {e}"));
        let mut all = events.clone();
        all.extend(c.iter().cloned());
        assert_eq!(
            to_values(&all),
            expected_events(session, "inspect"),
            "{id}: inspect"
        );
        // read_from = the stored prefix, converted and read-checked
        read_from_view(id, None, &Vocabulary::default(), &mut events.clone()).unwrap();
        assert_eq!(
            to_values(&events),
            expected_events(session, "readFrom.0"),
            "{id}: readFrom"
        );
        if !c.is_empty() {
            with_closers.push(id.clone());
            // byte-exact: the lines load() appended end the artifact
            let raw = support::resolve(session, "afterLoad.readRaw");
            let content = raw["ok"]["content"].as_str().unwrap();
            let mut want: Vec<&str> = content.trim_end_matches('\n').split('\n').collect();
            let want = want.split_off(want.len() - c.len());
            let got: Vec<String> = c.iter().map(Event::to_json).collect();
            assert_eq!(got, want, "{id}: closer lines");
        }
        if !is_torn(id) {
            // raw lines round-trip byte for byte
            let text = fs::read_to_string(&log.path).unwrap();
            let mut lines = text.lines();
            assert_eq!(lines.next().unwrap(), log.header_line);
            for (line, e) in lines.zip(&log.events) {
                if e.event_type() != "steering/message" {
                    assert_eq!(e.to_json(), line, "{id}: round trip");
                }
            }
        }
    }
    with_closers.sort();
    assert_eq!(
        with_closers,
        ["open-turn", "open-turn-nostep", "torn-a", "torn-b"],
        "sessions needing closers"
    );
}

#[test]
fn packed_corpus_inspect_matches_the_original() {
    let expected = support::expected("jsonl-none-packed");
    for (id, log) in &read_root("jsonl-none-packed") {
        let session = &expected["sessions"][id];
        let (mut events, c) = inspect(id, log, false).unwrap_or_else(|e| panic!("{id}: {e}"));
        events.extend(c);
        assert_eq!(
            to_values(&events),
            expected_events(session, "inspect"),
            "{id}"
        );
    }
}

#[test]
fn corpus_passes_the_strict_trace() {
    let mut logs = read_root("jsonl-none-unpacked");
    logs.extend(read_root("jsonl-none-legacy"));
    for (id, log) in &logs {
        let mut events = log.events.clone();
        convert_legacy(id, &mut events).unwrap();
        events.extend(closers(&events));
        let mut trace = TurnTrace::new();
        for e in &events {
            trace
                .check(e)
                .unwrap_or_else(|m| panic!("{id}: seq {}: {m}", e.seq));
        }
        assert_eq!(trace.open_turn(), None, "{id}: balanced after closers");
        inspect(id, log, true).unwrap_or_else(|e| panic!("{id}: strict inspect: {e}"));
    }
}

#[test]
fn legacy_shapes_convert_like_the_original() {
    let expected = support::expected("jsonl-none-legacy");
    let logs = read_root("jsonl-none-legacy");
    let log = &logs["legacy-shapes"];
    let session = &expected["sessions"]["legacy-shapes"];
    let (events, c) = inspect("legacy-shapes", log, false).unwrap();
    assert!(c.is_empty());
    assert_eq!(to_values(&events), expected_events(session, "inspect"));
    assert_eq!(to_values(&events), expected_events(session, "readFrom.0"));
    // messages derived from the converted log: the replaced tool result
    // keeps the minted id of the result it shadows
    let msgs: Vec<Value> = derive_messages(&events)
        .iter()
        .map(|m| support::parse(m.as_str()))
        .collect();
    let ids: Vec<&str> = msgs.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "legacy-message:legacy-shapes:2",
            "legacy-message:legacy-shapes:3",
            "legacy-message:legacy-shapes:5",
            "legacy-message:legacy-shapes:6",
        ]
    );
    assert_eq!(msgs[2]["content"][0]["content"][0]["text"], "pruned");
}

fn class_of(e: &Error) -> &'static str {
    match e.kind() {
        ErrorKind::FormatUnsupported => "SessionFormatUnsupportedError",
        ErrorKind::Corruption if e.cause().is_some() => "SessionPersistenceCorruptionError",
        _ => "Error",
    }
}

fn assert_error(id: &str, what: &str, got: &Error, want: &Value, root: &Path) {
    assert_eq!(class_of(got), want["class"], "{id} {what}: class of {got}");
    assert_eq!(
        support::redact(&got.to_string(), root),
        want["message"].as_str().unwrap(),
        "{id} {what}"
    );
    if let Some(cause) = want.get("cause") {
        assert_eq!(got.cause(), cause["message"].as_str(), "{id} {what}: cause");
    }
}

#[test]
fn refused_sessions_fail_like_the_original() {
    let name = "jsonl-none-refused";
    let expected = support::expected(name);
    let root = fixture_root(name);
    let logs = read_root(name);
    // sessions refused by the backend itself (line scan, header version)
    // are not the model's business
    let model_cases = [
        "bad-assistant-source",
        "header-missing-model",
        "invalid-surface",
        "legacy-header-delta",
        "unknown-required",
        "complete-frame-torn-record",
    ];
    for id in model_cases {
        let log = &logs[id];
        let session = &expected["sessions"][id];
        let raw = log.path.display().to_string();
        let vocab = Vocabulary::default();
        // readFrom: convert + read checks
        let mut events = log.events.clone();
        let read = read_from_view(id, Some(&raw), &vocab, &mut events);
        let want = support::resolve(session, "readFrom.0");
        match (&read, want.get("error")) {
            (Err(e), Some(w)) => assert_error(id, "readFrom", e, w, &root),
            (Ok(()), None) => {
                assert_eq!(to_values(&events), expected_events(session, "readFrom.0"))
            }
            _ => panic!("{id}: readFrom got {read:?}, want {want}"),
        }
        let got = inspect(id, log, false);
        let want = support::resolve(session, "inspect");
        match (&got, want.get("error")) {
            (Err(e), Some(w)) => assert_error(id, "inspect", e, w, &root),
            (Ok((ev, c)), None) => {
                let mut all = ev.clone();
                all.extend(c.iter().cloned());
                assert_eq!(to_values(&all), expected_events(session, "inspect"), "{id}");
            }
            _ => panic!("{id}: inspect got {:?}, want {want}", got.map(|_| ())),
        }
    }
}

#[test]
fn derived_messages_follow_compaction() {
    let logs = read_root("jsonl-none-unpacked");
    let log = &logs["surface-replace"];
    let msgs: Vec<Value> = derive_messages(&log.events)
        .iter()
        .map(|m| support::parse(m.as_str()))
        .collect();
    let ids: Vec<&str> = msgs.iter().map(|m| m["id"].as_str().unwrap()).collect();
    // 2..23 folded into the summary; sr-empty has empty content; the pruned
    // result replaced the full one in place
    assert_eq!(
        ids,
        ["sr-summary", "sr-u3", "sr-a3", "sr-a3-result-call_sr"]
    );
    assert_eq!(
        msgs[3]["content"][0]["content"][0]["text"],
        "[output pruned: 100 bytes]"
    );
    // a closed conversation: user, assistant (tool call), tool result, …
    let conv = &logs["conv-basic"];
    let msgs = derive_messages(&conv.events);
    let roles: Vec<String> = msgs
        .iter()
        .map(|m| {
            support::parse(m.as_str())["role"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let surface_events = conv
        .events
        .iter()
        .filter(|e| e.surface_op().is_some())
        .count();
    assert_eq!(msgs.len(), surface_events, "no replaces in conv-basic");
    assert!(roles.iter().all(|r| r == "user" || r == "assistant"));
    // open-turn: derived messages plus the closers' results
    let ot = &logs["open-turn"];
    let mut events = ot.events.clone();
    let before = derive_messages(&events).len();
    events.extend(closers(&events));
    let after = derive_messages(&events);
    assert_eq!(after.len(), before + 2);
    assert!(
        after[after.len() - 1]
            .as_str()
            .contains("interrupted-tool-result-call_unrecorded-162")
    );
}
