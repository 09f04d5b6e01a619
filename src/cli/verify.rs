//! `verify`: checks every session and every file of a store and names
//! every defect, without modifying anything.
//!
//! Two passes:
//!
//! 1. The physical walk of the backend's read-only scan
//!    ([`JsonlBackend::scan`], [`SqliteBackend::scan`],
//!    [`PostgresBackend::scan`]): every project and session directory and
//!    every artifact of a JSONL root (each header read with the read path's
//!    rules), every `sessions` row and every session id present in
//!    `events` of a SQLite database or PostgreSQL schema. It does not go
//!    through `list`, so a session `list` cannot show (a corrupt header
//!    frame, a foreign version) is still checked and named.
//! 2. Each physically sound session is inspected (read, legacy conversion,
//!    full validation, closers computed in memory only), read from seq 0
//!    (the stored-prefix checks), and its raw read is asked whether a torn
//!    tail is waiting for a repair. `load` is never called, so no repair is
//!    written; SQLite is read through the backend's one connection, so its
//!    `-wal`/`-shm` files are gone again when verify exits; PostgreSQL
//!    through the backend's pool, in read-only transactions.
//!
//! Problem kinds are the error kinds (`corruption`, `format_unsupported`,
//! `io`, …), `torn_tail`, and the scan's own kinds (`misplaced_artifact`,
//! `duplicate_id`, `mixed_encoding`, `flat_layout`, `orphan_events`,
//! `orphan_temp`, `foreign_file`); see [`problem_exit_code`] for the exit
//! code.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_persist::backend::jsonl::JsonlBackend;
use dsh_persist::backend::jsonl::scan::unescape_id;
use dsh_persist::backend::parallel::map_in_order;
use dsh_persist::backend::postgres::PostgresBackend;
use dsh_persist::backend::scan::{Finding, FindingKind, StoreScan};
use dsh_persist::backend::sqlite::SqliteBackend;
use dsh_persist::backend::{Backend, TornTail};
use dsh_persist::store::{BackendConfig, Store};
use dsh_persist::{Error, ErrorKind};

use super::args::StoreArgs;
use super::output::{
    EXIT_CORRUPTION, EXIT_FORMAT_UNSUPPORTED, EXIT_OTHER, Outcome, exit_code, jstr, jstr_opt,
    print_out,
};
use super::progress::Progress;
use super::stores::Selection;

/// One defect found by `verify`.
pub struct Problem {
    /// The session it concerns; `None` for the store itself or a file that
    /// belongs to no session.
    pub id: Option<String>,
    pub kind: &'static str,
    /// The artifact, directory or database it concerns.
    pub path: Option<PathBuf>,
    pub message: String,
    /// A command that may help (`salvage` for a session that no longer
    /// loads; issue 19).
    pub suggest: Option<String>,
}

/// Kind name of a torn tail problem.
pub const TORN_TAIL: &str = "torn_tail";

impl Problem {
    fn from_error(id: Option<&str>, path: Option<&Path>, e: &Error) -> Problem {
        Problem {
            id: id.map(str::to_string),
            kind: e.kind().as_str(),
            path: path.map(Path::to_path_buf),
            message: e.to_string(),
            suggest: None,
        }
    }

    fn from_finding(id: Option<&str>, f: &Finding) -> Problem {
        Problem {
            id: id.map(str::to_string),
            kind: f.kind.as_str(),
            path: Some(f.path.clone()),
            message: f.message.clone(),
            suggest: None,
        }
    }
}

/// The exit code a problem kind stands for: 4 for damaged or unreachable
/// session data (corruption, a torn tail, a misplaced or duplicate log, a
/// root mixing encodings, a flat-layout file, events without a session),
/// 5 for a log this build will not interpret, 1 for debris that hides no
/// data (an orphan temp file, a foreign file), else the error kind's code.
pub fn problem_exit_code(kind: &str) -> i32 {
    let corrupt = [
        FindingKind::MisplacedArtifact,
        FindingKind::DuplicateId,
        FindingKind::MixedEncoding,
        FindingKind::FlatLayout,
        FindingKind::OrphanEvents,
    ];
    if kind == TORN_TAIL || corrupt.iter().any(|k| k.as_str() == kind) {
        return EXIT_CORRUPTION;
    }
    if [FindingKind::OrphanTemp, FindingKind::ForeignFile]
        .iter()
        .any(|k| k.as_str() == kind)
    {
        return EXIT_OTHER;
    }
    ALL_ERROR_KINDS
        .into_iter()
        .find(|k| k.as_str() == kind)
        .map_or(EXIT_OTHER, exit_code)
}

const ALL_ERROR_KINDS: [ErrorKind; 11] = [
    ErrorKind::InvalidArgument,
    ErrorKind::NotFound,
    ErrorKind::Conflict,
    ErrorKind::Corruption,
    ErrorKind::FormatUnsupported,
    ErrorKind::Io,
    ErrorKind::Busy,
    ErrorKind::Closed,
    ErrorKind::Invariant,
    ErrorKind::Unsupported,
    ErrorKind::Cancelled,
];

