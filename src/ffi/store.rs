//! `dsh_store`: an opened store (SPEC §6, §11).

use std::os::raw::c_char;

use super::args::{Out, handle_ref, host_header, str_arg};
use super::boundary::{FfiError, Guarded, ffi_call};
use super::handles::{self, Kind};
use super::status::dsh_status;
use super::strings::owned_c_string;
use crate::backend::Location;
use crate::model::header::{HeaderSource, SessionHeader};
use crate::model::json::{quote, write_string};
use crate::store::Store;

/// An opened store (JSONL or SQLite). Opaque.
///
/// Thread safety: any thread may use it, several at once; only
/// `dsh_store_close` must not overlap other calls on it. Sessions started
/// from it keep its internals alive, so they may be closed before or after
/// it (after it, they answer `DSH_CLOSED`).
pub struct dsh_store {
    pub(crate) inner: Guarded<Store>,
}

/// The store behind a handle pointer.
///
/// # Safety
/// `p` is NULL or a live handle from `dsh_store_open`.
pub(crate) unsafe fn store_ref<'a>(p: *const dsh_store) -> Result<&'a Guarded<Store>, FfiError> {
    // SAFETY: forwarded contract.
    unsafe { handle_ref(p, Kind::Store, "store") }.map(|h| &h.inner)
}

/// Writes an owned result text to `out`.
///
/// # Safety
/// `out` was checked by `Out::new` and is writable.
pub(crate) unsafe fn write_text(
    out: Out<*mut c_char>,
    text: String,
    what: &str,
) -> Result<(), FfiError> {
    let p = owned_c_string(text, what)?;
    // SAFETY: forwarded contract.
    unsafe { out.write(p) };
    Ok(())
}

/// Opens a store from its configuration JSON:
/// `{"backend":"jsonl","root":…,"compression":"zstd"|"none","packChunks":true,
/// "writeBatchMaxDelayMs":200,"preparedSessionCacheSize":5,"strict":false,
/// "extraEventTypes":[]}` or `{"backend":"sqlite","path":…,"journalMode":"wal",
/// "busyTimeoutMs":5000,…}` or `{"backend":"postgres","url":"postgresql://…",
/// "schema":"dsh","poolSize":8,"cacheDir":…,…}` (`cacheDir`: a private
/// directory on this host for the store's append checkpoints and search
/// index; none by default). Every key: the README's "Store configuration".
///
/// - `config_json`: required (non-NULL; borrowed for the call) UTF-8 JSON; copied, not retained.
/// - `out`: required (non-NULL); on `DSH_OK` receives a new handle owned
///   by the caller, to be released with `dsh_store_close`; untouched on failure.
///
/// Statuses: `DSH_INVALID_ARGUMENT` (NULL, UTF-8, bad config),
/// `DSH_IO`, `DSH_CORRUPTION`, `DSH_FORMAT_UNSUPPORTED`, `DSH_BUSY`.
/// Thread-safe.
///
/// # Safety
/// `config_json` is NULL or a NUL-terminated string; `out` is NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_open(
    config_json: *const c_char,
    out: *mut *mut dsh_store,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract on `config_json`.
        let config = unsafe { str_arg(config_json, "config_json") }?;
        let out = Out::new(out, "out")?;
        let store = Store::open_json(config)?;
        let handle = Box::new(dsh_store {
            inner: Guarded::new(store, "store"),
        });
        let p = Box::into_raw(handle);
        handles::register(p, Kind::Store);
        // SAFETY: `out` is non-NULL and writable by the caller's contract.
        unsafe { out.write(p) };
        Ok(())
    })
}

/// Closes a store: stops admitting events, drains every live session
/// (final flush), closes storage, and frees the handle.
///
/// - `store`: NULL is a no-op returning `DSH_OK`. Otherwise the handle is
///   freed even when the drain fails (the status reports the drain); it must
///   not be used again, and the call must not overlap other calls on it.
///
/// Sessions of this store stay valid handles (close them too) but answer
/// `DSH_CLOSED` from now on.
///
/// # Safety
/// `store` is NULL or a live handle from `dsh_store_open`, closed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_close(store: *mut dsh_store) -> dsh_status {
    ffi_call(|| {
        if store.is_null() {
            return Ok(());
        }
        // A closed, freed or foreign pointer is refused and not freed.
        handles::retire(store, Kind::Store, "store")?;
        // SAFETY: a live handle from `Box::into_raw` (the registry said so),
        // released once (`retire` marked it closed).
        let handle = unsafe { Box::from_raw(store) };
        handle.inner.into_inner().close()?;
        Ok(())
    })
}

