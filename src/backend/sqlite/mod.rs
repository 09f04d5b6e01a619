//! SQLite backend, schema 17 (SPEC §4).
