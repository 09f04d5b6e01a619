//! Lossless JSON (SPEC §1.1 "Text form", §1.3).
//!
//! The library never builds a `serde_json::Value` tree on the load path. It
//! works on JSON *text*:
//!
//! - [`Scanner`] walks JSON text, validating it, and hands out raw slices of
//!   values and [`JsonStr`] string tokens, so a rule reads only the fields it
//!   needs.
//! - [`canonicalize`] turns host-supplied JSON into the exact bytes the
//!   original's `JSON.stringify` writes (compact, JS escapes, ECMAScript
//!   number text), rejecting what would not survive a round trip (`-0`,
//!   numbers beyond a double, NaN/Infinity tokens, duplicate keys).
//! - [`JsonText`] is a cheap-to-clone handle to one valid JSON value text.
//!
//! Text read from disk is valid JSON written by a writer of this format and is
//! kept byte for byte; only text arriving from a host is canonicalized.
//!
//! Strings may contain escaped lone surrogates (`\ud800`): JavaScript writes
//! them, so they are kept in raw form. [`JsonStr::decode`] maps a lone
//! surrogate to U+FFFD for comparisons; re-emission always uses the raw form.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::Arc;

/// Deepest nesting accepted in host input (canonicalized data). Deeper input
/// is rejected with an invalid-argument error.
pub const MAX_DEPTH: usize = 512;

/// Deepest nesting accepted when reading stored text: the original writes
/// and reads data nested far deeper than [`MAX_DEPTH`] (its writer stops
/// near 5,000 levels), so a stored record up to this depth is read, not
/// called unparsable. Every walker is iterative, so the thread stack does
/// not grow with the depth.
pub const MAX_READ_DEPTH: usize = 10_000;

/// Largest integer JavaScript represents exactly (2^53 − 1).
pub const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// A syntax or losslessness problem in JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonError {
    /// Not JSON at all; `at` is a byte offset into the text.
    Syntax { at: usize, what: &'static str },
    /// Valid-looking JSON that would not survive a JavaScript round trip.
    Lossless(String),
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonError::Syntax { at, what } => write!(f, "invalid JSON at byte {at}: {what}"),
            JsonError::Lossless(m) => f.write_str(m),
        }
    }
}

type JResult<T> = Result<T, JsonError>;

/// One valid JSON value as text, shared cheaply: an `Arc<str>`, or a span of
/// one (the members of an expanded chunk row share one buffer, so a load
/// makes one allocation per row rather than one per event).
#[derive(Clone)]
pub struct JsonText {
    buf: Arc<str>,
    start: u32,
    /// [`WHOLE`]: the whole buffer.
    len: u32,
}

/// `JsonText::len` of a text that is its whole buffer.
const WHOLE: u32 = u32::MAX;

impl JsonText {
    /// Wraps text the caller has already validated (disk text that went
    /// through a [`Scanner`], or text this crate generated).
    pub fn from_trusted(text: impl Into<Arc<str>>) -> Self {
        JsonText {
            buf: text.into(),
            start: 0,
            len: WHOLE,
        }
    }

    /// [`JsonText::from_trusted`] for the span `range` of a shared buffer
    /// (the span must be a valid JSON value on char boundaries).
    pub fn from_trusted_span(buf: &Arc<str>, range: std::ops::Range<usize>) -> Self {
        match (u32::try_from(range.start), u32::try_from(range.len())) {
            (Ok(start), Ok(len)) if len != WHOLE && range.end <= buf.len() => JsonText {
                buf: buf.clone(),
                start,
                len,
            },
            _ => JsonText::from_trusted(&buf[range]),
        }
    }

    /// Validates `text` as one JSON value and keeps it byte for byte.
    pub fn parse_verbatim(text: &str) -> JResult<Self> {
        let mut s = Scanner::new(text);
        s.skip_value()?;
        s.expect_end()?;
        Ok(JsonText::from_trusted(text))
    }

    /// Canonicalizes host text (see [`canonicalize`]).
    pub fn canonical(text: &str) -> JResult<Self> {
        Ok(JsonText::from_trusted(canonicalize(text)?))
    }

    pub fn as_str(&self) -> &str {
        if self.len == WHOLE {
            &self.buf
        } else {
            let start = self.start as usize;
            &self.buf[start..start + self.len as usize]
        }
    }

