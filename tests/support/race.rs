//! Child processes started at one instant: each prints a line ending in
//! `ready`, then waits for a `go` file to appear.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Child;

/// Waits until every child said `ready`, creates `go`, and returns each
/// child's remaining output (its lines joined), asserting that it succeeded.
pub fn release_together(mut kids: Vec<Child>, go: &Path) -> Vec<String> {
    let mut readers: Vec<_> = kids
        .iter_mut()
        .map(|k| BufReader::new(k.stdout.take().unwrap()).lines())
        .collect();
    for r in &mut readers {
        // libtest prints its own lines first.
        loop {
            let line = r.next().expect("the child said ready").unwrap();
            if line.ends_with("ready") {
                break;
            }
        }
    }
    std::fs::write(go, b"").unwrap();
    let outs: Vec<String> = readers
        .into_iter()
        .map(|r| r.map_while(|l| l.ok()).collect::<Vec<_>>().join("\n"))
        .collect();
    for k in kids {
        assert!(k.wait_with_output().unwrap().status.success());
    }
    outs
}
