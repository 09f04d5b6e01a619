//! The plan-mode controller: pending selections, `get`, `set`, `pre_step`,
//! `section` (SPEC §7).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::Result;
use crate::model::json::JsonText;

use super::config::PlanModeConfig;
use super::narration::Narration;
use super::session::PlanSession;

/// A selection waiting for the next accepted in-turn step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    /// The selected state.
    pub active: bool,
    /// Whether committing it narrates the switch to the model (user
    /// selections do; an approved `exit_plan_mode` does not, its tool result
    /// already says so).
    pub narrate: bool,
}

/// One session's pending selection, behind its own lock so operations on one
/// session are serialized while other sessions proceed.
type Slot = Arc<Mutex<Option<Pending>>>;

/// The plan-mode controller. One per store (or per host); thread-safe.
///
/// It keeps, per session id, at most one [`Pending`] selection. Pending
/// selections live in memory only, like the original's; call
/// [`PlanMode::forget`] when a session closes.
pub struct PlanMode {
    config: PlanModeConfig,
    slots: Mutex<HashMap<String, Slot>>,
}

/// `get` result: the folded state and the pending target, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanState {
    /// The state folded from the log.
    pub active: bool,
    /// The pending selection's target, present only when one exists.
    pub pending: Option<bool>,
}

impl PlanState {
    /// `{"active":bool}` or `{"active":bool,"pending":bool}`.
    pub fn to_json(&self) -> String {
        match self.pending {
            None => format!("{{\"active\":{}}}", self.active),
            Some(p) => format!("{{\"active\":{},\"pending\":{p}}}", self.active),
        }
    }
}

/// What `set` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOutcome {
    /// Appended `plan/mode` now (no open turn).
    Committed,
    /// Stored as pending until the next accepted in-turn step.
    Queued,
    /// The logged state already matches: a contrary pending selection was
    /// replaced (open turn) or dropped (no open turn).
    Cancelled,
    /// Already the target state; nothing changed.
    Noop,
}

impl SetOutcome {
    /// `committed`, `queued`, `cancelled` or `noop`.
    pub fn as_str(self) -> &'static str {
        match self {
            SetOutcome::Committed => "committed",
            SetOutcome::Queued => "queued",
            SetOutcome::Cancelled => "cancelled",
            SetOutcome::Noop => "noop",
        }
    }
}

/// `set` result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetResult {
    pub outcome: SetOutcome,
    /// Only with `Committed`, and only when narration is due (see
    /// [`Narration::for_switch`]): the message for the host to inject.
    pub narration: Option<Narration>,
}

impl SetResult {
    /// `{"outcome":"committed"|"queued"|"cancelled"|"noop","narration"?:{user/message payload}}`.
    pub fn to_json(&self) -> String {
        let mut out = format!("{{\"outcome\":\"{}\"", self.outcome.as_str());
        push_narration(&mut out, self.narration.as_ref());
        out.push('}');
        out
    }
}

/// `pre_step` result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreStepResult {
    /// Whether a `plan/mode` event was appended.
    pub appended: bool,
    /// The narration to add to the step's messages (pending selection with
    /// `narrate: true`, and narration due).
    pub narration: Option<Narration>,
}

impl PreStepResult {
    /// `{"appended":bool,"narration"?:{user/message payload}}`.
    pub fn to_json(&self) -> String {
        let mut out = format!("{{\"appended\":{}", self.appended);
        push_narration(&mut out, self.narration.as_ref());
        out.push('}');
        out
    }
}

pub(crate) fn push_narration(out: &mut String, narration: Option<&Narration>) {
    if let Some(n) = narration {
        out.push_str(",\"narration\":");
        n.write_json(out);
    }
}

/// `data` of a `plan/mode` event.
fn plan_mode_data(active: bool) -> JsonText {
    JsonText::from_trusted(if active {
        "{\"active\":true}"
    } else {
        "{\"active\":false}"
    })
}

