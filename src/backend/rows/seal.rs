//! The seal of a session's stored rows (issue 16): a keyed digest of every
//! `events` row of a session as a read fetches it ([`StoredRow`], in seq
//! order), so that a persisted append checkpoint of a row store can prove
//! that the rows are still those its state was folded from.
//!
//! Why a digest: a row store's revision (`incarnation`, `revision` of the
//! session row) changes with every write of a writer that follows schema
//! 17, but not with a hand edit (`UPDATE events …` in the `sqlite3`
//! shell), and SQLite keeps no change counter per table or row in WAL
//! mode. Fetching the rows without decoding or judging them costs a tenth
//! of a fold (0.8M events: ~25 ms against ~200 ms), so a checkpoint is
//! used only after such a scan finds the same seal.
//!
//! The digest: the rows' canonical bytes (each column tagged with its
//! storage class, texts and blobs length-prefixed, each row padded to a
//! whole word) cut into 56-bit words, evaluated as a polynomial at two
//! random points modulo the prime 2^61 − 1 (Horner's rule, starting from
//! 1 so that sequences of different lengths differ). For two different
//! row sequences of at most L words, the chance that a key drawn at random
//! (independently of the edit) makes them collide is at most L / 2^61 per
//! point, the two points independent: at 1M events (about 40 MB of rows,
//! 6M words) below 10^-23. It is not a defence
//! against someone who reads the checkpoint's key; such a writer can write
//! the rows directly anyway.
//!
//! A seal is extended as rows are written ([`RowSeal::feed`] on what the
//! writer inserted, in the form a read fetches it), so a store that
//! appended leaves a checkpoint without reading its log again.

use std::collections::HashMap;

use parking_lot::Mutex;

use super::checks::{KnownLogBytes, note_log_bytes};
use super::{StoredRow, Value};
use crate::backend::sqlite::reader::SessionRow;
use crate::backend::{AppendState, Revision};
use crate::model::binary::{Input, put_u64};
use crate::model::header::SessionHeader;

/// The Mersenne prime 2^61 − 1.
const P: u64 = (1 << 61) - 1;

/// Bytes per word (56 bits: every word is below [`P`]).
const WORD: usize = 7;

/// The seal of a run of rows (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowSeal {
    key: [u64; 2],
    acc: [u64; 2],
    rows: u64,
    /// Per point: the key's powers k², k³, k⁴ (made from `key`), for
    /// four words a step.
    powers: [[u64; 3]; 2],
}

fn mul_mod(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    let s = ((r as u64) & P) + ((r >> 61) as u64);
    if s >= P { s - P } else { s }
}

fn add_mod(a: u64, w: u64) -> u64 {
    let s = a + w;
    if s >= P { s - P } else { s }
}

/// One column value, borrowed: a [`Value`] of a fetched row, or a value
/// as the database holds it (a scan that copies nothing). TEXT is its
/// bytes: a stored text that is not UTF-8 seals differently from the
/// lossy [`Value::Text`] a read makes of it, so such a row never matches a
/// seal taken from fetched rows (the checkpoint is then not used).
#[derive(Clone, Copy, Debug)]
pub enum Col<'a> {
    Null,
    Integer(i64),
    Real(f64),
    Text(&'a [u8]),
    Blob(&'a [u8]),
}

impl<'a> From<&'a Value> for Col<'a> {
    fn from(v: &'a Value) -> Col<'a> {
        match v {
            Value::Null => Col::Null,
            Value::Integer(i) => Col::Integer(*i),
            Value::Real(f) => Col::Real(*f),
            Value::Text(t) => Col::Text(t.as_bytes()),
            Value::Blob(b) => Col::Blob(b),
        }
    }
}

/// The words of one row's canonical bytes, as they come (no copy of the
/// row): a partial word waits for the next bytes; the row's last word is
/// padded with zeros.
struct Words<'s> {
    seal: &'s mut RowSeal,
    pending: u64,
    /// Bytes in `pending`.
    filled: usize,
    /// Words sealed so far.
    count: u64,
}

/// `x` modulo [`P`], for any `x` below 2^64.
fn reduce(x: u64) -> u64 {
    let r = (x & P) + (x >> 61);
    if r >= P { r - P } else { r }
}

