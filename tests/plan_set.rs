//! PlanMode get / set / pre_step / section / forget, and narration (SPEC §7).

mod plan_fake;

use dsh_persist::ErrorKind;
use dsh_persist::plan::{
    Narration, PLAN_OFF_NOTICE, PLAN_ON_NOTICE, Pending, PlanMode, PlanModeConfig, PlanState,
    SetOutcome,
};
use plan_fake::FakeSession;
use serde_json::{Value, json};

const SECTION: &str = "Plan before you act.";

fn controller() -> PlanMode {
    PlanMode::new(PlanModeConfig::new(SECTION).unwrap())
}

fn pending(active: bool, narrate: bool) -> Option<Pending> {
    Some(Pending { active, narrate })
}

/// Checks the narration payload shape and returns its JSON.
fn narration_json(n: &Narration, entering: bool) -> Value {
    let text = if entering {
        PLAN_ON_NOTICE
    } else {
        PLAN_OFF_NOTICE
    };
    assert_eq!(n.entering(), entering);
    assert_eq!(n.text(), text);
    let v: Value = serde_json::from_str(&n.to_json()).unwrap();
    let id = v["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("plan-mode-notice-"), "{id}");
    assert_eq!(
        v,
        json!({
            "content": [{"type": "text", "text": text}],
            "source": {"kind": "plugin", "plugin": "plan-mode", "form": "notice", "summary": text},
            "role": "user",
            "id": id,
        })
    );
    // Compact, in the original's user-message key order.
    assert!(
        n.to_json()
            .starts_with("{\"content\":[{\"type\":\"text\",\"text\":\"The user switched")
    );
    assert!(
        n.to_json()
            .contains("},\"role\":\"user\",\"id\":\"plan-mode-notice-")
    );
    v
}

// --- set, idle (no open turn) ------------------------------------------------

#[test]
fn idle_set_to_current_state_is_noop() {
    let (p, s) = (controller(), FakeSession::new("s"));
    let r = p.set(&s, false).unwrap();
    assert_eq!(r.outcome, SetOutcome::Noop);
    assert_eq!(r.to_json(), r#"{"outcome":"noop"}"#);
    assert!(s.plan_events().is_empty());
}

#[test]
fn idle_set_commits_without_narration_before_any_header() {
    let (p, s) = (controller(), FakeSession::new("s"));
    let r = p.set(&s, true).unwrap();
    assert_eq!(r.outcome, SetOutcome::Committed);
    assert_eq!(r.narration, None);
    assert_eq!(r.to_json(), r#"{"outcome":"committed"}"#);
    assert_eq!(s.plan_events(), vec![true]);
    assert_eq!(p.pending("s"), None);
    assert_eq!(
        p.get(&s),
        PlanState {
            active: true,
            pending: None
        }
    );
}

#[test]
fn idle_set_commits_with_narration_when_the_last_header_told_the_other_state() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    s.header(); // told: inactive
    s.close_turn();
    let r = p.set(&s, true).unwrap();
    assert_eq!(r.outcome, SetOutcome::Committed);
    let n = r.narration.as_ref().expect("narration");
    let payload = narration_json(n, true);
    let v: Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(v, json!({"outcome": "committed", "narration": payload}));

    // Leaving again before any new header: the header still told inactive,
    // so there is nothing to narrate.
    let r = p.set(&s, false).unwrap();
    assert_eq!(r.outcome, SetOutcome::Committed);
    assert_eq!(r.narration, None);
    assert_eq!(s.plan_events(), vec![true, false]);
}

#[test]
fn idle_leave_narrates_when_the_header_told_plan_mode() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.plan_mode(true);
    s.open_turn();
    s.header(); // told: active
    s.close_turn();
    let r = p.set(&s, false).unwrap();
    assert_eq!(r.outcome, SetOutcome::Committed);
    narration_json(r.narration.as_ref().unwrap(), false);
    assert_eq!(s.plan_events(), vec![true, false]);
}

#[test]
fn narration_ids_are_fresh() {
    let a = Narration::new(true);
    let b = Narration::new(true);
    assert_ne!(a.id(), b.id());
}

#[test]
fn idle_set_back_to_the_logged_state_cancels_the_pending_selection() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    assert_eq!(p.set(&s, true).unwrap().outcome, SetOutcome::Queued);
    s.close_turn(); // the turn ended without another step
    assert_eq!(p.pending("s"), pending(true, true));
    let r = p.set(&s, false).unwrap();
    assert_eq!(r.outcome, SetOutcome::Cancelled);
    assert_eq!(r.to_json(), r#"{"outcome":"cancelled"}"#);
    assert_eq!(p.pending("s"), None);
    assert!(s.plan_events().is_empty());
}

#[test]
fn idle_set_to_the_pending_target_is_noop_and_keeps_it() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    p.set(&s, true).unwrap();
    s.close_turn();
    assert_eq!(p.set(&s, true).unwrap().outcome, SetOutcome::Noop);
    assert_eq!(p.pending("s"), pending(true, true));
    assert!(s.plan_events().is_empty());
}

