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
/// first) is decoded. At most `max` bytes are read or decoded (the store's
/// `maxLogBytes`: an import is one append, which no larger text fits), so a
/// huge file or a decompression bomb is an error, never an abort.
fn read_import(file: &Path, max: u64) -> Result<String, Error> {
    let name = if file == Path::new("-") {
        "stdin".to_string()
    } else {
        file.display().to_string()
    };
    let too_big = |what: &str| {
        Error::invalid(format!(
            "{name} {what} more than {max} bytes, the store's maxLogBytes: one session cannot hold it (raise maxLogBytes in the store config to import it)"
        ))
    };
    let mut bytes = Vec::new();
    let read = if file == Path::new("-") {
        std::io::stdin()
            .lock()
            .take(max.saturating_add(1))
            .read_to_end(&mut bytes)
    } else {
        std::fs::File::open(file)
            .and_then(|f| f.take(max.saturating_add(1)).read_to_end(&mut bytes))
    };
    read.map_err(|e| Error::io(format!("cannot read {name}"), e))?;
    if bytes.len() as u64 > max {
        return Err(too_big("holds"));
    }
    if bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        let mut text = Vec::new();
        zstd::stream::read::Decoder::new(&bytes[..])
            .and_then(|d| d.take(max.saturating_add(1)).read_to_end(&mut text))
            .map_err(|e| Error::invalid(format!("{name} is not a readable Zstandard file: {e}")))?;
        if text.len() as u64 > max {
            return Err(too_big("decodes to"));
        }
        bytes = text;
    }
    String::from_utf8(bytes).map_err(|e| Error::invalid(format!("{name} is not UTF-8 text: {e}")))
}

/// `import FILE [--id ID]`.
pub fn import(store: &Store, file: &Path, id: Option<&str>, json: bool) -> Result<Outcome, Error> {
    let text = read_import(file, store.config().backend.limits().max_log_bytes)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("dsh-import-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// An import file is read and decoded up to the store's `maxLogBytes`:
    /// a 1 MiB text fits a 1 MiB limit, one byte more does not, and a small
    /// zstd file that decodes past it is refused after decoding one byte
    /// more than the limit (a bomb never decodes whole).
    #[test]
    fn import_files_are_read_and_decoded_within_max_log_bytes() {
        const MIB: usize = 1 << 20;
        let line = |n: usize| format!("{}\n", "x".repeat(n - 1));
        let fits = temp("fits", line(MIB).as_bytes());
        assert_eq!(read_import(&fits, MIB as u64).unwrap().len(), MIB);
        let over = temp("over", line(MIB + 1).as_bytes());
        let e = read_import(&over, MIB as u64).unwrap_err();
        assert_eq!(e.kind(), dsh_persist::ErrorKind::InvalidArgument);
        assert!(
            e.to_string()
                .contains("holds more than 1048576 bytes, the store's maxLogBytes"),
            "{e}"
        );
        let z = zstd::bulk::compress(line(MIB).as_bytes(), 3).unwrap();
        let zfits = temp("zfits", &z);
        assert_eq!(read_import(&zfits, MIB as u64).unwrap().len(), MIB);
        let bomb = zstd::bulk::compress(line(64 * MIB).as_bytes(), 19).unwrap();
        assert!(bomb.len() < 64 * 1024, "{}", bomb.len());
        let zbomb = temp("zbomb", &bomb);
        let e = read_import(&zbomb, MIB as u64).unwrap_err();
        assert!(
            e.to_string()
                .contains("decodes to more than 1048576 bytes, the store's maxLogBytes"),
            "{e}"
        );
        for p in [fits, over, zfits, zbomb] {
            let _ = std::fs::remove_file(p);
        }
    }
}
