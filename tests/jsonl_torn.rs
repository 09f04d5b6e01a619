//! Torn tails and corruption: a log cut at any byte of its last two frames
//! (zstd) or lines (none) reads back every complete record, never panics and
//! never loses an earlier record; bad lines are corruption only when a later
//! line is a `turn/end`.

mod support;

use std::path::{Path, PathBuf};

use dsh_persist::backend::jsonl::salvage::read_intact_prefix;
use dsh_persist::backend::jsonl::{Compression, JsonlBackend, JsonlConfig, frames};
use dsh_persist::backend::limits::Limits;
use dsh_persist::backend::{Backend, Expect, TornTail};
use dsh_persist::error::ErrorKind;
use dsh_persist::model::event::Event;
use dsh_persist::model::header::SessionHeader;
use support::*;

fn backend(root: &Path, compression: Compression) -> JsonlBackend {
    JsonlBackend::open(JsonlConfig {
        root: root.to_path_buf(),
        compression,
        pack_chunks: true,
        limits: Default::default(),
    })
    .unwrap()
}

fn ev(seq: u64, ty: &str, data: &str) -> Event {
    Event::parse(&format!(
        r#"{{"type":"{ty}","seq":{seq},"time":{},"data":{data}}}"#,
        1000 + seq
    ))
    .unwrap()
}

fn delta(seq: u64, text: &str) -> Event {
    ev(
        seq,
        "assistant/chunk",
        &format!(
            r#"{{"turn":1,"step":1,"chunk":{{"type":"text-delta","index":0,"text":"{text}"}}}}"#
        ),
    )
}

