//! `dsh_plan`: the plan-mode controller (SPEC §7, §11).

use std::os::raw::c_char;

use super::args::{Out, handle_ref, str_arg};
use super::boundary::{FfiError, Guarded, ffi_call, ffi_void};
use super::handles::{self, Kind};
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
    unsafe { handle_ref(p, Kind::Plan, "plan") }.map(|h| &h.inner)
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
        let p = Box::into_raw(handle);
        handles::register(p, Kind::Plan);
        // SAFETY: checked by `Out::new`.
        unsafe { out.write(p) };
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
        // A closed, freed or foreign pointer is left alone (a second free
        // frees nothing).
        if !plan.is_null() && handles::retire(plan, Kind::Plan, "plan").is_ok() {
            // SAFETY: a live handle from `Box::into_raw` (the registry said
            // so), released once (`retire` marked it closed).
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

#[cfg(test)]
mod tests {
    use std::ptr::{null, null_mut};

    use super::*;
    use crate::ffi::session::{dsh_session_append, dsh_session_close, dsh_session_start};
    use crate::ffi::status::dsh_status::*;
    use crate::ffi::store::dsh_store_close;
    use crate::ffi::testutil::*;

    fn new_plan(config: &str) -> *mut dsh_plan {
        let mut p = null_mut();
        let status = unsafe { dsh_plan_new(c(config).as_ptr(), &mut p) };
        assert_eq!(status, DSH_OK, "{}", err());
        p
    }

    fn call(f: impl FnOnce(*mut *mut c_char) -> dsh_status) -> serde_json::Value {
        let mut out = null_mut();
        let status = f(&mut out);
        assert_eq!(status, DSH_OK, "{}", err());
        take_json(out)
    }

    fn append(session: *mut dsh_session, t: &str, d: &str) {
        let mut seq = 0;
        let status =
            unsafe { dsh_session_append(session, c(t).as_ptr(), c(d).as_ptr(), null(), &mut seq) };
        assert_eq!(status, DSH_OK, "{t}: {}", err());
    }

    #[test]
    fn new_checks_config_and_free_accepts_null() {
        let mut p = std::ptr::dangling_mut::<dsh_plan>();
        unsafe {
            expect(
                dsh_plan_new(null(), &mut p),
                DSH_INVALID_ARGUMENT,
                "`config_json` must not be NULL",
            );
            expect(
                dsh_plan_new(bad(), &mut p),
                DSH_INVALID_ARGUMENT,
                "`config_json` is not valid UTF-8",
            );
            expect(
                dsh_plan_new(c(r#"{"section":"x"}"#).as_ptr(), null_mut()),
                DSH_INVALID_ARGUMENT,
                "`out` must not be NULL",
            );
            expect(
                dsh_plan_new(c(r#"{"section":"  "}"#).as_ptr(), &mut p),
                DSH_INVALID_ARGUMENT,
                "PlanModeConfig needs a non-empty `section`",
            );
            expect(
                dsh_plan_new(c(r#"{"section":"x","mode":1}"#).as_ptr(), &mut p),
                DSH_INVALID_ARGUMENT,
                "PlanModeConfig has unknown key(s) mode",
            );
            assert_eq!(p, std::ptr::dangling_mut());
            dsh_plan_free(null_mut());
            dsh_plan_free(new_plan(r#"{"section":"x"}"#));
        }
    }

    #[test]
    fn the_whole_plan_flow_through_the_abi() {
        let dir = TempDir::new("plan-flow");
        let store = open_jsonl(&dir);
        let plan = new_plan(r#"{"section":"PLAN MODE: read only."}"#);
        let mut session = null_mut();
        unsafe {
            expect(
                dsh_session_start(store, c(r#"{"id":"p1"}"#).as_ptr(), &mut session),
                DSH_OK,
                "",
            );
            assert_eq!(
                call(|o| dsh_plan_get(plan, session, o)),
                serde_json::json!({"active": false})
            );
            let r = call(|o| dsh_plan_command(plan, session, c("").as_ptr(), false, o));
            assert_eq!(r["kind"], "success");
            assert_eq!(r["text"], "Plan mode on. Use /plan off to leave.");
            assert_eq!(call(|o| dsh_plan_get(plan, session, o))["active"], true);
            let mut text = null_mut();
            expect(dsh_plan_section(plan, session, &mut text), DSH_OK, "");
            assert_eq!(take(text).unwrap(), "PLAN MODE: read only.");

            append(session, "turn/start", r#"{"turn":1}"#);
            let check = call(|o| dsh_plan_exit_check(plan, session, c("no heading").as_ptr(), o));
            assert_eq!(check["ok"], false);
            let check =
                call(|o| dsh_plan_exit_check(plan, session, c("# Plan\n- step").as_ptr(), o));
            assert_eq!(check["ok"], true, "{check}");
            let answer =
                r#"{"answers":[{"id":"plan-review","selected":["Approve"],"custom":null}]}"#;
            let a = call(|o| dsh_plan_exit_answer(plan, session, c(answer).as_ptr(), o));
            assert_eq!(a, serde_json::json!({"approved": true}));
            assert_eq!(
                call(|o| dsh_plan_get(plan, session, o)),
                serde_json::json!({"active": true, "pending": false})
            );
            let step = call(|o| dsh_plan_pre_step(plan, session, o));
            assert_eq!(step["appended"], true);
            assert_eq!(
                call(|o| dsh_plan_get(plan, session, o)),
                serde_json::json!({"active": false})
            );
            let set = call(|o| dsh_plan_set(plan, session, true, o));
            assert_eq!(set["outcome"], "queued");
            let dismissed = call(|o| {
                dsh_plan_exit_answer(plan, session, c(r#"{"dismissed":true}"#).as_ptr(), o)
            });
            assert_eq!(dismissed["approved"], false);
            let mut out = std::ptr::dangling_mut::<c_char>();
            expect(
                dsh_plan_exit_answer(plan, session, c("[]").as_ptr(), &mut out),
                DSH_INVALID_ARGUMENT,
                "",
            );
            assert_eq!(out, std::ptr::dangling_mut());

            let events = r#"[{"type":"plan/mode","seq":0,"time":1,"data":{"active":true}}]"#;
            assert_eq!(
                call(|o| dsh_plan_project(c(events).as_ptr(), o)),
                serde_json::json!({"active": true, "pending": false})
            );
            expect(
                dsh_plan_project(c("{}").as_ptr(), &mut out),
                DSH_INVALID_ARGUMENT,
                "plan projection needs a JSON array of events",
            );
            expect(
                dsh_plan_project(null(), &mut out),
                DSH_INVALID_ARGUMENT,
                "`events_json` must not be NULL",
            );
            expect(
                dsh_plan_project(c("[]").as_ptr(), null_mut()),
                DSH_INVALID_ARGUMENT,
                "`out_json` must not be NULL",
            );

            // The queued selection cannot be committed once the store is
            // closed: the append error comes back and it stays pending.
            expect(dsh_store_close(store), DSH_OK, "");
            expect(
                dsh_plan_pre_step(plan, session, &mut out),
                DSH_CLOSED,
                "live session \"p1\" is closed",
            );
            assert_eq!(
                call(|o| dsh_plan_get(plan, session, o)),
                serde_json::json!({"active": false, "pending": true})
            );
            expect(dsh_session_close(session), DSH_OK, "");
            dsh_plan_free(plan);
        }
    }

    #[test]
    fn plan_calls_check_handles_inputs_and_outputs_in_order() {
        let dir = TempDir::new("plan-null");
        let store = open_jsonl(&dir);
        let plan = new_plan(r#"{"section":"x"}"#);
        let mut session = null_mut();
        let mut out = std::ptr::dangling_mut::<c_char>();
        unsafe {
            expect(
                dsh_session_start(store, c(r#"{"id":"n1"}"#).as_ptr(), &mut session),
                DSH_OK,
                "",
            );
            type Call = Box<
                dyn Fn(
                    *mut dsh_plan,
                    *mut dsh_session,
                    *const c_char,
                    *mut *mut c_char,
                ) -> dsh_status,
            >;
            let calls: Vec<(&str, Option<&str>, Call)> = vec![
                ("get", None, Box::new(|p, s, _, o| dsh_plan_get(p, s, o))),
                (
                    "set",
                    None,
                    Box::new(|p, s, _, o| dsh_plan_set(p, s, true, o)),
                ),
                (
                    "pre_step",
                    None,
                    Box::new(|p, s, _, o| dsh_plan_pre_step(p, s, o)),
                ),
                (
                    "section",
                    None,
                    Box::new(|p, s, _, o| dsh_plan_section(p, s, o)),
                ),
                (
                    "command",
                    Some("raw_input"),
                    Box::new(|p, s, i, o| dsh_plan_command(p, s, i, false, o)),
                ),
                (
                    "exit_check",
                    Some("plan_markdown"),
                    Box::new(|p, s, i, o| dsh_plan_exit_check(p, s, i, o)),
                ),
                (
                    "exit_answer",
                    Some("answer_json"),
                    Box::new(|p, s, i, o| dsh_plan_exit_answer(p, s, i, o)),
                ),
            ];
            let input = c(r#"{"dismissed":true}"#);
            for (name, input_name, f) in &calls {
                expect(
                    f(null_mut(), null_mut(), null(), null_mut()),
                    DSH_INVALID_ARGUMENT,
                    "`plan` must not be NULL",
                );
                expect(
                    f(plan, null_mut(), null(), null_mut()),
                    DSH_INVALID_ARGUMENT,
                    "`session` must not be NULL",
                );
                let out_name = if *name == "section" {
                    "out_text"
                } else {
                    "out_json"
                };
                if let Some(input_name) = input_name {
                    expect(
                        f(plan, session, null(), null_mut()),
                        DSH_INVALID_ARGUMENT,
                        &format!("`{input_name}` must not be NULL"),
                    );
                    expect(
                        f(plan, session, bad(), &mut out),
                        DSH_INVALID_ARGUMENT,
                        &format!("`{input_name}` is not valid UTF-8"),
                    );
                }
                expect(
                    f(plan, session, input.as_ptr(), null_mut()),
                    DSH_INVALID_ARGUMENT,
                    &format!("`{out_name}` must not be NULL"),
                );
            }
            assert_eq!(out, std::ptr::dangling_mut());
            expect(dsh_session_close(session), DSH_OK, "");
            dsh_plan_free(plan);
            expect(dsh_store_close(store), DSH_OK, "");
        }
    }

    #[test]
    fn a_section_with_a_nul_cannot_be_returned() {
        let dir = TempDir::new("plan-nul");
        let store = open_jsonl(&dir);
        let plan = new_plan(r#"{"section":"a\u0000b"}"#);
        let mut session = null_mut();
        let mut out = null_mut::<c_char>();
        unsafe {
            expect(
                dsh_session_start(store, c(r#"{"id":"z1"}"#).as_ptr(), &mut session),
                DSH_OK,
                "",
            );
            expect(dsh_plan_set(plan, session, true, &mut out), DSH_OK, "");
            take(out);
            expect(
                dsh_plan_section(plan, session, &mut out),
                DSH_INVARIANT,
                "contains a NUL character at byte 1",
            );
            dsh_session_close(session);
            dsh_plan_free(plan);
            dsh_store_close(store);
        }
    }
}
