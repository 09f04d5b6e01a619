//! `cat ID`: a readable transcript of a session (read-only: it inspects).
//!
//! Turns get a header line; user and assistant text, reasoning, tool calls
//! with their arguments, tool results (and tool errors), plan-mode switches,
//! titles, todo lists, compaction replacements and how each turn ended
//! (interrupted turns included) are shown. Streaming chunks, step markers and
//! request headers are left out: the messages they build are shown instead.
//! With `--json` it prints `{meta, messages}`: the model-visible transcript
//! (SPEC §1.5 `derive_messages`).

use std::collections::HashSet;

use serde_json::Value;

use dsh_persist::Error;
use dsh_persist::model::event::Event;
use dsh_persist::model::surface::derive_messages;
use dsh_persist::store::{SessionView, Store};

use super::output::{Outcome, iso_time, jstr, print_out};

/// Prints the transcript of `id`.
pub fn cat(store: &Store, id: &str, json: bool) -> Result<Outcome, Error> {
    let view = store.inspect(id)?;
    if json {
        let derived = derive_messages(&view.events);
        let mut out = format!("{{\"meta\":{},\"messages\":[", view.header.to_json());
        for (i, m) in derived.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(m.as_str());
        }
        out.push_str("]}");
        print_out(&out);
    } else {
        print_out(&render(&view));
    }
    Ok(Outcome::ok())
}

/// The human transcript of a view.
pub fn render(view: &SessionView) -> String {
    let h = &view.header;
    let mut out = String::new();
    out.push_str(&format!(
        "Session {}  created {}  cwd {}\n",
        jstr(&h.id),
        iso_time(h.created_at as i64),
        h.cwd.as_deref().unwrap_or("-")
    ));
    if let Some(p) = &h.parent_session {
        out.push_str(&format!(
            "Forked from {} (first {} events are the parent's)\n",
            jstr(p),
            h.seed_length.map_or_else(|| "?".into(), |n| n.to_string())
        ));
    }
    // Tool calls shown from assistant messages; `tool/call` events for the
    // same call id are then not repeated.
    let mut shown_calls: HashSet<String> = HashSet::new();
    for e in &view.events {
        let data: Value = match serde_json::from_str(e.data.as_str()) {
            Ok(v) => v,
            Err(_) => continue,
        };
        render_event(e, &data, &mut shown_calls, &mut out);
    }
    out
}

fn render_event(e: &Event, data: &Value, shown_calls: &mut HashSet<String>, out: &mut String) {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    match e.type_str() {
        "turn/start" => {
            out.push_str(&format!(
                "\n=== turn {} === {}\n",
                data["turn"],
                iso_time(e.time)
            ));
        }
        "turn/end" => out.push_str(&format!(
            "--- turn {} ended: {}\n",
            data["turn"],
            turn_end_reason(&data["reason"])
        )),
        "user/message" => {
            let mut label = "user".to_string();
            if let Some(op) = &e.surface_op() {
                if op.as_str().contains("replace") {
                    label.push_str(&format!(
                        " (compaction: replaces transcript nodes {})",
                        op.as_str()
                    ));
                }
            }
            out.push_str(&format!("[{label}] "));
            push_content(&data["content"], out, shown_calls);
        }
        "assistant/message" => {
            let msg = &data["message"];
            if msg["content"].as_array().is_some_and(|c| !c.is_empty()) {
                out.push_str("[assistant] ");
                push_content(&msg["content"], out, shown_calls);
            }
        }
        "tool/call" => {
            let call_id = s(&data["callId"]);
            if !shown_calls.contains(&call_id) {
                shown_calls.insert(call_id.clone());
                out.push_str(&format!(
                    "  -> tool call {} ({call_id}): {}\n",
                    s(&data["name"]),
                    s(&data["arguments"])
                ));
            }
        }
        "tool/result" => {
            push_content(&data["message"]["content"], out, shown_calls);
            if data["error"].is_object() {
                out.push_str(&format!("     tool error: {}\n", compact(&data["error"])));
            }
        }
        "plan/mode" => out.push_str(&format!(
            "[plan mode {}]\n",
            if data["active"].as_bool() == Some(true) {
                "on"
            } else {
                "off"
            }
        )),
        "session/title" => out.push_str(&format!("[title] {}\n", s(&data["title"]))),
        "todo/write" => {
            out.push_str("[todos]");
            for t in data["todos"].as_array().into_iter().flatten() {
                out.push_str(&format!(" [{}] {};", s(&t["status"]), s(&t["content"])));
            }
            out.push('\n');
        }
        "session/end-seed" => out.push_str("[end of the inherited seed]\n"),
        "llm/retry" | "llm/retry-started" => {
            out.push_str(&format!("[{}] {}\n", e.type_str(), compact(data)))
        }
        "assistant/chunk" | "step/start" | "step/end" | "request/header" | "request/context" => {}
        other => {
            if e.ignorable {
                out.push_str(&format!("[{other} (ignorable)] {}\n", compact(data)));
            } else {
                out.push_str(&format!("[{other}] {}\n", compact(data)));
            }
        }
    }
}

