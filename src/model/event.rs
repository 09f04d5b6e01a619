//! The event envelope (SPEC §1.1) and its text form.
//!
//! An [`Event`] keeps `data` (and the surface fields) as JSON text: the load
//! path never builds a value tree. The envelope's key order is remembered so an
//! event handed in whole (or read from disk) is written back byte for byte.

use std::fmt::Write as _;
use std::sync::Arc;

use super::json::{self, JsonText, Scanner};
use super::vocabulary;

/// An event type name. Known types are an index into the static
/// vocabulary (no allocation on load); any other name is shared text.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct EventType(TypeRepr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum TypeRepr {
    /// [`vocabulary::static_index`] of the name.
    Static(u16),
    /// A name outside the static vocabulary (never one inside it, so the
    /// derived equality compares names).
    Owned(Arc<str>),
}

impl EventType {
    /// Interns `name`: a known type (or a packed-row tag) costs no allocation.
    pub fn new(name: &str) -> Self {
        match vocabulary::static_index(name) {
            Some(i) => EventType(TypeRepr::Static(i)),
            None => EventType(TypeRepr::Owned(Arc::from(name))),
        }
    }

    /// [`EventType::new`] for a name of the static vocabulary.
    pub fn known(name: &'static str) -> Self {
        EventType::new(name)
    }

    pub fn as_str(&self) -> &str {
        match &self.0 {
            TypeRepr::Static(i) => vocabulary::static_by_index(*i),
            TypeRepr::Owned(s) => s,
        }
    }
}

impl PartialEq<str> for EventType {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for EventType {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Debug for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One envelope key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Key {
    Type = 0,
    Seq = 1,
    Time = 2,
    Data = 3,
    SourceEventSeqs = 4,
    SurfaceOp = 5,
    Ignorable = 6,
}

impl Key {
    const ALL: [Key; 7] = [
        Key::Type,
        Key::Seq,
        Key::Time,
        Key::Data,
        Key::SourceEventSeqs,
        Key::SurfaceOp,
        Key::Ignorable,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Key::Type => "type",
            Key::Seq => "seq",
            Key::Time => "time",
            Key::Data => "data",
            Key::SourceEventSeqs => "sourceEventSeqs",
            Key::SurfaceOp => "surfaceOp",
            Key::Ignorable => "ignorable",
        }
    }

    pub fn from_name(name: &str) -> Option<Key> {
        Some(match name {
            "type" => Key::Type,
            "seq" => Key::Seq,
            "time" => Key::Time,
            "data" => Key::Data,
            "sourceEventSeqs" => Key::SourceEventSeqs,
            "surfaceOp" => Key::SurfaceOp,
            "ignorable" => Key::Ignorable,
            _ => return None,
        })
    }
}

/// The order in which an event's envelope keys are written: a permutation of
/// all seven keys (absent keys are skipped when writing).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct KeyOrder([Key; 7]);

impl KeyOrder {
    /// Live `Session.append` order: `type, seq, time, data, sourceEventSeqs,
    /// surfaceOp, ignorable`. Also the order of events rebuilt from SQLite.
    pub const LIVE: KeyOrder = KeyOrder(Key::ALL);
    /// Synthetic closers: `surfaceOp` before `sourceEventSeqs`.
    pub const CLOSER: KeyOrder = KeyOrder([
        Key::Type,
        Key::Seq,
        Key::Time,
        Key::Data,
        Key::SurfaceOp,
        Key::SourceEventSeqs,
        Key::Ignorable,
    ]);

    /// Builds an order from the keys as they appeared; keys that did not
    /// appear follow in [`KeyOrder::LIVE`] order.
    pub fn from_seen(seen: &[Key]) -> KeyOrder {
        // The usual case (every record this format writes): the keys in
        // live order, some left out at the end.
        if Key::ALL.starts_with(seen) {
            return KeyOrder::LIVE;
        }
        let mut out = [Key::Type; 7];
        let mut n = 0;
        for &k in seen {
            if !out[..n].contains(&k) {
                out[n] = k;
                n += 1;
            }
        }
        for k in Key::ALL {
            if !out[..n].contains(&k) {
                out[n] = k;
                n += 1;
            }
        }
        KeyOrder(out)
    }

