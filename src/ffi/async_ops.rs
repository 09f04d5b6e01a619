//! The `_ex` forms of the calls that may touch the disk (issue 18): the
//! same call as the synchronous export of that name, plus a cancel token
//! (`cancel`, NULL: none) and an error object (`out_error`) that carries
//! the failure to whichever thread reads it. Each is one `ex_call` around
//! the synchronous export, so a new operation gets its `_ex` form in one
//! function here.
//!
//! Reads (load, inspect, read_from, read_raw, list, list_snapshots,
//! list_summaries, search, export, and the reads of resume, fork, prune and
//! salvage) honour the token throughout; the other calls write and check it
//! only before they start (prune's deletions and salvage's write, once
//! begun, finish).

use std::os::raw::c_char;

use super::cancel::{Cancellable, dsh_cancel, dsh_error, ex_call};
use super::catalog;
use super::manage;
use super::plan::{self, dsh_plan};
use super::result::{self, dsh_result};
use super::session::{self, dsh_session};
use super::status::dsh_status;
use super::store::{self, dsh_store};

/// `dsh_store_open` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Writes: the token is checked once, before the call starts.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_open`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_open_ex(
    config_json: *const c_char,
    out: *mut *mut dsh_store,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::BeforeStart, || {
            store::dsh_store_open(config_json, out)
        })
    }
}

/// `dsh_store_close` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Writes: the token is checked once, before the call starts.
/// Frees the handle as the synchronous call does (even on failure).
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_close`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_close_ex(
    store: *mut dsh_store,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::BeforeStart, || {
            store::dsh_store_close(store)
        })
    }
}

/// `dsh_store_create` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Writes: the token is checked once, before the call starts.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_create`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_create_ex(
    store: *mut dsh_store,
    header_json: *const c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::BeforeStart, || {
            store::dsh_store_create(store, header_json)
        })
    }
}

/// `dsh_store_append` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Writes: the token is checked once, before the call starts.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_append`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_append_ex(
    store: *mut dsh_store,
    id: *const c_char,
    events_json: *const c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::BeforeStart, || {
            store::dsh_store_append(store, id, events_json)
        })
    }
}

/// `dsh_store_load` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Cancellable throughout (between the chunks, frames or rows it reads); a cancelled call changes nothing.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_load`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_load_ex(
    store: *mut dsh_store,
    id: *const c_char,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            store::dsh_store_load(store, id, out_json)
        })
    }
}

/// `dsh_store_inspect` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Cancellable throughout (between the chunks, frames or rows it reads); a cancelled call changes nothing.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_inspect`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_inspect_ex(
    store: *mut dsh_store,
    id: *const c_char,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            store::dsh_store_inspect(store, id, out_json)
        })
    }
}

/// `dsh_store_read_from` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Cancellable throughout (between the chunks, frames or rows it reads); a cancelled call changes nothing.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_read_from`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_read_from_ex(
    store: *mut dsh_store,
    id: *const c_char,
    from_seq: u64,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            store::dsh_store_read_from(store, id, from_seq, out_json)
        })
    }
}

/// `dsh_store_read_raw` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Cancellable throughout (between the chunks, frames or rows it reads); a cancelled call changes nothing.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_read_raw`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_read_raw_ex(
    store: *mut dsh_store,
    id: *const c_char,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            store::dsh_store_read_raw(store, id, out_json)
        })
    }
}

/// `dsh_store_list` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Cancellable throughout (between the chunks, frames or rows it reads); a cancelled call changes nothing.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_list`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_list_ex(
    store: *mut dsh_store,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            store::dsh_store_list(store, out_json)
        })
    }
}

/// `dsh_store_list_snapshots` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Cancellable throughout (between the chunks, frames or rows it reads); a cancelled call changes nothing.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_list_snapshots`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_list_snapshots_ex(
    store: *mut dsh_store,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            store::dsh_store_list_snapshots(store, out_json)
        })
    }
}

/// `dsh_session_start` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Writes: the token is checked once, before the call starts.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_session_start`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_start_ex(
    store: *mut dsh_store,
    header_json: *const c_char,
    out: *mut *mut dsh_session,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::BeforeStart, || {
            session::dsh_session_start(store, header_json, out)
        })
    }
}

