//! The catalog window of a SQLite session (see
//! [`crate::backend::rows::window`]): indexed rows in one read transaction.

use rusqlite::{Connection, params};

use super::reader::{begin_read, select_rows};
use super::rows::{ROW_COLUMNS, StoredRow};
use super::sql_error;
use crate::backend::Revision;
use crate::backend::catalog::{Window, WindowSpec};
use crate::backend::limits::Limits;
use crate::backend::rows::window::{TailRun, WindowRows, assemble};
use crate::error::Result;

struct Rows<'a> {
    conn: &'a Connection,
    label: &'a str,
    id: &'a str,
    limits: &'a Limits,
}

impl WindowRows for Rows<'_> {
    fn last_row(&mut self) -> Result<Option<StoredRow>> {
        Ok(select_rows(
            self.conn,
            self.label,
            &format!(
                "SELECT {ROW_COLUMNS} FROM events WHERE session_id = ?1 ORDER BY seq DESC LIMIT 1"
            ),
            [self.id],
            self.id,
            self.limits,
        )?
        .pop())
    }

    fn row_of_type(&mut self, event_type: &str, first: bool) -> Result<Option<StoredRow>> {
        let order = if first { "ASC" } else { "DESC" };
        Ok(select_rows(
            self.conn,
            self.label,
            &format!(
                "SELECT {ROW_COLUMNS} FROM events WHERE session_id = ?1 AND type = ?2 ORDER BY seq {order} LIMIT 1"
            ),
            params![self.id, event_type],
            self.id,
            self.limits,
        )?
        .pop())
    }

    fn stored_bytes(&mut self) -> Result<u64> {
        let n: i64 = self
            .conn
            .prepare_cached(STORED_BYTES_SQL)
            .and_then(|mut stmt| stmt.query_row([self.id], |r| r.get(0)))
            .map_err(|e| sql_error(self.label, "cannot size the rows of a session", e))?;
        Ok(n.max(0) as u64)
    }

    fn rows_after(&mut self, seq: i64) -> Result<Vec<StoredRow>> {
        select_rows(
            self.conn,
            self.label,
            &format!(
                "SELECT {ROW_COLUMNS} FROM events WHERE session_id = ?1 AND seq > ?2 ORDER BY seq"
            ),
            params![self.id, seq],
            self.id,
            self.limits,
        )
    }

    fn tail_run(&mut self, last_seq: i64) -> Result<TailRun> {
        // Prepared once per connection: it runs for every session a
        // listing summarises, and parsing it cost a fifth of a listing.
        self.conn
            .prepare_cached(TAIL_RUN_SQL)
            .and_then(|mut stmt| {
                stmt.query_row(params![self.id, last_seq], |r| {
                    Ok(TailRun {
                        turn_end_seq: r.get(0)?,
                        rows: r.get(1)?,
                        packed_before_last: r.get(2)?,
                    })
                })
            })
            .map_err(|e| sql_error(self.label, "cannot count the last rows of a session", e))
    }
}

/// The size of a session's rows as stored (see [`WindowRows::stored_bytes`]).
const STORED_BYTES_SQL: &str = "SELECT coalesce(sum(octet_length(type) + octet_length(data) + coalesce(octet_length(source_event_seqs), 0) + coalesce(octet_length(surface_op), 0) + 16), 0) FROM events WHERE session_id = ?1";

/// See [`WindowRows::tail_run`]: both scans seek the `(session_id, seq)` key.
const TAIL_RUN_SQL: &str = "WITH te(s) AS (SELECT coalesce((SELECT seq FROM events WHERE session_id = ?1 AND type = 'turn/end' ORDER BY seq DESC LIMIT 1), -1)) \
     SELECT te.s, count(e.seq), coalesce(sum(CASE WHEN e.ignorable = 0 AND e.seq < ?2 THEN 1 ELSE 0 END), 0) \
     FROM te LEFT JOIN events e ON e.session_id = ?1 AND e.seq > te.s";

/// What the rows of a session give its window.
pub enum RowWindow {
    Window(Box<Window>),
    /// A row does not decode, or the tail is torn (see
    /// [`assemble`]): the caller reads the log whole; `bytes` is the size
    /// of its rows as stored, the size the window reports either way.
    FullRead {
        bytes: u64,
    },
}

/// The window of `id`, read on `conn`: `None` when not stored.
pub fn read_window(
    conn: &mut Connection,
    label: &str,
    id: &str,
    spec: &WindowSpec<'_>,
    limits: &Limits,
    revision: &dyn Fn(&str, i64) -> Revision,
) -> Result<Option<RowWindow>> {
    let Some((tx, session)) = begin_read(conn, label, id)? else {
        return Ok(None);
    };
    let rev = revision(&session.incarnation, session.revision);
    let mut rows = Rows {
        conn: &tx,
        label,
        id,
        limits,
    };
    let window = match assemble(session.header, rev, spec, limits, &mut rows)? {
        Some(w) => RowWindow::Window(Box::new(w)),
        None => RowWindow::FullRead {
            bytes: rows.stored_bytes()?,
        },
    };
    tx.finish()
        .map_err(|e| sql_error(label, "cannot end a read transaction", e))?;
    Ok(Some(window))
}