    pub fn keys(&self) -> &[Key; 7] {
        &self.0
    }
}

impl std::fmt::Debug for KeyOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|k| k.name()))
            .finish()
    }
}

/// One session event.
///
/// `surface_op` and `source_event_seqs` are kept as JSON text: a stored log may
/// hold malformed values that `read_from` must still return verbatim; the
/// surface rules ([`super::surface`]) parse them where they apply.
///
/// Laid out for a loaded log of millions (issue 16): the type is a
/// vocabulary index, and the fields most events lack (the surface fields, a
/// type name outside the vocabulary, an invalid envelope) sit behind one
/// optional box; a unit test holds the size at 64 bytes.
#[derive(Clone, PartialEq)]
pub struct Event {
    pub data: JsonText,
    pub seq: u64,
    pub time: i64,
    /// `None` when every field of [`Extras`] is empty (kept so by the
    /// setters, so the derived equality compares fields).
    extras: Option<Box<Extras>>,
    /// [`vocabulary::static_index`] of the type, or [`OWNED_TYPE`] (the name
    /// is [`Extras::owned_type`]).
    type_code: u16,
    pub ignorable: bool,
    pub key_order: KeyOrder,
}

/// `Event::type_code` of a type outside the static vocabulary.
const OWNED_TYPE: u16 = u16::MAX;

/// The rarely present parts of an [`Event`].
#[derive(Clone, Debug, Default, PartialEq)]
struct Extras {
    owned_type: Option<Arc<str>>,
    source_event_seqs: Option<JsonText>,
    surface_op: Option<JsonText>,
    /// Set on a stored record that parses as a JSON object with a valid
    /// `seq` but breaks another envelope rule (SPEC §1.8): the original's
    /// scan keeps such a record (`read_from` returns it verbatim) and only
    /// turning the log into a session refuses it. `None` for every valid
    /// event.
    invalid: Option<Arc<InvalidEnvelope>>,
}

impl Extras {
    fn is_empty(&self) -> bool {
        self.owned_type.is_none()
            && self.source_event_seqs.is_none()
            && self.surface_op.is_none()
            && self.invalid.is_none()
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("event_type", &self.type_str())
            .field("seq", &self.seq)
            .field("time", &self.time)
            .field("data", &self.data)
            .field("source_event_seqs", &self.source_event_seqs())
            .field("surface_op", &self.surface_op())
            .field("ignorable", &self.ignorable)
            .field("key_order", &self.key_order)
            .field("invalid", &self.invalid())
            .finish()
    }
}

/// A stored record kept despite an invalid envelope: its text, written back
/// verbatim, and the rule it breaks.
#[derive(Debug, PartialEq, Eq)]
pub struct InvalidEnvelope {
    pub text: Box<str>,
    pub problem: String,
}

/// Why a record's envelope was refused (SPEC §1.8). The message names the
/// problem; the caller adds the line/seq context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvelopeError {
    /// The text is not a JSON object.
    Syntax(String),
    /// A JSON object that is not a valid event envelope.
    Invalid(String),
}

impl std::fmt::Display for EnvelopeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EnvelopeError::Syntax(m) | EnvelopeError::Invalid(m) => f.write_str(m),
        }
    }
}

impl Event {
    /// A new event in live key order.
    pub fn new(event_type: EventType, seq: u64, time: i64, data: JsonText) -> Self {
        let mut e = Event {
            data,
            seq,
            time,
            extras: None,
            type_code: OWNED_TYPE,
            ignorable: false,
            key_order: KeyOrder::LIVE,
        };
        e.set_event_type(event_type);
        e
    }

    /// Whether this is a stored record kept with an invalid envelope.
    pub fn is_invalid_envelope(&self) -> bool {
        self.invalid().is_some()
    }

    pub fn type_str(&self) -> &str {
        if self.type_code == OWNED_TYPE {
            match &self.extras {
                Some(x) => x.owned_type.as_deref().unwrap_or_default(),
                None => "",
            }
        } else {
            vocabulary::static_by_index(self.type_code)
        }
    }

