//! Reading JSONL logs (SPEC §3.5): the header, the record lines, torn tails
//! and the corruption rules, in one streaming pass.
//!
//! - Line 1 is the header; a foreign `version` is refused from the raw line
//!   before anything else is checked.
//! - zstd: the frame structure is walked first ([`super::frames`]); every
//!   complete frame is decoded (a failure is corruption) and must end in
//!   `\n`; an incomplete last frame is decoded as far as it goes and its
//!   complete lines are kept (they are re-appended by the repair).
//! - A final line without `\n` is torn. A line that does not parse, or whose
//!   seq breaks contiguity, is tolerated only if no later line is a
//!   `turn/end`: then it and everything after it is the torn tail; otherwise
//!   the log is corrupt.
//!
//! Plaintext is processed in bounded chunks, one line at a time, straight
//! from the decode buffer: no per-line copies, no JSON value trees.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use memchr::memmem;

use super::codec_zstd::{DecodeEnd, FrameDecoder};
use super::frames;
use super::layout::{Compression, io_err};
use super::revision::FileIdentity;
use crate::backend::TornTail;
use crate::codec::chunk_rows::Record;
use crate::error::{Error, Result};
use crate::model::event::Event;
use crate::model::header::{HeaderSource, SESSION_FORMAT_VERSION, SessionHeader, version_refusal};
use crate::model::json;

/// How many times a full read retries when the file changes under it.
const READ_ATTEMPTS: usize = 8;

/// Bytes read per chunk from an uncompressed log.
const READ_CHUNK: usize = 1 << 20;

/// A full read of one log file.
#[derive(Debug)]
pub struct ReadOutcome {
    pub header: SessionHeader,
    /// The intact events from seq 0 (packed rows expanded, records recovered
    /// from a torn zstd frame included).
    pub events: Vec<Event>,
    pub torn: Option<TornTail>,
    /// The file identity the read saw (unchanged from start to end).
    pub identity: FileIdentity,
}

fn corrupt(message: impl Into<String>) -> Error {
    Error::corruption(message)
}

fn zstd_corrupt(message: impl std::fmt::Display) -> Error {
    Error::corruption(format!("corrupt Zstandard session log: {message}"))
}

fn frame_failed(start: u64, cause: String) -> Error {
    Error::Corruption {
        message: format!("corrupt Zstandard session log: frame at byte {start} failed validation"),
        cause: Some(cause),
    }
}

/// Where a torn tail would start.
#[derive(Clone, Copy, Debug)]
enum Cut {
    /// Uncompressed: the byte offset of the line.
    Byte(u64),
    /// zstd: frame index and the number of lines before it in that frame.
    FrameLine { frame: usize, line_in_frame: usize },
}

#[derive(Clone, Copy, Debug)]
enum BadKind {
    Unparsable,
    Gap { expected: u64, got: u64 },
}

/// The first line that broke the rules (a torn tail unless a later line is a
/// `turn/end`). `line` is the 1-based number of the record line, the header
/// not counted (equivalently: the 0-based line index of the file), as the
/// original reports it.
#[derive(Clone, Copy, Debug)]
struct Bad {
    line: u64,
    kind: BadKind,
    at: Cut,
}

impl Bad {
    fn error(&self) -> Error {
        match self.kind {
            BadKind::Unparsable => corrupt(format!(
                "corrupt session log: unparsable committed event at line {}",
                self.line
            )),
            BadKind::Gap { expected, got } => corrupt(format!(
                "corrupt session log: seq gap in committed region at line {} (expected {expected}, got {got})",
                self.line
            )),
        }
    }
}

/// The line rules, fed one complete line at a time.
struct LineScanner<'a> {
    raw_log: &'a str,
    line_no: u64,
    header: Option<SessionHeader>,
    events: Vec<Event>,
    expected: u64,
    bad: Option<Bad>,
    turn_end: memmem::Finder<'static>,
}

impl<'a> LineScanner<'a> {
    fn new(raw_log: &'a str) -> Self {
        LineScanner {
            raw_log,
            line_no: 0,
            header: None,
            events: Vec::new(),
            expected: 0,
            bad: None,
            turn_end: memmem::Finder::new(b"turn/end"),
        }
    }

