//! The per-session metadata (SPEC §1.2) and its JSONL header line (§3.2).

use std::fmt::Write as _;
use std::sync::Arc;

use super::json::{self, JsonStr, Scanner};
use crate::error::{Error, Result};

/// `SESSION_FORMAT_VERSION`: the only log format version this build reads.
pub const SESSION_FORMAT_VERSION: i64 = 0;

/// Header fields a session carries. `version` is always
/// [`SESSION_FORMAT_VERSION`] once validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionHeader {
    /// The stored format version: [`SESSION_FORMAT_VERSION`], except for a
    /// header that `list`/`read_raw` report from a foreign-format log (such a
    /// log is refused by every read that interprets it).
    pub version: i64,
    pub id: String,
    pub created_at: u64,
    pub cwd: Option<String>,
    pub parent_session: Option<String>,
    pub seed_length: Option<u64>,
    pub origin: Option<String>,
    pub delegation_depth: Option<u64>,
    pub agent_preset: Option<String>,
    /// Set on a JSONL header line that the original's readers accept
    /// (`isHeaderLine`) but that fails full validation (a relative `cwd`, a
    /// fractional `seedLength`, a numeric `parentSession`, …): `list` and
    /// `read_from` return it as written, `load`/`inspect` refuse it.
    pub invalid: Option<Arc<InvalidHeader>>,
}

/// A header kept despite failing validation: the API JSON of its known
/// fields as stored (the original's `fromHeaderLine`) and the failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidHeader {
    pub json: Box<str>,
    pub problem: String,
}

/// Where header text came from: the rules differ slightly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderSource {
    /// A host's `create`/`start` call: `type` must be absent, `version` and
    /// `createdAt` are optional (0 and now), unknown keys are rejected.
    Host,
    /// A JSONL header line: `type` must be `"session"`, `version`,
    /// `createdAt` and `delegationDepth` are required.
    JsonlLine,
}

