//! Validation of a stored log when it is read (SPEC §1.8), of every event
//! before it is appended, and of host data (§1.3).
//!
//! One rule set, as in the original's stored-event normalization:
//! - [`read_from_view`] (every read, `read_from` included): the refusal of
//!   unsupported legacy records, then per event the conversion of older
//!   shapes (§1.9) and the per-message shape checks, then the refusal of
//!   unknown required types (*format unsupported*). Failures are plain
//!   corruption errors.
//! - [`session_view`] (load, inspect, prepare): all of the above, then per
//!   event the envelope, the surface rules (§1.5), the `request/header`
//!   shape, and the strict turn/step trace (§1.6) when asked. Failures are
//!   wrapped like the original's `SessionPersistenceCorruptionError`
//!   (`stored session "<id>" failed validation: Error: <cause>`); format
//!   refusals stay *format unsupported*.
//! - [`LogState::check_append`] (store-level and live appends): the same
//!   functions on the new events, continuing the state of the stored log, so
//!   everything `append` acknowledges loads back, and nothing a load accepts
//!   is refused. A failure is an invalid-argument error naming the session,
//!   the event type, its seq and the rule.
//!
//! Chunk events cost one string comparison here.

use super::event::Event;
use super::fields;
use super::invariants::TurnTrace;
use super::json::{self, JsonText, Kind};
use super::legacy::{EarlierEvents, convert_event, message_id_of, needs_conversion_check};
use super::repair::closers;
use super::surface::{SurfaceState, SurfaceUndo};
use super::vocabulary::Vocabulary;
use crate::error::{Error, Result};

const CHUNK: &str = "assistant/chunk";

/// The checks and conversions every read applies (SPEC §1.8, "read_from"),
/// in the original's order: the refusal of unsupported legacy records over
/// the whole log (corruption); per event, the conversion of older shapes
/// (§1.9) and the message shape checks (corruption); then the refusal of
/// unknown non-ignorable types ([`Vocabulary::refusal`], format unsupported).
///
/// `raw_log` is the artifact path for backends that keep one file per
/// session (appended to the unknown-type message).
pub fn read_from_view(
    session_id: &str,
    raw_log: Option<&str>,
    vocab: &Vocabulary,
    events: &mut [Event],
) -> Result<()> {
    // One pass (a load walks 100k+ events, 98% chunks that no rule
    // touches), with the original's precedence (see [`ReadRules`]).
    let mut rules = ReadRules::default();
    let earlier = EarlierEvents::default();
    for i in 0..events.len() {
        if events[i].type_str() == CHUNK {
            continue;
        }
        let (head, rest) = events.split_at_mut(i);
        let lookup = |seq: u64| earlier.message_id(head, seq);
        rules
            .event(session_id, vocab, &lookup, &mut rest[0])
            .map_err(Error::corruption)?;
    }
    rules.finish(session_id, raw_log)
}

/// The rules of [`read_from_view`] applied one event at a time, in log
/// order, with the original's precedence: a legacy refusal anywhere beats
/// a conversion or shape failure, which beats an unknown type. A load
/// keeping its events and a fold that drops them after judging
/// ([`super::log_fold::LogFold`]) both run them.
#[derive(Debug, Default)]
pub struct ReadRules {
    /// The first conversion or shape failure.
    failed: Option<String>,
    /// The type and seq of the first unknown non-ignorable type (before
    /// any failure).
    unknown: Option<(String, u64)>,
}

impl ReadRules {
    /// Converts and judges the next event of the log. `inherited` gives
    /// the raw message id of an earlier event by seq (converted as this
    /// pass left it). A legacy refusal is returned at once (it beats every
    /// other failure); the others are kept for [`ReadRules::finish`].
    pub fn event(
        &mut self,
        session_id: &str,
        vocab: &Vocabulary,
        inherited: &dyn Fn(u64) -> Option<String>,
        e: &mut Event,
    ) -> std::result::Result<(), String> {
        if e.type_str() == CHUNK {
            return Ok(());
        }
        if let Some(m) = legacy_refusal(session_id, e) {
            return Err(m);
        }
        if self.failed.is_some() {
            return Ok(());
        }
        if let Err(m) = convert_and_check_shape(session_id, inherited, e) {
            self.failed = Some(m);
            return Ok(());
        }
        if self.unknown.is_none() {
            if let Some(name) = unknown_type(vocab, e) {
                self.unknown = Some((name.to_string(), e.seq));
            }
        }
        Ok(())
    }

    /// Whether every event so far passed (nothing for [`ReadRules::finish`]
    /// to refuse yet).
    pub fn clean(&self) -> bool {
        self.failed.is_none() && self.unknown.is_none()
    }

    /// Whether a later event may still need [`ReadRules::event`]'s
    /// `inherited` (no conversion runs after a failure).
    pub fn converting(&self) -> bool {
        self.failed.is_none()
    }

    /// The refusal of the events judged, if any: a conversion or shape
    /// failure (corruption), else an unknown type (format unsupported).
    pub fn finish(self, session_id: &str, raw_log: Option<&str>) -> Result<()> {
        if let Some(m) = self.failed {
            return Err(Error::corruption(m));
        }
        if let Some((name, seq)) = self.unknown {
            return Err(Vocabulary::refusal(session_id, &name, seq, raw_log));
        }
        Ok(())
    }
}

