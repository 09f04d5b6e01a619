//! Bounded reads and the same bounds on writes (`maxRecordBytes`,
//! `maxLogBytes`): decompression bombs, giant lines and rows, logs over the
//! limit — a clear `corruption` error naming the file or session, the place
//! and the limit, never an abort and never a repair; and an append that a
//! reader would refuse is refused up front.
//!
//! The stores are small (limits of a few MiB) so the suite stays fast; the
//! 16 GiB bombs of `../shared/reliability/zstd_bomb.py` and `sqlite_bomb.py`
//! are run against the release CLI under `prlimit --as` in
//! `docs/reliability.md`.

mod support;

use std::path::Path;

use dsh_persist::ErrorKind;
use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::{AppendOptions, Store};
use support::TempDir;

const MIB: usize = 1 << 20;

/// Limits of 2 MiB per record and 8 MiB per log.
const LIMITS: &str = r#""maxRecordBytes":2097152,"maxLogBytes":8388608"#;

fn jsonl(root: &Path, compression: &str) -> Store {
    Store::open_json(&format!(
        r#"{{"backend":"jsonl","root":{},"compression":"{compression}",{LIMITS}}}"#,
        serde_json::to_string(root).unwrap()
    ))
    .unwrap()
}

fn sqlite(path: &Path) -> Store {
    Store::open_json(&format!(
        r#"{{"backend":"sqlite","path":{},{LIMITS}}}"#,
        serde_json::to_string(path).unwrap()
    ))
    .unwrap()
}

const MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

fn block_header(last: bool, btype: u32, size: u32) -> [u8; 3] {
    let v = u32::from(last) | (btype << 1) | (size << 3);
    [v as u8, (v >> 8) as u8, (v >> 16) as u8]
}

/// A Zstandard frame (no checksum, no content size): `prefix` as a raw
/// block, then `fill_len` bytes of `fill` as RLE blocks.
fn bomb_frame(prefix: &[u8], fill: u8, fill_len: usize) -> Vec<u8> {
    const BLOCK: usize = 128 * 1024;
    let mut out = MAGIC.to_vec();
    out.extend([0x00, 0x58]);
    let mut blocks: Vec<(u32, Vec<u8>, u32)> = Vec::new();
    if !prefix.is_empty() {
        blocks.push((0, prefix.to_vec(), prefix.len() as u32));
    }
    let mut left = fill_len;
    while left > 0 {
        let n = left.min(BLOCK);
        blocks.push((1, vec![fill], n as u32));
        left -= n;
    }
    let count = blocks.len();
    for (i, (t, body, size)) in blocks.into_iter().enumerate() {
        out.extend(block_header(i + 1 == count, t, size));
        out.extend(body);
    }
    out
}

fn header_line(id: &str) -> String {
    format!("{}\n", SessionHeader::new(id, 1).to_jsonl_line())
}

fn plant(root: &Path, id: &str, file: &str, bytes: &[u8]) -> std::path::PathBuf {
    let dir = root.join("_no-cwd").join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(file);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// A JSONL log file of `text` (whole lines): as it is for `none`, one
/// Zstandard frame per line for `zstd`; its name and bytes.
fn log_file(compression: &str, text: &str) -> (&'static str, Vec<u8>) {
    if compression == "none" {
        return ("session.jsonl", text.as_bytes().to_vec());
    }
    let mut out = Vec::new();
    for l in text.split_inclusive('\n') {
        out.extend(dsh_persist::backend::jsonl::codec_zstd::encode_frame(l.as_bytes()).unwrap());
    }
    ("session.jsonl.zstd", out)
}

/// The error of `r`, which must be a corruption naming each of `want`.
fn corruption<T: std::fmt::Debug>(r: dsh_persist::Result<T>, want: &[&str]) -> String {
    let e = r.expect_err("a limit must fail the read");
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    let text = e.to_string();
    for w in want {
        assert!(text.contains(w), "{text:?} does not name {w:?}");
    }
    text
}

#[test]
fn zstd_header_frame_bomb_fails_list_and_reads_cleanly() {
    let dir = TempDir::new("bomb-header");
    let root = dir.path().join("root");
    let frame = bomb_frame(header_line("hb").as_bytes(), b'a', 64 * MIB);
    let path = plant(&root, "hb", "session.jsonl.zstd", &frame);
    assert!(frame.len() < 64 * 1024, "a small file: {}", frame.len());
    let store = jsonl(&root, "zstd");
    let file = path.display().to_string();
    corruption(
        store.list(),
        &[&file, "header frame", "maxRecordBytes", "2097152"],
    );
    for r in [store.inspect("hb"), store.load("hb")] {
        corruption(r.map(|_| ()), &[&file, "maxRecordBytes", "2097152"]);
    }
    corruption(store.read_from("hb", 0).map(|_| ()), &[&file]);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        frame,
        "load repaired nothing"
    );
}

