//! `dsh-persist verify`: every session checked, every defect named, nothing
//! modified (sha256 of every file before and after).

mod cli_common;
mod support;

use std::path::Path;

use cli_common::*;
use serde_json::Value;
use support::*;

fn problems(v: &Value) -> Vec<(String, String, String)> {
    v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap_or("<store>").to_string(),
                p["kind"].as_str().unwrap().to_string(),
                p["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_corrupt_store_exits_4_lists_every_problem_and_is_not_modified() {
    for case in ["jsonl-zstd-refused", "jsonl-none-refused", "sqlite-refused"] {
        let store = FixtureStore::new(case);
        let exp = expected(case);
        let before = store.hashes();
        let r = store.json("verify", &[]);
        assert_eq!(r.code, 4, "{case}: {}", r.stderr);
        let v = r.json();
        let listed = exp["list"]["ok"].as_array().unwrap().len();
        assert_eq!(v["sessions"], listed, "{case}");
        let probs = problems(&v);
        assert_eq!(
            v["ok"].as_u64().unwrap() as usize + probs.len(),
            listed,
            "{case}"
        );
        // Every session whose inspect fails in the dump is named, with the
        // original's message and the matching kind.
        for (id, s) in exp["sessions"].as_object().unwrap() {
            let inspect = resolve(s, "inspect");
            let Some(err) = inspect.get("error") else {
                continue;
            };
            if !ids_of(&exp["list"]["ok"]).contains(id) {
                continue;
            }
            let p = probs
                .iter()
                .find(|p| &p.0 == id)
                .unwrap_or_else(|| panic!("{case}: {id} not reported: {probs:?}"));
            let want_kind = if err["class"] == "SessionFormatUnsupportedError" {
                "format_unsupported"
            } else {
                "corruption"
            };
            assert_eq!(p.1, want_kind, "{case} {id}");
            assert_eq!(
                redact(&p.2, &store.root),
                err["message"].as_str().unwrap(),
                "{case} {id}"
            );
        }
        assert_eq!(before, store.hashes(), "{case}: verify modified the store");
        // Human mode names the problems too.
        let h = run(["verify", store.flag, store.path.to_str().unwrap()]);
        assert_eq!(h.code, 4);
        assert!(h.stdout.contains(&format!("checked {listed} session(s)")));
        assert!(h.stdout.contains("[corruption]"));
        assert_eq!(before, store.hashes());
    }
}

#[test]
fn torn_tails_are_named_but_not_repaired() {
    let store = FixtureStore::new("jsonl-zstd-packed");
    let before = store.hashes();
    let r = store.json("verify", &[]);
    assert_eq!(r.code, 4, "{}", r.stderr);
    let v = r.json();
    assert_eq!(v["sessions"], 26);
    let probs = problems(&v);
    let ids: Vec<&str> = probs.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(ids, ["torn-a", "torn-b", "torn-c", "torn-d"]);
    assert!(probs.iter().all(|p| p.1 == "torn_tail"));
    assert!(
        probs[1].2.contains("recovered from the torn frame"),
        "{}",
        probs[1].2
    );
    assert_eq!(v["ok"], 22);
    assert_eq!(before, store.hashes());
    // After a load repairs them, the store verifies clean.
    for id in ["torn-a", "torn-b", "torn-c", "torn-d"] {
        assert_eq!(store.json("load", &[id]).code, 0);
    }
    let r = store.json("verify", &[]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(r.json()["ok"], 26);
}

#[test]
fn a_fifo_planted_as_a_writer_lock_is_named_not_waited_on() {
    let store = FixtureStore::new("jsonl-zstd-packed");
    let locks = store.path.join(".dsh-persist-locks");
    std::fs::create_dir(&locks).unwrap();
    let fifo = locks.join("torn-a@lock");
    mkfifo(&fifo);
    let before = store.hashes();
    // Under `timeout`: an open that waits on the FIFO exits 124, not hangs.
    let timed = |sub: &str, rest: &[&str]| {
        let mut args = vec![
            "60".to_string(),
            env!("CARGO_BIN_EXE_dsh-persist").to_string(),
            "--json".to_string(),
        ];
        args.extend(store.args());
        args.push(sub.to_string());
        args.extend(rest.iter().map(|s| s.to_string()));
        let out = std::process::Command::new("timeout")
            .args(&args)
            .output()
            .unwrap();
        let code = out.status.code().unwrap_or(-1);
        assert_ne!(code, 124, "{sub} waited on the FIFO");
        (
            code,
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (code, stdout, stderr) = timed("verify", &[]);
    assert_eq!(code, 4, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let p = problem(&v, "foreign_file", None);
    assert_eq!(p["path"].as_str().unwrap(), fifo.to_str().unwrap(), "{v:#}");
    // The torn session whose writer cannot be asked: named with the lock.
    let sessions: Vec<(String, String)> = problems(&v)
        .into_iter()
        .filter(|p| p.1 != "foreign_file")
        .map(|p| (p.0, p.1))
        .collect();
    let kinds = |id: &str, kind: &str| (id.to_string(), kind.to_string());
    assert_eq!(
        sessions,
        [
            kinds("torn-a", "io"),
            kinds("torn-b", "torn_tail"),
            kinds("torn-c", "torn_tail"),
            kinds("torn-d", "torn_tail")
        ],
        "{v:#}"
    );
    let p = problem(&v, "io", Some("torn-a"));
    let message = p["message"].as_str().unwrap();
    assert!(
        message.contains("is not a regular file") && message.contains("torn-a@lock"),
        "{message}"
    );
    // Reading the torn session asks for its writer: refused, named.
    for sub in ["inspect", "load"] {
        let (code, _, stderr) = timed(sub, &["torn-a"]);
        assert_eq!(code, 1, "{sub}: {stderr}");
        assert!(
            stderr.contains("is not a regular file") && stderr.contains("torn-a@lock"),
            "{sub}: {stderr}"
        );
    }
    assert_eq!(before, store.hashes(), "nothing written");
}

#[test]
fn a_clean_store_exits_0() {
    for case in ["sqlite-corpus", "jsonl-none-legacy", "sqlite-legacy"] {
        let store = FixtureStore::new(case);
        let before = store.hashes();
        let r = store.json("verify", &[]);
        let v = r.json();
        let probs = problems(&v);
        // sqlite-corpus holds torn rows too; everything else must be ok.
        assert!(
            probs.iter().all(|p| p.1 == "torn_tail"),
            "{case}: {probs:?}"
        );
        assert_eq!(r.code, if probs.is_empty() { 0 } else { 4 }, "{case}");
        assert_eq!(before, store.hashes(), "{case}");
    }
}

#[test]
fn a_root_level_failure_is_a_problem() {
    // A database verify cannot open is one problem for the store.
    let store = FixtureStore::new("sqlite-bad-schema-16");
    let exp = expected("sqlite-bad-schema-16");
    let before = store.hashes();
    let r = store.json("verify", &[]);
    assert_ne!(r.code, 0);
    let v = r.json();
    let probs = problems(&v);
    assert_eq!(probs.len(), 1, "{probs:?}");
    assert_eq!(probs[0].0, "<store>");
    assert_eq!(v["problems"][0]["id"], Value::Null);
    assert_eq!(
        v["problems"][0]["path"].as_str(),
        Some(store.path.to_str().unwrap())
    );
    assert_eq!(
        redact(&probs[0].2, &store.root),
        exp["list"]["error"]["message"].as_str().unwrap()
    );
    assert_eq!(v["sessions"], 0);
    assert_eq!(before, store.hashes());
}

#[test]
fn a_bad_root_layout_is_named_per_artifact() {
    // (case, flag, the session carrying the layout defect, its kind, the
    // artifact it names). The original's list refuses these roots as a
    // whole; verify names the artifact with the original's message.
    for (case, flag, id, kind, artifact) in [
        (
            "jsonl-badroot-flat-layout",
            "--jsonl-raw",
            "flat",
            "flat_layout",
            "--srv-flat--/flat.jsonl",
        ),
        (
            "jsonl-badroot-mixed-encoding",
            "--jsonl",
            "mixed",
            "mixed_encoding",
            "--srv-mixed--/mixed/session.jsonl",
        ),
        (
            "jsonl-badroot-mixed-encoding-as-none",
            "--jsonl-raw",
            "mixed",
            "mixed_encoding",
            "--srv-mixed--/mixed/session.jsonl.zstd",
        ),
    ] {
        let store = FixtureStore::new(case);
        let exp = expected(case);
        let before = store.hashes();
        let r = run(["--json", "verify", flag, store.path.to_str().unwrap()]);
        assert_eq!(r.code, 4, "{case}: {}", r.stdout);
        let v = r.json();
        let p = v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == id)
            .unwrap_or_else(|| panic!("{case}: {id} not named: {v}"));
        assert_eq!(p["kind"], kind, "{case}");
        assert_eq!(
            p["path"].as_str().unwrap(),
            store.path.join(artifact).to_str().unwrap(),
            "{case}"
        );
        assert_eq!(
            redact(p["message"].as_str().unwrap(), &store.root),
            exp["list"]["error"]["message"].as_str().unwrap(),
            "{case}"
        );
        // Every session of the root is counted, none is ok (the store
        // refuses each while the defect is there).
        let ids = exp["sessions"].as_object().unwrap().len();
        assert_eq!(v["sessions"], ids, "{case}");
        assert_eq!(v["ok"], 0, "{case}");
        assert_eq!(before, store.hashes(), "{case}");
    }
}

/// The frames of a zstd log: (header frame, the rest).
fn split_header_frame(bytes: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let scan = dsh_persist::backend::jsonl::frames::scan(bytes).unwrap();
    let end = scan.frames[0].end as usize;
    (bytes[..end].to_vec(), bytes[end..].to_vec())
}

/// Rewrites the header line of a zstd log with `edit`, in a new valid
/// header frame (checksum included).
fn rewrite_header(log: &Path, edit: impl Fn(&str) -> String) {
    let bytes = std::fs::read(log).unwrap();
    let (head, rest) = split_header_frame(&bytes);
    let text = String::from_utf8(zstd::decode_all(&head[..]).unwrap()).unwrap();
    let new_text = edit(&text);
    assert_ne!(new_text, text, "the edit changed nothing");
    let mut out =
        dsh_persist::backend::jsonl::codec_zstd::encode_frame(new_text.as_bytes()).unwrap();
    out.extend_from_slice(&rest);
    std::fs::write(log, out).unwrap();
}

fn problem<'a>(v: &'a Value, kind: &str, id: Option<&str>) -> &'a Value {
    v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == kind && p["id"].as_str() == id)
        .unwrap_or_else(|| panic!("no {kind} problem for {id:?}: {v:#}"))
}

#[test]
fn verify_checks_every_artifact_not_only_what_list_shows() {
    let store = FixtureStore::new("jsonl-zstd-packed");
    let root = store.path.clone();
    for id in ["torn-a", "torn-b", "torn-c", "torn-d"] {
        assert_eq!(store.json("load", &[id]).code, 0); // repair: a clean start
    }
    assert_eq!(store.json("verify", &[]).code, 0);

    // A header that claims log format v7: format unsupported (exit 5).
    let v7 = root.join("--srv-repo--/plan-mode/session.jsonl.zstd");
    rewrite_header(&v7, |t| t.replacen("\"version\":0", "\"version\":7", 1));
    let before = store.hashes();
    let r = store.json("verify", &[]);
    assert_eq!(r.code, 5, "{}", r.stdout);
    let v = r.json();
    let p = problem(&v, "format_unsupported", Some("plan-mode"));
    assert_eq!(p["path"].as_str().unwrap(), v7.to_str().unwrap());
    assert!(
        p["message"]
            .as_str()
            .unwrap()
            .contains("uses log format v7"),
        "{p}"
    );
    assert_eq!(v["sessions"], 26);
    assert_eq!(v["ok"], 25);
    assert_eq!(before, store.hashes());

    // One byte flipped inside the header frame of conv-basic (its
    // checksum no longer matches): corruption, exit 4.
    let flipped = root.join("--home-dev-project--/conv-basic/session.jsonl.zstd");
    let mut bytes = std::fs::read(&flipped).unwrap();
    let (head, _) = split_header_frame(&bytes);
    bytes[head.len() / 2] ^= 0x20;
    std::fs::write(&flipped, &bytes).unwrap();
    // A log moved into another project directory: misplaced.
    let moved_from = root.join("--srv-repo--/surface-replace");
    let moved_to = root.join("--a-b--/surface-replace");
    std::fs::rename(&moved_from, &moved_to).unwrap();
    // The same id stored twice, each copy in the project its header names.
    let dup_dir = root.join("--elsewhere--/numbers-escapes");
    copy_tree(&root.join("--srv-repo--/numbers-escapes"), &dup_dir);
    rewrite_header(&dup_dir.join("session.jsonl.zstd"), |t| {
        t.replacen("\"cwd\":\"/srv/repo\"", "\"cwd\":\"/elsewhere\"", 1)
    });
    // A first append's temp file left by a crash, and foreign files.
    let temp = root.join("--srv-torn--/torn-a/session.jsonl.zstd.0123456789ab.tmp");
    std::fs::write(&temp, b"partial").unwrap();
    let notes = root.join("notes.txt");
    std::fs::write(&notes, b"x").unwrap();
    let link = root.join("--srv-torn--/torn-b/latest");
    std::os::unix::fs::symlink("session.jsonl.zstd", &link).unwrap();
    // A regular file beside a log that is neither a log nor a temp file.
    let beside = root.join("--srv-torn--/torn-b/notes.md");
    std::fs::write(&beside, b"y").unwrap();

    let before = store.hashes();
    let r = store.json("verify", &[]);
    assert_eq!(r.code, 4, "{}", r.stdout);
    let v = r.json();
    let p = problem(&v, "corruption", Some("conv-basic"));
    assert_eq!(p["path"].as_str().unwrap(), flipped.to_str().unwrap());
    assert!(
        p["message"]
            .as_str()
            .unwrap()
            .contains("frame at byte 0 failed validation"),
        "{p}"
    );
    problem(&v, "format_unsupported", Some("plan-mode"));
    let p = problem(&v, "misplaced_artifact", Some("surface-replace"));
    let moved_log = moved_to.join("session.jsonl.zstd");
    assert_eq!(p["path"].as_str().unwrap(), moved_log.to_str().unwrap());
    assert!(
        p["message"].as_str().unwrap().contains(&format!(
            "belongs at \"{}\"",
            moved_from.join("session.jsonl.zstd").display()
        )),
        "{p}"
    );
    let dups: Vec<&Value> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "duplicate_id")
        .collect();
    assert_eq!(dups.len(), 2, "{v:#}");
    for d in &dups {
        assert_eq!(d["id"], "numbers-escapes");
        assert!(
            d["message"].as_str().unwrap().contains("is stored twice"),
            "{d}"
        );
    }
    let p = problem(&v, "orphan_temp", None);
    assert_eq!(p["path"].as_str().unwrap(), temp.to_str().unwrap());
    let foreign: Vec<&str> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "foreign_file")
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        foreign,
        [
            link.to_str().unwrap(),
            beside.to_str().unwrap(),
            notes.to_str().unwrap()
        ],
        "{v:#}"
    );
    // 27 logs (the duplicate included); the defective ones are not ok.
    assert_eq!(v["sessions"], 27);
    assert_eq!(v["ok"], 27 - 5);
    assert_eq!(v["problems"].as_array().unwrap().len(), 5 + 1 + 3);
    assert_eq!(before, store.hashes(), "verify modified the store");

    // Human output names the kind and the path of each problem.
    let h = run(["verify", "--store", root.to_str().unwrap()]);
    assert_eq!(h.code, 4);
    assert!(
        h.stdout
            .starts_with("checked 27 session(s) in jsonl (zstd) store"),
        "{}",
        h.stdout
    );
    for needle in [
        "\"conv-basic\" [corruption]".to_string(),
        format!("  - [orphan_temp]: \"{}\"", temp.display()),
        format!(
            "[misplaced_artifact]: session artifact \"{}\"",
            moved_log.display()
        ),
    ] {
        assert!(h.stdout.contains(&needle), "{needle} in\n{}", h.stdout);
    }
    assert_eq!(before, store.hashes());
}