/// Converts one event from an older shape (SPEC §1.9) and applies the
/// message shape checks (§1.8) to the result. `inherited` gives the raw
/// message id of an earlier event by seq (for a `tool/result` replacement).
fn convert_and_check_shape(
    session_id: &str,
    inherited: &dyn Fn(u64) -> Option<String>,
    e: &mut Event,
) -> std::result::Result<(), String> {
    if needs_conversion_check(e.type_str()) {
        convert_event(session_id, inherited, e)?;
    }
    if e.is_invalid_envelope() {
        return Ok(());
    }
    check_message_shape(e)
}

/// The type name of `e` when it is unknown and not ignorable (SPEC §1.4).
fn unknown_type<'e>(vocab: &Vocabulary, e: &'e Event) -> Option<&'e str> {
    let name = e.type_str();
    (name != CHUNK && !e.ignorable && !vocab.knows(name)).then_some(name)
}

/// The message of a removed legacy record this build refuses to read:
/// `request/header-delta`, `mode/set`, and `request/header` with
/// `reason: "fallback"`.
pub fn legacy_refusal(session_id: &str, e: &Event) -> Option<String> {
    let name = e.type_str();
    let what = match name {
        "request/header-delta" | "mode/set" => format!("{name} event"),
        "request/header"
            if fields::str_is(fields::field(e.data.as_str(), "reason"), "fallback") =>
        {
            "request/header reason \"fallback\"".to_string()
        }
        _ => return None,
    };
    Some(format!(
        "session {} contains unsupported legacy {what} at seq {}",
        json::quote(session_id),
        e.seq
    ))
}

