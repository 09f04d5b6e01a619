//! What plan mode needs from a live session.

use crate::error::Result;
use crate::model::event::Event;
use crate::model::json::JsonText;

use super::fold::PlanFold;

/// What plan mode needs from a live session. The store's live session
/// implements it; tests use an in-memory fake.
///
/// Implementations must be usable from several threads. The controller calls
/// them while holding its lock for that session, so an implementation must
/// not call back into the same [`super::PlanMode`] for the same session (for
/// example from an append listener): that would deadlock.
pub trait PlanSession: Send + Sync {
    /// The session id: the key of the controller's pending selection.
    fn session_id(&self) -> String;

    /// The committed events so far, in log order (cheap clones: event data is
    /// shared text). Events appended by [`PlanSession::append_event`] must
    /// appear in later snapshots.
    fn snapshot(&self) -> Vec<Event>;

    /// Whether the log holds a `turn/start` without its closing `turn/end`.
    fn has_open_turn(&self) -> bool;

    /// Appends one event (plan mode only appends `plan/mode {"active":…}`)
    /// and returns its seq. An error leaves the log unchanged; the controller
    /// then keeps its pending selection so a later step can retry.
    fn append_event(&self, event_type: &str, data: JsonText) -> Result<u64>;

    /// The plan state folded from the committed events (what plan mode
    /// reads on every call). By default from a [`PlanSession::snapshot`];
    /// the store's live session keeps it as its log grows, with no copy.
    fn plan_fold(&self) -> PlanFold {
        PlanFold::of(&self.snapshot())
    }
}
