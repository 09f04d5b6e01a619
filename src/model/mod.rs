//! The data model (SPEC §1) and the pure rules over it (§5).

pub mod event;
pub mod header;
pub mod json;
pub mod vocabulary;
