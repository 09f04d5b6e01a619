//! The torn-tail rules over decoded rows (SPEC §4.3), for every row store:
//! a row that fails to decode or breaks contiguity at or before the last row
//! holding a `turn/end` is corruption; after it, it starts the torn tail.
//!
//! Also the two read shapes built on them: the pipelined full read
//! ([`read_pipelined`]: rows are decoded on a second thread while the
//! backend still fetches) and the seeking suffix read ([`scan_suffix`]).
//!
//! Every read decodes its rows under the store's bounds ([`ReadCtx`]): a
//! row whose record is longer than `maxRecordBytes`, or a read whose
//! decoded rows go past `maxLogBytes`, fails the read wherever the row is
//! (never a torn tail).

use crate::backend::EventSink;
use crate::backend::limits::{self, Budget, Limits};
use crate::codec::chunk_rows::{PackLimits, Record};
use crate::error::{Error, Result};
use crate::model::event::Event;
use crate::model::json::quote;

use super::seal::{RowSeal, SealPart};
use super::{RowBounds, RowFailure, StoredRow, decode_row, decode_row_bounded};

/// The bounds of one read of one session (shared by its threads).
pub struct ReadCtx<'a> {
    pub limits: &'a Limits,
    pub budget: Budget,
    /// The store's label (`session database at "…"`), named in errors.
    pub label: &'a str,
    pub id: &'a str,
}

impl<'a> ReadCtx<'a> {
    pub fn new(limits: &'a Limits, label: &'a str, id: &'a str) -> Self {
        ReadCtx {
            limits,
            budget: limits.budget(),
            label,
            id,
        }
    }

    /// The decoded bytes of the rows read so far.
    pub fn log_bytes(&self) -> u64 {
        self.budget.used()
    }

    fn bounds(&self) -> RowBounds<'_> {
        RowBounds {
            limits: self.limits,
            budget: &self.budget,
        }
    }
}

/// The subject of a limit error: the store and the session.
pub fn limit_subject(label: &str, id: &str) -> String {
    format!("{label}: session {}", quote(id))
}

/// The error of a row that went past a limit while it was decoded.
pub fn row_limit_error(limits: &Limits, label: &str, id: &str, seq: i64, f: &RowFailure) -> Error {
    let subject = limit_subject(label, id);
    match f {
        RowFailure::Column(m) => Error::corruption(format!(
            "{subject}: the events row at seq {seq} is damaged: {m}"
        )),
        RowFailure::LogLimit => limits.log_error(&subject, &format!("at the row at seq {seq}")),
        RowFailure::ExpansionLimit(members) => limits.log_error(
            &subject,
            &limits::expansion_place(&format!("at the row at seq {seq}"), *members),
        ),
        _ => limits.record_error(&subject, &format!("of the row at seq {seq}")),
    }
}

/// The corruption of a committed row (SPEC §4.3 wording).
pub fn invalid_committed_row(seq: i64) -> Error {
    Error::corruption(format!(
        "corrupt session log: invalid committed physical row at seq {seq}"
    ))
}

/// Applies the last-turn/end rule to decoded rows (ordered by seq) whose
/// first record must start at `start`: a row that fails to decode or breaks
/// contiguity at or before the last row holding a `turn/end` is corruption;
/// after it, it starts the torn tail. Returns the intact events and the seq
/// of the first torn row.
pub fn scan_rows(
    decoded: Vec<(i64, std::result::Result<Record, String>)>,
    start: u64,
) -> Result<(Vec<Event>, Option<i64>)> {
    let last_turn_end = decoded
        .iter()
        .rposition(|(_, r)| matches!(r, Ok(rec) if rec.is_turn_end()));
    let mut expected = start;
    let mut events = Vec::with_capacity(decoded.len());
    for (i, (seq, decoded)) in decoded.into_iter().enumerate() {
        match decoded {
            Ok(rec) if rec.first_seq() == expected => {
                expected += rec.member_count();
                rec.into_events(&mut events);
            }
            _ => {
                if last_turn_end.is_some_and(|t| i <= t) {
                    return Err(invalid_committed_row(seq));
                }
                return Ok((events, Some(seq)));
            }
        }
    }
    Ok((events, None))
}

type Decoded = Vec<(i64, std::result::Result<Record, String>)>;

