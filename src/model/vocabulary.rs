//! The event-type vocabulary (SPEC §1.4) and the refusal of unknown types.

use std::collections::HashSet;
use std::sync::Arc;

use crate::error::Error;
use crate::model::json::quote;

/// The 48 event types this build knows (`KNOWN_SESSION_EVENT_TYPES`), sorted.
pub const KNOWN_SESSION_EVENT_TYPES: [&str; 48] = [
    "agent-preset/selected",
    "agent/inbox/spliced",
    "approval/asked",
    "approval/decided",
    "approval/policy",
    "assistant/chunk",
    "assistant/message",
    "command/done",
    "command/run",
    "compaction/end",
    "compaction/prune",
    "compaction/start",
    "compaction/summary",
    "feedback/record",
    "goal/change",
    "hook/invoked",
    "hook/result",
    "llm/retry",
    "llm/retry-started",
    "permission/preset",
    "plan/mode",
    "request/context",
    "request/header",
    "sandbox/mode",
    "schedule/change",
    "session/end-seed",
    "session/title",
    "session/title-llm-request",
    "step/end",
    "step/start",
    "subagent/descriptor",
    "team/member",
    "team/message/delivered",
    "team/message/queued",
    "team/task",
    "todo/write",
    "tool-workflow/agent-end",
    "tool-workflow/agent-start",
    "tool-workflow/run-end",
    "tool-workflow/run-start",
    "tool/call",
    "tool/code-dispatch",
    "tool/code-dispatch-start",
    "tool/result",
    "turn/end",
    "turn/start",
    "user/message",
    "web/deepseek-search-llm-request",
];

/// Names that are not event types but appear as record `type`s: the packed
/// row tags (SPEC §2) and legacy types converted or refused on read (§1.8, §1.9).
const OTHER_STATIC: [&str; 6] = [
    "text-chunks",
    "reasoning-chunks",
    "tool-call-chunks",
    "steering/message",
    "request/header-delta",
    "mode/set",
];

/// Surface types (SPEC §1.5).
pub const SURFACE_TYPES: [&str; 3] = ["user/message", "assistant/message", "tool/result"];

pub fn is_known(name: &str) -> bool {
    KNOWN_SESSION_EVENT_TYPES.binary_search(&name).is_ok()
}

pub fn is_surface_type(name: &str) -> bool {
    SURFACE_TYPES.contains(&name)
}

/// The static copy of `name` when it is a known type or another fixed name.
pub fn static_name(name: &str) -> Option<&'static str> {
    static_index(name).map(static_by_index)
}

/// [`static_index`] of `assistant/chunk`.
const ASSISTANT_CHUNK: u16 = 5;

/// The index of `name` among the fixed names (the known types, then the
/// other static names): an event keeps its type as this index.
pub fn static_index(name: &str) -> Option<u16> {
    // Most records of a log are chunks.
    if name == "assistant/chunk" {
        return Some(ASSISTANT_CHUNK);
    }
    if let Ok(i) = KNOWN_SESSION_EVENT_TYPES.binary_search(&name) {
        return Some(i as u16);
    }
    OTHER_STATIC
        .iter()
        .position(|s| *s == name)
        .map(|i| (KNOWN_SESSION_EVENT_TYPES.len() + i) as u16)
}

/// The fixed name at `index` (from [`static_index`]).
pub fn static_by_index(index: u16) -> &'static str {
    let i = index as usize;
    match KNOWN_SESSION_EVENT_TYPES.get(i) {
        Some(s) => s,
        None => OTHER_STATIC[i - KNOWN_SESSION_EVENT_TYPES.len()],
    }
}

/// The set of types a store accepts: the built-in vocabulary plus the host's
/// `extraEventTypes` (an extension beyond the original).
#[derive(Clone, Debug, Default)]
pub struct Vocabulary {
    extra: Arc<HashSet<String>>,
}

impl Vocabulary {
    pub fn with_extra<I: IntoIterator<Item = String>>(extra: I) -> Self {
        Vocabulary {
            extra: Arc::new(extra.into_iter().collect()),
        }
    }

    pub fn knows(&self, name: &str) -> bool {
        is_known(name) || self.extra.contains(name)
    }

    /// The refusal of an unknown, non-ignorable event type read from a log
    /// (SPEC §1.4). `raw_log` is the artifact path for backends that keep one
    /// file per session.
    pub fn refusal(session_id: &str, type_name: &str, seq: u64, raw_log: Option<&str>) -> Error {
        let mut m = format!(
            "session {} contains event type {} (seq {seq}) unknown to this harness and not marked ignorable; refusing to interpret the log \u{2014} it was likely written by a newer harness",
            quote(session_id),
            quote(type_name)
        );
        if let Some(p) = raw_log {
            m.push_str(&format!(" (raw log: {p})"));
        }
        Error::FormatUnsupported(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabulary_is_sorted_and_complete() {
        let mut sorted = KNOWN_SESSION_EVENT_TYPES;
        sorted.sort_unstable();
        assert_eq!(sorted, KNOWN_SESSION_EVENT_TYPES);
        assert_eq!(KNOWN_SESSION_EVENT_TYPES.len(), 48);
        assert!(is_known("turn/start"));
        assert!(!is_known("steering/message"));
        assert_eq!(static_name("text-chunks"), Some("text-chunks"));
        assert_eq!(static_name("nope"), None);
        assert_eq!(static_by_index(ASSISTANT_CHUNK), "assistant/chunk");
        for name in KNOWN_SESSION_EVENT_TYPES.iter().chain(&OTHER_STATIC) {
            assert_eq!(static_index(name).map(static_by_index), Some(*name));
        }
    }

    #[test]
    fn extra_types_and_refusal_text() {
        let v = Vocabulary::with_extra(["my/type".to_string()]);
        assert!(v.knows("my/type"));
        assert!(!v.knows("future/required-thing"));
        let e = Vocabulary::refusal(
            "unknown-required",
            "future/required-thing",
            14,
            Some("/r/x"),
        );
        assert_eq!(
            e.to_string(),
            "session \"unknown-required\" contains event type \"future/required-thing\" (seq 14) unknown to this harness and not marked ignorable; refusing to interpret the log \u{2014} it was likely written by a newer harness (raw log: /r/x)"
        );
    }
}
