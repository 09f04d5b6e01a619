//! The fold of a stored log into the state an append continues from
//! ([`LogState`]), judging every event with the rules a load applies, one
//! event at a time (issue 16): a cold append on a session without a
//! usable checkpoint streams the log through it and drops each event once
//! it is folded, so its memory does not grow with the log.
//!
//! One rule set: a load runs the same steps on its events in place
//! ([`fold_in_place`], used by [`super::validate::session_view`]): the read
//! rules ([`ReadRules`]: legacy refusals, conversion of older shapes and
//! the message shapes, unknown types) and then the session rules (the
//! envelope, the surface rules, the `request/header` shape, the strict
//! trace), with the original's precedence: a legacy refusal anywhere, then
//! the first conversion or shape failure, then the first unknown type,
//! then the first session-rule failure. The only difference is where a
//! legacy `tool/result` replacement finds the message id of an earlier
//! event: among the kept events in place, in the fold's own table of the
//! message ids seen (the same answers: seqs are unique in a read).

use super::event::Event;
use super::legacy::{chunk_may_name_a_message, message_id_of};
use super::validate::{LogState, ReadRules, session_rules};
use super::vocabulary::Vocabulary;
use crate::error::{Error, Result};

const CHUNK: &str = "assistant/chunk";

/// The fold of one log, fed its events in order.
pub struct LogFold<'a> {
    session_id: &'a str,
    vocab: &'a Vocabulary,
    strict: bool,
    read: ReadRules,
    /// A legacy refusal (beats every other failure; nothing after it is
    /// judged).
    legacy: Option<String>,
    /// The first session-rule failure (judged only while the read rules
    /// found nothing: a load runs them only on a log that passed those).
    session: Option<String>,
    state: LogState,
    /// Streaming only: the message ids of the events seen, by seq
    /// (ascending), for a legacy `tool/result` replacement.
    ids: Vec<(u64, Box<str>)>,
    /// Whether the state is kept whole (the trace stepped in non-strict
    /// mode too, as [`LogState::fold`] does); a load needs only the
    /// verdict.
    keep_state: bool,
}

impl<'a> LogFold<'a> {
    /// A fold that keeps the state of the log for appends.
    pub fn new(session_id: &'a str, vocab: &'a Vocabulary, strict: bool) -> Self {
        LogFold {
            session_id,
            vocab,
            strict,
            read: ReadRules::default(),
            legacy: None,
            session: None,
            state: LogState::new(),
            ids: Vec::new(),
            keep_state: true,
        }
    }

    /// How many events were fed.
    pub fn event_count(&self) -> usize {
        self.state.len
    }

    /// Judges and folds the next event of the log (converting an older
    /// shape in place, as a load does); the caller may drop it afterwards.
    pub fn push(&mut self, e: &mut Event) {
        let ids = std::mem::take(&mut self.ids);
        let lookup = |seq: u64| {
            ids.binary_search_by_key(&seq, |(s, _)| *s)
                .ok()
                .map(|i| ids[i].1.to_string())
        };
        self.step(&lookup, e);
        self.ids = ids;
        if self.legacy.is_none() && self.read.converting() {
            // What a later replacement may inherit from this event.
            let may_name_a_message =
                e.type_str() != CHUNK || chunk_may_name_a_message(e.data.as_str().as_bytes());
            if may_name_a_message {
                if let Some(id) = message_id_of(e.type_str(), e.data.as_str()) {
                    // Seqs ascend in a read; a stray one keeps the table
                    // sorted (the nearest earlier event is the last one).
                    let at = self.ids.partition_point(|(s, _)| *s <= e.seq);
                    self.ids.insert(at, (e.seq, id.into_boxed_str()));
                }
            }
        }
    }

    /// One event, with `inherited` giving earlier events' message ids.
    fn step(&mut self, inherited: &dyn Fn(u64) -> Option<String>, e: &mut Event) {
        if self.legacy.is_some() {
            return;
        }
        let index = self.state.len;
        self.state.len += 1;
        if let Err(m) = self.read.event(self.session_id, self.vocab, inherited, e) {
            self.legacy = Some(m);
            return;
        }
        if !self.read.clean() || self.session.is_some() {
            return;
        }
        let trace = self.strict.then_some(&mut self.state.trace);
        match session_rules(&mut self.state.surface, trace, index, e) {
            Err(m) => self.session = Some(m),
            Ok(()) if !self.strict && self.keep_state => {
                // Kept in step for the appends, not judged.
                self.state.trace.advance(e);
            }
            Ok(()) => {}
        }
    }

    /// The state after the log, or the refusal a load gives for it (a
    /// stored-session validation failure; format refusals as they are).
    pub fn finish(self, raw_log: Option<&str>) -> Result<LogState> {
        let id = self.session_id;
        let failed = |m: String| Error::failed_validation(id, m);
        if let Some(m) = self.legacy {
            return Err(failed(m));
        }
        self.read.finish(id, raw_log).map_err(|e| match e {
            Error::Corruption {
                message,
                cause: None,
            } => failed(message),
            other => other,
        })?;
        if let Some(m) = self.session {
            return Err(failed(m));
        }
        Ok(self.state)
    }
}

