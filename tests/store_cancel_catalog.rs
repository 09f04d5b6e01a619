//! Cancellation of the loops over sessions (issue 19 calls under an issue-18
//! token) on JSONL and SQLite: a rich listing, a search and a prune of 60
//! sessions cancelled part-way (after a few checkpoints) return `Cancelled`
//! and change nothing (a cancelled prune deletes no session; a cancelled
//! search is not reported as skipped sessions); with no token each finishes.

mod support;

use dsh_persist::ErrorKind;
use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::catalog::{ListQuery, SearchQuery};
use dsh_persist::store::{
    BackendConfig, Cancel, JsonlConfig, PruneOptions, SqliteConfig, Store, StoreConfig,
};
use support::TempDir;
use support::conv::complete_turn;

const SESSIONS: usize = 60;

fn open(sqlite: bool, dir: &TempDir) -> Store {
    let backend = if sqlite {
        BackendConfig::Sqlite(SqliteConfig::new(
            dir.path().join("sessions.db").display().to_string(),
        ))
    } else {
        BackendConfig::Jsonl(JsonlConfig::new(dir.path().join("root")))
    };
    Store::open(StoreConfig::with_backend(backend)).unwrap()
}

fn check(sqlite: bool) {
    let dir = TempDir::new("cancel-catalog");
    let cache = TempDir::new("cancel-catalog-cache");
    let store = open(sqlite, &dir);
    for i in 0..SESSIONS {
        let s = store
            .start(SessionHeader::new(format!("s{i:03}"), 1_785_000_000_000))
            .unwrap();
        complete_turn(&s, 1);
        s.close().unwrap();
    }
    let mut query = SearchQuery::new("question 1");
    query.cache_dir = Some(cache.path().to_path_buf());
    query.limit = 10_000;
    let prune = PruneOptions {
        keep_newest: Some(1),
        ..PruneOptions::default()
    };
    // A few checkpoints in: past the listing, inside the loop over sessions.
    for after in [3, 20] {
        let e = Cancel::after_checkpoints(after)
            .scope(|| store.list_summaries(&ListQuery::default()))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
        let e = Cancel::after_checkpoints(after)
            .scope(|| store.search(&query, &mut |_, _| {}))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
        let e = Cancel::after_checkpoints(after)
            .scope(|| store.prune(&prune, &mut |_, _| {}))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
        assert_eq!(store.list().unwrap().len(), SESSIONS, "nothing deleted");
    }
    assert_eq!(
        store.list_summaries(&ListQuery::default()).unwrap().len(),
        SESSIONS
    );
    let found = store.search(&query, &mut |_, _| {}).unwrap();
    assert!(found.skipped.is_empty());
    assert_eq!(
        found
            .hits
            .iter()
            .map(|h| &h.id)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        SESSIONS
    );
    assert_eq!(
        store.prune(&prune, &mut |_, _| {}).unwrap().deleted.len(),
        SESSIONS - 1
    );
}

#[test]
fn cancel_catalog_loops_jsonl() {
    check(false);
}

#[test]
fn cancel_catalog_loops_sqlite() {
    check(true);
}
