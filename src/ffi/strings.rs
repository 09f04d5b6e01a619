//! Strings that cross the boundary: owned results, `dsh_free`, the last
//! error and the version.

use std::ffi::CString;
use std::os::raw::c_char;

use super::boundary::{FfiError, ffi_void, last_error_code_ptr, last_error_ptr};

/// Turns a result text into a caller-owned C string (released by `dsh_free`).
/// Text with an interior NUL cannot be a C string: `DSH_INVARIANT`.
pub(crate) fn owned_c_string(text: String, what: &str) -> Result<*mut c_char, FfiError> {
    CString::new(text).map(CString::into_raw).map_err(|e| {
        FfiError::Invariant(format!(
            "the {what} contains a NUL character at byte {} and cannot be returned as a C string",
            e.nul_position()
        ))
    })
}

/// The library version, e.g. `"0.1.0"`.
///
/// Ownership: static storage; never free it. Never NULL. Thread-safe.
/// Does not touch the last error.
#[unsafe(no_mangle)]
pub extern "C" fn dsh_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The message of the last failed `dsh_*` call on this thread, or `""` when
/// the last status-returning call succeeded (or none was made).
///
/// Ownership: borrowed from a thread-local slot; do not free it. It stays
/// valid until the next status-returning `dsh_*` call on this thread (every
/// such call clears the slot on entry). Never NULL. Panic messages start
/// with `panic: `.
#[unsafe(no_mangle)]
pub extern "C" fn dsh_last_error() -> *const c_char {
    last_error_ptr()
}

/// The machine-readable code of the last failure on this thread, e.g.
/// `"SESSION_ALREADY_EXISTS"`, `"SESSION_NOT_FOUND"`, `"INVALID_BOUNDARY"`,
/// `"OPEN_TURN"`; `""` when the failure has none or the last call succeeded.
/// (An addition to SPEC §11.)
///
/// Ownership: borrowed, like `dsh_last_error()`; do not free it. Never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn dsh_last_error_code() -> *const c_char {
    last_error_code_ptr()
}

/// Releases a string that a `dsh_*` call returned through a `char **out`
/// parameter. NULL is a no-op.
///
/// Ownership: takes ownership of `s`; `s` must come from this library's
/// `out` parameters, must be freed once, and must never be passed to the C
/// runtime's `free()` (a different allocator). Never pass `dsh_version()`,
/// `dsh_last_error()` or `dsh_last_error_code()` here. Thread-safe. Leaves
/// the last error untouched, so results may be freed before reading it.
///
/// # Safety
/// `s` is NULL or an owned string from this library not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_free(s: *mut c_char) {
    ffi_void(|| {
        if !s.is_null() {
            // SAFETY: `s` came from `CString::into_raw` in `owned_c_string`
            // and is freed once, by the caller's contract.
            drop(unsafe { CString::from_raw(s) });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::boundary::c_text;

    #[test]
    fn version_is_the_crate_version() {
        assert_eq!(c_text(dsh_version()), env!("CARGO_PKG_VERSION"));
    }

    #[test]
    fn owned_strings_round_trip_through_dsh_free() {
        let p = owned_c_string("{\"a\":1}".into(), "result").unwrap();
        assert_eq!(c_text(p), "{\"a\":1}");
        unsafe { dsh_free(p) };
        unsafe { dsh_free(std::ptr::null_mut()) };
    }

    #[test]
    fn interior_nul_in_a_result_is_an_invariant_error() {
        match owned_c_string("a\0b".into(), "plan section") {
            Err(FfiError::Invariant(m)) => assert_eq!(
                m,
                "the plan section contains a NUL character at byte 1 and cannot be returned as a C string"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn last_error_pointers_are_never_null() {
        assert!(!dsh_last_error().is_null());
        assert!(!dsh_last_error_code().is_null());
    }
}
