//! Storage codecs.

pub mod chunk_rows;
