//! Store configuration: the JSON of SPEC §11, parsed strictly.
//!
//! ```json
//! {"backend":"jsonl","root":"/path","compression":"zstd"|"none","packChunks":true,
//!  "writeBatchMaxDelayMs":200,"preparedSessionCacheSize":5,"strict":false,"extraEventTypes":[]}
//! {"backend":"sqlite","path":"/path/sessions.db"|":memory:","journalMode":"wal",
//!  "busyTimeoutMs":5000, …the shared keys…}
//! {"backend":"postgres","url":"postgresql://user:pw@host:5432/db","schema":"dsh",
//!  "poolSize":8,"connectTimeoutMs":5000,"sslMode":"prefer","sslRootCert":"/ca.pem",
//!  "sslCert":"/client.pem","sslKey":"/client.key","applicationName":"dsh-persist",
//!  "cacheDir":"/home/agent/.cache/dsh-persist", …}
//! ```
//! Shared by every backend: `"maxRecordBytes":268435456,"maxLogBytes":1073741824`,
//! the read and write bounds of [`crate::backend::limits`].
//! Unknown keys are rejected so a typo never silently falls back to a default.

pub use crate::backend::jsonl::{Compression, JsonlConfig};
pub use crate::backend::limits::Limits;
pub use crate::backend::postgres::{PostgresConfig, SslMode};
pub use crate::backend::sqlite::{JournalMode, SqliteConfig};
use crate::error::{Error, Result};
use crate::model::json;

/// Largest accepted `writeBatchMaxDelayMs` (a JavaScript timer's limit).
pub const MAX_WRITE_DELAY_MS: u64 = 2_147_483_647;

/// Which storage to open, with the backend's own settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendConfig {
    Jsonl(JsonlConfig),
    Sqlite(SqliteConfig),
    Postgres(PostgresConfig),
}

/// Everything `Store::open` needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreConfig {
    pub backend: BackendConfig,
    /// Write-behind window of live sessions (SPEC §6.1), default 200 ms.
    pub write_batch_max_delay_ms: u64,
    /// Cold inspections retained for reuse (SPEC §6), default 5.
    pub prepared_session_cache_size: usize,
    /// Check the strict turn/step trace (SPEC §1.6) on read too.
    pub strict: bool,
    /// Event types accepted beyond the built-in vocabulary.
    pub extra_event_types: Vec<String>,
}

impl BackendConfig {
    /// The read and write bounds of the backend.
    pub fn limits(&self) -> &Limits {
        match self {
            BackendConfig::Jsonl(c) => &c.limits,
            BackendConfig::Sqlite(c) => &c.limits,
            BackendConfig::Postgres(c) => &c.limits,
        }
    }
}

impl StoreConfig {
    /// A JSONL store with defaults (zstd, packed chunks).
    pub fn jsonl(root: impl Into<String>) -> Self {
        StoreConfig::with_backend(BackendConfig::Jsonl(JsonlConfig::new(root.into())))
    }

    /// A SQLite store with defaults (WAL, 5 s busy timeout).
    pub fn sqlite(path: impl Into<String>) -> Self {
        StoreConfig::with_backend(BackendConfig::Sqlite(SqliteConfig::new(path.into())))
    }

    /// A PostgreSQL store with defaults (schema `dsh`, 8 connections).
    pub fn postgres(url: impl Into<String>) -> Self {
        StoreConfig::with_backend(BackendConfig::Postgres(PostgresConfig::new(url.into())))
    }

    pub fn with_backend(backend: BackendConfig) -> Self {
        StoreConfig {
            backend,
            write_batch_max_delay_ms: 200,
            prepared_session_cache_size: 5,
            strict: false,
            extra_event_types: Vec::new(),
        }
    }

