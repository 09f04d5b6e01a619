//! Older record shapes of format v0 converted on read (SPEC §1.9).
//!
//! Applied per event, in order, over the whole log, in memory only (storage
//! is never rewritten). Converted `data` is compact JSON text built from the
//! original's raw value slices. Key order: where the spec gives the new
//! object, keys are written in that order; where a shape is extended (`{…,
//! message}`), the original object's keys come first in their order and the
//! new keys are appended. The upstream dumps sort keys, so where the
//! original's order is unknowable this is the choice made.

use std::cell::Cell;

use super::event::{Event, EventType};
use super::fields::{self, push_key};
use super::json::{self, JsonText, Kind};
use crate::error::{Error, Result};

/// Converts every older record shape of `events` in place (SPEC §1.9):
/// pre-react-loop `turn/start` triggers, older `turn/end` reasons,
/// `steering/message`, and pre-identity user/assistant/tool messages (minted
/// ids `legacy-message:<session id>:<seq>`; a `tool/result` surface replace
/// inherits the id of the message at its `surfaceOp.start`).
///
/// Fails with corruption on a shape that looks old but is malformed
/// (`session "<id>" contains malformed pre-react-loop turn/start at seq N`,
/// likewise `turn/end` and `steering/message`), as the original does.
pub fn convert_legacy(session_id: &str, events: &mut [Event]) -> Result<()> {
    let earlier = EarlierEvents::default();
    for i in 0..events.len() {
        if !needs_conversion_check(events[i].type_str()) {
            continue;
        }
        let (head, rest) = events.split_at_mut(i);
        let lookup = |seq: u64| earlier.message_id(head, seq);
        convert_event(session_id, &lookup, &mut rest[0]).map_err(Error::corruption)?;
    }
    Ok(())
}

/// Whether an event of this type may be an older shape (every other type,
/// chunks above all, passes without a look).
pub fn needs_conversion_check(type_name: &str) -> bool {
    matches!(
        type_name,
        "turn/start"
            | "turn/end"
            | "steering/message"
            | "user/message"
            | "assistant/message"
            | "tool/result"
    )
}

/// Finds earlier events of a log by seq, for a pass over the log in place
/// (`head`: the events before the one judged, a prefix that only grows from
/// one lookup to the next). A `tool/result` replacement asks for the event
/// at its `surfaceOp.start` (the id it inherits); a search back from each
/// replacement cost the log's length per replacement, so a session pruning
/// its old results one by one loaded in time growing as its square. Seqs
/// strictly ascend in a log: the event is found by a binary search, the
/// order checked once per event as `head` grows. A head out of order (no
/// read passes one) is searched back from its end, as before: the last
/// event with the seq.
#[derive(Debug, Default)]
pub struct EarlierEvents {
    /// How many leading events of `head` were checked for order.
    checked: Cell<usize>,
    /// Whether a checked event did not come after the one before it.
    out_of_order: Cell<bool>,
}

impl EarlierEvents {
    /// The last event of `head` with `seq`.
    pub fn find<'e>(&self, head: &'e [Event], seq: u64) -> Option<&'e Event> {
        if !self.out_of_order.get() {
            let checked = self.checked.get();
            // Another head than the one before: checked from its start.
            let from = if checked > head.len() { 0 } else { checked };
            let ascending = head[from.saturating_sub(1)..]
                .windows(2)
                .all(|w| w[0].seq < w[1].seq);
            self.out_of_order.set(!ascending);
            self.checked.set(head.len());
        }
        if self.out_of_order.get() {
            return head.iter().rev().find(|e| e.seq == seq);
        }
        head.binary_search_by_key(&seq, |e| e.seq)
            .ok()
            .map(|i| &head[i])
    }

    /// The raw message id of the last event of `head` with `seq` (what a
    /// `tool/result` replacement of it inherits).
    pub fn message_id(&self, head: &[Event], seq: u64) -> Option<String> {
        self.find(head, seq)
            .and_then(|e| message_id_of(e.type_str(), e.data.as_str()))
    }
}