impl Words<'_> {
    fn new(seal: &mut RowSeal) -> Words<'_> {
        Words {
            seal,
            pending: 0,
            filled: 0,
            count: 0,
        }
    }

    fn word(&mut self, w: u64) {
        self.count += 1;
        let [k0, k1] = self.seal.key;
        let [a0, a1] = self.seal.acc;
        self.seal.acc = [add_mod(mul_mod(a0, k0), w), add_mod(mul_mod(a1, k1), w)];
    }

    /// Four words at once: Horner's rule unrolled, `a·k⁴ + w0·k³ + w1·k² +
    /// w2·k + w3`, the same value as four steps of [`Words::word`] with
    /// the products independent of each other (a quarter of the chain of
    /// dependent multiplications; the seal of a long log is most of a
    /// checkpointed cold append's own time). Each term is below `P`, so
    /// their sum is below 5·P < 2^64.
    fn four_words(&mut self, w: [u64; 4]) {
        self.count += 4;
        for lane in 0..2 {
            let k = self.seal.key[lane];
            let [k2, k3, k4] = self.seal.powers[lane];
            let sum = mul_mod(self.seal.acc[lane], k4)
                + mul_mod(w[0], k3)
                + mul_mod(w[1], k2)
                + mul_mod(w[2], k)
                + w[3];
            self.seal.acc[lane] = reduce(sum);
        }
    }

    fn bytes(&mut self, mut b: &[u8]) {
        if self.filled > 0 {
            let take = (WORD - self.filled).min(b.len());
            for &byte in &b[..take] {
                self.pending |= u64::from(byte) << (8 * self.filled);
                self.filled += 1;
            }
            b = &b[take..];
            if self.filled < WORD {
                return;
            }
            let w = self.pending;
            self.word(w);
            (self.pending, self.filled) = (0, 0);
        }
        let word_at = |c: &[u8]| {
            let mut w = [0u8; 8];
            w[..WORD].copy_from_slice(c);
            u64::from_le_bytes(w)
        };
        let mut blocks = b.chunks_exact(4 * WORD);
        for c in &mut blocks {
            self.four_words([
                word_at(&c[..WORD]),
                word_at(&c[WORD..2 * WORD]),
                word_at(&c[2 * WORD..3 * WORD]),
                word_at(&c[3 * WORD..]),
            ]);
        }
        let mut whole = blocks.remainder().chunks_exact(WORD);
        for c in &mut whole {
            self.word(word_at(c));
        }
        for &byte in whole.remainder() {
            self.pending |= u64::from(byte) << (8 * self.filled);
            self.filled += 1;
        }
    }

    fn col(&mut self, c: Col<'_>) {
        match c {
            Col::Null => self.bytes(&[0]),
            Col::Integer(i) => {
                self.bytes(&[1]);
                self.bytes(&i.to_le_bytes());
            }
            Col::Real(f) => {
                self.bytes(&[2]);
                self.bytes(&f.to_bits().to_le_bytes());
            }
            Col::Text(t) => {
                self.bytes(&[3]);
                self.bytes(&(t.len() as u64).to_le_bytes());
                self.bytes(t);
            }
            Col::Blob(b) => {
                self.bytes(&[4]);
                self.bytes(&(b.len() as u64).to_le_bytes());
                self.bytes(b);
            }
        }
    }

    /// Ends the row; returns how many words it had.
    fn end(mut self) -> u64 {
        if self.filled > 0 {
            let w = self.pending;
            self.word(w);
        }
        self.seal.rows += 1;
        self.count
    }
}

impl RowSeal {
    /// The seal of no rows under a random key: a process-wide secret from
    /// the OS (read once) mixed with a counter (splitmix64), so that a new
    /// session's or a fold's seal reads no file on the append path.
    pub fn new() -> RowSeal {
        use once_cell::sync::Lazy;
        use std::sync::atomic::{AtomicU64, Ordering};
        static SECRET: Lazy<u64> = Lazy::new(crate::backend::jsonl::revision::random_u64);
        static DRAWN: AtomicU64 = AtomicU64::new(0);
        let point = || {
            let n = DRAWN.fetch_add(1, Ordering::Relaxed);
            let mut z = SECRET.wrapping_add(n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) % (P - 1) + 1
        };
        RowSeal::with_key([point(), point()])
    }

