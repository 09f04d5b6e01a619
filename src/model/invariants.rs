//! Strict turn/step invariants (SPEC §1.6).
//!
//! [`TurnTrace`] follows a log event by event: a live session checks every
//! append with it, and the store checks a whole stored log with it when
//! opened with `strict: true`. A chunk event costs one scan of its two
//! leading fields (`turn`, `step`).

use std::collections::HashSet;

use super::event::Event;
use super::fields;
use super::json;
use super::surface::SurfaceOp;

/// The turn/step state of a log, checked incrementally.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TurnTrace {
    pub(super) last_seq: Option<u64>,
    pub(super) last_turn: i64,
    pub(super) open_turn: Option<i64>,
    pub(super) open_step: Option<i64>,
    pub(super) last_step: i64,
    /// `callId`s of the `tool/call` events of the open step: a set, so a
    /// step of many calls judges each `tool/result` at once (a list made a
    /// step of 100 000 calls and results cost seconds of appends).
    pub(super) calls: HashSet<String>,
    /// While a batch is judged ([`TurnTrace::begin_batch`]): how to take
    /// back what it did to `calls`. A batch is judged in place, not on a
    /// copy: a copy per append cost the open step's calls each time.
    pub(super) journal: Option<CallsJournal>,
}

/// What a batch being judged did to [`TurnTrace::calls`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct CallsJournal {
    /// The ids it added to the set it started with.
    added: Vec<String>,
    /// The set it started with, once the batch left that step.
    before: Option<HashSet<String>>,
}

/// The trace's small fields before a batch ([`TurnTrace::begin_batch`]).
#[must_use]
#[derive(Clone, Copy, Debug)]
pub struct TraceMark {
    last_seq: Option<u64>,
    last_turn: i64,
    open_turn: Option<i64>,
    open_step: Option<i64>,
    last_step: i64,
}

enum Change {
    None,
    TurnStart(i64),
    TurnEnd,
    StepStart(i64),
    StepEnd,
    Call(String),
}

impl TurnTrace {
    /// The trace of an empty log: no seq seen, no turn open, next turn 1.
    pub fn new() -> Self {
        TurnTrace::default()
    }

    /// The open turn's number, if a turn is open.
    pub fn open_turn(&self) -> Option<i64> {
        self.open_turn
    }

    /// The open step's number, if a step is open.
    pub fn open_step(&self) -> Option<i64> {
        self.open_step
    }

    /// Starts judging a batch in place: [`TurnTrace::end_batch`] keeps
    /// what [`TurnTrace::check`] and [`TurnTrace::advance`] did since,
    /// [`TurnTrace::undo_batch`] takes it back, at the cost of what the
    /// batch changed (not of the open step's calls).
    pub fn begin_batch(&mut self) -> TraceMark {
        self.journal = Some(CallsJournal::default());
        TraceMark {
            last_seq: self.last_seq,
            last_turn: self.last_turn,
            open_turn: self.open_turn,
            open_step: self.open_step,
            last_step: self.last_step,
        }
    }

    /// Keeps the batch begun with `_mark`.
    pub fn end_batch(&mut self, _mark: TraceMark) {
        self.journal = None;
    }

    /// Takes back the batch begun with `mark`: the trace is again as it was.
    pub fn undo_batch(&mut self, mark: TraceMark) {
        let journal = self.journal.take().unwrap_or_default();
        match journal.before {
            Some(before) => self.calls = before,
            None => {
                for id in &journal.added {
                    self.calls.remove(id);
                }
            }
        }
        self.last_seq = mark.last_seq;
        self.last_turn = mark.last_turn;
        self.open_turn = mark.open_turn;
        self.open_step = mark.open_step;
        self.last_step = mark.last_step;
    }

    /// Empties `calls` (the step ended or another began), keeping the set
    /// a batch started with to take back.
    fn clear_calls(&mut self) {
        let calls = std::mem::take(&mut self.calls);
        if let Some(j) = &mut self.journal {
            if j.before.is_none() {
                let mut before = calls;
                for id in j.added.drain(..) {
                    before.remove(&id);
                }
                j.before = Some(before);
            }
        }
    }

