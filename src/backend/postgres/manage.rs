//! PostgreSQL's part of session management (issue 19): deleting a session
//! (its events and its `sessions` row in one transaction) and the last
//! event's time.

use super::Fail;
use super::pool::Conn;

const DELETE_EVENTS_SQL: &str = "DELETE FROM events WHERE session_id = $1";
const DELETE_SESSION_SQL: &str = "DELETE FROM sessions WHERE id = $1";
const LAST_TIME_SQL: &str =
    "SELECT time FROM events WHERE session_id = $1 ORDER BY seq DESC LIMIT 1";

/// Deletes the rows and the session row of `id` in one transaction.
/// Returns whether a session row was there.
pub fn delete_session(conn: &mut Conn, id: &str) -> std::result::Result<bool, Fail> {
    let events = conn.prep(DELETE_EVENTS_SQL)?;
    let session = conn.prep(DELETE_SESSION_SQL)?;
    let mut tx = conn.client.transaction()?;
    tx.execute(&events, &[&id])?;
    let n = tx.execute(&session, &[&id])?;
    tx.commit()?;
    Ok(n > 0)
}

/// The `time` of the last event row of `id`, or `None` when it has none.
pub fn last_event_time(conn: &mut Conn, id: &str) -> std::result::Result<Option<i64>, Fail> {
    let stmt = conn.prep(LAST_TIME_SQL)?;
    Ok(conn.client.query_opt(&stmt, &[&id])?.map(|r| r.get(0)))
}
