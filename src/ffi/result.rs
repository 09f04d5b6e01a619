//! Paged results of the large reads (issue 18): `dsh_result`, the whole
//! `{meta, events}` text of a load, inspect or read_from, kept by the
//! library with the byte offset of every event in it, so a host on an event
//! loop takes it in small pieces (a page of events, or a slice of the text)
//! and yields between them instead of decoding and parsing megabytes in one
//! step. The `_paged_ex` reads (`async_ops.rs`) make one off the loop; the
//! accessors here are cheap copies (no parse) meant for the loop thread.
//!
//! The text is byte for byte what the synchronous call returns (a unit test
//! holds the two equal), so a host that joins the slices, or the head and
//! the pages, gets the same value.

use std::borrow::Cow;
use std::os::raw::c_char;
use std::sync::atomic::{AtomicU64, Ordering};

use super::args::{Out, handle_ref, str_arg};
use super::boundary::{FfiError, ffi_call};
use super::handles::{self, Kind};
use super::status::dsh_status;
use super::store::{dsh_store, store_ref, write_text};
use crate::store::{SessionView, Store, ViewJson};

/// A paged read result: the `{meta, events}` JSON of a load, inspect or
/// read_from, held by the library. Made by the `_paged_ex` reads; read with
/// `dsh_result_count`, `dsh_result_head`, `dsh_result_page`,
/// `dsh_result_text`; freed with `dsh_result_free`.
///
/// Thread safety: immutable; any thread may read it, several at once; only
/// `dsh_result_free` must not overlap other calls on it.
pub struct dsh_result {
    /// The whole JSON text, as the synchronous call returns it.
    text: String,
    /// The byte offset in `text` where each event starts.
    starts: Vec<usize>,
    /// The byte offsets in `text` of the events array's `[` and `]`.
    open: usize,
    close: usize,
}

/// Live `dsh_result` objects (for leak checks in host tests).
static LIVE: AtomicU64 = AtomicU64::new(0);

impl dsh_result {
    /// The result of `view`: the text of [`SessionView::to_json`], with its
    /// event offsets recorded as it is written.
    pub(crate) fn of_view(view: &SessionView) -> dsh_result {
        let ViewJson {
            text,
            starts,
            open,
            close,
        } = view.to_json_laid_out();
        dsh_result {
            text,
            starts,
            open,
            close,
        }
    }

    /// The byte range of events `first..next` (their text, commas between).
    fn events_range(&self, first: usize, next: usize) -> (usize, usize) {
        let end = if next < self.starts.len() {
            self.starts[next] - 1 // the comma before event `next`
        } else {
            self.close
        };
        (self.starts[first], end)
    }
}

/// Hands a new result to the caller through `out`.
///
/// # Safety
/// `out` was checked by `Out::new` and is writable.
pub(crate) unsafe fn write_result(out: Out<*mut dsh_result>, result: dsh_result) {
    let p = Box::into_raw(Box::new(result));
    handles::register(p, Kind::Result);
    LIVE.fetch_add(1, Ordering::Relaxed);
    // SAFETY: forwarded contract.
    unsafe { out.write(p) };
}

/// The body of the `_paged_ex` reads: id in, a `dsh_result` of the view out.
///
/// # Safety
/// Pointers are NULL or valid as documented on the exports.
pub(crate) unsafe fn view_call(
    store: *mut dsh_store,
    id: *const c_char,
    out_result: *mut *mut dsh_result,
    op: impl FnOnce(&Store, &str) -> crate::Result<SessionView>,
) -> dsh_status {
    // SAFETY: the caller's contract.
    let id_arg = || unsafe { str_arg(id, "id") }.map(Cow::Borrowed);
    // SAFETY: forwarded contract.
    unsafe { view_call_with(store, id_arg, out_result, op) }
}

/// [`view_call`] with the id decoded by `id_arg` (the `_id_json` forms
/// decode JSON string text), after the store is checked.
///
/// # Safety
/// Pointers are NULL or valid as documented on the exports.
pub(crate) unsafe fn view_call_with<'a>(
    store: *mut dsh_store,
    id_arg: impl FnOnce() -> Result<Cow<'a, str>, FfiError>,
    out_result: *mut *mut dsh_result,
    op: impl FnOnce(&Store, &str) -> crate::Result<SessionView>,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let store = unsafe { store_ref(store) }?;
        let id = id_arg()?;
        let out = Out::new(out_result, "out_result")?;
        let result = store.run(|s| Ok(dsh_result::of_view(&op(s, &id)?)))?;
        // SAFETY: checked by `Out::new`.
        unsafe { write_result(out, result) };
        Ok(())
    })
}

