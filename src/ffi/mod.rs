//! The C ABI (SPEC §11): the only module with `unsafe`.
//!
//! Mechanical by design: check and convert the arguments
//! ([`args`]), call the core, convert the result ([`strings`]), and return a
//! [`dsh_status`] ([`status`]), all inside the panic boundary ([`boundary`]).
//! One file per handle type: [`store`], [`session`], [`plan`]. The header
//! `include/dsh_persist.h` is generated from these files by cbindgen
//! (`cbindgen.toml`; `tests/header.rs` keeps it fresh).

#![allow(non_camel_case_types)]

mod args;
mod boundary;
pub mod plan;
pub mod session;
pub mod status;
pub mod store;
pub mod strings;

pub use plan::dsh_plan;
pub use session::dsh_session;
pub use status::dsh_status;
pub use store::dsh_store;

/// Handles are shared between host threads: each must be `Send + Sync`.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<dsh_store>();
    assert_send_sync::<dsh_session>();
    assert_send_sync::<dsh_plan>();
};
