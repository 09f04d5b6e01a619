//! `--store PATH` (and `convert --to PATH`): the store's kind detected by
//! looking — a zstd root, a raw root, a SQLite session database, a
//! PostgreSQL URL — without modifying anything; a mixed or unknown store
//! and a new target are clear errors.

mod cli_common;
mod support;

use std::path::Path;

use cli_common::*;
use dsh_persist::store::{SqliteConfig, Store, StoreConfig};
use support::*;

/// `dsh-persist --json SUB --store PATH REST...`.
fn detected(sub: &str, path: &Path, rest: &[&str]) -> Run {
    let mut a = vec![
        "--json".to_string(),
        sub.to_string(),
        "--store".to_string(),
        path.display().to_string(),
    ];
    a.extend(rest.iter().map(|s| s.to_string()));
    run(a)
}

#[test]
fn each_store_kind_is_detected_and_read_like_its_explicit_flag() {
    for (case, kind) in [
        ("jsonl-zstd-packed", "jsonl (zstd)"),
        ("jsonl-none-packed", "jsonl (raw)"),
        ("jsonl-none-refused", "jsonl (raw)"),
        ("sqlite-corpus", "sqlite"),
    ] {
        let store = FixtureStore::new(case);
        let before = store.hashes();
        let explicit = store.json("list", &[]);
        assert_eq!(explicit.code, 0, "{case}: {}", explicit.stderr);
        let r = detected("list", &store.path, &[]);
        assert_eq!(r.code, 0, "{case}: {}", r.stderr);
        assert_eq!(r.stdout, explicit.stdout, "{case}");
        // A session read through the detected store equals the explicit one.
        let id = ids_of(&r.json())[0].clone();
        assert_eq!(
            detected("inspect", &store.path, &[&id]).stdout,
            store.json("inspect", &[&id]).stdout,
            "{case} {id}"
        );
        // The short flag, after the subcommand or before it, and the kind
        // named by verify.
        let h = run(["-s", store.path.to_str().unwrap(), "verify"]);
        assert!(
            h.stdout.starts_with(&format!(
                "checked {} session(s) in {kind} store",
                ids_of(&r.json()).len()
            )),
            "{case}: {}",
            h.stdout
        );
        // Detection reads names and headers only: nothing changed, no
        // -wal/-shm left beside a database.
        assert_eq!(before, store.hashes(), "{case}");
    }
}

