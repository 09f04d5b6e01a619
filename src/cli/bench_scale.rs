//! `bench --scale`: growth costs a long-horizon agent hits (issue 16).
//!
//! For each session size (1M and 5M events, or `--scale-events N`), on a
//! JSONL zstd packed store:
//! - `append`: the workload replayed (seqs and surface references shifted
//!   per copy) in cold `Store::append` calls of 50 events; the mean CPU
//!   time per call (this thread's, from `/proc/thread-self/schedstat`) over
//!   the first and the last 10% of the calls, and their ratio;
//! - `load`: a cold load on a fresh store, and the peak RSS of a process
//!   that only opens the store and loads the session, per event;
//! - `reopen_append_cold`: a process that opens the store and appends 50
//!   events through `append_json` (the C ABI text path) with no append
//!   checkpoint (the cache directory's `append/` removed first: the log is
//!   folded as it is read): the call's time and the RSS it added;
//! - `reopen_append`: the same with the checkpoint the last process left;
//! - `sqlite_reopen_append_cold`, `sqlite_reopen_append`: the same two on
//!   a SQLite store holding the same log (its checkpoint is used after a
//!   scan of the rows finds its seal, `src/backend/rows/seal.rs`);
//! - `postgres_reopen_append_cold`, `postgres_reopen_append`: the same on a
//!   PostgreSQL store with a `cacheDir` holding the same log, when the
//!   bench has a server (`DSH_BENCH_POSTGRES_URL`; `null` otherwise).
//!
//! With `--keep` the stores stay (to run the probes again by hand:
//! `dsh-persist rss-probe --jsonl DIR --append FILE scale`).
//!
//! Then 100k small sessions (5 events each, `--small-sessions N`), the
//! per-session create+append cost and a cold `list` with the open inside
//! the timer.

use std::fs;
use std::path::Path;
use std::time::Instant;

use dsh_persist::Error;
use dsh_persist::model::event::Event;
use dsh_persist::model::json::{self, JsonText};
use dsh_persist::model::surface::SurfaceOp;
use dsh_persist::store::Store;

use super::bench::{BATCH, Kind, bench_header, make_dir, ms, num, round};
use super::output::{Outcome, print_out};
use super::progress::Progress;

const SCALE_ID: &str = "scale";

/// The workload replayed without end: event `i` of the endless log is
/// workload event `i % w` with its seq and every seq it references moved
/// by `w * (i / w)`.
pub(super) struct Replay<'a> {
    events: &'a [Event],
}

impl<'a> Replay<'a> {
    pub(super) fn new(events: &'a [Event]) -> Self {
        Replay { events }
    }

    /// Event `i` of the endless log.
    pub(super) fn event(&self, i: u64) -> Result<Event, Error> {
        let w = self.events.len() as u64;
        let off = w * (i / w);
        let mut e = self.events[(i % w) as usize].clone();
        e.seq += off;
        if off == 0 {
            return Ok(e);
        }
        if let Some(op) = &e.surface_op() {
            let op = SurfaceOp::parse(op.as_str()).map_err(Error::invalid)?;
            if let SurfaceOp::Replace { start, end } = op {
                let moved = SurfaceOp::Replace {
                    start: start + off,
                    end: end + off,
                };
                e.set_surface_op(Some(JsonText::from_trusted(moved.to_json())));
            }
        }
        if let Some(s) = &e.source_event_seqs() {
            let items = json::array_items(s.as_str())
                .map_err(|m| Error::invalid(format!("seq {} sourceEventSeqs: {m}", e.seq)))?;
            let moved: Option<Vec<String>> = items
                .iter()
                .map(|v| json::as_safe_uint(v).map(|s| (s + off).to_string()))
                .collect();
            let moved =
                moved.ok_or_else(|| Error::invalid(format!("seq {} sourceEventSeqs", e.seq)))?;
            e.set_source_event_seqs(Some(JsonText::from_trusted(format!(
                "[{}]",
                moved.join(",")
            ))));
        }
        Ok(e)
    }

    pub(super) fn batch(&self, from: u64, n: usize) -> Result<Vec<Event>, Error> {
        (from..from + n as u64).map(|i| self.event(i)).collect()
    }
}

