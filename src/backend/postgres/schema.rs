//! The tables of a PostgreSQL store: schema 17's three tables in a schema of
//! their own, created on first open, checked on every open.
//!
//! The columns are those of SQLite schema 17 (SPEC §4.1) in PostgreSQL
//! types, with two changes a typed database needs: SQLite's `data ANY` (TEXT
//! or a zstd BLOB) is two columns, `data` (text) and `data_zstd` (bytea),
//! exactly one of them set; and `sessions.list_order` (an identity column)
//! keeps SQLite's rowid order for `list`. `persistence_state` carries the
//! identity SQLite keeps in pragmas (`application_id`, `schema_version`).

use postgres::{Client, GenericClient};

use crate::backend::sqlite::schema::{APPLICATION_ID, SCHEMA_VERSION};
use crate::error::{Error, Result};

use super::pool::pg_error;

/// The tables, `{schema}` standing for the quoted schema name.
pub const SCHEMA_SQL: &str = "CREATE TABLE {schema}.persistence_state (
  singleton      integer PRIMARY KEY CHECK (singleton = 1),
  store_id       text NOT NULL,
  application_id bigint NOT NULL,
  schema_version integer NOT NULL
);

CREATE TABLE {schema}.sessions (
  id               text PRIMARY KEY,
  version          bigint NOT NULL,
  created_at       bigint NOT NULL,
  cwd              text,
  parent_session   text,
  seed_length      bigint,
  origin           text,
  delegation_depth bigint,
  agent_preset     text,
  incarnation      text NOT NULL,
  revision         bigint NOT NULL,
  list_order       bigint GENERATED ALWAYS AS IDENTITY UNIQUE
);

CREATE TABLE {schema}.events (
  session_id        text NOT NULL REFERENCES {schema}.sessions(id) ON DELETE CASCADE,
  seq               bigint NOT NULL,
  type              text NOT NULL,
  time              bigint NOT NULL,
  data              text,
  data_zstd         bytea,
  source_event_seqs bytea,
  surface_op        text,
  ignorable         smallint CHECK (ignorable IS NULL OR ignorable IN (0, 1)),
  CHECK ((data IS NULL) <> (data_zstd IS NULL)),
  PRIMARY KEY (session_id, seq)
);
";

/// `"name"`, with embedded quotes doubled.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The columns [`SCHEMA_SQL`] creates: (table, column, type, nullable),
/// sorted, as `information_schema.columns` reports them.
fn expected_columns() -> Vec<(String, String, String, bool)> {
    let mut out = Vec::new();
    let mut table = String::new();
    for line in SCHEMA_SQL.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("CREATE TABLE {schema}.") {
            table = rest
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string();
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(name), Some(ty)) = (words.next(), words.next()) else {
            continue;
        };
        if name.starts_with(|c: char| c.is_ascii_uppercase()) || name == ");" {
            continue;
        }
        let ty = match ty.trim_end_matches(',') {
            "integer" => "integer",
            "bigint" => "bigint",
            "smallint" => "smallint",
            "text" => "text",
            "bytea" => "bytea",
            other => panic!("schema column type {other} not mapped"),
        };
        let nullable = !(line.contains("NOT NULL")
            || line.contains("PRIMARY KEY")
            || line.contains("IDENTITY"));
        out.push((table.clone(), name.to_string(), ty.to_string(), nullable));
    }
    out.sort();
    out
}

/// What an open found in the schema.
enum Found {
    /// No tables (the schema may not even exist).
    Pristine,
    Tables(Vec<(String, String, String, bool)>),
}

fn read_columns(client: &mut impl GenericClient, label: &str, schema: &str) -> Result<Found> {
    let rows = client
        .query(
            "SELECT c.table_name::text, c.column_name::text, c.data_type::text, c.is_nullable = 'YES' \
             FROM information_schema.columns c JOIN information_schema.tables t \
               ON t.table_schema = c.table_schema AND t.table_name = c.table_name \
             WHERE c.table_schema = $1 AND t.table_type = 'BASE TABLE'",
            &[&schema],
        )
        .map_err(|e| pg_error(label, "cannot read the schema", &e))?;
    let tables = client
        .query_one(
            "SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
            &[&schema],
        )
        .map_err(|e| pg_error(label, "cannot read the schema", &e))?
        .get::<_, i64>(0);
    if tables == 0 {
        return Ok(Found::Pristine);
    }
    let mut cols: Vec<(String, String, String, bool)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    cols.sort();
    Ok(Found::Tables(cols))
}

