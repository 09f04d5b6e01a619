//! A list of session headers kept compact: what `list` returns (SPEC §7).
//!
//! Most listed sessions are plain — format version 0, no optional field
//! but `cwd`, valid — and such a header is its id, its `cwd` and a number.
//! A [`SessionList`] keeps those texts back to back in one buffer and
//! each plain entry as offsets into it; any other header is kept whole.
//! Listing a thousand sessions then allocates a handful of blocks in place
//! of two per session (on a heap a long-running host has fragmented, the
//! allocations were most of a SQLite listing's time: README, issue 16).
//! [`HeaderRef`] is the borrowed view of either kind of entry; the API
//! JSON of a header is written by one function ([`HeaderRef::write_json`])
//! whichever way it is held.

use std::fmt::Write as _;
use std::sync::Arc;

use super::header::{InvalidHeader, SESSION_FORMAT_VERSION, SessionHeader};
use super::json;

/// A header borrowed from a [`SessionHeader`] or a [`SessionList`]: the
/// same fields, as references.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderRef<'a> {
    pub version: i64,
    pub id: &'a str,
    pub created_at: u64,
    pub cwd: Option<&'a str>,
    pub parent_session: Option<&'a str>,
    pub seed_length: Option<u64>,
    pub origin: Option<&'a str>,
    pub delegation_depth: Option<u64>,
    pub agent_preset: Option<&'a str>,
    /// See [`SessionHeader::invalid`].
    pub invalid: Option<&'a Arc<InvalidHeader>>,
}

impl HeaderRef<'_> {
    /// A header of its own with the same fields.
    pub fn to_header(&self) -> SessionHeader {
        SessionHeader {
            version: self.version,
            id: self.id.to_owned(),
            created_at: self.created_at,
            cwd: self.cwd.map(str::to_owned),
            parent_session: self.parent_session.map(str::to_owned),
            seed_length: self.seed_length,
            origin: self.origin.map(str::to_owned),
            delegation_depth: self.delegation_depth,
            agent_preset: self.agent_preset.map(str::to_owned),
            invalid: self.invalid.cloned(),
        }
    }

    /// The validation failure of a header kept as written.
    pub fn problem(&self) -> Option<&str> {
        self.invalid.map(|i| i.problem.as_str())
    }

    /// The header as the API returns it (see [`HeaderRef::write_json`]).
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(128);
        self.write_json(&mut out);
        out
    }

    /// Appends the header as the API returns it (`{"version":0,"id":…}`,
    /// absent fields omitted; a header kept as written: its stored JSON).
    pub fn write_json(&self, out: &mut String) {
        if let Some(i) = self.invalid {
            out.push_str(&i.json);
            return;
        }
        out.push('{');
        self.write_fields(out, false);
        out.push('}');
    }

    /// The fields in the original's key order; `delegationDepth` written
    /// as 0 when absent if `always_depth` (the JSONL header line).
    pub(crate) fn write_fields(&self, out: &mut String, always_depth: bool) {
        let _ = write!(out, "\"version\":{},\"id\":", self.version);
        json::write_string(out, self.id);
        let _ = write!(out, ",\"createdAt\":{}", self.created_at);
        let opt_str = |out: &mut String, k: &str, v: Option<&str>| {
            if let Some(v) = v {
                let _ = write!(out, ",\"{k}\":");
                json::write_string(out, v);
            }
        };
        opt_str(out, "cwd", self.cwd);
        opt_str(out, "parentSession", self.parent_session);
        if let Some(n) = self.seed_length {
            let _ = write!(out, ",\"seedLength\":{n}");
        }
        opt_str(out, "origin", self.origin);
        match (self.delegation_depth, always_depth) {
            (Some(n), _) => {
                let _ = write!(out, ",\"delegationDepth\":{n}");
            }
            (None, true) => out.push_str(",\"delegationDepth\":0"),
            (None, false) => {}
        }
        opt_str(out, "agentPreset", self.agent_preset);
    }
}

impl SessionHeader {
    /// The header as a [`HeaderRef`].
    pub fn view(&self) -> HeaderRef<'_> {
        HeaderRef {
            version: self.version,
            id: &self.id,
            created_at: self.created_at,
            cwd: self.cwd.as_deref(),
            parent_session: self.parent_session.as_deref(),
            seed_length: self.seed_length,
            origin: self.origin.as_deref(),
            delegation_depth: self.delegation_depth,
            agent_preset: self.agent_preset.as_deref(),
            invalid: self.invalid.as_ref(),
        }
    }
}

/// `cwd_len` of a plain entry without a `cwd`.
const NO_CWD: u32 = u32::MAX;

/// One listed session: a plain header's texts at `start` in the list's
/// buffer (the id, then the `cwd`), or a header kept whole.
#[derive(Clone, Debug)]
enum Entry {
    Plain {
        start: usize,
        id_len: u32,
        cwd_len: u32,
        created_at: u64,
    },
    Whole(Box<SessionHeader>),
}

