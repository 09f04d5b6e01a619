//! Builders for realistic conversation events (data payloads that pass every
//! validation rule), used by store, CLI and crash tests.

use dsh_persist::store::{AppendOptions, LiveSession};

pub fn append_opts() -> AppendOptions {
    AppendOptions {
        surface_op: Some("\"append\"".into()),
        ..Default::default()
    }
}

pub fn user_message(id: &str, text: &str) -> String {
    format!(
        r#"{{"id":"{id}","role":"user","content":[{{"type":"text","text":{}}}],"source":{{"kind":"user"}}}}"#,
        serde_json::to_string(text).unwrap()
    )
}

pub fn assistant_message(
    turn: u64,
    step: u64,
    id: &str,
    text: &str,
    tool_calls: &[(&str, &str)],
) -> String {
    let mut content = vec![format!(
        r#"{{"type":"text","text":{}}}"#,
        serde_json::to_string(text).unwrap()
    )];
    for (call_id, name) in tool_calls {
        content.push(format!(r#"{{"type":"tool-call","id":"{call_id}","name":"{name}","arguments":{{"command":"ls"}}}}"#));
    }
    format!(
        r#"{{"turn":{turn},"step":{step},"message":{{"id":"{id}","role":"assistant","content":[{}],"source":{{"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"}}}}}}"#,
        content.join(",")
    )
}

pub fn tool_call(turn: u64, step: u64, call_id: &str) -> String {
    format!(
        r#"{{"turn":{turn},"step":{step},"callId":"{call_id}","name":"bash","arguments":{{"command":"ls"}}}}"#
    )
}

pub fn tool_result(turn: u64, step: u64, call_id: &str, text: &str) -> String {
    format!(
        r#"{{"turn":{turn},"step":{step},"message":{{"id":"result-{call_id}","role":"user","content":[{{"type":"tool-result","toolCallId":"{call_id}","content":[{{"type":"text","text":{}}}]}}],"source":{{"kind":"tool","callId":"{call_id}"}}}}}}"#,
        serde_json::to_string(text).unwrap()
    )
}

pub fn text_delta(turn: u64, step: u64, text: &str) -> String {
    format!(
        r#"{{"turn":{turn},"step":{step},"chunk":{{"type":"text-delta","index":0,"text":{}}}}}"#,
        serde_json::to_string(text).unwrap()
    )
}

/// Appends one complete turn (user message, a step with streamed text, a
/// tool call and result, a second step with the answer). Returns the number
/// of events appended.
pub fn complete_turn(s: &LiveSession, turn: u64) -> usize {
    let none = AppendOptions::default();
    let mut n = 0;
    let mut app = |t: &str, d: String, o: &AppendOptions| {
        s.append(t, &d, o)
            .unwrap_or_else(|e| panic!("append {t}: {e}"));
        n += 1;
    };
    app("turn/start", format!(r#"{{"turn":{turn}}}"#), &none);
    app(
        "user/message",
        user_message(&format!("u{turn}"), &format!("question {turn}")),
        &append_opts(),
    );
    app(
        "step/start",
        format!(r#"{{"turn":{turn},"step":1}}"#),
        &none,
    );
    for piece in ["Let", " me", " look", "."] {
        app("assistant/chunk", text_delta(turn, 1, piece), &none);
    }
    let call = format!("call-{turn}");
    app(
        "assistant/message",
        assistant_message(
            turn,
            1,
            &format!("a{turn}-1"),
            "Let me look.",
            &[(&call, "bash")],
        ),
        &append_opts(),
    );
    app("tool/call", tool_call(turn, 1, &call), &none);
    app(
        "tool/result",
        tool_result(turn, 1, &call, "file.txt"),
        &append_opts(),
    );
    app("step/end", format!(r#"{{"turn":{turn},"step":1}}"#), &none);
    app(
        "step/start",
        format!(r#"{{"turn":{turn},"step":2}}"#),
        &none,
    );
    app(
        "assistant/message",
        assistant_message(turn, 2, &format!("a{turn}-2"), "There is one file.", &[]),
        &append_opts(),
    );
    app("step/end", format!(r#"{{"turn":{turn},"step":2}}"#), &none);
    app(
        "turn/end",
        format!(r#"{{"turn":{turn},"reason":{{"kind":"completed"}}}}"#),
        &none,
    );
    n
}