/// Checks the server (UTF-8), then the schema's identity and tables,
/// creating them in one transaction when the schema holds no table yet.
/// Returns the `store_id`. Refusals change nothing.
pub fn ensure_schema(client: &mut Client, label: &str, schema: &str) -> Result<String> {
    let encoding: String = client
        .query_one("SELECT current_setting('server_encoding')", &[])
        .map_err(|e| pg_error(label, "cannot read the server encoding", &e))?
        .get(0);
    if encoding != "UTF8" {
        return Err(Error::invalid(format!(
            "{label} uses the {encoding} encoding; a session store needs a UTF8 database"
        )));
    }
    let ident = quote_ident(schema);
    if let Found::Pristine = read_columns(client, label, schema)? {
        let mut tx = client
            .transaction()
            .map_err(|e| pg_error(label, "cannot start the initialisation transaction", &e))?;
        // One initialiser at a time: a concurrent opener waits here and
        // then finds the tables.
        tx.execute(
            "SELECT pg_advisory_xact_lock($1)",
            &[&super::lock::lock_key(schema, "\0init")],
        )
        .map_err(|e| pg_error(label, "cannot lock the initialisation", &e))?;
        let still_pristine = matches!(read_columns(&mut tx, label, schema)?, Found::Pristine);
        if still_pristine {
            let store_id = crate::uuid::uuid_v4();
            tx.batch_execute(&format!(
                "CREATE SCHEMA IF NOT EXISTS {ident}; {}",
                SCHEMA_SQL.replace("{schema}", &ident)
            ))
            .map_err(|e| pg_error(label, "cannot create the tables", &e))?;
            tx.execute(
                &format!(
                    "INSERT INTO {ident}.persistence_state (singleton, store_id, application_id, schema_version) VALUES (1, $1, $2, $3)"
                ),
                &[&store_id, &APPLICATION_ID, &(SCHEMA_VERSION as i32)],
            )
            .map_err(|e| pg_error(label, "cannot write the store id", &e))?;
            tx.commit()
                .map_err(|e| pg_error(label, "cannot commit the initialisation", &e))?;
            return Ok(store_id);
        }
        tx.rollback()
            .map_err(|e| pg_error(label, "cannot end the initialisation transaction", &e))?;
    }
    verify(client, label, schema)
}

fn verify(client: &mut Client, label: &str, schema: &str) -> Result<String> {
    let Found::Tables(found) = read_columns(client, label, schema)? else {
        return Err(Error::corruption(format!(
            "{label}: the tables vanished while opening"
        )));
    };
    let has_state = found.iter().any(|(t, _, _, _)| t == "persistence_state");
    if !has_state {
        return Err(Error::invalid(format!(
            "{label}: schema {} holds tables but is not a dsh session store (no persistence_state table); refusing to use it",
            crate::model::json::quote(schema)
        )));
    }
    let ident = quote_ident(schema);
    // The identity first, so a newer schema is told as such.
    let state = client
        .query_opt(
            &format!(
                "SELECT store_id::text, application_id::bigint, schema_version::bigint FROM {ident}.persistence_state WHERE singleton = 1"
            ),
            &[],
        )
        .map_err(|e| pg_error(label, "cannot read the store identity", &e))?;
    let Some(state) = state else {
        return Err(Error::corruption(format!(
            "{label} has no persistence_state row (store id missing)"
        )));
    };
    let (store_id, app, version): (String, i64, i64) = (state.get(0), state.get(1), state.get(2));
    if app != APPLICATION_ID {
        return Err(Error::invalid(format!(
            "{label} belongs to another application (application_id {app}, expected {APPLICATION_ID}); refusing to use it"
        )));
    }
    if version != SCHEMA_VERSION {
        let mut m = format!(
            "{label} has schema version {version}, incompatible with this build ({SCHEMA_VERSION})"
        );
        if version > SCHEMA_VERSION {
            m.push_str(": it was written by a newer build \u{2014} upgrade to open it");
        }
        return Err(Error::FormatUnsupported(m));
    }
    let expected = expected_columns();
    if found != expected {
        let show = |c: &(String, String, String, bool)| format!("{}.{} {}", c.0, c.1, c.2);
        let unexpected: Vec<String> = found
            .iter()
            .filter(|c| !expected.contains(c))
            .map(show)
            .collect();
        let missing: Vec<String> = expected
            .iter()
            .filter(|c| !found.contains(c))
            .map(show)
            .collect();
        return Err(Error::corruption(format!(
            "{label} has an altered schema (unexpected or changed: [{}]; missing or changed: [{}]); refusing to use it",
            unexpected.join(", "),
            missing.join(", ")
        )));
    }
    Ok(store_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_columns_follow_the_ddl() {
        let cols = expected_columns();
        assert_eq!(cols.len(), 4 + 12 + 9);
        assert!(cols.contains(&("events".into(), "data_zstd".into(), "bytea".into(), true)));
        assert!(cols.contains(&("sessions".into(), "id".into(), "text".into(), false)));
        assert!(cols.contains(&(
            "sessions".into(),
            "list_order".into(),
            "bigint".into(),
            false
        )));
        assert!(cols.contains(&("events".into(), "ignorable".into(), "smallint".into(), true)));
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }
}
