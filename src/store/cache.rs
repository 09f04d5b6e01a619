//! The bounded LRU of cold inspections (SPEC §6 `inspect`,
//! `preparedSessionCacheSize`): reused only while the revision is current.

use std::sync::Arc;

use crate::backend::{Revision, StoredLog};
use crate::model::event::Event;

/// A cold session read, converted and validated, with its closers computed
/// but not written.
#[derive(Clone, Debug)]
pub struct Inspection {
    /// Events converted (SPEC §1.9) and validated; torn tail info kept for
    /// the repair.
    pub stored: StoredLog,
    pub closers: Vec<Event>,
}

/// Most recently used last.
pub struct InspectionCache {
    capacity: usize,
    entries: Vec<(String, Arc<Inspection>)>,
}

impl InspectionCache {
    pub fn new(capacity: usize) -> Self {
        InspectionCache {
            capacity,
            entries: Vec::new(),
        }
    }

    /// The retained inspection of `id` when it was taken at `current`; a
    /// stale one is dropped.
    pub fn get(&mut self, id: &str, current: &Revision) -> Option<Arc<Inspection>> {
        let i = self.entries.iter().position(|(k, _)| k == id)?;
        let entry = self.entries.remove(i);
        if &entry.1.stored.revision != current {
            return None;
        }
        let hit = entry.1.clone();
        self.entries.push(entry);
        Some(hit)
    }

    /// Like [`InspectionCache::get`], removing the entry.
    pub fn take(&mut self, id: &str, current: &Revision) -> Option<Arc<Inspection>> {
        let i = self.entries.iter().position(|(k, _)| k == id)?;
        let (_, insp) = self.entries.remove(i);
        (&insp.stored.revision == current).then_some(insp)
    }

    pub fn put(&mut self, id: &str, insp: Arc<Inspection>) {
        if self.capacity == 0 {
            return;
        }
        self.entries.retain(|(k, _)| k != id);
        if self.entries.len() >= self.capacity {
            self.entries.remove(0);
        }
        self.entries.push((id.to_string(), insp));
    }

    pub fn remove(&mut self, id: &str) {
        self.entries.retain(|(k, _)| k != id);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::header::SessionHeader;

    fn insp(rev: &str) -> Arc<Inspection> {
        Arc::new(Inspection {
            stored: StoredLog {
                header: SessionHeader::new("x", 0),
                events: Vec::new(),
                revision: Revision(rev.into()),
                torn: None,
                raw_log: None,
                recovered_events: 0,
                log_bytes: 0,
            },
            closers: Vec::new(),
        })
    }

    #[test]
    fn lru_with_revision_check() {
        let mut c = InspectionCache::new(2);
        c.put("a", insp("1"));
        c.put("b", insp("1"));
        assert!(c.get("a", &Revision("1".into())).is_some()); // a is now most recent
        c.put("c", insp("1")); // evicts b
        assert!(c.get("b", &Revision("1".into())).is_none());
        assert!(
            c.get("a", &Revision("2".into())).is_none(),
            "stale revision is not reused"
        );
        assert!(
            c.get("a", &Revision("1".into())).is_none(),
            "stale entry was dropped"
        );
        assert_eq!(c.len(), 1);
        assert!(c.take("c", &Revision("1".into())).is_some());
        assert!(c.is_empty());
        let mut off = InspectionCache::new(0);
        off.put("a", insp("1"));
        assert!(off.is_empty());
    }
}