    /// A scanner positioned at the start of this value.
    pub fn scan(&self) -> Scanner<'_> {
        Scanner::new(self.as_str())
    }

    /// Fields of this value when it is an object, else `None`.
    pub fn fields(&self) -> Option<Vec<(JsonStr<'_>, &str)>> {
        object_fields(self.as_str()).ok()
    }

    /// The raw text of field `key` when this value is an object holding it.
    pub fn get(&self, key: &str) -> Option<&str> {
        get_field(self.as_str(), key)
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for JsonText {}

impl std::hash::Hash for JsonText {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl std::fmt::Debug for JsonText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for JsonText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string token: the raw text between the quotes, still escaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsonStr<'a> {
    raw: &'a str,
    escaped: bool,
}

impl<'a> JsonStr<'a> {
    /// A token for a string that needs no escapes (caller guarantees it).
    pub fn plain(raw: &'a str) -> Self {
        JsonStr {
            raw,
            escaped: false,
        }
    }

    /// The escaped content, exactly as in the text (without quotes).
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    /// The decoded string; a lone surrogate escape becomes U+FFFD.
    pub fn decode(&self) -> Cow<'a, str> {
        if !self.escaped {
            return Cow::Borrowed(self.raw);
        }
        let mut out = String::with_capacity(self.raw.len());
        let b = self.raw.as_bytes();
        let mut i = 0;
        let mut start = 0;
        while i < b.len() {
            if b[i] != b'\\' {
                i += 1;
                continue;
            }
            out.push_str(&self.raw[start..i]);
            let e = b[i + 1];
            i += 2;
            match e {
                b'"' => out.push('"'),
                b'\\' => out.push('\\'),
                b'/' => out.push('/'),
                b'b' => out.push('\u{8}'),
                b'f' => out.push('\u{c}'),
                b'n' => out.push('\n'),
                b'r' => out.push('\r'),
                b't' => out.push('\t'),
                _ => {
                    let (unit, next) = read_unit(b, i - 2);
                    i = next;
                    if (0xD800..0xDC00).contains(&unit) {
                        if let Some((low, after)) = peek_low_surrogate(b, i) {
                            let c = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                            out.push(char::from_u32(c).unwrap_or('\u{FFFD}'));
                            i = after;
                        } else {
                            out.push('\u{FFFD}');
                        }
                    } else {
                        out.push(char::from_u32(unit).unwrap_or('\u{FFFD}'));
                    }
                }
            }
            start = i;
        }
        out.push_str(&self.raw[start..]);
        Cow::Owned(out)
    }

    /// The decoded string as UTF-16 code units with lone surrogates kept:
    /// the JavaScript string the text stands for (where [`JsonStr::decode`]
    /// must put U+FFFD).
    pub fn decode_utf16(&self) -> Vec<u16> {
        let b = self.raw.as_bytes();
        let mut out = Vec::with_capacity(self.raw.len());
        let (mut i, mut start) = (0, 0);
        while i < b.len() {
            if b[i] != b'\\' {
                i += 1;
                continue;
            }
            out.extend(self.raw[start..i].encode_utf16());
            let unit = match b[i + 1] {
                b'u' => {
                    let (unit, next) = read_unit(b, i);
                    i = next;
                    start = i;
                    out.push(unit as u16);
                    continue;
                }
                b'b' => 0x8,
                b'f' => 0xC,
                b'n' => 0xA,
                b'r' => 0xD,
                b't' => 0x9,
                other => u16::from(other),
            };
            out.push(unit);
            i += 2;
            start = i;
        }
        out.extend(self.raw[start..].encode_utf16());
        out
    }

    /// The string as `JSON.stringify` writes it, without the quotes: one
    /// text for each JavaScript string (a lone surrogate stays an escape, an
    /// unneeded escape is written out), so two tokens stand for the same
    /// string exactly when these are equal. Borrowed when nothing is escaped.
    pub fn canonical_body(&self) -> Cow<'a, str> {
        if !self.escaped {
            return Cow::Borrowed(self.raw);
        }
        let mut out = String::with_capacity(self.raw.len());
        canon_string_body(*self, &mut out);
        Cow::Owned(out)
    }

    /// Equality with a plain Rust string, without allocating when unescaped.
    pub fn eq_str(&self, other: &str) -> bool {
        if !self.escaped {
            self.raw == other
        } else {
            self.decode() == other
        }
    }

    /// Whether the decoded string contains a lone surrogate (not representable
    /// in UTF-8).
    pub fn has_lone_surrogate(&self) -> bool {
        self.escaped && contains_lone_surrogate(self.raw.as_bytes())
    }

    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
}

/// Reads the `\uHHHH` escape at `at` (pointing at the backslash); returns the
/// code unit and the index after it. The scanner has already validated it.
fn read_unit(b: &[u8], at: usize) -> (u32, usize) {
    let mut v = 0u32;
    for &h in &b[at + 2..at + 6] {
        v = v * 16 + (h as char).to_digit(16).unwrap_or(0);
    }
    (v, at + 6)
}

fn peek_low_surrogate(b: &[u8], at: usize) -> Option<(u32, usize)> {
    if b.len() >= at + 6 && b[at] == b'\\' && b[at + 1] == b'u' {
        let (u, next) = read_unit(b, at);
        if (0xDC00..0xE000).contains(&u) {
            return Some((u, next));
        }
    }
    None
}

fn contains_lone_surrogate(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            if b[i + 1] == b'u' {
                let (u, next) = read_unit(b, i);
                if (0xD800..0xDC00).contains(&u) {
                    match peek_low_surrogate(b, next) {
                        Some((_, after)) => i = after,
                        None => return true,
                    }
                    continue;
                }
                if (0xDC00..0xE000).contains(&u) {
                    return true;
                }
                i = next;
            } else {
                i += 2;
            }
        } else {
            i += 1;
        }
    }
    false
}

