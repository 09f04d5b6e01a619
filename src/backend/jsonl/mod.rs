//! JSONL backend (SPEC §3): one append-only log file per session, plain
//! JSONL or a chain of Zstandard frames, byte-compatible with the original.
//!
//! - [`layout`]: id escaping, project keys, where files live, root checks.
//! - [`frames`]: the structural scan of Zstandard frames.
//! - [`codec_zstd`]: the frame encoder (the original's exact bytes) and the
//!   streaming decoder.
//! - [`reader`]: header, line rules, torn tails, corruption.
//! - [`writer`]: lazy atomic creation, fsynced appends, rollback.
//! - [`revision`]: file-identity revision tokens.
//! - [`scan`]: the read-only walk of a whole root (`verify`, encoding detection).
//!
//! Writer locks live in `<root>/.dsh-persist-locks/` (see
//! [`crate::backend::writer_lock`]): a directory the original lists as one
//! more project directory holding no session directory, and whose files
//! (`<escaped id>@lock`) it ignores.

pub mod codec_zstd;
pub mod delete;
pub mod frames;
pub mod layout;
pub mod nofollow;
pub mod project_check;
pub mod reader;
pub mod revision;
pub mod salvage;
pub mod scan;
pub mod window;
pub mod writer;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

pub use layout::Compression;

use self::layout::{escape_id, project_dir_name};
use self::revision::FileIdentity;
use self::writer::OpenLog;
use super::limits::{self, Limits};
use super::writer_lock::{LOCK_DIR_NAME, LockSpace};
use super::{
    AppendState, Backend, BackendKind, EventSink, Expect, FoldedLog, Location, RawArtifact,
    Revision, ScannedSuffix, StoredLog, TornTail, WriterHolder, WriterLock,
};
use crate::codec::chunk_rows::{PackLimits, Record, pack, unpacked};
use crate::error::{Error, Result};
use crate::fault;
use crate::model::event::Event;
use crate::model::header::SessionHeader;
use crate::model::json::quote;
use crate::model::session_list::SessionList;

/// How to open a JSONL root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonlConfig {
    /// The root directory (created with mode 0700 when missing).
    pub root: PathBuf,
    /// `zstd` (default) or `none`; a root holds one encoding.
    pub compression: Compression,
    /// Pack runs of chunk deltas into rows on write (default `true`).
    pub pack_chunks: bool,
    /// Read and write bounds (`maxRecordBytes`, `maxLogBytes`).
    pub limits: Limits,
}

impl JsonlConfig {
    /// The defaults: zstd, packed chunks.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        JsonlConfig {
            root: root.into(),
            compression: Compression::Zstd,
            pack_chunks: true,
            limits: Limits::default(),
        }
    }
}

/// What this store knows about one log file.
#[derive(Default)]
struct FileState {
    /// The revision of the last clean read or write and the next seq then.
    known: Option<(Revision, u64)>,
    /// The decoded size of the log at a revision (counted against
    /// `maxLogBytes` by the next append).
    log_bytes: Option<(Revision, u64)>,
}

/// The JSONL backend over one root directory.
pub struct JsonlBackend {
    root: PathBuf,
    compression: Compression,
    pack_chunks: bool,
    limits: Limits,
    files: Mutex<HashMap<PathBuf, FileState>>,
    locks: LockSpace,
    /// The flat-layout verdicts of project directories, while unchanged.
    projects: project_check::ProjectChecks,
}

impl std::fmt::Debug for JsonlBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonlBackend")
            .field("root", &self.root)
            .field("compression", &self.compression)
            .field("pack_chunks", &self.pack_chunks)
            .finish()
    }
}

