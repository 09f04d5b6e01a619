//! The event rows of schema 17 (SPEC §4.2), shared by every backend that
//! stores them: SQLite (`src/backend/sqlite/`) and PostgreSQL
//! (`src/backend/postgres/`). One encoding, one decoding and one set of
//! torn-tail rules ([`scan`]), so a log moves between the two without a byte
//! changing.
//!
//! A scalar row holds one event; a packed row (`ignorable = 0`) holds one
//! chunk-row of the codec (SPEC §2). `data` is TEXT, or a zstd BLOB when the
//! text is at least [`COMPRESS_MIN_BYTES`] long and compresses smaller.
//! `source_event_seqs` is a varint BLOB ([`varint`]).
//!
//! Stored bytes are untrusted: a row's size is bounded by `maxRecordBytes`
//! (checked before anything is copied, `FetchBounds`, and while a BLOB
//! decompresses) and counted against the read's `maxLogBytes`
//! ([`crate::backend::limits`]); TEXT that is not valid UTF-8 is read with
//! U+FFFD in place of each bad sequence (`lossy_string`), as the
//! original's SQLite driver reads it (PostgreSQL stores only valid UTF-8).
//!
//! Files: this one (row values, encoding, decoding), [`varint`], [`scan`]
//! (the last-turn/end rule over decoded rows, the pipelined full read, the
//! seeking suffix read), [`checks`] (the append and repair preconditions),
//! [`seal`] (the digest an append checkpoint of a row store is proved by).

pub mod checks;
pub mod intact_prefix;
pub mod scan;
pub mod seal;
pub mod varint;
pub mod window;

use crate::backend::limits::{self, Budget, Limits};
use crate::codec::chunk_rows::{PackedRow, Record};
use crate::model::event::{Event, EventType, KeyOrder};
use crate::model::json::{self, JsonText, MAX_SAFE_INTEGER};

/// One column value as a row store holds it (SQLite's storage classes; the
/// PostgreSQL backend maps its typed columns onto these).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v)
    }
}

impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Value {
        Value::Blob(v)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Integer(v)
    }
}

/// `data` text of at least this many UTF-8 bytes is a compression candidate.
pub const COMPRESS_MIN_BYTES: usize = 4096;

/// Zstandard level of `data` BLOBs.
pub const COMPRESSION_LEVEL: i32 = 3;

/// Decompressed size cap of a packed row's `data` (the 1 MiB row bound).
pub const PACKED_DATA_CAP: usize = 1024 * 1024;

/// Decompressed size cap of a scalar row's `data` when no store limits
/// apply (single-row decodes); reads cap it at `maxRecordBytes`.
pub const SCALAR_DATA_CAP: usize = crate::backend::limits::DEFAULT_MAX_RECORD_BYTES as usize;

/// The `ignorable` value marking a packed row.
pub const PACKED_MARKER: i64 = 0;

/// One `events` row as stored (the columns after `session_id`).
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRow {
    pub seq: i64,
    pub event_type: Value,
    pub time: i64,
    pub data: Value,
    pub source_event_seqs: Value,
    pub surface_op: Value,
    pub ignorable: Value,
}

impl StoredRow {
    /// Whether this row is marked as packed (`ignorable = 0`).
    pub fn is_packed(&self) -> bool {
        matches!(self.ignorable, Value::Integer(PACKED_MARKER))
    }

    /// The bytes its texts and blobs store (`data` and the others).
    pub fn stored_len(&self) -> u64 {
        let data = match &self.data {
            Value::Text(t) => t.len(),
            Value::Blob(b) => b.len(),
            _ => 0,
        };
        (fixed_len(self) + data) as u64
    }
}

/// The column values of one row to insert.
#[derive(Clone, Debug, PartialEq)]
pub struct EncodedRow {
    pub seq: i64,
    pub event_type: String,
    pub time: i64,
    pub data: Value,
    pub source_event_seqs: Option<Vec<u8>>,
    pub surface_op: Option<String>,
    pub ignorable: Option<i64>,
    /// What a read of this row counts against `maxLogBytes` (`read_charge`
    /// of its type and surface columns as stored and its decoded `data`):
    /// the writer adds it to the log's size count, so a store that wrote a
    /// log and one that read it count the same.
    pub charge: u64,
}