/// # Safety
/// `p` is NULL or a live result not overlapping its `dsh_result_free`.
unsafe fn result_ref<'a>(p: *const dsh_result) -> Result<&'a dsh_result, FfiError> {
    // SAFETY: forwarded contract.
    unsafe { handle_ref(p, Kind::Result, "result") }
}

/// A u64 index or size as `usize` (saturating: beyond the address space is
/// past the end of any result).
fn index(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// The number of events in a result and the byte length of its whole text
/// (what `dsh_result_text` slices).
///
/// - `result`: required (a live `dsh_result`; borrowed).
/// - `out_events`, `out_bytes`: each NULL (not wanted) or receives the value
///   on `DSH_OK`.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_result_count(
    result: *const dsh_result,
    out_events: *mut u64,
    out_bytes: *mut u64,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { result_ref(result) }?;
        if !out_events.is_null() {
            // SAFETY: non-NULL, writable by the contract.
            unsafe { out_events.write(r.starts.len() as u64) };
        }
        if !out_bytes.is_null() {
            // SAFETY: non-NULL, writable by the contract.
            unsafe { out_bytes.write(r.text.len() as u64) };
        }
        Ok(())
    })
}

/// The result without its events: `{"meta":<header>,"events":[]}` (the
/// host parses it, then fills `events` from the pages).
///
/// - `result`: required (a live `dsh_result`; borrowed).
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned string
///   (free it with `dsh_free`).
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_result_head(
    result: *const dsh_result,
    out_json: *mut *mut c_char,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { result_ref(result) }?;
        let out = Out::new(out_json, "out_json")?;
        let mut head = String::with_capacity(r.open + 4);
        head.push_str(&r.text[..=r.open]);
        head.push_str(&r.text[r.close..]);
        // SAFETY: checked by `Out::new`.
        unsafe { write_text(out, head, "result head") }
    })
}

/// A page of events: the JSON array of events `first .. *out_next`, as many
/// whole events from `first` as fit in `max_bytes` of event text, and at
/// least one (an event larger than `max_bytes` is a page of its own).
/// `first` at or past the end gives `[]` and `*out_next` = the count. The
/// events are byte for byte those of the whole text.
///
/// - `result`: required (a live `dsh_result`; borrowed). `first`,
///   `max_bytes`: any values.
/// - `out_json`: required (non-NULL); on `DSH_OK` receives an owned string
///   (free it with `dsh_free`).
/// - `out_next`: required (non-NULL); on `DSH_OK` receives the index after
///   the page's last event (pass it as the next `first`).
///
/// A copy of the page (no parse): cheap enough for an event loop.
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_result_page(
    result: *const dsh_result,
    first: u64,
    max_bytes: u64,
    out_json: *mut *mut c_char,
    out_next: *mut u64,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { result_ref(result) }?;
        let out = Out::new(out_json, "out_json")?;
        let out_next = Out::new(out_next, "out_next")?;
        let count = r.starts.len();
        let first = index(first).min(count);
        let mut next = first;
        if first < count {
            let budget = index(max_bytes);
            next = first + 1;
            while next < count && r.events_range(first, next + 1).1 - r.starts[first] <= budget {
                next += 1;
            }
        }
        let mut page = String::new();
        page.push('[');
        if next > first {
            let (a, b) = r.events_range(first, next);
            page.reserve(b - a + 1);
            page.push_str(&r.text[a..b]);
        }
        page.push(']');
        // SAFETY: checked by `Out::new`.
        unsafe {
            write_text(out, page, "result page")?;
            out_next.write(next as u64);
        }
        Ok(())
    })
}

