//! Catalog reads of a JSONL log (see [`crate::backend::catalog`]): a window
//! from the head and the tail only, and the records appended after a
//! remembered offset.
//!
//! zstd: the compressed file is read (one read, no decoding), its frame
//! structure scanned ([`super::frames::scan`]), and only the header frame,
//! the first frames (until the wanted first events are found) and the last
//! frames (walking back until the wanted last events are found) are
//! decoded. Uncompressed: the header line and the first lines are read
//! forward, the last lines backward from the end in blocks. A torn last
//! frame or a last line without its `\n` is not there yet (a live writer's
//! write in progress, or a crash leftover that the next `load` repairs):
//! these reads never repair.
//!
//! They judge only what they read: a line outside the window is never read
//! (a `load` may refuse the log that a listing still lists); a line inside
//! it that does not parse, or seqs that do not run on, send the window to
//! a full read, whose rules decide (see `JsonlBackend::window_of`).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::JsonlBackend;
use super::codec_zstd::FrameDecoder;
use super::frames;
use super::layout::{Compression, io_err};
use super::nofollow;
use super::reader::{line_text, no_header, parse_header_line};
use super::revision::FileIdentity;
use crate::backend::TornTail;
use crate::backend::catalog::{FollowCursor, Window, WindowNeeds, WindowSpec};
use crate::backend::limits::{self, Budget, Limits};
use crate::codec::chunk_rows::Record;
use crate::error::{Error, Result};
use crate::model::event::Event;
use crate::model::header::SessionHeader;

/// The block size of the backward walk over an uncompressed log.
const BLOCK: u64 = 64 * 1024;

/// The events of the record lines in `text` (each ending in `\n`; a last
/// piece without one is left out), in order. Whether every line parsed.
/// Every line and the events of every packed row are counted in `budget`
/// (as a full read counts them) before they are built: past it, `Err`
/// (the walk stops; a full read names the place).
fn events_of_lines(text: &[u8], out: &mut Vec<Event>, budget: &Budget) -> Result<bool, OverBudget> {
    let mut start = 0;
    let mut clean = true;
    for nl in memchr::memchr_iter(b'\n', text) {
        if !budget.charge(limits::line_charge(nl - start)) {
            return Err(OverBudget);
        }
        let line = line_text(&text[start..nl]);
        match Record::parse_stored_line(&line) {
            Ok(r) => {
                if !budget.charge(limits::expansion_charge(&r)) {
                    return Err(OverBudget);
                }
                r.into_events_from(0, out)
            }
            Err(_) => clean = false,
        }
        start = nl + 1;
    }
    Ok(clean)
}

/// A walk read more than `maxLogBytes` counts.
#[derive(Debug)]
struct OverBudget;

/// Whether `events` run on without a gap (and, when `before` is given,
/// end right before that seq).
fn contiguous(events: &[Event], before: Option<u64>) -> bool {
    events.windows(2).all(|w| w[0].seq + 1 == w[1].seq)
        && match (events.last(), before) {
            (Some(last), Some(b)) => last.seq + 1 == b,
            _ => true,
        }
}

fn open(path: &Path) -> Result<(File, FileIdentity)> {
    let (file, meta) = nofollow::open_regular(path, nofollow::LOG_DEPTH)
        .map_err(|e| nofollow::io_err("cannot open", path, nofollow::LOG_DEPTH, e))?;
    Ok((file, FileIdentity::of(&meta)))
}

fn read_range(file: &File, path: &Path, start: u64, end: u64) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; (end - start) as usize];
    file.read_exact_at(&mut buf, start)
        .map_err(|e| io_err("cannot read", path, e))?;
    Ok(buf)
}

