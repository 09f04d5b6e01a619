//! Surface metadata (SPEC §1.5): which events produce model-visible
//! messages, the `surfaceOp` / `sourceEventSeqs` rules, and the fold of the
//! surface into the transcript ([`derive_messages`]).
//!
//! [`SurfaceState`] is incremental: a live session feeds it every appended
//! event, and stored-log validation folds a whole log through it. Non-surface
//! events (98% of a big log is `assistant/chunk`) cost two `Option` checks.

use std::collections::{BTreeMap, HashMap};

use super::event::Event;
use super::fields::{self, json_equal};
use super::json::{self, JsonText, Kind, Scanner};
use super::vocabulary::is_surface_type;

/// A parsed `surfaceOp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SurfaceOp {
    /// `"append"`: the event's message is added at the end of the surface.
    Append,
    /// `{"op":"replace","start":S,"end":E}`: the current surface nodes from
    /// `start` to `end` (inclusive) are replaced by the event.
    Replace { start: u64, end: u64 },
}

impl SurfaceOp {
    /// Parses the raw `surfaceOp` JSON text: `"append"` or exactly
    /// `{op:"replace", start, end}` with non-negative (safe) integer seqs.
    pub fn parse(text: &str) -> Result<SurfaceOp, String> {
        let bad = || {
            format!(
                "surfaceOp must be \"append\" or {{\"op\":\"replace\",\"start\":S,\"end\":E}} with non-negative integer seqs, got {}",
                text.trim()
            )
        };
        match json::kind_of(text) {
            Some(Kind::String) => {
                if fields::str_is(Some(text), "append") {
                    Ok(SurfaceOp::Append)
                } else {
                    Err(bad())
                }
            }
            Some(Kind::Object) => {
                let f = json::object_fields(text).map_err(|_| bad())?;
                if f.len() != 3 {
                    return Err(bad());
                }
                let (mut op, mut start, mut end) = (false, None, None);
                for (k, v) in &f {
                    if k.eq_str("op") {
                        op = fields::str_is(Some(v), "replace");
                    } else if k.eq_str("start") {
                        start = json::as_safe_uint(v);
                    } else if k.eq_str("end") {
                        end = json::as_safe_uint(v);
                    }
                }
                match (op, start, end) {
                    (true, Some(start), Some(end)) => Ok(SurfaceOp::Replace { start, end }),
                    _ => Err(bad()),
                }
            }
            _ => Err(bad()),
        }
    }

    /// The JSON text of this op (`"append"` or the replace object).
    pub fn to_json(&self) -> String {
        match self {
            SurfaceOp::Append => "\"append\"".to_string(),
            SurfaceOp::Replace { start, end } => {
                format!("{{\"op\":\"replace\",\"start\":{start},\"end\":{end}}}")
            }
        }
    }
}

/// Parses a raw `sourceEventSeqs` text: an array of distinct non-negative
/// safe integers, each smaller than `own_seq`.
pub fn parse_source_event_seqs(text: &str, own_seq: u64) -> Result<Vec<u64>, String> {
    let shape = || {
        format!(
            "sourceEventSeqs must be an array of distinct non-negative integers, got {}",
            text.trim()
        )
    };
    let out = match plain_seq_list(text) {
        Some(v) => v,
        None => {
            let mut out: Vec<u64> = Vec::new();
            let mut s = Scanner::new(text);
            let mut bad = false;
            s.array(|s| {
                let v = s.value()?;
                match json::as_safe_uint(v) {
                    Some(n) => out.push(n),
                    None => bad = true,
                }
                Ok(())
            })
            .and_then(|_| s.expect_end())
            .map_err(|_| shape())?;
            if bad {
                return Err(shape());
            }
            out
        }
    };
    // Writers list sources in ascending order: then no sort is needed to
    // find a repeat.
    let ascending = out.windows(2).all(|w| w[0] < w[1]);
    if !ascending && {
        let mut sorted = out.clone();
        sorted.sort_unstable();
        sorted.windows(2).any(|w| w[0] == w[1])
    } {
        return Err(format!(
            "sourceEventSeqs must not repeat a seq, got {}",
            text.trim()
        ));
    }
    if let Some(&bad) = out.iter().find(|&&n| n >= own_seq) {
        return Err(format!(
            "sourceEventSeqs entry {bad} is not before the event's own seq {own_seq}"
        ));
    }
    Ok(out)
}

