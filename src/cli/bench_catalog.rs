//! The catalog figures of `dsh-persist bench` (issue 19): a store of N
//! sessions × 1,000 events (the workload's first 1,000 events each; N is
//! `--small-sessions`, default 1,000), then
//!
//! - `catalog.rich_list_best_ms`: a cold rich listing (`list_summaries`,
//!   windows only: the summary index emptied first), best of the runs;
//! - `catalog.rich_list_from_index_file_best_ms`: the same with the summary
//!   index file a previous listing left (as a fresh process finds it);
//! - `catalog.rich_list_from_index_memory_best_ms`: the same with the index
//!   this process holds in memory;
//! - `catalog.search_index_ms`: the first search, which builds the index
//!   (reading every log once and writing the cache, where the store has one);
//! - `catalog.search_best_ms`: a search for a common word (every hit
//!   collected) answered from the index, best of the runs (a fresh store
//!   handle; the index of this process stays warm).

use std::path::Path;
use std::time::Instant;

use dsh_persist::Error;
use dsh_persist::model::event::Event;
use dsh_persist::store::catalog::{ListQuery, SearchQuery, summary_index};
use dsh_persist::store::{Store, StoreConfig};

use super::progress::Progress;

/// Events per session of the catalog corpus.
pub const EVENTS_PER_SESSION: usize = 1000;

/// The catalog section's JSON object and its figures.
pub type CatalogFigures = (String, Vec<(&'static str, f64)>);

/// Measures the catalog figures on a new store made by `config` in `dir`.
/// Returns the JSON object and the figures.
pub fn measure(
    config: &dyn Fn(&Path) -> StoreConfig,
    name: &str,
    events: &[Event],
    sessions: usize,
    dir: &Path,
    runs: usize,
    progress: &Progress,
) -> Result<CatalogFigures, Error> {
    let per = events.len().min(EVENTS_PER_SESSION);
    let body = &events[..per];
    progress.phase(
        || format!("bench: {name} catalog"),
        || format!("{sessions} sessions of {per} events, then list and search"),
        sessions as u64 + 4 * runs as u64,
    );
    let store = Store::open(config(dir))?;
    for i in 0..sessions {
        let id = format!("catalog-{i:04}");
        let mut h = dsh_persist::model::header::SessionHeader::new(&id, 1_785_000_000_000);
        h.cwd = Some("/bench".into());
        store.create(h)?;
        store.append(&id, body.to_vec())?;
        progress.inc(1);
    }
    store.close()?;
    drop(store);
    super::bench::settle_disk(dir)?;
    // Cold: no summary index, neither in memory nor on disk (every
    // window read); then as a fresh process finds it (the file only);
    // then as this process holds it (memory).
    let cold_runs = rich_list_runs(config, dir, runs, sessions, progress, Index::None)?;
    let file_runs = rich_list_runs(config, dir, runs, sessions, progress, Index::File)?;
    let memory_runs = rich_list_runs(config, dir, runs, sessions, progress, Index::Memory)?;
    // A common word, every hit collected (no early stop at a limit): the
    // whole index is scanned.
    let needle = "the";
    let query = SearchQuery {
        limit: usize::MAX,
        ..SearchQuery::new(needle)
    };
    let store = Store::open(config(dir))?;
    let t = Instant::now();
    let first = store.search(&query, &mut |_, _| {})?;
    let index_ms = t.elapsed().as_secs_f64() * 1000.0;
    drop(store);
    let mut search_runs = Vec::new();
    let mut hits = first.hits.len();
    for _ in 0..runs {
        let store = Store::open(config(dir))?;
        let t = Instant::now();
        let r = store.search(&query, &mut |_, _| {})?;
        search_runs.push(t.elapsed().as_secs_f64() * 1000.0);
        hits = r.hits.len();
        progress.inc(1);
    }
    let best = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let (list_best, search_best) = (best(&cold_runs), best(&search_runs));
    let (file_best, memory_best) = (best(&file_runs), best(&memory_runs));
    let fmt = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{:.2}", x))
            .collect::<Vec<_>>()
            .join(",")
    };
    let json = format!(
        "{{\"sessions\":{sessions},\"events_per_session\":{per},\"rich_list_runs_ms\":[{}],\"rich_list_best_ms\":{:.2},\"rich_list_from_index_file_runs_ms\":[{}],\"rich_list_from_index_file_best_ms\":{:.2},\"rich_list_from_index_memory_runs_ms\":[{}],\"rich_list_from_index_memory_best_ms\":{:.2},\"search_query\":\"{needle}\",\"search_hits\":{hits},\"search_index_ms\":{:.1},\"search_runs_ms\":[{}],\"search_best_ms\":{:.2}}}",
        fmt(&cold_runs),
        list_best,
        fmt(&file_runs),
        file_best,
        fmt(&memory_runs),
        memory_best,
        index_ms,
        fmt(&search_runs),
        search_best,
    );
    Ok((
        json,
        vec![
            ("catalog.rich_list_best_ms", list_best),
            ("catalog.rich_list_from_index_file_best_ms", file_best),
            ("catalog.rich_list_from_index_memory_best_ms", memory_best),
            ("catalog.search_index_ms", index_ms),
            ("catalog.search_best_ms", search_best),
        ],
    ))
}

/// What of the summary index a timed rich listing finds.
#[derive(Clone, Copy)]
enum Index {
    /// Nothing: every window is read.
    None,
    /// The file in the cache directory, as a fresh process finds it.
    File,
    /// This process's memory.
    Memory,
}

/// `runs` rich listings, each on a fresh store handle, timed; before each,
/// the summary index is set to `index` (a listing outside the timer fills
/// it).
fn rich_list_runs(
    config: &dyn Fn(&Path) -> StoreConfig,
    dir: &Path,
    runs: usize,
    sessions: usize,
    progress: &Progress,
    index: Index,
) -> Result<Vec<f64>, Error> {
    let mut out = Vec::new();
    for _ in 0..runs {
        let store = Store::open(config(dir))?;
        let cache = store.backend().cache_dir();
        match index {
            Index::None => summary_index::forget(cache.as_deref()),
            Index::File => {
                store.list_summaries(&ListQuery::default())?;
                summary_index::forget(None);
            }
            Index::Memory => {
                store.list_summaries(&ListQuery::default())?;
            }
        }
        let t = Instant::now();
        let rows = store.list_summaries(&ListQuery::default())?;
        out.push(t.elapsed().as_secs_f64() * 1000.0);
        if rows.len() != sessions {
            return Err(Error::invariant(format!(
                "bench: the rich list returned {} sessions, not {sessions}",
                rows.len()
            )));
        }
        progress.inc(1);
    }
    Ok(out)
}
