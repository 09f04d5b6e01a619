//! Chunk-row packing (SPEC §2): the storage codec that turns runs of
//! streamed delta events into one row and back, losslessly.
//!
//! A *record* is what one JSONL line or one SQLite row holds: an event, or a
//! packed row of ≥ 3 consecutive *eligible* `assistant/chunk` deltas.
//!
//! Eligibility follows the original's exact key *sets*: envelope keys
//! exactly `type, seq, time, data`, `data` exactly `{turn, step, chunk}` and
//! `chunk` exactly one delta shape, in any order. Expansion writes the
//! original's order (`{"turn":U,"step":P,"chunk":{"type":…,"index":…,…}}`),
//! so an event that arrived in another key order reads back in that order,
//! as the original's does (DIFFERENCES A.2 #20).

use std::fmt::Write as _;
use std::ops::Range;

use crate::model::event::{Event, EventType};
use crate::model::json::{self, JsonText, MAX_SAFE_INTEGER, Scanner};

/// The three kinds of delta that pack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeltaKind {
    Text,
    Reasoning,
    ToolCall,
}

impl DeltaKind {
    /// The row tag (`type` of a packed record).
    pub fn tag(self) -> &'static str {
        match self {
            DeltaKind::Text => "text-chunks",
            DeltaKind::Reasoning => "reasoning-chunks",
            DeltaKind::ToolCall => "tool-call-chunks",
        }
    }

    /// The `chunk.type` of a member event.
    pub fn chunk_type(self) -> &'static str {
        match self {
            DeltaKind::Text => "text-delta",
            DeltaKind::Reasoning => "reasoning-delta",
            DeltaKind::ToolCall => "tool-call-delta",
        }
    }

    pub fn from_tag(tag: &str) -> Option<DeltaKind> {
        match tag {
            "text-chunks" => Some(DeltaKind::Text),
            "reasoning-chunks" => Some(DeltaKind::Reasoning),
            "tool-call-chunks" => Some(DeltaKind::ToolCall),
            _ => None,
        }
    }

    fn from_chunk_type(t: &str) -> Option<DeltaKind> {
        match t {
            "text-delta" => Some(DeltaKind::Text),
            "reasoning-delta" => Some(DeltaKind::Reasoning),
            "tool-call-delta" => Some(DeltaKind::ToolCall),
            _ => None,
        }
    }
}

/// Whether a record `type` is a packed-row tag.
pub fn is_row_tag(type_name: &str) -> bool {
    DeltaKind::from_tag(type_name).is_some()
}

/// A malformed record (always corruption when read from storage).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError(pub String);

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn bad(msg: impl Into<String>) -> RecordError {
    RecordError(msg.into())
}

/// Row size limits. JSONL rows are unlimited; SQLite caps a row at 1,024
/// members and 1 MiB of UTF-8 `data`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackLimits {
    pub max_members: usize,
    pub max_data_bytes: usize,
}

impl PackLimits {
    pub const JSONL: PackLimits = PackLimits {
        max_members: usize::MAX,
        max_data_bytes: usize::MAX,
    };
    pub const SQLITE: PackLimits = PackLimits {
        max_members: 1024,
        max_data_bytes: 1024 * 1024,
    };
}

/// The smallest run that is packed.
pub const MIN_RUN: usize = 3;

/// A packed row. Its `data` object text is kept whole; members are spans of
/// it, so expansion copies raw (already escaped) text without re-parsing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedRow {
    kind: DeltaKind,
    seq0: u64,
    time0: i64,
    data: String,
    turn: Range<usize>,
    step: Range<usize>,
    index: Range<usize>,
    /// Raw escaped content (between the quotes) of the tool-call id.
    id: Option<Range<usize>>,
    name: Option<Range<usize>>,
    /// Raw escaped content of each member's text / argumentsDelta.
    pieces: Vec<Range<usize>>,
    /// Absolute time of each member.
    times: Vec<i64>,
}

impl PackedRow {
    pub fn kind(&self) -> DeltaKind {
        self.kind
    }