/// The per-message shape checks of SPEC §1.8 for surface-type events (other
/// types pass). The message (`data` for user/message, `data.message`
/// otherwise) needs a non-empty string `id`, `role` `assistant` for
/// assistant/message else `user`, a `source` object with a non-empty string
/// `kind`, and an array `content`; assistant/message needs a model source
/// with non-empty `provider` and `model`; tool/result a tool source with a
/// non-empty `callId` and exactly one `tool-result` block for that call.
pub fn check_message_shape(e: &Event) -> Result<(), String> {
    let name = e.type_str();
    let (message, role) = match name {
        "user/message" => (Some(e.data.as_str()), "user"),
        "assistant/message" => (fields::field(e.data.as_str(), "message"), "assistant"),
        "tool/result" => (fields::field(e.data.as_str(), "message"), "user"),
        _ => return Ok(()),
    };
    let at = |m: &str| format!("session event at seq {} message {m}", e.seq);
    // The original's wording for a missing message or id.
    let unidentified = || format!("session event at seq {} lacks an identified message", e.seq);
    let Some(message) = message.filter(|m| json::kind_of(m) == Some(Kind::Object)) else {
        return Err(unidentified());
    };
    let [id, role_v, source, content] =
        fields::pick(message, ["id", "role", "source", "content"]).unwrap_or_default();
    if !fields::is_nonempty_str(id) {
        return Err(unidentified());
    }
    if !fields::str_is(role_v, role) {
        return Err(at(&format!("must have role {}", json::quote(role))));
    }
    let source = source.filter(|s| json::kind_of(s) == Some(Kind::Object));
    let kind = source.and_then(|s| fields::field(s, "kind"));
    if source.is_none() || !fields::is_nonempty_str(kind) {
        return Err(at("must have a source object with a non-empty string kind"));
    }
    let source = source.unwrap_or_default();
    if !fields::is_kind(content, Kind::Array) {
        return Err(at("must have array content"));
    }
    match name {
        "assistant/message" => {
            let [provider, model] = fields::pick(source, ["provider", "model"]).unwrap_or_default();
            if !fields::str_is(kind, "model")
                || !fields::is_nonempty_str(provider)
                || !fields::is_nonempty_str(model)
            {
                return Err(at("must have model source"));
            }
        }
        "tool/result" => {
            let call_id = fields::field(source, "callId");
            if !fields::str_is(kind, "tool") || !fields::is_nonempty_str(call_id) {
                return Err(at("must have tool source with a non-empty callId"));
            }
            let blocks = json::array_items(content.unwrap_or("[]")).unwrap_or_default();
            let ok = match blocks.as_slice() {
                [block] => {
                    let [ty, tcid, inner] =
                        fields::pick(block, ["type", "toolCallId", "content"]).unwrap_or_default();
                    fields::str_is(ty, "tool-result")
                        && fields::is_kind(inner, Kind::Array)
                        && match (tcid.and_then(json::as_str), call_id.and_then(json::as_str)) {
                            (Some(a), Some(b)) => a.raw() == b.raw() || a.decode() == b.decode(),
                            _ => false,
                        }
                }
                _ => false,
            };
            if !ok {
                return Err(at(
                    "content must be exactly one tool-result block whose toolCallId equals source.callId and whose content is an array",
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// The `request/header` shape check (SPEC §1.8) for the event at `index`:
/// `data.header.config` has non-empty string `provider` and `model`;
/// `reasoningEffort`, when present, is a non-empty string; `adapterDefaults`,
/// when present, is an object whose only keys are `reasoningEffort` and
/// `maxTokens`, each `true`, each only when the config has that field.
pub fn check_request_header(index: usize, e: &Event) -> Result<(), String> {
    let header =
        fields::field(e.data.as_str(), "header").filter(|h| json::kind_of(h) == Some(Kind::Object));
    let config = header
        .and_then(|h| fields::field(h, "config"))
        .filter(|c| json::kind_of(c) == Some(Kind::Object));
    let [provider, model, effort, max_tokens] = config
        .and_then(|c| fields::pick(c, ["provider", "model", "reasoningEffort", "maxTokens"]))
        .unwrap_or_default();
    if !fields::is_nonempty_str(provider) || !fields::is_nonempty_str(model) {
        return Err(format!(
            "seed request/header at index {index} lacks provider/model"
        ));
    }
    if effort.is_some() && !fields::is_nonempty_str(effort) {
        return Err(format!(
            "seed request/header at index {index} has an invalid reasoningEffort"
        ));
    }
    // `data.header.adapterDefaults` (beside `config`, as the original
    // reads it): only true markers for fields the config sets.
    if let Some(d) = header.and_then(|h| fields::field(h, "adapterDefaults")) {
        let bad = || format!("seed request/header at index {index} has invalid adapterDefaults");
        if json::kind_of(d) != Some(Kind::Object) {
            return Err(bad());
        }
        let f = json::object_fields(d).map_err(|_| bad())?;
        for (k, v) in &f {
            let present = if k.eq_str("reasoningEffort") {
                effort.is_some()
            } else if k.eq_str("maxTokens") {
                max_tokens.is_some()
            } else {
                false
            };
            if !present || !json::is_true(v) {
                return Err(bad());
            }
        }
    }
    Ok(())
}

/// The per-event rules of turning a stored log into a session (SPEC §1.8),
/// after [`read_from_view`]: a kept invalid envelope is refused, then the
/// surface rules, the `request/header` shape, and the strict trace when
/// `trace` is given. `index` is the event's place in the log. On error the
/// states are unchanged; the message is the bare rule text with the index.
pub(super) fn session_rules(
    surface: &mut SurfaceState,
    trace: Option<&mut TurnTrace>,
    index: usize,
    e: &Event,
) -> std::result::Result<(), String> {
    session_rules_undoable(surface, trace, index, e).map(drop)
}

/// [`session_rules`], returning how to take back the surface change (on
/// error nothing is changed: the surface change is taken back when a later
/// rule fails).
fn session_rules_undoable(
    surface: &mut SurfaceState,
    trace: Option<&mut TurnTrace>,
    index: usize,
    e: &Event,
) -> std::result::Result<Option<SurfaceUndo>, String> {
    if e.is_invalid_envelope() {
        return Err(format!(
            "seed event at index {index} has an invalid event envelope"
        ));
    }
    let mut undo = None;
    if e.type_str() != CHUNK || e.surface_op().is_some() || e.source_event_seqs().is_some() {
        undo = Some(
            surface
                .apply_undoable(e)
                .map_err(|m| format!("invalid seed event at index {index}: {m}"))?,
        );
        if e.type_str() == "request/header" {
            if let Err(m) = check_request_header(index, e) {
                surface.undo(undo.take().expect("set above"));
                return Err(m);
            }
        }
    }
    if let Some(t) = trace {
        if let Err(m) = t.check(e) {
            if let Some(u) = undo {
                surface.undo(u);
            }
            return Err(format!("invalid seed event at index {index}: {m}"));
        }
    }
    Ok(undo)
}

/// What `load` / `inspect` / `prepare` do to a stored log, in one pass
/// ([`super::log_fold::fold_in_place`]): [`read_from_view`] (wrapped like a
/// validation failure, format refusals kept), then per event the envelope,
/// the surface rules, the `request/header` shape and, when `strict`, the
/// turn/step trace (failures wrapped with [`Error::failed_validation`]);
/// and the closers that balance the log ([`closers`]; empty when the last
/// turn is closed).
pub fn session_view(
    session_id: &str,
    raw_log: Option<&str>,
    vocab: &Vocabulary,
    strict: bool,
    events: &mut [Event],
) -> Result<Vec<Event>> {
    // The one fold of the rules (a cold append runs it on the streamed
    // log), here on the events kept.
    super::log_fold::fold_in_place(session_id, raw_log, vocab, strict, false, events)?;
    Ok(closers(events))
}

/// The fold of a log's rules up to its end, kept by the store (per cold
/// session) and by a live session to judge the next appends with exactly
/// the rules a load applies.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogState {
    pub(super) surface: SurfaceState,
    pub(super) trace: TurnTrace,
    pub(super) len: usize,
}

impl LogState {
    /// The state of an empty log.
    pub fn new() -> Self {
        LogState::default()
    }

    /// The state after `events`, a log that was already judged (as a load
    /// converts it): folded, not judged again (a log written before strict
    /// mode may not follow the strict trace).
    pub fn fold(events: &[Event]) -> Self {
        let mut st = LogState::new();
        for e in events {
            let _ = st.surface.apply(e);
            st.trace.advance(e);
        }
        st.len = events.len();
        st
    }

    /// The model-visible transcript of the folded log: what
    /// [`super::surface::derive_messages`] gives for its events.
    pub fn messages(&self) -> Vec<JsonText> {
        self.surface.messages()
    }

    /// How many events the folded log holds.
    pub fn event_count(&self) -> usize {
        self.len
    }

    /// The turn open at the end of the log, if any (the trace is followed
    /// in lenient mode too).
    pub fn open_turn(&self) -> Option<i64> {
        self.trace.open_turn()
    }

    /// Judges `batch` (whole events, in order, continuing this log) with the
    /// rules a load applies to stored events ([`read_from_view`], then
    /// `session_rules`, the strict trace only when `strict`). On success
    /// the state advances and the batch is returned as a load will see it
    /// (older shapes converted); on failure the state is unchanged and the
    /// error is an invalid argument naming the session, the event type, its
    /// seq and the rule.
    ///
    /// `older_shapes`: whether an event in an older record shape (one a load
    /// converts, SPEC §1.9) is taken; a live session refuses them, since its
    /// in-memory log must equal what a load returns.
    pub fn check_append(
        &mut self,
        session_id: &str,
        vocab: &Vocabulary,
        strict: bool,
        older_shapes: bool,
        batch: &[Event],
    ) -> Result<Vec<Event>> {
        let refuse = |e: &Event, m: &str| {
            Error::invalid(format!(
                "cannot append to session {}: event {} at seq {}: {m}",
                json::quote(session_id),
                json::quote(e.type_str()),
                e.seq
            ))
        };
        for e in batch {
            if let Some(m) = legacy_refusal(session_id, e) {
                return Err(refuse(e, &m));
            }
        }
        let mut converted = batch.to_vec();
        let earlier = EarlierEvents::default();
        for i in 0..converted.len() {
            if converted[i].type_str() == CHUNK {
                continue;
            }
            let (head, rest) = converted.split_at_mut(i);
            let surface = &self.surface;
            let lookup = |seq: u64| match earlier.find(head, seq) {
                Some(e) => message_id_of(e.type_str(), e.data.as_str()),
                None => surface
                    .node_at(seq)
                    .and_then(|(name, data)| message_id_of(name, data.as_str())),
            };
            convert_and_check_shape(session_id, &lookup, &mut rest[0])
                .map_err(|m| refuse(&batch[i], &m))?;
        }
        for (e, orig) in converted.iter().zip(batch) {
            if !older_shapes && e != orig {
                return Err(refuse(
                    orig,
                    "an older record shape that reads convert; a live session appends current shapes only",
                ));
            }
            if let Some(name) = unknown_type(vocab, e) {
                return Err(refuse(
                    orig,
                    &format!(
                        "event type {} is unknown to this harness; mark it ignorable or register it with extraEventTypes",
                        json::quote(name)
                    ),
                ));
            }
        }
        // The surface and the trace are judged in place and their changes
        // taken back on failure (a copy per batch would cost what they
        // hold: the surface grows with the log, the open step's calls with
        // the step).
        let mark = self.trace.begin_batch();
        let mut undo = Vec::new();
        for (k, (e, orig)) in converted.iter().zip(batch).enumerate() {
            match session_rules_undoable(
                &mut self.surface,
                strict.then_some(&mut self.trace),
                self.len + k,
                e,
            ) {
                Ok(u) => undo.extend(u),
                Err(m) => {
                    while let Some(u) = undo.pop() {
                        self.surface.undo(u);
                    }
                    self.trace.undo_batch(mark);
                    return Err(refuse(orig, &m));
                }
            }
            if !strict {
                // Followed, not judged: the state stays the fold of the log
                // (`LogState::fold`), which the append checkpoint keeps and
                // a store opened strict later continues.
                self.trace.advance(e);
            }
        }
        self.trace.end_batch(mark);
        self.len += batch.len();
        Ok(converted)
    }
}

/// Canonicalizes host-supplied `data` text for an event of `event_type`
/// (SPEC §1.3): the exact text the original's `JSON.stringify` writes, or an
/// invalid-argument error naming the type and containing `losslessly
/// JSON-serializable`. Also rejects a numeric `turn`/`step` that is an
/// integer beyond ±(2^53−1).
pub fn check_lossless(event_type: &str, data_text: &str) -> Result<JsonText> {
    let fail = |why: String| {
        Error::invalid(format!(
            "event {} data is not losslessly JSON-serializable: {why}",
            json::quote(event_type)
        ))
    };
    let text = json::canonicalize(data_text).map_err(|e| fail(e.to_string()))?;
    if text.starts_with('{') {
        let [turn, step] = fields::pick(&text, ["turn", "step"]).unwrap_or_default();
        for (key, v) in [("turn", turn), ("step", step)] {
            if let Some(v) = v.filter(|v| json::kind_of(v) == Some(Kind::Number)) {
                let integral = json::as_f64(v).is_some_and(|f| f.fract() == 0.0);
                if integral && json::as_safe_int(v).is_none() {
                    return Err(fail(format!(
                        "{key} {v} is beyond the safe integer range (\u{b1}(2^53\u{2212}1)) and would be rounded"
                    )));
                }
            }
        }
    }
    Ok(JsonText::from_trusted(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn ev(line: &str) -> Event {
        Event::parse(line).unwrap()
    }

    fn vocab() -> Vocabulary {
        Vocabulary::default()
    }

    fn check_read(id: &str, raw: Option<&str>, v: &Vocabulary, events: &[Event]) -> Result<()> {
        let mut events = events.to_vec();
        read_from_view(id, raw, v, &mut events)
    }

    fn validate_all(
        id: &str,
        raw: Option<&str>,
        v: &Vocabulary,
        strict: bool,
        events: &[Event],
    ) -> Result<()> {
        let mut events = events.to_vec();
        session_view(id, raw, v, strict, &mut events).map(|_| ())
    }

    const USER: &str = r#"{"type":"user/message","seq":0,"time":0,"data":{"content":[],"source":{"kind":"user"},"role":"user","id":"u"},"surfaceOp":"append"}"#;

    fn assistant(seq: u64, message: &str) -> Event {
        ev(&format!(
            r#"{{"type":"assistant/message","seq":{seq},"time":0,"data":{{"turn":1,"step":1,"message":{message}}},"surfaceOp":"append"}}"#
        ))
    }

    fn tool_result(seq: u64, message: &str) -> Event {
        ev(&format!(
            r#"{{"type":"tool/result","seq":{seq},"time":0,"data":{{"turn":1,"step":1,"message":{message}}},"surfaceOp":"append"}}"#
        ))
    }

    /// The USER message at `seq` with the surface op `op` (JSON members).
    fn user_at(seq: u64, op: &str) -> Event {
        ev(&USER
            .replace(r#""seq":0"#, &format!(r#""seq":{seq}"#))
            .replace(r#""surfaceOp":"append""#, op))
    }

    const MODEL_SRC: &str = r#"{"kind":"model","provider":"p","model":"m"}"#;

    #[test]
    fn a_refused_batch_leaves_the_log_state_unchanged() {
        let v = vocab();
        let mut st = LogState::new();
        st.check_append("s", &v, false, true, &[ev(USER)]).unwrap();
        let good = user_at(1, r#""surfaceOp":"append""#);
        let replace = user_at(
            2,
            r#""surfaceOp":{"op":"replace","start":0,"end":1},"sourceEventSeqs":[0,1]"#,
        );
        let bad = user_at(
            3,
            r#""surfaceOp":{"op":"replace","start":9,"end":9},"sourceEventSeqs":[9]"#,
        );
        let batch = [good.clone(), replace.clone(), bad];
        let err = st.check_append("s", &v, false, true, &batch).unwrap_err();
        assert!(err.to_string().contains("at seq 3"), "{err}");
        assert_eq!(st.surface.seqs().collect::<Vec<_>>(), vec![0]);
        assert_eq!(st.len, 1);
        st.check_append("s", &v, false, true, &[good, replace])
            .unwrap();
        assert_eq!(st.surface.seqs().collect::<Vec<_>>(), vec![2]);
        assert_eq!(st.len, 3);
    }

    /// The trace is judged in place too: a refused batch that added calls,
    /// left the step and began another takes it all back, strict or not.
    #[test]
    fn a_refused_batch_leaves_the_trace_unchanged() {
        let v = vocab();
        let e = |seq: u64, ty: &str, data: &str| {
            ev(&format!(
                r#"{{"type":"{ty}","seq":{seq},"time":0,"data":{data}}}"#
            ))
        };
        let call = |seq: u64, step: i64, id: &str| {
            e(
                seq,
                "tool/call",
                &format!(r#"{{"turn":1,"step":{step},"callId":"{id}"}}"#),
            )
        };
        for strict in [true, false] {
            let mut st = LogState::new();
            let log = [
                e(0, "turn/start", r#"{"turn":1}"#),
                e(1, "step/start", r#"{"turn":1,"step":1}"#),
                call(2, 1, "a"),
            ];
            st.check_append("s", &v, strict, true, &log).unwrap();
            let before = st.clone();
            let batch = [
                call(3, 1, "b"),
                e(4, "step/end", r#"{"turn":1,"step":1}"#),
                e(5, "step/start", r#"{"turn":1,"step":2}"#),
                call(6, 2, "c"),
                user_at(
                    7,
                    r#""surfaceOp":{"op":"replace","start":9,"end":9},"sourceEventSeqs":[9]"#,
                ),
            ];
            let err = st.check_append("s", &v, strict, true, &batch).unwrap_err();
            assert!(err.to_string().contains("at seq 7"), "{err}");
            assert_eq!(st, before, "strict: {strict}");
            st.check_append("s", &v, strict, true, &batch[..4]).unwrap();
            assert_eq!((st.trace.open_step(), st.len), (Some(2), 7));
            assert!(st.trace.calls.contains("c") && !st.trace.calls.contains("a"));
        }
    }

    #[test]
    fn an_append_refusal_names_the_rule_as_a_load_of_that_log_would() {
        let v = vocab();
        let log = [ev(USER), user_at(1, r#""surfaceOp":"append""#)];
        let batch = [
            user_at(2, r#""surfaceOp":"append""#),
            user_at(
                3,
                r#""surfaceOp":{"op":"replace","start":9,"end":9},"sourceEventSeqs":[9]"#,
            ),
        ];
        let mut st = LogState::new();
        st.check_append("s", &v, false, true, &log).unwrap();
        let append = st.check_append("s", &v, false, true, &batch).unwrap_err();
        let whole: Vec<Event> = log.iter().chain(&batch).cloned().collect();
        let load = validate_all("s", None, &v, false, &whole).unwrap_err();
        // the rule's own text (which names the event's index in the log, 3,
        // not its index in the batch) is the same on both paths
        let rule = |e: &Error| {
            let t = e.to_string();
            t[t.find("invalid seed event").expect("rule text")..].to_string()
        };
        assert!(
            rule(&append).starts_with("invalid seed event at index 3:"),
            "{append}"
        );
        assert_eq!(rule(&append), rule(&load));
    }

    #[test]
    fn the_trace_is_followed_when_not_judged() {
        let v = vocab();
        let turn = |seq: u64, ty: &str, turn: u32| {
            ev(&format!(
                r#"{{"type":"{ty}","seq":{seq},"time":0,"data":{{"turn":{turn},"reason":{{"kind":"completed"}}}}}}"#
            ))
        };
        for strict in [false, true] {
            let mut st = LogState::new();
            assert_eq!(st.open_turn(), None);
            st.check_append("s", &v, strict, true, &[turn(0, "turn/start", 1)])
                .unwrap();
            assert_eq!(st.open_turn(), Some(1), "strict={strict}");
            st.check_append("s", &v, strict, true, &[turn(1, "turn/end", 1)])
                .unwrap();
            assert_eq!(st.open_turn(), None, "strict={strict}");
            st.check_append("s", &v, strict, true, &[turn(2, "turn/start", 2)])
                .unwrap();
            assert_eq!(st.open_turn(), Some(2), "strict={strict}");
            let log = [
                turn(0, "turn/start", 1),
                turn(1, "turn/end", 1),
                turn(2, "turn/start", 2),
            ];
            assert_eq!(st, LogState::fold(&log), "strict={strict}");
        }
    }

    #[test]
    fn shape_checks() {
        assert!(check_message_shape(&ev(USER)).is_ok());
        let ok_a = format!(r#"{{"id":"a","role":"assistant","content":[],"source":{MODEL_SRC}}}"#);
        assert!(check_message_shape(&assistant(1, &ok_a)).is_ok());
        let cases: Vec<(Event, &str)> = vec![
            (
                assistant(1, "1"),
                "session event at seq 1 lacks an identified message",
            ),
            (
                ev(r#"{"type":"assistant/message","seq":1,"time":0,"data":{}}"#),
                "lacks an identified message",
            ),
            (
                assistant(
                    1,
                    &format!(r#"{{"id":"","role":"assistant","content":[],"source":{MODEL_SRC}}}"#),
                ),
                "session event at seq 1 lacks an identified message",
            ),
            (
                assistant(
                    1,
                    &format!(r#"{{"id":"a","role":"user","content":[],"source":{MODEL_SRC}}}"#),
                ),
                "message must have role \"assistant\"",
            ),
            (
                assistant(
                    1,
                    r#"{"id":"a","role":"assistant","content":[],"source":{"kind":""}}"#,
                ),
                "message must have a source object with a non-empty string kind",
            ),
            (
                assistant(1, r#"{"id":"a","role":"assistant","content":[]}"#),
                "message must have a source object",
            ),
            (
                assistant(
                    1,
                    &format!(
                        r#"{{"id":"a","role":"assistant","content":{{}},"source":{MODEL_SRC}}}"#
                    ),
                ),
                "message must have array content",
            ),
            (
                assistant(
                    1,
                    r#"{"id":"x","role":"assistant","content":[],"source":{"kind":"user"}}"#,
                ),
                "session event at seq 1 message must have model source",
            ),
            (
                assistant(
                    1,
                    r#"{"id":"x","role":"assistant","content":[],"source":{"kind":"model","provider":"p"}}"#,
                ),
                "session event at seq 1 message must have model source",
            ),
            // each of the three model-source conditions fails alone
            (
                assistant(
                    1,
                    r#"{"id":"x","role":"assistant","content":[],"source":{"kind":"tool","provider":"p","model":"m"}}"#,
                ),
                "session event at seq 1 message must have model source",
            ),
            (
                assistant(
                    1,
                    r#"{"id":"x","role":"assistant","content":[],"source":{"kind":"model","provider":"","model":"m"}}"#,
                ),
                "session event at seq 1 message must have model source",
            ),
            (
                ev(
                    r#"{"type":"user/message","seq":0,"time":0,"data":{"content":[],"source":{"kind":"user"},"role":"assistant","id":"u"},"surfaceOp":"append"}"#,
                ),
                "message must have role \"user\"",
            ),
            (
                tool_result(
                    2,
                    r#"{"id":"r","role":"user","content":[],"source":{"kind":"user","callId":"c"}}"#,
                ),
                "session event at seq 2 message must have tool source with a non-empty callId",
            ),
            (
                tool_result(
                    2,
                    r#"{"id":"r","role":"user","content":[],"source":{"kind":"tool"}}"#,
                ),
                "must have tool source with a non-empty callId",
            ),
            (
                tool_result(
                    2,
                    r#"{"id":"r","role":"user","content":[],"source":{"kind":"tool","callId":"c"}}"#,
                ),
                "content must be exactly one tool-result block",
            ),
            (
                tool_result(
                    2,
                    r#"{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"d","content":[]}],"source":{"kind":"tool","callId":"c"}}"#,
                ),
                "content must be exactly one tool-result block",
            ),
            (
                tool_result(
                    2,
                    r#"{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c","content":"x"}],"source":{"kind":"tool","callId":"c"}}"#,
                ),
                "content must be exactly one tool-result block",
            ),
            (
                tool_result(
                    2,
                    r#"{"id":"r","role":"user","content":[{"type":"text","toolCallId":"c","content":[]}],"source":{"kind":"tool","callId":"c"}}"#,
                ),
                "content must be exactly one tool-result block",
            ),
        ];
        for (e, want) in cases {
            let err = check_message_shape(&e).unwrap_err();
            assert!(err.contains(want), "want {want:?} in {err:?}");
        }
        let ok_r = tool_result(
            2,
            r#"{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"c","content":[]}],"source":{"kind":"tool","callId":"c"}}"#,
        );
        assert!(check_message_shape(&ok_r).is_ok());
        // the ids are compared as strings, as the original compares them
        // after JSON.parse: different escapes of one id are equal
        let escaped = tool_result(
            2,
            r#"{"id":"r","role":"user","content":[{"type":"tool-result","toolCallId":"\u0063","content":[]}],"source":{"kind":"tool","callId":"c"}}"#,
        );
        assert!(check_message_shape(&escaped).is_ok());
    }

    #[test]
    fn read_checks_refuse_legacy_and_unknown() {
        let delta = ev(r#"{"type":"request/header-delta","seq":14,"time":0,"data":{"delta":{}}}"#);
        let err = check_read("legacy-header-delta", None, &vocab(), &[delta]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corruption);
        assert_eq!(
            err.to_string(),
            "session \"legacy-header-delta\" contains unsupported legacy request/header-delta event at seq 14"
        );
        let mode = ev(r#"{"type":"mode/set","seq":3,"time":0,"data":{},"ignorable":true}"#);
        assert_eq!(
            check_read("s", None, &vocab(), &[mode])
                .unwrap_err()
                .to_string(),
            "session \"s\" contains unsupported legacy mode/set event at seq 3"
        );
        let fb = ev(
            r#"{"type":"request/header","seq":4,"time":0,"data":{"header":{},"reason":"fallback"}}"#,
        );
        assert_eq!(
            check_read("s", None, &vocab(), &[fb])
                .unwrap_err()
                .to_string(),
            "session \"s\" contains unsupported legacy request/header reason \"fallback\" at seq 4"
        );
        let unknown = ev(r#"{"type":"future/required-thing","seq":14,"time":0,"data":{}}"#);
        let err = check_read(
            "unknown-required",
            Some("/r/x"),
            &vocab(),
            std::slice::from_ref(&unknown),
        )
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::FormatUnsupported);
        assert!(err.to_string().ends_with("(raw log: /r/x)"));
        // the same refusal from session_view is not wrapped
        let err = validate_all(
            "unknown-required",
            None,
            &vocab(),
            false,
            std::slice::from_ref(&unknown),
        )
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::FormatUnsupported);
        // ignorable or registered: kept
        let ign = ev(r#"{"type":"future/x","seq":0,"time":0,"data":1,"ignorable":true}"#);
        assert!(check_read("s", None, &vocab(), &[ign]).is_ok());
        let v = Vocabulary::with_extra(["future/required-thing".to_string()]);
        assert!(check_read("s", None, &v, &[unknown]).is_ok());
    }

    #[test]
    fn read_check_applies_shapes_unwrapped_and_session_check_wraps() {
        let bad = assistant(
            15,
            r#"{"role":"assistant","content":[],"source":{"kind":"user"},"id":"x"}"#,
        );
        let err = check_read(
            "bad-assistant-source",
            None,
            &vocab(),
            std::slice::from_ref(&bad),
        )
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corruption);
        assert_eq!(
            err.to_string(),
            "session event at seq 15 message must have model source"
        );
        assert_eq!(err.cause(), None);
        let err = validate_all("bad-assistant-source", None, &vocab(), false, &[bad]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "stored session \"bad-assistant-source\" failed validation: Error: session event at seq 15 message must have model source"
        );
        assert_eq!(
            err.cause(),
            Some("session event at seq 15 message must have model source")
        );
    }

    #[test]
    fn surface_rules_only_in_session_validation() {
        let e = ev(
            r#"{"type":"user/message","seq":0,"time":0,"data":{"content":[],"source":{"kind":"user"},"role":"user","id":"u"}}"#,
        );
        assert!(check_read("invalid-surface", None, &vocab(), std::slice::from_ref(&e)).is_ok());
        let err = validate_all("invalid-surface", None, &vocab(), false, &[e]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "stored session \"invalid-surface\" failed validation: Error: invalid seed event at index 0: session event \"user/message\" is surface-eligible and requires a surfaceOp marker"
        );
        // chunks carrying surface fields are caught too
        let c = ev(r#"{"type":"assistant/chunk","seq":0,"time":0,"data":{},"surfaceOp":"append"}"#);
        assert!(validate_all("s", None, &vocab(), false, &[c]).is_err());
    }

    fn header(seq: u64, config: &str) -> Event {
        // `config` may end with `|{adapterDefaults}` to set the header's
        // adapterDefaults beside it.
        let (config, defaults) = match config.split_once('|') {
            Some((c, d)) => (c, format!(r#","adapterDefaults":{d}"#)),
            None => (config, String::new()),
        };
        ev(&format!(
            r#"{{"type":"request/header","seq":{seq},"time":0,"data":{{"header":{{"config":{config}{defaults}}},"reason":"change"}}}}"#
        ))
    }

    #[test]
    fn request_header_checks() {
        let ok = header(
            0,
            r#"{"provider":"p","model":"m","reasoningEffort":"high","maxTokens":5}|{"reasoningEffort":true,"maxTokens":true}"#,
        );
        assert!(check_request_header(0, &ok).is_ok());
        let cases = [
            (
                r#"{"provider":"x"}"#,
                "seed request/header at index 3 lacks provider/model",
            ),
            (r#"{"provider":"","model":"m"}"#, "lacks provider/model"),
            (
                r#"{"provider":"p","model":"m","reasoningEffort":""}"#,
                "has an invalid reasoningEffort",
            ),
            (
                r#"{"provider":"p","model":"m","reasoningEffort":1}"#,
                "has an invalid reasoningEffort",
            ),
            (
                r#"{"provider":"p","model":"m"}|{"maxTokens":true}"#,
                "invalid adapterDefaults",
            ),
            (
                r#"{"provider":"p","model":"m","maxTokens":3}|{"maxTokens":false}"#,
                "invalid adapterDefaults",
            ),
            (
                r#"{"provider":"p","model":"m","maxTokens":3}|{"other":true}"#,
                "invalid adapterDefaults",
            ),
            (
                r#"{"provider":"p","model":"m"}|[]"#,
                "invalid adapterDefaults",
            ),
        ];
        for (config, want) in cases {
            let err = check_request_header(3, &header(3, config)).unwrap_err();
            assert!(err.contains(want), "{config}: {err}");
        }
        let no_header = ev(r#"{"type":"request/header","seq":0,"time":0,"data":{}}"#);
        assert!(check_request_header(0, &no_header).is_err());
        // read_from does not run it; session validation does, wrapped
        let bad = header(0, r#"{"provider":"x"}"#);
        let events = [
            ev(r#"{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}"#),
            {
                let mut b = bad.clone();
                b.seq = 1;
                b
            },
        ];
        assert!(check_read("h", None, &vocab(), &events).is_ok());
        assert_eq!(
            validate_all("h", None, &vocab(), false, &events)
                .unwrap_err()
                .to_string(),
            "stored session \"h\" failed validation: Error: seed request/header at index 1 lacks provider/model"
        );
    }

    #[test]
    fn strict_trace_runs_only_when_asked() {
        let events = [ev(
            r#"{"type":"turn/end","seq":0,"time":0,"data":{"turn":1,"reason":{"kind":"completed"}}}"#,
        )];
        assert!(validate_all("s", None, &vocab(), false, &events).is_ok());
        let err = validate_all("s", None, &vocab(), true, &events).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corruption);
        assert!(err.to_string().contains(
            "invalid seed event at index 0: \"turn/end\" at seq 0 ends a turn but no turn is open"
        ));
    }

    #[test]
    fn lossless_host_data() {
        assert_eq!(
            check_lossless("x", r#"{ "a" : 1.0 }"#).unwrap().as_str(),
            r#"{"a":1}"#
        );
        let err = check_lossless("tool/result", r#"{"a":-0}"#).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        let m = err.to_string();
        assert!(
            m.contains("\"tool/result\"") && m.contains("losslessly JSON-serializable"),
            "{m}"
        );
        let m = check_lossless("step/start", r#"{"turn":1,"step":9007199254740993}"#)
            .unwrap_err()
            .to_string();
        assert!(
            m.contains("losslessly JSON-serializable") && m.contains("step 9007199254740993"),
            "{m}"
        );
        assert!(check_lossless("turn/start", r#"{"turn":9007199254740992}"#).is_err());
        // inside free-form data big integers stay verbatim
        assert_eq!(
            check_lossless("x", r#"{"meta":12345678901234567890}"#)
                .unwrap()
                .as_str(),
            r#"{"meta":12345678901234567890}"#
        );
        assert!(check_lossless("x", r#"{"turn":null,"step":1.5}"#).is_ok());
        assert!(check_lossless("x", "[1]").is_ok());
    }
}
