//! The JSONL writer: re-writing the fixture sessions batch by batch gives the
//! original's bytes, and the write-path rules (lazy atomic creation, modes,
//! expectations, seq checks) hold.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use dsh_persist::backend::jsonl::codec_zstd::FrameDecoder;
use dsh_persist::backend::jsonl::{Compression, JsonlBackend, JsonlConfig, frames};
use dsh_persist::backend::{Backend, Expect};
use dsh_persist::codec::chunk_rows::Record;
use dsh_persist::error::ErrorKind;
use dsh_persist::model::event::Event;
use dsh_persist::model::header::SessionHeader;
use support::*;

fn backend(root: &Path, compression: Compression, pack_chunks: bool) -> JsonlBackend {
    JsonlBackend::open(JsonlConfig {
        root: root.to_path_buf(),
        compression,
        pack_chunks,
        limits: Default::default(),
    })
    .unwrap()
}

/// The plaintext of each complete frame of a zstd log.
fn frame_texts(bytes: &[u8]) -> Vec<String> {
    let scan = frames::scan(bytes).unwrap();
    let mut dec = FrameDecoder::new();
    scan.frames
        .iter()
        .map(|f| {
            let mut out = Vec::new();
            let mut all = Vec::new();
            dec.decode(&bytes[f.start as usize..f.end as usize], &mut out, |b| {
                all.extend_from_slice(b);
                b.clear();
                Ok(())
            })
            .unwrap();
            String::from_utf8(all).unwrap()
        })
        .collect()
}

/// Events per append batch of a fixture session, from the frames of its
/// `jsonl-zstd-packed` file (frame 1 is the header).
fn batch_sizes(zstd_file: &Path) -> Vec<usize> {
    let bytes = std::fs::read(zstd_file).unwrap();
    frame_texts(&bytes)
        .iter()
        .skip(1)
        .map(|t| {
            t.lines()
                .map(|l| Record::parse_line(l).unwrap().member_count() as usize)
                .sum()
        })
        .collect()
}

fn write_batches(be: &JsonlBackend, header: &SessionHeader, events: &[Event], sizes: &[usize]) {
    let mut rev = None;
    let mut at = 0;
    for &n in sizes {
        let batch = &events[at..at + n];
        let expect = match &rev {
            None => Expect::New,
            Some(r) => Expect::At(r),
        };
        rev = Some(be.append(header, batch, expect).unwrap());
        at += n;
    }
    assert_eq!(at, events.len());
}

