//! JSONL backend (SPEC §3).

pub mod codec_zstd;
pub mod frames;
pub mod layout;