#[test]
fn idle_commit_failure_returns_the_error_and_keeps_the_selection() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    s.plan_mode(true);
    p.set(&s, false).unwrap(); // queued leave
    p.set(&s, true).unwrap(); // cancelled: pending {true}
    s.close_turn();
    s.fail_appends(true);
    let e = p.set(&s, false).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert_eq!(p.pending("s"), pending(true, true));
    assert_eq!(s.plan_events(), vec![true]);
    s.fail_appends(false);
    assert_eq!(p.set(&s, false).unwrap().outcome, SetOutcome::Committed);
    assert_eq!(p.pending("s"), None);
    assert_eq!(s.plan_events(), vec![true, false]);
}

// --- set, inside an open turn -------------------------------------------------

#[test]
fn open_turn_set_queues_without_appending() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    let r = p.set(&s, true).unwrap();
    assert_eq!(r.outcome, SetOutcome::Queued);
    assert_eq!(r.narration, None);
    assert_eq!(r.to_json(), r#"{"outcome":"queued"}"#);
    assert!(s.plan_events().is_empty());
    assert_eq!(p.pending("s"), pending(true, true));
    assert_eq!(p.get(&s).to_json(), r#"{"active":false,"pending":true}"#);
}

#[test]
fn open_turn_leave_queues_too() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.plan_mode(true);
    s.open_turn();
    assert_eq!(p.set(&s, false).unwrap().outcome, SetOutcome::Queued);
    assert_eq!(p.pending("s"), pending(false, true));
    assert_eq!(p.get(&s).to_json(), r#"{"active":true,"pending":false}"#);
}

#[test]
fn open_turn_set_back_to_the_logged_state_is_cancelled_and_stays_pending() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    p.set(&s, true).unwrap();
    let r = p.set(&s, false).unwrap();
    assert_eq!(r.outcome, SetOutcome::Cancelled);
    assert_eq!(p.pending("s"), pending(false, true));
    assert!(s.plan_events().is_empty());
}

#[test]
fn open_turn_set_to_target_is_noop() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    assert_eq!(p.set(&s, false).unwrap().outcome, SetOutcome::Noop);
    assert_eq!(p.pending("s"), None);
    p.set(&s, true).unwrap();
    assert_eq!(p.set(&s, true).unwrap().outcome, SetOutcome::Noop);
    assert_eq!(p.pending("s"), pending(true, true));
}

#[test]
fn open_turn_set_never_narrates_even_with_a_header() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    s.header();
    let r = p.set(&s, true).unwrap();
    assert_eq!(r.outcome, SetOutcome::Queued);
    assert_eq!(r.narration, None);
}

// --- pre_step ---------------------------------------------------------------------

#[test]
fn pre_step_without_selection_does_nothing() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    let r = p.pre_step(&s).unwrap();
    assert!(!r.appended);
    assert_eq!(r.to_json(), r#"{"appended":false}"#);
    assert_eq!(s.len(), 1);
}

#[test]
fn pre_step_commits_a_queued_selection_without_narration_before_a_header() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    p.set(&s, true).unwrap();
    let r = p.pre_step(&s).unwrap();
    assert!(r.appended);
    assert_eq!(r.narration, None);
    assert_eq!(r.to_json(), r#"{"appended":true}"#);
    assert_eq!(s.plan_events(), vec![true]);
    assert_eq!(p.pending("s"), None);
    assert_eq!(p.get(&s).to_json(), r#"{"active":true}"#);
}

#[test]
fn pre_step_narrates_a_user_selection_after_a_header() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    s.header(); // told: inactive
    p.set(&s, true).unwrap();
    let r = p.pre_step(&s).unwrap();
    assert!(r.appended);
    let payload = narration_json(r.narration.as_ref().unwrap(), true);
    let v: Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(v, json!({"appended": true, "narration": payload}));
}