#[test]
fn sqlite_rows_list_cannot_read_and_events_without_a_session_are_named() {
    let store = FixtureStore::new("sqlite-corpus");
    {
        let conn = rusqlite::Connection::open(&store.path).unwrap();
        conn.execute_batch(
            "PRAGMA foreign_keys = OFF;
             INSERT INTO events (session_id, seq, type, time, data)
               VALUES ('ghost', 0, 'turn/start', 1, '{\"turn\":1}'),
                      ('ghost', 1, 'turn/end', 2, '{\"turn\":1}');
             UPDATE sessions SET created_at = -5 WHERE id = 'plan-mode';",
        )
        .unwrap();
    }
    // list refuses the whole store for one bad row; verify goes on.
    assert_ne!(store.json("list", &[]).code, 0);
    let before = store.hashes();
    let r = store.json("verify", &[]);
    assert_eq!(r.code, 4, "{}", r.stdout);
    let v = r.json();
    let p = problem(&v, "corruption", Some("plan-mode"));
    assert!(
        p["message"].as_str().unwrap().contains("created_at -5"),
        "{p}"
    );
    assert_eq!(p["path"].as_str().unwrap(), store.path.to_str().unwrap());
    let p = problem(&v, "orphan_events", Some("ghost"));
    assert!(
        p["message"]
            .as_str()
            .unwrap()
            .contains("2 events row(s) (seq 0 to 1)"),
        "{p}"
    );
    let listed = expected("sqlite-corpus")["list"]["ok"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(v["sessions"], listed + 1);
    // The other sessions were still checked: only the torn ones fail.
    let others: Vec<&str> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["id"] != "plan-mode" && p["id"] != "ghost")
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert!(others.iter().all(|k| *k == "torn_tail"), "{v:#}");
    assert_eq!(v["ok"], listed + 1 - 2 - others.len());
    assert_eq!(before, store.hashes(), "verify modified the database");
}

