//! `dsh-persist --postgres URL` for every command, and `convert
//! --to-postgres`: the upstream JSONL fixture converted into PostgreSQL and
//! on into SQLite reads the same through every command. Needs
//! `DSH_TEST_POSTGRES_URL`.

mod cli_common;
mod support;

use cli_common::*;
use support::TempDir;
use support::pg::Schema;

/// `--json SUB --postgres URL --postgres-schema S REST...`.
fn pg(schema: &Schema, sub: &str, rest: &[&str]) -> Run {
    let mut a = vec![
        "--json".to_string(),
        sub.to_string(),
        "--postgres".to_string(),
        schema.url.clone(),
        "--postgres-schema".to_string(),
        schema.name.clone(),
    ];
    a.extend(rest.iter().map(|s| s.to_string()));
    run(a)
}

#[test]
fn every_command_reads_a_store_converted_into_postgres() {
    let Some(url) = support::pg::url("every_command_reads_a_store_converted_into_postgres") else {
        return;
    };
    let schema = Schema::new(&url, "cli");
    // Reading commands never create a store.
    let r = pg(&schema, "list", &[]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    let (kind, message) = r.error();
    assert_eq!(kind, "not_found");
    assert!(message.ends_with("holds no session store"), "{message}");

    let src = FixtureStore::new("jsonl-zstd-packed");
    let src_path = src.path.to_str().unwrap().to_string();
    let r = run([
        "--json",
        "convert",
        "--jsonl",
        &src_path,
        "--to-postgres",
        &url,
        "--postgres-schema",
        &schema.name,
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json(), serde_json::json!({"converted": 26}));
    // A second convert refuses to overwrite.
    let again = run([
        "--json",
        "convert",
        "--jsonl",
        &src_path,
        "--to-postgres",
        &url,
        "--postgres-schema",
        &schema.name,
    ]);
    assert_eq!(again.code, 1, "{}", again.stderr);
    assert_eq!(again.error().0, "conflict");

    // On into SQLite: every command answers the same on both row stores.
    let tmp = TempDir::new("cli-pg");
    let db = tmp.path().join("sessions.db");
    let mut a = vec!["--json", "convert", "--postgres", &url, "--postgres-schema"];
    a.push(&schema.name);
    a.extend(["--to-sqlite", db.to_str().unwrap()]);
    let r = run(a);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let sq = |sub: &str, rest: &[&str]| {
        let mut a = vec!["--json", sub, "--sqlite", db.to_str().unwrap()];
        a.extend(rest);
        run(a)
    };
    let list = pg(&schema, "list", &[]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert_eq!(list.stdout, sq("list", &[]).stdout);
    let ids = ids_of(&list.json());
    assert_eq!(ids.len(), 26);
    let snaps = pg(&schema, "snapshots", &[]);
    assert_eq!(snaps.code, 0);
    assert!(
        snaps
            .stdout
            .contains(&format!("postgres:schema:{}:store:", schema.name))
    );
    // Every session through inspect; a few through the other readers (each
    // run is a process with its own connection).
    for (i, id) in ids.iter().enumerate() {
        let mut commands = vec![("inspect", vec![id.as_str()])];
        if i % 6 == 0 {
            commands.push(("read-from", vec![id.as_str(), "3"]));
            commands.push(("cat", vec![id.as_str()]));
        }
        for (sub, rest) in commands {
            let a = pg(&schema, sub, &rest);
            let b = sq(sub, &rest);
            assert_eq!((a.code, &a.stdout), (b.code, &b.stdout), "{sub} {id}");
        }
    }
    let v = pg(&schema, "verify", &[]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    assert_eq!(v.json()["sessions"], 26);
    let l = pg(&schema, "load", &[&ids[0]]);
    assert_eq!(l.code, 0, "{}", l.stderr);
    assert_eq!(l.stdout, sq("load", &[&ids[0]]).stdout);
    let raw = pg(&schema, "raw", &[&ids[0]]);
    assert_eq!(raw.error().0, "unsupported");
    let missing = pg(&schema, "inspect", &["no-such-session"]);
    assert_eq!(missing.code, 3);
    // A server that is not there: an io error naming it, no password.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let r = run([
        "--json",
        "list",
        "--postgres",
        &format!("postgresql://dsh:pw-secret@127.0.0.1:{port}/db"),
    ]);
    assert_eq!(r.code, 1);
    let (kind, message) = r.error();
    assert_eq!(kind, "io");
    assert!(
        message.starts_with(&format!(
            "PostgreSQL server at 127.0.0.1:{port} (database \"db\", schema \"dsh\")"
        )),
        "{message}"
    );
    assert!(!message.contains("pw-secret"));
}

#[test]
fn verify_walks_the_postgres_tables_not_only_what_list_shows() {
    let Some(url) = support::pg::url("verify_walks_the_postgres_tables_not_only_what_list_shows")
    else {
        return;
    };
    let schema = Schema::new(&url, "verify");
    let src = FixtureStore::new("jsonl-zstd-packed");
    let r = run([
        "--json",
        "convert",
        "--jsonl",
        src.path.to_str().unwrap(),
        "--to-postgres",
        &url,
        "--postgres-schema",
        &schema.name,
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let ids = ids_of(&pg(&schema, "list", &[]).json());
    let clean = pg(&schema, "verify", &[]);
    assert_eq!(clean.code, 0, "{}", clean.stdout);
    assert_eq!(clean.json()["ok"], ids.len());

    // One sessions row the row reader refuses, and events rows of a session
    // that has no sessions row (possible once the foreign key is gone).
    let bad = ids[0].clone();
    let mut admin = schema.admin();
    admin
        .execute("UPDATE sessions SET created_at = -5 WHERE id = $1", &[&bad])
        .unwrap();
    admin
        .batch_execute(&format!(
            "ALTER TABLE events DROP CONSTRAINT events_session_id_fkey;
             INSERT INTO events (session_id, seq, type, time, data)
               SELECT 'ghost', seq, type, time, data FROM events
               WHERE session_id = '{}' AND data IS NOT NULL AND seq < 2;",
            ids[1].replace('\'', "''")
        ))
        .unwrap();
    let dump = |c: &mut postgres::Client| -> Vec<String> {
        c.query(
            "SELECT s::text FROM sessions s UNION ALL SELECT e::text FROM events e ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
    };
    let before = dump(&mut admin);

    // list refuses the whole store for one bad row; verify goes on.
    let list = pg(&schema, "list", &[]);
    assert_eq!(list.code, 4, "{}", list.stderr);
    let r = pg(&schema, "verify", &[]);
    assert_eq!(r.code, 4, "{}", r.stdout);
    let v = r.json();
    let problems = v["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 2, "{v:#}");
    let label = format!(
        "PostgreSQL server at {} (database \"dsh_test\", schema \"{}\")",
        url.rsplit_once('@').unwrap().1.split_once('/').unwrap().0,
        schema.name
    );
    let p = problems.iter().find(|p| p["id"] == bad.as_str()).unwrap();
    assert_eq!(p["kind"], "corruption", "{p}");
    assert!(
        p["message"].as_str().unwrap().contains("created_at -5"),
        "{p}"
    );
    assert_eq!(p["path"], label.as_str(), "{p}");
    let p = problems.iter().find(|p| p["id"] == "ghost").unwrap();
    assert_eq!(p["kind"], "orphan_events", "{p}");
    assert!(
        p["message"]
            .as_str()
            .unwrap()
            .contains("2 events row(s) (seq 0 to 1) of session \"ghost\""),
        "{p}"
    );
    // Every other session was still checked, and is sound.
    assert_eq!(v["sessions"], ids.len() + 1);
    assert_eq!(v["ok"], ids.len() - 1);
    // Human output: kind and id, the store named once.
    let h = run([
        "verify",
        "--postgres",
        &url,
        "--postgres-schema",
        &schema.name,
    ]);
    assert_eq!(h.code, 4);
    assert!(
        h.stdout.starts_with(&format!(
            "checked {} session(s) in postgres store {label}: {} ok, 2 problem(s)",
            ids.len() + 1,
            ids.len() - 1
        )),
        "{}",
        h.stdout
    );
    // The label is named on the first line, not again as each problem's
    // path: once there, once in the orphan message.
    assert!(
        h.stdout
            .contains("\"ghost\" [orphan_events]: PostgreSQL server at"),
        "{}",
        h.stdout
    );
    assert_eq!(h.stdout.matches(&label).count(), 2, "{}", h.stdout);
    assert_eq!(before, dump(&mut admin), "verify modified the tables");
}