#[test]
fn pre_step_drops_a_cancelled_selection_without_appending() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    s.header(); // told: inactive
    p.set(&s, true).unwrap();
    p.set(&s, false).unwrap(); // cancelled, pending {false}
    let r = p.pre_step(&s).unwrap();
    assert!(!r.appended);
    assert_eq!(r.narration, None, "the header already told inactive");
    assert_eq!(p.pending("s"), None);
    assert!(s.plan_events().is_empty());
}

#[test]
fn pre_step_narrates_a_net_change_since_the_header_even_without_appending() {
    // Told inactive; committed active while idle (narrated then); in the next
    // turn the user leaves and re-enters: the selection equals the log, but
    // the last header still says inactive, so the switch is narrated.
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    s.header();
    s.close_turn();
    assert!(p.set(&s, true).unwrap().narration.is_some());
    s.open_turn();
    assert_eq!(p.set(&s, false).unwrap().outcome, SetOutcome::Queued);
    assert_eq!(p.set(&s, true).unwrap().outcome, SetOutcome::Cancelled);
    let r = p.pre_step(&s).unwrap();
    assert!(!r.appended);
    narration_json(r.narration.as_ref().unwrap(), true);
}

#[test]
fn pre_step_append_failure_keeps_the_selection_for_the_next_step() {
    let (p, s) = (controller(), FakeSession::new("s"));
    s.open_turn();
    s.header();
    p.set(&s, true).unwrap();
    s.fail_appends(true);
    let e = p.pre_step(&s).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert_eq!(p.pending("s"), pending(true, true));
    assert!(s.plan_events().is_empty());
    s.fail_appends(false);
    let r = p.pre_step(&s).unwrap();
    assert!(r.appended);
    assert!(r.narration.is_some());
    assert_eq!(p.pending("s"), None);
    assert_eq!(s.plan_events(), vec![true]);
}

// --- get / section / forget -------------------------------------------------------

#[test]
fn get_reports_the_fold_and_the_pending_target() {
    let (p, s) = (controller(), FakeSession::new("s"));
    assert_eq!(p.get(&s).to_json(), r#"{"active":false}"#);
    s.plan_mode(true);
    assert_eq!(p.get(&s).to_json(), r#"{"active":true}"#);
    s.open_turn();
    p.set(&s, false).unwrap();
    assert_eq!(
        p.get(&s),
        PlanState {
            active: true,
            pending: Some(false)
        }
    );
}

#[test]
fn section_follows_the_pending_target_else_the_fold() {
    let (p, s) = (controller(), FakeSession::new("s"));
    assert_eq!(p.section(&s), "");
    s.open_turn();
    p.set(&s, true).unwrap();
    assert_eq!(
        p.section(&s),
        SECTION,
        "pending entry already shapes the prompt"
    );
    p.pre_step(&s).unwrap();
    assert_eq!(p.section(&s), SECTION);
    p.set(&s, false).unwrap();
    assert_eq!(p.section(&s), "", "pending exit already drops the section");
    assert!(p.get(&s).active);
}

#[test]
fn forget_drops_the_pending_selection() {
    let (p, s) = (controller(), FakeSession::new("s"));
    let other = FakeSession::new("other");
    s.open_turn();
    other.open_turn();
    p.set(&s, true).unwrap();
    p.set(&other, true).unwrap();
    assert_eq!(p.tracked_sessions(), 2);
    p.forget("s");
    assert_eq!(p.tracked_sessions(), 1);
    assert_eq!(p.pending("s"), None);
    assert_eq!(p.get(&s).to_json(), r#"{"active":false}"#);
    assert_eq!(p.pending("other"), pending(true, true));
}

#[test]
fn controller_from_config_json() {
    let p = PlanMode::from_config_json(r#"{"section":"S"}"#).unwrap();
    assert_eq!(p.config().section, "S");
    assert_eq!(
        PlanMode::from_config_json("{}").err().unwrap().to_string(),
        "PlanModeConfig needs a string `section`"
    );
}

#[test]
fn sessions_without_a_pending_selection_are_not_tracked() {
    let (p, s) = (controller(), FakeSession::new("s"));
    p.set(&s, true).unwrap(); // committed
    p.set(&s, true).unwrap(); // noop
    assert!(p.get(&s).active);
    assert_eq!(p.tracked_sessions(), 0);
    s.open_turn();
    p.set(&s, false).unwrap(); // queued
    assert_eq!(p.tracked_sessions(), 1);
    p.pre_step(&s).unwrap();
    assert_eq!(p.tracked_sessions(), 0);
    s.fail_appends(true);
    p.set(&s, true).unwrap(); // queued
    p.pre_step(&s).unwrap_err();
    assert_eq!(p.tracked_sessions(), 1, "a failed commit stays pending");
}
