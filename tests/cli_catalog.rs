//! The catalog commands of `dsh-persist` on copies of the original's
//! fixture stores: `list` (table, `--json --long`, `--last`, filters),
//! `search`, `export` and `follow`, with their exit codes.

mod cli_common;
mod support;

use cli_common::*;
use serde_json::Value;

const STORES: [&str; 3] = ["jsonl-zstd-packed", "jsonl-none-packed", "sqlite-corpus"];

#[test]
fn rich_list_agrees_with_full_reads() {
    for case in STORES {
        let store = FixtureStore::new(case);
        let r = store.json("list", &["--long"]);
        assert_eq!(r.code, 0, "{case}: {}", r.stderr);
        let rows = r.json();
        let rows = rows.as_array().unwrap();
        let plain = store.json("list", &[]).json();
        assert_eq!(rows.len(), plain.as_array().unwrap().len(), "{case}");
        let mut checked = 0;
        for row in rows {
            let id = row["id"].as_str().unwrap();
            let read = store.json("read-from", &[id, "0"]);
            if read.code != 0 {
                continue; // refused by the read rules; the listing still lists it
            }
            let events = read.json()["events"].as_array().unwrap().clone();
            // A torn tail (a crash leftover) is not there yet for the
            // listing; read-from returns the intact events (JSONL: with
            // those recovered from a torn frame; a row store cuts torn
            // rows whole, a seq gap included, so its counts agree).
            let count = row["eventCount"].as_u64().unwrap();
            assert!(count <= events.len() as u64, "{case} {id}");
            if case.starts_with("sqlite") {
                assert_eq!(count, events.len() as u64, "{case} {id}");
            }
            if row["eventCount"].as_u64().unwrap() == events.len() as u64 && !events.is_empty() {
                assert_eq!(
                    row["updatedAt"],
                    events.last().unwrap()["time"],
                    "{case} {id}"
                );
                let starts: Vec<&Value> = events
                    .iter()
                    .filter(|e| e["type"] == "turn/start")
                    .collect();
                let want_turns = starts
                    .last()
                    .map_or(0, |e| e["data"]["turn"].as_u64().unwrap());
                assert_eq!(
                    row["turnCount"].as_u64().unwrap(),
                    want_turns,
                    "{case} {id}"
                );
                let title = events
                    .iter()
                    .rev()
                    .find(|e| e["type"] == "session/title")
                    .map(|e| e["data"]["title"].clone())
                    .unwrap_or(Value::Null);
                assert_eq!(row["title"], title, "{case} {id}");
                checked += 1;
            }
        }
        assert!(checked > 0, "{case}: no session compared");
        // The most recently updated one, and the human table.
        let last = run(["list", "--last"]
            .iter()
            .map(|s| s.to_string())
            .chain(store.args()));
        assert_eq!(last.code, 0, "{}", last.stderr);
        assert_eq!(
            last.stdout.trim(),
            rows[0]["id"].as_str().unwrap(),
            "{case}"
        );
        let table = run(["list".to_string(), "--long".to_string()]
            .into_iter()
            .chain(store.args()));
        assert_eq!(table.code, 0);
        assert!(table.stdout.starts_with("ID"), "{}", table.stdout);
        assert!(table.stdout.contains("UPDATED"));
        let none = store.json("list", &["--since", "4102444800000"]);
        assert_eq!(none.json(), Value::Array(vec![]));
        let bad = store.json("list", &["--sort", "size"]);
        assert_eq!(bad.code, 2, "{}", bad.stderr);
        assert_eq!(bad.error().0, "invalid_argument");
    }
}

#[test]
fn a_fresh_process_lists_unchanged_sessions_from_the_summary_index_file() {
    use dsh_persist::backend::Revision;
    use dsh_persist::store::catalog::summary_index;
    for case in STORES {
        let store = FixtureStore::new(case);
        let cache = if store.flag == "--sqlite" {
            std::path::PathBuf::from(format!("{}.dsh-persist-cache", store.path.display()))
        } else {
            store.path.join(".dsh-persist-cache")
        };
        let first = store.json("list", &["--long"]);
        assert_eq!(first.code, 0, "{case}: {}", first.stderr);
        let rows = summary_index::load(&cache);
        let listed = first.json();
        let listed = listed.as_array().unwrap();
        assert_eq!(rows.len(), listed.len(), "{case}");
        // A second process gives the same listing.
        let again = store.json("list", &["--long"]);
        assert_eq!(again.json(), first.json(), "{case}");
        // A row changed in the file under a session's current token is
        // what the next process lists (its log is not read); under another
        // token it is not used.
        let id = listed[0]["id"].as_str().unwrap().to_string();
        let mut planted = rows.clone();
        let row = planted.get_mut(&id).unwrap();
        assert_eq!(row.revision.0, listed[0]["revision"].as_str().unwrap());
        row.title = Some("planted title".into());
        summary_index::save(&cache, &planted);
        let shown = store.json("list", &["--long"]).json();
        assert_eq!(shown[0]["title"], "planted title", "{case}");
        planted.get_mut(&id).unwrap().revision = Revision("some other state".into());
        summary_index::save(&cache, &planted);
        assert_eq!(
            store.json("list", &["--long"]).json(),
            first.json(),
            "{case}"
        );
    }
}