/// Decodes rows under the read's bounds; a row past a limit fails it.
fn decode_all(rows: Vec<StoredRow>, ctx: &ReadCtx<'_>) -> Result<Decoded> {
    let bounds = ctx.bounds();
    rows.into_iter()
        .map(|r| match decode_row_bounded(&r, &bounds) {
            Ok(rec) => Ok((r.seq, Ok(rec))),
            Err(RowFailure::Invalid(m)) => Ok((r.seq, Err(m))),
            Err(f) => Err(row_limit_error(ctx.limits, ctx.label, ctx.id, r.seq, &f)),
        })
        .collect()
}

/// One fetched row, decoded and judged on its own.
struct RowInfo {
    seq: i64,
    /// A decoded record: its first seq, member count, and whether it is a
    /// `turn/end`; `None` when the row does not decode.
    record: Option<(u64, u64, bool)>,
    /// The length of the stretch's events once this row's were added.
    events_end: usize,
}

/// A stretch of rows decoded and expanded (not yet judged).
#[derive(Default)]
struct DecodedRows {
    infos: Vec<RowInfo>,
    events: Vec<Event>,
    /// A row past a read limit: decoding stopped there, and the read fails.
    limit: Option<Error>,
}

fn decode_expand(rows: Vec<StoredRow>, ctx: &ReadCtx<'_>) -> DecodedRows {
    let mut out = DecodedRows {
        infos: Vec::with_capacity(rows.len()),
        events: Vec::with_capacity(rows.len()),
        limit: None,
    };
    decode_expand_ref(&rows, &mut out, ctx);
    out
}

/// Decodes and expands borrowed `rows` after those already in `out` (the
/// rows are freed by the caller).
fn decode_expand_ref(rows: &[StoredRow], out: &mut DecodedRows, ctx: &ReadCtx<'_>) {
    let bounds = ctx.bounds();
    for row in rows {
        if out.limit.is_some() {
            return;
        }
        let seq = row.seq;
        let record = match decode_row_bounded(row, &bounds) {
            Ok(rec) => {
                let info = (rec.first_seq(), rec.member_count(), rec.is_turn_end());
                rec.into_events(&mut out.events);
                Some(info)
            }
            Err(RowFailure::Invalid(_)) => None,
            Err(f) => {
                out.limit = Some(row_limit_error(ctx.limits, ctx.label, ctx.id, seq, &f));
                return;
            }
        };
        out.infos.push(RowInfo {
            seq,
            record,
            events_end: out.events.len(),
        });
    }
}

/// The reference split read decodes logs of at least this many rows on two
/// threads.
#[cfg(test)]
pub(crate) const PARALLEL_MIN_ROWS: usize = 512;

/// [`scan_rows`] over a whole log (first seq 0), decoding and expanding
/// the two halves of a large log on two threads; the same outcome.
#[cfg(test)]
pub(crate) fn scan_all_rows(
    mut rows: Vec<StoredRow>,
    parallel_min: usize,
) -> Result<(Vec<Event>, Option<i64>)> {
    let limits = Limits::default();
    let ctx = ReadCtx::new(&limits, "test", "test");
    let parts = if rows.len() >= parallel_min.max(2) {
        let second = rows.split_off(rows.len() / 2);
        let (a, b) = crate::backend::parallel::join(
            || decode_expand(rows, &ctx),
            || decode_expand(second, &ctx),
        );
        vec![a, b?]
    } else {
        vec![decode_expand(rows, &ctx)]
    };
    judge_parts(parts)
}

/// The outcome of [`scan_rows`] over decoded stretches of a whole log (first
/// seq 0), given in row order: the last-turn/end rule, then contiguity.
fn judge_parts(mut parts: Vec<DecodedRows>) -> Result<(Vec<Event>, Option<i64>)> {
    // A row past a limit fails the read wherever it is (never a torn tail).
    if let Some(e) = parts.iter_mut().find_map(|p| p.limit.take()) {
        return Err(e);
    }
    let last_turn_end = parts
        .iter()
        .flat_map(|p| p.infos.iter())
        .enumerate()
        .filter(|(_, i)| matches!(i.record, Some((_, _, true))))
        .map(|(n, _)| n)
        .last();
    let mut expected = 0u64;
    let mut index = 0usize;
    let mut events: Vec<Event> = Vec::new();
    for mut part in parts {
        let mut keep = 0;
        let mut torn = None;
        for info in &part.infos {
            match info.record {
                Some((first, count, _)) if first == expected => {
                    expected += count;
                    keep = info.events_end;
                }
                _ => {
                    if last_turn_end.is_some_and(|t| index <= t) {
                        return Err(invalid_committed_row(info.seq));
                    }
                    torn = Some(info.seq);
                    break;
                }
            }
            index += 1;
        }
        part.events.truncate(keep);
        if events.is_empty() {
            events = part.events;
        } else {
            events.append(&mut part.events);
        }
        if torn.is_some() {
            return Ok((events, torn));
        }
    }
    Ok((events, None))
}

