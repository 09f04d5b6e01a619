//! The C ABI (SPEC §11): the only module with `unsafe`.
//!
//! Mechanical by design: check and convert the arguments
//! (`args`), call the core, convert the result ([`strings`]), and return a
//! [`dsh_status`] ([`status`]), all inside the panic boundary (`boundary`).
//! One file per handle type: [`store`], [`session`], [`plan`]. The header
//! `include/dsh_persist.h` is generated from these files by cbindgen
//! (`cbindgen.toml`; `tests/header.rs` keeps it fresh).

#![allow(non_camel_case_types)]

mod args;
pub mod async_ops;
mod boundary;
pub mod cancel;
pub mod catalog;
mod handles;
pub mod id_json;
pub mod manage;
pub mod plan;
pub mod result;
pub mod session;
pub mod status;
pub mod store;
pub mod strings;

pub use cancel::{dsh_cancel, dsh_error};
pub use catalog::dsh_follow;
pub use plan::dsh_plan;
pub use result::dsh_result;
pub use session::dsh_session;
pub use status::dsh_status;
pub use store::dsh_store;

/// Handles are shared between host threads: each must be `Send + Sync`.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<dsh_store>();
    assert_send_sync::<dsh_session>();
    assert_send_sync::<dsh_plan>();
    assert_send_sync::<dsh_follow>();
    assert_send_sync::<dsh_cancel>();
    assert_send_sync::<dsh_error>();
    assert_send_sync::<dsh_result>();
};

#[cfg(test)]
pub(crate) mod testutil;

#[cfg(test)]
mod tests {
    use std::os::raw::c_char;

    use super::args::str_arg;
    use super::boundary::ffi_call;
    use super::status::dsh_status;
    use super::testutil::{c, err};

    /// A test-only entry point shaped like the real exports (not
    /// `no_mangle`, so neither exported nor in the header) whose body panics.
    unsafe extern "C" fn dsh_test_panic(message: *const c_char) -> dsh_status {
        ffi_call(|| {
            // SAFETY: the test passes a valid C string.
            let message = unsafe { str_arg(message, "message") }?;
            panic!("{message}")
        })
    }

    #[test]
    fn a_panic_inside_an_export_is_dsh_panic() {
        let message = c("the core broke a rule");
        let status = unsafe { dsh_test_panic(message.as_ptr()) };
        assert_eq!(status, dsh_status::DSH_PANIC);
        assert_eq!(err(), "panic: the core broke a rule");
        let status = unsafe { dsh_test_panic(std::ptr::null()) };
        assert_eq!(status, dsh_status::DSH_INVALID_ARGUMENT);
        assert_eq!(err(), "`message` must not be NULL");
    }
}
