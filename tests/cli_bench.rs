//! `dsh-persist bench` report shape on a tiny workload (timings are not
//! checked here: they live only in the bench itself).

mod cli_common;
mod support;

use cli_common::*;
use support::*;

/// No PostgreSQL server for the bench.
const NO_PG: [(&str, Option<&str>); 2] = [
    ("DSH_BENCH_POSTGRES_URL", None),
    ("DSH_TEST_POSTGRES_URL", None),
];

#[test]
fn bench_json_report_has_every_figure() {
    let tmp = TempDir::new("cli-bench");
    let r = run_env(
        [
            "--json",
            "bench",
            "--limit-events",
            "1200",
            "--small-sessions",
            "4",
            "--out-dir",
            tmp.path().to_str().unwrap(),
        ],
        &NO_PG,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v = r.json();
    let n = v["workload"]["events"].as_u64().unwrap();
    assert!(n > 100 && n <= 1200, "{n}");
    assert_eq!(v["workload"]["batch_size"], 50);
    assert_eq!(v["workload"]["append_calls"], n.div_ceil(50));
    assert_eq!(v["workload"]["comparable_with_original"], false);
    assert!(v["machine"]["cpus"].as_u64().unwrap() >= 1);
    assert!(v["peak_rss_mb"].as_f64().unwrap() > 0.0);
    let backends = v["backends"].as_object().unwrap();
    let names: Vec<&String> = backends.keys().collect();
    assert_eq!(
        names,
        [
            "jsonl-zstd-packed",
            "jsonl-none-packed",
            "jsonl-zstd-unpacked",
            "jsonl-none-unpacked",
            "sqlite",
            "live-jsonl-zstd-packed"
        ]
    );
    for (name, b) in backends {
        for k in [
            "wall_ms",
            "events_per_sec",
            "logical_mib_per_sec",
            "disk_bytes",
        ] {
            assert!(b["append"][k].as_f64().unwrap() > 0.0, "{name} append.{k}");
        }
        assert_eq!(b["cold_load"]["events"], n, "{name}");
        assert_eq!(b["cold_load"]["runs_ms"].as_array().unwrap().len(), 3);
        assert!(b["cold_load"]["best_ms"].as_f64().is_some());
        assert!(b["cold_load"]["peak_rss_mb"].as_f64().unwrap() > 0.0);
        assert!(b["cold_inspect"]["best_ms"].as_f64().is_some());
        assert!(b["read_from_last_100"]["best_ms"].as_f64().is_some());
        if name.starts_with("live") {
            assert!(b.get("small_sessions").is_none());
        } else {
            assert_eq!(b["small_sessions"]["count"], 4);
            assert_eq!(b["small_sessions"]["listed"], 4);
            assert!(b["small_sessions"]["per_session_ms"].as_f64().is_some());
            assert!(b["small_sessions"]["cold_list_best_ms"].as_f64().is_some());
            // The packed listing and `Store::list`'s headers, 3 runs each.
            for k in ["open_and_list", "open_and_list_headers"] {
                let runs = b["small_sessions"][format!("{k}_runs_ms")]
                    .as_array()
                    .unwrap();
                assert_eq!(runs.len(), 3, "{name} {k}");
                let best = b["small_sessions"][format!("{k}_best_ms")].as_f64();
                let least = runs
                    .iter()
                    .filter_map(|r| r.as_f64())
                    .fold(f64::MAX, f64::min);
                // The runs are printed to 0.01 ms, the best to 0.001.
                let best = best.unwrap();
                assert!((best - least).abs() <= 0.0051, "{name} {k}: {best} {least}");
            }
            // The same timed in a fresh probe process, at least 3 runs.
            let own = &b["small_sessions"];
            assert!(
                own["open_and_list_own_process_runs"].as_u64().unwrap() >= 3,
                "{name}"
            );
            let best = own["open_and_list_own_process_best_ms"].as_f64().unwrap();
            let median = own["open_and_list_own_process_median_ms"].as_f64().unwrap();
            assert!(best > 0.0 && best <= median, "{name}: {best} {median}");
            // The catalog's rich listing without the summary index, from
            // its file and from memory, 3 runs each.
            let c = &b["catalog"];
            assert_eq!(c["sessions"], 4, "{name}");
            for k in [
                "rich_list",
                "rich_list_from_index_file",
                "rich_list_from_index_memory",
            ] {
                assert_eq!(
                    c[format!("{k}_runs_ms")].as_array().unwrap().len(),
                    3,
                    "{name} {k}"
                );
                assert!(
                    c[format!("{k}_best_ms")].as_f64().unwrap() > 0.0,
                    "{name} {k}"
                );
            }
        }
        // The C ABI's text path, on one JSONL kind and SQLite.
        let text = matches!(name.as_str(), "jsonl-zstd-packed" | "sqlite");
        assert_eq!(b.get("append_json").is_some(), text, "{name}");
        if text {
            assert!(b["append_json"]["events_per_sec"].as_f64().unwrap() > 0.0);
        }
    }
    // Comparison rows carry the original's figures; no target verdict on a
    // limited workload.
    let rows = v["comparison"].as_array().unwrap();
    let row = rows
        .iter()
        .find(|r| r["backend"] == "sqlite" && r["metric"] == "cold_load.events_per_sec")
        .unwrap();
    let runs: Vec<f64> = row["original_runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(runs, [912963.0, 952054.0]);
    assert_eq!(row["original_best"].as_f64(), Some(952054.0));
    assert!(row["ratio"].as_f64().unwrap() > 0.0);
    assert!(rows.iter().all(|r| r["meets_target"].is_null()));
    // The temporary stores are removed.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    // The row stores also ran 8 concurrent writers; PostgreSQL was skipped
    // with a note.
    assert_eq!(v["backends"]["sqlite"]["writers8"]["writers"], 8);
    assert!(
        v["backends"]["sqlite"]["writers8"]["events_per_sec"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(v["backends"]["jsonl-zstd-packed"].get("writers8").is_none());
    assert!(
        v["postgres_skipped"]
            .as_str()
            .unwrap()
            .contains("set DSH_BENCH_POSTGRES_URL")
    );

    // Human mode: a table with our figures beside the original's.
    let h = run_env(
        [
            "bench",
            "--limit-events",
            "1200",
            "--small-sessions",
            "2",
            "--out-dir",
            tmp.path().to_str().unwrap(),
        ],
        &NO_PG,
    );
    assert_eq!(h.code, 0, "{}", h.stderr);
    assert!(
        h.stdout.contains("(postgres rows skipped: no server"),
        "{}",
        h.stdout
    );
    assert!(h.stdout.contains("ORIGINAL (run1 / run2)"));
    assert!(h.stdout.contains("912963 / 952054"), "{}", h.stdout);
    assert!(h.stdout.contains("not comparable"));
}

/// The PostgreSQL bench tests check that no bench schema is left: one at
/// a time, across test processes too (nextest runs each test in a process
/// of its own): an exclusive `flock` of a file in the temp dir, held until
/// the returned file is dropped. Two descriptions of the file exclude each
/// other in one process as well.
fn one_pg_bench_at_a_time() -> std::fs::File {
    let path = std::env::temp_dir().join("dsh-persist-tests-pg-bench.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
        .unwrap_or_else(|e| panic!("flock {}: {e}", path.display()));
    file
}

/// `--json bench FLAGS --out-dir TMP` against the test server, one such
/// bench at a time (until the result is dropped: keep it bound), and what
/// it printed.
struct PgBench {
    url: String,
    v: serde_json::Value,
    tmp: TempDir,
    _one_at_a_time: std::fs::File,
}

fn pg_bench(test: &str, tag: &str, flags: &[&str]) -> Option<PgBench> {
    let url = support::pg::url(test)?;
    let one_at_a_time = one_pg_bench_at_a_time();
    let tmp = TempDir::new(tag);
    let mut args = vec!["--json", "bench"];
    args.extend_from_slice(flags);
    args.extend(["--out-dir", tmp.path().to_str().unwrap()]);
    let r = run_env(&args, &[("DSH_BENCH_POSTGRES_URL", Some(url.as_str()))]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    Some(PgBench {
        url,
        v: r.json(),
        tmp,
        _one_at_a_time: one_at_a_time,
    })
}

#[test]
fn bench_measures_postgres_beside_sqlite_when_a_server_is_set() {
    let Some(run) = pg_bench(
        "bench_measures_postgres_beside_sqlite",
        "cli-bench-pg",
        &["--limit-events", "800", "--small-sessions", "3"],
    ) else {
        return;
    };
    let (url, v) = (&run.url, &run.v);
    assert!(v["postgres_skipped"].is_null());
    let pg = &v["backends"]["postgres"];
    let n = v["workload"]["events"].as_u64().unwrap();
    assert_eq!(pg["cold_load"]["events"], n);
    assert!(
        pg["append"]["disk_bytes"].as_u64().unwrap() > 0,
        "table sizes"
    );
    assert!(pg["cold_load"]["peak_rss_mb"].as_f64().unwrap() > 0.0);
    assert_eq!(pg["small_sessions"]["listed"], 3);
    assert_eq!(pg["writers8"]["writers"], 8);
    // No original figure, no target for PostgreSQL.
    let rows = v["comparison"].as_array().unwrap();
    assert!(
        rows.iter()
            .filter(|r| r["backend"] == "postgres")
            .all(|r| r["original_best"].is_null() && r["target_ratio"].is_null())
    );
    // Its schemas are dropped afterwards.
    assert_no_bench_schema_left(url);
}

#[test]
fn bench_scale_measures_postgres_reopen_append_when_a_server_is_set() {
    let Some(run) = pg_bench(
        "bench_scale_measures_postgres",
        "cli-bench-scale-pg",
        &[
            "--scale",
            "--scale-events",
            "1200",
            "--small-sessions",
            "3",
            "--keep",
        ],
    ) else {
        return;
    };
    let (url, v, tmp) = (&run.url, &run.v, &run.tmp);
    let s = &v["scale"]["sessions"][0];
    for k in ["postgres_reopen_append_cold", "postgres_reopen_append"] {
        assert_eq!(s[k]["events"], 50, "{k}");
        assert!(s[k]["ms"].as_f64().is_some(), "{k}: {s}");
        assert!(s[k]["extra_rss_mib"].as_f64().is_some(), "{k}");
    }
    // The second probe found the checkpoint the first left in the cacheDir.
    let checkpoints: Vec<_> = walk(tmp.path())
        .into_iter()
        .filter(|p| p.components().any(|c| c.as_os_str() == "pg-cache"))
        .filter(|p| p.extension().is_some_and(|e| e == "ckpt"))
        .collect();
    assert_eq!(checkpoints.len(), 1, "{checkpoints:?}");
    // The schema is dropped afterwards (even with --keep: the stores on
    // disk stay).
    assert_no_bench_schema_left(url);
}

/// No schema of a bench run is left on the server.
fn assert_no_bench_schema_left(url: &str) {
    let left: i64 = support::pg::admin(url)
        .query_one(
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'dsh\\_bench\\_%'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(left, 0);
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn bench_reports_a_missing_workload_as_not_found() {
    let r = run(["--json", "bench", "--workload", "/nonexistent/w.jsonl.zst"]);
    assert_eq!(r.code, 3);
    assert_eq!(r.error().0, "not_found");
}

#[test]
fn bench_scale_builds_a_session_and_small_sessions() {
    let tmp = TempDir::new("cli-bench-scale");
    let r = run_env(
        [
            "--json",
            "bench",
            "--scale",
            "--scale-events",
            "1200",
            "--small-sessions",
            "3",
            "--out-dir",
            tmp.path().to_str().unwrap(),
        ],
        &NO_PG,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v = r.json();
    let scale = &v["scale"];
    let sessions = scale["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1);
    let s = &sessions[0];
    // Cut back to the last complete turn of the workload's first 1200.
    let n = s["events"].as_u64().unwrap();
    assert!(n > 0 && n <= 1200, "{n}");
    assert_eq!(s["append"]["calls"], n.div_ceil(50));
    for k in [
        "first_10pct_cpu_ms_per_call",
        "last_10pct_cpu_ms_per_call",
        "growth",
    ] {
        assert!(s["append"][k].as_f64().is_some(), "append.{k}");
    }
    assert!(s["load"]["ms"].as_f64().is_some());
    assert!(s["load"]["peak_rss_bytes_per_event"].as_f64().unwrap() > 0.0);
    assert_eq!(s["reopen_append"]["events"], 50);
    assert!(s["reopen_append"]["ms"].as_f64().is_some());
    assert_eq!(s["reopen_append_cold"]["events"], 50);
    assert!(s["reopen_append_cold"]["ms"].as_f64().is_some());
    // The same on a SQLite copy of the log.
    for k in ["sqlite_reopen_append_cold", "sqlite_reopen_append"] {
        assert_eq!(s[k]["events"], 50, "{k}");
        assert!(s[k]["ms"].as_f64().is_some(), "{k}");
        assert!(s[k]["extra_rss_mib"].as_f64().is_some(), "{k}");
    }
    // No server: the PostgreSQL pair is null.
    for k in ["postgres_reopen_append_cold", "postgres_reopen_append"] {
        assert!(s[k]["ms"].is_null(), "{k}");
    }
    assert_eq!(scale["small_sessions"]["count"], 3);
    assert!(
        scale["small_sessions"]["open_and_list_ms"]
            .as_f64()
            .is_some()
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);

    // --scale-events needs --scale.
    let r = run_env(["bench", "--scale-events", "10"], &NO_PG);
    assert_eq!(r.code, 2, "{}", r.stderr);
}
