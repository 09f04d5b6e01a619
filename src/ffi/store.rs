//! `dsh_store`: an opened store (SPEC §6, §11).

use std::os::raw::c_char;

use super::args::{Out, handle_ref, str_arg};
use super::boundary::{FfiError, Guarded, ffi_call};
use super::status::dsh_status;
use super::strings::owned_c_string;
use crate::backend::Location;
use crate::model::header::{HeaderSource, SessionHeader};
use crate::model::json::{quote, write_string};
use crate::store::Store;

/// An opened store (JSONL or SQLite). Opaque.
///
/// Thread safety: any thread may use it, several at once; only
/// `dsh_store_close` must not overlap other calls on it. Sessions started
/// from it keep its internals alive, so they may be closed before or after
/// it (after it, they answer `DSH_CLOSED`).
pub struct dsh_store {
    pub(crate) inner: Guarded<Store>,
}

/// The store behind a handle pointer.
///
/// # Safety
/// `p` is NULL or a live handle from `dsh_store_open`.
pub(crate) unsafe fn store_ref<'a>(p: *const dsh_store) -> Result<&'a Guarded<Store>, FfiError> {
    // SAFETY: forwarded contract.
    unsafe { handle_ref(p, "store") }.map(|h| &h.inner)
}

/// Writes an owned result text to `out`.
///
/// # Safety
/// `out` was checked by `Out::new` and is writable.
pub(crate) unsafe fn write_text(
    out: Out<*mut c_char>,
    text: String,
    what: &str,
) -> Result<(), FfiError> {
    let p = owned_c_string(text, what)?;
    // SAFETY: forwarded contract.
    unsafe { out.write(p) };
    Ok(())
}

/// Opens a store from its configuration JSON:
/// `{"backend":"jsonl","root":…,"compression":"zstd"|"none","packChunks":true,
/// "writeBatchMaxDelayMs":200,"preparedSessionCacheSize":5,"strict":false,
/// "extraEventTypes":[]}` or `{"backend":"sqlite","path":…,"journalMode":"wal",
/// "busyTimeoutMs":5000,…}`.
///
/// - `config_json`: required (non-NULL; borrowed for the call) UTF-8 JSON (non-NULL; borrowed for the call); copied, not retained.
/// - `out`: required (non-NULL); on `DSH_OK` receives a new handle owned
///   by the caller, to be released with `dsh_store_close`; untouched on failure.
///
/// Statuses: `DSH_INVALID_ARGUMENT` (NULL, UTF-8, bad config),
/// `DSH_IO`, `DSH_CORRUPTION`, `DSH_FORMAT_UNSUPPORTED`, `DSH_BUSY`.
/// Thread-safe.
///
/// # Safety
/// `config_json` is NULL or a NUL-terminated string; `out` is NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_open(
    config_json: *const c_char,
    out: *mut *mut dsh_store,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract on `config_json`.
        let config = unsafe { str_arg(config_json, "config_json") }?;
        let out = Out::new(out, "out")?;
        let store = Store::open_json(config)?;
        let handle = Box::new(dsh_store {
            inner: Guarded::new(store, "store"),
        });
        // SAFETY: `out` is non-NULL and writable by the caller's contract.
        unsafe { out.write(Box::into_raw(handle)) };
        Ok(())
    })
}

/// Closes a store: stops admitting events, drains every live session
/// (final flush), closes storage, and frees the handle.
///
/// - `store`: NULL is a no-op returning `DSH_OK`. Otherwise the handle is
///   freed even when the drain fails (the status reports the drain); it must
///   not be used again, and the call must not overlap other calls on it.
///
/// Sessions of this store stay valid handles (close them too) but answer
/// `DSH_CLOSED` from now on.
///
/// # Safety
/// `store` is NULL or a live handle from `dsh_store_open`, closed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_close(store: *mut dsh_store) -> dsh_status {
    ffi_call(|| {
        if store.is_null() {
            return Ok(());
        }
        // SAFETY: a live handle from `Box::into_raw`, released once.
        let handle = unsafe { Box::from_raw(store) };
        handle.inner.into_inner().close()?;
        Ok(())
    })
}

/// Where the session of a header lives, without I/O:
/// `{"kind":"jsonl","path":"/abs/…/session.jsonl.zst"}` (the path may not
/// exist yet), or `null` for SQLite.
///
/// - `store`: required (non-NULL; borrowed for the call). `header_json`: required session header JSON.
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_locate(
    store: *mut dsh_store,
    header_json: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let header_json = unsafe { str_arg(header_json, "header_json") }?;
        let out = Out::new(out_json, "out_json")?;
        let text = store.run(|s| {
            let header = SessionHeader::parse(header_json, HeaderSource::Host)?;
            Ok(match s.locate(&header)? {
                Some(Location::Jsonl { path }) => {
                    format!("{{\"kind\":\"jsonl\",\"path\":{}}}", quote(&path))
                }
                None => "null".to_owned(),
            })
        })?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "location") }
    })
}

/// Declares a new session from its header JSON (lazy: nothing is written
/// until its first append).
///
/// - `store`, `header_json`: required (non-NULL; borrowed for the call); the header is copied.
///
/// Statuses: `DSH_CONFLICT` with code `SESSION_ALREADY_EXISTS` when the id
/// is stored, live or created; `DSH_INVALID_ARGUMENT` for a bad header.
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_create(
    store: *mut dsh_store,
    header_json: *const c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let header_json = unsafe { str_arg(header_json, "header_json") }?;
        store.run(|s| {
            let header = SessionHeader::parse(header_json, HeaderSource::Host)?;
            Ok(s.create(header)?)
        })
    })
}