    /// The event's type (a known type costs no allocation).
    pub fn event_type(&self) -> EventType {
        if self.type_code == OWNED_TYPE {
            EventType::new(self.type_str())
        } else {
            EventType(TypeRepr::Static(self.type_code))
        }
    }

    pub fn set_event_type(&mut self, event_type: EventType) {
        match event_type.0 {
            TypeRepr::Static(i) => {
                self.type_code = i;
                self.edit_extras(|x| x.owned_type = None);
            }
            TypeRepr::Owned(name) => {
                self.type_code = OWNED_TYPE;
                self.edit_extras(|x| x.owned_type = Some(name));
            }
        }
    }

    pub fn source_event_seqs(&self) -> Option<&JsonText> {
        self.extras.as_ref()?.source_event_seqs.as_ref()
    }

    pub fn set_source_event_seqs(&mut self, v: Option<JsonText>) {
        self.edit_extras(|x| x.source_event_seqs = v);
    }

    pub fn surface_op(&self) -> Option<&JsonText> {
        self.extras.as_ref()?.surface_op.as_ref()
    }

    pub fn set_surface_op(&mut self, v: Option<JsonText>) {
        self.edit_extras(|x| x.surface_op = v);
    }

    /// The verbatim record and the rule it breaks, for a stored record kept
    /// with an invalid envelope (see [`Event::parse_stored`]).
    pub fn invalid(&self) -> Option<&Arc<InvalidEnvelope>> {
        self.extras.as_ref()?.invalid.as_ref()
    }

    fn set_invalid(&mut self, v: Option<Arc<InvalidEnvelope>>) {
        self.edit_extras(|x| x.invalid = v);
    }

    /// Changes the extras, keeping `extras` `None` when they are all empty.
    fn edit_extras(&mut self, f: impl FnOnce(&mut Extras)) {
        match &mut self.extras {
            Some(x) => {
                f(x);
                if x.is_empty() {
                    self.extras = None;
                }
            }
            None => {
                let mut x = Extras::default();
                f(&mut x);
                if !x.is_empty() {
                    self.extras = Some(Box::new(x));
                }
            }
        }
    }

    /// Parses an event envelope from JSON object text, checking the envelope
    /// rules of SPEC §1.8: keys only from the seven envelope keys, `type` a
    /// string, `seq` a non-negative safe integer, `time` a safe integer, `data`
    /// present, `ignorable` absent or `true`. Values are kept as raw text.
    pub fn parse(text: &str) -> Result<Event, EnvelopeError> {
        RawEnvelope::scan(text).map(|r| r.to_event())
    }
}

/// A valid event envelope as slices of its text (what [`Event::parse`]
/// checks, before it copies anything): a reader that only has to judge a
/// record, not keep it, stops here.
#[derive(Clone, Copy, Debug)]
pub struct RawEnvelope<'a> {
    pub event_type: json::JsonStr<'a>,
    pub seq: u64,
    pub time: i64,
    /// The raw `data` value.
    pub data: &'a str,
    pub source_event_seqs: Option<&'a str>,
    pub surface_op: Option<&'a str>,
    pub ignorable: bool,
    pub key_order: KeyOrder,
}

