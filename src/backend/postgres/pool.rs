//! A small pool of PostgreSQL connections, and how their failures are told
//! apart (retry or give up).
//!
//! Our own rather than `r2d2`: we need little (a bounded set of clients,
//! waiting when all are out, dropping a client whose connection broke), the
//! per-connection setup is ours anyway (`synchronous_commit` checked,
//! `search_path`, the backend pid, a statement cache), and the writer locks
//! take connections of their own outside the pool. `r2d2` would add two
//! crates and a maintenance thread per pool for that.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};

use super::deadline;
use super::tls::Connector;
use parking_lot::{Condvar, Mutex};
use postgres::{Client, Statement};

use crate::error::{Error, Result};

use super::config::Resolved;

/// One connection with its setup done.
pub struct Conn {
    pub client: Client,
    /// `pg_backend_pid()` of the server process serving it.
    pub pid: i32,
    stmts: HashMap<&'static str, Statement>,
}

impl Conn {
    /// The prepared statement of `sql`, prepared once per connection.
    pub fn prep(&mut self, sql: &'static str) -> std::result::Result<Statement, postgres::Error> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        self.stmts.insert(sql, s.clone());
        Ok(s)
    }
}

/// Opens one connection as every connection of a store is opened: TLS as
/// configured, then `synchronous_commit = on` (checked) and the store's
/// schema as `search_path`.
pub fn connect(r: &Resolved, tls: &Connector, schema_ident: &str) -> Result<Conn> {
    let mut client = deadline::connect_within(r, tls)?.map_err(|e| connect_error(r, e))?;
    let setup = format!("SET synchronous_commit = on; SET search_path TO {schema_ident}");
    client
        .batch_execute(&setup)
        .map_err(|e| pg_error(&r.label, "cannot set up a connection", &e))?;
    let row = client
        .query_one(
            "SELECT current_setting('synchronous_commit'), pg_backend_pid()",
            &[],
        )
        .map_err(|e| pg_error(&r.label, "cannot set up a connection", &e))?;
    let sync: String = row.get(0);
    if sync != "on" {
        return Err(Error::io_msg(format!(
            "{}: synchronous_commit = on did not take effect (reads back {sync})",
            r.label
        )));
    }
    Ok(Conn {
        client,
        pid: row.get(1),
        stmts: HashMap::new(),
    })
}

fn connect_error(r: &Resolved, e: postgres::Error) -> Error {
    if let Some(db) = e.as_db_error() {
        // Refused by the server: authentication, a missing database, …
        return Error::io_msg(format!(
            "{}: the server refused the connection: {} ({})",
            r.label,
            db.message(),
            db.code().code()
        ));
    }
    Error::io_msg(format!("{}: cannot connect: {}", r.label, with_causes(&e)))
}

/// `e` and every error it wraps: the client's message alone ("error
/// performing TLS handshake") hides the cause.
fn with_causes(e: &postgres::Error) -> String {
    let mut message = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        message.push_str(&format!(": {c}"));
        cause = c.source();
    }
    message
}

/// Maps a driver error to ours, naming the server and what we were doing:
/// lock and serialization failures become [`Error::Busy`], a unique-key
/// violation a conflict, a text the database cannot hold an invalid
/// argument, everything else (the connection, the server) an I/O error.
pub fn pg_error(label: &str, context: &str, e: &postgres::Error) -> Error {
    let Some(db) = e.as_db_error() else {
        return Error::io_msg(format!("{label}: {context}: {}", with_causes(e)));
    };
    let code = db.code().code();
    let message = format!("{label}: {context}: {} ({code})", db.message());
    match code {
        "40001" | "40P01" | "55P03" => Error::Busy(message),
        "23505" => Error::conflict(message),
        "22021" | "22P05" => Error::invalid(message),
        _ => Error::io_msg(message),
    }
}