#[test]
fn zstd_body_bomb_and_torn_bomb_are_corruption_not_torn_tails() {
    let dir = TempDir::new("bomb-body");
    let root = dir.path().join("root");
    let mut file =
        dsh_persist::backend::jsonl::codec_zstd::encode_frame(header_line("bb").as_bytes())
            .unwrap();
    let body_at = file.len();
    file.extend(bomb_frame(b"", b'a', 64 * MIB));
    let path = plant(&root, "bb", "session.jsonl.zstd", &file);
    let store = jsonl(&root, "zstd");
    assert_eq!(store.list().unwrap().len(), 1, "the header frame is fine");
    let text = corruption(
        store.load("bb").map(|_| ()),
        &[
            &path.display().to_string(),
            &format!("frame at byte {body_at}"),
            "maxRecordBytes",
        ],
    );
    assert!(!text.contains("torn"), "{text}");
    // The same frame cut short (a torn last frame) is no torn tail either:
    // no writer of this library leaves a record that long.
    let cut = file.len() - 100;
    std::fs::write(&path, &file[..cut]).unwrap();
    corruption(store.load("bb").map(|_| ()), &["maxRecordBytes"]);
    assert_eq!(std::fs::read(&path).unwrap(), &file[..cut]);
}

/// A zstd log of more frames than a log within `maxLogBytes` can hold
/// (every frame holds a line of at least 40 bytes: 209 716 under 8 MiB) is
/// corruption before its frames are indexed: 300 000 empty 9-byte frames
/// (2.7 MB; 200 MB of them took 1.8 GB to index and walk).
#[test]
fn zstd_logs_of_more_frames_than_a_log_can_hold_are_refused() {
    let dir = TempDir::new("many-frames");
    let root = dir.path().join("root");
    let codec = dsh_persist::backend::jsonl::codec_zstd::encode_frame;
    let mut file = codec(header_line("mf").as_bytes()).unwrap();
    file.extend(
        codec(b"{\"type\":\"turn/start\",\"seq\":0,\"time\":1,\"data\":{\"turn\":1}}\n").unwrap(),
    );
    // An empty frame: single segment, content size 0, one empty raw block.
    let empty = [0x28, 0xB5, 0x2F, 0xFD, 0x20, 0x00, 0x01, 0x00, 0x00];
    for _ in 0..300_000 {
        file.extend(empty);
    }
    let path = plant(&root, "mf", "session.jsonl.zstd", &file);
    let store = jsonl(&root, "zstd");
    let summary = store.summary("mf").map(|_| ());
    for r in [
        store.inspect("mf").map(|_| ()),
        store.load("mf").map(|_| ()),
        summary,
    ] {
        corruption(r, &["more than 209716 frames", "maxLogBytes"]);
    }
    assert_eq!(std::fs::read(&path).unwrap(), file, "load repaired nothing");
    // 200 000 of them are within the bound: read (an empty frame adds nothing).
    file.truncate(file.len() - 100_000 * empty.len());
    std::fs::write(&path, &file).unwrap();
    assert_eq!(store.inspect("mf").unwrap().events[0].seq, 0);
}

/// Every line counts at least the 40 bytes of the shortest record line
/// (its `\n` included): 250 000 blank lines are a 250 KB file that no
/// writer writes and that counts 10 MB, over the 8 MiB test limit, on both
/// JSONL encodings (a 1 GiB file of them was a billion lines to parse).
/// Nothing is repaired; a log of lines that parse counts its bytes.
#[test]
fn short_lines_count_as_the_shortest_record_line() {
    let dir = TempDir::new("blank-lines");
    let root = dir.path().join("root");
    let text = format!(
        "{}{}\n{}",
        header_line("bl"),
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#,
        "\n".repeat(250_000)
    );
    for compression in ["none", "zstd"] {
        let (name, bytes) = if compression == "none" {
            ("session.jsonl", text.clone().into_bytes())
        } else {
            let codec = dsh_persist::backend::jsonl::codec_zstd::encode_frame;
            let (head, rest) = text.split_at(header_line("bl").len());
            let mut out = codec(head.as_bytes()).unwrap();
            out.extend(codec(rest.as_bytes()).unwrap());
            ("session.jsonl.zstd", out)
        };
        let _ = std::fs::remove_dir_all(&root);
        let path = plant(&root, "bl", name, &bytes);
        let store = jsonl(&root, compression);
        corruption(store.load("bl").map(|_| ()), &["maxLogBytes", "8388608"]);
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{compression}");
    }
}

#[test]
fn giant_plain_lines_are_refused_at_their_byte() {
    let dir = TempDir::new("plain-giant");
    let root = dir.path().join("root");
    let head = header_line("pg");
    let good = r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#;
    // A complete 3 MiB line, then the same without its newline (torn).
    let giant = format!("{{\"x\":\"{}\"}}", "a".repeat(3 * MIB));
    let at = head.len() + good.len() + 1;
    for newline in [true, false] {
        let mut text = format!("{head}{good}\n{giant}");
        if newline {
            text.push('\n');
        }
        let path = plant(&root, "pg", "session.jsonl", text.as_bytes());
        let store = jsonl(&root, "none");
        corruption(
            store.load("pg").map(|_| ()),
            &[&format!("starting at byte {at}"), "maxRecordBytes"],
        );
        assert_eq!(std::fs::read(&path).unwrap(), text.as_bytes());
    }
    // A first line over the limit fails list too.
    let path = plant(&root, "pg", "session.jsonl", giant.as_bytes());
    let store = jsonl(&root, "none");
    corruption(
        store.list(),
        &[&path.display().to_string(), "starting at byte 0"],
    );
}

