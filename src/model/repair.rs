//! Crash-recovery closers (SPEC §5): the synthetic events that balance a
//! log whose last turn is still open.
//!
//! Byte layout follows the closers the original's `load()` wrote: envelope
//! in [`KeyOrder::CLOSER`] (`surfaceOp` before `sourceEventSeqs`), data keys
//! `turn, step, message, error`, message keys `id, role, source, content`,
//! block keys `type, toolCallId, isError, content`.

use std::collections::HashMap;

use super::event::{Event, EventType, KeyOrder};
use super::fields;
use super::json::{self, JsonText, Kind};

/// Text of the result synthesized for a call that was recorded by a
/// `tool/call` event but has no result.
pub const TOOL_OUTCOME_UNKNOWN_TEXT: &str = "The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly.";

/// Text of the result synthesized for a call the Harness never recorded as
/// started.
pub const TOOL_NOT_STARTED_TEXT: &str = "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed.";

/// A tool call announced by an assistant message and not yet answered.
struct Pending {
    /// The decoded call id.
    id: String,
    /// Raw text of the announcing event's `step`.
    step: String,
    /// Seq of the `tool/call` event that recorded it, if any.
    call_seq: Option<u64>,
}

/// The pending calls of the open step, as the original's `Map` keyed by
/// call id: in registration order, an id registered again keeping its place
/// and taking the new entry, an id answered taken out (registered later, it
/// goes last). Slots in order plus an index by id, so each registration,
/// `tool/call` and `tool/result` costs a lookup: a list searched per event
/// made an open turn of 40 000 calls cost 5 s of every load.
#[derive(Default)]
struct PendingCalls {
    /// The calls by registration, `None` where one was answered.
    slots: Vec<Option<Pending>>,
    /// The slot of each pending call id.
    slot_of: HashMap<String, usize>,
}

