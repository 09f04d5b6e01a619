//! The thread-independent side of the C ABI (issue 18): `dsh_cancel`, a
//! cancel token a host sets from any thread, and `dsh_error`, an error
//! object a `_ex` call hands back through its `out_error` parameter, so a
//! call made on one thread (a koffi worker, a Python executor thread) can
//! report its failure on another. `ex_call` turns any synchronous export
//! into its `_ex` form (see `async_ops.rs`).

use std::ffi::CString;
use std::os::raw::c_char;

use super::args::{Out, handle_ref};
use super::boundary::{ffi_call, last_error_code_ptr, last_error_ptr};
use super::handles::{self, Kind};
use super::status::dsh_status;
use crate::store::cancel::{self, Cancel};

/// A cancel token. Create it with `dsh_cancel_new`, pass it to any number
/// of `_ex` calls, set it with `dsh_cancel_cancel` (from any thread, while
/// those calls run), free it with `dsh_cancel_free` once no call that uses
/// it is running. A set token stays set: use a new one per operation.
pub struct dsh_cancel {
    token: Cancel,
}

/// The failure of one `_ex` call: its status, message and code, readable
/// on any thread until `dsh_error_free`.
pub struct dsh_error {
    status: dsh_status,
    message: CString,
    code: CString,
}

/// Creates a cancel token (not set).
///
/// - `out`: required (non-NULL); on `DSH_OK` receives the token (owned by
///   the caller; free it with `dsh_cancel_free`); untouched on failure.
///
/// Thread-safe; the token may be shared by calls on any threads.
///
/// # Safety
/// `out` is NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_cancel_new(out: *mut *mut dsh_cancel) -> dsh_status {
    ffi_call(|| {
        let out = Out::new(out, "out")?;
        let p = Box::into_raw(Box::new(dsh_cancel {
            token: Cancel::new(),
        }));
        handles::register(p, Kind::Cancel);
        // SAFETY: `out` was checked non-NULL; the caller's contract.
        unsafe { out.write(p) };
        Ok(())
    })
}

/// Sets the token: every `_ex` call running under it stops at its next
/// checkpoint (between chunks, frames or rows of a read) with
/// `DSH_CANCELLED`, and every later call under it at its first. Calls that
/// write check it only before they start. Thread-safe; may overlap the
/// calls that use the token.
///
/// # Safety
/// `cancel` is NULL or a pointer from `dsh_cancel_new` not overlapping its
/// `dsh_cancel_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_cancel_cancel(cancel: *mut dsh_cancel) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let c = unsafe { handle_ref(cancel, Kind::Cancel, "cancel") }?;
        c.token.cancel();
        Ok(())
    })
}

/// Frees a token (owned by the caller). NULL is a no-op (`DSH_OK`). Must
/// not overlap a call that uses the token (or another thread's
/// `dsh_cancel_cancel` on it).
///
/// # Safety
/// `cancel` is NULL or a pointer from `dsh_cancel_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_cancel_free(cancel: *mut dsh_cancel) -> dsh_status {
    ffi_call(|| {
        if cancel.is_null() {
            return Ok(());
        }
        handles::retire(cancel, Kind::Cancel, "cancel")?;
        // SAFETY: registered by `dsh_cancel_new` from `Box::into_raw`, and
        // just retired, so this is the only free.
        drop(unsafe { Box::from_raw(cancel) });
        Ok(())
    })
}

/// The status of an error object (`DSH_INVALID_ARGUMENT` for NULL or a
/// pointer that is not a live `dsh_error`). The object is borrowed;
/// thread-safe (any thread may read it; it must not overlap its
/// `dsh_error_free`).
///
/// # Safety
/// `error` is NULL or a pointer from an `out_error` not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_error_status(error: *const dsh_error) -> dsh_status {
    // SAFETY: the caller's contract.
    match unsafe { live_error(error) } {
        Some(e) => e.status,
        None => dsh_status::DSH_INVALID_ARGUMENT,
    }
}