/// Session headers in listing order, plain ones packed into one buffer
/// (see the module documentation). Equal when the headers are, however
/// they are held.
#[derive(Clone, Debug, Default)]
pub struct SessionList {
    text: String,
    entries: Vec<Entry>,
}

impl SessionList {
    pub fn new() -> Self {
        Self::default()
    }

    /// A list with room for `sessions` entries.
    pub fn with_capacity(sessions: usize) -> Self {
        SessionList {
            text: String::new(),
            entries: Vec::with_capacity(sessions),
        }
    }

    /// Appends the plain header `id`, `created_at`, `cwd` (format version
    /// 0, no other field) by copying its texts into the buffer.
    pub fn push_plain(&mut self, id: &str, created_at: u64, cwd: Option<&str>) {
        let id_len = u32::try_from(id.len()).ok();
        let cwd_len = match cwd {
            None => Some(NO_CWD),
            Some(c) => u32::try_from(c.len()).ok().filter(|&n| n != NO_CWD),
        };
        let (Some(id_len), Some(cwd_len)) = (id_len, cwd_len) else {
            // Texts of 4 GiB are kept whole rather than packed.
            let mut h = SessionHeader::new(id, created_at);
            h.cwd = cwd.map(str::to_owned);
            self.entries.push(Entry::Whole(Box::new(h)));
            return;
        };
        let start = self.text.len();
        self.text.push_str(id);
        self.text.push_str(cwd.unwrap_or(""));
        self.entries.push(Entry::Plain {
            start,
            id_len,
            cwd_len,
            created_at,
        });
    }

    /// Appends `header` (packed when it is plain).
    pub fn push(&mut self, header: SessionHeader) {
        let plain = header.version == SESSION_FORMAT_VERSION
            && header.parent_session.is_none()
            && header.seed_length.is_none()
            && header.origin.is_none()
            && header.delegation_depth.is_none()
            && header.agent_preset.is_none()
            && header.invalid.is_none();
        if plain {
            self.push_plain(&header.id, header.created_at, header.cwd.as_deref());
        } else {
            self.entries.push(Entry::Whole(Box::new(header)));
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The header at `index`, if any.
    pub fn get(&self, index: usize) -> Option<HeaderRef<'_>> {
        self.entries.get(index).map(|e| self.view(e))
    }

    /// The headers in listing order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            list: self,
            entries: self.entries.iter(),
        }
    }

    /// The headers as headers of their own.
    pub fn to_headers(&self) -> Vec<SessionHeader> {
        self.iter().map(|h| h.to_header()).collect()
    }

    /// The list as a JSON array of [`HeaderRef::write_json`] objects.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(2 + self.text.len() + 48 * self.len());
        write_headers_array(&mut out, self);
        out
    }

    fn view<'a>(&'a self, entry: &'a Entry) -> HeaderRef<'a> {
        entry.view(&self.text)
    }
}

/// Writes `headers` as a JSON array of [`HeaderRef::write_json`] objects.
pub fn write_headers_array<'a>(out: &mut String, headers: impl IntoIterator<Item = HeaderRef<'a>>) {
    json::write_array(out, headers, |out, h| h.write_json(out));
}

impl Entry {
    /// The entry as a header, its texts (if plain) in `text`.
    fn view<'a>(&'a self, text: &'a str) -> HeaderRef<'a> {
        match self {
            Entry::Whole(h) => h.view(),
            &Entry::Plain {
                start,
                id_len,
                cwd_len,
                created_at,
            } => {
                let cwd_at = start + id_len as usize;
                HeaderRef {
                    version: SESSION_FORMAT_VERSION,
                    id: &text[start..cwd_at],
                    created_at,
                    cwd: (cwd_len != NO_CWD).then(|| &text[cwd_at..cwd_at + cwd_len as usize]),
                    parent_session: None,
                    seed_length: None,
                    origin: None,
                    delegation_depth: None,
                    agent_preset: None,
                    invalid: None,
                }
            }
        }
    }
}

/// The headers of a [`SessionList`], borrowed, in listing order.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    list: &'a SessionList,
    entries: std::slice::Iter<'a, Entry>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = HeaderRef<'a>;

    fn next(&mut self) -> Option<HeaderRef<'a>> {
        self.entries.next().map(|e| self.list.view(e))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.entries.next_back().map(|e| self.list.view(e))
    }
}

impl<'a> IntoIterator for &'a SessionList {
    type Item = HeaderRef<'a>;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The headers as headers of their own.
impl IntoIterator for SessionList {
    type Item = SessionHeader;
    type IntoIter = std::vec::IntoIter<SessionHeader>;