/// The index of the first byte at or after `i` that ends a run of plain
/// string bytes: a quote, a backslash or a control character (`b.len()`
/// when there is none). Eight bytes at a time: a word's flagged bytes are
/// found with the "has a zero / a smaller byte" bit tricks, whose lowest
/// flag is always a true match (a borrow only spreads upwards from one).
#[inline]
fn plain_run_end(b: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(word) = b.get(i..i + 8) {
        let x = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        let quote = x ^ (ONES * u64::from(b'"'));
        let backslash = x ^ (ONES * u64::from(b'\\'));
        let hits = ((quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (x.wrapping_sub(ONES * 0x20) & !x))
            & HIGH;
        if hits != 0 {
            return i + (hits.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < b.len() && b[i] != b'"' && b[i] != b'\\' && b[i] >= 0x20 {
        i += 1;
    }
    i
}

/// A validating, allocation-free walker over JSON text.
pub struct Scanner<'a> {
    text: &'a str,
    b: &'a [u8],
    pub pos: usize,
    depth: usize,
    max_depth: usize,
}

impl<'a> Scanner<'a> {
    /// A scanner accepting nesting up to [`MAX_READ_DEPTH`].
    pub fn new(text: &'a str) -> Self {
        Scanner {
            text,
            b: text.as_bytes(),
            pos: 0,
            depth: 0,
            max_depth: MAX_READ_DEPTH,
        }
    }

    /// A scanner that refuses nesting deeper than `max_depth` (at most
    /// [`MAX_READ_DEPTH`]).
    pub fn with_max_depth(text: &'a str, max_depth: usize) -> Self {
        let mut s = Scanner::new(text);
        s.max_depth = max_depth.min(MAX_READ_DEPTH);
        s
    }

    fn err<T>(&self, what: &'static str) -> JResult<T> {
        Err(JsonError::Syntax { at: self.pos, what })
    }

    #[inline]
    pub fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.pos) {
            if c == b' ' || c == b'\n' || c == b'\r' || c == b'\t' {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    #[inline]
    pub fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.pos).copied()
    }

    /// Fails unless only whitespace remains.
    pub fn expect_end(&mut self) -> JResult<()> {
        self.ws();
        if self.pos != self.b.len() {
            return self.err("unexpected text after the value");
        }
        Ok(())
    }

    fn eat(&mut self, c: u8, what: &'static str) -> JResult<()> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            self.err(what)
        }
    }

    /// Skips one value, validating it; returns its raw text.
    pub fn value(&mut self) -> JResult<&'a str> {
        self.ws();
        let start = self.pos;
        self.skip_value()?;
        Ok(&self.text[start..self.pos])
    }

    /// Skips one value, validating it. Iterative (no recursion per nesting
    /// level), so deep values cannot exhaust a small thread stack.
    pub fn skip_value(&mut self) -> JResult<()> {
        // The containers opened by this call, innermost last (bit set =
        // object). `enter` caps the depth, so MAX_DEPTH bits suffice.
        // Inline for the usual depths (no large zeroing per call: this runs
        // for every value a rule looks at); deeper levels spill to the heap.
        let mut inline = [0u64; MAX_DEPTH / 64 + 1];
        let mut spill: Vec<u64> = Vec::new();
        macro_rules! word {
            ($i:expr) => {{
                let i = $i;
                if i < inline.len() {
                    &mut inline[i]
                } else {
                    let j = i - inline.len();
                    if spill.len() <= j {
                        spill.resize(j + 1, 0);
                    }
                    &mut spill[j]
                }
            }};
        }
        let mut open = 0usize;
        loop {
            // A value starts here.
            match self.peek() {
                Some(c @ (b'{' | b'[')) => {
                    self.enter()?;
                    self.pos += 1;
                    let close = if c == b'{' { b'}' } else { b']' };
                    if self.peek() == Some(close) {
                        self.pos += 1;
                        self.depth -= 1;
                    } else {
                        let (word, bit) = (open / 64, 1u64 << (open % 64));
                        if c == b'{' {
                            *word!(word) |= bit;
                            self.string()?;
                            self.eat(b':', "expected ':' after an object key")?;
                        } else {
                            *word!(word) &= !bit;
                        }
                        open += 1;
                        continue;
                    }
                }
                Some(b'"') => {
                    self.string()?;
                }
                Some(b't') => self.literal("true")?,
                Some(b'f') => self.literal("false")?,
                Some(b'n') => self.literal("null")?,
                Some(b'-' | b'0'..=b'9') => {
                    self.number()?;
                }
                Some(_) => return self.err("expected a JSON value"),
                None => return self.err("unexpected end of text"),
            }
            // A value ended: close finished containers, or go to the next
            // member.
            loop {
                if open == 0 {
                    return Ok(());
                }
                let top = open - 1;
                let object = *word!(top / 64) & (1u64 << (top % 64)) != 0;
                match (self.peek(), object) {
                    (Some(b','), true) => {
                        self.pos += 1;
                        self.string()?;
                        self.eat(b':', "expected ':' after an object key")?;
                        break;
                    }
                    (Some(b','), false) => {
                        self.pos += 1;
                        break;
                    }
                    (Some(b'}'), true) | (Some(b']'), false) => {
                        self.pos += 1;
                        self.depth -= 1;
                        open -= 1;
                    }
                    (_, true) => return self.err("expected ',' or '}' in an object"),
                    (_, false) => return self.err("expected ',' or ']' in an array"),
                }
            }
        }
    }

    fn enter(&mut self) -> JResult<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(JsonError::Lossless(format!(
                "JSON nested deeper than {} levels",
                self.max_depth
            )));
        }
        Ok(())
    }

    fn literal(&mut self, word: &'static str) -> JResult<()> {
        if self.b[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(())
        } else {
            self.err("invalid literal")
        }
    }

    /// Reads a number token; returns its raw text and whether it has a
    /// fraction or exponent.
    pub fn number(&mut self) -> JResult<(&'a str, bool)> {
        self.ws();
        let start = self.pos;
        let b = self.b;
        let mut i = self.pos;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                while matches!(b.get(i), Some(b'0'..=b'9')) {
                    i += 1;
                }
            }
            _ => {
                self.pos = i;
                return self.err("invalid number");
            }
        }
        let mut real = false;
        if b.get(i) == Some(&b'.') {
            real = true;
            i += 1;
            if !matches!(b.get(i), Some(b'0'..=b'9')) {
                self.pos = i;
                return self.err("invalid number: digit expected after '.'");
            }
            while matches!(b.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            real = true;
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if !matches!(b.get(i), Some(b'0'..=b'9')) {
                self.pos = i;
                return self.err("invalid number: digit expected in exponent");
            }
            while matches!(b.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        self.pos = i;
        Ok((&self.text[start..i], real))
    }

    /// Reads a string token.
    pub fn string(&mut self) -> JResult<JsonStr<'a>> {
        if self.peek() != Some(b'"') {
            return self.err("expected a string");
        }
        self.pos += 1;
        let start = self.pos;
        let b = self.b;
        let mut i = start;
        let mut escaped = false;
        loop {
            i = plain_run_end(b, i);
            match b.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok(JsonStr {
                        raw: &self.text[start..i],
                        escaped,
                    });
                }
                Some(b'\\') => {
                    escaped = true;
                    match b.get(i + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                        Some(b'u') => {
                            if i + 6 > b.len() || !b[i + 2..i + 6].iter().all(u8::is_ascii_hexdigit)
                            {
                                self.pos = i;
                                return self.err("invalid \\u escape in a string");
                            }
                            i += 6;
                        }
                        _ => {
                            self.pos = i;
                            return self.err("invalid escape in a string");
                        }
                    }
                }
                Some(_) => {
                    self.pos = i;
                    return self.err("unescaped control character in a string");
                }
                None => {
                    self.pos = i;
                    return self.err("unterminated string");
                }
            }
        }
    }

    /// Iterates an object's fields; `f` receives each key and must consume
    /// the value from the scanner.
    pub fn object<F>(&mut self, mut f: F) -> JResult<()>
    where
        F: FnMut(JsonStr<'a>, &mut Scanner<'a>) -> JResult<()>,
    {
        self.eat(b'{', "expected an object")?;
        self.enter()?;
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            let key = self.string()?;
            self.eat(b':', "expected ':' after an object key")?;
            f(key, self)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return self.err("expected ',' or '}' in an object"),
            }
        }
    }

    /// Iterates an array's items; `f` must consume each item.
    pub fn array<F>(&mut self, mut f: F) -> JResult<()>
    where
        F: FnMut(&mut Scanner<'a>) -> JResult<()>,
    {
        self.eat(b'[', "expected an array")?;
        self.enter()?;
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            f(self)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return self.err("expected ',' or ']' in an array"),
            }
        }
    }
}

