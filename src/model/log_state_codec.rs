//! A compact binary form of [`LogState`] (the fold of a log's rules that
//! `check_append` continues), for the store's persisted append checkpoint
//! ([`crate::store::append_checkpoint`]).
//!
//! Little-endian: the log length; the turn/step trace (presence flags, last
//! seq, last turn, open turn, open step, last step, the open step's call
//! ids); the surface nodes (seq, kind, data text). The surface holds one
//! node per model-visible message of the log (its data text included, which
//! the tool/result replacement rule and legacy conversion read), so the
//! form grows with the log's messages, not with its chunks.

use std::collections::HashSet;

use super::binary::{Input, put_str, put_u64};
use super::invariants::TurnTrace;
use super::json::{JsonText, MAX_SAFE_INTEGER};
use super::surface::{Node, NodeKind, SurfaceState};
use super::validate::LogState;

fn kind_code(k: NodeKind) -> u8 {
    match k {
        NodeKind::User => 0,
        NodeKind::Assistant => 1,
        NodeKind::ToolResult => 2,
    }
}

fn kind_of_code(c: u8) -> Option<NodeKind> {
    Some(match c {
        0 => NodeKind::User,
        1 => NodeKind::Assistant,
        2 => NodeKind::ToolResult,
        _ => return None,
    })
}

/// Whether `t` is a trace that following a log of `len` events can reach
/// (see `TurnTrace::step`): turns and steps are safe integers counted up
/// from 0, an open turn is the last one started, an open step the last one
/// started and only inside a turn, call ids are kept only inside a step,
/// and the last seq is a safe integer seen only after an event. A
/// checkpoint holding another one is not used (its log is read instead),
/// so no append is judged against a state no log has.
fn reachable(t: &TurnTrace, len: usize) -> bool {
    let safe = |v: i64| (0..=MAX_SAFE_INTEGER).contains(&v);
    safe(t.last_turn)
        && safe(t.last_step)
        && t.open_turn.is_none_or(|o| o == t.last_turn)
        && t.open_step
            .is_none_or(|s| s == t.last_step && t.open_turn.is_some())
        && (t.calls.is_empty() || t.open_step.is_some())
        && t.last_seq
            .is_none_or(|s| len > 0 && s <= MAX_SAFE_INTEGER as u64)
}

impl LogState {
    /// The number of surface nodes and the bytes of their data text (what
    /// the state holds that grows with the log).
    pub fn surface_size(&self) -> (usize, usize) {
        let nodes = self.surface.nodes();
        (
            nodes.len(),
            self.surface.nodes().map(|n| n.data.as_str().len()).sum(),
        )
    }

    /// Appends the compact form of this state to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_u64(out, self.len as u64);
        let t = &self.trace;
        let flags = u8::from(t.last_seq.is_some())
            | u8::from(t.open_turn.is_some()) << 1
            | u8::from(t.open_step.is_some()) << 2;
        out.push(flags);
        put_u64(out, t.last_seq.unwrap_or(0));
        for v in [
            t.last_turn,
            t.open_turn.unwrap_or(0),
            t.open_step.unwrap_or(0),
            t.last_step,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        put_u64(out, t.calls.len() as u64);
        // Sorted, so one state always has one form.
        let mut calls: Vec<&String> = t.calls.iter().collect();
        calls.sort_unstable();
        for c in calls {
            put_str(out, c);
        }
        let nodes = self.surface.nodes();
        put_u64(out, nodes.len() as u64);
        for n in nodes {
            put_u64(out, n.seq);
            out.push(kind_code(n.kind));
            put_str(out, n.data.as_str());
        }
    }

