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
//! from the decode buffer: no per-line copies, no JSON value trees. A large
//! log is split in two (zstd: two runs of frames; uncompressed: each block
//! at a line boundary) that two threads decode and parse; the line rules
//! are then applied in file order, so the outcome (events, torn tail,
//! errors and their line numbers) is that of one sequential pass.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use super::codec_zstd::{DecodeEnd, FrameDecoder};
use super::frames;
use super::layout::{Compression, io_err};
use super::nofollow;
use super::revision::FileIdentity;
use crate::backend::limits::{self, Budget, Limits};
use crate::backend::{EventSink, TornTail, parallel};
use crate::codec::chunk_rows::{Record, StoredLineError};
use crate::error::{Error, Result};
use crate::model::event::{Event, RawEnvelope};
use crate::model::header::{HeaderSource, SESSION_FORMAT_VERSION, SessionHeader, version_refusal};
use crate::model::{json, legacy};

/// How many times a full read retries when the file changes under it.
const READ_ATTEMPTS: usize = 8;

/// Bytes read per chunk while looking for the header line of an
/// uncompressed log.
const READ_CHUNK: usize = 1 << 20;

/// Bytes read per block from an uncompressed log (the lines of a block are
/// parsed at once, in two halves in parallel when it is large).
const READ_BLOCK: usize = 8 << 20;

/// Bytes read per block by a folding read ([`read_log_folding`]).
const FOLD_BLOCK: usize = 1 << 20;

/// A block of uncompressed lines at least this large is parsed by two
/// threads (below it, a thread costs more than it saves).
const PARALLEL_MIN_PLAIN: usize = 256 << 10;

/// Compressed frames (after the header frame) of at least this many bytes
/// are decoded and parsed by two threads.
const PARALLEL_MIN_ZSTD: usize = 64 << 10;

/// A full read of one log file.
#[derive(Debug)]
pub struct ReadOutcome {
    pub header: SessionHeader,
    /// The intact events from seq 0 (packed rows expanded, records recovered
    /// from a torn zstd frame included), except packed-row members and
    /// plain chunk events below the `skip_below` seq of the read.
    pub events: Vec<Event>,
    /// The seq after the last intact event.
    pub next_seq: u64,
    pub torn: Option<TornTail>,
    /// How many of `events` (at the end) were decoded from a torn zstd
    /// frame: not durable yet (a live writer is still writing the frame) or
    /// never (a crash cut it). 0 for an uncompressed log.
    pub recovered_events: usize,
    /// The file identity the read saw at its start. The read covers exactly
    /// the `identity.size` bytes the file had then.
    pub identity: FileIdentity,
    /// The decoded size of the log (every line and its `\n`), as counted
    /// against `maxLogBytes`.
    pub log_bytes: u64,
}

fn corrupt(message: impl Into<String>) -> Error {
    Error::corruption(message)
}

pub(crate) fn zstd_corrupt(message: impl std::fmt::Display) -> Error {
    Error::corruption(format!("corrupt Zstandard session log: {message}"))
}

pub(crate) fn frame_failed(start: u64, cause: String) -> Error {
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

#[derive(Clone, Debug)]
enum BadKind {
    Unparsable,
    /// `got` as JavaScript prints the stored seq (`undefined` when absent).
    Gap {
        expected: u64,
        got: Box<str>,
    },
}

/// The first line that broke the rules (a torn tail unless a later line is a
/// `turn/end`). `line` is the 1-based number of the record line, the header
/// not counted (equivalently: the 0-based line index of the file), as the
/// original reports it.
#[derive(Clone, Debug)]
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
            BadKind::Gap { expected, ref got } => corrupt(format!(
                "corrupt session log: seq gap in committed region at line {} (expected {expected}, got {got})",
                self.line
            )),
        }
    }
}

/// One record line judged on its own, without its place in the log (this
/// part of the work runs in parallel; [`Rules`] then applies the line rules
/// in file order).
#[derive(Clone, Debug)]
enum LineKind {
    /// A record: its first seq, its member count, and whether it is a
    /// `turn/end` event.
    Record {
        first_seq: u64,
        count: u64,
        turn_end: bool,
    },
    /// JSON without a usable `seq` (a seq gap), and whether it is a
    /// `turn/end`.
    NoSeq {
        got: Box<str>,
        turn_end: bool,
    },
    Unparsable,
}

#[derive(Clone, Debug)]
struct LineInfo {
    kind: LineKind,
    at: Cut,
    /// The length of [`Parsed::events`] once this line's events were added.
    events_end: usize,
}

/// How decoding a complete zstd frame ended, after its lines.
#[derive(Debug)]
struct FrameEnd {
    /// [`Parsed::lines`] index after the frame's last line.
    lines_end: usize,
    start: u64,
    end: DecodeEnd,
    /// The decoded text did not end in `\n`.
    torn_record: bool,
}

/// The limits of one read and its count of decoded bytes (shared by the
/// threads of the read).
struct Bounds<'a> {
    limits: &'a Limits,
    budget: Budget,
    raw_log: &'a str,
    zstd: bool,
}

impl<'a> Bounds<'a> {
    fn new(limits: &'a Limits, raw_log: &'a str, zstd: bool) -> Self {
        Bounds {
            limits,
            budget: limits.budget(),
            raw_log,
            zstd,
        }
    }

    fn subject(&self) -> String {
        if self.zstd {
            format!("corrupt Zstandard session log {}", self.raw_log)
        } else {
            format!("corrupt session log {}", self.raw_log)
        }
    }

    /// A complete line of `len` bytes (its `\n` not counted) at `place`.
    fn line(&self, len: usize, place: impl FnOnce() -> String) -> Result<()> {
        if len as u64 > self.limits.max_record_bytes {
            return Err(self.limits.record_error(&self.subject(), &place()));
        }
        if !self.budget.charge(limits::line_charge(len)) {
            return Err(self.limits.log_error(&self.subject(), &place()));
        }
        Ok(())
    }

    /// A complete line of a stretch parsed on its own thread: as
    /// [`Bounds::line`], but the bytes are counted in the stretch's `tally`
    /// and added to the shared budget in batches (one shared counter
    /// touched per line by two threads cost a tenth of a parse). Alone, a
    /// stretch fails at the same line as with [`Bounds::line`]: it settles
    /// as soon as its count could pass the limit.
    fn part_line(
        &self,
        tally: &mut Tally,
        len: usize,
        place: impl FnOnce() -> String,
    ) -> Result<()> {
        if len as u64 > self.limits.max_record_bytes {
            return Err(self.limits.record_error(&self.subject(), &place()));
        }
        self.part_charge(tally, limits::line_charge(len), place)
    }

    /// Counts `n` more bytes of a stretch (a line, or the events a packed
    /// row expands to: [`limits::expansion_charge`]) as [`Bounds::part_line`]
    /// does.
    fn part_charge(&self, tally: &mut Tally, n: u64, place: impl FnOnce() -> String) -> Result<()> {
        tally.local = tally.local.saturating_add(n);
        if tally.local >= CHARGE_BATCH
            || tally.seen.saturating_add(tally.local) > self.limits.max_log_bytes
        {
            self.settle(tally, place)?;
        }
        Ok(())
    }

    /// Adds what `tally` counted to the shared budget; over the limit, the
    /// log error names `place`.
    fn settle(&self, tally: &mut Tally, place: impl FnOnce() -> String) -> Result<()> {
        let ok = self.budget.charge(tally.local);
        tally.local = 0;
        tally.seen = self.budget.used();
        if !ok {
            return Err(self.limits.log_error(&self.subject(), &place()));
        }
        Ok(())
    }

