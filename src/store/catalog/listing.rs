//! The rich listing: [`Store::list_summaries`], sorted and filtered.

use serde_json::Value;

use super::summary::{SUMMARY_SPEC, SessionSummary};
use super::summary_index;
use crate::backend::Revision;
use crate::backend::parallel::fill_in_order;
use crate::error::{Error, Result};
use crate::model::header::SessionHeader;
use crate::model::json::quote;
use crate::store::Store;

/// What the listing sorts by (newest first unless `ascending`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortKey {
    #[default]
    Updated,
    Created,
}

/// Sorting and filters of a rich listing.
#[derive(Clone, Debug, Default)]
pub struct ListQuery {
    pub sort: SortKey,
    pub ascending: bool,
    /// Only sessions whose header `cwd` is this.
    pub cwd: Option<String>,
    /// Only sessions updated at or after this time (ms since the epoch).
    pub updated_since: Option<i64>,
    /// Only forks of this session (header `parentSession`).
    pub parent: Option<String>,
    /// At most this many (after sorting).
    pub limit: Option<usize>,
}

impl ListQuery {
    /// `{sort?: "updated"|"created", ascending?, cwd?, updatedSince?,
    /// parent?, limit?}`; `""`/`null` means the defaults.
    pub fn from_json(text: &str) -> Result<ListQuery> {
        let mut q = ListQuery::default();
        if text.trim().is_empty() {
            return Ok(q);
        }
        let v: Value = serde_json::from_str(text)
            .map_err(|e| Error::invalid(format!("list query is not JSON: {e}")))?;
        if v.is_null() {
            return Ok(q);
        }
        let obj = v
            .as_object()
            .ok_or_else(|| Error::invalid("list query must be a JSON object"))?;
        for (k, val) in obj {
            let bad = || Error::invalid(format!("list query field {k} has a wrong type"));
            match k.as_str() {
                "sort" => {
                    q.sort = match val.as_str() {
                        Some("updated") => SortKey::Updated,
                        Some("created") => SortKey::Created,
                        _ => {
                            return Err(Error::invalid(
                                "list query sort must be \"updated\" or \"created\"",
                            ));
                        }
                    }
                }
                "ascending" => q.ascending = val.as_bool().ok_or_else(bad)?,
                "cwd" => q.cwd = Some(val.as_str().ok_or_else(bad)?.to_string()),
                "parent" => q.parent = Some(val.as_str().ok_or_else(bad)?.to_string()),
                "updatedSince" => q.updated_since = Some(val.as_i64().ok_or_else(bad)?),
                "limit" => q.limit = Some(val.as_u64().ok_or_else(bad)? as usize),
                _ => {
                    return Err(Error::invalid(format!(
                        "list query has an unknown field {k}"
                    )));
                }
            }
        }
        Ok(q)
    }
}

impl Store {
    /// The rich listing (see [`SessionSummary`]): per session a window of
    /// its log only (JSONL: head and tail frames or lines; SQLite and
    /// PostgreSQL: indexed rows), no lock, no repair; or, for a session
    /// whose revision token is the one a row of the summary index was
    /// computed from ([`super::summary_index`]), that row, with no read of
    /// its log. The live sessions of this store are flushed first. Sessions
    /// that vanish meanwhile are left out; one whose window cannot be read
    /// fails the listing with an error naming it (`session "id": …`, the
    /// first such session in `list` order). Windows are read on two
    /// threads where the backend reads side by side
    /// ([`crate::backend::Backend::concurrent_reads`]).
    pub fn list_summaries(&self, query: &ListQuery) -> Result<Vec<SessionSummary>> {
        self.flush_all_live()?;
        let snapshots = self.list_snapshots()?;
        let mut index = summary_index::Listing::open(self.backend().cache_dir(), &snapshots);
        let wanted: Vec<&(SessionHeader, Revision)> = snapshots
            .iter()
            .filter(|(header, _)| {
                query
                    .cwd
                    .as_ref()
                    .is_none_or(|c| header.cwd.as_ref() == Some(c))
                    && query
                        .parent
                        .as_ref()
                        .is_none_or(|p| header.parent_session.as_ref() == Some(p))
            })
            .collect();
        // A summary and whether it was read (`None`: the session vanished
        // since it was listed): from the index, or from a window. Windows
        // are read on two threads where the backend can; the outcome (the
        // summaries, or the first failing session's error in list order)
        // is a plain loop's.
        let held: Vec<Option<(Option<SessionSummary>, bool)>> = wanted
            .iter()
            .map(|(header, revision)| index.get(header, revision).map(|s| (Some(s), false)))
            .collect();
        let two_threads = self.backend().concurrent_reads();
        let found = fill_in_order(&wanted, held, two_threads, |(header, _)| {
            crate::store::cancel::checkpoint()?;
            match self.window_summary(&header.id) {
                Ok(summary) => Ok((summary, true)),
                Err(e) if e.kind() == crate::error::ErrorKind::Cancelled => Err(e),
                Err(e) => Err(e.context(&format!("session {}", quote(&header.id)))),
            }
        })?;
        let mut out = Vec::with_capacity(wanted.len());
        for (summary, read) in found {
            if let Some(summary) = summary {
                index.note(&summary, read);
                out.push(summary);
            }
        }
        index.finish();
        out.retain(|s| query.updated_since.is_none_or(|t| s.updated_at >= t));
        let key = |s: &SessionSummary| match query.sort {
            SortKey::Updated => (s.updated_at, s.created_at),
            SortKey::Created => (s.created_at, s.updated_at),
        };
        out.sort_by(|a, b| {
            let o = key(a)
                .cmp(&key(b))
                .then_with(|| a.header.id.cmp(&b.header.id));
            if query.ascending { o } else { o.reverse() }
        });
        if let Some(n) = query.limit {
            out.truncate(n);
        }
        Ok(out)
    }

    /// The summary of one session; `None` when it is not stored.
    pub fn summary(&self, id: &str) -> Result<Option<SessionSummary>> {
        self.flush_live(id)?;
        self.window_summary(id)
    }

    /// The summary of one session from a window of its log (a live
    /// session's acknowledged events flushed by the caller).
    fn window_summary(&self, id: &str) -> Result<Option<SessionSummary>> {
        Ok(self
            .backend()
            .read_window(id, &SUMMARY_SPEC)?
            .map(SessionSummary::from_window))
    }

    /// The id of the most recently updated session (`None`: no session).
    pub fn last_updated(&self) -> Result<Option<String>> {
        let q = ListQuery {
            limit: Some(1),
            ..ListQuery::default()
        };
        Ok(self
            .list_summaries(&q)?
            .into_iter()
            .next()
            .map(|s| s.header.id))
    }
}
