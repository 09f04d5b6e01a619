//! `import`: a JSONL text of events (one per line, the stored record
//! shape — packed chunk rows included — optionally after a session header
//! line) into a new session, judged as one append (the rules of
//! `LogState::check_append`): all or nothing.

use crate::backend::limits;
use crate::codec::chunk_rows::Record;
use crate::error::{Error, Result};
use crate::model::event::Event;
use crate::model::header::SessionHeader;
use crate::model::json::{self, write_string};
use crate::store::Store;

/// What an import wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportReport {
    pub id: String,
    pub events: usize,
    /// Whether the text began with a session header line (whose fields the
    /// new session took, its id excepted).
    pub had_header: bool,
}

impl ImportReport {
    /// `{"id":…,"events":N,"hadHeader":bool}`.
    pub fn to_json(&self) -> String {
        let mut t = String::from("{\"id\":");
        write_string(&mut t, &self.id);
        t.push_str(&format!(
            ",\"events\":{},\"hadHeader\":{}}}",
            self.events, self.had_header
        ));
        t
    }
}

impl Store {
    /// Imports `text` (see the module docs) as the new session `new_id`.
    /// Blank lines are skipped. Nothing is written when any line or event
    /// is refused; the error names the line or the event's seq.
    pub fn import_jsonl(&self, new_id: &str, text: &str) -> Result<ImportReport> {
        self.check_open()?;
        let mut lines = text
            .split('\n')
            .enumerate()
            .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
            .filter(|(_, l)| !l.trim().is_empty())
            .peekable();
        let mut header = None;
        if let Some((n, first)) = lines.peek().copied() {
            if let Some(h) = SessionHeader::parse_line_lenient(first)
                .map_err(|e| Error::invalid(format!("import line {n}: {e}")))?
            {
                if let Some(problem) = h.problem() {
                    return Err(Error::invalid(format!(
                        "import line {n}: the session header is invalid: {problem}"
                    )));
                }
                header = Some(h);
                lines.next();
            }
        }
        let mut items: Vec<String> = Vec::new();
        // The events packed rows expand to, counted before they are built
        // as a read counts them (limits::expansion_charge; each is under
        // the bound the append counts): past what an append may bring
        // into a log, the import is refused here, not after building them.
        let limits = self.config().backend.limits();
        let mut expanded = 0u64;
        for (n, line) in lines {
            if let Err(e) = json::JsonText::parse_verbatim(line) {
                return Err(Error::invalid(format!(
                    "import line {n} is not valid JSON: {e}"
                )));
            }
            if json::kind_of(line) != Some(json::Kind::Object) {
                return Err(Error::invalid(format!(
                    "import line {n} is not a JSON object (one event per line)"
                )));
            }
            let parsed = Record::parse_line(line);
            if let Ok(record) = &parsed {
                expanded = expanded.saturating_add(limits::expansion_charge(record));
                if expanded > limits.log_write_limit() {
                    return Err(Error::invalid(format!(
                        "import line {n}: the events of the packed chunk rows up to it, each counted as {} bytes, come to more than the {} bytes an append may bring into a log (maxLogBytes {} less a sixteenth)",
                        limits::PACKED_MEMBER_CHARGE,
                        limits.log_write_limit(),
                        limits.max_log_bytes
                    )));
                }
            }
            match parsed {
                Ok(Record::Packed(row)) => {
                    let mut members: Vec<Event> = Vec::new();
                    row.expand_into(&mut members);
                    items.extend(members.iter().map(|e| e.to_json()));
                }
                // Events (and lines the append's parser will refuse with
                // its own message) go to the append as written.
                _ => items.push(line.to_string()),
            }
        }
        if items.is_empty() {
            return Err(Error::invalid(
                "nothing to import: the text holds no event lines",
            ));
        }
        let had_header = header.is_some();
        let header = match header {
            Some(h) => super::header_like(&h, new_id, h.created_at),
            None => SessionHeader::new(new_id, self.now_ms()),
        };
        let array = format!("[{}]", items.join(","));
        let count = items.len();
        drop(items);
        let id = header.id.clone();
        self.create(header)?;
        let written = self.append_json(&id, &array);
        if written.is_err() {
            self.forget_created(&id);
        }
        written?;
        Ok(ImportReport {
            id,
            events: count,
            had_header,
        })
    }
}
