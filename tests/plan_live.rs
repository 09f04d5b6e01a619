//! Plan mode on a real live session of the store (over an in-memory backend).

use std::collections::HashMap;
use std::sync::Arc;

use dsh_persist::Result;
use dsh_persist::backend::writer_lock::LockSpace;
use dsh_persist::backend::{
    Backend, BackendKind, Expect, Location, RawArtifact, Revision, ScannedSuffix, StoredLog,
    WriterHolder, WriterLock,
};
use dsh_persist::model::event::Event;
use dsh_persist::model::header::{HeaderSource, SessionHeader};
use dsh_persist::plan::{PlanMode, PlanModeConfig, PlanSession, SetOutcome};
use dsh_persist::store::{AppendOptions, Store, StoreConfig};
use parking_lot::Mutex;

/// Keeps appended events in memory; reads report nothing stored.
struct MemBackend {
    logs: Mutex<HashMap<String, Vec<Event>>>,
    locks: LockSpace,
}

impl Default for MemBackend {
    fn default() -> Self {
        MemBackend {
            logs: Mutex::default(),
            locks: LockSpace::process(),
        }
    }
}

impl Backend for MemBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Jsonl
    }
    fn locate(&self, _: &SessionHeader) -> Result<Option<Location>> {
        Ok(None)
    }
    fn list(&self) -> Result<dsh_persist::model::session_list::SessionList> {
        Ok(Default::default())
    }
    fn list_snapshots(&self) -> Result<Vec<(SessionHeader, Revision)>> {
        Ok(Vec::new())
    }
    fn revision(&self, id: &str) -> Result<Option<Revision>> {
        Ok(self
            .logs
            .lock()
            .get(id)
            .map(|l| Revision(l.len().to_string())))
    }
    fn append(&self, header: &SessionHeader, events: &[Event], _: Expect<'_>) -> Result<Revision> {
        let mut logs = self.logs.lock();
        let log = logs.entry(header.id.clone()).or_default();
        log.extend_from_slice(events);
        Ok(Revision(log.len().to_string()))
    }
    fn read(&self, _: &str) -> Result<Option<StoredLog>> {
        Ok(None)
    }
    fn read_from(&self, _: &str, _: u64) -> Result<Option<ScannedSuffix>> {
        Ok(None)
    }
    fn commit_repair(&self, id: &str, _: &StoredLog, _: &[Event]) -> Result<Revision> {
        Err(dsh_persist::Error::invalid(format!(
            "no repair in memory for {id}"
        )))
    }
    fn read_raw(&self, _: &str) -> Result<Option<RawArtifact>> {
        Ok(None)
    }
    fn lock_writer(&self, id: &str) -> Result<WriterLock> {
        self.locks.lock(id)
    }
    fn writer_holder(&self, id: &str) -> Result<Option<WriterHolder>> {
        self.locks.holder(id)
    }
}

#[test]
fn live_session_drives_plan_mode_and_accepts_the_narration() {
    let store = Store::with_backend(
        Arc::new(MemBackend::default()),
        StoreConfig::jsonl("/unused"),
        None,
    );
    let header = SessionHeader::parse(
        r#"{"id":"live-plan","cwd":"/srv/repo"}"#,
        HeaderSource::Host,
    )
    .unwrap();
    let session = store.start(header).unwrap();
    let p = PlanMode::new(PlanModeConfig::new("Plan first.").unwrap());
    let none = AppendOptions::default();

    // Idle: committed at once (plan/mode outside a turn is allowed).
    assert_eq!(
        p.set(&session, true).unwrap().outcome,
        SetOutcome::Committed
    );
    assert_eq!(session.session_id(), "live-plan");
    assert!(p.get(&session).active);

    session
        .append("turn/start", r#"{"turn":1}"#, &none)
        .unwrap();
    assert!(PlanSession::has_open_turn(&session));
    session
        .append("step/start", r#"{"turn":1,"step":1}"#, &none)
        .unwrap();
    session
        .append(
            "request/header",
            r#"{"header":{"config":{"provider":"deepseek-official","model":"m"}},"reason":"initial"}"#,
            &none,
        )
        .unwrap();
    session
        .append("step/end", r#"{"turn":1,"step":1}"#, &none)
        .unwrap();

    // In the turn: queued, then committed by the next accepted step with the
    // narration the host injects as a user/message.
    let r = p.command(&session, "off", false).unwrap();
    assert_eq!(r.text, "Leaving plan mode (applies from the next step).");
    let step = p.pre_step(&session).unwrap();
    assert!(step.appended);
    let narration = step.narration.expect("the header told plan mode");
    session
        .append("step/start", r#"{"turn":1,"step":2}"#, &none)
        .unwrap();
    let seq = session
        .append(
            "user/message",
            &narration.to_json(),
            &AppendOptions {
                surface_op: Some("\"append\"".into()),
                ..AppendOptions::default()
            },
        )
        .unwrap();
    let events = PlanSession::snapshot(&session);
    let plan: Vec<&str> = events
        .iter()
        .filter(|e| e.event_type() == "plan/mode")
        .map(|e| e.data.as_str())
        .collect();
    assert_eq!(plan, vec![r#"{"active":true}"#, r#"{"active":false}"#]);
    assert_eq!(events[seq as usize].data.as_str(), narration.to_json());
    assert!(!p.get(&session).active);
    session.close().unwrap();
}