    fn line(&mut self, text: &[u8], at: Cut) -> Result<()> {
        self.line_no += 1;
        if self.header.is_none() {
            self.header = Some(parse_header_line(text, self.raw_log)?);
            return Ok(());
        }
        if let Some(bad) = self.bad {
            if self.turn_end.find(text).is_some()
                && std::str::from_utf8(text)
                    .ok()
                    .and_then(|s| Record::parse_line(s).ok())
                    .is_some_and(|r| r.is_turn_end())
            {
                return Err(bad.error());
            }
            return Ok(());
        }
        let record = std::str::from_utf8(text)
            .ok()
            .and_then(|s| Record::parse_line(s).ok());
        match record {
            None => {
                self.bad = Some(Bad {
                    line: self.line_no - 1,
                    kind: BadKind::Unparsable,
                    at,
                })
            }
            Some(r) if r.first_seq() != self.expected => {
                self.bad = Some(Bad {
                    line: self.line_no - 1,
                    kind: BadKind::Gap {
                        expected: self.expected,
                        got: r.first_seq(),
                    },
                    at,
                })
            }
            Some(r) => {
                self.expected += r.member_count();
                r.into_events(&mut self.events);
            }
        }
        Ok(())
    }
}

/// Parses the header line, refusing a foreign version first.
fn parse_header_line(text: &[u8], raw_log: &str) -> Result<SessionHeader> {
    let Ok(s) = std::str::from_utf8(text) else {
        return Err(corrupt(format!(
            "corrupt session log: the header line of {raw_log} is not valid UTF-8"
        )));
    };
    if let Some((id, version)) = SessionHeader::peek_id_version(s) {
        if json::as_safe_int(&version) != Some(SESSION_FORMAT_VERSION) {
            return Err(version_refusal(&id, &version, Some(raw_log)));
        }
    }
    SessionHeader::parse(s, HeaderSource::JsonlLine).map_err(|e| {
        corrupt(format!(
            "corrupt session log: line 1 of {raw_log} is not a valid session header: {e}"
        ))
    })
}

/// Feeds the complete lines at the front of `buf` to `f`, then drains them.
fn drain_lines<F>(buf: &mut Vec<u8>, mut f: F) -> Result<()>
where
    F: FnMut(&[u8]) -> Result<()>,
{
    let mut start = 0;
    for nl in memchr::memchr_iter(b'\n', buf) {
        f(&buf[start..nl])?;
        start = nl + 1;
    }
    buf.drain(..start);
    Ok(())
}

/// Reads a whole log, retrying while the file changes under the read.
pub fn read_log(path: &Path, compression: Compression) -> Result<ReadOutcome> {
    let raw_log = path.display().to_string();
    for _ in 0..READ_ATTEMPTS {
        let mut file = File::open(path).map_err(|e| io_err("cannot open", path, e))?;
        let before = FileIdentity::of(
            &file
                .metadata()
                .map_err(|e| io_err("cannot stat", path, e))?,
        );
        let (header, events, torn) = match compression {
            Compression::Zstd => {
                let buf = read_all(&mut file, before.size, path)?;
                scan_zstd(&buf, &raw_log)?
            }
            Compression::None => scan_plain(&mut file, &raw_log, path)?,
        };
        let after =
            FileIdentity::of(&std::fs::metadata(path).map_err(|e| io_err("cannot stat", path, e))?);
        if after == before {
            return Ok(ReadOutcome {
                header,
                events,
                torn,
                identity: before,
            });
        }
    }
    Err(Error::conflict(format!(
        "session log {raw_log} kept changing while it was read ({READ_ATTEMPTS} attempts); another writer is appending to it"
    )))
}

fn read_all(file: &mut File, size_hint: u64, path: &Path) -> Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(size_hint as usize + 1);
    file.read_to_end(&mut buf)
        .map_err(|e| io_err("cannot read", path, e))?;
    Ok(buf)
}

type Scanned = (SessionHeader, Vec<Event>, Option<TornTail>);

fn no_header(raw_log: &str) -> Error {
    corrupt(format!(
        "corrupt session log: {raw_log} has no complete header line"
    ))
}

fn scan_plain(file: &mut File, raw_log: &str, path: &Path) -> Result<Scanned> {
    let mut sc = LineScanner::new(raw_log);
    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK * 2);
    let mut offset: u64 = 0; // file offset of buf[0]
    loop {
        let len = buf.len();
        buf.resize(len + READ_CHUNK, 0);
        let n = loop {
            match file.read(&mut buf[len..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_err("cannot read", path, e)),
            }
        };
        buf.truncate(len + n);
        if n == 0 {
            break;
        }
        let mut line_start = offset;
        let before = buf.len();
        drain_lines(&mut buf, |line| {
            let at = Cut::Byte(line_start);
            line_start += line.len() as u64 + 1;
            sc.line(line, at)
        })?;
        offset += (before - buf.len()) as u64;
    }
    // `buf` now holds the final segment without a newline (torn), if any.
    let header = sc.header.take().ok_or_else(|| no_header(raw_log))?;
    let torn_at = match sc.bad {
        Some(Bad {
            at: Cut::Byte(b), ..
        }) => Some(b),
        Some(other) => {
            return Err(Error::invariant(format!(
                "uncompressed log {raw_log}: a cut recorded as {other:?}"
            )));
        }
        None if !buf.is_empty() => Some(offset),
        None => None,
    };
    let torn = torn_at.map(|b| TornTail::Jsonl {
        truncate_to: b,
        recovered: Vec::new(),
    });
    Ok((header, sc.events, torn))
}