    /// `len` bytes of a line whose end is not decoded or read yet.
    fn pending(&self, len: usize, place: impl FnOnce() -> String) -> Result<()> {
        if len as u64 > self.limits.max_record_bytes {
            return Err(self.limits.record_error(&self.subject(), &place()));
        }
        Ok(())
    }
}

/// Decoded bytes a stretch counts before it adds them to the shared
/// budget.
const CHARGE_BATCH: u64 = 256 << 10;

/// A stretch's count of decoded bytes not yet added to the shared budget,
/// and the budget's total when it last looked.
struct Tally {
    local: u64,
    seen: u64,
}

fn at_byte(b: u64) -> String {
    format!("starting at byte {b}")
}

fn in_frame(start: u64) -> String {
    format!("in the frame at byte {start}")
}

/// A stretch of record lines, parsed and expanded but not yet judged.
struct Parsed<'b> {
    bounds: &'b Bounds<'b>,
    /// zstd: the start of the frame being decoded (named in limit errors).
    frame_start: u64,
    lines: Vec<LineInfo>,
    /// The events of every parsed line (packed-row members and skippable
    /// chunk events with a seq below `skip_below` left out), from index
    /// `base` on.
    events: Vec<Event>,
    base: usize,
    /// zstd: the end of each complete frame of the stretch.
    frames: Vec<FrameEnd>,
    skip_below: u64,
    tally: Tally,
    /// Where the last line began (named when the stretch settles its
    /// count over the limit).
    last_at: Cut,
}

impl<'b> Parsed<'b> {
    /// A stretch whose events are added to `events` (after what it holds).
    fn new(bounds: &'b Bounds<'b>, events: Vec<Event>, skip_below: u64) -> Self {
        Parsed {
            bounds,
            frame_start: 0,
            lines: Vec::new(),
            base: events.len(),
            events,
            frames: Vec::new(),
            skip_below,
            // What the read counted before this stretch (the header line,
            // earlier blocks): alone, the stretch then fails at the exact
            // line that passes the limit.
            tally: Tally {
                local: 0,
                seen: bounds.budget.used(),
            },
            last_at: Cut::Byte(0),
        }
    }

    fn place(&self, at: Cut) -> String {
        match at {
            Cut::Byte(b) => at_byte(b),
            Cut::FrameLine { .. } => in_frame(self.frame_start),
        }
    }

    /// Adds the stretch's remaining count to the shared budget (at its end).
    fn settle(&mut self) -> Result<()> {
        let place = self.place(self.last_at);
        self.bounds.settle(&mut self.tally, || place)
    }

    fn line(&mut self, text: &[u8], at: Cut) -> Result<()> {
        let frame_start = self.frame_start;
        self.last_at = at;
        let place = move || match at {
            Cut::Byte(b) => at_byte(b),
            Cut::FrameLine { .. } => in_frame(frame_start),
        };
        self.bounds.part_line(&mut self.tally, text.len(), place)?;
        let text = line_text(text);
        if self.skip_below > 0 {
            if let Some(seq) = skippable_chunk(&text, self.skip_below) {
                self.lines.push(LineInfo {
                    kind: LineKind::Record {
                        first_seq: seq,
                        count: 1,
                        turn_end: false,
                    },
                    at,
                    events_end: self.events.len(),
                });
                return Ok(());
            }
        }
        let kind = match Record::parse_stored_line(&text) {
            Err(StoredLineError::Unparsable) => LineKind::Unparsable,
            Err(StoredLineError::NoSeq { got, turn_end }) => LineKind::NoSeq { got, turn_end },
            Ok(r) => {
                // Counted before the row expands (a crafted row of millions
                // of one-byte deltas is refused, not built).
                let expansion = limits::expansion_charge(&r);
                if expansion > 0 {
                    self.bounds.part_charge(&mut self.tally, expansion, || {
                        limits::expansion_place(&place(), r.member_count())
                    })?;
                }
                let kind = LineKind::Record {
                    first_seq: r.first_seq(),
                    count: r.member_count(),
                    turn_end: r.is_turn_end(),
                };
                r.into_events_from(self.skip_below, &mut self.events);
                kind
            }
        };
        self.lines.push(LineInfo {
            kind,
            at,
            events_end: self.events.len(),
        });
        Ok(())
    }

    /// The sink of a frame decode: parses the complete lines at the front
    /// of `b`, numbering them from `*k` in frame `index`, and refuses a
    /// pending line over the record limit.
    fn frame_lines(&mut self, b: &mut Vec<u8>, index: usize, k: &mut usize) -> Result<()> {
        drain_lines(b, |line| {
            let at = Cut::FrameLine {
                frame: index,
                line_in_frame: *k,
            };
            *k += 1;
            self.line(line, at)
        })?;
        let start = self.frame_start;
        self.bounds.pending(b.len(), || in_frame(start))
    }

    /// Decodes one complete frame, parsing its lines.
    fn frame(
        &mut self,
        dec: &mut FrameDecoder,
        buf: &[u8],
        frame: &frames::Frame,
        index: usize,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        out.clear();
        self.frame_start = frame.start;
        let mut k = 0usize;
        let end = dec.decode(&buf[frame.start as usize..frame.end as usize], out, |b| {
            self.frame_lines(b, index, &mut k)
        })?;
        self.frames.push(FrameEnd {
            lines_end: self.lines.len(),
            start: frame.start,
            end,
            torn_record: !out.is_empty(),
        });
        Ok(())
    }
}

/// The text of a record line. Invalid UTF-8 decodes to U+FFFD, as the
/// original's `buffer.toString("utf8")` does: the record is kept
/// (DIFFERENCES A.1 #5), never cut as torn. Valid text (every line the
/// library writes) takes the faster `from_utf8`, and is not copied.
pub(super) fn line_text(line: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(line) {
        Ok(t) => std::borrow::Cow::Borrowed(t),
        Err(_) => String::from_utf8_lossy(line),
    }
}

/// The seq of a record line that a read from `skip_below` judges without
/// keeping its event: a valid `assistant/chunk` event (by the strict parse,
/// which is what [`Record::parse_stored_line`] would take it as) with a seq
/// below `skip_below` and no message id a legacy `tool/result` could
/// inherit ([`legacy::message_id_of`]). No rule of a `read_from` looks at
/// such an event (the store checks chunks for nothing and returns only
/// the events from the start), so it is left out like the members of a
/// packed row below the start.
fn skippable_chunk(text: &str, skip_below: u64) -> Option<u64> {
    const CHUNK: &str = "assistant/chunk";
    if !text.starts_with("{\"type\":\"assistant/chunk\",") {
        return None;
    }
    let env = RawEnvelope::scan(text).ok()?;
    if env.seq >= skip_below || env.event_type.raw() != CHUNK {
        return None;
    }
    if legacy::chunk_may_name_a_message(env.data.as_bytes())
        && legacy::message_id_of(CHUNK, env.data).is_some()
    {
        return None;
    }
    Some(env.seq)
}

/// The line rules, applied in file order to parsed stretches.
struct Rules<'a, 's> {
    raw_log: &'a str,
    /// Record lines judged so far (the header not counted).
    records: u64,
    header: Option<SessionHeader>,
    /// The accepted events (a read that keeps them).
    events: Vec<Event>,
    /// A read that folds: where each stretch's accepted events go instead
    /// (then `events` stays empty), and how many went there.
    sink: Option<&'s mut dyn EventSink>,
    handed: usize,
    expected: u64,
    bad: Option<Bad>,
    /// A folding read: the emptied event vectors of handed stretches, for
    /// the next stretches to refill (a fresh vector per stretch cost the
    /// kernel's zeroing of its new pages, 12–16% of a cold zstd fold).
    spare: Vec<Vec<Event>>,
}