/// The fast path of [`parse_source_event_seqs`]: an array whose items are
/// all plain integer tokens (`0` or `[1-9][0-9]*`, at most 2^53 − 1), the only
/// shape writers produce. `None` means "use the general parser", which
/// accepts every other spelling the original accepts (`1.0`, `1e2`, `-0`)
/// and words the errors.
fn plain_seq_list(text: &str) -> Option<Vec<u64>> {
    let b = text.as_bytes();
    let mut i = 0;
    let ws = |i: &mut usize| {
        while *i < b.len() && matches!(b[*i], b' ' | b'\n' | b'\r' | b'\t') {
            *i += 1;
        }
    };
    ws(&mut i);
    if b.get(i) != Some(&b'[') {
        return None;
    }
    i += 1;
    ws(&mut i);
    let mut out = Vec::with_capacity(b.len() / 4);
    if b.get(i) == Some(&b']') {
        i += 1;
    } else {
        loop {
            let start = i;
            let mut v: u64 = 0;
            while i < b.len() && b[i].is_ascii_digit() {
                if i - start == 16 {
                    return None;
                }
                v = v * 10 + u64::from(b[i] - b'0');
                i += 1;
            }
            let len = i - start;
            if len == 0 || (len > 1 && b[start] == b'0') || v > json::MAX_SAFE_INTEGER as u64 {
                return None;
            }
            out.push(v);
            ws(&mut i);
            match b.get(i) {
                Some(b',') => {
                    i += 1;
                    ws(&mut i);
                }
                Some(b']') => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    ws(&mut i);
    (i == b.len()).then_some(out)
}

/// What kind of surface event a node came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NodeKind {
    User,
    Assistant,
    ToolResult,
}

impl NodeKind {
    pub(super) fn of(type_name: &str) -> Option<NodeKind> {
        match type_name {
            "user/message" => Some(NodeKind::User),
            "assistant/message" => Some(NodeKind::Assistant),
            "tool/result" => Some(NodeKind::ToolResult),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Node {
    pub(super) seq: u64,
    pub(super) kind: NodeKind,
    pub(super) data: JsonText,
}

/// How to take back one applied event (see [`SurfaceState::undo`]).
#[must_use]
#[derive(Debug)]
pub struct SurfaceUndo(Step);

#[derive(Debug)]
enum Step {
    /// The event changed nothing.
    Nothing,
    /// It appended the node at `place`.
    Pop { place: u64 },
    /// It replaced the nodes `removed` (their places and nodes) with one
    /// node, at the first one's place.
    Unsplice { removed: Vec<(u64, Node)> },
}

/// The current surface: the seqs that derive model-visible messages, in
/// transcript order, with their events' data.
///
/// Each node has a place: an appended node the place after the last, a
/// replacement the place of the first node it replaces. Places so keep the
/// transcript's order without moving a node, and a replace costs the nodes
/// it replaces, not the surface (a list cost the whole surface per replace:
/// a log pruning its early tool results one by one grew as its square).
/// A log's seqs strictly increase (a read and an append check that before
/// the surface), so a seq names at most one current node.
#[derive(Clone, Debug, Default)]
pub struct SurfaceState {
    /// The current nodes by place.
    by_place: BTreeMap<u64, Node>,
    /// The place of each current node, by its seq.
    place_of: HashMap<u64, u64>,
    /// The place the next appended node takes.
    next_place: u64,
}

/// Two surfaces are equal when they hold the same nodes in the same order
/// (places are how one surface keeps its order, not part of it).
impl PartialEq for SurfaceState {
    fn eq(&self, other: &Self) -> bool {
        self.by_place.len() == other.by_place.len() && self.nodes().eq(other.nodes())
    }
}

impl SurfaceState {
    /// An empty surface (the state before the first event).
    pub fn new() -> Self {
        SurfaceState::default()
    }

    /// The surface of `nodes`, in transcript order.
    pub(super) fn of_nodes(nodes: impl IntoIterator<Item = Node>) -> Self {
        let mut st = SurfaceState::new();
        for node in nodes {
            st.push(node);
        }
        st
    }

    /// The current nodes, in transcript order.
    pub(super) fn nodes(&self) -> impl ExactSizeIterator<Item = &Node> + '_ {
        self.by_place.values()
    }

    /// How many seqs name a current node (the node count, unless the
    /// nodes given to [`SurfaceState::of_nodes`] repeated a seq).
    pub(super) fn place_of_len(&self) -> usize {
        self.place_of.len()
    }

    /// The seqs currently on the surface, in transcript order.
    pub fn seqs(&self) -> impl Iterator<Item = u64> + '_ {
        self.nodes().map(|n| n.seq)
    }

    /// Places `node` after the last node; returns its place.
    fn push(&mut self, node: Node) -> u64 {
        let place = self.next_place;
        self.next_place += 1;
        self.place_of.insert(node.seq, place);
        self.by_place.insert(place, node);
        place
    }

    /// Checks `event` against every surface rule (SPEC §1.5) and, when it
    /// passes, applies it. On error the state is unchanged; the message is
    /// the bare rule text (callers add context such as the event index).
    pub fn apply(&mut self, event: &Event) -> Result<(), String> {
        self.apply_undoable(event).map(drop)
    }

    /// [`SurfaceState::apply`], returning how to take the change back
    /// ([`SurfaceState::undo`]): a batch is judged in place, and undone
    /// step by step when a later event fails, at the cost of what changed
    /// (not of a copy of the surface, which grows with the log).
    pub fn apply_undoable(&mut self, event: &Event) -> Result<SurfaceUndo, String> {
        let name = event.type_str();
        let kind = NodeKind::of(name);
        let Some(kind) = kind else {
            if event.surface_op().is_some() || event.source_event_seqs().is_some() {
                return Err(format!(
                    "session event {} is not surface-eligible and must not carry a surfaceOp marker or sourceEventSeqs",
                    json::quote(name)
                ));
            }
            return Ok(SurfaceUndo(Step::Nothing));
        };
        debug_assert!(is_surface_type(name));
        let Some(op_text) = event.surface_op() else {
            return Err(format!(
                "session event {} is surface-eligible and requires a surfaceOp marker",
                json::quote(name)
            ));
        };
        let ctx = |m: String| {
            format!(
                "session event {} at seq {}: {m}",
                json::quote(name),
                event.seq
            )
        };
        let op = SurfaceOp::parse(op_text.as_str()).map_err(ctx)?;
        let sources = match event.source_event_seqs() {
            Some(t) => {
                let v = parse_source_event_seqs(t.as_str(), event.seq).map_err(ctx)?;
                if v.is_empty() && kind != NodeKind::Assistant {
                    return Err(ctx(
                        "sourceEventSeqs must not be empty (only assistant/message may carry an empty list)".into(),
                    ));
                }
                Some(v)
            }
            None => None,
        };
        let node = Node {
            seq: event.seq,
            kind,
            data: event.data.clone(),
        };
        match op {
            SurfaceOp::Append => {
                let place = self.push(node);
                Ok(SurfaceUndo(Step::Pop { place }))
            }
            SurfaceOp::Replace { start, end } => {
                let place = |s: u64| self.place_of.get(&s).copied();
                let (Some(a), Some(b)) = (place(start), place(end)) else {
                    let missing = if place(start).is_none() { start } else { end };
                    return Err(ctx(format!(
                        "surfaceOp replace {start}..{end}: seq {missing} is not a current surface node"
                    )));
                };
                if a > b {
                    return Err(ctx(format!(
                        "surfaceOp replace {start}..{end}: start comes after end on the surface"
                    )));
                }
                let mut sources = sources.unwrap_or_default();
                sources.sort_unstable();
                if let Some(missing) = self
                    .by_place
                    .range(a..=b)
                    .map(|(_, n)| n.seq)
                    .find(|s| sources.binary_search(s).is_err())
                {
                    return Err(ctx(format!(
                        "surfaceOp replace {start}..{end}: sourceEventSeqs must include every replaced node (missing {missing})"
                    )));
                }
                if kind == NodeKind::ToolResult {
                    let old = &self.by_place[&a];
                    if a != b || old.kind != NodeKind::ToolResult {
                        return Err(ctx(format!(
                            "surfaceOp replace {start}..{end}: a tool/result replacement must replace exactly one current tool/result"
                        )));
                    }
                    if !same_result_except_content(old.data.as_str(), event.data.as_str()) {
                        return Err(ctx(format!(
                            "surfaceOp replace {start}..{end}: a tool/result replacement may change only the result content of the tool/result at seq {}",
                            old.seq
                        )));
                    }
                }
                let places: Vec<u64> = self.by_place.range(a..=b).map(|(&p, _)| p).collect();
                let mut removed = Vec::with_capacity(places.len());
                for p in places {
                    let old = self.by_place.remove(&p).expect("a place just seen");
                    self.place_of.remove(&old.seq);
                    removed.push((p, old));
                }
                self.place_of.insert(node.seq, a);
                self.by_place.insert(a, node);
                Ok(SurfaceUndo(Step::Unsplice { removed }))
            }
        }
    }

    /// Takes back the change of one successful [`SurfaceState::apply_undoable`];
    /// the changes of a batch are taken back last first.
    pub fn undo(&mut self, undo: SurfaceUndo) {
        match undo.0 {
            Step::Nothing => {}
            Step::Pop { place } => {
                if let Some(node) = self.by_place.remove(&place) {
                    self.place_of.remove(&node.seq);
                }
                self.next_place = place;
            }
            Step::Unsplice { removed } => {
                let Some(&(first, _)) = removed.first() else {
                    return;
                };
                if let Some(node) = self.by_place.remove(&first) {
                    self.place_of.remove(&node.seq);
                }
                for (place, node) in removed {
                    self.place_of.insert(node.seq, place);
                    self.by_place.insert(place, node);
                }
            }
        }
    }

    /// The event type and data of the current surface node at `seq`.
    pub fn node_at(&self, seq: u64) -> Option<(&'static str, &JsonText)> {
        let n = self.by_place.get(self.place_of.get(&seq)?)?;
        let name = match n.kind {
            NodeKind::User => "user/message",
            NodeKind::Assistant => "assistant/message",
            NodeKind::ToolResult => "tool/result",
        };
        Some((name, &n.data))
    }

    /// The model-visible transcript of the current surface (see
    /// [`derive_messages`]).
    pub fn messages(&self) -> Vec<JsonText> {
        self.nodes().filter_map(node_message).collect()
    }
}

/// The message a surface node derives: user/message → its data;
/// assistant/message → `data.message` unless its `content` is empty;
/// tool/result → `data.message`.
fn node_message(n: &Node) -> Option<JsonText> {
    match n.kind {
        NodeKind::User => Some(n.data.clone()),
        NodeKind::Assistant => {
            let m = fields::field(n.data.as_str(), "message")?;
            let content = fields::field(m, "content");
            if content.is_some_and(fields::is_empty_array) {
                None
            } else {
                Some(JsonText::from_trusted(m))
            }
        }
        NodeKind::ToolResult => {
            fields::field(n.data.as_str(), "message").map(JsonText::from_trusted)
        }
    }
}

/// Whether two tool/result data texts carry the same message except for the
/// `content` of its tool-result block. Only the message is compared: the
/// replacement may be written later, by another step, with other envelope
/// fields (e.g. `meta`), and rejecting those would refuse logs the original
/// accepts; what must not change is the result's identity (id, role,
/// source, call id, error flag).
fn same_result_except_content(old: &str, new: &str) -> bool {
    let (Some(om), Some(nm)) = (fields::field(old, "message"), fields::field(new, "message"))
    else {
        return false;
    };
    let (Ok(of), Ok(nf)) = (json::object_fields(om), json::object_fields(nm)) else {
        return false;
    };
    if of.len() != nf.len() {
        return false;
    }
    let nf = fields::first_values(&nf);
    for (k, ov) in &of {
        let key = k.decode();
        let Some(nv) = nf.get(key.as_ref()) else {
            return false;
        };
        if key == "content" {
            if !same_blocks_except_content(ov, nv) {
                return false;
            }
        } else if !json_equal(ov, nv) {
            return false;
        }
    }
    true
}

fn same_blocks_except_content<'a>(old: &'a str, new: &'a str) -> bool {
    let (Ok(ob), Ok(nb)) = (json::array_items(old), json::array_items(new)) else {
        return false;
    };
    ob.len() == nb.len()
        && ob.iter().zip(&nb).all(|(o, n)| {
            let (Ok(of), Ok(nf)) = (json::object_fields(o), json::object_fields(n)) else {
                return false;
            };
            let rest = |f: Vec<(json::JsonStr<'a>, &'a str)>| -> Vec<(json::JsonStr<'a>, &'a str)> {
                f.into_iter()
                    .filter(|(k, _)| !k.eq_str("content"))
                    .collect()
            };
            let (ro, rn) = (rest(of), rest(nf));
            if ro.len() != rn.len() {
                return false;
            }
            let rn = fields::first_values(&rn);
            ro.iter().all(|(k, v)| {
                rn.get(k.decode().as_ref())
                    .is_some_and(|nv| json_equal(v, nv))
            })
        })
}

/// The model-visible transcript of a log (SPEC §1.5): the surface folded
/// over `events`, each node giving its message (user/message → its data;
/// assistant/message → `data.message` unless `content` is empty;
/// tool/result → `data.message`).
///
/// `events` are expected to have passed validation; an event that breaks a
/// surface rule is left out of the fold rather than failing it.
pub fn derive_messages(events: &[Event]) -> Vec<JsonText> {
    let mut st = SurfaceState::new();
    for e in events {
        if e.surface_op().is_some() || e.source_event_seqs().is_some() {
            let _ = st.apply(e);
        }
    }
    st.messages()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(line: &str) -> Event {
        Event::parse(line).unwrap()
    }

    fn user(seq: u64, id: &str, extra: &str) -> Event {
        ev(&format!(
            r#"{{"type":"user/message","seq":{seq},"time":0,"data":{{"id":"{id}","role":"user","source":{{"kind":"user"}},"content":[]}}{extra}}}"#
        ))
    }

    fn result(seq: u64, text: &str, extra: &str) -> Event {
        ev(&format!(
            r#"{{"type":"tool/result","seq":{seq},"time":0,"data":{{"turn":1,"step":1,"message":{{"id":"r","role":"user","source":{{"kind":"tool","callId":"c"}},"content":[{{"type":"tool-result","toolCallId":"c","isError":false,"content":[{{"type":"text","text":"{text}"}}]}}]}}}}{extra}}}"#
        ))
    }

    #[test]
    fn surface_op_parsing() {
        assert_eq!(SurfaceOp::parse("\"append\""), Ok(SurfaceOp::Append));
        assert_eq!(
            SurfaceOp::parse(r#"{"op":"replace","start":2,"end":5}"#),
            Ok(SurfaceOp::Replace { start: 2, end: 5 })
        );
        for bad in [
            "\"prepend\"",
            "1",
            r#"{"op":"replace","start":2}"#,
            r#"{"op":"replace","start":2,"end":5,"x":1}"#,
            r#"{"op":"merge","start":2,"end":5}"#,
            r#"{"op":"replace","start":-1,"end":5}"#,
            r#"{"op":"replace","start":1.5,"end":5}"#,
        ] {
            let e = SurfaceOp::parse(bad).unwrap_err();
            assert!(e.starts_with("surfaceOp must be \"append\""), "{bad}: {e}");
        }
        assert_eq!(
            SurfaceOp::Replace { start: 1, end: 2 }.to_json(),
            r#"{"op":"replace","start":1,"end":2}"#
        );
    }

    #[test]
    fn source_seqs_rules() {
        assert_eq!(parse_source_event_seqs("[3,1]", 4), Ok(vec![3, 1]));
        assert_eq!(
            parse_source_event_seqs(" [ 1 , 2,3 ] ", 4),
            Ok(vec![1, 2, 3])
        );
        // Spellings outside the fast path still parse like the original.
        assert_eq!(parse_source_event_seqs("[1.0,2e0]", 4), Ok(vec![1, 2]));
        assert_eq!(parse_source_event_seqs("[-0]", 4), Ok(vec![0]));
        assert_eq!(
            parse_source_event_seqs("[9007199254740991]", u64::MAX),
            Ok(vec![9_007_199_254_740_991])
        );
        assert!(parse_source_event_seqs("[9007199254740992]", u64::MAX).is_err());
        assert!(parse_source_event_seqs("[12345678901234567]", u64::MAX).is_err());
        // Longer than a u64 holds: 2^64 + 5 must not wrap round to 5.
        for huge in [
            "[18446744073709551621]",
            "[100000000000000000000000000000]",
            "[1, 2, 3, 4, 5, 6, 7, 8, 18446744073709551621]",
        ] {
            assert!(parse_source_event_seqs(huge, u64::MAX).is_err(), "{huge}");
            assert_eq!(plain_seq_list(huge), None, "{huge}");
        }
        // Cut texts are refused, not read past their end.
        for cut in ["", "[", "[1", "[1,", "[1 ", " [12"] {
            assert_eq!(plain_seq_list(cut), None, "{cut:?}");
            assert!(parse_source_event_seqs(cut, 4).is_err(), "{cut:?}");
        }
        assert!(parse_source_event_seqs("[01]", 4).is_err());
        assert!(parse_source_event_seqs("[1,]", 4).is_err());
        assert!(parse_source_event_seqs("[1] x", 4).is_err());
        assert_eq!(plain_seq_list("[1,2]"), Some(vec![1, 2]));
        assert_eq!(plain_seq_list("[1.0]"), None);
        assert_eq!(plain_seq_list("[]"), Some(vec![]));
        assert_eq!(parse_source_event_seqs("[]", 0), Ok(vec![]));
        // A repeat is found in any order, not only in ascending lists.
        for repeat in ["[1,1]", "[3,1,3]", "[3,3,1]", "[2, 0, 1, 0]"] {
            assert!(
                parse_source_event_seqs(repeat, 4)
                    .unwrap_err()
                    .contains("must not repeat"),
                "{repeat}"
            );
        }
        assert!(
            parse_source_event_seqs("[4]", 4)
                .unwrap_err()
                .contains("entry 4 is not before")
        );
        assert!(
            parse_source_event_seqs("[-1]", 4)
                .unwrap_err()
                .contains("distinct non-negative")
        );
        assert!(
            parse_source_event_seqs("[\"1\"]", 4)
                .unwrap_err()
                .contains("distinct non-negative")
        );
        assert!(
            parse_source_event_seqs("{}", 4)
                .unwrap_err()
                .contains("distinct non-negative")
        );
    }

    #[test]
    fn surface_op_required_on_surface_types() {
        let mut st = SurfaceState::new();
        let e = user(0, "u", "");
        assert_eq!(
            st.apply(&e).unwrap_err(),
            "session event \"user/message\" is surface-eligible and requires a surfaceOp marker"
        );
        assert_eq!(st.seqs().count(), 0);
    }

    #[test]
    fn surface_fields_forbidden_elsewhere() {
        let mut st = SurfaceState::new();
        for extra in [r#","surfaceOp":"append""#, r#","sourceEventSeqs":[0]"#] {
            let e = ev(&format!(
                r#"{{"type":"tool/call","seq":1,"time":0,"data":{{}}{extra}}}"#
            ));
            assert_eq!(
                st.apply(&e).unwrap_err(),
                "session event \"tool/call\" is not surface-eligible and must not carry a surfaceOp marker or sourceEventSeqs"
            );
        }
        let chunk = ev(r#"{"type":"assistant/chunk","seq":1,"time":0,"data":{}}"#);
        assert!(st.apply(&chunk).is_ok());
    }

    #[test]
    fn empty_sources_only_on_assistant() {
        let mut st = SurfaceState::new();
        let e = user(1, "u", r#","surfaceOp":"append","sourceEventSeqs":[]"#);
        assert!(st.apply(&e).unwrap_err().contains("must not be empty"));
        let a = ev(
            r#"{"type":"assistant/message","seq":1,"time":0,"data":{"message":{"content":[]}},"sourceEventSeqs":[],"surfaceOp":"append"}"#,
        );
        assert!(st.apply(&a).is_ok());
        assert!(
            st.messages().is_empty(),
            "empty assistant content derives nothing"
        );
        assert_eq!(st.seqs().collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn bad_sources_and_ops_are_reported_with_seq() {
        let mut st = SurfaceState::new();
        let e = user(2, "u", r#","surfaceOp":"append","sourceEventSeqs":[2]"#);
        assert_eq!(
            st.apply(&e).unwrap_err(),
            "session event \"user/message\" at seq 2: sourceEventSeqs entry 2 is not before the event's own seq 2"
        );
        let e = user(2, "u", r#","surfaceOp":"sideways""#);
        assert!(
            st.apply(&e).unwrap_err().starts_with(
                "session event \"user/message\" at seq 2: surfaceOp must be \"append\""
            )
        );
    }

    #[test]
    fn node_at_finds_the_current_node_of_a_seq() {
        // Feeds id inheritance for an append whose replaced node came in an
        // earlier batch.
        let mut st = SurfaceState::new();
        st.apply(&user(0, "u0", r#","surfaceOp":"append""#))
            .unwrap();
        st.apply(&result(1, "a", r#","surfaceOp":"append""#))
            .unwrap();
        let (name, data) = st.node_at(1).unwrap();
        assert_eq!(name, "tool/result");
        assert!(data.as_str().contains(r#""text":"a""#), "{}", data.as_str());
        assert_eq!(st.node_at(0).unwrap().0, "user/message");
        assert!(st.node_at(2).is_none());
        let swap = r#","surfaceOp":{"op":"replace","start":1,"end":1},"sourceEventSeqs":[1]"#;
        st.apply(&result(2, "b", swap)).unwrap();
        assert!(st.node_at(1).is_none(), "a replaced node is not current");
        assert!(st.node_at(2).unwrap().1.as_str().contains(r#""text":"b""#));
    }

    #[test]
    fn undo_takes_back_appends_and_replaces_last_first() {
        let mut st = SurfaceState::new();
        for s in [0, 1, 2] {
            st.apply(&user(s, &format!("u{s}"), r#","surfaceOp":"append""#))
                .unwrap();
        }
        let before: Vec<u64> = st.seqs().collect();
        let whole = st.clone();
        let mut undo = Vec::new();
        undo.push(
            st.apply_undoable(&user(
                3,
                "s",
                r#","surfaceOp":{"op":"replace","start":1,"end":2},"sourceEventSeqs":[1,2]"#,
            ))
            .unwrap(),
        );
        undo.push(
            st.apply_undoable(&user(4, "u4", r#","surfaceOp":"append""#))
                .unwrap(),
        );
        undo.push(
            st.apply_undoable(&ev(
                r#"{"type":"assistant/chunk","seq":5,"time":0,"data":{}}"#,
            ))
            .unwrap(),
        );
        assert_eq!(st.seqs().collect::<Vec<_>>(), vec![0, 3, 4]);
        while let Some(u) = undo.pop() {
            st.undo(u);
        }
        assert_eq!(st.seqs().collect::<Vec<_>>(), before);
        let texts: Vec<String> = st
            .messages()
            .iter()
            .map(|m| m.as_str().to_string())
            .collect();
        assert_eq!(texts.len(), 3);
        assert!(texts[1].contains("u1") && texts[2].contains("u2"));
        assert_eq!(st, whole);
        assert!(st.node_at(2).is_some() && st.node_at(3).is_none() && st.node_at(4).is_none());
        // The surface goes on as if the batch had never been: the same seqs
        // append and replace again.
        st.apply(&user(3, "u3", r#","surfaceOp":"append""#))
            .unwrap();
        st.apply(&user(
            4,
            "s",
            r#","surfaceOp":{"op":"replace","start":2,"end":3},"sourceEventSeqs":[2,3]"#,
        ))
        .unwrap();
        assert_eq!(st.seqs().collect::<Vec<_>>(), vec![0, 1, 4]);
    }

    /// A log pruning its early messages one by one, each replaced where it
    /// stands: every replace costs the node it replaces. (The surface was a
    /// list searched and shifted per replace: 100 000 such replaces cost
    /// about 5 s of a load, 200 000 here minutes.)
    #[test]
    fn replacing_early_nodes_one_by_one_costs_what_each_replaces() {
        const N: u64 = 200_000;
        let mut st = SurfaceState::new();
        for s in 0..N {
            st.apply(&user(s, "u", r#","surfaceOp":"append""#)).unwrap();
        }
        for s in 0..N {
            let op = format!(
                r#","surfaceOp":{{"op":"replace","start":{s},"end":{s}}},"sourceEventSeqs":[{s}]"#
            );
            st.apply(&user(N + s, "r", &op)).unwrap();
        }
        assert!(st.seqs().eq(N..2 * N));
        assert!(st.node_at(N - 1).is_none() && st.node_at(2 * N - 1).is_some());
        // then one replace of the whole surface, naming every node
        let all: Vec<String> = (N..2 * N).map(|s| s.to_string()).collect();
        let op = format!(
            r#","surfaceOp":{{"op":"replace","start":{N},"end":{}}},"sourceEventSeqs":[{}]"#,
            2 * N - 1,
            all.join(",")
        );
        st.apply(&user(2 * N, "all", &op)).unwrap();
        assert_eq!(st.seqs().collect::<Vec<_>>(), vec![2 * N]);
    }

    #[test]
    fn replace_semantics() {
        let mut st = SurfaceState::new();
        for s in [0, 1, 2] {
            st.apply(&user(s, &format!("u{s}"), r#","surfaceOp":"append""#))
                .unwrap();
        }
        // start not on the surface
        let e = user(
            3,
            "s",
            r#","surfaceOp":{"op":"replace","start":7,"end":1},"sourceEventSeqs":[0,1]"#,
        );
        assert!(
            st.apply(&e)
                .unwrap_err()
                .contains("seq 7 is not a current surface node")
        );
        // start after end
        let e = user(
            3,
            "s",
            r#","surfaceOp":{"op":"replace","start":1,"end":0},"sourceEventSeqs":[0,1]"#,
        );
        assert!(st.apply(&e).unwrap_err().contains("start comes after end"));
        // missing coverage
        let e = user(
            3,
            "s",
            r#","surfaceOp":{"op":"replace","start":0,"end":1},"sourceEventSeqs":[0]"#,
        );
        assert!(st.apply(&e).unwrap_err().contains("(missing 1)"));
        let e = user(3, "s", r#","surfaceOp":{"op":"replace","start":0,"end":1}"#);
        assert!(st.apply(&e).unwrap_err().contains("(missing 0)"));
        // a good one: [0,1,2] -> [3,2]
        let e = user(
            3,
            "s",
            r#","surfaceOp":{"op":"replace","start":0,"end":1},"sourceEventSeqs":[1,0]"#,
        );
        st.apply(&e).unwrap();
        assert_eq!(st.seqs().collect::<Vec<_>>(), vec![3, 2]);
        // replaced nodes are gone
        let e = user(
            4,
            "t",
            r#","surfaceOp":{"op":"replace","start":0,"end":0},"sourceEventSeqs":[0]"#,
        );
        assert!(
            st.apply(&e)
                .unwrap_err()
                .contains("seq 0 is not a current surface node")
        );
        // position order, not seq order: replace 3..2 is fine
        let e = user(
            4,
            "t",
            r#","surfaceOp":{"op":"replace","start":3,"end":2},"sourceEventSeqs":[2,3]"#,
        );
        st.apply(&e).unwrap();
        assert_eq!(st.seqs().collect::<Vec<_>>(), vec![4]);
    }

    #[test]
    fn tool_result_replace_rules() {
        let mut st = SurfaceState::new();
        st.apply(&user(0, "u", r#","surfaceOp":"append""#)).unwrap();
        st.apply(&result(1, "out", r#","surfaceOp":"append""#))
            .unwrap();
        // must replace a tool/result
        let e = result(
            2,
            "x",
            r#","surfaceOp":{"op":"replace","start":0,"end":0},"sourceEventSeqs":[0]"#,
        );
        assert!(
            st.apply(&e)
                .unwrap_err()
                .contains("must replace exactly one current tool/result")
        );
        // exactly one
        let e = result(
            2,
            "x",
            r#","surfaceOp":{"op":"replace","start":0,"end":1},"sourceEventSeqs":[0,1]"#,
        );
        assert!(
            st.apply(&e)
                .unwrap_err()
                .contains("must replace exactly one current tool/result")
        );
        // only content may change
        let e = ev(
            r#"{"type":"tool/result","seq":2,"time":0,"data":{"turn":1,"step":1,"message":{"id":"other","role":"user","source":{"kind":"tool","callId":"c"},"content":[{"type":"tool-result","toolCallId":"c","isError":false,"content":[]}]}},"surfaceOp":{"op":"replace","start":1,"end":1},"sourceEventSeqs":[1]}"#,
        );
        assert!(
            st.apply(&e)
                .unwrap_err()
                .contains("may change only the result content")
        );
        let e = ev(
            r#"{"type":"tool/result","seq":2,"time":0,"data":{"turn":1,"step":1,"message":{"id":"r","role":"user","source":{"kind":"tool","callId":"c"},"content":[{"type":"tool-result","toolCallId":"c","isError":true,"content":[]}]}},"surfaceOp":{"op":"replace","start":1,"end":1},"sourceEventSeqs":[1]}"#,
        );
        assert!(
            st.apply(&e)
                .unwrap_err()
                .contains("may change only the result content")
        );
        // content change with reordered keys is fine
        let e = ev(
            r#"{"type":"tool/result","seq":2,"time":0,"data":{"turn":2,"step":1,"message":{"role":"user","id":"r","source":{"callId":"c","kind":"tool"},"content":[{"type":"tool-result","isError":false,"toolCallId":"c","content":[{"type":"text","text":"pruned"}]}]}},"surfaceOp":{"op":"replace","start":1,"end":1},"sourceEventSeqs":[1]}"#,
        );
        st.apply(&e).unwrap();
        assert_eq!(st.seqs().collect::<Vec<_>>(), vec![0, 2]);
        let msgs = st.messages();
        assert_eq!(msgs.len(), 2);
        assert!(msgs[1].as_str().contains("pruned"));
    }

    #[test]
    fn derive_messages_follows_the_surface() {
        let events = vec![
            ev(r#"{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}"#),
            user(1, "u1", r#","surfaceOp":"append""#),
            ev(
                r#"{"type":"assistant/message","seq":2,"time":0,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[{"type":"text","text":"hi"}],"source":{"kind":"model"}}},"surfaceOp":"append"}"#,
            ),
            ev(
                r#"{"type":"assistant/message","seq":3,"time":0,"data":{"turn":1,"step":1,"message":{"id":"e","role":"assistant","content":[],"source":{"kind":"model"}}},"sourceEventSeqs":[],"surfaceOp":"append"}"#,
            ),
            result(4, "out", r#","surfaceOp":"append""#),
            user(
                5,
                "sum",
                r#","surfaceOp":{"op":"replace","start":1,"end":2},"sourceEventSeqs":[1,2]"#,
            ),
        ];
        let msgs: Vec<String> = derive_messages(&events)
            .iter()
            .map(|m| m.as_str().to_string())
            .collect();
        assert_eq!(msgs.len(), 2);
        assert!(msgs[0].contains("\"id\":\"sum\""));
        assert!(msgs[1].starts_with("{\"id\":\"r\""));
    }
}
