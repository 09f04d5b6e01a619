//! The PostgreSQL backend on a real server (`DSH_TEST_POSTGRES_URL`, see
//! `tests/support/pg.rs`): torn tails and repair, corruption, schema
//! refusals, TLS, an unreachable server, notifications, retries that never
//! duplicate a batch, and writer exclusion across processes.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dsh_persist::ErrorKind;
use dsh_persist::backend::postgres::pool::Pool;
use dsh_persist::backend::postgres::{PostgresBackend, PostgresConfig, SslMode};
use dsh_persist::backend::{Backend, Expect, TornTail};
use dsh_persist::model::event::Event;
use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::{BackendConfig, Store, StoreConfig};
use support::pg::Schema;

fn header(id: &str) -> SessionHeader {
    let mut h = SessionHeader::new(id, 1_785_000_000_000);
    h.cwd = Some("/srv/agent".into());
    h
}

fn ev(ty: &str, seq: u64, data: &str) -> Event {
    Event::parse(&format!(
        r#"{{"type":"{ty}","seq":{seq},"time":{},"data":{data}}}"#,
        1000 + seq
    ))
    .unwrap()
}

/// A closed turn `t` from `seq` on: start, a packed run of six text deltas
/// (one chunk row), a large message (zstd `data`), end.
fn turn(t: u64, seq: u64) -> Vec<Event> {
    let mut out = vec![ev("turn/start", seq, &format!(r#"{{"turn":{t}}}"#))];
    for k in 0..6 {
        out.push(ev(
            "assistant/chunk",
            seq + 1 + k,
            &format!(
                r#"{{"turn":{t},"step":1,"chunk":{{"type":"text-delta","index":0,"text":"t{t}k{k} "}}}}"#
            ),
        ));
    }
    out.push(ev(
        "session/title",
        seq + 7,
        &format!(r#"{{"title":"{}"}}"#, "long title ".repeat(500)),
    ));
    out.push(ev(
        "turn/end",
        seq + 8,
        &format!(r#"{{"turn":{t},"reason":{{"kind":"completed"}}}}"#),
    ));
    out
}

fn json(events: &[Event]) -> Vec<String> {
    events.iter().map(Event::to_json).collect()
}

fn store(schema: &Schema) -> Store {
    let mut c = StoreConfig::with_backend(BackendConfig::Postgres(schema.config()));
    c.write_batch_max_delay_ms = 10;
    Store::open(c).unwrap()
}

#[test]
fn rows_are_the_sqlite_rows_and_torn_tails_are_cut_on_load() {
    let Some(url) = support::pg::url("rows_are_the_sqlite_rows_and_torn_tails") else {
        return;
    };
    let schema = Schema::new(&url, "torn");
    let be = PostgresBackend::open(&schema.config()).unwrap();
    let h = header("s");
    let mut events = turn(1, 0);
    events.extend(turn(2, 9));
    be.append(&h, &events[..9], Expect::New).unwrap();
    let rev = be.revision("s").unwrap().unwrap();
    be.append(&h, &events[9..], Expect::At(&rev)).unwrap();
    let mut admin = schema.admin();
    // Packed chunk rows (ignorable = 0) and a compressed title.
    let rows: Vec<(i64, String, bool, Option<i16>)> = admin
        .query(
            "SELECT seq, type, data_zstd IS NOT NULL, ignorable FROM events WHERE session_id = 's' ORDER BY seq",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    assert_eq!(rows.len(), 8, "{rows:?}");
    assert_eq!(rows[1], (1, "text-chunks".into(), false, Some(0)));
    assert_eq!(rows[2], (7, "session/title".into(), true, None));
    let log = be.read("s").unwrap().unwrap();
    assert_eq!(json(&log.events), json(&events));
    assert_eq!(log.torn, None);
    let from = be.read_from("s", 12).unwrap().unwrap();
    assert_eq!(json(&from.events), json(&events[12..]));

    // A row after the last turn/end that does not decode is torn...
    admin
        .execute(
            "INSERT INTO events (session_id, seq, type, time, data) VALUES ('s', 18, 'turn/start', 5, '{bad')",
            &[],
        )
        .unwrap();
    let log = be.read("s").unwrap().unwrap();
    assert_eq!(log.torn, Some(TornTail::Sqlite { from_seq: 18 }));
    assert_eq!(log.events.len(), 18);
    // ...an append refuses to continue after it, a load cuts it.
    let e = be
        .append(&h, &turn(3, 18), Expect::At(&log.revision))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    let s = Store::open(StoreConfig::with_backend(BackendConfig::Postgres(
        schema.config(),
    )))
    .unwrap();
    assert_eq!(s.load("s").unwrap().events.len(), 18);
    let left: i64 = admin
        .query_one(
            "SELECT count(*) FROM events WHERE session_id = 's' AND seq >= 18",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(left, 0, "the torn row is gone");
    assert_eq!(be.read("s").unwrap().unwrap().torn, None);

    // Before the last turn/end, the same row is corruption.
    admin
        .execute(
            "UPDATE events SET data = '{bad' WHERE session_id = 's' AND seq = 9",
            &[],
        )
        .unwrap();
    let e = be.read("s").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption);
    assert_eq!(
        e.to_string(),
        "corrupt session log: invalid committed physical row at seq 9"
    );
    assert_eq!(s.load("s").unwrap_err().kind(), ErrorKind::Corruption);
}

#[test]
fn schemas_that_are_not_ours_are_refused_untouched() {
    let Some(url) = support::pg::url("schemas_that_are_not_ours_are_refused") else {
        return;
    };
    // A schema with someone else's table.
    let foreign = Schema::new(&url, "foreign");
    let mut admin = support::pg::admin(&url);
    admin
        .batch_execute(&format!(
            "CREATE SCHEMA \"{0}\"; CREATE TABLE \"{0}\".things (x int)",
            foreign.name
        ))
        .unwrap();
    let e = PostgresBackend::open(&foreign.config()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("is not a dsh session store"), "{e}");

    // A newer schema version, then an altered table.
    let ours = Schema::new(&url, "altered");
    drop(PostgresBackend::open(&ours.config()).unwrap());
    let mut a = ours.admin();
    a.batch_execute("UPDATE persistence_state SET schema_version = 18")
        .unwrap();
    let e = PostgresBackend::open(&ours.config()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::FormatUnsupported);
    assert!(e.to_string().contains("written by a newer build"), "{e}");
    a.batch_execute(
        "UPDATE persistence_state SET schema_version = 17; ALTER TABLE events ADD COLUMN extra int",
    )
    .unwrap();
    let e = PostgresBackend::open(&ours.config()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Corruption);
    assert!(e.to_string().contains("events.extra integer"), "{e}");
    let cols: i64 = a
        .query_one(
            "SELECT count(*) FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'events' AND column_name = 'extra'",
            &[&ours.name],
        )
        .unwrap()
        .get(0);
    assert_eq!(cols, 1, "nothing was changed");

    // Two stores opening one pristine schema at once: one creates it.
    let fresh = Schema::new(&url, "race");
    let ids: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    PostgresBackend::open(&fresh.config())
                        .unwrap()
                        .store_id()
                        .to_string()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
}

/// A local port nothing listens on.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn an_unreachable_server_is_an_io_error_naming_it() {
    if support::pg::url("an_unreachable_server_is_an_io_error").is_none() {
        return;
    }
    let port = closed_port();
    let mut c = PostgresConfig::new(format!(
        "postgresql://dsh:secret-pw@127.0.0.1:{port}/nowhere"
    ));
    c.connect_timeout_ms = 2000;
    let e = PostgresBackend::open(&c).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Io);
    let m = e.to_string();
    assert!(
        m.starts_with(&format!(
            "PostgreSQL server at 127.0.0.1:{port} (database \"nowhere\", schema \"dsh\"): cannot connect"
        )),
        "{m}"
    );
    assert!(!m.contains("secret-pw"), "{m}");
    let e = Store::open(StoreConfig::postgres(c.url.clone()))
        .err()
        .unwrap();
    assert_eq!(e.kind(), ErrorKind::Io);

    // A wrong password: the server's refusal, named.
    let url = std::env::var(support::pg::URL_ENV).unwrap();
    let bad = url.replacen("dsh:dsh@", "dsh:wrong@", 1);
    let e = PostgresBackend::open(&PostgresConfig::new(bad))
        .err()
        .unwrap();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(
        e.to_string().contains("password authentication failed"),
        "{e}"
    );

    // A port that accepts connections and never answers (the driver's own
    // timeout covers only the TCP connect): refused after connectTimeoutMs,
    // not waited on for ever.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let mut c = PostgresConfig::new(format!("postgresql://dsh@127.0.0.1:{port}/silent"));
    c.connect_timeout_ms = 300;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let opened = Store::open(StoreConfig::with_backend(BackendConfig::Postgres(c)));
        let _ = tx.send(opened.err().map(|e| (e.kind(), e.to_string())));
    });
    let (kind, m) = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("an open against a silent server must give up")
        .expect("and fail");
    assert_eq!(kind, ErrorKind::Io);
    assert!(
        m.starts_with(&format!(
            "PostgreSQL server at 127.0.0.1:{port} (database \"silent\", schema \"dsh\"): cannot connect: no connection within 300 ms (connectTimeoutMs)"
        )),
        "{m}"
    );
}

#[test]
fn tls_modes_connect_and_verify_the_server() {
    let Some(url) = support::pg::url("tls_modes_connect_and_verify_the_server") else {
        return;
    };
    let Ok(ca) = std::env::var(support::pg::CA_ENV) else {
        eprintln!("SKIPPED tls_modes: {} is not set", support::pg::CA_ENV);
        return;
    };
    let schema = Schema::new(&url, "tls");
    let ssl_in_use = |c: &PostgresConfig| -> bool {
        let be = PostgresBackend::open(c).unwrap();
        let mut client = be.connect_dedicated().unwrap();
        client
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0)
    };
    let mut c = schema.config();
    c.ssl_mode = Some(SslMode::Disable);
    assert!(!ssl_in_use(&c));
    c.ssl_mode = Some(SslMode::Require);
    assert!(ssl_in_use(&c), "require: TLS, certificate not checked");
    // verify-full against the test CA, for 127.0.0.1 (in the certificate).
    c.ssl_mode = Some(SslMode::VerifyFull);
    c.ssl_root_cert = Some(ca.clone().into());
    assert!(ssl_in_use(&c));
    // The same from the URL's own parameters.
    let with_params = format!("{url}?sslmode=verify-full&sslrootcert={ca}");
    assert!(ssl_in_use(
        &PostgresConfig::new(with_params).with_schema(schema.name.clone())
    ));
    // Without the CA the self-signed certificate does not verify.
    c.ssl_root_cert = None;
    let e = PostgresBackend::open(&c).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(e.to_string().contains("cannot connect"), "{e}");
    // A root file that is not a certificate.
    c.ssl_root_cert = Some("/etc/hostname".into());
    let e = PostgresBackend::open(&c).err().unwrap();
    assert!(e.to_string().contains("holds no PEM certificate"), "{e}");
}

#[test]
fn every_committed_batch_notifies_and_a_lost_connection_is_retried_once() {
    let Some(url) = support::pg::url("every_committed_batch_notifies") else {
        return;
    };
    let schema = Schema::new(&url, "retry");
    let mut config = schema.config();
    config.application_name = format!("retry-{}", schema.name);
    let be = PostgresBackend::open(&config).unwrap();
    let mut listener = be.connect_dedicated().unwrap();
    listener
        .batch_execute(&format!("LISTEN \"{}\"", be.notify_channel()))
        .unwrap();
    let h = header("n");
    let events = [turn(1, 0), turn(2, 9)].concat();
    be.append(&h, &events[..9], Expect::New).unwrap();

    // A second append waits for a row lock we hold; its connection is then
    // killed, so the attempt fails before COMMIT and must be retried once.
    let mut admin = schema.admin();
    let mut tx = admin.transaction().unwrap();
    tx.execute("SELECT 1 FROM sessions WHERE id = 'n' FOR UPDATE", &[])
        .unwrap();
    let waiting = |not: i32| -> i32 {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut probe = support::pg::admin(&url);
        loop {
            let row = probe
                .query_opt(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock' AND pid <> $2",
                    &[&config.application_name, &not],
                )
                .unwrap();
            if let Some(r) = row {
                return r.get(0);
            }
            assert!(
                Instant::now() < deadline,
                "the append never waited for the lock"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let rev = be.revision("n").unwrap().unwrap();
    std::thread::scope(|s| {
        let writer = s.spawn(|| be.append(&h, &events[9..], Expect::At(&rev)));
        let first = waiting(0);
        let mut killer = support::pg::admin(&url);
        let killed: bool = killer
            .query_one("SELECT pg_terminate_backend($1)", &[&first])
            .unwrap()
            .get(0);
        assert!(killed);
        // The retry waits for the same lock on a new connection.
        let second = waiting(first);
        assert_ne!(second, first);
        tx.commit().unwrap();
        writer.join().unwrap().unwrap();
    });
    let log = be.read("n").unwrap().unwrap();
    assert_eq!(json(&log.events), json(&events), "the batch is stored once");
    let rows: i64 = admin
        .query_one("SELECT count(*) FROM events WHERE session_id = 'n'", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 8);

    // One notification per committed batch, none for the killed attempt.
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < 2 && Instant::now() < deadline {
        let mut n = listener.notifications();
        let mut it = n.timeout_iter(Duration::from_millis(200));
        while let Ok(Some(note)) = postgres::fallible_iterator::FallibleIterator::next(&mut it) {
            assert_eq!(note.channel(), be.notify_channel());
            got.push(note.payload().to_string());
        }
    }
    assert_eq!(
        got,
        [
            r#"{"id" : "n", "kind" : "append", "from" : 0, "next" : 9, "revision" : 1}"#,
            r#"{"id" : "n", "kind" : "append", "from" : 9, "next" : 18, "revision" : 2}"#,
        ]
    );
    let mut n = listener.notifications();
    let mut it = n.timeout_iter(Duration::from_millis(300));
    assert!(
        postgres::fallible_iterator::FallibleIterator::next(&mut it)
            .unwrap()
            .is_none(),
        "no third notification"
    );
}

#[test]
fn text_postgres_cannot_hold_is_refused_naming_the_field() {
    let Some(url) = support::pg::url("text_postgres_cannot_hold_is_refused") else {
        return;
    };
    let schema = Schema::new(&url, "nul");
    let be = PostgresBackend::open(&schema.config()).unwrap();
    let mut h = header("nul");
    h.cwd = Some("/a\u{0}b".into());
    let e = be.append(&h, &turn(1, 0), Expect::New).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        e.to_string(),
        "session \"nul\": cwd holds U+0000, which PostgreSQL text cannot store"
    );
    assert!(be.list().unwrap().is_empty());
}

// ---------------------------------------------------------------------------
// Writer exclusion across processes

const LOCK_CHILD: &str = "DSH_PG_LOCK_CHILD";

/// The child: takes the writer lock of the id in `DSH_PG_LOCK_CHILD`
/// (`<schema> <id>`), says `locked`, and holds it until killed (at most a
/// minute).
#[test]
fn lock_child() {
    let Ok(spec) = std::env::var(LOCK_CHILD) else {
        return;
    };
    let (schema, id) = spec.split_once(' ').unwrap();
    let url = std::env::var(support::pg::URL_ENV).unwrap();
    let be = PostgresBackend::open(&PostgresConfig::new(url).with_schema(schema)).unwrap();
    let _lock = be.lock_writer(id).unwrap();
    println!("locked");
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn writer_locks_exclude_across_processes_and_die_with_their_holder() {
    let Some(url) = support::pg::url("writer_locks_exclude_across_processes") else {
        return;
    };
    let schema = Schema::new(&url, "locks");
    let be = PostgresBackend::open(&schema.config()).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "lock_child", "--nocapture", "--test-threads=1"])
        .env(LOCK_CHILD, format!("{} s1", schema.name))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the child ended early"
        );
        // libtest prints "test lock_child ... " before it, on the same line.
        if line.trim_end().ends_with("locked") {
            break;
        }
    }
    // Held by the other process: refused here, seen by readers.
    assert!(be.try_lock_writer("s1").unwrap().is_none());
    let e = be.lock_writer("s1").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy);
    assert!(
        e.to_string()
            .contains("session \"s1\" is being written by another connection (server process"),
        "{e}"
    );
    let holder = be.writer_holder("s1").unwrap().unwrap();
    assert!(!holder.this_process, "{holder:?}");
    assert!(be.writer_held("s1").unwrap());
    assert!(be.writer_held_elsewhere("s1").unwrap());
    // Other ids and other schemas are free.
    let other = be.lock_writer("s2").unwrap();
    assert!(be.writer_held("s2").unwrap());
    assert!(!be.writer_held_elsewhere("s2").unwrap(), "our own lock");
    // Another handle of this process sees it as held in this process.
    let same_process = PostgresBackend::open(&schema.config()).unwrap();
    assert!(
        same_process
            .writer_holder("s2")
            .unwrap()
            .unwrap()
            .this_process
    );
    let e = same_process.lock_writer("s2").unwrap_err();
    assert!(
        e.to_string()
            .contains("is being written by another store handle in this process"),
        "{e}"
    );
    let elsewhere = Schema::new(&url, "locks2");
    let be2 = PostgresBackend::open(&elsewhere.config()).unwrap();
    assert!(!be2.writer_held("s1").unwrap());
    drop(be2.lock_writer("s1").unwrap());

    // The holder dies: the server releases its lock.
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let lock = loop {
        if let Some(l) = be.try_lock_writer("s1").unwrap() {
            break l;
        }
        assert!(
            Instant::now() < deadline,
            "the dead holder's lock was never released"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(lock.id(), "s1");
    assert!(!be.writer_held_elsewhere("s1").unwrap());
    drop(lock);
    drop(other);
    assert!(!be.writer_held("s1").unwrap());
    assert!(!be.writer_held("s2").unwrap());
}

/// `SELECT what` for each server process holding the writer lock of `id`
/// (found in `pg_locks` by its advisory key).
fn on_writer_lock_holders<T: for<'a> postgres::types::FromSql<'a>>(
    schema: &Schema,
    id: &str,
    what: &str,
) -> Vec<T> {
    use dsh_persist::backend::postgres::lock::{key_halves, lock_key};
    let (hi, lo) = key_halves(lock_key(&schema.name, id));
    schema
        .admin()
        .query(
            &format!(
                "SELECT {what} FROM pg_locks WHERE locktype = 'advisory' \
                 AND classid = $1 AND objid = $2 AND objsubid = 1 AND granted"
            ),
            &[&hi, &lo],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// A writer lock's guard releases the lock when dropped, at once (it
/// unlocks before it closes its connection, so the release does not wait
/// for the server to notice the closed socket), and the process forgets it.
#[test]
fn a_dropped_writer_lock_is_released_and_forgotten() {
    use dsh_persist::backend::postgres::lock::{held_in_this_process, lock_key};
    let Some(url) = support::pg::url("a_dropped_writer_lock_is_released_and_forgotten") else {
        return;
    };
    let schema = Schema::new(&url, "droplock");
    let be = PostgresBackend::open(&schema.config()).unwrap();
    let lock = be.try_lock_writer("s1").unwrap().unwrap();
    let key = lock_key(&schema.name, "s1");
    assert_eq!(lock.key(), key);
    assert_eq!(
        format!("{lock:?}"),
        format!("PgWriterLock {{ id: \"s1\", key: {key} }}")
    );
    // The server process of the lock's connection.
    let pids: Vec<i32> = on_writer_lock_holders(&schema, "s1", "pid");
    let [pid] = pids[..] else {
        panic!("one connection holds the lock: {pids:?}")
    };
    assert!(held_in_this_process(be.label(), pid));
    drop(lock);
    assert!(!held_in_this_process(be.label(), pid));
    assert!(!be.writer_held("s1").unwrap());
    assert!(!be.writer_held_elsewhere("s1").unwrap());
}

#[test]
fn a_store_of_many_hosts_sees_one_log() {
    // Two stores (two "hosts") on one schema: live sessions on each, cold
    // appends refused when stale, every list the same.
    let Some(url) = support::pg::url("a_store_of_many_hosts_sees_one_log") else {
        return;
    };
    let schema = Schema::new(&url, "hosts");
    let a = store(&schema);
    let b = store(&schema);
    let live = a.start(header("x")).unwrap();
    support::conv::complete_turn(&live, 1);
    live.close().unwrap();
    let n = b.load("x").unwrap().events.len() as u64;
    b.append("x", turn(2, n)).unwrap();
    // Another host's stale batch (other events at those seqs) is refused.
    let e = a.append("x", turn(3, n)).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::Conflict | ErrorKind::InvalidArgument),
        "{e}"
    );
    // The very batch stored, re-sent (a host that could not tell whether
    // its append went through), is stored once, not twice nor refused.
    a.append("x", turn(2, n)).unwrap();
    assert_eq!(a.load("x").unwrap().events.len() as u64, n + 9);
    assert_eq!(
        a.list()
            .unwrap()
            .iter()
            .map(|h| h.to_json())
            .collect::<Vec<_>>(),
        b.list()
            .unwrap()
            .iter()
            .map(|h| h.to_json())
            .collect::<Vec<_>>()
    );
}

/// A live session's writer lock is an advisory lock of one server
/// connection: when the server ends that connection (a restart; here
/// `pg_terminate_backend`), the lock is gone and another writer may take
/// the session. The live session verifies the lock before each batch: the
/// next batch is refused (`io`, naming the session and the lost lock), and
/// nothing more is written.
#[test]
fn a_live_session_that_lost_its_writer_lock_writes_nothing() {
    let Some(url) = support::pg::url("a_live_session_that_lost_its_writer_lock_writes_nothing")
    else {
        return;
    };
    let schema = Schema::new(&url, "lostlock");
    let store = store(&schema);
    let live = store.start(header("lost")).unwrap();
    let opts = dsh_persist::store::AppendOptions::default();
    live.append("turn/start", r#"{"turn":1}"#, &opts).unwrap();
    live.flush().unwrap();
    // The lock's connection, found by its advisory key.
    let killed: Vec<bool> = on_writer_lock_holders(&schema, "lost", "pg_terminate_backend(pid)");
    assert_eq!(killed, [true], "one connection held the lock");
    live.append(
        "turn/end",
        r#"{"turn":1,"reason":{"kind":"completed"}}"#,
        &opts,
    )
    .unwrap();
    let e = live.flush().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(
        e.to_string().contains(
            "live session \"lost\" lost its writer lock, so its batch at seq 1 was not written"
        ),
        "{e}"
    );
    // Nothing past the lock's loss was written.
    let be = PostgresBackend::open(&schema.config()).unwrap();
    assert_eq!(be.read("lost").unwrap().unwrap().events.len(), 1);
    // And it stays refused: every retry finds the lock lost.
    assert!(live.flush().is_err());
    assert_eq!(live.abandon(), 1);
}

/// A pool of `max` connections on `config`, opened as the backend opens its
/// own.
fn pool_on(config: &PostgresConfig, max: usize) -> std::sync::Arc<Pool> {
    let r = config.resolve().unwrap();
    let tls = dsh_persist::backend::postgres::tls::connector(&r).unwrap();
    let ident = dsh_persist::backend::postgres::schema::quote_ident(&config.schema);
    std::sync::Arc::new(Pool::new(r, tls, ident, max))
}

/// What a `get` came to: its connection's server pid, or its error's kind.
type GetOutcome = Result<i32, ErrorKind>;

/// Runs `pool.get()` on a thread of its own (the connection goes back when
/// the thread ends): its outcome, or `None` while it is still waiting after
/// `wait`, with the receiver that will get it.
fn get_on_a_thread(
    pool: &std::sync::Arc<Pool>,
    wait: Duration,
) -> (Option<GetOutcome>, std::sync::mpsc::Receiver<GetOutcome>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let pool = pool.clone();
    std::thread::spawn(move || {
        let _ = tx.send(pool.get().map(|c| c.pid).map_err(|e| e.kind()));
    });
    (rx.recv_timeout(wait).ok(), rx)
}

/// A `get` that must not wait: its outcome.
fn get_now(pool: &std::sync::Arc<Pool>, what: &str) -> GetOutcome {
    get_on_a_thread(pool, Duration::from_secs(30))
        .0
        .unwrap_or_else(|| panic!("{what}: the get waited with a place free"))
}

/// The server pids of the connections named `app`, after waiting (up to
/// 30 s) for the server to see the count come to `expected`.
fn server_pids(url: &str, app: &str, expected: usize) -> Vec<i32> {
    let mut admin = support::pg::admin(url);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pids: Vec<i32> = admin
            .query(
                "SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid",
                &[&app],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        if pids.len() == expected || Instant::now() > deadline {
            return pids;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The connection pool keeps at most `poolSize` connections: a `get`
/// beyond it waits for the next one returned and takes it; an idle one is
/// reused; a discarded or broken one is closed, not reused, and frees its
/// place, as does a connect that fails; `close` closes the idle ones,
/// refuses later gets and any waiting, and closes one returned after it
/// (and closes a pool with nothing open).
#[test]
fn the_pool_bounds_reuses_and_drops_its_connections() {
    let Some(url) = support::pg::url("the_pool_bounds_reuses_and_drops_its_connections") else {
        return;
    };
    let schema = Schema::new(&url, "pool");
    let mut config = schema.config();
    config.application_name = schema.name.clone();
    let app = config.application_name.clone();
    let pool = pool_on(&config, 2);
    assert_eq!(pool.max(), 2);

    let a = pool.get().unwrap();
    let b = pool.get().unwrap();
    let (a_pid, b_pid) = (a.pid, b.pid);
    assert_ne!(a_pid, b_pid);
    let mut both = vec![a_pid, b_pid];
    both.sort();
    assert_eq!(server_pids(&url, &app, 2), both);

    // Both out: a third get waits, and takes the next one returned.
    let (early, waiting) = get_on_a_thread(&pool, Duration::from_millis(300));
    assert_eq!(early, None, "a get beyond poolSize must wait");
    drop(a);
    let taken = waiting.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(taken, Ok(a_pid));
    // Returned again: reused, no third connection.
    assert_eq!(get_now(&pool, "reuse"), Ok(a_pid));
    assert_eq!(server_pids(&url, &app, 2), both);

    // Discarded: closed, and its place goes to a new connection.
    let mut a = pool.get().unwrap();
    assert_eq!(a.pid, a_pid);
    a.discard();
    drop(a);
    assert_eq!(server_pids(&url, &app, 1), vec![b_pid]);
    let c_pid = get_now(&pool, "after a discard").unwrap();
    assert!(c_pid != a_pid && c_pid != b_pid, "{c_pid}");

    // Broken under us (the server ended it; the call waits up to 10 s for
    // the end): not taken back, even unmarked.
    let mut c = pool.get().unwrap();
    assert_eq!(c.pid, c_pid);
    support::pg::admin(&url)
        .execute("SELECT pg_terminate_backend($1, 10000)", &[&c_pid])
        .unwrap();
    assert!(c.client.simple_query("SELECT 1").is_err());
    drop(c);
    let d_pid = get_now(&pool, "after a broken connection").unwrap();
    assert!(![a_pid, b_pid, c_pid].contains(&d_pid), "{d_pid}");

    // Closed: the idle one (d) closes now, the one out (b) when it comes
    // back.
    pool.close();
    assert_eq!(server_pids(&url, &app, 1), vec![b_pid]);
    assert_eq!(get_now(&pool, "closed"), Err(ErrorKind::Closed));
    drop(b);
    assert_eq!(server_pids(&url, &app, 0), Vec::<i32>::new());

    // A get waiting for a place when the pool closes is refused at once.
    let pool = pool_on(&config, 1);
    let held = pool.get().unwrap();
    let (early, waiting) = get_on_a_thread(&pool, Duration::from_millis(300));
    assert_eq!(early, None, "a get beyond poolSize must wait");
    pool.close();
    let refused = waiting.recv_timeout(Duration::from_secs(30));
    assert_eq!(refused, Ok(Err(ErrorKind::Closed)));
    drop(held);
    assert_eq!(server_pids(&url, &app, 0), Vec::<i32>::new());

    // A connect that fails frees its place: the next get fails too, at once.
    let port = closed_port();
    let mut nowhere = PostgresConfig::new(format!("postgresql://dsh@127.0.0.1:{port}/nowhere"));
    nowhere.connect_timeout_ms = 2000;
    let pool = pool_on(&nowhere, 1);
    for attempt in ["first", "second"] {
        assert_eq!(get_now(&pool, attempt), Err(ErrorKind::Io), "{attempt}");
    }
    // Closed with nothing open.
    pool.close();
    assert_eq!(get_now(&pool, "closed, never open"), Err(ErrorKind::Closed));
}

/// How a server's error becomes ours (`pg_error`: busy, conflict, invalid
/// argument, or I/O, with the server's message and code) and whether an
/// operation that met it may run again (`retryable`), for each SQLSTATE the
/// mapping names, raised by the test server itself, and for a connection
/// that broke (no SQLSTATE).
#[test]
fn server_errors_map_to_kinds_and_retries() {
    use dsh_persist::backend::postgres::pool::{pg_error, retryable};
    let Some(url) = support::pg::url("server_errors_map_to_kinds_and_retries") else {
        return;
    };
    let mut admin = support::pg::admin(&url);
    let cases = [
        ("40001", ErrorKind::Busy, true),
        ("40P01", ErrorKind::Busy, true),
        ("55P03", ErrorKind::Busy, false),
        ("23505", ErrorKind::Conflict, false),
        ("22021", ErrorKind::InvalidArgument, false),
        ("22P05", ErrorKind::InvalidArgument, false),
        ("08006", ErrorKind::Io, true),
        ("08000", ErrorKind::Io, true),
        ("57P01", ErrorKind::Io, true),
        ("57P02", ErrorKind::Io, true),
        ("57P03", ErrorKind::Io, true),
        ("57P04", ErrorKind::Io, false),
        ("42601", ErrorKind::Io, false),
        ("XX000", ErrorKind::Io, false),
    ];
    for (code, kind, retry) in cases {
        let e = admin
            .batch_execute(&format!(
                "DO $$ BEGIN RAISE EXCEPTION 'raised %', '{code}' USING ERRCODE = '{code}'; END $$"
            ))
            .unwrap_err();
        let ours = pg_error("server", "cannot do it", &e);
        assert_eq!((ours.kind(), retryable(&e)), (kind, retry), "{code}");
        assert_eq!(
            ours.to_string(),
            format!("server: cannot do it: raised {code} ({code})"),
            "{code}"
        );
    }
    // A connection the server ended: the client's error after the first
    // (which may carry the server's farewell, 57P01) has no SQLSTATE; an I/O
    // error with every cause, and one to retry on a fresh connection.
    let pid: i32 = admin
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    support::pg::admin(&url)
        .execute("SELECT pg_terminate_backend($1, 10000)", &[&pid])
        .unwrap();
    assert!(admin.simple_query("SELECT 1").is_err());
    let e = admin.simple_query("SELECT 1").unwrap_err();
    assert!(e.as_db_error().is_none(), "{e:?}");
    let ours = pg_error("server", "cannot do it", &e);
    assert_eq!((ours.kind(), retryable(&e)), (ErrorKind::Io, true));
    let causes: String = std::iter::successors(std::error::Error::source(&e), |c| c.source())
        .map(|c| format!(": {c}"))
        .collect();
    assert_eq!(
        ours.to_string(),
        format!("server: cannot do it: {e}{causes}")
    );
}