/// Text, reasoning, tool-call and tool-result parts of a message content.
fn push_content(content: &Value, out: &mut String, shown_calls: &mut HashSet<String>) {
    let parts = match content {
        Value::String(t) => {
            out.push_str(&indent(t));
            out.push('\n');
            return;
        }
        Value::Array(parts) => parts,
        _ => {
            out.push('\n');
            return;
        }
    };
    let mut first = true;
    for p in parts {
        let kind = p["type"].as_str().unwrap_or("");
        let line = match kind {
            "text" => indent(p["text"].as_str().unwrap_or("")),
            "reasoning" => format!("(thinking) {}", indent(p["text"].as_str().unwrap_or(""))),
            "tool-call" => {
                let id = p["id"].as_str().unwrap_or("").to_string();
                let line = format!(
                    "-> tool call {} ({id}): {}",
                    p["name"].as_str().unwrap_or("?"),
                    p["arguments"]
                        .as_str()
                        .map_or_else(|| compact(&p["arguments"]), str::to_string)
                );
                shown_calls.insert(id);
                line
            }
            "tool-result" => {
                let mut text = String::new();
                match &p["content"] {
                    Value::Array(items) => {
                        for i in items {
                            if let Some(t) = i["text"].as_str() {
                                text.push_str(t);
                            } else {
                                text.push_str(&compact(i));
                            }
                        }
                    }
                    Value::String(t) => text.push_str(t),
                    other => text.push_str(&compact(other)),
                }
                format!(
                    "<- tool result{} ({}): {}",
                    if p["isError"].as_bool() == Some(true) {
                        " ERROR"
                    } else {
                        ""
                    },
                    p["toolCallId"].as_str().unwrap_or("?"),
                    indent(text.trim_end())
                )
            }
            _ => compact(p),
        };
        if first {
            first = false;
        } else {
            out.push_str("  ");
        }
        out.push_str(&line);
        out.push('\n');
    }
    if first {
        out.push('\n');
    }
}

fn turn_end_reason(reason: &Value) -> String {
    let kind = reason["kind"].as_str().unwrap_or("?");
    match kind {
        "interrupted" => "interrupted (the writer stopped mid-turn; closed when read)".into(),
        "aborted" => match reason["reason"]["kind"].as_str() {
            Some(by) => format!("aborted ({by})"),
            None => "aborted".into(),
        },
        "error" => {
            let err = &reason["error"];
            match err["message"].as_str() {
                Some(m) => format!(
                    "error: {m}{}",
                    err["code"]
                        .as_str()
                        .map_or_else(String::new, |c| format!(" [{c}]"))
                ),
                None => format!("error: {}", compact(err)),
            }
        }
        other => other.to_string(),
    }
}

/// Continuation lines of a multi-line text, indented under their label.
fn indent(text: &str) -> String {
    text.replace('\n', "\n    ")
}

fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}