/// `dsh_session_resume` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Cancellable throughout (between the chunks, frames or rows it reads); a cancelled call changes nothing.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_session_resume`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_resume_ex(
    store: *mut dsh_store,
    id: *const c_char,
    out: *mut *mut dsh_session,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            session::dsh_session_resume(store, id, out)
        })
    }
}

/// `dsh_session_fork` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Cancellable throughout (between the chunks, frames or rows it reads); a cancelled call changes nothing.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_session_fork`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_fork_ex(
    store: *mut dsh_store,
    source_id: *const c_char,
    boundary: i64,
    child_header_json: *const c_char,
    out: *mut *mut dsh_session,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            session::dsh_session_fork(store, source_id, boundary, child_header_json, out)
        })
    }
}

/// `dsh_session_flush` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Writes: the token is checked once, before the call starts.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_session_flush`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_flush_ex(
    session: *mut dsh_session,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::BeforeStart, || {
            session::dsh_session_flush(session)
        })
    }
}

/// `dsh_session_close` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Writes: the token is checked once, before the call starts.
/// Frees the handle as the synchronous call does (even on failure).
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_session_close`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_session_close_ex(
    session: *mut dsh_session,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::BeforeStart, || {
            session::dsh_session_close(session)
        })
    }
}

/// `dsh_plan_set` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Writes: the token is checked once, before the call starts.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_plan_set`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_plan_set_ex(
    plan: *mut dsh_plan,
    session: *mut dsh_session,
    active: bool,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::BeforeStart, || {
            plan::dsh_plan_set(plan, session, active, out_json)
        })
    }
}

/// `dsh_plan_pre_step` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Writes: the token is checked once, before the call starts.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_plan_pre_step`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_plan_pre_step_ex(
    plan: *mut dsh_plan,
    session: *mut dsh_session,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::BeforeStart, || {
            plan::dsh_plan_pre_step(plan, session, out_json)
        })
    }
}

/// `dsh_plan_command` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Writes: the token is checked once, before the call starts.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_plan_command`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_plan_command_ex(
    plan: *mut dsh_plan,
    session: *mut dsh_session,
    raw_input: *const c_char,
    has_attachments: bool,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::BeforeStart, || {
            plan::dsh_plan_command(plan, session, raw_input, has_attachments, out_json)
        })
    }
}

/// `dsh_plan_exit_check` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Writes: the token is checked once, before the call starts.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_plan_exit_check`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_plan_exit_check_ex(
    plan: *mut dsh_plan,
    session: *mut dsh_session,
    plan_markdown: *const c_char,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::BeforeStart, || {
            plan::dsh_plan_exit_check(plan, session, plan_markdown, out_json)
        })
    }
}

/// `dsh_plan_exit_answer` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Writes: the token is checked once, before the call starts.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_plan_exit_answer`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_plan_exit_answer_ex(
    plan: *mut dsh_plan,
    session: *mut dsh_session,
    answer_json: *const c_char,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::BeforeStart, || {
            plan::dsh_plan_exit_answer(plan, session, answer_json, out_json)
        })
    }
}

/// `dsh_store_delete` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Writes: the token is checked once, before the call starts.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_delete`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_delete_ex(
    store: *mut dsh_store,
    id: *const c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::BeforeStart, || {
            manage::dsh_store_delete(store, id)
        })
    }
}

/// `dsh_store_prune` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Cancellable while it lists the sessions and reads when each was updated; once the deletions begin they all run (a cancelled prune deletes nothing).
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_prune`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_prune_ex(
    store: *mut dsh_store,
    options_json: *const c_char,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            manage::dsh_store_prune(store, options_json, out_json)
        })
    }
}

/// `dsh_store_salvage` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Cancellable while it reads the source (between its chunks, frames or rows); once the new session's write begins it finishes (a cancelled salvage writes nothing).
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_salvage`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_salvage_ex(
    store: *mut dsh_store,
    id: *const c_char,
    new_id: *const c_char,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            manage::dsh_store_salvage(store, id, new_id, out_json)
        })
    }
}

/// `dsh_store_import` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Writes: the token is checked once, before the call starts.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_import`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_import_ex(
    store: *mut dsh_store,
    new_id: *const c_char,
    jsonl: *const c_char,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::BeforeStart, || {
            manage::dsh_store_import(store, new_id, jsonl, out_json)
        })
    }
}

