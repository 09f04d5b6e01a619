//! Helpers for the `dsh-persist` binary tests: running it, opening fixture
//! copies with the right store flag, hashing trees.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::support::{TempDir, case_root, copy_tree, fixtures_dir};

/// What one run of the binary produced.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout parsed as JSON (panics with both streams on failure).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}); code {}\nstdout: {}\nstderr: {}",
                self.code, self.stdout, self.stderr
            )
        })
    }

    /// The `--json` error object on stderr: exactly one line, one object
    /// `{"error":{"kind":K,"message":M}}`. Returns (kind, message).
    pub fn error(&self) -> (String, String) {
        let line = self.stderr.trim_end();
        assert!(!line.contains('\n'), "stderr is not one line: {line}");
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("stderr is not JSON ({e}): {line}"));
        let obj = v.as_object().unwrap();
        assert_eq!(obj.len(), 1, "{line}");
        let err = v["error"].as_object().expect("error object");
        assert_eq!(err.len(), 2, "{line}");
        (
            err["kind"].as_str().unwrap().to_string(),
            err["message"].as_str().unwrap().to_string(),
        )
    }
}

/// Runs the binary with `args`.
pub fn run<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    run_env(args, &[])
}

/// Runs the binary with `args` and environment changes (`None` removes).
pub fn run_env<I, S>(args: I, env: &[(&str, Option<&str>)]) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dsh-persist"));
    cmd.args(args);
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd.output().expect("run dsh-persist");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

/// A private copy of a fixture root (from `cases.json`) and the store flag
/// that opens it: `--jsonl`, `--jsonl-raw` or `--sqlite`.
pub struct FixtureStore {
    _tmp: TempDir,
    pub flag: &'static str,
    pub path: PathBuf,
    /// The path as written inside expected error messages (`<ROOT>`).
    pub root: PathBuf,
}

impl FixtureStore {
    pub fn new(case: &str) -> FixtureStore {
        let entry = case_root(case);
        let tmp = TempDir::new("cli");
        let src = fixtures_dir().join(entry["path"].as_str().unwrap());
        let (flag, path) = if entry["kind"] == "sqlite" {
            // The database file only: a stray `-wal`/`-shm` beside the
            // fixture (left by some other reader) is not part of it.
            let dir = tmp.path().join("db");
            std::fs::create_dir(&dir).unwrap();
            std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .unwrap();
            copy_tree(&src, &dir.join("sessions.db"));
            ("--sqlite", dir.join("sessions.db"))
        } else {
            let dst = tmp.path().join("root");
            copy_tree(&src, &dst);
            let flag = if entry["compression"] == "none" {
                "--jsonl-raw"
            } else {
                "--jsonl"
            };
            (flag, dst)
        };
        FixtureStore {
            _tmp: tmp,
            flag,
            root: path.clone(),
            path,
        }
    }

    /// `[flag, path]` for a command line.
    pub fn args(&self) -> Vec<String> {
        vec![self.flag.to_string(), self.path.display().to_string()]
    }

    /// Runs `dsh-persist --json SUB <store> REST...`.
    pub fn json(&self, sub: &str, rest: &[&str]) -> Run {
        let mut a = vec!["--json".to_string(), sub.to_string()];
        a.extend(self.args());
        a.extend(rest.iter().map(|s| s.to_string()));
        run(a)
    }

    /// Hashes of every file under the store (the database's directory for
    /// SQLite).
    pub fn hashes(&self) -> BTreeMap<String, String> {
        let base = if self.flag == "--sqlite" {
            self.path.parent().unwrap().to_path_buf()
        } else {
            self.path.clone()
        };
        tree_hashes(&base)
    }
}

/// sha256 of every file under `dir`, by relative path.
pub fn tree_hashes(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn walk(base: &Path, p: &Path, out: &mut BTreeMap<String, String>) {
    let meta = std::fs::symlink_metadata(p).unwrap();
    if meta.is_dir() {
        for e in std::fs::read_dir(p).unwrap() {
            walk(base, &e.unwrap().path(), out);
        }
    } else {
        let rel = p.strip_prefix(base).unwrap().display().to_string();
        let value = if meta.is_file() {
            format!("{:x}", Sha256::digest(std::fs::read(p).unwrap()))
        } else if meta.is_symlink() {
            format!("link to {}", std::fs::read_link(p).unwrap().display())
        } else {
            // A FIFO or socket: its kind, never read (a read of a FIFO
            // would wait for a writer).
            format!("{:?}", meta.file_type())
        };
        out.insert(rel, value);
    }
}

/// Sorted ids of an `{ok: [headers]}` list entry.
pub fn ids_of(headers: &Value) -> Vec<String> {
    let mut ids: Vec<String> = headers
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}