impl<'a> RawEnvelope<'a> {
    /// Checks the envelope rules of [`Event::parse`] (the same errors, in
    /// the same order) without allocating for a valid one.
    pub fn scan(text: &'a str) -> Result<RawEnvelope<'a>, EnvelopeError> {
        let mut s = Scanner::new(text);
        let mut seen = [Key::Type; 7];
        let mut n_seen = 0;
        let mut ty: Option<Option<json::JsonStr<'_>>> = None;
        let mut seq = None;
        let mut time = None;
        let mut data = None;
        let mut ses = None;
        let mut sop = None;
        let mut ignorable = None;
        let mut bad_key: Option<String> = None;
        let res = s.object(|k, s| {
            let key = Key::from_name(&k.decode());
            match key {
                None => {
                    s.value()?;
                    if bad_key.is_none() {
                        bad_key = Some(k.decode().into_owned());
                    }
                    return Ok(());
                }
                Some(key) => {
                    if seen[..n_seen].contains(&key) {
                        s.value()?;
                        if bad_key.is_none() {
                            bad_key = Some(format!("{} (duplicate)", key.name()));
                        }
                        return Ok(());
                    }
                    seen[n_seen] = key;
                    n_seen += 1;
                    if key == Key::Type {
                        // The string token at once (no second scan of it).
                        ty = Some(if s.peek() == Some(b'"') {
                            Some(s.string()?)
                        } else {
                            s.value()?;
                            None
                        });
                        return Ok(());
                    }
                    let v = s.value()?;
                    match key {
                        Key::Type => {}
                        Key::Seq => seq = Some(v),
                        Key::Time => time = Some(v),
                        Key::Data => data = Some(v),
                        Key::SourceEventSeqs => ses = Some(v),
                        Key::SurfaceOp => sop = Some(v),
                        Key::Ignorable => ignorable = Some(v),
                    }
                }
            }
            Ok(())
        });
        if let Err(e) = res.and_then(|_| s.expect_end()) {
            return Err(EnvelopeError::Syntax(e.to_string()));
        }
        let ty = match ty.flatten() {
            Some(t) => t,
            None => return Err(EnvelopeError::Invalid("event type must be a string".into())),
        };
        let type_name = ty.decode();
        let seq = match seq.and_then(json::as_safe_uint) {
            Some(v) => v,
            None => {
                return Err(EnvelopeError::Invalid(format!(
                    "event {} seq must be a non-negative safe integer",
                    json::quote(&type_name)
                )));
            }
        };
        if let Some(k) = bad_key {
            return Err(EnvelopeError::Invalid(format!(
                "event at seq {seq} has unexpected key {}",
                json::quote(&k)
            )));
        }
        let time = match time.and_then(json::as_safe_int) {
            Some(v) => v,
            None => {
                return Err(EnvelopeError::Invalid(format!(
                    "event at seq {seq} time must be a safe integer"
                )));
            }
        };
        let data = match data {
            Some(v) => v,
            None => {
                return Err(EnvelopeError::Invalid(format!(
                    "event at seq {seq} has no data"
                )));
            }
        };
        let ignorable = match ignorable {
            None => false,
            Some(v) if json::is_true(v) => true,
            Some(_) => {
                return Err(EnvelopeError::Invalid(format!(
                    "event at seq {seq} ignorable must be absent or true"
                )));
            }
        };
        Ok(RawEnvelope {
            event_type: ty,
            seq,
            time,
            data,
            source_event_seqs: ses,
            surface_op: sop,
            ignorable,
            key_order: KeyOrder::from_seen(&seen[..n_seen]),
        })
    }

    /// The event, its values copied out of the text.
    pub fn to_event(&self) -> Event {
        let mut e = Event::new(
            EventType::new(&self.event_type.decode()),
            self.seq,
            self.time,
            JsonText::from_trusted(self.data),
        );
        e.ignorable = self.ignorable;
        e.key_order = self.key_order;
        if self.source_event_seqs.is_some() || self.surface_op.is_some() {
            e.set_source_event_seqs(self.source_event_seqs.map(JsonText::from_trusted));
            e.set_surface_op(self.surface_op.map(JsonText::from_trusted));
        }
        e
    }
}

impl Event {
    /// Parses a stored record as the original's scan keeps it: a JSON
    /// object whose `seq` is a non-negative safe integer is a record even
    /// when another envelope rule fails (`time` 1.5, an unknown key, no
    /// `data`, `ignorable: false`, a non-string `type`); such an event is
    /// marked [`Event::invalid`] and keeps its text verbatim. Anything else
    /// is an error: not a JSON object, or no usable `seq` (the caller reports
    /// a seq gap).
    pub fn parse_stored(text: &str) -> Result<Event, EnvelopeError> {
        match Event::parse(text) {
            Ok(e) => Ok(e),
            Err(EnvelopeError::Invalid(problem)) => {
                let fields =
                    json::object_fields(text).map_err(|e| EnvelopeError::Syntax(e.to_string()))?;
                let get = |k: &str| fields.iter().find(|(n, _)| n.eq_str(k)).map(|(_, v)| *v);
                let seq = get("seq")
                    .and_then(json::as_safe_uint)
                    .ok_or(EnvelopeError::Invalid(problem.clone()))?;
                let type_name = get("type")
                    .and_then(json::as_str)
                    .map(|t| t.decode().into_owned())
                    .unwrap_or_default();
                let mut e = Event::new(
                    EventType::new(&type_name),
                    seq,
                    get("time").and_then(json::as_safe_int).unwrap_or(0),
                    JsonText::from_trusted(get("data").unwrap_or("null")),
                );
                e.set_surface_op(get("surfaceOp").map(JsonText::from_trusted));
                e.set_source_event_seqs(get("sourceEventSeqs").map(JsonText::from_trusted));
                e.ignorable = get("ignorable").is_some_and(json::is_true);
                e.set_invalid(Some(Arc::new(InvalidEnvelope {
                    text: text.trim().into(),
                    problem,
                })));
                Ok(e)
            }
            Err(other) => Err(other),
        }
    }

