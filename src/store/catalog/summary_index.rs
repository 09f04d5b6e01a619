//! The summary index: the rich listing's rows ([`SessionSummary`]) kept by
//! the revision token of the log state they were computed from, so that a
//! listing reads a window only of the sessions that changed since. A
//! session without a `session/title` event costs a walk of its whole log
//! (the window looks for the last title back to the header), so without it
//! a picker over many long sessions reads every log at every start.
//!
//! It is a cache only, like the search index ([`super::search_index`]): an
//! entry is used only under the revision token the listing reads for the
//! session now, and the header always comes from that listing, never from
//! the cache. In memory (per process, bounded by entry count), and on disk
//! in the store's cache directory as one file for the store
//! (`<cache dir>/summaries/catalog.idx`: written to a temporary name and
//! renamed, never fsynced; a file whose hash does not match its bytes is a
//! miss). Two processes that write it at once each rename a whole file:
//! the last one wins, and the other's entries are read again next time.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use once_cell::sync::Lazy;
use parking_lot::Mutex;

use super::summary::SessionSummary;
use crate::backend::Revision;
use crate::model::binary::{Input, put_str, put_u64};
use crate::model::header::SessionHeader;
use crate::store::cache_files;

const MAGIC: &[u8] = b"dsh-persist summary index 1\n";

/// Entries kept in memory before the map is emptied and filled anew (a
/// summary holds at most a title and two prompts of 160 characters
/// besides its header: tens of MB at most).
const MEMORY_ENTRIES: usize = 50_000;

/// The largest index file read back: a file longer than this is a miss.
/// A summary keeps at most two prompts of 160 characters, a title and a
/// few numbers: 256 MiB is over 100,000 sessions of long titles.
const MAX_FILE_BYTES: u64 = 256 << 20;

static MEMORY: Lazy<Mutex<HashMap<Revision, Arc<SessionSummary>>>> =
    Lazy::new(|| Mutex::new(HashMap::new()));

/// The summary held in memory for `revision`, with `header` (the
/// listing's) in place of the cached one.
pub fn memory_get(revision: &Revision, header: &SessionHeader) -> Option<SessionSummary> {
    let held = MEMORY.lock().get(revision).cloned()?;
    Some(with_header(&held, header))
}

pub fn memory_put(summary: &SessionSummary) {
    let mut m = MEMORY.lock();
    if m.len() >= MEMORY_ENTRIES {
        m.clear();
    }
    m.insert(summary.revision.clone(), Arc::new(summary.clone()));
}

/// Empties this process's memory of summaries, and removes the index
/// file under `dir` when given: the next listing reads every window (the
/// benchmark's cold listing).
pub fn forget(dir: Option<&Path>) {
    MEMORY.lock().clear();
    if let Some(dir) = dir {
        let _ = std::fs::remove_file(file_of(dir));
    }
}

fn with_header(held: &SessionSummary, header: &SessionHeader) -> SessionSummary {
    SessionSummary {
        header: header.clone(),
        created_at: header.created_at as i64,
        ..held.clone()
    }
}

/// The summary index as one listing uses it: the file's rows, loaded
/// once, and whether a row changed.
pub struct Listing {
    dir: Option<PathBuf>,
    stored: HashMap<String, SessionSummary>,
    dirty: bool,
}

impl Listing {
    /// Loads the index file under `dir` (none: memory only); the rows of
    /// sessions not in `listed` (every stored session) go.
    pub fn open(dir: Option<PathBuf>, listed: &[(SessionHeader, Revision)]) -> Listing {
        let mut stored = dir.as_deref().map(load).unwrap_or_default();
        let before = stored.len();
        let ids: HashSet<&str> = listed.iter().map(|(h, _)| h.id.as_str()).collect();
        stored.retain(|id, _| ids.contains(id.as_str()));
        let dirty = stored.len() != before;
        Listing { dir, stored, dirty }
    }

    /// The summary of the session of `header` at `revision`, when memory
    /// or the file holds one, with `header` as its header.
    pub fn get(&self, header: &SessionHeader, revision: &Revision) -> Option<SessionSummary> {
        memory_get(revision, header).or_else(|| {
            self.stored
                .get(&header.id)
                .filter(|row| &row.revision == revision)
                .map(|row| with_header(row, header))
        })
    }

    /// Notes a summary the listing returns; `read` when it comes from a
    /// window (it goes to memory too).
    pub fn note(&mut self, summary: &SessionSummary, read: bool) {
        if read {
            memory_put(summary);
        }
        let id = &summary.header.id;
        if self.stored.get(id).map(|row| &row.revision) != Some(&summary.revision) {
            self.stored.insert(id.clone(), summary.clone());
            self.dirty = true;
        }
    }

    /// Writes the file when a row changed or went.
    pub fn finish(self) {
        if let (true, Some(dir)) = (self.dirty, &self.dir) {
            save(dir, &self.stored);
        }
    }
}

/// The index file under the cache directory `dir`.
pub fn file_of(dir: &Path) -> PathBuf {
    dir.join("summaries").join("catalog.idx")
}

