//! The `source_event_seqs` BLOB codec of schema 17 (SPEC §4.2).
//!
//! The first seq is an unsigned LEB128 varint; every following seq is the
//! ZigZag varint of its difference from the previous one (`+d → 2d`,
//! `−d → 2d − 1`). Varints are canonical (no redundant trailing zero group)
//! and at most 8 groups long (56 bits, room for any safe-integer delta).
//! An empty list is an empty BLOB.

use crate::model::json::MAX_SAFE_INTEGER;

/// The most 7-bit groups one varint may use.
pub const MAX_GROUPS: usize = 8;

/// Why a BLOB is not a valid `source_event_seqs` encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarintError(pub String);

impl std::fmt::Display for VarintError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// Encodes seqs (each a non-negative safe integer).
pub fn encode(seqs: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(seqs.len() + 2);
    let mut prev: Option<u64> = None;
    for &s in seqs {
        match prev {
            None => write_varint(&mut out, s),
            Some(p) => write_varint(&mut out, zigzag(s as i64 - p as i64)),
        }
        prev = Some(s);
    }
    out
}

/// Reads one canonical varint at `*pos`.
fn read_varint(blob: &[u8], pos: &mut usize) -> Result<u64, VarintError> {
    let start = *pos;
    let mut v: u64 = 0;
    for group in 0..MAX_GROUPS {
        let Some(&b) = blob.get(*pos) else {
            return Err(VarintError(format!(
                "truncated varint at byte {start} of source_event_seqs"
            )));
        };
        *pos += 1;
        v |= u64::from(b & 0x7f) << (7 * group);
        if b & 0x80 == 0 {
            if b == 0 && group > 0 {
                return Err(VarintError(format!(
                    "non-canonical varint at byte {start} of source_event_seqs"
                )));
            }
            return Ok(v);
        }
    }
    Err(VarintError(format!(
        "varint longer than {MAX_GROUPS} groups at byte {start} of source_event_seqs"
    )))
}

/// Decodes a BLOB, handing each seq (checked to be a non-negative safe
/// integer) to `each` in order.
fn decode_each(blob: &[u8], mut each: impl FnMut(u64)) -> Result<(), VarintError> {
    let mut prev: Option<u64> = None;
    let mut count = 0usize;
    let mut pos = 0;
    let max = MAX_SAFE_INTEGER as i128;
    while pos < blob.len() {
        let raw = read_varint(blob, &mut pos)?;
        let value: i128 = match prev {
            None => i128::from(raw),
            Some(prev) => i128::from(prev) + i128::from(unzigzag(raw)),
        };
        if !(0..=max).contains(&value) {
            return Err(VarintError(format!(
                "source_event_seqs entry {count} is {value}, not a non-negative safe integer"
            )));
        }
        prev = Some(value as u64);
        count += 1;
        each(value as u64);
    }
    Ok(())
}

/// Decodes a BLOB into seqs, each checked to be a non-negative safe integer.
pub fn decode(blob: &[u8]) -> Result<Vec<u64>, VarintError> {
    let mut out = Vec::new();
    decode_each(blob, |s| out.push(s))?;
    Ok(out)
}

/// Appends the decimal digits of `v`.
fn push_decimal(out: &mut String, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}

/// Decodes a BLOB into the JSON array text of its seqs (`[3,4,5]`), in one
/// pass without intermediate allocations.
pub fn decode_to_json(blob: &[u8]) -> Result<String, VarintError> {
    // Deltas are mostly one byte and seqs a few digits.
    let mut out = String::with_capacity(blob.len() * 6 + 2);
    out.push('[');
    decode_each(blob, |s| {
        if out.len() > 1 {
            out.push(',');
        }
        push_decimal(&mut out, s);
    })?;
    out.push(']');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn encodes_like_the_original() {
        // Values seen in the upstream corpus (sqliteBefore).
        assert_eq!(hex(&encode(&[3, 4, 5, 6, 7, 8, 9, 10])), "0302020202020202");
        assert_eq!(hex(&encode(&[160])), "a001");
        assert_eq!(hex(&encode(&[42, 41])), "2a01");
        assert_eq!(hex(&encode(&[])), "");
        assert_eq!(hex(&encode(&[5, 3])), "0503");
    }

    #[test]
    fn round_trips_large_and_negative_deltas() {
        let seqs = [MAX_SAFE_INTEGER as u64, 0, 7, MAX_SAFE_INTEGER as u64, 1];
        let blob = encode(&seqs);
        assert_eq!(decode(&blob).unwrap(), seqs);
        assert_eq!(decode_to_json(&encode(&[1, 2])).unwrap(), "[1,2]");
        assert_eq!(decode_to_json(&[]).unwrap(), "[]");
        assert_eq!(
            decode_to_json(&blob).unwrap(),
            "[9007199254740991,0,7,9007199254740991,1]"
        );
        assert_eq!(
            decode_to_json(&encode(&[0, 10, 9, 100])).unwrap(),
            "[0,10,9,100]"
        );
    }

    #[test]
    fn rejects_bad_encodings() {
        // truncated
        assert!(decode(&[0x80]).unwrap_err().0.contains("truncated"));
        // non-canonical: trailing zero group
        assert!(
            decode(&[0x81, 0x00])
                .unwrap_err()
                .0
                .contains("non-canonical")
        );
        // nine groups
        assert!(
            decode(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])
                .unwrap_err()
                .0
                .contains("longer than 8")
        );
        // beyond the safe range: 2^54 in 8 groups
        let mut big = Vec::new();
        write_varint(&mut big, 1 << 54);
        assert!(decode(&big).unwrap_err().0.contains("safe integer"));
        // a delta going below zero
        assert!(decode(&[0x01, 0x05]).unwrap_err().0.contains("-2"));
    }
}