/// A session a live writer holds (its writer lock, here taken through the
/// backend by this process while the CLI runs in another): its torn tail
/// and its temp file are a write in progress, not problems. Released, the
/// same store reports them again.
#[test]
fn a_live_writers_torn_tail_and_temp_file_are_not_problems() {
    use dsh_persist::backend::Backend;
    use dsh_persist::backend::jsonl::{JsonlBackend, JsonlConfig};
    use dsh_persist::backend::sqlite::{SqliteBackend, SqliteConfig};

    for case in ["jsonl-zstd-packed", "sqlite-corpus"] {
        let store = FixtureStore::new(case);
        let r = store.json("verify", &[]);
        assert_eq!(r.code, 4, "{case}: {}", r.stdout);
        let torn: Vec<String> = problems(&r.json())
            .into_iter()
            .filter(|p| p.1 == "torn_tail")
            .map(|p| p.0)
            .collect();
        assert!(!torn.is_empty(), "{case}: the fixture has torn tails");
        let torn_paths: Vec<std::path::PathBuf> = r.json()["problems"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["kind"] == "torn_tail")
            .map(|p| std::path::PathBuf::from(p["path"].as_str().unwrap()))
            .collect();
        let backend: Box<dyn Backend> = match case {
            "sqlite-corpus" => Box::new(
                SqliteBackend::open(&SqliteConfig::new(store.path.display().to_string())).unwrap(),
            ),
            _ => Box::new(JsonlBackend::open(JsonlConfig::new(&store.path)).unwrap()),
        };
        let locks: Vec<_> = torn
            .iter()
            .map(|id| backend.lock_writer(id).unwrap())
            .collect();
        // A first append's temp file of a held session (JSONL), created
        // after the lock (taking it removes stale temps).
        let temp = (case != "sqlite-corpus").then(|| {
            let dir = find_dir(&store.path, &torn[0]).expect("the session directory");
            let temp = dir.join("session.jsonl.zstd.0123456789ab.tmp");
            std::fs::write(&temp, b"{\"partial").unwrap();
            temp
        });
        // (Not `store.hashes()`: reading a lock file in the process that
        // holds its lock would drop the record lock that makes it visible.)
        let files: Vec<std::path::PathBuf> = match &temp {
            Some(t) => torn_paths.iter().cloned().chain([t.clone()]).collect(),
            None => vec![store.path.clone()],
        };
        let read_all =
            || -> Vec<Vec<u8>> { files.iter().map(|p| std::fs::read(p).unwrap()).collect() };
        let before = read_all();
        let r = store.json("verify", &[]);
        assert_eq!(
            r.code, 0,
            "{case}: held sessions are not problems: {}",
            r.stdout
        );
        assert_eq!(r.json()["problems"], serde_json::json!([]), "{case}");
        assert!(before == read_all(), "{case}: verify changed something");
        drop(locks);
        let r = store.json("verify", &[]);
        assert_eq!(r.code, 4, "{case}: {}", r.stdout);
        let after = problems(&r.json());
        let again: Vec<&str> = after
            .iter()
            .filter(|p| p.1 == "torn_tail")
            .map(|p| p.0.as_str())
            .collect();
        assert_eq!(again, torn, "{case}: released, the torn tails are reported");
        if let Some(temp) = temp {
            let shown = temp.display().to_string();
            assert!(
                after
                    .iter()
                    .any(|p| p.1 == "orphan_temp" && p.2.contains(&shown)),
                "{case}: {after:?}"
            );
        }
        backend.close().unwrap();
    }
}

