//! SQLite's part of session management (issue 19): deleting a session
//! (its events and its `sessions` row in one `BEGIN IMMEDIATE`
//! transaction) and the last event's time.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::sql_error;
use crate::error::Result;
use crate::model::json::quote;

/// Deletes the rows and the session row of `id` in one transaction.
/// Returns whether a session row was there.
pub fn delete_session(conn: &mut Connection, label: &str, id: &str) -> Result<bool> {
    let what = |op: &str| format!("cannot {op} of session {}", quote(id));
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| sql_error(label, "cannot start a write transaction", e))?;
    tx.execute("DELETE FROM events WHERE session_id = ?1", params![id])
        .map_err(|e| sql_error(label, &what("delete the events"), e))?;
    let n = tx
        .execute("DELETE FROM sessions WHERE id = ?1", params![id])
        .map_err(|e| sql_error(label, &what("delete the session row"), e))?;
    tx.commit()
        .map_err(|e| sql_error(label, &what("commit the delete"), e))?;
    Ok(n > 0)
}

/// The `time` of the last event row of `id` (one primary-key seek), or
/// `None` when it has none.
pub fn last_event_time(conn: &Connection, label: &str, id: &str) -> Result<Option<i64>> {
    conn.query_row(
        "SELECT time FROM events WHERE session_id = ?1 ORDER BY seq DESC LIMIT 1",
        params![id],
        |r| r.get(0),
    )
    .optional()
    .map_err(|e| {
        sql_error(
            label,
            &format!("cannot read the last event of session {}", quote(id)),
            e,
        )
    })
}
