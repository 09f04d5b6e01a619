//! The persisted append checkpoint (issue 16): what a cold append needs of
//! a stored session (its next seq, its header, the log's size count for
//! `maxLogBytes`, and the fold of the rules, [`LogState`]), kept in the
//! store's cache directory so that a fresh process appending to a long log
//! does not read and judge the whole log again.
//!
//! - Where: `<cache dir>/append/<hash of id>.ckpt` (the cache directory of
//!   [`crate::backend::Backend::cache_dir`]: `<root>/.dsh-persist-cache/`
//!   for JSONL, `<database>.dsh-persist-cache/` for SQLite, and for
//!   PostgreSQL the store's subdirectory of its configured `cacheDir`,
//!   none by default). Only backends that know a log's [`AppendState`]
//!   exactly after their own folding read or writes
//!   ([`crate::backend::Backend::append_state`]) get one.
//! - Keyed by the log's revision token (JSONL: device, inode, size, mtime
//!   and ctime; SQLite and PostgreSQL: the database's or store's
//!   identity, the session row's incarnation and revision), and by the
//!   settings that change what a
//!   full read accepts (strict, `extraEventTypes`, the limits): it is used
//!   only when the stored log is exactly the state it describes, never
//!   after any other write (a writer without our checkpoint, a repair, a
//!   rewrite): those read the log.
//! - SQLite: a row store's revision does not change with a hand edit
//!   (`UPDATE events …` in the `sqlite3` shell), and SQLite keeps no change
//!   counter that would (none per table, the file's is not bumped in WAL
//!   mode; a trigger is a schema object SPEC §4.1 refuses). So the
//!   checkpoint also holds the seal of the session's rows
//!   ([`crate::backend::rows::seal`]: a keyed digest of every row as
//!   stored), and it is used only after a scan of the rows (fetched, not
//!   decoded or judged: 0.8M events, ~40 ms against a ~200 ms fold) finds
//!   the same seal and the session row the same header; the backend
//!   extends the seal with the rows it writes, so closing needs no scan.
//!   Its full reads seal the rows too (both decoding threads, each its
//!   stretches, joined in seq order: about a tenth of the read's
//!   instructions), so an append from an `inspect`'s retained read leaves
//!   a checkpoint as one after a fold does.
//! - Written by the store when it closes (or is dropped), for the sessions
//!   it appended to cold (the [`MAX_SAVED_AT_CLOSE`] longest), and by a
//!   live session when it closes (never on an append's path), to a
//!   temporary name and renamed (0600, in 0700 directories); not fsynced
//!   (a lost checkpoint costs one full read). A file whose hash does not
//!   match its bytes ([`cache_files::sealed`]) is ignored.
//!
//! PostgreSQL works as SQLite does (the same seal, the same rows): with a
//! `cacheDir` (a server store has no place beside it on this host; a
//! checkpoint table would be a schema change), its folding read seals the
//! rows it fetches, its writer extends the seal with what it inserted, and
//! a cold append takes a checkpoint after a scan of the rows, in one
//! snapshot with the session row, finds the seal (0.8M events: a reopen +
//! append of 50 in 78–86 ms, against 244–286 ms folding). Without a
//! `cacheDir` its cold appends fold the rows ([`super::cold_fold`]:
//! bounded memory, a full judgement).
//!
//! Why not resume from a checkpoint of an older revision and judge only
//! the bytes appended since: that needs a JSONL read from a byte offset
//! (frames and torn-tail rules from the middle of a log); left for later,
//! such logs are read whole.

use std::path::{Path, PathBuf};

use crate::backend::rows::seal::RowSeal;
use crate::backend::{AppendState, Revision};
use crate::model::binary::{Input, put_str, put_u64};
use crate::model::header::SessionHeader;
use crate::model::validate::LogState;
use crate::store::cache_files;
use crate::store::config::StoreConfig;

const MAGIC: &str = concat!(
    "dsh-persist append checkpoint 4 ",
    env!("CARGO_PKG_VERSION"),
    "\n"
);

/// Checkpoints a store writes when it closes, at most (the sessions with
/// the longest logs; the others are read whole by their next cold append).
pub const MAX_SAVED_AT_CLOSE: usize = 64;

