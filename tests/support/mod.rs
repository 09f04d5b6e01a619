//! Shared helpers for integration tests: temp dirs, fixture copies, and the
//! upstream dump format (MANIFEST.md "Dump format").
#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

pub mod conv;
pub mod pg;
pub mod race;
pub mod rng;

/// `../shared/fixtures/upstream`, resolved from the crate root (overridable
/// with `DSH_FIXTURES`).
pub fn fixtures_dir() -> PathBuf {
    if let Ok(p) = std::env::var("DSH_FIXTURES") {
        return PathBuf::from(p);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/upstream")
}

/// `../shared/bench`.
pub fn bench_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench")
}

/// Cleanups run when a [`TempDir`] is dropped, by key.
type Cleanups = std::sync::Mutex<Vec<(String, Box<dyn FnOnce() + Send>)>>;

/// A temporary directory (mode 0700) removed on drop, with cleanups of
/// things that belong to it elsewhere (a PostgreSQL test schema).
pub struct TempDir(PathBuf, Cleanups);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let p = std::env::temp_dir().join(format!(
            "dsh-test-{tag}-{}-{}-{nanos}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&p).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o700)).unwrap();
        TempDir(p, Default::default())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Runs `cleanup` when the directory is dropped; once per `key`.
    pub fn on_drop_once(&self, key: &str, cleanup: impl FnOnce() + Send + 'static) {
        let mut hooks = self.1.lock().unwrap();
        if !hooks.iter().any(|(k, _)| k == key) {
            hooks.push((key.to_string(), Box::new(cleanup)));
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        for (_, hook) in self.1.get_mut().map(std::mem::take).unwrap_or_default() {
            hook();
        }
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Copies `src` (file or tree) to `dst`, dirs 0700 and files 0600, as the
/// original wrote them (git does not keep modes).
pub fn copy_tree(src: &Path, dst: &Path) {
    let meta = fs::metadata(src).unwrap();
    if meta.is_dir() {
        fs::create_dir_all(dst).unwrap();
        let mut entries: Vec<_> = fs::read_dir(src).unwrap().map(|e| e.unwrap()).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            copy_tree(&e.path(), &dst.join(e.file_name()));
        }
        fs::set_permissions(dst, fs::Permissions::from_mode(0o700)).unwrap();
    } else {
        fs::copy(src, dst).unwrap();
        fs::set_permissions(dst, fs::Permissions::from_mode(0o600)).unwrap();
    }
}

/// A private copy of a fixture path (relative to the fixtures dir) inside a
/// new temp dir. Returns the temp dir and the copy's path.
pub fn fixture_copy(rel: &str) -> (TempDir, PathBuf) {
    let tmp = TempDir::new("fixture");
    let src = fixtures_dir().join(rel);
    let name = src.file_name().unwrap().to_owned();
    let dst = tmp.path().join(name);
    copy_tree(&src, &dst);
    (tmp, dst)
}

pub fn read_json(path: &Path) -> Value {
    serde_json::from_str(
        &fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

/// `cases.json`.
pub fn cases() -> Value {
    read_json(&fixtures_dir().join("cases.json"))
}

/// The root entry named `name` in `cases.json`.
pub fn case_root(name: &str) -> Value {
    cases()["roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no root {name} in cases.json"))
        .clone()
}

/// `expected-<name>.json`.
pub fn expected(name: &str) -> Value {
    read_json(&fixtures_dir().join(format!("expected-{name}.json")))
}

/// Resolves the `sameAs` references of one session entry of an expected
/// file, returning the fully spelled value for `key` (`inspect`, `load`,
/// `readFrom.<k>`, `afterLoad.readRaw`, `afterLoad.readFrom0`).
pub fn resolve(session: &Value, key: &str) -> Value {
    let v = lookup(session, key);
    resolve_value(session, v)
}

fn lookup<'a>(session: &'a Value, key: &str) -> &'a Value {
    let mut v = session;
    for part in key.split('.') {
        v = &v[part];
    }
    v
}

fn resolve_value(session: &Value, v: &Value) -> Value {
    let Some(same) = v.get("sameAs").and_then(Value::as_str) else {
        return v.clone();
    };
    if let Some(rest) = same.strip_prefix("readFrom.0.ok with events filtered to seq >= ") {
        let k: u64 = rest.trim().parse().unwrap();
        let base = resolve(session, "readFrom.0");
        let ok = &base["ok"];
        let events: Vec<Value> = ok["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["seq"].as_u64().unwrap() >= k)
            .cloned()
            .collect();
        return serde_json::json!({"ok": {"meta": ok["meta"].clone(), "events": events}});
    }
    // `x.ok` references yield the ok payload; wrap it back as a result.
    if let Some(path) = same.strip_suffix(".ok") {
        let base = resolve(session, path);
        return serde_json::json!({"ok": base["ok"].clone()});
    }
    resolve(session, same)
}

/// Parses JSON text produced by the library into a value for comparison
/// (object key order is ignored by `Value` equality).
pub fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Replaces a root path inside error messages by `<ROOT>`, as the dumps do.
pub fn redact(message: &str, root: &Path) -> String {
    message.replace(&root.display().to_string(), "<ROOT>")
}

/// The store configuration a fixture root's case describes (`kind`,
/// `compression`, `packChunks` of `cases.json`), for its copy at `copy`.
pub fn case_store_config(case: &Value, copy: &Path) -> dsh_persist::store::StoreConfig {
    use dsh_persist::store::{BackendConfig, Compression, JsonlConfig, SqliteConfig};
    let backend = if case["kind"] == "sqlite" {
        BackendConfig::Sqlite(SqliteConfig::new(copy.display().to_string()))
    } else {
        let mut c = JsonlConfig::new(copy);
        c.compression = if case["compression"] == "none" {
            Compression::None
        } else {
            Compression::Zstd
        };
        c.pack_chunks = case["packChunks"].as_bool().unwrap_or(true);
        BackendConfig::Jsonl(c)
    };
    dsh_persist::store::StoreConfig::with_backend(backend)
}

/// `n` pseudo-random lowercase letters (xorshift, fixed seed): text zstd
/// cannot shrink, for frames that must stay large.
pub fn incompressible_text(n: usize) -> String {
    let mut out = String::with_capacity(n);
    let mut x: u64 = 0x2545F4914F6CDD1D;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push(char::from(b'a' + (x % 26) as u8));
    }
    out
}

/// Appends turn 1 whole (`turn/start`, then `turn/end` completed) to `live`.
pub fn append_whole_turn(live: &dsh_persist::store::LiveSession) {
    let opts = dsh_persist::store::AppendOptions::default();
    live.append("turn/start", r#"{"turn":1}"#, &opts).unwrap();
    live.append(
        "turn/end",
        r#"{"turn":1,"reason":{"kind":"completed"}}"#,
        &opts,
    )
    .unwrap();
}

/// Makes a FIFO (mode 0600) at `path`.
pub fn mkfifo(path: &Path) {
    use rustix::fs::{CWD, FileType, Mode};
    rustix::fs::mknodat(CWD, path, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
}

/// The first `n` events of the bench workload (a streamed conversation:
/// runs of chunk deltas, which a store packs into one row or record each).
pub fn workload(n: usize) -> Vec<dsh_persist::model::event::Event> {
    use std::io::BufRead;
    let path = bench_dir().join("workload-100k.jsonl.zst");
    let file = fs::File::open(&path).unwrap();
    let decoder = zstd::stream::read::Decoder::new(file).unwrap();
    std::io::BufReader::new(decoder)
        .lines()
        .map(|l| l.unwrap())
        .filter(|l| !l.is_empty())
        .take(n)
        .map(|l| dsh_persist::model::event::Event::parse(&l).unwrap())
        .collect()
}

/// The log file of raw JSONL session `id` under the store `root` (found
/// by walking the tree).
pub fn jsonl_log_of(root: &Path, id: &str) -> PathBuf {
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else if path.parent().and_then(|p| p.file_name()) == Some(id.as_ref())
                && path.file_name() == Some("session.jsonl".as_ref())
            {
                return path;
            }
        }
    }
    panic!("no log of {id} under {}", root.display())
}

/// Puts a line that does not parse after the first two lines (the header
/// and the first record) of the raw JSONL log of `id` under the store
/// `root`: a log that `load` refuses, and that a backward walk meets.
pub fn break_raw_log(root: &Path, id: &str) {
    let path = jsonl_log_of(root, id);
    let text = fs::read_to_string(&path).unwrap();
    let second = text.match_indices('\n').nth(1).unwrap().0 + 1;
    fs::write(
        &path,
        format!("{}not json\n{}", &text[..second], &text[second..]),
    )
    .unwrap();
}
