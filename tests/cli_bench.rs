//! `dsh-persist bench` report shape on a tiny workload (timings are not
//! checked here: they live only in the bench itself).

mod cli_common;
mod support;

use cli_common::*;
use support::*;

#[test]
fn bench_json_report_has_every_figure() {
    let tmp = TempDir::new("cli-bench");
    let r = run([
        "--json",
        "bench",
        "--limit-events",
        "1200",
        "--small-sessions",
        "4",
        "--out-dir",
        tmp.path().to_str().unwrap(),
    ]);
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

    // Human mode: a table with our figures beside the original's.
    let h = run([
        "bench",
        "--limit-events",
        "1200",
        "--small-sessions",
        "2",
        "--out-dir",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(h.code, 0, "{}", h.stderr);
    assert!(h.stdout.contains("ORIGINAL (run1 / run2)"));
    assert!(h.stdout.contains("912963 / 952054"), "{}", h.stdout);
    assert!(h.stdout.contains("not comparable"));
}

#[test]
fn bench_reports_a_missing_workload_as_not_found() {
    let r = run(["--json", "bench", "--workload", "/nonexistent/w.jsonl.zst"]);
    assert_eq!(r.code, 3);
    assert_eq!(r.error().0, "not_found");
}
