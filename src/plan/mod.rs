//! Plan mode (SPEC §7).