    pub fn tag(&self) -> &'static str {
        self.kind.tag()
    }

    pub fn seq0(&self) -> u64 {
        self.seq0
    }

    pub fn time0(&self) -> i64 {
        self.time0
    }

    pub fn member_count(&self) -> u64 {
        self.pieces.len() as u64
    }

    /// The row's `data` object text (the SQLite `data` column).
    pub fn data_json(&self) -> &str {
        &self.data
    }

    /// Decodes a row from its parts (SQLite columns, or a parsed JSONL line),
    /// validating exact keys, types, arity and safe-integer bounds.
    pub fn from_parts(
        tag: &str,
        seq0: u64,
        time0: i64,
        data_text: &str,
    ) -> Result<PackedRow, RecordError> {
        let kind = DeltaKind::from_tag(tag)
            .ok_or_else(|| bad(format!("unknown packed row tag {}", json::quote(tag))))?;
        if seq0 > MAX_SAFE_INTEGER as u64 {
            return Err(bad(format!("{tag} row seq0 {seq0} is not a safe integer")));
        }
        if time0.unsigned_abs() > MAX_SAFE_INTEGER as u64 {
            return Err(bad(format!(
                "{tag} row time0 {time0} is not a safe integer"
            )));
        }
        let base = data_text.as_ptr() as usize;
        let span = |s: &str| {
            let start = s.as_ptr() as usize - base;
            start..start + s.len()
        };
        let mut turn = None;
        let mut step = None;
        let mut index = None;
        let mut dt: Option<Vec<i64>> = None;
        let mut pieces: Option<Vec<Range<usize>>> = None;
        let mut id = None;
        let mut name = None;
        let mut seen_name = false;
        let mut unknown: Option<String> = None;
        let pieces_key = if kind == DeltaKind::ToolCall {
            "args"
        } else {
            "texts"
        };
        let mut s = Scanner::new(data_text);
        let res = s.object(|k, s| {
            let key = k.decode();
            let dup = |f: bool| {
                if f {
                    Some(format!("duplicate key {}", key))
                } else {
                    None
                }
            };
            let mut problem: Option<String> = None;
            match key.as_ref() {
                "turn" | "step" | "index" => {
                    let at = s.pos;
                    let (raw, _) = s
                        .number()
                        .map_err(|_| json::JsonError::Syntax { at, what: "number" })?;
                    let slot = match key.as_ref() {
                        "turn" => &mut turn,
                        "step" => &mut step,
                        _ => &mut index,
                    };
                    problem = dup(slot.is_some());
                    *slot = Some(span(raw));
                }
                "dt" => {
                    let mut v = Vec::new();
                    let mut ok = true;
                    s.array(|s| {
                        // One scan per gap: the number token is read once
                        // (integer spelling and safe range), anything else
                        // is validated and refused.
                        if matches!(s.peek(), Some(b'-' | b'0'..=b'9')) {
                            match s.number()? {
                                (raw, false) => match json::as_safe_int(raw) {
                                    Some(n) => v.push(n),
                                    None => ok = false,
                                },
                                (_, true) => ok = false,
                            }
                        } else {
                            s.skip_value()?;
                            ok = false;
                        }
                        Ok(())
                    })?;
                    if !ok {
                        problem = Some("dt must hold safe integers".into());
                    }
                    problem = problem.or(dup(dt.is_some()));
                    dt = Some(v);
                }
                "id" | "name" if kind == DeltaKind::ToolCall => {
                    let t = s.string()?;
                    let r = span(t.raw());
                    if key == "id" {
                        problem = dup(id.is_some());
                        id = Some(r);
                    } else {
                        problem = dup(seen_name);
                        seen_name = true;
                        name = Some(r);
                    }
                }
                k2 if k2 == pieces_key => {
                    let mut v = Vec::new();
                    let mut ok = true;
                    s.array(|s| {
                        if s.peek() == Some(b'"') {
                            let t = s.string()?;
                            v.push(span(t.raw()));
                        } else {
                            s.skip_value()?;
                            ok = false;
                        }
                        Ok(())
                    })?;
                    if !ok {
                        problem = Some(format!("{pieces_key} must hold strings only"));
                    }
                    problem = problem.or(dup(pieces.is_some()));
                    pieces = Some(v);
                }
                _ => {
                    s.skip_value()?;
                    problem = Some(format!("unexpected key {}", json::quote(&key)));
                }
            }
            if unknown.is_none() {
                unknown = problem;
            }
            Ok(())
        });
        let ctx = |m: String| bad(format!("malformed {tag} row at seq {seq0}: {m}"));
        res.and_then(|_| s.expect_end())
            .map_err(|e| ctx(format!("data is not a JSON object ({e})")))?;
        if let Some(m) = unknown {
            return Err(ctx(m));
        }
        let turn = turn.ok_or_else(|| ctx("missing turn".into()))?;
        let step = step.ok_or_else(|| ctx("missing step".into()))?;
        let index = index.ok_or_else(|| ctx("missing index".into()))?;
        let dt = dt.ok_or_else(|| ctx("missing dt".into()))?;
        let pieces = pieces.ok_or_else(|| ctx(format!("missing {pieces_key}")))?;
        if kind == DeltaKind::ToolCall && id.is_none() {
            return Err(ctx("missing id".into()));
        }
        if pieces.is_empty() {
            return Err(ctx(format!("{pieces_key} is empty")));
        }
        if dt.len() + 1 != pieces.len() {
            return Err(ctx(format!(
                "dt has {} gaps for {} members (expected {})",
                dt.len(),
                pieces.len(),
                pieces.len() - 1
            )));
        }
        let last_seq = seq0 + dt.len() as u64;
        if last_seq > MAX_SAFE_INTEGER as u64 {
            return Err(ctx(format!("member seq {last_seq} is not a safe integer")));
        }
        let mut times = Vec::with_capacity(pieces.len());
        let mut t = time0;
        times.push(t);
        for (k, g) in dt.iter().enumerate() {
            t = t
                .checked_add(*g)
                .filter(|v| v.unsigned_abs() <= MAX_SAFE_INTEGER as u64)
                .ok_or_else(|| ctx(format!("member {} time is not a safe integer", k + 1)))?;
            times.push(t);
        }
        Ok(PackedRow {
            kind,
            seq0,
            time0,
            data: data_text.to_string(),
            turn,
            step,
            index,
            id,
            name,
            pieces,
            times,
        })
    }

    /// Appends the member events, in order.
    pub fn expand_into(&self, out: &mut Vec<Event>) {
        self.expand_from_into(0, out);
    }

    /// Appends the member events with `seq >= from_seq`, in order (a row
    /// entirely below `from_seq` adds nothing).
    pub fn expand_from_into(&self, from_seq: u64, out: &mut Vec<Event>) {
        let skip = from_seq
            .saturating_sub(self.seq0)
            .min(self.pieces.len() as u64) as usize;
        if skip == self.pieces.len() {
            return;
        }
        out.reserve(self.pieces.len() - skip);
        let d = &self.data;
        // Every member's data text, back to back in one shared buffer. The
        // text before the piece is the same for every member.
        let mut prefix = String::with_capacity(128);
        prefix.push_str("{\"turn\":");
        prefix.push_str(&d[self.turn.clone()]);
        prefix.push_str(",\"step\":");
        prefix.push_str(&d[self.step.clone()]);
        prefix.push_str(",\"chunk\":{\"type\":\"");
        prefix.push_str(self.kind.chunk_type());
        prefix.push_str("\",\"index\":");
        prefix.push_str(&d[self.index.clone()]);
        if self.kind == DeltaKind::ToolCall {
            prefix.push_str(",\"id\":\"");
            if let Some(id) = &self.id {
                prefix.push_str(&d[id.clone()]);
            }
            prefix.push('"');
            if let Some(name) = &self.name {
                prefix.push_str(",\"name\":\"");
                prefix.push_str(&d[name.clone()]);
                prefix.push('"');
            }
            prefix.push_str(",\"argumentsDelta\":\"");
        } else {
            prefix.push_str(",\"text\":\"");
        }
        const SUFFIX: &str = "\"}}";
        let members = &self.pieces[skip..];
        let mut buf = String::with_capacity(
            members
                .iter()
                .map(|p| prefix.len() + p.len() + SUFFIX.len())
                .sum::<usize>(),
        );
        let mut ends = Vec::with_capacity(members.len());
        for piece in members {
            buf.push_str(&prefix);
            buf.push_str(&d[piece.clone()]);
            buf.push_str(SUFFIX);
            ends.push(buf.len());
        }
        let shared: std::sync::Arc<str> = std::sync::Arc::from(buf);
        let ty = EventType::known("assistant/chunk");
        let mut start = 0;
        for (k, end) in ends.into_iter().enumerate() {
            let m = skip + k;
            out.push(Event::new(
                ty.clone(),
                self.seq0 + m as u64,
                self.times[m],
                JsonText::from_trusted_span(&shared, start..end),
            ));
            start = end;
        }
    }

    /// Appends the JSONL line text of the row (no newline).
    pub fn write_json(&self, out: &mut String) {
        let _ = write!(
            out,
            "{{\"type\":\"{}\",\"seq0\":{},\"time0\":{},\"data\":{}}}",
            self.kind.tag(),
            self.seq0,
            self.time0,
            self.data
        );
    }
}

/// Why a stored line is not a record the scan keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoredLineError {
    /// Not JSON (or a malformed packed row): `unparsable committed event`.
    Unparsable,
    /// JSON whose `seq` is missing or not a non-negative safe integer: a
    /// seq gap (`got` is what JavaScript prints for the value, `undefined`
    /// when absent); `turn_end` when its `type` is `turn/end`.
    NoSeq { got: Box<str>, turn_end: bool },
}

/// One storage record.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    Event(Event),
    Packed(PackedRow),
}

