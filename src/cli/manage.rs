//! `delete`, `prune`, `salvage`, `import` (issue 19): the writing
//! management commands. Deleting asks first on a terminal unless `--yes`,
//! and refuses without `--yes` when stdin is not a terminal.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::Path;

use dsh_persist::Error;
use dsh_persist::store::{PruneOptions, PruneReport, Store};

use super::output::{self, Outcome, iso_time, jstr, print_out};
use super::progress::{self, Progress};

/// Whether the user agreed to `question` (`--yes`: yes without asking).
fn confirm(question: &str, yes: bool) -> Result<bool, Error> {
    if yes {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        return Err(Error::invalid(format!(
            "{question} — refusing without --yes: stdin is not a terminal to ask on"
        )));
    }
    progress::clear_all();
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| Error::io("cannot read the answer from stdin", e))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}

fn declined(json: bool) -> Outcome {
    if json {
        print_out("{\"deleted\":[],\"declined\":true}");
    } else {
        eprintln!("dsh-persist: nothing deleted");
    }
    Outcome {
        code: output::EXIT_OTHER,
    }
}

/// `delete ID…`: each as `Store::delete`; stops at the first failure.
pub fn delete(store: &Store, ids: &[String], yes: bool, json: bool) -> Result<Outcome, Error> {
    let what = match ids {
        [one] => format!("delete session {}?", dsh_persist::model::json::quote(one)),
        _ => format!("delete {} sessions ({})?", ids.len(), ids.join(", ")),
    };
    if !confirm(&what, yes)? {
        return Ok(declined(json));
    }
    let bar = Progress::bar("delete", ids.len() as u64);
    let mut done = Vec::new();
    let mut failure = None;
    for id in ids {
        bar.message(|| id.clone());
        match store.delete(id) {
            Ok(()) => done.push(id.as_str()),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
        bar.inc(1);
    }
    bar.finish();
    if json && failure.is_none() {
        let list: Vec<String> = done.iter().map(|id| jstr(id)).collect();
        print_out(&format!("{{\"deleted\":[{}]}}", list.join(",")));
    } else if !json {
        for id in &done {
            print_out(&format!("deleted {id}"));
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(Outcome::ok()),
    }
}

/// `prune`: see [`PruneOptions`]; a dry run prints what would be deleted.
pub fn prune(
    store: &Store,
    older_than_days: Option<f64>,
    keep_newest: Option<usize>,
    dry_run: bool,
    yes: bool,
    json: bool,
) -> Result<Outcome, Error> {
    if older_than_days.is_some_and(|d| !(d.is_finite() && d >= 0.0)) {
        return Err(Error::invalid(
            "--older-than-days must be a non-negative number",
        ));
    }
    let mut options = PruneOptions {
        older_than_ms: older_than_days.map(|d| (d * 86_400_000.0) as i64),
        keep_newest,
        dry_run: true,
        now_ms: None,
    };
    // Fix "now" so the question and the deletion select the same sessions.
    options.now_ms = Some(dsh_persist::model::header::now_ms());
    let preview = store.prune(&options, &mut |_, _| {})?;
    if dry_run {
        return Ok(print_prune(&preview, json));
    }
    let n = preview.deleted.len();
    if n == 0 {
        return Ok(print_prune(&preview, json));
    }
    if !confirm(&format!("delete {n} session(s)?"), yes)? {
        return Ok(declined(json));
    }
    options.dry_run = false;
    let bar = Progress::bar("prune", n as u64);
    let report = store.prune(&options, &mut |_, _| bar.inc(1))?;
    bar.finish();
    Ok(print_prune(&report, json))
}

fn print_prune(r: &PruneReport, json: bool) -> Outcome {
    if json {
        print_out(&r.to_json());
    } else {
        let verb = if r.dry_run { "would delete" } else { "deleted" };
        let mut lines = Vec::new();
        for s in &r.deleted {
            lines.push(format!(
                "{verb} {} (updated {})",
                s.id,
                iso_time(s.updated_at)
            ));
        }
        for (id, m) in &r.busy {
            lines.push(format!("skipped {id}: {m}"));
        }
        for (id, m) in &r.failed {
            lines.push(format!("failed {id}: {m}"));
        }
        lines.push(format!(
            "{} {verb}, {} busy, {} failed, {} kept",
            r.deleted.len(),
            r.busy.len(),
            r.failed.len(),
            r.kept
        ));
        print_out(&lines.join("\n"));
    }
    Outcome {
        code: if r.failed.is_empty() {
            0
        } else {
            output::EXIT_OTHER
        },
    }
}

/// `salvage ID NEW_ID`.
pub fn salvage(store: &Store, id: &str, new_id: &str, json: bool) -> Result<Outcome, Error> {
    let r = store.salvage(id, new_id)?;
    if json {
        print_out(&r.to_json());
    } else {
        let mut text = format!(
            "salvaged {} of {} intact events of {id} into {new_id}",
            r.kept_events, r.read_events
        );
        if r.closers > 0 {
            text.push_str(&format!(", closed with {} synthetic event(s)", r.closers));
        }
        if let Some(why) = &r.stopped {
            text.push_str(&format!("; the copy stops because {why}"));
        }
        print_out(&text);
    }
    Ok(Outcome::ok())
}

/// The text of an import file (`-`: stdin); a zstd file (the magic number
/// first) is decoded.
fn read_import(file: &Path) -> Result<String, Error> {
    let mut bytes = Vec::new();
    if file == Path::new("-") {
        std::io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("cannot read stdin", e))?;
    } else {
        bytes = std::fs::read(file)
            .map_err(|e| Error::io(format!("cannot read {}", file.display()), e))?;
    }
    if bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        bytes = zstd::stream::decode_all(&bytes[..]).map_err(|e| {
            Error::invalid(format!(
                "{} is not a readable Zstandard file: {e}",
                file.display()
            ))
        })?;
    }
    String::from_utf8(bytes)
        .map_err(|e| Error::invalid(format!("{} is not UTF-8 text: {e}", file.display())))
}

/// `import FILE [--id ID]`.
pub fn import(store: &Store, file: &Path, id: Option<&str>, json: bool) -> Result<Outcome, Error> {
    let text = read_import(file)?;
    let id = id.map_or_else(
        dsh_persist::store::coordinator::new_session_id,
        str::to_string,
    );
    let r = store.import_jsonl(&id, &text)?;
    if json {
        print_out(&r.to_json());
    } else {
        print_out(&format!("imported {} events into {}", r.events, r.id));
    }
    Ok(Outcome::ok())
}