/// All fields of an object text as (key, raw value) pairs, in order.
pub fn object_fields(text: &str) -> JResult<Vec<(JsonStr<'_>, &str)>> {
    let mut s = Scanner::new(text);
    let mut out = Vec::with_capacity(8);
    s.object(|k, s| {
        out.push((k, s.value()?));
        Ok(())
    })?;
    s.expect_end()?;
    Ok(out)
}

/// All items of an array text as raw value slices.
pub fn array_items(text: &str) -> JResult<Vec<&str>> {
    let mut s = Scanner::new(text);
    let mut out = Vec::new();
    s.array(|s| {
        out.push(s.value()?);
        Ok(())
    })?;
    s.expect_end()?;
    Ok(out)
}

/// The raw text of `key` in an object text (first occurrence), if any.
pub fn get_field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let mut s = Scanner::new(text);
    let mut found = None;
    s.object(|k, s| {
        let v = s.value()?;
        if found.is_none() && k.eq_str(key) {
            found = Some(v);
        }
        Ok(())
    })
    .ok()?;
    found
}

/// `JSON.parse` semantics for duplicate keys of a top-level object: when
/// `text` (an object) repeats a key, the object text with each repeated key
/// once, at its first place, holding its last value; `None` when no key
/// repeats.
pub fn last_wins_object(text: &str) -> JResult<Option<String>> {
    let fields = object_fields(text)?;
    if fields.len() < 2 {
        return Ok(None);
    }
    // Compared as JavaScript strings: two lone surrogates are two keys.
    // Each key's last place, by hash (a crafted line of a million keys
    // with one repeat must not take a pairwise comparison of them all).
    let keys: Vec<Cow<'_, str>> = fields.iter().map(|(k, _)| k.canonical_body()).collect();
    let mut last: std::collections::HashMap<&str, usize> =
        std::collections::HashMap::with_capacity(keys.len());
    for (i, k) in keys.iter().enumerate() {
        last.insert(k, i);
    }
    if last.len() == keys.len() {
        return Ok(None);
    }
    let mut out = String::with_capacity(text.len());
    out.push('{');
    for ((k, _), key) in fields.iter().zip(&keys) {
        // Taken out at a key's first place, so its later places are skipped.
        let Some(at) = last.remove(key.as_ref()) else {
            continue;
        };
        if out.len() > 1 {
            out.push(',');
        }
        out.push('"');
        out.push_str(k.raw());
        out.push_str("\":");
        out.push_str(fields[at].1.trim());
    }
    out.push('}');
    Ok(Some(out))
}