/// Whether a live writer holds the session `id` (or, without an id, the
/// session whose directory is `path`: a temp file's) right now, asked
/// through [`Backend::writer_holder`], which takes no lock. When one does,
/// a torn tail is its half-written batch and a temp file its creation in
/// progress: not yet there, not damage, so neither is reported. A holder
/// that cannot be asked counts as none (the problem is reported).
fn live_writer(store: &Store, id: Option<&str>, path: &Path) -> bool {
    let id = match id {
        Some(id) => id.to_string(),
        None => match path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(unescape_id)
        {
            Some(id) => id,
            None => return false,
        },
    };
    store.backend().writer_holder(&id).ok().flatten().is_some()
}

/// The logical checks of one physically sound session; `Ok` when it is
/// sound (or its torn tail belongs to a live writer).
fn check_session(store: &Store, id: &str, path: &Path) -> Result<(), Problem> {
    let failed = |e: Error| Problem::from_error(Some(id), Some(path), &e);
    store.inspect(id).map_err(|e| {
        let mut p = failed(e);
        // Unreadable: its intact prefix can be copied into a new session.
        if matches!(p.kind, "corruption" | "invalid_argument") {
            p.suggest = Some(format!(
                "dsh-persist salvage {} NEW_ID",
                super::output::shell_word(id)
            ));
        }
        p
    })?;
    store.read_from(id, 0).map_err(failed)?;
    let log = store.backend().read(id).map_err(failed)?;
    let Some((torn, revision)) = log.and_then(|l| l.torn.map(|t| (t, l.revision))) else {
        return Ok(());
    };
    // A writer holds the session (a live session in another process): its
    // incomplete last write is not there yet, not a crash leftover. So is
    // one that a writer finished and released since the read: a crash
    // leftover is still there, unchanged, when read again.
    let moved = || {
        store
            .backend()
            .read(id)
            .ok()
            .flatten()
            .is_none_or(|again| again.torn.is_none() || again.revision != revision)
    };
    if live_writer(store, Some(id), path) || moved() {
        return Ok(());
    }
    let message = match torn {
        TornTail::Jsonl {
            truncate_to,
            recovered,
        } => format!(
            "the log ends with an incomplete write: load would cut it at byte {truncate_to} of the file{}",
            if recovered.is_empty() {
                String::new()
            } else {
                format!(
                    " and re-append {} record(s) recovered from the torn frame",
                    recovered.len()
                )
            }
        ),
        TornTail::Sqlite { from_seq } => format!(
            "the log ends with an incomplete write: load would delete the rows from seq {from_seq} on"
        ),
    };
    Err(Problem {
        id: Some(id.to_string()),
        kind: TORN_TAIL,
        path: Some(path.to_path_buf()),
        message,
        suggest: None,
    })
}

/// Opens the backend of `sel`, scans it, and wraps it in a store for the
/// logical checks (one backend, one connection for both passes).
fn open_scanned(sel: &Selection) -> Result<(Store, StoreScan), Error> {
    let config = sel.config()?;
    let (backend, scan): (Arc<dyn Backend>, StoreScan) = match &config.backend {
        BackendConfig::Jsonl(c) => {
            let b = JsonlBackend::open(c.clone())?;
            let scan = b.scan()?;
            (Arc::new(b), scan)
        }
        BackendConfig::Sqlite(c) => {
            let b = SqliteBackend::open(c)?;
            let scan = match b.scan() {
                Ok(scan) => scan,
                Err(e) => {
                    let _ = b.close();
                    return Err(e);
                }
            };
            (Arc::new(b), scan)
        }
        BackendConfig::Postgres(c) => {
            let b = PostgresBackend::open(c)?;
            let scan = match b.scan() {
                Ok(scan) => scan,
                Err(e) => {
                    let _ = b.close();
                    return Err(e);
                }
            };
            (Arc::new(b), scan)
        }
    };
    Ok((Store::with_backend(backend, config, None), scan))
}

