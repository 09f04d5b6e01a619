//! The plan state folded from a log (SPEC §7, first paragraph).

use crate::model::event::Event;
use crate::model::json;

/// Whether plan mode is active after `events[0..end)` (`end` defaults to the
/// whole log and is clamped to its length): the `active` value of the last
/// `plan/mode` event, or `false` when there is none.
pub fn fold_plan_mode(events: &[Event], end: Option<usize>) -> bool {
    let end = end.unwrap_or(events.len()).min(events.len());
    events[..end]
        .iter()
        .rev()
        .find(|e| e.event_type() == "plan/mode")
        .is_some_and(|e| e.data_field("active").is_some_and(json::is_true))
}

/// The plan state the model was last told about: the fold up to and
/// including the last `request/header`, or `None` when the log has no header
/// yet.
pub fn plan_mode_at_last_header(events: &[Event]) -> Option<bool> {
    let last = events
        .iter()
        .rposition(|e| e.event_type() == "request/header")?;
    Some(fold_plan_mode(events, Some(last + 1)))
}