/// Rows per stretch handed to the decoding thread by [`read_pipelined`].
pub(crate) const PIPELINE_CHUNK_ROWS: usize = 128;

/// What [`read_pipelined`] returns: the fetch's own value (the session
/// row), the intact events, the seq of the first torn row, and the decoded
/// size of the rows read (as counted against `maxLogBytes`).
pub type PipelinedRead<S> = (S, Vec<Event>, Option<i64>, u64);

/// Reads and decodes a whole log (first seq 0) while it is fetched:
/// `fetch` hands every row, in seq order, to the sink it is given, and
/// returns what else it read (the session row), or `None` when the session
/// is not stored. Once the first `PIPELINE_CHUNK_ROWS` rows arrived, a
/// second thread decodes stretches of rows while `fetch` goes on; then both
/// decode what is left, this thread from the end. Work is shared by
/// stretches, not halves, so a busy CPU slows the read instead of stalling
/// it. Returns `fetch`'s value, the intact events and the seq of the first
/// torn row: the outcome of [`scan_rows`] from seq 0. `fetch`'s errors
/// come out as they are. Rows are decoded under `ctx`'s bounds. With
/// `seal`, the rows read are sealed into it too (after the rows it holds,
/// on both threads: see [`SealPart`]), for the append checkpoint.
pub fn read_pipelined<S, E, F>(
    ctx: &ReadCtx<'_>,
    seal: Option<&mut RowSeal>,
    fetch: F,
) -> std::result::Result<Option<PipelinedRead<S>>, E>
where
    F: FnOnce(&mut dyn FnMut(StoredRow)) -> std::result::Result<Option<S>, E>,
    E: From<Error>,
{
    let queue = crate::backend::parallel::StretchQueue::default();
    // Each thread seals what it decodes: the worker one part (its
    // stretches are a prefix, taken in order), this thread one part per
    // stretch (taken from the end); joined in seq order at the end.
    let blank = seal.as_deref().map(RowSeal::part);
    // The fetch loop checks the caller's cancel token; the decoding worker
    // has no checkpoint (it ends when the fetch does).
    std::thread::scope(|scope| {
        // Closes the queue on every way out, so the worker always ends.
        let _close = queue.closer();
        let mut worker = None;
        let mut pending: Vec<StoredRow> = Vec::with_capacity(PIPELINE_CHUNK_ROWS);
        let fetched = {
            let mut sink = |row: StoredRow| {
                pending.push(row);
                if pending.len() == PIPELINE_CHUNK_ROWS {
                    let full =
                        std::mem::replace(&mut pending, Vec::with_capacity(PIPELINE_CHUNK_ROWS));
                    queue.push(full);
                    if worker.is_none() {
                        worker = Some(
                            std::thread::Builder::new()
                                .name("dsh-read".into())
                                .spawn_scoped(scope, || {
                                    let mut front = DecodedRows::default();
                                    let mut part = blank.clone();
                                    // The rows were allocated by the fetching
                                    // thread: they are freed only once all is
                                    // decoded.
                                    let mut done = Vec::new();
                                    while let Some(rows) = queue.pop_front() {
                                        decode_expand_ref(&rows, &mut front, ctx);
                                        seal_stretch(&mut part, &rows);
                                        done.push(rows);
                                    }
                                    (front, done, part)
                                }),
                        );
                    }
                }
            };
            fetch(&mut sink)
        };
        if !pending.is_empty() {
            queue.push(std::mem::take(&mut pending));
        }
        queue.close();
        // This thread decodes from the end; the worker took a prefix.
        let mut back = Vec::new();
        let mut back_parts = Vec::new();
        while let Some(rows) = queue.pop_back() {
            let mut part = blank.clone();
            seal_stretch(&mut part, &rows);
            back_parts.push(part);
            back.push(decode_expand(rows, ctx));
        }
        let front = match worker {
            Some(Ok(handle)) => Some(
                handle
                    .join()
                    .map_err(|_| E::from(Error::invariant("a read worker panicked")))?,
            ),
            // No thread: nothing was taken from the front.
            Some(Err(_)) | None => None,
        };
        let Some(fetched) = fetched? else {
            return Ok(None);
        };
        let mut parts = Vec::with_capacity(back.len() + 1);
        let mut seal_parts = Vec::with_capacity(back_parts.len() + 1);
        if let Some((front, done, part)) = front {
            parts.push(front);
            seal_parts.push(part);
            drop(done);
        }
        parts.extend(back.into_iter().rev());
        seal_parts.extend(back_parts.into_iter().rev());
        let (events, torn) = judge_parts(parts)?;
        if let Some(seal) = seal {
            for part in seal_parts.iter().flatten() {
                seal.join(part);
            }
        }
        Ok(Some((fetched, events, torn, ctx.log_bytes())))
    })
}

