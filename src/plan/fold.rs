//! The plan state folded from a log (SPEC §7, first paragraph).

use crate::model::event::Event;
use crate::model::json;

/// Whether plan mode is active after `events[0..end)` (`end` defaults to the
/// whole log and is clamped to its length): the `active` value of the last
/// `plan/mode` event, or `false` when there is none.
pub fn fold_plan_mode(events: &[Event], end: Option<usize>) -> bool {
    let end = end.unwrap_or(events.len()).min(events.len());
    PlanFold::of(&events[..end]).active()
}

/// The plan state the model was last told about: the fold up to and
/// including the last `request/header`, or `None` when the log has no header
/// yet.
pub fn plan_mode_at_last_header(events: &[Event]) -> Option<bool> {
    PlanFold::of(events).at_last_header()
}

/// The plan state of a log followed event by event, the one place of the
/// rule ([`fold_plan_mode`] and [`plan_mode_at_last_header`] fold a whole
/// log with it). A live session keeps it up to date as its log grows, so
/// plan mode answers each call without a copy or a scan of the log (a
/// million-event session once cost 87 ms per `section` or `get`: every
/// step's prompt).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlanFold {
    active: bool,
    at_last_header: Option<bool>,
}

impl PlanFold {
    /// The fold of `events`.
    pub fn of(events: &[Event]) -> PlanFold {
        let mut fold = PlanFold::default();
        for e in events {
            fold.push(e);
        }
        fold
    }

    /// Follows the next event of the log.
    pub fn push(&mut self, e: &Event) {
        match e.type_str() {
            "plan/mode" => self.active = e.data_field("active").is_some_and(json::is_true),
            "request/header" => self.at_last_header = Some(self.active),
            _ => {}
        }
    }

    /// [`fold_plan_mode`] of the log followed.
    pub fn active(&self) -> bool {
        self.active
    }

    /// [`plan_mode_at_last_header`] of the log followed.
    pub fn at_last_header(&self) -> Option<bool> {
        self.at_last_header
    }
}
