//! `dsh_session`: a live session (SPEC §6.1, §11).

use std::os::raw::c_char;

use super::args::{Out, handle_ref, host_header, opt_str_arg, str_arg};
use super::boundary::{FfiError, Guarded, ffi_call, ffi_void};
use super::handles::{self, Kind};
use super::status::dsh_status;
use super::store::{dsh_store, store_ref, write_text};
use crate::model::event::write_events_array;
use crate::model::json::quote;
use crate::store::{AppendOptions, LiveSession};

/// A session this process is writing. Opaque.
///
/// Thread safety: any thread may append, flush or read, several at once;
/// only `dsh_session_close` must not overlap other calls on it. A session
/// keeps its store's internals alive; after `dsh_store_close` it answers
/// `DSH_CLOSED` (its events were drained by the store's close).
pub struct dsh_session {
    pub(crate) inner: Guarded<LiveSession>,
}

/// The live session behind a handle pointer.
///
/// # Safety
/// `p` is NULL or a live handle from `dsh_session_start`/`_resume`/`_fork`.
pub(crate) unsafe fn session_ref<'a>(
    p: *const dsh_session,
) -> Result<&'a Guarded<LiveSession>, FfiError> {
    // SAFETY: forwarded contract.
    unsafe { handle_ref(p, Kind::Session, "session") }.map(|h| &h.inner)
}

/// Runs `f` on the live session and hands its text to the caller through
/// `out_json` (the shape of every read-only session query).
///
/// # Safety
/// `session` is NULL or a live handle; `out_json` is NULL or writable.
unsafe fn session_text(
    session: *mut dsh_session,
    out_json: *mut *mut c_char,
    what: &str,
    f: impl FnOnce(&LiveSession) -> Result<String, FfiError>,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let session = unsafe { session_ref(session) }?;
        let out = Out::new(out_json, "out_json")?;
        let text = session.run(f)?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, what) }
    })
}

/// Hands a new live session to the caller.
///
/// # Safety
/// `out` was checked by `Out::new` and is writable.
unsafe fn give(out: Out<*mut dsh_session>, live: LiveSession) {
    let handle = Box::new(dsh_session {
        inner: Guarded::new(live, "session"),
    });
    let p = Box::into_raw(handle);
    handles::register(p, Kind::Session);
    // SAFETY: forwarded contract.
    unsafe { out.write(p) };
}

/// Starts a new live session from its header JSON. Nothing is written until
/// the first batch.
///
/// - `store`, `header_json`: required (non-NULL; borrowed for the call); the header is copied.
/// - `out`: required (non-NULL); on `DSH_OK` receives a new handle owned
///   by the caller, to be released with `dsh_session_close`; untouched on failure.
///
/// Statuses: `DSH_CONFLICT` (code `SESSION_ALREADY_EXISTS`) when the id is
/// stored, live or created. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_start(
    store: *mut dsh_store,
    header_json: *const c_char,
    out: *mut *mut dsh_session,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let header_json = unsafe { str_arg(header_json, "header_json") }?;
        let out = Out::new(out, "out")?;
        let live = store.run(|s| {
            let header = host_header(header_json, "header_json")?;
            Ok(s.start(header)?)
        })?;
        // SAFETY: checked by `Out::new`.
        unsafe { give(out, live) };
        Ok(())
    })
}

/// Resumes a stored session as live: the torn or open tail is repaired (the
/// repair committed), a `session/end-seed` marker appended when due, and the
/// id reserved for this handle.
///
/// - `store`, `id`: required (non-NULL; borrowed for the call).
/// - `out`: required (non-NULL); on `DSH_OK` receives a new handle owned
///   by the caller, to be released with `dsh_session_close`; untouched on failure.
///
/// Statuses: `DSH_NOT_FOUND`, `DSH_CONFLICT` (already live or being
/// resumed), `DSH_CORRUPTION`, `DSH_FORMAT_UNSUPPORTED`. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_resume(
    store: *mut dsh_store,
    id: *const c_char,
    out: *mut *mut dsh_session,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let id = unsafe { str_arg(id, "id") }?;
        let out = Out::new(out, "out")?;
        let live = store.run(|s| Ok(s.resume(id)?))?;
        // SAFETY: checked by `Out::new`.
        unsafe { give(out, live) };
        Ok(())
    })
}