/// Seals `rows` into `part`, when the read seals.
fn seal_stretch(part: &mut Option<SealPart>, rows: &[StoredRow]) {
    if let Some(part) = part {
        for row in rows {
            part.feed(row);
        }
    }
}

/// What [`fold_rows`] returns: the fetch's own value (the session
/// row), how many events it handed on, the seq of the first torn row, and
/// the decoded size of the rows read.
pub type FoldedRead<S> = (S, u64, Option<i64>, u64);

/// The folding form of [`read_pipelined`] ([`crate::backend::Backend::read_folding`]),
/// not pipelined (a decoding thread beside the fetch cost twice the CPU for
/// the same time): every `PIPELINE_CHUNK_ROWS` rows fetched are decoded, judged and their
/// intact events handed to `sink` at once, on this thread (nothing is kept:
/// memory is a stretch of rows, not the log). The outcome is that of
/// [`read_pipelined`]: a row past a limit fails the read wherever it is;
/// the first row that does not decode or breaks contiguity starts the torn
/// tail, or is committed corruption when it or a later row holds a
/// `turn/end`. `sink` restarts first (a fetch that is run again after a
/// lost connection starts over).
pub fn fold_rows<S, E, F>(
    ctx: &ReadCtx<'_>,
    sink: &mut dyn EventSink,
    fetch: F,
) -> std::result::Result<Option<FoldedRead<S>>, E>
where
    F: FnOnce(&mut dyn FnMut(StoredRow)) -> std::result::Result<Option<S>, E>,
    E: From<Error>,
{
    fold_in_stretches(ctx, sink, fetch, PIPELINE_CHUNK_ROWS)
}

/// [`fold_rows`] with stretches of `stretch` rows.
fn fold_in_stretches<S, E, F>(
    ctx: &ReadCtx<'_>,
    sink: &mut dyn EventSink,
    fetch: F,
    stretch: usize,
) -> std::result::Result<Option<FoldedRead<S>>, E>
where
    F: FnOnce(&mut dyn FnMut(StoredRow)) -> std::result::Result<Option<S>, E>,
    E: From<Error>,
{
    sink.restart();
    let mut judge = FoldJudge::default();
    // One buffer of rows and one of decoded events for every stretch.
    let mut pending: Vec<StoredRow> = Vec::with_capacity(stretch);
    let mut part = DecodedRows::default();
    let mut step = |pending: &mut Vec<StoredRow>, part: &mut DecodedRows| {
        decode_expand_ref(pending, part, ctx);
        pending.clear();
        judge.stretch(part, sink);
        part.infos.clear();
        part.events.clear();
    };
    let fetched = fetch(&mut |row: StoredRow| {
        pending.push(row);
        if pending.len() == stretch {
            step(&mut pending, &mut part);
        }
    })?;
    let Some(fetched) = fetched else {
        return Ok(None);
    };
    if !pending.is_empty() {
        step(&mut pending, &mut part);
    }
    let (handed, torn) = judge.finish()?;
    Ok(Some((fetched, handed, torn, ctx.log_bytes())))
}