#[test]
fn rewriting_the_fixture_sessions_gives_the_originals_text_and_bytes() {
    let zstd_root = fixtures_dir().join("jsonl/jsonl-zstd-packed");
    for name in [
        "jsonl-zstd-packed",
        "jsonl-none-packed",
        "jsonl-none-unpacked",
    ] {
        let entry = case_root(name);
        let exp = expected(name);
        let compression = if entry["compression"] == "zstd" {
            Compression::Zstd
        } else {
            Compression::None
        };
        let pack = entry["packChunks"].as_bool().unwrap();
        let (_src_tmp, src_root) = fixture_copy(entry["path"].as_str().unwrap());
        let src = backend(&src_root, compression, pack);
        let out_tmp = TempDir::new("rewrite");
        let dst = backend(out_tmp.path(), compression, pack);
        let mut checked = 0;
        for header in src.list().unwrap() {
            let id = header.id.clone();
            if id.starts_with("torn-") {
                continue; // mutated after writing
            }
            let log = src.read(&id).unwrap().unwrap();
            let rel = Path::new(&dsh_persist::backend::jsonl::layout::project_dir_name(
                header.cwd.as_deref(),
            ))
            .join(dsh_persist::backend::jsonl::layout::escape_id(&id).unwrap());
            let sizes = batch_sizes(&zstd_root.join(&rel).join("session.jsonl.zstd"));
            write_batches(&dst, &log.header, &log.events, &sizes);
            let raw = dst.read_raw(&id).unwrap().unwrap();
            let want = exp["sessions"][&id]["readRawBefore"]["ok"]["content"]
                .as_str()
                .unwrap();
            assert_eq!(raw.content, want, "{name} / {id}: logical text");
            let file = rel.join(compression.file_name());
            assert_eq!(
                std::fs::read(out_tmp.path().join(&file)).unwrap(),
                std::fs::read(src_root.join(&file)).unwrap(),
                "{name} / {id}: file bytes"
            );
            checked += 1;
        }
        assert!(checked >= 20, "{name}: only {checked} sessions rewritten");
    }
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

#[test]
fn lazy_atomic_creation_modes_and_frames() {
    for compression in [Compression::Zstd, Compression::None] {
        let tmp = TempDir::new("writer");
        let root = tmp.path().join("store");
        let be = backend(&root, compression, true);
        assert_eq!(
            std::fs::metadata(&root).unwrap().permissions().mode() & 0o777,
            0o700
        );
        let mut header = SessionHeader::new("s/1", 5);
        header.cwd = Some("/w/p".into());
        assert_eq!(be.list().unwrap(), vec![]);
        assert_eq!(be.revision("s/1").unwrap(), None);
        assert!(be.read("s/1").unwrap().is_none());

        let batch1 = vec![
            ev(0, "turn/start", r#"{"turn":1}"#),
            delta(1, "a"),
            delta(2, "b"),
            delta(3, "c"),
        ];
        let r1 = be.append(&header, &batch1, Expect::New).unwrap();
        let dir = root.join("--w-p--").join("s~002F1");
        let file = dir.join(compression.file_name());
        for d in [root.join("--w-p--"), dir.clone()] {
            assert_eq!(
                std::fs::metadata(&d).unwrap().permissions().mode() & 0o777,
                0o700
            );
        }
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(
            names,
            vec![compression.file_name().to_string()],
            "no temp left"
        );

        // A second creation never clobbers the log.
        let e = be.append(&header, &batch1, Expect::New).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict);

        // Seq checks: contiguity, continuation, and the expected revision.
        let e = be
            .append(&header, &[delta(4, "d"), delta(6, "f")], Expect::At(&r1))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        let e = be
            .append(&header, &[delta(5, "d")], Expect::At(&r1))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
        let r2 = be
            .append(
                &header,
                &[
                    delta(4, "d"),
                    ev(5, "turn/end", r#"{"turn":1,"reason":{"kind":"completed"}}"#),
                ],
                Expect::At(&r1),
            )
            .unwrap();
        assert_ne!(r1, r2);
        let e = be
            .append(&header, &[delta(6, "x")], Expect::At(&r1))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict, "stale revision: {e}");
        assert_eq!(be.revision("s/1").unwrap(), Some(r2.clone()));

        // A fresh store (cold) checks seqs by reading the log.
        let cold = backend(&root, compression, true);
        let rc = cold.revision("s/1").unwrap().unwrap();
        assert_eq!(rc, r2, "an unchanged log has one token in every store");
        let e = cold
            .append(&header, &[delta(7, "x")], Expect::At(&rc))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
        cold.append(&header, &[delta(6, "x")], Expect::At(&rc))
            .unwrap();

        let text = cold.read_raw("s/1").unwrap().unwrap().content;
        assert_eq!(
            text,
            concat!(
                r#"{"type":"session","version":0,"id":"s/1","createdAt":5,"cwd":"/w/p","delegationDepth":0}"#,
                "\n",
                r#"{"type":"turn/start","seq":0,"time":1000,"data":{"turn":1}}"#,
                "\n",
                r#"{"type":"text-chunks","seq0":1,"time0":1001,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}}"#,
                "\n",
                r#"{"type":"assistant/chunk","seq":4,"time":1004,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"d"}}}"#,
                "\n",
                r#"{"type":"turn/end","seq":5,"time":1005,"data":{"turn":1,"reason":{"kind":"completed"}}}"#,
                "\n",
                r#"{"type":"assistant/chunk","seq":6,"time":1006,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}}"#,
                "\n",
            )
        );
        let log = cold.read("s/1").unwrap().unwrap();
        assert_eq!(log.events.len(), 7);
        assert_eq!(log.torn, None);
        assert_eq!(cold.list().unwrap(), vec![log.header.clone()]);

        if compression == Compression::Zstd {
            let bytes = std::fs::read(&file).unwrap();
            let scan = frames::scan(&bytes).unwrap();
            assert_eq!(scan.frames.len(), 4, "header frame + one frame per batch");
            for f in &scan.frames {
                assert_eq!(f.descriptor, 0x04);
            }
            let texts = frame_texts(&bytes);
            assert_eq!(
                texts[0].lines().count(),
                1,
                "the header frame holds only the header"
            );
        }
    }
}

#[test]
fn unpacked_config_writes_plain_events_and_locate_needs_no_io() {
    let tmp = TempDir::new("unpacked");
    let be = backend(tmp.path(), Compression::None, false);
    let header = SessionHeader::new("u", 1);
    let dsh_persist::backend::Location::Jsonl { path } = be.locate(&header).unwrap().unwrap();
    assert_eq!(
        path,
        tmp.path()
            .join("_no-cwd/u/session.jsonl")
            .display()
            .to_string()
    );
    assert!(!Path::new(&path).exists());
    be.append(
        &header,
        &[delta(0, "a"), delta(1, "b"), delta(2, "c")],
        Expect::New,
    )
    .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 4);
    assert!(!text.contains("text-chunks"));
}