    fn into_iter(self) -> Self::IntoIter {
        Vec::from(self).into_iter()
    }
}

impl PartialEq<[SessionHeader]> for SessionList {
    fn eq(&self, other: &[SessionHeader]) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter().map(SessionHeader::view))
    }
}

impl PartialEq<Vec<SessionHeader>> for SessionList {
    fn eq(&self, other: &Vec<SessionHeader>) -> bool {
        *self == other[..]
    }
}

impl PartialEq for SessionList {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for SessionList {}

impl From<Vec<SessionHeader>> for SessionList {
    fn from(headers: Vec<SessionHeader>) -> Self {
        headers.into_iter().collect()
    }
}

impl FromIterator<SessionHeader> for SessionList {
    fn from_iter<I: IntoIterator<Item = SessionHeader>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut list = SessionList::with_capacity(iter.size_hint().0);
        for h in iter {
            list.push(h);
        }
        list
    }
}

impl From<SessionList> for Vec<SessionHeader> {
    fn from(list: SessionList) -> Self {
        let SessionList { text, entries } = list;
        entries
            .into_iter()
            .map(|e| match e {
                Entry::Whole(h) => *h,
                plain => plain.view(&text).to_header(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn odd(id: &str) -> SessionHeader {
        let mut h = SessionHeader::new(id, 7);
        h.parent_session = Some("p".into());
        h.delegation_depth = Some(1);
        h
    }

    #[test]
    fn headers_round_trip_however_they_are_held() {
        let mut with_cwd = SessionHeader::new("a", 1);
        with_cwd.cwd = Some("/home/ü".into());
        let empty_cwd = {
            let mut h = SessionHeader::new("b", 2);
            h.cwd = Some(String::new());
            h
        };
        let mut old = SessionHeader::new("c", 3);
        old.version = 1;
        let headers = vec![
            with_cwd,
            SessionHeader::new("", 0),
            odd("d"),
            empty_cwd,
            old,
            SessionHeader::new("e", u64::MAX),
        ];
        let list = SessionList::from(headers.clone());
        assert_eq!(list.len(), headers.len());
        assert_eq!(list.to_headers(), headers);
        for (i, h) in headers.iter().enumerate() {
            assert_eq!(list.get(i), Some(h.view()));
        }
        assert_eq!(list.get(headers.len()), None);
        // Only the plain ones are packed.
        let packed = list
            .entries
            .iter()
            .filter(|e| matches!(e, Entry::Plain { .. }))
            .count();
        assert_eq!(packed, 4);
        assert_eq!(Vec::<SessionHeader>::from(list.clone()), headers);
        assert_eq!(list, headers);
        assert_eq!(list.iter().next_back(), headers.last().map(|h| h.view()));
        assert_eq!(list.clone().into_iter().collect::<Vec<_>>(), headers);
        assert_eq!(list, headers.into_iter().collect::<SessionList>());
    }

    #[test]
    fn json_is_the_headers_json() {
        let mut a = SessionHeader::new("a\"b", 5);
        a.cwd = Some("/p".into());
        let headers = vec![a, odd("x")];
        let list = SessionList::from(headers.clone());
        let want: Vec<String> = headers.iter().map(SessionHeader::to_json).collect();
        assert_eq!(list.to_json(), format!("[{}]", want.join(",")));
        assert_eq!(SessionList::new().to_json(), "[]");
        assert_eq!(
            list.to_json(),
            r#"[{"version":0,"id":"a\"b","createdAt":5,"cwd":"/p"},{"version":0,"id":"x","createdAt":7,"parentSession":"p","delegationDepth":1}]"#
        );
    }

    #[test]
    fn a_header_kept_as_written_keeps_its_problem_and_json() {
        let mut bad = SessionHeader::new("b", 1);
        bad.invalid = Some(Arc::new(InvalidHeader {
            json: r#"{"version":0,"id":"b","createdAt":1,"cwd":"rel"}"#.into(),
            problem: "session metadata cwd must be an absolute path string".into(),
        }));
        let list = SessionList::from(vec![SessionHeader::new("a", 1), bad]);
        assert!(!list.is_empty() && SessionList::new().is_empty());
        assert_eq!(list.get(0).unwrap().problem(), None);
        let kept = list.get(1).unwrap();
        assert_eq!(
            kept.problem(),
            Some("session metadata cwd must be an absolute path string")
        );
        assert_eq!(
            kept.to_json(),
            r#"{"version":0,"id":"b","createdAt":1,"cwd":"rel"}"#
        );
    }

    #[test]
    fn lists_differ_when_a_header_does() {
        let a = SessionList::from(vec![SessionHeader::new("a", 1)]);
        assert_ne!(a, SessionList::from(vec![SessionHeader::new("a", 2)]));
        assert_ne!(a, SessionList::from(vec![odd("a")]));
        assert_ne!(a, SessionList::new());
    }
}
