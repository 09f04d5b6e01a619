//! Session management beyond the original (issue 19, the write half):
//! [`delete`](crate::store::Store::delete),
//! [`prune`](crate::store::Store::prune) (retention),
//! [`salvage`](crate::store::Store::salvage) and
//! [`import_jsonl`](crate::store::Store::import_jsonl). Each holds the
//! writer lock of the id it writes; what it writes passes the rules an
//! append applies (`LogState::check_append`), so it loads back.

pub mod delete;
pub mod import;
pub mod prune;
pub mod salvage;

pub use import::ImportReport;
pub use prune::{PruneOptions, PruneReport, PrunedSession};
pub use salvage::SalvageReport;

use crate::model::header::SessionHeader;

/// The header of a new session `new_id` that takes over the fields of
/// `from` (cwd, parent, origin, depth, preset); `created_at` as given.
pub(crate) fn header_like(from: &SessionHeader, new_id: &str, created_at: u64) -> SessionHeader {
    let mut h = SessionHeader::new(new_id, created_at);
    h.cwd = from.cwd.clone();
    h.parent_session = from.parent_session.clone();
    h.seed_length = from.seed_length;
    h.origin = from.origin.clone();
    h.delegation_depth = from.delegation_depth;
    h.agent_preset = from.agent_preset.clone();
    h
}
