//! The store coordinator (SPEC §6): live sessions, write-behind batching,
//! load/inspect/prepare with repair, resume and fork.

pub mod config;
pub mod write_behind;
