//! The pure {active, pending} projection (SPEC §7, last bullet), including a
//! replay of the original's `plan-mode` fixture session.

use dsh_persist::ErrorKind;
use dsh_persist::model::event::Event;
use dsh_persist::plan::{PlanProjection, PlanView, fold_plan_mode, project, project_json};

const FIXTURE: &str =
    "/work/shared/fixtures/upstream/jsonl/jsonl-none-unpacked/--srv-repo--/plan-mode/session.jsonl";

fn fixture_events() -> Vec<Event> {
    let text = std::fs::read_to_string(FIXTURE).expect("fixture plan-mode session");
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("{\"type\":\"session\""));
    lines
        .map(|l| Event::parse(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

fn ev(text: &str) -> Event {
    Event::parse(text).unwrap()
}

fn run(seq: u64, id: &str, args: Option<&str>) -> Event {
    let args = args.map_or(String::new(), |a| {
        format!(",\"args\":{}", serde_json::to_string(a).unwrap())
    });
    ev(&format!(
        r#"{{"type":"command/run","seq":{seq},"time":1,"data":{{"commandId":"{id}","name":"plan"{args},"source":{{"kind":"user"}}}}}}"#
    ))
}

fn done(seq: u64, id: &str, kind: &str) -> Event {
    ev(&format!(
        r#"{{"type":"command/done","seq":{seq},"time":1,"data":{{"commandId":"{id}","kind":"{kind}","text":"t"}}}}"#
    ))
}

fn plan_mode(seq: u64, active: bool) -> Event {
    ev(&format!(
        r#"{{"type":"plan/mode","seq":{seq},"time":1,"data":{{"active":{active}}}}}"#
    ))
}

fn view(active: bool, pending: bool) -> PlanView {
    PlanView { active, pending }
}

#[test]
fn fixture_replay_matches_the_fold_at_every_prefix() {
    let events = fixture_events();
    assert_eq!(events.len(), 45);
    let plan: Vec<(u64, &str)> = events
        .iter()
        .filter(|e| e.event_type() == "plan/mode")
        .map(|e| (e.seq, e.data.as_str()))
        .collect();
    assert_eq!(
        plan,
        vec![(1, r#"{"active":true}"#), (23, r#"{"active":false}"#)]
    );

    let mut state = PlanProjection::new();
    for (i, e) in events.iter().enumerate() {
        state.apply(e);
        let folded = fold_plan_mode(&events, Some(i + 1));
        assert_eq!(state.view(), view(folded, false), "after seq {}", e.seq);
        assert_eq!(folded, (1..23).contains(&e.seq), "seq {}", e.seq);
    }
    assert_eq!(project(&events), view(false, false));
    assert_eq!(project(&events[..2]), view(true, false));
    assert!(!fold_plan_mode(&events, None));
}

#[test]
fn fixture_with_a_recorded_plan_off_command_shows_it_pending_until_plan_mode() {
    let mut events = fixture_events();
    // The user typed `/plan off` during turn 1 (after seq 20); it commits at
    // seq 23 in the fixture.
    events.insert(21, run(100, "c1", Some(" off ")));
    assert_eq!(project(&events[..22]), view(true, true), "running");
    events.insert(22, done(101, "c1", "success"));
    assert_eq!(
        project(&events[..23]),
        view(true, true),
        "settled, not yet applied"
    );
    let at = events.iter().position(|e| e.seq == 23).unwrap();
    assert_eq!(project(&events[..at]), view(true, true));
    assert_eq!(project(&events[..=at]), view(false, false));
    assert_eq!(project(&events), view(false, false));
}

#[test]
fn running_command_counts_until_its_done() {
    let mut s = PlanProjection::new();
    s.apply(&run(0, "a", Some("")));
    assert_eq!(s.view(), view(false, true));
    s.apply(&done(1, "other", "error"));
    assert_eq!(
        s.view(),
        view(false, true),
        "a done of another command is ignored"
    );
    s.apply(&done(2, "a", "success"));
    assert_eq!(
        s.view(),
        view(false, true),
        "successful selection stays wanted"
    );
    s.apply(&plan_mode(3, true));
    assert_eq!(s.view(), view(true, false));
}

#[test]
fn failed_command_clears_the_selection() {
    let mut s = PlanProjection::new();
    s.apply(&plan_mode(0, true));
    s.apply(&run(1, "a", Some("off")));
    assert_eq!(s.view(), view(true, true));
    s.apply(&done(2, "a", "error"));
    assert_eq!(s.view(), view(true, false));
}

#[test]
fn successful_selection_equal_to_the_state_is_not_pending() {
    let mut s = PlanProjection::new();
    s.apply(&plan_mode(0, true));
    s.apply(&run(1, "a", Some("more detail")));
    assert_eq!(s.view(), view(true, false));
    s.apply(&done(2, "a", "success"));
    assert_eq!(s.view(), view(true, false));
    // The stored wanted is none: leaving later does not resurrect it.
    s.apply(&plan_mode(3, false));
    assert_eq!(s.view(), view(false, false));
}

#[test]
fn plan_mode_clears_wanted_but_not_a_running_command() {
    let mut s = PlanProjection::new();
    s.apply(&run(0, "a", Some("x")));
    s.apply(&plan_mode(1, true));
    assert_eq!(s.view(), view(true, false), "running wants true, as logged");
    s.apply(&plan_mode(2, false));
    assert_eq!(s.view(), view(false, true), "running still wants true");
    s.apply(&done(3, "a", "success"));
    assert_eq!(s.view(), view(false, true));
}

#[test]
fn a_later_run_replaces_the_running_one() {
    let mut s = PlanProjection::new();
    s.apply(&run(0, "a", Some("")));
    s.apply(&run(1, "b", Some("off")));
    assert_eq!(s.view(), view(false, false));
    s.apply(&done(2, "a", "success"));
    assert_eq!(s.view(), view(false, false), "a's done does not match b");
}

#[test]
fn other_commands_and_plan_without_args_are_ignored() {
    let mut s = PlanProjection::new();
    s.apply(&run(0, "a", None));
    assert_eq!(s.view(), view(false, false));
    s.apply(&ev(
        r#"{"type":"command/run","seq":1,"time":1,"data":{"commandId":"b","name":"model","args":"x","source":{"kind":"user"}}}"#,
    ));
    assert_eq!(s.view(), view(false, false));
    s.apply(&done(2, "b", "success"));
    assert_eq!(s.view(), view(false, false));
}

#[test]
fn project_json_reads_an_event_array() {
    let text = format!(
        "[{},{}]",
        run(0, "a", Some("")).to_json(),
        done(1, "a", "success").to_json()
    );
    let v = project_json(&text).unwrap();
    assert_eq!(v, view(false, true));
    assert_eq!(v.to_json(), r#"{"active":false,"pending":true}"#);
    assert_eq!(
        project_json("[]").unwrap().to_json(),
        r#"{"active":false,"pending":false}"#
    );

    let e = project_json("{}").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(
        e.to_string()
            .starts_with("plan projection needs a JSON array of events"),
        "{e}"
    );
    let e = project_json(r#"[{"type":"plan/mode","seq":-1,"time":0,"data":{}}]"#).unwrap_err();
    assert!(
        e.to_string().starts_with("plan projection: events[0]: "),
        "{e}"
    );
}

#[test]
fn command_ids_match_by_value() {
    let event = |text: String| ev(&text);
    let run_with = |seq: u64, id: &str| {
        event(format!(
            r#"{{"type":"command/run","seq":{seq},"time":1,"data":{{"commandId":{id},"name":"plan","args":"","source":{{"kind":"user"}}}}}}"#
        ))
    };
    let done_with = |seq: u64, id: &str, kind: &str| {
        event(format!(
            r#"{{"type":"command/done","seq":{seq},"time":1,"data":{{"commandId":{id},"kind":"{kind}","text":"t"}}}}"#
        ))
    };
    // A string id written with an escape is the same id.
    let mut s = PlanProjection::new();
    s.apply(&run_with(0, r#""ab""#));
    s.apply(&done_with(1, r#""\u0061b""#, "error"));
    assert_eq!(s.view(), view(false, false), "the escaped id matched");
    // A number id matches the same number, not another one, nor its text
    // as a string.
    let mut s = PlanProjection::new();
    s.apply(&run_with(0, "7"));
    s.apply(&done_with(1, "8", "error"));
    s.apply(&done_with(2, r#""7""#, "error"));
    assert_eq!(s.view(), view(false, true), "still running");
    s.apply(&done_with(3, "7", "error"));
    assert_eq!(s.view(), view(false, false), "the number id matched");
    // A string id is not matched by a number.
    let mut s = PlanProjection::new();
    s.apply(&run_with(0, r#""7""#));
    s.apply(&done_with(1, "7", "error"));
    assert_eq!(s.view(), view(false, true));
}
