//! The text of messages, for listings, search and export: the `text` blocks
//! of a message's `content` (a tool result: of its `tool-result` block's
//! `content`).

use serde_json::Value;

use crate::model::event::Event;

/// Who wrote a piece of message text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn from_code(c: u8) -> Option<Role> {
        [Role::User, Role::Assistant, Role::Tool]
            .get(c as usize)
            .copied()
    }
}

/// The text blocks of `content` joined by blank lines.
pub fn content_text(content: &Value) -> String {
    let mut out = String::new();
    if let Some(blocks) = content.as_array() {
        for b in blocks {
            let text = match b.get("type").and_then(Value::as_str) {
                Some("text") => b.get("text").and_then(Value::as_str),
                _ => None,
            };
            if let Some(t) = text {
                if !out.is_empty() {
                    out.push_str("\n\n");
                }
                out.push_str(t);
            }
        }
    } else if let Some(s) = content.as_str() {
        out.push_str(s);
    }
    out
}

/// The message of a surface event (`data` for a user message,
/// `data.message` otherwise), parsed.
pub fn message_of(e: &Event) -> Option<Value> {
    let data: Value = serde_json::from_str(e.data.as_str()).ok()?;
    match e.type_str() {
        "user/message" => Some(data),
        "assistant/message" | "tool/result" => data.get("message").cloned(),
        _ => None,
    }
}

/// The text of a tool result message (its `tool-result` blocks' content).
pub fn tool_result_text(msg: &Value) -> String {
    let mut out = String::new();
    for b in msg
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if b.get("type").and_then(Value::as_str) == Some("tool-result") {
            if let Some(c) = b.get("content") {
                out.push_str(&content_text(c));
            }
        }
    }
    out
}

/// The searchable text of an event and who wrote it: user and assistant
/// text, and the text of tool results.
pub fn event_text(e: &Event) -> Option<(Role, String)> {
    let role = match e.type_str() {
        "user/message" => Role::User,
        "assistant/message" => Role::Assistant,
        "tool/result" => Role::Tool,
        _ => return None,
    };
    let msg = message_of(e)?;
    let text = if role == Role::Tool {
        tool_result_text(&msg)
    } else {
        content_text(msg.get("content")?)
    };
    (!text.is_empty()).then_some((role, text))
}

/// `s` cut to at most `max` characters (on a character boundary), with `…`
/// when cut; runs of white space become one space.
pub fn truncate(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut n = 0;
    let mut space = false;
    for c in s.trim().chars() {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space {
            out.push(' ');
            n += 1;
            space = false;
        }
        if n >= max {
            out.push('…');
            return out;
        }
        out.push(c);
        n += 1;
    }
    out
}