/// Where the session of a header lives, without I/O:
/// `{"kind":"jsonl","path":"/abs/…/session.jsonl.zstd"}` (the path may not
/// exist yet), or `null` for SQLite.
///
/// - `store`: required (non-NULL; borrowed for the call). `header_json`: required session header JSON.
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_locate(
    store: *mut dsh_store,
    header_json: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let header_json = unsafe { str_arg(header_json, "header_json") }?;
        let out = Out::new(out_json, "out_json")?;
        let text = store.run(|s| {
            let header = SessionHeader::parse(header_json, HeaderSource::Host)?;
            Ok(match s.locate(&header)? {
                Some(Location::Jsonl { path }) => {
                    format!("{{\"kind\":\"jsonl\",\"path\":{}}}", quote(&path))
                }
                None => "null".to_owned(),
            })
        })?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "location") }
    })
}

/// Declares a new session from its header JSON (lazy: nothing is written
/// until its first append).
///
/// - `store`, `header_json`: required (non-NULL; borrowed for the call); the header is copied.
///
/// Statuses: `DSH_CONFLICT` with code `SESSION_ALREADY_EXISTS` when the id
/// is stored, live or created; `DSH_INVALID_ARGUMENT` for a bad header.
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_create(
    store: *mut dsh_store,
    header_json: *const c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let header_json = unsafe { str_arg(header_json, "header_json") }?;
        store.run(|s| {
            let header = host_header(header_json, "header_json")?;
            Ok(s.create(header)?)
        })
    })
}

/// Appends a JSON array of complete events (`{type, seq, time, data, …}`) to
/// a stored or created session, durably before returning. The first seq must
/// be the stored next seq and the batch contiguous.
///
/// - `store`, `id`, `events_json`: required (non-NULL; borrowed for the call); copied, not retained.
///
/// Thread-safe; appends to one id are serialized.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_append(
    store: *mut dsh_store,
    id: *const c_char,
    events_json: *const c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let id = unsafe { str_arg(id, "id") }?;
        // SAFETY: the caller's contract.
        let events_json = unsafe { str_arg(events_json, "events_json") }?;
        store.run(|s| Ok(s.append_json(id, events_json)?))
    })
}

/// Shared shape of `load`/`inspect`: id in, `{meta, events}` out.
///
/// # Safety
/// Pointers are NULL or valid as documented on the exports.
unsafe fn view_call(
    store: *mut dsh_store,
    id: *const c_char,
    out_json: *mut *mut c_char,
    op: impl FnOnce(&Store, &str) -> crate::Result<crate::store::SessionView>,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let id = unsafe { str_arg(id, "id") }?;
        let out = Out::new(out_json, "out_json")?;
        let text = store.run(|s| Ok(op(s, id)?.to_json()))?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "session JSON") }
    })
}

/// Loads a session: `{"meta":<header>,"events":[…]}`. Cold: a torn or open
/// tail is repaired and the repair committed. Live in this process: flushed
/// first, then its snapshot (`DSH_CONFLICT` if a turn is open).
///
/// - `store`, `id`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Statuses include `DSH_NOT_FOUND`, `DSH_CORRUPTION`,
/// `DSH_FORMAT_UNSUPPORTED`. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_load(
    store: *mut dsh_store,
    id: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe { view_call(store, id, out_json, |s, id| s.load(id)) }
}

/// Like `dsh_store_load` but writes nothing: the closers of an open tail are
/// added in memory only; a live session gives its current snapshot (which
/// may have an open turn).
///
/// - `store`, `id`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Statuses as `dsh_store_load`. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_inspect(
    store: *mut dsh_store,
    id: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // SAFETY: forwarded contract.
    unsafe { view_call(store, id, out_json, |s, id| s.inspect(id)) }
}

/// The stored events with `seq >= from_seq` as `{meta, events}`: no repair,
/// no closers; past the end gives an empty `events`.
///
/// - `store`, `id`: required (non-NULL; borrowed for the call). `from_seq`: any value.
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_read_from(
    store: *mut dsh_store,
    id: *const c_char,
    from_seq: u64,
    out_json: *mut *mut c_char,
) -> dsh_status {
    // A start beyond i64::MAX is past the end of any log.
    let from = i64::try_from(from_seq).unwrap_or(i64::MAX);
    // SAFETY: forwarded contract.
    unsafe { view_call(store, id, out_json, |s, id| s.read_from(id, from)) }
}

