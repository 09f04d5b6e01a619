//! The upstream fixtures are never modified: every file listed in an
//! expected file's `filesBefore` still has its recorded sha256, and the
//! fixture folders hold no other files (e.g. no `-wal`/`-shm` left by
//! opening a fixture database in place). The test script runs this last.

mod support;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use sha2::{Digest, Sha256};

fn walk(dir: &Path, out: &mut BTreeSet<String>, base: &Path) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out, base);
        } else {
            out.insert(p.strip_prefix(base).unwrap().display().to_string());
        }
    }
}

#[test]
fn fixtures_are_byte_identical_and_complete() {
    let fixtures = support::fixtures_dir();
    let mut expected_files = BTreeSet::new();
    let mut checked = 0;
    for root in support::cases()["roots"].as_array().unwrap() {
        let name = root["name"].as_str().unwrap();
        let rel = root["path"].as_str().unwrap();
        let base = if root["kind"] == "sqlite" {
            Path::new(rel).parent().unwrap()
        } else {
            Path::new(rel)
        };
        for f in support::expected(name)["filesBefore"].as_array().unwrap() {
            let path = base.join(f["path"].as_str().unwrap());
            let bytes = fs::read(fixtures.join(&path)).unwrap();
            assert_eq!(
                format!("{:x}", Sha256::digest(&bytes)),
                f["sha256"].as_str().unwrap(),
                "{} was modified",
                path.display()
            );
            expected_files.insert(path.display().to_string());
            checked += 1;
        }
    }
    assert!(checked > 100);
    let mut present = BTreeSet::new();
    for top in ["jsonl", "sqlite"] {
        walk(&fixtures.join(top), &mut present, &fixtures);
    }
    let extra: Vec<_> = present.difference(&expected_files).collect();
    assert!(
        extra.is_empty(),
        "files appeared in the fixtures: {extra:?}"
    );
}