    /// Checks `event` against the invariants and, when it passes, records
    /// it. On error the trace is unchanged.
    pub fn check(&mut self, event: &Event) -> Result<(), String> {
        self.step::<true>(event)
    }

    /// [`Self::check`] for a caller that only keeps the trace in step (a
    /// non-strict fold, over a log that need not follow the invariants):
    /// the same rules and changes, and no refusal message is built.
    pub fn advance(&mut self, event: &Event) {
        let _ = self.step::<false>(event);
    }

    fn step<const LOUD: bool>(&mut self, event: &Event) -> Result<(), String> {
        let change = self.judge::<LOUD>(event)?;
        self.last_seq = Some(event.seq);
        match change {
            Change::None => {}
            Change::TurnStart(t) => {
                self.last_turn = t;
                self.open_turn = Some(t);
                self.open_step = None;
                self.last_step = 0;
                self.clear_calls();
            }
            Change::TurnEnd => {
                self.open_turn = None;
                self.open_step = None;
                self.clear_calls();
            }
            Change::StepStart(s) => {
                self.open_step = Some(s);
                self.last_step = s;
                self.clear_calls();
            }
            Change::StepEnd => {
                self.open_step = None;
                self.clear_calls();
            }
            Change::Call(id) => {
                if !self.calls.contains(&id) {
                    if let Some(j) = &mut self.journal {
                        if j.before.is_none() {
                            j.added.push(id.clone());
                        }
                    }
                    self.calls.insert(id);
                }
            }
        }
        Ok(())
    }

    fn judge<const LOUD: bool>(&self, e: &Event) -> Result<Change, String> {
        let name = e.type_str();
        let seq = e.seq;
        if let Some(last) = self.last_seq {
            if seq <= last {
                return Err(refusal::<LOUD>(|| {
                    format!(
                        "event {} at seq {seq} does not come after seq {last}: seqs must strictly increase",
                        json::quote(name)
                    )
                }));
            }
        }
        let at = || format!("{} at seq {seq}", json::quote(name));
        match name {
            "turn/start" => {
                if let Some(open) = self.open_turn {
                    return Err(refusal::<LOUD>(|| {
                        format!("{} starts a turn while turn {open} is open", at())
                    }));
                }
                let want = self.last_turn + 1;
                let turn = fields::field(e.data.as_str(), "turn").and_then(json::as_safe_int);
                if turn != Some(want) {
                    return Err(refusal::<LOUD>(|| {
                        format!(
                            "{} must start turn {want}, got {}",
                            at(),
                            shown(fields::field(e.data.as_str(), "turn"))
                        )
                    }));
                }
                Ok(Change::TurnStart(want))
            }
            "turn/end" => {
                let Some(open) = self.open_turn else {
                    return Err(refusal::<LOUD>(|| {
                        format!("{} ends a turn but no turn is open", at())
                    }));
                };
                let turn = fields::field(e.data.as_str(), "turn").and_then(json::as_safe_int);
                if turn != Some(open) {
                    return Err(refusal::<LOUD>(|| {
                        format!(
                            "{} must end the open turn {open}, got {}",
                            at(),
                            shown(fields::field(e.data.as_str(), "turn"))
                        )
                    }));
                }
                if let Some(step) = self.open_step {
                    return Err(refusal::<LOUD>(|| {
                        format!("{} ends turn {open} while step {step} is open", at())
                    }));
                }
                Ok(Change::TurnEnd)
            }
            "step/start" => {
                let Some(open) = self.open_turn else {
                    return Err(refusal::<LOUD>(|| {
                        format!("{} starts a step outside a turn", at())
                    }));
                };
                if let Some(step) = self.open_step {
                    return Err(refusal::<LOUD>(|| {
                        format!("{} starts a step while step {step} is open", at())
                    }));
                }
                let [turn, step] =
                    fields::pick(e.data.as_str(), ["turn", "step"]).unwrap_or_default();
                if turn.and_then(json::as_safe_int) != Some(open) {
                    return Err(refusal::<LOUD>(|| {
                        format!(
                            "{} must name the open turn {open}, got {}",
                            at(),
                            shown(turn)
                        )
                    }));
                }
                let want = self.last_step + 1;
                if step.and_then(json::as_safe_int) != Some(want) {
                    return Err(refusal::<LOUD>(|| {
                        format!("{} must start step {want}, got {}", at(), shown(step))
                    }));
                }
                Ok(Change::StepStart(want))
            }
            "step/end" => {
                self.in_step::<LOUD>(e, &at)?;
                Ok(Change::StepEnd)
            }
            "assistant/chunk" | "assistant/message" => {
                self.in_step::<LOUD>(e, &at)?;
                Ok(Change::None)
            }
            "tool/call" => {
                self.in_step::<LOUD>(e, &at)?;
                let id = fields::string(fields::field(e.data.as_str(), "callId"));
                Ok(id.map_or(Change::None, Change::Call))
            }
            "tool/result" => {
                let is_append = e
                    .surface_op()
                    .as_ref()
                    .is_some_and(|t| SurfaceOp::parse(t.as_str()) == Ok(SurfaceOp::Append));
                if !is_append {
                    return Ok(Change::None);
                }
                self.in_step::<LOUD>(e, &at)?;
                let [message, error] =
                    fields::pick(e.data.as_str(), ["message", "error"]).unwrap_or_default();
                let not_started = error
                    .and_then(|er| fields::field(er, "code"))
                    .is_some_and(|c| fields::str_is(Some(c), "TOOL_NOT_STARTED"));
                if not_started {
                    return Ok(Change::None);
                }
                let call_id = message
                    .and_then(|m| fields::field(m, "source"))
                    .and_then(|s| fields::field(s, "callId"));
                let call_id = fields::string(call_id);
                match call_id {
                    Some(id) if self.calls.contains(&id) => Ok(Change::None),
                    _ => Err(refusal::<LOUD>(|| {
                        format!(
                            "{} has no prior tool/call {} in step {}",
                            at(),
                            call_id
                                .as_deref()
                                .map_or("(missing callId)".to_string(), json::quote),
                            self.open_step.unwrap_or_default()
                        )
                    })),
                }
            }
            "todo/write" | "request/header" | "request/context" => {
                if self.open_turn.is_none() {
                    return Err(refusal::<LOUD>(|| {
                        format!("{} must be inside a turn", at())
                    }));
                }
                Ok(Change::None)
            }
            _ => Ok(Change::None),
        }
    }

