//! Plan mode (SPEC §7).
//!
//! Plan mode is per-session collaboration state folded from the log: the last
//! `plan/mode {active}` event wins and a log with none is inactive
//! ([`fold_plan_mode`]). On top of that fold this module provides:
//!
//! - [`PlanModeConfig`]: the deployment's `{section}` guidance text.
//! - [`PlanMode`]: the controller. It keeps at most one *pending selection*
//!   per session (a user's choice made while a turn is open, or an approved
//!   exit), commits it at the next accepted in-turn step ([`PlanMode::pre_step`]),
//!   serves the `/plan` command ([`PlanMode::command`]), the `exit_plan_mode`
//!   tool ([`PlanMode::exit_check`], [`PlanMode::exit_answer`]) and the prompt
//!   section ([`PlanMode::section`]).
//! - [`Narration`]: the `user/message` payload telling the model the user
//!   switched modes.
//! - [`project`]: the pure `{active, pending}` fold UIs use.
//!
//! The controller works against the small [`PlanSession`] trait, which the
//! store's live session implements. Every result has a typed Rust form and a
//! compact JSON form (`to_json()`) for the C ABI:
//!
//! | call | JSON |
//! |---|---|
//! | `get` | `{"active":bool}` or `{"active":bool,"pending":bool}` |
//! | `set` | `{"outcome":"committed"\|"queued"\|"cancelled"\|"noop","narration"?:N}` |
//! | `pre_step` | `{"appended":bool,"narration"?:N}` |
//! | `section` | plain text (empty when inactive) |
//! | `command` | `{"kind":"success"\|"error","text":"…","steer"?:{"content":[{"type":"text","text":"…"}],"source":{"kind":"user"}},"narration"?:N}` |
//! | `exit_check` | `{"ok":true,"review":{"questions":[…]}}` or `{"ok":false,"error":"…"}` |
//! | `exit_answer` (input) | `{"answers":[{"id":"plan-review","selected":["Approve"],"custom":null}]}` or `{"dismissed":true}` |
//! | `exit_answer` | `{"approved":true}` or `{"approved":false,"error":"…"}` |
//! | `project` | `{"active":bool,"pending":bool}` |
//!
//! `N` is a `user/message` payload (see [`Narration`]). Append failures are
//! returned as [`crate::Error`]s, not as JSON results; tool refusals
//! (`exit_check`, `exit_answer`) are results, since they go back to the model.

mod command;
mod config;
mod controller;
mod exit_review;
mod fold;
mod js_text;
mod live_session;
mod narration;
mod projection;
mod session;

pub use command::{
    CommandKind, CommandResult, OFF_ALREADY_INACTIVE, OFF_CANCELLED, OFF_COMMITTED, OFF_QUEUED,
    OFF_WITH_ATTACHMENTS, ON_COMMITTED, ON_PENDING, Steer,
};
pub use config::PlanModeConfig;
pub use controller::{Pending, PlanMode, PlanState, PreStepResult, SetOutcome, SetResult};
pub use exit_review::{
    APPROVE_LABEL, AnswerItem, DISMISSED, EXIT_PLAN_MODE, ExitAnswer, ExitCheck, KEEP_PLANNING,
    KEEP_PLANNING_FEEDBACK_PREFIX, KEEP_PLANNING_LABEL, NEEDS_HEADING, NOT_IN_PLAN_MODE,
    PlanReview, REVIEW_ID, ReviewAnswer,
};
pub use fold::{PlanFold, fold_plan_mode, plan_mode_at_last_header};
pub use narration::{Narration, PLAN_OFF_NOTICE, PLAN_ON_NOTICE};
pub use projection::{PlanProjection, PlanView, project, project_json};
pub use session::PlanSession;
