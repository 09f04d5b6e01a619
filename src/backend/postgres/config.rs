//! How to reach a PostgreSQL store: the URL, the schema, the pool, TLS.

use std::path::PathBuf;
use std::time::Duration;

use crate::backend::limits::Limits;
use crate::error::{Error, Result};
use crate::model::json::quote;

/// The schema used when the configuration names none.
pub const DEFAULT_SCHEMA: &str = "dsh";
/// Connections kept by the pool by default: enough for eight sessions
/// writing at once.
pub const DEFAULT_POOL_SIZE: usize = 8;
/// Largest accepted `poolSize`.
pub const MAX_POOL_SIZE: usize = 256;
/// How long connecting to the server may take, by default.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 5_000;
/// The `application_name` of our connections by default (seen in
/// `pg_stat_activity`).
pub const DEFAULT_APPLICATION_NAME: &str = "dsh-persist";
/// Longest schema name: the notification channel `<schema>.batches` must fit
/// in PostgreSQL's 63-byte identifiers.
pub const MAX_SCHEMA_LEN: usize = 48;

/// libpq's `sslmode` values. PostgreSQL's own default is `prefer`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SslMode {
    /// Plain TCP only.
    Disable,
    /// TLS when the server offers it, without verifying its certificate.
    #[default]
    Prefer,
    /// TLS always, without verifying the certificate (libpq's meaning).
    Require,
    /// TLS; the certificate must chain to a trusted root (any host name).
    VerifyCa,
    /// TLS; the certificate must chain to a trusted root and name the host.
    VerifyFull,
}

impl SslMode {
    /// Parses a libpq `sslmode` value.
    pub fn parse(text: &str) -> Result<SslMode> {
        Ok(match text {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            // libpq's `allow` tries plain first; we never downgrade silently.
            other => {
                return Err(Error::invalid(format!(
                    "PostgreSQL sslMode must be disable, prefer, require, verify-ca or verify-full, not {}",
                    quote(other)
                )));
            }
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// The store configuration of the PostgreSQL backend
/// (`{"backend":"postgres","url":…}`, SPEC §11 extended).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresConfig {
    /// `postgresql://user:password@host:port/database?…` (or libpq's
    /// `key=value` form). `sslmode`, `sslrootcert`, `sslcert` and `sslkey`
    /// in a URL are honoured like the keys below, which take precedence.
    pub url: String,
    /// The schema holding the three tables (`schema`, default `dsh`):
    /// letters, digits and `_`, not starting with a digit, at most
    /// [`MAX_SCHEMA_LEN`] bytes.
    pub schema: String,
    /// Most connections the pool keeps open at once (`poolSize`, default 8;
    /// a live session's writer lock holds one more of its own).
    pub pool_size: usize,
    /// How long one connection attempt may take (`connectTimeoutMs`,
    /// default 5,000 ms) per host of the URL: the TCP connect, TLS and the
    /// startup together ([`super::deadline`]).
    pub connect_timeout_ms: u64,
    /// `sslMode` (default `prefer`).
    pub ssl_mode: Option<SslMode>,
    /// A PEM file of root certificates to trust (`sslRootCert`), in
    /// addition to the system's.
    pub ssl_root_cert: Option<PathBuf>,
    /// A PEM client certificate (`sslCert`) and its PKCS#8 PEM key
    /// (`sslKey`), for servers that ask for one; both or neither.
    pub ssl_cert: Option<PathBuf>,
    pub ssl_key: Option<PathBuf>,
    /// `applicationName` (default `dsh-persist`).
    pub application_name: String,
    /// `maxRecordBytes` / `maxLogBytes`: the read and write bounds.
    pub limits: Limits,
    /// `cacheDir`: a private directory on this host for the store's caches
    /// (append checkpoints, the search index), in a subdirectory per store
    /// (named by its store id). `None` (the default): a server store has no
    /// place of its own on the host, and nothing is cached. Must be owned
    /// by the current user and not group/world-writable; made 0700 when
    /// missing.
    pub cache_dir: Option<PathBuf>,
}

impl PostgresConfig {
    /// Defaults for `url`.
    pub fn new(url: impl Into<String>) -> PostgresConfig {
        PostgresConfig {
            url: url.into(),
            schema: DEFAULT_SCHEMA.to_string(),
            pool_size: DEFAULT_POOL_SIZE,
            connect_timeout_ms: DEFAULT_CONNECT_TIMEOUT_MS,
            ssl_mode: None,
            ssl_root_cert: None,
            ssl_cert: None,
            ssl_key: None,
            application_name: DEFAULT_APPLICATION_NAME.to_string(),
            limits: Limits::default(),
            cache_dir: None,
        }
    }

    /// The same with another schema.
    pub fn with_schema(mut self, schema: impl Into<String>) -> PostgresConfig {
        self.schema = schema.into();
        self
    }
}

/// Checks a schema name (see [`PostgresConfig::schema`]).
pub fn check_schema_name(schema: &str) -> Result<()> {
    let ok = !schema.is_empty()
        && schema.len() <= MAX_SCHEMA_LEN
        && schema
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !schema.as_bytes()[0].is_ascii_digit();
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "PostgreSQL schema {} must be 1 to {MAX_SCHEMA_LEN} letters, digits or '_', not starting with a digit",
            quote(schema)
        )))
    }
}

