//! Structural scan of a `session.jsonl.zstd` file (SPEC §3.3, §3.5): where
//! each Zstandard frame starts and ends, without decoding anything.
//!
//! Lengths read from the file are never trusted past its end: a frame whose
//! header, a block or the checksum runs past end of file is a *torn frame*,
//! and its start is the repair point.

use crate::backend::limits::{self, Limits};
use crate::error::{Error, Result};

/// `0xFD2FB528`, little-endian on disk.
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Reserved and unused frame-header-descriptor bits; set → corruption.
const RESERVED_DESCRIPTOR_BITS: u8 = 0x18;

/// One complete frame: `start..end` byte range of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    pub start: u64,
    pub end: u64,
    /// The frame header descriptor byte.
    pub descriptor: u8,
}

/// The frame structure of a whole file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameScan {
    /// Complete frames, in order, back to back from byte 0.
    pub frames: Vec<Frame>,
    /// Start of an incomplete last frame, if the file ends inside one.
    pub torn_start: Option<u64>,
}

fn corrupt(message: String) -> Error {
    Error::corruption(format!("corrupt Zstandard session log: {message}"))
}

/// Outcome of walking one frame.
enum Walk {
    Complete { end: usize, descriptor: u8 },
    Torn,
}

fn walk_frame(buf: &[u8], start: usize) -> Result<Walk> {
    let rest = &buf[start..];
    // Fewer than 4 bytes cannot be judged: a torn frame, whatever they
    // are (the original's scan; DIFFERENCES A.1 #17).
    if rest.len() < 4 {
        return Ok(Walk::Torn);
    }
    if rest[..4] != ZSTD_MAGIC {
        return Err(corrupt(format!("invalid frame magic at byte {start}")));
    }
    let Some(&fhd) = rest.get(4) else {
        return Ok(Walk::Torn);
    };
    if fhd & RESERVED_DESCRIPTOR_BITS != 0 {
        return Err(corrupt(format!(
            "reserved frame-header bit at byte {}",
            start + 4
        )));
    }
    let fcs_flag = fhd >> 6;
    let single_segment = fhd & 0x20 != 0;
    let checksum = fhd & 0x04 != 0;
    let did_size = [0usize, 1, 2, 4][(fhd & 0x03) as usize];
    let fcs_size = match fcs_flag {
        0 => usize::from(single_segment),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let header_len = 5 + usize::from(!single_segment) + did_size + fcs_size;
    let mut pos = header_len;
    if pos > rest.len() {
        return Ok(Walk::Torn);
    }
    loop {
        if pos + 3 > rest.len() {
            return Ok(Walk::Torn);
        }
        let bh =
            u32::from(rest[pos]) | u32::from(rest[pos + 1]) << 8 | u32::from(rest[pos + 2]) << 16;
        let last = bh & 1 != 0;
        let block_type = (bh >> 1) & 3;
        let block_size = (bh >> 3) as usize;
        let body = match block_type {
            0 | 2 => block_size,
            1 => 1,
            _ => {
                return Err(corrupt(format!(
                    "reserved block type at byte {}",
                    start + pos
                )));
            }
        };
        pos += 3;
        if body > rest.len() - pos {
            return Ok(Walk::Torn);
        }
        pos += body;
        if last {
            break;
        }
    }
    if checksum {
        if rest.len() - pos < 4 {
            return Ok(Walk::Torn);
        }
        pos += 4;
    }
    Ok(Walk::Complete {
        end: start + pos,
        descriptor: fhd,
    })
}

/// Walks every frame of `buf` (a whole file), however many (tools and
/// tests; the reads take [`scan_bounded`]).
pub fn scan(buf: &[u8]) -> Result<FrameScan> {
    scan_up_to(buf, usize::MAX)
}

/// The fewest decoded bytes a frame of a log holds: every writer's frame
/// holds at least one complete record line ([`limits::MIN_RECORD_LINE`]).
pub const MIN_FRAME_TEXT: u64 = limits::MIN_RECORD_LINE;

/// [`scan`] of a file a read decodes under `limits`: a file of more frames
/// than a log of `maxLogBytes` can hold (the header frame, and one per
/// [`MIN_FRAME_TEXT`] bytes) is corruption before the frames are indexed.
/// Without it, 200 MB of empty 9-byte frames took 1.8 GB to index and walk
/// (a 2 GiB file, about 18 GB); a log that reads within `maxLogBytes`
/// never has that many.
pub fn scan_bounded(buf: &[u8], limits: &Limits) -> Result<FrameScan> {
    let max = (limits.max_log_bytes / MIN_FRAME_TEXT).saturating_add(1);
    scan_up_to(buf, usize::try_from(max).unwrap_or(usize::MAX))
}

fn scan_up_to(buf: &[u8], max_frames: usize) -> Result<FrameScan> {
    let mut frames = Vec::new();
    let mut pos = 0usize;
    while pos < buf.len() {
        match walk_frame(buf, pos)? {
            Walk::Complete { end, descriptor } => {
                if frames.len() == max_frames {
                    return Err(corrupt(format!(
                        "the file holds more than {max_frames} frames (frame {} starts at byte {pos}), more than a log within maxLogBytes can hold: every frame holds a record line of at least {MIN_FRAME_TEXT} bytes",
                        max_frames + 1
                    )));
                }
                frames.push(Frame {
                    start: pos as u64,
                    end: end as u64,
                    descriptor,
                });
                pos = end;
            }
            Walk::Torn => {
                return Ok(FrameScan {
                    frames,
                    torn_start: Some(pos as u64),
                });
            }
        }
    }
    Ok(FrameScan {
        frames,
        torn_start: None,
    })
}

/// The first frame only (what `list` reads): `Ok(None)` when the file does
/// not start with a complete frame.
pub fn first_frame(buf: &[u8]) -> Result<Option<Frame>> {
    if buf.is_empty() {
        return Ok(None);
    }
    Ok(match walk_frame(buf, 0)? {
        Walk::Complete { end, descriptor } => Some(Frame {
            start: 0,
            end: end as u64,
            descriptor,
        }),
        Walk::Torn => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use zstd::zstd_safe::{self, CCtx, CParameter, InBuffer, OutBuffer};

    fn frame(text: &[u8]) -> Vec<u8> {
        super::super::codec_zstd::encode_frame(text).unwrap()
    }

    #[test]
    fn scans_frames_and_torn_tails() {
        let mut file = frame(b"one\n");
        let a = file.len() as u64;
        file.extend(frame(b"two\nthree\n"));
        let b = file.len() as u64;
        let s = scan(&file).unwrap();
        assert_eq!(s.torn_start, None);
        assert_eq!(
            s.frames
                .iter()
                .map(|f| (f.start, f.end, f.descriptor))
                .collect::<Vec<_>>(),
            vec![(0, a, 0x04), (a, b, 0x04)]
        );
        for cut in a as usize + 1..b as usize {
            let s = scan(&file[..cut]).unwrap();
            assert_eq!(s.frames.len(), 1, "cut {cut}");
            assert_eq!(s.torn_start, Some(a), "cut {cut}");
        }
        assert_eq!(first_frame(&file[..3]).unwrap(), None);
        assert_eq!(first_frame(&file).unwrap().unwrap().end, a);
    }

    /// One frame's blocks: zstd's own encoder with a 1 KiB window (so
    /// blocks of at most 1 KiB), over text that makes every kind of block:
    /// compressed (the text), raw (pseudo-random bytes) and RLE (a run of
    /// one byte after the first block). No checksum, no content size: the
    /// header is the 4-byte magic, the descriptor and the window byte.
    fn blocks_of_every_kind() -> Vec<u8> {
        let mut text = b"{\"type\":\"turn/start\"}\n".repeat(40);
        let mut x: u32 = 0x9E37_79B9;
        text.extend((0..1500).map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        }));
        text.extend(std::iter::repeat_n(b'a', 3000));
        let mut cctx = CCtx::create();
        for p in [
            CParameter::WindowLog(10),
            CParameter::ChecksumFlag(false),
            CParameter::ContentSizeFlag(false),
        ] {
            cctx.set_parameter(p).unwrap();
        }
        let mut out = Vec::with_capacity(8192);
        let mut input = InBuffer::around(&text);
        let mut ob = OutBuffer::around(&mut out);
        cctx.compress_stream2(
            &mut ob,
            &mut input,
            zstd_safe::zstd_sys::ZSTD_EndDirective::ZSTD_e_end,
        )
        .unwrap();
        assert_eq!(out[4], 0x00, "no checksum, no content size, windowed");
        out.split_off(6)
    }

    /// A frame header of every layout the format allows (SPEC §3.5 scans
    /// the structure only): content-size field of each size, single
    /// segment or a window byte, dictionary id of each size, checksum or
    /// not; over blocks of every kind. zstd's own frame walk is the oracle
    /// for where each frame ends, and every cut of a frame is torn at its
    /// start, never corruption: a frame written by another encoder (the
    /// `zstd` tool writes content sizes; others leave out the checksum)
    /// must not make a repair cut acknowledged bytes.
    #[test]
    fn frame_ends_agree_with_zstd_for_every_header_layout() {
        let blocks = blocks_of_every_kind();
        let mut layouts = 0;
        for fcs_flag in 0u8..4 {
            for single in [false, true] {
                for did_flag in 0u8..4 {
                    for checksum in [false, true] {
                        let fhd = fcs_flag << 6
                            | u8::from(single) << 5
                            | u8::from(checksum) << 2
                            | did_flag;
                        let mut f = ZSTD_MAGIC.to_vec();
                        f.push(fhd);
                        if !single {
                            f.push(0x58);
                        }
                        f.extend(&[0x11, 0x22, 0x33, 0x44][..[0, 1, 2, 4][did_flag as usize]]);
                        let fcs_len = match fcs_flag {
                            0 => usize::from(single),
                            1 => 2,
                            2 => 4,
                            _ => 8,
                        };
                        f.extend(&[0xA0, 0x0F, 0, 0, 0, 0, 0, 0][..fcs_len]);
                        f.extend(&blocks);
                        if checksum {
                            f.extend([0xC1, 0xC2, 0xC3, 0xC4]);
                        }
                        assert_eq!(
                            zstd_safe::find_frame_compressed_size(&f),
                            Ok(f.len()),
                            "descriptor {fhd:#04x}: the oracle reads the whole frame"
                        );
                        let mut file = f.clone();
                        file.extend(&f);
                        let n = f.len() as u64;
                        let s = scan(&file).unwrap();
                        assert_eq!(
                            s.frames,
                            vec![
                                Frame {
                                    start: 0,
                                    end: n,
                                    descriptor: fhd
                                },
                                Frame {
                                    start: n,
                                    end: 2 * n,
                                    descriptor: fhd
                                },
                            ],
                            "descriptor {fhd:#04x}"
                        );
                        assert_eq!(s.torn_start, None, "descriptor {fhd:#04x}");
                        for cut in n as usize + 1..file.len() {
                            let s = scan(&file[..cut]).unwrap_or_else(|e| {
                                panic!("descriptor {fhd:#04x}, cut {cut}: {e}")
                            });
                            assert_eq!(
                                (s.frames.len(), s.torn_start),
                                (1, Some(n)),
                                "descriptor {fhd:#04x}, cut {cut}"
                            );
                        }
                        for cut in 1..n as usize {
                            assert_eq!(
                                first_frame(&f[..cut]).unwrap(),
                                None,
                                "descriptor {fhd:#04x}, cut {cut}"
                            );
                        }
                        assert_eq!(first_frame(&file).unwrap(), Some(s.frames[0]));
                        layouts += 1;
                    }
                }
            }
        }
        assert_eq!(layouts, 64);
    }

    /// Frames as zstd's one-shot encoder writes them for the `zstd` tool
    /// (content size known: single segment with a 1-, 2- or 4-byte size,
    /// or a window byte and a size when the content is larger than the
    /// window), with and without the checksum.
    #[test]
    fn frames_of_zstds_one_shot_encoder_are_walked_whole() {
        let mut sizes_seen = std::collections::BTreeSet::new();
        for (len, window_log) in [
            (0, 0),
            (200, 0),
            (5000, 0),
            (70_000, 0),
            (5000, 10),
            (70_000, 10),
        ] {
            for checksum in [false, true] {
                let text: Vec<u8> = (0..len).map(|i| b"abcdefghij\n"[i % 11]).collect();
                let mut cctx = CCtx::create();
                cctx.set_parameter(CParameter::ChecksumFlag(checksum))
                    .unwrap();
                if window_log > 0 {
                    cctx.set_parameter(CParameter::WindowLog(window_log))
                        .unwrap();
                }
                let mut f = Vec::with_capacity(zstd_safe::compress_bound(len) + 32);
                cctx.compress2(&mut f, &text).unwrap();
                let fhd = f[4];
                sizes_seen.insert((fhd >> 6, fhd & 0x20 != 0));
                let s = scan(&f).unwrap();
                assert_eq!(
                    (s.frames.len(), s.torn_start, s.frames[0].end),
                    (1, None, f.len() as u64),
                    "{len} bytes, descriptor {fhd:#04x}"
                );
                assert_eq!(s.frames[0].descriptor, fhd);
                for cut in 1..f.len() {
                    assert_eq!(scan(&f[..cut]).unwrap().torn_start, Some(0), "cut {cut}");
                }
            }
        }
        // Single segment with a 1-, 2- and 4-byte size, and windowed
        // frames with a 2- and 4-byte size.
        assert_eq!(
            sizes_seen.into_iter().collect::<Vec<_>>(),
            vec![(0, true), (1, false), (1, true), (2, false), (2, true)]
        );
    }

    #[test]
    fn rejects_reserved_bits_and_bad_magic() {
        let mut file = frame(b"x\n");
        file[4] |= 0x08;
        let e = scan(&file).unwrap_err();
        assert!(
            e.to_string()
                .contains("reserved frame-header bit at byte 4"),
            "{e}"
        );
        let mut file = frame(b"x\n");
        file.extend_from_slice(b"garbage");
        let e = scan(&file).unwrap_err();
        assert!(e.to_string().contains("invalid frame magic"), "{e}");
        let mut file = frame(b"x\n");
        file.extend_from_slice(&[0x28, 0xB5]);
        assert!(scan(&file).unwrap().torn_start.is_some());
        // 1-3 trailing bytes are a torn frame whatever they are (the
        // original's scan: too short to judge).
        for tail in [&[0x28, 0x00][..], &[0x0a], &[1, 2, 3]] {
            let mut file = frame(b"x\n");
            let a = file.len() as u64;
            file.extend_from_slice(tail);
            assert_eq!(scan(&file).unwrap().torn_start, Some(a), "{tail:?}");
        }
        // Four bytes can be judged: the magic alone is a torn frame, any
        // other four bytes are corruption.
        let mut file = frame(b"x\n");
        let a = file.len() as u64;
        file.extend_from_slice(&ZSTD_MAGIC);
        assert_eq!(scan(&file).unwrap().torn_start, Some(a));
        let mut file = frame(b"x\n");
        file.extend_from_slice(&[0x28, 0xB5, 0x2F, 0x00]);
        let e = scan(&file).unwrap_err();
        assert!(e.to_string().contains("invalid frame magic"), "{e}");
    }
}
