//! Stable-Rust "smoke fuzz": every fuzz target (`fuzz/src/targets.rs`, the
//! same bodies cargo-fuzz runs) over the seed corpus drawn from the upstream
//! fixtures plus deterministic random mutations of it, so CI exercises the
//! decoders without nightly. `DSH_FUZZ_SMOKE_ITERS` sets the mutations per
//! target (default 3,000; a tenth for the whole-file JSONL reader).
//!
//! `DSH_FUZZ_CORPUS=<dir> cargo test --test fuzz_smoke write_seed_corpus --
//! --ignored` writes the seeds as `<dir>/<target>/seed-<n>` (used by
//! `fuzz/run-all.sh`).

mod support;

#[path = "../fuzz/src/targets.rs"]
#[allow(dead_code)]
mod targets;

use std::collections::BTreeMap;

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const INTERESTING: &[&[u8]] = &[
    b"\n",
    b"\"",
    b"\\",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"0",
    b"-",
    b"1e999",
    b"9007199254740993",
    b"-9223372036854775808",
    b"\\ud800",
    b"\\u0000",
    b"null",
    b"\"seq\":",
    b"\"type\":",
    b"\"data\":",
    b"\xff",
    b"\xc3",
    b"\xf0\x9f",
    b"text-chunks",
    b"\x28\xb5\x2f\xfd",
];

/// One random mutation of `input` (byte flips, inserts, deletes, splices of
/// interesting tokens or of another seed, truncation, duplication).
fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(8) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = rng.next() as u8;
            }
            2 => {
                let end = (at + 1 + rng.below(16)).min(v.len());
                v.drain(at.min(end)..end);
            }
            3 => {
                let tok = INTERESTING[rng.below(INTERESTING.len())];
                v.splice(at..at, tok.iter().copied());
            }
            4 => v.truncate(at),
            5 if !other.is_empty() => {
                let a = rng.below(other.len());
                let b = (a + 1 + rng.below(64)).min(other.len());
                v.splice(at..at, other[a..b].iter().copied());
            }
            6 if !v.is_empty() => {
                let a = rng.below(v.len());
                let b = (a + 1 + rng.below(32)).min(v.len());
                let piece = v[a..b].to_vec();
                v.splice(at..at, piece);
            }
            _ => v.insert(at, rng.next() as u8),
        }
    }
    v
}

fn seeds_by_target() -> BTreeMap<&'static str, Vec<Vec<u8>>> {
    let mut by: BTreeMap<&'static str, Vec<Vec<u8>>> = BTreeMap::new();
    for (name, _) in targets::TARGETS {
        by.insert(name, vec![Vec::new()]);
    }
    for (name, bytes) in targets::seeds(&support::fixtures_dir()) {
        by.get_mut(name).expect("a known target").push(bytes);
    }
    by
}

#[test]
fn smoke_fuzz_every_target() {
    let iters: usize = std::env::var("DSH_FUZZ_SMOKE_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    let seeds = seeds_by_target();
    let mut report = Vec::new();
    for (name, run) in targets::TARGETS {
        let started = std::time::Instant::now();
        let corpus = &seeds[name];
        assert!(
            corpus.len() > 1 || *name == "jsonl_log",
            "no seeds for {name}"
        );
        for s in corpus {
            run(s);
        }
        let mut rng = Rng(0x5EED ^ name.len() as u64);
        // The whole-file reader writes a file per input, the ABI and whole
        // store targets a store per input: fewer rounds.
        let rounds = match *name {
            "jsonl_log" => iters / 10,
            "c_abi" | "store_files" => iters / 30,
            _ => iters,
        };
        for i in 0..rounds {
            let a = &corpus[rng.below(corpus.len())];
            let b = &corpus[rng.below(corpus.len())];
            let input = mutate(&mut rng, a, b);
            let r = std::panic::catch_unwind(|| run(&input));
            if r.is_err() {
                panic!(
                    "target {name} panicked on mutation {i}: input (hex) {}",
                    input.iter().map(|b| format!("{b:02x}")).collect::<String>()
                );
            }
        }
        report.push(format!(
            "{name}: {} seeds + {rounds} mutations in {:.2} s",
            corpus.len(),
            started.elapsed().as_secs_f64()
        ));
    }
    println!("{}", report.join("\n"));
}

#[test]
#[ignore = "writes the seed corpus for cargo-fuzz (fuzz/run-all.sh)"]
fn write_seed_corpus() {
    let dir =
        std::path::PathBuf::from(std::env::var("DSH_FUZZ_CORPUS").expect("DSH_FUZZ_CORPUS=<dir>"));
    for (name, corpus) in seeds_by_target() {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        for (i, s) in corpus.iter().enumerate() {
            std::fs::write(d.join(format!("seed-{i}")), s).unwrap();
        }
    }
}
