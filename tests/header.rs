//! The C header contract (STYLE-ffi §9, §10; SPEC §11):
//! - `include/dsh_persist.h` is exactly what cbindgen generates from the
//!   committed `cbindgen.toml` (`DSH_BLESS=1` rewrites it);
//! - the version macros equal `Cargo.toml`'s version;
//! - every SPEC §11 name is declared, and the `dsh_status` values are the
//!   SPEC's.
//!
//! Symbol parity with the built library lives in `tests/c_abi.rs`, which
//! builds it.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The header cbindgen generates now (once per test process).
fn generate() -> String {
    static HEADER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HEADER.get_or_init(generate_uncached).clone()
}

fn generate_uncached() -> String {
    let config = cbindgen::Config::from_file(root().join("cbindgen.toml"))
        .expect("cbindgen.toml must parse");
    let bindings = cbindgen::Builder::new()
        .with_crate(root())
        .with_config(config)
        .generate()
        .expect("cbindgen must generate the header");
    let mut bytes = Vec::new();
    bindings.write(&mut bytes);
    String::from_utf8(bytes).expect("the header is UTF-8")
}

fn header_path() -> PathBuf {
    root().join("include").join("dsh_persist.h")
}

fn committed() -> String {
    std::fs::read_to_string(header_path()).unwrap_or_default()
}

#[test]
fn header_is_fresh() {
    let fresh = generate();
    let path = header_path();
    if std::env::var_os("DSH_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &fresh).expect("write the header");
        return;
    }
    let old = committed();
    if old != fresh {
        let line = old
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| old.lines().count().min(fresh.lines().count()));
        panic!(
            "{} is stale (first difference at line {}); regenerate it with `DSH_BLESS=1 cargo test --test header` and commit it",
            display(&path),
            line + 1
        );
    }
}

fn display(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

fn macro_value(header: &str, name: &str) -> String {
    let prefix = format!("#define {name} ");
    header
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("the header defines no {name}"))
        .trim()
        .to_owned()
}

#[test]
fn version_macros_match_cargo_toml() {
    let header = generate();
    let major: u64 = env!("CARGO_PKG_VERSION_MAJOR").parse().unwrap();
    let minor: u64 = env!("CARGO_PKG_VERSION_MINOR").parse().unwrap();
    let patch: u64 = env!("CARGO_PKG_VERSION_PATCH").parse().unwrap();
    let hint = "update after_includes in cbindgen.toml, then DSH_BLESS=1 cargo test --test header";
    assert_eq!(
        macro_value(&header, "DSH_PERSIST_VERSION_MAJOR"),
        major.to_string(),
        "{hint}"
    );
    assert_eq!(
        macro_value(&header, "DSH_PERSIST_VERSION_MINOR"),
        minor.to_string(),
        "{hint}"
    );
    assert_eq!(
        macro_value(&header, "DSH_PERSIST_VERSION_PATCH"),
        patch.to_string(),
        "{hint}"
    );
    assert_eq!(
        macro_value(&header, "DSH_PERSIST_VERSION_STRING"),
        format!("\"{}\"", env!("CARGO_PKG_VERSION")),
        "{hint}"
    );
    // The derived number is checked against dsh_version() in tests/c/test_version.c.
}

/// The names SPEC §11 fixes, plus this crate's documented additions.
pub const SPEC_FUNCTIONS: &[&str] = &[
    "dsh_version",
    "dsh_last_error",
    "dsh_free",
    "dsh_store_open",
    "dsh_store_close",
    "dsh_store_locate",
    "dsh_store_create",
    "dsh_store_append",
    "dsh_store_load",
    "dsh_store_inspect",
    "dsh_store_read_from",
    "dsh_store_read_raw",
    "dsh_store_list",
    "dsh_store_list_snapshots",
    "dsh_session_start",
    "dsh_session_resume",
    "dsh_session_fork",
    "dsh_session_append",
    "dsh_session_flush",
    "dsh_session_events",
    "dsh_session_header",
    "dsh_session_messages",
    "dsh_session_background_error",
    "dsh_session_close",
    "dsh_plan_new",
    "dsh_plan_free",
    "dsh_plan_get",
    "dsh_plan_set",
    "dsh_plan_pre_step",
    "dsh_plan_section",
    "dsh_plan_command",
    "dsh_plan_exit_check",
    "dsh_plan_exit_answer",
    "dsh_plan_project",
];

