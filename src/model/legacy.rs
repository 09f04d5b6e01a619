//! Older record shapes of format v0 converted on read (SPEC §1.9).
//!
//! Applied per event, in order, over the whole log, in memory only (storage
//! is never rewritten). Converted `data` is compact JSON text built from the
//! original's raw value slices. Key order: where the spec gives the new
//! object, keys are written in that order; where a shape is extended (`{…,
//! message}`), the original object's keys come first in their order and the
//! new keys are appended. The upstream dumps sort keys, so where the
//! original's order is unknowable this is the choice made.

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
/// Fails with corruption on a `turn/start` carrying `trigger` in any other
/// shape (`malformed pre-react-loop turn/start at seq N`).
pub fn convert_legacy(session_id: &str, events: &mut [Event]) -> Result<()> {
    for i in 0..events.len() {
        let name = events[i].type_str();
        // Fast exit for the types no rule touches (chunks above all).
        if !matches!(
            name,
            "turn/start"
                | "turn/end"
                | "steering/message"
                | "user/message"
                | "assistant/message"
                | "tool/result"
        ) {
            continue;
        }
        let (head, rest) = events.split_at_mut(i);
        convert_event(session_id, head, &mut rest[0])?;
    }
    Ok(())
}

/// Converts one event; `before` are the (already converted) events before it.
fn convert_event(session_id: &str, before: &[Event], e: &mut Event) -> Result<()> {
    let data = e.data.as_str();
    let new: Option<String> = match e.type_str() {
        "turn/start" => convert_turn_start(e.seq, data)?,
        "turn/end" => convert_turn_end(data),
        "steering/message" => {
            let converted = convert_steering(session_id, e.seq, data);
            if converted.is_some() {
                e.event_type = EventType::known("user/message");
            }
            converted
        }
        "user/message" => convert_user(session_id, e.seq, data),
        "assistant/message" => convert_assistant(session_id, e.seq, data),
        "tool/result" => {
            let inherited = replace_start(e).and_then(|start| inherited_id(before, start));
            convert_tool_result(session_id, e.seq, data, inherited.as_deref())
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

/// Rule 1: `{turn, trigger}` → `{turn}`.
fn convert_turn_start(seq: u64, data: &str) -> Result<Option<String>> {
    let Ok(f) = json::object_fields(data) else {
        return Ok(None);
    };
    if !has(&f, "trigger") {
        return Ok(None);
    }
    let malformed =
        || Error::corruption(format!("malformed pre-react-loop turn/start at seq {seq}"));
    if f.len() != 2 {
        return Err(malformed());
    }
    let turn = get(&f, "turn").ok_or_else(malformed)?;
    if json::as_safe_int(turn).is_none_or(|t| t < 1) {
        return Err(malformed());
    }
    let trigger = get(&f, "trigger").unwrap_or_default();
    let tf = if json::kind_of(trigger) == Some(Kind::Object) {
        json::object_fields(trigger).ok()
    } else {
        None
    };
    match tf {
        Some(tf) if tf.len() == 1 && fields::is_nonempty_str(get(&tf, "kind")) => {}
        _ => return Err(malformed()),
    }
    Ok(Some(format!("{{\"turn\":{}}}", turn.trim())))
}

/// Rule 2: older `turn/end` reasons. Only the `reason` value is rewritten;
/// the other keys of `data` keep their text and order.
fn convert_turn_end(data: &str) -> Option<String> {
    let reason = fields::field(data, "reason")?;
    if json::kind_of(reason) != Some(Kind::Object) {
        return None;
    }
    let rf = json::object_fields(reason).ok()?;
    let kind = fields::string(get(&rf, "kind"))?;
    let new_reason = match kind.as_str() {
        "aborted" if !has(&rf, "reason") => {
            // The original reason's keys, then the new `reason`.
            let mut out = fields::rewrite_object(reason, |_, v| Some(v.to_string()))?;
            out.pop();
            push_key(&mut out, "reason");
            out.push_str("{\"kind\":\"legacy\"}}");
            out
        }
        "disposed" => "{\"kind\":\"aborted\",\"reason\":{\"kind\":\"disposed\"}}".to_string(),
        "error" if !has(&rf, "error") => {
            let step = get(&rf, "step")?;
            if json::as_safe_int(step).is_none_or(|s| s < 0) {
                return None;
            }
            if let Some(failure) = get(&rf, "failure") {
                if !is_failure(failure) {
                    return None;
                }
                format!("{{\"kind\":\"error\",\"error\":{}}}", failure.trim())
            } else {
                let message =
                    get(&rf, "message").filter(|m| json::kind_of(m) == Some(Kind::String))?;
                let code = match get(&rf, "code") {
                    Some(c) if json::kind_of(c) == Some(Kind::String) => c.trim(),
                    Some(_) => return None,
                    None => "\"UNKNOWN\"",
                };
                format!(
                    "{{\"kind\":\"error\",\"error\":{{\"message\":{},\"code\":{code}}}}}",
                    message.trim()
                )
            }
        }
        _ => return None,
    };
    fields::rewrite_object(data, |k, v| {
        Some(if k == "reason" {
            new_reason.clone()
        } else {
            v.to_string()
        })
    })
}

/// A legacy failure object: `{message, code, status?, providerRetryAfterMs?,
/// requestId?}` with string `message` and `code`.
fn is_failure(raw: &str) -> bool {
    if json::kind_of(raw) != Some(Kind::Object) {
        return false;
    }
    let Ok(f) = json::object_fields(raw) else {
        return false;
    };
    f.iter().all(|(k, _)| {
        [
            "message",
            "code",
            "status",
            "providerRetryAfterMs",
            "requestId",
        ]
        .iter()
        .any(|n| k.eq_str(n))
    }) && json::kind_of(get(&f, "message").unwrap_or("")) == Some(Kind::String)
        && json::kind_of(get(&f, "code").unwrap_or("")) == Some(Kind::String)
}

/// Rule 3: `steering/message` → `user/message`.
fn convert_steering(session_id: &str, seq: u64, data: &str) -> Option<String> {
    let f = json::object_fields(data).ok()?;
    if let Some(m) = get(&f, "message") {
        if json::kind_of(m) == Some(Kind::Object) {
            return Some(m.trim().to_string());
        }
        return None;
    }
    let content = get(&f, "content")?;
    let source = get(&f, "source")?;
    Some(format!(
        "{{\"content\":{},\"source\":{},\"id\":{},\"role\":\"user\"}}",
        content.trim(),
        source.trim(),
        legacy_id(session_id, seq)
    ))
}

/// Rule 4, user/message: `{content, source}` without `id`/`role`/`message`
/// → the same keys plus `id`, `role`.
fn convert_user(session_id: &str, seq: u64, data: &str) -> Option<String> {
    let f = json::object_fields(data).ok()?;
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
/// kind:"model"}}}`.
fn convert_assistant(session_id: &str, seq: u64, data: &str) -> Option<String> {
    let f = json::object_fields(data).ok()?;
    if has(&f, "message") {
        return None;
    }
    let content = get(&f, "content")?;
    let provenance = get(&f, "provenance")?;
    if json::kind_of(provenance) != Some(Kind::Object) {
        return None;
    }
    // `{...provenance, kind:"model"}`: an existing `kind` keeps its place.
    let mut source = fields::rewrite_object(provenance, |k, v| {
        Some(if k == "kind" {
            "\"model\"".to_string()
        } else {
            v.to_string()
        })
    })?;
    if !has(&json::object_fields(provenance).ok()?, "kind") {
        source.pop();
        push_key(&mut source, "kind");
        source.push_str("\"model\"}");
    }
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

/// The `start` seq of a tool/result's replace `surfaceOp`, if it is one.
fn replace_start(e: &Event) -> Option<u64> {
    let op = e.surface_op.as_ref()?;
    match super::surface::SurfaceOp::parse(op.as_str()) {
        Ok(super::surface::SurfaceOp::Replace { start, .. }) => Some(start),
        _ => None,
    }
}

/// The raw (quoted) id of the message derived by the event at `seq`.
fn inherited_id(before: &[Event], seq: u64) -> Option<String> {
    let e = before.iter().rev().find(|e| e.seq == seq)?;
    let message = match e.type_str() {
        "user/message" => e.data.as_str(),
        _ => fields::field(e.data.as_str(), "message")?,
    };
    let id = fields::field(message, "id")?;
    (json::kind_of(id) == Some(Kind::String)).then(|| id.trim().to_string())
}

/// Rule 4, tool/result: `{…, callId, content, isError}` without `message` →
/// `{…, message:{id, role:"user", content:[{type:"tool-result", toolCallId:
/// callId, content, isError}], source:{kind:"tool", callId}}}`.
fn convert_tool_result(
    session_id: &str,
    seq: u64,
    data: &str,
    inherited: Option<&str>,
) -> Option<String> {
    let f = json::object_fields(data).ok()?;
    if has(&f, "message") {
        return None;
    }
    let call_id = get(&f, "callId")?;
    let content = get(&f, "content")?;
    let is_error = get(&f, "isError");
    let id = match inherited {
        Some(id) => id.to_string(),
        None => legacy_id(session_id, seq),
    };
    let mut out = fields::rewrite_object(data, |k, v| {
        (k != "callId" && k != "content" && k != "isError").then(|| v.to_string())
    })?;
    out.pop();
    push_key(&mut out, "message");
    let mut block = format!(
        "{{\"type\":\"tool-result\",\"toolCallId\":{},\"content\":{}",
        call_id.trim(),
        content.trim()
    );
    if let Some(ie) = is_error {
        block.push_str(&format!(",\"isError\":{}", ie.trim()));
    }
    block.push('}');
    out.push_str(&format!(
        "{{\"id\":{id},\"role\":\"user\",\"content\":[{block}],\"source\":{{\"kind\":\"tool\",\"callId\":{}}}}}}}",
        call_id.trim()
    ));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn turn_start_trigger() {
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
            r#"{"turn":1,"trigger":{"kind":"user","x":1}}"#,
            r#"{"turn":1,"trigger":"user"}"#,
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
                "malformed pre-react-loop turn/start at seq 7",
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
            r#"{"kind":"error","message":"no step"}"#,
            r#"{"kind":"error","step":0,"failure":{"message":"m"}}"#,
        ] {
            assert_eq!(turn_end(same), format!(r#"{{"turn":2,"reason":{same}}}"#));
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
        assert_eq!(e.event_type, "user/message");
        assert_eq!(
            e.data.as_str(),
            r#"{"content":[{"type":"text","text":"steer!"}],"source":{"kind":"user"},"id":"legacy-message:s:6","role":"user"}"#
        );
        let e = convert_one(
            r#"{"type":"steering/message","seq":6,"time":0,"data":{"turn":1,"message":{"id":"m","role":"user"}}}"#,
        )
        .unwrap();
        assert_eq!(e.event_type, "user/message");
        assert_eq!(e.data.as_str(), r#"{"id":"m","role":"user"}"#);
        // unknown shape: left alone (and later refused as an unknown type)
        let e = convert_one(r#"{"type":"steering/message","seq":6,"time":0,"data":{"turn":1}}"#)
            .unwrap();
        assert_eq!(e.event_type, "steering/message");
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
