//! The boundary every exported function runs in: panics become `DSH_PANIC`,
//! errors become a status plus the thread-local last error.

use std::any::Any;
use std::cell::RefCell;
use std::ffi::CString;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicU64, Ordering};

use super::status::{dsh_status, status_of};
use crate::error::Error;

/// Why a call failed before, inside or after the core.
#[derive(Debug)]
pub(crate) enum FfiError {
    /// The core said no.
    Core(Error),
    /// The host passed a NULL, non-UTF-8 or otherwise unusable argument.
    Argument(String),
    /// A result could not be handed back (e.g. text with an interior NUL).
    Invariant(String),
}

impl From<Error> for FfiError {
    fn from(e: Error) -> Self {
        FfiError::Core(e)
    }
}

impl FfiError {
    fn status(&self) -> dsh_status {
        match self {
            FfiError::Core(e) => status_of(e.kind()),
            FfiError::Argument(_) => dsh_status::DSH_INVALID_ARGUMENT,
            FfiError::Invariant(_) => dsh_status::DSH_INVARIANT,
        }
    }

    fn message(&self) -> String {
        match self {
            FfiError::Core(e) => e.to_string(),
            FfiError::Argument(m) | FfiError::Invariant(m) => m.clone(),
        }
    }

    fn code(&self) -> &'static str {
        match self {
            FfiError::Core(e) => e.code().unwrap_or(""),
            FfiError::Argument(_) | FfiError::Invariant(_) => "",
        }
    }
}

/// The last failure on this thread: message and code, both C strings.
struct LastError {
    message: CString,
    code: CString,
}

thread_local! {
    static LAST_ERROR: RefCell<LastError> = RefCell::new(LastError {
        message: CString::default(),
        code: CString::default(),
    });
}

/// A C string from any text: interior NULs are dropped, so a message always
/// exists.
fn lossless_c_string(text: &str) -> CString {
    CString::new(text.replace('\0', "")).unwrap_or_default()
}

fn set_last_error(message: &str, code: &str) {
    LAST_ERROR.with(|slot| {
        let mut slot = slot.borrow_mut();
        slot.message = lossless_c_string(message);
        slot.code = lossless_c_string(code);
    });
}

fn clear_last_error() {
    set_last_error("", "");
}

/// The current last-error message (borrowed from the thread-local slot; valid
/// until the slot is next written on this thread).
pub(crate) fn last_error_ptr() -> *const std::os::raw::c_char {
    LAST_ERROR.with(|slot| slot.borrow().message.as_ptr())
}

/// The current last-error code (`""` when none).
pub(crate) fn last_error_code_ptr() -> *const std::os::raw::c_char {
    LAST_ERROR.with(|slot| slot.borrow().code.as_ptr())
}

/// The last-error message as Rust text (tests).
#[cfg(test)]
pub(crate) fn last_error_text() -> String {
    LAST_ERROR.with(|slot| slot.borrow().message.to_string_lossy().into_owned())
}

/// The last-error code as Rust text (tests).
#[cfg(test)]
pub(crate) fn last_error_code_text() -> String {
    LAST_ERROR.with(|slot| slot.borrow().code.to_string_lossy().into_owned())
}

/// `panic: <payload>` for a caught panic.
fn panic_message(payload: &(dyn Any + Send)) -> String {
    let text = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".to_owned()
    };
    format!("panic: {text}")
}

/// Runs the body of a status-returning export: clears the last error, runs
/// `body` under `catch_unwind`, and turns its outcome into a status.
pub(crate) fn ffi_call(body: impl FnOnce() -> Result<(), FfiError>) -> dsh_status {
    clear_last_error();
    // AssertUnwindSafe: after a panic the closure's captures (argument
    // pointers and handle references) are not used again by this call. The
    // handle itself stays usable (see `Guarded`): the core keeps no state
    // that a panic can leave half-updated for a later call to observe.
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => dsh_status::DSH_OK,
        Ok(Err(e)) => {
            set_last_error(&e.message(), e.code());
            e.status()
        }
        Err(payload) => {
            set_last_error(&panic_message(payload.as_ref()), "");
            dsh_status::DSH_PANIC
        }
    }
}

/// Runs the body of a `void` export (`dsh_free`, `dsh_plan_free`): it keeps
/// the last error (so a host may free results before reading a message),
/// except that a caught panic is recorded there.
pub(crate) fn ffi_void(body: impl FnOnce()) {
    // AssertUnwindSafe: the body only releases memory; nothing it touched is
    // used after a panic.
    if let Err(payload) = catch_unwind(AssertUnwindSafe(body)) {
        set_last_error(&panic_message(payload.as_ref()), "");
    }
}

