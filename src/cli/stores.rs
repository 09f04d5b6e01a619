//! Opening the store a command line selects: `--store PATH` (the kind is
//! detected by looking) or an explicit `--jsonl`, `--jsonl-raw`, `--sqlite`,
//! `--postgres` (with `--postgres-schema`).
//!
//! Detection ([`detect`]) reads names and file headers only, never writes:
//!
//! - `postgres://…` / `postgresql://…`: a PostgreSQL store (the server of
//!   the URL, the schema of `--postgres-schema` or `dsh`), as `--postgres`
//!   (`--to-postgres` for a target: its tables are created if missing);
//! - a directory: a JSONL root; its encoding is the one its logs (or flat
//!   files) use, found by name. Logs of both encodings are an error (a
//!   root holds one); a directory with no log is read as an empty zstd
//!   root when it is empty or holds only project directories (and the
//!   store's writer-lock directory, `.dsh-persist-locks/`), and is an
//!   error when it holds anything else (it is probably not a store); the
//!   writer-lock directory beside a database (`<db>.dsh-persist-locks/`)
//!   is refused naming the database;
//! - a file: a SQLite session database, told by its 16-byte header and its
//!   `application_id` (1146308688); any other file is an error.
//!
//! A writing target (`convert --to`) must already be a store of a known
//! kind (a PostgreSQL URL is one): a new or empty root or file needs an
//! explicit `--to-jsonl`, `--to-jsonl-raw` or `--to-sqlite`.
//!
//! Reading commands never create anything: a missing root or database, or
//! a PostgreSQL schema without a session store, is "not found" (exit 3)
//! instead of the empty store the backends would create.

use std::io::ErrorKind as IoKind;
use std::path::{Path, PathBuf};

use dsh_persist::Error;
use dsh_persist::backend::jsonl::scan::detect_encodings;
use dsh_persist::backend::jsonl::{Compression, JsonlConfig};
use dsh_persist::backend::postgres::{PostgresBackend, PostgresConfig};
use dsh_persist::backend::sqlite::SqliteConfig;
use dsh_persist::backend::sqlite::scan::{Probe, probe_file};
use dsh_persist::backend::writer_lock::LOCK_DIR_NAME;
use dsh_persist::model::json::quote;
use dsh_persist::store::{BackendConfig, Store, StoreConfig};

use super::args::{StoreArgs, TargetArgs};

/// The URL schemes of a PostgreSQL store.
const POSTGRES_SCHEMES: [&str; 2] = ["postgres://", "postgresql://"];

/// A store selection, resolved from flags or detected.
#[derive(Clone, Debug)]
pub enum Selection {
    /// A JSONL root and its compression.
    Jsonl(PathBuf, Compression),
    /// A SQLite database file.
    Sqlite(PathBuf),
    /// A PostgreSQL server's URL, the store's schema and its cache
    /// directory on this host.
    Postgres(String, Option<String>, Option<PathBuf>),
}

/// What the selected store is used for: detection is stricter for a
/// store that will be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    Read,
    Write,
}

/// The metadata of `path` (links followed), `None` when there is no such
/// file (or a file stands where a directory should be on the way); any
/// other failure (a directory on the way the user may not search, a name
/// too long, a loop of links) is an `io` error saying so, not "does not
/// exist".
fn looked_up(path: &Path, what: &str) -> Result<Option<std::fs::Metadata>, Error> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(Some(m)),
        Err(e) if matches!(e.kind(), IoKind::NotFound | IoKind::NotADirectory) => Ok(None),
        Err(e) => Err(Error::io(
            format!("cannot inspect {what} {}", shown(path)),
            e,
        )),
    }
}

fn shown(p: &Path) -> String {
    quote(&p.display().to_string())
}

