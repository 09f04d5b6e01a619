//! `dsh_plan`: the plan-mode controller (SPEC §7, §11).

use std::os::raw::c_char;

use super::args::{Out, handle_ref, str_arg};
use super::boundary::{FfiError, Guarded, ffi_call, ffi_void};
use super::session::{dsh_session, session_ref};
use super::status::dsh_status;
use super::store::write_text;
use crate::plan::{PlanMode, project_json};
use crate::store::LiveSession;

/// A plan-mode controller: the `{section}` config plus, per session, at most
/// one pending selection. Opaque. Independent of any store: it may serve
/// sessions of several stores.
///
/// Thread safety: any thread may use it, several at once; only
/// `dsh_plan_free` must not overlap other calls on it.
pub struct dsh_plan {
    pub(crate) inner: Guarded<PlanMode>,
}

/// The controller behind a handle pointer.
///
/// # Safety
/// `p` is NULL or a live handle from `dsh_plan_new`.
unsafe fn plan_ref<'a>(p: *const dsh_plan) -> Result<&'a Guarded<PlanMode>, FfiError> {
    // SAFETY: forwarded contract.
    unsafe { handle_ref(p, "plan") }.map(|h| &h.inner)
}

/// The shared shape of the session-bound plan calls: plan + session (+ one
/// checked input) in, one owned text out. Arguments are checked in order:
/// handles, input, output.
///
/// # Safety
/// Pointers are NULL or valid as documented on the exports.
unsafe fn plan_session_call<I>(
    plan: *const dsh_plan,
    session: *const dsh_session,
    input: impl FnOnce() -> Result<I, FfiError>,
    out: *mut *mut c_char,
    out_name: &str,
    op: impl FnOnce(&PlanMode, &LiveSession, I) -> Result<String, FfiError>,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let plan = unsafe { plan_ref(plan) }?;
        // SAFETY: the caller's contract.
        let session = unsafe { session_ref(session) }?;
        let input = input()?;
        let out = Out::new(out, out_name)?;
        let text = plan.run(|p| session.run(|s| op(p, s, input)))?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "plan result") }
    })
}

/// Creates a controller from `{"section":"<prompt text>"}` (required,
/// non-blank; unknown keys rejected).
///
/// - `config_json`: required (non-NULL; borrowed for the call); copied.
/// - `out`: required (non-NULL); on `DSH_OK` receives a new handle owned
///   by the caller, to be released with `dsh_plan_free`; untouched on failure.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_plan_new(
    config_json: *const c_char,
    out: *mut *mut dsh_plan,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let config = unsafe { str_arg(config_json, "config_json") }?;
        let out = Out::new(out, "out")?;
        let plan = PlanMode::from_config_json(config)?;
        let handle = Box::new(dsh_plan {
            inner: Guarded::new(plan, "plan controller"),
        });
        // SAFETY: checked by `Out::new`.
        unsafe { out.write(Box::into_raw(handle)) };
        Ok(())
    })
}

/// Frees a controller (pending selections are dropped). NULL is a no-op.
/// Must not overlap other calls on it; never call it twice. Leaves the last
/// error untouched.
///
/// # Safety
/// `plan` is NULL or a live handle from `dsh_plan_new`, freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_plan_free(plan: *mut dsh_plan) {
    ffi_void(|| {
        if !plan.is_null() {
            // SAFETY: a live handle from `Box::into_raw`, released once.
            drop(unsafe { Box::from_raw(plan) });
        }
    })
}

/// The session's plan state: `{"active":bool}` or
/// `{"active":bool,"pending":bool}` (`pending`: the pending selection's
/// target, present only when one exists).
///
/// - `plan`, `session`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_plan_get(
    plan: *mut dsh_plan,
    session: *mut dsh_session,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        plan_session_call(
            plan,
            session,
            || Ok(()),
            out_json,
            "out_json",
            |p, s, ()| Ok(p.get(s).to_json()),
        )
    }
}

/// Selects whether plan mode should be active (SPEC §7 `set`):
/// `{"outcome":"committed"|"queued"|"cancelled"|"noop","narration"?:<user/message data>}`.
/// `committed` appended a `plan/mode` event to the session.
///
/// - `plan`, `session`: required (non-NULL; borrowed for the call).
/// - `active`: the wanted state.
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Statuses: append errors of the session (e.g. `DSH_CLOSED`). Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_plan_set(
    plan: *mut dsh_plan,
    session: *mut dsh_session,
    active: bool,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        plan_session_call(
            plan,
            session,
            || Ok(()),
            out_json,
            "out_json",
            |p, s, ()| Ok(p.set(s, active)?.to_json()),
        )
    }
}