/// What a cold append continues from.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    pub revision: Revision,
    pub header: SessionHeader,
    pub next_seq: u64,
    /// The log's size count (`maxLogBytes`) at `revision`.
    pub log_bytes: u64,
    /// A row store's seal of the rows at `revision` (see
    /// [`AppendState::seal`]).
    pub seal: Option<RowSeal>,
    pub rules: LogState,
}

impl Checkpoint {
    /// What the backend is handed when the checkpoint is used.
    pub fn append_state(&self) -> AppendState {
        AppendState {
            next_seq: self.next_seq,
            log_bytes: self.log_bytes,
            seal: self.seal.clone(),
        }
    }
}

/// What a full read must match for a checkpoint to stand for it: the
/// settings of `config` that change what a read accepts.
pub fn rules_key(config: &StoreConfig) -> String {
    let mut extra = config.extra_event_types.clone();
    extra.sort();
    extra.dedup();
    let limits = config.backend.limits();
    format!(
        "strict={} maxRecordBytes={} maxLogBytes={} extraEventTypes={}",
        config.strict,
        limits.max_record_bytes,
        limits.max_log_bytes,
        crate::model::json::quote(&extra.join("\n"))
    )
}

/// The checkpoint file of `id` under the cache directory `dir`.
pub fn file_of(dir: &Path, id: &str) -> PathBuf {
    cache_files::file_of(dir, "append", id, "ckpt")
}

/// The bytes of a checkpoint file.
pub fn encode(id: &str, rules_key: &str, c: &Checkpoint) -> Vec<u8> {
    // Sized once (a growing vector of megabytes costs the kernel's
    // zeroing of every page it moves to): the texts, and per surface node
    // its seq, kind and length.
    let (nodes, text) = c.rules.surface_size();
    let mut out = Vec::with_capacity(text + 17 * nodes + 4096);
    out.extend_from_slice(MAGIC.as_bytes());
    put_str(&mut out, id);
    put_str(&mut out, &c.revision.0);
    put_str(&mut out, rules_key);
    put_u64(&mut out, c.next_seq);
    put_u64(&mut out, c.log_bytes);
    match &c.seal {
        None => out.push(0),
        Some(s) => {
            out.push(1);
            s.encode(&mut out);
        }
    }
    put_str(&mut out, &c.header.to_jsonl_line());
    c.rules.encode(&mut out);
    cache_files::sealed(out)
}

/// Checkpoint bytes around `body` (what [`intact_body`] returns): the magic
/// line, `body`, the hash. [`encode`] writes its body in place; the fuzz
/// target (`append_checkpoint`) builds its inputs with this, so that they
/// reach the decoder past the integrity check.
pub fn wrap_body(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + body.len() + 8);
    out.extend_from_slice(MAGIC.as_bytes());
    out.extend_from_slice(body);
    cache_files::sealed(out)
}

/// The body of checkpoint bytes (between the magic line and the hash) when
/// they are intact: the hash matches and the magic line is this build's.
pub fn intact_body(bytes: &[u8]) -> Option<&[u8]> {
    cache_files::unsealed(bytes, MAGIC.as_bytes())
}

/// Reads checkpoint bytes when they are intact and describe `id` at
/// `revision` under `rules_key`.
pub fn decode(bytes: &[u8], id: &str, revision: &Revision, rules_key: &str) -> Option<Checkpoint> {
    let mut inp = Input(intact_body(bytes)?);
    if inp.str()? != id || inp.str()? != revision.0 || inp.str()? != rules_key {
        return None;
    }
    let next_seq = inp.u64()?;
    let log_bytes = inp.u64()?;
    let seal = match inp.u8()? {
        0 => None,
        1 => Some(RowSeal::decode(&mut inp)?),
        _ => return None,
    };
    // The header as a full read of a JSONL log finds it (its line).
    let header = SessionHeader::parse_line_lenient(inp.str()?).ok()??;
    if header.id != id || header.problem().is_some() {
        return None;
    }
    let rules = LogState::decode(&mut inp)?;
    if !inp.0.is_empty() || rules.event_count() as u64 != next_seq {
        return None;
    }
    Some(Checkpoint {
        revision: revision.clone(),
        header,
        next_seq,
        log_bytes,
        seal,
        rules,
    })
}

/// How many times its own size a checkpoint file may claim to decode to
/// and have that size reserved up front. The bench workload's checkpoint
/// (100k events) decodes to 65 times its file; a claim beyond this one is
/// believed only as far as the frame really decodes.
const PRESIZE_RATIO: u64 = 1024;

