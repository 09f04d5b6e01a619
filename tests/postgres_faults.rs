//! A `COMMIT` whose reply is lost (the connection broke just after the
//! server committed) must not store the batch twice: the retry finds it
//! stored and reports success (`--features fault-injection`; needs
//! `DSH_TEST_POSTGRES_URL`).

mod support;

use dsh_persist::backend::postgres::PostgresBackend;
use dsh_persist::backend::{Backend, Expect, StoredLog};
use dsh_persist::fault::{self, Op, Plan};
use dsh_persist::model::event::Event;
use dsh_persist::model::header::SessionHeader;
use support::pg::Schema;

fn events(from: u64, n: u64) -> Vec<Event> {
    (from..from + n)
        .map(|seq| {
            Event::parse(&format!(
                r#"{{"type":"session/title","seq":{seq},"time":{seq},"data":{{"title":"t{seq}"}}}}"#
            ))
            .unwrap()
        })
        .collect()
}

fn rows(schema: &Schema) -> i64 {
    schema
        .admin()
        .query_one("SELECT count(*) FROM events", &[])
        .unwrap()
        .get(0)
}

#[test]
fn a_lost_commit_reply_is_not_a_duplicate_batch() {
    let Some(url) = support::pg::url("a_lost_commit_reply_is_not_a_duplicate_batch") else {
        return;
    };
    let schema = Schema::new(&url, "lostreply");
    let be = PostgresBackend::open(&schema.config()).unwrap();
    let h = SessionHeader::new("s", 1);
    // The first append's reply is lost: the retry finds the new session.
    let armed = fault::arm(Plan::once(1));
    let rev = be.append(&h, &events(0, 4), Expect::New).unwrap();
    assert_eq!(armed.fired(), vec![(1, Op::PostgresCommitReply)]);
    drop(armed);
    assert_eq!(rows(&schema), 4);
    assert_eq!(be.revision("s").unwrap().as_ref(), Some(&rev));
    // And on a later batch.
    let armed = fault::arm(Plan::once(1));
    let rev2 = be.append(&h, &events(4, 3), Expect::At(&rev)).unwrap();
    assert_eq!(armed.fired().len(), 1);
    drop(armed);
    assert_eq!(rows(&schema), 7);
    let log: StoredLog = be.read("s").unwrap().unwrap();
    assert_eq!(log.events.len(), 7);
    assert_eq!(log.revision, rev2);
    // A repair whose reply is lost: committed once, reported as done.
    let closers = events(7, 2);
    let armed = fault::arm(Plan::once(1));
    let rev3 = be.commit_repair("s", &log, &closers).unwrap();
    assert_eq!(armed.fired().len(), 1);
    drop(armed);
    assert_eq!(be.read("s").unwrap().unwrap().events.len(), 9);
    assert_eq!(be.revision("s").unwrap(), Some(rev3));
    // Replies lost from now on: the first attempt commits, the retry finds
    // the batch and runs no second COMMIT.
    let armed = fault::arm(Plan::sticky(1));
    let rev3 = be.revision("s").unwrap().unwrap();
    be.append(&h, &events(9, 1), Expect::At(&rev3)).unwrap();
    assert_eq!(armed.fired().len(), 1);
    drop(armed);
    assert_eq!(rows(&schema), 10);
}