impl<'a, 's> Rules<'a, 's> {
    fn new(raw_log: &'a str, sink: Option<&'s mut dyn EventSink>) -> Self {
        Rules {
            raw_log,
            records: 0,
            header: None,
            events: Vec::new(),
            sink,
            handed: 0,
            expected: 0,
            bad: None,
            spare: Vec::new(),
        }
    }

    /// An empty event vector with room for `room` events: a spare one when
    /// there is one.
    fn fresh_events(&mut self, room: usize) -> Vec<Event> {
        let mut v = self.spare.pop().unwrap_or_default();
        v.reserve(room);
        v
    }

    /// How many events were accepted so far.
    fn accepted(&self) -> usize {
        self.handed + self.events.len()
    }

    fn header_line(&mut self, text: &[u8]) -> Result<()> {
        self.header = Some(parse_header_line(text, self.raw_log)?);
        Ok(())
    }

    /// A stretch that adds to the accepted events.
    fn start<'b>(&mut self, bounds: &'b Bounds<'b>, skip_below: u64) -> Parsed<'b> {
        let events = if self.sink.is_some() {
            self.fresh_events(0)
        } else {
            std::mem::take(&mut self.events)
        };
        Parsed::new(bounds, events, skip_below)
    }

    /// Judges lines `range` of `part`; `keep` becomes the `events_end` of
    /// the last accepted one.
    fn judge(
        &mut self,
        part: &Parsed<'_>,
        range: std::ops::Range<usize>,
        keep: &mut usize,
    ) -> Result<()> {
        for info in &part.lines[range] {
            self.records += 1;
            // The original's scan: after a bad line, only a later line that
            // is (or holds) a `turn/end` matters; a gapped line that is
            // itself a `turn/end` is committed corruption at once.
            let turn_end = matches!(
                info.kind,
                LineKind::Record { turn_end: true, .. } | LineKind::NoSeq { turn_end: true, .. }
            );
            if let Some(bad) = &self.bad {
                if turn_end {
                    return Err(bad.error());
                }
                continue;
            }
            let kind = match &info.kind {
                LineKind::Unparsable => BadKind::Unparsable,
                LineKind::NoSeq { got, .. } => BadKind::Gap {
                    expected: self.expected,
                    got: got.clone(),
                },
                LineKind::Record { first_seq, .. } if *first_seq != self.expected => BadKind::Gap {
                    expected: self.expected,
                    got: first_seq.to_string().into(),
                },
                LineKind::Record { count, .. } => {
                    self.expected += count;
                    *keep = info.events_end;
                    continue;
                }
            };
            let bad = Bad {
                line: self.records,
                kind,
                at: info.at,
            };
            if turn_end && matches!(bad.kind, BadKind::Gap { .. }) {
                return Err(bad.error());
            }
            self.bad = Some(bad);
        }
        Ok(())
    }

    /// Applies the rules to a parsed stretch (its lines, and for zstd the
    /// end of each frame, in order) and keeps its accepted events.
    fn absorb(&mut self, mut part: Parsed<'_>) -> Result<()> {
        let mut keep = part.base;
        let mut line = 0;
        for f in &part.frames {
            self.judge(&part, line..f.lines_end, &mut keep)?;
            line = f.lines_end;
            match &f.end {
                DecodeEnd::Finished => {}
                DecodeEnd::Failed(cause) => return Err(frame_failed(f.start, cause.clone())),
                DecodeEnd::NeedMore => {
                    return Err(frame_failed(
                        f.start,
                        "the frame ended before its last block was decoded".into(),
                    ));
                }
            }
            if f.torn_record {
                return Err(zstd_corrupt("complete frame contains a torn JSONL record"));
            }
        }
        self.judge(&part, line..part.lines.len(), &mut keep)?;
        part.events.truncate(keep);
        if let Some(sink) = self.sink.as_deref_mut() {
            // Nothing kept: the stretch's events are judged and gone.
            self.handed += part.events.len() - part.base;
            if part.base > 0 {
                part.events.drain(..part.base);
            }
            sink.events(&mut part.events);
            part.events.clear();
            // Two at most: a stretch's two halves.
            if self.spare.len() < 2 {
                self.spare.push(part.events);
            }
        } else if self.events.is_empty() {
            self.events = part.events;
        } else {
            append_releasing(&mut self.events, part.events);
        }
        Ok(())
    }
}

/// Appends `tail` to `events`, giving `tail`'s memory back as its events
/// move, so the second half of a parallel read does not exist twice at the
/// peak of a load (issue 16): `tail` is reversed in place, then moved from
/// its end in steps, shrinking it after each.
fn append_releasing(events: &mut Vec<Event>, mut tail: Vec<Event>) {
    const STEP: usize = 1 << 14;
    if tail.len() <= STEP {
        events.append(&mut tail);
        return;
    }
    events.reserve_exact(tail.len());
    tail.reverse();
    while !tail.is_empty() {
        let from = tail.len().saturating_sub(STEP);
        events.extend(tail.drain(from..).rev());
        tail.shrink_to_fit();
    }
}

/// Parses the header line, refusing a foreign version first, as the
/// original's readers do: a header line that passes its `isHeaderLine` is
/// accepted with unknown keys ignored, and kept with its validation failure
/// when full validation fails (`load`/`inspect` refuse it then).
pub(crate) fn parse_header_line(text: &[u8], raw_log: &str) -> Result<SessionHeader> {
    let s = String::from_utf8_lossy(text);
    refuse_foreign_version(&s, Some(raw_log))?;
    if json::object_fields(&s).is_err() && json::JsonText::parse_verbatim(&s).is_err() {
        return Err(corrupt(
            "corrupt session log: header line is not valid JSON",
        ));
    }
    match SessionHeader::parse_line_lenient(&s) {
        Ok(Some(h)) => Ok(h),
        Ok(None) => Err(corrupt(
            "corrupt session log: first line is not a session header",
        )),
        Err(e) => Err(corrupt(format!("corrupt session log: {e} ({raw_log})"))),
    }
}

/// Refuses a header line of another format version before anything else
/// about it is judged: a numeric `version` other than 0, naming the id as
/// JavaScript prints it (a non-string id too).
fn refuse_foreign_version(line: &str, raw_log: Option<&str>) -> Result<()> {
    let Ok(fields) = json::object_fields(line) else {
        return Ok(());
    };
    let get = |k: &str| fields.iter().find(|(n, _)| n.eq_str(k)).map(|(_, v)| *v);
    let Some(version) = get("version").filter(|v| json::kind_of(v) == Some(json::Kind::Number))
    else {
        return Ok(());
    };
    if json::as_f64(version) == Some(SESSION_FORMAT_VERSION as f64) {
        return Ok(());
    }
    let id = get("id").map_or_else(|| "undefined".to_string(), json::js_string_of);
    Err(version_refusal(&id, version, raw_log))
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
pub fn read_log(path: &Path, compression: Compression, limits: &Limits) -> Result<ReadOutcome> {
    read_log_from(path, compression, 0, limits)
}

/// [`read_log`], leaving packed-row members and plain `assistant/chunk`
/// events (those without a message id, see `skippable_chunk`) with a seq
/// below `skip_below` out of the events (every line is still parsed and
/// judged, so the outcome is otherwise the same); 0 keeps everything.
pub fn read_log_from(
    path: &Path,
    compression: Compression,
    skip_below: u64,
    limits: &Limits,
) -> Result<ReadOutcome> {
    read_log_with(path, compression, skip_below, limits, None)
}

/// [`read_log`], handing the accepted events to `sink` as each stretch of
/// the log is judged instead of keeping them (`events` of the outcome is
/// empty; `next_seq` counts them): the same lines, rules, torn tail and
/// errors, with memory bounded by a stretch (an uncompressed block, or a
/// run of `FOLD_RUN_BYTES` compressed bytes), not by the log. The file's
/// compressed bytes are still read whole (the frame structure is checked
/// before the frames are decoded, as a load does).
pub fn read_log_folding(
    path: &Path,
    compression: Compression,
    limits: &Limits,
    sink: &mut dyn EventSink,
) -> Result<ReadOutcome> {
    read_log_with(path, compression, 0, limits, Some(sink))
}

/// The sink again, for one attempt of a read.
fn reborrow<'b>(sink: &'b mut Option<&mut dyn EventSink>) -> Option<&'b mut dyn EventSink> {
    match sink {
        Some(s) => Some(&mut **s),
        None => None,
    }
}

