//! The registry of live handles (D18): every handle this library hands out
//! is recorded by address and type until it is closed or freed, and every
//! call checks its handle arguments against it before dereferencing them.
//!
//! - a NULL handle: `DSH_INVALID_ARGUMENT` (as before);
//! - a handle of another type (a store passed as a session):
//!   `DSH_INVALID_ARGUMENT`;
//! - a closed or freed handle: `DSH_CLOSED`, also for a second
//!   `_close`/`_free` (which then frees nothing); the registry remembers the
//!   last [`CLOSED_REMEMBERED`] closed addresses;
//! - any other pointer (never returned, long closed, garbage):
//!   `DSH_INVALID_ARGUMENT`.
//!
//! So use-after-close never returns `DSH_OK` and never touches freed memory.
//! What stays undefined (the header says so): a call that overlaps the
//! `_close` of its handle, and a stale pointer whose address the allocator
//! has since given to a new handle of the same type (it then names that new
//! handle; a generation counter cannot help, as handles are plain pointers).
//!
//! Deviation from STYLE-ffi §4 ("adopt generational handles only with a
//! reason"): the reason is D18 — closed and foreign handles crashed hosts,
//! and a closed session answered `DSH_OK`. The cost is one uncontended
//! read lock (a few nanoseconds) per call; closes take the write lock.

use std::collections::{HashMap, VecDeque};

use once_cell::sync::Lazy;
use parking_lot::RwLock;

use super::boundary::FfiError;
use crate::error::Error;

/// How many closed addresses are remembered (beyond them a closed handle
/// reads as foreign: still refused, as `DSH_INVALID_ARGUMENT`).
pub const CLOSED_REMEMBERED: usize = 4096;

/// The handle types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Store,
    Session,
    Plan,
    Follow,
    Cancel,
    Error,
    Result,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Store => "dsh_store",
            Kind::Session => "dsh_session",
            Kind::Plan => "dsh_plan",
            Kind::Follow => "dsh_follow",
            Kind::Cancel => "dsh_cancel",
            Kind::Error => "dsh_error",
            Kind::Result => "dsh_result",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Live(Kind),
    Closed(Kind),
}

#[derive(Default)]
struct Registry {
    /// Address → state and the generation of the handle living there (an
    /// address the allocator reuses gets a new generation).
    handles: HashMap<usize, (State, u64)>,
    /// Closed handles, oldest first: (address, generation).
    closed: VecDeque<(usize, u64)>,
    next_generation: u64,
}

static REGISTRY: Lazy<RwLock<Registry>> = Lazy::new(RwLock::default);

/// Records a new handle (an address the allocator may have reused).
pub(crate) fn register<T>(p: *const T, kind: Kind) {
    REGISTRY.write().register(p as usize, kind);
}

impl Registry {
    fn register(&mut self, addr: usize, kind: Kind) {
        self.next_generation += 1;
        let generation = self.next_generation;
        self.handles.insert(addr, (State::Live(kind), generation));
    }

    fn state(&self, addr: usize) -> Option<State> {
        self.handles.get(&addr).map(|e| e.0)
    }

    fn retire(&mut self, addr: usize, kind: Kind, name: &str) -> Result<(), FfiError> {
        match self.handles.get(&addr).copied() {
            Some((State::Live(k), generation)) if k == kind => {
                self.handles.insert(addr, (State::Closed(kind), generation));
                self.closed.push_back((addr, generation));
                while self.closed.len() > CLOSED_REMEMBERED {
                    if let Some((old, old_generation)) = self.closed.pop_front() {
                        // Only that closed handle: the address may live again.
                        if matches!(self.handles.get(&old), Some((State::Closed(_), g)) if *g == old_generation)
                        {
                            self.handles.remove(&old);
                        }
                    }
                }
                Ok(())
            }
            other => Err(refusal(other.map(|e| e.0), kind, name)),
        }
    }
}

fn refusal(state: Option<State>, kind: Kind, name: &str) -> FfiError {
    match state {
        Some(State::Closed(k)) if k == kind => FfiError::Core(Error::Closed(format!(
            "`{name}` is a {} handle that was already closed or freed",
            kind.name()
        ))),
        Some(State::Live(k) | State::Closed(k)) => FfiError::Argument(format!(
            "`{name}` is a {} handle, not a {}",
            k.name(),
            kind.name()
        )),
        None => FfiError::Argument(format!(
            "`{name}` is not a live {} handle of this library (never returned by it, or closed long ago)",
            kind.name()
        )),
    }
}

