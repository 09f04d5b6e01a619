//! The catalog reads (`crate::store::catalog`): rich listing, search,
//! export, and `dsh_follow`, a poll-style follower of one session.

use std::os::raw::c_char;
use std::time::Duration;

use parking_lot::Mutex;

use super::args::{Out, handle_ref, opt_str_arg, str_arg};
use super::boundary::{FfiError, Guarded, ffi_call};
use super::handles::{self, Kind};
use super::status::dsh_status;
use super::store::{dsh_store, store_ref, write_text};
use crate::model::event::write_events_array;
use crate::store::catalog::{ExportFormat, Follower, ListQuery, SearchQuery};

/// A follower of one session (from `dsh_follow_open`). Opaque.
///
/// Thread safety: any thread may use it; calls on one follower are
/// serialized. `dsh_follow_close` must not overlap other calls on it.
pub struct dsh_follow {
    inner: Guarded<Mutex<Follower>>,
}

/// The rich listing: `[{"id","meta","revision","createdAt","updatedAt",
/// "eventCount","turnCount","title","firstPrompt","lastPrompt","openTurn",
/// "bytes"}]`, reading only a window of each log (no lock, no repair).
///
/// - `store`: required (non-NULL; borrowed for the call).
/// - `query_json`: optional (NULL: defaults) `{"sort":"updated"|"created",
///   "ascending":false,"cwd":…,"updatedSince":ms,"parent":…,"limit":n}`.
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Statuses: `DSH_INVALID_ARGUMENT` (bad query), `DSH_IO`,
/// `DSH_CORRUPTION`. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_list_summaries(
    store: *mut dsh_store,
    query_json: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let query = unsafe { opt_str_arg(query_json, "query_json") }?;
        let out = Out::new(out_json, "out_json")?;
        let query = ListQuery::from_json(query.unwrap_or(""))?;
        let text = store.run(|s| {
            let rows = s.list_summaries(&query)?;
            let items: Vec<_> = rows.iter().map(|r| r.to_value()).collect();
            Ok(serde_json::Value::Array(items).to_string())
        })?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "session summaries") }
    })
}

/// Full-text search over message text of every session:
/// `{"hits":[{"id","seq","role","snippet"}],"sessions","indexed",
/// "truncated","skipped":[{"id","error"}]}`. The index is a cache in the
/// store's `.dsh-persist-cache` directory (see the README).
///
/// - `store`: required (non-NULL; borrowed for the call).
/// - `query_json`: required: a JSON string, or `{"text","limit"?,"cwd"?,
///   "cacheDir"?}`.
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Statuses: `DSH_INVALID_ARGUMENT`, `DSH_IO`. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_search(
    store: *mut dsh_store,
    query_json: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let query = unsafe { str_arg(query_json, "query_json") }?;
        let out = Out::new(out_json, "out_json")?;
        let query = SearchQuery::from_json(query)?;
        let text = store.run(|s| Ok(s.search(&query, &mut |_, _| {})?.to_value().to_string()))?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "search result") }
    })
}

/// The transcript of a session as Markdown (`"md"`) or self-contained HTML
/// (`"html"`), read like `dsh_store_inspect` (no repair).
///
/// - `store`: required (non-NULL; borrowed for the call). `id`, `format`:
///   required UTF-8.
/// - `out_text`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Statuses: `DSH_INVALID_ARGUMENT` (format), `DSH_NOT_FOUND`,
/// `DSH_CORRUPTION`, `DSH_FORMAT_UNSUPPORTED`, `DSH_IO`. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_export(
    store: *mut dsh_store,
    id: *const c_char,
    format: *const c_char,
    out_text: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let id = unsafe { str_arg(id, "id") }?;
        // SAFETY: the caller's contract.
        let format = unsafe { str_arg(format, "format") }?;
        let out = Out::new(out_text, "out_text")?;
        let format = ExportFormat::parse(format)?;
        let text = store.run(|s| Ok(s.export(id, format)?))?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "transcript") }
    })
}

/// Opens a follower of session `id` that hands out its events from seq
/// `from_seq` on (`-1`: only those appended after this call).
///
/// - `store`: required (non-NULL; borrowed for the call; the follower
///   keeps the store's internals alive). `id`: required UTF-8.
/// - `out`: required (non-NULL); on `DSH_OK` receives a new handle owned
///   by the caller, to be released with `dsh_follow_close`.
///
/// Statuses: `DSH_INVALID_ARGUMENT`, `DSH_NOT_FOUND`, `DSH_IO`.
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_follow_open(
    store: *mut dsh_store,
    id: *const c_char,
    from_seq: i64,
    out: *mut *mut dsh_follow,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let id = unsafe { str_arg(id, "id") }?;
        let out = Out::new(out, "out")?;
        let from = match from_seq {
            -1 => None,
            n if n >= 0 => Some(n as u64),
            n => {
                return Err(FfiError::Argument(format!(
                    "from_seq must be -1 or a non-negative seq, got {n}"
                )));
            }
        };
        let follower = store.run(|s| Ok(s.follow(id, from)?))?;
        let p = Box::into_raw(Box::new(dsh_follow {
            inner: Guarded::new(Mutex::new(follower), "follower"),
        }));
        handles::register(p, Kind::Follow);
        // SAFETY: checked by `Out::new`.
        unsafe { out.write(p) };
        Ok(())
    })
}

/// The next events of the followed session as a JSON array (`[]` when
/// none came within `timeout_ms`; 0 looks once without waiting).
///
/// - `follow`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Statuses: `DSH_NOT_FOUND` (the session is gone), `DSH_IO`,
/// `DSH_CLOSED`. Thread-safe (calls on one follower wait for each other).
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_follow_next(
    follow: *mut dsh_follow,
    timeout_ms: u32,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let follow = unsafe { handle_ref(follow, Kind::Follow, "follow") }?;
        let out = Out::new(out_json, "out_json")?;
        let text = follow.inner.run(|f| {
            let events = f
                .lock()
                .next_batch(Duration::from_millis(u64::from(timeout_ms)))?;
            let mut t = String::new();
            write_events_array(&mut t, &events);
            Ok(t)
        })?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "events") }
    })
}

/// Frees a follower. NULL is a no-op returning `DSH_OK`; the handle must
/// not be used again, and the call must not overlap other calls on it.
///
/// # Safety
/// `follow` is NULL or a live handle from `dsh_follow_open`, closed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_follow_close(follow: *mut dsh_follow) -> dsh_status {
    ffi_call(|| {
        if follow.is_null() {
            return Ok(());
        }
        handles::retire(follow, Kind::Follow, "follow")?;
        // SAFETY: a live handle from `Box::into_raw` (the registry said so),
        // released once (`retire` marked it closed).
        drop(unsafe { Box::from_raw(follow) });
        Ok(())
    })
}