/// Whether the `data` text of an `assistant/chunk` may name a message
/// (then [`message_id_of`] is asked): a key that decodes to `message` holds
/// the word or a `\u` escape. Most chunks hold neither, and are passed
/// over without a parse; the searchers are built once per process.
pub fn chunk_may_name_a_message(data: &[u8]) -> bool {
    use memchr::memmem::Finder;
    use once_cell::sync::Lazy;
    static WORD: Lazy<Finder<'static>> = Lazy::new(|| Finder::new(b"message"));
    static ESCAPE: Lazy<Finder<'static>> = Lazy::new(|| Finder::new(b"\\u"));
    WORD.find(data).is_some() || ESCAPE.find(data).is_some()
}

/// The raw (quoted) id of the message an event carries, when it is a
/// string: `data.id` for user/message, `data.message.id` otherwise.
pub fn message_id_of(type_name: &str, data: &str) -> Option<String> {
    let message = match type_name {
        "user/message" => data,
        _ => fields::field(data, "message")?,
    };
    if json::kind_of(message) != Some(Kind::Object) {
        return None;
    }
    let id = fields::field(message, "id")?;
    (json::kind_of(id) == Some(Kind::String)).then(|| id.trim().to_string())
}

/// Converts one event in place, in the original's order (turn/start,
/// turn/end, steering/message, then the pre-identity message shapes).
/// `inherited` gives the raw message id of the event at a seq before this
/// one (for a `tool/result` replacement). The error is the bare rule text.
pub fn convert_event(
    session_id: &str,
    inherited: &dyn Fn(u64) -> Option<String>,
    e: &mut Event,
) -> std::result::Result<(), String> {
    if e.is_invalid_envelope() {
        // Kept verbatim for read_from; session validation refuses it.
        return Ok(());
    }
    let malformed = |what: &str| {
        format!(
            "session {} contains malformed pre-react-loop {what} at seq {}",
            json::quote(session_id),
            e.seq
        )
    };
    match e.type_str() {
        "turn/start" => {
            if let Some(text) =
                convert_turn_start(e.data.as_str()).map_err(|()| malformed("turn/start"))?
            {
                e.data = JsonText::from_trusted(text);
            }
        }
        "turn/end" => {
            if let Some(text) =
                convert_turn_end(e.data.as_str()).map_err(|()| malformed("turn/end"))?
            {
                e.data = JsonText::from_trusted(text);
            }
        }
        "steering/message" => {
            let text = convert_steering(session_id, e.seq, e.data.as_str())
                .ok_or_else(|| malformed("steering/message"))?;
            e.set_event_type(EventType::known("user/message"));
            e.data = JsonText::from_trusted(text);
        }
        _ => {}
    }
    let data = e.data.as_str();
    let new = match e.type_str() {
        "user/message" => convert_user(session_id, e.seq, data),
        "assistant/message" => convert_assistant(session_id, e.seq, data),
        "tool/result" => {
            let id = match replace_start(e) {
                Some(start) => start.and_then(inherited),
                None => Some(legacy_id(session_id, e.seq)),
            };
            convert_tool_result(data, id.as_deref())
        }
        _ => None,
    };
    if let Some(text) = new {
        e.data = JsonText::from_trusted(text);
    }
    Ok(())
}

fn legacy_id(session_id: &str, seq: u64) -> String {
    let mut out = String::new();
    json::write_string(&mut out, &format!("legacy-message:{session_id}:{seq}"));
    out
}