/// The rules of [`judge_parts`] applied stretch by stretch, in row order,
/// without keeping the events.
#[derive(Default)]
struct FoldJudge {
    expected: u64,
    /// The seq of the first row that does not decode or breaks contiguity.
    bad: Option<i64>,
    /// That row, or a later one, holds a `turn/end`.
    turn_end_from_bad: bool,
    /// The first row past a read limit.
    limit: Option<Error>,
    handed: u64,
}

impl FoldJudge {
    fn stretch(&mut self, part: &mut DecodedRows, sink: &mut dyn EventSink) {
        if self.limit.is_some() {
            return;
        }
        let mut keep = 0;
        for info in &part.infos {
            if self.bad.is_some() {
                self.turn_end_from_bad |= matches!(info.record, Some((_, _, true)));
                continue;
            }
            match info.record {
                Some((first, count, _)) if first == self.expected => {
                    self.expected += count;
                    keep = info.events_end;
                }
                other => {
                    self.bad = Some(info.seq);
                    self.turn_end_from_bad = matches!(other, Some((_, _, true)));
                }
            }
        }
        if let Some(e) = part.limit.take() {
            self.limit = Some(e);
            return;
        }
        part.events.truncate(keep);
        if !part.events.is_empty() {
            self.handed += part.events.len() as u64;
            sink.events(&mut part.events);
        }
    }

    fn finish(self) -> Result<(u64, Option<i64>)> {
        if let Some(e) = self.limit {
            return Err(e);
        }
        match self.bad {
            Some(seq) if self.turn_end_from_bad => Err(invalid_committed_row(seq)),
            torn => Ok((self.handed, torn)),
        }
    }
}

/// The lowest seq a suffix read for `k` must fetch: the rows with
/// `seq >= k`, and the packed rows (`ignorable = 0`) from this seq on that
/// may cover `k` (a packed row holds at most `max_members` events).
pub fn suffix_lookback_seq(k: u64) -> (i64, i64) {
    let k_sql = i64::try_from(k).unwrap_or(i64::MAX);
    let lookback = PackLimits::SQLITE.max_members as i64 - 1;
    (k_sql.saturating_sub(lookback), k_sql)
}

/// Decodes the rows a suffix read fetched for `k` (see
/// [`suffix_lookback_seq`]; ordered by seq): the events with `seq >= k`.
/// The last-turn/end rule applies to the rows read; a torn tail is dropped.
/// A fetched packed row before `k` that does not decode fails the read.
/// Rows are decoded under `ctx`'s bounds.
pub fn scan_suffix(rows: Vec<StoredRow>, k: u64, ctx: &ReadCtx<'_>) -> Result<Vec<Event>> {
    let k_sql = i64::try_from(k).unwrap_or(i64::MAX);
    let mut decoded = decode_all(rows, ctx)?;
    let before = decoded.iter().take_while(|(seq, _)| *seq < k_sql).count();
    // A packed row before k that does not decode may cover k: the read
    // fails closed, as the original's does (DIFFERENCES A.1 #14), instead
    // of returning a suffix that may lack its first events.
    if let Some((seq, _)) = decoded[..before].iter().find(|(_, r)| r.is_err()) {
        return Err(invalid_committed_row(*seq));
    }
    // Of the packed rows before k, keep only one that covers k.
    let cover = decoded[..before]
        .iter()
        .rposition(|(_, r)| matches!(r, Ok(rec) if rec.first_seq() + rec.member_count() > k));
    let mut suffix = decoded.split_off(before);
    let start = match cover {
        Some(i) => {
            let row = decoded.swap_remove(i);
            let first = row.1.as_ref().map_or(k, Record::first_seq);
            suffix.insert(0, row);
            first
        }
        None => k,
    };
    let (mut events, _torn) = scan_rows(suffix, start)?;
    events.retain(|e| e.seq >= k);
    Ok(events)
}