/// The message of an error object (as `dsh_last_error()` would have been
/// on the calling thread). Borrowed: valid until `dsh_error_free`; never
/// NULL (`""` for NULL or a foreign pointer). Thread-safe.
///
/// # Safety
/// `error` is NULL or a pointer from an `out_error` not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_error_message(error: *const dsh_error) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { live_error(error) }.map_or(c"".as_ptr(), |e| e.message.as_ptr())
}

/// The machine-readable code of an error object (as
/// `dsh_last_error_code()`), `""` when it has none. Borrowed like
/// `dsh_error_message`. Thread-safe.
///
/// # Safety
/// `error` is NULL or a pointer from an `out_error` not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_error_code(error: *const dsh_error) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { live_error(error) }.map_or(c"".as_ptr(), |e| e.code.as_ptr())
}

/// Frees an error object (owned by the caller). NULL is a no-op
/// (`DSH_OK`). Must not overlap other calls on it (any thread otherwise).
///
/// # Safety
/// `error` is NULL or a pointer from an `out_error` not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_error_free(error: *mut dsh_error) -> dsh_status {
    ffi_call(|| {
        if error.is_null() {
            return Ok(());
        }
        handles::retire(error, Kind::Error, "error")?;
        // SAFETY: registered by `ex_call` from `Box::into_raw`, just retired.
        drop(unsafe { Box::from_raw(error) });
        Ok(())
    })
}

/// The error object behind `p`, when it is a live one.
///
/// # Safety
/// As the accessors.
unsafe fn live_error<'a>(p: *const dsh_error) -> Option<&'a dsh_error> {
    // SAFETY: checked in the registry before the dereference.
    unsafe { handle_ref(p, Kind::Error, "error") }.ok()
}

/// How a `_ex` call honours its token.
#[derive(Clone, Copy)]
pub(crate) enum Cancellable {
    /// Checked throughout (reads, lists, the read of a resume or fork).
    Throughout,
    /// Checked once before the call; the call itself runs to its end (it
    /// writes).
    BeforeStart,
}

