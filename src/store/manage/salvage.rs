//! `salvage(id, new_id)`: copies the intact prefix of a session that may no
//! longer load into a new session, closed with the crash-recovery closers
//! (SPEC §5). The source is read only — never repaired, never changed.
//!
//! The prefix ends before the first record the backend cannot read (a
//! corrupt frame, an unparsable line, a seq gap, a row that does not
//! decode), or before the first event the append rules refuse, whichever
//! comes first.

use crate::error::{Error, Result};
use crate::model::event::Event;
use crate::model::json::{quote, write_string};
use crate::model::repair::closers;
use crate::model::validate::LogState;
use crate::store::Store;

/// What a salvage copied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SalvageReport {
    pub source_id: String,
    pub new_id: String,
    /// Intact events the backend read from the source.
    pub read_events: usize,
    /// Events copied (the prefix the rules accept).
    pub kept_events: usize,
    /// Closers appended after them.
    pub closers: usize,
    /// Why the copy ends where it does (`None`: the whole log was copied).
    pub stopped: Option<String>,
}

impl SalvageReport {
    /// `{"sourceId":…,"newId":…,"readEvents":N,"keptEvents":N,
    /// "closers":N,"stopped":"…"|null}`.
    pub fn to_json(&self) -> String {
        let mut t = String::from("{\"sourceId\":");
        write_string(&mut t, &self.source_id);
        t.push_str(",\"newId\":");
        write_string(&mut t, &self.new_id);
        t.push_str(&format!(
            ",\"readEvents\":{},\"keptEvents\":{},\"closers\":{},\"stopped\":",
            self.read_events, self.kept_events, self.closers
        ));
        match &self.stopped {
            Some(s) => write_string(&mut t, s),
            None => t.push_str("null"),
        }
        t.push('}');
        t
    }
}

impl Store {
    /// Copies the intact prefix of `id` into the new session `new_id`
    /// (whose header takes the source's cwd, parent, origin, depth and
    /// preset). `not_found` when `id` is not stored, a conflict when
    /// `new_id` is taken, an invalid argument when nothing is intact.
    pub fn salvage(&self, id: &str, new_id: &str) -> Result<SalvageReport> {
        self.check_open()?;
        if id == new_id {
            return Err(Error::invalid(format!(
                "salvage writes a new session: the new id must differ from {}",
                quote(id)
            )));
        }
        let prefix = self
            .backend()
            .read_intact_prefix(id)?
            .ok_or_else(|| Error::not_found(format!("session {} not found", quote(id))))?;
        let read_events = prefix.events.len();
        let (vocab, strict) = self.rules_config();
        let mut rules = LogState::new();
        let mut kept: Vec<Event> = Vec::with_capacity(read_events);
        let mut stopped = prefix.stopped;
        for e in prefix.events {
            match rules.check_append(id, vocab, strict, true, std::slice::from_ref(&e)) {
                Ok(_) => kept.push(e),
                Err(why) => {
                    stopped = Some(format!("event at seq {} is refused: {why}", e.seq));
                    break;
                }
            }
        }
        if kept.is_empty() {
            return Err(Error::invalid(format!(
                "nothing to salvage from session {}: no intact event at its start{}",
                quote(id),
                stopped
                    .as_deref()
                    .map_or_else(String::new, |s| format!(" ({s})"))
            )));
        }
        let closing = closers(&kept);
        let report = SalvageReport {
            source_id: id.to_string(),
            new_id: new_id.to_string(),
            read_events,
            kept_events: kept.len(),
            closers: closing.len(),
            stopped,
        };
        let mut header = super::header_like(&prefix.header, new_id, self.now_ms());
        if header.seed_length.is_some_and(|n| n as usize > kept.len()) {
            header.seed_length = None;
        }
        kept.extend(closing);
        // Cancellable up to here (the read); the write, once begun, finishes.
        crate::store::cancel::checkpoint()?;
        crate::store::cancel::shield(|| self.write_new(header, kept))?;
        Ok(report)
    }

    /// Writes a new session with `events` (seq 0 on) as one append: the
    /// append rules, the writer lock and the all-or-nothing write of
    /// [`Store::append`]; the id is taken only when it succeeds.
    pub(crate) fn write_new(
        &self,
        header: crate::model::header::SessionHeader,
        events: Vec<Event>,
    ) -> Result<()> {
        let id = header.id.clone();
        self.create(header)?;
        let written = self.append(&id, events);
        if written.is_err() {
            self.forget_created(&id);
        }
        written
    }
}