/// Decodes one complete frame through `sc`; its text must end in `\n`.
fn scan_complete_frame(
    dec: &mut FrameDecoder,
    buf: &[u8],
    frame: &frames::Frame,
    index: usize,
    sc: &mut LineScanner<'_>,
    out: &mut Vec<u8>,
) -> Result<()> {
    out.clear();
    let mut k = 0usize;
    let end = dec.decode(&buf[frame.start as usize..frame.end as usize], out, |b| {
        drain_lines(b, |line| {
            let at = Cut::FrameLine {
                frame: index,
                line_in_frame: k,
            };
            k += 1;
            sc.line(line, at)
        })
    })?;
    match end {
        DecodeEnd::Finished => {}
        DecodeEnd::Failed(cause) => return Err(frame_failed(frame.start, cause)),
        DecodeEnd::NeedMore => {
            return Err(frame_failed(
                frame.start,
                "the frame ended before its last block was decoded".into(),
            ));
        }
    }
    if !out.is_empty() {
        return Err(zstd_corrupt("complete frame contains a torn JSONL record"));
    }
    Ok(())
}

fn scan_zstd(buf: &[u8], raw_log: &str) -> Result<Scanned> {
    let mut dec = FrameDecoder::new();
    let mut out = Vec::new();
    let mut sc = LineScanner::new(raw_log);
    // The header frame first: a foreign version is refused before anything
    // else about the file is judged.
    let first = frames::first_frame(buf)?
        .ok_or_else(|| zstd_corrupt(format!("{raw_log} has no complete header frame")))?;
    scan_complete_frame(&mut dec, buf, &first, 0, &mut sc, &mut out)?;
    if sc.header.is_none() {
        return Err(no_header(raw_log));
    }
    let scan = frames::scan(buf)?;
    for (i, frame) in scan.frames.iter().enumerate().skip(1) {
        scan_complete_frame(&mut dec, buf, frame, i, &mut sc, &mut out)?;
    }
    let torn_index = scan.frames.len();
    let mut torn_lines = 0usize;
    if let Some(start) = scan.torn_start {
        out.clear();
        // Decode what the cut frame still holds; complete lines count, the
        // partial last line (and anything a decoder error hides) is torn.
        let _ = dec.decode(&buf[start as usize..], &mut out, |b| {
            drain_lines(b, |line| {
                let at = Cut::FrameLine {
                    frame: torn_index,
                    line_in_frame: torn_lines,
                };
                torn_lines += 1;
                sc.line(line, at)
            })
        })?;
    }
    let frame_start = |i: usize| -> u64 {
        scan.frames
            .get(i)
            .map_or_else(|| scan.torn_start.unwrap_or(buf.len() as u64), |f| f.start)
    };
    let frame_end = |i: usize| -> u64 { scan.frames.get(i).map_or(buf.len() as u64, |f| f.end) };
    let cut = match sc.bad {
        Some(Bad {
            at: Cut::FrameLine {
                frame,
                line_in_frame,
            },
            line,
            ..
        }) => {
            if frame == 0 {
                return Err(zstd_corrupt(format!(
                    "the header frame holds a bad record at line {line}; it cannot be cut without losing the header"
                )));
            }
            Some((frame, line_in_frame))
        }
        Some(other) => {
            return Err(Error::invariant(format!(
                "Zstandard log {raw_log}: a cut recorded as {other:?}"
            )));
        }
        None => scan.torn_start.map(|_| (torn_index, torn_lines)),
    };
    let torn = match cut {
        None => None,
        Some((frame, keep)) => {
            let bytes = &buf[frame_start(frame) as usize..frame_end(frame) as usize];
            Some(TornTail::Jsonl {
                truncate_to: frame_start(frame),
                recovered: first_lines(&mut dec, bytes, keep)?,
            })
        }
    };
    let header = sc.header.take().ok_or_else(|| no_header(raw_log))?;
    Ok((header, sc.events, torn))
}