impl From<EncodedRow> for StoredRow {
    /// The row as a read fetches it back (what [`seal::RowSeal`] seals).
    fn from(r: EncodedRow) -> StoredRow {
        StoredRow {
            seq: r.seq,
            event_type: Value::Text(r.event_type),
            time: r.time,
            data: r.data,
            source_event_seqs: r.source_event_seqs.into(),
            surface_op: r.surface_op.into(),
            ignorable: r.ignorable.into(),
        }
    }
}

/// `data` as TEXT, or as a zstd BLOB when that is smaller (SPEC §4.2).
pub fn encode_data(text: &str) -> Value {
    if text.len() >= COMPRESS_MIN_BYTES {
        if let Some(blob) = compress_like_node(text.as_bytes()) {
            if blob.len() < text.len() {
                return Value::Blob(blob);
            }
        }
    }
    Value::Text(text.to_string())
}

/// Output chunk of Node's `zlib.zstdCompressSync` (`Z_DEFAULT_CHUNK`).
const NODE_OUT_CHUNK: usize = 16 * 1024;

/// The bytes the original's `zstdCompressSync(bytes, {params: {level 3}})`
/// writes: one `ZSTD_compressStream2` call per 16 KiB output chunk with
/// `ZSTD_e_end` and the whole input, repeated while a call fills its chunk.
/// One-shot compression gives other bytes for large inputs (over about
/// 1 MiB the internal buffering differs; DIFFERENCES A.2 #21), so this
/// replays Node's loop exactly, including its one quirk: a frame that ends
/// exactly at a chunk boundary is followed by an empty frame.
fn compress_like_node(input: &[u8]) -> Option<Vec<u8>> {
    use zstd::zstd_safe::{CCtx, CParameter, InBuffer, OutBuffer, zstd_sys::ZSTD_EndDirective};
    let mut cctx = CCtx::create();
    cctx.set_parameter(CParameter::CompressionLevel(COMPRESSION_LEVEL))
        .ok()?;
    let mut out = Vec::with_capacity(input.len() / 4 + NODE_OUT_CHUNK);
    let mut inb = InBuffer::around(input);
    let mut chunk = vec![0u8; NODE_OUT_CHUNK];
    loop {
        let mut ob = OutBuffer::around(&mut chunk[..]);
        cctx.compress_stream2(&mut ob, &mut inb, ZSTD_EndDirective::ZSTD_e_end)
            .ok()?;
        let n = ob.pos();
        out.extend_from_slice(&chunk[..n]);
        if n < NODE_OUT_CHUNK {
            return Some(out);
        }
    }
}

thread_local! {
    static DECODER: std::cell::RefCell<zstd::zstd_safe::DCtx<'static>> =
        std::cell::RefCell::new(zstd::zstd_safe::DCtx::create());
}

/// Why a BLOB did not inflate.
enum Inflate {
    /// It decodes to more than the cap.
    TooLong,
    /// The message of a bad frame, or of a refused allocation.
    Bad(String),
}

/// Decompresses one zstd frame into at most `cap` bytes, in steps, with a
/// buffer that never reserves much past the cap.
fn inflate(blob: &[u8], cap: usize) -> Result<Vec<u8>, Inflate> {
    use zstd::zstd_safe::{InBuffer, OutBuffer, ResetDirective};
    const STEP: usize = 64 * 1024;
    DECODER.with(|ctx| {
        // One decoding context per thread, reused: creating one per row
        // costs large allocations (and, on two threads, their unmapping).
        let mut ctx = ctx.borrow_mut();
        let _ = ctx.reset(ResetDirective::SessionOnly);
        let mut out: Vec<u8> = Vec::new();
        let first = blob.len().saturating_mul(4).min(cap).max(STEP);
        crate::backend::limits::reserve_bounded(&mut out, first, cap)
            .map_err(|e| Inflate::Bad(e.to_string()))?;
        let mut input = InBuffer::around(blob);
        loop {
            crate::backend::limits::reserve_bounded(&mut out, STEP, cap)
                .map_err(|e| Inflate::Bad(e.to_string()))?;
            let before = out.len();
            let hint = {
                let mut ob = OutBuffer::around_pos(&mut out, before);
                ctx.decompress_stream(&mut ob, &mut input).map_err(|code| {
                    Inflate::Bad(format!(
                        "data BLOB does not decompress: {}",
                        zstd::zstd_safe::get_error_name(code)
                    ))
                })?
            };
            if out.len() > cap {
                return Err(Inflate::TooLong);
            }
            // Concatenated frames decode one after the other.
            if hint == 0 && input.pos() == blob.len() {
                return Ok(out);
            }
            if input.pos() == blob.len() && out.len() == before {
                return Err(Inflate::Bad(
                    "data BLOB does not decompress: the frame is truncated".into(),
                ));
            }
        }
    })
}

