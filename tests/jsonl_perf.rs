//! Cold-load timing of the JSONL backend on the benchmark workload
//! (`shared/bench/workload-100k.jsonl.zst`, 100,205 events). Ignored by
//! default: run `cargo test --release --test jsonl_perf -- --ignored
//! --nocapture` to see the figures (the original: ~100 ms zstd packed).

mod support;

use std::io::Read as _;
use std::time::Instant;

use dsh_persist::backend::jsonl::{Compression, JsonlBackend, JsonlConfig};
use dsh_persist::backend::{Backend, Expect};
use dsh_persist::model::event::Event;
use dsh_persist::model::header::SessionHeader;
use support::*;

fn workload() -> Vec<Event> {
    let f = std::fs::File::open(bench_dir().join("workload-100k.jsonl.zst")).unwrap();
    let mut text = String::new();
    zstd::stream::read::Decoder::new(f)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text.lines().map(|l| Event::parse(l).unwrap()).collect()
}

#[test]
#[ignore = "timing; run explicitly in release"]
fn cold_load_of_the_benchmark_workload() {
    let events = workload();
    assert_eq!(events.len(), 100_205);
    for compression in [Compression::Zstd, Compression::None] {
        let tmp = TempDir::new("perf");
        let cfg = JsonlConfig {
            root: tmp.path().to_path_buf(),
            compression,
            pack_chunks: true,
            limits: Default::default(),
        };
        let be = JsonlBackend::open(cfg.clone()).unwrap();
        let header = SessionHeader::new("bench", 1);
        let t = Instant::now();
        let mut rev = None;
        for batch in events.chunks(50) {
            let expect = match &rev {
                None => Expect::New,
                Some(r) => Expect::At(r),
            };
            rev = Some(be.append(&header, batch, expect).unwrap());
        }
        let append_ms = t.elapsed().as_secs_f64() * 1e3;
        let mut best = f64::MAX;
        for _ in 0..3 {
            let cold = JsonlBackend::open(cfg.clone()).unwrap();
            let t = Instant::now();
            let log = cold.read("bench").unwrap().unwrap();
            best = best.min(t.elapsed().as_secs_f64() * 1e3);
            assert_eq!(log.events.len(), events.len());
            assert!(log.torn.is_none());
        }
        println!(
            "jsonl {} packed: append {append_ms:.0} ms, cold read best of 3 {best:.1} ms",
            compression.name()
        );
    }
}

#[test]
#[ignore = "timing; run explicitly in release"]
fn small_sessions_and_cold_list() {
    let events = workload();
    let tmp = TempDir::new("perf-small");
    let cfg = JsonlConfig::new(tmp.path());
    let be = JsonlBackend::open(cfg.clone()).unwrap();
    let t = Instant::now();
    for i in 0..1000 {
        let mut header = SessionHeader::new(format!("s{i}"), 1);
        header.cwd = Some("/bench/project".into());
        be.append(&header, &events[..5], Expect::New).unwrap();
    }
    let create_ms = t.elapsed().as_secs_f64() * 1e3 / 1000.0;
    let cold = JsonlBackend::open(cfg).unwrap();
    let t = Instant::now();
    let listed = cold.list().unwrap();
    let list_ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(listed.len(), 1000);
    println!(
        "jsonl zstd: create+append {create_ms:.2} ms/session, cold list(1000) {list_ms:.1} ms"
    );
}
