//! The little-endian byte form of the store's cache files (the append
//! checkpoint, the search index): u64 integers and u64-length-prefixed
//! UTF-8 strings, read back through a cursor that fails (`None`) past the
//! end, so a torn or damaged file is refused rather than misread.

/// Appends a little-endian u64 (the form [`Input::u64`] reads).
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a length-prefixed string (the form [`Input::str`] reads).
pub fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u64(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// A cursor over encoded bytes; every read fails (`None`) past the end.
pub struct Input<'a>(pub &'a [u8]);

impl<'a> Input<'a> {
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }

    pub fn u8(&mut self) -> Option<u8> {
        self.take(1)?.first().copied()
    }

    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    pub fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    pub fn str(&mut self) -> Option<&'a str> {
        let n = usize::try_from(self.u64()?).ok()?;
        std::str::from_utf8(self.take(n)?).ok()
    }

    /// A u64 count of the items that follow, each encoded in at least
    /// `min_item_bytes`; `None` when that many items cannot fit in the
    /// bytes left. A caller may presize for the count: a damaged or
    /// crafted file cannot make it reserve more than the file could hold
    /// (a count of 2^40 in a 50-byte file is refused before any
    /// allocation).
    pub fn count(&mut self, min_item_bytes: usize) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n.checked_mul(min_item_bytes.max(1))? <= self.0.len()).then_some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusal_past_the_end() {
        let mut out = Vec::new();
        put_u64(&mut out, 7);
        put_str(&mut out, "héllo");
        let mut inp = Input(&out);
        assert_eq!(inp.u64(), Some(7));
        assert_eq!(inp.str(), Some("héllo"));
        assert_eq!(inp.u8(), None);
        // A cut anywhere inside the string refuses it.
        for n in 8..out.len() {
            let mut inp = Input(&out[..n]);
            inp.u64();
            assert_eq!(inp.str(), None, "cut at {n}");
        }
    }

    #[test]
    fn a_count_is_refused_when_its_items_cannot_fit() {
        let mut out = Vec::new();
        put_u64(&mut out, 3);
        out.extend_from_slice(&[0; 30]);
        // Three items of 10 bytes fit in 30; of 11 they do not.
        assert_eq!(Input(&out).count(10), Some(3));
        assert_eq!(Input(&out).count(11), None);
        // Zero-byte items count as one byte each.
        assert_eq!(Input(&out[..10]).count(0), None);
        assert_eq!(Input(&out[..11]).count(0), Some(3));
        // A count whose product overflows is refused, not wrapped.
        let mut huge = Vec::new();
        put_u64(&mut huge, u64::MAX);
        huge.push(0);
        assert_eq!(Input(&huge).count(2), None);
        assert_eq!(Input(&[1, 0]).count(1), None, "a cut count");
    }
}
