//! The exit_plan_mode tool: check, review question, answers (SPEC §7).

mod plan_fake;

use dsh_persist::ErrorKind;
use dsh_persist::plan::{
    AnswerItem, DISMISSED, EXIT_PLAN_MODE, ExitAnswer, ExitCheck, KEEP_PLANNING, NEEDS_HEADING,
    NOT_IN_PLAN_MODE, Pending, PlanMode, PlanModeConfig, PlanReview, ReviewAnswer,
};
use plan_fake::FakeSession;
use serde_json::{Value, json};

fn controller() -> PlanMode {
    PlanMode::new(PlanModeConfig::new("S").unwrap())
}

/// A session in plan mode, inside an open turn, whose last header told
/// "plan mode".
fn planning_session() -> FakeSession {
    let s = FakeSession::new("s");
    s.open_turn();
    s.plan_mode(true);
    s.header();
    s
}

fn answer(items: Value) -> String {
    json!({ "answers": items }).to_string()
}

#[test]
fn names_and_messages_are_the_originals() {
    assert_eq!(EXIT_PLAN_MODE, "exit_plan_mode");
    assert_eq!(
        NOT_IN_PLAN_MODE,
        "exit_plan_mode is only available in plan mode"
    );
    assert_eq!(
        NEEDS_HEADING,
        "exit_plan_mode requires a non-empty markdown plan starting with a # heading"
    );
}

#[test]
fn refused_outside_plan_mode() {
    let (p, s) = (controller(), FakeSession::new("s"));
    let r = p.exit_check(&s, "# Plan");
    assert_eq!(r, ExitCheck::Refused(NOT_IN_PLAN_MODE));
    assert_eq!(
        r.to_json(),
        r#"{"ok":false,"error":"exit_plan_mode is only available in plan mode"}"#
    );
    // A pending entry is not plan mode yet: the log decides.
    s.open_turn();
    p.set(&s, true).unwrap();
    assert_eq!(
        p.exit_check(&s, "# Plan"),
        ExitCheck::Refused(NOT_IN_PLAN_MODE)
    );
}

#[test]
fn refused_without_a_leading_heading() {
    let (p, s) = (controller(), planning_session());
    for plan in [
        "",
        "   ",
        "Plan\n# Later",
        "#Plan",
        "## Plan",
        "#  \n",
        "- step",
    ] {
        let r = p.exit_check(&s, plan);
        assert_eq!(r, ExitCheck::Refused(NEEDS_HEADING), "{plan:?}");
        assert_eq!(
            r.to_json(),
            r#"{"ok":false,"error":"exit_plan_mode requires a non-empty markdown plan starting with a # heading"}"#
        );
    }
}

#[test]
fn review_question_shows_the_plan_as_sent() {
    let (p, s) = (controller(), planning_session());
    let plan = "\n# Migrate\n1. read \"a\"\n2. edit\n";
    let r = p.exit_check(&s, plan);
    assert_eq!(
        r,
        ExitCheck::Review(PlanReview {
            plan: plan.to_owned()
        })
    );
    let expected_review = r#"{"questions":[{"id":"plan-review","header":"Plan review","question":"Approve this plan and leave plan mode?","detail":"\n# Migrate\n1. read \"a\"\n2. edit\n","options":[{"label":"Approve","description":"Leave plan mode; the plan is carried out from the next step."},{"label":"Keep planning","description":"Stay in plan mode; feedback goes back to the model."}],"intent":{"kind":"plan-review","approve":"Approve"}}]}"#;
    assert_eq!(
        r.to_json(),
        format!("{{\"ok\":true,\"review\":{expected_review}}}")
    );
    // The review alone, as a host passes it to its question channel.
    let ExitCheck::Review(review) = &r else {
        unreachable!()
    };
    assert_eq!(review.to_json(), expected_review);
    // The check changes nothing.
    assert_eq!(p.pending("s"), None);
    assert_eq!(s.plan_events(), vec![true]);
}