/// Decodes one complete frame into its record events.
fn frame_events(
    dec: &mut FrameDecoder,
    frame: &[u8],
    start: u64,
    (limits, budget, log): (&Limits, &Budget, &str),
) -> Result<Vec<Event>> {
    let mut out = Vec::new();
    let mut events = Vec::new();
    let mut lines: Vec<u8> = Vec::new();
    dec.decode(frame, &mut out, |b| {
        if let Some(last_nl) = memchr::memrchr(b'\n', b) {
            lines.extend_from_slice(&b[..=last_nl]);
            b.drain(..=last_nl);
        }
        Ok(())
    })?;
    if !out.is_empty() {
        return Err(Error::corruption(format!(
            "corrupt Zstandard session log: the frame at byte {start} ends inside a record"
        )));
    }
    let clean = events_of_lines(&lines, &mut events, budget).map_err(|OverBudget| {
        limits.log_error(
            &format!("session log {log}"),
            &format!("in the frame at byte {start}"),
        )
    })?;
    if !clean || !contiguous(&events, None) {
        return Err(Error::corruption(format!(
            "session log: the frame at byte {start} holds a record that does not parse or a seq gap"
        )));
    }
    Ok(events)
}

/// The events a backward walk keeps: the wanted ones, and the log's last.
/// `log_end`: `events` end the log (the first batch of the walk).
fn keep_backward(
    needs: &mut WindowNeeds<'_>,
    events: Vec<Event>,
    kept: &mut Vec<Event>,
    log_end: bool,
) {
    for (i, e) in events.into_iter().rev().enumerate() {
        let last = log_end && i == 0;
        if needs.see_backward(&e) || last {
            kept.push(e);
        }
    }
}

fn finish(
    header: SessionHeader,
    identity: &FileIdentity,
    next_seq: u64,
    mut events: Vec<Event>,
) -> Window {
    events.sort_by_key(|e| e.seq);
    events.dedup_by_key(|e| e.seq);
    Window {
        header,
        revision: identity.revision(),
        next_seq,
        bytes: identity.size,
        events,
    }
}

impl JsonlBackend {
    /// The window of the log at `path` (see the module docs). A window
    /// whose records do not parse or do not run on (a log whose reads keep
    /// fewer events than its tail suggests) is taken from a full read
    /// instead, so the listing agrees with what a read returns.
    pub(super) fn window_of(&self, path: &Path, spec: &WindowSpec<'_>) -> Result<Window> {
        let quick = match self.compression {
            Compression::Zstd => self.window_zstd(path, spec),
            Compression::None => self.window_plain(path, spec),
        };
        match quick {
            Ok(Some(w)) => Ok(w),
            Ok(None) | Err(_) => {
                let read = super::reader::read_log(path, self.compression, &self.limits)?;
                let mut events = read.events;
                events.truncate(events.len() - read.recovered_events.min(events.len()));
                let mut w = Window::from_events(
                    read.header,
                    read.identity.revision(),
                    read.identity.size,
                    events,
                    spec,
                );
                w.bytes = read.identity.size;
                Ok(w)
            }
        }
    }

    fn window_zstd(&self, path: &Path, spec: &WindowSpec<'_>) -> Result<Option<Window>> {
        let raw_log = path.display().to_string();
        let (file, identity) = open(path)?;
        if identity.size > self.limits.max_log_bytes.saturating_mul(2) {
            return Err(self.limits.log_error(
                &format!("session log {raw_log}"),
                &format!("the file holds {} bytes", identity.size),
            ));
        }
        let buf = read_range(&file, path, 0, identity.size)?;
        let scan = frames::scan_bounded(&buf, &self.limits)?;
        let mut dec = FrameDecoder::bounded(self.limits.record());
        let budget = self.limits.budget();
        let bounds = (&self.limits, &budget, raw_log.as_str());
        let first = scan.frames.first().ok_or_else(|| no_header(&raw_log))?;
        let header_text = {
            let mut out = Vec::new();
            dec.decode(
                &buf[first.start as usize..first.end as usize],
                &mut out,
                |_| Ok(()),
            )?;
            out
        };
        let line = header_text
            .split(|b| *b == b'\n')
            .next()
            .ok_or_else(|| no_header(&raw_log))?;
        let header = parse_header_line(line, &raw_log)?;
        let records = &scan.frames[1..];
        let mut needs = WindowNeeds::new(spec);
        let mut kept = Vec::new();
        // Forward from the head: the frames decoded here are kept for the
        // backward walk, should it reach them.
        let mut head: Vec<Vec<Event>> = Vec::new();
        while !needs.head_done() && head.len() < records.len() {
            let f = records[head.len()];
            let events = frame_events(
                &mut dec,
                &buf[f.start as usize..f.end as usize],
                f.start,
                bounds,
            )?;
            let expect = head
                .iter()
                .rev()
                .find_map(|h| h.last())
                .map_or(0, |e| e.seq + 1);
            if events.first().is_some_and(|e| e.seq != expect) {
                return Ok(None);
            }
            for e in &events {
                if needs.see_forward(e) {
                    kept.push(e.clone());
                }
            }
            head.push(events);
        }
        let mut next_seq = None;
        let mut before: Option<u64> = None;
        for (i, f) in records.iter().enumerate().rev() {
            if needs.tail_done() && next_seq.is_some() {
                break;
            }
            let events = match head.get_mut(i) {
                Some(events) => std::mem::take(events),
                None => frame_events(
                    &mut dec,
                    &buf[f.start as usize..f.end as usize],
                    f.start,
                    bounds,
                )?,
            };
            let log_end = next_seq.is_none();
            if log_end {
                let Some(last) = events.last() else { continue };
                next_seq = Some(last.seq + 1);
            } else if !contiguous(&events, before) {
                return Ok(None);
            }
            before = events.first().map(|e| e.seq).or(before);
            keep_backward(&mut needs, events, &mut kept, log_end);
        }
        Ok(Some(finish(header, &identity, next_seq.unwrap_or(0), kept)))
    }

