//! Structural scan of a `session.jsonl.zstd` file (SPEC §3.3, §3.5): where
//! each Zstandard frame starts and ends, without decoding anything.
//!
//! Lengths read from the file are never trusted past its end: a frame whose
//! header, a block or the checksum runs past end of file is a *torn frame*,
//! and its start is the repair point.

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

/// Walks every frame of `buf` (a whole file).
pub fn scan(buf: &[u8]) -> Result<FrameScan> {
    let mut frames = Vec::new();
    let mut pos = 0usize;
    while pos < buf.len() {
        match walk_frame(buf, pos)? {
            Walk::Complete { end, descriptor } => {
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
    }
}