    fn with_key(key: [u64; 2]) -> RowSeal {
        RowSeal::at(key, [1, 1], 0)
    }

    /// The seal under `key` with these accumulators after `rows` rows.
    fn at(key: [u64; 2], acc: [u64; 2], rows: u64) -> RowSeal {
        let powers = key.map(|k| {
            let k2 = mul_mod(k, k);
            let k3 = mul_mod(k2, k);
            [k2, k3, mul_mod(k3, k)]
        });
        RowSeal {
            key,
            acc,
            rows,
            powers,
        }
    }

    /// The seal of no rows under this seal's key (to check a scan against
    /// this seal).
    pub fn empty_like(&self) -> RowSeal {
        RowSeal::with_key(self.key)
    }

    /// How many rows are sealed.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Seals the next fetched row (rows are fed in seq order).
    pub fn feed(&mut self, row: &StoredRow) {
        self.feed_counted(row);
    }

    /// [`RowSeal::feed`], returning how many words the row had.
    fn feed_counted(&mut self, row: &StoredRow) -> u64 {
        self.feed_columns([
            Col::Integer(row.seq),
            (&row.event_type).into(),
            Col::Integer(row.time),
            (&row.data).into(),
            (&row.source_event_seqs).into(),
            (&row.surface_op).into(),
            (&row.ignorable).into(),
        ])
    }

    /// Seals the next row given as its columns in [`StoredRow`]'s order
    /// (seq, type, time, data, source_event_seqs, surface_op, ignorable);
    /// returns how many words it had.
    pub fn feed_columns(&mut self, cols: [Col<'_>; 7]) -> u64 {
        let mut words = Words::new(self);
        for c in cols {
            words.col(c);
        }
        words.end()
    }

    /// An empty [`SealPart`] under this seal's key.
    pub fn part(&self) -> SealPart {
        SealPart {
            seal: RowSeal::at(self.key, [0, 0], 0),
            words: 0,
        }
    }

    /// Seals the rows of `part` after those sealed so far, as if they were
    /// fed here one by one: Horner's rule over the concatenation is this
    /// seal's value times k^(words of the part) plus the part's own value
    /// (its rule started from 0).
    pub fn join(&mut self, part: &SealPart) {
        debug_assert_eq!(self.key, part.seal.key, "a part of another seal");
        for lane in 0..2 {
            let shift = pow_mod(self.key[lane], part.words);
            self.acc[lane] = add_mod(mul_mod(self.acc[lane], shift), part.seal.acc[lane]);
        }
        self.rows += part.seal.rows;
    }

    /// The seal's bytes (the form [`RowSeal::decode`] reads).
    pub fn encode(&self, out: &mut Vec<u8>) {
        for v in [
            self.key[0],
            self.key[1],
            self.acc[0],
            self.acc[1],
            self.rows,
        ] {
            put_u64(out, v);
        }
    }

    /// Reads [`RowSeal::encode`]'s bytes; `None` when they are not a seal.
    pub fn decode(inp: &mut Input<'_>) -> Option<RowSeal> {
        let mut v = [0u64; 5];
        for x in &mut v {
            *x = inp.u64()?;
        }
        let [k0, k1, a0, a1, rows] = v;
        let point = |x: u64| (1..P).contains(&x);
        let residue = |x: u64| x < P;
        (point(k0) && point(k1) && residue(a0) && residue(a1))
            .then(|| RowSeal::at([k0, k1], [a0, a1], rows))
    }
}

/// The seal of a stretch of rows on its own, made by [`RowSeal::part`] and
/// joined to the seal of the rows before it by [`RowSeal::join`]: how the
/// two threads of a full read ([`super::scan::read_pipelined`]) seal the
/// stretches each of them decodes, in whatever order they take them.
#[derive(Clone, Debug)]
pub struct SealPart {
    /// Horner's rule from 0 over the stretch's words.
    seal: RowSeal,
    /// How many words that is.
    words: u64,
}

impl SealPart {
    /// Seals the stretch's next row.
    pub fn feed(&mut self, row: &StoredRow) {
        self.words += self.seal.feed_counted(row);
    }
}

/// `k` to the power `n`, modulo [`P`].
fn pow_mod(mut k: u64, mut n: u64) -> u64 {
    let mut r = 1;
    while n > 0 {
        if n & 1 == 1 {
            r = mul_mod(r, k);
        }
        k = mul_mod(k, k);
        n >>= 1;
    }
    r
}

/// What one append inserted: its rows as a read fetches them back, in seq
/// order, and the events they hold.
#[derive(Debug)]
pub struct Inserted {
    pub rows: Vec<StoredRow>,
    pub events: u64,
    /// Every event of the batch was inserted (not a retry that found a
    /// prefix stored).
    pub whole_batch: bool,
    /// What a read counts of the inserted rows against `maxLogBytes` (the
    /// sum of their [`super::EncodedRow::charge`]); `None` when this call
    /// inserted nothing, or what was written is not known.
    pub charge: Option<u64>,
}

impl Inserted {
    /// Nothing inserted.
    pub fn nothing() -> Inserted {
        Inserted {
            rows: Vec::new(),
            events: 0,
            whole_batch: true,
            // The session row may be at a revision an earlier attempt's
            // rows made (a retry that found its batch stored).
            charge: None,
        }
    }
}

/// What one append wrote: the (incarnation, revision) of the session row
/// it found (`None`: it inserted the session), and what it inserted.
#[derive(Debug)]
pub struct Written {
    pub before: Option<(String, i64)>,
    pub inserted: Inserted,
}

impl Written {
    /// Nothing written; the session row is at `at`.
    pub fn nothing_at(at: (String, i64)) -> Written {
        Written {
            before: Some(at),
            inserted: Inserted::nothing(),
        }
    }

