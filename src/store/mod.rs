//! The store coordinator (SPEC §6).