/// `dsh_store_list_summaries` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Cancellable throughout (between sessions and within each window read); a cancelled call changes nothing.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_list_summaries`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_list_summaries_ex(
    store: *mut dsh_store,
    query_json: *const c_char,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            catalog::dsh_store_list_summaries(store, query_json, out_json)
        })
    }
}

/// `dsh_store_search` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Cancellable throughout (between sessions and within each log read); a cancelled call changes no session (index cache files already written for earlier sessions stay: they are a cache).
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_search`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_search_ex(
    store: *mut dsh_store,
    query_json: *const c_char,
    out_json: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            catalog::dsh_store_search(store, query_json, out_json)
        })
    }
}

/// `dsh_store_export` with a cancel token and a thread-independent error: the same
/// arguments, results and statuses, plus `cancel` (NULL: none; else a live
/// `dsh_cancel`, borrowed for the call) and `out_error` (NULL: the status
/// alone; else set to NULL, then on failure to a new `dsh_error` owned by
/// the caller, freed with `dsh_error_free`). Cancellable throughout (between the chunks, frames or rows it reads); a cancelled call changes nothing.
/// `DSH_CANCELLED` when the token stopped it. May run on any thread.
///
/// # Safety
/// As `dsh_store_export`; `cancel` is NULL or a live token; `out_error` is NULL or
/// valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_export_ex(
    store: *mut dsh_store,
    id: *const c_char,
    format: *const c_char,
    out_text: *mut *mut c_char,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            catalog::dsh_store_export(store, id, format, out_text)
        })
    }
}

/// `dsh_store_load_ex` with a paged result (issue 18): the same call, but the
/// `{meta, events}` JSON stays in the library as a `dsh_result` that the host
/// reads in pieces (`dsh_result_page`, `dsh_result_text`) on its event loop
/// and frees with `dsh_result_free`. `out_result`: required (non-NULL); on
/// `DSH_OK` receives the result (owned by the caller); untouched on failure.
/// `cancel`, `out_error`: as in the `_ex` forms (NULL: none). Cancellable
/// throughout, as `dsh_store_load_ex`. May run on any thread.
///
/// # Safety
/// As `dsh_store_load_ex`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_load_paged_ex(
    store: *mut dsh_store,
    id: *const c_char,
    out_result: *mut *mut dsh_result,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            result::view_call(store, id, out_result, |s, id| s.load(id))
        })
    }
}

/// `dsh_store_inspect_ex` with a paged result: as `dsh_store_load_paged_ex`
/// (writes nothing, as `dsh_store_inspect`). `out_result`: required
/// (non-NULL); on `DSH_OK` receives the result (owned by the caller, freed
/// with `dsh_result_free`). `cancel`, `out_error`: as in the `_ex` forms
/// (NULL: none). May run on any thread.
///
/// # Safety
/// As `dsh_store_inspect_ex`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_inspect_paged_ex(
    store: *mut dsh_store,
    id: *const c_char,
    out_result: *mut *mut dsh_result,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            result::view_call(store, id, out_result, |s, id| s.inspect(id))
        })
    }
}

/// `dsh_store_read_from_ex` with a paged result: as
/// `dsh_store_load_paged_ex` (the events with `seq >= from_seq`, as
/// `dsh_store_read_from`). `out_result`: required (non-NULL); on `DSH_OK`
/// receives the result (owned by the caller, freed with `dsh_result_free`).
/// `cancel`, `out_error`: as in the `_ex` forms (NULL: none). May run on
/// any thread.
///
/// # Safety
/// As `dsh_store_read_from_ex`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_read_from_paged_ex(
    store: *mut dsh_store,
    id: *const c_char,
    from_seq: u64,
    out_result: *mut *mut dsh_result,
    cancel: *mut dsh_cancel,
    out_error: *mut *mut dsh_error,
) -> dsh_status {
    // A start beyond i64::MAX is past the end of any log.
    let from = i64::try_from(from_seq).unwrap_or(i64::MAX);
    // SAFETY: forwarded contract.
    unsafe {
        ex_call(cancel, out_error, Cancellable::Throughout, || {
            result::view_call(store, id, out_result, |s, id| s.read_from(id, from))
        })
    }
}