/// Runs `verify` and prints `{sessions, ok, problems}`. A store that does
/// not exist is an error (exit 3); one that exists but cannot be opened or
/// scanned is reported as a problem with `id: null`.
pub fn verify(args: &StoreArgs, json: bool) -> Result<Outcome, Error> {
    let sel = Selection::from_store_args(args)?;
    // A server is reached (and may time out) already here.
    let scanning = Progress::spinner(
        "verify",
        &match &sel {
            Selection::Postgres(..) => format!("connecting to {}", sel.describe()),
            _ => "scanning the store".to_string(),
        },
    );
    sel.check_exists()?;
    // A kind this build cannot open is an error, not a finding.
    sel.config()?;
    let mut problems = Vec::new();
    let mut sessions = 0usize;
    let mut ok = 0usize;
    scanning.message(|| "scanning the store".to_string());
    let opened = open_scanned(&sel);
    scanning.finish();
    match opened {
        Err(e) => problems.push(Problem::from_error(None, sel.path(), &e)),
        Ok((store, mut scan)) => {
            scan.sessions
                .sort_by(|a, b| (&a.id, &a.path).cmp(&(&b.id, &b.path)));
            sessions = scan.sessions.len();
            let bar = Progress::bar("verify", sessions as u64);
            // Sessions are checked on two threads where the backend reads
            // side by side (`Backend::concurrent_reads`); the problems come
            // out in the order of the sessions, as one loop finds them.
            let two_threads = store.backend().concurrent_reads();
            let found = map_in_order(&scan.sessions, two_threads, |s| {
                bar.message(|| s.id.clone().unwrap_or_else(|| s.path.display().to_string()));
                let found: Vec<Problem> = match (&s.id, s.findings.is_empty()) {
                    (Some(id), true) => check_session(&store, id, &s.path)
                        .err()
                        .into_iter()
                        .collect(),
                    _ => s
                        .findings
                        .iter()
                        .map(|f| Problem::from_finding(s.id.as_deref(), f))
                        .collect(),
                };
                bar.inc(1);
                Ok(found)
            });
            bar.finish();
            for found in found? {
                ok += usize::from(found.is_empty());
                problems.extend(found);
            }
            for f in &scan.findings {
                let in_flight = f.kind == FindingKind::OrphanTemp
                    && f.path
                        .parent()
                        .is_some_and(|dir| live_writer(&store, None, dir));
                if !in_flight {
                    problems.push(Problem::from_finding(None, f));
                }
            }
            if let Err(e) = store.close() {
                problems.push(Problem::from_error(None, sel.path(), &e));
            }
        }
    }
    if json {
        let items: Vec<String> = problems
            .iter()
            .map(|p| {
                format!(
                    "{{\"id\":{},\"kind\":{},\"path\":{},\"message\":{}{}}}",
                    jstr_opt(p.id.as_deref()),
                    jstr(p.kind),
                    jstr_opt(p.path.as_ref().map(|p| p.display().to_string()).as_deref()),
                    jstr(&p.message),
                    p.suggest
                        .as_deref()
                        .map_or_else(String::new, |s| format!(",\"suggest\":{}", jstr(s)))
                )
            })
            .collect();
        print_out(&format!(
            "{{\"sessions\":{sessions},\"ok\":{ok},\"problems\":[{}]}}",
            items.join(",")
        ));
    } else {
        let store_name = sel.describe();
        let mut out = format!(
            "checked {sessions} session(s) in {} store {}: {ok} ok, {} problem(s)\n",
            sel.kind_name(),
            store_name,
            problems.len()
        );
        for p in &problems {
            // A file that belongs to no session is "-"; the store itself "(store)".
            let who = match (&p.id, &p.path) {
                (Some(id), _) => jstr(id),
                (None, Some(path)) if Some(path.as_path()) != sel.path() => "-".to_string(),
                (None, _) => "(store)".to_string(),
            };
            // The path, unless the message or the first line (a server's
            // label) already names it.
            let path = p
                .path
                .as_ref()
                .map(|p| p.display().to_string())
                .filter(|shown| !p.message.contains(shown.as_str()) && *shown != store_name)
                .map_or_else(String::new, |shown| format!(" {shown}"));
            out.push_str(&format!("  {who} [{}]{path}: {}\n", p.kind, p.message));
            if let Some(cmd) = &p.suggest {
                out.push_str(&format!(
                    "    to copy what is intact into a new session: {cmd}\n"
                ));
            }
        }
        print_out(&out);
    }
    Ok(Outcome {
        code: verdict(&problems),
    })
}

/// 4 when any problem means damaged data, else 5 when any is a format this
/// build will not read, else the first problem's code; 0 without problems.
fn verdict(problems: &[Problem]) -> i32 {
    let codes: Vec<i32> = problems.iter().map(|p| problem_exit_code(p.kind)).collect();
    if codes.contains(&EXIT_CORRUPTION) {
        EXIT_CORRUPTION
    } else if codes.contains(&EXIT_FORMAT_UNSUPPORTED) {
        EXIT_FORMAT_UNSUPPORTED
    } else {
        codes.first().copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problem_kinds_map_to_exit_codes() {
        for (kind, code) in [
            ("corruption", 4),
            ("torn_tail", 4),
            ("misplaced_artifact", 4),
            ("duplicate_id", 4),
            ("mixed_encoding", 4),
            ("flat_layout", 4),
            ("orphan_events", 4),
            ("format_unsupported", 5),
            ("orphan_temp", 1),
            ("foreign_file", 1),
            ("io", 1),
            ("invalid_argument", 2),
        ] {
            assert_eq!(problem_exit_code(kind), code, "{kind}");
        }
    }
}
