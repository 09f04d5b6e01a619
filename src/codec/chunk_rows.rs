//! Chunk-row packing (SPEC §2).