    /// Reads a state [`LogState::encode`] wrote; `None` when the bytes are
    /// not one. The data texts are trusted: the caller checks the bytes'
    /// integrity (the checkpoint's hash) before.
    pub fn decode(inp: &mut Input<'_>) -> Option<LogState> {
        let len = usize::try_from(inp.u64()?).ok()?;
        let flags = *inp.take(1)?.first()?;
        if flags > 7 {
            return None;
        }
        let last_seq = inp.u64()?;
        let (last_turn, open_turn, open_step, last_step) =
            (inp.i64()?, inp.i64()?, inp.i64()?, inp.i64()?);
        // A call id: its length (8 bytes) at least.
        let n_calls = inp.count(8)?;
        let mut calls = HashSet::with_capacity(n_calls);
        for _ in 0..n_calls {
            // A set's form names each id once.
            if !calls.insert(inp.str()?.to_string()) {
                return None;
            }
        }
        let trace = TurnTrace {
            last_seq: (flags & 1 != 0).then_some(last_seq),
            last_turn,
            open_turn: (flags & 2 != 0).then_some(open_turn),
            open_step: (flags & 4 != 0).then_some(open_step),
            last_step,
            calls,
            journal: None,
        };
        if !reachable(&trace, len) {
            return None;
        }
        // A node: seq, kind and its data's length (17 bytes) at least.
        let n_nodes = inp.count(17)?;
        let mut nodes = Vec::with_capacity(n_nodes);
        for _ in 0..n_nodes {
            let seq = inp.u64()?;
            let kind = kind_of_code(*inp.take(1)?.first()?)?;
            let data = JsonText::from_trusted(inp.str()?);
            nodes.push(Node { seq, kind, data });
        }
        let surface = SurfaceState::of_nodes(nodes);
        // A seq names one current node.
        if surface.place_of_len() != n_nodes {
            return None;
        }
        Some(LogState {
            surface,
            trace,
            len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::event::Event;
    use crate::model::vocabulary::Vocabulary;

    fn ev(line: &str) -> Event {
        Event::parse(line).unwrap()
    }

    #[test]
    fn round_trip_keeps_every_part() {
        let events = [
            ev(r#"{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}"#),
            ev(
                r#"{"type":"user/message","seq":1,"time":0,"data":{"content":[],"source":{"kind":"user"},"role":"user","id":"u"},"surfaceOp":"append"}"#,
            ),
            ev(r#"{"type":"step/start","seq":2,"time":0,"data":{"turn":1,"step":1}}"#),
            ev(
                r#"{"type":"tool/call","seq":3,"time":0,"data":{"turn":1,"step":1,"callId":"c1","name":"x","input":{}}}"#,
            ),
        ];
        let mut st = LogState::new();
        st.check_append("s", &Vocabulary::default(), false, true, &events)
            .unwrap();
        let mut out = Vec::new();
        st.encode(&mut out);
        let back = LogState::decode(&mut Input(&out)).unwrap();
        assert_eq!(back, st);
        assert_eq!(back.surface_size().0, 1);
        // every truncation is refused, never misread
        for n in 0..out.len() {
            let mut inp = Input(&out[..n]);
            assert!(LogState::decode(&mut inp).is_none(), "cut at {n}");
        }
        // States no log reaches are refused (a crafted or damaged
        // checkpoint whose hash matches is not used).
        let mut unreachable = Vec::new();
        for change in 0..6 {
            let mut t = st.trace.clone();
            match change {
                0 => t.last_turn = i64::MAX,
                1 => t.last_step = -1,
                2 => t.open_turn = Some(t.last_turn + 1),
                3 => t.open_step = Some(t.last_step + 1),
                4 => {
                    t.open_step = None;
                    t.calls.insert("c2".into());
                }
                _ => t.open_turn = None,
            }
            let bad = LogState {
                trace: t,
                ..st.clone()
            };
            let mut out = Vec::new();
            bad.encode(&mut out);
            unreachable.push(LogState::decode(&mut Input(&out)));
        }
        assert_eq!(unreachable, vec![None; 6]);
        let empty = LogState::new();
        let mut out = Vec::new();
        empty.encode(&mut out);
        assert_eq!(LogState::decode(&mut Input(&out)).unwrap(), empty);
    }

    /// The open step's call ids are a set: one state has one form whatever
    /// order its calls came in, and a form naming an id twice is no state.
    #[test]
    fn call_ids_have_one_form() {
        let state = |ids: [&str; 3]| {
            let mut events = vec![
                ev(r#"{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}"#),
                ev(r#"{"type":"step/start","seq":1,"time":0,"data":{"turn":1,"step":1}}"#),
            ];
            for (i, id) in ids.iter().enumerate() {
                events.push(ev(&format!(
                    r#"{{"type":"tool/call","seq":{},"time":0,"data":{{"turn":1,"step":1,"callId":"{id}"}}}}"#,
                    2 + i
                )));
            }
            let mut st = LogState::new();
            st.check_append("s", &Vocabulary::default(), false, true, &events)
                .unwrap();
            let mut out = Vec::new();
            st.encode(&mut out);
            (st, out)
        };
        let (st, one) = state(["b", "a", "c"]);
        let (_, other) = state(["c", "b", "a"]);
        assert_eq!(one, other);
        assert_eq!(LogState::decode(&mut Input(&one)).unwrap(), st);
        // "b" written where "a" is: the form names "a" twice.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        put_str(&mut a, "a");
        put_str(&mut b, "b");
        let at = one.windows(b.len()).position(|w| w == b).unwrap();
        let mut twice = one.clone();
        twice[at..at + a.len()].copy_from_slice(&a);
        assert!(LogState::decode(&mut Input(&twice)).is_none());
    }
}
