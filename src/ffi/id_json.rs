//! Ids a C string cannot carry (DIFFERENCES, exception 2): the `_id_json`
//! forms of the calls that reach a stored session by id.
//!
//! The id is passed as JSON string text, quotes included: what
//! `JSON.stringify(id)` / `json.dumps(id)` give and what `dsh_store_list`
//! prints. So an id holding U+0000 (`"a\u0000b"`), which logs written by
//! the original may contain, reaches its session. An id holding a lone
//! surrogate (`"\ud800x"`, a JSONL directory the original's create made)
//! is read with U+FFFD in the lone surrogate's place, as every id of the
//! library is; the JSONL backend finds the session directory it spells.
//! Two stored ids that differ only in their lone surrogates cannot be told
//! apart this way: such an id is `DSH_CONFLICT`, naming the directories.
//!
//! The async wrappers (issue 18) reach the same ids through the `_ex`
//! forms below: `dsh_store_{load,inspect,read_from}_id_json_paged_ex`
//! (a paged result, as `dsh_store_load_paged_ex`),
//! `dsh_store_read_raw_id_json_ex` and `dsh_store_delete_id_json_ex`, each
//! one `ex_call` around the body of its synchronous `_id_json` form.

use std::borrow::Cow;
use std::os::raw::c_char;

use super::args::{Out, str_arg};
use super::boundary::{FfiError, ffi_call};
use super::cancel::{Cancellable, dsh_cancel, dsh_error, ex_call};
use super::result::{self, dsh_result};
use super::status::dsh_status;
use super::store::{dsh_store, raw_artifact_json, store_ref, write_text};
use crate::model::json::{self, JsonText};
use crate::store::{SessionView, Store};

/// The id denoted by JSON string text (lone surrogates read as U+FFFD).
///
/// # Safety
/// As [`str_arg`].
unsafe fn id_json_arg(p: *const c_char, name: &str) -> Result<String, FfiError> {
    // SAFETY: forwarded contract.
    let text = unsafe { str_arg(p, name) }?;
    let bad = || {
        FfiError::Argument(format!(
            "`{name}` must be a session id as JSON string text, quotes included (e.g. \"\\\"a\\\\u0000b\\\"\"), got {}",
            json::quote(text)
        ))
    };
    JsonText::parse_verbatim(text.trim()).map_err(|_| bad())?;
    let id = json::as_str(text.trim()).ok_or_else(bad)?;
    Ok(id.decode().into_owned())
}

/// One `_id_json` view call: the id decoded, the view as JSON.
///
/// # Safety
/// Pointers are NULL or valid as the callers describe.
unsafe fn view_call(
    store: *mut dsh_store,
    id_json: *const c_char,
    out_json: *mut *mut c_char,
    op: impl FnOnce(&Store, &str) -> crate::Result<SessionView>,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let id = unsafe { id_json_arg(id_json, "id_json") }?;
        let out = Out::new(out_json, "out_json")?;
        let text = store.run(|s| Ok(op(s, &id)?.to_json()))?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "session JSON") }
    })
}

/// One `_id_json` paged view call: the id decoded, the view as a `dsh_result`.
///
/// # Safety
/// Pointers are NULL or valid as the callers describe.
unsafe fn paged_view_call(
    store: *mut dsh_store,
    id_json: *const c_char,
    out_result: *mut *mut dsh_result,
    op: impl FnOnce(&Store, &str) -> crate::Result<SessionView>,
) -> dsh_status {
    // SAFETY: the caller's contract.
    let id_arg = || unsafe { id_json_arg(id_json, "id_json") }.map(Cow::Owned);
    // SAFETY: forwarded contract.
    unsafe { result::view_call_with(store, id_arg, out_result, op) }
}