/// What JavaScript's template literal prints for a raw JSON value
/// (`${value}`): strings unquoted, numbers in ECMAScript form, `[object
/// Object]` for objects, an array's items joined with commas.
pub fn js_string_of(raw: &str) -> String {
    match kind_of(raw) {
        Some(Kind::String) => as_str(raw).map_or_else(String::new, |t| t.decode().into_owned()),
        Some(Kind::Number) => {
            let mut out = String::new();
            match as_f64(raw) {
                Some(v) => write_f64(&mut out, v),
                None => out.push_str(raw.trim()),
            }
            out
        }
        Some(Kind::Object) => "[object Object]".to_string(),
        Some(Kind::Array) => array_items(raw)
            .map(|items| {
                items
                    .iter()
                    .map(|i| match kind_of(i) {
                        Some(Kind::Null) => String::new(),
                        _ => js_string_of(i),
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default(),
        _ => raw.trim().to_string(),
    }
}

/// Kind of a raw JSON value, by its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Object,
    Array,
    String,
    Number,
    Bool,
    Null,
}

pub fn kind_of(raw: &str) -> Option<Kind> {
    Some(match raw.trim_start().as_bytes().first()? {
        b'{' => Kind::Object,
        b'[' => Kind::Array,
        b'"' => Kind::String,
        b't' | b'f' => Kind::Bool,
        b'n' => Kind::Null,
        _ => Kind::Number,
    })
}

/// The string token of a raw value when it is a string.
pub fn as_str(raw: &str) -> Option<JsonStr<'_>> {
    let mut s = Scanner::new(raw);
    let t = s.string().ok()?;
    s.expect_end().ok()?;
    Some(t)
}

/// The numeric value of a raw JSON number, as JavaScript would read it.
pub fn as_f64(raw: &str) -> Option<f64> {
    let raw = raw.trim();
    if !matches!(raw.as_bytes().first(), Some(b'-' | b'0'..=b'9')) {
        return None;
    }
    raw.parse::<f64>().ok()
}

/// The value of a raw JSON number when it is an integer JavaScript holds
/// exactly (|n| ≤ 2^53 − 1), as `Number.isSafeInteger` decides (so `1.0` and
/// `1e2` count).
pub fn as_safe_int(raw: &str) -> Option<i64> {
    let raw = raw.trim();
    let b = raw.as_bytes();
    let digits = b.strip_prefix(b"-").unwrap_or(b);
    if !digits.is_empty() && digits.len() <= 16 && digits.iter().all(u8::is_ascii_digit) {
        // At most 16 digits: no overflow.
        let v = digits
            .iter()
            .fold(0i64, |v, &d| v * 10 + i64::from(d - b'0'));
        let v = if digits.len() < b.len() { -v } else { v };
        return (v.abs() <= MAX_SAFE_INTEGER).then_some(v);
    }
    let f = as_f64(raw)?;
    if f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64 {
        Some(f as i64)
    } else {
        None
    }
}

/// Like [`as_safe_int`] but also requires n ≥ 0.
pub fn as_safe_uint(raw: &str) -> Option<u64> {
    as_safe_int(raw).and_then(|v| u64::try_from(v).ok())
}

/// Whether a raw value is the literal `true`.
pub fn is_true(raw: &str) -> bool {
    raw.trim() == "true"
}

// ---------------------------------------------------------------------------
// Writing

/// Writes `items` as a JSON array, each by `write_item`.
pub fn write_array<T>(
    out: &mut String,
    items: impl IntoIterator<Item = T>,
    mut write_item: impl FnMut(&mut String, T),
) {
    out.push('[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_item(out, item);
    }
    out.push(']');
}

/// Appends `s` as a JSON string literal the way `JSON.stringify` writes it.
pub fn write_string(out: &mut String, s: &str) {
    out.push('"');
    write_string_body(out, s);
    out.push('"');
}

/// Appends the escaped body of a JSON string (no quotes).
pub fn write_string_body(out: &mut String, s: &str) {
    let b = s.as_bytes();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        let esc: &str = match c {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            let _ = write!(out, "\\u{:04x}", c);
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
}

/// `s` as a quoted JSON string (used in messages, like the original's
/// `JSON.stringify(id)`).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_string(&mut out, s);
    out
}

/// Appends a double in ECMAScript `Number::toString` form.
pub fn write_f64(out: &mut String, v: f64) {
    let mut buf = ryu_js::Buffer::new();
    out.push_str(buf.format(v));
}

// ---------------------------------------------------------------------------
// Canonicalization of host input

/// Re-emits host JSON text exactly as `JSON.stringify(JSON.parse(text))`
/// would, or explains why the value is not losslessly JSON-serializable.
///
/// - whitespace removed; strings re-escaped JS style (`\/` → `/`, `\u0041` →
///   `A`, lone surrogates kept as lowercase `\udHHH` escapes);
/// - integer literals kept digit for digit (large ones too: SPEC §1.3 keeps
///   them verbatim inside `data`); fractions and exponents written in
///   ECMAScript form (`1.0` → `1`, `1E21` → `1e+21`);
/// - rejected: `-0`, numbers beyond a double, `NaN`/`Infinity` tokens,
///   duplicate object keys (a round trip would drop one).
pub fn canonicalize(text: &str) -> JResult<String> {
    let mut out = String::with_capacity(text.len());
    let mut s = Scanner::with_max_depth(text, MAX_DEPTH);
    canon_value(&mut s, &mut out)?;
    s.expect_end()?;
    Ok(out)
}

/// Re-emits one value. Iterative (an explicit stack of open containers),
/// so deep values cannot exhaust a small thread stack.
fn canon_value<'a>(s: &mut Scanner<'a>, out: &mut String) -> JResult<()> {
    // Open containers, innermost last: the keys seen (object) or None (array).
    let mut open: Vec<Option<Vec<Cow<'a, str>>>> = Vec::new();
    loop {
        // A value starts here.
        match s.peek() {
            Some(b'{') => {
                s.eat(b'{', "expected an object")?;
                s.enter()?;
                out.push('{');
                if s.peek() == Some(b'}') {
                    s.pos += 1;
                    s.depth -= 1;
                    out.push('}');
                } else {
                    open.push(Some(vec![canon_key(s, out)?]));
                    continue;
                }
            }
            Some(b'[') => {
                s.eat(b'[', "expected an array")?;
                s.enter()?;
                out.push('[');
                if s.peek() == Some(b']') {
                    s.pos += 1;
                    s.depth -= 1;
                    out.push(']');
                } else {
                    open.push(None);
                    continue;
                }
            }
            Some(b'"') => {
                let t = s.string()?;
                canon_string(t, out);
            }
            Some(b'-') if s.b[s.pos..].starts_with(b"-Infinity") => {
                return Err(JsonError::Lossless("-Infinity is not a JSON number".into()));
            }
            Some(b'-' | b'0'..=b'9') => {
                let at = s.pos;
                let (raw, real) = s.number()?;
                canon_number(raw, real, at, out)?;
            }
            Some(b'N') if s.b[s.pos..].starts_with(b"NaN") => {
                return Err(JsonError::Lossless("NaN is not a JSON number".into()));
            }
            Some(b'I') if s.b[s.pos..].starts_with(b"Infinity") => {
                return Err(JsonError::Lossless("Infinity is not a JSON number".into()));
            }
            _ => {
                let start = s.pos;
                s.skip_value()?;
                out.push_str(&s.text[start..s.pos]);
            }
        }
        // A value ended: close finished containers, or go to the next member.
        loop {
            let Some(top) = open.last_mut() else {
                return Ok(());
            };
            match (s.peek(), top) {
                (Some(b','), Some(keys)) => {
                    s.pos += 1;
                    out.push(',');
                    keys.push(canon_key(s, out)?);
                    break;
                }
                (Some(b','), None) => {
                    s.pos += 1;
                    out.push(',');
                    break;
                }
                (Some(b'}'), Some(keys)) => {
                    s.pos += 1;
                    s.depth -= 1;
                    out.push('}');
                    if keys.len() > 1 {
                        keys.sort_unstable();
                        if let Some(w) = keys.windows(2).find(|w| w[0] == w[1]) {
                            return Err(JsonError::Lossless(format!(
                                "object key \"{}\" appears more than once",
                                w[0]
                            )));
                        }
                    }
                    open.pop();
                }
                (Some(b']'), None) => {
                    s.pos += 1;
                    s.depth -= 1;
                    out.push(']');
                    open.pop();
                }
                (_, Some(_)) => return s.err("expected ',' or '}' in an object"),
                (_, None) => return s.err("expected ',' or ']' in an array"),
            }
        }
    }
}

/// Reads an object key and its `:`, writes them JS style, and returns the
/// key as written (the quoted text without its quotes). That text stands
/// for exactly one JavaScript string (lone surrogates stay escapes), so two
/// keys are the same key exactly when these are equal; decoded Rust
/// strings would make `"\ud800"` and `"\udc00"` both U+FFFD.
fn canon_key<'a>(s: &mut Scanner<'a>, out: &mut String) -> JResult<Cow<'a, str>> {
    let k = s.string()?;
    s.eat(b':', "expected ':' after an object key")?;
    let key = k.canonical_body();
    out.push('"');
    out.push_str(&key);
    out.push_str("\":");
    Ok(key)
}

