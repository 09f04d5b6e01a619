//! Every raw-mode `session.jsonl` written by the original decodes, line by
//! line through the chunk-row codec, into the events its expected file lists
//! (`readFrom.0`: the stored prefix), and re-packing those events per line
//! reproduces each line byte for byte.

mod support;

use std::fs;
use std::path::Path;

use dsh_persist::codec::chunk_rows::{PackLimits, Record, pack};
use dsh_persist::model::event::Event;
use serde_json::Value;

fn session_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            session_files(&p, out);
        } else if p.file_name().unwrap() == "session.jsonl" {
            out.push(p);
        }
    }
}

#[test]
fn raw_fixture_logs_decode_to_the_expected_events() {
    let mut checked_sessions = 0;
    let mut checked_events = 0;
    for root in [
        "jsonl-none-packed",
        "jsonl-none-unpacked",
        "jsonl-none-refused",
    ] {
        let case = support::case_root(root);
        let expected = support::expected(root);
        let dir = support::fixtures_dir().join(case["path"].as_str().unwrap());
        let mut files = Vec::new();
        session_files(&dir, &mut files);
        assert!(!files.is_empty(), "{root}: no session files");
        for file in files {
            let text = fs::read_to_string(&file).unwrap();
            let header_line = text.lines().next().unwrap();
            let id = support::parse(header_line)["id"]
                .as_str()
                .unwrap()
                .to_string();
            let session = &expected["sessions"][&id];
            let read = support::resolve(session, "readFrom.0");
            let Some(want) = read["ok"]["events"].as_array() else {
                continue; // refused by a model rule (tested with the model)
            };
            // Decode complete lines until the first one that fails: torn
            // tails are the backend's business; the stored prefix is here.
            let mut events: Vec<Event> = Vec::new();
            for line in text.split_inclusive('\n').skip(1) {
                let Some(line) = line.strip_suffix('\n') else {
                    break;
                };
                let Ok(rec) = Record::parse_line(line) else {
                    break;
                };
                if rec.first_seq() != events.len() as u64 {
                    break;
                }
                let before = events.len();
                rec.expand_into(&mut events);
                // Re-packing exactly this record's events gives the same line
                // (a line holds either one event or one row).
                let repacked = pack(&events[before..], &PackLimits::JSONL);
                let mut again = String::new();
                for r in &repacked {
                    r.write_json(&mut again);
                }
                if repacked.len() == 1 {
                    assert_eq!(again, line, "{root}/{id}: re-packed line differs");
                }
            }
            assert!(
                events.len() >= want.len(),
                "{root}/{id}: decoded {} < expected {}",
                events.len(),
                want.len()
            );
            for (got, want) in events.iter().zip(want) {
                let got: Value = support::parse(&got.to_json());
                assert_eq!(&got, want, "{root}/{id}");
                checked_events += 1;
            }
            checked_sessions += 1;
        }
    }
    assert!(
        checked_sessions >= 50,
        "only {checked_sessions} sessions checked"
    );
    assert!(
        checked_events > 4000,
        "only {checked_events} events checked"
    );
}