/// The fold of `events` in place (a load: converted as it returns them),
/// with the rules and the precedence of [`LogFold`]. With `keep_state`
/// false only the verdict counts (the returned state is then not the
/// whole [`LogState`] of a non-strict log).
pub fn fold_in_place(
    session_id: &str,
    raw_log: Option<&str>,
    vocab: &Vocabulary,
    strict: bool,
    keep_state: bool,
    events: &mut [Event],
) -> Result<LogState> {
    let mut fold = LogFold::new(session_id, vocab, strict);
    fold.keep_state = keep_state;
    let earlier = super::legacy::EarlierEvents::default();
    for i in 0..events.len() {
        let (head, rest) = events.split_at_mut(i);
        let lookup = |seq: u64| earlier.message_id(head, seq);
        fold.step(&lookup, &mut rest[0]);
    }
    fold.finish(raw_log)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(line: &str) -> Event {
        Event::parse(line).unwrap()
    }

    /// A pre-identity log whose `tool/result` replacement inherits the id
    /// of the message it replaces (SPEC §1.9).
    const LEGACY: [&str; 2] = [
        r#"{"type":"tool/result","seq":0,"time":0,"data":{"callId":"c","content":[1],"isError":false},"surfaceOp":"append"}"#,
        r#"{"type":"tool/result","seq":1,"time":0,"data":{"callId":"c","content":[2],"isError":false},"sourceEventSeqs":[0],"surfaceOp":{"op":"replace","start":0,"end":0}}"#,
    ];

    #[test]
    fn a_streamed_fold_inherits_message_ids_as_a_load_does() {
        let vocab = Vocabulary::default();
        let mut fold = LogFold::new("s", &vocab, false);
        let mut streamed = Vec::new();
        for line in LEGACY {
            // each event is judged alone: the fold keeps only the ids
            let mut e = ev(line);
            fold.push(&mut e);
            streamed.push(e);
        }
        let state = fold.finish(None).unwrap();
        let mut loaded: Vec<Event> = LEGACY.iter().map(|l| ev(l)).collect();
        let whole = fold_in_place("s", None, &vocab, false, true, &mut loaded).unwrap();
        assert!(
            streamed[1]
                .data
                .as_str()
                .contains(r#""id":"legacy-message:s:0""#),
            "{}",
            streamed[1].data.as_str()
        );
        assert_eq!(streamed, loaded);
        assert_eq!(state, whole);
    }

    /// A long pre-identity log replacing each of its results in turn: every
    /// replacement inherits the id of the result it replaces, in place and
    /// streamed alike, and each costs a lookup, not a search back over the
    /// log (100 000 replacements once searched 10^10 events).
    #[test]
    fn many_replacements_each_inherit_their_results_id() {
        const N: u64 = 100_000;
        let vocab = Vocabulary::default();
        let mut log: Vec<Event> = (0..N)
            .map(|s| ev(&LEGACY[0].replace(r#""seq":0"#, &format!(r#""seq":{s}"#))))
            .collect();
        log.extend((0..N).map(|s| {
            ev(&LEGACY[1]
                .replace(r#""seq":1"#, &format!(r#""seq":{}"#, N + s))
                .replace("[0]", &format!("[{s}]"))
                .replace(r#""start":0,"end":0"#, &format!(r#""start":{s},"end":{s}"#)))
        }));
        let mut fold = LogFold::new("s", &vocab, false);
        let mut streamed = Vec::with_capacity(log.len());
        for e in &log {
            let mut e = e.clone();
            fold.push(&mut e);
            streamed.push(e);
        }
        let state = fold.finish(None).unwrap();
        let whole = fold_in_place("s", None, &vocab, false, true, &mut log).unwrap();
        for s in [0, 1, N / 2, N - 1] {
            let id = format!(r#""id":"legacy-message:s:{s}""#);
            assert!(log[(N + s) as usize].data.as_str().contains(&id), "{s}");
        }
        assert!(streamed == log);
        assert_eq!(state, whole);
        assert!(whole.surface.seqs().eq(N..2 * N));
    }

    #[test]
    fn the_first_failure_of_a_log_is_the_one_reported() {
        let vocab = Vocabulary::default();
        let bad = |seq: u64| {
            ev(&format!(
                r#"{{"type":"user/message","seq":{seq},"time":0,"data":{{"content":[],"source":{{"kind":"user"}},"role":"user","id":"u{seq}"}},"surfaceOp":{{"op":"replace","start":9,"end":9}},"sourceEventSeqs":[9]}}"#
            ))
        };
        let mut log = [bad(0), bad(1)];
        let err = fold_in_place("s", None, &vocab, false, true, &mut log).unwrap_err();
        assert!(err.to_string().contains("at index 0:"), "{err}");
        assert!(!err.to_string().contains("at index 1"), "{err}");
    }
}
