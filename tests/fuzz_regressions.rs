//! Inputs that crashed a fuzz target (`fuzz/`), kept as regression tests
//! that run on stable without cargo-fuzz. Each runs through the same target
//! body as the fuzzer, plus a direct check of the fixed API.

#[path = "../fuzz/src/targets.rs"]
#[allow(dead_code)]
mod targets;

use dsh_persist::backend::rows::Value;
use dsh_persist::backend::sqlite::rows::{self, StoredRow};
use dsh_persist::codec::chunk_rows::{PackLimits, PackedRow, pack};
use dsh_persist::model::event::{Event, EventType};
use dsh_persist::model::json::JsonText;

/// chunk_row: a packed row whose `time0` is `i64::MIN` overflowed
/// `time0.abs()` (a panic in debug builds; in release the check wrapped and
/// accepted an unsafe time). Fixed with `unsigned_abs`.
#[test]
fn chunk_row_time0_of_i64_min() {
    targets::chunk_row(&[
        0x00, 0x11, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x80, 0x7e, 0x00, 0x1b, 0x3c,
    ]);
    let e = PackedRow::from_parts(
        "text-chunks",
        0,
        i64::MIN,
        r#"{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}"#,
    )
    .unwrap_err();
    assert!(e.to_string().contains("time0"), "{e}");
}

/// sqlite_row: a stored row with `time = i64::MIN` overflowed `time.abs()`
/// in the row decoder. Fixed with `unsigned_abs`: the row is refused.
#[test]
fn sqlite_row_time_of_i64_min() {
    targets::sqlite_row(&[
        0x01, 0x16, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x01, 0x09, 0x09, 0x09,
        0x09, 0x09, 0x0a, 0x08, 0x6c, 0x5f, 0x30, 0x30, 0x0d, 0x09, 0x09, 0x09, 0x09, 0x30,
    ]);
    let row = StoredRow {
        seq: 0,
        event_type: Value::Text("turn/start".into()),
        time: i64::MIN,
        data: Value::Text(r#"{"turn":1}"#.into()),
        source_event_seqs: Value::Null,
        surface_op: Value::Null,
        ignorable: Value::Null,
    };
    let e = rows::decode_row(row).unwrap_err();
    assert!(e.contains("time"), "{e}");
}

/// The packer's eligibility and continuity checks took `abs()` of event
/// times and time differences too: events stamped `i64::MIN` (a host clock
/// gone wrong) must pack without panicking (they stay unpacked).
#[test]
fn packing_events_with_extreme_times() {
    let ev = |seq: u64, time: i64| {
        Event::new(
            EventType::new("assistant/chunk"),
            seq,
            time,
            JsonText::from_trusted(format!(
                r#"{{"turn":1,"step":1,"chunk":{{"type":"text-delta","index":0,"text":"{seq}"}}}}"#
            )),
        )
    };
    for times in [
        [i64::MIN, i64::MIN, i64::MIN],
        [0, i64::MIN, 0],
        [i64::MAX, i64::MIN, 5],
    ] {
        let events: Vec<Event> = times
            .iter()
            .enumerate()
            .map(|(i, t)| ev(i as u64, *t))
            .collect();
        for limits in [PackLimits::JSONL, PackLimits::SQLITE] {
            let records = pack(&events, &limits);
            let n: u64 = records.iter().map(|r| r.member_count()).sum();
            assert_eq!(n, 3);
        }
    }
}

/// c_abi (smoke fuzz): a session handle closed twice answered
/// `DSH_INVALID_ARGUMENT` instead of `DSH_CLOSED` once more than 4,096
/// handles had been closed: evicting an old closed entry removed the newer
/// closed entry of a reused address. Fixed with a generation per entry
/// (`src/ffi/handles.rs`). The input starts, appends to and closes
/// sessions; run after about 5,000 closes so the eviction happens.
#[test]
fn c_abi_second_close_after_many_closes() {
    let input = [
        0x07, 0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x22, 0x73, 0x22, 0x7d, 0x00, 0x0a, 0x7b, 0x22,
        0x74, 0x00, 0x0d, 0x00, 0x08, 0x73, 0x00, 0x09, 0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x22,
        0x63, 0x22, 0x7d,
    ];
    let churn = [
        0x07, b'{', b'"', b'i', b'd', b'"', b':', b'"', b'x', b'"', b'}', 0x00, 0x0d,
    ];
    for _ in 0..1_000 {
        targets::c_abi(&churn);
    }
    targets::c_abi(&input);
}

/// The bounds hold in the whole-store target too: a raw log whose second
/// line is longer than the target's 4 MiB record limit is refused, not read.
#[test]
fn store_files_giant_line_is_refused() {
    let mut input = vec![1u8, 0, 0];
    input.extend_from_slice(
        br#"{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0}"#,
    );
    input.push(b'\n');
    input.extend(std::iter::repeat_n(b'a', 5 << 20));
    targets::store_files(&input);
}