/// CPU time of this thread so far, in nanoseconds.
fn thread_cpu_ns() -> Option<u64> {
    let s = fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// What one session size measured.
struct Sized {
    json: String,
    text: String,
}

/// `v` rounded to `d` decimals, or `null`.
fn opt(v: Option<f64>, d: i32) -> String {
    v.map_or_else(|| "null".into(), |x| num(round(x, d)))
}

/// What one reopen + append(50) probe in a fresh process measured.
struct Probe {
    ms: Option<f64>,
    extra_kib: Option<f64>,
}

impl Probe {
    const NOT_RUN: Probe = Probe {
        ms: None,
        extra_kib: None,
    };

    /// `"name":{"events":50,"ms":…,"extra_rss_mib":…}`.
    fn json(&self, name: &str) -> String {
        format!(
            "\"{name}\":{{\"events\":{BATCH},\"ms\":{},\"extra_rss_mib\":{}}}",
            opt(self.ms, 2),
            opt(self.extra_kib.map(|k| k / 1024.0), 1)
        )
    }

    /// `… ms, +… MiB RSS`.
    fn text(&self) -> String {
        format!(
            "{} ms, +{} MiB RSS",
            opt(self.ms, 2),
            opt(self.extra_kib.map(|k| k / 1024.0), 1)
        )
    }
}

/// A reopen + append(50) probe in a fresh process, appending at `from`.
fn reopen_append(kind: Kind, dir: &Path, replay: &Replay<'_>, from: u64) -> Result<Probe, Error> {
    let batch = replay.batch(from, BATCH)?;
    let mut text = String::new();
    dsh_persist::model::event::write_events_array(&mut text, &batch);
    let file = dir.join(format!("reopen-append-{from}.json"));
    fs::write(&file, &text).map_err(|e| Error::io("cannot write the append batch", e))?;
    let probe = super::bench::rss_probe_id(kind, dir, SCALE_ID, Some(&file))?;
    let field = |k: &str| {
        probe
            .as_deref()
            .and_then(|p| json::get_field(p, k))
            .and_then(json::as_f64)
    };
    Ok(Probe {
        ms: field("append_ms"),
        extra_kib: field("append_extra_rss_kib"),
    })
}

/// The two probes of a log of `n` events that has no append checkpoint:
/// the first folds the log as it reads it, the second continues from the
/// checkpoint the first left.
fn reopen_append_pair(
    kind: Kind,
    dir: &Path,
    replay: &Replay<'_>,
    n: u64,
) -> Result<[Probe; 2], Error> {
    Ok([
        reopen_append(kind, dir, replay, n)?,
        reopen_append(kind, dir, replay, n + BATCH as u64)?,
    ])
}

/// The text line of a pair of probes (`what` names the store, or is empty).
fn pair_text(what: &str, [cold, resumed]: &[Probe; 2]) -> String {
    format!(
        "  {what}reopen + append({BATCH}) without a checkpoint {}; from the checkpoint {}\n",
        cold.text(),
        resumed.text()
    )
}

fn one_size(
    events: &[Event],
    n: u64,
    dir: &Path,
    progress: &Progress,
    keep: bool,
) -> Result<Sized, Error> {
    let kind = Kind::JsonlZstd;
    make_dir(dir)?;
    let replay = Replay::new(events);
    // Whole turns only: the session ends where a replayed workload copy ends
    // its last complete turn at or before n.
    let w = events.len() as u64;
    let n = if n >= w {
        n - n % w
    } else {
        let end = events[..n as usize]
            .iter()
            .rposition(|e| e.event_type() == "turn/end")
            .ok_or_else(|| Error::invalid(format!("--scale-events {n}: no complete turn")))?;
        end as u64 + 1
    };
    let calls = n.div_ceil(BATCH as u64) as usize;
    progress.phase(
        || format!("bench --scale: append {n} events"),
        || format!("{calls} durable calls of {BATCH}"),
        calls as u64,
    );
    let store = Store::open(kind.config(dir))?;
    store.create(bench_header(SCALE_ID))?;
    let mut per_call = Vec::with_capacity(calls);
    let t = Instant::now();
    let mut seq = 0u64;
    while seq < n {
        let k = (n - seq).min(BATCH as u64) as usize;
        let batch = replay.batch(seq, k)?;
        let c0 = thread_cpu_ns().unwrap_or(0);
        store.append(SCALE_ID, batch)?;
        per_call.push(thread_cpu_ns().unwrap_or(0).saturating_sub(c0));
        seq += k as u64;
        progress.inc(1);
    }
    let append_ms = ms(t);
    store.close()?;
    drop(store);
    let tenth = (per_call.len() / 10).max(1);
    let mean_ms = |s: &[u64]| s.iter().sum::<u64>() as f64 / s.len().max(1) as f64 / 1e6;
    let first = mean_ms(&per_call[..tenth]);
    let last = mean_ms(&per_call[per_call.len() - tenth..]);

    progress.phase(
        || format!("bench --scale: load {n} events"),
        || "cold load, the RSS probe, the reopen + append probes".to_string(),
        5,
    );
    super::bench::settle_disk(dir)?;
    let store = Store::open(kind.config(dir))?;
    let t = Instant::now();
    let view = store.load(SCALE_ID)?;
    let load_ms = ms(t);
    if view.events.len() as u64 != n {
        return Err(Error::invariant(format!(
            "bench --scale: load returned {} events, expected {n}",
            view.events.len()
        )));
    }
    drop(view);
    drop(store);
    progress.inc(1);
    let probe = super::bench::rss_probe_id(kind, dir, SCALE_ID, None)?;
    let load_rss_kib = probe
        .as_deref()
        .and_then(|p| json::get_field(p, "peak_rss_kib"))
        .and_then(json::as_f64);
    progress.inc(1);

    // Reopen + append 50 through the text path, in a fresh process: first
    // without an append checkpoint (the log folded as it is read), then
    // from the checkpoint that process left.
    let cache = Store::open(kind.config(dir))?.backend().cache_dir();
    if let Some(c) = cache {
        let _ = fs::remove_dir_all(c.join("append"));
    }
    let jsonl = reopen_append_pair(kind, dir, &replay, n)?;
    progress.inc(2);
    let sq = dir.join("sqlite");
    copy_log(Kind::Sqlite, &replay, n, &sq)?;
    let sqlite = reopen_append_pair(Kind::Sqlite, &sq, &replay, n)?;
    let pg = dir.join("postgres");
    let postgres = match super::bench::postgres_url() {
        Some(_) => {
            let _drop_schema = super::bench::PostgresScratch(vec![pg.clone()]);
            copy_log(Kind::Postgres, &replay, n, &pg)?;
            Some(reopen_append_pair(Kind::Postgres, &pg, &replay, n)?)
        }
        None => None,
    };
    progress.inc(1);

    let per_event = load_rss_kib.map(|k| k * 1024.0 / n as f64);
    let [pg_cold, pg_resumed] = postgres
        .as_ref()
        .unwrap_or(&[Probe::NOT_RUN, Probe::NOT_RUN]);
    let probes = [
        jsonl[0].json("reopen_append_cold"),
        jsonl[1].json("reopen_append"),
        sqlite[0].json("sqlite_reopen_append_cold"),
        sqlite[1].json("sqlite_reopen_append"),
        pg_cold.json("postgres_reopen_append_cold"),
        pg_resumed.json("postgres_reopen_append"),
    ];
    let json = format!(
        "{{\"events\":{n},\"append\":{{\"calls\":{calls},\"wall_ms\":{},\"first_10pct_cpu_ms_per_call\":{},\"last_10pct_cpu_ms_per_call\":{},\"growth\":{}}},\"load\":{{\"ms\":{},\"peak_rss_mib\":{},\"peak_rss_bytes_per_event\":{}}},{}}}",
        num(round(append_ms, 1)),
        num(round(first, 4)),
        num(round(last, 4)),
        num(round(last / first.max(1e-9), 3)),
        num(round(load_ms, 1)),
        opt(load_rss_kib.map(|k| k / 1024.0), 1),
        opt(per_event, 1),
        probes.join(","),
    );
    let postgres_line = match &postgres {
        Some(pair) => pair_text("PostgreSQL (cacheDir), the same log: ", pair),
        None => "  PostgreSQL: skipped (no server: set DSH_BENCH_POSTGRES_URL)\n".to_string(),
    };
    let text = format!(
        "{n} events: append {calls} calls, CPU/call {first:.4} ms (first 10%) -> {last:.4} ms (last 10%), x{:.2}\n  load {load_ms:.1} ms, peak RSS {} MiB = {} B/event\n{}{}{}",
        last / first.max(1e-9),
        opt(load_rss_kib.map(|k| k / 1024.0), 1),
        opt(per_event, 1),
        pair_text("", &jsonl),
        pair_text("SQLite, the same log: ", &sqlite),
        postgres_line,
    );
    if !keep {
        fs::remove_dir_all(dir).ok();
    }
    Ok(Sized { json, text })
}

/// The first `n` events of the endless log in a new `kind` store in `dir`,
/// appended in batches, without the append checkpoint that leaves (the
/// next process folds the rows).
fn copy_log(kind: Kind, replay: &Replay<'_>, n: u64, dir: &Path) -> Result<(), Error> {
    const COPY_BATCH: u64 = 10_000;
    make_dir(dir)?;
    let store = Store::open(kind.config(dir))?;
    store.create(bench_header(SCALE_ID))?;
    let mut seq = 0;
    while seq < n {
        let k = (n - seq).min(COPY_BATCH);
        store.append(SCALE_ID, replay.batch(seq, k as usize)?)?;
        seq += k;
    }
    let cache = store.backend().cache_dir();
    store.close()?;
    if let Some(c) = cache {
        let _ = fs::remove_dir_all(c.join("append"));
    }
    Ok(())
}

fn small_sessions(
    events: &[Event],
    count: usize,
    dir: &Path,
    progress: &Progress,
) -> Result<Sized, Error> {
    let kind = Kind::JsonlZstd;
    make_dir(dir)?;
    progress.phase(
        || format!("bench --scale: {count} small sessions"),
        || "5 events each, then a cold list".to_string(),
        count as u64 + 1,
    );
    let five: Vec<Event> = events[..5].to_vec();
    let store = Store::open(kind.config(dir))?;
    let t = Instant::now();
    for i in 0..count {
        let id = format!("small-{i:06}");
        store.create(bench_header(&id))?;
        store.append(&id, five.clone())?;
        progress.inc(1);
    }
    let wall = ms(t);
    store.close()?;
    drop(store);
    super::bench::settle_disk(dir)?;
    let t = Instant::now();
    let store = Store::open(kind.config(dir))?;
    let listed = store.listing()?.len();
    let list_ms = ms(t);
    drop(store);
    progress.inc(1);
    if listed != count {
        return Err(Error::invariant(format!(
            "bench --scale: list returned {listed} sessions, expected {count}"
        )));
    }
    let per = wall / count.max(1) as f64;
    fs::remove_dir_all(dir).ok();
    Ok(Sized {
        json: format!(
            "{{\"count\":{count},\"per_session_ms\":{},\"open_and_list_ms\":{}}}",
            num(round(per, 3)),
            num(round(list_ms, 1))
        ),
        text: format!(
            "{count} small sessions: create+append {per:.3} ms/session; open+list {list_ms:.1} ms\n"
        ),
    })
}

/// Runs the scale rows and prints them.
pub(super) fn scale(
    events: &[Event],
    sizes: &[u64],
    small: usize,
    dir: &Path,
    json_out: bool,
    keep: bool,
) -> Result<Outcome, Error> {
    let progress = Progress::still_bar("bench", 0);
    let mut parts = Vec::new();
    for &n in sizes {
        parts.push(one_size(
            events,
            n,
            &dir.join(format!("scale-{n}")),
            &progress,
            keep,
        )?);
    }
    let small = small_sessions(events, small, &dir.join("scale-small"), &progress)?;
    progress.finish();
    if json_out {
        let sizes: Vec<&str> = parts.iter().map(|p| p.json.as_str()).collect();
        print_out(&format!(
            "{{\"scale\":{{\"backend\":\"jsonl-zstd-packed\",\"sessions\":[{}],\"small_sessions\":{}}}}}",
            sizes.join(","),
            small.json
        ));
    } else {
        let mut text = String::from("dsh-persist bench --scale (jsonl-zstd-packed)\n");
        for p in &parts {
            text.push_str(&p.text);
        }
        text.push_str(&small.text);
        print_out(&text);
    }
    Ok(Outcome::ok())
}