    /// Appends the compact JSON text of the event in its key order.
    pub fn write_json(&self, out: &mut String) {
        if let Some(raw) = self.invalid() {
            out.push_str(&raw.text);
            return;
        }
        out.push('{');
        let mut first = true;
        for &k in self.key_order.keys() {
            let present = match k {
                Key::SourceEventSeqs => self.source_event_seqs().is_some(),
                Key::SurfaceOp => self.surface_op().is_some(),
                Key::Ignorable => self.ignorable,
                _ => true,
            };
            if !present {
                continue;
            }
            if !first {
                out.push(',');
            }
            first = false;
            out.push('"');
            out.push_str(k.name());
            out.push_str("\":");
            match k {
                Key::Type => json::write_string(out, self.type_str()),
                Key::Seq => {
                    let _ = write!(out, "{}", self.seq);
                }
                Key::Time => {
                    let _ = write!(out, "{}", self.time);
                }
                Key::Data => out.push_str(self.data.as_str()),
                Key::SourceEventSeqs => out.push_str(
                    self.source_event_seqs()
                        .as_ref()
                        .map_or("null", |t| t.as_str()),
                ),
                Key::SurfaceOp => out.push_str(self.surface_op().map_or("null", |t| t.as_str())),
                Key::Ignorable => out.push_str("true"),
            }
        }
        out.push('}');
    }

    /// The compact JSON text of the event.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(64 + self.data.as_str().len());
        self.write_json(&mut out);
        out
    }

    /// The raw text of a top-level field of `data`, if `data` is an object
    /// holding it.
    pub fn data_field(&self, key: &str) -> Option<&str> {
        self.data.get(key)
    }

    /// `data.turn` as a safe integer, when present.
    pub fn turn(&self) -> Option<i64> {
        self.data_field("turn").and_then(json::as_safe_int)
    }

    /// `data.step` as a safe integer, when present.
    pub fn step(&self) -> Option<i64> {
        self.data_field("step").and_then(json::as_safe_int)
    }
}