/// What the connection settings resolve to.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub pg: postgres::Config,
    pub ssl_mode: SslMode,
    pub ssl_root_cert: Option<PathBuf>,
    pub ssl_cert: Option<PathBuf>,
    pub ssl_key: Option<PathBuf>,
    /// `PostgreSQL server at host:port (database "d", schema "s")`, the
    /// subject of every message; never the password.
    pub label: String,
}

/// The TLS parameters a URL may carry that the driver does not know
/// (`verify-ca`/`verify-full`, certificate files): taken out and honoured
/// by us.
const TLS_URL_PARAMS: [&str; 4] = ["sslmode", "sslrootcert", "sslcert", "sslkey"];

/// Splits the TLS parameters out of a URL's query.
fn split_tls_params(url: &str) -> (String, Vec<(String, String)>) {
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let Some((base, query)) = url.split_once('?').filter(|_| is_url) else {
        return (url.to_string(), Vec::new());
    };
    let mut kept = Vec::new();
    let mut tls = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if TLS_URL_PARAMS.contains(&k) {
            tls.push((k.to_string(), percent_decode(v)));
        } else {
            kept.push(pair);
        }
    }
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    (url, tls)
}

/// `%XX` decoding of a URL query value (paths may be escaped).
fn percent_decode(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The label of a server: its hosts and ports, database and schema.
fn label_of(pg: &postgres::Config, schema: &str) -> String {
    let ports = pg.get_ports();
    let hosts: Vec<String> = pg
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let host = match h {
                postgres::config::Host::Tcp(name) => name.clone(),
                postgres::config::Host::Unix(path) => path.display().to_string(),
            };
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            format!("{host}:{port}")
        })
        .collect();
    let hosts = if hosts.is_empty() {
        "localhost:5432".to_string()
    } else {
        hosts.join(",")
    };
    let db = pg.get_dbname().or(pg.get_user()).unwrap_or("postgres");
    format!(
        "PostgreSQL server at {hosts} (database {}, schema {})",
        quote(db),
        quote(schema)
    )
}

