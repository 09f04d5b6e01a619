//! [`PlanSession`] for the store's live sessions.

use crate::error::Result;
use crate::model::event::Event;
use crate::model::json::JsonText;
use crate::store::{AppendOptions, LiveSession};

use super::fold::PlanFold;
use super::session::PlanSession;

/// Plan mode reads the live log and appends `plan/mode` through the live
/// session's validated append (no surface options).
impl PlanSession for LiveSession {
    fn session_id(&self) -> String {
        self.id().to_owned()
    }

    fn snapshot(&self) -> Vec<Event> {
        LiveSession::snapshot(self)
    }

    fn has_open_turn(&self) -> bool {
        LiveSession::has_open_turn(self)
    }

    fn append_event(&self, event_type: &str, data: JsonText) -> Result<u64> {
        self.append_data(event_type, data, &AppendOptions::default())
    }

    fn plan_fold(&self) -> PlanFold {
        LiveSession::plan_fold(self)
    }
}