fn canon_number(raw: &str, real: bool, at: usize, out: &mut String) -> JResult<()> {
    let v: f64 = raw.parse().map_err(|_| JsonError::Syntax {
        at,
        what: "invalid number",
    })?;
    if !v.is_finite() {
        return Err(JsonError::Lossless(format!(
            "number {raw} does not fit a double"
        )));
    }
    if v == 0.0 && v.is_sign_negative() {
        return Err(JsonError::Lossless(format!(
            "number {raw} is negative zero"
        )));
    }
    if real {
        write_f64(out, v);
    } else {
        out.push_str(raw);
    }
    Ok(())
}

/// Re-escapes a string token JS style.
fn canon_string(t: JsonStr<'_>, out: &mut String) {
    out.push('"');
    canon_string_body(t, out);
    out.push('"');
}

/// [`canon_string`] without the quotes.
fn canon_string_body(t: JsonStr<'_>, out: &mut String) {
    if !t.escaped {
        write_string_body(out, t.raw);
    } else {
        let b = t.raw.as_bytes();
        let mut i = 0;
        let mut start = 0;
        while i < b.len() {
            if b[i] != b'\\' {
                i += 1;
                continue;
            }
            write_string_body(out, &t.raw[start..i]);
            let e = b[i + 1];
            match e {
                b'"' => out.push_str("\\\""),
                b'\\' => out.push_str("\\\\"),
                b'/' => out.push('/'),
                b'b' => out.push_str("\\b"),
                b'f' => out.push_str("\\f"),
                b'n' => out.push_str("\\n"),
                b'r' => out.push_str("\\r"),
                b't' => out.push_str("\\t"),
                _ => {
                    let (unit, next) = read_unit(b, i);
                    if (0xD800..0xDC00).contains(&unit) {
                        if let Some((low, after)) = peek_low_surrogate(b, next) {
                            let c = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                            out.push(char::from_u32(c).unwrap_or('\u{FFFD}'));
                            i = after;
                            start = i;
                            continue;
                        }
                        let _ = write!(out, "\\u{unit:04x}");
                    } else if (0xDC00..0xE000).contains(&unit) {
                        let _ = write!(out, "\\u{unit:04x}");
                    } else {
                        let c = char::from_u32(unit).unwrap_or('\u{FFFD}');
                        let mut tmp = [0u8; 4];
                        write_string_body(out, c.encode_utf8(&mut tmp));
                    }
                    i = next;
                    start = i;
                    continue;
                }
            }
            i += 2;
            start = i;
        }
        write_string_body(out, &t.raw[start..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_runs_end_at_the_first_quote_backslash_or_control_byte() {
        let naive = |b: &[u8], i: usize| {
            (i..b.len())
                .find(|&k| b[k] == b'"' || b[k] == b'\\' || b[k] < 0x20)
                .unwrap_or(b.len())
        };
        // Every byte value at every place of a word, after plain bytes of
        // every kind (ASCII, UTF-8 continuation bytes, 0x7f, 0xff).
        for fill in [b'a', 0x20, 0x7f, 0x80, 0xa2, 0xdc, 0xff] {
            for len in 0..20 {
                for at in 0..len {
                    for v in 0..=255u8 {
                        let mut b = vec![fill; len];
                        b[at] = v;
                        for start in 0..len.min(3) {
                            assert_eq!(
                                plain_run_end(&b, start),
                                naive(&b, start),
                                "fill {fill:#x} len {len} byte {v:#x} at {at} from {start}"
                            );
                        }
                    }
                }
            }
        }
        // Two hits in one word: the first counts.
        assert_eq!(plain_run_end(b"ab\\c\"defgh", 0), 2);
        assert_eq!(plain_run_end(b"abc\"\x01fgh", 0), 3);
        assert_eq!(plain_run_end(b"\x01\"", 0), 0);
    }

    #[test]
    fn spans_of_a_shared_buffer_behave_like_their_own_text() {
        use std::collections::HashSet;
        let buf: Arc<str> = Arc::from(r#"{"a":1}[2,3]"x""#);
        let a = JsonText::from_trusted_span(&buf, 0..7);
        let b = JsonText::from_trusted_span(&buf, 7..12);
        let c = JsonText::from_trusted_span(&buf, 12..15);
        assert_eq!(a.as_str(), r#"{"a":1}"#);
        assert_eq!(b.as_str(), "[2,3]");
        assert_eq!(c.to_string(), r#""x""#);
        assert_eq!(format!("{b:?}"), "[2,3]");
        assert_eq!(a.get("a"), Some("1"));
        let own = JsonText::from_trusted(r#"{"a":1}"#);
        assert_eq!(a, own);
        assert_ne!(a, b);
        let set: HashSet<JsonText> = [a.clone(), own, b.clone()].into_iter().collect();
        assert_eq!(set.len(), 2);
        assert!(set.contains(&JsonText::from_trusted("[2,3]")));
        // The whole buffer as a span.
        let whole = JsonText::from_trusted_span(&buf, 0..buf.len());
        assert_eq!(whole.as_str(), &*buf);
    }

    fn canon(s: &str) -> String {
        canonicalize(s).unwrap()
    }

    #[test]
    fn compacts_and_keeps_key_order() {
        assert_eq!(
            canon(r#" { "b" : 1 , "a" : [ true , null , "x" ] } "#),
            r#"{"b":1,"a":[true,null,"x"]}"#
        );
        // Empty containers, alone, nested and between members.
        for (text, want) in [
            (" { } ", "{}"),
            (" [ ] ", "[]"),
            (r#"[ { } , [ ] , { "a" : { } } ]"#, r#"[{},[],{"a":{}}]"#),
            (
                r#"{ "a" : { } , "b" : [ ] , "c" : 1 }"#,
                r#"{"a":{},"b":[],"c":1}"#,
            ),
        ] {
            assert_eq!(canon(text), want, "{text}");
        }
    }

    #[test]
    fn numbers_follow_ecmascript() {
        assert_eq!(canon("1.0"), "1");
        assert_eq!(canon("1E21"), "1e+21");
        assert_eq!(canon("1e-7"), "1e-7");
        assert_eq!(canon("0.000001"), "0.000001");
        assert_eq!(canon("5e-324"), "5e-324");
        assert_eq!(canon("1.7976931348623157e308"), "1.7976931348623157e+308");
        assert_eq!(canon("100000000000000000000.0"), "100000000000000000000");
        assert_eq!(canon("12345678901234567890"), "12345678901234567890");
        assert_eq!(canon("-5"), "-5");
        assert_eq!(canon("0.1"), "0.1");
        assert_eq!(canon("-1.5e-3"), "-0.0015");
    }

    #[test]
    fn rejects_what_does_not_round_trip() {
        for bad in [
            "-0",
            "-0.0",
            "1e400",
            "-1e999",
            "NaN",
            "Infinity",
            "-Infinity",
            r#"{"a":1,"a":2}"#,
        ] {
            match canonicalize(bad) {
                Err(JsonError::Lossless(_)) => {}
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn object_keys_are_the_same_when_they_are_the_same_javascript_string() {
        // Two lone surrogates, two keys: JSON.parse keeps both, so the
        // value round-trips (a decoded Rust string makes both U+FFFD).
        for distinct in [
            r#"{"\ud800":1,"\udc00":2}"#,
            "{\"\\ud800\":1,\"\u{fffd}\":2}",
            r#"{"\ud800":1,"𐀀":2}"#,
            r#"{"x":{"\ud800":1,"\udbff":2}}"#,
        ] {
            assert_eq!(canon(distinct), distinct);
            assert_eq!(last_wins_object(distinct), Ok(None), "{distinct}");
        }
        // One string spelled two ways is one key, named as JS writes it.
        for (dup, key) in [
            (r#"{"a":1,"\u0061":2}"#, r#""a""#),
            (r#"{"\/":1,"/":2}"#, r#""/""#),
            (r#"{"\ud800":1,"\uD800":2}"#, r#""\ud800""#),
            (r#"{"\ud83d\ude00":1,"😀":2}"#, r#""😀""#),
            (r#"{"\u000a":1,"\n":2}"#, r#""\n""#),
        ] {
            match canonicalize(dup) {
                Err(JsonError::Lossless(m)) => {
                    assert_eq!(
                        m,
                        format!("object key {key} appears more than once"),
                        "{dup}"
                    )
                }
                other => panic!("{dup}: {other:?}"),
            }
        }
        // A stored line keeps the last value at the first key's place.
        assert_eq!(
            last_wins_object(r#"{"\ud800":1,"b":0,"\uD800":2}"#),
            Ok(Some(r#"{"\ud800":2,"b":0}"#.to_string()))
        );
        assert_eq!(
            last_wins_object(r#"{"\ud800":1,"\udc00":2,"\ud800":3}"#),
            Ok(Some(r#"{"\ud800":3,"\udc00":2}"#.to_string()))
        );
    }

    #[test]
    fn last_wins_object_takes_many_keys_in_one_pass() {
        // 200 000 keys, each twice: a pairwise comparison of the keys (the
        // old form) took minutes here; a crafted stored line can hold
        // millions within maxRecordBytes.
        let n = 100_000;
        let mut text = String::from("{");
        let mut want = String::from("{");
        for i in 0..n {
            write!(text, r#""k{i}":{i},"#).unwrap();
            write!(want, r#""k{i}":"v{i}","#).unwrap();
        }
        for i in (0..n).rev() {
            write!(text, r#""k{i}":"v{i}","#).unwrap();
        }
        text.pop();
        text.push('}');
        want.pop();
        want.push('}');
        assert_eq!(last_wins_object(&text), Ok(Some(want)));
        // Distinct keys, however many: nothing to rewrite.
        let distinct = format!(
            "{{{}}}",
            (0..n)
                .map(|i| format!(r#""k{i}":0"#))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert_eq!(last_wins_object(&distinct), Ok(None));
        // Whitespace around a kept value is dropped, a key keeps its spelling.
        assert_eq!(
            last_wins_object(r#"{ "a" : 1 , "b":2, "\u0061" : [ 3 ] }"#),
            Ok(Some(r#"{"a":[ 3 ],"b":2}"#.to_string()))
        );
    }

    #[test]
    fn rejects_syntax_errors() {
        for bad in [
            "",
            "{",
            "[1,]",
            "01",
            "1.",
            "\"\u{1}\"",
            "tru",
            "N",
            "Nan",
            "nan",
            "I",
            "Inf",
            "-Inf",
            "-I",
            "{\"a\" 1}",
            "\"\\x\"",
            "1 2",
        ] {
            assert!(
                matches!(canonicalize(bad), Err(JsonError::Syntax { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn unicode_escapes_need_four_hex_digits_inside_the_text() {
        let syntax = |text: &str| match Scanner::new(text).value() {
            Err(JsonError::Syntax { at, what }) => (at, what),
            other => panic!("{text:?}: {other:?}"),
        };
        // A non-hex digit in any of the four places, with the text going on.
        for bad in [
            r#""\uz041x""#,
            r#""\u0z41x""#,
            r#""\u00z1x""#,
            r#""\u004zx""#,
        ] {
            assert_eq!(syntax(bad), (1, "invalid \\u escape in a string"), "{bad}");
        }
        // Cut inside the escape: an error, not a read past the end.
        for cut in [r#""\u"#, r#""\u0"#, r#""\u00"#, r#""\u004"#] {
            assert_eq!(syntax(cut), (1, "invalid \\u escape in a string"), "{cut}");
        }
        // Cut right after a whole escape: the string is what is unfinished.
        assert_eq!(syntax(r#""\u0041"#), (7, "unterminated string"));
        assert_eq!(Scanner::new(r#""\u0041""#).value(), Ok(r#""\u0041""#));
    }

    #[test]
    fn strings_escape_like_json_stringify() {
        assert_eq!(canon(r#""a\/b\u0041\u00e9\u2028""#), "\"a/bAé\u{2028}\"");
        assert_eq!(
            canon(r#""\u0001\u001f\b\f\n\r\t\"\\""#),
            r#""\u0001\u001f\b\f\n\r\t\"\\""#
        );
        assert_eq!(canon(r#""\uD83D\uDE00""#), "\"😀\"");
        assert_eq!(canon(r#""\uD83D x""#), r#""\ud83d x""#);
        assert_eq!(canon(r#""\uDE00""#), r#""\ude00""#);
        assert_eq!(canon("\"\u{7f}\""), "\"\u{7f}\"");
        let mut out = String::new();
        write_string(&mut out, "q\"\\\u{0}\u{1b}é");
        assert_eq!(out, r#""q\"\\\u0000\u001bé""#);
    }

    #[test]
    fn depth_is_capped() {
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(matches!(canonicalize(&deep), Err(JsonError::Lossless(m)) if m.contains("deeper")));
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert_eq!(canon(&ok), ok);
    }

    #[test]
    fn depth_counts_nesting_not_containers() {
        // More sibling containers than either cap allows levels, each one
        // level deep: closing one (empty or not) gives its level back.
        for item in ["[]", "{}", "[1]", r#"{"a":1}"#] {
            let many = format!("[{}]", vec![item; MAX_READ_DEPTH + 1].join(","));
            assert_eq!(Scanner::new(&many).value(), Ok(many.as_str()), "{item}");
            let many = format!("[{}]", vec![item; MAX_DEPTH + 1].join(","));
            assert_eq!(canon(&many), many, "{item}");
        }
    }

    #[test]
    fn decode_and_fields() {
        let text = r#"{"a":"x\ny","b":{"c":[1,2]},"d":"\ud800"}"#;
        let f = object_fields(text).unwrap();
        assert_eq!(f.len(), 3);
        assert_eq!(f[0].1, r#""x\ny""#);
        assert_eq!(as_str(f[0].1).unwrap().decode(), "x\ny");
        assert_eq!(get_field(text, "b"), Some(r#"{"c":[1,2]}"#));
        assert!(as_str(f[2].1).unwrap().has_lone_surrogate());
        assert!(!as_str(f[0].1).unwrap().has_lone_surrogate());
        assert_eq!(as_str(r#""\ud83d\ude00""#).unwrap().decode(), "😀");
    }

    /// Every escape `JsonStr` decodes, to Rust (a lone surrogate becomes
    /// U+FFFD) and to UTF-16 (where it stays), around multi-byte text; the
    /// lone-surrogate test and `eq_str` agree with them.
    #[test]
    fn string_tokens_decode_every_escape() {
        let lone = |units: &[u16]| char::decode_utf16(units.iter().copied()).any(|c| c.is_err());
        // (token body, decoded, its UTF-16 units where a lone surrogate
        // makes them differ from the decoded text's)
        let cases: [(&str, &str, Option<&[u16]>); 17] = [
            (r#"a\"b"#, "a\"b", None),
            (r"\\", "\\", None),
            (r"\/x\/", "/x/", None),
            (r"\b\f\n\r\t", "\u{8}\u{c}\n\r\t", None),
            (r"\u00e9x\u00E9", "\u{e9}x\u{e9}", None),
            (r"\u0000\u001f\u007f", "\0\u{1f}\u{7f}", None),
            (r"\uffff\u10000", "\u{ffff}\u{1000}0", None),
            ("é\\n😀\\t€", "é\n😀\t€", None),
            (r"\ud83d\ude00", "😀", None),
            (r"\ud83d", "\u{fffd}", Some(&[0xd83d])),
            (r"\ud83dx", "\u{fffd}x", Some(&[0xd83d, 0x78])),
            (r"\ud83d\u0041", "\u{fffd}A", Some(&[0xd83d, 0x41])),
            (r"\ud83d\n", "\u{fffd}\n", Some(&[0xd83d, 0xa])),
            (r"\ude00", "\u{fffd}", Some(&[0xde00])),
            (r"\ude00\ud83d", "\u{fffd}\u{fffd}", Some(&[0xde00, 0xd83d])),
            (
                r"\ud83d\ud83d\ude00",
                "\u{fffd}😀",
                Some(&[0xd83d, 0xd83d, 0xde00]),
            ),
            // An escaped backslash, then the letters of an escape: no escape.
            (r"\\ud800", "\\ud800", None),
        ];
        for (body, decoded, units) in cases {
            let token = format!("\"{body}\"");
            let t = as_str(&token).unwrap_or_else(|| panic!("{token}"));
            assert_eq!(t.raw(), body);
            assert!(matches!(t.decode(), Cow::Owned(_)), "{token}");
            assert_eq!(t.decode(), decoded, "{token}");
            let utf16 = t.decode_utf16();
            match units {
                Some(u) => assert_eq!(utf16, u, "{token}"),
                None => {
                    assert_eq!(utf16, decoded.encode_utf16().collect::<Vec<_>>(), "{token}");
                    let parsed: String = serde_json::from_str(&token).unwrap();
                    assert_eq!(parsed, decoded, "{token}");
                }
            }
            assert_eq!(t.has_lone_surrogate(), lone(&utf16), "{token}");
            assert_eq!(t.has_lone_surrogate(), units.is_some(), "{token}");
            assert!(t.eq_str(decoded), "{token}");
            assert!(!t.eq_str(&format!("{decoded}.")), "{token}");
            assert!(!t.eq_str(body) || body == decoded, "{token}");
        }
        // Nothing escaped: borrowed, and the same both ways.
        let t = as_str("\"plain é😀\"").unwrap();
        assert!(matches!(t.decode(), Cow::Borrowed("plain é😀")));
        assert_eq!(
            t.decode_utf16(),
            "plain é😀".encode_utf16().collect::<Vec<_>>()
        );
        assert!(!t.has_lone_surrogate() && t.eq_str("plain é😀") && !t.eq_str("plain"));
        assert!(!t.is_empty() && as_str("\"\"").unwrap().is_empty());
    }

    #[test]
    fn safe_integers() {
        assert_eq!(as_safe_int("9007199254740991"), Some(MAX_SAFE_INTEGER));
        assert_eq!(as_safe_int("9007199254740992"), None);
        assert_eq!(as_safe_int("-3"), Some(-3));
        assert_eq!(as_safe_int("1.0"), Some(1));
        assert_eq!(as_safe_int("1e2"), Some(100));
        assert_eq!(as_safe_int("1.5"), None);
        assert_eq!(as_safe_int("\"1\""), None);
        assert_eq!(as_safe_uint("-1"), None);
    }
}