impl Record {
    /// Parses one JSONL record line: a packed row when its `type` is a row
    /// tag, else an event envelope.
    pub fn parse_line(text: &str) -> Result<Record, RecordError> {
        let tag = peek_type(text);
        match tag.as_deref().and_then(DeltaKind::from_tag) {
            Some(_) => parse_row_line(text).map(Record::Packed),
            None => Event::parse(text)
                .map(Record::Event)
                .map_err(|e| RecordError(e.to_string())),
        }
    }

    /// Parses one stored JSONL record line as the original's scan judges it
    /// (`decodeStorageRecord(JSON.parse(line))`): a packed row when its
    /// `type` is a row tag; otherwise any JSON object with a usable `seq` is
    /// an event, kept even when another envelope rule fails
    /// ([`Event::parse_stored`]); duplicate keys keep the last value, at the
    /// first key's place, as `JSON.parse` does.
    pub fn parse_stored_line(text: &str) -> Result<Record, StoredLineError> {
        // Every well-formed line takes the strict parser (one scan); only a
        // line it refuses is looked at again.
        if let Ok(r) = Record::parse_line(text) {
            return Ok(r);
        }
        let Some(kind) = json::kind_of(text) else {
            return Err(StoredLineError::Unparsable);
        };
        match kind {
            json::Kind::Object => {}
            // The original crashes on a `null` line; this build calls it
            // unparsable (README choices).
            json::Kind::Null => return Err(StoredLineError::Unparsable),
            _ => {
                if json::JsonText::parse_verbatim(text).is_err() {
                    return Err(StoredLineError::Unparsable);
                }
                return Err(StoredLineError::NoSeq {
                    got: "undefined".into(),
                    turn_end: false,
                });
            }
        }
        let deduped;
        let text = match json::last_wins_object(text) {
            Err(_) => return Err(StoredLineError::Unparsable),
            Ok(Some(t)) => {
                deduped = t;
                deduped.as_str()
            }
            Ok(None) => text,
        };
        let tag = peek_type(text);
        if tag.as_deref().and_then(DeltaKind::from_tag).is_some() {
            return parse_row_line(text)
                .map(Record::Packed)
                .map_err(|_| StoredLineError::Unparsable);
        }
        match Event::parse_stored(text) {
            Ok(e) => Ok(Record::Event(e)),
            Err(crate::model::event::EnvelopeError::Syntax(_)) => Err(StoredLineError::Unparsable),
            Err(crate::model::event::EnvelopeError::Invalid(_)) => {
                let seq = json::get_field(text, "seq");
                Err(StoredLineError::NoSeq {
                    got: seq
                        .map_or_else(|| "undefined".to_string(), json::js_string_of)
                        .into(),
                    turn_end: tag.as_deref() == Some("turn/end"),
                })
            }
        }
    }

    /// Appends the JSONL line text (no newline).
    pub fn write_json(&self, out: &mut String) {
        match self {
            Record::Event(e) => e.write_json(out),
            Record::Packed(r) => r.write_json(out),
        }
    }

    pub fn first_seq(&self) -> u64 {
        match self {
            Record::Event(e) => e.seq,
            Record::Packed(r) => r.seq0,
        }
    }

    pub fn member_count(&self) -> u64 {
        match self {
            Record::Event(_) => 1,
            Record::Packed(r) => r.member_count(),
        }
    }

    /// Appends the events this record holds.
    pub fn expand_into(&self, out: &mut Vec<Event>) {
        match self {
            Record::Event(e) => out.push(e.clone()),
            Record::Packed(r) => r.expand_into(out),
        }
    }

    /// Like [`Record::expand_into`], without cloning a plain event.
    pub fn into_events(self, out: &mut Vec<Event>) {
        self.into_events_from(0, out);
    }

    /// Like [`Record::into_events`], but a packed row adds only its members
    /// with `seq >= from_seq`; a plain event is always added.
    pub fn into_events_from(self, from_seq: u64, out: &mut Vec<Event>) {
        match self {
            Record::Event(e) => out.push(e),
            Record::Packed(r) => r.expand_from_into(from_seq, out),
        }
    }

    /// Whether this record is a `turn/end` event.
    pub fn is_turn_end(&self) -> bool {
        matches!(self, Record::Event(e) if e.event_type() == "turn/end")
    }
}

/// The `type` of a record line: the fast path reads the canonical prefix
/// `{"type":"…"`, else the field is looked up.
fn peek_type(text: &str) -> Option<std::borrow::Cow<'_, str>> {
    if let Some(rest) = text.strip_prefix("{\"type\":\"") {
        if let Some(end) = memchr::memchr2(b'"', b'\\', rest.as_bytes()) {
            if rest.as_bytes()[end] == b'"' {
                return Some(std::borrow::Cow::Borrowed(&rest[..end]));
            }
        }
    }
    let raw = json::get_field(text, "type")?;
    json::as_str(raw).map(|t| t.decode())
}

/// A packed row line in the exact form this format writes
/// (`{"type":"<tag>","seq0":N,"time0":N,"data":{…}}`, no whitespace,
/// canonical integers): the row, without scanning the `data` text twice.
/// `None` for any other form, and for a row that fails validation (the
/// general path then reports the problem).
fn parse_row_line_canonical(text: &str) -> Option<PackedRow> {
    let rest = text.strip_prefix("{\"type\":\"")?;
    let q = rest.find('"')?;
    let tag = &rest[..q];
    DeltaKind::from_tag(tag)?;
    let rest = rest[q + 1..].strip_prefix(",\"seq0\":")?;
    let (seq0, rest) = canonical_int(rest)?;
    let rest = rest.strip_prefix(",\"time0\":")?;
    let (time0, rest) = canonical_int(rest)?;
    let data = rest.strip_prefix(",\"data\":")?.strip_suffix('}')?;
    if !data.starts_with('{') || !data.ends_with('}') {
        return None;
    }
    PackedRow::from_parts(tag, u64::try_from(seq0).ok()?, time0, data).ok()
}

/// A JSON integer at the start of `s` written canonically (optional `-`,
/// no leading zero, at most 16 digits): its value and the rest.
fn canonical_int(s: &str) -> Option<(i64, &str)> {
    let b = s.as_bytes();
    let neg = b.first() == Some(&b'-');
    let digits = &b[neg as usize..];
    let n = digits.iter().take_while(|c| c.is_ascii_digit()).count();
    if n == 0 || n > 16 || (n > 1 && digits[0] == b'0') {
        return None;
    }
    let end = neg as usize + n;
    let v: i64 = s[..end].parse().ok()?;
    Some((v, &s[end..]))
}