/// The kind of the store at `path` (see the module docs); `schema` is
/// `--postgres-schema`, for a PostgreSQL URL.
pub fn detect(path: &Path, purpose: Purpose, schema: Option<&String>) -> Result<Selection, Error> {
    if let Some(url) = path.to_str() {
        if POSTGRES_SCHEMES.iter().any(|s| url.starts_with(s)) {
            return Ok(Selection::Postgres(url.to_string(), schema.cloned(), None));
        }
    }
    let explicit = match purpose {
        Purpose::Read => "--jsonl ROOT, --jsonl-raw ROOT or --sqlite FILE",
        Purpose::Write => "--to-jsonl ROOT, --to-jsonl-raw ROOT or --to-sqlite FILE",
    };
    let Some(meta) = looked_up(path, "store")? else {
        return Err(match purpose {
            Purpose::Read => Error::not_found(format!("store {} does not exist", shown(path))),
            Purpose::Write => Error::invalid(format!(
                "store {} does not exist, so its kind cannot be detected; to create it, give {explicit}",
                shown(path)
            )),
        });
    };
    if meta.is_dir() {
        return detect_root(path, purpose, explicit);
    }
    if !meta.is_file() {
        return Err(Error::invalid(format!(
            "store {} is neither a directory (a JSONL root) nor a file (a SQLite database)",
            shown(path)
        )));
    }
    match probe_file(path)? {
        p if p.is_session_database() => Ok(Selection::Sqlite(path.to_path_buf())),
        Probe::Sqlite { application_id } => Err(Error::invalid(format!(
            "{} is a SQLite database but not a session database (application_id {application_id}, a session database has {}); give --sqlite FILE to open it anyway",
            shown(path),
            dsh_persist::backend::sqlite::schema::APPLICATION_ID
        ))),
        Probe::Empty => Err(Error::invalid(format!(
            "{} is an empty file, so its kind cannot be detected; give --sqlite FILE to use it as a new session database",
            shown(path)
        ))),
        Probe::NotSqlite => Err(Error::invalid(format!(
            "{} is not a session store: a file store is a SQLite database (this file has no SQLite header) and a JSONL store is a directory",
            shown(path)
        ))),
    }
}

fn detect_root(root: &Path, purpose: Purpose, explicit: &str) -> Result<Selection, Error> {
    if let Some(db) = root
        .to_str()
        .and_then(|r| r.trim_end_matches('/').strip_suffix(LOCK_DIR_NAME))
        .filter(|db| !db.is_empty() && !db.ends_with('/') && Path::new(db).is_file())
    {
        // `<database>.dsh-persist-locks/`: the writer locks of a database.
        return Err(Error::invalid(format!(
            "{} is the writer-lock directory of the SQLite database {}, not a store; give the database instead",
            shown(root),
            quote(db)
        )));
    }
    let found = detect_encodings(root)?;
    match (&found.zstd, &found.none) {
        (Some(z), Some(n)) => Err(Error::invalid(format!(
            "JSONL root {} mixes both encodings ({} is zstd-compressed, {} is not), but a root holds one: give --jsonl or --jsonl-raw to read the sessions of one encoding (verify names the others), or move one set into another root",
            shown(root),
            shown(z),
            shown(n)
        ))),
        (Some(_), None) => Ok(Selection::Jsonl(root.to_path_buf(), Compression::Zstd)),
        (None, Some(_)) => Ok(Selection::Jsonl(root.to_path_buf(), Compression::None)),
        (None, None) => {
            if let Some(foreign) = &found.foreign {
                return Err(Error::invalid(format!(
                    "{} does not look like a session store: it holds no session log and {} is not a project directory; give {explicit} to open it anyway",
                    shown(root),
                    shown(foreign)
                )));
            }
            match purpose {
                // An empty root lists the same in either encoding.
                Purpose::Read => Ok(Selection::Jsonl(root.to_path_buf(), Compression::Zstd)),
                Purpose::Write => Err(Error::invalid(format!(
                    "JSONL root {} holds no session log yet, so its encoding cannot be detected; give {explicit}",
                    shown(root)
                ))),
            }
        }
    }
}

impl Selection {
    /// The selection of the store flags (`--store` detected for reading).
    pub fn from_store_args(a: &StoreArgs) -> Result<Selection, Error> {
        let cache = || a.postgres_cache_dir.clone();
        if let Some(url) = &a.postgres {
            return Ok(Selection::Postgres(
                url.clone(),
                a.postgres_schema.clone(),
                cache(),
            ));
        }
        Ok(match (&a.store, &a.jsonl, &a.jsonl_raw, &a.sqlite) {
            (Some(p), _, _, _) => match detect(p, Purpose::Read, a.postgres_schema.as_ref())? {
                Selection::Postgres(url, schema, _) => Selection::Postgres(url, schema, cache()),
                other => other,
            },
            (_, Some(r), _, _) => Selection::Jsonl(r.clone(), Compression::Zstd),
            (_, _, Some(r), _) => Selection::Jsonl(r.clone(), Compression::None),
            (_, _, _, Some(f)) => Selection::Sqlite(f.clone()),
            _ => {
                return Err(Error::invalid(
                    "give a store: --store PATH, --jsonl ROOT, --jsonl-raw ROOT, --sqlite FILE or --postgres URL",
                ));
            }
        })
    }

