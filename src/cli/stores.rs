//! Opening the store a command line selects (`--jsonl`, `--jsonl-raw`,
//! `--sqlite`, `--postgres`).
//!
//! Reading commands never create anything: a missing root or database is
//! "not found" (exit 3) instead of the empty store the backends would create.

use std::path::{Path, PathBuf};

use dsh_persist::Error;
use dsh_persist::backend::jsonl::{Compression, JsonlConfig};
use dsh_persist::backend::postgres::{PostgresBackend, PostgresConfig};
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
    /// A PostgreSQL server's URL and the store's schema.
    Postgres(String, Option<String>),
}

impl Selection {
    pub fn from_store_args(a: &StoreArgs) -> Selection {
        if let Some(url) = &a.postgres {
            return Selection::Postgres(url.clone(), a.postgres_schema.clone());
        }
        match (&a.jsonl, &a.jsonl_raw, &a.sqlite) {
            (Some(r), _, _) => Selection::Jsonl(r.clone(), Compression::Zstd),
            (_, Some(r), _) => Selection::Jsonl(r.clone(), Compression::None),
            (_, _, Some(f)) => Selection::Sqlite(f.clone()),
            // clap's required group guarantees one flag.
            _ => unreachable!("clap requires exactly one store flag"),
        }
    }

    /// `schema` is `--postgres-schema` (for `--to-postgres`).
    pub fn from_target_args(a: &TargetArgs, schema: Option<&String>) -> Selection {
        if let Some(url) = &a.to_postgres {
            return Selection::Postgres(url.clone(), schema.cloned());
        }
        match (&a.to_jsonl, &a.to_jsonl_raw, &a.to_sqlite) {
            (Some(r), _, _) => Selection::Jsonl(r.clone(), Compression::Zstd),
            (_, Some(r), _) => Selection::Jsonl(r.clone(), Compression::None),
            (_, _, Some(f)) => Selection::Sqlite(f.clone()),
            _ => unreachable!("clap requires exactly one target flag"),
        }
    }

    /// The root or database file (`None` for a server).
    pub fn path(&self) -> Option<&Path> {
        match self {
            Selection::Jsonl(p, _) | Selection::Sqlite(p) => Some(p),
            Selection::Postgres(..) => None,
        }
    }

    /// What to call the store in messages (a server without its password).
    pub fn describe(&self) -> String {
        match self {
            Selection::Jsonl(p, _) | Selection::Sqlite(p) => p.display().to_string(),
            Selection::Postgres(..) => match self.postgres_config().map(|c| c.resolve()) {
                Ok(Ok(r)) => r.label,
                _ => "a PostgreSQL server".to_string(),
            },
        }
    }

    /// Whether both name the same store.
    pub fn same_store(&self, other: &Selection) -> bool {
        match (self, other) {
            (Selection::Postgres(..), Selection::Postgres(..)) => {
                self.describe() == other.describe()
            }
            _ => match (
                self.path().map(std::fs::canonicalize),
                other.path().map(std::fs::canonicalize),
            ) {
                (Some(Ok(x)), Some(Ok(y))) => x == y,
                _ => false,
            },
        }
    }

    fn postgres_config(&self) -> Result<PostgresConfig, Error> {
        let Selection::Postgres(url, schema) = self else {
            return Err(Error::invariant("not a PostgreSQL selection"));
        };
        let mut c = PostgresConfig::new(url.clone());
        if let Some(s) = schema {
            c.schema = s.clone();
        }
        // A command needs one connection at a time.
        c.pool_size = 2;
        Ok(c)
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
            Selection::Postgres(..) => BackendConfig::Postgres(self.postgres_config()?),
        };
        let mut config = StoreConfig::with_backend(backend);
        config.prepared_session_cache_size = 0;
        Ok(config)
    }

    /// Fails with "not found" when the root directory or database file does
    /// not exist, or the PostgreSQL schema holds no session store.
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
            Selection::Postgres(..) => {
                let (exists, label) = PostgresBackend::store_exists(&self.postgres_config()?)?;
                if !exists {
                    return Err(Error::not_found(format!("{label} holds no session store")));
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
