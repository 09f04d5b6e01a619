//! The `exit_plan_mode` tool: the plan check, the review question and the
//! reading of the user's answer (SPEC §7).

use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::json;

use super::controller::{Pending, PlanMode};
use super::js_text::{is_js_whitespace, js_trim};
use super::session::PlanSession;

/// The model-facing exit tool's name.
pub const EXIT_PLAN_MODE: &str = "exit_plan_mode";
/// The review question's id, echoed in the answer.
pub const REVIEW_ID: &str = "plan-review";
/// The approve option's label.
pub const APPROVE_LABEL: &str = "Approve";
/// The keep-planning option's label.
pub const KEEP_PLANNING_LABEL: &str = "Keep planning";

/// Refusal outside plan mode.
pub const NOT_IN_PLAN_MODE: &str = "exit_plan_mode is only available in plan mode";
/// Refusal of a plan without a leading `# heading`.
pub const NEEDS_HEADING: &str =
    "exit_plan_mode requires a non-empty markdown plan starting with a # heading";
/// Keep planning without feedback.
pub const KEEP_PLANNING: &str =
    "The user chose to keep planning; revise the plan and present it again.";
/// Keep planning with feedback (the feedback follows).
pub const KEEP_PLANNING_FEEDBACK_PREFIX: &str = "The user chose to keep planning; their feedback: ";
/// The review was dismissed.
pub const DISMISSED: &str = "The user dismissed the plan review to speak instead; stay in plan mode, stop here, and wait for their message.";

const APPROVE_DESCRIPTION: &str = "Leave plan mode; the plan is carried out from the next step.";
const KEEP_PLANNING_DESCRIPTION: &str = "Stay in plan mode; feedback goes back to the model.";

/// The review question for the host's user-question channel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanReview {
    /// The plan exactly as the model sent it (shown as the question detail).
    pub plan: String,
}

impl PlanReview {
    /// The question request, in the shape the original passes to its
    /// user-question channel:
    ///
    /// ```json
    /// {"questions":[{"id":"plan-review","header":"Plan review",
    ///   "question":"Approve this plan and leave plan mode?","detail":"<plan>",
    ///   "options":[{"label":"Approve","description":"Leave plan mode; the plan is carried out from the next step."},
    ///              {"label":"Keep planning","description":"Stay in plan mode; feedback goes back to the model."}],
    ///   "intent":{"kind":"plan-review","approve":"Approve"}}]}
    /// ```
    pub fn write_json(&self, out: &mut String) {
        out.push_str("{\"questions\":[{\"id\":\"plan-review\",\"header\":\"Plan review\",");
        out.push_str("\"question\":\"Approve this plan and leave plan mode?\",\"detail\":");
        json::write_string(out, &self.plan);
        out.push_str(",\"options\":[{\"label\":\"Approve\",\"description\":");
        json::write_string(out, APPROVE_DESCRIPTION);
        out.push_str("},{\"label\":\"Keep planning\",\"description\":");
        json::write_string(out, KEEP_PLANNING_DESCRIPTION);
        out.push_str("}],\"intent\":{\"kind\":\"plan-review\",\"approve\":\"Approve\"}}]}");
    }

    /// See [`PlanReview::write_json`].
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(self.plan.len() + 400);
        self.write_json(&mut out);
        out
    }
}

/// `exit_check` result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExitCheck {
    /// Show this review to the user, then pass the answer to
    /// [`PlanMode::exit_answer`].
    Review(PlanReview),
    /// The tool call fails with this message (returned to the model).
    Refused(&'static str),
}

impl ExitCheck {
    /// `{"ok":true,"review":{"questions":[…]}}` or `{"ok":false,"error":"…"}`.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        match self {
            ExitCheck::Review(review) => {
                out.push_str("{\"ok\":true,\"review\":");
                review.write_json(&mut out);
            }
            ExitCheck::Refused(message) => {
                out.push_str("{\"ok\":false,\"error\":");
                json::write_string(&mut out, message);
            }
        }
        out.push('}');
        out
    }
}

/// One answered question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnswerItem {
    pub id: String,
    /// The selected option labels.
    pub selected: Vec<String>,
    /// Free text the user typed instead of (or besides) choosing.
    pub custom: Option<String>,
}

/// The user's answer to the review.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReviewAnswer {
    /// The user closed the review to type a message instead.
    Dismissed,
    /// The answered questions.
    Answered(Vec<AnswerItem>),
}