/// The checkpoint of `id` in `dir` when it describes `revision`. The file
/// is one zstd frame of [`encode`]'s bytes that states its decoded size
/// (the surface texts compress well; uncompressed the file was about as
/// large as a zstd log); `max_bytes` bounds that size (the store's
/// `maxLogBytes`: the state holds less text than the log), and the frame
/// is decoded into a buffer of that size (a growing buffer cost a third of
/// a reopen + append at 0.8M events in page faults). The stated size is a
/// claim of the file, whose hash checks integrity, not origin, so a size
/// beyond `PRESIZE_RATIO` (1,024) times the file gets a buffer that grows with
/// what the frame really decodes, and every reservation is fallible: a
/// crafted frame of a few bytes stating a gigabyte costs a few KiB, and
/// memory that cannot be had is a miss (the log is read), never an abort
/// of a host running under a memory limit.
pub fn load(
    dir: &Path,
    id: &str,
    revision: &Revision,
    rules_key: &str,
    max_bytes: u64,
) -> Option<Checkpoint> {
    // A frame is never much larger than what it holds.
    let file = cache_files::read_at_most(&file_of(dir, id), max_bytes.saturating_add(1 << 16))?;
    let size = zstd::zstd_safe::get_frame_content_size(&file).ok()??;
    if size > max_bytes {
        return None;
    }
    let bytes = inflate(&file, usize::try_from(size).ok()?)?;
    decode(&bytes, id, revision, rules_key)
}

/// The `size` bytes the frame `file` decodes to; `None` when it decodes to
/// anything else, is not one whole frame, or the memory cannot be had.
fn inflate(file: &[u8], size: usize) -> Option<Vec<u8>> {
    use zstd::zstd_safe::{DCtx, InBuffer, OutBuffer};
    let mut out = Vec::new();
    let believed = (file.len() as u64).saturating_mul(PRESIZE_RATIO);
    if size as u64 <= believed {
        out.try_reserve_exact(size).ok()?;
        let n = zstd::bulk::Decompressor::new()
            .ok()?
            .decompress_to_buffer(file, &mut out)
            .ok()?;
        return (n == size).then_some(out);
    }
    out.try_reserve_exact(usize::try_from(believed).ok()?)
        .ok()?;
    let mut dctx = DCtx::try_create()?;
    let mut input = InBuffer::around(file);
    loop {
        if out.len() == out.capacity() {
            // Room for one byte past the stated size at most: a frame
            // that holds more is refused below.
            let room = (size + 1).saturating_sub(out.len());
            if room == 0 {
                return None;
            }
            out.try_reserve_exact(out.capacity().max(4096).min(room))
                .ok()?;
        }
        let before = out.len();
        let hint = dctx
            .decompress_stream(&mut OutBuffer::around_pos(&mut out, before), &mut input)
            .ok()?;
        if hint == 0 {
            break;
        }
        if out.len() == before && input.pos() == file.len() {
            return None;
        }
    }
    (out.len() == size && input.pos() == file.len()).then_some(out)
}

/// Writes the checkpoint of `id` (best effort: one that cannot be written
/// costs the next fresh process one full read).
pub fn save(dir: &Path, id: &str, rules_key: &str, c: &Checkpoint) {
    if let Ok(z) = zstd::bulk::compress(&encode(id, rules_key, c), 3) {
        cache_files::write_private(&file_of(dir, id), &z);
    }
}