fn parse_row_line(text: &str) -> Result<PackedRow, RecordError> {
    if let Some(row) = parse_row_line_canonical(text) {
        return Ok(row);
    }
    let fields = json::object_fields(text)
        .map_err(|e| bad(format!("packed row is not a JSON object ({e})")))?;
    let mut tag = None;
    let mut seq0 = None;
    let mut time0 = None;
    let mut data = None;
    for (k, v) in &fields {
        let slot = match k.decode().as_ref() {
            "type" => &mut tag,
            "seq0" => &mut seq0,
            "time0" => &mut time0,
            "data" => &mut data,
            other => {
                return Err(bad(format!(
                    "packed row has unexpected key {}",
                    json::quote(other)
                )));
            }
        };
        if slot.is_some() {
            return Err(bad("packed row has a duplicate key"));
        }
        *slot = Some(*v);
    }
    let tag = tag
        .and_then(json::as_str)
        .map(|t| t.decode())
        .ok_or_else(|| bad("packed row type must be a string"))?;
    let seq0 = seq0.and_then(json::as_safe_uint).ok_or_else(|| {
        bad(format!(
            "{tag} row seq0 must be a non-negative safe integer"
        ))
    })?;
    let time0 = time0
        .and_then(json::as_safe_int)
        .ok_or_else(|| bad(format!("{tag} row time0 must be a safe integer")))?;
    let data = data.ok_or_else(|| bad(format!("{tag} row at seq {seq0} has no data")))?;
    PackedRow::from_parts(&tag, seq0, time0, data)
}

// ---------------------------------------------------------------------------
// Packing

/// An eligible delta event, split into the parts a row needs (spans into the
/// event's data text).
struct Delta<'a> {
    kind: DeltaKind,
    seq: u64,
    time: i64,
    turn: &'a str,
    step: &'a str,
    index: &'a str,
    id: Option<&'a str>,
    name: Option<&'a str>,
    piece: &'a str,
}

/// Recognizes an eligible delta (SPEC §2), requiring the exact bytes that
/// expansion rebuilds.
fn eligible(e: &Event) -> Option<Delta<'_>> {
    if e.event_type() != "assistant/chunk"
        || e.ignorable
        || e.surface_op().is_some()
        || e.source_event_seqs().is_some()
    {
        return None;
    }
    // Exact key *sets*, in any order (the original's `hasExactKeys`):
    // expansion writes the canonical order, as the original's does.
    if e.is_invalid_envelope() {
        return None;
    }
    if e.seq > MAX_SAFE_INTEGER as u64 || e.time.unsigned_abs() > MAX_SAFE_INTEGER as u64 {
        return None;
    }
    let d = e.data.as_str();
    if let Some(delta) = eligible_canonical(e, d) {
        return Some(delta);
    }
    eligible_any_order(e, d)
}

/// [`eligible`] for data in any key order (a host that built the object
/// in another order): read field by field.
fn eligible_any_order<'a>(e: &Event, d: &'a str) -> Option<Delta<'a>> {
    let exact = |f: &[(json::JsonStr<'_>, &str)], keys: &[&str]| {
        f.len() == keys.len()
            && keys
                .iter()
                .all(|k| f.iter().filter(|(n, _)| n.eq_str(k)).count() == 1)
    };
    let get = |f: &[(json::JsonStr<'a>, &'a str)], k: &str| {
        f.iter().find(|(n, _)| n.eq_str(k)).map(|(_, v)| v.trim())
    };
    let number = |v: Option<&'a str>| v.filter(|v| json::kind_of(v) == Some(json::Kind::Number));
    let string = |v: Option<&'a str>| -> Option<&'a str> {
        let v = v?;
        let t = json::as_str(v)?;
        Some(t.raw())
    };
    let f = json::object_fields(d).ok()?;
    if !exact(&f, &["turn", "step", "chunk"]) {
        return None;
    }
    let turn = number(get(&f, "turn"))?;
    let step = number(get(&f, "step"))?;
    let chunk = get(&f, "chunk")?;
    let cf = json::object_fields(chunk).ok()?;
    let kind = DeltaKind::from_chunk_type(&json::as_str(get(&cf, "type")?)?.decode())?;
    let index = number(get(&cf, "index"))?;
    let (mut id, mut name) = (None, None);
    let piece = if kind == DeltaKind::ToolCall {
        let with_name = exact(&cf, &["type", "index", "id", "name", "argumentsDelta"]);
        if !with_name && !exact(&cf, &["type", "index", "id", "argumentsDelta"]) {
            return None;
        }
        id = Some(string(get(&cf, "id"))?);
        if with_name {
            name = Some(string(get(&cf, "name"))?);
        }
        string(get(&cf, "argumentsDelta"))?
    } else {
        if !exact(&cf, &["type", "index", "text"]) {
            return None;
        }
        string(get(&cf, "text"))?
    };
    Some(Delta {
        kind,
        seq: e.seq,
        time: e.time,
        turn,
        step,
        index,
        id,
        name,
        piece,
    })
}

/// [`eligible`] for data in the original's key order, read straight from
/// the bytes (the common case: no field lookups).
fn eligible_canonical<'a>(e: &Event, d: &'a str) -> Option<Delta<'a>> {
    let rest = d.strip_prefix("{\"turn\":")?;
    let (turn, rest) = number_prefix(rest)?;
    let rest = rest.strip_prefix(",\"step\":")?;
    let (step, rest) = number_prefix(rest)?;
    let rest = rest.strip_prefix(",\"chunk\":{\"type\":\"")?;
    let q = rest.find('"')?;
    let kind = DeltaKind::from_chunk_type(&rest[..q])?;
    let rest = rest[q + 1..].strip_prefix(",\"index\":")?;
    let (index, mut rest) = number_prefix(rest)?;
    let (mut id, mut name) = (None, None);
    if kind == DeltaKind::ToolCall {
        rest = rest.strip_prefix(",\"id\":")?;
        let (v, r) = string_prefix(rest)?;
        id = Some(v);
        rest = r;
        if let Some(r) = rest.strip_prefix(",\"name\":") {
            let (v, r) = string_prefix(r)?;
            name = Some(v);
            rest = r;
        }
        rest = rest.strip_prefix(",\"argumentsDelta\":")?;
    } else {
        rest = rest.strip_prefix(",\"text\":")?;
    }
    let (piece, rest) = string_prefix(rest)?;
    if rest != "}}" {
        return None;
    }
    Some(Delta {
        kind,
        seq: e.seq,
        time: e.time,
        turn,
        step,
        index,
        id,
        name,
        piece,
    })
}

/// A JSON number at the start of `s`, in canonical form (no whitespace).
fn number_prefix(s: &str) -> Option<(&str, &str)> {
    let mut sc = Scanner::new(s);
    if !matches!(s.as_bytes().first(), Some(b'-' | b'0'..=b'9')) {
        return None;
    }
    let (raw, _) = sc.number().ok()?;
    Some((raw, &s[raw.len()..]))
}

/// A JSON string token at the start of `s`: (escaped content, rest).
fn string_prefix(s: &str) -> Option<(&str, &str)> {
    if !s.starts_with('"') {
        return None;
    }
    let mut sc = Scanner::new(s);
    let t = sc.string().ok()?;
    Some((t.raw(), &s[sc.pos..]))
}

fn continues(prev: &Delta<'_>, next: &Delta<'_>) -> bool {
    prev.kind == next.kind
        && next.seq == prev.seq + 1
        && next
            .time
            .checked_sub(prev.time)
            .is_some_and(|g| g.unsigned_abs() <= MAX_SAFE_INTEGER as u64)
        && prev.turn == next.turn
        && prev.step == next.step
        && prev.index == next.index
        && prev.id == next.id
        && prev.name == next.name
}

