//! The JSONL backend against the original's fixture roots
//! (`fixtures/upstream/cases.json`, `expected-jsonl-*.json`).
//!
//! The backend is compared on what it is responsible for: listing, locating,
//! raw reads, the stored events (`readFrom` without closers), torn tails,
//! corruption and layout errors, revisions and byte-identical repairs.
//! Refusals that come from model rules (unknown event types, message shapes,
//! legacy `request/header-delta`) and the legacy conversions are applied by
//! the store layer: for those sessions the backend must read the log fine,
//! and the test checks only that.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dsh_persist::backend::jsonl::{Compression, JsonlBackend, JsonlConfig};
use dsh_persist::backend::{Backend, Location, TornTail};
use dsh_persist::codec::chunk_rows::Record;
use dsh_persist::error::ErrorKind;
use dsh_persist::model::event::Event;
use serde_json::Value;
use sha2::{Digest, Sha256};
use support::*;

fn jsonl_roots() -> Vec<Value> {
    cases()["roots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "jsonl")
        .cloned()
        .collect()
}

fn open_root(entry: &Value, path: &Path) -> JsonlBackend {
    JsonlBackend::open(JsonlConfig {
        root: path.to_path_buf(),
        compression: match entry["compression"].as_str().unwrap() {
            "zstd" => Compression::Zstd,
            _ => Compression::None,
        },
        pack_chunks: entry["packChunks"].as_bool().unwrap(),
        limits: Default::default(),
    })
    .unwrap()
}

fn events_json(events: &[Event]) -> Vec<Value> {
    events.iter().map(|e| parse(&e.to_json())).collect()
}

/// Errors the backend itself raises (the rest come from the store layer).
fn is_backend_error(message: &str) -> bool {
    message.starts_with("corrupt ")
        || message.contains(" uses log format v")
        || message.starts_with("session artifact ")
}

fn session_ids(exp: &Value) -> Vec<String> {
    exp["sessions"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

fn check_error(root: &Path, what: &str, got: &dsh_persist::Error, want: &Value) {
    let msg = redact(&got.to_string(), root);
    assert_eq!(msg, want["message"].as_str().unwrap(), "{what}");
    if let Some(cause) = want.get("cause") {
        assert_eq!(
            got.cause(),
            cause["message"].as_str(),
            "{what}: cause of {msg}"
        );
    }
    let kind = got.kind();
    if msg.starts_with("corrupt ") {
        assert_eq!(kind, ErrorKind::Corruption, "{what}");
    } else if msg.contains(" uses log format v") {
        assert_eq!(kind, ErrorKind::FormatUnsupported, "{what}");
    }
}

#[test]
fn list_locate_read_raw_and_read_from_match_the_original() {
    for entry in jsonl_roots() {
        let name = entry["name"].as_str().unwrap().to_string();
        let exp = expected(&name);
        let (_tmp, root) = fixture_copy(entry["path"].as_str().unwrap());
        let be = open_root(&entry, &root);
        let ctx = |what: &str| format!("{name}: {what}");

        // list
        let listed = be.list();
        let mut by_id = BTreeMap::new();
        match (&listed, exp["list"].get("ok")) {
            (Ok(headers), Some(want)) => {
                let mut got: Vec<Value> = headers.iter().map(|h| parse(&h.to_json())).collect();
                got.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
                assert_eq!(&Value::Array(got), want, "{}", ctx("list"));
                for h in headers {
                    by_id.insert(h.id.to_owned(), h.to_header());
                }
            }
            (Err(e), None) => check_error(&root, &ctx("list"), e, &exp["list"]["error"]),
            (got, _) => panic!("{}: list gave {got:?}, want {}", name, exp["list"]),
        }
        let snaps = be.list_snapshots().ok();

        for id in session_ids(&exp) {
            let s = &exp["sessions"][&id];
            let what = |k: &str| format!("{name} / {id}: {k}");

            // locate (the dump located listed sessions only)
            if let Some(h) = by_id.get(&id) {
                let Location::Jsonl { path } = be.locate(h).unwrap().unwrap();
                assert_eq!(
                    redact(&path, &root),
                    s["locate"]["ok"]["path"].as_str().unwrap(),
                    "{}",
                    what("locate")
                );
            }

            // readRawBefore
            let raw = be.read_raw(&id);
            let want = &s["readRawBefore"];
            match (&raw, want.get("ok")) {
                (Ok(None), Some(Value::Null)) => {}
                (Ok(Some(a)), Some(w)) if !w.is_null() => {
                    assert_eq!(
                        a.filename,
                        w["filename"].as_str().unwrap(),
                        "{}",
                        what("filename")
                    );
                    assert_eq!(
                        a.content,
                        w["content"].as_str().unwrap(),
                        "{}",
                        what("content")
                    );
                    assert_eq!(parse(&a.header.to_json()), w["meta"], "{}", what("meta"));
                }
                (Err(e), None) => check_error(&root, &what("readRaw"), e, &want["error"]),
                (got, _) => panic!("{}: got {got:?}, want {want}", what("readRaw")),
            }

            // read_from: all intact stored events, no closers.
            let want = resolve(s, "readFrom.0");
            let got = be.read_from(&id, 0);
            match (&got, want.get("ok")) {
                (Ok(Some(sfx)), Some(w)) => {
                    assert_eq!(parse(&sfx.header.to_json()), w["meta"], "{}", what("meta"));
                    if name == "jsonl-none-legacy" {
                        // Legacy shapes are converted by the store layer.
                        assert_eq!(
                            sfx.events.len(),
                            w["events"].as_array().unwrap().len(),
                            "{}",
                            what("legacy event count")
                        );
                    } else {
                        assert_eq!(
                            Value::Array(events_json(&sfx.events)),
                            w["events"],
                            "{}",
                            what("readFrom events")
                        );
                    }
                }
                (Ok(None), None) => {
                    let m = want["error"]["message"].as_str().unwrap();
                    assert_eq!(
                        m,
                        format!("session {} not found", serde_json::to_string(&id).unwrap())
                    );
                }
                (Err(e), None) => {
                    check_error(&root, &what("readFrom"), e, &want["error"]);
                }
                (Ok(Some(sfx)), None) => {
                    let m = want["error"]["message"].as_str().unwrap();
                    assert!(
                        !is_backend_error(m),
                        "{}: backend read fine but the original failed with {m}",
                        what("readFrom")
                    );
                    // A model-level refusal: the backend hands the whole
                    // stored log to the store, which refuses it.
                    assert!(!sfx.events.is_empty(), "{}", what("readFrom"));
                }
                (got, _) => panic!("{}: got {got:?}, want {want}", what("readFrom")),
            }

            // read() agrees with read_from() on the events.
            if let (Ok(Some(log)), Ok(Some(sfx))) = (be.read(&id), &got) {
                assert_eq!(log.events, sfx.events, "{}", what("read vs read_from"));
                assert!(
                    log.raw_log
                        .as_deref()
                        .is_some_and(|p| p.ends_with(file_name_for(&entry)))
                );
                // Revision stable while unchanged, and equal to the listed one.
                assert_eq!(
                    be.revision(&id).unwrap().as_ref(),
                    Some(&log.revision),
                    "{}",
                    what("revision")
                );
                if let Some(snaps) = &snaps {
                    let listed = snaps.iter().find(|(h, _)| h.id == id).map(|(_, r)| r);
                    assert_eq!(listed, Some(&log.revision), "{}", what("snapshot revision"));
                }
                let again = be.read(&id).unwrap().unwrap();
                assert_eq!(again.revision, log.revision);
                assert_eq!(again.torn, log.torn);
            }
        }
    }
}

fn file_name_for(entry: &Value) -> &'static str {
    if entry["compression"] == "zstd" {
        "session.jsonl.zstd"
    } else {
        "session.jsonl"
    }
}

/// The closers a load appended: the records of the repaired text whose seq
/// is past the stored prefix (the closer computation lives in another
/// module; here it is taken from the original's output).
fn closers_from(after_text: &str, stored_len: u64) -> Vec<Event> {
    let mut out = Vec::new();
    for line in after_text.lines().skip(1) {
        let r = Record::parse_line(line).unwrap();
        if r.first_seq() >= stored_len {
            r.into_events(&mut out);
        }
    }
    out
}

fn sha256_hex(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn repairs_write_the_originals_bytes() {
    for entry in jsonl_roots() {
        let name = entry["name"].as_str().unwrap().to_string();
        let exp = expected(&name);
        let (_tmp, root) = fixture_copy(entry["path"].as_str().unwrap());
        let be = open_root(&entry, &root);
        for id in session_ids(&exp) {
            let s = &exp["sessions"][&id];
            let what = |k: &str| format!("{name} / {id}: {k}");
            let load = resolve(s, "load");
            let Some(log) = be.read(&id).ok().flatten() else {
                continue;
            };
            let before = be.revision(&id).unwrap().unwrap();
            if load.get("ok").is_none() {
                continue; // refused: nothing is written
            }
            let after_raw = resolve(s, "afterLoad.readRaw");
            let after_text = after_raw["ok"]["content"].as_str().unwrap();
            let closers = closers_from(after_text, log.events.len() as u64);
            let rev = be.commit_repair(&id, &log, &closers).unwrap();
            let changed = rev != before;
            assert_eq!(
                Value::Bool(changed),
                s["revisionChangedByLoad"],
                "{}",
                what("revision changed by load")
            );
            assert_eq!(
                be.revision(&id).unwrap(),
                Some(rev.clone()),
                "{}",
                what("revision")
            );
            let raw = be.read_raw(&id).unwrap().unwrap();
            assert_eq!(raw.content, after_text, "{}", what("afterLoad.readRaw"));
            let again = be.read(&id).unwrap().unwrap();
            assert_eq!(again.torn, None, "{}", what("torn after repair"));
            assert_eq!(again.revision, rev);
            assert_eq!(
                again.events.len(),
                log.events.len() + closers.len(),
                "{}",
                what("events after repair")
            );
            // A stale revision is refused.
            let stale = be.commit_repair(&id, &log, &closers);
            if changed {
                assert_eq!(stale.unwrap_err().kind(), ErrorKind::Conflict);
            }
        }
        // Every file byte for byte as the original left it.
        let want: BTreeMap<String, String> = exp["filesAfter"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["path"].as_str().unwrap().to_string(),
                    f["sha256"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let got: BTreeMap<String, String> = files_under(&root)
            .iter()
            .map(|p| {
                (
                    p.strip_prefix(&root).unwrap().display().to_string(),
                    sha256_hex(p),
                )
            })
            .collect();
        assert_eq!(got, want, "{name}: filesAfter");
        if let Some(ids) = exp["listAfterLoads"].get("ok") {
            let mut listed: Vec<String> = be.list().unwrap().into_iter().map(|h| h.id).collect();
            listed.sort();
            let want: Vec<String> = ids
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            assert_eq!(listed, want, "{name}: listAfterLoads");
        }
    }
}

#[test]
fn torn_tails_in_the_fixtures() {
    // zstd torn-d: the cut multi-block frame yields 13 complete lines, which
    // the repair re-appends.
    let (_tmp, root) = fixture_copy("jsonl/jsonl-zstd-packed");
    let be = open_root(&case_root("jsonl-zstd-packed"), &root);
    let log = be.read("torn-d").unwrap().unwrap();
    match &log.torn {
        Some(TornTail::Jsonl {
            truncate_to,
            recovered,
        }) => {
            assert_eq!(*truncate_to, 681);
            assert_eq!(recovered.len(), 13);
        }
        other => panic!("torn-d: {other:?}"),
    }
    let log = be.read("torn-a").unwrap().unwrap();
    assert_eq!(
        log.torn,
        Some(TornTail::Jsonl {
            truncate_to: 681,
            recovered: vec![]
        })
    );
    assert_eq!(be.read("conv-basic").unwrap().unwrap().torn, None);

    let (_tmp, root) = fixture_copy("jsonl/jsonl-none-packed");
    let be = open_root(&case_root("jsonl-none-packed"), &root);
    for (id, cut) in [("torn-a", 3639), ("torn-b", 3688)] {
        let log = be.read(id).unwrap().unwrap();
        let Some(TornTail::Jsonl {
            truncate_to,
            recovered,
        }) = log.torn
        else {
            panic!("{id}: not torn");
        };
        assert!(recovered.is_empty());
        assert!(truncate_to < cut as u64, "{id}");
        let text = std::fs::read(root.join("--srv-torn--").join(id).join("session.jsonl")).unwrap();
        assert_eq!(
            text[truncate_to as usize - 1],
            b'\n',
            "{id}: cut at a line start"
        );
    }
}