    /// Written, but what is not known exactly (a retry that found its
    /// batch stored by an attempt whose reply was lost): no seal extends.
    pub fn unknown() -> Written {
        Written {
            before: None,
            inserted: Inserted {
                rows: Vec::new(),
                events: 0,
                whole_batch: false,
                charge: None,
            },
        }
    }
}

impl Default for RowSeal {
    fn default() -> Self {
        RowSeal::new()
    }
}

/// What a row store knows exactly of the sessions it read with a fold or
/// wrote (their [`AppendState`] with a seal, at a revision): what a
/// persisted append checkpoint records. Kept beside the backend's
/// connection; an entry counts only at its revision. Bounded
/// ([`SEALED_MAX`]): a forgotten session gets no checkpoint at close (the
/// next process folds it once), which costs little for the short logs
/// dropped first.
#[derive(Default)]
pub struct SealedLogs(Mutex<HashMap<String, (Revision, AppendState)>>);

/// The most sessions a [`SealedLogs`] keeps (about 300 bytes each).
pub const SEALED_MAX: usize = 16_384;

/// Logs shorter than this are forgotten first when [`SEALED_MAX`] is
/// reached (a fold of them takes a few milliseconds).
const SHORT_LOG_EVENTS: u64 = 10_000;

fn insert_bounded(
    map: &mut HashMap<String, (Revision, AppendState)>,
    id: &str,
    entry: (Revision, AppendState),
) {
    if map.len() >= SEALED_MAX && !map.contains_key(id) {
        map.retain(|_, (_, s)| s.next_seq >= SHORT_LOG_EVENTS);
        if map.len() >= SEALED_MAX / 2 {
            map.clear();
        }
    }
    map.insert(id.to_string(), entry);
}

impl SealedLogs {
    /// Notes what a clean read of `id` at `revision` found (or what a
    /// checkpoint proved).
    pub fn note(&self, id: &str, revision: &Revision, state: AppendState) {
        if state.seal.is_some() {
            insert_bounded(&mut self.0.lock(), id, (revision.clone(), state));
        }
    }

    /// How many sessions are known.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().len()
    }

    /// Whether no session is known.
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The state of `id` at `revision`, when known.
    pub fn at(&self, id: &str, revision: &Revision) -> Option<AppendState> {
        match self.0.lock().get(id) {
            Some((r, state)) if r == revision => Some(state.clone()),
            _ => None,
        }
    }