/// A stored line of 150 000 keys, one of them repeated (1.8 MiB, under the
/// 2 MiB record limit): `JSON.parse` keeps the last value of a repeated key,
/// and finding the repeats once compared every key with every other (the
/// read took minutes; a line of millions of keys, hours). Now the line is
/// read at once and refused for its unknown keys wherever it is.
#[test]
fn a_line_of_many_keys_with_a_repeat_is_judged_at_once() {
    let dir = TempDir::new("many-keys");
    let root = dir.path().join("root");
    let keys: String = (0..150_000).map(|i| format!(r#","k{i}":0"#)).collect();
    let crafted = format!(
        r#"{{"type":"step/start","seq":1,"time":2,"data":{{"turn":1,"step":1}}{keys},"k0":1}}"#
    );
    assert!(crafted.len() < 2 * MIB, "{}", crafted.len());
    let head = header_line("mk");
    let start = r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#;
    let end =
        r#"{"type":"turn/end","seq":2,"time":3,"data":{"turn":1,"reason":{"kind":"completed"}}}"#;
    for compression in ["none", "zstd"] {
        let store = jsonl(&root, compression);
        let file = |lines: &[&str]| {
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            log_file(compression, &text)
        };
        // Before the last turn/end and as the last line: an event whose
        // envelope is invalid (its unknown keys), refused; nothing repaired.
        for lines in [
            vec![head.trim_end(), start, &crafted, end],
            vec![head.trim_end(), start, &crafted],
        ] {
            let _ = std::fs::remove_dir_all(&root);
            let (name, bytes) = file(&lines);
            let path = plant(&root, "mk", name, &bytes);
            corruption(
                store.load("mk").map(|_| ()),
                &["\"mk\"", "event at index 1 has an invalid event envelope"],
            );
            assert_eq!(std::fs::read(&path).unwrap(), bytes, "{compression}");
        }
    }
}

#[test]
fn logs_over_max_log_bytes_fail_on_every_backend() {
    let dir = TempDir::new("log-limit");
    // 12 lines of 1 MiB: each under the record limit, 12 MiB over the log's.
    let head = header_line("big");
    let mut text = head.clone();
    for seq in 0..12u64 {
        text.push_str(&format!(
            "{{\"type\":\"x/y\",\"seq\":{seq},\"time\":1,\"ignorable\":true,\"data\":\"{}\"}}\n",
            "b".repeat(MIB)
        ));
    }
    let raw = dir.path().join("raw");
    plant(&raw, "big", "session.jsonl", text.as_bytes());
    corruption(
        jsonl(&raw, "none").load("big").map(|_| ()),
        &["maxLogBytes", "8388608"],
    );
    let z = dir.path().join("z");
    let mut file = Vec::new();
    for chunk in text.split_inclusive('\n') {
        file.extend(
            dsh_persist::backend::jsonl::codec_zstd::encode_frame(chunk.as_bytes()).unwrap(),
        );
    }
    plant(&z, "big", "session.jsonl.zstd", &file);
    corruption(
        jsonl(&z, "zstd").inspect("big").map(|_| ()),
        &["maxLogBytes"],
    );
    // read_raw holds the whole text: bounded by the log limit as well.
    corruption(
        jsonl(&z, "zstd").read_raw("big").map(|_| ()),
        &["maxLogBytes"],
    );
}

/// A SQLite store with one complete turn in session `s`, then `rows` extra
/// `session/title` rows whose data BLOB decodes to `each` bytes.
fn sqlite_with_bomb_rows(path: &Path, rows: usize, each: usize) {
    let store = sqlite(path);
    store.create(SessionHeader::new("s", 1)).unwrap();
    store
        .append_json(
            "s",
            r#"[{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}},{"type":"turn/end","seq":1,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}]"#,
        )
        .unwrap();
    store.close().unwrap();
    let text = format!("\"{}\"", "a".repeat(each - 2));
    let blob = zstd::bulk::compress(text.as_bytes(), 3).unwrap();
    let conn = rusqlite::Connection::open(path).unwrap();
    for k in 0..rows {
        conn.execute(
            "INSERT INTO events VALUES ('s', ?1, 'session/title', 1, ?2, NULL, NULL, NULL)",
            rusqlite::params![2 + k as i64, blob],
        )
        .unwrap();
    }
}

fn event_rows(path: &Path) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn sqlite_row_bombs_are_corruption_and_never_deleted() {
    let dir = TempDir::new("sqlite-bomb");
    // One row over the record limit, after the last turn/end (where an
    // undecodable row would be a torn tail).
    let one = dir.path().join("one.db");
    sqlite_with_bomb_rows(&one, 1, 3 * MIB);
    let store = sqlite(&one);
    for r in [store.inspect("s"), store.load("s"), store.read_from("s", 0)] {
        corruption(
            r.map(|_| ()),
            &["session \"s\"", "row at seq 2", "maxRecordBytes", "2097152"],
        );
    }
    store.close().unwrap();
    assert_eq!(event_rows(&one), 3, "load deleted nothing");
    // Rows under the record limit that add up past the log limit.
    let many = dir.path().join("many.db");
    sqlite_with_bomb_rows(&many, 6, 2 * MIB - 1024);
    let store = sqlite(&many);
    corruption(
        store.load("s").map(|_| ()),
        &["session \"s\"", "maxLogBytes", "8388608"],
    );
    store.close().unwrap();
    assert_eq!(event_rows(&many), 8);
    // TEXT data over the limit is refused before it is copied.
    let text = dir.path().join("text.db");
    sqlite_with_bomb_rows(&text, 0, 16);
    rusqlite::Connection::open(&text)
        .unwrap()
        .execute(
            "INSERT INTO events VALUES ('s', 2, 'session/title', 1, ?1, NULL, NULL, NULL)",
            [format!("\"{}\"", "t".repeat(3 * MIB))],
        )
        .unwrap();
    corruption(
        sqlite(&text).inspect("s").map(|_| ()),
        &["row at seq 2", "stores", "maxRecordBytes"],
    );
}

/// The data of a packed `text-chunks` row of `members` one-letter deltas
/// (six bytes of row each).
fn packed_text_data(members: usize) -> String {
    format!(
        r#"{{"turn":1,"step":1,"index":0,"dt":[{}],"texts":[{}]}}"#,
        vec!["1"; members - 1].join(","),
        vec![r#""a""#; members].join(",")
    )
}

/// What a store holds of a session, to compare before and after a load.
type StoredBytes = Box<dyn Fn() -> Vec<u8>>;

/// The events a read builds of a packed chunk row are counted against
/// `maxLogBytes`, not only the row's bytes: a row of 70 000 one-letter
/// deltas (420 KB, under the 2 MiB record limit) counts 9 MB of events
/// and is refused under the 8 MiB log limit, on every backend, as
/// corruption that no load repairs (it built 2.5 GB of events for a 70 MB
/// line before); 40 000 such deltas (5 MB counted) read.
#[test]
fn packed_rows_count_the_events_they_expand_to() {
    let dir = TempDir::new("expansion");
    let opening = [
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#,
        r#"{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}"#,
        r#"{"type":"assistant/chunk","seq":2,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"block-start","index":0,"blockType":"text"}}}"#,
    ];
    for (members, fits) in [(70_000, false), (40_000, true)] {
        let data = packed_text_data(members);
        let row = format!(r#"{{"type":"text-chunks","seq0":3,"time0":1,"data":{data}}}"#);
        let mut stores: Vec<(String, Store, StoredBytes)> = Vec::new();
        for compression in ["none", "zstd"] {
            let root = dir.path().join(format!("{compression}-{members}"));
            let mut text = header_line("px");
            for l in opening.iter().copied().chain([row.as_str()]) {
                text.push_str(l);
                text.push('\n');
            }
            let (name, bytes) = log_file(compression, &text);
            let path = plant(&root, "px", name, &bytes);
            stores.push((
                format!("jsonl {compression}"),
                jsonl(&root, compression),
                Box::new(move || std::fs::read(&path).unwrap()),
            ));
        }
        let db = dir.path().join(format!("{members}.db"));
        let store = sqlite(&db);
        store.create(SessionHeader::new("px", 1)).unwrap();
        store
            .append_json("px", &format!("[{}]", opening.join(",")))
            .unwrap();
        store.close().unwrap();
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute(
                "INSERT INTO events VALUES ('px', 3, 'text-chunks', 1, ?1, NULL, NULL, 0)",
                [&data],
            )
            .unwrap();
        let rows = move || event_rows(&db).to_le_bytes().to_vec();
        stores.push((
            "sqlite".into(),
            sqlite(&dir.path().join(format!("{members}.db"))),
            Box::new(rows),
        ));
        for (kind, store, stored) in &stores {
            let before = stored();
            if fits {
                // (and the closers a balanced read adds)
                let log = store.inspect("px").unwrap();
                let deltas = log
                    .events
                    .iter()
                    .filter(|e| (3..3 + members as u64).contains(&e.seq));
                assert_eq!(deltas.count(), members, "{kind}");
                continue;
            }
            // A catalog summary reads a window of the tail: the same count.
            let summary = store.summary("px").map(|_| ());
            for r in [
                store.inspect("px").map(|_| ()),
                store.load("px").map(|_| ()),
                summary,
            ] {
                corruption(
                    r,
                    &[
                        "maxLogBytes",
                        "8388608",
                        &format!(
                            "a packed chunk row of {members} events, each counted as 128 bytes more"
                        ),
                    ],
                );
            }
            assert_eq!(stored(), before, "{kind}: load repaired nothing");
        }
    }
}

/// `import` counts the events of the packed rows it expands as a read
/// does, and refuses a text whose rows come to more than an append may
/// bring into a log before it builds them (70 000 deltas: 9 MB against
/// 7.5 MiB); 20 000 import.
#[test]
fn import_counts_the_events_packed_rows_expand_to() {
    let dir = TempDir::new("import-expansion");
    let store = sqlite(&dir.path().join("s.db"));
    let text = |members: usize| {
        format!(
            "{}\n{}\n{{\"type\":\"text-chunks\",\"seq0\":2,\"time0\":1,\"data\":{}}}\n",
            r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#,
            r#"{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}"#,
            packed_text_data(members)
        )
    };
    let e = store.import_jsonl("big", &text(70_000)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(
        e.to_string().starts_with(
            "import line 3: the events of the packed chunk rows up to it, each counted as 128 bytes, come to more than the 7864320 bytes"
        ),
        "{e}"
    );
    assert!(store.list().unwrap().is_empty(), "nothing was created");
    // The append counts each event by its bound (about 320 bytes here),
    // more than the read's count: 20 000 deltas fit, 40 000 would not.
    let r = store.import_jsonl("fits", &text(20_000)).unwrap();
    assert_eq!(r.events, 20_002);
}

/// `follow` reads what was appended since its last poll under the same
/// bounds: a packed row whose events count past `maxLogBytes` is an error
/// (it built them before), and so is a file grown by more than twice the
/// limit (it read all of it into memory).
#[test]
fn follow_reads_what_was_appended_within_the_bounds() {
    let dir = TempDir::new("follow-bounds");
    let root = dir.path().join("root");
    let store = jsonl(&root, "none");
    let wait = std::time::Duration::from_millis(10);
    // A session of one open step, followed; then `bytes` appended to its log.
    let followed_then = |id: &str, bytes: &[u8]| {
        store.create(SessionHeader::new(id, 1)).unwrap();
        store
            .append_json(
                id,
                r#"[{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}},{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}]"#,
            )
            .unwrap();
        let mut follow = store.follow(id, None).unwrap();
        assert!(follow.next_batch(wait).unwrap().is_empty());
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(root.join("_no-cwd").join(id).join("session.jsonl"))
            .unwrap()
            .write_all(bytes)
            .unwrap();
        follow.next_batch(wait)
    };
    let row = format!(
        "{{\"type\":\"text-chunks\",\"seq0\":2,\"time0\":1,\"data\":{}}}\n",
        packed_text_data(70_000)
    );
    corruption(
        followed_then("f", row.as_bytes()),
        &["maxLogBytes", "8388608", "in what was appended after byte"],
    );
    corruption(
        followed_then("g", &vec![b' '; 17 * MIB]),
        &[
            "maxLogBytes",
            &format!("{} bytes were appended after byte", 17 * MIB),
        ],
    );
}

fn big_message(bytes: usize) -> String {
    format!(
        r#"{{"id":"u1","role":"user","content":[{{"type":"text","text":"{}"}}],"source":{{"kind":"user"}}}}"#,
        "a".repeat(bytes)
    )
}

#[test]
fn appends_a_reader_would_refuse_are_refused_up_front() {
    let dir = TempDir::new("write-bounds");
    let stores: Vec<(&str, Store)> = vec![
        ("zstd", jsonl(&dir.path().join("z"), "zstd")),
        ("none", jsonl(&dir.path().join("n"), "none")),
        ("sqlite", sqlite(&dir.path().join("s.db"))),
    ];
    let opts = AppendOptions {
        surface_op: Some(r#""append""#.to_string()),
        ..AppendOptions::default()
    };
    for (kind, store) in &stores {
        // Live: refused at append, before anything is acknowledged.
        let live = store.start(SessionHeader::new("live", 1)).unwrap();
        live.append("turn/start", r#"{"turn":1}"#, &AppendOptions::default())
            .unwrap();
        let e = live
            .append("user/message", &big_message(3 * MIB), &opts)
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{kind}: {e}");
        assert!(e.to_string().contains("maxRecordBytes"), "{kind}: {e}");
        live.append("user/message", &big_message(MIB), &opts)
            .unwrap();
        live.append(
            "turn/end",
            r#"{"turn":1,"reason":{"kind":"completed"}}"#,
            &AppendOptions::default(),
        )
        .unwrap();
        live.close().unwrap();
        assert_eq!(store.load("live").unwrap().events.len(), 3, "{kind}");
        // Store-level append: refused, nothing written.
        store.create(SessionHeader::new("cold", 1)).unwrap();
        let big = format!(
            r#"[{{"type":"turn/start","seq":0,"time":1,"data":{{"turn":1}}}},{{"type":"user/message","seq":1,"time":1,"surfaceOp":"append","data":{}}}]"#,
            big_message(3 * MIB)
        );
        let e = store.append_json("cold", &big).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{kind}: {e}");
        assert!(e.to_string().contains("at seq 1"), "{kind}: {e}");
        assert!(store.list().unwrap().iter().all(|h| h.id != "cold"));
    }
}

/// The stores of the log-limit tests: (kind, a function that opens it
/// again). PostgreSQL when its test server is up.
fn limit_stores(dir: &Path, schema: Option<&support::pg::Schema>) -> Vec<(String, String)> {
    let mut v = vec![
        (
            "zstd".to_string(),
            format!(
                r#"{{"backend":"jsonl","root":{},"compression":"zstd",{LIMITS}}}"#,
                serde_json::to_string(&dir.join("z")).unwrap()
            ),
        ),
        (
            "none".to_string(),
            format!(
                r#"{{"backend":"jsonl","root":{},"compression":"none",{LIMITS}}}"#,
                serde_json::to_string(&dir.join("n")).unwrap()
            ),
        ),
        (
            "sqlite".to_string(),
            format!(
                r#"{{"backend":"sqlite","path":{},{LIMITS}}}"#,
                serde_json::to_string(&dir.join("s.db")).unwrap()
            ),
        ),
    ];
    if let Some(s) = schema {
        v.push((
            "postgres".to_string(),
            format!(
                r#"{{"backend":"postgres","url":{},"schema":"{}",{LIMITS}}}"#,
                serde_json::to_string(&s.url).unwrap(),
                s.name
            ),
        ));
    }
    v
}

/// The loaded events are the acknowledged ones, byte for byte (compared
/// as JSON lines: the events are megabytes long).
fn same_events(
    loaded: &[dsh_persist::model::event::Event],
    acked: &[dsh_persist::model::event::Event],
    kind: &str,
) {
    assert_eq!(loaded.len(), acked.len(), "{kind}: event count");
    for (a, b) in loaded.iter().zip(acked) {
        let (a, b) = (a.to_json(), b.to_json());
        assert!(
            a == b,
            "{kind}: {} != {}",
            &a[..a.len().min(200)],
            &b[..b.len().min(200)]
        );
    }
}

/// Appends turns of 1 MiB until an append is refused; returns the refusal
/// (every acknowledged event is flushed without error first).
fn fill_until_refused(live: &dsh_persist::store::LiveSession, kind: &str) -> dsh_persist::Error {
    let opts = AppendOptions {
        surface_op: Some(r#""append""#.to_string()),
        ..AppendOptions::default()
    };
    let first_turn = live
        .snapshot()
        .iter()
        .filter(|e| e.type_str() == "turn/start")
        .count() as u64
        + 1;
    for turn in first_turn..first_turn + 20 {
        live.append(
            "turn/start",
            &format!(r#"{{"turn":{turn}}}"#),
            &AppendOptions::default(),
        )
        .unwrap();
        if let Err(e) = live.append("user/message", &big_message(MIB), &opts) {
            // The turn stays open: close it (small events still fit).
            live.append(
                "turn/end",
                &format!(r#"{{"turn":{turn},"reason":{{"kind":"completed"}}}}"#),
                &AppendOptions::default(),
            )
            .unwrap();
            live.flush()
                .unwrap_or_else(|f| panic!("{kind}: a flush of acknowledged events failed: {f}"));
            return e;
        }
        live.append(
            "turn/end",
            &format!(r#"{{"turn":{turn},"reason":{{"kind":"completed"}}}}"#),
            &AppendOptions::default(),
        )
        .unwrap();
    }
    panic!("{kind}: 20 MiB never refused")
}

/// What a live session acknowledges its write-behind writer accepts: an
/// append that would bring the log past `maxLogBytes` (less the repair
/// room) is refused at `append`, naming the session, the seq and the limit;
/// every acknowledged event is written and loads back; after a resume (the
/// count starts from the stored log) the same holds.
#[test]
fn live_appends_are_refused_at_append_before_the_log_limit() {
    let dir = TempDir::new("write-log-limit");
    let schema = support::pg::url("live_appends_are_refused_at_append_before_the_log_limit")
        .map(|u| support::pg::Schema::new(&u, "loglimit"));
    for (kind, config) in limit_stores(dir.path(), schema.as_ref()) {
        let kind = kind.as_str();
        let store = Store::open_json(&config).unwrap();
        let live = store.start(SessionHeader::new("fill", 1)).unwrap();
        let e = fill_until_refused(&live, kind);
        let seq = live.len() - 1; // the refused event's seq was taken by turn/end
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{kind}: {e}");
        for want in [
            "maxLogBytes 8388608",
            "session \"fill\"",
            &format!("at seq {seq}"),
        ] {
            assert!(e.to_string().contains(want), "{kind}: {want:?} not in {e}");
        }
        assert!(live.background_error().is_none(), "{kind}");
        let acknowledged = live.snapshot();
        live.close().unwrap();
        drop(store);
        // Everything acknowledged reads back, from a fresh store.
        let store = Store::open_json(&config).unwrap();
        same_events(&store.load("fill").unwrap().events, &acknowledged, kind);
        // Resumed: the count starts where the stored log is.
        let live = store.resume("fill").unwrap();
        let e = live
            .append("user/message", &big_message(MIB), &AppendOptions::default())
            .unwrap_err();
        assert!(e.to_string().contains("maxLogBytes"), "{kind}: {e}");
        let e = fill_until_refused(&live, kind);
        assert!(e.to_string().contains("maxLogBytes"), "{kind}: {e}");
        let acknowledged = live.snapshot();
        live.close().unwrap();
        drop(store);
        let store = Store::open_json(&config).unwrap();
        same_events(&store.load("fill").unwrap().events, &acknowledged, kind);
        // A seed that would not fit is refused when the session starts.
        let seed = acknowledged[..acknowledged.len() - 3].to_vec();
        let mut doubled = seed.clone();
        for e in &seed[..] {
            let mut e = e.clone();
            e.seq += seed.len() as u64;
            doubled.push(e);
        }
        let e = store
            .start_with_seed(SessionHeader::new("seeded", 1), doubled.clone())
            .err()
            .unwrap_or_else(|| panic!("{kind}: an oversized seed started"));
        assert!(e.to_string().contains("maxLogBytes"), "{kind}: {e}");
        // Also when the seed ends with its marker (no marker is appended
        // after it, so the seed's own check is all that refuses it).
        let marker = format!(
            r#"{{"type":"session/end-seed","seq":{},"time":1,"data":{{}}}}"#,
            doubled.len()
        );
        doubled.push(dsh_persist::model::event::Event::parse(&marker).unwrap());
        let e = store
            .start_with_seed(SessionHeader::new("seeded-marked", 1), doubled)
            .err()
            .unwrap_or_else(|| panic!("{kind}: an oversized seed with its marker started"));
        assert!(e.to_string().contains("maxLogBytes"), "{kind}: {e}");
    }
}

/// A complete turn at `seq` as a store-level append's JSON: its user
/// message carries 1 MiB.
fn big_turn(turn: u64, seq: u64) -> String {
    format!(
        r#"[{{"type":"turn/start","seq":{},"time":1,"data":{{"turn":{turn}}}}},{{"type":"user/message","seq":{},"time":1,"surfaceOp":"append","data":{}}},{{"type":"turn/end","seq":{},"time":1,"data":{{"turn":{turn},"reason":{{"kind":"completed"}}}}}}]"#,
        seq,
        seq + 1,
        big_message(MIB).replace("\"u1\"", &format!("\"u{turn}\"")),
        seq + 2
    )
}

/// The store-level (cold) append follows the live session's rule on every
/// backend, PostgreSQL included: an append that would bring the log past
/// `maxLogBytes` (less the repair room) is refused, naming the limit, and
/// writes nothing; what was acknowledged loads back.
#[test]
fn store_level_appends_are_refused_before_the_log_limit() {
    let dir = TempDir::new("cold-log-limit");
    let schema = support::pg::url("store_level_appends_are_refused_before_the_log_limit")
        .map(|u| support::pg::Schema::new(&u, "coldlimit"));
    for (kind, config) in limit_stores(dir.path(), schema.as_ref()) {
        let kind = kind.as_str();
        let store = Store::open_json(&config).unwrap();
        store.create(SessionHeader::new("cold", 1)).unwrap();
        let mut seq = 0u64;
        let mut refused = None;
        for turn in 1..=20u64 {
            match store.append_json("cold", &big_turn(turn, seq)) {
                Ok(_) => seq += 3,
                Err(e) => {
                    refused = Some(e);
                    break;
                }
            }
        }
        let e = refused.unwrap_or_else(|| panic!("{kind}: 20 MiB never refused"));
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{kind}: {e}");
        assert!(e.to_string().contains("maxLogBytes 8388608"), "{kind}: {e}");
        drop(store);
        let store = Store::open_json(&config).unwrap();
        assert_eq!(
            store.load("cold").unwrap().events.len() as u64,
            seq,
            "{kind}"
        );
    }
}

/// The workload's first complete turns up to `n` events (chunk-heavy: a
/// store packs them, so its log is far smaller than the events' bounds).
fn workload_prefix(n: usize) -> Vec<dsh_persist::model::event::Event> {
    let path = support::bench_dir().join("workload-100k.jsonl.zst");
    let bytes = std::fs::read(&path).unwrap();
    let text = String::from_utf8(zstd::decode_all(&bytes[..]).unwrap()).unwrap();
    let mut events: Vec<dsh_persist::model::event::Event> = text
        .lines()
        .take(n)
        .map(|l| dsh_persist::model::event::Event::parse(l).unwrap())
        .collect();
    let end = events
        .iter()
        .rposition(|e| e.type_str() == "turn/end")
        .unwrap();
    events.truncate(end + 1);
    events
}

/// The workload's first 40,000 events: their bounds sum to more than the
/// 7.5 MiB an append may reach under [`LIMITS`]; their packed log is far
/// below it.
fn over_the_limit_by_bounds() -> Vec<dsh_persist::model::event::Event> {
    let events = workload_prefix(40_000);
    let bounds: u64 = events
        .iter()
        .map(dsh_persist::backend::limits::record_bound)
        .sum();
    assert!(bounds > 8 * MIB as u64, "{bounds}");
    events
}

/// A store counts its log as a read of it counts it, on every backend: the
/// size an append reaches is the log's decoded size (JSONL) or its rows'
/// stored and decoded bytes (SQLite, PostgreSQL), not the sum of the
/// events' upper bounds (which, for packed chunks, is about ten times
/// more: a long session would be refused far below `maxLogBytes`). So a
/// store that wrote the log and a fresh one that read it refuse the same
/// append naming the same size, and what was acknowledged loads back.
#[test]
fn the_size_an_append_counts_is_what_a_read_counts() {
    let dir = TempDir::new("exact-log-count");
    let schema = support::pg::url("the_size_an_append_counts_is_what_a_read_counts")
        .map(|u| support::pg::Schema::new(&u, "exactcount"));
    let events = over_the_limit_by_bounds();
    let turns = events
        .iter()
        .filter(|e| e.type_str() == "turn/start")
        .count() as u64;
    for (kind, config) in limit_stores(dir.path(), schema.as_ref()) {
        let kind = kind.as_str();
        let store = Store::open_json(&config).unwrap();
        store.create(SessionHeader::new("exact", 1)).unwrap();
        for batch in events.chunks(50) {
            store
                .append("exact", batch.to_vec())
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
        }
        // Then 1 MiB turns until refused: the writing store's count.
        let mut seq = events.len() as u64;
        let mut turn = turns + 1;
        let refused = loop {
            assert!(turn < turns + 20, "{kind}: 20 MiB never refused");
            match store.append_json("exact", &big_turn(turn, seq)) {
                Ok(_) => {
                    seq += 3;
                    turn += 1;
                }
                Err(e) => break e,
            }
        };
        assert_eq!(
            refused.kind(),
            ErrorKind::InvalidArgument,
            "{kind}: {refused}"
        );
        store.close().unwrap();
        // A fresh store reads the log, counts it, and refuses the same
        // append at the same size.
        let fresh = Store::open_json(&config).unwrap();
        let loaded = fresh.load("exact").unwrap();
        assert_eq!(loaded.events.len() as u64, seq, "{kind}");
        let again = fresh
            .append_json("exact", &big_turn(turn, seq))
            .unwrap_err();
        assert_eq!(again.to_string(), refused.to_string(), "{kind}");
    }
}

/// A live session counts what its written batches store, not their
/// events' bounds: the workload's chunk-heavy turns (bounds well over the
/// limit, packed log well under it) are all acknowledged on every backend
/// when the session flushes as it goes; then 1 MiB turns are refused at
/// the limit as before, and everything acknowledged loads back.
#[test]
fn a_live_session_counts_its_written_batches_as_a_read_does() {
    let dir = TempDir::new("live-exact-count");
    let schema = support::pg::url("a_live_session_counts_its_written_batches_as_a_read_does")
        .map(|u| support::pg::Schema::new(&u, "liveexact"));
    let events = over_the_limit_by_bounds();
    for (kind, config) in limit_stores(dir.path(), schema.as_ref()) {
        let kind = kind.as_str();
        let store = Store::open_json(&config).unwrap();
        let live = store.start(SessionHeader::new("stream", 1)).unwrap();
        for (i, e) in events.iter().enumerate() {
            let opts = AppendOptions {
                surface_op: e.surface_op().map(|t| t.as_str().to_string()),
                source_event_seqs: e
                    .source_event_seqs()
                    .map(|t| serde_json::from_str::<Vec<u64>>(t.as_str()).unwrap()),
                ignorable: e.ignorable,
            };
            live.append(e.type_str(), e.data.as_str(), &opts)
                .unwrap_or_else(|err| panic!("{kind}: event {i}: {err}"));
            if i % 50 == 49 {
                live.flush().unwrap();
            }
        }
        let e = fill_until_refused(&live, kind);
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{kind}: {e}");
        assert!(e.to_string().contains("maxLogBytes 8388608"), "{kind}: {e}");
        let acknowledged = live.snapshot();
        assert!(acknowledged.len() > events.len(), "{kind}");
        live.close().unwrap();
        drop(store);
        let store = Store::open_json(&config).unwrap();
        same_events(&store.load("stream").unwrap().events, &acknowledged, kind);
    }
}

/// A tool/result replaced by one of as many keys (75 000 in its message
/// and as many in its result block, 1.7 MiB a record): a replacement may
/// change only the result's content, and checking that searched one object
/// for every key of the other (minutes per replacement, on every append
/// and load of the log). Now an append and a load judge it at once, on
/// every backend; a replacement that changes one of those keys is still
/// refused, and nothing of it is written.
#[test]
fn a_replacement_of_many_keys_is_compared_at_once() {
    let dir = TempDir::new("many-key-replace");
    let schema = support::pg::url("a_replacement_of_many_keys_is_compared_at_once")
        .map(|u| support::pg::Schema::new(&u, "manykeys"));
    let keys = |p: &str| -> String { (0..75_000).map(|i| format!(r#","{p}{i}":0"#)).collect() };
    let (block_keys, message_keys) = (keys("b"), keys("m"));
    let message = |text: &str, last: u32| {
        format!(
            r#"{{"source":{{"kind":"tool","callId":"c"}},"content":[{{"type":"tool-result","toolCallId":"c","content":[{{"type":"text","text":"{text}"}}]{block_keys}}}],"role":"user","id":"r"{message_keys},"last":{last}}}"#
        )
    };
    let result = |seq: u64, text: &str, last: u32, op: &str| {
        format!(
            r#"{{"type":"tool/result","seq":{seq},"time":1,"data":{{"turn":1,"step":1,"message":{}}}{op}}}"#,
            message(text, last)
        )
    };
    let replace = |of: u64| {
        format!(
            r#","sourceEventSeqs":[{of}],"surfaceOp":{{"op":"replace","start":{of},"end":{of}}}"#
        )
    };
    let log = format!(
        r#"[{{"type":"turn/start","seq":0,"time":1,"data":{{"turn":1}}}},{{"type":"step/start","seq":1,"time":1,"data":{{"turn":1,"step":1}}}},{{"type":"tool/call","seq":2,"time":1,"data":{{"turn":1,"step":1,"callId":"c","name":"f","arguments":"{{}}"}}}},{},{},{{"type":"step/end","seq":5,"time":1,"data":{{"turn":1,"step":1}}}},{{"type":"turn/end","seq":6,"time":1,"data":{{"turn":1,"reason":{{"kind":"completed"}}}}}}]"#,
        result(3, "x", 0, r#","surfaceOp":"append""#),
        result(4, "y", 0, &replace(3)),
    );
    let changed = format!("[{}]", result(7, "z", 1, &replace(4)));
    for (kind, config) in limit_stores(dir.path(), schema.as_ref()) {
        let store = Store::open_json(&config).unwrap();
        store.create(SessionHeader::new("mk", 1)).unwrap();
        store.append_json("mk", &log).unwrap();
        let e = store.append_json("mk", &changed).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{kind}: {e}");
        assert!(
            e.to_string()
                .contains("may change only the result content of the tool/result at seq 4"),
            "{kind}: {e}"
        );
        drop(store);
        let store = Store::open_json(&config).unwrap();
        let events = store.load("mk").unwrap().events;
        assert_eq!(events.len(), 7, "{kind}");
        assert!(events[4].data.as_str().contains(r#""text":"y""#), "{kind}");
    }
}
