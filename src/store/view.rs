//! What read operations return: a header and events.

use crate::model::event::{Event, write_events_array};
use crate::model::header::SessionHeader;

/// A session's header with (some of) its events: the result of `load`,
/// `inspect` and `read_from` (`{meta, events}` in JSON).
#[derive(Clone, Debug)]
pub struct SessionView {
    pub header: SessionHeader,
    pub events: Vec<Event>,
}

impl SessionView {
    /// `{"meta":<header>,"events":[…]}`, events byte for byte in their key
    /// order.
    pub fn to_json(&self) -> String {
        let cap = 64
            + self
                .events
                .iter()
                .map(|e| e.data.as_str().len() + 64)
                .sum::<usize>();
        let mut out = String::with_capacity(cap);
        out.push_str("{\"meta\":");
        out.push_str(&self.header.to_json());
        out.push_str(",\"events\":");
        write_events_array(&mut out, &self.events);
        out.push('}');
        out
    }

    /// Whether the log ends inside an open turn.
    pub fn has_open_turn(&self) -> bool {
        has_open_turn(&self.events)
    }
}

/// Whether the last turn boundary of `events` is a `turn/start`.
pub fn has_open_turn(events: &[Event]) -> bool {
    events
        .iter()
        .rev()
        .find(|e| e.event_type() == "turn/start" || e.event_type() == "turn/end")
        .is_some_and(|e| e.event_type() == "turn/start")
}
