//! How close the SQLite `open + list(1000)` is to what SQLite itself costs,
//! and what the state of the process heap does to both (README, issue 16).
//!
//! ```text
//! cargo run --release --example sqlite_list_floor -- DIR MODE [RUNS] [--fragment]
//! ```
//!
//! `DIR` (a private directory, made if missing) gets `sessions.db` with
//! 1,000 sessions of the bench workload's first 5 events, as the bench's
//! small-session phase writes them, the first time. `MODE` is one of
//!
//! - `store`: `Store::open` + `Store::listing`, as `dsh-persist bench`
//!   times it (the packed list: every id and cwd in one buffer);
//! - `store-headers`: `Store::open` + `Store::list` (a `Vec<SessionHeader>`,
//!   two strings allocated per session);
//! - `sqlite-query`: a bare `rusqlite` connection running this crate's
//!   listing query (the columns it reads to check every row), copying the
//!   ids and cwds into one buffer as the packed list does;
//! - `sqlite-minimal`: a bare connection selecting only `id` and `cwd`
//!   into one buffer (the least any listing does).
//!
//! Each run opens a fresh connection, as the bench does. `--fragment`
//! first leaves the heap as a long-running process leaves it (a million
//! blocks of 16–615 bytes, every other one freed) — the state the bench's
//! earlier phases leave its own heap in. Prints the first runs, the best
//! and the median, in ms. Run each mode in its own process.

use std::path::{Path, PathBuf};
use std::time::Instant;

use dsh_persist::model::event::Event;
use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::{BackendConfig, SqliteConfig, Store, StoreConfig};
use rusqlite::types::ValueRef;

const SESSIONS: usize = 1000;

/// The crate's own listing query: the example measures SQLite running it
/// on a bare connection, without the crate's code around it.
const LISTING_SQL: &str = dsh_persist::backend::sqlite::reader::LIST_PLAIN_SQL;

const MINIMAL_SQL: &str = "SELECT id, cwd FROM sessions ORDER BY rowid";

fn config(db: &Path) -> StoreConfig {
    StoreConfig::with_backend(BackendConfig::Sqlite(SqliteConfig::new(
        db.to_string_lossy().into_owned(),
    )))
}

fn make_store(db: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let workload =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/workload-100k.jsonl.zst");
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut zstd::stream::read::Decoder::new(std::fs::File::open(&workload)?)?,
        &mut text,
    )?;
    let five = text
        .lines()
        .take(5)
        .map(Event::parse)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e:?}", workload.display()))?;
    let store = Store::open(config(db))?;
    for i in 0..SESSIONS {
        let id = format!("small-{i:04}");
        let mut h = SessionHeader::new(&id, 1_785_000_000_000);
        h.cwd = Some("/home/user/project".into());
        store.create(h)?;
        store.append(&id, five.clone())?;
    }
    store.close()?;
    Ok(())
}

/// Appends a TEXT value to `out`; `None` for another type.
fn push_text(out: &mut String, v: ValueRef<'_>) -> Option<()> {
    match v {
        ValueRef::Text(t) => {
            out.push_str(&String::from_utf8_lossy(t));
            Some(())
        }
        _ => None,
    }
}

/// What a run leaves to free after the timer stopped (the bench does not
/// time closing the store or freeing the list).
type Leftovers = Box<dyn std::any::Any>;

/// One run of `mode`: the number of sessions listed.
fn run(mode: &str, db: &Path) -> Result<(usize, Leftovers), Box<dyn std::error::Error>> {
    if mode == "store" {
        let store = Store::open(config(db))?;
        let list = store.listing()?;
        return Ok((list.len(), Box::new((list, store))));
    }
    if mode == "store-headers" {
        let store = Store::open(config(db))?;
        let headers = store.list()?;
        return Ok((headers.len(), Box::new((headers, store))));
    }
    let sql = match mode {
        "sqlite-query" => LISTING_SQL,
        "sqlite-minimal" => MINIMAL_SQL,
        _ => return Err(format!("unknown mode {mode:?}").into()),
    };
    let conn = rusqlite::Connection::open(db)?;
    let mut stmt = conn.prepare(sql)?;
    let mut rows = stmt.query([])?;
    // The texts back to back, and where each row's end.
    let mut text = String::new();
    let mut ends: Vec<(usize, usize)> = Vec::new();
    while let Some(r) = rows.next()? {
        push_text(&mut text, r.get_ref(0)?).ok_or("id is not text")?;
        let id_end = text.len();
        push_text(
            &mut text,
            r.get_ref(if mode == "sqlite-minimal" { 1 } else { 3 })?,
        );
        if mode == "sqlite-query" {
            // Read what the crate's check reads.
            let _ = (r.get_ref(2)?, r.get_ref(4)?, r.get_ref(5)?);
        }
        ends.push((id_end, text.len()));
    }
    drop(rows);
    drop(stmt);
    Ok((ends.len(), Box::new((text, ends, conn))))
}

/// Leaves the heap fragmented: a million blocks, every other one freed.
fn fragment() -> Vec<Vec<u8>> {
    let mut x: u64 = 88_172_645_463_325_252;
    let mut step = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut kept: Vec<Vec<u8>> = (0..1_000_000)
        .map(|_| vec![1u8; 16 + (step() % 600) as usize])
        .collect();
    let mut i = 0;
    kept.retain(|_| {
        i += 1;
        i % 2 == 0
    });
    kept
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: sqlite_list_floor DIR store|store-headers|sqlite-query|sqlite-minimal [RUNS] [--fragment]";
    let (Some(dir), Some(mode)) = (args.first(), args.get(1)) else {
        return Err(usage.into());
    };
    let runs: usize = match args.get(2).filter(|a| !a.starts_with("--")) {
        Some(n) => n.parse().map_err(|_| usage)?,
        None => 200,
    };
    let dir = PathBuf::from(dir);
    if !dir.exists() {
        // The store refuses a directory others may write to.
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&dir)?;
    }
    let db = dir.join("sessions.db");
    if !db.exists() {
        make_store(&db)?;
    }
    let kept = args.iter().any(|a| a == "--fragment").then(fragment);
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        let (listed, leftovers) = run(mode, &db)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        drop(leftovers);
        if listed != SESSIONS {
            return Err(format!("listed {listed} sessions, not {SESSIONS}").into());
        }
    }
    let first: Vec<String> = times.iter().take(3).map(|t| format!("{t:.3}")).collect();
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    println!(
        "{mode}{}: {} runs, first {}, best {:.3}, median {:.3} ms",
        if kept.is_some() {
            " (fragmented heap)"
        } else {
            ""
        },
        times.len(),
        first.join(" "),
        sorted[0],
        sorted[sorted.len() / 2]
    );
    drop(kept);
    Ok(())
}