    fn window_plain(&self, path: &Path, spec: &WindowSpec<'_>) -> Result<Option<Window>> {
        let raw_log = path.display().to_string();
        let (file, identity) = open(path)?;
        let size = identity.size;
        let cap = self.limits.record() as u64 + 1;
        let budget = self.limits.budget();
        // The header line and the forward walk.
        let mut needs = WindowNeeds::new(spec);
        let mut kept = Vec::new();
        let mut pos = 0u64;
        let mut pending: Vec<u8> = Vec::new();
        let mut header: Option<(SessionHeader, u64)> = None;
        let mut head_next = 0u64;
        while pos < size && (header.is_none() || !needs.head_done()) {
            let end = (pos + BLOCK).min(size);
            pending.extend_from_slice(&read_range(&file, path, pos, end)?);
            let base = end - pending.len() as u64;
            pos = end;
            let Some(last_nl) = memchr::memrchr(b'\n', &pending) else {
                if pending.len() as u64 > cap {
                    return Err(self.limits.record_error(
                        &format!("corrupt session log {raw_log}"),
                        &format!("starting at byte {base}"),
                    ));
                }
                continue;
            };
            let mut text: &[u8] = &pending[..=last_nl];
            if header.is_none() {
                let nl = memchr::memchr(b'\n', text).expect("a line end");
                header = Some((
                    parse_header_line(&text[..nl], &raw_log)?,
                    base + nl as u64 + 1,
                ));
                text = &text[nl + 1..];
            }
            let mut events = Vec::new();
            // Past the log limit: a full read names the place.
            let Ok(clean) = events_of_lines(text, &mut events, &budget) else {
                return Ok(None);
            };
            if !clean
                || !contiguous(&events, None)
                || events.first().is_some_and(|e| e.seq != head_next)
            {
                return Ok(None);
            }
            if let Some(last) = events.last() {
                head_next = last.seq + 1;
            }
            for e in events {
                if needs.see_forward(&e) {
                    kept.push(e);
                }
            }
            pending.drain(..=last_nl);
        }
        let (header, body_start) = header.ok_or_else(|| no_header(&raw_log))?;
        // The backward walk, from the last complete line.
        let mut end = size;
        let mut tail: Vec<u8> = Vec::new();
        let mut next_seq = None;
        // Bytes after the last `\n`: not there yet.
        let mut complete_end = None;
        let mut before: Option<u64> = None;
        while end > body_start && !(needs.tail_done() && next_seq.is_some()) {
            let start = end.saturating_sub(BLOCK).max(body_start);
            let mut block = read_range(&file, path, start, end)?;
            block.extend_from_slice(&tail);
            tail = block;
            end = start;
            if complete_end.is_none() {
                match memchr::memrchr(b'\n', &tail) {
                    Some(nl) => {
                        tail.truncate(nl + 1);
                        complete_end = Some(start + nl as u64 + 1);
                    }
                    None => continue,
                }
            }
            // Whole lines only: a block may start inside one.
            let from = if start == body_start {
                0
            } else {
                match memchr::memchr(b'\n', &tail) {
                    Some(nl) if nl + 1 < tail.len() => nl + 1,
                    _ => {
                        if tail.len() as u64 > cap {
                            return Err(self.limits.record_error(
                                &format!("corrupt session log {raw_log}"),
                                &format!("ending at byte {}", start + tail.len() as u64),
                            ));
                        }
                        continue;
                    }
                }
            };
            let mut events = Vec::new();
            let Ok(clean) = events_of_lines(&tail[from..], &mut events, &budget) else {
                return Ok(None);
            };
            tail.truncate(from);
            let log_end = next_seq.is_none() && !events.is_empty();
            if !clean || !contiguous(&events, if log_end { None } else { before }) {
                return Ok(None);
            }
            if let Some(last) = events.last().filter(|_| log_end) {
                next_seq = Some(last.seq + 1);
            }
            before = events.first().map(|e| e.seq).or(before);
            keep_backward(&mut needs, events, &mut kept, log_end);
        }
        Ok(Some(finish(header, &identity, next_seq.unwrap_or(0), kept)))
    }

