//! `dsh_session`: a live session (SPEC §6.1, §11).

use std::os::raw::c_char;

use super::args::{Out, handle_ref, opt_str_arg, str_arg};
use super::boundary::{FfiError, Guarded, ffi_call};
use super::status::dsh_status;
use super::store::{dsh_store, store_ref, write_text};
use crate::model::event::write_events_array;
use crate::model::header::{HeaderSource, SessionHeader};
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
    unsafe { handle_ref(p, "session") }.map(|h| &h.inner)
}

/// Hands a new live session to the caller.
///
/// # Safety
/// `out` was checked by `Out::new` and is writable.
unsafe fn give(out: Out<*mut dsh_session>, live: LiveSession) {
    let handle = Box::new(dsh_session {
        inner: Guarded::new(live, "session"),
    });
    // SAFETY: forwarded contract.
    unsafe { out.write(Box::into_raw(handle)) };
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
            let header = SessionHeader::parse(header_json, HeaderSource::Host)?;
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
                .map(|t| SessionHeader::parse(t, HeaderSource::Host))
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
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let session = unsafe { session_ref(session) }?;
        let out = Out::new(out_json, "out_json")?;
        let text = session.run(|live| {
            let events = live.events(from_seq);
            let mut t = String::new();
            write_events_array(&mut t, &events);
            Ok(t)
        })?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "events JSON") }
    })
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
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let session = unsafe { session_ref(session) }?;
        let out = Out::new(out_json, "out_json")?;
        let text = session.run(|live| Ok(live.header().to_json()))?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "header JSON") }
    })
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
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let session = unsafe { session_ref(session) }?;
        let out = Out::new(out_json, "out_json")?;
        let text = session.run(|live| {
            let messages = live.messages();
            let mut t = String::from("[");
            for (i, m) in messages.iter().enumerate() {
                if i > 0 {
                    t.push(',');
                }
                t.push_str(m.as_str());
            }
            t.push(']');
            Ok(t)
        })?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "messages JSON") }
    })
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

/// Closes a live session: final drain (flush), releases its id, frees the
/// handle.
///
/// - `session`: NULL is a no-op returning `DSH_OK`. Otherwise the handle is
///   freed even when the drain fails (the status reports the drain, e.g.
///   `DSH_IO`); it must not be used again, and the call must not overlap
///   other calls on it.
///
/// A session whose store was closed first closes with `DSH_OK` (the store
/// drained it).
///
/// # Safety
/// `session` is NULL or a live handle, closed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_close(session: *mut dsh_session) -> dsh_status {
    ffi_call(|| {
        if session.is_null() {
            return Ok(());
        }
        // SAFETY: a live handle from `Box::into_raw`, released once.
        let handle = unsafe { Box::from_raw(session) };
        handle.inner.into_inner().close()?;
        Ok(())
    })
}
