//! Session management on a `dsh_store` (issue 19, the write half): delete,
//! prune, salvage, import.

use std::os::raw::c_char;

use super::args::{Out, str_arg};
use super::boundary::ffi_call;
use super::status::dsh_status;
use super::store::{dsh_store, store_ref, write_text};
use crate::store::PruneOptions;

/// Deletes a stored session (JSONL: its directory, atomically; SQLite,
/// PostgreSQL: its rows and session row in one transaction). The id is free
/// afterwards.
///
/// - `store`, `id`: required (non-NULL; borrowed for the call).
///
/// Statuses: `DSH_BUSY` when the session is live or another writer (process
/// or store handle) holds it, `DSH_NOT_FOUND` when it is not stored,
/// `DSH_IO`. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_delete(store: *mut dsh_store, id: *const c_char) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let id = unsafe { str_arg(id, "id") }?;
        store.run(|s| Ok(s.delete(id)?))
    })
}

/// Deletes the sessions not updated for a while and/or beyond the newest K:
/// `options_json` is `{"olderThanDays":N,"keepNewest":K,"dryRun":false}`
/// (at least one criterion; with both, a session must match both). Updated
/// is the log file's mtime on JSONL and the last event's time on SQLite and
/// PostgreSQL. Busy sessions are skipped and reported.
///
/// - `store`, `options_json`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned string
///   (free it with `dsh_free`): `{"dryRun":…,"updatedFrom":…,"deleted":[{"id":…,
///   "updatedAt":…}],"busy":[{"id":…,"message":…}],"failed":[…],"kept":N}`;
///   untouched on failure.
///
/// Statuses: `DSH_INVALID_ARGUMENT` for bad options, `DSH_IO`.
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_prune(
    store: *mut dsh_store,
    options_json: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let options = unsafe { str_arg(options_json, "options_json") }?;
        let out = Out::new(out_json, "out_json")?;
        let text = store.run(|s| {
            let options = PruneOptions::parse_json(options)?;
            Ok(s.prune(&options, &mut |_, _| {})?.to_json())
        })?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "prune report") }
    })
}

/// Copies the intact prefix of a session that may no longer load (every
/// event before the first bad record or the first event the append rules
/// refuse), closed with the crash-recovery closers, into the new session
/// `new_id`. The source is never modified.
///
/// - `store`, `id`, `new_id`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned string
///   (free it with `dsh_free`): `{"sourceId":…,"newId":…,"readEvents":N,
///   "keptEvents":N,"closers":N,"stopped":"…"|null}`; untouched on failure.
///
/// Statuses: `DSH_NOT_FOUND` (no such source), `DSH_CONFLICT` with code
/// `SESSION_ALREADY_EXISTS` (`new_id` taken), `DSH_INVALID_ARGUMENT`
/// (nothing intact, or `new_id` = `id`), `DSH_IO`. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_salvage(
    store: *mut dsh_store,
    id: *const c_char,
    new_id: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let id = unsafe { str_arg(id, "id") }?;
        // SAFETY: the caller's contract.
        let new_id = unsafe { str_arg(new_id, "new_id") }?;
        let out = Out::new(out_json, "out_json")?;
        let text = store.run(|s| Ok(s.salvage(id, new_id)?.to_json()))?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "salvage report") }
    })
}

/// Imports a JSONL text of events (one per line in the stored record shape,
/// packed chunk rows included, optionally after a session header line whose
/// fields the new session takes) into the new session `new_id`, judged as
/// one append: all or nothing.
///
/// - `store`, `new_id`, `jsonl`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned string
///   (free it with `dsh_free`): `{"id":…,"events":N,"hadHeader":bool}`;
///   untouched on failure.
///
/// Statuses: `DSH_INVALID_ARGUMENT` naming the line or event,
/// `DSH_CONFLICT` with code `SESSION_ALREADY_EXISTS`, `DSH_IO`.
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_import(
    store: *mut dsh_store,
    new_id: *const c_char,
    jsonl: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let new_id = unsafe { str_arg(new_id, "new_id") }?;
        // SAFETY: the caller's contract.
        let jsonl = unsafe { str_arg(jsonl, "jsonl") }?;
        let out = Out::new(out_json, "out_json")?;
        let text = store.run(|s| Ok(s.import_jsonl(new_id, jsonl)?.to_json()))?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "import report") }
    })
}
