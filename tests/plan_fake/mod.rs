//! An in-memory `PlanSession` for the plan-mode tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};

use dsh_persist::model::event::{Event, EventType};
use dsh_persist::model::json::JsonText;
use dsh_persist::plan::PlanSession;
use dsh_persist::{Error, Result};
use parking_lot::Mutex;

/// A live session held in memory; `fail_appends(true)` makes every append fail.
pub struct FakeSession {
    id: String,
    events: Mutex<Vec<Event>>,
    fail: AtomicBool,
}

impl FakeSession {
    pub fn new(id: &str) -> Self {
        FakeSession {
            id: id.to_owned(),
            events: Mutex::new(Vec::new()),
            fail: AtomicBool::new(false),
        }
    }

    /// Appends an event directly (bypassing the failure switch).
    pub fn push(&self, event_type: &str, data: &str) -> u64 {
        let mut events = self.events.lock();
        let seq = events.len() as u64;
        events.push(Event::new(
            EventType::new(event_type),
            seq,
            1_785_097_495_000 + seq as i64,
            JsonText::parse_verbatim(data).expect("test data is JSON"),
        ));
        seq
    }

    pub fn fail_appends(&self, fail: bool) {
        self.fail.store(fail, Ordering::SeqCst);
    }

    pub fn open_turn(&self) {
        let n = self.count("turn/start") + 1;
        self.push("turn/start", &format!("{{\"turn\":{n}}}"));
    }

    pub fn close_turn(&self) {
        let n = self.count("turn/start");
        self.push(
            "turn/end",
            &format!("{{\"turn\":{n},\"reason\":{{\"kind\":\"completed\"}}}}"),
        );
    }

    /// A `request/header` (the model was told the plan state folded so far).
    pub fn header(&self) {
        self.push(
            "request/header",
            r#"{"header":{"config":{"provider":"p","model":"m"}},"reason":"initial"}"#,
        );
    }

    pub fn plan_mode(&self, active: bool) {
        self.push("plan/mode", &format!("{{\"active\":{active}}}"));
    }

    fn count(&self, event_type: &str) -> usize {
        self.events
            .lock()
            .iter()
            .filter(|e| e.event_type() == event_type)
            .count()
    }

    pub fn len(&self) -> usize {
        self.events.lock().len()
    }

    /// The `active` values of every `plan/mode` event, in order.
    pub fn plan_events(&self) -> Vec<bool> {
        self.events
            .lock()
            .iter()
            .filter(|e| e.event_type() == "plan/mode")
            .map(|e| e.data.as_str() == "{\"active\":true}")
            .collect()
    }
}

impl PlanSession for FakeSession {
    fn session_id(&self) -> String {
        self.id.clone()
    }

    fn snapshot(&self) -> Vec<Event> {
        self.events.lock().clone()
    }

    fn has_open_turn(&self) -> bool {
        let mut open = false;
        for e in self.events.lock().iter() {
            if e.event_type() == "turn/start" {
                open = true;
            } else if e.event_type() == "turn/end" {
                open = false;
            }
        }
        open
    }

    fn append_event(&self, event_type: &str, data: JsonText) -> Result<u64> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(Error::io_msg(format!(
                "fake session {:?}: append of {event_type} refused by the test",
                self.id
            )));
        }
        Ok(self.push(event_type, data.as_str()))
    }
}
