//! Catalog operations beyond the original (issue 19, the read half): a rich
//! listing that reads only a window of each log, full-text search over the
//! message text of every session (with a rebuildable index cache), follow
//! (the events another process appends, as they come) and transcript
//! export to Markdown and HTML. All of them are lock-free reads: no writer
//! lock, no repair; an incomplete last write is not there yet.

pub mod export;
pub mod follow;
pub mod listing;
pub mod search;
pub mod search_index;
pub mod summary;
pub mod summary_index;
pub mod text;

pub use export::ExportFormat;
pub use follow::Follower;
pub use listing::{ListQuery, SortKey};
pub use search::{SearchHit, SearchQuery, SearchResult};
pub use summary::SessionSummary;