#[test]
fn list_last_on_an_empty_store_is_not_found() {
    let dir = support::TempDir::new("cli-catalog-empty");
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let r = run([
        "--json",
        "list",
        "--last",
        "--jsonl",
        root.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert_eq!(r.error().0, "not_found");
}

/// The search index directory of a fixture store copy.
fn search_index_dir(store: &FixtureStore) -> std::path::PathBuf {
    if store.flag == "--sqlite" {
        let mut name = store.path.clone().into_os_string();
        name.push(".dsh-persist-cache");
        std::path::PathBuf::from(name).join("search")
    } else {
        store.path.join(".dsh-persist-cache").join("search")
    }
}

#[test]
fn a_damaged_search_index_is_rebuilt_not_searched() {
    for case in STORES {
        let store = FixtureStore::new(case);
        let found = store.json("search", &["plan"]).json();
        let hits = found["hits"].as_array().unwrap();
        assert!(!hits.is_empty(), "{case}: {found}");
        assert!(found["indexed"].as_u64().unwrap() > 0, "{case}");
        // Every "plan" (any case) in the index files becomes "pXan", as a
        // damaged disk block would leave them: same length, no other sign.
        let dir = search_index_dir(&store);
        let mut damaged_files = 0;
        for f in std::fs::read_dir(&dir).unwrap() {
            let path = f.unwrap().path();
            let mut bytes = std::fs::read(&path).unwrap();
            // Past the magic line and the id and revision (u64-length-
            // prefixed strings): only the texts are touched.
            let mut at = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
            for _ in 0..2 {
                let len = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
                at += 8 + len as usize;
            }
            let mut damaged = false;
            for i in at..bytes.len().saturating_sub(3) {
                if bytes[i..i + 4].eq_ignore_ascii_case(b"plan") {
                    bytes[i + 1] = b'X';
                    damaged = true;
                }
            }
            if damaged {
                std::fs::write(&path, &bytes).unwrap();
                damaged_files += 1;
            }
        }
        assert!(damaged_files > 0, "{case}: the index holds the texts");
        let again = store.json("search", &["plan"]).json();
        assert_eq!(
            again["hits"], found["hits"],
            "{case}: the damaged index was searched"
        );
        assert_eq!(
            again["indexed"], damaged_files,
            "{case}: the damaged files, and only those, are rebuilt"
        );
        // And the rebuilt index is used again.
        let third = store.json("search", &["plan"]).json();
        assert_eq!(third["indexed"], 0, "{case}");
        assert_eq!(third["hits"], found["hits"]);
    }
}

#[test]
fn search_export_and_follow() {
    for case in STORES {
        let store = FixtureStore::new(case);
        let r = store.json("search", &["plan"]);
        assert_eq!(r.code, 0, "{case}: {}", r.stderr);
        let found = r.json();
        let hits = found["hits"].as_array().unwrap();
        assert!(!hits.is_empty(), "{case}: {found}");
        for h in hits {
            assert!(
                h["snippet"]
                    .as_str()
                    .unwrap()
                    .to_ascii_lowercase()
                    .contains("plan"),
                "{h}"
            );
            assert!(["user", "assistant", "tool"].contains(&h["role"].as_str().unwrap()));
        }
        assert!(found["indexed"].as_u64().unwrap() > 0);
        let again = store.json("search", &["plan"]).json();
        assert_eq!(again["indexed"], 0, "{case}: the index cache is reused");
        assert_eq!(again["hits"], found["hits"]);
        let empty = store.json("search", &["no such text anywhere 0xdeadbeef"]);
        assert_eq!(empty.json()["hits"], Value::Array(vec![]));

        let id = hits[0]["id"].as_str().unwrap().to_string();
        let tmp = support::TempDir::new("cli-catalog-export");
        let out = tmp.path().join("t.html");
        let e = store.json(
            "export",
            &[&id, "--format", "html", "--out", out.to_str().unwrap()],
        );
        assert_eq!(e.code, 0, "{case}: {}", e.stderr);
        let html = std::fs::read_to_string(&out).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
        let md = store.json("export", &[&id, "--format", "md"]);
        assert_eq!(md.code, 0);
        assert!(md.stdout.starts_with("# "), "{}", md.stdout);
        assert_eq!(store.json("export", &["no-such-session"]).code, 3);
        let bad = store.json("export", &[&id, "--format", "pdf"]);
        assert_eq!(bad.code, 2, "{}", bad.stderr);

        let f = store.json("follow", &[&id, "--from", "0", "--exit-after", "3"]);
        assert_eq!(f.code, 0, "{case}: {}", f.stderr);
        let lines: Vec<Value> = f
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        for (i, l) in lines.iter().enumerate() {
            assert_eq!(l["seq"], i as u64);
        }
        assert_eq!(store.json("follow", &["no-such-session"]).code, 3);
    }
}
