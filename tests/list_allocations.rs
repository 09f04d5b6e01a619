//! `Store::listing` does not allocate per listed session (issue 16: on a
//! heap a long-running host has fragmented, two allocations per header were
//! most of a SQLite `list(1000)`). Counted with a counting allocator, on
//! this test's thread only; the figure it guards is in `dsh-persist bench`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::{BackendConfig, SqliteConfig, Store, StoreConfig};

mod support;

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; the counters are plain
// thread-local cells (no allocation of their own).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.with(|n| n.set(n.get() + 1));
        }
        // SAFETY: the caller's contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.with(|n| n.set(n.get() + 1));
        }
        // SAFETY: the caller's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The allocations `f` makes on this thread (SQLite's own go through
/// `malloc` directly and are not counted).
fn allocations<T>(f: impl FnOnce() -> T) -> (T, u64) {
    ALLOCATIONS.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    let out = f();
    COUNTING.with(|c| c.set(false));
    (out, ALLOCATIONS.with(Cell::get))
}

const SESSIONS: usize = 1000;

fn header(i: usize) -> SessionHeader {
    let mut h = SessionHeader::new(format!("session-{i:04}"), 1_785_000_000_000 + i as u64);
    // A few sessions are not plain: a sub-agent's, one without a cwd.
    match i % 250 {
        7 => {
            h.parent_session = Some("session-0000".into());
            h.origin = Some("subagent".into());
            h.delegation_depth = Some(1);
            h.cwd = Some("/home/user/project".into());
        }
        8 => {}
        _ => h.cwd = Some(format!("/home/user/project-{i}")),
    }
    h
}

#[test]
fn a_sqlite_listing_allocates_a_few_blocks_not_one_per_session() {
    let tmp = support::TempDir::new("list-allocs");
    let db = tmp.path().join("sessions.db");
    let config = StoreConfig::with_backend(BackendConfig::Sqlite(SqliteConfig::new(
        db.to_string_lossy().into_owned(),
    )));
    let store = Store::open(config.clone()).unwrap();
    let headers: Vec<SessionHeader> = (0..SESSIONS).map(header).collect();
    let event = dsh_persist::model::event::Event::parse(
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#,
    )
    .unwrap();
    for h in &headers {
        store.create(h.clone()).unwrap();
        store.append(&h.id, vec![event.clone()]).unwrap();
    }
    store.close().unwrap();

    let store = Store::open(config).unwrap();
    // Warm: the statement compiled at open; a first call may size caches.
    store.listing().unwrap();
    let (list, packed) = allocations(|| store.listing().unwrap());
    assert_eq!(list, headers, "the listing holds every header, in order");
    assert_eq!(list.to_json(), {
        let each: Vec<String> = headers.iter().map(SessionHeader::to_json).collect();
        format!("[{}]", each.join(","))
    });
    // The packed list: its buffers grow by doubling, each non-plain header
    // is boxed whole (4 here, 4 blocks each at most); far below one per
    // session.
    assert!(
        packed < 100,
        "listing {SESSIONS} sessions made {packed} allocations"
    );
    // As headers of their own: two blocks per session with a cwd, the
    // measure the packed list is for.
    let (vec, owned) = allocations(|| store.list().unwrap());
    assert_eq!(vec, headers);
    assert!(
        owned >= 2 * SESSIONS as u64 - 10,
        "Store::list made {owned} allocations"
    );
}
