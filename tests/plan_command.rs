//! The `/plan` command: every text of SPEC §7.

mod plan_fake;

use dsh_persist::ErrorKind;
use dsh_persist::plan::{
    CommandKind, CommandResult, OFF_ALREADY_INACTIVE, OFF_CANCELLED, OFF_COMMITTED, OFF_QUEUED,
    OFF_WITH_ATTACHMENTS, ON_COMMITTED, ON_PENDING, PlanMode, PlanModeConfig, Steer,
};
use plan_fake::FakeSession;
use serde_json::{Value, json};

fn controller() -> PlanMode {
    PlanMode::new(PlanModeConfig::new("S").unwrap())
}

fn json_of(r: &CommandResult) -> Value {
    serde_json::from_str(&r.to_json()).unwrap()
}

#[test]
fn texts_are_the_originals() {
    assert_eq!(
        OFF_WITH_ATTACHMENTS,
        "Image attachments cannot accompany /plan off."
    );
    assert_eq!(OFF_COMMITTED, "Plan mode off.");
    assert_eq!(
        OFF_QUEUED,
        "Leaving plan mode (applies from the next step)."
    );
    assert_eq!(OFF_CANCELLED, "Plan mode entry cancelled.");
    assert_eq!(OFF_ALREADY_INACTIVE, "Plan mode is already inactive.");
    assert_eq!(ON_COMMITTED, "Plan mode on. Use /plan off to leave.");
    assert_eq!(
        ON_PENDING,
        "Entering plan mode (applies from the next step). Use /plan off to leave."
    );
}

#[test]
fn off_with_attachments_is_an_error_and_changes_nothing() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.plan_mode(true);
    let r = p.command(&s, " off\n", true).unwrap();
    assert_eq!(r.kind, CommandKind::Error);
    assert_eq!(
        r.to_json(),
        r#"{"kind":"error","text":"Image attachments cannot accompany /plan off."}"#
    );
    assert_eq!(s.plan_events(), vec![true]);
}

#[test]
fn off_committed() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.plan_mode(true);
    let r = p.command(&s, "  off  ", false).unwrap();
    assert_eq!(r.to_json(), r#"{"kind":"success","text":"Plan mode off."}"#);
    assert_eq!(s.plan_events(), vec![true, false]);
}

#[test]
fn off_committed_carries_the_narration() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.plan_mode(true);
    s.open_turn();
    s.header();
    s.close_turn();
    let r = p.command(&s, "off", false).unwrap();
    assert_eq!(r.text, OFF_COMMITTED);
    let v = json_of(&r);
    assert_eq!(
        v["narration"]["content"],
        json!([{"type": "text", "text": "The user switched this session back to the default mode."}])
    );
    assert!(v.get("steer").is_none());
}

#[test]
fn off_queued_in_an_open_turn() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.plan_mode(true);
    s.open_turn();
    let r = p.command(&s, "off", false).unwrap();
    assert_eq!(
        r.to_json(),
        r#"{"kind":"success","text":"Leaving plan mode (applies from the next step)."}"#
    );
    assert_eq!(s.plan_events(), vec![true]);
}

#[test]
fn off_noop_while_an_exit_is_queued_repeats_the_queued_text() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.plan_mode(true);
    s.open_turn();
    p.command(&s, "off", false).unwrap();
    let r = p.command(&s, "off", false).unwrap();
    assert_eq!(r.text, OFF_QUEUED);
}

#[test]
fn off_cancels_a_pending_entry() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    assert_eq!(p.command(&s, "", false).unwrap().text, ON_PENDING);
    let r = p.command(&s, "off", false).unwrap();
    assert_eq!(r.text, OFF_CANCELLED);
    assert_eq!(r.kind, CommandKind::Success);
}

#[test]
fn off_when_inactive() {
    let (p, s) = (controller(), FakeSession::new("s"));
    let r = p.command(&s, "off", false).unwrap();
    assert_eq!(
        r.to_json(),
        r#"{"kind":"success","text":"Plan mode is already inactive."}"#
    );
    s.open_turn();
    assert_eq!(
        p.command(&s, "off", false).unwrap().text,
        OFF_ALREADY_INACTIVE
    );
}

#[test]
fn bare_plan_commits_when_idle() {
    let (p, s) = (controller(), FakeSession::new("s"));
    let r = p.command(&s, "   ", false).unwrap();
    assert_eq!(
        r.to_json(),
        r#"{"kind":"success","text":"Plan mode on. Use /plan off to leave."}"#
    );
    assert_eq!(r.steer, None);
    assert_eq!(s.plan_events(), vec![true]);
}

#[test]
fn plan_with_a_message_queues_in_a_turn_and_steers_the_trimmed_message() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    let r = p
        .command(&s, "  sketch the \"migration\"\n", false)
        .unwrap();
    assert_eq!(r.text, ON_PENDING);
    assert_eq!(
        r.steer,
        Some(Steer {
            text: Some("sketch the \"migration\"".to_owned())
        })
    );
    assert_eq!(
        r.to_json(),
        r#"{"kind":"success","text":"Entering plan mode (applies from the next step). Use /plan off to leave.","steer":{"content":[{"type":"text","text":"sketch the \"migration\""}],"source":{"kind":"user"}}}"#
    );
    assert!(s.plan_events().is_empty());
}

#[test]
fn plan_with_only_attachments_steers_an_empty_text() {
    let (p, s) = (controller(), FakeSession::new("s"));
    let r = p.command(&s, "", true).unwrap();
    assert_eq!(r.text, ON_COMMITTED);
    assert_eq!(r.steer, Some(Steer { text: None }));
    assert_eq!(
        json_of(&r)["steer"],
        json!({"content": [], "source": {"kind": "user"}})
    );
}

#[test]
fn plan_when_already_active_uses_the_pending_text_and_still_steers() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.plan_mode(true);
    let r = p.command(&s, "more detail", true).unwrap();
    assert_eq!(r.text, ON_PENDING);
    assert_eq!(r.steer.unwrap().text.as_deref(), Some("more detail"));
    assert_eq!(s.plan_events(), vec![true]);
}

#[test]
fn only_exact_off_leaves() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.plan_mode(true);
    for input in ["OFF", "off please", "of f"] {
        let r = p.command(&s, input, false).unwrap();
        assert_eq!(r.text, ON_PENDING, "{input}");
        assert_eq!(r.steer.unwrap().text.as_deref(), Some(input));
    }
    assert_eq!(s.plan_events(), vec![true]);
}

#[test]
fn entering_commits_with_narration_after_a_header() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    s.header();
    s.close_turn();
    let r = p.command(&s, "go", false).unwrap();
    assert_eq!(r.text, ON_COMMITTED);
    let v = json_of(&r);
    assert_eq!(
        v["narration"]["source"]["summary"],
        "The user switched this session to plan mode."
    );
    assert_eq!(v["steer"]["content"][0]["text"], "go");
}

#[test]
fn append_failure_is_an_error_without_steer() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.fail_appends(true);
    assert_eq!(
        p.command(&s, "go", false).unwrap_err().kind(),
        ErrorKind::Io
    );
    s.plan_mode(true);
    assert_eq!(
        p.command(&s, "off", false).unwrap_err().kind(),
        ErrorKind::Io
    );
    assert_eq!(s.plan_events(), vec![true]);
}