/// Runs `call`, a synchronous export, as the body of its `_ex` form: under
/// the token of `cancel` (NULL: none), and on failure copies the message
/// and code it left in this thread's last error into a new `dsh_error`
/// written to `*out_error` (NULL there: the status alone). `*out_error` is
/// set to NULL first. The last error of this thread is set as by `call`.
///
/// # Safety
/// `cancel` is NULL or a live token; `out_error` is NULL or valid for one
/// write; `call` is a sound call of an export.
pub(crate) unsafe fn ex_call(
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
    mode: Cancellable,
    call: impl FnOnce() -> dsh_status,
) -> dsh_status {
    if !out_error.is_null() {
        // SAFETY: non-NULL, valid for a write by the contract.
        unsafe { out_error.write(std::ptr::null_mut()) };
    }
    let mut token = None;
    let checked = ffi_call(|| {
        if !cancel.is_null() {
            // SAFETY: the caller's contract.
            let c = unsafe { handle_ref(cancel, Kind::Cancel, "cancel") }?;
            token = Some(c.token.clone());
        }
        if let (Some(t), Cancellable::BeforeStart) = (&token, mode) {
            t.scope(cancel::checkpoint)?;
        }
        Ok(())
    });
    let status = if checked != dsh_status::DSH_OK {
        checked
    } else {
        match (&token, mode) {
            (Some(t), Cancellable::Throughout) => t.scope(call),
            _ => cancel::shield(call),
        }
    };
    if status != dsh_status::DSH_OK && !out_error.is_null() {
        // SAFETY: both are this thread's last-error slots, NUL-terminated.
        let (message, code) = unsafe {
            (
                std::ffi::CStr::from_ptr(last_error_ptr()).to_owned(),
                std::ffi::CStr::from_ptr(last_error_code_ptr()).to_owned(),
            )
        };
        let p = Box::into_raw(Box::new(dsh_error {
            status,
            message,
            code,
        }));
        handles::register(p, Kind::Error);
        // SAFETY: non-NULL, valid for a write by the contract.
        unsafe { out_error.write(p) };
    }
    status
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;
    use std::ptr::null_mut;

    use super::*;
    use crate::ffi::async_ops::{dsh_store_append_ex, dsh_store_create_ex, dsh_store_load_ex};
    use crate::ffi::status::dsh_status::*;
    use crate::ffi::store::dsh_store_close;
    use crate::ffi::testutil::*;

    /// A raw pointer that may cross to a test thread.
    struct Ptr<T>(*mut T);
    // SAFETY: test-only; the pointees are `Sync` handles of this library.
    unsafe impl<T> Send for Ptr<T> {}

    fn text(p: *const c_char) -> String {
        // SAFETY: the accessors never return NULL.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    #[test]
    fn an_error_object_carries_the_failure_to_another_thread() {
        let dir = TempDir::new("ffi-ex");
        let store = Ptr(open_jsonl(&dir));
        let mut token: *mut dsh_cancel = null_mut();
        unsafe {
            expect(dsh_cancel_new(&mut token), DSH_OK, "");
            let (s, t) = (Ptr(store.0), Ptr(token));
            // A not-found load on a worker thread: the error object holds
            // its message; this thread's last error knows nothing of it.
            let (status, e) = std::thread::spawn(move || {
                let (s, t) = (s, t);
                let mut out = null_mut::<c_char>();
                let mut e: *mut dsh_error = null_mut();
                let st = dsh_store_load_ex(s.0, c("nope").as_ptr(), &mut out, t.0, &mut e);
                assert!(out.is_null());
                (st, Ptr(e))
            })
            .join()
            .unwrap();
            assert_eq!(status, DSH_NOT_FOUND);
            assert_eq!(dsh_error_status(e.0), DSH_NOT_FOUND);
            assert!(
                text(dsh_error_message(e.0)).contains("nope"),
                "{}",
                text(dsh_error_message(e.0))
            );
            assert_eq!(err(), "");
            expect(dsh_error_free(e.0), DSH_OK, "");
            expect(dsh_error_free(e.0), DSH_CLOSED, "already closed");
            assert_eq!(dsh_error_status(e.0), DSH_INVALID_ARGUMENT);
            assert_eq!(text(dsh_error_message(null_mut())), "");

            // A set token: reads and writes are refused as cancelled and
            // nothing is written.
            let st = dsh_store_create_ex(
                store.0,
                c(r#"{"id":"s1"}"#).as_ptr(),
                null_mut(),
                null_mut(),
            );
            assert_eq!(st, DSH_OK);
            let events = c(&turn_array(1, 0));
            let mut e: *mut dsh_error = null_mut();
            expect(dsh_cancel_cancel(token), DSH_OK, "");
            let st = dsh_store_append_ex(store.0, c("s1").as_ptr(), events.as_ptr(), token, &mut e);
            assert_eq!(st, DSH_CANCELLED);
            assert_eq!(dsh_error_status(e), DSH_CANCELLED);
            assert!(text(dsh_error_message(e)).contains("cancelled"));
            dsh_error_free(e);
            let mut out = null_mut::<c_char>();
            let st = dsh_store_load_ex(store.0, c("s1").as_ptr(), &mut out, token, &mut e);
            assert_eq!(st, DSH_CANCELLED);
            dsh_error_free(e);
            // Without a token: the append happens, no error object.
            let st = dsh_store_append_ex(
                store.0,
                c("s1").as_ptr(),
                events.as_ptr(),
                null_mut(),
                &mut e,
            );
            assert_eq!(st, DSH_OK, "{}", text(dsh_error_message(e)));
            assert!(e.is_null());
            let st = dsh_store_load_ex(store.0, c("s1").as_ptr(), &mut out, null_mut(), null_mut());
            assert_eq!(st, DSH_OK);
            assert!(take(out).unwrap().contains("turn/end"));
            // A store passed as a token.
            let st = dsh_store_load_ex(
                store.0,
                c("s1").as_ptr(),
                &mut out,
                store.0.cast::<dsh_cancel>(),
                &mut e,
            );
            assert_eq!(st, DSH_INVALID_ARGUMENT);
            assert!(text(dsh_error_message(e)).contains("not a dsh_cancel"));
            dsh_error_free(e);
            expect(dsh_cancel_free(token), DSH_OK, "");
            expect(dsh_cancel_free(null_mut()), DSH_OK, "");
            expect(dsh_store_close(store.0), DSH_OK, "");
        }
    }
}