/// `dsh_store_load` of the session whose id is given as JSON string text
/// (quotes included, as `dsh_store_list` prints it): the one path for ids
/// a C string cannot carry (U+0000, lone surrogates read as U+FFFD). A
/// header the original's readers list but that fails validation (such as
/// an id with a lone surrogate) is `DSH_CORRUPTION` here as there; its
/// events are reached with `dsh_store_read_from_id_json`.
///
/// - `store`, `id_json`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Statuses as `dsh_store_load`; `DSH_INVALID_ARGUMENT` when `id_json` is
/// not one JSON string; `DSH_CONFLICT` when it names several stored ids
/// (lone surrogates that differ). Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_load_id_json(
    store: *mut dsh_store,
    id_json: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe { view_call(store, id_json, out_json, |s, id| s.load(id)) }
}

/// `dsh_store_inspect` with the id as JSON string text (see
/// `dsh_store_load_id_json`).
///
/// - `store`, `id_json`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Statuses as `dsh_store_load_id_json`. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_inspect_id_json(
    store: *mut dsh_store,
    id_json: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe { view_call(store, id_json, out_json, |s, id| s.inspect(id)) }
}

/// `dsh_store_read_from` with the id as JSON string text (see
/// `dsh_store_load_id_json`).
///
/// - `store`, `id_json`: required (non-NULL; borrowed for the call).
///   `from_seq`: any value.
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Statuses as `dsh_store_load_id_json`. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_read_from_id_json(
    store: *mut dsh_store,
    id_json: *const c_char,
    from_seq: u64,
    out_json: *mut *mut c_char,
) -> dsh_status {
    let from = i64::try_from(from_seq).unwrap_or(i64::MAX);
    // SAFETY: forwarded contract.
    unsafe { view_call(store, id_json, out_json, |s, id| s.read_from(id, from)) }
}

/// `dsh_store_read_raw` with the id as JSON string text (see
/// `dsh_store_load_id_json`).
///
/// - `store`, `id_json`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`), or NULL when the session is not
///   stored (still `DSH_OK`).
///
/// Statuses: `DSH_UNSUPPORTED` on SQLite and PostgreSQL; otherwise as
/// `dsh_store_load_id_json`. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_read_raw_id_json(
    store: *mut dsh_store,
    id_json: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let id = unsafe { id_json_arg(id_json, "id_json") }?;
        let out = Out::new(out_json, "out_json")?;
        match store.run(|s| Ok(s.read_raw(&id)?.map(raw_artifact_json)))? {
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

/// `dsh_store_delete` with the id as JSON string text (see
/// `dsh_store_load_id_json`).
///
/// - `store`, `id_json`: required (non-NULL; borrowed for the call).
///
/// Statuses as `dsh_store_delete`; `DSH_INVALID_ARGUMENT` when `id_json`
/// is not one JSON string. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_delete_id_json(
    store: *mut dsh_store,
    id_json: *const c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let id = unsafe { id_json_arg(id_json, "id_json") }?;
        store.run(|s| Ok(s.delete(&id)?))
    })
}

/// `dsh_store_load_paged_ex` with the id as JSON string text (see
/// `dsh_store_load_id_json`): the async wrappers' path for ids a C string
/// cannot carry.
///
/// - `store`, `id_json`: required (non-NULL; borrowed for the call).
/// - `out_result`: required (non-NULL); on `DSH_OK` receives the result
///   (owned by the caller, freed with `dsh_result_free`); untouched on
///   failure.
/// - `cancel`, `out_error`: as in the `_ex` forms (NULL: none).
///
/// Statuses as `dsh_store_load_id_json`, plus `DSH_CANCELLED`. Cancellable
/// throughout, as `dsh_store_load_ex`. May run on any thread.
///
/// # Safety
/// As `dsh_store_load_id_json`; `cancel` is NULL or a live token;
/// `out_error` is NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_load_id_json_paged_ex(
    store: *mut dsh_store,
    id_json: *const c_char,
    out_result: *mut *mut dsh_result,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            paged_view_call(store, id_json, out_result, |s, id| s.load(id))
        })
    }
}

