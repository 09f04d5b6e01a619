//! Opening the store a command line selects (`--jsonl`, `--jsonl-raw`,
//! `--sqlite`).
//!
//! Reading commands never create anything: a missing root or database is
//! "not found" (exit 3) instead of the empty store the backends would create.

use std::path::{Path, PathBuf};

use dsh_persist::Error;
use dsh_persist::backend::jsonl::{Compression, JsonlConfig};
use dsh_persist::backend::sqlite::SqliteConfig;
use dsh_persist::model::json::quote;
use dsh_persist::store::{BackendConfig, Store, StoreConfig};

use super::args::{StoreArgs, TargetArgs};

/// A store selection, resolved from flags.
#[derive(Clone, Debug)]
pub enum Selection {
    /// A JSONL root and its compression.
    Jsonl(PathBuf, Compression),
    /// A SQLite database file.
    Sqlite(PathBuf),
}

impl Selection {
    pub fn from_store_args(a: &StoreArgs) -> Selection {
        match (&a.jsonl, &a.jsonl_raw, &a.sqlite) {
            (Some(r), _, _) => Selection::Jsonl(r.clone(), Compression::Zstd),
            (_, Some(r), _) => Selection::Jsonl(r.clone(), Compression::None),
            (_, _, Some(f)) => Selection::Sqlite(f.clone()),
            // clap's required group guarantees one flag.
            _ => unreachable!("clap requires exactly one store flag"),
        }
    }

    pub fn from_target_args(a: &TargetArgs) -> Selection {
        match (&a.to_jsonl, &a.to_jsonl_raw, &a.to_sqlite) {
            (Some(r), _, _) => Selection::Jsonl(r.clone(), Compression::Zstd),
            (_, Some(r), _) => Selection::Jsonl(r.clone(), Compression::None),
            (_, _, Some(f)) => Selection::Sqlite(f.clone()),
            _ => unreachable!("clap requires exactly one target flag"),
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            Selection::Jsonl(p, _) | Selection::Sqlite(p) => p,
        }
    }

    /// The store configuration: JSONL with packed chunk rows, SQLite in WAL
    /// mode; no inspection cache (each command reads a session once).
    pub fn config(&self) -> Result<StoreConfig, Error> {
        let backend = match self {
            Selection::Jsonl(root, compression) => BackendConfig::Jsonl(JsonlConfig {
                root: root.clone(),
                compression: *compression,
                pack_chunks: true,
            }),
            Selection::Sqlite(file) => {
                let path = file.to_str().ok_or_else(|| {
                    Error::invalid(format!(
                        "the SQLite path {} is not valid UTF-8",
                        file.display()
                    ))
                })?;
                BackendConfig::Sqlite(SqliteConfig::new(path))
            }
        };
        let mut config = StoreConfig::with_backend(backend);
        config.prepared_session_cache_size = 0;
        Ok(config)
    }

    /// Fails with "not found" when the root directory or database file does
    /// not exist.
    pub fn check_exists(&self) -> Result<(), Error> {
        match self {
            Selection::Jsonl(root, _) => {
                if !root.is_dir() {
                    return Err(Error::not_found(format!(
                        "JSONL root {} does not exist or is not a directory",
                        quote(&root.display().to_string())
                    )));
                }
            }
            Selection::Sqlite(file) => {
                if !file.is_file() {
                    return Err(Error::not_found(format!(
                        "SQLite database {} does not exist or is not a file",
                        quote(&file.display().to_string())
                    )));
                }
            }
        }
        Ok(())
    }

    /// Opens the store (creating it when missing: for convert targets).
    pub fn open(&self) -> Result<Store, Error> {
        Store::open(self.config()?)
    }
}

/// Opens an existing store for reading.
pub fn open_existing(a: &StoreArgs) -> Result<Store, Error> {
    let sel = Selection::from_store_args(a);
    sel.check_exists()?;
    sel.open()
}
