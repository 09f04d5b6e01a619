//! `delete(id)`: removes a stored session under its writer lock, so a live
//! or otherwise held id is `busy`; afterwards the id is free.

use crate::error::{Error, Result};
use crate::model::json::quote;
use crate::store::Store;
use crate::store::coordinator::Registered;

impl Store {
    /// Deletes the stored session `id` (JSONL: its session directory,
    /// renamed out of the root, fsynced, then removed; SQLite, PostgreSQL:
    /// its events and session row in one transaction). `busy` when it is
    /// live or held by another writer (any process or store handle),
    /// `not_found` when it is not stored. A `create`d, never written id is
    /// only unregistered. The id is free afterwards.
    pub fn delete(&self, id: &str) -> Result<()> {
        self.check_open()?;
        self.with_id_lock(id, || self.delete_locked(id))
    }

    fn delete_locked(&self, id: &str) -> Result<()> {
        match self.registered(id) {
            Registered::Live => {
                return Err(Error::Busy(format!(
                    "cannot delete session {}: it is live in this process; close it first",
                    quote(id)
                )));
            }
            Registered::Reserved => {
                return Err(Error::Busy(format!(
                    "cannot delete session {}: it is prepared for resume in this process",
                    quote(id)
                )));
            }
            Registered::Created | Registered::Nothing => {}
        }
        let backend = self.backend();
        let writer = backend.lock_writer(id).map_err(|e| match e {
            Error::Busy(why) => Error::Busy(format!("cannot delete: {why}")),
            other => other,
        })?;
        let stored = backend.revision(id)?.is_some();
        if !stored {
            if self.forget_created(id) {
                return Ok(());
            }
            return Err(Error::not_found(format!(
                "cannot delete: session {} not found",
                quote(id)
            )));
        }
        let deleted = backend.delete(id, &writer);
        self.invalidate(id);
        self.forget_created(id);
        if let Some(dir) = backend.cache_dir() {
            // Its append checkpoint would never match a new session of
            // that id (another revision); this frees the space.
            crate::store::append_checkpoint::remove(&dir, id);
        }
        if !deleted? {
            return Err(Error::not_found(format!(
                "cannot delete: session {} not found",
                quote(id)
            )));
        }
        drop(writer);
        Ok(())
    }
}