/// The last logical seq of session `id` from its last row (an append
/// continues after it). A last row that does not decode must be repaired
/// by a load first: a conflict.
pub fn last_logical_seq_of(id: &str, row: StoredRow) -> Result<u64> {
    let seq = row.seq;
    let rec = decode_row(row).map_err(|why| {
        Error::conflict(format!(
            "session {} ends in an undecodable row at seq {seq} ({why}); load the session to repair it before appending",
            quote(id)
        ))
    })?;
    Ok(rec.first_seq() + rec.member_count() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::rows::{Value, encode_record};
    use crate::codec::chunk_rows::pack;

    fn event(ty: &str, seq: u64, data: &str) -> Event {
        Event::parse(&format!(
            r#"{{"type":"{ty}","seq":{seq},"time":{},"data":{data}}}"#,
            100 + seq
        ))
        .unwrap()
    }

    /// The rows of a few turns, each with a packed run of chunks.
    fn rows(turns: u64) -> Vec<StoredRow> {
        let mut events = Vec::new();
        for t in 1..=turns {
            events.push(event(
                "turn/start",
                events.len() as u64,
                &format!(r#"{{"turn":{t}}}"#),
            ));
            for k in 0..(4 + t % 3) {
                let data = format!(
                    r#"{{"turn":{t},"step":1,"chunk":{{"type":"text-delta","index":0,"text":"t{t}k{k}"}}}}"#
                );
                events.push(event("assistant/chunk", events.len() as u64, &data));
            }
            events.push(event(
                "turn/end",
                events.len() as u64,
                &format!(r#"{{"turn":{t}}}"#),
            ));
        }
        pack(&events, &PackLimits::SQLITE)
            .iter()
            .map(|r| {
                let enc = encode_record(r).unwrap();
                StoredRow {
                    seq: enc.seq,
                    event_type: Value::Text(enc.event_type),
                    time: enc.time,
                    data: enc.data,
                    source_event_seqs: enc.source_event_seqs.map_or(Value::Null, Value::Blob),
                    surface_op: enc.surface_op.map_or(Value::Null, Value::Text),
                    ignorable: enc.ignorable.map_or(Value::Null, Value::Integer),
                }
            })
            .collect()
    }

    fn show(r: Result<(Vec<Event>, Option<i64>)>) -> String {
        match r {
            Ok(v) => format!("{v:?}"),
            Err(e) => format!("error: {e}"),
        }
    }

    fn agree(rows: &[StoredRow], what: &str) {
        let limits = Limits::default();
        let ctx = ReadCtx::new(&limits, "test", "test");
        let want = show(decode_all(rows.to_vec(), &ctx).and_then(|d| scan_rows(d, 0)));
        assert_eq!(show(scan_all_rows(rows.to_vec(), 2)), want, "split, {what}");
        assert_eq!(
            show(scan_all_rows(rows.to_vec(), usize::MAX)),
            want,
            "one thread, {what}"
        );
        // A folding read, in stretches of 1, 2, 3 and all rows.
        struct Collect(Vec<Event>);
        impl EventSink for Collect {
            fn events(&mut self, events: &mut Vec<Event>) {
                self.0.append(events);
            }
            fn restart(&mut self) {
                self.0.clear();
            }
        }
        for stretch in [1, 2, 3, PIPELINE_CHUNK_ROWS] {
            let ctx = ReadCtx::new(&limits, "test", "test");
            let mut sink = Collect(vec![
                Event::parse(r#"{"type":"x","seq":0,"time":0,"data":1}"#).unwrap(),
            ]);
            let r = fold_in_stretches::<(), Error, _>(
                &ctx,
                &mut sink,
                |f| {
                    for row in rows.iter().cloned() {
                        f(row);
                    }
                    Ok(Some(()))
                },
                stretch,
            );
            let got = show(r.map(|opt| {
                let ((), handed, torn, _) = opt.expect("stored");
                assert_eq!(handed, sink.0.len() as u64);
                (std::mem::take(&mut sink.0), torn)
            }));
            assert_eq!(got, want, "folding in stretches of {stretch}, {what}");
        }
    }

    #[test]
    fn split_decoding_matches_scan_rows() {
        let clean = rows(9);
        assert!(clean.len() >= 4);
        agree(&clean, "clean");
        agree(&clean[..1], "one row");
        agree(&[], "empty");
        for i in 0..clean.len() {
            let mut m = clean.clone();
            m[i].data = Value::Text("{not json".into());
            agree(&m, &format!("bad row {i}"));
            let mut m = clean.clone();
            m.remove(i);
            agree(&m, &format!("missing row {i}"));
            let mut m = clean[..=i].to_vec();
            m[i].data = Value::Null;
            agree(&m, &format!("bad last row {i}"));
            for cut in [i, clean.len()] {
                let mut m = clean[..cut].to_vec();
                m.push(clean[i].clone());
                agree(&m, &format!("repeated row {i} at {cut}"));
            }
        }
    }
}
