//! The intact prefix of a log that may no longer load (issue 19,
//! `salvage`): the header and every record line before the first one that
//! cannot be read — an undecodable or structurally corrupt Zstandard
//! frame, an unparsable line, a seq gap, a torn last line. Read only; the
//! file is never repaired. The bounds of the read path apply.

use std::io::Read;
use std::path::Path;

use super::codec_zstd::{DecodeEnd, FrameDecoder};
use super::layout::Compression;
use super::{frames, nofollow, reader};
use crate::backend::limits::{self, Limits};
use crate::backend::manage::IntactPrefix;
use crate::codec::chunk_rows::Record;
use crate::error::{Error, Result};
use crate::model::event::Event;

/// The decoded text of `buf` up to the first frame that is torn, corrupt or
/// fails to decode, and why it stops there (`None`: every frame decoded).
fn decoded_frames(buf: &[u8], limits: &Limits) -> (Vec<u8>, Option<String>) {
    let max = usize::try_from(limits.max_log_bytes).unwrap_or(usize::MAX);
    let mut dec = FrameDecoder::bounded(max);
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < buf.len() {
        let frame = match frames::first_frame(&buf[pos..]) {
            Ok(Some(f)) => f,
            Ok(None) => return (out, Some(format!("a torn frame at byte {pos}"))),
            Err(e) => return (out, Some(format!("a corrupt frame at byte {pos}: {e}"))),
        };
        let end = pos + frame.end as usize;
        let before = out.len();
        let decoded = dec.decode(&buf[pos..end], &mut out, |b| {
            if b.len() > max {
                return Err(Error::corruption("the log decodes past maxLogBytes"));
            }
            Ok(())
        });
        match decoded {
            Ok(DecodeEnd::Finished) => {}
            Ok(DecodeEnd::Failed(cause)) => {
                out.truncate(before);
                return (
                    out,
                    Some(format!("the frame at byte {pos} fails to decode: {cause}")),
                );
            }
            Ok(DecodeEnd::NeedMore) => {
                out.truncate(before);
                return (out, Some(format!("the frame at byte {pos} is incomplete")));
            }
            Err(e) => {
                out.truncate(before);
                return (out, Some(format!("the frame at byte {pos}: {e}")));
            }
        }
        pos = end;
    }
    (out, None)
}

/// Reads the intact prefix of the log at `path` (inside a root).
pub fn read_intact_prefix(
    path: &Path,
    compression: Compression,
    limits: &Limits,
) -> Result<IntactPrefix> {
    let (mut file, _) = nofollow::open_regular(path, nofollow::LOG_DEPTH)
        .map_err(|e| nofollow::io_err("cannot open", path, nofollow::LOG_DEPTH, e))?;
    let cap = limits.max_log_bytes.saturating_mul(2);
    let mut buf = Vec::new();
    file.by_ref()
        .take(cap.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
    if buf.len() as u64 > cap {
        return Err(limits.log_error(
            &format!("session log {}", path.display()),
            &format!("the file holds more than {cap} bytes"),
        ));
    }
    let (text, mut stopped) = match compression {
        Compression::None => (buf, None),
        Compression::Zstd => decoded_frames(&buf, limits),
    };
    let raw_log = path.display().to_string();
    let mut lines = text.split_inclusive(|b| *b == b'\n');
    let header_line = lines
        .next()
        .filter(|l| l.ends_with(b"\n"))
        .ok_or_else(|| reader::no_header(&raw_log))?;
    let header = reader::parse_header_line(&header_line[..header_line.len() - 1], &raw_log)?;
    let mut events: Vec<Event> = Vec::new();
    let expansion = limits.salvage_budget();
    for (i, line) in lines.enumerate() {
        let n = i + 1;
        let Some(line) = line.strip_suffix(b"\n") else {
            stopped.get_or_insert(format!("record line {n} is torn (no newline)"));
            break;
        };
        let text = String::from_utf8_lossy(line);
        let record = match Record::parse_stored_line(&text) {
            Ok(r) => r,
            Err(_) => {
                stopped = Some(format!("record line {n} is unparsable"));
                break;
            }
        };
        // The events packed rows expand to are counted before they are
        // built, as a full read counts them, up to the bound of the text
        // (twice maxLogBytes); past it the prefix stops, as at a frame
        // that decodes past maxLogBytes.
        if !expansion.charge(limits::expansion_charge(&record)) {
            stopped = Some(format!(
                "record line {n}: the events of the packed chunk rows up to it, each counted as {} bytes, come to more than {cap} bytes (twice maxLogBytes)",
                limits::PACKED_MEMBER_CHARGE
            ));
            break;
        }
        let expected = events.len() as u64;
        if record.first_seq() != expected {
            stopped = Some(format!(
                "record line {n} has seq {}, expected {expected}",
                record.first_seq()
            ));
            break;
        }
        record.into_events(&mut events);
    }
    Ok(IntactPrefix {
        header,
        events,
        stopped,
    })
}