/// Checks that `p` is a live handle of `kind` (NULL included in the error).
pub(crate) fn check<T>(p: *const T, kind: Kind, name: &str) -> Result<(), FfiError> {
    if p.is_null() {
        return Err(FfiError::Argument(format!("`{name}` must not be NULL")));
    }
    let state = REGISTRY.read().state(p as usize);
    match state {
        Some(State::Live(k)) if k == kind => Ok(()),
        other => Err(refusal(other, kind, name)),
    }
}

/// Marks the live handle `p` of `kind` closed, before it is freed; fails
/// (and the caller frees nothing) when it is not a live handle of `kind`.
pub(crate) fn retire<T>(p: *const T, kind: Kind, name: &str) -> Result<(), FfiError> {
    REGISTRY.write().retire(p as usize, kind, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_closed_foreign_and_mistyped_handles() {
        let a = Box::into_raw(Box::new(1u64));
        let p = a as *const u64;
        let foreign = 0x10 as *const u64;
        let e = check(foreign, Kind::Store, "store").unwrap_err();
        assert!(matches!(e, FfiError::Argument(_)), "{e:?}");
        register(p, Kind::Store);
        check(p, Kind::Store, "store").unwrap();
        let e = check(p, Kind::Session, "session").unwrap_err();
        assert!(
            matches!(&e, FfiError::Argument(m) if m.contains("is a dsh_store handle, not a dsh_session")),
            "{e:?}"
        );
        // A close of the wrong type is refused and closes nothing.
        let e = retire(p, Kind::Session, "session").unwrap_err();
        assert!(
            matches!(&e, FfiError::Argument(m) if m.contains("is a dsh_store handle, not a dsh_session")),
            "{e:?}"
        );
        check(p, Kind::Store, "store").unwrap();
        retire(p, Kind::Store, "store").unwrap();
        let e = check(p, Kind::Store, "store").unwrap_err();
        assert!(matches!(&e, FfiError::Core(Error::Closed(_))), "{e:?}");
        assert!(retire(p, Kind::Store, "store").is_err(), "a second close");
        // A closed handle passed as another type is named by its type.
        let e = check(p, Kind::Session, "session").unwrap_err();
        assert!(
            matches!(&e, FfiError::Argument(m) if m.contains("is a dsh_store handle, not a dsh_session")),
            "{e:?}"
        );
        // SAFETY: test-only; the box is ours.
        drop(unsafe { Box::from_raw(a) });
    }

    #[test]
    fn a_reused_address_keeps_its_newer_closed_entry() {
        let mut reg = Registry::default();
        let closed = |reg: &Registry, a| matches!(reg.state(a), Some(State::Closed(_)));
        reg.register(8, Kind::Store);
        reg.retire(8, Kind::Store, "store").unwrap();
        // The allocator reuses the address for a session, closed too.
        reg.register(8, Kind::Session);
        reg.retire(8, Kind::Session, "session").unwrap();
        for i in 0..CLOSED_REMEMBERED - 1 {
            reg.register(100 + i, Kind::Plan);
            reg.retire(100 + i, Kind::Plan, "plan").unwrap();
        }
        // The first entry of 8 was evicted, the newer one is kept.
        assert!(closed(&reg, 8));
        reg.register(99_999, Kind::Plan);
        reg.retire(99_999, Kind::Plan, "plan").unwrap();
        assert_eq!(reg.state(8), None, "now evicted too");
        assert!(reg.retire(8, Kind::Session, "session").is_err());
    }
}

#[cfg(test)]
mod abi_tests {
    use std::os::raw::c_char;
    use std::ptr::null_mut;

    use crate::ffi::plan::{dsh_plan, dsh_plan_free, dsh_plan_get, dsh_plan_new};
    use crate::ffi::session::{
        dsh_session, dsh_session_append, dsh_session_close, dsh_session_start,
    };
    use crate::ffi::status::dsh_status::*;
    use crate::ffi::store::{dsh_store, dsh_store_close, dsh_store_create, dsh_store_list};
    use crate::ffi::testutil::*;

    #[test]
    fn closed_foreign_and_mistyped_handles_never_answer_ok() {
        let dir = TempDir::new("abi-misuse");
        let store = open_jsonl(&dir);
        let mut session: *mut dsh_session = null_mut();
        let mut plan: *mut dsh_plan = null_mut();
        let mut seq = 0u64;
        let mut out = null_mut::<c_char>();
        unsafe {
            expect(
                dsh_session_start(store, c(r#"{"id":"s1"}"#).as_ptr(), &mut session),
                DSH_OK,
                "",
            );
            expect(
                dsh_plan_new(c(r#"{"section":"plan"}"#).as_ptr(), &mut plan),
                DSH_OK,
                "",
            );
            let turn_start = c("turn/start");
            let turn = c(r#"{"turn":1}"#);
            let mut append_turn = |s: *mut dsh_session| {
                dsh_session_append(
                    s,
                    turn_start.as_ptr(),
                    turn.as_ptr(),
                    std::ptr::null(),
                    &mut seq,
                )
            };
            // A session passed as a store, a store as a session.
            expect(
                dsh_store_list(session.cast::<dsh_store>(), &mut out),
                DSH_INVALID_ARGUMENT,
                "is a dsh_session handle, not a dsh_store",
            );
            expect(
                append_turn(store.cast::<dsh_session>()),
                DSH_INVALID_ARGUMENT,
                "is a dsh_store handle, not a dsh_session",
            );
            // Closed as the wrong type: refused, and both stay usable.
            expect(
                dsh_session_close(store.cast::<dsh_session>()),
                DSH_INVALID_ARGUMENT,
                "is a dsh_store handle, not a dsh_session",
            );
            expect(
                dsh_store_close(session.cast::<dsh_store>()),
                DSH_INVALID_ARGUMENT,
                "is a dsh_session handle, not a dsh_store",
            );
            expect(dsh_store_list(store, &mut out), DSH_OK, "");
            crate::ffi::strings::dsh_free(out);
            out = null_mut();
            expect(append_turn(session), DSH_OK, "");
            // A pointer this library never returned.
            let mut junk = [0u64; 8];
            expect(
                dsh_store_list(junk.as_mut_ptr().cast::<dsh_store>(), &mut out),
                DSH_INVALID_ARGUMENT,
                "is not a live dsh_store handle",
            );
            // Use after close, and a second close, of each handle type.
            expect(dsh_session_close(session), DSH_OK, "");
            expect(append_turn(session), DSH_CLOSED, "already closed or freed");
            expect(dsh_session_close(session), DSH_CLOSED, "already closed");
            dsh_plan_free(plan);
            dsh_plan_free(plan);
            expect(
                dsh_plan_get(plan, session, &mut out),
                DSH_CLOSED,
                "already closed or freed",
            );
            expect(dsh_store_close(store), DSH_OK, "");
            expect(
                dsh_store_list(store, &mut out),
                DSH_CLOSED,
                "already closed or freed",
            );
            expect(dsh_store_close(store), DSH_CLOSED, "already closed");
        }
    }

    #[test]
    fn ids_holding_u0000_are_refused_at_create() {
        let dir = TempDir::new("abi-nul-id");
        let store = open_jsonl(&dir);
        let mut session: *mut dsh_session = null_mut();
        unsafe {
            expect(
                dsh_store_create(store, c(r#"{"id":"a\u0000b"}"#).as_ptr()),
                DSH_INVALID_ARGUMENT,
                "holds U+0000",
            );
            expect(
                dsh_session_start(store, c(r#"{"id":"\u0000"}"#).as_ptr(), &mut session),
                DSH_INVALID_ARGUMENT,
                "holds U+0000",
            );
            expect(
                dsh_store_create(
                    store,
                    c(r#"{"id":"ok","parentSession":"p\u0000"}"#).as_ptr(),
                ),
                DSH_INVALID_ARGUMENT,
                "parentSession that holds U+0000",
            );
            assert!(session.is_null());
            expect(dsh_store_close(store), DSH_OK, "");
        }
    }
}