/// A session in three batches; with `big`, the last one spans several zstd
/// blocks (poorly compressible text, > 128 KiB).
fn batches(big: bool) -> Vec<Vec<Event>> {
    let mut seq = 0;
    let mut next = |f: &dyn Fn(u64) -> Event| {
        let e = f(seq);
        seq += 1;
        e
    };
    let mut b1 = vec![next(&|s| ev(s, "turn/start", r#"{"turn":1}"#))];
    b1.push(next(&|s| ev(s, "step/start", r#"{"turn":1,"step":1}"#)));
    let b2: Vec<Event> = (0..5)
        .map(|i| next(&|s| delta(s, &format!("t{i}"))))
        .collect();
    let noise = support::incompressible_text(200_000);
    let mut b3: Vec<Event> = (0..4)
        .map(|i| next(&|s| delta(s, &format!("u{i}"))))
        .collect();
    let piece = if big { 50_000 } else { 20 };
    for i in 0..4 {
        let big = noise[i * piece..(i + 1) * piece].to_string();
        b3.push(next(&|s| delta(s, &big)));
        b3.push(next(&|s| ev(s, "step/end", r#"{"turn":1,"step":1}"#)));
    }
    b3.push(next(&|s| {
        ev(s, "turn/end", r#"{"turn":1,"reason":{"kind":"completed"}}"#)
    }));
    vec![b1, b2, b3]
}

fn write_log(root: &Path, compression: Compression, big: bool) -> (PathBuf, Vec<Event>, Vec<u64>) {
    let be = backend(root, compression);
    let header = SessionHeader::new("cut", 1);
    let mut rev = None;
    let mut all = Vec::new();
    let mut ends = Vec::new();
    for b in batches(big) {
        let expect = match &rev {
            None => Expect::New,
            Some(r) => Expect::At(r),
        };
        rev = Some(be.append(&header, &b, expect).unwrap());
        all.extend(b);
        let path = root.join("_no-cwd/cut").join(compression.file_name());
        ends.push(std::fs::metadata(&path).unwrap().len());
    }
    (
        root.join("_no-cwd/cut").join(compression.file_name()),
        all,
        ends,
    )
}

/// The member count of every record line of a raw log (after the header).
fn members_per_line(full: &[u8]) -> Vec<usize> {
    String::from_utf8_lossy(full)
        .lines()
        .skip(1)
        .map(|l| {
            dsh_persist::codec::chunk_rows::Record::parse_line(l)
                .unwrap()
                .member_count() as usize
        })
        .collect()
}

#[test]
fn zstd_cut_at_every_byte_of_the_last_two_frames() {
    zstd_cuts(false, 1);
}

#[test]
fn zstd_cuts_through_a_multi_block_frame() {
    zstd_cuts(true, 41);
}

fn zstd_cuts(big: bool, stride: usize) {
    let tmp = TempDir::new("cutz");
    let (path, all, _) = write_log(tmp.path(), Compression::Zstd, big);
    let full = std::fs::read(&path).unwrap();
    let scan = frames::scan(&full).unwrap();
    assert_eq!(scan.frames.len(), 4);
    let f2 = scan.frames[2];
    let f3 = scan.frames[3];
    // Events fully held by frames 0..=k (frame 0 is the header).
    let complete_after = [0usize, 2, 7, all.len()];
    let be = backend(tmp.path(), Compression::Zstd);
    let cuts: Vec<usize> = (f2.start as usize..full.len())
        .filter(|c| {
            stride == 1
                || (c - f2.start as usize) % stride == 0
                || *c < f3.start as usize + 64
                || *c + 64 > full.len()
        })
        .collect();
    for cut in cuts {
        std::fs::write(&path, &full[..cut]).unwrap();
        let log = be
            .read("cut")
            .unwrap_or_else(|e| panic!("cut {cut}: {e}"))
            .unwrap();
        let frame = if cut < f3.start as usize { 2 } else { 3 };
        let lo = complete_after[frame - 1];
        let hi = complete_after[frame];
        let n = log.events.len();
        assert!(
            n >= lo && n <= hi,
            "cut {cut}: {n} events, want {lo}..={hi}"
        );
        assert_eq!(log.events[..], all[..n], "cut {cut}: a prefix of the log");
        if cut == f2.start as usize || cut == f3.start as usize {
            assert_eq!(log.torn, None, "cut {cut} at a frame boundary");
            continue;
        }
        let start = if frame == 2 { f2.start } else { f3.start };
        match &log.torn {
            Some(TornTail::Jsonl {
                truncate_to,
                recovered,
            }) => {
                assert_eq!(*truncate_to, start, "cut {cut}");
                let recovered_events: u64 = recovered
                    .iter()
                    .map(|l| {
                        dsh_persist::codec::chunk_rows::Record::parse_line(l)
                            .unwrap()
                            .member_count()
                    })
                    .sum();
                assert_eq!(lo + recovered_events as usize, n, "cut {cut}");
            }
            other => panic!("cut {cut}: {other:?}"),
        }
    }
    if !big {
        return;
    }
    // The repair of a cut inside the big frame keeps the recovered records.
    let cut = full.len() - 3 * 1024;
    std::fs::write(&path, &full[..cut]).unwrap();
    let log = be.read("cut").unwrap().unwrap();
    let kept = log.events.len();
    assert!(
        kept > complete_after[2],
        "the cut frame yields complete lines"
    );
    let rev = be.commit_repair("cut", &log, &[]).unwrap();
    assert_ne!(rev, log.revision);
    let again = be.read("cut").unwrap().unwrap();
    assert_eq!(again.torn, None);
    assert_eq!(again.events, log.events);
    let bytes = std::fs::read(&path).unwrap();
    let rescan = frames::scan(&bytes).unwrap();
    assert_eq!(rescan.torn_start, None);
    assert_eq!(
        rescan.frames.len(),
        4,
        "recovered records re-appended as one frame"
    );
    assert_eq!(rescan.frames[3].start, f3.start);
}

#[test]
fn none_cut_at_every_byte_of_the_last_two_lines() {
    let tmp = TempDir::new("cutn");
    let (path, all, _) = write_log(tmp.path(), Compression::None, false);
    let full = std::fs::read(&path).unwrap();
    let nls: Vec<usize> = full
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i)
        .collect();
    let start = nls[nls.len() - 3] + 1;
    let members = members_per_line(&full);
    let be = backend(tmp.path(), Compression::None);
    for cut in start..=full.len() {
        std::fs::write(&path, &full[..cut]).unwrap();
        let log = be
            .read("cut")
            .unwrap_or_else(|e| panic!("cut {cut}: {e}"))
            .unwrap();
        let complete = full[..cut].iter().filter(|b| **b == b'\n').count() - 1;
        let want: usize = members[..complete].iter().sum();
        assert_eq!(log.events.len(), want, "cut {cut}");
        assert_eq!(log.events[..], all[..want], "cut {cut}");
        let at_boundary = full[cut - 1] == b'\n';
        match (&log.torn, at_boundary) {
            (None, true) => {}
            (
                Some(TornTail::Jsonl {
                    truncate_to,
                    recovered,
                }),
                false,
            ) => {
                assert!(recovered.is_empty());
                assert_eq!(full[*truncate_to as usize - 1], b'\n', "cut {cut}");
                assert!((*truncate_to as usize) < cut);
            }
            (t, b) => panic!("cut {cut}: torn {t:?}, boundary {b}"),
        }
    }
}

/// A log whose frames another encoder wrote (the `zstd` tool's one-shot
/// encoder: a content-size field, single segment, with or without the
/// checksum) reads as ours; a cut inside its last frame is torn at that
/// frame's start, and the repair appends our frame after the foreign ones.
#[test]
fn frames_from_another_encoder_read_and_repair_as_ours() {
    for checksum in [true, false] {
        let tmp = TempDir::new("foreign-frames");
        let (path, all, _) = write_log(tmp.path(), Compression::Zstd, false);
        let ours = std::fs::read(&path).unwrap();
        let mut compressor = zstd::bulk::Compressor::new(19).unwrap();
        compressor
            .set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(checksum))
            .unwrap();
        let mut foreign = Vec::new();
        let mut starts = Vec::new();
        for f in frames::scan(&ours).unwrap().frames {
            let text = zstd::stream::decode_all(&ours[f.start as usize..f.end as usize]).unwrap();
            starts.push(foreign.len() as u64);
            let frame = compressor.compress(&text).unwrap();
            assert_eq!(
                frame[4] & 0x24,
                0x20 | if checksum { 0x04 } else { 0 },
                "single segment with a content size"
            );
            foreign.extend(frame);
        }
        assert_ne!(foreign, ours);
        std::fs::write(&path, &foreign).unwrap();
        let be = backend(tmp.path(), Compression::Zstd);
        let log = be.read("cut").unwrap().unwrap();
        assert_eq!(
            (&log.events, &log.torn),
            (&all, &None),
            "checksum {checksum}"
        );

        // Cut inside the last frame: every frame before it is kept.
        let last = *starts.last().unwrap();
        let cut = last as usize + (foreign.len() - last as usize) / 2;
        std::fs::write(&path, &foreign[..cut]).unwrap();
        let log = be.read("cut").unwrap().unwrap();
        assert_eq!(log.events[..], all[..log.events.len()]);
        assert!(log.events.len() >= 7, "checksum {checksum}");
        match &log.torn {
            Some(TornTail::Jsonl { truncate_to, .. }) => assert_eq!(*truncate_to, last),
            other => panic!("checksum {checksum}: {other:?}"),
        }
        be.commit_repair("cut", &log, &[]).unwrap();
        let repaired = std::fs::read(&path).unwrap();
        assert_eq!(repaired[..last as usize], foreign[..last as usize]);
        let again = be.read("cut").unwrap().unwrap();
        assert_eq!((&again.events, &again.torn), (&log.events, &None));
    }
}

#[test]
fn flipped_bytes_in_the_last_frame_are_torn_or_corrupt_never_a_panic() {
    let tmp = TempDir::new("flip");
    let (path, all, _) = write_log(tmp.path(), Compression::Zstd, true);
    let full = std::fs::read(&path).unwrap();
    let scan = frames::scan(&full).unwrap();
    let f3 = scan.frames[3];
    let be = backend(tmp.path(), Compression::Zstd);
    let step = ((f3.end - f3.start) / 300).max(1) as usize;
    for at in (f3.start as usize..full.len()).step_by(step) {
        let mut bytes = full.clone();
        bytes[at] ^= 0x5A;
        std::fs::write(&path, &bytes).unwrap();
        match be.read("cut") {
            Ok(Some(log)) => {
                assert!(log.events.len() >= 7, "flip at {at}: earlier frames intact");
                assert_eq!(log.events[..7], all[..7]);
            }
            Ok(None) => panic!("flip at {at}: vanished"),
            Err(e) => assert_eq!(e.kind(), ErrorKind::Corruption, "flip at {at}: {e}"),
        }
    }
}

fn raw_log(root: &Path, lines: &[&str]) -> JsonlBackend {
    let dir = root.join("_no-cwd/r");
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = String::from(
        "{\"type\":\"session\",\"version\":0,\"id\":\"r\",\"createdAt\":1,\"delegationDepth\":0}\n",
    );
    for l in lines {
        text.push_str(l);
    }
    std::fs::write(dir.join("session.jsonl"), text).unwrap();
    backend(root, Compression::None)
}

#[test]
fn bad_lines_are_torn_unless_a_later_line_is_a_turn_end() {
    let ts = r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#;
    let te = |seq: u64| {
        format!(
            r#"{{"type":"turn/end","seq":{seq},"time":1,"data":{{"turn":1,"reason":{{"kind":"completed"}}}}}}"#
        )
    };
    let gap = r#"{"type":"turn/start","seq":5,"time":1,"data":{"turn":2}}"#;
    let bad_row = r#"{"type":"text-chunks","seq0":1,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b","c"]}}"#;
    let cases: Vec<(Vec<String>, Result<usize, &str>)> = vec![
        // garbage then a turn/end: corruption at record line 2
        (
            vec![
                format!("{ts}\n"),
                "garbage\n".into(),
                format!("{}\n", te(1)),
            ],
            Err("corrupt session log: unparsable committed event at line 2"),
        ),
        // garbage with no later turn/end: torn from the garbage on
        (
            vec![format!("{ts}\n"), "garbage\n".into(), format!("{gap}\n")],
            Ok(1),
        ),
        // a seq gap followed by a turn/end
        (
            vec![
                format!("{ts}\n"),
                format!("{gap}\n"),
                format!("{}\n", te(6)),
            ],
            Err("corrupt session log: seq gap in committed region at line 2 (expected 1, got 5)"),
        ),
        // a malformed packed row counts as unparsable
        (
            vec![
                format!("{ts}\n"),
                format!("{bad_row}\n"),
                format!("{}\n", te(4)),
            ],
            Err("corrupt session log: unparsable committed event at line 2"),
        ),
        (vec![format!("{ts}\n"), format!("{bad_row}\n")], Ok(1)),
        // a torn final turn/end does not make an earlier bad line fatal
        (vec![format!("{ts}\n"), "garbage\n".into(), te(2)], Ok(1)),
        // a complete record without its newline is torn
        (vec![format!("{ts}\n"), te(1)], Ok(1)),
    ];
    for (i, (lines, want)) in cases.into_iter().enumerate() {
        let tmp = TempDir::new("bad");
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let be = raw_log(tmp.path(), &refs);
        match (be.read("r"), want) {
            (Ok(Some(log)), Ok(n)) => {
                assert_eq!(log.events.len(), n, "case {i}");
                assert!(log.torn.is_some(), "case {i}");
            }
            (Err(e), Err(m)) => {
                assert_eq!(e.to_string(), m, "case {i}");
                assert_eq!(e.kind(), ErrorKind::Corruption);
            }
            (got, want) => panic!("case {i}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn foreign_versions_are_refused_before_anything_else() {
    let tmp = TempDir::new("ver");
    let dir = tmp.path().join("_no-cwd/v");
    std::fs::create_dir_all(&dir).unwrap();
    // A newer version with an otherwise invalid header and garbage after it.
    std::fs::write(
        dir.join("session.jsonl"),
        "{\"type\":\"session\",\"version\":2,\"id\":\"v\",\"bogus\":true}\ngarbage\n{\"type\":\"turn/end\"}\n",
    )
    .unwrap();
    let be = backend(tmp.path(), Compression::None);
    let e = be.read("v").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::FormatUnsupported);
    assert_eq!(
        redact(&e.to_string(), tmp.path()),
        "session \"v\" uses log format v2, but this harness reads only v0: the log was written by a newer harness \u{2014} upgrade the harness to open it (raw log: <ROOT>/_no-cwd/v/session.jsonl)"
    );
}

#[test]
fn zstd_files_without_a_header_frame_or_with_bad_structure_are_corrupt() {
    let tmp = TempDir::new("hdr");
    let (path, _, _) = write_log(tmp.path(), Compression::Zstd, false);
    let full = std::fs::read(&path).unwrap();
    let be = backend(tmp.path(), Compression::Zstd);
    // Cut inside the header frame.
    std::fs::write(&path, &full[..10]).unwrap();
    let e = be.read("cut").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption);
    assert!(
        e.to_string()
            .contains("empty or header-less Zstandard session log"),
        "{e}"
    );
    // Reserved descriptor bits in a later frame.
    let scan = frames::scan(&full).unwrap();
    let mut bytes = full.clone();
    bytes[scan.frames[2].start as usize + 4] |= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    let e = be.read("cut").unwrap_err();
    assert!(
        e.to_string().contains("reserved frame-header bit at byte"),
        "{e}"
    );
}

#[test]
fn reads_racing_an_appender_see_a_consistent_prefix() {
    let tmp = TempDir::new("race");
    let root = tmp.path().to_path_buf();
    let header = SessionHeader::new("race", 1);
    let all: Vec<Event> = (0..600).map(|s| delta(s, &format!("x{s}"))).collect();
    let be = backend(&root, Compression::Zstd);
    let mut rev = be.append(&header, &all[..3], Expect::New).unwrap();
    let writer_events = all.clone();
    let writer = std::thread::spawn(move || {
        for chunk in writer_events[3..].chunks(3) {
            rev = be.append(&header, chunk, Expect::At(&rev)).unwrap();
        }
    });
    let reader = backend(&root, Compression::Zstd);
    let mut reads = 0;
    while !writer.is_finished() || reads == 0 {
        match reader.read("race") {
            Ok(Some(log)) => {
                let n = log.events.len();
                assert_eq!(log.events[..], all[..n]);
                reads += 1;
            }
            Ok(None) => panic!("vanished"),
            Err(e) => assert_eq!(e.kind(), ErrorKind::Conflict, "{e}"),
        }
    }
    writer.join().unwrap();
    let log = reader.read("race").unwrap().unwrap();
    assert_eq!(log.events, all);
    assert_eq!(log.torn, None);
}

// ---------------------------------------------------------------------------
// salvage (issue 19): the intact prefix of a log, read without repairing it

/// Salvage keeps whole frames only: a cut anywhere keeps the frames before
/// the cut one and names the byte where that one starts; a cut at a frame
/// boundary is a whole log. A cut inside the header frame has no header.
#[test]
fn salvage_of_a_cut_zstd_log_keeps_the_whole_frames_before_the_cut() {
    let tmp = TempDir::new("salvz");
    let (path, all, _) = write_log(tmp.path(), Compression::Zstd, false);
    let full = std::fs::read(&path).unwrap();
    let scan = frames::scan(&full).unwrap();
    assert_eq!(scan.frames.len(), 4);
    // Events fully held by frames 0..=k (frame 0 is the header).
    let complete_after = [0usize, 2, 7, all.len()];
    let limits = Limits::default();
    for cut in 0..=full.len() {
        std::fs::write(&path, &full[..cut]).unwrap();
        let read = read_intact_prefix(&path, Compression::Zstd, &limits);
        let whole = scan.frames.iter().filter(|f| f.end as usize <= cut).count();
        if whole == 0 {
            let e = read.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corruption, "cut {cut}: {e}");
            continue;
        }
        let p = read.unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        assert_eq!(p.header.id, "cut");
        assert_eq!(p.events[..], all[..complete_after[whole - 1]], "cut {cut}");
        let at_boundary = scan.frames.iter().any(|f| f.end as usize == cut);
        let want =
            (!at_boundary).then(|| format!("a torn frame at byte {}", scan.frames[whole].start));
        assert_eq!(p.stopped, want, "cut {cut}");
    }
    // The source is never repaired.
    assert_eq!(std::fs::read(&path).unwrap(), full);
}

/// A raw log: the complete lines before a cut, and the cut line named.
#[test]
fn salvage_of_a_cut_raw_log_keeps_the_whole_lines_before_the_cut() {
    let tmp = TempDir::new("salvn");
    let (path, all, _) = write_log(tmp.path(), Compression::None, false);
    let full = std::fs::read(&path).unwrap();
    let members = members_per_line(&full);
    let limits = Limits::default();
    for cut in 0..=full.len() {
        std::fs::write(&path, &full[..cut]).unwrap();
        let read = read_intact_prefix(&path, Compression::None, &limits);
        let lines = full[..cut].iter().filter(|b| **b == b'\n').count();
        if lines == 0 {
            let e = read.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corruption, "cut {cut}: {e}");
            continue;
        }
        let p = read.unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        let kept: usize = members[..lines - 1].iter().sum();
        assert_eq!(p.events[..], all[..kept], "cut {cut}");
        let want =
            (full[cut - 1] != b'\n').then(|| format!("record line {lines} is torn (no newline)"));
        assert_eq!(p.stopped, want, "cut {cut}");
    }
}

/// The first line that does not read (unparsable, or a seq other than the
/// next) ends the prefix, whatever follows it.
#[test]
fn salvage_stops_at_the_first_bad_line_and_names_it() {
    let tmp = TempDir::new("salvbad");
    let line = |seq: u64, ty: &str| {
        format!(
            "{{\"type\":\"{ty}\",\"seq\":{seq},\"time\":{},\"data\":{{\"turn\":1}}}}\n",
            1000 + seq
        )
    };
    let ok = [line(0, "turn/start"), line(1, "step/start")];
    let cases: [(&str, String, usize, &str); 4] = [
        (
            "unparsable",
            "{\"type\":\"step/end\",BROKEN\n".into(),
            2,
            "record line 3 is unparsable",
        ),
        (
            "gap",
            line(3, "step/end"),
            2,
            "record line 3 has seq 3, expected 2",
        ),
        (
            "repeat",
            line(1, "step/end"),
            2,
            "record line 3 has seq 1, expected 2",
        ),
        (
            "first",
            String::new(),
            0,
            "record line 1 has seq 1, expected 0",
        ),
    ];
    for (name, bad, kept, why) in cases {
        let mut lines: Vec<String> = if name == "first" {
            vec![line(1, "turn/start")]
        } else {
            vec![ok[0].clone(), ok[1].clone(), bad]
        };
        // A good line after the bad one is not kept.
        lines.push(line(lines.len() as u64, "turn/end"));
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        raw_log(tmp.path(), &refs);
        let path = tmp.path().join("_no-cwd/r/session.jsonl");
        let p = read_intact_prefix(&path, Compression::None, &Limits::default()).unwrap();
        assert_eq!(p.events.len(), kept, "{name}");
        for (i, e) in p.events.iter().enumerate() {
            assert_eq!(e.seq, i as u64, "{name}");
        }
        assert_eq!(p.stopped.as_deref(), Some(why), "{name}");
    }
}

/// The read bounds: a raw file of exactly twice `maxLogBytes` is read, one
/// byte more is refused; a zstd log decoding to exactly `maxLogBytes` is
/// whole, one byte less stops at the frame that passes it.
#[test]
fn salvage_reads_within_the_log_bound() {
    let tmp = TempDir::new("salvcap");
    let (path, all, _) = write_log(tmp.path(), Compression::None, false);
    let full = std::fs::read(&path).unwrap();
    let half = full.len() as u64 / 2 - 1;
    let limits = Limits {
        max_log_bytes: half,
        ..Limits::default()
    };
    let even = 2 * half as usize;
    std::fs::write(&path, &full[..even]).unwrap();
    let p = read_intact_prefix(&path, Compression::None, &limits).unwrap();
    assert!(!p.events.is_empty());
    std::fs::write(&path, &full[..even + 1]).unwrap();
    let e = read_intact_prefix(&path, Compression::None, &limits).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption);
    assert!(
        e.to_string().contains(&format!("more than {even} bytes")),
        "{e}"
    );

    let tmp = TempDir::new("salvcapz");
    let (path, _, _) = write_log(tmp.path(), Compression::Zstd, false);
    let bytes = std::fs::read(&path).unwrap();
    let plain = zstd::stream::decode_all(&bytes[..]).unwrap().len() as u64;
    let last = *frames::scan(&bytes).unwrap().frames.last().unwrap();
    let at = |max_log_bytes| Limits {
        max_log_bytes,
        ..Limits::default()
    };
    let p = read_intact_prefix(&path, Compression::Zstd, &at(plain)).unwrap();
    assert_eq!((p.events.len(), p.stopped), (all.len(), None));
    let p = read_intact_prefix(&path, Compression::Zstd, &at(plain - 1)).unwrap();
    assert_eq!(p.events[..], all[..7]);
    let why = p.stopped.unwrap();
    assert!(
        why.starts_with(&format!("the frame at byte {}: ", last.start))
            && why.contains("maxLogBytes"),
        "{why}"
    );
}

/// Salvage counts the events packed rows expand to, as a read does, up to
/// the bound of its text (twice `maxLogBytes`): the prefix stops at the row
/// that passes it (a crafted row of tiny deltas builds ~250 bytes of events
/// per 6 bytes of line), keeping what came before.
#[test]
fn salvage_stops_where_packed_rows_expand_past_its_bound() {
    let tmp = TempDir::new("salvexp");
    let start = r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#;
    let row = |seq0: u64, members: usize| {
        format!(
            r#"{{"type":"text-chunks","seq0":{seq0},"time0":1,"data":{{"turn":1,"step":1,"index":0,"dt":[{}],"texts":[{}]}}}}"#,
            vec!["1"; members - 1].join(","),
            vec![r#""a""#; members].join(",")
        )
    };
    let lines = [
        format!("{start}\n"),
        format!("{}\n", row(1, 6_000)),
        format!("{}\n", row(6_001, 6_000)),
    ];
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    raw_log(tmp.path(), &refs);
    let path = tmp.path().join("_no-cwd/r/session.jsonl");
    // 12 000 events count 1.5 MB; the text is 72 KB.
    let limits = |max_log_bytes| Limits {
        max_log_bytes,
        ..Limits::default()
    };
    let p = read_intact_prefix(&path, Compression::None, &limits(800_000)).unwrap();
    assert_eq!((p.events.len(), p.stopped), (12_001, None));
    let p = read_intact_prefix(&path, Compression::None, &limits(500_000)).unwrap();
    assert_eq!(p.events.len(), 6_001);
    let why = p.stopped.unwrap();
    assert!(
        why.starts_with("record line 3: the events of the packed chunk rows up to it")
            && why.contains("1000000 bytes (twice maxLogBytes)"),
        "{why}"
    );
}
