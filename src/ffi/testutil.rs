//! Helpers for the ffi unit tests: temp dirs, C strings, owned results,
//! conversation events, and a backend that fails or panics on demand.

use std::ffi::{CString, c_char};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use super::boundary::{Guarded, c_text, last_error_code_text, last_error_text};
use super::status::dsh_status;
use super::store::dsh_store;
use super::strings::dsh_free;
use crate::Result;
use crate::backend::{
    Backend, BackendKind, Expect, Location, RawArtifact, Revision, ScannedSuffix, StoredLog,
};
use crate::model::event::Event;
use crate::model::header::SessionHeader;
use crate::model::session_list::SessionList;
use crate::store::{Store, StoreConfig};

pub use crate::test_dir::TempDir;

/// A C string (test input).
pub fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// Invalid UTF-8, NUL-terminated.
pub const BAD_UTF8: &[u8] = b"\xff\xfe{}\0";

pub fn bad() -> *const c_char {
    BAD_UTF8.as_ptr().cast()
}

/// Copies an owned result and frees it with `dsh_free`; `None` for NULL.
pub fn take(p: *mut c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    let text = c_text(p);
    // SAFETY: `p` is an owned string from this library, freed once here.
    unsafe { dsh_free(p) };
    Some(text)
}

/// Parses an owned JSON result.
pub fn take_json(p: *mut c_char) -> serde_json::Value {
    serde_json::from_str(&take(p).expect("a result string")).unwrap()
}

/// The last error of this thread.
pub fn err() -> String {
    last_error_text()
}

/// The last error code of this thread.
pub fn code() -> String {
    last_error_code_text()
}

/// Asserts a status and, for failures, that the last error contains `needle`.
#[track_caller]
pub fn expect(status: dsh_status, want: dsh_status, needle: &str) {
    assert_eq!(status, want, "last error: {}", err());
    if want == dsh_status::DSH_OK {
        assert_eq!(err(), "");
    } else {
        assert!(
            err().contains(needle),
            "last error {:?} lacks {needle:?}",
            err()
        );
    }
}

/// A JSONL store config (raw, short write window) at `dir`.
pub fn jsonl_config(dir: &TempDir) -> String {
    format!(
        r#"{{"backend":"jsonl","root":{},"compression":"none","writeBatchMaxDelayMs":5}}"#,
        serde_json::to_string(&dir.path()).unwrap()
    )
}

/// Opens a JSONL store through the ABI.
pub fn open_jsonl(dir: &TempDir) -> *mut dsh_store {
    let mut store = std::ptr::null_mut();
    let config = c(&jsonl_config(dir));
    // SAFETY: valid C string and out pointer.
    let s = unsafe { super::store::dsh_store_open(config.as_ptr(), &mut store) };
    assert_eq!(s, dsh_status::DSH_OK, "{}", err());
    store
}

/// The events of one complete turn as (type, data, options) triples.
pub fn turn_events(turn: u64) -> Vec<(&'static str, String, Option<&'static str>)> {
    let append = Some(r#"{"surfaceOp":"append"}"#);
    vec![
        ("turn/start", format!(r#"{{"turn":{turn}}}"#), None),
        (
            "user/message",
            format!(
                r#"{{"id":"u{turn}","role":"user","content":[{{"type":"text","text":"question {turn}"}}],"source":{{"kind":"user"}}}}"#
            ),
            append,
        ),
        ("step/start", format!(r#"{{"turn":{turn},"step":1}}"#), None),
        (
            "assistant/message",
            format!(
                r#"{{"turn":{turn},"step":1,"message":{{"id":"a{turn}","role":"assistant","content":[{{"type":"text","text":"answer {turn}"}}],"source":{{"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"}}}}}}"#
            ),
            append,
        ),
        ("step/end", format!(r#"{{"turn":{turn},"step":1}}"#), None),
        (
            "turn/end",
            format!(r#"{{"turn":{turn},"reason":{{"kind":"completed"}}}}"#),
            None,
        ),
    ]
}

/// One turn as a complete-event JSON array for `dsh_store_append`, seqs from
/// `first_seq`.
pub fn turn_array(turn: u64, first_seq: u64) -> String {
    let items: Vec<String> = turn_events(turn)
        .into_iter()
        .enumerate()
        .map(|(i, (t, d, o))| {
            let op = if o.is_some() {
                r#","surfaceOp":"append""#
            } else {
                ""
            };
            format!(
                r#"{{"type":"{t}","seq":{},"time":1700000000000,"data":{d}{op}}}"#,
                first_seq + i as u64
            )
        })
        .collect();
    format!("[{}]", items.join(","))
}

/// What [`FaultyBackend::append`] does.
pub const PASS: u8 = 0;
pub const FAIL: u8 = 1;
pub const PANIC: u8 = 2;

/// Delegates to a real backend; `append` fails or panics on demand.
pub struct FaultyBackend {
    pub inner: Arc<dyn Backend>,
    pub mode: AtomicU8,
}

impl Backend for FaultyBackend {
    fn kind(&self) -> BackendKind {
        self.inner.kind()
    }
    fn locate(&self, h: &SessionHeader) -> Result<Option<Location>> {
        self.inner.locate(h)
    }
    fn list(&self) -> Result<SessionList> {
        self.inner.list()
    }
    fn list_snapshots(&self) -> Result<Vec<(SessionHeader, Revision)>> {
        self.inner.list_snapshots()
    }
    fn revision(&self, id: &str) -> Result<Option<Revision>> {
        self.inner.revision(id)
    }
    fn append(&self, h: &SessionHeader, events: &[Event], expect: Expect<'_>) -> Result<Revision> {
        match self.mode.load(Ordering::SeqCst) {
            FAIL => Err(crate::Error::io_msg("disk full (injected)")),
            PANIC => panic!("injected backend panic"),
            _ => self.inner.append(h, events, expect),
        }
    }
    fn read(&self, id: &str) -> Result<Option<StoredLog>> {
        self.inner.read(id)
    }
    fn read_from(&self, id: &str, from: u64) -> Result<Option<ScannedSuffix>> {
        self.inner.read_from(id, from)
    }
    fn commit_repair(&self, id: &str, log: &StoredLog, closers: &[Event]) -> Result<Revision> {
        self.inner.commit_repair(id, log, closers)
    }
    fn as_read_back(&self, events: &mut [Event]) {
        self.inner.as_read_back(events)
    }
    fn read_raw(&self, id: &str) -> Result<Option<RawArtifact>> {
        self.inner.read_raw(id)
    }
    fn lock_writer(&self, id: &str) -> Result<crate::backend::WriterLock> {
        self.inner.lock_writer(id)
    }
    fn writer_holder(&self, id: &str) -> Result<Option<crate::backend::WriterHolder>> {
        self.inner.writer_holder(id)
    }
}

/// A store handle over a [`FaultyBackend`] on a raw JSONL root; the backend
/// is returned to flip its mode.
pub fn faulty_store(dir: &TempDir) -> (*mut dsh_store, Arc<FaultyBackend>) {
    let config = StoreConfig::parse(&jsonl_config(dir)).unwrap();
    let real = crate::store::open_backend(&config.backend).unwrap();
    let backend = Arc::new(FaultyBackend {
        inner: real,
        mode: AtomicU8::new(PASS),
    });
    let store = Store::with_backend(backend.clone(), config, None);
    let handle = Box::new(dsh_store {
        inner: Guarded::new(store, "store"),
    });
    let p = Box::into_raw(handle);
    super::handles::register(p, super::handles::Kind::Store);
    (p, backend)
}