/// Removes the checkpoint of `id` (after a delete; a stale one would never
/// match anyway, this only frees the space).
pub fn remove(dir: &Path, id: &str) {
    let _ = std::fs::remove_file(file_of(dir, id));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Checkpoint {
        Checkpoint {
            revision: Revision("jsonl:1:2:3:4:5".into()),
            header: SessionHeader::parse_line_lenient(&SessionHeader::new("s", 7).to_jsonl_line())
                .unwrap()
                .unwrap(),
            next_seq: 0,
            log_bytes: 99,
            seal: None,
            rules: LogState::new(),
        }
    }

    #[test]
    fn round_trip_and_every_key_checked() {
        let c = sample();
        let bytes = encode("s", "k", &c);
        assert_eq!(decode(&bytes, "s", &c.revision, "k"), Some(c.clone()));
        // With a row store's seal.
        let sealed = Checkpoint {
            seal: Some(RowSeal::new()),
            ..c.clone()
        };
        let with_seal = encode("s", "k", &sealed);
        assert_eq!(decode(&with_seal, "s", &c.revision, "k"), Some(sealed));
        for n in 0..with_seal.len() {
            assert!(decode(&with_seal[..n], "s", &c.revision, "k").is_none());
        }
        assert!(decode(&bytes, "t", &c.revision, "k").is_none());
        assert!(decode(&bytes, "s", &Revision("jsonl:1:2:3:4:6".into()), "k").is_none());
        assert!(decode(&bytes, "s", &c.revision, "strict").is_none());
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n], "s", &c.revision, "k").is_none());
        }
        let mut flipped = bytes.clone();
        let mid = flipped.len() / 2;
        flipped[mid] ^= 1;
        assert!(decode(&flipped, "s", &c.revision, "k").is_none());
        // The header it holds must be a valid one of this very session
        // (the hash checks integrity, not origin).
        let header = |line: &str| SessionHeader::parse_line_lenient(line).unwrap().unwrap();
        let other = header(&SessionHeader::new("t", 7).to_jsonl_line());
        let invalid = header(
            r#"{"type":"session","version":0,"id":"s","createdAt":7,"cwd":"relative","delegationDepth":0}"#,
        );
        assert!(invalid.problem().is_some());
        for h in [other, invalid] {
            let wrong = Checkpoint {
                header: h.clone(),
                ..c.clone()
            };
            let bytes = encode("s", "k", &wrong);
            assert!(decode(&bytes, "s", &c.revision, "k").is_none(), "{h:?}");
        }
        // A next seq other than the fold's event count, and bytes after
        // the fold, are refused each on its own.
        let ahead = Checkpoint {
            next_seq: 1,
            ..c.clone()
        };
        assert!(decode(&encode("s", "k", &ahead), "s", &c.revision, "k").is_none());
        let mut longer = intact_body(&bytes).unwrap().to_vec();
        longer.push(0);
        assert!(decode(&wrap_body(&longer), "s", &c.revision, "k").is_none());
        // What the fuzz target wraps is what `encode` writes around a body,
        // so its inputs reach the decoder past the integrity check.
        let body = intact_body(&bytes).unwrap();
        assert_eq!(wrap_body(body), bytes);
        assert_eq!(intact_body(&wrap_body(b"")), Some(&b""[..]));
    }

    #[test]
    fn saved_and_loaded_from_a_directory() {
        let dir = std::env::temp_dir().join(format!(
            "dsh-ckpt-{}-{}",
            std::process::id(),
            crate::backend::jsonl::revision::random_u64()
        ));
        let c = sample();
        save(&dir, "s", "k", &c);
        assert_eq!(load(&dir, "s", &c.revision, "k", 1 << 20), Some(c.clone()));
        // Stored compressed; a decoded size over the bound is refused.
        let plain = encode("s", "k", &c).len() as u64;
        assert!(std::fs::metadata(file_of(&dir, "s")).unwrap().len() < plain);
        assert!(load(&dir, "s", &c.revision, "k", plain - 1).is_none());
        remove(&dir, "s");
        assert!(load(&dir, "s", &c.revision, "k", 1 << 20).is_none());
        // A file decoding to far more than PRESIZE_RATIO times its size
        // (here a long rules key) is read on the growing path, the same.
        let key = "k".repeat(4 << 20);
        save(&dir, "s", &key, &c);
        let stored = std::fs::metadata(file_of(&dir, "s")).unwrap().len();
        assert!(stored * PRESIZE_RATIO < 4 << 20, "{stored} bytes");
        assert_eq!(load(&dir, "s", &c.revision, &key, 8 << 20), Some(c.clone()));
        // The frames of both paths: bytes after the frame, or a frame cut
        // short, are refused.
        for key in ["k".to_string(), key] {
            save(&dir, "s", &key, &c);
            let good = std::fs::read(file_of(&dir, "s")).unwrap();
            let size = encode("s", &key, &c).len();
            assert_eq!(inflate(&good, size).map(|b| b.len()), Some(size));
            let mut longer = good.clone();
            longer.push(0);
            assert!(inflate(&longer, size).is_none());
            assert!(inflate(&good[..good.len() - 1], size).is_none());
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
