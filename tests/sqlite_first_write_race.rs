//! The first write to a SQLite session database, raced by two processes:
//! both open the same missing (or pristine, empty) file and write their
//! first session at the same instant. Both must succeed, with one store
//! identity (one `persistence_state` row, the store id in both processes'
//! revision tokens) and no "database is locked" or "table already exists"
//! error.
//!
//! The test binary is re-executed as the two child processes
//! (`DSH_FIRST_WRITE_CHILD=<db>|<name>|<go file>`). `DSH_FIRST_WRITE_ITERS`
//! sets the races per starting state (default 20; the figure in
//! docs/reliability.md uses 200).

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::Store;
use support::TempDir;

const CHILD_ENV: &str = "DSH_FIRST_WRITE_CHILD";

fn iterations() -> usize {
    std::env::var("DSH_FIRST_WRITE_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

fn open(db: &Path) -> Store {
    Store::open_json(&format!(
        r#"{{"backend":"sqlite","path":{}}}"#,
        serde_json::to_string(db).unwrap()
    ))
    .unwrap()
}

fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").unwrap();
    out.flush().unwrap();
}

/// The child: opens the store, says `ready`, waits for the go file, creates
/// session `<name>` with one turn, then says `ok <revision token>` or
/// `err <kind> <message>`.
#[test]
fn child_process() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    let (db, name, go) = (Path::new(parts[0]), parts[1], Path::new(parts[2]));
    let store = open(db);
    say("ready");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !go.exists() {
        assert!(Instant::now() < deadline, "never told to go");
        std::hint::spin_loop();
    }
    let turn = r#"[{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}},{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}]"#;
    let r = store
        .create(SessionHeader::new(name, 7))
        .and_then(|()| store.append_json(name, turn))
        .and_then(|()| store.list_snapshots())
        .map(|snaps| {
            snaps
                .into_iter()
                .find(|(h, _)| h.id == name)
                .map(|(_, r)| r)
        });
    match r {
        Ok(Some(rev)) => say(&format!("ok {}", rev.0)),
        Ok(None) => say("err invariant the session is not stored after its append"),
        Err(e) => say(&format!("err {} {e}", e.kind().as_str())),
    }
    store.close().unwrap();
}

fn spawn(db: &Path, name: &str, go: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            CHILD_ENV,
            format!("{}|{name}|{}", db.display(), go.display()),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// The store id of a revision token (`…:store:<id>:incarnation:…`).
fn store_id_of(token: &str) -> &str {
    let rest = &token[token.find(":store:").expect("a SQLite token") + 7..];
    &rest[..rest.find(":incarnation:").expect("a SQLite token")]
}

#[test]
fn two_processes_initialise_a_new_database_at_once() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let iters = iterations();
    for start in ["missing", "missing-dir", "pristine"] {
        let dir = TempDir::new(&format!("first-write-{start}"));
        for i in 0..iters {
            let db = match start {
                "missing-dir" => dir.path().join(format!("d{i}/sub/s.db")),
                _ => dir.path().join(format!("s{i}.db")),
            };
            if start == "pristine" {
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&db)
                    .unwrap();
            }
            let go = dir.path().join(format!("go-{i}"));
            let kids: Vec<Child> = ["a", "b"].iter().map(|n| spawn(&db, n, &go)).collect();
            let outs = support::race::release_together(kids, &go);
            let ctx = format!("{start} race {i}");
            let tokens: Vec<String> = outs
                .iter()
                .map(|o| {
                    let line = o
                        .lines()
                        .find_map(|l| l.find("ok ").map(|p| &l[p + 3..]))
                        .unwrap_or_else(|| panic!("{ctx}: a writer failed: {o}"));
                    line.to_string()
                })
                .collect();
            let ids: Vec<&str> = tokens.iter().map(|t| store_id_of(t)).collect();
            assert_eq!(ids[0], ids[1], "{ctx}: two store identities");
            let conn = rusqlite::Connection::open(&db).unwrap();
            let rows: Vec<String> = conn
                .prepare("SELECT store_id FROM persistence_state")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            assert_eq!(rows, vec![ids[0].to_string()], "{ctx}: persistence_state");
            drop(conn);
            let store = open(&db);
            let mut listed: Vec<String> = store.list().unwrap().into_iter().map(|h| h.id).collect();
            listed.sort();
            assert_eq!(listed, ["a", "b"], "{ctx}");
            for id in ["a", "b"] {
                assert_eq!(store.load(id).unwrap().events.len(), 2, "{ctx}: {id}");
            }
            store.close().unwrap();
        }
        println!("first write {start}: x{iters}, both writers succeeded, one store id");
    }
}