/// A handle's value. A call that panics inside the core answers
/// `DSH_PANIC`, and the handle stays usable.
///
/// Deviation from STYLE-ffi §7 ("a store that panicked in the middle of a
/// write answers `DSH_INVARIANT` from then on"), deliberately: poisoning
/// turned one bad input (a panic on stored bytes, DIFFERENCES A.1 #6) into
/// a store that could only be closed, losing every live session of the
/// host. The core needs no poison flag: its locks (`parking_lot`) do not
/// poison and are released by the unwind, a write is durable-first (a
/// JSONL append that panicked after writing leaves a file whose identity no
/// longer matches the revision, so the next append is refused as a
/// conflict and a load reads what is on disk; a SQLite transaction rolls
/// back when it is dropped), and every cache is keyed by revision. A later
/// call therefore sees either the old state or the new one, never half.
pub(crate) struct Guarded<T> {
    value: T,
    panics: AtomicU64,
}

impl<T> Guarded<T> {
    pub(crate) fn new(value: T, _what: &'static str) -> Self {
        Guarded {
            value,
            panics: AtomicU64::new(0),
        }
    }

    /// Runs `f` on the value; a panic in `f` is counted and continues
    /// unwinding to `ffi_call` (which answers `DSH_PANIC`).
    pub(crate) fn run<R>(&self, f: impl FnOnce(&T) -> Result<R, FfiError>) -> Result<R, FfiError> {
        // AssertUnwindSafe: the panic is only counted here and re-raised;
        // the value is not touched on the way out (see the type's docs for
        // why the next call may use it).
        match catch_unwind(AssertUnwindSafe(|| f(&self.value))) {
            Ok(r) => r,
            Err(payload) => {
                self.panics.fetch_add(1, Ordering::Relaxed);
                resume_unwind(payload)
            }
        }
    }

    /// The value, for `_close`/`_free`.
    pub(crate) fn into_inner(self) -> T {
        self.value
    }

    /// The value, borrowed, for a `_close` that may keep the handle.
    pub(crate) fn value(&self) -> &T {
        &self.value
    }

    /// How many calls on this handle panicked.
    #[cfg(test)]
    pub(crate) fn panics(&self) -> u64 {
        self.panics.load(Ordering::Relaxed)
    }
}

/// `CStr` → `&str` for the last-error message (tests and debugging).
#[cfg(test)]
pub(crate) fn c_text(p: *const std::os::raw::c_char) -> String {
    // SAFETY: test-only; callers pass pointers from this module's slots or
    // `CString::into_raw`, which are valid NUL-terminated strings.
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ok_clears_the_last_error() {
        set_last_error("stale", "STALE");
        assert_eq!(ffi_call(|| Ok(())), dsh_status::DSH_OK);
        assert_eq!(last_error_text(), "");
        assert_eq!(last_error_code_text(), "");
    }

    #[test]
    fn core_error_sets_message_and_code() {
        let s = ffi_call(|| {
            Err(
                Error::conflict_code("SESSION_ALREADY_EXISTS", "session \"a\" already exists")
                    .into(),
            )
        });
        assert_eq!(s, dsh_status::DSH_CONFLICT);
        assert_eq!(last_error_text(), "session \"a\" already exists");
        assert_eq!(last_error_code_text(), "SESSION_ALREADY_EXISTS");
    }

    #[test]
    fn panics_become_dsh_panic_with_payload() {
        let s = ffi_call(|| panic!("boom {}", 7));
        assert_eq!(s, dsh_status::DSH_PANIC);
        assert_eq!(last_error_text(), "panic: boom 7");
        let s = ffi_call(|| std::panic::panic_any(42_u8));
        assert_eq!(s, dsh_status::DSH_PANIC);
        assert_eq!(last_error_text(), "panic: a panic with a non-text payload");
    }

    #[test]
    fn interior_nul_is_stripped_from_messages() {
        let s = ffi_call(|| Err(FfiError::Argument("a\0b".into())));
        assert_eq!(s, dsh_status::DSH_INVALID_ARGUMENT);
        assert_eq!(last_error_text(), "ab");
    }

    #[test]
    fn void_calls_keep_the_last_error_but_record_panics() {
        set_last_error("kept", "");
        ffi_void(|| {});
        assert_eq!(last_error_text(), "kept");
        ffi_void(|| panic!("in free"));
        assert_eq!(last_error_text(), "panic: in free");
    }

    #[test]
    fn a_handle_stays_usable_after_a_panic() {
        let g = Guarded::new(5_u32, "store");
        let s = ffi_call(|| g.run(|_| -> Result<(), FfiError> { panic!("mid-write") }));
        assert_eq!(s, dsh_status::DSH_PANIC);
        assert_eq!(g.panics(), 1);
        let s = ffi_call(|| {
            g.run(|v| {
                if *v == 5 {
                    Ok(())
                } else {
                    Err(FfiError::Argument("x".into()))
                }
            })
        });
        assert_eq!(s, dsh_status::DSH_OK);
        assert_eq!(g.into_inner(), 5);
    }
}