/// Forks a session: a new live session seeded with the source's events up
/// to and including seq `boundary` (`-1`: the last event), which must not
/// end inside a turn.
///
/// - `store`, `source_id`: required (non-NULL; borrowed for the call).
/// - `boundary`: a seq of the source log, or `-1`.
/// - `child_header_json`: optional (NULL: a generated UUID id, now as
///   `createdAt`); its cwd, `parentSession` and `seedLength` are set from
///   the parent.
/// - `out`: required (non-NULL); on `DSH_OK` receives a new handle owned
///   by the caller, to be released with `dsh_session_close`; untouched on failure.
///
/// Statuses: `DSH_NOT_FOUND` (code `SESSION_NOT_FOUND`),
/// `DSH_INVALID_ARGUMENT` (codes `INVALID_BOUNDARY`, `OPEN_TURN`),
/// `DSH_CONFLICT`. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_fork(
    store: *mut dsh_store,
    source_id: *const c_char,
    boundary: i64,
    child_header_json: *const c_char,
    out: *mut *mut dsh_session,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let source_id = unsafe { str_arg(source_id, "source_id") }?;
        // SAFETY: the caller's contract.
        let child_json = unsafe { opt_str_arg(child_header_json, "child_header_json") }?;
        let out = Out::new(out, "out")?;
        let boundary = (boundary != -1).then_some(boundary);
        let live = store.run(|s| {
            let child = child_json
                .map(|t| host_header(t, "child_header_json"))
                .transpose()?;
            Ok(s.fork(source_id, boundary, child)?)
        })?;
        // SAFETY: checked by `Out::new`.
        unsafe { give(out, live) };
        Ok(())
    })
}

/// Appends one event; the session assigns `seq` and `time` (now, ms). The
/// event is validated and committed to memory at once and written by the
/// write-behind batcher (use `dsh_session_flush` to wait for disk).
///
/// - `session`, `type`, `data_json`: required (non-NULL; borrowed for the call); copied, not retained.
/// - `options_json`: optional (NULL: none), `{"surfaceOp"?, "sourceEventSeqs"?,
///   "ignorable"?}`.
/// - `out_seq`: required (non-NULL); on `DSH_OK` receives the assigned seq.
///
/// Thread-safe; appends from several threads are ordered by the session.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_append(
    session: *mut dsh_session,
    r#type: *const c_char,
    data_json: *const c_char,
    options_json: *const c_char,
    out_seq: *mut u64,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let session = unsafe { session_ref(session) }?;
        // SAFETY: the caller's contract.
        let event_type = unsafe { str_arg(r#type, "type") }?;
        // SAFETY: the caller's contract.
        let data_json = unsafe { str_arg(data_json, "data_json") }?;
        // SAFETY: the caller's contract.
        let options_json = unsafe { opt_str_arg(options_json, "options_json") }?;
        let out = Out::new(out_seq, "out_seq")?;
        let seq = session.run(|live| {
            let options = match options_json {
                Some(t) => AppendOptions::parse(t)?,
                None => AppendOptions::default(),
            };
            Ok(live.append(event_type, data_json, &options)?)
        })?;
        // SAFETY: checked by `Out::new`.
        unsafe { out.write(seq) };
        Ok(())
    })
}

