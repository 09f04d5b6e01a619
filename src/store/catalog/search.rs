//! Full-text search over the message text of every session (user and
//! assistant text, tool results): [`Store::search`]. Matching is a
//! substring match of the whole query, case-insensitive for ASCII letters.
//! Each session's texts come from the search index
//! ([`super::search_index`]) when it holds the session's current revision,
//! else from a read of the log (`read_from(id, 0)`: no lock, no repair),
//! which then refreshes the index.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};

use super::search_index::{self, Doc, Docs};
use super::text::event_text;
use crate::backend::parallel::fill_in_order;
use crate::error::{Error, Result};
use crate::store::Store;

/// Sessions whose texts are read (on two threads where the backend reads
/// side by side) before they are matched and counted in the progress.
const SEARCH_BATCH: usize = 32;

/// What to look for.
#[derive(Clone, Debug)]
pub struct SearchQuery {
    pub text: String,
    /// At most this many hits (default 100).
    pub limit: usize,
    /// Only sessions whose header `cwd` is this.
    pub cwd: Option<String>,
    /// The index directory instead of the store's own (PostgreSQL has
    /// none; without one its index lives in this process's memory only).
    pub cache_dir: Option<PathBuf>,
}

impl SearchQuery {
    pub fn new(text: impl Into<String>) -> SearchQuery {
        SearchQuery {
            text: text.into(),
            limit: 100,
            cwd: None,
            cache_dir: None,
        }
    }

    /// `{text, limit?, cwd?, cacheDir?}` or a bare JSON string.
    pub fn from_json(text: &str) -> Result<SearchQuery> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| Error::invalid(format!("search query is not JSON: {e}")))?;
        if let Some(s) = v.as_str() {
            return Ok(SearchQuery::new(s));
        }
        let obj = v
            .as_object()
            .ok_or_else(|| Error::invalid("search query must be a JSON object or string"))?;
        let mut q = SearchQuery::new("");
        let mut has_text = false;
        for (k, val) in obj {
            let bad = || Error::invalid(format!("search query field {k} has a wrong type"));
            match k.as_str() {
                "text" => {
                    q.text = val.as_str().ok_or_else(bad)?.to_string();
                    has_text = true;
                }
                "limit" => q.limit = val.as_u64().ok_or_else(bad)? as usize,
                "cwd" => q.cwd = Some(val.as_str().ok_or_else(bad)?.to_string()),
                "cacheDir" => q.cache_dir = Some(PathBuf::from(val.as_str().ok_or_else(bad)?)),
                _ => {
                    return Err(Error::invalid(format!(
                        "search query has an unknown field {k}"
                    )));
                }
            }
        }
        if !has_text {
            return Err(Error::invalid("search query needs a text field"));
        }
        Ok(q)
    }
}

/// One match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchHit {
    pub id: String,
    pub seq: u64,
    pub role: &'static str,
    /// Up to [`SNIPPET_CHARS`] characters around the match, on one line.
    pub snippet: String,
}

/// Characters of context on each side of a match in a snippet.
pub const SNIPPET_CHARS: usize = 60;

/// What a search found and did.
#[derive(Clone, Debug, Default)]
pub struct SearchResult {
    pub hits: Vec<SearchHit>,
    pub sessions: usize,
    /// Sessions whose index entry was (re)built by this search.
    pub indexed: usize,
    /// Sessions that could not be read (id and error), left out.
    pub skipped: Vec<(String, String)>,
    /// More hits than `limit` exist.
    pub truncated: bool,
}

impl SearchResult {
    pub fn to_value(&self) -> Value {
        json!({
            "hits": self.hits.iter().map(|h| json!({
                "id": h.id, "seq": h.seq, "role": h.role, "snippet": h.snippet,
            })).collect::<Vec<_>>(),
            "sessions": self.sessions,
            "indexed": self.indexed,
            "truncated": self.truncated,
            "skipped": self.skipped.iter().map(|(id, e)| json!({"id": id, "error": e})).collect::<Vec<_>>(),
        })
    }
}

fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .collect()
}

/// The snippet of `text` around the byte range `at..at+len`.
fn snippet(text: &str, at: usize, len: usize) -> String {
    let before: Vec<(usize, char)> = text[..at]
        .char_indices()
        .rev()
        .take(SNIPPET_CHARS)
        .collect();
    let start = before.last().map_or(at, |(i, _)| *i);
    let end = text[at + len..]
        .char_indices()
        .nth(SNIPPET_CHARS)
        .map_or(text.len(), |(i, _)| at + len + i);
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.push_str(&one_line(&text[start..end]));
    if end < text.len() {
        out.push('…');
    }
    out
}