/// The JSON text of `data`, decompressing a BLOB (output capped at `cap`
/// bytes) and requiring valid UTF-8.
pub fn decode_data(value: Value, cap: usize) -> Result<String, String> {
    match value {
        Value::Text(t) => Ok(t),
        other => decode_data_ref(&other, cap).map(std::borrow::Cow::into_owned),
    }
}

/// [`decode_data`] of a borrowed value: TEXT is borrowed, not copied.
pub fn decode_data_ref(value: &Value, cap: usize) -> Result<std::borrow::Cow<'_, str>, String> {
    decode_data_capped(value, cap).map_err(|f| match f {
        RowFailure::Invalid(m) | RowFailure::Column(m) => m,
        RowFailure::RecordLimit | RowFailure::LogLimit | RowFailure::ExpansionLimit(_) => {
            format!("data BLOB decompresses to more than {cap} bytes")
        }
    })
}

/// `data` as text; more than `cap` bytes is a [`RowFailure::RecordLimit`].
fn decode_data_capped(value: &Value, cap: usize) -> Result<std::borrow::Cow<'_, str>, RowFailure> {
    match value {
        Value::Text(t) if t.len() > cap => Err(RowFailure::RecordLimit),
        Value::Text(t) => Ok(std::borrow::Cow::Borrowed(t)),
        Value::Blob(b) => match inflate(b, cap) {
            Ok(out) => String::from_utf8(out)
                .map(std::borrow::Cow::Owned)
                .map_err(|e| RowFailure::Invalid(format!("data BLOB is not valid UTF-8: {e}"))),
            Err(Inflate::TooLong) => Err(RowFailure::RecordLimit),
            Err(Inflate::Bad(m)) => Err(RowFailure::Invalid(m)),
        },
        Value::Null => Err(RowFailure::Invalid("data is NULL".into())),
        Value::Integer(_) | Value::Real(_) => Err(RowFailure::Invalid(
            "data is a number, not JSON text".into(),
        )),
    }
}

/// Why a row did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowFailure {
    /// Malformed (a torn tail or corruption, by its place in the log).
    Invalid(String),
    /// Its record is longer than `maxRecordBytes`: always an error.
    RecordLimit,
    /// The read's decoded bytes went past `maxLogBytes`: always an error.
    LogLimit,
    /// The events of a packed row of this many members took the read's
    /// count past `maxLogBytes` ([`limits::expansion_charge`]): always an
    /// error.
    ExpansionLimit(u64),
    /// A column the original's `decodeEventRow` refuses (a `type` that is
    /// not non-empty TEXT, a `seq` or `time` that is not a safe integer,
    /// `data` that is not TEXT or BLOB, `source_event_seqs` or
    /// `surface_op` of the wrong storage class): a damaged row, always an
    /// error for the whole read, never a torn tail (DIFFERENCES A.1 #13).
    Column(String),
}

/// The bounds a read decodes its rows under.
#[derive(Debug)]
pub struct RowBounds<'a> {
    pub limits: &'a Limits,
    pub budget: &'a Budget,
}