/// A slice of the whole text: bytes `offset .. *out_next`, at most
/// `max_bytes` of them, ending on a UTF-8 character boundary (at least one
/// character when `offset` is before the end). `offset` at or past the end
/// gives `""` and `*out_next` = the byte length. Joined in order, the slices
/// are the text the synchronous call returns (for the `…Raw` forms).
///
/// - `result`: required (a live `dsh_result`; borrowed). `offset` must be a
///   value `*out_next` gave (or 0); another one that is not on a character
///   boundary is `DSH_INVALID_ARGUMENT`.
/// - `out_text`: required (non-NULL); on `DSH_OK` receives an owned string
///   (free it with `dsh_free`).
/// - `out_next`: required (non-NULL); on `DSH_OK` receives the offset after
///   the slice.
///
/// Thread-safe.
///
/// # Safety
/// Pointers are NULL or valid as described.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_result_text(
    result: *const dsh_result,
    offset: u64,
    max_bytes: u64,
    out_text: *mut *mut c_char,
    out_next: *mut u64,
) -> dsh_status {
    ffi_call(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { result_ref(result) }?;
        let out = Out::new(out_text, "out_text")?;
        let out_next = Out::new(out_next, "out_next")?;
        let len = r.text.len();
        let from = index(offset).min(len);
        if !r.text.is_char_boundary(from) {
            return Err(FfiError::Argument(format!(
                "`offset` {offset} is inside a UTF-8 character of the result text"
            )));
        }
        let mut to = from.saturating_add(index(max_bytes)).min(len);
        while !r.text.is_char_boundary(to) {
            to -= 1;
        }
        if to == from && from < len {
            to = from + 1;
            while !r.text.is_char_boundary(to) {
                to += 1;
            }
        }
        // SAFETY: checked by `Out::new`.
        unsafe {
            write_text(out, r.text[from..to].to_owned(), "result text")?;
            out_next.write(to as u64);
        }
        Ok(())
    })
}

/// Frees a result. NULL is a no-op (`DSH_OK`); a freed one is
/// `DSH_CLOSED`. Must not overlap other calls on it.
///
/// # Safety
/// `result` is NULL or a pointer from a `_paged_ex` read.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dsh_result_free(result: *mut dsh_result) -> dsh_status {
    ffi_call(|| {
        if result.is_null() {
            return Ok(());
        }
        handles::retire(result, Kind::Result, "result")?;
        LIVE.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: registered by `write_result` from `Box::into_raw`, and
        // just retired, so this is the only free.
        drop(unsafe { Box::from_raw(result) });
        Ok(())
    })
}

