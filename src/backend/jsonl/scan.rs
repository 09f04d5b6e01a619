//! The read-only walk of a JSONL root (SPEC §3.1) for `verify` and for
//! telling which encoding a root holds ([`detect_encodings`]).
//!
//! [`JsonlBackend::scan`] visits every entry of the root, of each project
//! directory and of each session directory, without following links:
//!
//! - a session directory with a log of the configured encoding is a
//!   session; its header line is read with the read path's rules (a
//!   corrupt or incomplete header frame, invalid UTF-8, a foreign version
//!   or an invalid header is a finding of the error's kind), then its
//!   place is checked against the header (`misplaced_artifact`), and ids
//!   stored twice are named (`duplicate_id`);
//! - a log of the other encoding is a session with a `mixed_encoding`
//!   finding (in a directory of its own the store does not even see it);
//! - a flat `<project>/<x>.jsonl[.zstd]` file is a session with a
//!   `flat_layout` finding;
//! - a first append's temp file is an `orphan_temp` finding (whether a
//!   live writer still owns it is for the caller to tell);
//! - the writer-lock directory at the root (`.dsh-persist-locks/`) and the
//!   lock files in it are the store's own, not findings;
//! - anything else (a file in the root, a stray file or directory in a
//!   project or session directory, a symbolic link, a name that is not
//!   UTF-8) is a `foreign_file` finding.
//!
//! Nothing here goes through `list`, so a session that `list` cannot show
//! is still seen, and nothing is ever written.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::JsonlBackend;
use super::codec_zstd::{DecodeEnd, FrameDecoder};
use super::layout::{self, Compression, flat_layout_error, io_err, wrong_encoding_error};
use super::reader::{
    frame_failed, header_frame_not_one_line, no_header, parse_header_line, zstd_corrupt,
};
use super::writer::is_temp_name;
use super::{frames, nofollow};
use crate::backend::catalog::CACHE_DIR_NAME;
use crate::backend::scan::{Finding, FindingKind, ScannedSession, StoreScan};
use crate::backend::writer_lock::LOCK_DIR_NAME;
use crate::error::{Error, Result};
use crate::model::header::SessionHeader;
use crate::model::json::quote;

/// Bytes read per step while looking for the header line or frame.
const HEADER_CHUNK: usize = 64 << 10;

/// The most a header read looks at: the header line (or, zstd, the header
/// frame and its decoded text) must fit. A real header is well under a
/// kilobyte; the bound keeps a hostile file from filling memory.
pub const MAX_HEADER_BYTES: usize = 64 << 20;

/// One directory entry, links not followed.
struct Entry {
    name: OsString,
    path: PathBuf,
    kind: EntryKind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum EntryKind {
    Dir,
    File,
    Symlink,
    Other,
}

impl EntryKind {
    fn describe(self) -> &'static str {
        match self {
            EntryKind::Dir => "a directory",
            EntryKind::File => "a file",
            EntryKind::Symlink => "a symbolic link",
            EntryKind::Other => "a special file",
        }
    }
}