/// Writes `events` as a JSON array (`[e0,e1,…]`).
pub fn write_events_array(out: &mut String, events: &[Event]) {
    json::write_array(out, events, |out, e| e.write_json(out));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_keeps_text_and_order() {
        let line = r#"{"type":"user/message","seq":2,"time":5,"data":{"b":1,"a":2},"surfaceOp":"append","sourceEventSeqs":[0]}"#;
        let e = Event::parse(line).unwrap();
        assert_eq!(e.event_type(), "user/message");
        assert_eq!(e.seq, 2);
        assert_eq!(e.time, 5);
        assert_eq!(e.data.as_str(), r#"{"b":1,"a":2}"#);
        assert_eq!(e.to_json(), line);
    }

    #[test]
    fn live_order_puts_source_seqs_before_surface_op() {
        let mut e = Event::new(
            EventType::new("tool/result"),
            3,
            -4,
            JsonText::from_trusted("{}"),
        );
        e.set_surface_op(Some(JsonText::from_trusted("\"append\"")));
        e.set_source_event_seqs(Some(JsonText::from_trusted("[1]")));
        assert_eq!(
            e.to_json(),
            r#"{"type":"tool/result","seq":3,"time":-4,"data":{},"sourceEventSeqs":[1],"surfaceOp":"append"}"#
        );
        e.key_order = KeyOrder::CLOSER;
        assert_eq!(
            e.to_json(),
            r#"{"type":"tool/result","seq":3,"time":-4,"data":{},"surfaceOp":"append","sourceEventSeqs":[1]}"#
        );
        e.ignorable = true;
        assert!(e.to_json().ends_with(r#","ignorable":true}"#));
    }

    #[test]
    fn envelope_rules() {
        let cases = [
            (
                r#"{"type":1,"seq":0,"time":0,"data":{}}"#,
                "type must be a string",
            ),
            (
                r#"{"type":"x","seq":-1,"time":0,"data":{}}"#,
                "seq must be a non-negative safe integer",
            ),
            (
                r#"{"type":"x","seq":9007199254740992,"time":0,"data":{}}"#,
                "seq must be",
            ),
            (
                r#"{"type":"x","seq":0,"time":1.5,"data":{}}"#,
                "time must be a safe integer",
            ),
            (r#"{"type":"x","seq":0,"time":0}"#, "has no data"),
            (
                r#"{"type":"x","seq":0,"time":0,"data":{},"ignorable":false}"#,
                "ignorable must be absent or true",
            ),
            (
                r#"{"type":"x","seq":0,"time":0,"data":{},"extra":1}"#,
                "unexpected key \"extra\"",
            ),
        ];
        for (text, want) in cases {
            let err = Event::parse(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text}: {err}");
        }
        assert!(matches!(
            Event::parse("{nope"),
            Err(EnvelopeError::Syntax(_))
        ));
        assert!(matches!(Event::parse("[1]"), Err(EnvelopeError::Syntax(_))));
    }

    #[test]
    fn type_interning() {
        assert_eq!(EventType::new("turn/start").as_str(), "turn/start");
        assert_eq!(EventType::new("future/x").as_str(), "future/x");
        assert_eq!(EventType::new("turn/start"), EventType::known("turn/start"));
        assert_ne!(EventType::new("future/x"), EventType::new("turn/start"));
    }

    /// A loaded log holds one `Event` per record: its size is the load's
    /// memory floor (issue 16), so it must not grow unnoticed.
    #[test]
    fn event_stays_small() {
        assert_eq!(std::mem::size_of::<Event>(), 64);
    }

    #[test]
    fn rare_fields_round_trip_and_empty_extras_compare_equal() {
        let plain = Event::new(
            EventType::new("turn/start"),
            1,
            2,
            JsonText::from_trusted("{}"),
        );
        let mut e = plain.clone();
        e.set_event_type(EventType::new("future/x"));
        e.set_surface_op(Some(JsonText::from_trusted("\"append\"")));
        e.set_source_event_seqs(Some(JsonText::from_trusted("[0]")));
        assert_eq!(e.type_str(), "future/x");
        assert_eq!(e.event_type(), EventType::new("future/x"));
        assert_eq!(e.surface_op().map(|t| t.as_str()), Some("\"append\""));
        assert_eq!(e.source_event_seqs().map(|t| t.as_str()), Some("[0]"));
        assert_ne!(e, plain);
        e.set_event_type(EventType::new("turn/start"));
        e.set_surface_op(None);
        e.set_source_event_seqs(None);
        assert_eq!(e, plain);
        assert_eq!(e.to_json(), plain.to_json());
        let bad = Event::parse_stored(r#"{"type":"x","seq":4,"time":1.5,"data":{}}"#).unwrap();
        assert!(bad.is_invalid_envelope());
        assert_eq!(
            bad.to_json(),
            r#"{"type":"x","seq":4,"time":1.5,"data":{}}"#
        );
    }
}