#[test]
fn a_mixed_root_and_an_unknown_store_are_clear_errors() {
    let store = FixtureStore::new("jsonl-badroot-mixed-encoding");
    let r = detected("list", &store.path, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let (kind, message) = r.error();
    assert_eq!(kind, "invalid_argument");
    assert!(message.contains("mixes both encodings"), "{message}");
    assert!(message.contains("--jsonl or --jsonl-raw"), "{message}");

    // A root whose two sessions use different encodings, in two directories.
    let tmp = TempDir::new("cli-detect");
    let mixed = tmp.path().join("mixed");
    copy_tree(
        &FixtureStore::new("jsonl-none-packed")
            .path
            .join("--home-dev-project--"),
        &mixed.join("--home-dev-project--"),
    );
    copy_tree(
        &FixtureStore::new("jsonl-zstd-packed")
            .path
            .join("--srv-repo--"),
        &mixed.join("--srv-repo--"),
    );
    let r = detected("verify", &mixed, &[]);
    assert_eq!(r.code, 2);
    assert!(r.error().1.contains("mixes both encodings"));
    // With an explicit flag, verify names the logs of the other encoding.
    let r = run(["--json", "verify", "--jsonl", mixed.to_str().unwrap()]);
    assert_eq!(r.code, 4, "{}", r.stdout);
    let v = r.json();
    let kinds: Vec<&str> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["mixed_encoding"; 3], "{v:#}");

    // A directory that holds no session log and other things.
    let notes = tmp.path().join("notes");
    std::fs::create_dir(&notes).unwrap();
    std::fs::write(notes.join("todo.txt"), b"x").unwrap();
    let r = detected("list", &notes, &[]);
    assert_eq!(r.code, 2);
    assert!(
        r.error().1.contains("does not look like a session store"),
        "{}",
        r.stderr
    );
    // A file that is not a database, and a database of another application.
    let text = tmp.path().join("file.txt");
    std::fs::write(&text, b"hello").unwrap();
    let r = detected("list", &text, &[]);
    assert_eq!(r.code, 2);
    assert!(r.error().1.contains("no SQLite header"), "{}", r.stderr);
    let other = tmp.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&other).unwrap();
        conn.execute_batch("PRAGMA application_id = 42; CREATE TABLE t (x);")
            .unwrap();
    }
    let before = tree_hashes(tmp.path());
    let r = detected("list", &other, &[]);
    assert_eq!(r.code, 2);
    assert!(r.error().1.contains("application_id 42"), "{}", r.stderr);
    let empty = tmp.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let r = detected("list", &empty, &[]);
    assert_eq!(r.code, 2);
    assert!(r.error().1.contains("--sqlite FILE"), "{}", r.stderr);
    std::fs::remove_file(&empty).unwrap();
    assert_eq!(before, tree_hashes(tmp.path()), "detection wrote something");

    // A missing store is not found and not created.
    let missing = tmp.path().join("nowhere");
    let r = detected("list", &missing, &[]);
    assert_eq!(r.code, 3);
    assert_eq!(r.error().0, "not_found");
    assert!(!missing.exists());
    // So is one under a file (as with --jsonl and --sqlite).
    let under_file = text.join("s.db");
    let r = detected("list", &under_file, &[]);
    assert_eq!(
        (r.code, r.error().0.as_str()),
        (3, "not_found"),
        "{}",
        r.stderr
    );
    assert!(r.error().1.contains("does not exist"), "{}", r.stderr);
    // An empty directory reads as an empty store.
    let blank = tmp.path().join("blank");
    std::fs::create_dir(&blank).unwrap();
    let r = detected("list", &blank, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "[]");
    assert_eq!(std::fs::read_dir(&blank).unwrap().count(), 0);
    // Two store selections are a usage error.
    let r = run([
        "list",
        "--store",
        blank.to_str().unwrap(),
        "--jsonl",
        blank.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2);
}

#[test]
fn a_postgres_url_is_detected_as_a_postgres_store() {
    // Without a server too: the URL is taken for a PostgreSQL store, not a
    // path; a server that is not there is an io error naming it (with the
    // schema of --postgres-schema), never with the password.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for scheme in ["postgres", "postgresql"] {
        let url = format!("{scheme}://me:s3cret@127.0.0.1:{port}/sessions");
        for (sub, schema) in [("list", None), ("verify", None), ("list", Some("other"))] {
            let mut a = vec!["--json", sub, "--store", &url];
            if let Some(s) = schema {
                a.extend(["--postgres-schema", s]);
            }
            let r = run(a);
            assert_eq!(r.code, 1, "{url} {sub}: {}", r.stderr);
            assert!(r.stdout.is_empty(), "{}", r.stdout);
            let (kind, message) = r.error();
            assert_eq!(kind, "io", "{message}");
            let label = format!(
                "PostgreSQL server at 127.0.0.1:{port} (database \"sessions\", schema \"{}\")",
                schema.unwrap_or("dsh")
            );
            assert!(message.starts_with(&label), "{message}");
            assert!(
                !message.contains("s3cret"),
                "the password leaked: {message}"
            );
        }
    }

    // With the test server: `--store URL` is the store `--postgres URL`
    // opens, and `convert --to URL` writes into it.
    let Some(url) = support::pg::url("a_postgres_url_is_detected_as_a_postgres_store") else {
        return;
    };
    let schema = support::pg::Schema::new(&url, "detect");
    let store =
        |sub: &str, flag: &str| run(["--json", sub, flag, &url, "--postgres-schema", &schema.name]);
    // A reading command creates nothing.
    let r = store("list", "--store");
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert_eq!(r.error().0, "not_found");
    // A URL names its kind, so a new target needs no explicit flag.
    let src = FixtureStore::new("jsonl-none-packed");
    let listed = src.json("list", &[]).json();
    let r = run([
        "--json",
        "convert",
        "--store",
        src.path.to_str().unwrap(),
        "--to",
        &url,
        "--postgres-schema",
        &schema.name,
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["converted"], listed.as_array().unwrap().len());
    let detected_list = store("list", "--store");
    assert_eq!(detected_list.code, 0, "{}", detected_list.stderr);
    assert_eq!(detected_list.stdout, store("list", "--postgres").stdout);
    assert_eq!(ids_of(&detected_list.json()), ids_of(&listed));
    let v = store("verify", "--store");
    assert_eq!(v.code, 0, "{}", v.stdout);
    assert_eq!(v.json()["sessions"], listed.as_array().unwrap().len());
}