/// Additions beyond SPEC §11 (documented in the header and the README).
pub const ADDED_FUNCTIONS: &[&str] = &[
    "dsh_last_error_code",
    // Frees a session whose close failed (reliability D16: a failed close
    // keeps the handle valid and retryable; this gives it up).
    "dsh_session_free",
    // Session management, the write half (issue 19).
    "dsh_store_delete",
    "dsh_store_prune",
    "dsh_store_salvage",
    "dsh_store_import",
    // The catalog reads (issue 19): rich listing, search, export, follow.
    "dsh_store_list_summaries",
    "dsh_store_search",
    "dsh_store_export",
    "dsh_follow_open",
    "dsh_follow_next",
    "dsh_follow_close",
    // Issue 18: cancel tokens, error objects for calls made on other
    // threads, and the `_ex` form of every call that may touch the disk.
    "dsh_cancel_new",
    "dsh_cancel_cancel",
    "dsh_cancel_free",
    "dsh_error_status",
    "dsh_error_message",
    "dsh_error_code",
    "dsh_error_free",
    "dsh_store_open_ex",
    "dsh_store_close_ex",
    "dsh_store_create_ex",
    "dsh_store_append_ex",
    "dsh_store_load_ex",
    "dsh_store_inspect_ex",
    "dsh_store_read_from_ex",
    "dsh_store_read_raw_ex",
    "dsh_store_list_ex",
    "dsh_store_list_snapshots_ex",
    "dsh_session_start_ex",
    "dsh_session_resume_ex",
    "dsh_session_fork_ex",
    "dsh_session_flush_ex",
    "dsh_session_close_ex",
    "dsh_plan_set_ex",
    "dsh_plan_pre_step_ex",
    "dsh_plan_command_ex",
    "dsh_plan_exit_check_ex",
    "dsh_plan_exit_answer_ex",
    // The `_ex` forms of the issue-19 calls that touch the disk.
    "dsh_store_delete_ex",
    "dsh_store_prune_ex",
    "dsh_store_salvage_ex",
    "dsh_store_import_ex",
    "dsh_store_list_summaries_ex",
    "dsh_store_search_ex",
    "dsh_store_export_ex",
    // paged results of the large reads (issue 18, src/ffi/result.rs)
    "dsh_store_load_paged_ex",
    "dsh_store_inspect_paged_ex",
    "dsh_store_read_from_paged_ex",
    "dsh_result_count",
    "dsh_result_head",
    "dsh_result_page",
    "dsh_result_text",
    "dsh_result_free",
    "dsh_result_live",
    // Ids a C string cannot carry, given as JSON string text
    // (DIFFERENCES, exception 2).
    "dsh_store_load_id_json",
    "dsh_store_inspect_id_json",
    "dsh_store_read_from_id_json",
    "dsh_store_read_raw_id_json",
    "dsh_store_delete_id_json",
    // Their forms for the async wrappers (issue 18): paged, cancellable.
    "dsh_store_load_id_json_paged_ex",
    "dsh_store_inspect_id_json_paged_ex",
    "dsh_store_read_from_id_json_paged_ex",
    "dsh_store_read_raw_id_json_ex",
    "dsh_store_delete_id_json_ex",
];