#[test]
fn wrong_encoding_and_flat_files_are_refused() {
    let tmp = TempDir::new("layout");
    let z = backend(tmp.path(), Compression::Zstd, true);
    let header = SessionHeader::new("a", 1);
    z.append(&header, &[delta(0, "a")], Expect::New).unwrap();
    let n = backend(tmp.path(), Compression::None, true);
    let e = n.list().unwrap_err();
    assert_eq!(
        redact(&e.to_string(), tmp.path()),
        "session artifact \"<ROOT>/_no-cwd/a/session.jsonl.zstd\" uses .jsonl.zstd, but this backend is configured for compression \"none\"; use a separate root or select the matching compression mode"
    );
    assert!(n.read("a").is_err());
    assert!(n.append(&header, &[delta(0, "a")], Expect::New).is_err());

    let tmp = TempDir::new("flat");
    let be = backend(tmp.path(), Compression::None, true);
    be.append(&header, &[delta(0, "a")], Expect::New).unwrap();
    std::fs::write(tmp.path().join("_no-cwd/b.jsonl"), "{}\n").unwrap();
    let msg = "session artifact \"<ROOT>/_no-cwd/b.jsonl\" uses the unsupported flat-file layout; use a separate root or move it into a project/session directory before loading";
    assert_eq!(redact(&be.list().unwrap_err().to_string(), tmp.path()), msg);
    assert_eq!(
        redact(&be.read("a").unwrap_err().to_string(), tmp.path()),
        msg
    );
    assert_eq!(
        redact(&be.read("b").unwrap_err().to_string(), tmp.path()),
        msg
    );
}

#[test]
fn list_skips_incomplete_dirs_and_rejects_misplaced_or_duplicate_headers() {
    let tmp = TempDir::new("list");
    let root = tmp.path();
    let be = backend(root, Compression::None, true);
    let mut h = SessionHeader::new("ok", 1);
    h.cwd = Some("/p".into());
    be.append(&h, &[delta(0, "a")], Expect::New).unwrap();
    // Skipped: no file, empty file, no complete first line, not a header.
    std::fs::create_dir_all(root.join("--p--/nofile")).unwrap();
    for (dir, text) in [
        ("empty", ""),
        ("partial", r#"{"type":"session","version":0"#),
        ("notheader", "{\"type\":\"turn/start\"}\n"),
    ] {
        std::fs::create_dir_all(root.join("--p--").join(dir)).unwrap();
        std::fs::write(root.join("--p--").join(dir).join("session.jsonl"), text).unwrap();
    }
    assert_eq!(
        be.list().unwrap(),
        vec![SessionHeader::parse(
        r#"{"type":"session","version":0,"id":"ok","createdAt":1,"cwd":"/p","delegationDepth":0}"#,
        dsh_persist::model::header::HeaderSource::JsonlLine
    ).unwrap()]
    );

    // A header whose id does not match its directory rejects the root.
    std::fs::create_dir_all(root.join("--p--/other")).unwrap();
    std::fs::write(
        root.join("--p--/other/session.jsonl"),
        "{\"type\":\"session\",\"version\":0,\"id\":\"ok\",\"createdAt\":1,\"cwd\":\"/p\",\"delegationDepth\":0}\n",
    )
    .unwrap();
    let e = be.list().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption);
    assert!(e.to_string().contains("belongs at"), "{e}");
    std::fs::remove_dir_all(root.join("--p--/other")).unwrap();

    // The same id under two projects (cwd moved from /q to /p) is a duplicate.
    std::fs::create_dir_all(root.join("--q--/ok")).unwrap();
    std::fs::write(
        root.join("--q--/ok/session.jsonl"),
        "{\"type\":\"session\",\"version\":0,\"id\":\"ok\",\"createdAt\":1,\"cwd\":\"/q\",\"delegationDepth\":0}\n",
    )
    .unwrap();
    let e = be.list().unwrap_err();
    assert!(e.to_string().contains("stored twice"), "{e}");
    let e = be.read("ok").unwrap_err();
    assert!(e.to_string().contains("stored twice"), "{e}");

    // A session dir without a log (a creation in progress) is no duplicate.
    std::fs::remove_file(root.join("--q--/ok/session.jsonl")).unwrap();
    assert_eq!(be.read("ok").unwrap().unwrap().events.len(), 1);
    assert_eq!(be.list().unwrap().len(), 1);
}
