//! Argument checks: NULL, UTF-8, handle pointers and out pointers.
//!
//! Every check happens before the core is called, so a bad argument never
//! leaves a half-done operation behind.

use std::ffi::CStr;
use std::os::raw::c_char;

use super::boundary::FfiError;
use crate::model::header::{HeaderSource, SessionHeader};

/// A required NUL-terminated UTF-8 input.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that stays valid and
/// unmodified for `'a`.
pub(crate) unsafe fn str_arg<'a>(p: *const c_char, name: &str) -> Result<&'a str, FfiError> {
    if p.is_null() {
        return Err(FfiError::Argument(format!("`{name}` must not be NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str().map_err(|e| {
        FfiError::Argument(format!(
            "`{name}` is not valid UTF-8 (invalid byte at offset {})",
            e.valid_up_to()
        ))
    })
}

/// An optional input: NULL means absent.
///
/// # Safety
/// As [`str_arg`].
pub(crate) unsafe fn opt_str_arg<'a>(
    p: *const c_char,
    name: &str,
) -> Result<Option<&'a str>, FfiError> {
    if p.is_null() {
        Ok(None)
    } else {
        // SAFETY: forwarded contract.
        unsafe { str_arg(p, name) }.map(Some)
    }
}

/// A shared reference to a live handle of `kind`: NULL, foreign or
/// mistyped → `DSH_INVALID_ARGUMENT`, closed → `DSH_CLOSED` (checked in the
/// handle registry before the pointer is dereferenced). Never `&mut`:
/// several host threads may be inside one handle at once.
///
/// # Safety
/// `p` is any pointer; a call on it must not overlap its `_close`/`_free`.
pub(crate) unsafe fn handle_ref<'a, T>(
    p: *const T,
    kind: super::handles::Kind,
    name: &str,
) -> Result<&'a T, FfiError> {
    super::handles::check(p, kind, name)?;
    // SAFETY: the registry holds `p` as a live `Box<T>` of this type (only
    // `register` after `Box::into_raw` adds it, `retire` before
    // `Box::from_raw` removes it), and no close overlaps this call.
    unsafe { p.as_ref() }.ok_or_else(|| FfiError::Argument(format!("`{name}` must not be NULL")))
}

/// A session header from host JSON, refusing an id (or parent id) that
/// holds U+0000 (D17): `\u0000` is valid JSON, but such an id could never be
/// passed back through a C string to load, resume or fork the session.
pub(crate) fn host_header(json: &str, name: &str) -> Result<SessionHeader, FfiError> {
    let header = SessionHeader::parse(json, HeaderSource::Host)?;
    for (field, value) in [
        ("id", Some(header.id.as_str())),
        ("parentSession", header.parent_session.as_deref()),
    ] {
        if value.is_some_and(|v| v.contains('\0')) {
            return Err(FfiError::Argument(format!(
                "`{name}` has an {field} that holds U+0000, which a C string cannot carry back to this library; choose an id without it"
            )));
        }
    }
    Ok(header)
}

/// An out pointer checked up front, written only on success.
pub(crate) struct Out<T> {
    ptr: *mut T,
}

impl<T> Out<T> {
    /// Checks that `ptr` is not NULL.
    pub(crate) fn new(ptr: *mut T, name: &str) -> Result<Out<T>, FfiError> {
        if ptr.is_null() {
            Err(FfiError::Argument(format!("`{name}` must not be NULL")))
        } else {
            Ok(Out { ptr })
        }
    }

    /// Stores `value`.
    ///
    /// # Safety
    /// The pointer given to [`Out::new`] is valid for one write of `T`.
    pub(crate) unsafe fn write(self, value: T) {
        // SAFETY: non-NULL (checked in `new`) and writable by the contract.
        unsafe { self.ptr.write(value) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(e: FfiError) -> String {
        match e {
            FfiError::Argument(m) => m,
            other => panic!("expected an argument error, got {other:?}"),
        }
    }

    #[test]
    fn null_and_bad_utf8_name_the_parameter() {
        let e = unsafe { str_arg(std::ptr::null(), "id") }.unwrap_err();
        assert_eq!(message(e), "`id` must not be NULL");
        let bad = b"ab\xffc\0";
        let e = unsafe { str_arg(bad.as_ptr().cast(), "events_json") }.unwrap_err();
        assert_eq!(
            message(e),
            "`events_json` is not valid UTF-8 (invalid byte at offset 2)"
        );
        let ok = b"h\xc3\xa9\0";
        assert_eq!(unsafe { str_arg(ok.as_ptr().cast(), "x") }.unwrap(), "hé");
        assert_eq!(unsafe { opt_str_arg(std::ptr::null(), "x") }.unwrap(), None);
    }

    #[test]
    fn null_handles_and_out_pointers_are_rejected() {
        let e = unsafe {
            handle_ref::<u8>(
                std::ptr::null(),
                super::super::handles::Kind::Store,
                "store",
            )
        }
        .unwrap_err();
        assert_eq!(message(e), "`store` must not be NULL");
        let e = Out::<u64>::new(std::ptr::null_mut(), "out_seq")
            .err()
            .unwrap();
        assert_eq!(message(e), "`out_seq` must not be NULL");
        let mut slot = 0_u64;
        let out = Out::new(&mut slot as *mut u64, "out_seq").unwrap();
        unsafe { out.write(9) };
        assert_eq!(slot, 9);
    }
}
