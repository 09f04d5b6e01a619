//! Fuzz target bodies for dsh-persist (see `targets.rs`; run with
//! `fuzz/run-all.sh`).

pub mod targets;
