//! The cold append's read of a stored log without a usable checkpoint
//! (issue 16): the backend streams the log ([`Backend::read_folding`]) into
//! the rules' fold ([`LogFold`]), which judges each event as a load does
//! and drops it, so the read's memory is bounded by the backend's stretch
//! (a block, a run of frames, a page of rows), not by the log. A log whose
//! tail is torn is read again whole (the repair the append adopts needs
//! the recovered events).
//!
//! [`ColdReads`] counts what these reads held, so a test can tell a fold
//! from a read that keeps the log.
//!
//! [`Backend::read_folding`]: crate::backend::Backend::read_folding

use std::sync::atomic::{AtomicU64, Ordering};

use crate::backend::EventSink;
use crate::model::event::Event;
use crate::model::log_fold::LogFold;
use crate::model::vocabulary::Vocabulary;

/// What a store's cold appends read without a checkpoint so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ColdReads {
    /// Logs folded as they were read.
    pub folded: u64,
    /// Logs read and kept whole (a torn tail to adopt).
    pub kept: u64,
    /// The most events one of these reads held at once (a fold: its
    /// largest stretch; a kept read: the log).
    pub most_events_held: u64,
}

/// The counters behind [`ColdReads`].
#[derive(Default)]
pub(crate) struct ColdReadCounters {
    folded: AtomicU64,
    kept: AtomicU64,
    most_events_held: AtomicU64,
}

impl ColdReadCounters {
    pub(crate) fn folded(&self, largest_stretch: u64) {
        self.folded.fetch_add(1, Ordering::Relaxed);
        self.most_events_held
            .fetch_max(largest_stretch, Ordering::Relaxed);
    }

    pub(crate) fn kept(&self, events: u64) {
        self.kept.fetch_add(1, Ordering::Relaxed);
        self.most_events_held.fetch_max(events, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> ColdReads {
        ColdReads {
            folded: self.folded.load(Ordering::Relaxed),
            kept: self.kept.load(Ordering::Relaxed),
            most_events_held: self.most_events_held.load(Ordering::Relaxed),
        }
    }
}

/// The sink of a cold append's folding read.
pub(crate) struct TailFold<'a> {
    id: &'a str,
    vocab: &'a Vocabulary,
    strict: bool,
    pub(crate) fold: LogFold<'a>,
    /// The largest stretch handed on.
    pub(crate) largest: u64,
}

impl<'a> TailFold<'a> {
    pub(crate) fn new(id: &'a str, vocab: &'a Vocabulary, strict: bool) -> Self {
        TailFold {
            id,
            vocab,
            strict,
            fold: LogFold::new(id, vocab, strict),
            largest: 0,
        }
    }
}

impl EventSink for TailFold<'_> {
    fn events(&mut self, events: &mut Vec<Event>) {
        self.largest = self.largest.max(events.len() as u64);
        for e in events.iter_mut() {
            self.fold.push(e);
        }
        // Dropped by the reader, which keeps the vector's allocation: what
        // the state keeps of them (surface texts) is shared, not copied.
    }

    fn restart(&mut self) {
        self.fold = LogFold::new(self.id, self.vocab, self.strict);
    }
}