#[test]
fn convert_to_detects_an_existing_target_and_refuses_a_new_one() {
    let src = FixtureStore::new("jsonl-none-packed");
    let tmp = TempDir::new("cli-detect-to");
    // `convert --store SOURCE --to TARGET`.
    let convert_to = |target: &Path| {
        run([
            "--json",
            "convert",
            "--store",
            src.path.to_str().unwrap(),
            "--to",
            target.to_str().unwrap(),
        ])
    };
    // A new or empty target needs an explicit kind; nothing is created.
    let new_db = tmp.path().join("new.db");
    let r = convert_to(&new_db);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.error().1.contains("--to-sqlite FILE"), "{}", r.stderr);
    assert!(!new_db.exists());
    // So does one under a file.
    let file = tmp.path().join("file.txt");
    std::fs::write(&file, b"x").unwrap();
    let under_file = file.join("new.db");
    let r = convert_to(&under_file);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.error()
            .1
            .contains("does not exist, so its kind cannot be detected"),
        "{}",
        r.stderr
    );
    let empty_root = tmp.path().join("root");
    std::fs::create_dir(&empty_root).unwrap();
    let r = convert_to(&empty_root);
    assert_eq!(r.code, 2);
    assert!(r.error().1.contains("--to-jsonl"), "{}", r.stderr);
    assert_eq!(std::fs::read_dir(&empty_root).unwrap().count(), 0);

    // An existing (empty, initialised) session database is detected and
    // filled. (A store opened and closed unused creates no file.)
    let db = tmp.path().join("sessions.db");
    dsh_persist::backend::sqlite::SqliteBackend::open(&SqliteConfig::new(db.to_str().unwrap()))
        .unwrap()
        .initialise()
        .unwrap();
    let r = convert_to(&db);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let listed = src.json("list", &[]).json();
    assert_eq!(r.json()["converted"], listed.as_array().unwrap().len());
    let copy = detected("list", &db, &[]);
    assert_eq!(ids_of(&copy.json()), ids_of(&listed));
}

#[test]
fn a_database_whose_identity_is_still_in_the_wal_is_detected() {
    // As a writer that switched to WAL before writing the identity leaves
    // it: the main file's header still says application_id 0, the WAL holds
    // the real one (the writer is still open, nothing checkpointed).
    use dsh_persist::backend::sqlite::schema::{APPLICATION_ID, SCHEMA_SQL, SCHEMA_VERSION};
    use std::os::unix::fs::PermissionsExt;
    let tmp = TempDir::new("cli-detect-wal");
    let db = tmp.path().join("live.db");
    std::fs::File::create(&db).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
        .unwrap();
    writer
        .execute_batch(&format!(
            "PRAGMA wal_autocheckpoint = 0;
             BEGIN;
             PRAGMA application_id = {APPLICATION_ID};
             PRAGMA user_version = {SCHEMA_VERSION};
             {SCHEMA_SQL}
             INSERT INTO persistence_state (singleton, store_id) VALUES (1, 'live-store');
             COMMIT;"
        ))
        .unwrap();
    let header = std::fs::read(&db).unwrap();
    assert!(
        header.len() < 72 || header[68..72] == [0, 0, 0, 0],
        "the identity was checkpointed into the main file already"
    );
    let r = detected("list", &db, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "[]");
    drop(writer);
}

