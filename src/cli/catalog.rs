//! The catalog commands: the rich `list` (and `list --last`), `search`,
//! `follow` and `export` (see `dsh_persist::store::catalog`).

use std::io::Write as _;
use std::time::Duration;

use dsh_persist::Error;
use dsh_persist::store::Store;
use dsh_persist::store::catalog::{ExportFormat, ListQuery, SearchQuery, SortKey};

use super::args::{ExportArgs, ListArgs, SearchArgs};
use super::output::{Outcome, iso_time, print_out, table};
use super::progress::Progress;

/// `--since`: milliseconds since the epoch, or a number with a unit
/// (`30m`, `12h`, `7d`) meaning that long ago.
fn parse_since(text: &str) -> Result<i64, Error> {
    let bad = || {
        Error::invalid(format!(
            "--since takes milliseconds since the epoch or an age like 7d, 12h, 30m; got {text:?}"
        ))
    };
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(ms);
    }
    let (num, unit) = text.split_at(text.len().saturating_sub(1));
    let n: i64 = num.parse().map_err(|_| bad())?;
    let per = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(bad()),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    Ok(now - n * per)
}

fn human_bytes(n: u64) -> String {
    match n {
        n if n < 1024 => format!("{n} B"),
        n if n < 1 << 20 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
    }
}

/// Whether `list` was asked for more than the plain header listing.
pub fn wants_rich(args: &ListArgs) -> bool {
    args.long
        || args.last
        || args.sort.is_some()
        || args.cwd.is_some()
        || args.since.is_some()
        || args.parent.is_some()
        || args.limit.is_some()
        || args.ascending
}

/// The rich listing (a table; `--json`: the summaries; `--last`: one id).
pub fn list(store: &Store, args: &ListArgs, json: bool) -> Result<Outcome, Error> {
    let query = ListQuery {
        sort: match args.sort.as_deref() {
            None | Some("updated") => SortKey::Updated,
            Some("created") => SortKey::Created,
            Some(other) => {
                return Err(Error::invalid(format!(
                    "--sort takes updated or created, got {other:?}"
                )));
            }
        },
        ascending: args.ascending,
        cwd: args.cwd.clone(),
        updated_since: args.since.as_deref().map(parse_since).transpose()?,
        parent: args.parent.clone(),
        limit: if args.last { Some(1) } else { args.limit },
    };
    let rows = store.list_summaries(&query)?;
    if args.last {
        let Some(s) = rows.first() else {
            return Err(Error::not_found("no session is stored".to_string()));
        };
        if json {
            print_out(&s.to_value().to_string());
        } else {
            print_out(&s.header.id);
        }
        return Ok(Outcome::ok());
    }
    if json {
        let items: Vec<_> = rows.iter().map(|s| s.to_value()).collect();
        print_out(&serde_json::Value::Array(items).to_string());
        return Ok(Outcome::ok());
    }
    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|s| {
            vec![
                s.header.id.clone(),
                iso_time(s.updated_at),
                s.event_count.to_string(),
                format!("{}{}", s.turn_count, if s.open_turn { "+" } else { "" }),
                human_bytes(s.bytes),
                s.title
                    .clone()
                    .or_else(|| s.last_prompt.clone())
                    .map_or_else(|| "-".into(), |t| cut(&t, 50)),
            ]
        })
        .collect();
    print_out(&table(
        &[
            "ID",
            "UPDATED",
            "EVENTS",
            "TURNS",
            "SIZE",
            "TITLE / LAST PROMPT",
        ],
        &table_rows,
    ));
    print_out(&format!(
        "{} session(s); TURNS + = the last turn is open",
        rows.len()
    ));
    Ok(Outcome::ok())
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// `search TEXT`: hits as `ID SEQ ROLE SNIPPET` (`--json`: the result).
pub fn search(store: &Store, args: &SearchArgs, json: bool) -> Result<Outcome, Error> {
    let mut query = SearchQuery::new(args.text.clone());
    query.limit = args.limit.unwrap_or(100);
    query.cwd = args.cwd.clone();
    query.cache_dir = args.cache_dir.clone();
    let mut bar: Option<Progress> = None;
    let result = store.search(&query, &mut |done, total| {
        let b = bar.get_or_insert_with(|| Progress::still_bar("search", total as u64));
        b.inc(1);
        if done == total {
            b.finish();
        }
    })?;
    if let Some(b) = bar {
        b.finish();
    }
    if json {
        print_out(&result.to_value().to_string());
        return Ok(Outcome::ok());
    }
    let rows: Vec<Vec<String>> = result
        .hits
        .iter()
        .map(|h| {
            vec![
                h.id.clone(),
                h.seq.to_string(),
                h.role.to_string(),
                h.snippet.clone(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        print_out(&table(&["ID", "SEQ", "ROLE", "SNIPPET"], &rows));
    }
    print_out(&format!(
        "{} hit(s){} in {} session(s) ({} indexed now)",
        result.hits.len(),
        if result.truncated {
            " (more not shown)"
        } else {
            ""
        },
        result.sessions,
        result.indexed
    ));
    for (id, e) in &result.skipped {
        eprintln!("dsh-persist search: skipped session {id}: {e}");
    }
    Ok(Outcome::ok())
}

/// `follow ID`: prints each new event as a JSON line until interrupted
/// (`--from SEQ` starts there; `--exit-after N`: stop after N events).
pub fn follow(
    store: &Store,
    id: &str,
    from: Option<u64>,
    exit_after: Option<u64>,
) -> Result<Outcome, Error> {
    let mut f = store.follow(id, from)?;
    let mut seen = 0u64;
    loop {
        let batch = f.next_batch(Duration::from_millis(500))?;
        let mut out = std::io::stdout().lock();
        for e in &batch {
            let _ = writeln!(out, "{}", e.to_json());
            seen += 1;
            if exit_after.is_some_and(|n| seen >= n) {
                let _ = out.flush();
                return Ok(Outcome::ok());
            }
        }
        let _ = out.flush();
    }
}

/// `export ID --format md|html [--out FILE]`.
pub fn export(store: &Store, args: &ExportArgs) -> Result<Outcome, Error> {
    let format = ExportFormat::parse(&args.format)?;
    let text = store.export(&args.id, format)?;
    match &args.out {
        Some(path) => std::fs::write(path, text.as_bytes())
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?,
        None => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
        }
    }
    Ok(Outcome::ok())
}