/// Encodes one record as a row.
pub fn encode_record(record: &Record) -> Result<EncodedRow, String> {
    match record {
        Record::Packed(row) => Ok(EncodedRow {
            seq: row.seq0() as i64,
            event_type: row.tag().to_string(),
            time: row.time0(),
            data: encode_data(row.data_json()),
            source_event_seqs: None,
            surface_op: None,
            ignorable: Some(PACKED_MARKER),
            charge: read_charge(row.tag().len(), row.data_json().len())
                .saturating_add(limits::expansion_charge(record)),
        }),
        Record::Event(e) => {
            let source_event_seqs = match e.source_event_seqs() {
                None => None,
                Some(text) => Some(varint::encode(&parse_seqs(text.as_str()).ok_or_else(
                    || {
                        format!(
                            "event at seq {} has sourceEventSeqs {} that is not an array of non-negative safe integers",
                            e.seq,
                            text.as_str()
                        )
                    },
                )?)),
            };
            if e.seq > MAX_SAFE_INTEGER as u64 {
                return Err(format!("event seq {} is not a safe integer", e.seq));
            }
            let surface_op = e.surface_op().map(|t| t.as_str().to_string());
            let fixed = e.type_str().len()
                + surface_op.as_ref().map_or(0, String::len)
                + source_event_seqs.as_ref().map_or(0, Vec::len);
            Ok(EncodedRow {
                seq: e.seq as i64,
                event_type: e.type_str().to_string(),
                time: e.time,
                data: encode_data(e.data.as_str()),
                source_event_seqs,
                surface_op,
                ignorable: e.ignorable.then_some(1),
                charge: read_charge(fixed, e.data.as_str().len()),
            })
        }
    }
}

fn parse_seqs(text: &str) -> Option<Vec<u64>> {
    json::array_items(text)
        .ok()?
        .into_iter()
        .map(json::as_safe_uint)
        .collect()
}

fn safe_seq(seq: i64) -> Result<u64, String> {
    if (0..=MAX_SAFE_INTEGER).contains(&seq) {
        Ok(seq as u64)
    } else {
        Err(format!("seq {seq} is not a non-negative safe integer"))
    }
}

fn safe_time(time: i64) -> Result<i64, String> {
    if time.unsigned_abs() <= MAX_SAFE_INTEGER as u64 {
        Ok(time)
    } else {
        Err(format!("time {time} is not a safe integer"))
    }
}

fn json_text(text: &str, column: &str) -> Result<JsonText, String> {
    let mut s = json::Scanner::new(text);
    s.skip_value()
        .and_then(|_| s.expect_end())
        .map_err(|e| format!("{column} is not valid JSON: {e}"))?;
    Ok(JsonText::from_trusted(text))
}

/// Decodes a stored row into a record. The error says what is malformed.
pub fn decode_row(row: StoredRow) -> Result<Record, String> {
    decode_row_ref(&row)
}

/// [`decode_row`] of a borrowed row under the default limits (one row: no
/// log count).
pub fn decode_row_ref(row: &StoredRow) -> Result<Record, String> {
    let limits = Limits::default();
    let budget = Budget::unlimited();
    decode_row_bounded(
        row,
        &RowBounds {
            limits: &limits,
            budget: &budget,
        },
    )
    .map_err(|f| match f {
        RowFailure::Invalid(m) | RowFailure::Column(m) => m,
        RowFailure::RecordLimit => format!(
            "the row holds a record of more than {} bytes",
            limits.max_record_bytes
        ),
        RowFailure::LogLimit | RowFailure::ExpansionLimit(_) => {
            "the log is over its size limit".into()
        }
    })
}

/// The record size of a row beyond its `data`: type, surface op and source
/// seqs as stored.
fn fixed_len(row: &StoredRow) -> usize {
    let len = |v: &Value| match v {
        Value::Text(t) => t.len(),
        Value::Blob(b) => b.len(),
        _ => 0,
    };
    len(&row.event_type) + len(&row.surface_op) + len(&row.source_event_seqs)
}

/// The column checks of the original's `decodeEventRow`, in its words: a
/// row failing them is damaged ([`RowFailure::Column`]).
fn check_columns(row: &StoredRow) -> Result<(), RowFailure> {
    let fail = |m: String| Err(RowFailure::Column(m));
    match &row.event_type {
        Value::Text(t) if t.is_empty() => return fail("stored type must not be empty".into()),
        Value::Text(_) => {}
        _ => return fail("stored type must be a string".into()),
    }
    if safe_seq(row.seq).is_err() {
        return fail(format!(
            "stored seq must be a non-negative safe integer, got {}",
            row.seq
        ));
    }
    if safe_time(row.time).is_err() {
        return fail(format!(
            "stored time {} is not a safe integer (RangeError)",
            row.time
        ));
    }
    if !matches!(row.data, Value::Text(_) | Value::Blob(_)) {
        return fail("stored data must be a string or blob".into());
    }
    if !matches!(row.source_event_seqs, Value::Null | Value::Blob(_)) {
        return fail("stored source_event_seqs must be a blob or null".into());
    }
    if !matches!(row.surface_op, Value::Null | Value::Text(_)) {
        return fail("stored surface_op must be a string or null".into());
    }
    Ok(())
}