    /// A row store's [`crate::backend::Backend::adopt_append_state`] once
    /// its scan is done: takes the checkpoint's `state` of `header`'s
    /// session at `revision` only when the scan found the session row at
    /// that revision (`at`) with the same header (as its JSONL line, the
    /// form the checkpoint keeps), a header a read accepts, and the rows
    /// sealed as `scan` with the checkpoint's seal. Then the size count is
    /// noted in `log_bytes` and the state here; returns the header as
    /// stored.
    pub fn adopt(
        &self,
        log_bytes: &KnownLogBytes,
        (header, revision, state): (&SessionHeader, &Revision, &AppendState),
        (at, row, scan): (&Revision, SessionRow, &RowSeal),
    ) -> Option<SessionHeader> {
        if at != revision
            || row.header.to_jsonl_line() != header.to_jsonl_line()
            || row.header.problem().is_some()
            || state.seal.as_ref() != Some(scan)
        {
            return None;
        }
        let id = header.id.as_str();
        note_log_bytes(
            log_bytes,
            id,
            &row.incarnation,
            row.revision,
            state.log_bytes,
        );
        self.note(id, revision, state.clone());
        Some(row.header)
    }

    /// Forgets `id` (a repair or a delete rewrote its rows).
    pub fn forget(&self, id: &str) {
        self.0.lock().remove(id);
    }

    /// After an append of `id` that found the session at `before` (`None`:
    /// it created the session), inserted `ins` and left it at `after`: the
    /// state extends to the new rows when it was known at `before` and the
    /// append wrote its whole batch; the rows are counted as a read counts
    /// them (their [`super::EncodedRow::charge`]: one rule for the size
    /// count). Otherwise nothing is known of `id`.
    pub fn after_append(
        &self,
        id: &str,
        before: Option<&Revision>,
        ins: &Inserted,
        after: &Revision,
    ) {
        let mut map = self.0.lock();
        let prior = map.remove(id);
        let known = match (before, prior) {
            (None, _) => AppendState {
                next_seq: 0,
                log_bytes: 0,
                seal: Some(RowSeal::new()),
            },
            (Some(b), Some((r, state))) if r == *b => state,
            _ => return,
        };
        if !ins.whole_batch {
            return;
        }
        if let Some(state) = extended(known, ins) {
            insert_bounded(&mut map, id, (after.clone(), state));
        }
    }
}