/// Every entry of `dir`, sorted by name (a stable report order).
fn entries(dir: &Path) -> Result<Vec<Entry>> {
    let rd = fs::read_dir(dir).map_err(|e| io_err("cannot read directory", dir, e))?;
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| io_err("cannot read directory", dir, e))?;
        let ft = entry
            .file_type()
            .map_err(|e| io_err("cannot stat entry of", dir, e))?;
        let kind = if ft.is_symlink() {
            EntryKind::Symlink
        } else if ft.is_dir() {
            EntryKind::Dir
        } else if ft.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        };
        out.push(Entry {
            name: entry.file_name(),
            path: entry.path(),
            kind,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The id an escaped path segment stands for (the inverse of
/// `escape_id`); `None` when `segment` is not an escaped id, or escapes
/// one that is not valid Unicode (a lone surrogate).
pub fn unescape_id(segment: &str) -> Option<String> {
    String::from_utf16(&layout::unescape_units(segment)?).ok()
}

/// Names of files the store itself keeps beside the logs (at the root, in a
/// project or in a session directory) that are neither logs nor temp
/// files: none. The store's one other entry is a directory at the root,
/// [`STORE_DIRS`].
const STORE_FILES: &[&str] = &[];

fn is_store_file(name: &str) -> bool {
    STORE_FILES.contains(&name)
}

/// Directories the store itself keeps at the root: the writer locks,
/// [`LOCK_DIR_NAME`] (see [`crate::backend::writer_lock`]), which holds
/// only lock files (`<escaped id>@lock`, see [`is_lock_file_name`]).
const STORE_DIRS: &[&str] = &[LOCK_DIR_NAME, CACHE_DIR_NAME];

/// The catalog's cache directory (the search index, which the store can
/// rebuild; see [`crate::backend::catalog`]): its contents are the store's.
fn is_cache_dir(name: &str) -> bool {
    name == CACHE_DIR_NAME
}

fn is_store_dir(name: &str) -> bool {
    STORE_DIRS.contains(&name)
}

/// A writer lock file's name ([`crate::backend::writer_lock::lock_name`]):
/// ends in `@lock`, which no escaped id, log or temp file does.
fn is_lock_file_name(name: &str) -> bool {
    name.len() > "@lock".len() && name.ends_with("@lock")
}

/// A project directory name this layout produces (`--<key>--`, `_no-cwd`).
fn is_project_name(name: &str) -> bool {
    name == layout::NO_CWD_DIR || (name.len() > 4 && name.starts_with("--") && name.ends_with("--"))
}

/// The encoding a flat file's suffix names.
fn flat_encoding(name: &str) -> Option<(Compression, &str)> {
    if let Some(stem) = name.strip_suffix(".jsonl.zstd") {
        return Some((Compression::Zstd, stem));
    }
    name.strip_suffix(".jsonl")
        .map(|stem| (Compression::None, stem))
}

fn foreign(entry: &Entry, where_: &str) -> Finding {
    Finding::new(
        FindingKind::ForeignFile,
        &entry.path,
        format!(
            "{} is {} that a JSONL root does not hold {where_}; the store ignores it",
            quote(&entry.path.display().to_string()),
            entry.kind.describe()
        ),
    )
}

/// Reads the header line of the log at `path` with the rules of a full
/// read: zstd, the first frame must be complete and decode (checksum
/// included); none, the first line must end in `\n`; then a foreign
/// version is refused and the header validated. Reads only the header,
/// and at most [`MAX_HEADER_BYTES`] of the file and of decoded text.
pub fn read_header(path: &Path, compression: Compression) -> Result<SessionHeader> {
    read_header_within(path, compression, MAX_HEADER_BYTES)
}

fn read_header_within(path: &Path, compression: Compression, max: usize) -> Result<SessionHeader> {
    let raw_log = path.display().to_string();
    // Not followed if a link, never waited on if a FIFO: the entry was a
    // regular file when the directory was read, but may not be now.
    let (mut file, _) = nofollow::open_regular(path, nofollow::LOG_DEPTH)
        .map_err(|e| nofollow::io_err("cannot open", path, nofollow::LOG_DEPTH, e))?;
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let len = buf.len();
        buf.resize(len + HEADER_CHUNK, 0);
        let n = loop {
            match file.read(&mut buf[len..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_err("cannot read", path, e)),
            }
        };
        buf.truncate(len + n);
        if buf.len() > max {
            return Err(header_too_long(compression, &raw_log, max));
        }
        match compression {
            Compression::None => {
                if let Some(nl) = memchr::memchr(b'\n', &buf) {
                    return parse_header_line(&buf[..nl], &raw_log);
                }
                if n == 0 {
                    return Err(no_header(&raw_log));
                }
            }
            Compression::Zstd => {
                if let Some(frame) = frames::first_frame(&buf)? {
                    // Keep the first line; decode the rest of the frame
                    // only to check it (and its checksum): like the read
                    // path, the frame must hold exactly the header line.
                    let mut first: Option<Vec<u8>> = None;
                    let mut extra = false;
                    let mut out = Vec::new();
                    let mut dec = FrameDecoder::new();
                    let sink = |out: &mut Vec<u8>| {
                        if first.is_none() {
                            if let Some(nl) = memchr::memchr(b'\n', out) {
                                first = Some(out[..nl].to_vec());
                                extra |= nl + 1 < out.len();
                            } else if out.len() > max {
                                return Err(header_too_long(compression, &raw_log, max));
                            } else {
                                return Ok(());
                            }
                        } else {
                            extra |= !out.is_empty();
                        }
                        out.clear();
                        Ok(())
                    };
                    match dec.decode(&buf[..frame.end as usize], &mut out, sink)? {
                        DecodeEnd::Finished => {}
                        DecodeEnd::Failed(cause) => return Err(frame_failed(0, cause)),
                        DecodeEnd::NeedMore => {
                            return Err(frame_failed(
                                0,
                                "the frame ended before its last block was decoded".into(),
                            ));
                        }
                    }
                    return match first {
                        Some(_) if extra || !out.is_empty() => Err(header_frame_not_one_line()),
                        Some(line) => parse_header_line(&line, &raw_log),
                        None => Err(header_frame_not_one_line()),
                    };
                }
                if n == 0 {
                    return Err(zstd_corrupt(format!(
                        "{raw_log} has no complete header frame"
                    )));
                }
            }
        }
    }
}

fn header_too_long(compression: Compression, raw_log: &str, max: usize) -> Error {
    let what = match compression {
        Compression::Zstd => "no complete header frame and header line",
        Compression::None => "no complete header line",
    };
    Error::corruption(format!(
        "corrupt session log: {raw_log} has {what} within its first {max} bytes"
    ))
}

/// Adds the file name to an error about a log that does not name it.
fn with_path(e: Error, path: &Path) -> Error {
    let shown = path.display().to_string();
    if e.to_string().contains(&shown) {
        return e;
    }
    match e {
        Error::Corruption { message, cause } => Error::Corruption {
            message: format!("{message} (raw log: {shown})"),
            cause,
        },
        other => other.context(&format!("raw log {}", quote(&shown))),
    }
}

/// The writer-lock directory: lock files are the store's (held or left by
/// a killed holder: empty, harmless), anything else is foreign.
fn scan_lock_dir(dir: &Path, scan: &mut StoreScan) {
    let list = match entries(dir) {
        Ok(list) => list,
        Err(e) => {
            scan.findings.push(Finding::from_error(dir, &e));
            return;
        }
    };
    for entry in list {
        let lock =
            entry.kind == EntryKind::File && entry.name.to_str().is_some_and(is_lock_file_name);
        if !lock {
            scan.findings
                .push(foreign(&entry, "in its writer-lock directory"));
        }
    }
}

/// What one session directory holds.
struct SessionDir {
    /// Logs of each encoding (`session.jsonl.zstd`, `session.jsonl`),
    /// regular files only.
    zstd: Option<PathBuf>,
    none: Option<PathBuf>,
}

impl JsonlBackend {
    /// Walks the whole root (see the module docs). Fails only when the
    /// root itself cannot be read; anything below it that cannot be read
    /// is a finding.
    pub fn scan(&self) -> Result<StoreScan> {
        let mut scan = StoreScan::default();
        // (id, session index) of every session whose header was read.
        let mut headers: Vec<(String, usize)> = Vec::new();
        for entry in entries(self.root())? {
            crate::store::cancel::checkpoint()?;
            match entry.kind {
                EntryKind::Dir if entry.name.to_str().is_some_and(is_cache_dir) => {}
                EntryKind::Dir if entry.name.to_str().is_some_and(is_store_dir) => {
                    scan_lock_dir(&entry.path, &mut scan)
                }
                // Deleted sessions on their way out (issue 19): no logs.
                EntryKind::Dir if entry.name == super::delete::TRASH_DIR_NAME => {}
                EntryKind::Dir => self.scan_project(&entry.path, &mut scan, &mut headers),
                EntryKind::File if entry.name.to_str().is_some_and(is_store_file) => {}
                _ => scan.findings.push(foreign(&entry, "at its top level")),
            }
        }
        // Ids stored twice: every copy is named, with the other place.
        headers.sort();
        for group in headers.chunk_by(|a, b| a.0 == b.0) {
            if group.len() < 2 {
                continue;
            }
            let dirs: Vec<PathBuf> = group
                .iter()
                .map(|(_, i)| parent_of(&scan.sessions[*i].path))
                .collect();
            for (k, (key, i)) in group.iter().enumerate() {
                let other = &dirs[if k == 0 { 1 } else { 0 }];
                let id = scan.sessions[*i].id.clone().unwrap_or_else(|| key.clone());
                let e = layout::duplicate_error(&id, &dirs[k], other);
                let s = &mut scan.sessions[*i];
                s.findings.push(Finding::new(
                    FindingKind::DuplicateId,
                    &s.path,
                    e.to_string(),
                ));
            }
        }
        Ok(scan)
    }

    fn scan_project(
        &self,
        project: &Path,
        scan: &mut StoreScan,
        headers: &mut Vec<(String, usize)>,
    ) {
        let list = match entries(project) {
            Ok(list) => list,
            Err(e) => {
                scan.findings.push(Finding::from_error(project, &e));
                return;
            }
        };
        for entry in list {
            let name = entry.name.to_str();
            match (entry.kind, name) {
                (EntryKind::Dir, Some(_)) => self.scan_session_dir(&entry, scan, headers),
                (EntryKind::File, Some(name)) if flat_encoding(name).is_some() => {
                    let stem = flat_encoding(name).map(|(_, s)| s).unwrap_or_default();
                    scan.sessions.push(ScannedSession {
                        id: unescape_id(stem),
                        path: entry.path.clone(),
                        findings: vec![Finding::new(
                            FindingKind::FlatLayout,
                            &entry.path,
                            flat_layout_error(&entry.path).to_string(),
                        )],
                    });
                }
                (EntryKind::File, Some(name)) if is_store_file(name) => {}
                _ => scan
                    .findings
                    .push(foreign(&entry, "in a project directory")),
            }
        }
    }

    fn scan_session_dir(
        &self,
        dir: &Entry,
        scan: &mut StoreScan,
        headers: &mut Vec<(String, usize)>,
    ) {
        let list = match entries(&dir.path) {
            Ok(list) => list,
            Err(e) => {
                scan.findings.push(Finding::from_error(&dir.path, &e));
                return;
            }
        };
        let mut logs = SessionDir {
            zstd: None,
            none: None,
        };
        for entry in list {
            let name = entry.name.to_str().unwrap_or("");
            let log_of = [Compression::Zstd, Compression::None]
                .into_iter()
                .find(|c| c.file_name() == name);
            match (entry.kind, log_of) {
                (EntryKind::File, Some(Compression::Zstd)) => logs.zstd = Some(entry.path),
                (EntryKind::File, Some(Compression::None)) => logs.none = Some(entry.path),
                (EntryKind::File, None) if is_temp_name(name) => scan.findings.push(Finding::new(
                    FindingKind::OrphanTemp,
                    &entry.path,
                    format!(
                        "{} is the temp file of a first append that did not finish (a crash before it was cleaned up); the store ignores it, and once no writer is running it can be removed",
                        quote(&entry.path.display().to_string())
                    ),
                )),
                (EntryKind::File, None) if is_store_file(name) => {}
                _ => scan.findings.push(foreign(&entry, "in a session directory")),
            }
        }
        let dir_id = dir.name.to_str().and_then(unescape_id);
        let configured = self.compression();
        let (mine, other) = match configured {
            Compression::Zstd => (logs.zstd, logs.none),
            Compression::None => (logs.none, logs.zstd),
        };
        match (mine, other) {
            (None, None) => {} // a creation in progress or abandoned: no session
            (None, Some(other)) => {
                let id = read_header(&other, other_of(configured))
                    .map(|h| h.id)
                    .ok()
                    .or(dir_id);
                scan.sessions.push(ScannedSession {
                    id,
                    findings: vec![Finding::new(
                        FindingKind::MixedEncoding,
                        &other,
                        wrong_encoding_error(&other, configured).to_string(),
                    )],
                    path: other,
                });
            }
            (Some(log), other) => {
                let mut session = ScannedSession {
                    id: dir_id,
                    path: log.clone(),
                    findings: Vec::new(),
                };
                if let Some(other) = other {
                    session.findings.push(Finding::new(
                        FindingKind::MixedEncoding,
                        &other,
                        wrong_encoding_error(&other, configured).to_string(),
                    ));
                }
                match read_header(&log, configured) {
                    Err(e) => session
                        .findings
                        .push(Finding::from_error(&log, &with_path(e, &log))),
                    Ok(header) => {
                        if let Err(e) = self.check_header_path(&header, &log) {
                            session.findings.push(Finding::new(
                                FindingKind::MisplacedArtifact,
                                &log,
                                e.to_string(),
                            ));
                        }
                        headers.push((super::stored_id_key(&header), scan.sessions.len()));
                        session.id = Some(header.id);
                    }
                }
                scan.sessions.push(session);
            }
        }
    }
}

fn other_of(c: Compression) -> Compression {
    match c {
        Compression::Zstd => Compression::None,
        Compression::None => Compression::Zstd,
    }
}

fn parent_of(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Which encodings a root's logs use, from names alone (no file is read):
/// the first log (or flat file) of each encoding, and the first entry the
/// layout does not produce. Stops as soon as both encodings were seen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Encodings {
    pub zstd: Option<PathBuf>,
    pub none: Option<PathBuf>,
    /// A top-level entry that is not a project directory.
    pub foreign: Option<PathBuf>,
}

/// Looks at the names under `root` (see [`Encodings`]).
pub fn detect_encodings(root: &Path) -> Result<Encodings> {
    let mut found = Encodings::default();
    for project in entries(root)? {
        let project_name = project.name.to_str().unwrap_or("");
        if project.kind == EntryKind::Dir
            && (is_store_dir(project_name) || project_name == super::delete::TRASH_DIR_NAME)
        {
            // The writer locks: the store's own, holding no log.
            continue;
        }
        if project.kind != EntryKind::Dir || !is_project_name(project_name) {
            found.foreign.get_or_insert(project.path.clone());
        }
        if project.kind != EntryKind::Dir {
            continue;
        }
        let Ok(list) = entries(&project.path) else {
            continue;
        };
        for entry in list {
            let name = entry.name.to_str().unwrap_or("");
            match entry.kind {
                EntryKind::File => {
                    if let Some((c, _)) = flat_encoding(name) {
                        found.note(c, entry.path);
                    }
                }
                EntryKind::Dir => {
                    for c in [Compression::Zstd, Compression::None] {
                        let log = entry.path.join(c.file_name());
                        if fs::symlink_metadata(&log).is_ok_and(|m| m.is_file()) {
                            found.note(c, log);
                        }
                    }
                }
                _ => {}
            }
            if found.zstd.is_some() && found.none.is_some() {
                return Ok(found);
            }
        }
    }
    Ok(found)
}

impl Encodings {
    fn note(&mut self, c: Compression, path: PathBuf) {
        let slot = match c {
            Compression::Zstd => &mut self.zstd,
            Compression::None => &mut self.none,
        };
        slot.get_or_insert(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescape_inverts_escape() {
        for id in ["a/b ~é", "😀", ".", "..", "...", "MiXeD.Case_id-123", "~x~"] {
            let seg = layout::escape_id(id).unwrap();
            assert_eq!(unescape_id(&seg).as_deref(), Some(id), "{seg}");
        }
        // A lone surrogate: its units come back, but it is no Rust string.
        assert_eq!(
            layout::unescape_units("~D800x"),
            Some(vec![0xD800, u16::from(b'x')])
        );
        assert_eq!(unescape_id("~D800x"), None);
        assert_eq!(
            layout::escape_id_utf16(&[0xD800, u16::from(b'x')]).unwrap(),
            "~D800x"
        );
        // Not canonical: lower-case hex, an escaped safe character, a cut escape.
        for seg in ["~002e", "~0041", "ab~00", "a~zzzz", "~D83D"] {
            assert_eq!(unescape_id(seg), None, "{seg}");
        }
    }

    /// A private directory for one test, removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new() -> Scratch {
            let dir = std::env::temp_dir().join(format!(
                "dsh-scan-{}-{}",
                std::process::id(),
                crate::backend::jsonl::revision::random_u64()
            ));
            fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }

        fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
            let path = self.0.join(name);
            fs::write(&path, bytes).unwrap();
            path
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn header_text(version: u32) -> String {
        format!(
            "{{\"type\":\"session\",\"version\":{version},\"id\":\"h\",\"createdAt\":1,\"delegationDepth\":0}}\n"
        )
    }

    #[test]
    fn headers_are_read_with_the_read_path_rules() {
        use crate::backend::jsonl::codec_zstd::encode_frame;
        use crate::error::ErrorKind;
        let tmp = Scratch::new();
        let temp_file = |name: &str, bytes: &[u8]| tmp.file(name, bytes);
        let mut good = encode_frame(header_text(0).as_bytes()).unwrap();
        good.extend(encode_frame(b"{\"not\":\"read\"}\n").unwrap());
        let p = temp_file("good.zstd", &good);
        assert_eq!(read_header(&p, Compression::Zstd).unwrap().id, "h");
        // A flipped byte inside the header frame: its checksum fails.
        let head = frames::first_frame(&good).unwrap().unwrap().end as usize;
        let mut flipped = good.clone();
        flipped[head / 2] ^= 0x20;
        let p = temp_file("flipped.zstd", &flipped);
        let e = read_header(&p, Compression::Zstd).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
        // Cut inside the header frame: no complete header frame.
        let p = temp_file("cut.zstd", &good[..head - 2]);
        let e = read_header(&p, Compression::Zstd).unwrap_err();
        assert!(e.to_string().contains("no complete header frame"), "{e}");
        // A foreign version, refused before the rest of the header.
        let p = temp_file("v7.jsonl", header_text(7).as_bytes());
        let e = read_header(&p, Compression::None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::FormatUnsupported, "{e}");
        assert!(e.to_string().contains("uses log format v7"), "{e}");
        // No newline, and a header longer than the bound.
        let p = temp_file("open.jsonl", b"{\"type\":\"session\"");
        let e = read_header(&p, Compression::None).unwrap_err();
        assert!(
            e.to_string().contains("empty or header-less session log"),
            "{e}"
        );
        // A header frame holding more than the header line, or a header
        // line without its newline: corruption, as the read path says.
        let mut two = header_text(0);
        two.push_str("{\"type\":\"turn/start\"}\n");
        for (name, text) in [
            ("two.zstd", two),
            ("nonl.zstd", header_text(0).trim_end().to_string()),
        ] {
            let p = temp_file(name, &encode_frame(text.as_bytes()).unwrap());
            let e = read_header(&p, Compression::Zstd).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corruption, "{name}: {e}");
            assert!(
                e.to_string()
                    .contains("first frame is not exactly one header line"),
                "{name}: {e}"
            );
        }
        let long = "x".repeat(300);
        let p = temp_file("long.jsonl", long.as_bytes());
        let e = read_header_within(&p, Compression::None, 100).unwrap_err();
        assert!(e.to_string().contains("within its first 100 bytes"), "{e}");
        let p = temp_file("long.zstd", &encode_frame(long.as_bytes()).unwrap());
        let e = read_header_within(&p, Compression::Zstd, 100).unwrap_err();
        assert!(e.to_string().contains("within its first 100 bytes"), "{e}");
    }

    #[test]
    fn a_header_is_read_across_chunks_and_up_to_its_bound_exactly() {
        let tmp = Scratch::new();
        // A header line longer than one read (a long cwd): read whole.
        let cwd = "/d".repeat(HEADER_CHUNK);
        let long = format!(
            "{{\"type\":\"session\",\"version\":0,\"id\":\"h\",\"createdAt\":1,\"cwd\":\"{cwd}\",\"delegationDepth\":0}}\n"
        );
        let p = tmp.file("long-cwd.jsonl", long.as_bytes());
        let h = read_header(&p, Compression::None).unwrap();
        assert_eq!(h.cwd.as_deref(), Some(cwd.as_str()));
        // A file of exactly the bound is within it; one byte less is not.
        let text = header_text(0);
        let p = tmp.file("exact.jsonl", text.as_bytes());
        assert_eq!(
            read_header_within(&p, Compression::None, text.len())
                .unwrap()
                .id,
            "h"
        );
        let e = read_header_within(&p, Compression::None, text.len() - 1).unwrap_err();
        assert!(e.to_string().contains("within its first"), "{e}");
    }

    #[test]
    fn project_names() {
        assert!(is_project_name("--a-b--"));
        assert!(is_project_name("_no-cwd"));
        assert!(!is_project_name("----"));
        assert!(!is_project_name("notes"));
    }
}
