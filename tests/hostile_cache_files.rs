//! The store's cache files (summary index, search index, append
//! checkpoint) are read back from a directory any process of the user can
//! write, and their hash is an integrity check, not a secret: a crafted
//! file passes it. Such a file may make a read a miss, never a large
//! allocation: a count of items is refused before anything is reserved
//! for it when the items cannot fit in the bytes that follow
//! (`Input::count`). Measured with an allocator that records the largest
//! request made on this test's thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use dsh_persist::backend::Revision;
use dsh_persist::model::binary::{put_str, put_u64};
use dsh_persist::model::validate::LogState;
use dsh_persist::store::append_checkpoint;
use dsh_persist::store::cache_files;
use dsh_persist::store::catalog::{search_index, summary_index};

mod support;

struct Largest;

thread_local! {
    static WATCHING: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    if WATCHING.with(Cell::get) {
        LARGEST.with(|l| l.set(l.get().max(size)));
    }
}

// SAFETY: forwards to the system allocator; the record is two plain
// thread-local cells (no allocation of their own).
unsafe impl GlobalAlloc for Largest {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: the caller's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Largest = Largest;

/// `f`'s result and the largest allocation it asked for on this thread.
fn largest_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    WATCHING.with(|w| w.set(true));
    let out = f();
    WATCHING.with(|w| w.set(false));
    (out, LARGEST.with(Cell::get))
}

/// Far below what presizing for a crafted count used to reserve (tens to
/// hundreds of MiB), far above what a read of these small files needs.
const SMALL: usize = 64 << 10;

/// Counts a crafted file may claim: more items than fit, by one or by far.
const COUNTS: [u64; 4] = [1, 1000, 1 << 40, u64::MAX];

#[test]
fn a_summary_index_claiming_more_rows_than_it_holds_is_a_miss_without_a_large_allocation() {
    let dir = support::TempDir::new("hostile-summary-index");
    let cache = dir.path().join("cache");
    for count in COUNTS {
        let mut body = b"dsh-persist summary index 1\n".to_vec();
        put_u64(&mut body, count);
        // Room for most of one row (a row takes 52 bytes at least).
        body.extend_from_slice(&[0; 40]);
        cache_files::write_private(&summary_index::file_of(&cache), &cache_files::sealed(body));
        let (rows, largest) = largest_allocation(|| summary_index::load(&cache));
        assert!(rows.is_empty(), "count {count}");
        assert!(largest < SMALL, "count {count}: {largest} bytes asked for");
    }
    // The same file with the count it holds (none) is read.
    let mut body = b"dsh-persist summary index 1\n".to_vec();
    put_u64(&mut body, 0);
    cache_files::write_private(&summary_index::file_of(&cache), &cache_files::sealed(body));
    assert!(summary_index::load(&cache).is_empty());
}

#[test]
fn a_search_index_claiming_more_texts_than_it_holds_is_a_miss_without_a_large_allocation() {
    let dir = support::TempDir::new("hostile-search-index");
    let cache = dir.path().join("cache");
    let revision = Revision("r1".into());
    let file = |count: u64, tail: &[u8]| {
        let mut body = b"dsh-persist search index 3\n".to_vec();
        put_str(&mut body, "s1");
        put_str(&mut body, &revision.0);
        put_u64(&mut body, count);
        body.extend_from_slice(tail);
        cache_files::write_private(
            &search_index::file_of(&cache, "s1"),
            &cache_files::sealed(body),
        );
    };
    for count in COUNTS {
        // Most of one text (seq, role, length: 17 bytes at least).
        file(count, &[0; 16]);
        let (docs, largest) =
            largest_allocation(|| search_index::load(&cache, "s1", &revision, 1 << 30));
        assert!(docs.is_none(), "count {count}");
        assert!(largest < SMALL, "count {count}: {largest} bytes asked for");
    }
    // One empty text in exactly its 17 bytes is read.
    let mut one = Vec::new();
    put_u64(&mut one, 7);
    one.push(0);
    put_u64(&mut one, 0);
    file(1, &one);
    let docs = search_index::load(&cache, "s1", &revision, 1 << 30).expect("a text");
    assert_eq!(docs.len(), 1);
    assert_eq!((docs[0].seq, docs[0].text.as_str()), (7, ""));
    // A byte after the last text: not a file this build wrote.
    one.push(0);
    file(1, &one);
    assert!(search_index::load(&cache, "s1", &revision, 1 << 30).is_none());
}

#[test]
fn a_log_state_claiming_more_calls_or_nodes_than_it_holds_is_refused_without_a_large_allocation() {
    let mut good = Vec::new();
    LogState::new().encode(&mut good);
    // The empty state ends with its two counts: open calls, then nodes.
    let nodes_at = good.len() - 8;
    let calls_at = nodes_at - 8;
    let decode = |bytes: &[u8]| LogState::decode(&mut dsh_persist::model::binary::Input(bytes));
    assert!(decode(&good).is_some());
    for at in [calls_at, nodes_at] {
        for count in COUNTS {
            let mut bad = good.clone();
            bad[at..at + 8].copy_from_slice(&count.to_le_bytes());
            // Most of one item after the counts.
            bad.extend_from_slice(&[0; 7]);
            let (state, largest) = largest_allocation(|| decode(&bad));
            assert!(state.is_none(), "count {count} at {at}");
            assert!(
                largest < SMALL,
                "count {count} at {at}: {largest} bytes asked for"
            );
        }
    }
}

/// A zstd frame holding `content` in one raw block, whose header states
/// `stated` bytes of content.
fn stated_frame(stated: u64, content: &[u8]) -> Vec<u8> {
    let mut f = vec![0x28, 0xb5, 0x2f, 0xfd];
    // Single segment, an 8-byte content size, no checksum.
    f.push(0b1110_0000);
    f.extend_from_slice(&stated.to_le_bytes());
    let block = ((content.len() as u32) << 3) | 1; // raw, last
    f.extend_from_slice(&block.to_le_bytes()[..3]);
    f.extend_from_slice(content);
    f
}

#[test]
fn an_append_checkpoint_stating_a_gigabyte_in_a_few_bytes_is_a_miss_without_a_large_allocation() {
    let dir = support::TempDir::new("hostile-checkpoint");
    let cache = dir.path().join("cache");
    let revision = Revision("r1".into());
    // The frame is well formed: stating its real size, it decodes.
    assert_eq!(
        zstd::bulk::decompress(&stated_frame(3, b"abc"), 3).unwrap(),
        b"abc"
    );
    for stated in [64u64, 1 << 20, 1 << 30, 3 << 30] {
        let path = append_checkpoint::file_of(&cache, "s1");
        cache_files::write_private(&path, &stated_frame(stated, b"abc"));
        assert!(path.exists());
        let (c, largest) =
            largest_allocation(|| append_checkpoint::load(&cache, "s1", &revision, "k", 4 << 30));
        assert!(c.is_none(), "stated {stated}");
        assert!(
            largest < SMALL,
            "stated {stated}: {largest} bytes asked for"
        );
    }
}