/// `state` after the rows `ins` inserted (`None` when they do not start at
/// its next seq, or what they count is not known).
fn extended(mut state: AppendState, ins: &Inserted) -> Option<AppendState> {
    let seal = state.seal.as_mut()?;
    if let Some(first) = ins.rows.first() {
        if u64::try_from(first.seq).ok()? != state.next_seq {
            return None;
        }
        state.log_bytes += ins.charge?;
    }
    for row in &ins.rows {
        seal.feed(row);
    }
    state.next_seq += ins.events;
    Some(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(seq: i64, data: &str) -> StoredRow {
        StoredRow {
            seq,
            event_type: Value::Text("user/message".into()),
            time: 5,
            data: Value::Text(data.into()),
            source_event_seqs: Value::Null,
            surface_op: Value::Null,
            ignorable: Value::Null,
        }
    }

    fn seal_of(key: [u64; 2], rows: &[StoredRow]) -> RowSeal {
        let mut s = RowSeal::with_key(key);
        for r in rows {
            s.feed(r);
        }
        s
    }

    /// The reference: the row's canonical bytes in one buffer, cut into
    /// 7-byte words, the last one padded with zeros.
    fn reference_seal(key: [u64; 2], rows: &[StoredRow]) -> RowSeal {
        let mut acc = [1u64, 1];
        for r in rows {
            let mut b = Vec::new();
            for v in [
                Value::Integer(r.seq),
                r.event_type.clone(),
                Value::Integer(r.time),
                r.data.clone(),
                r.source_event_seqs.clone(),
                r.surface_op.clone(),
                r.ignorable.clone(),
            ] {
                match v {
                    Value::Null => b.push(0),
                    Value::Integer(i) => {
                        b.push(1);
                        b.extend_from_slice(&i.to_le_bytes());
                    }
                    Value::Real(f) => {
                        b.push(2);
                        b.extend_from_slice(&f.to_bits().to_le_bytes());
                    }
                    Value::Text(t) => {
                        b.push(3);
                        b.extend_from_slice(&(t.len() as u64).to_le_bytes());
                        b.extend_from_slice(t.as_bytes());
                    }
                    Value::Blob(x) => {
                        b.push(4);
                        b.extend_from_slice(&(x.len() as u64).to_le_bytes());
                        b.extend_from_slice(&x);
                    }
                }
            }
            for c in b.chunks(WORD) {
                let mut w = [0u8; 8];
                w[..c.len()].copy_from_slice(c);
                let w = u64::from_le_bytes(w);
                for lane in 0..2 {
                    let prod = u128::from(acc[lane]) * u128::from(key[lane]) % u128::from(P);
                    acc[lane] = ((prod + u128::from(w)) % u128::from(P)) as u64;
                }
            }
        }
        RowSeal::at(key, acc, rows.len() as u64)
    }

    #[test]
    fn the_streamed_words_equal_the_reference() {
        let key = [0x0abc_def0_1234_5678, 0x1357_9bdf_0246_8ace];
        // Texts of every length around the word size, so that columns
        // start and end at every offset within a word.
        let rows: Vec<StoredRow> = (0..40)
            .map(|n| {
                // Data of 0 to 199 bytes: runs of four whole words too.
                let mut r = row(n, &"é".repeat(n as usize * 7 % 100));
                r.source_event_seqs = Value::Blob(vec![7; n as usize % 15]);
                r.surface_op = if n % 3 == 0 {
                    Value::Text("x".repeat(n as usize))
                } else {
                    Value::Null
                };
                r.ignorable = Value::Real(n as f64);
                r
            })
            .collect();
        for n in 0..rows.len() {
            assert_eq!(
                seal_of(key, &rows[..n]),
                reference_seal(key, &rows[..n]),
                "{n} rows"
            );
        }
    }

    /// Every change a hand edit can make to a row, and every reordering,
    /// cut or extension of the rows, changes the seal.
    #[test]
    fn any_change_of_the_rows_changes_the_seal() {
        let key = [0x1234_5678_9abc_def1 % P, 0x0fed_cba9_8765_4321 % P];
        let base = vec![row(0, "{\"a\":1}"), row(1, "{\"b\":\"xyz\"}"), row(2, "{}")];
        let sealed = seal_of(key, &base);
        assert_eq!(sealed, seal_of(key, &base.clone()), "deterministic");
        let mut variants: Vec<Vec<StoredRow>> = Vec::new();
        for i in 0..base.len() {
            let edit = |f: &dyn Fn(&mut StoredRow)| {
                let mut v = base.clone();
                f(&mut v[i]);
                v
            };
            variants.push(edit(&|r| r.seq += 10));
            variants.push(edit(&|r| r.time += 1));
            variants.push(edit(&|r| r.event_type = Value::Text("user/messagf".into())));
            variants.push(edit(&|r| {
                if let Value::Text(t) = &mut r.data {
                    t.push(' ')
                }
            }));
            variants.push(edit(&|r| {
                r.data = match &r.data {
                    Value::Text(t) => Value::Blob(t.clone().into_bytes()),
                    other => other.clone(),
                }
            }));
            variants.push(edit(&|r| r.source_event_seqs = Value::Blob(vec![0])));
            variants.push(edit(&|r| r.surface_op = Value::Text(String::new())));
            variants.push(edit(&|r| r.ignorable = Value::Integer(1)));
            variants.push(edit(&|r| r.ignorable = Value::Integer(0)));
            variants.push(edit(&|r| r.ignorable = Value::Real(1.0)));
            let mut cut = base.clone();
            cut.remove(i);
            variants.push(cut);
        }
        variants.push(base.iter().rev().cloned().collect());
        let mut longer = base.clone();
        longer.push(row(3, "{}"));
        variants.push(longer);
        variants.push(Vec::new());
        for (n, v) in variants.iter().enumerate() {
            assert_ne!(seal_of(key, v), sealed, "variant {n}: {v:?}");
        }
        // Zero bytes at a word boundary are not lost: a text of seven NULs
        // and the empty text differ.
        assert_ne!(
            seal_of(key, &[row(0, "\0\0\0\0\0\0\0")]),
            seal_of(key, &[row(0, "")])
        );
    }

    #[test]
    fn another_key_gives_another_seal_and_encoding_round_trips() {
        let rows = vec![row(0, "{}"), row(1, "{\"k\":[1,2]}")];
        let a = seal_of([3, 5], &rows);
        assert_ne!(a, seal_of([3, 7], &rows));
        assert_eq!(a.empty_like(), RowSeal::with_key([3, 5]));
        assert_eq!(a.rows(), 2);
        let mut out = Vec::new();
        a.encode(&mut out);
        assert_eq!(RowSeal::decode(&mut Input(&out)), Some(a.clone()));
        for n in 0..out.len() {
            assert_eq!(RowSeal::decode(&mut Input(&out[..n])), None);
        }
        // A key of 0 (the polynomial would not depend on the rows) or a
        // residue out of range is not a seal.
        let mut zero = Vec::new();
        RowSeal::with_key([0, 5]).encode(&mut zero);
        assert_eq!(RowSeal::decode(&mut Input(&zero)), None);
        let fresh = RowSeal::new();
        assert_ne!(fresh.key, RowSeal::new().key, "random keys");
        assert_eq!(fresh.rows(), 0);
    }

    #[test]
    fn the_sealed_logs_stay_bounded_and_keep_the_long_logs() {
        let logs = SealedLogs::default();
        let state = |next_seq| AppendState {
            next_seq,
            log_bytes: 0,
            seal: Some(RowSeal::with_key([3, 5])),
        };
        let rev = Revision("r".into());
        logs.note("long", &rev, state(SHORT_LOG_EVENTS));
        for i in 0..SEALED_MAX + 10 {
            logs.note(&format!("short-{i}"), &rev, state(5));
            assert!(logs.len() <= SEALED_MAX);
        }
        assert_eq!(logs.at("long", &rev), Some(state(SHORT_LOG_EVENTS)));
        assert!(logs.at("long", &Revision("other".into())).is_none());
        // The newest short ones since the last cut are kept.
        let last = format!("short-{}", SEALED_MAX + 9);
        assert!(logs.at(&last, &rev).is_some());
        // An entry without a seal is not noted; a forgotten one is gone.
        logs.note(
            "unsealed",
            &rev,
            AppendState {
                seal: None,
                ..state(1)
            },
        );
        assert!(logs.at("unsealed", &rev).is_none());
        logs.forget("long");
        assert!(logs.at("long", &rev).is_none());
        assert!(!logs.is_empty());
    }

    #[test]
    fn joined_parts_equal_the_rows_fed_in_order() {
        let key = [0x0abc_def0_1234_5678, 0x1357_9bdf_0246_8ace];
        let rows: Vec<StoredRow> = (0..30)
            .map(|n| row(n, &"xé".repeat(n as usize * 5 % 37)))
            .collect();
        let whole = seal_of(key, &rows);
        // Cut anywhere, in two or three parts, each sealed on its own and
        // joined in order (a part may be empty).
        for a in 0..=rows.len() {
            for b in a..=rows.len() {
                let mut joined = RowSeal::with_key(key);
                for stretch in [&rows[..a], &rows[a..b], &rows[b..]] {
                    let mut part = joined.part();
                    for r in stretch {
                        part.feed(r);
                    }
                    joined.join(&part);
                }
                assert_eq!(joined, whole, "cut at {a} and {b}");
            }
        }
        // Joined out of order, it is another seal.
        let (mut front, mut back) = (RowSeal::with_key(key).part(), RowSeal::with_key(key).part());
        rows[..10].iter().for_each(|r| front.feed(r));
        rows[10..].iter().for_each(|r| back.feed(r));
        let mut swapped = RowSeal::with_key(key);
        swapped.join(&back);
        swapped.join(&front);
        assert_ne!(swapped, whole);
        assert_eq!(pow_mod(3, 0), 1);
        assert_eq!(pow_mod(3, 5), 243);
        assert_eq!(pow_mod(2, 61), 1);
    }

    #[test]
    fn the_modular_arithmetic_is_exact() {
        // (P - 1)^2 = 1 (mod P), and 2^61 = 1 (mod P).
        assert_eq!(mul_mod(P - 1, P - 1), 1);
        assert_eq!(mul_mod(1 << 60, 2), 1);
        assert_eq!(add_mod(P - 1, 1), 0);
        let (a, b) = (0x1f2e_3d4c_5b6a_7988 % P, 0x0123_4567_89ab_cdef % P);
        let want = (u128::from(a) * u128::from(b) % u128::from(P)) as u64;
        assert_eq!(mul_mod(a, b), want);
    }
}
