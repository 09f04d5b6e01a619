//! fold_plan_mode, plan_mode_at_last_header and PlanModeConfig (SPEC §7).

mod plan_fake;

use dsh_persist::ErrorKind;
use dsh_persist::plan::{
    PlanFold, PlanModeConfig, PlanSession, fold_plan_mode, plan_mode_at_last_header,
};
use plan_fake::FakeSession;

#[test]
fn fold_is_false_without_plan_mode_and_last_one_wins() {
    let s = FakeSession::new("s");
    assert!(!fold_plan_mode(&s.snapshot(), None));
    s.open_turn();
    s.plan_mode(true);
    assert!(fold_plan_mode(&s.snapshot(), None));
    s.plan_mode(false);
    assert!(!fold_plan_mode(&s.snapshot(), None));
    s.plan_mode(true);
    s.close_turn();
    assert!(fold_plan_mode(&s.snapshot(), None));
}

#[test]
fn fold_end_is_an_exclusive_prefix_and_is_clamped() {
    let s = FakeSession::new("s");
    s.open_turn(); // 0
    s.plan_mode(true); // 1
    s.plan_mode(false); // 2
    let events = s.snapshot();
    assert!(!fold_plan_mode(&events, Some(0)));
    assert!(!fold_plan_mode(&events, Some(1)));
    assert!(fold_plan_mode(&events, Some(2)));
    assert!(!fold_plan_mode(&events, Some(3)));
    assert!(!fold_plan_mode(&events, Some(1000)));
    assert!(fold_plan_mode(&events[..2], Some(1000)));
}

#[test]
fn state_at_last_header_includes_everything_before_it() {
    let s = FakeSession::new("s");
    assert_eq!(plan_mode_at_last_header(&s.snapshot()), None);
    s.open_turn();
    s.plan_mode(true);
    assert_eq!(plan_mode_at_last_header(&s.snapshot()), None);
    s.header();
    assert_eq!(plan_mode_at_last_header(&s.snapshot()), Some(true));
    s.plan_mode(false);
    assert_eq!(plan_mode_at_last_header(&s.snapshot()), Some(true));
    s.header();
    assert_eq!(plan_mode_at_last_header(&s.snapshot()), Some(false));
}

/// The fold followed event by event (as a live session keeps it) gives
/// what the whole-log folds give, at every point of a log: plan/mode on
/// and off, an `active` that is not `true`, headers before and between.
#[test]
fn the_fold_followed_event_by_event_is_the_fold_of_the_log() {
    let s = FakeSession::new("s");
    s.open_turn();
    s.plan_mode(true);
    s.plan_mode(false);
    s.header();
    s.plan_mode(true);
    s.header();
    s.push("plan/mode", r#"{"active":"true"}"#);
    s.push("plan/mode", r#"{"active":true,"extra":1}"#);
    s.plan_mode(false);
    s.header();
    s.push("plan/mode", "{}");
    s.close_turn();
    s.plan_mode(true);
    let events = s.snapshot();
    let mut followed = PlanFold::default();
    let mut seen = std::collections::BTreeSet::new();
    for end in 0..=events.len() {
        let prefix = &events[..end];
        assert_eq!(followed, PlanFold::of(prefix), "{end}");
        assert_eq!(followed.active(), fold_plan_mode(prefix, None), "{end}");
        assert_eq!(
            followed.at_last_header(),
            plan_mode_at_last_header(prefix),
            "{end}"
        );
        seen.insert((followed.active(), followed.at_last_header()));
        if let Some(e) = events.get(end) {
            followed.push(e);
        }
    }
    // every state was reached on the way
    assert_eq!(seen.len(), 6, "{seen:?}");
    assert_eq!(s.plan_fold(), PlanFold::of(&events));
}

fn config_error(text: &str) -> String {
    let e = PlanModeConfig::parse(text).expect_err(text);
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{text}");
    e.to_string()
}

#[test]
fn config_keeps_the_section_verbatim() {
    let c = PlanModeConfig::parse(r#" {"section":"  Plan first.\n\u0041 "} "#).unwrap();
    assert_eq!(c.section, "  Plan first.\nA ");
    // JSON.parse semantics: the last of repeated keys wins.
    let c = PlanModeConfig::parse(r#"{"section":1,"section":"x"}"#).unwrap();
    assert_eq!(c.section, "x");
    assert_eq!(PlanModeConfig::new("y").unwrap().section, "y");
}

#[test]
fn config_needs_a_string_section() {
    let m = "PlanModeConfig needs a string `section`";
    assert_eq!(config_error("{}"), m);
    assert_eq!(config_error(r#"{"section":null}"#), m);
    assert_eq!(config_error(r#"{"section":42}"#), m);
    assert_eq!(config_error(r#"{"section":["a"]}"#), m);
    // The type check comes before the unknown-key check.
    assert_eq!(config_error(r#"{"other":"a"}"#), m);
}

#[test]
fn config_needs_a_non_empty_section() {
    let m = "PlanModeConfig needs a non-empty `section`";
    assert_eq!(config_error(r#"{"section":""}"#), m);
    assert_eq!(config_error(r#"{"section":" \n\t"}"#), m);
    // JavaScript trim: U+FEFF and U+3000 are whitespace.
    assert_eq!(config_error(r#"{"section":"\ufeff\u3000"}"#), m);
    assert_eq!(config_error(r#"{"section":"  ","extra":1}"#), m);
    assert_eq!(PlanModeConfig::new(" ").unwrap_err().to_string(), m);
}

#[test]
fn config_rejects_unknown_keys_joined_with_comma_space() {
    assert_eq!(
        config_error(r#"{"section":"s","mode":1}"#),
        "PlanModeConfig has unknown key(s) mode — config is { section }"
    );
    assert_eq!(
        config_error(r#"{"zeta":1,"section":"s","alpha":2,"zeta":3}"#),
        "PlanModeConfig has unknown key(s) zeta, alpha — config is { section }"
    );
    // Object.keys order: array-index keys first, ascending.
    assert_eq!(
        config_error(r#"{"b":1,"10":1,"section":"s","2":1,"01":1}"#),
        "PlanModeConfig has unknown key(s) 2, 10, b, 01 — config is { section }"
    );
    // An array index is a canonical integer below 2^32 − 1: "0" is one,
    // "4294967294" (ten digits) is the largest; "4294967295", "+1" (which
    // Rust's integer parser would take) and a leading zero are names.
    assert_eq!(
        config_error(
            r#"{"b":1,"4294967295":1,"+1":1,"section":"s","4294967294":1,"00000000001":1,"0":1}"#
        ),
        "PlanModeConfig has unknown key(s) 0, 4294967294, b, 4294967295, +1, 00000000001 — config is { section }"
    );
}

#[test]
fn config_must_be_a_json_object() {
    assert!(config_error("{").starts_with("PlanModeConfig is not valid JSON: "));
    assert!(config_error("").starts_with("PlanModeConfig is not valid JSON: "));
    for text in ["null", "\"section\"", "[]", "1"] {
        assert_eq!(
            config_error(text),
            "PlanModeConfig must be a JSON object: { \"section\": \"<guidance text>\" }"
        );
    }
}