/// Compressed bytes of frames a folding read decodes at a time (two
/// threads, half each).
const FOLD_RUN_BYTES: u64 = 256 << 10;

fn read_log_with(
    path: &Path,
    compression: Compression,
    skip_below: u64,
    limits: &Limits,
    mut sink: Option<&mut dyn EventSink>,
) -> Result<ReadOutcome> {
    let raw_log = path.display().to_string();
    for attempt in 0..READ_ATTEMPTS {
        if attempt > 0 {
            if let Some(s) = reborrow(&mut sink) {
                // The file changed under the last attempt: its events go.
                s.restart();
            }
        }
        let (file, meta) = nofollow::open_regular(path, nofollow::LOG_DEPTH)
            .map_err(|e| nofollow::io_err("cannot open", path, nofollow::LOG_DEPTH, e))?;
        let before = FileIdentity::of(&meta);
        // Exactly the bytes the file had at the start: committed bytes are
        // never rewritten, so what a writer appends meanwhile cannot change
        // them (it is simply not part of this read).
        let mut limited = (&file).take(before.size);
        let scanned = match compression {
            Compression::Zstd => {
                let buf = read_all(
                    &mut limited,
                    before.size,
                    path,
                    zstd_file_cap(limits),
                    limits,
                )?;
                scan_zstd(
                    &buf,
                    &raw_log,
                    skip_below,
                    PARALLEL_MIN_ZSTD,
                    limits,
                    if sink.is_some() {
                        FOLD_RUN_BYTES
                    } else {
                        u64::MAX
                    },
                    reborrow(&mut sink),
                )?
            }
            Compression::None => scan_plain(
                &mut limited,
                &raw_log,
                path,
                skip_below,
                PARALLEL_MIN_PLAIN,
                limits,
                reborrow(&mut sink),
            )?,
        };
        let after = FileIdentity::of(
            &nofollow::metadata(path, nofollow::LOG_DEPTH)
                .map_err(|e| nofollow::io_err("cannot stat", path, nofollow::LOG_DEPTH, e))?,
        );
        // Unchanged, or only grown (an append by a live writer): the read is
        // a consistent snapshot of the state `before`. A file that shrank or
        // was replaced was repaired or rolled back under the read: again.
        let grown = after.dev == before.dev && after.ino == before.ino && after.size > before.size;
        if after == before || grown {
            return Ok(ReadOutcome {
                header: scanned.header,
                events: scanned.events,
                next_seq: scanned.next_seq,
                torn: scanned.torn,
                recovered_events: scanned.recovered_events,
                identity: before,
                log_bytes: scanned.log_bytes,
            });
        }
    }
    Err(Error::conflict(format!(
        "session log {raw_log} kept changing while it was read ({READ_ATTEMPTS} attempts); another writer is appending to it"
    )))
}

/// The largest compressed log read at all: twice `maxLogBytes` (a frame
/// adds a few bytes per 128 KiB block and per batch, so a log that decodes
/// within the limit is far smaller than this).
fn zstd_file_cap(limits: &Limits) -> u64 {
    limits.max_log_bytes.saturating_mul(2)
}

/// Reads a whole file of at most `cap` bytes; a larger one is refused
/// before it is read into memory.
fn read_all(
    file: &mut impl Read,
    size_hint: u64,
    path: &Path,
    cap: u64,
    limits: &Limits,
) -> Result<Vec<u8>> {
    let too_big = |size: u64| {
        limits.log_error(
            &format!("session log {}", path.display()),
            &format!(
                "the file holds {size} bytes, over the {cap} bytes a log within the limit can take"
            ),
        )
    };
    if size_hint > cap {
        return Err(too_big(size_hint));
    }
    let mut buf = Vec::new();
    crate::backend::limits::reserve_bounded(&mut buf, size_hint as usize + 1, 0)?;
    file.by_ref()
        .take(cap.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| io_err("cannot read", path, e))?;
    if buf.len() as u64 > cap {
        return Err(too_big(buf.len() as u64));
    }
    Ok(buf)
}

/// What a scan found.
#[derive(Debug)]
struct Scanned {
    header: SessionHeader,
    events: Vec<Event>,
    next_seq: u64,
    torn: Option<TornTail>,
    recovered_events: usize,
    log_bytes: u64,
}

/// The first zstd frame must hold exactly one line, the header.
pub(crate) fn header_frame_not_one_line() -> Error {
    zstd_corrupt("first frame is not exactly one header line")
}

pub(crate) fn no_header(raw_log: &str) -> Error {
    corrupt(format!("empty or header-less session log ({raw_log})"))
}

/// Reads up to `max` more bytes of `file` into `buf`; returns how many.
/// `buf` never reserves much more than `cap + max` bytes.
fn read_more(
    file: &mut impl Read,
    buf: &mut Vec<u8>,
    max: usize,
    cap: usize,
    path: &Path,
) -> Result<usize> {
    let before = buf.len();
    crate::backend::limits::reserve_bounded(buf, max, cap)?;
    loop {
        match file.by_ref().take(max as u64).read_to_end(buf) {
            Ok(_) => return Ok(buf.len() - before),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err("cannot read", path, e)),
        }
    }
}

/// Parses the lines of `text` (complete lines, each ending in `\n`; the
/// first starts at file offset `offset`) into `part`.
fn parse_plain_lines(part: &mut Parsed<'_>, text: &[u8], offset: u64) -> Result<()> {
    let mut start = 0;
    for (k, nl) in memchr::memchr_iter(b'\n', text).enumerate() {
        if k % 256 == 0 {
            crate::store::cancel::checkpoint()?;
        }
        part.line(&text[start..nl], Cut::Byte(offset + start as u64))?;
        start = nl + 1;
    }
    part.settle()
}

/// A stretch's input (lines or frames), where it starts (a byte offset or
/// a frame index), and the events to make room for (0: unknown).
type Piece<T, B> = (T, B, usize);

/// Parses a stretch into `rules`: in its two `halves` on two threads when
/// it has them (the second half's part parsed into its own events, then
/// absorbed after the first), else `whole` in one part.
fn parse_stretch<'b, T: Send, B: Send>(
    rules: &mut Rules<'_, '_>,
    bounds: &'b Bounds<'b>,
    skip_below: u64,
    whole: (T, B),
    halves: Option<(Piece<T, B>, Piece<T, B>)>,
    parse: impl Fn(&mut Parsed<'b>, T, B) -> Result<()> + Sync,
) -> Result<()> {
    let Some(((a, at_a, room_a), (b, at_b, room_b))) = halves else {
        let mut part = rules.start(bounds, skip_below);
        parse(&mut part, whole.0, whole.1)?;
        return rules.absorb(part);
    };
    let mut first = rules.start(bounds, skip_below);
    first.events.reserve(room_a + room_b);
    let second_events = rules.fresh_events(room_b);
    let (r1, second) = parallel::join(
        || parse(&mut first, a, at_a),
        || {
            let mut part = Parsed::new(bounds, second_events, skip_below);
            parse(&mut part, b, at_b).map(|()| part)
        },
    );
    r1?;
    let second = second??;
    rules.absorb(first)?;
    rules.absorb(second)
}

