//! The pure `{active, pending}` fold for UIs (SPEC §7, "Projection").
//!
//! Pending is a pure replay quantity here: a `/plan` command recorded as
//! `command/run` + `command/done` marks the selection, a `plan/mode` event
//! settles it. Host restarts and cold reads recover it from the log alone.

use crate::error::{Error, Result};
use crate::model::event::Event;
use crate::model::json;

use super::js_text::js_trim;

/// A `/plan` command whose `command/done` has not been seen yet.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Running {
    /// The raw JSON text of `commandId`.
    command_id: String,
    wanted: bool,
}

/// The projection state `{active, wanted, running}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanProjection {
    active: bool,
    wanted: Option<bool>,
    running: Option<Running>,
}

/// The projection view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanView {
    /// The logged state.
    pub active: bool,
    /// A successful (or still running) `/plan` selection differs from it.
    pub pending: bool,
}

impl PlanView {
    /// `{"active":bool,"pending":bool}`.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"active\":{},\"pending\":{}}}",
            self.active, self.pending
        )
    }
}

/// The decoded text of a raw JSON string value.
fn string_field(raw: Option<&str>) -> Option<String> {
    raw.and_then(json::as_str).map(|s| s.decode().into_owned())
}

impl PlanProjection {
    /// The initial state: inactive, nothing wanted or running.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one event:
    /// - `command/run` named `plan` with a string `args`: `running =
    ///   {commandId, wanted: args.trim() != "off"}` (no `args`: ignored);
    /// - `command/done` whose `commandId` matches the running one: `wanted =
    ///   running.wanted` when `kind == "success"` and it differs from
    ///   `active`, else none; `running` cleared;
    /// - `plan/mode`: `active = data.active`, `wanted` cleared.
    pub fn apply(&mut self, event: &Event) {
        match event.type_str() {
            "command/run" => {
                if string_field(event.data_field("name")).as_deref() != Some("plan") {
                    return;
                }
                let Some(args) = string_field(event.data_field("args")) else {
                    return;
                };
                let command_id = event.data_field("commandId").unwrap_or("").to_owned();
                self.running = Some(Running {
                    command_id,
                    wanted: js_trim(&args) != "off",
                });
            }
            "command/done" => {
                let Some(running) = &self.running else {
                    return;
                };
                let id = event.data_field("commandId");
                if !id.is_some_and(|id| same_json_value(id, &running.command_id)) {
                    return;
                }
                let success = string_field(event.data_field("kind")).as_deref() == Some("success");
                self.wanted = (success && running.wanted != self.active).then_some(running.wanted);
                self.running = None;
            }
            "plan/mode" => {
                self.active = event.data_field("active").is_some_and(json::is_true);
                self.wanted = None;
            }
            _ => {}
        }
    }

    /// `{active, pending}`: pending when `running.wanted` (else `wanted`)
    /// exists and differs from `active`.
    pub fn view(&self) -> PlanView {
        let wanted = self.running.as_ref().map(|r| r.wanted).or(self.wanted);
        PlanView {
            active: self.active,
            pending: wanted.is_some_and(|w| w != self.active),
        }
    }
}

/// Compares two raw JSON values: strings by decoded text, others by text.
fn same_json_value(a: &str, b: &str) -> bool {
    match (json::as_str(a), json::as_str(b)) {
        (Some(a), Some(b)) => a.decode() == b.decode(),
        (None, None) => a.trim() == b.trim(),
        _ => false,
    }
}

/// Folds a whole log into the view.
pub fn project(events: &[Event]) -> PlanView {
    let mut state = PlanProjection::new();
    for e in events {
        state.apply(e);
    }
    state.view()
}

/// [`project`] over a JSON array of event objects (each checked by
/// [`Event::parse`]).
pub fn project_json(events_json: &str) -> Result<PlanView> {
    let items = json::array_items(events_json).map_err(|e| {
        Error::invalid(format!("plan projection needs a JSON array of events: {e}"))
    })?;
    let mut state = PlanProjection::new();
    for (i, item) in items.iter().enumerate() {
        let event = Event::parse(item)
            .map_err(|e| Error::invalid(format!("plan projection: events[{i}]: {e}")))?;
        state.apply(&event);
    }
    Ok(state.view())
}
