//! Compiles and runs the C programs in `tests/c/` against the cdylib that
//! `cargo test` just built (STYLE-ffi §13), and checks symbol parity between
//! the header and the library's exports.
//!
//! Flags: `-std=c11 -Wall -Wextra -Werror -pedantic`, plus
//! `-fsanitize=address,undefined` when the compiler and runtime support it
//! (with LeakSanitizer on: a string not released by `dsh_free` fails the
//! test). Set `DSH_C_SANITIZE=0` to build without sanitizers (e.g. to run
//! the binaries under valgrind; `DSH_C_KEEP=1` keeps them and prints where).
//! `CC` / `CXX` pick the compilers (default `cc` / `c++`).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use support::TempDir;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn lib_file_name() -> String {
    format!(
        "{}dsh_persist{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// The directory holding the cdylib built for this test run: cargo builds
/// the library's crate types into `target/<profile>/deps`, next to this
/// test binary. It also gets the SONAME link (`with_soname_link`).
fn lib_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let deps = exe.parent().unwrap().to_path_buf();
        if deps.join(lib_file_name()).exists() {
            return with_soname_link(deps);
        }
        // Fallback: build it (e.g. when run through a tool that skips the
        // cdylib).
        let cargo = option_env!("CARGO").unwrap_or("cargo");
        let status = Command::new(cargo)
            .args(["build", "--lib"])
            .current_dir(root())
            .status()
            .expect("run cargo build --lib");
        assert!(status.success(), "cargo build --lib failed");
        let debug = deps.parent().unwrap().to_path_buf();
        assert!(
            debug.join(lib_file_name()).exists(),
            "no {} in {} or {}",
            lib_file_name(),
            deps.display(),
            debug.display()
        );
        with_soname_link(debug)
    })
    .clone()
}

