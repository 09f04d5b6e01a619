//! Transcript export ([`Store::export`]) to Markdown or to one
//! self-contained HTML page (inline style, no scripts, no external
//! resources): the title, each turn with the user's and the assistant's
//! text, tool calls (name and arguments) and their results, plan-mode
//! switches and how a turn ended when it did not complete. Read like
//! `inspect` (no lock, no repair; a torn tail is closed in memory only).

use serde_json::Value;

use super::text::{content_text, message_of, tool_result_text};
use crate::error::{Error, Result};
use crate::model::event::Event;
use crate::store::{SessionView, Store};

/// The export formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Markdown,
    Html,
}

impl ExportFormat {
    /// `md`/`markdown` or `html`.
    pub fn parse(name: &str) -> Result<ExportFormat> {
        match name {
            "md" | "markdown" => Ok(ExportFormat::Markdown),
            "html" => Ok(ExportFormat::Html),
            _ => Err(Error::invalid(format!(
                "export format must be md or html, got {name:?}"
            ))),
        }
    }
}

/// One piece of a transcript, in log order.
enum Part {
    Turn(i64),
    User(String),
    Assistant(String),
    ToolCall { name: String, arguments: String },
    ToolResult { text: String, error: bool },
    Plan(bool),
    TurnEnd(String),
}

fn data(e: &Event) -> Value {
    serde_json::from_str(e.data.as_str()).unwrap_or(Value::Null)
}

fn parts(events: &[Event]) -> Vec<Part> {
    let mut out = Vec::new();
    for e in events {
        match e.type_str() {
            "turn/start" => out.push(Part::Turn(e.turn().unwrap_or(0))),
            "user/message" => {
                if let Some(m) = message_of(e) {
                    out.push(Part::User(content_text(&m["content"])));
                }
            }
            "assistant/message" => {
                let Some(m) = message_of(e) else { continue };
                let text = content_text(&m["content"]);
                if !text.is_empty() {
                    out.push(Part::Assistant(text));
                }
                for b in m["content"].as_array().into_iter().flatten() {
                    if b["type"] == "tool-call" {
                        let args = match &b["arguments"] {
                            Value::String(s) => s.clone(),
                            v => serde_json::to_string_pretty(v).unwrap_or_default(),
                        };
                        out.push(Part::ToolCall {
                            name: b["name"].as_str().unwrap_or("?").to_string(),
                            arguments: args,
                        });
                    }
                }
            }
            "tool/result" => {
                let Some(m) = message_of(e) else { continue };
                let error = m["content"][0]["isError"].as_bool().unwrap_or(false)
                    || !data(e)["error"].is_null();
                out.push(Part::ToolResult {
                    text: tool_result_text(&m),
                    error,
                });
            }
            "plan/mode" => out.push(Part::Plan(data(e)["active"].as_bool().unwrap_or(false))),
            "turn/end" => {
                let d = data(e);
                let kind = d["reason"]["kind"].as_str().unwrap_or("?").to_string();
                if kind != "completed" {
                    out.push(Part::TurnEnd(kind));
                }
            }
            _ => {}
        }
    }
    out
}

fn title(events: &[Event]) -> Option<String> {
    events
        .iter()
        .rev()
        .find(|e| e.type_str() == "session/title")
        .and_then(|e| data(e)["title"].as_str().map(str::to_string))
}

/// A Markdown code fence longer than any run of backticks in `text`.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(3))
}

/// The Markdown transcript of `view`.
pub fn to_markdown(view: &SessionView) -> String {
    let h = &view.header;
    let mut out = format!(
        "# {}\n\n- session: `{}`\n- created: {}\n",
        title(&view.events).unwrap_or_else(|| format!("Session {}", h.id)),
        h.id,
        h.created_at
    );
    if let Some(cwd) = &h.cwd {
        out.push_str(&format!("- cwd: `{cwd}`\n"));
    }
    for p in parts(&view.events) {
        match p {
            Part::Turn(n) => out.push_str(&format!("\n## Turn {n}\n")),
            Part::User(t) => out.push_str(&format!("\n**User:**\n\n{t}\n")),
            Part::Assistant(t) => out.push_str(&format!("\n**Assistant:**\n\n{t}\n")),
            Part::ToolCall { name, arguments } => {
                let f = fence(&arguments);
                out.push_str(&format!(
                    "\n**Tool call** `{name}`:\n\n{f}json\n{arguments}\n{f}\n"
                ));
            }
            Part::ToolResult { text, error } => {
                let f = fence(&text);
                let what = if error { "Tool error" } else { "Tool result" };
                out.push_str(&format!("\n**{what}:**\n\n{f}\n{text}\n{f}\n"));
            }
            Part::Plan(on) => out.push_str(&format!(
                "\n_Plan mode {}._\n",
                if on { "on" } else { "off" }
            )),
            Part::TurnEnd(kind) => out.push_str(&format!("\n_Turn ended: {kind}._\n")),
        }
    }
    out
}

/// `text` with `& < > " '` escaped for HTML text and attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:50em;margin:2em auto;padding:0 1em;line-height:1.45}\
.user,.assistant,.tool{border-radius:6px;padding:.5em 1em;margin:.6em 0}\
.user{background:#eef4ff}.assistant{background:#f4f4f4}.tool{background:#fffbe8}.error{background:#ffecec}\
.label{font-weight:bold;font-size:.85em;color:#555}pre{white-space:pre-wrap;word-break:break-word;margin:.3em 0}\
.note{font-style:italic;color:#666}";

/// The HTML page of `view`.
pub fn to_html(view: &SessionView) -> String {
    let h = &view.header;
    let t = escape_html(&title(&view.events).unwrap_or_else(|| format!("Session {}", h.id)));
    let mut out = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head><body>\n<h1>{t}</h1>\n<p class=\"note\">session {} · created {}{}</p>\n",
        escape_html(&h.id),
        h.created_at,
        h.cwd
            .as_ref()
            .map(|c| format!(" · cwd {}", escape_html(c)))
            .unwrap_or_default()
    );
    let block = |class: &str, label: &str, body: &str| {
        format!(
            "<div class=\"{class}\"><div class=\"label\">{}</div><pre>{}</pre></div>\n",
            escape_html(label),
            escape_html(body)
        )
    };
    for p in parts(&view.events) {
        out.push_str(&match p {
            Part::Turn(n) => format!("<h2>Turn {n}</h2>\n"),
            Part::User(t) => block("user", "User", &t),
            Part::Assistant(t) => block("assistant", "Assistant", &t),
            Part::ToolCall { name, arguments } => {
                block("tool", &format!("Tool call {name}"), &arguments)
            }
            Part::ToolResult { text, error } => {
                if error {
                    block("tool error", "Tool error", &text)
                } else {
                    block("tool", "Tool result", &text)
                }
            }
            Part::Plan(on) => format!(
                "<p class=\"note\">Plan mode {}.</p>\n",
                if on { "on" } else { "off" }
            ),
            Part::TurnEnd(kind) => {
                format!(
                    "<p class=\"note\">Turn ended: {}.</p>\n",
                    escape_html(&kind)
                )
            }
        });
    }
    out.push_str("</body></html>\n");
    out
}

impl Store {
    /// The transcript of `id` in `format`.
    pub fn export(&self, id: &str, format: ExportFormat) -> Result<String> {
        let view = self.inspect(id)?;
        Ok(match format {
            ExportFormat::Markdown => to_markdown(&view),
            ExportFormat::Html => to_html(&view),
        })
    }
}
