//! `prune`: retention by age and/or count. Each deletion is a
//! [`Store::delete`]; busy sessions are skipped and reported.
//!
//! "Updated" is the log file's mtime on JSONL (a `stat`; no read) and the
//! last event row's `time` on SQLite and PostgreSQL (one indexed row).

use crate::backend::manage::UpdatedSource;
use crate::error::{Error, ErrorKind, Result};
use crate::model::json::write_string;
use crate::store::Store;
use crate::store::coordinator::Registered;

/// What to prune. With both criteria a session is deleted only when both
/// say so (it is not among the newest `keep_newest` and not updated for
/// `older_than_ms`).
#[derive(Clone, Debug, Default)]
pub struct PruneOptions {
    /// Delete sessions not updated for this many milliseconds.
    pub older_than_ms: Option<i64>,
    /// Keep the `keep_newest` most recently updated sessions.
    pub keep_newest: Option<usize>,
    /// Report what would be deleted; delete nothing.
    pub dry_run: bool,
    /// "Now" for the age criterion (default: the clock).
    pub now_ms: Option<i64>,
}

impl PruneOptions {
    /// Parses `{"olderThanDays":N,"keepNewest":K,"dryRun":bool}` (the C
    /// ABI and the wrappers); `olderThanMs` may replace `olderThanDays`.
    pub fn parse_json(text: &str) -> Result<PruneOptions> {
        use crate::model::json;
        let fields = json::object_fields(text)
            .map_err(|e| Error::invalid(format!("prune options must be a JSON object: {e}")))?;
        let mut o = PruneOptions::default();
        for (k, v) in &fields {
            let key = k.decode();
            let num = || {
                json::as_f64(v)
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "prune option {key} must be a non-negative number, got {}",
                            v.trim()
                        ))
                    })
            };
            match &*key {
                "olderThanDays" => o.older_than_ms = Some((num()? * 86_400_000.0) as i64),
                "olderThanMs" => o.older_than_ms = Some(num()? as i64),
                "keepNewest" => o.keep_newest = Some(num()? as usize),
                "nowMs" => o.now_ms = Some(num()? as i64),
                "dryRun" => {
                    o.dry_run = match v.trim() {
                        "true" => true,
                        "false" => false,
                        other => {
                            return Err(Error::invalid(format!(
                                "prune option dryRun must be true or false, got {other}"
                            )));
                        }
                    }
                }
                other => {
                    return Err(Error::invalid(format!(
                        "unknown prune option {}",
                        json::quote(other)
                    )));
                }
            }
        }
        Ok(o)
    }
}

/// One session prune deleted (or, in a dry run, would delete).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrunedSession {
    pub id: String,
    /// Ms since the epoch (see the module docs for its source).
    pub updated_at: i64,
}

/// What a prune did.
#[derive(Clone, Debug, Default)]
pub struct PruneReport {
    pub dry_run: bool,
    pub updated_source: Option<UpdatedSource>,
    /// Deleted (dry run: would be deleted), newest first.
    pub deleted: Vec<PrunedSession>,
    /// Selected but held by a writer: skipped, with the reason.
    pub busy: Vec<(String, String)>,
    /// Selected but failing otherwise: skipped, with the error.
    pub failed: Vec<(String, String)>,
    /// Sessions not selected.
    pub kept: usize,
}

impl PruneReport {
    /// `{"dryRun":…,"updatedFrom":"fileMtime"|"lastEventTime"|null,
    /// "deleted":[{"id":…,"updatedAt":…}],"busy":[{"id":…,"message":…}],
    /// "failed":[…],"kept":N}`.
    pub fn to_json(&self) -> String {
        let mut t = format!("{{\"dryRun\":{},\"updatedFrom\":", self.dry_run);
        t.push_str(match self.updated_source {
            Some(UpdatedSource::FileMtime) => "\"fileMtime\"",
            Some(UpdatedSource::LastEventTime) => "\"lastEventTime\"",
            None => "null",
        });
        t.push_str(",\"deleted\":[");
        for (i, s) in self.deleted.iter().enumerate() {
            if i > 0 {
                t.push(',');
            }
            t.push_str("{\"id\":");
            write_string(&mut t, &s.id);
            t.push_str(&format!(",\"updatedAt\":{}}}", s.updated_at));
        }
        for (name, list) in [("busy", &self.busy), ("failed", &self.failed)] {
            t.push_str(&format!("],\"{name}\":["));
            for (i, (id, m)) in list.iter().enumerate() {
                if i > 0 {
                    t.push(',');
                }
                t.push_str("{\"id\":");
                write_string(&mut t, id);
                t.push_str(",\"message\":");
                write_string(&mut t, m);
                t.push('}');
            }
        }
        t.push_str(&format!("],\"kept\":{}}}", self.kept));
        t
    }
}

impl Store {
    /// Deletes the sessions `options` select (see [`PruneOptions`]), each
    /// as [`Store::delete`] does; busy ones are skipped and reported.
    /// `progress(done, total)` is called after each selected session.
    pub fn prune(
        &self,
        options: &PruneOptions,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<PruneReport> {
        self.check_open()?;
        if options.older_than_ms.is_none() && options.keep_newest.is_none() {
            return Err(Error::invalid(
                "prune needs a criterion: olderThanDays (not updated for N days) and/or keepNewest (keep the newest K)",
            ));
        }
        let now = options.now_ms.unwrap_or_else(|| self.now_ms() as i64);
        let backend = self.backend();
        let mut report = PruneReport {
            dry_run: options.dry_run,
            ..PruneReport::default()
        };
        let mut sessions = Vec::new();
        for h in self.list()? {
            crate::store::cancel::checkpoint()?;
            // Gone since the listing: nothing to prune.
            if let Some((t, source)) = backend.updated_at(&h.id)? {
                report.updated_source.get_or_insert(source);
                sessions.push(PrunedSession {
                    id: h.id,
                    updated_at: t,
                });
            }
        }
        sessions.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(a.id.cmp(&b.id)));
        let (selected, kept): (Vec<_>, Vec<_>) =
            sessions.into_iter().enumerate().partition(|(i, s)| {
                options.keep_newest.is_none_or(|k| *i >= k)
                    && options
                        .older_than_ms
                        .is_none_or(|age| s.updated_at < now.saturating_sub(age))
            });
        report.kept = kept.len();
        let total = selected.len();
        // Cancellable up to here (the listing); the deletions, once begun,
        // all run.
        crate::store::cancel::checkpoint()?;
        crate::store::cancel::shield(|| {
            for (done, (_, s)) in selected.into_iter().enumerate() {
                let outcome = if options.dry_run {
                    self.would_be_busy(&s.id)
                } else {
                    self.delete(&s.id)
                };
                match outcome {
                    Ok(()) => report.deleted.push(s),
                    // Deleted by someone else meanwhile: nothing to report.
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    Err(e) if e.kind() == ErrorKind::Busy => {
                        report.busy.push((s.id, e.to_string()))
                    }
                    Err(e) => report.failed.push((s.id, e.to_string())),
                }
                progress(done + 1, total);
            }
        });
        Ok(report)
    }

    /// A dry run's guess whether a delete of `id` would be `busy` (no lock
    /// taken).
    fn would_be_busy(&self, id: &str) -> Result<()> {
        if matches!(self.registered(id), Registered::Live | Registered::Reserved) {
            return Err(Error::Busy(format!(
                "session {} is live in this process",
                crate::model::json::quote(id)
            )));
        }
        if let Some(holder) = self.backend().writer_holder(id)? {
            return Err(crate::backend::writer_lock::busy(id, &holder));
        }
        Ok(())
    }
}
