//! One row of the rich listing: what a picker shows of a session, computed
//! from a window of its log (see [`crate::backend::catalog`]).

use serde_json::{Value, json};

use super::text::{Role, event_text, truncate};
use crate::backend::Revision;
use crate::backend::catalog::{Window, WindowSpec};
use crate::model::event::Event;
use crate::model::header::SessionHeader;

/// The events a summary needs from a log.
pub const SUMMARY_SPEC: WindowSpec<'static> = WindowSpec {
    first_of: &["user/message"],
    last_of: &["user/message", "session/title", "turn/start", "turn/end"],
};

/// How many characters of a prompt a summary keeps.
pub const PROMPT_CHARS: usize = 160;

/// A session as the rich listing shows it.
#[derive(Clone, Debug)]
pub struct SessionSummary {
    pub header: SessionHeader,
    pub revision: Revision,
    /// The header's `createdAt` (ms since the epoch).
    pub created_at: i64,
    /// The time of the last event (`createdAt` for a session without events).
    pub updated_at: i64,
    pub event_count: u64,
    /// The number of the last `turn/start` (turns run 1, 2, …).
    pub turn_count: u64,
    /// The title of the last `session/title` event.
    pub title: Option<String>,
    pub first_prompt: Option<String>,
    pub last_prompt: Option<String>,
    /// The last turn started and did not end (yet).
    pub open_turn: bool,
    /// Bytes the session takes in storage.
    pub bytes: u64,
}

fn prompt(e: Option<&Event>) -> Option<String> {
    e.and_then(event_text)
        .filter(|(r, _)| *r == Role::User)
        .map(|(_, t)| truncate(&t, PROMPT_CHARS))
}

impl SessionSummary {
    pub fn from_window(w: Window) -> SessionSummary {
        let last_of = |t: &str| w.events.iter().rev().find(|e| e.type_str() == t);
        let start = last_of("turn/start");
        let end = last_of("turn/end");
        let title = last_of("session/title").and_then(|e| {
            serde_json::from_str::<Value>(e.data.as_str())
                .ok()?
                .get("title")?
                .as_str()
                .map(str::to_string)
        });
        let updated_at = w
            .events
            .iter()
            .rev()
            .find(|e| e.seq + 1 == w.next_seq)
            .map_or(w.header.created_at as i64, |e| e.time);
        SessionSummary {
            created_at: w.header.created_at as i64,
            updated_at,
            event_count: w.next_seq,
            turn_count: start.and_then(|e| e.turn()).unwrap_or(0).max(0) as u64,
            title,
            first_prompt: prompt(w.events.iter().find(|e| e.type_str() == "user/message")),
            last_prompt: prompt(last_of("user/message")),
            open_turn: match (start, end) {
                (Some(s), Some(e)) => s.seq > e.seq,
                (Some(_), None) => true,
                _ => false,
            },
            bytes: w.bytes,
            revision: w.revision.clone(),
            header: w.header.clone(),
        }
    }

    /// The summary as a JSON value (`meta` is the header as `list` prints it).
    pub fn to_value(&self) -> Value {
        let meta: Value = serde_json::from_str(&self.header.to_json()).unwrap_or(Value::Null);
        json!({
            "id": self.header.id,
            "meta": meta,
            "revision": self.revision.0,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "eventCount": self.event_count,
            "turnCount": self.turn_count,
            "title": self.title,
            "firstPrompt": self.first_prompt,
            "lastPrompt": self.last_prompt,
            "openTurn": self.open_turn,
            "bytes": self.bytes,
        })
    }
}