/// How many `dsh_result` objects are live in this process (made and not
/// yet freed): for a host's tests that every paged read frees its result.
/// Thread-safe; does not touch the last error.
#[unsafe(no_mangle)]
pub extern "C" fn dsh_result_live() -> u64 {
    LIVE.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use std::ffi::c_char;
    use std::ptr::null_mut;

    use super::*;
    use crate::ffi::async_ops::{dsh_store_inspect_paged_ex, dsh_store_read_from_paged_ex};
    use crate::ffi::status::dsh_status::*;
    use crate::ffi::store::{
        dsh_store_append, dsh_store_close, dsh_store_create, dsh_store_inspect,
    };
    use crate::ffi::testutil::*;

    fn page(r: *mut dsh_result, first: u64, max: u64) -> (String, u64) {
        let mut out = null_mut::<c_char>();
        let mut next = 0;
        unsafe {
            expect(
                dsh_result_page(r, first, max, &mut out, &mut next),
                DSH_OK,
                "",
            )
        };
        (take(out).unwrap(), next)
    }

    #[test]
    fn pages_and_slices_rebuild_the_synchronous_text() {
        let dir = TempDir::new("ffi-result");
        let store = open_jsonl(&dir);
        unsafe {
            expect(
                dsh_store_create(store, c(r#"{"id":"s1"}"#).as_ptr()),
                DSH_OK,
                "",
            );
            let mut seq = 0;
            for turn in 1..=3 {
                let batch = turn_array(turn, seq);
                seq += turn_events(turn).len() as u64;
                expect(
                    dsh_store_append(store, c("s1").as_ptr(), c(&batch).as_ptr()),
                    DSH_OK,
                    "",
                );
            }
            let mut out = null_mut::<c_char>();
            expect(
                dsh_store_inspect(store, c("s1").as_ptr(), &mut out),
                DSH_OK,
                "",
            );
            let sync = take(out).unwrap();
            let want: serde_json::Value = serde_json::from_str(&sync).unwrap();

            let mut r = null_mut::<dsh_result>();
            let st =
                dsh_store_inspect_paged_ex(store, c("s1").as_ptr(), &mut r, null_mut(), null_mut());
            assert_eq!(st, DSH_OK);
            let (mut n, mut bytes) = (0, 0);
            expect(dsh_result_count(r, &mut n, &mut bytes), DSH_OK, "");
            assert_eq!(n, seq);
            assert_eq!(bytes, sync.len() as u64);
            // Every page size, from one event per page to all in one.
            for max in [0, 1, 100, 300, 1 << 20] {
                let mut events = Vec::new();
                let mut first = 0;
                while first < n {
                    let (text, next) = page(r, first, max);
                    assert!(next > first);
                    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                    assert_eq!(v.as_array().unwrap().len() as u64, next - first);
                    events.extend(v.as_array().unwrap().iter().cloned());
                    first = next;
                }
                expect(dsh_result_head(r, &mut out), DSH_OK, "");
                let mut got = take_json(out);
                got["events"] = serde_json::Value::Array(events);
                assert_eq!(got, want, "max_bytes {max}");
            }
            assert_eq!(page(r, n, 10), ("[]".to_owned(), n));
            assert_eq!(page(r, u64::MAX, 10), ("[]".to_owned(), n));
            // Text slices join to the synchronous text.
            for max in [0, 7, 4096] {
                let (mut joined, mut off) = (String::new(), 0);
                while off < bytes {
                    let mut next = 0;
                    expect(
                        dsh_result_text(r, off, max, &mut out, &mut next),
                        DSH_OK,
                        "",
                    );
                    assert!(next > off);
                    joined.push_str(&take(out).unwrap());
                    off = next;
                }
                assert_eq!(joined, sync);
            }
            let mut next = 0;
            expect(
                dsh_result_text(r, bytes + 5, 10, &mut out, &mut next),
                DSH_OK,
                "",
            );
            assert_eq!((take(out).unwrap(), next), (String::new(), bytes));
            expect(
                dsh_result_page(r, 0, 1, null_mut(), &mut next),
                DSH_INVALID_ARGUMENT,
                "out_json",
            );
            expect(dsh_result_free(r), DSH_OK, "");
            expect(dsh_result_free(r), DSH_CLOSED, "already closed");
            expect(dsh_result_count(r, &mut n, null_mut()), DSH_CLOSED, "");
            expect(dsh_result_free(null_mut()), DSH_OK, "");
            expect(
                dsh_result_count(store.cast(), &mut n, null_mut()),
                DSH_INVALID_ARGUMENT,
                "not a dsh_result",
            );

            // An empty suffix, and a missing session (no result made).
            let st = dsh_store_read_from_paged_ex(
                store,
                c("s1").as_ptr(),
                1000,
                &mut r,
                null_mut(),
                null_mut(),
            );
            assert_eq!(st, DSH_OK);
            expect(dsh_result_count(r, &mut n, null_mut()), DSH_OK, "");
            assert_eq!(n, 0);
            assert_eq!(page(r, 0, 10), ("[]".to_owned(), 0));
            expect(dsh_result_head(r, &mut out), DSH_OK, "");
            assert_eq!(take_json(out)["events"], serde_json::json!([]));
            expect(dsh_result_free(r), DSH_OK, "");
            let mut r2 = null_mut::<dsh_result>();
            let st = dsh_store_inspect_paged_ex(
                store,
                c("nope").as_ptr(),
                &mut r2,
                null_mut(),
                null_mut(),
            );
            assert_eq!(st, DSH_NOT_FOUND);
            assert!(r2.is_null());
            expect(dsh_store_close(store), DSH_OK, "");
        }
    }

    #[test]
    fn text_slices_end_on_character_boundaries() {
        let view = SessionView {
            header: crate::model::header::SessionHeader::parse(
                r#"{"id":"é€😀"}"#,
                crate::model::header::HeaderSource::Host,
            )
            .unwrap(),
            events: Vec::new(),
        };
        let r = dsh_result::of_view(&view);
        assert_eq!(r.text, view.to_json());
        let text = r.text.clone();
        let p = Box::into_raw(Box::new(r));
        handles::register(p, Kind::Result);
        LIVE.fetch_add(1, Ordering::Relaxed);
        let mut out = null_mut::<c_char>();
        let mut next = 0;
        unsafe {
            let mut off = 0;
            let mut joined = String::new();
            while off < text.len() as u64 {
                expect(dsh_result_text(p, off, 1, &mut out, &mut next), DSH_OK, "");
                joined.push_str(&take(out).unwrap());
                off = next;
            }
            assert_eq!(joined, text);
            let inside = text.find('€').unwrap() as u64 + 1;
            expect(
                dsh_result_text(p, inside, 4, &mut out, &mut next),
                DSH_INVALID_ARGUMENT,
                "inside a UTF-8",
            );
            expect(dsh_result_free(p), DSH_OK, "");
        }
    }
}