/// The decoded JSONL artifact, exactly as written:
/// `{"meta":<header>,"filename":"session.jsonl","content":"<text>"}`.
///
/// - `store`, `id`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`), or NULL when the session is not stored (still `DSH_OK`).
///
/// Statuses: `DSH_UNSUPPORTED` on SQLite. Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_read_raw(
    store: *mut dsh_store,
    id: *const c_char,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        // SAFETY: the caller's contract.
        let id = unsafe { str_arg(id, "id") }?;
        let out = Out::new(out_json, "out_json")?;
        let text = store.run(|s| Ok(s.read_raw(id)?.map(raw_artifact_json)))?;
        match text {
            // SAFETY: checked by `Out::new`.
            Some(text) => unsafe { write_text(out, text, "raw artifact JSON") },
            None => {
                // SAFETY: checked by `Out::new`.
                unsafe { out.write(std::ptr::null_mut()) };
                Ok(())
            }
        }
    })
}

/// `{"meta":<header>,"filename":…,"content":…}` of a raw artifact.
pub(crate) fn raw_artifact_json(raw: crate::backend::RawArtifact) -> String {
    let mut t = String::with_capacity(raw.content.len() + 256);
    t.push_str("{\"meta\":");
    t.push_str(&raw.header.to_json());
    t.push_str(",\"filename\":");
    write_string(&mut t, &raw.filename);
    t.push_str(",\"content\":");
    write_string(&mut t, &raw.content);
    t.push('}');
    t
}

/// The headers of the materialized sessions as a JSON array (read from
/// metadata only).
///
/// - `store`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_list(
    store: *mut dsh_store,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        let out = Out::new(out_json, "out_json")?;
        let text = store.run(|s| Ok(s.listing()?.to_json()))?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "session list") }
    })
}

/// Headers plus revision tokens, without reading logs:
/// `[{"header":<header>,"revision":"<token>"}]`.
///
/// - `store`: required (non-NULL; borrowed for the call).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned
///   string (free it with `dsh_free`); untouched on failure.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_store_list_snapshots(
    store: *mut dsh_store,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        let out = Out::new(out_json, "out_json")?;
        let text = store.run(|s| {
            let snapshots = s.list_snapshots()?;
            let mut t = String::from("[");
            for (i, (h, rev)) in snapshots.iter().enumerate() {
                if i > 0 {
                    t.push(',');
                }
                t.push_str("{\"header\":");
                t.push_str(&h.to_json());
                t.push_str(",\"revision\":");
                write_string(&mut t, &rev.0);
                t.push('}');
            }
            t.push(']');
            Ok(t)
        })?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, text, "snapshot list") }
    })
}

#[cfg(test)]
mod tests {
    use std::ptr::{null, null_mut};
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::ffi::status::dsh_status::*;
    use crate::ffi::testutil::*;

    /// A pointer value that must survive a failed call untouched.
    fn sentinel<T>() -> *mut T {
        std::ptr::dangling_mut::<T>()
    }

