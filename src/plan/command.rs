//! The `/plan` command (SPEC §7).

use crate::error::Result;
use crate::model::json;

use super::controller::{PlanMode, SetOutcome, push_narration};
use super::js_text::js_trim;
use super::narration::Narration;
use super::session::PlanSession;

/// `Image attachments cannot accompany /plan off.`
pub const OFF_WITH_ATTACHMENTS: &str = "Image attachments cannot accompany /plan off.";
/// `/plan off` committed now.
pub const OFF_COMMITTED: &str = "Plan mode off.";
/// `/plan off` queued for the next step (also the noop text while a queued
/// exit is still waiting).
pub const OFF_QUEUED: &str = "Leaving plan mode (applies from the next step).";
/// `/plan off` cancelled a pending entry.
pub const OFF_CANCELLED: &str = "Plan mode entry cancelled.";
/// `/plan off` on an inactive session.
pub const OFF_ALREADY_INACTIVE: &str = "Plan mode is already inactive.";
/// `/plan [message]` committed now.
pub const ON_COMMITTED: &str = "Plan mode on. Use /plan off to leave.";
/// `/plan [message]` not committed now (queued, cancelled or noop).
pub const ON_PENDING: &str =
    "Entering plan mode (applies from the next step). Use /plan off to leave.";

/// Whether the command succeeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandKind {
    Success,
    Error,
}

impl CommandKind {
    /// `success` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            CommandKind::Success => "success",
            CommandKind::Error => "error",
        }
    }
}

/// A user message for the host to steer into the running agent: the
/// `/plan <message>` text (and the host's attachments).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Steer {
    /// The trimmed message; `None` when only attachments came with `/plan`.
    pub text: Option<String>,
}

impl Steer {
    /// `{"content":[{"type":"text","text":<message>}],"source":{"kind":"user"}}`
    /// (`content` is `[]` when only attachments came). The host puts its
    /// attachment blocks *before* the text block, like the original.
    pub fn write_json(&self, out: &mut String) {
        out.push_str("{\"content\":[");
        if let Some(text) = &self.text {
            out.push_str("{\"type\":\"text\",\"text\":");
            json::write_string(out, text);
            out.push('}');
        }
        out.push_str("],\"source\":{\"kind\":\"user\"}}");
    }
}

/// The `/plan` command's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandResult {
    pub kind: CommandKind,
    /// The text shown to the user.
    pub text: &'static str,
    /// The message to steer, when `/plan` carried one (or attachments).
    pub steer: Option<Steer>,
    /// The switch narration when the command committed the switch now and
    /// narration is due (the original injects it; here the host does).
    pub narration: Option<Narration>,
}

impl CommandResult {
    /// `{"kind":"success"|"error","text":…,"steer"?:{content,source},"narration"?:{user/message payload}}`.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(128);
        out.push_str("{\"kind\":\"");
        out.push_str(self.kind.as_str());
        out.push_str("\",\"text\":");
        json::write_string(&mut out, self.text);
        if let Some(steer) = &self.steer {
            out.push_str(",\"steer\":");
            steer.write_json(&mut out);
        }
        push_narration(&mut out, self.narration.as_ref());
        out.push('}');
        out
    }

    fn success(text: &'static str) -> Self {
        CommandResult {
            kind: CommandKind::Success,
            text,
            steer: None,
            narration: None,
        }
    }
}

impl PlanMode {
    /// Runs `/plan <raw_input>` (SPEC §7): the input is trimmed (JavaScript
    /// whitespace); `off` leaves plan mode, anything else enters it and a
    /// non-empty message (or attachments) comes back as [`Steer`].
    ///
    /// Append errors of the underlying [`PlanMode::set`] are returned as is.
    pub fn command(
        &self,
        session: &dyn PlanSession,
        raw_input: &str,
        has_attachments: bool,
    ) -> Result<CommandResult> {
        let message = js_trim(raw_input);
        if message == "off" {
            if has_attachments {
                return Ok(CommandResult {
                    kind: CommandKind::Error,
                    ..CommandResult::success(OFF_WITH_ATTACHMENTS)
                });
            }
            let (result, folded) = self.set_reporting_fold(session, false)?;
            let text = match result.outcome {
                SetOutcome::Committed => OFF_COMMITTED,
                SetOutcome::Queued => OFF_QUEUED,
                SetOutcome::Cancelled => OFF_CANCELLED,
                SetOutcome::Noop if folded => OFF_QUEUED,
                SetOutcome::Noop => OFF_ALREADY_INACTIVE,
            };
            return Ok(CommandResult {
                narration: result.narration,
                ..CommandResult::success(text)
            });
        }
        let result = self.set(session, true)?;
        let text = if result.outcome == SetOutcome::Committed {
            ON_COMMITTED
        } else {
            ON_PENDING
        };
        let steer = (!message.is_empty() || has_attachments).then(|| Steer {
            text: (!message.is_empty()).then(|| message.to_owned()),
        });
        Ok(CommandResult {
            steer,
            narration: result.narration,
            ..CommandResult::success(text)
        })
    }
}