    /// The event names the open turn and the open step.
    fn in_step<const LOUD: bool>(&self, e: &Event, at: &dyn Fn() -> String) -> Result<(), String> {
        let (Some(turn), Some(step)) = (self.open_turn, self.open_step) else {
            return Err(refusal::<LOUD>(|| match self.open_turn {
                None => format!(
                    "{} must be inside a turn and step, but no turn is open",
                    at()
                ),
                Some(t) => format!(
                    "{} must be inside a step, but turn {t} has no open step",
                    at()
                ),
            }));
        };
        let [t, s] = fields::pick(e.data.as_str(), ["turn", "step"]).unwrap_or_default();
        if t.and_then(json::as_safe_int) != Some(turn)
            || s.and_then(json::as_safe_int) != Some(step)
        {
            return Err(refusal::<LOUD>(|| {
                format!(
                    "{} must name the open turn {turn} and step {step}, got turn {} step {}",
                    at(),
                    shown(t),
                    shown(s)
                )
            }));
        }
        Ok(())
    }
}

/// The refusal `message()`, built only when the caller reads it (`LOUD`).
fn refusal<const LOUD: bool>(message: impl FnOnce() -> String) -> String {
    if LOUD { message() } else { String::new() }
}

fn shown(raw: Option<&str>) -> String {
    raw.map_or_else(|| "(missing)".to_string(), |v| v.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ty: &str, seq: u64, data: &str) -> Event {
        Event::parse(&format!(
            r#"{{"type":"{ty}","seq":{seq},"time":0,"data":{data}}}"#
        ))
        .unwrap()
    }

    fn ev_op(ty: &str, seq: u64, data: &str, op: &str) -> Event {
        Event::parse(&format!(
            r#"{{"type":"{ty}","seq":{seq},"time":0,"data":{data},"surfaceOp":{op}}}"#
        ))
        .unwrap()
    }

    fn run(events: &[Event]) -> Result<TurnTrace, String> {
        let mut t = TurnTrace::new();
        for e in events {
            t.check(e)?;
        }
        Ok(t)
    }

    fn result(seq: u64, call: &str, turn: i64, step: i64, extra: &str) -> Event {
        ev_op(
            "tool/result",
            seq,
            &format!(
                r#"{{"turn":{turn},"step":{step},"message":{{"source":{{"kind":"tool","callId":"{call}"}}}}{extra}}}"#
            ),
            "\"append\"",
        )
    }

    #[test]
    fn a_good_log_passes() {
        let events = vec![
            ev("session/end-seed", 0, "{}"),
            ev("turn/start", 1, r#"{"turn":1}"#),
            ev("request/header", 2, "{}"),
            ev("step/start", 3, r#"{"turn":1,"step":1}"#),
            ev("assistant/chunk", 4, r#"{"turn":1,"step":1,"chunk":{}}"#),
            ev_op(
                "assistant/message",
                5,
                r#"{"turn":1,"step":1}"#,
                "\"append\"",
            ),
            ev("tool/call", 6, r#"{"turn":1,"step":1,"callId":"c1"}"#),
            result(7, "c1", 1, 1, ""),
            result(
                8,
                "c2",
                1,
                1,
                r#","error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}"#,
            ),
            ev("step/end", 9, r#"{"turn":1,"step":1}"#),
            ev("step/start", 10, r#"{"turn":1,"step":2}"#),
            ev("step/end", 11, r#"{"turn":1,"step":2}"#),
            // a replace tool/result is not bound to the open step
            ev_op(
                "tool/result",
                12,
                r#"{"turn":9}"#,
                r#"{"op":"replace","start":7,"end":7}"#,
            ),
            ev(
                "turn/end",
                13,
                r#"{"turn":1,"reason":{"kind":"completed"}}"#,
            ),
            ev("plan/mode", 14, r#"{"active":true}"#),
            ev("turn/start", 15, r#"{"turn":2}"#),
        ];
        let t = run(&events).unwrap();
        assert_eq!(t.open_turn(), Some(2));
        assert_eq!(t.open_step(), None);
        // Mid-log: inside turn 1's second step (seq 10), then between steps.
        let mid = run(&events[..=10]).unwrap();
        assert_eq!((mid.open_turn(), mid.open_step()), (Some(1), Some(2)));
        let between = run(&events[..=11]).unwrap();
        assert_eq!((between.open_turn(), between.open_step()), (Some(1), None));
    }

    fn fails(events: &[Event], want: &str) {
        let err = run(events).unwrap_err();
        assert!(err.contains(want), "want {want:?} in {err:?}");
    }

    #[test]
    fn seqs_strictly_increase() {
        fails(
            &[ev("plan/mode", 3, "{}"), ev("plan/mode", 3, "{}")],
            "\"plan/mode\" at seq 3 does not come after seq 3",
        );
    }

    #[test]
    fn turn_numbers_and_nesting() {
        fails(
            &[ev("turn/start", 0, r#"{"turn":2}"#)],
            "\"turn/start\" at seq 0 must start turn 1, got 2",
        );
        fails(
            &[
                ev("turn/start", 0, r#"{"turn":1}"#),
                ev("turn/start", 1, r#"{"turn":2}"#),
            ],
            "starts a turn while turn 1 is open",
        );
        fails(
            &[ev("turn/end", 0, r#"{"turn":1}"#)],
            "ends a turn but no turn is open",
        );
        fails(
            &[
                ev("turn/start", 0, r#"{"turn":1}"#),
                ev("turn/end", 1, r#"{"turn":2}"#),
            ],
            "must end the open turn 1, got 2",
        );
        fails(
            &[
                ev("turn/start", 0, r#"{"turn":1}"#),
                ev("step/start", 1, r#"{"turn":1,"step":1}"#),
                ev("turn/end", 2, r#"{"turn":1}"#),
            ],
            "ends turn 1 while step 1 is open",
        );
    }

    #[test]
    fn step_numbers_and_nesting() {
        fails(
            &[ev("step/start", 0, r#"{"turn":1,"step":1}"#)],
            "starts a step outside a turn",
        );
        let t1 = ev("turn/start", 0, r#"{"turn":1}"#);
        fails(
            &[t1.clone(), ev("step/start", 1, r#"{"turn":1,"step":2}"#)],
            "must start step 1, got 2",
        );
        fails(
            &[t1.clone(), ev("step/start", 1, r#"{"turn":3,"step":1}"#)],
            "must name the open turn 1, got 3",
        );
        fails(
            &[
                t1.clone(),
                ev("step/start", 1, r#"{"turn":1,"step":1}"#),
                ev("step/start", 2, r#"{"turn":1,"step":2}"#),
            ],
            "starts a step while step 1 is open",
        );
        fails(
            &[t1.clone(), ev("step/end", 1, r#"{"turn":1,"step":1}"#)],
            "turn 1 has no open step",
        );
    }

    #[test]
    fn step_bound_events_name_turn_and_step() {
        let open = [
            ev("turn/start", 0, r#"{"turn":1}"#),
            ev("step/start", 1, r#"{"turn":1,"step":1}"#),
        ];
        for ty in ["assistant/chunk", "tool/call", "step/end"] {
            let mut v = open.to_vec();
            v.push(ev(ty, 2, r#"{"turn":1,"step":2}"#));
            fails(
                &v,
                "must name the open turn 1 and step 1, got turn 1 step 2",
            );
        }
        let mut v = open.to_vec();
        v.push(ev_op("assistant/message", 2, r#"{"step":1}"#, "\"append\""));
        fails(&v, "got turn (missing) step 1");
        fails(
            &[ev("assistant/chunk", 0, r#"{"turn":1,"step":1}"#)],
            "no turn is open",
        );
    }

    #[test]
    fn tool_result_needs_a_call_in_the_step() {
        let mut v = vec![
            ev("turn/start", 0, r#"{"turn":1}"#),
            ev("step/start", 1, r#"{"turn":1,"step":1}"#),
            ev("tool/call", 2, r#"{"turn":1,"step":1,"callId":"c1"}"#),
            ev("step/end", 3, r#"{"turn":1,"step":1}"#),
            ev("step/start", 4, r#"{"turn":1,"step":2}"#),
        ];
        v.push(result(5, "c1", 1, 2, ""));
        fails(
            &v,
            "\"tool/result\" at seq 5 has no prior tool/call \"c1\" in step 2",
        );
    }

    /// A step of many calls, answered last first: every result is found
    /// (and one naming no call refused) with one lookup each. The calls
    /// were a list once, searched from its start: 200 000 calls made this
    /// test minutes long.
    #[test]
    fn a_step_of_many_calls_judges_each_result_at_once() {
        const CALLS: u64 = 200_000;
        let mut t = TurnTrace::new();
        t.check(&ev("turn/start", 0, r#"{"turn":1}"#)).unwrap();
        t.check(&ev("step/start", 1, r#"{"turn":1,"step":1}"#))
            .unwrap();
        let id = |i: u64| format!("call_{i:08}");
        for i in 0..CALLS {
            let data = format!(r#"{{"turn":1,"step":1,"callId":"{}"}}"#, id(i));
            t.check(&ev("tool/call", 2 + i, &data)).unwrap();
        }
        // A call id repeated is still one call.
        let again = format!(r#"{{"turn":1,"step":1,"callId":"{}"}}"#, id(7));
        t.check(&ev("tool/call", 2 + CALLS, &again)).unwrap();
        assert_eq!(t.calls.len(), CALLS as usize);
        let first = 3 + CALLS;
        for (n, i) in (0..CALLS).rev().enumerate() {
            t.check(&result(first + n as u64, &id(i), 1, 1, ""))
                .unwrap();
        }
        let end = first + CALLS;
        let err = t.check(&result(end, &id(CALLS), 1, 1, "")).unwrap_err();
        assert!(
            err.contains("has no prior tool/call \"call_00200000\" in step 1"),
            "{err}"
        );
    }

    /// A batch judged in place and taken back leaves the trace exactly as
    /// it was, whether it only added calls (one already known among them)
    /// or left the step and began another; a batch kept keeps its calls.
    #[test]
    fn a_batch_taken_back_leaves_the_trace_as_it_was() {
        let call = |seq: u64, step: i64, id: &str| {
            let data = format!(r#"{{"turn":1,"step":{step},"callId":"{id}"}}"#);
            ev("tool/call", seq, &data)
        };
        let mut t = run(&[
            ev("turn/start", 0, r#"{"turn":1}"#),
            ev("step/start", 1, r#"{"turn":1,"step":1}"#),
            call(2, 1, "a"),
            call(3, 1, "b"),
        ])
        .unwrap();
        let before = t.clone();
        let batches = [
            vec![call(4, 1, "c"), call(5, 1, "a"), call(6, 1, "d")],
            vec![
                call(4, 1, "c"),
                ev("step/end", 5, r#"{"turn":1,"step":1}"#),
                ev("step/start", 6, r#"{"turn":1,"step":2}"#),
                call(7, 2, "a"),
                call(8, 2, "e"),
            ],
        ];
        for batch in &batches {
            let mark = t.begin_batch();
            for e in batch {
                t.check(e).unwrap();
            }
            t.undo_batch(mark);
            assert_eq!(t, before);
            // followed (`advance`) rather than judged: the same
            let mark = t.begin_batch();
            for e in batch {
                t.advance(e);
            }
            t.undo_batch(mark);
            assert_eq!(t, before);
        }
        let mark = t.begin_batch();
        for e in &batches[1] {
            t.check(e).unwrap();
        }
        t.end_batch(mark);
        let mut kept: Vec<&String> = t.calls.iter().collect();
        kept.sort();
        assert_eq!(kept, ["a", "e"]);
        assert_eq!((t.open_step(), t.last_seq), (Some(2), Some(8)));
        assert_eq!(t.journal, None);
    }

    #[test]
    fn turn_scoped_events() {
        for ty in ["todo/write", "request/header", "request/context"] {
            fails(&[ev(ty, 0, "{}")], "must be inside a turn");
        }
    }

    #[test]
    fn failed_check_leaves_state() {
        let mut t = TurnTrace::new();
        t.check(&ev("turn/start", 0, r#"{"turn":1}"#)).unwrap();
        assert!(t.check(&ev("turn/start", 1, r#"{"turn":2}"#)).is_err());
        t.check(&ev("turn/end", 1, r#"{"turn":1}"#)).unwrap();
        assert_eq!(t.open_turn(), None);
    }

    #[test]
    fn advance_changes_the_trace_exactly_as_check_does() {
        // Every kind of event, in and out of order: a second turn/start, a
        // chunk outside a step, a step that names another turn, a result
        // without its call, a repeated seq, then a valid turn.
        let events = [
            ev("turn/start", 1, r#"{"turn":1}"#),
            ev("turn/start", 2, r#"{"turn":2}"#),
            ev("assistant/chunk", 3, r#"{"turn":1,"step":1}"#),
            ev("step/start", 4, r#"{"turn":2,"step":1}"#),
            ev("step/start", 5, r#"{"turn":1,"step":1}"#),
            ev("tool/call", 6, r#"{"turn":1,"step":1,"callId":"c1"}"#),
            result(7, "c2", 1, 1, ""),
            result(8, "c1", 1, 1, ""),
            ev("assistant/chunk", 8, r#"{"turn":1,"step":1}"#),
            ev("step/end", 9, r#"{"turn":1,"step":1}"#),
            ev("todo/write", 10, r#"{}"#),
            ev("turn/end", 11, r#"{"turn":1}"#),
            ev("todo/write", 12, r#"{}"#),
            ev("turn/end", 13, r#"{"turn":1}"#),
            ev("turn/start", 14, r#"{"turn":2}"#),
        ];
        let (mut checked, mut advanced) = (TurnTrace::new(), TurnTrace::new());
        let mut refused = 0;
        for e in &events {
            if let Err(m) = checked.check(e) {
                assert!(!m.is_empty(), "seq {}", e.seq);
                refused += 1;
            }
            advanced.advance(e);
            assert_eq!(advanced, checked, "after seq {}", e.seq);
        }
        assert!(refused >= 5, "{refused} refusals");
        assert_eq!(advanced.open_turn(), Some(2));
    }
}
