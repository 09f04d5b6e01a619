//! The user-switch narration (SPEC §7, "Narration").

use std::sync::atomic::{AtomicU64, Ordering};

use crate::model::event::Event;
use crate::model::header::now_ms;
use crate::model::json::{self, JsonText};

use super::fold::plan_mode_at_last_header;

/// Narration text when the user switches the session into plan mode.
pub const PLAN_ON_NOTICE: &str = "The user switched this session to plan mode.";
/// Narration text when the user switches the session back out of plan mode.
pub const PLAN_OFF_NOTICE: &str = "The user switched this session back to the default mode.";

/// Distinguishes ids minted in the same millisecond by this process.
static NEXT_NOTICE: AtomicU64 = AtomicU64::new(1);

/// A `user/message` payload that tells the model the user switched modes,
/// for the host to inject into the conversation.
///
/// Payload (compact JSON, key order as the original writes user messages:
/// content, source, role, id):
/// `{"content":[{"type":"text","text":<text>}],"source":{"kind":"plugin",
/// "plugin":"plan-mode","form":"notice","summary":<text>},"role":"user",
/// "id":"plan-mode-notice-<ms>-<n>"}`. The id is fresh for every narration:
/// `<ms>` is the creation time in Unix milliseconds and `<n>` a per-process
/// counter, so ids are unique within a process and, in practice, across runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Narration {
    id: String,
    entering: bool,
}

impl Narration {
    /// The narration for a switch to `target`, when one is due: the log has a
    /// `request/header` and the plan state at the last header differs from
    /// `target`. Otherwise `None` (the model already sees that state, or has
    /// never been told any state).
    pub fn for_switch(events: &[Event], target: bool) -> Option<Narration> {
        Narration::due(plan_mode_at_last_header(events), target)
    }

    /// [`Narration::for_switch`] given the plan state at the log's last
    /// `request/header` (`told`, `None` without one).
    pub fn due(told: Option<bool>, target: bool) -> Option<Narration> {
        (told? != target).then(|| Narration::new(target))
    }

    /// A narration for entering (`true`) or leaving (`false`) plan mode, with
    /// a fresh id, regardless of the log.
    pub fn new(entering: bool) -> Narration {
        let n = NEXT_NOTICE.fetch_add(1, Ordering::Relaxed);
        Narration {
            id: format!("plan-mode-notice-{}-{n}", now_ms()),
            entering,
        }
    }

    /// Whether this narrates entering plan mode.
    pub fn entering(&self) -> bool {
        self.entering
    }

    /// The message id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The one sentence told to the model (also the source summary).
    pub fn text(&self) -> &'static str {
        if self.entering {
            PLAN_ON_NOTICE
        } else {
            PLAN_OFF_NOTICE
        }
    }

    /// Appends the `user/message` payload as compact JSON.
    pub fn write_json(&self, out: &mut String) {
        let text = self.text();
        out.push_str("{\"content\":[{\"type\":\"text\",\"text\":");
        json::write_string(out, text);
        out.push_str("}],\"source\":{\"kind\":\"plugin\",\"plugin\":\"plan-mode\",\"form\":\"notice\",\"summary\":");
        json::write_string(out, text);
        out.push_str("},\"role\":\"user\",\"id\":");
        json::write_string(out, &self.id);
        out.push('}');
    }

    /// The `user/message` payload as compact JSON text.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(256);
        self.write_json(&mut out);
        out
    }

    /// The payload as `data` for a `user/message` append.
    pub fn to_data(&self) -> JsonText {
        JsonText::from_trusted(self.to_json())
    }
}