fn count_lines(text: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', text).count()
}

/// Where to split `text` (complete lines) into two halves of whole lines:
/// the end of the line that holds the middle byte, when that leaves both
/// halves non-empty.
fn split_point(text: &[u8]) -> Option<usize> {
    let mid = text.len() / 2;
    let nl = memchr::memchr(b'\n', &text[mid..])?;
    let at = mid + nl + 1;
    (at < text.len()).then_some(at)
}

fn scan_plain(
    file: &mut impl Read,
    raw_log: &str,
    path: &Path,
    skip_below: u64,
    parallel_min: usize,
    limits: &Limits,
    sink: Option<&mut dyn EventSink>,
) -> Result<Scanned> {
    let bounds = Bounds::new(limits, raw_log, false);
    let cap = limits.record();
    // A folding read judges and hands on smaller blocks (what it holds at
    // once is a block's events).
    let block = if sink.is_some() {
        FOLD_BLOCK
    } else {
        READ_BLOCK
    };
    let mut rules = Rules::new(raw_log, sink);
    let mut buf: Vec<u8> = Vec::new();
    let mut offset: u64; // file offset of buf[0]
    // The header line first: a foreign version is refused before anything
    // else about the file is judged.
    loop {
        if let Some(nl) = memchr::memchr(b'\n', &buf) {
            bounds.line(nl, || at_byte(0))?;
            rules.header_line(&buf[..nl])?;
            buf.drain(..nl + 1);
            offset = nl as u64 + 1;
            break;
        }
        bounds.pending(buf.len(), || at_byte(0))?;
        if read_more(file, &mut buf, READ_CHUNK, cap, path)? == 0 {
            return Err(no_header(raw_log));
        }
    }
    loop {
        bounds.pending(buf.len(), || at_byte(offset))?;
        let n = read_more(file, &mut buf, block, cap, path)?;
        let complete = memchr::memrchr(b'\n', &buf).map_or(0, |nl| nl + 1);
        if complete > 0 {
            let text = &buf[..complete];
            let halves = split_point(text)
                .filter(|_| text.len() >= parallel_min)
                .map(|at| {
                    let (a, b) = text.split_at(at);
                    // A full read keeps an event per line at least: room
                    // for the block's lines at once (no growth copies; the
                    // second half's events are appended in place).
                    let lines = |t| if skip_below == 0 { count_lines(t) } else { 0 };
                    ((a, offset, lines(a)), (b, offset + at as u64, lines(b)))
                });
            parse_stretch(
                &mut rules,
                &bounds,
                skip_below,
                (text, offset),
                halves,
                |part, t, at| parse_plain_lines(part, t, at),
            )?;
            buf.drain(..complete);
            offset += complete as u64;
        }
        if n == 0 {
            break;
        }
    }
    // `buf` now holds the final segment without a newline (torn), if any.
    let header = rules.header.take().ok_or_else(|| no_header(raw_log))?;
    let torn_at = match rules.bad {
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
    Ok(Scanned {
        header,
        events: rules.events,
        next_seq: rules.expected,
        torn,
        recovered_events: 0,
        log_bytes: bounds.budget.used() + buf.len() as u64,
    })
}

/// Decodes and parses frames `range` of `scan` into `part`.
fn parse_frames(
    part: &mut Parsed<'_>,
    buf: &[u8],
    frames: &[frames::Frame],
    first_index: usize,
) -> Result<()> {
    let mut dec = FrameDecoder::bounded(part.bounds.limits.record());
    let mut out = Vec::new();
    for (k, frame) in frames.iter().enumerate() {
        crate::store::cancel::checkpoint()?;
        part.frame(&mut dec, buf, frame, first_index + k, &mut out)?;
    }
    part.settle()
}

/// `frames` cut into runs of at most `max_bytes` compressed bytes each (at
/// least one frame per run; one run, possibly empty, when all fit).
fn frame_runs(frames: &[frames::Frame], max_bytes: u64) -> Vec<&[frames::Frame]> {
    let mut runs = Vec::new();
    let mut rest = frames;
    while let Some(first) = rest.first() {
        let n = rest
            .partition_point(|f| f.end - first.start <= max_bytes)
            .max(1);
        let (run, tail) = rest.split_at(n);
        runs.push(run);
        rest = tail;
    }
    if runs.is_empty() {
        runs.push(frames);
    }
    runs
}

/// Where to split `frames` into two runs of about the same compressed size.
fn frame_split(frames: &[frames::Frame]) -> Option<usize> {
    let (first, last) = (frames.first()?, frames.last()?);
    let mid = first.start + (last.end - first.start) / 2;
    let at = frames.partition_point(|f| f.end <= mid);
    (at > 0 && at < frames.len()).then_some(at)
}

fn scan_zstd(
    buf: &[u8],
    raw_log: &str,
    skip_below: u64,
    parallel_min: usize,
    limits: &Limits,
    run_bytes: u64,
    sink: Option<&mut dyn EventSink>,
) -> Result<Scanned> {
    let bounds = Bounds::new(limits, raw_log, true);
    let mut dec = FrameDecoder::bounded(limits.record());
    let mut out = Vec::new();
    let mut rules = Rules::new(raw_log, sink);
    // The header frame first: a foreign version is refused before anything
    // else about the file is judged.
    let first = frames::first_frame(buf)?.ok_or_else(|| {
        corrupt(format!(
            "empty or header-less Zstandard session log ({raw_log})"
        ))
    })?;
    {
        let part = rules.start(&bounds, skip_below);
        let mut extra_lines = false;
        let end = dec.decode(
            &buf[first.start as usize..first.end as usize],
            &mut out,
            |b| {
                drain_lines(b, |line| {
                    if rules.header.is_none() {
                        bounds.line(line.len(), || in_frame(0))?;
                        return rules.header_line(line);
                    }
                    extra_lines = true;
                    Ok(())
                })?;
                bounds.pending(b.len(), || in_frame(0))
            },
        )?;
        if end == DecodeEnd::Finished && (extra_lines || rules.header.is_none() || !out.is_empty())
        {
            return Err(header_frame_not_one_line());
        }
        let mut part = part;
        part.frames.push(FrameEnd {
            lines_end: part.lines.len(),
            start: first.start,
            end,
            torn_record: !out.is_empty(),
        });
        rules.absorb(part)?;
    }
    if rules.header.is_none() {
        return Err(no_header(raw_log));
    }
    let scan = frames::scan_bounded(buf, limits)?;
    let all_rest = scan.frames.get(1..).unwrap_or(&[]);
    // A load decodes the frames after the header as one run (two halves,
    // `run_bytes` unbounded); a folding read in runs of `run_bytes`, each
    // judged and handed on before the next is decoded.
    let mut base = 1;
    for rest in frame_runs(all_rest, run_bytes) {
        let rest_bytes = match (rest.first(), rest.last()) {
            (Some(a), Some(b)) => (b.end - a.start) as usize,
            _ => 0,
        };
        let halves = frame_split(rest)
            .filter(|_| rest_bytes >= parallel_min)
            .map(|at| {
                let (a, b) = rest.split_at(at);
                ((a, base, 0), (b, base + at, 0))
            });
        parse_stretch(
            &mut rules,
            &bounds,
            skip_below,
            (rest, base),
            halves,
            |part, f, at| parse_frames(part, buf, f, at),
        )?;
        base += rest.len();
    }
    // The complete frames alone must end in a committed record: a bad line
    // inside them is corruption even without a later `turn/end` (the
    // original scans them first; only the cut-off last frame may be torn).
    if rules.bad.is_some() {
        return Err(zstd_corrupt("complete frame contains a torn JSONL record"));
    }
    let torn_index = scan.frames.len();
    let mut torn_lines = 0usize;
    let before_torn_frame = rules.accepted();
    if let Some(start) = scan.torn_start {
        out.clear();
        // Decode what the cut frame still holds; complete lines count, the
        // partial last line (and anything a decoder error hides) is torn.
        let mut part = rules.start(&bounds, skip_below);
        part.frame_start = start;
        // A sink error (a limit) fails the read; a decoder error only ends
        // what the torn frame yields.
        let _ = dec.decode(&buf[start as usize..], &mut out, |b| {
            part.frame_lines(b, torn_index, &mut torn_lines)
        })?;
        part.settle()?;
        rules.absorb(part)?;
    }
    let frame_start = |i: usize| -> u64 {
        scan.frames
            .get(i)
            .map_or_else(|| scan.torn_start.unwrap_or(buf.len() as u64), |f| f.start)
    };
    let frame_end = |i: usize| -> u64 { scan.frames.get(i).map_or(buf.len() as u64, |f| f.end) };
    let cut = match rules.bad {
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
    let header = rules.header.take().ok_or_else(|| no_header(raw_log))?;
    let recovered_events = rules.accepted().saturating_sub(before_torn_frame);
    Ok(Scanned {
        header,
        events: rules.events,
        next_seq: rules.expected,
        torn,
        recovered_events,
        log_bytes: bounds.budget.used(),
    })
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
/// The text is bounded by `maxLogBytes` (it is one string).
pub fn read_text(
    path: &Path,
    compression: Compression,
    limits: &Limits,
) -> Result<(String, FileIdentity)> {
    let (mut file, meta) = nofollow::open_regular(path, nofollow::LOG_DEPTH)
        .map_err(|e| nofollow::io_err("cannot open", path, nofollow::LOG_DEPTH, e))?;
    let identity = FileIdentity::of(&meta);
    let cap = match compression {
        Compression::None => limits.max_log_bytes,
        Compression::Zstd => zstd_file_cap(limits),
    };
    let buf = read_all(&mut file, identity.size, path, cap, limits)?;
    let text = match compression {
        Compression::None => buf,
        Compression::Zstd => {
            let scan = frames::scan_bounded(&buf, limits)?;
            let max = usize::try_from(limits.max_log_bytes).unwrap_or(usize::MAX);
            let mut dec = FrameDecoder::bounded(max);
            let mut out = Vec::new();
            crate::backend::limits::reserve_bounded(
                &mut out,
                buf.len().saturating_mul(4).min(max),
                0,
            )?;
            let subject = format!("corrupt Zstandard session log {}", path.display());
            for f in &scan.frames {
                let end = dec.decode(&buf[f.start as usize..f.end as usize], &mut out, |b| {
                    if b.len() > max {
                        return Err(limits.log_error(&subject, &in_frame(f.start)));
                    }
                    Ok(())
                })?;
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
///
/// Bounded by `maxRecordBytes`: a first line (none) or a header frame (zstd,
/// decoded and checked to its end, the header line kept) longer than that is
/// a corruption error.
pub fn peek_header(
    path: &Path,
    compression: Compression,
    dec: &mut FrameDecoder,
    limits: &Limits,
) -> Result<Option<(SessionHeader, FileIdentity)>> {
    let (file, meta) = match nofollow::open_regular(path, nofollow::LOG_DEPTH) {
        Ok(opened) => opened,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(nofollow::io_err(
                "cannot open",
                path,
                nofollow::LOG_DEPTH,
                e,
            ));
        }
    };
    peek_header_file(file, &meta, path, compression, dec, limits)
}

/// [`peek_header`] of the log at `path`, already opened (a listing opens
/// each file relative to its directories' descriptors).
pub fn peek_header_file(
    mut file: File,
    meta: &std::fs::Metadata,
    path: &Path,
    compression: Compression,
    dec: &mut FrameDecoder,
    limits: &Limits,
) -> Result<Option<(SessionHeader, FileIdentity)>> {
    let record = limits.record();
    let subject = || match compression {
        Compression::None => format!("corrupt session log {}", path.display()),
        Compression::Zstd => format!("corrupt Zstandard session log {}", path.display()),
    };
    // A header frame that decodes within the record limit is no larger
    // than this compressed (raw blocks add 3 bytes per 128 KiB).
    let frame_cap = record.saturating_add(record / 64).saturating_add(1024);
    let identity = FileIdentity::of(meta);
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = 4096usize;
    let line: Vec<u8> = loop {
        let cap = match compression {
            Compression::None => record,
            Compression::Zstd => frame_cap,
        };
        if buf.len() > cap {
            let place = match compression {
                Compression::None => "starting at byte 0",
                Compression::Zstd => "in the header frame at byte 0",
            };
            return Err(limits.record_error(&subject(), place));
        }
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
            // The first frame is judged as the original's list judges it:
            // a frame that fails to decode, or holds more than the header
            // line, fails the whole listing (DIFFERENCES A.1 #11, B 15).
            // The header line is kept; the rest of the frame is decoded
            // (to check it) and dropped as it comes.
            Compression::Zstd => {
                if let Some(f) = frames::first_frame(&buf)? {
                    let mut out = Vec::new();
                    let mut first: Option<Vec<u8>> = None;
                    let mut extra = false;
                    let mut decoded = 0usize;
                    let end = dec.decode(&buf[..f.end as usize], &mut out, |b| {
                        if first.is_some() {
                            extra |= !b.is_empty();
                        } else {
                            match memchr::memchr(b'\n', b) {
                                Some(nl) => {
                                    first = Some(b[..nl].to_vec());
                                    extra |= b.len() > nl + 1;
                                }
                                // Keep the start of a long header line.
                                None if b.len() <= record => return Ok(()),
                                None => {}
                            }
                        }
                        decoded = decoded.saturating_add(b.len());
                        b.clear();
                        if decoded > record.saturating_add(1) {
                            return Err(
                                limits.record_error(&subject(), "in the header frame at byte 0")
                            );
                        }
                        Ok(())
                    })?;
                    if end != DecodeEnd::Finished {
                        let cause = match end {
                            DecodeEnd::Failed(c) => c,
                            _ => "the frame ended before its last block was decoded".into(),
                        };
                        return Err(Error::Corruption {
                            message: format!(
                                "corrupt Zstandard session log: the header frame of {} failed validation",
                                path.display()
                            ),
                            cause: Some(cause),
                        });
                    }
                    match first {
                        Some(_) if extra => return Err(header_frame_not_one_line()),
                        Some(line) => break line,
                        None => return Ok(None),
                    }
                }
            }
        }
        if eof {
            return Ok(None);
        }
        chunk = (chunk * 2).min(1 << 20);
    };
    let s = String::from_utf8_lossy(&line);
    Ok(SessionHeader::parse_line_lenient(&s)
        .map_err(|e| corrupt(format!("corrupt session log: {e} ({})", path.display())))?
        .map(|h| (h, identity)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::chunk_rows::{PackLimits, pack};
    use crate::model::json::quote;
    use std::io::Write as _;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn event(ty: &str, seq: u64, data: &str) -> Event {
        Event::parse(&format!(
            r#"{{"type":{},"seq":{seq},"time":{},"data":{data}}}"#,
            quote(ty),
            1000 + seq * 3
        ))
        .unwrap()
    }

    #[test]
    fn append_releasing_keeps_order() {
        for (a, b) in [(0, 3), (2, 5), (3, (1 << 14) * 3 + 7), (1, 1 << 14)] {
            let all: Vec<Event> = (0..a + b).map(|s| event("step/end", s, "{}")).collect();
            let mut events = all[..a as usize].to_vec();
            append_releasing(&mut events, all[a as usize..].to_vec());
            assert!(events == all, "{a} + {b}");
        }
    }

    /// Batches of record lines: each a turn with a run of packed chunks.
    fn batches(turns: u64) -> Vec<Vec<String>> {
        let mut seq = 0;
        let mut out = Vec::new();
        for t in 1..=turns {
            let mut events = vec![event("turn/start", seq, &format!(r#"{{"turn":{t}}}"#))];
            seq += 1;
            for k in 0..(5 + t % 4) {
                let data = format!(
                    r#"{{"turn":{t},"step":1,"chunk":{{"type":"text-delta","index":0,"text":"piece {k} of turn {t}"}}}}"#
                );
                events.push(event("assistant/chunk", seq, &data));
                seq += 1;
            }
            events.push(event("user/message", seq, r#"{"x":1}"#));
            seq += 1;
            events.push(event("turn/end", seq, &format!(r#"{{"turn":{t}}}"#)));
            seq += 1;
            let mut lines = Vec::new();
            for r in pack(&events, &PackLimits::JSONL) {
                let mut l = String::new();
                r.write_json(&mut l);
                lines.push(l);
            }
            out.push(lines);
        }
        out
    }

    fn header_line() -> String {
        SessionHeader::new("par", 1).to_jsonl_line()
    }

    fn zstd_bytes(batches: &[Vec<String>]) -> Vec<u8> {
        let mut out = codec_zstd_frame(&format!("{}\n", header_line()));
        for b in batches {
            out.extend(codec_zstd_frame(
                &b.iter().map(|l| format!("{l}\n")).collect::<String>(),
            ));
        }
        out
    }

    fn codec_zstd_frame(text: &str) -> Vec<u8> {
        super::super::codec_zstd::encode_frame(text.as_bytes()).unwrap()
    }

    fn plain_bytes(batches: &[Vec<String>]) -> Vec<u8> {
        let mut out = format!("{}\n", header_line());
        for b in batches {
            for l in b {
                out.push_str(l);
                out.push('\n');
            }
        }
        out.into_bytes()
    }

    fn show(r: Result<Scanned>) -> String {
        match r {
            Ok(s) => format!("{s:?}"),
            Err(e) => format!("error: {e} / {e:?}"),
        }
    }

    static FILES: AtomicUsize = AtomicUsize::new(0);

    /// A sink that keeps what a folding read hands on (to compare with a
    /// read that keeps the events), and the largest stretch.
    #[derive(Default)]
    struct Collect {
        events: Vec<Event>,
        largest: usize,
    }

    impl EventSink for Collect {
        fn events(&mut self, events: &mut Vec<Event>) {
            self.largest = self.largest.max(events.len());
            self.events.append(events);
        }
        fn restart(&mut self) {
            self.events.clear();
        }
    }

    /// A folding scan shown as the keeping scan is: its handed events put
    /// back in the outcome.
    fn folded(r: Result<Scanned>, sink: Collect) -> String {
        show(r.map(|mut s| {
            assert!(s.events.is_empty(), "a folding scan keeps nothing");
            s.events = sink.events;
            s
        }))
    }

    /// Folding zstd scans in runs of `run` bytes (one frame each at 1),
    /// sequential and parallel, give what the keeping scan gives.
    fn zstd_fold_agrees(z: &[u8], what: &str) {
        let keep = show(scan_zstd(
            z,
            "LOG",
            0,
            usize::MAX,
            &Limits::default(),
            u64::MAX,
            None,
        ));
        for run in [1, 300, u64::MAX] {
            for parallel_min in [0, usize::MAX] {
                let mut sink = Collect::default();
                let r = scan_zstd(
                    z,
                    "LOG",
                    0,
                    parallel_min,
                    &Limits::default(),
                    run,
                    Some(&mut sink),
                );
                assert_eq!(folded(r, sink), keep, "zstd fold, {what}, run {run}");
            }
        }
    }

    /// The same for uncompressed scans.
    fn plain_fold_agrees(bytes: &[u8], what: &str) {
        let keep = plain_scan(bytes, 0, usize::MAX);
        let path = std::env::temp_dir().join(format!(
            "dsh-reader-fold-{}-{}.jsonl",
            std::process::id(),
            FILES.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, bytes).unwrap();
        for parallel_min in [0, usize::MAX] {
            let mut sink = Collect::default();
            let mut f = File::open(&path).unwrap();
            let r = scan_plain(
                &mut f,
                "LOG",
                &path,
                0,
                parallel_min,
                &Limits::default(),
                Some(&mut sink),
            );
            assert_eq!(folded(r, sink), keep, "plain fold, {what}");
        }
        let _ = std::fs::remove_file(&path);
    }

    fn plain_scan(bytes: &[u8], skip: u64, parallel_min: usize) -> String {
        let path = std::env::temp_dir().join(format!(
            "dsh-reader-par-{}-{}.jsonl",
            std::process::id(),
            FILES.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::File::create(&path)
            .unwrap()
            .write_all(bytes)
            .unwrap();
        let mut f = File::open(&path).unwrap();
        let r = show(scan_plain(
            &mut f,
            "LOG",
            &path,
            skip,
            parallel_min,
            &Limits::default(),
            None,
        ));
        let _ = std::fs::remove_file(&path);
        r
    }

    /// The parallel and the sequential scan agree on `batches`, for zstd and
    /// uncompressed, with and without skipping.
    fn agree(batches: &[Vec<String>], what: &str) {
        let z = zstd_bytes(batches);
        let p = plain_bytes(batches);
        for skip in [0, 17] {
            let seq = show(scan_zstd(
                &z,
                "LOG",
                skip,
                usize::MAX,
                &Limits::default(),
                u64::MAX,
                None,
            ));
            let par = show(scan_zstd(
                &z,
                "LOG",
                skip,
                0,
                &Limits::default(),
                u64::MAX,
                None,
            ));
            assert_eq!(seq, par, "zstd, {what}, skip {skip}");
            let seq = plain_scan(&p, skip, usize::MAX);
            let par = plain_scan(&p, skip, 0);
            assert_eq!(seq, par, "plain, {what}, skip {skip}");
        }
        zstd_fold_agrees(&z, what);
        plain_fold_agrees(&p, what);
    }

    #[test]
    fn parallel_scans_match_the_sequential_scan_on_bad_lines() {
        let clean = batches(12);
        assert!(frame_split(&frames::scan(&zstd_bytes(&clean)).unwrap().frames[1..]).is_some());
        assert!(split_point(&plain_bytes(&clean)).is_some());
        agree(&clean, "clean");
        let positions: Vec<(usize, usize)> = clean
            .iter()
            .enumerate()
            .flat_map(|(b, lines)| (0..lines.len()).map(move |l| (b, l)))
            .collect();
        for &(b, l) in &positions {
            // An unparsable line, then later turn ends (corrupt).
            let mut m = clean.clone();
            m[b][l] = "{\"type\":".into();
            agree(&m, &format!("unparsable at {b}/{l}"));
            // The same, with no later turn end (a torn tail).
            let mut m = clean[..=b].to_vec();
            m[b][l] = "not json".into();
            m[b].retain(|x| !x.contains("turn/end"));
            agree(&m, &format!("torn unparsable at {b}/{l}"));
            // A seq gap.
            let mut m = clean.clone();
            m[b][l] = m[b][l].replacen("\"seq", "\"seq\":999999,\"x", 1);
            agree(&m, &format!("gap at {b}/{l}"));
            let mut m = clean.clone();
            m[b].remove(l);
            agree(&m, &format!("missing line at {b}/{l}"));
        }
    }

    #[test]
    fn parallel_scans_match_on_torn_and_corrupt_bytes() {
        let clean = batches(10);
        let z = zstd_bytes(&clean);
        let p = plain_bytes(&clean);
        for cut in (1..400).chain([z.len() / 2, z.len() * 2 / 3]) {
            if cut < z.len() {
                let t = &z[..z.len() - cut];
                for skip in [0, 30] {
                    assert_eq!(
                        show(scan_zstd(
                            t,
                            "LOG",
                            skip,
                            usize::MAX,
                            &Limits::default(),
                            u64::MAX,
                            None
                        )),
                        show(scan_zstd(
                            t,
                            "LOG",
                            skip,
                            0,
                            &Limits::default(),
                            u64::MAX,
                            None
                        )),
                        "zstd cut {cut}"
                    );
                }
                zstd_fold_agrees(t, &format!("cut {cut}"));
            }
            if cut < p.len() {
                let t = &p[..p.len() - cut];
                assert_eq!(
                    plain_scan(t, 0, usize::MAX),
                    plain_scan(t, 0, 0),
                    "plain cut {cut}"
                );
                plain_fold_agrees(t, &format!("cut {cut}"));
            }
        }
        for at in (0..z.len()).step_by(7) {
            let mut bad = z.clone();
            bad[at] ^= 0x55;
            assert_eq!(
                show(scan_zstd(
                    &bad,
                    "LOG",
                    0,
                    usize::MAX,
                    &Limits::default(),
                    u64::MAX,
                    None
                )),
                show(scan_zstd(
                    &bad,
                    "LOG",
                    0,
                    0,
                    &Limits::default(),
                    u64::MAX,
                    None
                )),
                "zstd byte {at} flipped"
            );
            zstd_fold_agrees(&bad, &format!("byte {at} flipped"));
        }
    }

    #[test]
    fn a_folding_read_hands_on_stretches_not_the_log() {
        let clean = batches(40);
        let z = zstd_bytes(&clean);
        let mut sink = Collect::default();
        let s = scan_zstd(&z, "LOG", 0, 0, &Limits::default(), 300, Some(&mut sink)).unwrap();
        assert!(s.events.is_empty());
        assert_eq!(sink.events.len() as u64, s.next_seq);
        assert!(
            sink.largest * 4 < sink.events.len(),
            "largest stretch {}",
            sink.largest
        );
    }

    #[test]
    fn a_sequential_read_names_the_line_that_passes_max_log_bytes() {
        let p = plain_bytes(&batches(6));
        let starts: Vec<usize> = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', &p).map(|n| n + 1))
            .filter(|&at| at < p.len())
            .collect();
        let path = std::env::temp_dir().join(format!(
            "dsh-reader-limit-{}-{}.jsonl",
            std::process::id(),
            FILES.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, &p).unwrap();
        // What a read counted before line k: the lines, and the events of
        // the packed rows among them.
        let counted = |k: usize| -> u64 {
            let text = std::str::from_utf8(&p[..starts[k]]).unwrap();
            text.lines()
                .skip(1)
                .map(|l| limits::expansion_charge(&Record::parse_stored_line(l).unwrap()))
                .sum::<u64>()
                + starts[k] as u64
        };
        assert!(counted(starts.len() - 1) > starts[starts.len() - 1] as u64);
        // The limit ends inside line k (the header is line 0): line k fails.
        for k in [1, 2, starts.len() / 2, starts.len() - 1] {
            let limits = Limits {
                max_log_bytes: counted(k) + 3,
                ..Limits::default()
            };
            let mut f = File::open(&path).unwrap();
            let e = scan_plain(&mut f, "LOG", &path, 0, usize::MAX, &limits, None).unwrap_err();
            assert!(
                e.to_string()
                    .contains(&format!("(starting at byte {})", starts[k])),
                "line {k}: {e}"
            );
        }
        // A packed row whose bytes fit and whose events do not.
        let k = (1..starts.len() - 1)
            .find(|&k| counted(k + 1) > starts[k + 1] as u64 - starts[k] as u64 + counted(k))
            .expect("a packed row");
        let limits = Limits {
            max_log_bytes: counted(k) + (starts[k + 1] - starts[k]) as u64 + 3,
            ..Limits::default()
        };
        let mut f = File::open(&path).unwrap();
        let e = scan_plain(&mut f, "LOG", &path, 0, usize::MAX, &limits, None).unwrap_err();
        let members = counted(k + 1) - counted(k) - (starts[k + 1] - starts[k]) as u64;
        assert!(
            e.to_string().contains(&format!(
                "(starting at byte {}, a packed chunk row of {} events, each counted as 128 bytes more",
                starts[k],
                members / limits::PACKED_MEMBER_CHARGE
            )),
            "line {k}: {e}"
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn skipping_keeps_plain_chunks_that_name_a_message() {
        let lines = [
            header_line(),
            event("turn/start", 0, r#"{"turn":1}"#).to_json(),
            event("assistant/chunk", 1, r#"{"turn":1,"step":1}"#).to_json(),
            event("assistant/chunk", 2, r#"{"message":{"id":"m1"}}"#).to_json(),
            event("assistant/chunk", 3, r#"{"m\u0065ssage":{"id":"m2"}}"#).to_json(),
            event("assistant/chunk", 4, r#"{"text":"message"}"#).to_json(),
            event("assistant/chunk", 5, r#"{"turn":1}"#).to_json(),
            event("turn/end", 6, r#"{"turn":1}"#).to_json(),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let path = std::env::temp_dir().join(format!(
            "dsh-reader-chunks-{}-{}.jsonl",
            std::process::id(),
            FILES.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, &text).unwrap();
        for parallel_min in [0, usize::MAX] {
            let scan = |skip| {
                let mut f = File::open(&path).unwrap();
                scan_plain(
                    &mut f,
                    "LOG",
                    &path,
                    skip,
                    parallel_min,
                    &Limits::default(),
                    None,
                )
                .unwrap()
            };
            let full = scan(0);
            assert_eq!(full.events.len(), 7);
            let part = scan(5);
            assert_eq!(part.next_seq, full.next_seq);
            let seqs: Vec<u64> = part.events.iter().map(|e| e.seq).collect();
            // seq 1 and 4 are left out; 2 and 3 hold a message id that a
            // legacy tool/result could inherit.
            assert_eq!(seqs, [0, 2, 3, 5, 6], "parallel_min {parallel_min}");
            for e in &part.events {
                assert_eq!(Some(e), full.events.iter().find(|f| f.seq == e.seq));
            }
        }
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn skipping_leaves_out_only_packed_members_below_the_start() {
        let clean = batches(8);
        for (bytes, zstd) in [(zstd_bytes(&clean), true), (plain_bytes(&clean), false)] {
            let scan = |skip| {
                if zstd {
                    scan_zstd(&bytes, "LOG", skip, 0, &Limits::default(), u64::MAX, None).unwrap()
                } else {
                    let path = std::env::temp_dir().join(format!(
                        "dsh-reader-skip-{}-{}.jsonl",
                        std::process::id(),
                        FILES.fetch_add(1, Ordering::Relaxed)
                    ));
                    std::fs::write(&path, &bytes).unwrap();
                    let r = scan_plain(
                        &mut File::open(&path).unwrap(),
                        "LOG",
                        &path,
                        skip,
                        0,
                        &Limits::default(),
                        None,
                    );
                    let _ = std::fs::remove_file(&path);
                    r.unwrap()
                }
            };
            let full = scan(0);
            for k in [
                1,
                5,
                40,
                66,
                full.next_seq - 1,
                full.next_seq,
                full.next_seq + 9,
            ] {
                let part = scan(k);
                assert_eq!(part.next_seq, full.next_seq);
                let want: Vec<&Event> = full
                    .events
                    .iter()
                    .filter(|e| e.seq >= k || e.event_type() != "assistant/chunk")
                    .collect();
                let got: Vec<&Event> = part.events.iter().collect();
                assert_eq!(got, want, "skip {k}, zstd {zstd}");
            }
        }
    }
}
