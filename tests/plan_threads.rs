//! The controller shared across threads.

mod plan_fake;

use std::sync::Arc;
use std::thread;

use dsh_persist::plan::{Pending, PlanMode, PlanModeConfig, SetOutcome};
use plan_fake::FakeSession;

fn controller() -> Arc<PlanMode> {
    Arc::new(PlanMode::new(PlanModeConfig::new("S").unwrap()))
}

#[test]
fn sessions_on_different_threads_do_not_see_each_other() {
    let p = controller();
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let p = Arc::clone(&p);
            thread::spawn(move || {
                let s = FakeSession::new(&format!("s{t}"));
                let open = t % 2 == 0;
                if open {
                    s.open_turn();
                }
                for i in 0..200 {
                    let want = i % 2 == 0;
                    let r = p.set(&s, want).unwrap();
                    let expected = match (open, want) {
                        (false, _) => SetOutcome::Committed,
                        (true, true) => SetOutcome::Queued,
                        (true, false) => SetOutcome::Cancelled,
                    };
                    assert_eq!(r.outcome, expected, "thread {t} iteration {i}");
                    let g = p.get(&s);
                    if open {
                        assert!(!g.active);
                        assert_eq!(g.pending, Some(want));
                    } else {
                        assert_eq!(g.active, want);
                        assert_eq!(g.pending, None);
                    }
                }
                if open {
                    assert_eq!(
                        p.pending(&format!("s{t}")),
                        Some(Pending {
                            active: false,
                            narrate: true
                        })
                    );
                    assert!(s.plan_events().is_empty());
                } else {
                    let logged = s.plan_events();
                    assert_eq!(logged.len(), 200);
                    assert!(logged.iter().enumerate().all(|(i, &a)| a == (i % 2 == 0)));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn concurrent_sets_on_one_session_are_serialized() {
    // Each set folds, decides and appends under the session's lock, so the
    // log never holds two equal plan/mode events in a row and every committed
    // outcome matches exactly one event.
    let p = controller();
    let s = Arc::new(FakeSession::new("shared"));
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let (p, s) = (Arc::clone(&p), Arc::clone(&s));
            thread::spawn(move || {
                let mut committed = 0;
                for i in 0..300 {
                    let want = (i + t) % 2 == 0;
                    if p.set(&*s, want).unwrap().outcome == SetOutcome::Committed {
                        committed += 1;
                    }
                }
                committed
            })
        })
        .collect();
    let committed: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let logged = s.plan_events();
    assert_eq!(logged.len(), committed);
    assert!(logged.windows(2).all(|w| w[0] != w[1]), "{logged:?}");
    if let Some(first) = logged.first() {
        assert!(*first, "the first commit can only enter");
    }
    assert_eq!(p.pending("shared"), None);
}