/// The `dsh_*` function names the header declares (an identifier followed
/// by `(` outside comments).
fn declared_functions(header: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in header.lines() {
        let code = line.split("//").next().unwrap_or("");
        if code.trim_start().starts_with('*') || code.trim_start().starts_with("/*") {
            continue;
        }
        let bytes = code.as_bytes();
        let mut i = 0;
        while let Some(at) = code[i..].find("dsh_") {
            let start = i + at;
            let mut end = start;
            while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
                end += 1;
            }
            let starts_word = start == 0
                || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
            if starts_word && bytes.get(end) == Some(&b'(') {
                names.push(code[start..end].to_owned());
            }
            i = end.max(start + 1);
        }
    }
    names.sort();
    names.dedup();
    names
}

#[test]
fn header_declares_exactly_the_spec_functions_and_additions() {
    let header = generate();
    let mut want: Vec<String> = SPEC_FUNCTIONS
        .iter()
        .chain(ADDED_FUNCTIONS)
        .map(|s| s.to_string())
        .collect();
    want.sort();
    assert_eq!(declared_functions(&header), want);
}

#[test]
fn status_values_are_the_spec_values() {
    let header = generate();
    for (name, value) in [
        ("DSH_OK", 0),
        ("DSH_INVALID_ARGUMENT", 1),
        ("DSH_NOT_FOUND", 2),
        ("DSH_CONFLICT", 3),
        ("DSH_CORRUPTION", 4),
        ("DSH_FORMAT_UNSUPPORTED", 5),
        ("DSH_IO", 6),
        ("DSH_BUSY", 7),
        ("DSH_CLOSED", 8),
        ("DSH_INVARIANT", 9),
        ("DSH_UNSUPPORTED", 10),
        ("DSH_PANIC", 99),
    ] {
        let line = format!("{name} = {value},");
        assert!(
            header.lines().any(|l| l.trim() == line),
            "the header lacks `{line}`"
        );
    }
    assert!(header.contains("} dsh_status;"));
    for handle in ["dsh_store", "dsh_session", "dsh_plan"] {
        assert!(
            header.contains(&format!("typedef struct {handle} {handle};")),
            "{handle} must be an opaque typedef"
        );
    }
}

#[test]
fn the_header_declares_only_dsh_types() {
    let header = generate();
    for line in header
        .lines()
        .filter(|l| l.starts_with("typedef") || l.starts_with("enum ") || l.starts_with("struct "))
    {
        let name = line
            .trim_end_matches([';', '{', ' '])
            .rsplit([' ', '*'])
            .next()
            .unwrap_or("");
        assert!(
            name.starts_with("dsh_") || line.starts_with("typedef enum {"),
            "the header declares a non-ABI type: `{line}` (add it to [export] exclude in cbindgen.toml)"
        );
    }
}

#[test]
fn every_function_documents_ownership_and_threads() {
    // Each declaration is preceded by a doc comment; those with pointers say
    // who owns them, and every one says how threads may use it.
    let header = generate();
    let lines: Vec<&str> = header.lines().collect();
    for name in declared_functions(&header) {
        let decl = lines
            .iter()
            .position(|l| {
                l.contains(&format!("{name}("))
                    && !l.starts_with(' ')
                    && !l.starts_with("//")
                    && !l.starts_with("/*")
            })
            .unwrap();
        let mut doc = Vec::new();
        let mut i = decl;
        while i > 0 && lines[i - 1].trim_start().starts_with("//") {
            i -= 1;
            doc.push(lines[i]);
        }
        let doc = doc.join("\n");
        assert!(!doc.is_empty(), "{name} has no doc comment");
        let lower = doc.to_lowercase();
        assert!(
            lower.contains("thread") || lower.contains("overlap"),
            "{name}: its doc must state thread safety"
        );
        let signature: String = lines[decl..]
            .iter()
            .take_while(|l| !l.contains(';'))
            .chain(lines[decl..].iter().find(|l| l.contains(';')))
            .copied()
            .collect();
        if signature.contains('*') {
            assert!(
                lower.contains("null")
                    && (lower.contains("free")
                        || lower.contains("borrowed")
                        || lower.contains("owned")
                        || lower.contains("copied")),
                "{name}: its doc must state NULL rules and ownership of its pointers"
            );
        }
    }
}