/// What a read counts of a row against `maxLogBytes`: its type and surface
/// columns as stored and its decoded `data` (and, for a packed row, the
/// events it expands to: [`limits::expansion_charge`]).
fn read_charge(fixed: usize, data: usize) -> u64 {
    (fixed + data) as u64
}

/// [`decode_row`] of a borrowed row under a read's bounds: the record owns
/// copies of what it keeps, and the row's buffers stay with the caller. (A
/// decoding thread that freed rows another thread allocated would contend
/// with it for that thread's allocator arena.)
pub fn decode_row_bounded(row: &StoredRow, bounds: &RowBounds<'_>) -> Result<Record, RowFailure> {
    let fixed = fixed_len(row);
    let record_cap = bounds.limits.record();
    if fixed > record_cap {
        return Err(RowFailure::RecordLimit);
    }
    let invalid = RowFailure::Invalid;
    check_columns(row)?;
    let seq = safe_seq(row.seq).map_err(invalid)?;
    let time = safe_time(row.time).map_err(invalid)?;
    let Value::Text(type_name) = &row.event_type else {
        return Err(invalid("type is not TEXT".into()));
    };
    let charge = |data: usize| {
        if bounds.budget.charge(read_charge(fixed, data)) {
            Ok(())
        } else {
            Err(RowFailure::LogLimit)
        }
    };
    if row.is_packed() {
        if !matches!(row.source_event_seqs, Value::Null) || !matches!(row.surface_op, Value::Null) {
            return Err(invalid("packed row carries surface columns".into()));
        }
        let data = decode_data_ref(&row.data, PACKED_DATA_CAP).map_err(invalid)?;
        charge(data.len())?;
        let packed = Record::Packed(
            PackedRow::from_parts(type_name, seq, time, &data).map_err(|e| invalid(e.0))?,
        );
        // Counted before the row expands (see `expansion_charge`).
        if !bounds.budget.charge(limits::expansion_charge(&packed)) {
            return Err(RowFailure::ExpansionLimit(packed.member_count()));
        }
        return Ok(packed);
    }
    let ignorable = match row.ignorable {
        Value::Null => false,
        Value::Integer(1) => true,
        _ => return Err(invalid("ignorable is neither NULL, 0 nor 1".into())),
    };
    let text = decode_data_capped(&row.data, record_cap - fixed)?;
    charge(text.len())?;
    let data = json_text(&text, "data").map_err(invalid)?;
    drop(text);
    let source_event_seqs = match &row.source_event_seqs {
        Value::Null => None,
        Value::Blob(b) => Some(JsonText::from_trusted(
            varint::decode_to_json(b).map_err(|e| invalid(e.0))?,
        )),
        _ => return Err(invalid("source_event_seqs is not a BLOB".into())),
    };
    let surface_op = match &row.surface_op {
        Value::Null => None,
        Value::Text(t) => Some(json_text(t, "surface_op").map_err(invalid)?),
        _ => return Err(invalid("surface_op is not TEXT".into())),
    };
    let mut e = Event::new(EventType::new(type_name), seq, time, data);
    e.set_source_event_seqs(source_event_seqs);
    e.set_surface_op(surface_op);
    e.ignorable = ignorable;
    Ok(Record::Event(e))
}