impl PlanMode {
    /// A controller with a validated config.
    pub fn new(config: PlanModeConfig) -> Self {
        PlanMode {
            config,
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// A controller from config JSON text (see [`PlanModeConfig::parse`]).
    pub fn from_config_json(text: &str) -> Result<Self> {
        Ok(PlanMode::new(PlanModeConfig::parse(text)?))
    }

    /// The configuration.
    pub fn config(&self) -> &PlanModeConfig {
        &self.config
    }

    /// The pending selection of a session, if any.
    pub fn pending(&self, session_id: &str) -> Option<Pending> {
        let slot = self.slots.lock().get(session_id).cloned()?;
        *slot.lock()
    }

    /// How many sessions the controller holds state for (a pending
    /// selection, or an operation in progress). Sessions without a pending
    /// selection cost nothing.
    pub fn tracked_sessions(&self) -> usize {
        self.slots.lock().len()
    }

    /// Drops the state kept for a session (call it when the session closes).
    pub fn forget(&self, session_id: &str) {
        self.slots.lock().remove(session_id);
    }

    /// Runs `f` on a session's pending selection under that session's lock,
    /// then drops the slot again when it ended empty and nobody else holds it.
    pub(crate) fn with_slot<T>(
        &self,
        session_id: &str,
        f: impl FnOnce(&mut Option<Pending>) -> T,
    ) -> T {
        let slot = self
            .slots
            .lock()
            .entry(session_id.to_owned())
            .or_default()
            .clone();
        let out = {
            let mut guard = slot.lock();
            f(&mut guard)
        };
        // Lock order: a slot lock is never held while taking the map lock.
        let mut slots = self.slots.lock();
        if let Some(current) = slots.get(session_id) {
            // Two owners (the map and `slot`) means no other thread can reach
            // this slot, since reaching it needs the map lock we hold.
            if Arc::ptr_eq(current, &slot)
                && Arc::strong_count(&slot) == 2
                && slot.try_lock().is_some_and(|g| g.is_none())
            {
                slots.remove(session_id);
            }
        }
        out
    }

    /// `{active, pending?}`: `active` folded from the log, `pending` the
    /// pending selection's target when one exists.
    pub fn get(&self, session: &dyn PlanSession) -> PlanState {
        let pending = self.pending(&session.session_id());
        PlanState {
            active: session.plan_fold().active(),
            pending: pending.map(|p| p.active),
        }
    }

    /// Selects whether plan mode should be active (SPEC §7 `set`):
    ///
    /// target = pending target, else the folded state; `active == target` →
    /// `Noop`. With an open turn: pending becomes `{active, narrate: true}`
    /// and the result is `Cancelled` when the folded state already equals
    /// `active`, else `Queued`. With no open turn: folded state equals
    /// `active` → pending dropped, `Cancelled`; otherwise `plan/mode {active}`
    /// is appended, pending dropped, `Committed` (+ narration when due).
    ///
    /// An append error is returned as is and leaves the pending selection
    /// unchanged.
    pub fn set(&self, session: &dyn PlanSession, active: bool) -> Result<SetResult> {
        self.set_reporting_fold(session, active).map(|(r, _)| r)
    }

    /// `set`, also returning the folded state it saw (the `/plan off` noop
    /// text depends on it).
    pub(crate) fn set_reporting_fold(
        &self,
        session: &dyn PlanSession,
        active: bool,
    ) -> Result<(SetResult, bool)> {
        let id = session.session_id();
        self.with_slot(&id, |pending| {
            let fold = session.plan_fold();
            let folded = fold.active();
            let target = pending.map_or(folded, |p| p.active);
            let done = |outcome| SetResult {
                outcome,
                narration: None,
            };
            if active == target {
                return Ok((done(SetOutcome::Noop), folded));
            }
            if session.has_open_turn() {
                *pending = Some(Pending {
                    active,
                    narrate: true,
                });
                let outcome = if folded == active {
                    SetOutcome::Cancelled
                } else {
                    SetOutcome::Queued
                };
                return Ok((done(outcome), folded));
            }
            if active == folded {
                *pending = None;
                return Ok((done(SetOutcome::Cancelled), folded));
            }
            session.append_event("plan/mode", plan_mode_data(active))?;
            *pending = None;
            let result = SetResult {
                outcome: SetOutcome::Committed,
                narration: Narration::due(fold.at_last_header(), active),
            };
            Ok((result, folded))
        })
    }

    /// Call when a step is accepted inside a turn (SPEC §7 `pre_step`): a
    /// pending selection that differs from the folded state is appended as
    /// `plan/mode {active}`; the pending selection is dropped; the narration
    /// is returned when the selection had `narrate: true` and narration is
    /// due (judged on the log before the append).
    ///
    /// An append error is returned as is and keeps the selection pending for
    /// a later step (the original logs it and lets the step proceed without
    /// narration).
    pub fn pre_step(&self, session: &dyn PlanSession) -> Result<PreStepResult> {
        let id = session.session_id();
        self.with_slot(&id, |pending| {
            let Some(selection) = *pending else {
                return Ok(PreStepResult {
                    appended: false,
                    narration: None,
                });
            };
            let fold = session.plan_fold();
            let narration = Narration::due(fold.at_last_header(), selection.active);
            let appended = selection.active != fold.active();
            if appended {
                session.append_event("plan/mode", plan_mode_data(selection.active))?;
            }
            *pending = None;
            Ok(PreStepResult {
                appended,
                narration: if selection.narrate { narration } else { None },
            })
        })
    }

    /// Stores a pending selection as is (the approved exit review).
    pub(crate) fn store_pending(&self, session_id: &str, selection: Pending) {
        self.with_slot(session_id, |pending| *pending = Some(selection));
    }

    /// The prompt section: the configured text when plan mode is in force for
    /// the next request (pending target, else folded state), else `""`.
    pub fn section(&self, session: &dyn PlanSession) -> &str {
        let active = match self.pending(&session.session_id()) {
            Some(p) => p.active,
            None => session.plan_fold().active(),
        };
        if active { &self.config.section } else { "" }
    }
}
