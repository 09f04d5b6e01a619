//! The data model (SPEC §1) and the pure rules over it (§5).

pub mod binary;
pub mod event;
pub mod fields;
pub mod header;
pub mod invariants;
pub mod json;
pub mod legacy;
pub mod log_fold;
pub mod log_state_codec;
pub mod repair;
pub mod seed;
pub mod session_list;
pub mod surface;
pub mod validate;
pub mod vocabulary;