/// The writer-lock directories a live writer creates (`<root>/.dsh-persist-locks/`,
/// `<database>.dsh-persist-locks/`) are the store's own: detection reads
/// through them, verify calls nothing there foreign.
#[test]
fn writer_lock_directories_do_not_change_detection_or_verify() {
    use dsh_persist::backend::jsonl::{Compression, JsonlConfig};
    use dsh_persist::model::header::SessionHeader;
    use dsh_persist::store::BackendConfig;

    let tmp = TempDir::new("cli-detect-locks");
    // A root holding nothing but the lock directory of a live session that
    // has not written yet: an empty store, not "not a session store".
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let store = Store::open(StoreConfig::with_backend(BackendConfig::Jsonl(
        JsonlConfig {
            compression: Compression::None,
            ..JsonlConfig::new(&root)
        },
    )))
    .unwrap();
    let live = store.start(SessionHeader::new("s-live", 1)).unwrap();
    let locks = root.join(".dsh-persist-locks");
    assert!(locks.is_dir(), "the live session holds no lock file");
    assert_eq!(std::fs::read_dir(&locks).unwrap().count(), 1);
    let r = detected("list", &root, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "[]");
    let r = detected("verify", &root, &[]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(r.json()["problems"], serde_json::json!([]), "{}", r.stdout);
    // As a conversion target it is still a root without a log yet.
    let from = FixtureStore::new("jsonl-none-packed");
    let r = run([
        "convert",
        "--store",
        from.path.to_str().unwrap(),
        "--to",
        root.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("holds no session log yet"),
        "{}",
        r.stderr
    );
    live.close().unwrap();
    store.close().unwrap();

    // A fixture root and a fixture database, each with a live writer's
    // lock directory: detected and verified as without it.
    for case in ["jsonl-none-packed", "jsonl-zstd-packed", "sqlite-corpus"] {
        let fixture = FixtureStore::new(case);
        let list_before = detected("list", &fixture.path, &[]);
        let verify_before = detected("verify", &fixture.path, &[]);
        let config = match case {
            "sqlite-corpus" => {
                BackendConfig::Sqlite(SqliteConfig::new(fixture.path.display().to_string()))
            }
            _ => BackendConfig::Jsonl(JsonlConfig {
                compression: if case.contains("zstd") {
                    Compression::Zstd
                } else {
                    Compression::None
                },
                ..JsonlConfig::new(&fixture.path)
            }),
        };
        let store = Store::open(StoreConfig::with_backend(config)).unwrap();
        let live = store.start(SessionHeader::new("s-live", 1)).unwrap();
        let locks = match case {
            "sqlite-corpus" => {
                std::path::PathBuf::from(format!("{}.dsh-persist-locks", fixture.path.display()))
            }
            _ => fixture.path.join(".dsh-persist-locks"),
        };
        assert!(locks.is_dir(), "{case}: no lock directory at {locks:?}");
        let r = detected("list", &fixture.path, &[]);
        assert_eq!(r.code, 0, "{case}: {}", r.stderr);
        assert_eq!(r.stdout, list_before.stdout, "{case}");
        let r = detected("verify", &fixture.path, &[]);
        assert_eq!(r.code, verify_before.code, "{case}: {}", r.stdout);
        assert_eq!(r.stdout, verify_before.stdout, "{case}");
        if case == "sqlite-corpus" {
            // The lock directory itself is not a store: the database is.
            let r = detected("list", &locks, &[]);
            assert_eq!(r.code, 2, "{}", r.stderr);
            let (kind, message) = r.error();
            assert_eq!(kind, "invalid_argument");
            assert!(
                message.contains("writer-lock directory of the SQLite database"),
                "{message}"
            );
        }
        live.close().unwrap();
        store.close().unwrap();
    }
}
