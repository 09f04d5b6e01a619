//! The store coordinator (SPEC §6): live sessions, write-behind batching,
//! load/inspect/prepare with repair, resume and fork.

pub mod append_checkpoint;
pub mod cache;
pub mod cache_files;
pub mod cancel;
pub mod catalog;
pub mod cold_fold;
pub mod config;
pub mod coordinator;
pub mod id_locks;
pub mod live;
pub mod manage;
pub mod view;
pub mod write_behind;

use std::sync::Arc;

pub use cancel::Cancel;
pub use cold_fold::ColdReads;
pub use config::{
    BackendConfig, Compression, JournalMode, JsonlConfig, PostgresConfig, SqliteConfig, SslMode,
    StoreConfig,
};
pub use coordinator::{Clock, PreparedSession, Store};
pub use live::{AppendOptions, LiveSession};
pub use manage::{ImportReport, PruneOptions, PruneReport, SalvageReport};
pub use view::{SessionView, ViewJson};

use crate::backend::Backend;
use crate::backend::jsonl::JsonlBackend;
use crate::backend::postgres::PostgresBackend;
use crate::backend::sqlite::SqliteBackend;
use crate::error::Result;

/// Opens the backend a configuration names.
pub fn open_backend(config: &BackendConfig) -> Result<Arc<dyn Backend>> {
    Ok(match config {
        BackendConfig::Jsonl(c) => Arc::new(JsonlBackend::open(c.clone())?),
        BackendConfig::Sqlite(c) => Arc::new(SqliteBackend::open(c)?),
        BackendConfig::Postgres(c) => Arc::new(PostgresBackend::open(c)?),
    })
}