/// Gives events just written as rows the envelope a read of those rows
/// rebuilds ([`decode_row_bounded`]: [`KeyOrder::LIVE`]); the rest of an
/// event (type, seq, time, `data` text, the surface columns) reads back as
/// written.
pub fn as_read_back(events: &mut [Event]) {
    for e in events {
        e.key_order = KeyOrder::LIVE;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 17th input of a generator run through Node v24.22.3 (the
    /// original's runtime, libzstd 1.5.7): xorshift32 from 2463534242;
    /// per input c, n = 1,000,000 + r % 1,500,000 characters, a pattern of
    /// `[31,13,64,1000,4096,7][c % 6]` characters drawn from `ALPH`, every
    /// character replaced by `X` when `r % 100 == 0` (`c % 3 == 1`) or
    /// `r % 1000 == 0` (`c % 3 == 2`).
    fn node_reference_input(index: usize) -> String {
        const ALPH: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789 ";
        let mut x: u32 = 2463534242;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let mut out = String::new();
        for c in 0..=index {
            let n = 1_000_000 + (rnd() % 1_500_000) as usize;
            let period = [31usize, 13, 64, 1000, 4096, 7][c % 6];
            let pat: Vec<u8> = (0..period)
                .map(|_| ALPH[(rnd() % ALPH.len() as u32) as usize])
                .collect();
            let noise = c % 3;
            out = (0..n)
                .map(|k| {
                    if noise != 0 && rnd() % if noise == 1 { 100 } else { 1000 } == 0 {
                        'X'
                    } else {
                        pat[k % period] as char
                    }
                })
                .collect();
        }
        out
    }

    #[test]
    fn large_blobs_have_the_bytes_of_the_originals_zstd_compress_sync() {
        use sha2::{Digest, Sha256};
        let text = node_reference_input(16);
        assert_eq!(text.len(), 2_400_608);
        let Value::Blob(blob) = encode_data(&text) else {
            panic!("not compressed")
        };
        // `zlib.zstdCompressSync(text, {params: {level: 3}})` in Node
        // v24.22.3: 59,732 bytes.
        assert_eq!(blob.len(), 59_732);
        let sha: String = Sha256::digest(&blob)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            sha,
            "ab7857fc0e8a302cfaa02d4b866f8d993b7c865061bcd0072a8abb4a689e8622"
        );
        // One-shot compression gives other bytes for this input: the reason
        // Node's streaming loop is replayed.
        assert_ne!(zstd::bulk::compress(text.as_bytes(), 3).unwrap(), blob);
        assert_eq!(zstd::decode_all(&blob[..]).unwrap(), text.as_bytes());
    }

    fn stored(enc: &EncodedRow) -> StoredRow {
        StoredRow {
            seq: enc.seq,
            event_type: Value::Text(enc.event_type.clone()),
            time: enc.time,
            data: enc.data.clone(),
            source_event_seqs: enc
                .source_event_seqs
                .clone()
                .map_or(Value::Null, Value::Blob),
            surface_op: enc.surface_op.clone().map_or(Value::Null, Value::Text),
            ignorable: enc.ignorable.map_or(Value::Null, Value::Integer),
        }
    }

    #[test]
    fn scalar_event_round_trip_in_live_key_order() {
        let e = Event::parse(
            r#"{"type":"user/message","time":5,"seq":7,"data":{"b":1,"a":[2]},"surfaceOp":"append","sourceEventSeqs":[1,6,2],"ignorable":true}"#,
        )
        .unwrap();
        let enc = encode_record(&Record::Event(e)).unwrap();
        assert_eq!(enc.data, Value::Text(r#"{"b":1,"a":[2]}"#.into()));
        assert_eq!(enc.source_event_seqs.as_deref(), Some(&[1u8, 10, 7][..]));
        assert_eq!(enc.ignorable, Some(1));
        let Record::Event(back) = decode_row(stored(&enc)).unwrap() else {
            panic!("not an event")
        };
        assert_eq!(
            back.to_json(),
            r#"{"type":"user/message","seq":7,"time":5,"data":{"b":1,"a":[2]},"sourceEventSeqs":[1,6,2],"surfaceOp":"append","ignorable":true}"#
        );
    }

    /// The charge a writer adds for a row it encoded is what a read of
    /// the row counts against `maxLogBytes` (packed and plain rows, TEXT
    /// and zstd BLOB data, surface columns), so the two counts agree.
    #[test]
    fn an_encoded_row_is_charged_what_a_read_counts() {
        use crate::codec::chunk_rows::{PackLimits, pack};
        let mut events = vec![
            Event::parse(r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#).unwrap(),
            Event::parse(&format!(
                r#"{{"type":"tool/result","seq":1,"time":2,"data":{{"text":"{}"}},"surfaceOp":{{"replace":[0,1]}},"sourceEventSeqs":[0,1]}}"#,
                "b".repeat(9000)
            ))
            .unwrap(),
        ];
        for k in 0..40u64 {
            events.push(
                Event::parse(&format!(
                    r#"{{"type":"assistant/chunk","seq":{},"time":3,"data":{{"turn":1,"step":1,"chunk":{{"type":"text-delta","index":0,"text":"k{k}"}}}}}}"#,
                    k + 2
                ))
                .unwrap(),
            );
        }
        let limits = Limits::default();
        let (mut packed, mut blob) = (0, 0);
        for record in pack(&events, &PackLimits::SQLITE) {
            let enc = encode_record(&record).unwrap();
            let row = stored(&enc);
            packed += usize::from(row.is_packed());
            blob += usize::from(matches!(row.data, Value::Blob(_)));
            let budget = limits.budget();
            let bounds = RowBounds {
                limits: &limits,
                budget: &budget,
            };
            decode_row_bounded(&row, &bounds).unwrap();
            assert_eq!(enc.charge, budget.used(), "{row:?}");
        }
        assert!(packed > 0 && blob > 0, "packed {packed}, blob {blob}");
    }

    #[test]
    fn large_data_is_compressed_only_when_smaller() {
        let text = format!("{{\"x\":\"{}\"}}", "a".repeat(5000));
        let Value::Blob(b) = encode_data(&text) else {
            panic!("not compressed")
        };
        // zstd frame, header descriptor: content size present, single segment, no checksum
        assert_eq!(&b[..4], &[0x28, 0xb5, 0x2f, 0xfd]);
        assert_eq!(b[4] & 0x20, 0x20);
        assert_eq!(b[4] & 0x04, 0);
        assert_eq!(decode_data(Value::Blob(b), PACKED_DATA_CAP).unwrap(), text);
        let short = format!("\"{}\"", "a".repeat(4000));
        assert!(matches!(encode_data(&short), Value::Text(_)));
    }

    #[test]
    fn decode_rejects_bad_rows() {
        let base = StoredRow {
            seq: 1,
            event_type: Value::Text("turn/start".into()),
            time: 0,
            data: Value::Text("{\"turn\":1}".into()),
            source_event_seqs: Value::Null,
            surface_op: Value::Null,
            ignorable: Value::Null,
        };
        assert!(decode_row(base.clone()).is_ok());
        let bad = |f: &dyn Fn(&mut StoredRow), want: &str| {
            let mut r = base.clone();
            f(&mut r);
            let e = decode_row(r).unwrap_err();
            assert!(e.contains(want), "{e} does not contain {want}");
        };
        bad(
            &|r| r.data = Value::Text("not json{".into()),
            "data is not valid JSON",
        );
        bad(
            &|r| r.data = Value::Blob(vec![1, 2, 3]),
            "does not decompress",
        );
        bad(
            &|r| r.data = Value::Blob(zstd::bulk::compress(&[0xff, 0xfe], 3).unwrap()),
            "UTF-8",
        );
        bad(&|r| r.seq = -1, "got -1");
        bad(&|r| r.time = MAX_SAFE_INTEGER + 1, "time");
        bad(
            &|r| r.source_event_seqs = Value::Blob(vec![0x80]),
            "truncated varint",
        );
        bad(
            &|r| r.source_event_seqs = Value::Text("[1]".into()),
            "must be a blob or null",
        );
        bad(
            &|r| r.surface_op = Value::Text("{".into()),
            "surface_op is not valid JSON",
        );
        bad(&|r| r.ignorable = Value::Integer(2), "ignorable");
        bad(
            &|r| r.ignorable = Value::Integer(0),
            "unknown packed row tag",
        );
        // oversized packed data
        let big = format!(
            "{{\"turn\":1,\"step\":1,\"index\":0,\"dt\":[0,0],\"texts\":[\"{}\",\"a\",\"b\"]}}",
            "x".repeat(PACKED_DATA_CAP)
        );
        bad(
            &|r| {
                r.event_type = Value::Text("text-chunks".into());
                r.ignorable = Value::Integer(0);
                r.data = encode_data(&big);
            },
            "more than 1048576 bytes",
        );
    }
}