    /// The complete records appended after `cursor` (see the module docs).
    pub(super) fn read_after_at(
        &self,
        path: &Path,
        cursor: &mut FollowCursor,
    ) -> Result<Vec<Event>> {
        let (file, identity) = open(path)?;
        let resume = match cursor.offset {
            Some((dev, ino, off))
                if dev == identity.dev && ino == identity.ino && off <= identity.size =>
            {
                Some(off)
            }
            _ => None,
        };
        let Some(off) = resume else {
            // No offset yet, or the file was replaced or cut: one full read
            // (complete writes only) to find where the records end.
            let read = super::reader::read_log(path, self.compression, &self.limits)?;
            let end = match read.torn {
                Some(TornTail::Jsonl { truncate_to, .. }) => truncate_to,
                _ => read.identity.size,
            };
            let mut events = read.events;
            events.truncate(events.len() - read.recovered_events.min(events.len()));
            events.retain(|e| e.seq >= cursor.next_seq);
            if let Some(last) = events.last() {
                cursor.next_seq = last.seq + 1;
            }
            cursor.offset = Some((read.identity.dev, read.identity.ino, end));
            return Ok(events);
        };
        if off == identity.size {
            return Ok(Vec::new());
        }
        // What was appended since is read whole: no log that reads within
        // maxLogBytes grows by more than twice it (the zstd bound of a
        // full read).
        let grown = identity.size - off;
        if grown > self.limits.max_log_bytes.saturating_mul(2) {
            return Err(self.limits.log_error(
                &format!("session log {}", path.display()),
                &format!("{grown} bytes were appended after byte {off}"),
            ));
        }
        let buf = read_range(&file, path, off, identity.size)?;
        let mut events = Vec::new();
        let budget = self.limits.budget();
        let over = |OverBudget| {
            self.limits.log_error(
                &format!("session log {}", path.display()),
                &format!("in what was appended after byte {off}"),
            )
        };
        let consumed = match self.compression {
            Compression::Zstd => {
                let scan = frames::scan_bounded(&buf, &self.limits)?;
                let mut dec = FrameDecoder::bounded(self.limits.record());
                for f in &scan.frames {
                    events.extend(frame_events(
                        &mut dec,
                        &buf[f.start as usize..f.end as usize],
                        off + f.start,
                        (&self.limits, &budget, &path.display().to_string()),
                    )?);
                }
                scan.frames.last().map_or(0, |f| f.end)
            }
            Compression::None => match memchr::memrchr(b'\n', &buf) {
                Some(nl) => {
                    events_of_lines(&buf[..=nl], &mut events, &budget).map_err(over)?;
                    nl as u64 + 1
                }
                None => 0,
            },
        };
        events.retain(|e| e.seq >= cursor.next_seq);
        if let Some(last) = events.last() {
            cursor.next_seq = last.seq + 1;
        }
        cursor.offset = Some((identity.dev, identity.ino, off + consumed));
        Ok(events)
    }
}