fn meta_err(field: &str, rule: &str) -> Error {
    Error::invalid(format!("session metadata {field} must be {rule}"))
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The refusal of a log written in another format version (SPEC §3.5).
pub fn version_refusal(id: &str, version: &str, raw_log: Option<&str>) -> Error {
    let v = version.trim();
    let newer = json::as_f64(v).is_some_and(|n| n > SESSION_FORMAT_VERSION as f64);
    let mut m = if newer {
        format!(
            "session {} uses log format v{v}, but this harness reads only v{SESSION_FORMAT_VERSION}: the log was written by a newer harness \u{2014} upgrade the harness to open it",
            json::quote(id)
        )
    } else {
        format!(
            "session {} uses log format v{v}, older than the supported v{SESSION_FORMAT_VERSION}, and this build ships no upgrade path for it",
            json::quote(id)
        )
    };
    if let Some(p) = raw_log {
        let _ = write!(m, " (raw log: {p})");
    }
    Error::FormatUnsupported(m)
}

impl SessionHeader {
    /// A header with only the required fields.
    pub fn new(id: impl Into<String>, created_at: u64) -> Self {
        SessionHeader {
            version: SESSION_FORMAT_VERSION,
            id: id.into(),
            created_at,
            cwd: None,
            parent_session: None,
            seed_length: None,
            origin: None,
            delegation_depth: None,
            agent_preset: None,
            invalid: None,
        }
    }

    /// The validation failure of a header kept as written (see
    /// [`SessionHeader::invalid`]).
    pub fn problem(&self) -> Option<&str> {
        self.invalid.as_ref().map(|i| i.problem.as_str())
    }

    /// The stored id as UTF-16 code units when it holds a lone surrogate
    /// (a JSONL header the original's create accepted): [`Self::id`] has
    /// U+FFFD in its place, these units name the session directory.
    /// `None` for every id that is valid Unicode.
    pub fn stored_id_utf16(&self) -> Option<Vec<u16>> {
        let invalid = self.invalid.as_ref()?;
        let id = json::as_str(json::get_field(&invalid.json, "id")?)?;
        id.has_lone_surrogate().then(|| id.decode_utf16())
    }

    /// Parses a JSONL header line as the original's readers do: `Ok(None)`
    /// when it is not JSON or not a header line (`isHeaderLine`: type
    /// `"session"`, a numeric `version`, a string `id`, `createdAt` and
    /// `delegationDepth` non-negative safe integers, `origin` absent or
    /// `"subagent"`, `agentPreset` absent or a string). Unknown keys are
    /// ignored (a newer writer may add fields); the retired `sandboxMode` /
    /// `approvalPolicy` are refused. A line that passes but fails full
    /// validation is kept with [`SessionHeader::invalid`] set.
    pub fn parse_line_lenient(text: &str) -> Result<Option<SessionHeader>> {
        let Ok(fields) = json::object_fields(text) else {
            return Ok(None);
        };
        let get = |k: &str| {
            fields
                .iter()
                .find(|(n, _)| n.eq_str(k))
                .map(|(_, v)| v.trim())
        };
        let is = |k: &str, kind: json::Kind| get(k).and_then(json::kind_of) == Some(kind);
        let nonneg_safe = |k: &str| get(k).and_then(json::as_safe_uint).is_some();
        let header_line = get("type")
            .and_then(json::as_str)
            .is_some_and(|t| t.eq_str("session"))
            && is("version", json::Kind::Number)
            && is("id", json::Kind::String)
            && nonneg_safe("createdAt")
            && nonneg_safe("delegationDepth")
            && get("origin").is_none_or(|o| json::as_str(o).is_some_and(|t| t.eq_str("subagent")))
            && get("agentPreset").is_none_or(|a| json::kind_of(a) == Some(json::Kind::String));
        if !header_line {
            return Ok(None);
        }
        if get("sandboxMode").is_some() || get("approvalPolicy").is_some() {
            return Err(Error::invalid(
                "session header uses retired policy baseline fields",
            ));
        }
        match SessionHeader::parse_any_version(text, HeaderSource::JsonlLine) {
            Ok(h) => Ok(Some(h)),
            Err(e) => {
                let mut h = SessionHeader::new(
                    get("id")
                        .and_then(json::as_str)
                        .map(|t| t.decode().into_owned())
                        .unwrap_or_default(),
                    get("createdAt").and_then(json::as_safe_uint).unwrap_or(0),
                );
                h.version = get("version")
                    .and_then(json::as_safe_int)
                    .unwrap_or(SESSION_FORMAT_VERSION);
                let string = |k: &str| {
                    get(k)
                        .and_then(json::as_str)
                        .map(|t| t.decode().into_owned())
                };
                h.cwd = string("cwd");
                h.parent_session = string("parentSession");
                h.seed_length = get("seedLength").and_then(json::as_safe_uint);
                h.origin = string("origin");
                h.delegation_depth = get("delegationDepth").and_then(json::as_safe_uint);
                h.agent_preset = string("agentPreset");
                let mut out = String::from("{");
                for (i, k) in [
                    "version",
                    "id",
                    "createdAt",
                    "cwd",
                    "parentSession",
                    "seedLength",
                    "origin",
                    "delegationDepth",
                    "agentPreset",
                ]
                .iter()
                .enumerate()
                {
                    if let Some(v) = get(k) {
                        if i > 0 {
                            out.push(',');
                        }
                        let _ = write!(
                            out,
                            "\"{k}\":{}",
                            json::canonicalize(v).unwrap_or_else(|_| v.to_string())
                        );
                    }
                }
                out.push('}');
                h.invalid = Some(Arc::new(InvalidHeader {
                    json: out.into(),
                    problem: e.to_string(),
                }));
                Ok(Some(h))
            }
        }
    }

    /// Peeks `id` and `version` from header text without validating the rest,
    /// so a foreign version is refused before anything else (SPEC §3.5).
    /// Returns `(id, raw version text)` when both look usable.
    pub fn peek_id_version(text: &str) -> Option<(String, String)> {
        let mut id = None;
        let mut version = None;
        let mut s = Scanner::new(text);
        s.object(|k, s| {
            let v = s.value()?;
            if k.eq_str("id") {
                id = json::as_str(v).map(|t| t.decode().into_owned());
            } else if k.eq_str("version") {
                version = Some(v.to_string());
            }
            Ok(())
        })
        .ok()?;
        Some((id?, version?))
    }

    /// Parses and validates header JSON text.
    pub fn parse(text: &str, source: HeaderSource) -> Result<SessionHeader> {
        Self::parse_inner(text, source, false)
    }

    /// Like [`SessionHeader::parse`], but a foreign integer `version` is
    /// kept in [`SessionHeader::version`] instead of refused (for listing and
    /// raw reads of logs that loads refuse).
    pub fn parse_any_version(text: &str, source: HeaderSource) -> Result<SessionHeader> {
        Self::parse_inner(text, source, true)
    }

    fn parse_inner(text: &str, source: HeaderSource, any_version: bool) -> Result<SessionHeader> {
        let fields = json::object_fields(text)
            .map_err(|e| Error::invalid(format!("session metadata is not a JSON object: {e}")))?;
        let mut h = SessionHeader::new(String::new(), 0);
        let (mut saw_id, mut saw_created, mut saw_depth, mut saw_type) =
            (false, false, false, false);
        let mut version: Option<&str> = None;
        for (k, v) in &fields {
            let key = k.decode();
            match key.as_ref() {
                "type" => {
                    saw_type = true;
                    if source == HeaderSource::Host
                        || !json::as_str(v).is_some_and(|t| t.eq_str("session"))
                    {
                        return Err(Error::invalid(match source {
                            HeaderSource::Host => {
                                "session metadata must not carry a type key".to_string()
                            }
                            HeaderSource::JsonlLine => {
                                "session header line type must be \"session\"".to_string()
                            }
                        }));
                    }
                }
                "version" => version = Some(v),
                "id" => {
                    saw_id = true;
                    h.id = string_field(v, "id")?;
                    if h.id.is_empty() {
                        return Err(meta_err("id", "a non-empty string"));
                    }
                }
                "createdAt" => {
                    saw_created = true;
                    h.created_at = json::as_safe_uint(v)
                        .ok_or_else(|| meta_err("createdAt", "a non-negative safe integer"))?;
                }
                "cwd" => {
                    let cwd = string_field(v, "cwd")?;
                    if !is_absolute(&cwd) {
                        return Err(meta_err("cwd", "an absolute path string"));
                    }
                    h.cwd = Some(cwd);
                }
                "parentSession" => h.parent_session = Some(string_field(v, "parentSession")?),
                "seedLength" => {
                    h.seed_length = Some(
                        json::as_safe_uint(v)
                            .ok_or_else(|| meta_err("seedLength", "a non-negative safe integer"))?,
                    )
                }
                "origin" => {
                    let o = string_field(v, "origin")?;
                    if o != "subagent" {
                        return Err(meta_err("origin", "\"subagent\" when present"));
                    }
                    h.origin = Some(o);
                }
                "delegationDepth" => {
                    saw_depth = true;
                    h.delegation_depth = Some(json::as_safe_uint(v).ok_or_else(|| {
                        meta_err("delegationDepth", "a non-negative safe integer")
                    })?)
                }
                "agentPreset" => h.agent_preset = Some(string_field(v, "agentPreset")?),
                "sandboxMode" | "approvalPolicy" => {
                    return Err(Error::invalid(format!(
                        "session metadata carries the retired field {key}; this build no longer supports it"
                    )));
                }
                // A header line may carry fields a newer writer added: the
                // original keeps the known ones (DIFFERENCES A.1 #17b).
                _ if source == HeaderSource::JsonlLine => {}
                other => {
                    return Err(Error::invalid(format!(
                        "session metadata has unknown key {}",
                        json::quote(other)
                    )));
                }
            }
        }
        if !saw_id {
            return Err(meta_err("id", "a non-empty string"));
        }
        match version {
            Some(v) if json::as_safe_int(v) == Some(SESSION_FORMAT_VERSION) => {}
            Some(v) if any_version && json::as_safe_int(v).is_some() => {
                h.version = json::as_safe_int(v).unwrap_or(SESSION_FORMAT_VERSION);
            }
            Some(v) => return Err(version_refusal(&h.id, v, None)),
            None if source == HeaderSource::Host => {}
            None => return Err(meta_err("version", "0")),
        }
        if source == HeaderSource::JsonlLine {
            if !saw_type {
                return Err(Error::invalid(
                    "session header line type must be \"session\"",
                ));
            }
            if !saw_created {
                return Err(meta_err("createdAt", "a non-negative safe integer"));
            }
            if !saw_depth {
                return Err(meta_err("delegationDepth", "a non-negative safe integer"));
            }
        } else if !saw_created {
            h.created_at = now_ms().max(0) as u64;
        }
        Ok(h)
    }

    /// The JSONL header line (without the newline), in the original's key
    /// order; `delegationDepth` is always written.
    pub fn to_jsonl_line(&self) -> String {
        let mut out = String::with_capacity(128);
        out.push_str("{\"type\":\"session\",");
        self.view().write_fields(&mut out, true);
        out.push('}');
        out
    }

    /// The header as the API returns it (`{"version":0,"id":…}`); absent
    /// fields are omitted.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(128);
        self.view().write_json(&mut out);
        out
    }
}