fn has(f: &[(json::JsonStr<'_>, &str)], key: &str) -> bool {
    f.iter().any(|(k, _)| k.eq_str(key))
}

fn get<'a>(f: &[(json::JsonStr<'_>, &'a str)], key: &str) -> Option<&'a str> {
    f.iter().find(|(k, _)| k.eq_str(key)).map(|(_, v)| *v)
}

/// The original's `hasOnlyKeys`: every `required` key present, no key
/// outside `required` and `optional`.
fn has_only_keys(f: &[(json::JsonStr<'_>, &str)], required: &[&str], optional: &[&str]) -> bool {
    f.iter()
        .all(|(k, _)| required.iter().chain(optional).any(|r| k.eq_str(r)))
        && required.iter().all(|r| has(f, r))
}

/// The fields of an object value (not an array, not null), as the
/// original's `asRecord`.
fn record(raw: &str) -> Option<Vec<(json::JsonStr<'_>, &str)>> {
    if json::kind_of(raw) != Some(Kind::Object) {
        return None;
    }
    json::object_fields(raw).ok()
}

fn is_kind(raw: Option<&str>, kind: Kind) -> bool {
    raw.and_then(json::kind_of) == Some(kind)
}

/// `Number.isSafeInteger(v) && v >= min`.
fn safe_int_at_least(raw: Option<&str>, min: i64) -> bool {
    raw.and_then(json::as_safe_int).is_some_and(|v| v >= min)
}

/// Rule 1: `{turn, trigger}` → `{turn}`. `Ok(None)`: not an old shape;
/// `Err`: an old shape that is malformed. The original requires only
/// `data ⊆ {turn, trigger}` (both present, turn ≥ 1) and a non-empty string
/// `trigger.kind`; other trigger keys are allowed.
fn convert_turn_start(data: &str) -> std::result::Result<Option<String>, ()> {
    let Some(f) = record(data) else {
        return Ok(None);
    };
    if !has(&f, "trigger") {
        return Ok(None);
    }
    let trigger = get(&f, "trigger").and_then(record);
    let kind_ok = trigger
        .as_ref()
        .is_some_and(|t| fields::is_nonempty_str(get(t, "kind")));
    if !safe_int_at_least(get(&f, "turn"), 1)
        || !has_only_keys(&f, &["turn", "trigger"], &[])
        || !kind_ok
    {
        return Err(());
    }
    Ok(Some(format!(
        "{{\"turn\":{}}}",
        get(&f, "turn").unwrap_or_default().trim()
    )))
}

/// Rule 2: older `turn/end` reasons. Every `turn/end` whose data is an
/// object must be `{turn ≥ 1, reason: {kind: string, …}}`; the current
/// kinds allow only their own keys. Only the `reason` value is rewritten;
/// the other keys of `data` keep their text and order.
fn convert_turn_end(data: &str) -> std::result::Result<Option<String>, ()> {
    let Some(f) = record(data) else {
        return Ok(None);
    };
    let reason_raw = get(&f, "reason");
    let rf = reason_raw.and_then(record);
    let kind = rf.as_ref().and_then(|r| fields::string(get(r, "kind")));
    let (Some(rf), Some(kind)) = (rf, kind) else {
        return Err(());
    };
    if !safe_int_at_least(get(&f, "turn"), 1) || !has_only_keys(&f, &["turn", "reason"], &[]) {
        return Err(());
    }
    let new_reason = match kind.as_str() {
        "completed" | "blocked" | "max-tokens" | "interrupted" => {
            return if has_only_keys(&rf, &["kind"], &[]) {
                Ok(None)
            } else {
                Err(())
            };
        }
        "aborted" => {
            if has(&rf, "reason") {
                return Ok(None);
            }
            if !has_only_keys(&rf, &["kind"], &[]) {
                return Err(());
            }
            "{\"kind\":\"aborted\",\"reason\":{\"kind\":\"legacy\"}}".to_string()
        }
        "disposed" => {
            if !has_only_keys(&rf, &["kind"], &[]) {
                return Err(());
            }
            "{\"kind\":\"aborted\",\"reason\":{\"kind\":\"disposed\"}}".to_string()
        }
        "error" => {
            if has(&rf, "error") {
                return Ok(None);
            }
            if !safe_int_at_least(get(&rf, "step"), 0) {
                return Err(());
            }
            let failure = get(&rf, "failure").filter(|v| is_failure(v));
            if let Some(failure) =
                failure.filter(|_| has_only_keys(&rf, &["kind", "step", "failure"], &[]))
            {
                format!("{{\"kind\":\"error\",\"error\":{}}}", failure.trim())
            } else {
                let code = get(&rf, "code");
                let keys: &[&str] = if code.is_none() {
                    &["kind", "step", "message"]
                } else {
                    &["kind", "step", "message", "code"]
                };
                let message = get(&rf, "message");
                if !has_only_keys(&rf, keys, &[])
                    || !is_kind(message, Kind::String)
                    || code.is_some() && !is_kind(code, Kind::String)
                {
                    return Err(());
                }
                format!(
                    "{{\"kind\":\"error\",\"error\":{{\"message\":{},\"code\":{}}}}}",
                    message.unwrap_or_default().trim(),
                    code.map_or("\"UNKNOWN\"", str::trim)
                )
            }
        }
        _ => return Ok(None),
    };
    Ok(fields::rewrite_object(data, |k, v| {
        Some(if k == "reason" {
            new_reason.clone()
        } else {
            v.to_string()
        })
    }))
}

/// A legacy failure object: `{message, code, status?, providerRetryAfterMs?,
/// requestId?}` with string `message`, `code` and `requestId`, numeric
/// `status` and `providerRetryAfterMs`.
fn is_failure(raw: &str) -> bool {
    let Some(f) = record(raw) else {
        return false;
    };
    let opt = |k: &str, kind: Kind| get(&f, k).is_none() || is_kind(get(&f, k), kind);
    has_only_keys(
        &f,
        &["message", "code"],
        &["status", "providerRetryAfterMs", "requestId"],
    ) && is_kind(get(&f, "message"), Kind::String)
        && is_kind(get(&f, "code"), Kind::String)
        && opt("status", Kind::Number)
        && opt("providerRetryAfterMs", Kind::Number)
        && opt("requestId", Kind::String)
}

/// Rule 3: `steering/message` → `user/message`: `{turn, message}` becomes
/// `message`; `{turn, content, source}` becomes `{content, source, id,
/// role:"user"}`. `None`: malformed (any other shape).
fn convert_steering(session_id: &str, seq: u64, data: &str) -> Option<String> {
    let f = record(data)?;
    let turn_ok = get(&f, "turn").and_then(json::as_safe_int).is_some();
    if let Some(m) = get(&f, "message").filter(|m| json::kind_of(m) == Some(Kind::Object)) {
        if turn_ok && has_only_keys(&f, &["turn", "message"], &[]) {
            return Some(m.trim().to_string());
        }
    }
    if !turn_ok || !has_only_keys(&f, &["turn", "content", "source"], &[]) {
        return None;
    }
    let mut out = fields::rewrite_object(data, |k, v| (k != "turn").then(|| v.to_string()))?;
    out.pop();
    push_key(&mut out, "id");
    out.push_str(&legacy_id(session_id, seq));
    push_key(&mut out, "role");
    out.push_str("\"user\"}");
    Some(out)
}

/// Rule 4, user/message: `{content, source}` without `id`/`role`/`message`
/// → the same keys plus `id`, `role`.
fn convert_user(session_id: &str, seq: u64, data: &str) -> Option<String> {
    let f = record(data)?;
    if !has(&f, "content")
        || !has(&f, "source")
        || has(&f, "id")
        || has(&f, "role")
        || has(&f, "message")
    {
        return None;
    }
    let mut out = fields::rewrite_object(data, |_, v| Some(v.to_string()))?;
    out.pop();
    push_key(&mut out, "id");
    out.push_str(&legacy_id(session_id, seq));
    push_key(&mut out, "role");
    out.push_str("\"user\"}");
    Some(out)
}

/// Rule 4, assistant/message: `{…, content, provenance}` without `message`
/// → `{…, message:{id, role:"assistant", content, source:{…provenance,
/// kind:"model"}}}` (a provenance that is not an object adds nothing).
fn convert_assistant(session_id: &str, seq: u64, data: &str) -> Option<String> {
    let f = record(data)?;
    if has(&f, "message") {
        return None;
    }
    let content = get(&f, "content")?;
    let provenance = get(&f, "provenance")?;
    // `{...provenance, kind:"model"}`: an existing `kind` keeps its place.
    let source = match record(provenance) {
        Some(pf) => {
            let mut source = fields::rewrite_object(provenance, |k, v| {
                Some(if k == "kind" {
                    "\"model\"".to_string()
                } else {
                    v.to_string()
                })
            })?;
            if !has(&pf, "kind") {
                source.pop();
                push_key(&mut source, "kind");
                source.push_str("\"model\"}");
            }
            source
        }
        None => "{\"kind\":\"model\"}".to_string(),
    };
    let mut out = fields::rewrite_object(data, |k, v| {
        (k != "content" && k != "provenance").then(|| v.to_string())
    })?;
    out.pop();
    push_key(&mut out, "message");
    out.push_str(&format!(
        "{{\"id\":{},\"role\":\"assistant\",\"content\":{},\"source\":{source}}}}}",
        legacy_id(session_id, seq),
        content.trim()
    ));
    Some(out)
}

/// The `start` of a tool/result's replace `surfaceOp` (an object with `op:
/// "replace"` and a numeric `start`, the original's `replacementStart`):
/// `None` when it is not one; `Some(None)` when `start` is a number that
/// is no seq.
fn replace_start(e: &Event) -> Option<Option<u64>> {
    let op = e.surface_op()?;
    let f = record(op.as_str())?;
    if !fields::str_is(get(&f, "op"), "replace") {
        return None;
    }
    let start = get(&f, "start").filter(|s| json::kind_of(s) == Some(Kind::Number))?;
    Some(json::as_safe_uint(start))
}

/// Rule 4, tool/result: `{…, callId, content, isError}` without `message` →
/// `{…, message:{id, role:"user", content:[{type:"tool-result", toolCallId:
/// callId, content, isError}], source:{kind:"tool", callId}}}`. `id` is the
/// raw id to give the message; `None` leaves it out (a replacement whose
/// shadowed message has none: validation then refuses it).
fn convert_tool_result(data: &str, id: Option<&str>) -> Option<String> {
    let f = record(data)?;
    if has(&f, "message") {
        return None;
    }
    let call_id = get(&f, "callId")?;
    let content = get(&f, "content")?;
    let is_error = get(&f, "isError")?;
    let mut out = fields::rewrite_object(data, |k, v| {
        (k != "callId" && k != "content" && k != "isError").then(|| v.to_string())
    })?;
    out.pop();
    push_key(&mut out, "message");
    out.push('{');
    if let Some(id) = id {
        out.push_str(&format!("\"id\":{id},"));
    }
    out.push_str(&format!(
        "\"role\":\"user\",\"content\":[{{\"type\":\"tool-result\",\"toolCallId\":{},\"content\":{},\"isError\":{}}}],\"source\":{{\"kind\":\"tool\",\"callId\":{}}}}}}}",
        call_id.trim(),
        content.trim(),
        is_error.trim(),
        call_id.trim()
    ));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The event of a seq is found in a growing head as a search back from
    /// its end finds it: the last one with the seq, also when the head is
    /// out of order, or another head than the one before.
    #[test]
    fn earlier_events_are_found_as_a_search_back_finds_them() {
        let at = |seq: u64, id: &str| {
            Event::parse(&format!(
                r#"{{"type":"user/message","seq":{seq},"time":0,"data":{{"id":"{id}"}}}}"#
            ))
            .unwrap()
        };
        // Every prefix of `log`, every seq: what a search back finds.
        let agrees = |earlier: &EarlierEvents, log: &[Event]| {
            for n in 0..=log.len() {
                for seq in 0..12 {
                    let back = log[..n].iter().rev().find(|e| e.seq == seq);
                    assert_eq!(earlier.find(&log[..n], seq), back, "{n} {seq}");
                }
            }
        };
        let log: Vec<Event> = [0, 1, 2, 5, 9, 10]
            .iter()
            .map(|&s| at(s, &format!("u{s}")))
            .collect();
        let earlier = EarlierEvents::default();
        agrees(&earlier, &log);
        assert_eq!(earlier.message_id(&log, 5).as_deref(), Some(r#""u5""#));
        // A seq again, then an older one: searched back, the last one wins.
        let mut odd = log.clone();
        odd.extend([at(5, "again"), at(3, "old")]);
        agrees(&earlier, &odd);
        assert_eq!(earlier.message_id(&odd, 5).as_deref(), Some(r#""again""#));
        // A fresh finder over the ascending log again takes the fast way.
        let fresh = EarlierEvents::default();
        assert_eq!(fresh.find(&log, 9).map(|e| e.seq), Some(9));
        assert!(!fresh.out_of_order.get());
    }

    fn ev(line: &str) -> Event {
        Event::parse(line).unwrap()
    }

    fn convert_one(line: &str) -> Result<Event> {
        let mut v = vec![ev(line)];
        convert_legacy("s", &mut v)?;
        Ok(v.pop().unwrap())
    }

    fn data_after(line: &str) -> String {
        convert_one(line).unwrap().data.as_str().to_string()
    }

    #[test]
    fn a_chunk_may_name_a_message_only_with_the_word_or_an_escape() {
        for (data, may) in [
            (r#"{"message":{"id":"m1"}}"#, true),
            (r#"{"\u006dessage":{"id":"m1"}}"#, true),
            (r#"{"text":"a message in the text"}"#, true),
            (r#"{"turn":1,"step":1,"delta":"plain words"}"#, false),
            ("", false),
        ] {
            assert_eq!(chunk_may_name_a_message(data.as_bytes()), may, "{data}");
            // Never false where the id lookup finds one.
            if message_id_of("assistant/chunk", data).is_some() {
                assert!(may, "{data}");
            }
        }
    }

    #[test]
    fn turn_start_trigger() {
        // The original requires only a non-empty string trigger.kind; other
        // trigger keys are allowed (its own fixture has `source`).
        assert_eq!(
            data_after(
                r#"{"type":"turn/start","seq":0,"time":0,"data":{"turn":1,"trigger":{"kind":"message","source":{"kind":"user"}}}}"#
            ),
            r#"{"turn":1}"#
        );
        assert_eq!(
            data_after(
                r#"{"type":"turn/start","seq":0,"time":0,"data":{"turn":1,"trigger":{"kind":"user"}}}"#
            ),
            r#"{"turn":1}"#
        );
        // no trigger: untouched
        assert_eq!(
            data_after(r#"{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}"#),
            r#"{"turn":1}"#
        );
        for bad in [
            r#"{"turn":0,"trigger":{"kind":"user"}}"#,
            r#"{"turn":1,"trigger":{"kind":""}}"#,
            r#"{"turn":1,"trigger":"user"}"#,
            r#"{"turn":1,"trigger":[]}"#,
            r#"{"turn":1,"trigger":{"kind":"user"},"x":1}"#,
            r#"{"trigger":{"kind":"user"}}"#,
        ] {
            let err = convert_one(&format!(
                r#"{{"type":"turn/start","seq":7,"time":0,"data":{bad}}}"#
            ))
            .unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::Corruption);
            assert_eq!(
                err.to_string(),
                "session \"s\" contains malformed pre-react-loop turn/start at seq 7",
                "{bad}"
            );
        }
    }

    fn turn_end(reason: &str) -> String {
        data_after(&format!(
            r#"{{"type":"turn/end","seq":0,"time":0,"data":{{"turn":2,"reason":{reason}}}}}"#
        ))
    }

    #[test]
    fn turn_end_reasons() {
        for same in [
            r#"{"kind":"completed"}"#,
            r#"{"kind":"blocked"}"#,
            r#"{"kind":"max-tokens"}"#,
            r#"{"kind":"interrupted"}"#,
            r#"{"kind":"aborted","reason":{"kind":"user"}}"#,
            r#"{"kind":"error","error":{"message":"m","code":"c"}}"#,
            r#"{"kind":"future-kind","x":1}"#,
        ] {
            assert_eq!(turn_end(same), format!(r#"{{"turn":2,"reason":{same}}}"#));
        }
        // Shapes the original refuses as malformed (B 11 and A.1 #9).
        for bad in [
            r#"{"turn":2,"reason":{"kind":"error","message":"no step"}}"#,
            r#"{"turn":2,"reason":{"kind":"error","step":0,"failure":{"message":"m"}}}"#,
            r#"{"turn":2,"reason":{"kind":"completed","extra":true}}"#,
            r#"{"turn":2,"reason":null}"#,
            r#"{"turn":2}"#,
            r#"{"turn":2,"step":1,"reason":{"kind":"completed"}}"#,
            r#"{"turn":2,"reason":{"kind":"aborted","extra":true}}"#,
            r#"{"turn":2,"reason":{"kind":"disposed","extra":true}}"#,
            r#"{"turn":2,"reason":{"kind":"error","step":-1,"message":"bad step"}}"#,
            r#"{"turn":2,"reason":{"kind":"error","step":0,"message":"bad code","code":1}}"#,
            r#"{"turn":0,"reason":{"kind":"completed"}}"#,
            r#"{"turn":2,"reason":{"kind":1}}"#,
        ] {
            let err = convert_one(&format!(
                r#"{{"type":"turn/end","seq":4,"time":0,"data":{bad}}}"#
            ))
            .unwrap_err();
            assert_eq!(
                err.to_string(),
                "session \"s\" contains malformed pre-react-loop turn/end at seq 4",
                "{bad}"
            );
        }
        assert_eq!(
            turn_end(r#"{"kind":"aborted"}"#),
            r#"{"turn":2,"reason":{"kind":"aborted","reason":{"kind":"legacy"}}}"#
        );
        assert_eq!(
            turn_end(r#"{"kind":"disposed"}"#),
            r#"{"turn":2,"reason":{"kind":"aborted","reason":{"kind":"disposed"}}}"#
        );
        assert_eq!(
            turn_end(r#"{"kind":"error","step":1,"message":"boom","code":"E1"}"#),
            r#"{"turn":2,"reason":{"kind":"error","error":{"message":"boom","code":"E1"}}}"#
        );
        assert_eq!(
            turn_end(r#"{"kind":"error","step":1,"message":"boom"}"#),
            r#"{"turn":2,"reason":{"kind":"error","error":{"message":"boom","code":"UNKNOWN"}}}"#
        );
        assert_eq!(
            turn_end(
                r#"{"kind":"error","step":0,"failure":{"message":"net","code":"NETWORK","status":503}}"#
            ),
            r#"{"turn":2,"reason":{"kind":"error","error":{"message":"net","code":"NETWORK","status":503}}}"#
        );
    }

    #[test]
    fn steering_message() {
        let e = convert_one(
            r#"{"type":"steering/message","seq":6,"time":0,"data":{"turn":1,"content":[{"type":"text","text":"steer!"}],"source":{"kind":"user"}},"surfaceOp":"append"}"#,
        )
        .unwrap();
        assert_eq!(e.event_type(), "user/message");
        assert_eq!(
            e.data.as_str(),
            r#"{"content":[{"type":"text","text":"steer!"}],"source":{"kind":"user"},"id":"legacy-message:s:6","role":"user"}"#
        );
        let e = convert_one(
            r#"{"type":"steering/message","seq":6,"time":0,"data":{"turn":1,"message":{"id":"m","role":"user"}}}"#,
        )
        .unwrap();
        assert_eq!(e.event_type(), "user/message");
        assert_eq!(e.data.as_str(), r#"{"id":"m","role":"user"}"#);
        // Any other shape is malformed (B 12).
        for bad in [
            r#"{"turn":1}"#,
            "null",
            r#"{"turn":1,"content":[],"source":{"kind":"user"},"extra":true}"#,
            r#"{"content":[],"source":{"kind":"user"}}"#,
        ] {
            let err = convert_one(&format!(
                r#"{{"type":"steering/message","seq":6,"time":0,"data":{bad}}}"#
            ))
            .unwrap_err();
            assert_eq!(
                err.to_string(),
                "session \"s\" contains malformed pre-react-loop steering/message at seq 6",
                "{bad}"
            );
        }
    }

    #[test]
    fn pre_identity_messages() {
        assert_eq!(
            data_after(
                r#"{"type":"user/message","seq":2,"time":0,"data":{"content":[],"source":{"kind":"user"}},"surfaceOp":"append"}"#
            ),
            r#"{"content":[],"source":{"kind":"user"},"id":"legacy-message:s:2","role":"user"}"#
        );
        let current = r#"{"content":[],"source":{"kind":"user"},"role":"user","id":"u"}"#;
        assert_eq!(
            data_after(&format!(
                r#"{{"type":"user/message","seq":2,"time":0,"data":{current}}}"#
            )),
            current
        );
        assert_eq!(
            data_after(
                r#"{"type":"assistant/message","seq":3,"time":0,"data":{"turn":1,"step":1,"content":[{"type":"text","text":"t"}],"provenance":{"provider":"p","model":"m"},"usage":{}}}"#
            ),
            r#"{"turn":1,"step":1,"usage":{},"message":{"id":"legacy-message:s:3","role":"assistant","content":[{"type":"text","text":"t"}],"source":{"provider":"p","model":"m","kind":"model"}}}"#
        );
        assert_eq!(
            data_after(
                r#"{"type":"assistant/message","seq":3,"time":0,"data":{"content":[],"provenance":{"kind":"x","model":"m"}}}"#
            ),
            r#"{"message":{"id":"legacy-message:s:3","role":"assistant","content":[],"source":{"kind":"model","model":"m"}}}"#
        );
        assert_eq!(
            data_after(
                r#"{"type":"tool/result","seq":5,"time":0,"data":{"turn":1,"step":1,"callId":"c","content":[],"isError":false}}"#
            ),
            r#"{"turn":1,"step":1,"message":{"id":"legacy-message:s:5","role":"user","content":[{"type":"tool-result","toolCallId":"c","content":[],"isError":false}],"source":{"kind":"tool","callId":"c"}}}"#
        );
    }

    #[test]
    fn a_user_message_converts_only_in_the_whole_pre_identity_shape() {
        // Each condition of the shape alone keeps the record as it is.
        for same in [
            r#"{"content":[]}"#,
            r#"{"source":{"kind":"user"}}"#,
            r#"{"content":[],"source":{"kind":"user"},"id":"u"}"#,
            r#"{"content":[],"source":{"kind":"user"},"role":"user"}"#,
            r#"{"content":[],"source":{"kind":"user"},"message":{"id":"u"}}"#,
        ] {
            assert_eq!(
                data_after(&format!(
                    r#"{{"type":"user/message","seq":2,"time":0,"data":{same}}}"#
                )),
                same
            );
        }
    }

    #[test]
    fn message_ids_are_read_where_each_type_keeps_them() {
        assert_eq!(
            message_id_of("user/message", r#"{"id":"u1","role":"user"}"#).as_deref(),
            Some(r#""u1""#)
        );
        assert_eq!(
            message_id_of("assistant/message", r#"{"message":{"id":"a1"}}"#).as_deref(),
            Some(r#""a1""#)
        );
        assert_eq!(
            message_id_of("user/message", r#"{"message":{"id":"x"}}"#),
            None
        );
        assert_eq!(message_id_of("assistant/message", r#"{"id":"x"}"#), None);
        assert_eq!(message_id_of("user/message", r#"{"id":7}"#), None);
    }

    #[test]
    fn malformed_error_reasons_and_steering_records_are_refused_field_by_field() {
        // Each one breaks one condition of an otherwise convertible shape.
        for (kind, bad) in [
            (
                "turn/end",
                r#"{"turn":2,"reason":{"kind":"error","step":0,"failure":{"message":"m","code":"c","extra":1}}}"#,
            ),
            (
                "turn/end",
                r#"{"turn":2,"reason":{"kind":"error","step":0,"failure":{"message":1,"code":"c"}}}"#,
            ),
            (
                "turn/end",
                r#"{"turn":2,"reason":{"kind":"error","step":0,"failure":{"message":"m","code":1}}}"#,
            ),
            (
                "turn/end",
                r#"{"turn":2,"reason":{"kind":"error","step":0,"message":1}}"#,
            ),
            (
                "steering/message",
                r#"{"turn":"1","message":{"id":"m","role":"user"}}"#,
            ),
            (
                "steering/message",
                r#"{"turn":1,"message":{"id":"m","role":"user"},"extra":1}"#,
            ),
        ] {
            let err = convert_one(&format!(
                r#"{{"type":"{kind}","seq":4,"time":0,"data":{bad}}}"#
            ))
            .unwrap_err();
            let what = if kind == "turn/end" {
                "pre-react-loop turn/end"
            } else {
                "pre-react-loop steering/message"
            };
            assert_eq!(
                err.to_string(),
                format!("session \"s\" contains malformed {what} at seq 4"),
                "{bad}"
            );
        }
    }

    #[test]
    fn ids_are_escaped() {
        let mut v = vec![ev(
            r#"{"type":"user/message","seq":2,"time":0,"data":{"content":[],"source":{"kind":"user"}}}"#,
        )];
        convert_legacy("a\"b", &mut v).unwrap();
        assert!(
            v[0].data
                .as_str()
                .contains(r#""id":"legacy-message:a\"b:2""#)
        );
    }

    #[test]
    fn tool_result_replace_inherits_the_shadowed_id() {
        let mut v = vec![
            ev(
                r#"{"type":"tool/result","seq":0,"time":0,"data":{"callId":"c","content":[1],"isError":false},"surfaceOp":"append"}"#,
            ),
            ev(
                r#"{"type":"tool/result","seq":1,"time":0,"data":{"callId":"c","content":[2],"isError":false},"sourceEventSeqs":[0],"surfaceOp":{"op":"replace","start":0,"end":0}}"#,
            ),
        ];
        convert_legacy("s", &mut v).unwrap();
        assert!(v[0].data.as_str().contains(r#""id":"legacy-message:s:0""#));
        assert!(v[1].data.as_str().contains(r#""id":"legacy-message:s:0""#));
    }
}