    /// The selection of `convert`'s target flags (`--to` detected for
    /// writing); `schema` is `--postgres-schema` (for `--to-postgres`).
    pub fn from_target_args(a: &TargetArgs, schema: Option<&String>) -> Result<Selection, Error> {
        if let Some(url) = &a.to_postgres {
            return Ok(Selection::Postgres(url.clone(), schema.cloned(), None));
        }
        Ok(match (&a.to, &a.to_jsonl, &a.to_jsonl_raw, &a.to_sqlite) {
            (Some(p), _, _, _) => detect(p, Purpose::Write, schema)?,
            (_, Some(r), _, _) => Selection::Jsonl(r.clone(), Compression::Zstd),
            (_, _, Some(r), _) => Selection::Jsonl(r.clone(), Compression::None),
            (_, _, _, Some(f)) => Selection::Sqlite(f.clone()),
            _ => unreachable!("clap requires exactly one target flag"),
        })
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
        let Selection::Postgres(url, schema, cache_dir) = self else {
            return Err(Error::invariant("not a PostgreSQL selection"));
        };
        let mut c = PostgresConfig::new(url.clone());
        if let Some(s) = schema {
            c.schema = s.clone();
        }
        c.cache_dir = cache_dir.clone();
        // A command needs one connection at a time.
        c.pool_size = 2;
        Ok(c)
    }

    /// The kind, as a user would name it.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Selection::Jsonl(_, Compression::Zstd) => "jsonl (zstd)",
            Selection::Jsonl(_, Compression::None) => "jsonl (raw)",
            Selection::Sqlite(_) => "sqlite",
            Selection::Postgres(..) => "postgres",
        }
    }

    /// Whether the store keeps each event's envelope key order (JSONL
    /// does; the row stores, SQLite and PostgreSQL, keep the envelope in
    /// columns and rebuild events in the live order).
    pub fn keeps_key_order(&self) -> bool {
        matches!(self, Selection::Jsonl(..))
    }

    /// The store configuration: JSONL with packed chunk rows, SQLite in WAL
    /// mode; no inspection cache (each command reads a session once).
    pub fn config(&self) -> Result<StoreConfig, Error> {
        let backend = match self {
            Selection::Jsonl(root, compression) => BackendConfig::Jsonl(JsonlConfig {
                root: root.clone(),
                compression: *compression,
                pack_chunks: true,
                limits: Default::default(),
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
                if !looked_up(root, "JSONL root")?.is_some_and(|m| m.is_dir()) {
                    return Err(Error::not_found(format!(
                        "JSONL root {} does not exist or is not a directory",
                        shown(root)
                    )));
                }
            }
            Selection::Sqlite(file) => {
                if !looked_up(file, "SQLite database")?.is_some_and(|m| m.is_file()) {
                    return Err(Error::not_found(format!(
                        "SQLite database {} does not exist or is not a file",
                        shown(file)
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
    let sel = Selection::from_store_args(a)?;
    sel.check_exists()?;
    sel.open()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_url_is_detected_as_a_postgres_store() {
        let schema = "my_schema".to_string();
        for url in [
            "postgres://me:secret@db:5432/x?sslmode=require",
            "postgresql://db/x",
        ] {
            for purpose in [Purpose::Read, Purpose::Write] {
                match detect(Path::new(url), purpose, Some(&schema)).unwrap() {
                    Selection::Postgres(u, s, _) => {
                        assert_eq!(u, url);
                        assert_eq!(s.as_deref(), Some("my_schema"));
                    }
                    other => panic!("{url}: detected as {other:?}"),
                }
            }
        }
        // Without --postgres-schema: the backend's default.
        let sel = detect(Path::new("postgresql://db/x"), Purpose::Read, None).unwrap();
        assert!(matches!(&sel, Selection::Postgres(_, None, _)), "{sel:?}");
        let BackendConfig::Postgres(c) = sel.config().unwrap().backend else {
            panic!("not a PostgreSQL configuration");
        };
        assert_eq!(c.url, "postgresql://db/x");
        assert_eq!(c.schema, "dsh");
        assert_eq!(c.cache_dir, None);
        // --postgres-cache-dir reaches the configuration, given with
        // --postgres or a URL to --store.
        for args in [
            StoreArgs {
                postgres: Some("postgresql://db/x".into()),
                ..StoreArgs::default()
            },
            StoreArgs {
                store: Some("postgresql://db/x".into()),
                ..StoreArgs::default()
            },
        ] {
            let args = StoreArgs {
                postgres_cache_dir: Some("/home/me/.cache/dsh".into()),
                ..args
            };
            let sel = Selection::from_store_args(&args).unwrap();
            let BackendConfig::Postgres(c) = sel.config().unwrap().backend else {
                panic!("not a PostgreSQL configuration");
            };
            assert_eq!(
                c.cache_dir.as_deref(),
                Some(Path::new("/home/me/.cache/dsh"))
            );
        }
        // Anything else is a path.
        let sel = detect(Path::new("postgres:/x"), Purpose::Read, None);
        assert_eq!(sel.unwrap_err().kind(), dsh_persist::ErrorKind::NotFound);
    }
}