impl Store {
    /// The texts of session `id` at `revision`, from the index or a read.
    fn search_docs(
        &self,
        id: &str,
        revision: &crate::backend::Revision,
        dir: Option<&std::path::Path>,
    ) -> Result<(Docs, bool)> {
        if let Some(d) = search_index::memory_get(revision) {
            return Ok((d, false));
        }
        let max_log_bytes = self.config().backend.limits().max_log_bytes;
        if let Some(d) = dir.and_then(|dir| search_index::load(dir, id, revision, max_log_bytes)) {
            search_index::memory_put(revision, &d);
            return Ok((d, false));
        }
        let view = self.read_from(id, 0)?;
        let docs: Vec<Doc> = view
            .events
            .iter()
            .filter_map(|e| event_text(e).map(|(role, text)| Doc::new(e.seq, role, text)))
            .collect();
        // The revision of what was read: the listing's token may be older
        // (the log grew since); an entry is only stored under the token it
        // belongs to, so it is checked again.
        if self.backend().revision(id)?.as_ref() == Some(revision) {
            if let Some(dir) = dir {
                search_index::save(dir, id, revision, &docs);
            }
            let docs = Arc::new(docs);
            search_index::memory_put(revision, &docs);
            return Ok((docs, true));
        }
        Ok((Arc::new(docs), true))
    }

    /// Searches every session (see the module docs). `progress(done,
    /// total)` is called after each session.
    pub fn search(
        &self,
        query: &SearchQuery,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<SearchResult> {
        if query.text.is_empty() {
            return Err(Error::invalid("search text must not be empty"));
        }
        let needle = query.text.to_ascii_lowercase();
        let finder = memchr::memmem::Finder::new(needle.as_bytes());
        let dir = query
            .cache_dir
            .clone()
            .or_else(|| self.backend().cache_dir());
        let mut snapshots = self.list_snapshots()?;
        if let Some(cwd) = &query.cwd {
            snapshots.retain(|(h, _)| h.cwd.as_ref() == Some(cwd));
        }
        let total = snapshots.len();
        let mut result = SearchResult {
            sessions: total,
            ..SearchResult::default()
        };
        // Texts the index holds in memory are taken here; the others are
        // read, on two threads where the backend reads side by side
        // (`Backend::concurrent_reads`) and two or more of a batch are
        // left. Matching and progress go in session order.
        let two_threads = self.backend().concurrent_reads();
        let mut done = 0;
        for batch in snapshots.chunks(SEARCH_BATCH) {
            crate::store::cancel::checkpoint()?;
            let held: Vec<Option<Result<(Docs, bool)>>> = batch
                .iter()
                .map(|(_, revision)| search_index::memory_get(revision).map(|d| Ok((d, false))))
                .collect();
            let read = fill_in_order(batch, held, two_threads, |(header, revision)| {
                crate::store::cancel::checkpoint()?;
                match self.search_docs(&header.id, revision, dir.as_deref()) {
                    // A cancelled search stops (it is not one session's
                    // failure).
                    Err(e) if e.kind() == crate::error::ErrorKind::Cancelled => Err(e),
                    other => Ok(other),
                }
            })?;
            for ((header, _), docs) in batch.iter().zip(read) {
                match_docs(&header.id, docs, &finder, &needle, query.limit, &mut result);
                done += 1;
                progress(done, total);
            }
        }
        Ok(result)
    }
}

/// Adds the hits of one session's texts (or its failure) to `result`.
fn match_docs(
    id: &str,
    docs: Result<(Docs, bool)>,
    finder: &memchr::memmem::Finder<'_>,
    needle: &str,
    limit: usize,
    result: &mut SearchResult,
) {
    match docs {
        Ok((docs, built)) => {
            result.indexed += usize::from(built);
            for d in docs.iter() {
                if let Some(at) = finder.find(d.folded.as_bytes()) {
                    if result.hits.len() == limit {
                        result.truncated = true;
                        break;
                    }
                    result.hits.push(SearchHit {
                        id: id.to_string(),
                        seq: d.seq,
                        role: d.role.name(),
                        snippet: snippet(&d.text, at, needle.len()),
                    });
                }
            }
        }
        Err(e) if e.kind() == crate::error::ErrorKind::NotFound => {}
        Err(e) => result.skipped.push((id.to_string(), e.to_string())),
    }
}
