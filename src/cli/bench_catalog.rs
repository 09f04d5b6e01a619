//! The catalog figures of `dsh-persist bench` (issue 19): a store of N
//! sessions × 1,000 events (the workload's first 1,000 events each; N is
//! `--small-sessions`, default 1,000), then
//!
//! - `catalog.rich_list_best_ms`: a cold rich listing (`list_summaries`,
//!   windows only), best of the runs;
//! - `catalog.search_index_ms`: the first search, which builds the index
//!   (reading every log once and writing the cache, where the store has one);
//! - `catalog.search_best_ms`: a search for a common word (every hit
//!   collected) answered from the index, best of the runs (a fresh store
//!   handle; the index of this process stays warm).

use std::path::Path;
use std::time::Instant;

use dsh_persist::Error;
use dsh_persist::model::event::Event;
use dsh_persist::store::catalog::{ListQuery, SearchQuery};
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
        sessions as u64 + 2 * runs as u64,
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
    let mut list_runs = Vec::new();
    for _ in 0..runs {
        let store = Store::open(config(dir))?;
        let t = Instant::now();
        let rows = store.list_summaries(&ListQuery::default())?;
        list_runs.push(t.elapsed().as_secs_f64() * 1000.0);
        if rows.len() != sessions {
            return Err(Error::invariant(format!(
                "bench: the rich list returned {} sessions, not {sessions}",
                rows.len()
            )));
        }
        progress.inc(1);
    }
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
    let (list_best, search_best) = (best(&list_runs), best(&search_runs));
    let fmt = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{:.2}", x))
            .collect::<Vec<_>>()
            .join(",")
    };
    let json = format!(
        "{{\"sessions\":{sessions},\"events_per_session\":{per},\"rich_list_runs_ms\":[{}],\"rich_list_best_ms\":{:.2},\"search_query\":\"{needle}\",\"search_hits\":{hits},\"search_index_ms\":{:.1},\"search_runs_ms\":[{}],\"search_best_ms\":{:.2}}}",
        fmt(&list_runs),
        list_best,
        index_ms,
        fmt(&search_runs),
        search_best,
    );
    Ok((
        json,
        vec![
            ("catalog.rich_list_best_ms", list_best),
            ("catalog.search_index_ms", index_ms),
            ("catalog.search_best_ms", search_best),
        ],
    ))
}