#[test]
fn problems_come_in_session_order_however_many_sessions() {
    // JSONL sessions are checked on two threads: the report is a loop's.
    let dir = TempDir::new("verify-many");
    let root = dir.path().join("root");
    let mut config = dsh_persist::store::JsonlConfig::new(&root);
    config.compression = dsh_persist::store::Compression::None;
    let store = dsh_persist::store::Store::open(dsh_persist::store::StoreConfig::with_backend(
        dsh_persist::store::BackendConfig::Jsonl(config),
    ))
    .unwrap();
    let ids: Vec<String> = (0..40).map(|i| format!("s{i:02}")).collect();
    for id in &ids {
        let live = store
            .start(dsh_persist::model::header::SessionHeader::new(id, 1_000))
            .unwrap();
        support::conv::complete_turn(&live, 1);
        live.close().unwrap();
    }
    store.close().unwrap();
    let broken = ["s05", "s22", "s23", "s37"];
    for id in broken.iter().rev() {
        break_raw_log(&root, id);
    }
    let before = tree_hashes(&root);
    let r = run(["--json", "-q", "-s", root.to_str().unwrap(), "verify"]);
    assert_eq!(r.code, 4, "{}", r.stderr);
    let v = r.json();
    assert_eq!(v["sessions"], 40);
    assert_eq!(v["ok"], 36);
    let probs = problems(&v);
    assert_eq!(
        probs.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
        broken,
        "{probs:?}"
    );
    assert!(probs.iter().all(|p| p.1 == "corruption"), "{probs:?}");
    assert_eq!(before, tree_hashes(&root));
}

/// The directory named `name` under `root`.
fn find_dir(root: &Path, name: &str) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(root).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if entry.file_name() == name {
                return Some(path);
            }
            if let Some(found) = find_dir(&path, name) {
                return Some(found);
            }
        }
    }
    None
}
