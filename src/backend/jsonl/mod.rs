//! JSONL backend (SPEC §3).
