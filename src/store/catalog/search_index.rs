//! The search index: per session, the message texts of its log (seq, role,
//! text), keyed by the log's revision token. It is a cache only: the store
//! rebuilds an entry whenever the session's revision differs, and the
//! original never reads it.
//!
//! Where it lives: in memory (per process, bounded), and on disk in the
//! store's cache directory ([`crate::backend::Backend::cache_dir`]:
//! `<root>/.dsh-persist-cache/search/` for JSONL,
//! `<database>.dsh-persist-cache/search/` for a SQLite file; PostgreSQL and
//! in-memory SQLite have none unless the caller names one). One file per
//! session, named by a hash of its id; written to a temporary name and
//! renamed, never fsynced (losing it costs a re-index). A file whose hash
//! does not match its bytes ([`cache_files::sealed`]: a damaged block, a
//! file cut short by a crash) or that is larger than the store's
//! `maxLogBytes` allows is rebuilt from the log, never searched.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use once_cell::sync::Lazy;
use parking_lot::Mutex;

use super::text::Role;
use crate::backend::Revision;
use crate::model::binary::{Input, put_str, put_u64};
use crate::store::cache_files;

/// One piece of message text.
#[derive(Clone, Debug)]
pub struct Doc {
    pub seq: u64,
    pub role: Role,
    pub text: String,
    /// `text` with ASCII letters lowercased (byte positions unchanged).
    pub folded: String,
}

impl Doc {
    pub fn new(seq: u64, role: Role, text: String) -> Doc {
        let folded = text.to_ascii_lowercase();
        Doc {
            seq,
            role,
            text,
            folded,
        }
    }
}

/// The texts of one session at one revision.
pub type Docs = Arc<Vec<Doc>>;

// 2: strings with u64 lengths (the cache files' one byte form); 3: a hash
// of the bytes at the end. A file of an older version is a miss and is
// rebuilt.
const MAGIC: &[u8] = b"dsh-persist search index 3\n";

/// The in-memory cache bound (text bytes).
const MEMORY_BYTES: usize = 512 << 20;

struct Memory {
    entries: HashMap<Revision, Docs>,
    bytes: usize,
}

static MEMORY: Lazy<Mutex<Memory>> = Lazy::new(|| {
    Mutex::new(Memory {
        entries: HashMap::new(),
        bytes: 0,
    })
});

fn docs_bytes(d: &[Doc]) -> usize {
    d.iter().map(|d| d.text.len() * 2 + 32).sum()
}

/// The in-memory entry of `revision`. Revision tokens name one stored
/// state of one session in one store, so they are the key.
pub fn memory_get(revision: &Revision) -> Option<Docs> {
    MEMORY.lock().entries.get(revision).cloned()
}

pub fn memory_put(revision: &Revision, docs: &Docs) {
    let mut m = MEMORY.lock();
    let n = docs_bytes(docs);
    if m.bytes + n > MEMORY_BYTES {
        m.entries.clear();
        m.bytes = 0;
    }
    if m.entries.insert(revision.clone(), docs.clone()).is_none() {
        m.bytes += n;
    }
}

/// The index file of `id` under `dir` (`dir/search/<hash>.idx`).
pub fn file_of(dir: &Path, id: &str) -> PathBuf {
    cache_files::file_of(dir, "search", id, "idx")
}

/// Reads the index file of `id` when it is intact and holds `revision`.
/// `max_log_bytes` (the store's `maxLogBytes`) bounds the file: its texts
/// come out of the log, and each costs at most 17 bytes besides (seq,
/// role, length), less than the JSON around it in the log.
pub fn load(dir: &Path, id: &str, revision: &Revision, max_log_bytes: u64) -> Option<Docs> {
    let bytes = cache_files::read_at_most(
        &file_of(dir, id),
        max_log_bytes.saturating_mul(2).saturating_add(1 << 16),
    )?;
    decode(&bytes, id, revision)
}

/// The texts of index file bytes ([`encode`]'s) when they are intact and
/// hold `id` at `revision`.
pub fn decode(bytes: &[u8], id: &str, revision: &Revision) -> Option<Docs> {
    let mut inp = Input(cache_files::unsealed(bytes, MAGIC)?);
    if inp.str()? != id || inp.str()? != revision.0 {
        return None;
    }
    // A text: seq, role and its length (17 bytes) at least.
    let n = inp.count(17)?;
    let mut docs = Vec::with_capacity(n);
    for _ in 0..n {
        let seq = inp.u64()?;
        let role = Role::from_code(inp.u8()?)?;
        docs.push(Doc::new(seq, role, inp.str()?.to_string()));
    }
    // Trailing bytes: not a file this build wrote.
    inp.take(1).is_none().then(|| Arc::new(docs))
}

/// The bytes of the index file of `id` at `revision`.
pub fn encode(id: &str, revision: &Revision, docs: &[Doc]) -> Vec<u8> {
    let mut out = Vec::with_capacity(docs_bytes(docs) / 2 + 64);
    out.extend_from_slice(MAGIC);
    put_str(&mut out, id);
    put_str(&mut out, &revision.0);
    put_u64(&mut out, docs.len() as u64);
    for d in docs {
        put_u64(&mut out, d.seq);
        out.push(d.role.code());
        put_str(&mut out, &d.text);
    }
    cache_files::sealed(out)
}

/// Writes the index file of `id` (best effort: a cache that cannot be
/// written is rebuilt next time).
pub fn save(dir: &Path, id: &str, revision: &Revision, docs: &[Doc]) {
    cache_files::write_private(&file_of(dir, id), &encode(id, revision, docs));
}