/// Call when a step is accepted inside a turn: commits a pending selection
/// as a `plan/mode` event. `{"appended":bool,"narration"?:<user/message data>}`.
///
/// - `plan`, `session`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Statuses: append errors (the selection then stays pending). Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_plan_pre_step(
    plan: *mut dsh_plan,
    session: *mut dsh_session,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        plan_session_call(
            plan,
            session,
            || Ok(()),
            out_json,
            "out_json",
            |p, s, ()| Ok(p.pre_step(s)?.to_json()),
        )
    }
}

/// The prompt section: the configured text when plan mode is in force for
/// the next request, else `""`. Plain text, not JSON.
///
/// - `plan`, `session`: required (non-NULL; borrowed for the call).
/// - `out_text`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Statuses: `DSH_INVARIANT` when the configured text holds a NUL character
/// (it cannot be a C string). Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_plan_section(
    plan: *mut dsh_plan,
    session: *mut dsh_session,
    out_text: *mut *mut c_char,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe {
        plan_session_call(
            plan,
            session,
            || Ok(()),
            out_text,
            "out_text",
            |p, s, ()| Ok(p.section(s).to_owned()),
        )
    }
}

/// Runs the `/plan` command with the text after `/plan` (`"off"` leaves plan
/// mode; anything else enters it):
/// `{"kind":"success"|"error","text":"…","steer"?:<user/message data>,"narration"?:…}`.
///
/// - `plan`, `session`, `raw_input`: required (non-NULL; borrowed for the
///   call); `raw_input` is `""` for a bare `/plan`.
/// - `has_attachments`: whether the command came with attachments.
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_plan_command(
    plan: *mut dsh_plan,
    session: *mut dsh_session,
    raw_input: *const c_char,
    has_attachments: bool,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // SAFETY: `raw_input` is NULL or a NUL-terminated string (the caller's contract).
    let input = || unsafe { str_arg(raw_input, "raw_input") };
    // SAFETY: forwarded contract.
    unsafe {
        plan_session_call(plan, session, input, out_json, "out_json", |p, s, input| {
            Ok(p.command(s, input, has_attachments)?.to_json())
        })
    }
}

/// Checks an `exit_plan_mode` tool call:
/// `{"ok":true,"review":{"questions":[…]}}` (show it to the user) or
/// `{"ok":false,"error":"…"}` (return it to the model).
///
/// - `plan`, `session`, `plan_markdown`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_plan_exit_check(
    plan: *mut dsh_plan,
    session: *mut dsh_session,
    plan_markdown: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // SAFETY: `plan_markdown` is NULL or a NUL-terminated string (the caller's contract).
    let markdown = || unsafe { str_arg(plan_markdown, "plan_markdown") };
    // SAFETY: forwarded contract.
    unsafe {
        plan_session_call(
            plan,
            session,
            markdown,
            out_json,
            "out_json",
            |p, s, markdown| Ok(p.exit_check(s, markdown).to_json()),
        )
    }
}

/// Reads the user's answer to the plan review
/// (`{"answers":[{"id":"plan-review","selected":["Approve"],"custom":null}]}`
/// or `{"dismissed":true}`): `{"approved":true}` (plan mode is left at the
/// next `dsh_plan_pre_step`) or `{"approved":false,"error":"…"}`.
///
/// - `plan`, `session`, `answer_json`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Statuses: `DSH_INVALID_ARGUMENT` for a malformed answer. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_plan_exit_answer(
    plan: *mut dsh_plan,
    session: *mut dsh_session,
    answer_json: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // SAFETY: `answer_json` is NULL or a NUL-terminated string (the caller's contract).
    let answer = || unsafe { str_arg(answer_json, "answer_json") };
    // SAFETY: forwarded contract.
    unsafe {
        plan_session_call(
            plan,
            session,
            answer,
            out_json,
            "out_json",
            |p, s, answer| Ok(p.exit_answer_json(s, answer)?.to_json()),
        )
    }
}

/// The pure UI projection of a log: `{"active":bool,"pending":bool}` from a
/// JSON array of events.
///
/// - `events_json`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_plan_project(
    events_json: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let events = unsafe { str_arg(events_json, "events_json") }?;
        let out = Out::new(out_json, "out_json")?;
        let text = project_json(events)?.to_json();
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "plan projection") }
    })
}
