//! `verify`: checks every session of a store and names every defect,
//! without modifying anything.
//!
//! Each listed session is inspected (read, legacy conversion, full
//! validation, closers computed in memory only) and read from seq 0 (the
//! stored-prefix checks), and its raw read is asked whether a torn tail is
//! waiting for a repair. `load` is never called, so no repair is written. A
//! failing root-level list is itself reported as a problem (`id: null`).
//!
//! Problem kinds are the error kinds (`corruption`, `format_unsupported`,
//! `io`, …) plus `torn_tail` (an incomplete last write that `load` would cut).
//! Exit 4 when any problem is a corruption or a torn tail; otherwise the exit
//! code of the first problem's kind; 0 when every session is ok.

use dsh_persist::backend::TornTail;
use dsh_persist::store::Store;
use dsh_persist::{Error, ErrorKind};

use super::args::StoreArgs;
use super::output::{EXIT_CORRUPTION, Outcome, Progress, exit_code, jstr, jstr_opt, print_out};
use super::stores::Selection;

/// One defect found by `verify`.
pub struct Problem {
    /// `None` for a store-level failure (the list itself).
    pub id: Option<String>,
    pub kind: &'static str,
    pub message: String,
}

/// Kind name of a torn tail problem.
pub const TORN_TAIL: &str = "torn_tail";

impl Problem {
    fn from_error(id: Option<&str>, e: &Error) -> Problem {
        Problem {
            id: id.map(str::to_string),
            kind: e.kind().as_str(),
            message: e.to_string(),
        }
    }
}

/// The checks of one session; `Ok` when it is sound.
fn check_session(store: &Store, id: &str) -> Result<(), Problem> {
    store
        .inspect(id)
        .map_err(|e| Problem::from_error(Some(id), &e))?;
    store
        .read_from(id, 0)
        .map_err(|e| Problem::from_error(Some(id), &e))?;
    let log = store
        .backend()
        .read(id)
        .map_err(|e| Problem::from_error(Some(id), &e))?;
    if let Some((torn, revision)) = log.and_then(|l| l.torn.map(|t| (t, l.revision))) {
        // A writer holds the session (a live session in another process):
        // its incomplete last write is not there yet, not a crash leftover.
        // So is one that a writer finished and released since the read: a
        // crash leftover is still there, unchanged, when read again.
        let held = store.backend().writer_holder(id).ok().flatten().is_some();
        let moved = || {
            store
                .backend()
                .read(id)
                .ok()
                .flatten()
                .is_none_or(|again| again.torn.is_none() || again.revision != revision)
        };
        if held || moved() {
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
        return Err(Problem {
            id: Some(id.to_string()),
            kind: TORN_TAIL,
            message,
        });
    }
    Ok(())
}

/// Runs `verify` and prints `{sessions, ok, problems}`. A store that does
/// not exist is an error (exit 3); one that exists but cannot be opened or
/// listed is reported as a problem with `id: null`.
pub fn verify(args: &StoreArgs, json: bool) -> Result<Outcome, Error> {
    let sel = Selection::from_store_args(args);
    sel.check_exists()?;
    let progress = Progress::new();
    let mut problems = Vec::new();
    let mut sessions = 0usize;
    let mut ok = 0usize;
    let listed = sel
        .open()
        .and_then(|store| store.list().map(|h| (store, h)));
    match listed {
        Err(e) => problems.push(Problem::from_error(None, &e)),
        Ok((store, mut headers)) => {
            headers.sort_by(|a, b| a.id.cmp(&b.id));
            sessions = headers.len();
            for (i, h) in headers.iter().enumerate() {
                progress.update(&format!("verify: {}/{sessions} {}", i + 1, h.id));
                match check_session(&store, &h.id) {
                    Ok(()) => ok += 1,
                    Err(p) => problems.push(p),
                }
            }
            if let Err(e) = store.close() {
                problems.push(Problem::from_error(None, &e));
            }
        }
    }
    progress.done();
    if json {
        let items: Vec<String> = problems
            .iter()
            .map(|p| {
                format!(
                    "{{\"id\":{},\"kind\":{},\"message\":{}}}",
                    jstr_opt(p.id.as_deref()),
                    jstr(p.kind),
                    jstr(&p.message)
                )
            })
            .collect();
        print_out(&format!(
            "{{\"sessions\":{sessions},\"ok\":{ok},\"problems\":[{}]}}",
            items.join(",")
        ));
    } else {
        let mut out = format!(
            "checked {sessions} session(s): {ok} ok, {} problem(s)\n",
            problems.len()
        );
        for p in &problems {
            out.push_str(&format!(
                "  {} [{}]: {}\n",
                p.id.as_deref().map_or_else(|| "(store)".to_string(), jstr),
                p.kind,
                p.message
            ));
        }
        print_out(&out);
    }
    Ok(Outcome {
        code: verdict(&problems),
    })
}

fn verdict(problems: &[Problem]) -> i32 {
    if problems
        .iter()
        .any(|p| p.kind == ErrorKind::Corruption.as_str() || p.kind == TORN_TAIL)
    {
        return EXIT_CORRUPTION;
    }
    match problems.first() {
        None => 0,
        Some(p) => [
            ErrorKind::InvalidArgument,
            ErrorKind::NotFound,
            ErrorKind::FormatUnsupported,
            ErrorKind::Io,
            ErrorKind::Busy,
            ErrorKind::Conflict,
            ErrorKind::Closed,
            ErrorKind::Invariant,
            ErrorKind::Unsupported,
        ]
        .into_iter()
        .find(|k| k.as_str() == p.kind)
        .map_or(1, exit_code),
    }
}
