//! Zstandard frames as the original writes them (SPEC §3.3): level 3, content
//! checksum on, no content-size field (frame header descriptor `0x04`), and a
//! streaming decoder that hands out the plaintext in bounded chunks.

use zstd::zstd_safe::{self, CCtx, CParameter, DCtx, InBuffer, OutBuffer};

use crate::error::{Error, Result};

/// The compression level of every frame (zstd's default).
pub const LEVEL: i32 = 3;

/// Plaintext chunk size handed to the line scanner while decoding.
const OUT_CHUNK: usize = 256 * 1024;

fn zstd_error(what: &str, code: usize) -> Error {
    Error::io_msg(format!("{what}: {}", zstd_safe::get_error_name(code)))
}

/// Encodes `text` as one frame: level 3, checksum flag set, no content size.
///
/// The input goes through the streaming API (`ZSTD_e_continue`, then
/// `ZSTD_e_end`), so the encoder does not know the input size, exactly like
/// the original's stream: same parameters (window byte `0x58`), same bytes.
pub fn encode_frame(text: &[u8]) -> Result<Vec<u8>> {
    let mut cctx = CCtx::create();
    let set = |cctx: &mut CCtx<'_>, p: CParameter| {
        cctx.set_parameter(p)
            .map(|_| ())
            .map_err(|c| zstd_error("cannot configure the Zstandard encoder", c))
    };
    set(&mut cctx, CParameter::CompressionLevel(LEVEL))?;
    set(&mut cctx, CParameter::ChecksumFlag(true))?;
    set(&mut cctx, CParameter::ContentSizeFlag(false))?;
    let mut out: Vec<u8> = Vec::with_capacity(zstd_safe::compress_bound(text.len()) + 32);
    let mut input = InBuffer::around(text);
    // Feed everything with ZSTD_e_continue (size unknown to the encoder, like
    // a stream), then end the frame.
    while input.pos() < text.len() {
        reserve_some(&mut out);
        let len = out.len();
        let mut ob = OutBuffer::around_pos(&mut out, len);
        cctx.compress_stream2(
            &mut ob,
            &mut input,
            zstd_safe::zstd_sys::ZSTD_EndDirective::ZSTD_e_continue,
        )
        .map_err(|c| zstd_error("cannot encode a Zstandard frame", c))?;
    }
    loop {
        reserve_some(&mut out);
        let len = out.len();
        let mut ob = OutBuffer::around_pos(&mut out, len);
        let remaining = cctx
            .end_stream(&mut ob)
            .map_err(|c| zstd_error("cannot encode a Zstandard frame", c))?;
        if remaining == 0 {
            break;
        }
    }
    Ok(out)
}

fn reserve_some(out: &mut Vec<u8>) {
    if out.capacity() - out.len() < 1024 {
        out.reserve(out.capacity().max(4096));
    }
}

/// The result of decoding one frame's bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum DecodeEnd {
    /// The frame ended (checksum verified).
    Finished,
    /// The input ran out before the frame ended (a torn frame).
    NeedMore,
    /// The decoder rejected the data; zstd's message (e.g. `Restored data
    /// doesn't match checksum`).
    Failed(String),
}

/// A reusable streaming decoder.
///
/// Its output buffer grows by doubling, but never much past `max_buffer`
/// bytes: a caller whose sink drains complete lines (and refuses a pending
/// line longer than its record limit) never makes the decoder reserve more
/// than that limit plus one step, however large the frame decodes.
pub struct FrameDecoder {
    dctx: DCtx<'static>,
    max_buffer: usize,
}

impl FrameDecoder {
    /// A decoder whose buffer stays near the default `maxRecordBytes`.
    pub fn new() -> Self {
        FrameDecoder::bounded(crate::backend::limits::DEFAULT_MAX_RECORD_BYTES as usize)
    }

    /// A decoder whose buffer stays near `max_buffer` bytes (the sink must
    /// refuse to keep more).
    pub fn bounded(max_buffer: usize) -> Self {
        FrameDecoder {
            dctx: DCtx::create(),
            max_buffer,
        }
    }

    /// Decodes the bytes of one frame (possibly cut short), appending the
    /// plaintext to `out` in chunks of at most 256 KiB; after each chunk
    /// `sink(out)` may consume (drain) what it has processed, and must fail
    /// when `out` holds more than it may keep (the decoder's buffer bound).
    /// Stops early if `sink` fails.
    pub fn decode<F>(&mut self, frame: &[u8], out: &mut Vec<u8>, mut sink: F) -> Result<DecodeEnd>
    where
        F: FnMut(&mut Vec<u8>) -> Result<()>,
    {
        let _ = self.dctx.reset(zstd_safe::ResetDirective::SessionOnly);
        let mut input = InBuffer::around(frame);
        loop {
            crate::backend::limits::reserve_bounded(out, OUT_CHUNK / 2, self.max_buffer)?;
            let before = out.len();
            let res = {
                let mut ob = OutBuffer::around_pos(out, before);
                self.dctx.decompress_stream(&mut ob, &mut input)
            };
            match res {
                Err(code) => {
                    sink(out)?;
                    return Ok(DecodeEnd::Failed(
                        zstd_safe::get_error_name(code).to_string(),
                    ));
                }
                Ok(hint) => {
                    let produced = out.len() > before;
                    if produced {
                        sink(out)?;
                    }
                    if hint == 0 {
                        return Ok(DecodeEnd::Finished);
                    }
                    let out_full = out.len() == out.capacity();
                    if input.pos() == frame.len() && !produced && !out_full {
                        return Ok(DecodeEnd::NeedMore);
                    }
                }
            }
        }
    }
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(frame: &[u8]) -> (Vec<u8>, DecodeEnd) {
        let mut out = Vec::new();
        let mut all = Vec::new();
        let end = FrameDecoder::new()
            .decode(frame, &mut out, |b| {
                all.extend_from_slice(b);
                b.clear();
                Ok(())
            })
            .unwrap();
        (all, end)
    }

    #[test]
    fn frame_descriptor_is_0x04_and_round_trips() {
        let text = b"{\"a\":1}\n".repeat(1000);
        let f = encode_frame(&text).unwrap();
        assert_eq!(&f[..4], &[0x28, 0xB5, 0x2F, 0xFD]);
        assert_eq!(
            f[4], 0x04,
            "checksum on, no content size, not single-segment"
        );
        let (plain, end) = decode_all(&f);
        assert_eq!(end, DecodeEnd::Finished);
        assert_eq!(plain, text);
        let small = encode_frame(b"x\n").unwrap();
        assert_eq!(small[4], 0x04);
    }

    #[test]
    fn torn_and_corrupt_frames() {
        let text: Vec<u8> = (0..400_000u32)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let f = encode_frame(&text).unwrap();
        let (plain, end) = decode_all(&f[..f.len() - 1]);
        assert_eq!(end, DecodeEnd::NeedMore);
        assert!(text.starts_with(&plain));
        let mut bad = f.clone();
        let n = bad.len();
        bad[n - 1] ^= 0xFF;
        let (_, end) = decode_all(&bad);
        assert_eq!(
            end,
            DecodeEnd::Failed("Restored data doesn't match checksum".into())
        );
    }
}
