//! End to end against the original: every root of `cases.json` is copied to
//! a temp dir, opened as a `Store` with the root's settings, and driven
//! through the same calls, in the same order, as the dump made
//! (MANIFEST.md "Dump format"): locate, readRaw, readFrom(k), inspect,
//! load, the revision checks, then the state after load — and finally every
//! file's bytes and sha256 (`filesAfter`), so repairs are byte-identical.

mod support;

use std::fs;
use std::path::{Path, PathBuf};

use dsh_persist::store::Store;
use dsh_persist::{Error, ErrorKind};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The dump's result object for one of our results.
fn result<T>(r: Result<T, Error>, root: &Path, ok: impl FnOnce(T) -> Value) -> Value {
    match r {
        Ok(v) => json!({ "ok": ok(v) }),
        Err(e) => json!({ "error": err_json(&e, root) }),
    }
}

fn err_json(e: &Error, root: &Path) -> Value {
    let message = e.to_string();
    // The original's classes: session-level refusals are
    // SessionFormatUnsupportedError and wrapped validation failures
    // SessionPersistenceCorruptionError; everything else a plain Error. Our
    // kinds are finer: a database whose schema version is foreign is
    // `format_unsupported` here (plain Error there).
    let class = match e.kind() {
        ErrorKind::FormatUnsupported if message.starts_with("session database") => "Error",
        ErrorKind::FormatUnsupported => "SessionFormatUnsupportedError",
        ErrorKind::Corruption if message.starts_with("stored session ") => {
            "SessionPersistenceCorruptionError"
        }
        _ => "Error",
    };
    let mut v = json!({ "class": class, "message": support::redact(&message, root) });
    if let Some(c) = e.cause() {
        v["cause"] = json!({ "message": support::redact(c, root) });
    }
    v
}

/// Compares an expected dump result with ours: `ok` values exactly;
/// errors by class and message (and the cause's message when given).
fn check(what: &str, want: &Value, got: &Value) {
    if let Some(w) = want.get("ok") {
        assert_eq!(got.get("ok"), Some(w), "{what}: ours {got}");
        return;
    }
    let w = &want["error"];
    let g = got
        .get("error")
        .unwrap_or_else(|| panic!("{what}: expected an error {w}, got {got}"));
    assert_eq!(g["message"], w["message"], "{what}");
    let class = w["class"].as_str().unwrap();
    assert_eq!(g["class"], class, "{what}: {}", w["message"]);
    if let Some(c) = w.get("cause") {
        assert_eq!(g["cause"]["message"], c["message"], "{what}: cause");
    }
}

fn view_json(v: dsh_persist::store::SessionView) -> Value {
    support::parse(&v.to_json())
}

fn files(root: &Path) -> Vec<Value> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<(String, PathBuf)>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, base, out);
            } else {
                out.push((p.strip_prefix(base).unwrap().display().to_string(), p));
            }
        }
    }
    let mut list = Vec::new();
    walk(root, root, &mut list);
    list.sort();
    list.into_iter()
        .map(|(rel, p)| {
            let bytes = fs::read(&p).unwrap();
            json!({"path": rel, "bytes": bytes.len(), "sha256": format!("{:x}", Sha256::digest(&bytes))})
        })
        .collect()
}