/// Whether an operation that failed with `e` may run again on a fresh
/// connection: the connection broke or the server went away
/// (SQLSTATE class 08, 57P01–57P03), or the transaction was chosen as a
/// serialization or deadlock victim. Such a transaction did not commit,
/// except when the connection broke during `COMMIT` itself, which the
/// writer checks before it runs a batch again.
pub fn retryable(e: &postgres::Error) -> bool {
    match e.as_db_error() {
        None => true,
        Some(db) => {
            let code = db.code().code();
            code.starts_with("08")
                || matches!(code, "57P01" | "57P02" | "57P03" | "40001" | "40P01")
        }
    }
}

struct State {
    idle: Vec<Conn>,
    open: usize,
    closed: bool,
}

/// At most `max` connections; [`Pool::get`] waits while all are out.
pub struct Pool {
    resolved: Resolved,
    tls: Connector,
    schema_ident: String,
    max: usize,
    state: Mutex<State>,
    returned: Condvar,
}

impl Pool {
    pub fn new(resolved: Resolved, tls: Connector, schema_ident: String, max: usize) -> Pool {
        Pool {
            resolved,
            tls,
            schema_ident,
            max,
            state: Mutex::new(State {
                idle: Vec::new(),
                open: 0,
                closed: false,
            }),
            returned: Condvar::new(),
        }
    }

    pub fn label(&self) -> &str {
        &self.resolved.label
    }

    /// The most connections the pool keeps open at once (`poolSize`).
    pub fn max(&self) -> usize {
        self.max
    }

    /// A new connection outside the pool (writer locks, listeners).
    pub fn connect_dedicated(&self) -> Result<Conn> {
        connect(&self.resolved, &self.tls, &self.schema_ident)
    }

    /// A connection: an idle one, a new one while fewer than `max` are
    /// open, or the next one returned.
    pub fn get(&self) -> Result<Pooled<'_>> {
        let mut st = self.state.lock();
        loop {
            if st.closed {
                return Err(Error::Closed(format!("{} is closed", self.resolved.label)));
            }
            if let Some(conn) = st.idle.pop() {
                if conn.client.is_closed() {
                    st.open -= 1;
                    continue;
                }
                return Ok(Pooled {
                    pool: self,
                    conn: Some(conn),
                    broken: false,
                });
            }
            if st.open < self.max {
                st.open += 1;
                drop(st);
                return match self.connect_dedicated() {
                    Ok(conn) => Ok(Pooled {
                        pool: self,
                        conn: Some(conn),
                        broken: false,
                    }),
                    Err(e) => {
                        self.state.lock().open -= 1;
                        self.returned.notify_one();
                        Err(e)
                    }
                };
            }
            self.returned.wait(&mut st);
        }
    }

    /// Closes the idle connections; later `get`s fail, connections still
    /// out are closed when they come back.
    pub fn close(&self) {
        let idle = {
            let mut st = self.state.lock();
            st.closed = true;
            st.open -= st.idle.len();
            std::mem::take(&mut st.idle)
        };
        self.returned.notify_all();
        for c in idle {
            let _ = c.client.close();
        }
    }

    fn put(&self, conn: Conn, broken: bool) {
        let mut st = self.state.lock();
        if broken || st.closed || conn.client.is_closed() {
            st.open -= 1;
            drop(st);
            drop(conn);
        } else {
            st.idle.push(conn);
        }
        self.returned.notify_one();
    }
}

/// A connection out of the pool; it goes back on drop unless marked broken.
pub struct Pooled<'p> {
    pool: &'p Pool,
    conn: Option<Conn>,
    broken: bool,
}

impl Pooled<'_> {
    /// Drops the connection instead of returning it (its state is unknown).
    pub fn discard(&mut self) {
        self.broken = true;
    }
}

impl Deref for Pooled<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn
            .as_ref()
            .expect("a pooled connection is present until drop")
    }
}

impl DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn
            .as_mut()
            .expect("a pooled connection is present until drop")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.put(conn, self.broken);
        }
    }
}
