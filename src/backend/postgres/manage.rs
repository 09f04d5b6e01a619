//! PostgreSQL's part of session management (issue 19): deleting a session
//! (its events and its `sessions` row in one transaction, with a `delete`
//! notification for followers) and the last
//! event's time.

use super::Fail;
use super::pool::Conn;

const DELETE_EVENTS_SQL: &str = "DELETE FROM events WHERE session_id = $1";
/// Deletes the session row and notifies `<schema>.batches` with the
/// writer's payload shape, kind `delete` (`from`/`next` null), sent when
/// the transaction commits, so a follower hears that the session is gone.
const DELETE_SESSION_SQL: &str = "DELETE FROM sessions WHERE id = $1 \
     RETURNING pg_notify($2, json_build_object('id', CASE WHEN octet_length($1) <= 7000 THEN $1 END, 'kind', 'delete', 'from', NULL, 'next', NULL, 'revision', revision)::text)::text";
const LAST_TIME_SQL: &str =
    "SELECT time FROM events WHERE session_id = $1 ORDER BY seq DESC LIMIT 1";

/// Deletes the rows and the session row of `id` in one transaction, and
/// notifies `channel` of it. Returns whether a session row was there.
pub fn delete_session(conn: &mut Conn, id: &str, channel: &str) -> std::result::Result<bool, Fail> {
    let events = conn.prep(DELETE_EVENTS_SQL)?;
    let session = conn.prep(DELETE_SESSION_SQL)?;
    let mut tx = conn.client.transaction()?;
    tx.execute(&events, &[&id])?;
    let n = tx.query(&session, &[&id, &channel])?.len();
    tx.commit()?;
    Ok(n > 0)
}

/// The `time` of the last event row of `id`, or `None` when it has none.
pub fn last_event_time(conn: &mut Conn, id: &str) -> std::result::Result<Option<i64>, Fail> {
    let stmt = conn.prep(LAST_TIME_SQL)?;
    Ok(conn.client.query_opt(&stmt, &[&id])?.map(|r| r.get(0)))
}