    #[test]
    fn open_checks_its_arguments() {
        let dir = TempDir::new("open-args");
        let mut out = sentinel::<dsh_store>();
        let cfg = c(&jsonl_config(&dir));
        unsafe {
            expect(
                dsh_store_open(null(), &mut out),
                DSH_INVALID_ARGUMENT,
                "`config_json` must not be NULL",
            );
            expect(
                dsh_store_open(cfg.as_ptr(), null_mut()),
                DSH_INVALID_ARGUMENT,
                "`out` must not be NULL",
            );
            expect(
                dsh_store_open(bad(), &mut out),
                DSH_INVALID_ARGUMENT,
                "`config_json` is not valid UTF-8",
            );
            expect(
                dsh_store_open(c("{").as_ptr(), &mut out),
                DSH_INVALID_ARGUMENT,
                "store config is not a JSON object",
            );
            expect(
                dsh_store_open(
                    c(r#"{"backend":"jsonl","root":"/tmp/x","colour":1}"#).as_ptr(),
                    &mut out,
                ),
                DSH_INVALID_ARGUMENT,
                "colour",
            );
            assert_eq!(out, sentinel(), "a failed open must leave *out untouched");
            expect(dsh_store_close(null_mut()), DSH_OK, "");
            expect(dsh_store_open(cfg.as_ptr(), &mut out), DSH_OK, "");
            assert_ne!(out, sentinel());
            expect(dsh_store_close(out), DSH_OK, "");
        }
    }

    #[test]
    fn open_reports_io_errors() {
        let dir = TempDir::new("open-io");
        let file = dir.0.join("a-file");
        std::fs::write(&file, "x").unwrap();
        let cfg = format!(
            r#"{{"backend":"jsonl","root":{}}}"#,
            serde_json::to_string(&file.join("root")).unwrap()
        );
        let mut out = sentinel::<dsh_store>();
        let status = unsafe { dsh_store_open(c(&cfg).as_ptr(), &mut out) };
        if status == DSH_OK {
            // The backend may open lazily; then the first write must fail.
            let id = c("s1");
            unsafe {
                expect(
                    dsh_store_create(out, c(r#"{"id":"s1"}"#).as_ptr()),
                    DSH_OK,
                    "",
                );
                expect(
                    dsh_store_append(out, id.as_ptr(), c(&turn_array(1, 0)).as_ptr()),
                    DSH_IO,
                    "",
                );
                dsh_store_close(out);
            }
        } else {
            expect(status, DSH_IO, "");
            assert_eq!(out, sentinel());
        }
    }

    #[test]
    fn every_store_function_rejects_null_and_bad_utf8() {
        let dir = TempDir::new("store-null");
        let store = open_jsonl(&dir);
        let id = c("s1");
        let header = c(r#"{"id":"s1"}"#);
        let mut out = sentinel::<c_char>();
        unsafe {
            type Call = Box<dyn Fn(*mut dsh_store, *const c_char, *mut *mut c_char) -> dsh_status>;
            let calls: Vec<(&str, Call)> = vec![
                ("locate", Box::new(|s, a, o| dsh_store_locate(s, a, o))),
                ("load", Box::new(|s, a, o| dsh_store_load(s, a, o))),
                ("inspect", Box::new(|s, a, o| dsh_store_inspect(s, a, o))),
                (
                    "read_from",
                    Box::new(|s, a, o| dsh_store_read_from(s, a, 0, o)),
                ),
                ("read_raw", Box::new(|s, a, o| dsh_store_read_raw(s, a, o))),
            ];
            for (name, call) in &calls {
                let arg = if *name == "locate" {
                    header.as_ptr()
                } else {
                    id.as_ptr()
                };
                let arg_name = if *name == "locate" {
                    "header_json"
                } else {
                    "id"
                };
                expect(
                    call(null_mut(), arg, &mut out),
                    DSH_INVALID_ARGUMENT,
                    "`store` must not be NULL",
                );
                expect(
                    call(store, null(), &mut out),
                    DSH_INVALID_ARGUMENT,
                    &format!("`{arg_name}` must not be NULL"),
                );
                expect(
                    call(store, bad(), &mut out),
                    DSH_INVALID_ARGUMENT,
                    &format!("`{arg_name}` is not valid UTF-8"),
                );
                expect(
                    call(store, arg, null_mut()),
                    DSH_INVALID_ARGUMENT,
                    "`out_json` must not be NULL",
                );
                assert_eq!(out, sentinel(), "{name}");
            }
            expect(
                dsh_store_list(null_mut(), &mut out),
                DSH_INVALID_ARGUMENT,
                "`store` must not be NULL",
            );
            expect(
                dsh_store_list(store, null_mut()),
                DSH_INVALID_ARGUMENT,
                "`out_json` must not be NULL",
            );
            expect(
                dsh_store_list_snapshots(null_mut(), &mut out),
                DSH_INVALID_ARGUMENT,
                "`store`",
            );
            expect(
                dsh_store_list_snapshots(store, null_mut()),
                DSH_INVALID_ARGUMENT,
                "`out_json`",
            );
            expect(
                dsh_store_create(null_mut(), header.as_ptr()),
                DSH_INVALID_ARGUMENT,
                "`store`",
            );
            expect(
                dsh_store_create(store, null()),
                DSH_INVALID_ARGUMENT,
                "`header_json` must not be NULL",
            );
            expect(
                dsh_store_create(store, bad()),
                DSH_INVALID_ARGUMENT,
                "`header_json` is not valid UTF-8",
            );
            expect(
                dsh_store_create(store, c("[1]").as_ptr()),
                DSH_INVALID_ARGUMENT,
                "session metadata is not a JSON object",
            );
            let events = c(&turn_array(1, 0));
            expect(
                dsh_store_append(null_mut(), id.as_ptr(), events.as_ptr()),
                DSH_INVALID_ARGUMENT,
                "`store`",
            );
            expect(
                dsh_store_append(store, null(), events.as_ptr()),
                DSH_INVALID_ARGUMENT,
                "`id`",
            );
            expect(
                dsh_store_append(store, id.as_ptr(), null()),
                DSH_INVALID_ARGUMENT,
                "`events_json` must not be NULL",
            );
            expect(
                dsh_store_append(store, id.as_ptr(), bad()),
                DSH_INVALID_ARGUMENT,
                "`events_json` is not valid UTF-8",
            );
            assert_eq!(out, sentinel());
            expect(dsh_store_close(store), DSH_OK, "");
        }
    }

    #[test]
    fn jsonl_round_trip_through_every_read() {
        let dir = TempDir::new("store-rt");
        let store = open_jsonl(&dir);
        let id = c("s1");
        let mut out = null_mut::<c_char>();
        unsafe {
            expect(
                dsh_store_locate(store, c(r#"{"id":"s1"}"#).as_ptr(), &mut out),
                DSH_OK,
                "",
            );
            let loc = take_json(out);
            assert_eq!(loc["kind"], "jsonl");
            assert!(
                loc["path"].as_str().unwrap().starts_with(&dir.path()),
                "{loc}"
            );

            expect(
                dsh_store_create(store, c(r#"{"id":"s1","createdAt":5}"#).as_ptr()),
                DSH_OK,
                "",
            );
            expect(
                dsh_store_create(store, c(r#"{"id":"s1"}"#).as_ptr()),
                DSH_CONFLICT,
                "already exists",
            );
            assert_eq!(code(), "SESSION_ALREADY_EXISTS");
            expect(
                dsh_store_append(store, id.as_ptr(), c(&turn_array(1, 0)).as_ptr()),
                DSH_OK,
                "",
            );
            assert_eq!(code(), "", "a success clears the code");
            expect(
                dsh_store_append(store, id.as_ptr(), c(&turn_array(2, 6)).as_ptr()),
                DSH_OK,
                "",
            );
            expect(
                dsh_store_append(store, id.as_ptr(), c("[{").as_ptr()),
                DSH_INVALID_ARGUMENT,
                "",
            );

            expect(dsh_store_load(store, id.as_ptr(), &mut out), DSH_OK, "");
            let view = take_json(out);
            assert_eq!(view["meta"]["id"], "s1");
            assert_eq!(view["meta"]["createdAt"], 5);
            assert_eq!(view["events"].as_array().unwrap().len(), 12);
            assert_eq!(view["events"][11]["type"], "turn/end");

            expect(dsh_store_inspect(store, id.as_ptr(), &mut out), DSH_OK, "");
            assert_eq!(take_json(out), view);

            expect(
                dsh_store_read_from(store, id.as_ptr(), 10, &mut out),
                DSH_OK,
                "",
            );
            let tail = take_json(out);
            let seqs: Vec<u64> = tail["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["seq"].as_u64().unwrap())
                .collect();
            assert_eq!(seqs, [10, 11]);
            expect(
                dsh_store_read_from(store, id.as_ptr(), u64::MAX, &mut out),
                DSH_OK,
                "",
            );
            assert_eq!(take_json(out)["events"], serde_json::json!([]));

            expect(dsh_store_read_raw(store, id.as_ptr(), &mut out), DSH_OK, "");
            let raw = take_json(out);
            assert_eq!(raw["filename"], "session.jsonl");
            assert_eq!(raw["meta"]["id"], "s1");
            assert_eq!(raw["content"].as_str().unwrap().lines().count(), 13);
            out = sentinel();
            expect(
                dsh_store_read_raw(store, c("absent").as_ptr(), &mut out),
                DSH_OK,
                "",
            );
            assert!(
                out.is_null(),
                "an absent artifact is DSH_OK with *out = NULL"
            );

            expect(dsh_store_list(store, &mut out), DSH_OK, "");
            let list = take_json(out);
            assert_eq!(list.as_array().unwrap().len(), 1);
            assert_eq!(list[0]["id"], "s1");
            expect(dsh_store_list_snapshots(store, &mut out), DSH_OK, "");
            let snaps = take_json(out);
            assert_eq!(snaps[0]["header"]["id"], "s1");
            assert!(snaps[0]["revision"].is_string());

            out = sentinel();
            expect(
                dsh_store_load(store, c("nope").as_ptr(), &mut out),
                DSH_NOT_FOUND,
                "session \"nope\" not found",
            );
            assert_eq!(out, sentinel());
            expect(dsh_store_close(store), DSH_OK, "");
        }
    }

    #[test]
    fn sqlite_has_no_raw_artifacts_or_locations() {
        let dir = TempDir::new("store-sqlite");
        let cfg = format!(
            r#"{{"backend":"sqlite","path":{}}}"#,
            serde_json::to_string(&dir.0.join("s.db")).unwrap()
        );
        let mut store = null_mut();
        let mut out = null_mut::<c_char>();
        unsafe {
            expect(dsh_store_open(c(&cfg).as_ptr(), &mut store), DSH_OK, "");
            expect(
                dsh_store_locate(store, c(r#"{"id":"s1"}"#).as_ptr(), &mut out),
                DSH_OK,
                "",
            );
            assert_eq!(take(out).unwrap(), "null");
            expect(
                dsh_store_read_raw(store, c("s1").as_ptr(), &mut out),
                DSH_UNSUPPORTED,
                "",
            );
            expect(dsh_store_close(store), DSH_OK, "");
        }
    }

    #[test]
    fn a_closed_store_answers_closed() {
        let dir = TempDir::new("store-closed");
        let (store, _backend) = faulty_store(&dir);
        let store_ref = unsafe { &*store };
        // Close through the core (the handle stays allocated for this test).
        store_ref.inner.run(|s| Ok(s.close()?)).unwrap();
        let mut out = null_mut::<c_char>();
        unsafe {
            expect(
                dsh_store_list(store, &mut out),
                DSH_CLOSED,
                "the store is closed",
            );
            expect(dsh_store_close(store), DSH_OK, "");
        }
    }

    #[test]
    fn a_panic_in_the_core_is_dsh_panic_and_the_store_stays_usable() {
        let dir = TempDir::new("store-panic");
        let (store, backend) = faulty_store(&dir);
        let id = c("s1");
        let events = c(&turn_array(1, 0));
        unsafe {
            expect(
                dsh_store_create(store, c(r#"{"id":"s1"}"#).as_ptr()),
                DSH_OK,
                "",
            );
            backend.mode.store(PANIC, Ordering::SeqCst);
            expect(
                dsh_store_append(store, id.as_ptr(), events.as_ptr()),
                DSH_PANIC,
                "panic: injected backend panic",
            );
            backend.mode.store(PASS, Ordering::SeqCst);
            // The store is not poisoned: the same append now succeeds and
            // reads back.
            let mut out = null_mut::<c_char>();
            expect(dsh_store_list(store, &mut out), DSH_OK, "");
            crate::ffi::strings::dsh_free(out);
            expect(
                dsh_store_append(store, id.as_ptr(), events.as_ptr()),
                DSH_OK,
                "",
            );
            let mut out = null_mut::<c_char>();
            expect(dsh_store_load(store, id.as_ptr(), &mut out), DSH_OK, "");
            let loaded = crate::ffi::boundary::c_text(out);
            crate::ffi::strings::dsh_free(out);
            assert!(loaded.contains("\"turn/end\""), "{loaded}");
            expect(dsh_store_close(store), DSH_OK, "");
        }
    }

    #[test]
    fn injected_io_errors_keep_their_kind() {
        let dir = TempDir::new("store-io");
        let (store, backend) = faulty_store(&dir);
        unsafe {
            expect(
                dsh_store_create(store, c(r#"{"id":"s1"}"#).as_ptr()),
                DSH_OK,
                "",
            );
            backend.mode.store(FAIL, Ordering::SeqCst);
            expect(
                dsh_store_append(store, c("s1").as_ptr(), c(&turn_array(1, 0)).as_ptr()),
                DSH_IO,
                "disk full (injected)",
            );
            expect(dsh_store_close(store), DSH_OK, "");
        }
    }
}