    /// Parses the configuration JSON (SPEC §11).
    pub fn parse(text: &str) -> Result<StoreConfig> {
        let fields = json::object_fields(text)
            .map_err(|e| Error::invalid(format!("store config is not a JSON object: {e}")))?;
        let get = |k: &str| {
            fields
                .iter()
                .find(|(key, _)| key.eq_str(k))
                .map(|(_, v)| *v)
        };
        let string = |k: &str| -> Result<Option<String>> {
            match get(k) {
                None => Ok(None),
                Some(v) => json::as_str(v)
                    .map(|t| Some(t.decode().into_owned()))
                    .ok_or_else(|| Error::invalid(format!("store config {k} must be a string"))),
            }
        };
        let uint = |k: &str, max: u64| -> Result<Option<u64>> {
            match get(k) {
                None => Ok(None),
                Some(v) => json::as_safe_uint(v)
                    .filter(|n| *n <= max)
                    .map(Some)
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "store config {k} must be an integer from 0 to {max}"
                        ))
                    }),
            }
        };
        let boolean = |k: &str| -> Result<Option<bool>> {
            match get(k).map(str::trim) {
                None => Ok(None),
                Some("true") => Ok(Some(true)),
                Some("false") => Ok(Some(false)),
                Some(_) => Err(Error::invalid(format!(
                    "store config {k} must be true or false"
                ))),
            }
        };
        let kind = string("backend")?.ok_or_else(|| {
            Error::invalid("store config needs \"backend\": \"jsonl\", \"sqlite\" or \"postgres\"")
        })?;
        let common = [
            "backend",
            "writeBatchMaxDelayMs",
            "preparedSessionCacheSize",
            "strict",
            "extraEventTypes",
            "maxRecordBytes",
            "maxLogBytes",
        ];
        let max = json::MAX_SAFE_INTEGER as u64;
        let limits = Limits::new(
            uint("maxRecordBytes", max)?
                .unwrap_or(crate::backend::limits::DEFAULT_MAX_RECORD_BYTES),
            uint("maxLogBytes", max)?.unwrap_or(crate::backend::limits::DEFAULT_MAX_LOG_BYTES),
        )?;
        let (backend, own): (BackendConfig, &[&str]) = match kind.as_str() {
            "jsonl" => {
                let root = string("root")?.filter(|r| !r.is_empty()).ok_or_else(|| {
                    Error::invalid("store config for jsonl needs a non-empty \"root\" directory")
                })?;
                let compression = match string("compression")?.as_deref() {
                    None | Some("zstd") => Compression::Zstd,
                    Some("none") => Compression::None,
                    Some(other) => {
                        return Err(Error::invalid(format!(
                            "store config compression must be \"zstd\" or \"none\", not {}",
                            json::quote(other)
                        )));
                    }
                };
                (
                    BackendConfig::Jsonl(JsonlConfig {
                        root: root.into(),
                        compression,
                        pack_chunks: boolean("packChunks")?.unwrap_or(true),
                        limits,
                    }),
                    &["root", "compression", "packChunks"],
                )
            }
            "sqlite" => {
                let path = string("path")?.filter(|r| !r.is_empty()).ok_or_else(|| {
                    Error::invalid(
                        "store config for sqlite needs a \"path\" (a file or \":memory:\")",
                    )
                })?;
                let journal_mode = match string("journalMode")? {
                    None => JournalMode::Wal,
                    Some(m) => JournalMode::parse(&m).map_err(|_| {
                        Error::invalid(format!(
                            "store config journalMode must be wal, delete, truncate or persist, not {}",
                            json::quote(&m)
                        ))
                    })?,
                };
                (
                    BackendConfig::Sqlite(SqliteConfig {
                        path,
                        journal_mode,
                        busy_timeout_ms: uint("busyTimeoutMs", i32::MAX as u64)?.unwrap_or(5000)
                            as u32,
                        limits,
                    }),
                    &["path", "journalMode", "busyTimeoutMs"],
                )
            }
            "postgres" => {
                let url = string("url")?.filter(|r| !r.is_empty()).ok_or_else(|| {
                    Error::invalid(
                        "store config for postgres needs a \"url\" (postgresql://user:password@host:port/database)",
                    )
                })?;
                let mut c = PostgresConfig::new(url);
                c.limits = limits;
                if let Some(schema) = string("schema")? {
                    c.schema = schema;
                }
                if let Some(n) = uint(
                    "poolSize",
                    crate::backend::postgres::config::MAX_POOL_SIZE as u64,
                )? {
                    c.pool_size = n as usize;
                }
                if let Some(ms) = uint("connectTimeoutMs", i32::MAX as u64)? {
                    c.connect_timeout_ms = ms;
                }
                c.ssl_mode = string("sslMode")?.map(|m| SslMode::parse(&m)).transpose()?;
                c.ssl_root_cert = string("sslRootCert")?.map(Into::into);
                c.ssl_cert = string("sslCert")?.map(Into::into);
                c.ssl_key = string("sslKey")?.map(Into::into);
                if let Some(name) = string("applicationName")? {
                    c.application_name = name;
                }
                c.cache_dir = string("cacheDir")?
                    .map(|d| {
                        if d.is_empty() {
                            Err(Error::invalid("cacheDir must not be empty"))
                        } else {
                            Ok(d.into())
                        }
                    })
                    .transpose()?;
                // Checked now, so a bad setting fails before any connection.
                c.resolve()?;
                (
                    BackendConfig::Postgres(c),
                    &[
                        "url",
                        "schema",
                        "poolSize",
                        "connectTimeoutMs",
                        "sslMode",
                        "sslRootCert",
                        "sslCert",
                        "sslKey",
                        "applicationName",
                        "cacheDir",
                    ],
                )
            }
            other => {
                return Err(Error::invalid(format!(
                    "store config backend must be \"jsonl\", \"sqlite\" or \"postgres\", not {}",
                    json::quote(other)
                )));
            }
        };
        for (k, _) in &fields {
            let k = k.decode();
            if !common.contains(&k.as_ref()) && !own.contains(&k.as_ref()) {
                return Err(Error::invalid(format!(
                    "store config has unknown key {} for backend {kind}",
                    json::quote(&k)
                )));
            }
        }
        let mut extra = Vec::new();
        if let Some(v) = get("extraEventTypes") {
            let items = json::array_items(v).map_err(|_| {
                Error::invalid("store config extraEventTypes must be an array of strings")
            })?;
            for item in items {
                let t = json::as_str(item)
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| {
                        Error::invalid(
                            "store config extraEventTypes must be an array of non-empty strings",
                        )
                    })?;
                extra.push(t.decode().into_owned());
            }
        }
        Ok(StoreConfig {
            backend,
            write_batch_max_delay_ms: uint("writeBatchMaxDelayMs", MAX_WRITE_DELAY_MS)?
                .unwrap_or(200),
            prepared_session_cache_size: uint("preparedSessionCacheSize", 1 << 20)?.unwrap_or(5)
                as usize,
            strict: boolean("strict")?.unwrap_or(false),
            extra_event_types: extra,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_backends_with_defaults() {
        let c = StoreConfig::parse(r#"{"backend":"jsonl","root":"/tmp/x"}"#).unwrap();
        assert_eq!(c, StoreConfig::jsonl("/tmp/x"));
        let c = StoreConfig::parse(
            r#"{"backend":"sqlite","path":":memory:","journalMode":"DELETE","busyTimeoutMs":10,"strict":true,"extraEventTypes":["a/b"],"writeBatchMaxDelayMs":0,"preparedSessionCacheSize":0}"#,
        )
        .unwrap();
        assert_eq!(
            c.backend,
            BackendConfig::Sqlite(SqliteConfig {
                path: ":memory:".into(),
                journal_mode: JournalMode::Delete,
                busy_timeout_ms: 10,
                limits: Limits::default(),
            })
        );
        assert!(c.strict);
        assert_eq!(c.extra_event_types, vec!["a/b".to_string()]);
        assert_eq!(c.write_batch_max_delay_ms, 0);
        assert_eq!(c.prepared_session_cache_size, 0);
        let c = StoreConfig::parse(
            r#"{"backend":"jsonl","root":"/r","compression":"none","packChunks":false}"#,
        )
        .unwrap();
        assert_eq!(
            c.backend,
            BackendConfig::Jsonl(JsonlConfig {
                root: "/r".into(),
                compression: Compression::None,
                pack_chunks: false,
                limits: Limits::default(),
            })
        );
    }

    #[test]
    fn parses_postgres_with_every_key() {
        let c = StoreConfig::parse(r#"{"backend":"postgres","url":"postgresql://u@h/d"}"#).unwrap();
        assert_eq!(c, StoreConfig::postgres("postgresql://u@h/d"));
        let c = StoreConfig::parse(
            r#"{"backend":"postgres","url":"postgresql://u@h/d","schema":"agents_1","poolSize":3,"connectTimeoutMs":250,"sslMode":"verify-full","sslRootCert":"/ca.pem","sslCert":"/c.pem","sslKey":"/c.key","applicationName":"fleet","cacheDir":"/var/cache/agent","strict":true}"#,
        )
        .unwrap();
        let BackendConfig::Postgres(p) = &c.backend else {
            panic!("not postgres")
        };
        assert_eq!(p.schema, "agents_1");
        assert_eq!((p.pool_size, p.connect_timeout_ms), (3, 250));
        assert_eq!(p.ssl_mode, Some(SslMode::VerifyFull));
        assert_eq!(
            p.ssl_root_cert.as_deref(),
            Some(std::path::Path::new("/ca.pem"))
        );
        assert_eq!(p.ssl_cert.as_deref(), Some(std::path::Path::new("/c.pem")));
        assert_eq!(p.ssl_key.as_deref(), Some(std::path::Path::new("/c.key")));
        assert_eq!(p.application_name, "fleet");
        assert_eq!(
            p.cache_dir.as_deref(),
            Some(std::path::Path::new("/var/cache/agent"))
        );
        assert!(c.strict);
        let empty = r#"{"backend":"postgres","url":"postgresql://u@h/d","cacheDir":""}"#;
        assert!(
            StoreConfig::parse(empty)
                .unwrap_err()
                .to_string()
                .contains("cacheDir must not be empty")
        );
    }

    #[test]
    fn limits_are_shared_keys_of_every_backend() {
        for text in [
            r#"{"backend":"jsonl","root":"/r","maxRecordBytes":4194304,"maxLogBytes":8388608}"#,
            r#"{"backend":"sqlite","path":"/x.db","maxLogBytes":8388608,"maxRecordBytes":4194304}"#,
            r#"{"backend":"postgres","url":"postgresql://u@h/d","maxRecordBytes":4194304,"maxLogBytes":8388608}"#,
        ] {
            let c = StoreConfig::parse(text).unwrap();
            assert_eq!(
                *c.backend.limits(),
                Limits::new(4 << 20, 8 << 20).unwrap(),
                "{text}"
            );
        }
        let c = StoreConfig::parse(r#"{"backend":"jsonl","root":"/r"}"#).unwrap();
        assert_eq!(*c.backend.limits(), Limits::default());
    }

    #[test]
    fn rejects_bad_config_with_a_reason() {
        let cases = [
            ("[]", "not a JSON object"),
            ("{}", "needs \"backend\""),
            (
                r#"{"backend":"mongo"}"#,
                "must be \"jsonl\", \"sqlite\" or \"postgres\"",
            ),
            (r#"{"backend":"postgres"}"#, "needs a \"url\""),
            (
                r#"{"backend":"postgres","url":"postgresql://h/d","poolSize":0}"#,
                "poolSize must be from 1",
            ),
            (
                r#"{"backend":"postgres","url":"postgresql://h/d","sslMode":"maybe"}"#,
                "sslMode must be",
            ),
            (
                r#"{"backend":"postgres","url":"postgresql://h/d","schema":"a b"}"#,
                "schema \"a b\" must be",
            ),
            (
                r#"{"backend":"postgres","url":"postgresql://h/d","path":"/x"}"#,
                "unknown key \"path\" for backend postgres",
            ),
            (r#"{"backend":"jsonl"}"#, "needs a non-empty \"root\""),
            (r#"{"backend":"sqlite"}"#, "needs a \"path\""),
            (
                r#"{"backend":"jsonl","root":"/r","compression":"gzip"}"#,
                "compression must be",
            ),
            (
                r#"{"backend":"jsonl","root":"/r","path":"/x"}"#,
                "unknown key \"path\"",
            ),
            (
                r#"{"backend":"sqlite","path":"/x","journalMode":"off"}"#,
                "journalMode must be",
            ),
            (
                r#"{"backend":"jsonl","root":"/r","writeBatchMaxDelayMs":2147483648}"#,
                "writeBatchMaxDelayMs must be",
            ),
            (
                r#"{"backend":"jsonl","root":"/r","writeBatchMaxDelayMs":-1}"#,
                "writeBatchMaxDelayMs must be",
            ),
            (
                r#"{"backend":"jsonl","root":"/r","strict":1}"#,
                "strict must be true or false",
            ),
            (
                r#"{"backend":"jsonl","root":"/r","extraEventTypes":[1]}"#,
                "extraEventTypes must be",
            ),
            (
                r#"{"backend":"jsonl","root":"/r","maxRecordBytes":1000}"#,
                "maxRecordBytes must be an integer from 2097152",
            ),
            (
                r#"{"backend":"sqlite","path":"/x","maxRecordBytes":4194304,"maxLogBytes":3145728}"#,
                "maxLogBytes must be an integer from maxRecordBytes",
            ),
            (
                r#"{"backend":"sqlite","path":"/x","maxLogBytes":-1}"#,
                "maxLogBytes must be",
            ),
        ];
        for (text, want) in cases {
            let e = StoreConfig::parse(text).unwrap_err();
            assert!(e.to_string().contains(want), "{text}: {e}");
        }
    }
}
