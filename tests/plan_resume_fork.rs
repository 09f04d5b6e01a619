//! Plan state survives resume and fork: it is folded from the stored log,
//! not kept in memory (SPEC §7).

mod support;

use dsh_persist::model::header::SessionHeader;
use dsh_persist::model::surface::derive_messages;
use dsh_persist::plan::{PlanFold, PlanMode, PlanModeConfig, SetOutcome};
use dsh_persist::store::view::has_open_turn;
use dsh_persist::store::{AppendOptions, LiveSession, Store, StoreConfig};
use support::TempDir;
use support::conv::{complete_turn, user_message};

fn header(id: &str) -> SessionHeader {
    let mut h = SessionHeader::new(id, 1_785_000_000_000);
    h.cwd = Some("/p".into());
    h
}

/// The plan state and open turn a live session keeps as its log grows are
/// the folds of its log (what plan mode reads instead of copying the log
/// per call).
fn kept_fold(live: &LiveSession) -> PlanFold {
    let kept = live.plan_fold();
    let log = live.snapshot();
    assert_eq!(kept, PlanFold::of(&log), "{}", live.id());
    assert_eq!(live.has_open_turn(), has_open_turn(&log), "{}", live.id());
    assert_eq!(live.messages(), derive_messages(&log), "{}", live.id());
    kept
}

fn check(store_config: StoreConfig) {
    let plan = PlanMode::new(PlanModeConfig::new("Plan first.").unwrap());
    let store = Store::open(store_config.clone()).unwrap();
    let live = store.start(header("planned")).unwrap();
    complete_turn(&live, 1);
    assert_eq!(
        plan.set(&live, true).unwrap().outcome,
        SetOutcome::Committed
    );
    assert!(plan.get(&live).active);
    assert_eq!(plan.section(&live), "Plan first.");
    assert!(kept_fold(&live).active());
    live.close().unwrap();
    plan.forget("planned");
    store.close().unwrap();

    // A new process: a fresh store and a fresh controller.
    let store = Store::open(store_config).unwrap();
    let plan = PlanMode::new(PlanModeConfig::new("Plan first.").unwrap());
    let resumed = store.resume("planned").unwrap();
    assert!(
        plan.get(&resumed).active,
        "resume folds plan/mode from the log"
    );
    assert_eq!(plan.section(&resumed), "Plan first.");
    assert!(kept_fold(&resumed).active());
    assert!(!resumed.has_open_turn());
    let n = resumed.len() as i64;
    resumed
        .append("turn/start", r#"{"turn":2}"#, &AppendOptions::default())
        .unwrap();
    // Leaving plan mode inside a turn is queued, not logged yet.
    assert_eq!(
        plan.set(&resumed, false).unwrap().outcome,
        SetOutcome::Queued
    );
    resumed.flush().unwrap();
    assert!(kept_fold(&resumed).active());
    assert!(resumed.has_open_turn());

    // A fork at the end of turn 1 inherits the stored plan state, not the
    // parent's pending selection.
    let child = store
        .fork("planned", Some(n - 1), Some(header("planned-child")))
        .unwrap();
    assert!(plan.get(&child).active);
    assert_eq!(plan.get(&child).pending, None);
    assert!(kept_fold(&child).active());
    child
        .append(
            "plan/mode",
            r#"{"active":false}"#,
            &AppendOptions::default(),
        )
        .unwrap();
    assert!(!kept_fold(&child).active());
    assert!(!plan.get(&child).active);
    // A replacement of turn 1's user message (seq 1): the kept transcript
    // follows it as the fold of the log does.
    let before = child.messages().len();
    child
        .append(
            "user/message",
            &user_message("u1-edited", "question 1, edited"),
            &AppendOptions {
                surface_op: Some(r#"{"op":"replace","start":1,"end":1}"#.into()),
                source_event_seqs: Some(vec![1]),
                ..AppendOptions::default()
            },
        )
        .unwrap();
    kept_fold(&child);
    let messages = child.messages();
    assert_eq!(messages.len(), before);
    assert!(
        messages[0].as_str().contains("u1-edited"),
        "{}",
        messages[0].as_str()
    );
    child.close().unwrap();
    resumed.close().unwrap();
    store.close().unwrap();
}

#[test]
fn plan_state_survives_resume_and_fork_jsonl() {
    let dir = TempDir::new("plan");
    check(StoreConfig::jsonl(
        dir.path().join("root").display().to_string(),
    ));
}

#[test]
fn plan_state_survives_resume_and_fork_sqlite() {
    let dir = TempDir::new("plan");
    check(StoreConfig::sqlite(
        dir.path().join("s.db").display().to_string(),
    ));
}
