//! dsh-persist: the durable session log of the DeepSeek Harness, in Rust.
//!
//! Crash-safe, append-only event logs in JSONL (Zstandard frames or raw) or
//! SQLite (schema 17), byte-compatible with the original TypeScript harness,
//! plus its plan-mode state machine. See `README.md` and `SPEC.md`.
//!
//! Layout:
//! - [`model`]: events, headers, lossless JSON, vocabulary, surface rules,
//!   turn/step invariants, stored-log validation, legacy conversion, repair.
//! - [`codec`]: the chunk-row storage codec.
//! - [`backend`]: the JSONL and SQLite backends.
//! - [`store`]: the coordinator, live sessions and write-behind batching.
//! - [`plan`]: plan mode.
//! - `ffi`: the C ABI (the only place with `unsafe`).

#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod backend;
pub mod codec;
pub mod error;
pub mod fault;
#[allow(unsafe_code)]
pub mod ffi;
pub mod model;
pub mod plan;
pub mod store;
#[cfg(test)]
mod test_dir;
pub mod uuid;

pub use error::{Error, ErrorKind, Result};