#[test]
fn approval_leaves_at_the_next_step_silently() {
    let (p, s) = (controller(), planning_session());
    assert!(matches!(p.exit_check(&s, "# Plan"), ExitCheck::Review(_)));
    let a = p
        .exit_answer_json(
            &s,
            &answer(json!([{"id": "plan-review", "selected": ["Approve"], "custom": null}])),
        )
        .unwrap();
    assert_eq!(a, ExitAnswer::Approved);
    assert_eq!(a.to_json(), r#"{"approved":true}"#);
    assert_eq!(
        p.pending("s"),
        Some(Pending {
            active: false,
            narrate: false
        })
    );
    // Plan guidance goes with the pending exit; the log still says active.
    assert_eq!(p.section(&s), "");
    assert_eq!(p.get(&s).to_json(), r#"{"active":true,"pending":false}"#);
    assert_eq!(s.plan_events(), vec![true]);

    let r = p.pre_step(&s).unwrap();
    assert!(r.appended);
    assert_eq!(
        r.narration, None,
        "the header told plan mode, but exits are not narrated"
    );
    assert_eq!(r.to_json(), r#"{"appended":true}"#);
    assert_eq!(s.plan_events(), vec![true, false]);
    assert_eq!(p.get(&s).to_json(), r#"{"active":false}"#);
}

#[test]
fn approval_ignores_other_questions_and_a_missing_custom() {
    let (p, s) = (controller(), planning_session());
    let a = p
        .exit_answer_json(
            &s,
            &answer(json!([
                {"id": "other", "selected": [], "custom": "ignored"},
                {"id": "plan-review", "selected": ["Approve"]}
            ])),
        )
        .unwrap();
    assert_eq!(a, ExitAnswer::Approved);
}

fn rejected(p: &PlanMode, s: &FakeSession, answer_json: &str) -> String {
    match p.exit_answer_json(s, answer_json).unwrap() {
        ExitAnswer::Rejected(m) => {
            assert_eq!(p.pending("s"), None, "a rejection stores nothing");
            m
        }
        ExitAnswer::Approved => panic!("approved: {answer_json}"),
    }
}

#[test]
fn keep_planning_without_feedback() {
    let (p, s) = (controller(), planning_session());
    let cases = [
        json!([{"id": "plan-review", "selected": ["Keep planning"]}]),
        json!([{"id": "plan-review", "selected": []}]),
        json!([{"id": "plan-review", "selected": ["Approve", "Keep planning"]}]),
        json!([{"id": "plan-review", "selected": ["approve"]}]),
        json!([{"id": "plan-review", "selected": ["Approve"], "custom": ""}]),
        json!([]),
        json!([{"id": "other", "selected": ["Approve"], "custom": "not ours"}]),
        json!([
            {"id": "plan-review", "selected": ["Approve"]},
            {"id": "plan-review", "selected": ["Approve"]}
        ]),
    ];
    for items in cases {
        assert_eq!(
            rejected(&p, &s, &answer(items.clone())),
            KEEP_PLANNING,
            "{items}"
        );
    }
    assert_eq!(
        KEEP_PLANNING,
        "The user chose to keep planning; revise the plan and present it again."
    );
    let r = ExitAnswer::Rejected(KEEP_PLANNING.to_owned());
    assert_eq!(
        r.to_json(),
        r#"{"approved":false,"error":"The user chose to keep planning; revise the plan and present it again."}"#
    );
    assert_eq!(s.plan_events(), vec![true]);
}

#[test]
fn keep_planning_with_feedback() {
    let (p, s) = (controller(), planning_session());
    let m = rejected(
        &p,
        &s,
        &answer(
            json!([{"id": "plan-review", "selected": ["Keep planning"], "custom": " use SQLite "}]),
        ),
    );
    assert_eq!(
        m,
        "The user chose to keep planning; their feedback:  use SQLite "
    );
    // Custom text beside "Approve" is feedback too, not an approval.
    let m = rejected(
        &p,
        &s,
        &answer(json!([{"id": "plan-review", "selected": ["Approve"], "custom": "but add tests"}])),
    );
    assert_eq!(
        m,
        "The user chose to keep planning; their feedback: but add tests"
    );
}

#[test]
fn dismissed_review() {
    let (p, s) = (controller(), planning_session());
    let m = rejected(&p, &s, r#"{"dismissed":true}"#);
    assert_eq!(
        m,
        "The user dismissed the plan review to speak instead; stay in plan mode, stop here, and wait for their message."
    );
    assert_eq!(m, DISMISSED);
    assert_eq!(
        p.exit_answer(&s, &ReviewAnswer::Dismissed).to_json(),
        format!("{{\"approved\":false,\"error\":\"{DISMISSED}\"}}")
    );
}

#[test]
fn answer_json_shapes() {
    assert_eq!(
        ReviewAnswer::parse(r#"{"dismissed":false,"answers":[{"id":"plan-review","selected":["Approve"],"custom":null,"extra":1}]}"#).unwrap(),
        ReviewAnswer::Answered(vec![AnswerItem {
            id: "plan-review".into(),
            selected: vec!["Approve".into()],
            custom: None,
        }])
    );
    assert_eq!(
        ReviewAnswer::parse(r#"{"dismissed":true,"answers":7}"#).unwrap(),
        ReviewAnswer::Dismissed
    );
    let bad = [
        ("nope", "exit_plan_mode answer is not valid JSON: "),
        ("[]", "exit_plan_mode answer must be a JSON object"),
        ("{}", "exit_plan_mode answer needs `answers`"),
        (
            r#"{"dismissed":"yes"}"#,
            "exit_plan_mode answer has a non-boolean `dismissed`",
        ),
        (
            r#"{"answers":[1]}"#,
            "exit_plan_mode answer answers[0] is not an object",
        ),
        (
            r#"{"answers":[{"selected":[]}]}"#,
            "exit_plan_mode answer answers[0] needs a string `id`",
        ),
        (
            r#"{"answers":[{"id":"x","selected":"Approve"}]}"#,
            "exit_plan_mode answer answers[0].selected must be an array of strings",
        ),
        (
            r#"{"answers":[{"id":"x","selected":[1]}]}"#,
            "exit_plan_mode answer answers[0].selected must hold only strings",
        ),
        (
            r#"{"answers":[{"id":"x","custom":5}]}"#,
            "exit_plan_mode answer answers[0].custom must be a string or null",
        ),
    ];
    for (text, prefix) in bad {
        let e = ReviewAnswer::parse(text).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.to_string().starts_with(prefix), "{text}: {e}");
    }
}