/// Writes every pending event now and returns once they are durable (or
/// with the write error, e.g. `DSH_IO`; the events stay queued).
///
/// - `session`: required (non-NULL; borrowed for the call). Thread-safe; concurrent flushes share one write.
///
/// # Safety
/// `session` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_flush(session: *mut dsh_session) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let session = unsafe { session_ref(session) }?;
        session.run(|live| Ok(live.flush()?))
    })
}

/// The committed events with `seq >= from_seq` as a JSON array (durable or
/// not yet).
///
/// - `session`: required (non-NULL; borrowed for the call). `from_seq`: any value (past the end: `[]`).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_events(
    session: *mut dsh_session,
    from_seq: u64,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        session_text(session, out_json, "events JSON", |live| {
            let mut t = String::new();
            write_events_array(&mut t, &live.events(from_seq));
            Ok(t)
        })
    }
}

/// The session's header as JSON.
///
/// - `session`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_header(
    session: *mut dsh_session,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        session_text(session, out_json, "header JSON", |live| {
            Ok(live.header().to_json())
        })
    }
}

/// The model-visible transcript derived from the surface events (SPEC §1.5)
/// as a JSON array of messages.
///
/// - `session`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_messages(
    session: *mut dsh_session,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        session_text(session, out_json, "messages JSON", |live| {
            let messages = live.messages();
            let texts: Vec<&str> = messages.iter().map(|m| m.as_str()).collect();
            Ok(format!("[{}]", texts.join(",")))
        })
    }
}

/// The unresolved background write error:
/// `{"kind":"io","message":"…"}` (plus `"code"` when it has one), or NULL
/// when there is none (still `DSH_OK`).
///
/// - `session`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`) or NULL.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_background_error(
    session: *mut dsh_session,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let session = unsafe { session_ref(session) }?;
        let out = Out::new(out_json, "out_json")?;
        let text = session.run(|live| {
            Ok(live.background_error().map(|e| {
                let mut t = format!(
                    "{{\"kind\":{},\"message\":{}",
                    quote(e.kind().as_str()),
                    quote(&e.to_string())
                );
                if let Some(code) = e.code() {
                    t.push_str(",\"code\":");
                    t.push_str(&quote(code));
                }
                t.push('}');
                t
            }))
        })?;
        match text {
            // SAFETY: checked by `Out::new`.
            Some(text) => unsafe { write_text(out, text, "background error JSON") },
            None => {
                // SAFETY: checked by `Out::new`.
                unsafe { out.write(std::ptr::null_mut()) };
                Ok(())
            }
        }
    })
}

/// Closes a live session: final drain (flush), releases its id (and the
/// id's writer lock, so another process may write it), frees the handle.
///
/// - `session`: NULL is a no-op returning `DSH_OK`. The call must not
///   overlap other calls on the handle.
/// - `DSH_OK`: everything appended is durable; the handle is freed and must
///   not be used again.
/// - Any other status (e.g. `DSH_IO`, disk full): **the handle stays valid
///   and is not freed.** Its pending events are kept, in order; appends are
///   refused (`DSH_CLOSED`); flush, reads and `dsh_session_close` itself
///   may be called again to retry the drain. A host that gives up releases
///   the handle with `dsh_session_free`, which drops what could not be
///   written.
///
/// A session whose store was closed first closes with `DSH_OK` once the
/// store's close drained it.
///
/// # Safety
/// `session` is NULL or a live handle; after `DSH_OK` it is freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_close(session: *mut dsh_session) -> dsh_status {
    ffi_call(|| {
        if session.is_null() {
            return Ok(());
        }
        // A closed, freed or foreign pointer is refused and not touched.
        handles::check(session, Kind::Session, "session")?;
        {
            // SAFETY: a live handle from `Box::into_raw` (the registry said
            // so); borrowed for the drain, which runs even on a poisoned
            // handle.
            let handle = unsafe { &*session };
            handle.inner.value().close()?;
        }
        handles::retire(session, Kind::Session, "session")?;
        // SAFETY: drained and retired: the handle is released, once.
        drop(unsafe { Box::from_raw(session) });
        Ok(())
    })
}