/// The first `n` complete lines of a frame (possibly cut short), as text.
fn first_lines(dec: &mut FrameDecoder, frame: &[u8], n: usize) -> Result<Vec<String>> {
    let mut lines = Vec::with_capacity(n);
    if n == 0 {
        return Ok(lines);
    }
    let mut out = Vec::new();
    let _ = dec.decode(frame, &mut out, |b| {
        drain_lines(b, |line| {
            if lines.len() < n {
                lines.push(String::from_utf8_lossy(line).into_owned());
            }
            Ok(())
        })
    })?;
    Ok(lines)
}

/// The decoded text of a log (`read_raw`): zstd, the complete frames (each
/// validated); none, the whole file. Returns the text and the file identity.
pub fn read_text(path: &Path, compression: Compression) -> Result<(String, FileIdentity)> {
    let mut file = File::open(path).map_err(|e| io_err("cannot open", path, e))?;
    let identity = FileIdentity::of(
        &file
            .metadata()
            .map_err(|e| io_err("cannot stat", path, e))?,
    );
    let buf = read_all(&mut file, identity.size, path)?;
    let text = match compression {
        Compression::None => buf,
        Compression::Zstd => {
            let scan = frames::scan(&buf)?;
            let mut dec = FrameDecoder::new();
            let mut out = Vec::with_capacity(buf.len() * 4);
            for f in &scan.frames {
                let end =
                    dec.decode(&buf[f.start as usize..f.end as usize], &mut out, |_| Ok(()))?;
                match end {
                    DecodeEnd::Finished => {}
                    DecodeEnd::Failed(cause) => return Err(frame_failed(f.start, cause)),
                    DecodeEnd::NeedMore => {
                        return Err(frame_failed(
                            f.start,
                            "the frame ended before its last block was decoded".into(),
                        ));
                    }
                }
            }
            out
        }
    };
    let text = match String::from_utf8(text) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok((text, identity))
}

/// The header line of a log text (for `read_raw`), any version.
pub fn header_of_text(text: &str, raw_log: &str) -> Result<SessionHeader> {
    let line = match text.find('\n') {
        Some(n) => &text[..n],
        None => return Err(no_header(raw_log)),
    };
    SessionHeader::parse_any_version(line, HeaderSource::JsonlLine).map_err(|e| {
        corrupt(format!(
            "corrupt session log: line 1 of {raw_log} is not a valid session header: {e}"
        ))
    })
}

/// What `list` reads: the first line (none) or the first frame's first line
/// (zstd), parsed as a header of any version. `Ok(None)` when the file is
/// empty, has no complete first line, or its first line is not a header.
/// `dec` is reused across a listing.
pub fn peek_header(
    path: &Path,
    compression: Compression,
    dec: &mut FrameDecoder,
) -> Result<Option<(SessionHeader, FileIdentity)>> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("cannot open", path, e)),
    };
    let identity = FileIdentity::of(
        &file
            .metadata()
            .map_err(|e| io_err("cannot stat", path, e))?,
    );
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = 4096usize;
    let line: Vec<u8> = loop {
        let len = buf.len();
        buf.resize(len + chunk, 0);
        let n = file
            .read(&mut buf[len..])
            .map_err(|e| io_err("cannot read", path, e))?;
        buf.truncate(len + n);
        let eof = n == 0;
        match compression {
            Compression::None => {
                if let Some(nl) = memchr::memchr(b'\n', &buf) {
                    buf.truncate(nl);
                    break buf;
                }
            }
            Compression::Zstd => match frames::first_frame(&buf) {
                Err(_) => return Ok(None),
                Ok(Some(f)) => {
                    let mut out = Vec::new();
                    let end = dec.decode(&buf[..f.end as usize], &mut out, |_| Ok(()))?;
                    if end != DecodeEnd::Finished {
                        return Ok(None);
                    }
                    match memchr::memchr(b'\n', &out) {
                        Some(nl) => {
                            out.truncate(nl);
                            break out;
                        }
                        None => return Ok(None),
                    }
                }
                Ok(None) => {}
            },
        }
        if eof {
            return Ok(None);
        }
        chunk = (chunk * 2).min(1 << 20);
    };
    let Ok(s) = std::str::from_utf8(&line) else {
        return Ok(None);
    };
    Ok(SessionHeader::parse_any_version(s, HeaderSource::JsonlLine)
        .ok()
        .map(|h| (h, identity)))
}