/// The rows of the index file under `dir`, by session id; empty when there
/// is none or it is damaged. The file keeps no header: a row's header is
/// a placeholder (its id, created at 0), replaced by the listing's before
/// the row is used ([`Listing::get`]).
pub fn load(dir: &Path) -> HashMap<String, SessionSummary> {
    cache_files::read_at_most(&file_of(dir), MAX_FILE_BYTES)
        .and_then(|bytes| decode(&bytes))
        .unwrap_or_default()
}

/// The rows of index file bytes ([`encode`]'s) when they are intact.
pub fn decode(bytes: &[u8]) -> Option<HashMap<String, SessionSummary>> {
    parse(Input(cache_files::unsealed(bytes, MAGIC)?))
}

fn opt_str(inp: &mut Input<'_>) -> Option<Option<String>> {
    match inp.u8()? {
        0 => Some(None),
        1 => Some(Some(inp.str()?.to_string())),
        _ => None,
    }
}

fn parse(mut inp: Input<'_>) -> Option<HashMap<String, SessionSummary>> {
    let n = inp.count(MIN_ROW_BYTES)?;
    let mut out = HashMap::with_capacity(n);
    for _ in 0..n {
        let id = inp.str()?.to_string();
        let row = SessionSummary {
            header: SessionHeader::new(&id, 0),
            created_at: 0,
            revision: Revision(inp.str()?.to_string()),
            updated_at: inp.i64()?,
            event_count: inp.u64()?,
            turn_count: inp.u64()?,
            title: opt_str(&mut inp)?,
            first_prompt: opt_str(&mut inp)?,
            last_prompt: opt_str(&mut inp)?,
            open_turn: match inp.u8()? {
                0 => false,
                1 => true,
                _ => return None,
            },
            bytes: inp.u64()?,
        };
        out.insert(id, row);
    }
    // Trailing bytes: not a file this build wrote.
    inp.take(1).is_none().then_some(out)
}

/// The fewest bytes a row of [`save`] takes: the id's and the revision's
/// lengths, four numbers, three absent texts, the open-turn flag.
const MIN_ROW_BYTES: usize = 8 + 8 + 8 * 4 + 3 + 1;

fn put_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.push(0),
        Some(s) => {
            out.push(1);
            put_str(out, s);
        }
    }
}

/// Writes the index file under `dir` (best effort: a cache that cannot be
/// written is rebuilt next time).
pub fn save(dir: &Path, rows: &HashMap<String, SessionSummary>) {
    cache_files::write_private(&file_of(dir), &encode(rows));
}

/// The bytes of an index file of `rows` (in id order).
pub fn encode(rows: &HashMap<String, SessionSummary>) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + rows.len() * 256);
    out.extend_from_slice(MAGIC);
    put_u64(&mut out, rows.len() as u64);
    let mut ids: Vec<&String> = rows.keys().collect();
    ids.sort();
    for id in ids {
        let r = &rows[id];
        put_str(&mut out, id);
        put_str(&mut out, &r.revision.0);
        put_u64(&mut out, r.updated_at as u64);
        put_u64(&mut out, r.event_count);
        put_u64(&mut out, r.turn_count);
        put_opt_str(&mut out, r.title.as_deref());
        put_opt_str(&mut out, r.first_prompt.as_deref());
        put_opt_str(&mut out, r.last_prompt.as_deref());
        out.push(u8::from(r.open_turn));
        put_u64(&mut out, r.bytes);
    }
    cache_files::sealed(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, i: u64, title: Option<&str>) -> SessionSummary {
        SessionSummary {
            header: SessionHeader::new(id, 0),
            created_at: 0,
            revision: Revision(format!("rev-{i}")),
            updated_at: -5 + i as i64,
            event_count: 10 * i,
            turn_count: i,
            title: title.map(str::to_string),
            first_prompt: Some(format!("first {i}")),
            last_prompt: None,
            open_turn: i % 2 == 1,
            bytes: 1000 + i,
        }
    }

    #[test]
    fn rows_come_back_as_saved_and_a_damaged_file_is_a_miss() {
        let dir = std::env::temp_dir().join(format!(
            "dsh-summary-index-{}-{}",
            std::process::id(),
            crate::backend::jsonl::revision::random_u64()
        ));
        assert!(load(&dir).is_empty());
        let rows: HashMap<String, SessionSummary> = [
            row("a", 1, Some("A title")),
            row("b", 2, None),
            row("é", 3, Some("")),
        ]
        .into_iter()
        .map(|r| (r.header.id.clone(), r))
        .collect();
        let values = |rows: &HashMap<String, SessionSummary>| {
            let mut v: Vec<_> = rows.values().map(SessionSummary::to_value).collect();
            v.sort_by_key(|v| v["id"].to_string());
            v
        };
        save(&dir, &rows);
        assert_eq!(values(&load(&dir)), values(&rows));
        // One byte changed anywhere: the hash no longer matches.
        let path = file_of(&dir);
        let good = std::fs::read(&path).unwrap();
        for at in [MAGIC.len(), good.len() / 2, good.len() - 1] {
            let mut bad = good.clone();
            bad[at] ^= 0x20;
            std::fs::write(&path, &bad).unwrap();
            assert!(load(&dir).is_empty(), "byte {at}");
        }
        // Cut short: a miss too.
        std::fs::write(&path, &good[..good.len() - 3]).unwrap();
        assert!(load(&dir).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