/// Frees a live session handle without requiring a successful drain: for a
/// host that gives up after `dsh_session_close` failed. One last drain is
/// tried; events that still cannot be written are dropped, and the id (and
/// its writer lock) is released.
///
/// - `session`: NULL is a no-op; a closed, freed or foreign pointer is
///   ignored (nothing is freed). Must not overlap other calls on the handle.
///
/// # Safety
/// `session` is NULL or a live handle, freed once (not after a
/// `dsh_session_close` that returned `DSH_OK`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_free(session: *mut dsh_session) {
    ffi_void(|| {
        if session.is_null() || handles::retire(session, Kind::Session, "session").is_err() {
            return;
        }
        // SAFETY: a live handle from `Box::into_raw` (the registry said so),
        // released once (`retire` marked it closed).
        let handle = unsafe { Box::from_raw(session) };
        let live = handle.inner.into_inner();
        let _ = live.close();
        live.abandon();
    })
}

#[cfg(test)]
mod tests {
    use std::ptr::{null, null_mut};
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::ffi::status::dsh_status::*;
    use crate::ffi::store::{dsh_store_close, dsh_store_load};
    use crate::ffi::testutil::*;

    fn start(store: *mut dsh_store, header: &str) -> *mut dsh_session {
        let mut s = null_mut();
        let status = unsafe { dsh_session_start(store, c(header).as_ptr(), &mut s) };
        assert_eq!(status, DSH_OK, "{}", err());
        s
    }

    fn append_turn(session: *mut dsh_session, turn: u64) -> Vec<u64> {
        turn_events(turn)
            .into_iter()
            .map(|(t, d, o)| {
                let mut seq = u64::MAX;
                let opts = o.map(c);
                let status = unsafe {
                    dsh_session_append(
                        session,
                        c(t).as_ptr(),
                        c(&d).as_ptr(),
                        opts.as_ref().map_or(null(), |o| o.as_ptr()),
                        &mut seq,
                    )
                };
                assert_eq!(status, DSH_OK, "{t}: {}", err());
                seq
            })
            .collect()
    }