/// `dsh_store_inspect_paged_ex` with the id as JSON string text (see
/// `dsh_store_load_id_json_paged_ex`; writes nothing, as
/// `dsh_store_inspect`).
///
/// - `store`, `id_json`: required (non-NULL; borrowed for the call).
/// - `out_result`: required (non-NULL); on `DSH_OK` receives the result
///   (owned by the caller, freed with `dsh_result_free`).
/// - `cancel`, `out_error`: as in the `_ex` forms (NULL: none).
///
/// Statuses as `dsh_store_load_id_json_paged_ex`. May run on any thread.
///
/// # Safety
/// As `dsh_store_load_id_json_paged_ex`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_inspect_id_json_paged_ex(
    store: *mut dsh_store,
    id_json: *const c_char,
    out_result: *mut *mut dsh_result,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            paged_view_call(store, id_json, out_result, |s, id| s.inspect(id))
        })
    }
}

/// `dsh_store_read_from_paged_ex` with the id as JSON string text (see
/// `dsh_store_load_id_json_paged_ex`).
///
/// - `store`, `id_json`: required (non-NULL; borrowed for the call).
///   `from_seq`: any value.
/// - `out_result`: required (non-NULL); on `DSH_OK` receives the result
///   (owned by the caller, freed with `dsh_result_free`).
/// - `cancel`, `out_error`: as in the `_ex` forms (NULL: none).
///
/// Statuses as `dsh_store_load_id_json_paged_ex`. May run on any thread.
///
/// # Safety
/// As `dsh_store_load_id_json_paged_ex`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_read_from_id_json_paged_ex(
    store: *mut dsh_store,
    id_json: *const c_char,
    from_seq: u64,
    out_result: *mut *mut dsh_result,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    let from = i64::try_from(from_seq).unwrap_or(i64::MAX);
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            paged_view_call(store, id_json, out_result, |s, id| s.read_from(id, from))
        })
    }
}

/// `dsh_store_read_raw_id_json` with a cancel token and a thread-independent
/// error (as `dsh_store_read_raw_ex`).
///
/// - `store`, `id_json`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`), or NULL when the session is not
///   stored (still `DSH_OK`).
/// - `cancel`, `out_error`: as in the `_ex` forms (NULL: none).
///
/// Statuses as `dsh_store_read_raw_id_json`, plus `DSH_CANCELLED`.
/// Cancellable throughout. May run on any thread.
///
/// # Safety
/// As `dsh_store_read_raw_id_json`; `cancel` is NULL or a live token;
/// `out_error` is NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_read_raw_id_json_ex(
    store: *mut dsh_store,
    id_json: *const c_char,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            dsh_store_read_raw_id_json(store, id_json, out_json)
        })
    }
}

/// `dsh_store_delete_id_json` with a cancel token and a thread-independent
/// error (as `dsh_store_delete_ex`).
///
/// - `store`, `id_json`: required (non-NULL; borrowed for the call).
/// - `cancel`, `out_error`: as in the `_ex` forms (NULL: none).
///
/// Statuses as `dsh_store_delete_id_json`, plus `DSH_CANCELLED`. A write:
/// the token is checked once, before the call starts. May run on any
/// thread.
///
/// # Safety
/// As `dsh_store_delete_id_json`; `cancel` is NULL or a live token;
/// `out_error` is NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_delete_id_json_ex(
    store: *mut dsh_store,
    id_json: *const c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::BeforeStart, || {
            dsh_store_delete_id_json(store, id_json)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::testutil::c;

    #[test]
    fn id_json_is_one_json_string() {
        let ok = |t: &str| {
            let t = c(t);
            // SAFETY: a valid C string.
            unsafe { id_json_arg(t.as_ptr(), "id_json") }
        };
        assert_eq!(ok(r#""a\u0000b""#).unwrap(), "a\0b");
        assert_eq!(ok(r#" "\ud800x" "#).unwrap(), "\u{FFFD}x");
        assert_eq!(ok(r#""\ud83d\ude00""#).unwrap(), "😀");
        for bad in ["a", r#""a" "b""#, "1", r#""\x""#, r#"["a"]"#] {
            let e = ok(bad).unwrap_err();
            assert!(
                matches!(&e, FfiError::Argument(m) if m.contains("JSON string text")),
                "{bad}: {e:?}"
            );
        }
    }
}
