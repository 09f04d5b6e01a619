//! The PostgreSQL test server: its URL, throw-away schemas, admin clients.
//!
//! Tests that need the server read `DSH_TEST_POSTGRES_URL` (set by
//! `bash scripts/pg-test-server.sh start DIR; source DIR/env`, and always by
//! `.ci/run`). Without it they print why they skip; under CI (`CI` set) a
//! missing URL fails them instead, so CI can never pass without running them.

use std::sync::atomic::{AtomicU64, Ordering};

use dsh_persist::store::PostgresConfig;

pub const URL_ENV: &str = "DSH_TEST_POSTGRES_URL";
pub const CA_ENV: &str = "DSH_TEST_POSTGRES_CA";

/// The server's URL, or `None` (after saying so loudly) when it is not set.
pub fn url(test: &str) -> Option<String> {
    match std::env::var(URL_ENV) {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            if std::env::var_os("CI").is_some() {
                panic!(
                    "{test}: {URL_ENV} is not set under CI; .ci/run must start the PostgreSQL test server (scripts/pg-test-server.sh)"
                );
            }
            eprintln!(
                "SKIPPED {test}: no PostgreSQL server; set {URL_ENV} (bash scripts/pg-test-server.sh start DIR && source DIR/env)"
            );
            None
        }
    }
}

/// A schema name no other test (or test process) uses.
pub fn unique_schema(tag: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let tag: String = tag
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(16)
        .collect();
    format!(
        "t_{tag}_{}_{}_{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A plain connection for inspecting or tampering with the tables.
pub fn admin(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls)
        .unwrap_or_else(|e| panic!("cannot connect to the test server: {e}"))
}

/// Drops `schema` and everything in it.
pub fn drop_schema(url: &str, schema: &str) {
    if let Ok(mut c) = postgres::Client::connect(url, postgres::NoTls) {
        let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"));
    }
}

/// A schema dropped when this guard is.
pub struct Schema {
    pub url: String,
    pub name: String,
}

impl Schema {
    pub fn new(url: &str, tag: &str) -> Schema {
        Schema {
            url: url.to_string(),
            name: unique_schema(tag),
        }
    }

    pub fn config(&self) -> PostgresConfig {
        PostgresConfig::new(self.url.clone()).with_schema(self.name.clone())
    }

    pub fn admin(&self) -> postgres::Client {
        let mut c = admin(&self.url);
        c.batch_execute(&format!("SET search_path TO \"{}\"", self.name))
            .unwrap();
        c
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        drop_schema(&self.url, &self.name);
    }
}
