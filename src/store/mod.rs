//! The store coordinator (SPEC §6): live sessions, write-behind batching,
//! load/inspect/prepare with repair, resume and fork.

pub mod cache;
pub mod config;
pub mod coordinator;
pub mod id_locks;
pub mod live;
pub mod view;
pub mod write_behind;

use std::sync::Arc;

pub use config::{BackendConfig, Compression, StoreConfig};
pub use coordinator::{Clock, PreparedSession, Store};
pub use live::{AppendOptions, LiveSession};
pub use view::SessionView;

use crate::backend::Backend;
use crate::error::Result;

/// Opens the backend a configuration names.
pub fn open_backend(config: &BackendConfig) -> Result<Arc<dyn Backend>> {
    match config {
        BackendConfig::Jsonl { .. } => todo_backend("jsonl"),
        BackendConfig::Sqlite { .. } => todo_backend("sqlite"),
    }
}

fn todo_backend(name: &str) -> Result<Arc<dyn Backend>> {
    Err(crate::error::Error::Unsupported(format!("the {name} backend is being merged")))
}