/// An absolute path without `.` and `..` segments, resolved on the text
/// (symlinks are not followed), as Node's `path.resolve` does.
fn resolve_lexically(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

impl JsonlBackend {
    /// Opens (and creates, mode 0700, if missing) a JSONL root.
    pub fn open(config: JsonlConfig) -> Result<JsonlBackend> {
        let root = std::path::absolute(&config.root)
            .map_err(|e| layout::io_err("cannot resolve root", &config.root, e))?;
        // Resolved once, like Node's `path.resolve`: `.` and `..` segments
        // are removed lexically (DIFFERENCES B 09).
        let root = resolve_lexically(&root);
        // mkdir -p, each new directory's parent fsynced (D13). The root
        // itself may be a symbolic link; links inside it are never followed.
        crate::backend::dirs::create_dir_all(&root)?;
        delete::sweep_trash(&root);
        Ok(JsonlBackend {
            locks: LockSpace::files(root.join(LOCK_DIR_NAME)),
            root,
            compression: config.compression,
            pack_chunks: config.pack_chunks,
            limits: config.limits,
            files: Mutex::new(HashMap::new()),
            projects: project_check::ProjectChecks::default(),
        })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The configured compression.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// The log path of a header's session (it may not exist yet).
    pub fn log_path(&self, header: &SessionHeader) -> Result<PathBuf> {
        Ok(self
            .root
            .join(project_dir_name(header.cwd.as_deref()))
            .join(escape_id(&header.id)?)
            .join(self.compression.file_name()))
    }

    /// The log file of `id`, found by scanning the project directories.
    /// Session directories without a log (a creation in progress) do not
    /// count; two logs for one id are refused.
    fn find_file(&self, id: &str) -> Result<Option<PathBuf>> {
        let mut found: Option<PathBuf> = None;
        for dir in layout::find_session_dirs(&self.root, id, &self.projects)? {
            if let Some(file) = layout::session_file(&dir, self.compression)? {
                if let Some(prev) = &found {
                    let prev_dir = prev.parent().expect("log in a session dir");
                    return Err(layout::duplicate_error(id, prev_dir, &dir));
                }
                found = Some(file);
            }
        }
        Ok(found)
    }

    /// The revision token of a file state: its identity alone, so every
    /// store instance and process gives an unchanged log the same token
    /// (SPEC §3.6; the original's token is the file identity too).
    fn revision_of(&self, _path: &Path, identity: &FileIdentity) -> Revision {
        identity.revision()
    }

    /// Records a write by this store and returns the new revision. `exact`
    /// is false when the file holds more than this write put there (a
    /// writer that does not take the writer lock appended at the same
    /// time): then nothing is remembered, and the token returned names the
    /// size this write expected, which no later stat matches, so the next
    /// append reads the log again instead of trusting a stale tail.
    fn note_write(
        &self,
        path: &Path,
        identity: &FileIdentity,
        next_seq: u64,
        exact: bool,
    ) -> Revision {
        let rev = self.revision_of(path, identity);
        let mut files = self.files.lock();
        let st = files.entry(path.to_path_buf()).or_default();
        st.known = exact.then(|| (rev.clone(), next_seq));
        rev
    }

    fn note_clean_read(&self, path: &Path, rev: &Revision, next_seq: u64) {
        let mut files = self.files.lock();
        files.entry(path.to_path_buf()).or_default().known = Some((rev.clone(), next_seq));
    }

    fn note_log_bytes(&self, path: &Path, rev: &Revision, bytes: u64) {
        let mut files = self.files.lock();
        files.entry(path.to_path_buf()).or_default().log_bytes = Some((rev.clone(), bytes));
    }

    fn forget_log_bytes(&self, path: &Path) {
        if let Some(st) = self.files.lock().get_mut(path) {
            st.log_bytes = None;
        }
    }

    fn known_log_bytes(&self, path: &Path, rev: &Revision) -> Option<u64> {
        let files = self.files.lock();
        match files.get(path).and_then(|s| s.log_bytes.as_ref()) {
            Some((r, n)) if r == rev => Some(*n),
            _ => None,
        }
    }

    fn known_next_seq(&self, path: &Path, rev: &Revision) -> Option<u64> {
        let files = self.files.lock();
        match files.get(path).and_then(|s| s.known.as_ref()) {
            Some((r, n)) if r == rev => Some(*n),
            _ => None,
        }
    }

    /// The records of a batch: chunk runs packed no larger than the record
    /// limit.
    fn records(&self, events: &[Event]) -> Vec<Record> {
        if self.pack_chunks {
            pack(
                events,
                &PackLimits {
                    max_data_bytes: self.limits.packed_data_bytes(),
                    ..PackLimits::JSONL
                },
            )
        } else {
            unpacked(events)
        }
    }

    /// The text of a repair's batch: the records recovered from a torn
    /// frame, re-encoded with this store's `packChunks` (DIFFERENCES A.1
    /// #16; the original's MANIFEST: "packChunks only affects bytes written
    /// by a repair"), then the closers (or the batch of a cold append that
    /// adopts the torn tail), each packed as a write batch is; a run of
    /// deltas does not continue from one into the other, as before. The
    /// recovered lines are parsed again as stored (not the converted events
    /// of the read). Every one of them parsed when the log was read; should
    /// one not, the lines are written back as they are.
    fn repair_batch(&self, recovered: &[String], closers: &[Event]) -> String {
        let mut events = Vec::with_capacity(recovered.len());
        for line in recovered {
            match Record::parse_stored_line(line) {
                Ok(r) => r.into_events(&mut events),
                Err(_) => return writer::batch_text(recovered, &self.records(closers)),
            }
        }
        let mut records = self.records(&events);
        records.extend(self.records(closers));
        writer::batch_text(&[], &records)
    }

    /// Checks that a stored header belongs at `path`.
    fn check_header_path(&self, header: &SessionHeader, path: &Path) -> Result<()> {
        let dir = path.parent().expect("log in a session dir");
        let session = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let project = dir
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("");
        // An id with a lone surrogate names its directory by its units.
        let escaped = match header.stored_id_utf16() {
            Some(units) => layout::escape_id_utf16(&units),
            None => escape_id(&header.id),
        };
        let Ok(want_session) = escaped else {
            return Err(Error::corruption(format!(
                "session artifact {}: header id {} cannot name a storage path",
                quote(&path.display().to_string()),
                quote(&header.id)
            )));
        };
        let want_project = project_dir_name(header.cwd.as_deref());
        if session == want_session && project == want_project {
            return Ok(());
        }
        if session == want_session && self.is_alias(&want_project, &want_session, path) {
            return Ok(());
        }
        Err(Error::corruption(format!(
            "session artifact {} holds the header of session {} (cwd {}), which belongs at {}; move it there or use another root",
            quote(&path.display().to_string()),
            quote(&header.id),
            header
                .cwd
                .as_deref()
                .map_or_else(|| "absent".to_string(), quote),
            quote(
                &self
                    .root
                    .join(want_project)
                    .join(want_session)
                    .join(self.compression.file_name())
                    .display()
                    .to_string()
            )
        )))
    }

    /// B 16: the header's project directory is a symbolic link that leads to
    /// the same physical log (the original accepts such an alias). Only
    /// `stat` goes through the link; reads and writes use the real path.
    fn is_alias(&self, project: &str, session: &str, real: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        let alias_dir = self.root.join(project);
        if !std::fs::symlink_metadata(&alias_dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return false;
        }
        let alias = alias_dir.join(session).join(self.compression.file_name());
        match (
            std::fs::metadata(alias),
            nofollow::metadata(real, nofollow::LOG_DEPTH),
        ) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }

    /// Where an append to a stored session writes: its log path, or, when
    /// the header's project directory is a link (an alias, B 16), the real
    /// log found in the root. Writes never go through a link.
    fn write_path(&self, header: &SessionHeader) -> Result<PathBuf> {
        let path = self.log_path(header)?;
        let project = self.root.join(project_dir_name(header.cwd.as_deref()));
        if std::fs::symlink_metadata(&project).is_ok_and(|m| m.file_type().is_symlink()) {
            if let Some(real) = self.find_file(&header.id)? {
                return Ok(real);
            }
        }
        Ok(path)
    }

    /// The headers, paths and identities of every listed session.
    fn list_entries(&self) -> Result<Vec<(SessionHeader, PathBuf, FileIdentity)>> {
        let mut out = Vec::new();
        let mut seen: HashMap<String, PathBuf> = HashMap::new();
        let mut dec = codec_zstd::FrameDecoder::bounded(self.limits.record());
        // Each log is opened relative to its directories' descriptors (no
        // link inside the root followed), the root and each project once.
        let root_fd = match nofollow::open_dir(&self.root, 0) {
            Ok(fd) => fd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(layout::io_err("cannot open root", &self.root, e)),
        };
        for project in layout::project_dirs(&self.root)? {
            let pdir = self.root.join(&project);
            let sessions = layout::check_project_dir(&pdir)?;
            if sessions.is_empty() {
                continue;
            }
            let project_fd = nofollow::dir_at(&root_fd, project.as_str())
                .map_err(|e| nofollow::io_err("cannot open", &pdir, 1, e))?;
            for session in sessions {
                crate::store::cancel::checkpoint()?;
                let sdir = pdir.join(&session);
                let Some(file) = layout::session_file(&sdir, self.compression)? else {
                    continue;
                };
                let opened = nofollow::dir_at(&project_fd, session.as_str())
                    .and_then(|fd| nofollow::open_regular_at(&fd, self.compression.file_name()));
                let (handle, meta) = match opened {
                    Ok(opened) => opened,
                    // Gone since the directory was read, or no longer a
                    // regular file (the scan skips those too): not listed.
                    Err(e)
                        if e.kind() == std::io::ErrorKind::NotFound
                            || nofollow::is_not_regular(&e) =>
                    {
                        continue;
                    }
                    Err(e) => {
                        return Err(nofollow::io_err(
                            "cannot open",
                            &file,
                            nofollow::LOG_DEPTH,
                            e,
                        ));
                    }
                };
                let Some((header, identity)) = reader::peek_header_file(
                    handle,
                    &meta,
                    &file,
                    self.compression,
                    &mut dec,
                    &self.limits,
                )?
                else {
                    continue;
                };
                self.check_header_path(&header, &file)?;
                let key = stored_id_key(&header);
                if let Some(prev) = seen.get(&key) {
                    return Err(layout::duplicate_error(&header.id, prev, &sdir));
                }
                seen.insert(key, sdir);
                out.push((header, file, identity));
            }
        }
        Ok(out)
    }

    /// A full read of the log at `path` for session `id`.
    fn read_path(&self, id: &str, path: &Path) -> Result<StoredLog> {
        self.read_path_from(id, path, 0)
    }

    /// A full read that leaves out packed-row members and plain chunk
    /// events with a seq below `skip_below` (every line is still parsed and
    /// judged; see [`reader::read_log_from`]).
    fn read_path_from(&self, id: &str, path: &Path, skip_below: u64) -> Result<StoredLog> {
        let outcome = reader::read_log_from(path, self.compression, skip_below, &self.limits)?;
        self.stored_log(id, path, outcome)
    }

    /// The checks and notes of a full read's outcome (the header belongs
    /// to `id` at `path`; a clean read notes its next seq and size count).
    fn stored_log(&self, id: &str, path: &Path, outcome: reader::ReadOutcome) -> Result<StoredLog> {
        if outcome.header.id != id {
            return Err(Error::corruption(format!(
                "session artifact {} holds session {}, not {}",
                quote(&path.display().to_string()),
                quote(&outcome.header.id),
                quote(id)
            )));
        }
        self.check_header_path(&outcome.header, path)?;
        let revision = self.revision_of(path, &outcome.identity);
        if outcome.torn.is_none() {
            self.note_clean_read(path, &revision, outcome.next_seq);
            self.note_log_bytes(path, &revision, outcome.log_bytes);
        }
        Ok(StoredLog {
            header: outcome.header,
            events: outcome.events,
            revision,
            torn: outcome.torn,
            raw_log: Some(path.display().to_string()),
            recovered_events: outcome.recovered_events,
            log_bytes: outcome.log_bytes,
        })
    }

    fn append_new(
        &self,
        header: &SessionHeader,
        events: &[Event],
        path: &Path,
    ) -> Result<Revision> {
        if events[0].seq != 0 {
            return Err(Error::invalid(format!(
                "the first append of session {} must start at seq 0, not {}",
                quote(&header.id),
                events[0].seq
            )));
        }
        if let Some(existing) = self.find_file(&header.id)? {
            return Err(Error::conflict(format!(
                "session {} is already stored at {}",
                quote(&header.id),
                existing.display()
            )));
        }
        let sdir = path.parent().expect("log in a session dir");
        writer::ensure_dir(sdir.parent().expect("session dir in a project"), 1)?;
        writer::ensure_dir(sdir, 2)?;
        let mut header_line = header.to_jsonl_line();
        header_line.push('\n');
        let header_line_len = header_line.len();
        let records = self.records(events);
        let batch = writer::batch_text(&[], &records);
        let content = match self.compression {
            Compression::None => {
                header_line.push_str(&batch);
                header_line.into_bytes()
            }
            Compression::Zstd => {
                let mut c = writer::encode_batch(&header_line, self.compression)?;
                c.extend(writer::encode_batch(&batch, self.compression)?);
                c
            }
        };
        debug_assert_eq!(header_line_len as u64, limits::new_log_bytes(header));
        self.limits
            .check_log_append(limits::new_log_bytes(header), events, &header.id)?;
        let identity = writer::create_log(path, &content)?;
        let exact = identity.size == content.len() as u64;
        let rev = self.note_write(path, &identity, events.len() as u64, exact);
        // The decoded bytes now in the log, as a full read counts them.
        let count = header_line_len as u64 + read_charge(&batch, &records);
        self.note_log_bytes(path, &rev, count);
        Ok(rev)
    }

    fn append_existing(
        &self,
        header: &SessionHeader,
        events: &[Event],
        path: &Path,
        expected: &Revision,
    ) -> Result<Revision> {
        let Some(mut log) = OpenLog::open(path)? else {
            return Err(Error::conflict(format!(
                "session {} is not stored at {} any more",
                quote(&header.id),
                path.display()
            )));
        };
        let current = self.revision_of(path, &log.identity);
        if current != *expected {
            return self.append_unexpected(header, events, path, log, expected);
        }
        let known = self
            .known_next_seq(path, expected)
            .zip(self.known_log_bytes(path, expected));
        let (next, before) = match known {
            Some(k) => k,
            None => {
                let stored = self.read_path(&header.id, path)?;
                if stored.revision != *expected {
                    return Err(moved(&header.id, path));
                }
                if stored.torn.is_some() {
                    return Err(Error::conflict(format!(
                        "session {} has a torn tail at {}; load it (which repairs the log) before appending",
                        quote(&header.id),
                        path.display()
                    )));
                }
                let bytes = self.known_log_bytes(path, &stored.revision).unwrap_or(0);
                (stored.events.len() as u64, bytes)
            }
        };
        if events[0].seq != next {
            return Err(Error::conflict(format!(
                "append to session {} must continue at seq {next}, but the batch starts at seq {}",
                quote(&header.id),
                events[0].seq
            )));
        }
        self.write_batch(&mut log, path, &header.id, events, next, Some(before))
    }

    /// Appends `events` (continuing at `next`) as one batch to `log`, whose
    /// decoded size is `before` bytes (`None`: not known, counted as 0 by
    /// the size check and not known after the write either).
    fn write_batch(
        &self,
        log: &mut OpenLog,
        path: &Path,
        id: &str,
        events: &[Event],
        next: u64,
        before: Option<u64>,
    ) -> Result<Revision> {
        self.limits
            .check_log_append(before.unwrap_or(0), events, id)?;
        let records = self.records(events);
        let batch = writer::batch_text(&[], &records);
        let bytes = writer::encode_batch(&batch, self.compression)?;
        let prev_len = log.identity.size;
        let identity = log.append(&bytes)?;
        let exact = identity.size == prev_len + bytes.len() as u64;
        let rev = self.note_write(path, &identity, next + events.len() as u64, exact);
        // The decoded bytes now in the log, as a full read counts them (the
        // check above counted the batch by its upper bound).
        match before {
            Some(b) => {
                let count = b.saturating_add(read_charge(&batch, &records));
                self.note_log_bytes(path, &rev, count);
            }
            None => self.forget_log_bytes(path),
        }
        Ok(rev)
    }

    /// An append whose expected revision is not the file's any more. Under
    /// the writer lock (which every writer holds) nobody else changed the
    /// log, so what differs is this writer's own earlier attempt: a failed
    /// append cut back (only the file times moved), or one whose fsync or
    /// rollback failed and whose bytes, whole or in part, are still there
    /// (SPEC §3.4; an ambiguous write). The log is read again: stored events
    /// at the batch's seqs must be exactly the batch's first events (then
    /// they are not written twice), a torn remainder of the attempt is cut,
    /// and the rest of the batch is appended. Anything else is a conflict.
    fn append_unexpected(
        &self,
        header: &SessionHeader,
        events: &[Event],
        path: &Path,
        mut log: OpenLog,
        expected: &Revision,
    ) -> Result<Revision> {
        let id = &header.id;
        // Where the expected state ended, as this store last knew it (its
        // own write or clean read); a batch starting elsewhere is stale.
        if self.known_next_seq(path, expected) != Some(events[0].seq) {
            return Err(moved(id, path));
        }
        let stored = self.read_path(id, path)?;
        if self.revision_of(path, &log.identity) != stored.revision {
            return Err(moved(id, path));
        }
        let first = events[0].seq as usize;
        let durable = &stored.events[..stored.durable_len()];
        let Some(already) = durable.len().checked_sub(first) else {
            return Err(moved(id, path));
        };
        let same = already <= events.len()
            && durable[first..]
                .iter()
                .zip(events)
                .all(|(a, b)| a.to_json() == b.to_json());
        if !same {
            return Err(moved(id, path));
        }
        let rest = &events[already..];
        match &stored.torn {
            None => {}
            Some(TornTail::Jsonl { truncate_to, .. }) => log.truncate(*truncate_to)?,
            Some(other) => {
                return Err(Error::invariant(format!(
                    "a JSONL read of session {} reported a torn tail of another backend: {other:?}",
                    quote(id)
                )));
            }
        }
        let next = durable.len() as u64;
        if rest.is_empty() {
            let meta = nofollow::metadata(path, nofollow::LOG_DEPTH)
                .map_err(|e| layout::io_err("cannot stat", path, e))?;
            return Ok(self.note_write(path, &FileIdentity::of(&meta), next, true));
        }
        // A torn remainder was not a clean read: its size is not known,
        // and the cap is then checked by the next full read.
        let before = self.known_log_bytes(path, &stored.revision);
        self.write_batch(&mut log, path, id, rest, next, before)
    }

    /// Removes the temp files an interrupted publish of `id` left in its
    /// session directories (a process killed between creating the temp file
    /// and unlinking it). Only under the writer lock of `id`: every publish
    /// of `id` holds it, so none of these files is being written. Best
    /// effort: a file that cannot be removed stays for the next writer.
    fn remove_orphaned_temps(&self, id: &str) {
        let Ok(dirs) = layout::find_session_dirs(&self.root, id, &self.projects) else {
            return;
        };
        for dir in dirs {
            let Ok(entries) = layout::read_dir_entries(&dir) else {
                continue;
            };
            for (name, _, is_file) in entries {
                if is_file && writer::is_temp_name(&name) {
                    let _ = fault::remove_file(&dir.join(name));
                }
            }
        }
    }
}

/// What a full read counts of `batch`, the text of `records` (whole
/// lines): the read's own rules, [`limits::line_charge`] per line and
/// [`limits::expansion_charge`] per record.
fn read_charge(batch: &str, records: &[Record]) -> u64 {
    let lines = memchr::memchr_iter(b'\n', batch.as_bytes())
        .scan(0, |start, nl| {
            let len = nl - *start;
            *start = nl + 1;
            Some(limits::line_charge(len))
        })
        .fold(0u64, u64::saturating_add);
    records
        .iter()
        .map(limits::expansion_charge)
        .fold(lines, u64::saturating_add)
}

fn moved(id: &str, path: &Path) -> Error {
    Error::conflict(format!(
        "session {} changed on disk since it was read ({}); another writer moved it",
        quote(id),
        path.display()
    ))
}

/// Checks that a batch is non-empty and contiguous.
fn check_batch(events: &[Event]) -> Result<()> {
    let Some(first) = events.first() else {
        return Err(Error::invalid(
            "an append batch must hold at least one event",
        ));
    };
    for (i, e) in events.iter().enumerate() {
        if e.seq != first.seq + i as u64 {
            return Err(Error::invalid(format!(
                "append batch is not contiguous: event {i} has seq {}, expected {}",
                e.seq,
                first.seq + i as u64
            )));
        }
    }
    Ok(())
}

/// What tells stored ids apart: the id, or for an id with a lone
/// surrogate (whose [`SessionHeader::id`] reads it as U+FFFD) its escaped
/// directory name, behind a U+0000 no escaped name holds.
pub(crate) fn stored_id_key(header: &SessionHeader) -> String {
    match header
        .stored_id_utf16()
        .and_then(|u| layout::escape_id_utf16(&u).ok())
    {
        Some(segment) => format!("{}\0{segment}", header.id),
        None => header.id.clone(),
    }
}

impl Backend for JsonlBackend {
    fn concurrent_reads(&self) -> bool {
        true
    }

    fn read_window(
        &self,
        id: &str,
        spec: &super::catalog::WindowSpec<'_>,
    ) -> Result<Option<super::catalog::Window>> {
        match self.find_file(id)? {
            Some(path) => self.window_of(&path, spec).map(Some),
            None => Ok(None),
        }
    }

    fn read_after(
        &self,
        id: &str,
        cursor: &mut super::catalog::FollowCursor,
    ) -> Result<Option<Vec<Event>>> {
        match self.find_file(id)? {
            Some(path) => match self.read_after_at(&path, cursor) {
                Ok(events) => Ok(Some(events)),
                // Deleted between the look-up and the read: not stored.
                Err(e) => match self.find_file(id)? {
                    None => Ok(None),
                    Some(_) => Err(e),
                },
            },
            None => Ok(None),
        }
    }

    fn cache_dir(&self) -> Option<PathBuf> {
        Some(self.root.join(super::catalog::CACHE_DIR_NAME))
    }

    fn kind(&self) -> BackendKind {
        BackendKind::Jsonl
    }

    fn locate(&self, header: &SessionHeader) -> Result<Option<Location>> {
        Ok(Some(Location::Jsonl {
            path: self.log_path(header)?.display().to_string(),
        }))
    }

    fn list(&self) -> Result<SessionList> {
        Ok(self
            .list_entries()?
            .into_iter()
            .map(|(h, _, _)| h)
            .collect())
    }

    fn list_snapshots(&self) -> Result<Vec<(SessionHeader, Revision)>> {
        Ok(self
            .list_entries()?
            .into_iter()
            .map(|(h, p, id)| {
                let rev = self.revision_of(&p, &id);
                (h, rev)
            })
            .collect())
    }

    fn revision(&self, id: &str) -> Result<Option<Revision>> {
        let Some(path) = self.find_file(id)? else {
            return Ok(None);
        };
        match nofollow::metadata(&path, nofollow::LOG_DEPTH) {
            Ok(m) => Ok(Some(self.revision_of(&path, &FileIdentity::of(&m)))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(nofollow::io_err(
                "cannot stat",
                &path,
                nofollow::LOG_DEPTH,
                e,
            )),
        }
    }

    fn append(
        &self,
        header: &SessionHeader,
        events: &[Event],
        expect: Expect<'_>,
    ) -> Result<Revision> {
        check_batch(events)?;
        for e in events {
            self.limits.check_event(e, &header.id)?;
        }
        match expect {
            Expect::New => self.append_new(header, events, &self.log_path(header)?),
            Expect::At(rev) => self.append_existing(header, events, &self.write_path(header)?, rev),
        }
    }

    fn log_bytes_at(&self, header: &SessionHeader, revision: &Revision) -> Option<u64> {
        self.known_log_bytes(&self.write_path(header).ok()?, revision)
    }

    fn append_state(&self, header: &SessionHeader, revision: &Revision) -> Option<AppendState> {
        let path = self.write_path(header).ok()?;
        let next_seq = self.known_next_seq(&path, revision)?;
        let log_bytes = self.known_log_bytes(&path, revision)?;
        Some(AppendState {
            next_seq,
            log_bytes,
            seal: None,
        })
    }

    fn adopt_append_state(
        &self,
        header: &SessionHeader,
        revision: &Revision,
        state: &AppendState,
    ) -> Result<Option<SessionHeader>> {
        let path = self.write_path(header)?;
        self.note_clean_read(&path, revision, state.next_seq);
        self.note_log_bytes(&path, revision, state.log_bytes);
        // The checkpoint's header is the log's header line, as read.
        Ok(Some(header.clone()))
    }

    fn read(&self, id: &str) -> Result<Option<StoredLog>> {
        match self.find_file(id)? {
            None => Ok(None),
            Some(path) => self.read_path(id, &path).map(Some),
        }
    }

    fn read_folding(&self, id: &str, sink: &mut dyn EventSink) -> Result<Option<FoldedLog>> {
        let Some(path) = self.find_file(id)? else {
            return Ok(None);
        };
        let outcome = reader::read_log_folding(&path, self.compression, &self.limits, sink)?;
        let next = outcome.next_seq;
        Ok(Some(FoldedLog::of(
            self.stored_log(id, &path, outcome)?,
            next,
        )))
    }

    fn lock_writer(&self, id: &str) -> Result<WriterLock> {
        escape_id(id)?;
        let lock = self.locks.lock(id)?;
        self.remove_orphaned_temps(id);
        Ok(lock)
    }

    fn writer_holder(&self, id: &str) -> Result<Option<WriterHolder>> {
        self.locks.holder(id)
    }

    fn read_from(&self, id: &str, from_seq: u64) -> Result<Option<ScannedSuffix>> {
        let Some(path) = self.find_file(id)? else {
            return Ok(None);
        };
        let log = self.read_path_from(id, &path, from_seq)?;
        Ok(Some(ScannedSuffix {
            header: log.header,
            events: log.events,
            raw_log: log.raw_log,
            recovered_events: log.recovered_events,
        }))
    }

    fn commit_repair(&self, id: &str, log: &StoredLog, closers: &[Event]) -> Result<Revision> {
        let Some(path) = self.find_file(id)? else {
            return Err(Error::conflict(format!(
                "session {} is not stored any more; nothing to repair",
                quote(id)
            )));
        };
        let Some(mut file) = OpenLog::open(&path)? else {
            return Err(moved(id, &path));
        };
        if self.revision_of(&path, &file.identity) != log.revision {
            return Err(moved(id, &path));
        }
        let next = log.events.len() as u64;
        if let Some(first) = closers.first() {
            check_batch(closers)?;
            if first.seq != next {
                return Err(Error::invalid(format!(
                    "closers of session {} must start at seq {next}, not {}",
                    quote(id),
                    first.seq
                )));
            }
        }
        let (cut, recovered): (Option<u64>, &[String]) = match &log.torn {
            None => (None, &[]),
            Some(TornTail::Jsonl {
                truncate_to,
                recovered,
            }) => (Some(*truncate_to), recovered),
            Some(TornTail::Sqlite { .. }) => {
                return Err(Error::invalid(
                    "a SQLite torn tail cannot be repaired by the JSONL backend",
                ));
            }
        };
        if cut.is_none() && closers.is_empty() {
            return Ok(log.revision.clone());
        }
        if let Some(len) = cut {
            file.truncate(len)?;
        }
        let before = file.identity;
        let mut identity = file.identity;
        let mut exact = true;
        if !recovered.is_empty() || !closers.is_empty() {
            let batch = self.repair_batch(recovered, closers);
            let bytes = writer::encode_batch(&batch, self.compression)?;
            let base = identity.size;
            identity = file.append(&bytes)?;
            exact = identity.size == base + bytes.len() as u64;
        } else if let Ok(m) = nofollow::metadata(&path, nofollow::LOG_DEPTH) {
            identity = FileIdentity::of(&m);
        }
        if identity == before {
            // The cut and the re-append restored the size within one tick
            // of the file clock: move the mtime on, so the token changes
            // with the content (SPEC §3.6).
            identity = file.touch(before.mtime_ns)?;
        }
        Ok(self.note_write(&path, &identity, next + closers.len() as u64, exact))
    }

    fn delete(&self, id: &str, _writer: &WriterLock) -> Result<bool> {
        let Some(path) = self.find_file(id)? else {
            return Ok(false);
        };
        let sdir = path.parent().expect("log in a session dir");
        delete::remove_session_dir(&self.root, sdir)?;
        self.files.lock().remove(&path);
        Ok(true)
    }

    /// The log file's mtime (one `stat`, no read).
    fn updated_at(&self, id: &str) -> Result<Option<(i64, crate::backend::manage::UpdatedSource)>> {
        let Some(path) = self.find_file(id)? else {
            return Ok(None);
        };
        let meta = nofollow::metadata(&path, nofollow::LOG_DEPTH)
            .map_err(|e| nofollow::io_err("cannot stat", &path, nofollow::LOG_DEPTH, e))?;
        let ms = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64);
        Ok(Some((ms, crate::backend::manage::UpdatedSource::FileMtime)))
    }

    fn read_intact_prefix(&self, id: &str) -> Result<Option<crate::backend::manage::IntactPrefix>> {
        let Some(path) = self.find_file(id)? else {
            return Ok(None);
        };
        salvage::read_intact_prefix(&path, self.compression, &self.limits).map(Some)
    }

    fn read_raw(&self, id: &str) -> Result<Option<RawArtifact>> {
        let Some(path) = self.find_file(id)? else {
            return Ok(None);
        };
        let raw_log = path.display().to_string();
        let (content, _) = reader::read_text(&path, self.compression, &self.limits)?;
        let header = reader::header_of_text(&content, &raw_log)?;
        Ok(Some(RawArtifact {
            header,
            filename: "session.jsonl".to_string(),
            content,
        }))
    }
}