fn string_field(raw: &str, field: &str) -> Result<String> {
    let t: JsonStr<'_> = json::as_str(raw).ok_or_else(|| meta_err(field, "a string"))?;
    if t.has_lone_surrogate() {
        return Err(meta_err(field, "valid Unicode (it holds a lone surrogate)"));
    }
    Ok(t.decode().into_owned())
}

/// POSIX absolute paths, and Windows drive or UNC paths (the original runs
/// on both).
pub fn is_absolute(p: &str) -> bool {
    let b = p.as_bytes();
    p.starts_with('/')
        || p.starts_with("\\\\")
        || (b.len() >= 3
            && b[0].is_ascii_alphabetic()
            && b[1] == b':'
            && (b[2] == b'\\' || b[2] == b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_line_key_order() {
        let h = SessionHeader::parse(
            r#"{"agentPreset":"explore","id":"c","createdAt":5,"cwd":"/p","parentSession":"p","seedLength":5,"origin":"subagent","delegationDepth":1}"#,
            HeaderSource::Host,
        )
        .unwrap();
        assert_eq!(
            h.to_jsonl_line(),
            r#"{"type":"session","version":0,"id":"c","createdAt":5,"cwd":"/p","parentSession":"p","seedLength":5,"origin":"subagent","delegationDepth":1,"agentPreset":"explore"}"#
        );
        let plain = SessionHeader::new("x", 1);
        assert_eq!(
            plain.to_jsonl_line(),
            r#"{"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":0}"#
        );
        assert_eq!(plain.to_json(), r#"{"version":0,"id":"x","createdAt":1}"#);
        let back = SessionHeader::parse(&plain.to_jsonl_line(), HeaderSource::JsonlLine).unwrap();
        assert_eq!(back.delegation_depth, Some(0));
    }

    #[test]
    fn validation_messages() {
        let cases = [
            (
                r#"{"id":"a","createdAt":1.5}"#,
                "session metadata createdAt must be a non-negative safe integer",
            ),
            (
                r#"{"id":"a","createdAt":-1}"#,
                "session metadata createdAt must be a non-negative safe integer",
            ),
            (
                r#"{"id":"a","createdAt":9007199254740992}"#,
                "session metadata createdAt must be a non-negative safe integer",
            ),
            (
                r#"{"id":""}"#,
                "session metadata id must be a non-empty string",
            ),
            (
                r#"{"createdAt":1}"#,
                "session metadata id must be a non-empty string",
            ),
            (
                r#"{"id":"a","cwd":"rel/path"}"#,
                "session metadata cwd must be an absolute path string",
            ),
            (
                r#"{"id":"a","origin":"x"}"#,
                "session metadata origin must be \"subagent\" when present",
            ),
            (
                r#"{"id":"a","seedLength":-2}"#,
                "session metadata seedLength must be a non-negative safe integer",
            ),
            (
                r#"{"id":"a","delegationDepth":0.5}"#,
                "session metadata delegationDepth must be a non-negative safe integer",
            ),
            (
                r#"{"id":"a","sandboxMode":"x"}"#,
                "retired field sandboxMode",
            ),
            (
                r#"{"id":"a","approvalPolicy":"x"}"#,
                "retired field approvalPolicy",
            ),
            (r#"{"id":"a","bogus":1}"#, "unknown key \"bogus\""),
            (
                r#"{"id":"a","parentSession":3}"#,
                "session metadata parentSession must be a string",
            ),
            (r#"{"id":"\ud800"}"#, "lone surrogate"),
            ("[]", "not a JSON object"),
        ];
        for (text, want) in cases {
            let e = SessionHeader::parse(text, HeaderSource::Host).unwrap_err();
            assert!(e.to_string().contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn versions_are_refused_with_direction() {
        let e = SessionHeader::parse(r#"{"id":"v","version":1}"#, HeaderSource::Host).unwrap_err();
        assert_eq!(
            e.to_string(),
            "session \"v\" uses log format v1, but this harness reads only v0: the log was written by a newer harness \u{2014} upgrade the harness to open it"
        );
        let e = version_refusal("v", "-1", Some("/x"));
        assert!(e.to_string().ends_with(
            "older than the supported v0, and this build ships no upgrade path for it (raw log: /x)"
        ));
        assert_eq!(
            SessionHeader::peek_id_version(r#"{"type":"session","version":3,"id":"q"}"#),
            Some(("q".into(), "3".into()))
        );
    }

    #[test]
    fn foreign_versions_parse_only_when_asked() {
        let line = r#"{"type":"session","version":1,"id":"v","createdAt":1,"delegationDepth":0}"#;
        assert!(SessionHeader::parse(line, HeaderSource::JsonlLine).is_err());
        let h = SessionHeader::parse_any_version(line, HeaderSource::JsonlLine).unwrap();
        assert_eq!(h.version, 1);
        assert_eq!(h.to_jsonl_line(), line);
    }

    #[test]
    fn lenient_header_line_needs_each_condition_of_is_header_line() {
        let line = |fields: &str| format!("{{{fields}}}");
        let full = r#""type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0"#;
        let h = SessionHeader::parse_line_lenient(&line(full))
            .unwrap()
            .unwrap();
        assert!(h.invalid.is_none());
        // Each condition failing alone: not a header line.
        for fields in [
            r#""type":"sessions","version":0,"id":"a","createdAt":1,"delegationDepth":0"#,
            r#""type":"session","version":"0","id":"a","createdAt":1,"delegationDepth":0"#,
            r#""type":"session","version":0,"id":1,"createdAt":1,"delegationDepth":0"#,
            r#""type":"session","version":0,"id":"a","createdAt":-1,"delegationDepth":0"#,
            r#""type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0.5"#,
            r#""type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0,"origin":"user""#,
            r#""type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0,"agentPreset":1"#,
        ] {
            assert_eq!(
                SessionHeader::parse_line_lenient(&line(fields)).unwrap(),
                None,
                "{fields}"
            );
        }
        // A header line that fails full validation is kept as written.
        let kept = SessionHeader::parse_line_lenient(&line(&format!(r#"{full},"cwd":"rel""#)))
            .unwrap()
            .unwrap();
        assert!(kept.problem().unwrap().contains("cwd"));
        assert_eq!(
            kept.to_json(),
            r#"{"version":0,"id":"a","createdAt":1,"cwd":"rel","delegationDepth":0}"#
        );
        // Either retired field alone is refused.
        for retired in [r#""sandboxMode":"x""#, r#""approvalPolicy":"x""#] {
            let e =
                SessionHeader::parse_line_lenient(&line(&format!("{full},{retired}"))).unwrap_err();
            assert!(e.to_string().contains("retired"), "{retired}: {e}");
        }
    }

    #[test]
    fn absolute_paths_are_posix_drive_or_unc() {
        for p in ["/", "/home/a", "\\\\server\\share", "C:\\", "c:/x", "Z:\\w"] {
            assert!(is_absolute(p), "{p}");
        }
        for p in [
            "", "rel", "./a", "\\x", "C:", "C:x", "1:\\x", "CC\\x", "C;/x", "C:|", "é:/x",
        ] {
            assert!(!is_absolute(p), "{p}");
        }
    }

    #[test]
    fn jsonl_line_requires_its_fields() {
        for text in [
            r#"{"type":"session","version":0,"id":"a","createdAt":1}"#,
            r#"{"type":"session","id":"a","createdAt":1,"delegationDepth":0}"#,
            r#"{"version":0,"id":"a","createdAt":1,"delegationDepth":0}"#,
            r#"{"type":"turn/start","version":0,"id":"a","createdAt":1,"delegationDepth":0}"#,
        ] {
            assert!(
                SessionHeader::parse(text, HeaderSource::JsonlLine).is_err(),
                "{text}"
            );
        }
        // A host header without `createdAt` is created now.
        let before = now_ms() as u64;
        let created = SessionHeader::parse(r#"{"id":"a"}"#, HeaderSource::Host)
            .unwrap()
            .created_at;
        let after = now_ms() as u64;
        assert!(
            (before..=after).contains(&created) && before > 1_600_000_000_000,
            "{before} <= {created} <= {after}"
        );
    }
}