fn run_root(name: &str) {
    let case = support::case_root(name);
    let expected = support::expected(name);
    let (_tmp, copy) = support::fixture_copy(case["path"].as_str().unwrap());
    let sqlite = case["kind"] == "sqlite";
    let root: &Path = &copy;
    let store = match Store::open(support::case_store_config(&case, &copy)) {
        Ok(s) => s,
        Err(e) => {
            // The whole store is refused: every call in the dump fails alike.
            let got = json!({ "error": err_json(&e, root) });
            check(&format!("{name} list"), &expected["list"], &got);
            for (id, s) in expected["sessions"].as_object().unwrap() {
                check(
                    &format!("{name}/{id} load"),
                    &support::resolve(s, "load"),
                    &got,
                );
            }
            return;
        }
    };
    let snapshot = |id: &str| {
        store
            .list_snapshots()
            .ok()
            .and_then(|l| l.into_iter().find(|(h, _)| h.id == id).map(|(_, r)| r))
    };

    // list (sorted by id, as the dump sorts it)
    let list = result(store.list(), root, |mut l| {
        l.sort_by(|a, b| a.id.cmp(&b.id));
        Value::Array(l.iter().map(|h| support::parse(&h.to_json())).collect())
    });
    check(&format!("{name} list"), &expected["list"], &list);
    let listed: Vec<Value> = expected["list"]["ok"]
        .as_array()
        .cloned()
        .unwrap_or_default();

    let mut checked = 0;
    for (id, s) in expected["sessions"].as_object().unwrap() {
        let at = |k: &str| format!("{name}/{id} {k}");
        // 1. locate (JSONL, listed sessions) and readRaw
        if !sqlite {
            if let Some(h) = listed.iter().find(|h| h["id"] == id.as_str()) {
                let header = dsh_persist::model::header::SessionHeader::parse_any_version(
                    &h.to_string(),
                    dsh_persist::model::header::HeaderSource::Host,
                )
                .unwrap();
                let got = result(store.locate(&header), root, |l| match l {
                    Some(dsh_persist::backend::Location::Jsonl { path }) => {
                        json!({"kind": "jsonl", "path": support::redact(&path, root)})
                    }
                    None => Value::Null,
                });
                check(&at("locate"), &s["locate"], &got);
            }
            let raw = result(store.read_raw(id), root, |r| match r {
                None => Value::Null,
                Some(a) => json!({
                    "meta": support::parse(&a.header.to_json()),
                    "filename": a.filename,
                    "content": a.content,
                }),
            });
            check(
                &at("readRawBefore"),
                &support::resolve(s, "readRawBefore"),
                &raw,
            );
        }
        // 2. readFrom(k)
        for k in s["readFrom"].as_object().unwrap().keys() {
            let want = support::resolve(s, &format!("readFrom.{k}"));
            let got = result(store.read_from(id, k.parse().unwrap()), root, view_json);
            check(&at(&format!("readFrom({k})")), &want, &got);
        }
        // 3. inspect, 4. load, 5. revisions
        let r0 = snapshot(id);
        let got = result(store.inspect(id), root, view_json);
        check(&at("inspect"), &support::resolve(s, "inspect"), &got);
        let r1 = snapshot(id);
        assert_eq!(
            r0 != r1,
            s["revisionChangedByInspect"].as_bool().unwrap(),
            "{}",
            at("revisionChangedByInspect")
        );
        let got = result(store.load(id), root, view_json);
        check(&at("load"), &support::resolve(s, "load"), &got);
        let r2 = snapshot(id);
        assert_eq!(
            r1 != r2,
            s["revisionChangedByLoad"].as_bool().unwrap(),
            "{}",
            at("revisionChangedByLoad")
        );
        // 6. after load
        let got = result(store.read_from(id, 0), root, view_json);
        check(
            &at("afterLoad.readFrom0"),
            &support::resolve(s, "afterLoad.readFrom0"),
            &got,
        );
        if !sqlite {
            let raw = result(store.read_raw(id), root, |r| match r {
                None => Value::Null,
                Some(a) => json!({
                    "meta": support::parse(&a.header.to_json()),
                    "filename": a.filename,
                    "content": a.content,
                }),
            });
            check(
                &at("afterLoad.readRaw"),
                &support::resolve(s, "afterLoad.readRaw"),
                &raw,
            );
        }
        checked += 1;
    }
    assert!(checked > 0, "{name}: no sessions");

    // listAfterLoads
    if let Some(want_ids) = expected["listAfterLoads"].get("ok") {
        let mut ids: Vec<String> = store.list().unwrap().into_iter().map(|h| h.id).collect();
        ids.sort();
        let mut want: Vec<String> = want_ids
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v["id"].as_str().unwrap().to_string())
            })
            .collect();
        want.sort();
        assert_eq!(ids, want, "{name} listAfterLoads");
    }
    store.close().unwrap();

    // filesAfter: JSONL bytes and hashes (SQLite files change with every
    // page write; their rows are compared by the backend's own tests).
    if !sqlite {
        let got = files(root);
        let want: Vec<Value> = expected["filesAfter"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| json!({"path": f["path"], "bytes": f["bytes"], "sha256": f["sha256"]}))
            .collect();
        let mut want = want;
        want.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
        assert_eq!(got, want, "{name} filesAfter");
    }
}

macro_rules! roots {
    ($($test:ident => $name:literal),* $(,)?) => {
        $( #[test] fn $test() { run_root($name) } )*
        #[test]
        fn every_root_is_covered() {
            let names: Vec<String> = support::cases()["roots"].as_array().unwrap().iter()
                .map(|r| r["name"].as_str().unwrap().to_string()).collect();
            let ours = [$($name),*];
            for n in &names {
                assert!(ours.contains(&n.as_str()), "root {n} has no test");
            }
        }
    };
}

roots!(
    jsonl_zstd_packed => "jsonl-zstd-packed",
    jsonl_none_packed => "jsonl-none-packed",
    jsonl_none_unpacked => "jsonl-none-unpacked",
    jsonl_zstd_refused => "jsonl-zstd-refused",
    jsonl_none_refused => "jsonl-none-refused",
    jsonl_none_legacy => "jsonl-none-legacy",
    jsonl_badroot_mixed_encoding => "jsonl-badroot-mixed-encoding",
    jsonl_badroot_mixed_encoding_as_none => "jsonl-badroot-mixed-encoding-as-none",
    jsonl_badroot_flat_layout => "jsonl-badroot-flat-layout",
    sqlite_corpus => "sqlite-corpus",
    sqlite_refused => "sqlite-refused",
    sqlite_legacy => "sqlite-legacy",
    sqlite_bad_schema_16 => "sqlite-bad-schema-16",
);