impl PostgresConfig {
    /// Parses the URL and applies the settings (no I/O).
    pub fn resolve(&self) -> Result<Resolved> {
        check_schema_name(&self.schema)?;
        if self.pool_size == 0 || self.pool_size > MAX_POOL_SIZE {
            return Err(Error::invalid(format!(
                "PostgreSQL poolSize must be from 1 to {MAX_POOL_SIZE} (got {})",
                self.pool_size
            )));
        }
        if self.url.trim().is_empty() {
            return Err(Error::invalid("PostgreSQL url must not be empty"));
        }
        let (url, tls) = split_tls_params(&self.url);
        let mut pg: postgres::Config = url.parse().map_err(|e| {
            // The driver's message never repeats the URL (and its password).
            Error::invalid(format!(
                "PostgreSQL url is not a valid connection string: {e}"
            ))
        })?;
        let from_url = |k: &str| tls.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v);
        let ssl_mode = match (self.ssl_mode, from_url("sslmode")) {
            (Some(m), _) => m,
            (None, Some(v)) => SslMode::parse(v)?,
            (None, None) => SslMode::Prefer,
        };
        let path = |own: &Option<PathBuf>, key: &str| {
            own.clone()
                .or_else(|| from_url(key).filter(|v| !v.is_empty()).map(PathBuf::from))
        };
        let ssl_root_cert = path(&self.ssl_root_cert, "sslrootcert");
        let ssl_cert = path(&self.ssl_cert, "sslcert");
        let ssl_key = path(&self.ssl_key, "sslkey");
        if ssl_cert.is_some() != ssl_key.is_some() {
            return Err(Error::invalid(
                "PostgreSQL sslCert and sslKey go together: give both or neither",
            ));
        }
        pg.ssl_mode(match ssl_mode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                postgres::config::SslMode::Require
            }
        });
        pg.connect_timeout(Duration::from_millis(self.connect_timeout_ms.max(1)));
        pg.application_name(&self.application_name);
        pg.keepalives(true);
        pg.keepalives_idle(Duration::from_secs(60));
        let label = label_of(&pg, &self.schema);
        Ok(Resolved {
            pg,
            ssl_mode,
            ssl_root_cert,
            ssl_cert,
            ssl_key,
            label,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_parameters_leave_the_url_and_win_below_the_keys() {
        let c = PostgresConfig::new(
            "postgresql://u:secret@db.example:6543/app?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&application_name=x",
        );
        let r = c.resolve().unwrap();
        assert_eq!(r.ssl_mode, SslMode::VerifyFull);
        assert_eq!(r.ssl_root_cert, Some(PathBuf::from("/etc/ca.pem")));
        assert_eq!(
            r.label,
            "PostgreSQL server at db.example:6543 (database \"app\", schema \"dsh\")"
        );
        assert!(!r.label.contains("secret"));
        let mut c = c;
        c.ssl_mode = Some(SslMode::Disable);
        assert_eq!(c.resolve().unwrap().ssl_mode, SslMode::Disable);
        let r = PostgresConfig::new("host=/run/pg dbname=d user=u")
            .resolve()
            .unwrap();
        assert_eq!(r.ssl_mode, SslMode::Prefer);
        assert!(
            r.label.starts_with("PostgreSQL server at /run/pg:5432"),
            "{}",
            r.label
        );
    }

    #[test]
    fn bad_settings_are_refused_with_a_reason() {
        let bad = |c: PostgresConfig, want: &str| {
            let e = c.resolve().unwrap_err();
            assert!(e.to_string().contains(want), "{e}");
        };
        bad(PostgresConfig::new(""), "url must not be empty");
        bad(
            PostgresConfig::new("postgresql://h/d").with_schema("1x"),
            "schema \"1x\" must be",
        );
        bad(
            PostgresConfig::new("postgresql://h/d").with_schema("a-b"),
            "schema",
        );
        bad(
            PostgresConfig::new("postgresql://h/d").with_schema("a".repeat(49)),
            "schema",
        );
        bad(
            PostgresConfig::new("postgresql://h/d?sslmode=allow"),
            "sslMode must be",
        );
        bad(
            PostgresConfig::new("postgresql://h/d?sslcert=/c.pem"),
            "sslCert and sslKey go together",
        );
        let mut c = PostgresConfig::new("postgresql://h/d");
        c.pool_size = 0;
        bad(c, "poolSize must be");
        bad(
            PostgresConfig::new("postgresql://h:notaport/d"),
            "not a valid connection string",
        );
    }
}