/// Builds one row from a run of deltas.
fn build_row(run: &[Delta<'_>]) -> PackedRow {
    let first = &run[0];
    let mut data = String::with_capacity(64 + run.iter().map(|d| d.piece.len() + 8).sum::<usize>());
    let mark = |data: &mut String, s: &str| {
        let start = data.len();
        data.push_str(s);
        start..data.len()
    };
    data.push_str("{\"turn\":");
    let turn = mark(&mut data, first.turn);
    data.push_str(",\"step\":");
    let step = mark(&mut data, first.step);
    data.push_str(",\"index\":");
    let index = mark(&mut data, first.index);
    data.push_str(",\"dt\":[");
    let mut times = Vec::with_capacity(run.len());
    times.push(first.time);
    for (k, w) in run.windows(2).enumerate() {
        if k > 0 {
            data.push(',');
        }
        let _ = write!(data, "{}", w[1].time - w[0].time);
        times.push(w[1].time);
    }
    data.push(']');
    let (mut id, mut name) = (None, None);
    if first.kind == DeltaKind::ToolCall {
        data.push_str(",\"id\":\"");
        id = Some(mark(&mut data, first.id.unwrap_or_default()));
        data.push('"');
        if let Some(n) = first.name {
            data.push_str(",\"name\":\"");
            name = Some(mark(&mut data, n));
            data.push('"');
        }
        data.push_str(",\"args\":[");
    } else {
        data.push_str(",\"texts\":[");
    }
    let mut pieces = Vec::with_capacity(run.len());
    for (k, d) in run.iter().enumerate() {
        if k > 0 {
            data.push(',');
        }
        data.push('"');
        pieces.push(mark(&mut data, d.piece));
        data.push('"');
    }
    data.push_str("]}");
    PackedRow {
        kind: first.kind,
        seq0: first.seq,
        time0: first.time,
        data,
        turn,
        step,
        index,
        id,
        name,
        pieces,
        times,
    }
}

/// The `data` size of a row holding `run` (must equal `build_row(run).data.len()`).
fn row_data_len_prefix(run: &[Delta<'_>]) -> Vec<usize> {
    // sizes[n] = data length of a row of the first n members (n ≥ 1).
    let first = &run[0];
    let mut fixed = "{\"turn\":,\"step\":,\"index\":,\"dt\":[]".len()
        + first.turn.len()
        + first.step.len()
        + first.index.len()
        + "]}".len();
    if first.kind == DeltaKind::ToolCall {
        fixed += ",\"id\":\"\"".len() + first.id.map_or(0, str::len) + ",\"args\":[".len();
        if let Some(n) = first.name {
            fixed += ",\"name\":\"\"".len() + n.len();
        }
    } else {
        fixed += ",\"texts\":[".len();
    }
    let mut sizes = Vec::with_capacity(run.len() + 1);
    sizes.push(0);
    let mut total = fixed;
    let mut buf = String::new();
    for (k, d) in run.iter().enumerate() {
        total += d.piece.len() + 2;
        if k > 0 {
            total += 1; // comma between pieces
            buf.clear();
            let _ = write!(buf, "{}", d.time - run[k - 1].time);
            total += buf.len() + usize::from(k > 1);
        }
        sizes.push(total);
    }
    sizes
}

/// Packs one write batch (SPEC §2): each run of ≥ 3 consecutive eligible
/// deltas becomes one row (split to respect `limits`); everything else stays
/// a plain record, in order.
pub fn pack(events: &[Event], limits: &PackLimits) -> Vec<Record> {
    let mut out = Vec::with_capacity(events.len());
    let mut i = 0;
    while i < events.len() {
        let Some(first) = eligible(&events[i]) else {
            out.push(Record::Event(events[i].clone()));
            i += 1;
            continue;
        };
        let mut run = vec![first];
        let mut j = i + 1;
        while j < events.len() {
            match eligible(&events[j]) {
                Some(d) if continues(run.last().unwrap_or(&d), &d) => {
                    run.push(d);
                    j += 1;
                }
                _ => break,
            }
        }
        let mut k = 0;
        while k < run.len() {
            let rest = &run[k..];
            let take = if rest.len() < MIN_RUN {
                0
            } else {
                let sizes = row_data_len_prefix(rest);
                let cap = rest.len().min(limits.max_members);
                (MIN_RUN..=cap)
                    .rev()
                    .find(|&n| sizes[n] <= limits.max_data_bytes)
                    .unwrap_or(0)
            };
            if take == 0 {
                out.push(Record::Event(events[i + k].clone()));
                k += 1;
            } else {
                out.push(Record::Packed(build_row(&rest[..take])));
                k += take;
            }
        }
        i = j;
    }
    out
}

/// Records for a batch written without packing (`packChunks: false`).
pub fn unpacked(events: &[Event]) -> Vec<Record> {
    events.iter().cloned().map(Record::Event).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(seq: u64, time: i64, chunk: &str) -> Event {
        Event::parse(&format!(
            r#"{{"type":"assistant/chunk","seq":{seq},"time":{time},"data":{{"turn":1,"step":1,"chunk":{chunk}}}}}"#
        ))
        .unwrap()
    }

    fn text(seq: u64, time: i64, t: &str) -> Event {
        chunk(
            seq,
            time,
            &format!(
                r#"{{"type":"text-delta","index":0,"text":{}}}"#,
                json::quote(t)
            ),
        )
    }

    fn lines(records: &[Record]) -> Vec<String> {
        records
            .iter()
            .map(|r| {
                let mut s = String::new();
                r.write_json(&mut s);
                s
            })
            .collect()
    }

    fn expand(records: &[Record]) -> Vec<Event> {
        let mut out = Vec::new();
        for r in records {
            r.expand_into(&mut out);
        }
        out
    }

    #[test]
    fn packs_a_run_like_the_original() {
        let ev = vec![
            text(6, 100, "The"),
            text(7, 100, " user"),
            text(8, 124, " wants\n"),
            text(9, 99, "é"),
        ];
        let recs = pack(&ev, &PackLimits::JSONL);
        assert_eq!(
            lines(&recs),
            vec![
                r#"{"type":"text-chunks","seq0":6,"time0":100,"data":{"turn":1,"step":1,"index":0,"dt":[0,24,-25],"texts":["The"," user"," wants\n","é"]}}"#
            ]
        );
        assert_eq!(expand(&recs), ev);
    }

    #[test]
    fn short_runs_stay_plain() {
        let ev = vec![text(0, 1, "a"), text(1, 2, "b")];
        let recs = pack(&ev, &PackLimits::JSONL);
        assert!(recs.iter().all(|r| matches!(r, Record::Event(_))));
        assert_eq!(expand(&recs), ev);
    }

    #[test]
    fn tool_call_runs_split_on_name_presence() {
        let tc = |seq, name: Option<&str>, a: &str| {
            let n = name
                .map(|n| format!(r#","name":"{n}""#))
                .unwrap_or_default();
            chunk(
                seq,
                10,
                &format!(
                    r#"{{"type":"tool-call-delta","index":1,"id":"c1"{n},"argumentsDelta":{}}}"#,
                    json::quote(a)
                ),
            )
        };
        let ev = vec![
            tc(0, Some("bash"), "{"),
            tc(1, None, "\"a"),
            tc(2, None, "\":"),
            tc(3, None, "1}"),
        ];
        let recs = pack(&ev, &PackLimits::JSONL);
        let l = lines(&recs);
        assert_eq!(l.len(), 2);
        assert!(l[0].starts_with(r#"{"type":"assistant/chunk""#));
        assert_eq!(
            l[1],
            r#"{"type":"tool-call-chunks","seq0":1,"time0":10,"data":{"turn":1,"step":1,"index":1,"dt":[0,0],"id":"c1","args":["\"a","\":","1}"]}}"#
        );
        assert_eq!(expand(&recs), ev);
        let named = vec![
            tc(0, Some("b"), "x"),
            tc(1, Some("b"), "y"),
            tc(2, Some("b"), "z"),
        ];
        let recs = pack(&named, &PackLimits::JSONL);
        assert!(lines(&recs)[0].contains(r#""id":"c1","name":"b","args":["x","y","z"]"#));
        assert_eq!(expand(&recs), named);
    }

    #[test]
    fn runs_break_on_kind_seq_turn_index_and_order() {
        let reasoning = chunk(3, 0, r#"{"type":"reasoning-delta","index":0,"text":"r"}"#);
        let other_index = chunk(3, 0, r#"{"type":"text-delta","index":1,"text":"r"}"#);
        for breaker in [reasoning, other_index] {
            let ev = vec![text(0, 0, "a"), text(1, 0, "b"), text(2, 0, "c"), breaker];
            let recs = pack(&ev, &PackLimits::JSONL);
            assert_eq!(recs.len(), 2);
            assert_eq!(expand(&recs), ev);
        }
        // seq gap
        let ev = vec![text(0, 0, "a"), text(1, 0, "b"), text(3, 0, "c")];
        assert_eq!(pack(&ev, &PackLimits::JSONL).len(), 3);
        // time gap beyond a safe integer
        let ev = vec![
            text(0, -MAX_SAFE_INTEGER, "a"),
            text(1, MAX_SAFE_INTEGER, "b"),
            text(2, MAX_SAFE_INTEGER, "c"),
        ];
        let recs = pack(&ev, &PackLimits::JSONL);
        assert_eq!(recs.len(), 3);
        assert_eq!(expand(&recs), ev);
    }

    /// Whether each record is a packed row (true) or a plain event.
    fn shape(records: &[Record]) -> Vec<bool> {
        records
            .iter()
            .map(|r| matches!(r, Record::Packed(_)))
            .collect()
    }

    #[test]
    fn deltas_past_the_safe_integers_or_with_an_envelope_field_stay_plain() {
        let max = MAX_SAFE_INTEGER as u64;
        let at = |seq: u64, time: i64| {
            let mut e = text(0, 0, "x");
            e.seq = seq;
            e.time = time;
            e
        };
        // The last safe seq and the largest safe times still pack.
        for time in [MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER] {
            let ev = vec![at(max - 2, time), at(max - 1, time), at(max, time)];
            let recs = pack(&ev, &PackLimits::JSONL);
            assert_eq!(shape(&recs), [true], "time {time}");
            assert_eq!(expand(&recs), ev);
        }
        // One past them: that delta stays plain and the run ends before it
        // (the events are built directly: a parse refuses such numbers).
        for last in [
            at(max + 1, 0),
            at(3, MAX_SAFE_INTEGER + 1),
            at(3, -MAX_SAFE_INTEGER - 1),
        ] {
            let first = last.seq.saturating_sub(3).min(max - 2);
            let ev = vec![at(first, 0), at(first + 1, 0), at(first + 2, 0), last];
            let recs = pack(&ev, &PackLimits::JSONL);
            assert_eq!(shape(&recs), [true, false], "{:?}", lines(&recs));
            assert_eq!(expand(&recs), ev);
        }
        // A delta carrying sourceEventSeqs or a surfaceOp is not one a row
        // can hold (expansion would drop the field).
        for extra in [r#""sourceEventSeqs":[0]"#, r#""surfaceOp":"append""#] {
            let ev: Vec<Event> = (0..3)
                .map(|seq| {
                    Event::parse(&format!(
                        r#"{{"type":"assistant/chunk","seq":{seq},"time":0,"data":{{"turn":1,"step":1,"chunk":{{"type":"text-delta","index":0,"text":"x"}}}},{extra}}}"#
                    ))
                    .unwrap()
                })
                .collect();
            let recs = pack(&ev, &PackLimits::JSONL);
            assert_eq!(shape(&recs), [false, false, false], "{extra}");
            assert_eq!(expand(&recs), ev);
        }
    }

    /// A delta's parts, for comparing the two readers.
    fn parts(d: &Delta<'_>) -> String {
        format!(
            "{} {} {} {} {} {} {:?} {:?} {}",
            d.kind.tag(),
            d.seq,
            d.time,
            d.turn,
            d.step,
            d.index,
            d.id,
            d.name,
            d.piece
        )
    }

    #[test]
    fn the_canonical_reader_takes_the_original_key_order_and_agrees_with_the_field_reader() {
        // Data in the original's key order: the byte reader takes it (a
        // fast path that stopped firing would only show as a slowdown),
        // and reads the same parts as the field-by-field reader.
        let canonical = [
            r#"{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"a"}}"#,
            r#"{"turn":12,"step":0,"chunk":{"type":"reasoning-delta","index":3,"text":"\"é\u0000\n"}}"#,
            r#"{"turn":-1,"step":1.5,"chunk":{"type":"text-delta","index":2e3,"text":""}}"#,
            r#"{"turn":1,"step":1,"chunk":{"type":"tool-call-delta","index":0,"id":"c1","argumentsDelta":"{\"a\""}}"#,
            r#"{"turn":1,"step":1,"chunk":{"type":"tool-call-delta","index":0,"id":"c\u00e9","name":"read","argumentsDelta":""}}"#,
        ];
        for (seq, data) in canonical.iter().enumerate() {
            let e = Event::parse(&format!(
                r#"{{"type":"assistant/chunk","seq":{seq},"time":-7,"data":{data}}}"#
            ))
            .unwrap();
            let d = e.data.as_str();
            let fast = eligible_canonical(&e, d).unwrap_or_else(|| panic!("canonical: {d}"));
            let slow = eligible_any_order(&e, d).unwrap_or_else(|| panic!("fields: {d}"));
            assert_eq!(parts(&fast), parts(&slow), "{d}");
            assert_eq!((fast.seq, fast.time), (seq as u64, -7));
        }
        // Any other order, spacing or a missing or extra key: not the byte
        // reader's (the field reader decides alone).
        let other = [
            r#"{"step":2,"turn":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}"#,
            r#"{"turn":1,"step":2,"chunk":{"index":0,"type":"text-delta","text":"a"}}"#,
            r#"{"turn":1, "step":2,"chunk":{"type":"text-delta","index":0,"text":"a"}}"#,
            r#"{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"a","x":1}}"#,
            r#"{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0}}"#,
            r#"{"turn":"1","step":2,"chunk":{"type":"text-delta","index":0,"text":"a"}}"#,
            r#"{"turn":1,"step":2,"chunk":{"type":"tool-call-delta","index":0,"name":"n","id":"c","argumentsDelta":""}}"#,
        ];
        for data in other {
            let e = Event::parse(&format!(
                r#"{{"type":"assistant/chunk","seq":0,"time":0,"data":{data}}}"#
            ))
            .unwrap();
            assert!(eligible_canonical(&e, e.data.as_str()).is_none(), "{data}");
        }
        // A tool-call delta without its name, keys reordered, still packs.
        let tc = |seq: u64| {
            chunk(
                seq,
                0,
                r#"{"argumentsDelta":"x","id":"c1","index":0,"type":"tool-call-delta"}"#,
            )
        };
        let ev = [tc(0), tc(1), tc(2)];
        let recs = pack(&ev, &PackLimits::JSONL);
        assert_eq!(
            lines(&recs),
            vec![
                r#"{"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[0,0],"id":"c1","args":["x","x","x"]}}"#
            ]
        );
    }

    #[test]
    fn keys_in_another_order_pack_by_key_set_like_the_original() {
        // Chunk keys, data keys and envelope keys in another order: the
        // original packs on exact key *sets* (DIFFERENCES A.2 #20), and
        // expansion writes the canonical order.
        let reordered_chunk = chunk(3, 0, r#"{"index":0,"type":"text-delta","text":"r"}"#);
        let reordered_data = Event::parse(
            r#"{"type":"assistant/chunk","seq":4,"time":0,"data":{"chunk":{"type":"text-delta","index":0,"text":"s"},"step":1,"turn":1}}"#,
        )
        .unwrap();
        let reordered_envelope = Event::parse(
            r#"{"seq":5,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"t"}},"type":"assistant/chunk","time":0}"#,
        )
        .unwrap();
        let ev = vec![
            text(0, 0, "a"),
            text(1, 0, "b"),
            text(2, 0, "c"),
            reordered_chunk,
            reordered_data,
            reordered_envelope,
        ];
        let recs = pack(&ev, &PackLimits::JSONL);
        assert_eq!(
            lines(&recs),
            vec![
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[0,0,0,0,0],"texts":["a","b","c","r","s","t"]}}"#
            ]
        );
        let canonical: Vec<Event> = (0..6u64)
            .map(|i| text(i, 0, ["a", "b", "c", "r", "s", "t"][i as usize]))
            .collect();
        assert_eq!(expand(&recs), canonical);
        // A tool-call delta with its name, keys reordered.
        let tc = |seq: u64| {
            chunk(
                seq,
                0,
                r#"{"argumentsDelta":"{","name":"read","id":"c1","index":0,"type":"tool-call-delta"}"#,
            )
        };
        let recs = pack(&[tc(0), tc(1), tc(2)], &PackLimits::JSONL);
        assert_eq!(
            lines(&recs),
            vec![
                r#"{"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[0,0],"id":"c1","name":"read","args":["{","{","{"]}}"#
            ]
        );
        // Extra keys still do not pack.
        let extra = chunk(3, 0, r#"{"type":"text-delta","index":0,"text":"r","x":1}"#);
        let ev = vec![text(0, 0, "a"), text(1, 0, "b"), text(2, 0, "c"), extra];
        assert_eq!(pack(&ev, &PackLimits::JSONL).len(), 2);
    }

    #[test]
    fn extra_envelope_keys_are_not_packed() {
        let mut e = text(1, 0, "b");
        e.ignorable = true;
        let ev = vec![text(0, 0, "a"), e, text(2, 0, "c"), text(3, 0, "d")];
        let recs = pack(&ev, &PackLimits::JSONL);
        assert_eq!(recs.len(), 4);
        assert_eq!(expand(&recs), ev);
    }

    #[test]
    fn sqlite_limits_split_rows() {
        let ev: Vec<Event> = (0..1100).map(|i| text(i, i as i64, "x")).collect();
        let recs = pack(&ev, &PackLimits::SQLITE);
        assert_eq!(
            recs.iter().map(Record::member_count).collect::<Vec<_>>(),
            vec![1024, 76]
        );
        assert_eq!(expand(&recs), ev);
        let big = "y".repeat(1100);
        let ev: Vec<Event> = (0..960).map(|i| text(i, 5, &big)).collect();
        let recs = pack(&ev, &PackLimits::SQLITE);
        for r in &recs {
            if let Record::Packed(p) = r {
                assert!(p.data_json().len() <= 1024 * 1024);
            }
        }
        assert!(recs.len() > 1);
        assert_eq!(expand(&recs), ev);
        // sizes computed without building match the built rows, for every
        // prefix of a run of text or tool-call deltas (with and without name)
        let tool_call = |i: u64, name: &str| {
            chunk(
                i,
                (i * i) as i64 - 9,
                &format!(
                    r#"{{"type":"tool-call-delta","index":2,"id":"call-1"{name},"argumentsDelta":"{{\"k"}}"#
                ),
            )
        };
        for n in [1usize, 3, 7, 40] {
            let runs: [Vec<Event>; 3] = [
                (0..n as u64)
                    .map(|i| text(i, (i * i) as i64 - 9, "ab\"c"))
                    .collect(),
                (0..n as u64).map(|i| tool_call(i, "")).collect(),
                (0..n as u64)
                    .map(|i| tool_call(i, r#","name":"read_file""#))
                    .collect(),
            ];
            for ev in &runs {
                let d: Vec<Delta<'_>> = ev.iter().map(|e| eligible(e).unwrap()).collect();
                let sizes = row_data_len_prefix(&d);
                for m in 1..=n {
                    assert_eq!(sizes[m], build_row(&d[..m]).data.len(), "{m} of {n}");
                }
            }
        }
    }

    #[test]
    fn malformed_rows_are_errors() {
        let cases = [
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b","c"]}}"#,
                "dt has 1 gaps for 3 members",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":[]}}"#,
                "texts is empty",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1.5],"texts":["a","b"]}}"#,
                "dt must hold safe integers",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a",2]}}"#,
                "strings only",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b"],"x":1}}"#,
                "unexpected key \"x\"",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"index":0,"dt":[1],"texts":["a","b"]}}"#,
                "missing step",
            ),
            (
                r#"{"type":"tool-call-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1],"args":["a","b"]}}"#,
                "missing id",
            ),
            (
                r#"{"type":"text-chunks","seq0":-1,"time0":0,"data":{}}"#,
                "seq0 must be a non-negative safe integer",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"extra":1,"data":{}}"#,
                "unexpected key \"extra\"",
            ),
            (
                r#"{"type":"text-chunks","seq0":9007199254740990,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}}"#,
                "not a safe integer",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":9007199254740990,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}}"#,
                "time is not a safe integer",
            ),
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":"1","step":1,"index":0,"dt":[1],"texts":["a","b"]}}"#,
                "malformed",
            ),
            // `id` and `name` belong to tool-call rows only.
            (
                r#"{"type":"text-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"id":"c1","dt":[1],"texts":["a","b"]}}"#,
                "unexpected key \"id\"",
            ),
            (
                r#"{"type":"reasoning-chunks","seq0":0,"time0":0,"data":{"turn":1,"step":1,"index":0,"name":"bash","dt":[1],"texts":["a","b"]}}"#,
                "unexpected key \"name\"",
            ),
        ];
        for (line, want) in cases {
            let e = Record::parse_line(line).unwrap_err();
            assert!(e.0.contains(want), "{line}: {e}");
        }
    }

    /// A row from a SQLite column reaches `from_parts` without the line
    /// parser's checks: its own bounds are exact at the safe-integer limit.
    #[test]
    fn row_parts_are_bounded_at_the_safe_integer_limit() {
        const MAX: u64 = MAX_SAFE_INTEGER as u64;
        let one = r#"{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}"#;
        let row = PackedRow::from_parts("text-chunks", MAX, 0, one).unwrap();
        assert_eq!(row.seq0(), MAX);
        let e = PackedRow::from_parts("text-chunks", MAX + 1, 0, one).unwrap_err();
        assert!(
            e.0.contains("seq0 9007199254740992 is not a safe integer"),
            "{e}"
        );
        for time0 in [MAX as i64, -(MAX as i64)] {
            let row = PackedRow::from_parts("text-chunks", 0, time0, one).unwrap();
            assert_eq!(row.time0(), time0);
        }
        for time0 in [MAX as i64 + 1, -(MAX as i64) - 1] {
            let e = PackedRow::from_parts("text-chunks", 0, time0, one).unwrap_err();
            assert!(e.0.contains("time0"), "{time0}: {e}");
        }
        let two = r#"{"turn":1,"step":1,"index":0,"dt":[0],"texts":["a","b"]}"#;
        PackedRow::from_parts("text-chunks", MAX - 1, 0, two).unwrap();
        let e = PackedRow::from_parts("text-chunks", MAX, 0, two).unwrap_err();
        assert!(e.0.contains("member seq 9007199254740992"), "{e}");
    }

    /// Rows are read through a fast path for the spelling this format
    /// writes; a spelling that is not JSON (a leading zero) or not
    /// canonical must still be judged as the general parser judges it.
    #[test]
    fn row_integers_are_read_as_json_reads_them() {
        let row = |seq0: &str, time0: &str| {
            format!(
                r#"{{"type":"text-chunks","seq0":{seq0},"time0":{time0},"data":{{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b"]}}}}"#
            )
        };
        for (seq0, time0) in [
            ("05", "0"),
            ("00", "0"),
            ("0", "05"),
            ("0", "-05"),
            ("-0", "+1"),
            // Each beside a canonical field of two digits, so that only the
            // bad spelling can send the line off the fast path.
            ("05", "10"),
            ("10", "05"),
            ("10", "-05"),
            ("-10", "10"),
        ] {
            let line = row(seq0, time0);
            assert!(Record::parse_line(&line).is_err(), "{line}");
        }
        for (seq0, time0, want) in [
            ("10", "-10", (10, -10)),
            (
                "9007199254740990",
                "-9007199254740991",
                (MAX_SAFE_INTEGER as u64 - 1, -MAX_SAFE_INTEGER),
            ),
            (
                "1234567890123456",
                "1234567890123456",
                (1_234_567_890_123_456, 1_234_567_890_123_456),
            ),
            ("1.0", "2.5e1", (1, 25)),
        ] {
            let line = row(seq0, time0);
            match Record::parse_line(&line) {
                Ok(Record::Packed(r)) => assert_eq!((r.seq0(), r.time0()), want, "{line}"),
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    /// Why a stored line is not a record: the JSONL scan treats a later
    /// `turn/end` without a usable seq as committed corruption, so the
    /// type is read even when it is written with an escape.
    #[test]
    fn stored_lines_that_are_not_records_say_why() {
        use StoredLineError::{NoSeq, Unparsable};
        // The original crashes on a `null` line; this build calls it
        // unparsable (README choices), not a line without a seq.
        assert_eq!(Record::parse_stored_line("null"), Err(Unparsable));
        assert_eq!(Record::parse_stored_line("{\"type\":"), Err(Unparsable));
        let no_seq = |got: &str, turn_end: bool| {
            Err(NoSeq {
                got: got.into(),
                turn_end,
            })
        };
        assert_eq!(Record::parse_stored_line("[1]"), no_seq("undefined", false));
        for (line, got, turn_end) in [
            (
                r#"{"type":"turn/end","seq":"x","time":0,"data":{}}"#,
                "x",
                true,
            ),
            (
                r#"{"type":"turn\/end","seq":-1,"time":0,"data":{}}"#,
                "-1",
                true,
            ),
            (
                r#"{"time":0,"type":"turn/end","data":{}}"#,
                "undefined",
                true,
            ),
            (
                r#"{"type":"turn/start","seq":"x","time":0,"data":{}}"#,
                "x",
                false,
            ),
            (
                r#"{"type":"turn\/start","seq":1.5,"time":0,"data":{}}"#,
                "1.5",
                false,
            ),
        ] {
            assert_eq!(
                Record::parse_stored_line(line),
                no_seq(got, turn_end),
                "{line}"
            );
        }
    }

    #[test]
    fn rows_from_disk_keep_their_data_text() {
        let line = r#"{"type":"reasoning-chunks","seq0":43,"time0":5,"data":{"turn":1,"step":2,"index":0,"dt":[0,25],"texts":["Summarize"," now","."]}}"#;
        let r = Record::parse_line(line).unwrap();
        let mut s = String::new();
        r.write_json(&mut s);
        assert_eq!(s, line);
        let ev = expand(std::slice::from_ref(&r));
        assert_eq!(ev.len(), 3);
        assert_eq!(
            ev[1].to_json(),
            r#"{"type":"assistant/chunk","seq":44,"time":5,"data":{"turn":1,"step":2,"chunk":{"type":"reasoning-delta","index":0,"text":" now"}}}"#
        );
        assert_eq!(ev[2].time, 30);
        // re-packing the expanded events gives the same row
        assert_eq!(pack(&ev, &PackLimits::JSONL), vec![r]);
    }

    #[test]
    fn plain_lines_parse_as_events() {
        let line = r#"{"type":"turn/end","seq":3,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}"#;
        let r = Record::parse_line(line).unwrap();
        assert!(r.is_turn_end());
        assert_eq!(r.first_seq(), 3);
        assert!(Record::parse_line("{\"type\":").is_err());
        assert!(Record::parse_line("not json").is_err());
    }
}