impl PendingCalls {
    fn register(&mut self, p: Pending) {
        match self.slot_of.get(&p.id) {
            Some(&i) => self.slots[i] = Some(p),
            None => {
                self.slot_of.insert(p.id.clone(), self.slots.len());
                self.slots.push(Some(p));
            }
        }
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut Pending> {
        let i = *self.slot_of.get(id)?;
        self.slots[i].as_mut()
    }

    fn answer(&mut self, id: &str) {
        if let Some(i) = self.slot_of.remove(id) {
            self.slots[i] = None;
        }
    }

    fn clear(&mut self) {
        self.slots.clear();
        self.slot_of.clear();
    }

    fn len(&self) -> usize {
        self.slot_of.len()
    }

    fn in_order(&self) -> impl Iterator<Item = &Pending> {
        self.slots.iter().flatten()
    }
}

/// The closers for `events` (SPEC §5): empty when the last turn is closed;
/// otherwise one `tool/result` per pending call (registration order), a
/// `step/end` if a step is open, and the `turn/end {kind:"interrupted"}`.
/// Seqs continue the log; every closer's `time` is the last event's time.
///
/// Only the last turn is walked (found by scanning back to the last turn
/// boundary), so the cost does not grow with the log.
pub fn closers(events: &[Event]) -> Vec<Event> {
    let Some(start) = events
        .iter()
        .rposition(|e| e.event_type() == "turn/start" || e.event_type() == "turn/end")
    else {
        return Vec::new();
    };
    if events[start].event_type() == "turn/end" {
        return Vec::new();
    }
    let turn = raw_field(&events[start], "turn");
    let mut step: Option<String> = None;
    let mut pending = PendingCalls::default();
    for e in &events[start + 1..] {
        match e.type_str() {
            "assistant/chunk" => {}
            "step/start" => step = Some(raw_field(e, "step")),
            "step/end" => {
                step = None;
                pending.clear();
            }
            "assistant/message" => register_calls(e, &mut pending),
            "tool/call" => {
                if let Some(id) = fields::string(fields::field(e.data.as_str(), "callId")) {
                    if let Some(p) = pending.get_mut(&id) {
                        p.call_seq = Some(e.seq);
                    }
                }
            }
            "tool/result" => {
                let call = fields::field(e.data.as_str(), "message")
                    .and_then(|m| fields::field(m, "source"))
                    .and_then(|s| fields::field(s, "callId"));
                if let Some(id) = fields::string(call) {
                    pending.answer(&id);
                }
            }
            _ => {}
        }
    }
    let last = events.last().expect("a turn/start was found");
    let time = last.time;
    let mut seq = last.seq + 1;
    let mut out = Vec::with_capacity(pending.len() + 2);
    for p in pending.in_order() {
        out.push(tool_result_closer(seq, time, &turn, p));
        seq += 1;
    }
    if let Some(step) = &step {
        let data = format!("{{\"turn\":{turn},\"step\":{step}}}");
        out.push(closer(EventType::known("step/end"), seq, time, data));
        seq += 1;
    }
    let data = format!("{{\"turn\":{turn},\"reason\":{{\"kind\":\"interrupted\"}}}}");
    out.push(closer(EventType::known("turn/end"), seq, time, data));
    out
}

/// The raw text of a top-level data field (`null` when absent, so the
/// closer stays valid JSON).
fn raw_field(e: &Event, key: &str) -> String {
    fields::field(e.data.as_str(), key).map_or_else(|| "null".to_string(), |v| v.trim().to_string())
}

/// Registers the `tool-call` blocks of an assistant message.
fn register_calls(e: &Event, pending: &mut PendingCalls) {
    let Some(content) =
        fields::field(e.data.as_str(), "message").and_then(|m| fields::field(m, "content"))
    else {
        return;
    };
    let Ok(blocks) = json::array_items(content) else {
        return;
    };
    let mut step: Option<String> = None;
    for b in blocks {
        if json::kind_of(b) != Some(Kind::Object) {
            continue;
        }
        let [ty, id] = fields::pick(b, ["type", "id"]).unwrap_or_default();
        if !fields::str_is(ty, "tool-call") {
            continue;
        }
        if let Some(id) = fields::string(id) {
            let step = step.get_or_insert_with(|| raw_field(e, "step")).clone();
            let p = Pending {
                id,
                step,
                call_seq: None,
            };
            // DIFFERENCES A.1 #1: an id seen again keeps its place.
            pending.register(p);
        }
    }
}

fn closer(event_type: EventType, seq: u64, time: i64, data: String) -> Event {
    let mut e = Event::new(event_type, seq, time, JsonText::from_trusted(data));
    e.key_order = KeyOrder::CLOSER;
    e
}

fn tool_result_closer(seq: u64, time: i64, turn: &str, p: &Pending) -> Event {
    let (text, name, code) = match p.call_seq {
        Some(_) => (
            TOOL_OUTCOME_UNKNOWN_TEXT,
            "ToolOutcomeUnknownError",
            "TOOL_OUTCOME_UNKNOWN",
        ),
        None => (
            TOOL_NOT_STARTED_TEXT,
            "ToolNotStartedError",
            "TOOL_NOT_STARTED",
        ),
    };
    let call = json::quote(&p.id);
    let mut data = String::with_capacity(512);
    data.push_str("{\"turn\":");
    data.push_str(turn);
    data.push_str(",\"step\":");
    data.push_str(&p.step);
    data.push_str(",\"message\":{\"id\":");
    json::write_string(
        &mut data,
        &format!("interrupted-tool-result-{}-{seq}", p.id),
    );
    data.push_str(",\"role\":\"user\",\"source\":{\"kind\":\"tool\",\"callId\":");
    data.push_str(&call);
    data.push_str("},\"content\":[{\"type\":\"tool-result\",\"toolCallId\":");
    data.push_str(&call);
    data.push_str(",\"isError\":true,\"content\":[{\"type\":\"text\",\"text\":");
    json::write_string(&mut data, text);
    data.push_str("}]}]},\"error\":{\"name\":\"");
    data.push_str(name);
    data.push_str("\",\"code\":\"");
    data.push_str(code);
    data.push_str("\"}}");
    let mut e = closer(EventType::known("tool/result"), seq, time, data);
    e.set_surface_op(Some(JsonText::from_trusted("\"append\"")));
    e.set_source_event_seqs(p.call_seq.map(|s| JsonText::from_trusted(format!("[{s}]"))));
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(line: &str) -> Event {
        Event::parse(line).unwrap()
    }

    fn lines(events: &[Event]) -> Vec<String> {
        events.iter().map(Event::to_json).collect()
    }

    #[test]
    fn closed_or_empty_logs_need_nothing() {
        assert!(closers(&[]).is_empty());
        let closed = [
            ev(r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#),
            ev(
                r#"{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}"#,
            ),
            ev(r#"{"type":"plan/mode","seq":2,"time":3,"data":{"active":true}}"#),
        ];
        assert!(closers(&closed).is_empty());
        let no_turn = [ev(
            r#"{"type":"session/end-seed","seq":0,"time":1,"data":{}}"#,
        )];
        assert!(closers(&no_turn).is_empty());
    }

    #[test]
    fn open_turn_without_step_gets_turn_end() {
        let log = [
            ev(r#"{"type":"turn/start","seq":0,"time":5,"data":{"turn":2}}"#),
            ev(r#"{"type":"step/start","seq":1,"time":6,"data":{"turn":2,"step":1}}"#),
            ev(r#"{"type":"step/end","seq":2,"time":-7,"data":{"turn":2,"step":1}}"#),
        ];
        assert_eq!(
            lines(&closers(&log)),
            vec![
                r#"{"type":"turn/end","seq":3,"time":-7,"data":{"turn":2,"reason":{"kind":"interrupted"}}}"#
            ]
        );
    }

    #[test]
    fn a_call_id_seen_twice_gets_one_closer() {
        // Two assistant messages of the open step carry the same call id:
        // one TOOL_NOT_STARTED closer, as the original's map of pending
        // calls gives (DIFFERENCES A.1 #1).
        let msg = |seq: u64| {
            ev(&format!(
                r#"{{"type":"assistant/message","seq":{seq},"time":1,"data":{{"turn":1,"step":1,"message":{{"content":[{{"type":"tool-call","id":"c1","name":"n"}}]}}}},"surfaceOp":"append"}}"#
            ))
        };
        let log = [
            ev(r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#),
            ev(r#"{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}"#),
            msg(2),
            msg(3),
        ];
        let c = closers(&log);
        let l = lines(&c);
        assert_eq!(c.len(), 3, "{l:?}");
        assert!(l[0].contains(r#""id":"interrupted-tool-result-c1-4""#));
        assert!(l[0].contains("TOOL_NOT_STARTED"));
        assert_eq!(c[1].event_type(), "step/end");
        assert_eq!(c[2].event_type(), "turn/end");
    }

    #[test]
    fn pending_calls_get_results_in_registration_order() {
        let log = [
            ev(r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#),
            ev(r#"{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":3}}"#),
            ev(
                r#"{"type":"assistant/message","seq":2,"time":1,"data":{"turn":1,"step":3,"message":{"content":[{"type":"text","text":"x"},{"type":"tool-call","id":"b","name":"n"},{"type":"tool-call","id":"a"},{"type":"tool-call","id":"done"}]}},"surfaceOp":"append"}"#,
            ),
            ev(r#"{"type":"tool/call","seq":3,"time":1,"data":{"turn":1,"step":3,"callId":"a"}}"#),
            ev(
                r#"{"type":"tool/call","seq":4,"time":1,"data":{"turn":1,"step":3,"callId":"done"}}"#,
            ),
            ev(
                r#"{"type":"tool/result","seq":5,"time":9,"data":{"turn":1,"step":3,"message":{"source":{"kind":"tool","callId":"done"}}},"surfaceOp":"append"}"#,
            ),
        ];
        let c = closers(&log);
        assert_eq!(c.len(), 4);
        assert_eq!(c[0].seq, 6);
        assert!(c.iter().all(|e| e.time == 9));
        let l = lines(&c);
        assert!(l[0].contains(r#""id":"interrupted-tool-result-b-6""#));
        assert!(l[0].contains("TOOL_NOT_STARTED"));
        assert!(l[0].ends_with(r#""surfaceOp":"append"}"#));
        assert!(l[1].contains(r#""id":"interrupted-tool-result-a-7""#));
        assert!(l[1].contains("TOOL_OUTCOME_UNKNOWN"));
        assert!(l[1].ends_with(r#""surfaceOp":"append","sourceEventSeqs":[3]}"#));
        assert_eq!(
            l[2],
            r#"{"type":"step/end","seq":8,"time":9,"data":{"turn":1,"step":3}}"#
        );
        assert_eq!(
            l[3],
            r#"{"type":"turn/end","seq":9,"time":9,"data":{"turn":1,"reason":{"kind":"interrupted"}}}"#
        );
    }

    /// An open turn of 100 000 calls, registered in one message: each
    /// registration, `tool/call` and `tool/result` is a lookup (a list
    /// searched per event once made this minutes long). Answered calls get
    /// no closer; an id registered again keeps its place, one answered and
    /// registered again goes last; the closers follow registration order.
    #[test]
    fn an_open_turn_of_many_calls_is_closed_in_registration_order() {
        const N: usize = 100_000;
        let blocks: Vec<String> = (0..N)
            .map(|i| format!(r#"{{"type":"tool-call","id":"c{i}","name":"n"}}"#))
            .collect();
        let message = |seq: usize, blocks: &str| {
            ev(&format!(
                r#"{{"type":"assistant/message","seq":{seq},"time":1,"data":{{"turn":1,"step":1,"message":{{"content":[{blocks}]}}}},"surfaceOp":"append"}}"#
            ))
        };
        let mut log = vec![
            ev(r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#),
            ev(r#"{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}"#),
            message(2, &blocks.join(",")),
        ];
        // every call started, the even ones answered, last first
        for i in 0..N {
            log.push(ev(&format!(
                r#"{{"type":"tool/call","seq":{},"time":1,"data":{{"turn":1,"step":1,"callId":"c{i}"}}}}"#,
                log.len()
            )));
        }
        for i in (0..N).step_by(2).rev() {
            log.push(ev(&format!(
                r#"{{"type":"tool/result","seq":{},"time":1,"data":{{"turn":1,"step":1,"message":{{"source":{{"kind":"tool","callId":"c{i}"}}}}}},"surfaceOp":"append"}}"#,
                log.len()
            )));
        }
        // c1 again (keeps its place, not started now), c0 again (answered
        // before: goes last)
        log.push(message(log.len(), &format!("{},{}", blocks[1], blocks[0])));
        let c = closers(&log);
        assert_eq!(c.len(), N / 2 + 1 + 2);
        let ids: Vec<String> = c[..N / 2 + 1]
            .iter()
            .map(|e| {
                let m = fields::field(e.data.as_str(), "message").unwrap();
                let s = fields::field(m, "source").unwrap();
                fields::string(fields::field(s, "callId")).unwrap()
            })
            .collect();
        let mut want: Vec<String> = (1..N).step_by(2).map(|i| format!("c{i}")).collect();
        want.push("c0".into());
        assert_eq!(ids, want);
        let l0 = c[0].to_json();
        assert!(l0.contains("TOOL_NOT_STARTED"), "{l0}");
        let l1 = c[1].to_json();
        assert!(l1.contains("TOOL_OUTCOME_UNKNOWN"), "{l1}");
        assert!(c[N / 2].to_json().contains("TOOL_NOT_STARTED"));
    }

    #[test]
    fn step_end_resets_pending_calls() {
        let log = [
            ev(r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#),
            ev(r#"{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}"#),
            ev(
                r#"{"type":"assistant/message","seq":2,"time":1,"data":{"turn":1,"step":1,"message":{"content":[{"type":"tool-call","id":"a"}]}},"surfaceOp":"append"}"#,
            ),
            ev(r#"{"type":"step/end","seq":3,"time":1,"data":{"turn":1,"step":1}}"#),
        ];
        assert_eq!(closers(&log).len(), 1);
    }

    #[test]
    fn call_ids_are_escaped() {
        let log = [
            ev(r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#),
            ev(
                r#"{"type":"assistant/message","seq":1,"time":1,"data":{"turn":1,"step":1,"message":{"content":[{"type":"tool-call","id":"q\"\u00e9"}]}},"surfaceOp":"append"}"#,
            ),
        ];
        let c = closers(&log);
        let l = c[0].to_json();
        assert!(
            l.contains(r#""id":"interrupted-tool-result-q\"é-2""#),
            "{l}"
        );
        assert!(l.contains(r#""callId":"q\"é""#), "{l}");
        serde_json::from_str::<serde_json::Value>(&l).unwrap();
    }
}