/// A program linked with `-ldsh_persist` records the library's SONAME
/// (`libdsh_persist.so.0.M`, set by build.rs) and the loader looks for a
/// file of that name; cargo writes only `libdsh_persist.so`, so the link an
/// install makes is made here too.
fn with_soname_link(dir: PathBuf) -> PathBuf {
    let soname = env!("DSH_PERSIST_SONAME");
    if !soname.is_empty() {
        let link = dir.join(soname);
        let _ = std::fs::remove_file(&link);
        #[cfg(unix)]
        std::os::unix::fs::symlink(lib_file_name(), &link).expect("create the SONAME link");
    }
    dir
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

fn cxx() -> String {
    std::env::var("CXX").unwrap_or_else(|_| "c++".into())
}

const WARNINGS: &[&str] = &["-Wall", "-Wextra", "-Werror", "-pedantic"];
const SANITIZERS: &str = "-fsanitize=address,undefined";

/// Whether `-fsanitize=address,undefined` builds and runs here.
fn sanitizers_work() -> bool {
    static WORKS: OnceLock<bool> = OnceLock::new();
    *WORKS.get_or_init(|| {
        if std::env::var("DSH_C_SANITIZE").is_ok_and(|v| v == "0") {
            return false;
        }
        let dir = TempDir::new("cc-probe");
        let src = dir.path().join("probe.c");
        std::fs::write(
            &src,
            "#include <stdlib.h>\nint main(void){char*p=malloc(4);free(p);return 0;}\n",
        )
        .unwrap();
        let exe = dir.path().join("probe");
        let built = Command::new(cc())
            .arg(SANITIZERS)
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .output()
            .is_ok_and(|o| o.status.success());
        built && run_built(&exe).output().is_ok_and(|o| o.status.success())
    })
}

fn show(what: &str, out: &Output) -> String {
    format!(
        "{what}: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A command running a program linked against the test's cdylib. `cargo
/// test` puts `target/<profile>` first on `LD_LIBRARY_PATH`, which outranks
/// the program's rpath; a library left there by an older build would be
/// loaded instead, so the path is set to the fresh library's directory.
fn run_built(exe: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.env("LD_LIBRARY_PATH", lib_dir());
    cmd
}

/// Compiles `tests/c/<name>.c` into `dir` and returns the executable.
fn compile_c(name: &str, dir: &Path) -> PathBuf {
    let src = root().join("tests/c").join(format!("{name}.c"));
    let exe = dir.join(name);
    let lib = lib_dir();
    let mut cmd = Command::new(cc());
    cmd.arg("-std=c11")
        .args(WARNINGS)
        .arg("-g")
        .arg("-I")
        .arg(root().join("include"))
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-ldsh_persist")
        .arg("-pthread");
    if sanitizers_work() {
        cmd.arg(SANITIZERS).arg("-fno-omit-frame-pointer");
    }
    let out = cmd.output().expect("run the C compiler");
    assert!(
        out.status.success(),
        "{}",
        show(&format!("compile {name}.c"), &out)
    );
    exe
}

/// Compiles and runs one C test program with a scratch dir and `extra` args.
fn run_c(name: &str, extra: &[&Path]) {
    let dir = TempDir::new(name);
    let exe = compile_c(name, dir.path());
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let mut cmd = run_built(&exe);
    cmd.arg(&scratch).args(extra);
    // Leaks fail the run; a Rust panic's backtrace helps if one slips out.
    cmd.env(
        "ASAN_OPTIONS",
        "detect_leaks=1:abort_on_error=0:exitcode=23",
    )
    .env("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    .env("RUST_BACKTRACE", "1");
    let out = cmd.output().expect("run the C test");
    assert!(
        out.status.success(),
        "{}",
        show(&format!("{name} (sanitizers: {})", sanitizers_work()), &out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("{name}: ok")), "{stdout}");
    if std::env::var("DSH_C_KEEP").is_ok_and(|v| v == "1") {
        let keep = std::env::temp_dir().join(format!("dsh-c-{name}"));
        std::fs::copy(&exe, &keep).unwrap();
        eprintln!("kept {}", keep.display());
    }
}

#[test]
fn c_version_and_last_error() {
    run_c("test_version", &[]);
}

#[test]
fn c_store() {
    run_c("test_store", &[]);
}

#[test]
fn c_manage() {
    run_c("test_manage", &[]);
}

#[test]
fn c_catalog_and_async() {
    run_c("test_catalog_async", &[]);
}

#[test]
fn c_session() {
    run_c("test_session", &[]);
}

#[test]
fn c_plan() {
    run_c("test_plan", &[]);
}

#[test]
fn c_threads() {
    run_c("test_threads", &[]);
}

/// Stores holding ids a C string cannot carry, as the original writes
/// them: a raw JSONL root with `a\u0000b` and `\ud800x`, and a SQLite file
/// whose `sessions`/`events` rows carry `a\u0000b` (better-sqlite3 binds
/// TEXT with its length).
#[test]
fn c_id_json() {
    let dir = TempDir::new("c-id-json");
    let root = dir.path().join("root");
    for (seg, id_json) in [("a~0000b", r#""a\u0000b""#), ("~D800x", r#""\ud800x""#)] {
        let sdir = root.join("--w--").join(seg);
        std::fs::create_dir_all(&sdir).unwrap();
        std::fs::write(
            sdir.join("session.jsonl"),
            format!(
                "{{\"type\":\"session\",\"version\":0,\"id\":{id_json},\"createdAt\":1,\"cwd\":\"/w\",\"delegationDepth\":0}}\n\
                 {{\"type\":\"turn/start\",\"seq\":0,\"time\":1,\"data\":{{\"turn\":1}}}}\n\
                 {{\"type\":\"turn/end\",\"seq\":1,\"time\":2,\"data\":{{\"turn\":1,\"reason\":{{\"kind\":\"completed\"}}}}}}\n"
            ),
        )
        .unwrap();
    }
    let db = dir.path().join("nul.db");
    {
        use dsh_persist::model::event::Event;
        use dsh_persist::model::header::SessionHeader;
        use dsh_persist::store::{BackendConfig, SqliteConfig, Store, StoreConfig};
        let store = Store::open(StoreConfig::with_backend(BackendConfig::Sqlite(
            SqliteConfig::new(db.display().to_string()),
        )))
        .unwrap();
        store.create(SessionHeader::new("ab", 1)).unwrap();
        let events = [
            r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#,
            r#"{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}"#,
        ]
        .map(|e| Event::parse(e).unwrap());
        store.append("ab", events.to_vec()).unwrap();
        store.close().unwrap();
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        conn.execute("UPDATE events SET session_id = ?1", ["a\0b"])
            .unwrap();
        conn.execute("UPDATE sessions SET id = ?1", ["a\0b"])
            .unwrap();
    }
    run_c("test_id_json", &[&root, &db]);
}

#[test]
fn c_upstream_fixtures() {
    let (_packed_dir, packed) = support::fixture_copy("jsonl/jsonl-zstd-packed");
    let (_refused_dir, refused) = support::fixture_copy("jsonl/jsonl-zstd-refused");
    run_c("test_fixture", &[&packed, &refused]);
}

#[test]
fn header_compiles_as_cxx_and_twice() {
    let dir = TempDir::new("cxx");
    let exe = dir.path().join("cxx_include");
    let lib = lib_dir();
    let out = Command::new(cxx())
        .args(["-x", "c++", "-std=c++17"])
        .args(WARNINGS)
        .arg("-I")
        .arg(root().join("include"))
        .arg(root().join("tests/c/cxx_include.cpp"))
        .args(["-x", "none"])
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-ldsh_persist")
        .output()
        .expect("run the C++ compiler");
    assert!(
        out.status.success(),
        "{}",
        show("compile cxx_include.cpp", &out)
    );
    let run = run_built(&exe).output().unwrap();
    assert!(run.status.success(), "{}", show("cxx_include", &run));
}

#[test]
fn header_compiles_standalone_as_c11() {
    let dir = TempDir::new("c11");
    let src = dir.path().join("only_header.c");
    std::fs::write(
        &src,
        "#include \"dsh_persist.h\"\n#include \"dsh_persist.h\"\nint dsh_test_unused;\n",
    )
    .unwrap();
    let out = Command::new(cc())
        .arg("-std=c11")
        .args(WARNINGS)
        .arg("-fsyntax-only")
        .arg("-I")
        .arg(root().join("include"))
        .arg(&src)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show("header as C11", &out));
}

/// The `dsh_*` function names declared in the committed header.
fn header_functions() -> Vec<String> {
    let header = std::fs::read_to_string(root().join("include/dsh_persist.h")).unwrap();
    let mut names = Vec::new();
    for line in header.lines() {
        // Declarations start at column 0 with their return type.
        if line.starts_with(' ') || line.starts_with('/') || line.starts_with('#') {
            continue;
        }
        if let Some(open) = line.find('(') {
            let name = line[..open].rsplit([' ', '*']).next().unwrap_or("");
            if name.starts_with("dsh_") {
                names.push(name.to_owned());
            }
        }
    }
    names.sort();
    names
}

#[test]
fn header_functions_equal_exported_symbols() {
    let lib = lib_dir().join(lib_file_name());
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("run nm");
    assert!(out.status.success(), "{}", show("nm", &out));
    let mut exported: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let (kind, name) = (parts.nth(1)?, parts.next()?);
            (kind == "T" && name.starts_with("dsh_")).then(|| name.to_owned())
        })
        .collect();
    exported.sort();
    let declared = header_functions();
    // 36 of SPEC and its additions, 4 of session management and 6 of the
    // catalog reads (issue 19), 27 of issue 18 (cancel, error, _ex), 7 _ex
    // forms of the issue-19 calls that touch the disk, 9 of the paged
    // results (3 _paged_ex reads, 6 dsh_result_*), 5 `_id_json` forms (ids a
    // C string cannot carry) and 5 `_ex`/`_paged_ex` forms of them for the
    // async wrappers.
    assert_eq!(
        declared.len(),
        36 + 4 + 6 + 27 + 7 + 9 + 5 + 5,
        "{declared:?}"
    );
    assert_eq!(
        exported, declared,
        "the cdylib's exported dsh_* functions must be exactly the header's"
    );
}

/// The sanitizer run can fail: a result string that is never passed to
/// `dsh_free` is reported by LeakSanitizer and fails the program.
#[test]
fn a_leaked_result_string_is_detected() {
    if !sanitizers_work() {
        eprintln!("sanitizers unavailable here; leak detection not checked");
        return;
    }
    let dir = TempDir::new("leak");
    let src = dir.path().join("leak.c");
    std::fs::write(
        &src,
        // Many strings are dropped, then the stack is scrubbed, so no stale
        // copy of a pointer can make a block look reachable to the scan.
        concat!(
            "#include <string.h>\n",
            "#include \"dsh_persist.h\"\n",
            "__attribute__((noinline)) static int leak_some(void) {\n",
            "    int bad = 0;\n",
            "    for (int i = 0; i < 64; i++) {\n",
            "        char *out = 0;\n",
            "        if (dsh_plan_project(\"[]\", &out) != DSH_OK || out == 0) bad = 1;\n",
            "        out = 0; /* dropped, never passed to dsh_free */\n",
            "    }\n",
            "    return bad;\n",
            "}\n",
            "__attribute__((noinline)) static void scrub_stack(void) {\n",
            "    volatile char buf[65536];\n",
            "    memset((char *)buf, 0, sizeof buf);\n",
            "}\n",
            "int main(void) { int r = leak_some(); scrub_stack(); return r ? 2 : 0; }\n",
        ),
    )
    .unwrap();
    let exe = dir.path().join("leak");
    let lib = lib_dir();
    let out = Command::new(cc())
        .arg("-std=c11")
        .args(WARNINGS)
        .arg(SANITIZERS)
        .arg("-I")
        .arg(root().join("include"))
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-ldsh_persist")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show("compile leak.c", &out));
    let run = run_built(&exe)
        .env("ASAN_OPTIONS", "detect_leaks=1")
        .output()
        .unwrap();
    assert!(!run.status.success(), "{}", show("leak (must fail)", &run));
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("LeakSanitizer"),
        "{}",
        show("leak", &run)
    );
}

/// `examples/host.c` builds with the test flags and its crash + resume
/// scenario works: the second run sees the synthetic closers and the plan
/// state folded from the log.
#[test]
fn example_host_crash_then_resume() {
    let dir = TempDir::new("host");
    let exe = dir.path().join("host");
    let lib = lib_dir();
    let mut cmd = Command::new(cc());
    cmd.arg("-std=c11")
        .args(WARNINGS)
        .arg("-I")
        .arg(root().join("include"))
        .arg(root().join("examples/host.c"))
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-ldsh_persist")
        .arg("-pthread");
    if sanitizers_work() {
        cmd.arg(SANITIZERS);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", show("compile host.c", &out));
    let store = dir.path().join("store");
    // The crash run ends with _exit(0): no leak check there (nothing is
    // released on purpose).
    let crash = run_built(&exe)
        .arg("crash")
        .arg(&store)
        .env("ASAN_OPTIONS", "detect_leaks=0")
        .output()
        .unwrap();
    assert!(crash.status.success(), "{}", show("host crash", &crash));
    let crash_out = String::from_utf8_lossy(&crash.stdout);
    assert!(
        crash_out.contains("CRASH: exiting without closing"),
        "{crash_out}"
    );
    let resume = run_built(&exe)
        .arg("resume")
        .arg(&store)
        .env("ASAN_OPTIONS", "detect_leaks=1")
        .output()
        .unwrap();
    assert!(resume.status.success(), "{}", show("host resume", &resume));
    let text = String::from_utf8_lossy(&resume.stdout);
    for needle in [
        "\"id\":\"interrupted-tool-result-call-3-28\"",
        "synthetic tool/result for call-3 tells the model: The tool call was interrupted after it was recorded",
        "repair closed turn 3: turn/end {kind: interrupted}",
        "plan      : after resume {\"active\":true}",
        "plan      : exit_answer  {\"approved\":true}",
        "plan      : pre_step     {\"appended\":true}",
        "plan      : now          {\"active\":false}",
        "closed; a cold load returns 44 events",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    // A second crash run on the same store refuses to overwrite the session.
    let again = run_built(&exe)
        .arg("crash")
        .arg(&store)
        .env("ASAN_OPTIONS", "detect_leaks=0")
        .output()
        .unwrap();
    assert_eq!(
        again.status.code(),
        Some(1),
        "{}",
        show("host crash again", &again)
    );
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
}