    #[test]
    fn start_append_read_close() {
        let dir = TempDir::new("session-basic");
        let store = open_jsonl(&dir);
        let session = start(store, r#"{"id":"live1"}"#);
        assert_eq!(append_turn(session, 1), [0, 1, 2, 3, 4, 5]);
        let mut out = null_mut::<c_char>();
        unsafe {
            expect(dsh_session_flush(session), DSH_OK, "");
            expect(dsh_session_events(session, 4, &mut out), DSH_OK, "");
            let events = take_json(out);
            assert_eq!(events.as_array().unwrap().len(), 2);
            assert_eq!(events[0]["seq"], 4);
            expect(dsh_session_events(session, 99, &mut out), DSH_OK, "");
            assert_eq!(take(out).unwrap(), "[]");
            expect(dsh_session_header(session, &mut out), DSH_OK, "");
            assert_eq!(take_json(out)["id"], "live1");
            expect(dsh_session_messages(session, &mut out), DSH_OK, "");
            let messages = take_json(out);
            assert_eq!(messages.as_array().unwrap().len(), 2, "{messages}");
            assert_eq!(messages[0]["role"], "user");
            assert_eq!(messages[1]["role"], "assistant");
            out = std::ptr::dangling_mut();
            expect(dsh_session_background_error(session, &mut out), DSH_OK, "");
            assert!(out.is_null());
            expect(dsh_session_close(session), DSH_OK, "");
            expect(dsh_session_close(null_mut()), DSH_OK, "");
            expect(
                dsh_store_load(store, c("live1").as_ptr(), &mut out),
                DSH_OK,
                "",
            );
            assert_eq!(take_json(out)["events"].as_array().unwrap().len(), 6);
            expect(dsh_store_close(store), DSH_OK, "");
        }
    }

    #[test]
    fn append_checks_arguments_options_and_rules() {
        let dir = TempDir::new("session-args");
        let store = open_jsonl(&dir);
        let session = start(store, r#"{"id":"a1"}"#);
        let t = c("turn/start");
        let d = c(r#"{"turn":1}"#);
        let mut seq = 777_u64;
        unsafe {
            expect(
                dsh_session_append(null_mut(), t.as_ptr(), d.as_ptr(), null(), &mut seq),
                DSH_INVALID_ARGUMENT,
                "`session` must not be NULL",
            );
            expect(
                dsh_session_append(session, null(), d.as_ptr(), null(), &mut seq),
                DSH_INVALID_ARGUMENT,
                "`type` must not be NULL",
            );
            expect(
                dsh_session_append(session, bad(), d.as_ptr(), null(), &mut seq),
                DSH_INVALID_ARGUMENT,
                "`type` is not valid UTF-8",
            );
            expect(
                dsh_session_append(session, t.as_ptr(), null(), null(), &mut seq),
                DSH_INVALID_ARGUMENT,
                "`data_json` must not be NULL",
            );
            expect(
                dsh_session_append(session, t.as_ptr(), bad(), null(), &mut seq),
                DSH_INVALID_ARGUMENT,
                "`data_json` is not valid UTF-8",
            );
            expect(
                dsh_session_append(session, t.as_ptr(), d.as_ptr(), bad(), &mut seq),
                DSH_INVALID_ARGUMENT,
                "`options_json` is not valid UTF-8",
            );
            expect(
                dsh_session_append(session, t.as_ptr(), d.as_ptr(), null(), null_mut()),
                DSH_INVALID_ARGUMENT,
                "`out_seq` must not be NULL",
            );
            expect(
                dsh_session_append(session, t.as_ptr(), c("{").as_ptr(), null(), &mut seq),
                DSH_INVALID_ARGUMENT,
                "",
            );
            expect(
                dsh_session_append(
                    session,
                    t.as_ptr(),
                    d.as_ptr(),
                    c(r#"{"bogus":1}"#).as_ptr(),
                    &mut seq,
                ),
                DSH_INVALID_ARGUMENT,
                "unknown key \"bogus\"",
            );
            expect(
                dsh_session_append(session, c("no/such").as_ptr(), d.as_ptr(), null(), &mut seq),
                DSH_INVALID_ARGUMENT,
                "unknown to this harness",
            );
            expect(
                dsh_session_append(
                    session,
                    c("turn/end").as_ptr(),
                    c(r#"{"turn":1,"reason":{"kind":"completed"}}"#).as_ptr(),
                    null(),
                    &mut seq,
                ),
                DSH_INVALID_ARGUMENT,
                "cannot append to session \"a1\"",
            );
            assert_eq!(seq, 777, "*out_seq untouched on failure");
            expect(
                dsh_session_append(session, t.as_ptr(), d.as_ptr(), null(), &mut seq),
                DSH_OK,
                "",
            );
            assert_eq!(seq, 0);

            let mut out = std::ptr::dangling_mut::<c_char>();
            for (name, status) in [
                ("flush", dsh_session_flush(null_mut())),
                ("events", dsh_session_events(null_mut(), 0, &mut out)),
                ("header", dsh_session_header(null_mut(), &mut out)),
                ("messages", dsh_session_messages(null_mut(), &mut out)),
                (
                    "background_error",
                    dsh_session_background_error(null_mut(), &mut out),
                ),
            ] {
                assert_eq!(status, DSH_INVALID_ARGUMENT, "{name}");
            }
            for (name, status) in [
                ("events", dsh_session_events(session, 0, null_mut())),
                ("header", dsh_session_header(session, null_mut())),
                ("messages", dsh_session_messages(session, null_mut())),
                (
                    "background_error",
                    dsh_session_background_error(session, null_mut()),
                ),
            ] {
                assert_eq!(status, DSH_INVALID_ARGUMENT, "{name}");
                assert_eq!(err(), "`out_json` must not be NULL");
            }
            assert_eq!(out, std::ptr::dangling_mut());
            let mut s = std::ptr::dangling_mut::<dsh_session>();
            expect(
                dsh_session_start(null_mut(), c("{}").as_ptr(), &mut s),
                DSH_INVALID_ARGUMENT,
                "`store`",
            );
            expect(
                dsh_session_start(store, null(), &mut s),
                DSH_INVALID_ARGUMENT,
                "`header_json` must not be NULL",
            );
            expect(
                dsh_session_start(store, bad(), &mut s),
                DSH_INVALID_ARGUMENT,
                "`header_json` is not valid UTF-8",
            );
            expect(
                dsh_session_start(store, c(r#"{"id":"x"}"#).as_ptr(), null_mut()),
                DSH_INVALID_ARGUMENT,
                "`out` must not be NULL",
            );
            expect(
                dsh_session_start(store, c(r#"{"id":"a1"}"#).as_ptr(), &mut s),
                DSH_CONFLICT,
                "",
            );
            assert_eq!(code(), "SESSION_ALREADY_EXISTS");
            expect(
                dsh_session_resume(null_mut(), c("a1").as_ptr(), &mut s),
                DSH_INVALID_ARGUMENT,
                "`store`",
            );
            expect(
                dsh_session_resume(store, null(), &mut s),
                DSH_INVALID_ARGUMENT,
                "`id` must not be NULL",
            );
            expect(
                dsh_session_resume(store, bad(), &mut s),
                DSH_INVALID_ARGUMENT,
                "`id` is not valid UTF-8",
            );
            expect(
                dsh_session_resume(store, c("a1").as_ptr(), null_mut()),
                DSH_INVALID_ARGUMENT,
                "`out`",
            );
            expect(
                dsh_session_resume(store, c("missing").as_ptr(), &mut s),
                DSH_NOT_FOUND,
                "",
            );
            expect(
                dsh_session_fork(null_mut(), c("a1").as_ptr(), -1, null(), &mut s),
                DSH_INVALID_ARGUMENT,
                "`store`",
            );
            expect(
                dsh_session_fork(store, null(), -1, null(), &mut s),
                DSH_INVALID_ARGUMENT,
                "`source_id` must not be NULL",
            );
            expect(
                dsh_session_fork(store, c("a1").as_ptr(), -1, bad(), &mut s),
                DSH_INVALID_ARGUMENT,
                "`child_header_json` is not valid UTF-8",
            );
            expect(
                dsh_session_fork(store, c("a1").as_ptr(), -1, null(), null_mut()),
                DSH_INVALID_ARGUMENT,
                "`out`",
            );
            assert_eq!(s, std::ptr::dangling_mut());
            expect(dsh_session_close(session), DSH_OK, "");
            expect(dsh_store_close(store), DSH_OK, "");
        }
    }

    #[test]
    fn resume_repairs_and_fork_seeds() {
        let dir = TempDir::new("session-resume");
        let store = open_jsonl(&dir);
        let session = start(store, r#"{"id":"r1"}"#);
        append_turn(session, 1);
        let mut seq = 0;
        let mut out = null_mut::<c_char>();
        unsafe {
            // An open turn, made durable, then the handle is closed: resume
            // closes the turn synthetically.
            expect(
                dsh_session_append(
                    session,
                    c("turn/start").as_ptr(),
                    c(r#"{"turn":2}"#).as_ptr(),
                    null(),
                    &mut seq,
                ),
                DSH_OK,
                "",
            );
            expect(dsh_session_close(session), DSH_OK, "");
            let mut resumed = null_mut();
            expect(
                dsh_session_resume(store, c("r1").as_ptr(), &mut resumed),
                DSH_OK,
                "",
            );
            let mut again = std::ptr::dangling_mut();
            expect(
                dsh_session_resume(store, c("r1").as_ptr(), &mut again),
                DSH_CONFLICT,
                "already live",
            );
            expect(dsh_session_events(resumed, 6, &mut out), DSH_OK, "");
            let tail = take_json(out);
            let types: Vec<&str> = tail
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["type"].as_str().unwrap())
                .collect();
            assert_eq!(types.first(), Some(&"turn/start"));
            assert!(types.contains(&"turn/end"), "{types:?}");

            let mut child = null_mut();
            expect(
                dsh_session_fork(
                    store,
                    c("r1").as_ptr(),
                    5,
                    c(r#"{"id":"child"}"#).as_ptr(),
                    &mut child,
                ),
                DSH_OK,
                "",
            );
            expect(dsh_session_header(child, &mut out), DSH_OK, "");
            let header = take_json(out);
            assert_eq!(header["id"], "child");
            assert_eq!(header["parentSession"], "r1");
            let mut generated = null_mut();
            expect(
                dsh_session_fork(store, c("r1").as_ptr(), -1, null(), &mut generated),
                DSH_OK,
                "",
            );
            expect(dsh_session_header(generated, &mut out), DSH_OK, "");
            assert_eq!(
                take_json(out)["id"].as_str().unwrap().len(),
                36,
                "a generated UUID id"
            );
            let mut bad_fork = std::ptr::dangling_mut();
            expect(
                dsh_session_fork(store, c("r1").as_ptr(), 9999, null(), &mut bad_fork),
                DSH_INVALID_ARGUMENT,
                "fork boundary 9999",
            );
            assert_eq!(code(), "INVALID_BOUNDARY");
            expect(
                dsh_session_fork(store, c("r1").as_ptr(), -2, null(), &mut bad_fork),
                DSH_INVALID_ARGUMENT,
                "",
            );
            assert_eq!(code(), "INVALID_BOUNDARY");
            expect(
                dsh_session_fork(store, c("ghost").as_ptr(), -1, null(), &mut bad_fork),
                DSH_NOT_FOUND,
                "cannot fork",
            );
            assert_eq!(code(), "SESSION_NOT_FOUND");
            assert_eq!(bad_fork, std::ptr::dangling_mut());
            for s in [resumed, child, generated] {
                expect(dsh_session_close(s), DSH_OK, "");
            }
            expect(dsh_store_close(store), DSH_OK, "");
        }
    }

    #[test]
    fn sessions_outlive_their_store_and_answer_closed() {
        let dir = TempDir::new("session-closed");
        let store = open_jsonl(&dir);
        let session = start(store, r#"{"id":"c1"}"#);
        append_turn(session, 1);
        let mut seq = 0;
        unsafe {
            expect(dsh_store_close(store), DSH_OK, "");
            expect(
                dsh_session_append(
                    session,
                    c("turn/start").as_ptr(),
                    c(r#"{"turn":2}"#).as_ptr(),
                    null(),
                    &mut seq,
                ),
                DSH_CLOSED,
                "closed",
            );
            expect(dsh_session_close(session), DSH_OK, "");
        }
        // The store's close drained the session.
        let store = open_jsonl(&dir);
        let mut out = null_mut::<c_char>();
        unsafe {
            expect(
                dsh_store_load(store, c("c1").as_ptr(), &mut out),
                DSH_OK,
                "",
            );
            assert_eq!(take_json(out)["events"].as_array().unwrap().len(), 6);
            dsh_store_close(store);
        }
    }

    #[test]
    fn background_errors_surface_as_json_and_flush_status() {
        let dir = TempDir::new("session-bg");
        let (store, backend) = faulty_store(&dir);
        let session = start(store, r#"{"id":"b1"}"#);
        backend.mode.store(FAIL, Ordering::SeqCst);
        append_turn(session, 1);
        let mut out = null_mut::<c_char>();
        unsafe {
            expect(dsh_session_flush(session), DSH_IO, "disk full (injected)");
            expect(dsh_session_background_error(session, &mut out), DSH_OK, "");
            let e = take_json(out);
            assert_eq!(e["kind"], "io");
            assert!(e["message"].as_str().unwrap().contains("disk full"), "{e}");
            backend.mode.store(PASS, Ordering::SeqCst);
            expect(dsh_session_flush(session), DSH_OK, "");
            expect(dsh_session_background_error(session, &mut out), DSH_OK, "");
            assert!(out.is_null());
            // A drain failure at close is reported; the handle stays valid
            // with its pending event, refuses appends, and the close can be
            // retried (reliability D16).
            let mut seq = 0;
            expect(
                dsh_session_append(
                    session,
                    c("turn/start").as_ptr(),
                    c(r#"{"turn":2}"#).as_ptr(),
                    null(),
                    &mut seq,
                ),
                DSH_OK,
                "",
            );
            backend.mode.store(FAIL, Ordering::SeqCst);
            expect(dsh_session_close(session), DSH_IO, "disk full (injected)");
            expect(dsh_session_close(session), DSH_IO, "disk full (injected)");
            expect(
                dsh_session_append(
                    session,
                    c("turn/end").as_ptr(),
                    c(r#"{"turn":2,"reason":{"kind":"completed"}}"#).as_ptr(),
                    null(),
                    &mut seq,
                ),
                DSH_CLOSED,
                "retry close",
            );
            backend.mode.store(PASS, Ordering::SeqCst);
            expect(dsh_session_close(session), DSH_OK, "");
            expect(
                dsh_store_load(store, c("b1").as_ptr(), &mut out),
                DSH_OK,
                "",
            );
            // Turn 1 (6 events), then the kept turn/start closed by the load.
            let events = take_json(out)["events"].as_array().unwrap().clone();
            assert_eq!(events[6]["type"], "turn/start");
            assert_eq!(events.last().unwrap()["type"], "turn/end");
            // A host that gives up frees the handle; the id is released.
            let s2 = start(store, r#"{"id":"b2"}"#);
            append_turn(s2, 1);
            backend.mode.store(FAIL, Ordering::SeqCst);
            expect(dsh_session_close(s2), DSH_IO, "disk full (injected)");
            dsh_session_free(s2);
            backend.mode.store(PASS, Ordering::SeqCst);
            let s3 = start(store, r#"{"id":"b2"}"#);
            expect(dsh_session_close(s3), DSH_OK, "");
            dsh_store_close(store);
        }
    }

    #[test]
    fn a_panicking_write_is_an_invariant_error_not_a_hang() {
        // The write-behind controller turns a panicking batch write into a
        // failed write (batch kept, error recorded), so flush and close
        // still finish.
        let dir = TempDir::new("session-panic");
        let (store, backend) = faulty_store(&dir);
        let session = start(store, r#"{"id":"p1"}"#);
        append_turn(session, 1);
        backend.mode.store(PANIC, Ordering::SeqCst);
        let mut out = null_mut::<c_char>();
        unsafe {
            expect(
                dsh_session_flush(session),
                DSH_INVARIANT,
                "a batch write panicked: injected backend panic",
            );
            expect(dsh_session_background_error(session, &mut out), DSH_OK, "");
            assert_eq!(take_json(out)["kind"], "invariant");
            backend.mode.store(PASS, Ordering::SeqCst);
            expect(dsh_session_flush(session), DSH_OK, "");
            expect(dsh_session_close(session), DSH_OK, "");
            expect(
                dsh_store_load(store, c("p1").as_ptr(), &mut out),
                DSH_OK,
                "",
            );
            assert_eq!(take_json(out)["events"].as_array().unwrap().len(), 6);
            expect(dsh_store_close(store), DSH_OK, "");
        }
    }
}