impl ReviewAnswer {
    /// Parses the answer JSON:
    ///
    /// - `{"dismissed":true}`: the review was dismissed (other keys ignored);
    /// - `{"answers":[{"id":"plan-review","selected":["Approve"],"custom":null}]}`:
    ///   `id` a string, `selected` an array of strings (absent = `[]`),
    ///   `custom` a string, `null` or absent (absent and `null` both mean no
    ///   custom text). Other keys are ignored.
    pub fn parse(text: &str) -> Result<ReviewAnswer> {
        let bad = |what: &str| Error::invalid(format!("exit_plan_mode answer {what}"));
        let value: Value =
            serde_json::from_str(text).map_err(|e| bad(&format!("is not valid JSON: {e}")))?;
        let Value::Object(top) = value else {
            return Err(bad(
                "must be a JSON object: {\"answers\":[…]} or {\"dismissed\":true}",
            ));
        };
        match top.get("dismissed") {
            None | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => return Ok(ReviewAnswer::Dismissed),
            Some(_) => return Err(bad("has a non-boolean `dismissed`")),
        }
        let Some(Value::Array(items)) = top.get("answers") else {
            return Err(bad(
                "needs `answers` (an array of {id, selected, custom?}) or `dismissed: true`",
            ));
        };
        let mut answers = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let Value::Object(item) = item else {
                return Err(bad(&format!("answers[{i}] is not an object")));
            };
            let Some(Value::String(id)) = item.get("id") else {
                return Err(bad(&format!("answers[{i}] needs a string `id`")));
            };
            let selected = match item.get("selected") {
                None => Vec::new(),
                Some(Value::Array(labels)) => labels
                    .iter()
                    .map(|l| l.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| bad(&format!("answers[{i}].selected must hold only strings")))?,
                Some(_) => {
                    return Err(bad(&format!(
                        "answers[{i}].selected must be an array of strings"
                    )));
                }
            };
            let custom = match item.get("custom") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => {
                    return Err(bad(&format!(
                        "answers[{i}].custom must be a string or null"
                    )));
                }
            };
            answers.push(AnswerItem {
                id: id.clone(),
                selected,
                custom,
            });
        }
        Ok(ReviewAnswer::Answered(answers))
    }
}

/// `exit_answer` result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExitAnswer {
    /// Approved: plan mode is left at the next accepted step (no narration).
    Approved,
    /// The tool call fails with this message (returned to the model).
    Rejected(String),
}

impl ExitAnswer {
    /// `{"approved":true}` or `{"approved":false,"error":"…"}`.
    pub fn to_json(&self) -> String {
        match self {
            ExitAnswer::Approved => "{\"approved\":true}".to_owned(),
            ExitAnswer::Rejected(message) => {
                let mut out = String::from("{\"approved\":false,\"error\":");
                json::write_string(&mut out, message);
                out.push('}');
                out
            }
        }
    }
}

/// Whether the trimmed plan starts with `#`, whitespace, then a non-space
/// (the original's `/^#\s+\S/` on `plan.trim()`).
fn starts_with_heading(plan: &str) -> bool {
    let Some(rest) = js_trim(plan).strip_prefix('#') else {
        return false;
    };
    let body = rest.trim_start_matches(is_js_whitespace);
    body.len() < rest.len() && !body.is_empty()
}

impl PlanMode {
    /// Checks an `exit_plan_mode` call: refused outside plan mode (the folded
    /// state) and unless the trimmed plan starts with a `# heading`; else the
    /// review question to show the user.
    pub fn exit_check(&self, session: &dyn PlanSession, plan: &str) -> ExitCheck {
        if !session.plan_fold().active() {
            return ExitCheck::Refused(NOT_IN_PLAN_MODE);
        }
        if !starts_with_heading(plan) {
            return ExitCheck::Refused(NEEDS_HEADING);
        }
        ExitCheck::Review(PlanReview {
            plan: plan.to_owned(),
        })
    }

    /// Reads the user's answer to the review. Approved when exactly one
    /// answer has id `plan-review`, it selects exactly `["Approve"]` and has
    /// no custom text: the pending selection becomes `{active: false,
    /// narrate: false}` (committed silently at the next accepted step).
    /// Otherwise the call fails with the keep-planning message (with the
    /// custom text as feedback when it is non-empty), or the dismissal
    /// message.
    pub fn exit_answer(&self, session: &dyn PlanSession, answer: &ReviewAnswer) -> ExitAnswer {
        let items = match answer {
            ReviewAnswer::Dismissed => return ExitAnswer::Rejected(DISMISSED.to_owned()),
            ReviewAnswer::Answered(items) => items,
        };
        let mut review = items.iter().filter(|a| a.id == REVIEW_ID);
        let item = match (review.next(), review.next()) {
            (Some(item), None) => Some(item),
            _ => None,
        };
        let approved = item.is_some_and(|a| {
            a.selected.len() == 1 && a.selected[0] == APPROVE_LABEL && a.custom.is_none()
        });
        if approved {
            self.store_pending(
                &session.session_id(),
                Pending {
                    active: false,
                    narrate: false,
                },
            );
            return ExitAnswer::Approved;
        }
        match item.and_then(|a| a.custom.as_deref()).unwrap_or("") {
            "" => ExitAnswer::Rejected(KEEP_PLANNING.to_owned()),
            feedback => ExitAnswer::Rejected(format!("{KEEP_PLANNING_FEEDBACK_PREFIX}{feedback}")),
        }
    }

    /// [`PlanMode::exit_answer`] on answer JSON text (see
    /// [`ReviewAnswer::parse`]).
    pub fn exit_answer_json(
        &self,
        session: &dyn PlanSession,
        answer_json: &str,
    ) -> Result<ExitAnswer> {
        Ok(self.exit_answer(session, &ReviewAnswer::parse(answer_json)?))
    }
}

#[cfg(test)]
mod tests {
    use super::starts_with_heading;

    #[test]
    fn heading_rule_is_hash_whitespace_nonspace() {
        assert!(starts_with_heading("# Plan"));
        assert!(starts_with_heading("  \n#\tPlan\n- step"));
        assert!(starts_with_heading("#\u{3000}Plan"));
        assert!(!starts_with_heading("#Plan"));
        assert!(!starts_with_heading("## Plan"));
        assert!(!starts_with_heading("#   "));
        assert!(!starts_with_heading("Plan\n# Heading"));
        assert!(!starts_with_heading(""));
    }
}
