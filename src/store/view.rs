//! What read operations return: a header and events.

use crate::model::event::Event;
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
        self.to_json_laid_out().text
    }

    /// [`SessionView::to_json`] with the byte offsets of its parts recorded
    /// as it is written (the C ABI's paged results hand the events out in
    /// pieces without parsing the text again).
    pub fn to_json_laid_out(&self) -> ViewJson {
        let cap = 64
            + self
                .events
                .iter()
                .map(|e| e.data.as_str().len() + 64)
                .sum::<usize>();
        let mut text = String::with_capacity(cap);
        text.push_str("{\"meta\":");
        text.push_str(&self.header.to_json());
        text.push_str(",\"events\":");
        let open = text.len();
        let mut starts = Vec::with_capacity(self.events.len());
        crate::model::json::write_array(&mut text, &self.events, |out, e| {
            starts.push(out.len());
            e.write_json(out);
        });
        let close = text.len() - 1;
        text.push('}');
        ViewJson {
            text,
            starts,
            open,
            close,
        }
    }

    /// Whether the log ends inside an open turn.
    pub fn has_open_turn(&self) -> bool {
        has_open_turn(&self.events)
    }
}

/// The JSON text of a [`SessionView`] and where its parts are in it.
#[derive(Debug)]
pub struct ViewJson {
    /// The whole `{"meta":…,"events":[…]}` text.
    pub text: String,
    /// The byte offset in `text` where each event starts.
    pub starts: Vec<usize>,
    /// The byte offsets in `text` of the events array's `[` and `]`.
    pub open: usize,
    pub close: usize,
}

/// Whether the last turn boundary of `events` is a `turn/start`.
pub fn has_open_turn(events: &[Event]) -> bool {
    events.iter().rev().find_map(opens_turn).unwrap_or(false)
}

/// For a turn boundary, whether it opens the turn (`turn/start`) or closes
/// it (`turn/end`); `None` for every other event.
pub fn opens_turn(e: &Event) -> Option<bool> {
    match e.type_str() {
        "turn/start" => Some(true),
        "turn/end" => Some(false),
        _ => None,
    }
}