/// Appends a JSON array of complete events (`{type, seq, time, data, …}`) to
/// a stored or created session, durably before returning. The first seq must
/// be the stored next seq and the batch contiguous.
///
/// - `store`, `id`, `events_json`: required (non-NULL; borrowed for the call); copied, not retained.
///
/// Thread-safe; appends to one id are serialized.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_append(
    store: *mut dsh_store,
    id: *const c_char,
    events_json: *const c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let id = unsafe { str_arg(id, "id") }?;
        // SAFETY: the caller's contract.
        let events_json = unsafe { str_arg(events_json, "events_json") }?;
        store.run(|s| Ok(s.append_json(id, events_json)?))
    })
}

/// Shared shape of `load`/`inspect`: id in, `{meta, events}` out.
///
/// # Safety
/// Pointers are NULL or valid as documented on the exports.
unsafe fn view_call(
    store: *mut dsh_store,
    id: *const c_char,
    out_json: *mut *mut c_char,
    op: impl FnOnce(&Store, &str) -> crate::Result<crate::store::SessionView>,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let id = unsafe { str_arg(id, "id") }?;
        let out = Out::new(out_json, "out_json")?;
        let text = store.run(|s| Ok(op(s, id)?.to_json()))?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "session JSON") }
    })
}

/// Loads a session: `{"meta":<header>,"events":[…]}`. Cold: a torn or open
/// tail is repaired and the repair committed. Live in this process: flushed
/// first, then its snapshot (`DSH_CONFLICT` if a turn is open).
///
/// - `store`, `id`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Statuses include `DSH_NOT_FOUND`, `DSH_CORRUPTION`,
/// `DSH_FORMAT_UNSUPPORTED`. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_load(
    store: *mut dsh_store,
    id: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe { view_call(store, id, out_json, |s, id| s.load(id)) }
}

/// Like `dsh_store_load` but writes nothing: the closers of an open tail are
/// added in memory only; a live session gives its current snapshot (which
/// may have an open turn).
///
/// - `store`, `id`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Statuses as `dsh_store_load`. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_inspect(
    store: *mut dsh_store,
    id: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe { view_call(store, id, out_json, |s, id| s.inspect(id)) }
}

/// The stored events with `seq >= from_seq` as `{meta, events}`: no repair,
/// no closers; past the end gives an empty `events`.
///
/// - `store`, `id`: required (non-NULL; borrowed for the call). `from_seq`: any value.
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_read_from(
    store: *mut dsh_store,
    id: *const c_char,
    from_seq: u64,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // A start beyond i64::MAX is past the end of any log.
    let from = i64::try_from(from_seq).unwrap_or(i64::MAX);
    // SAFETY: forwarded contract.
    unsafe { view_call(store, id, out_json, |s, id| s.read_from(id, from)) }
}

/// The decoded JSONL artifact, exactly as written:
/// `{"meta":<header>,"filename":"session.jsonl","content":"<text>"}`.
///
/// - `store`, `id`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`), or NULL when the session is not stored (still `DSH_OK`).
///
/// Statuses: `DSH_UNSUPPORTED` on SQLite. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_read_raw(
    store: *mut dsh_store,
    id: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let id = unsafe { str_arg(id, "id") }?;
        let out = Out::new(out_json, "out_json")?;
        let text = store.run(|s| {
            Ok(s.read_raw(id)?.map(|raw| {
                let mut t = String::with_capacity(raw.content.len() + 256);
                t.push_str("{\"meta\":");
                t.push_str(&raw.header.to_json());
                t.push_str(",\"filename\":");
                write_string(&mut t, &raw.filename);
                t.push_str(",\"content\":");
                write_string(&mut t, &raw.content);
                t.push('}');
                t
            }))
        })?;
        match text {
            // SAFETY: checked by `Out::new`.
            Some(text) => unsafe { write_text(out, text, "raw artifact JSON") },
            None => {
                // SAFETY: checked by `Out::new`.
                unsafe { out.write(std::ptr::null_mut()) };
                Ok(())
            }
        }
    })
}

/// The headers of the materialized sessions as a JSON array (read from
/// metadata only).
///
/// - `store`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_list(
    store: *mut dsh_store,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        let out = Out::new(out_json, "out_json")?;
        let text = store.run(|s| {
            let headers = s.list()?;
            let mut t = String::from("[");
            for (i, h) in headers.iter().enumerate() {
                if i > 0 {
                    t.push(',');
                }
                t.push_str(&h.to_json());
            }
            t.push(']');
            Ok(t)
        })?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "session list") }
    })
}

/// Headers plus revision tokens, without reading logs:
/// `[{"header":<header>,"revision":"<token>"}]`.
///
/// - `store`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_list_snapshots(
    store: *mut dsh_store,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        let out = Out::new(out_json, "out_json")?;
        let text = store.run(|s| {
            let snapshots = s.list_snapshots()?;
            let mut t = String::from("[");
            for (i, (h, rev)) in snapshots.iter().enumerate() {
                if i > 0 {
                    t.push(',');
                }
                t.push_str("{\"header\":");
                t.push_str(&h.to_json());
                t.push_str(",\"revision\":");
                write_string(&mut t, &rev.0);
                t.push('}');
            }
            t.push(']');
            Ok(t)
        })?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "snapshot list") }
    })
}
