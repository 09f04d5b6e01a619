//! Small, allocation-free readers over JSON object text used by the model
//! rules: pick a few top-level fields (stopping as soon as they are found),
//! and compare two values structurally.
//!
//! The rules run on every load of logs with 100k+ events, so they read only
//! the fields they need straight from the stored text.

use std::borrow::Cow;
use std::collections::HashMap;

use super::json::{self, JsonError, JsonStr, Kind, Scanner};

/// Sentinel used to stop a [`Scanner::object`] walk early.
const STOP: &str = "\u{0}stop";

/// The raw values of `keys` in the object text `text` (first occurrence of
/// each). The scan stops once every key was seen, so leading fields cost
/// almost nothing. `None` when `text` is not an object.
pub fn pick<'a, const N: usize>(text: &'a str, keys: [&str; N]) -> Option<[Option<&'a str>; N]> {
    let mut out: [Option<&'a str>; N] = [None; N];
    let mut left = N;
    let mut s = Scanner::new(text);
    let res = s.object(|k, s| {
        let v = s.value()?;
        if let Some(i) = keys.iter().position(|key| k.eq_str(key)) {
            if out[i].is_none() {
                out[i] = Some(v);
                left -= 1;
                if left == 0 {
                    return Err(JsonError::Syntax { at: 0, what: STOP });
                }
            }
        }
        Ok(())
    });
    match res {
        Ok(()) => Some(out),
        Err(JsonError::Syntax { what, .. }) if what == STOP => Some(out),
        Err(_) => None,
    }
}

/// The raw value of one top-level field (stops at the first occurrence).
pub fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    pick(text, [key]).and_then(|[v]| v)
}

/// Whether `raw` is a JSON string equal to `want`.
pub fn str_is(raw: Option<&str>, want: &str) -> bool {
    raw.and_then(json::as_str).is_some_and(|s| s.eq_str(want))
}

/// Whether `raw` is a non-empty JSON string.
pub fn is_nonempty_str(raw: Option<&str>) -> bool {
    raw.and_then(json::as_str).is_some_and(|s| !s.is_empty())
}

/// Whether `raw` is a value of the given kind.
pub fn is_kind(raw: Option<&str>, kind: Kind) -> bool {
    raw.and_then(json::kind_of) == Some(kind)
}

/// The decoded string value of `raw`, when it is a string.
pub fn string(raw: Option<&str>) -> Option<String> {
    raw.and_then(json::as_str).map(|s| s.decode().into_owned())
}

/// Whether an array text is `[]`.
pub fn is_empty_array(raw: &str) -> bool {
    let t = raw.trim();
    t.starts_with('[') && t[1..].trim_start().starts_with(']')
}

/// Each key's first value among an object's `fields` ([`json::object_fields`]),
/// by decoded key: what `fields.iter().find(|(k, _)| k.eq_str(key))`
/// finds, by hash, so comparing two objects of many keys is not a search of
/// one object per key of the other (a stored object of 40 000 keys cost
/// seconds).
pub fn first_values<'a>(fields: &[(JsonStr<'a>, &'a str)]) -> HashMap<Cow<'a, str>, &'a str> {
    let mut out = HashMap::with_capacity(fields.len());
    for (k, v) in fields {
        out.entry(k.decode()).or_insert(*v);
    }
    out
}

/// Structural equality of two JSON value texts, as a deep equality over
/// parsed values would decide: object key order is ignored, strings compare
/// decoded, numbers compare by value.
pub fn json_equal(a: &str, b: &str) -> bool {
    // Iterative (a work list of value pairs): stored data may nest
    // thousands of levels, and this must not grow the thread stack.
    let mut work: Vec<(&str, &str)> = vec![(a, b)];
    while let Some((a, b)) = work.pop() {
        let same = match (json::kind_of(a), json::kind_of(b)) {
            (Some(ka), Some(kb)) if ka == kb => match ka {
                Kind::Object => {
                    let (Ok(fa), Ok(fb)) = (json::object_fields(a), json::object_fields(b)) else {
                        return false;
                    };
                    if fa.len() != fb.len() {
                        return false;
                    }
                    let fb = first_values(&fb);
                    for (k, va) in &fa {
                        match fb.get(k.decode().as_ref()) {
                            Some(vb) => work.push((va, vb)),
                            None => return false,
                        }
                    }
                    true
                }
                Kind::Array => {
                    let (Ok(ia), Ok(ib)) = (json::array_items(a), json::array_items(b)) else {
                        return false;
                    };
                    if ia.len() != ib.len() {
                        return false;
                    }
                    work.extend(ia.into_iter().zip(ib));
                    true
                }
                Kind::String => match (json::as_str(a), json::as_str(b)) {
                    (Some(x), Some(y)) => x.raw() == y.raw() || x.decode() == y.decode(),
                    _ => false,
                },
                Kind::Number => {
                    a.trim() == b.trim()
                        || matches!((json::as_f64(a), json::as_f64(b)), (Some(x), Some(y)) if x == y)
                }
                Kind::Bool | Kind::Null => a.trim() == b.trim(),
            },
            _ => false,
        };
        if !same {
            return false;
        }
    }
    true
}

/// Rewrites an object text field by field: `f` gets each key (raw escaped
/// text) and raw value and returns the text to write for that value, or
/// `None` to drop the field. Returns the new compact object text.
pub fn rewrite_object<'a>(
    text: &'a str,
    mut f: impl FnMut(&str, &'a str) -> Option<String>,
) -> Option<String> {
    let fields = json::object_fields(text).ok()?;
    let mut out = String::with_capacity(text.len() + 32);
    out.push('{');
    let mut first = true;
    for (k, v) in fields {
        if let Some(nv) = f(&k.decode(), v) {
            if !first {
                out.push(',');
            }
            first = false;
            out.push('"');
            out.push_str(k.raw());
            out.push_str("\":");
            out.push_str(&nv);
        }
    }
    out.push('}');
    Some(out)
}

/// Appends `"key":` (key given plain, no escapes needed) after a comma when
/// the object already has fields.
pub fn push_key(out: &mut String, key: &str) {
    if !out.ends_with('{') {
        out.push(',');
    }
    out.push('"');
    out.push_str(key);
    out.push_str("\":");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pick_stops_early_and_reads_firsts() {
        let t = r#"{"turn":1,"step":2,"chunk":{"type":"text-delta"},"turn":9}"#;
        let [turn, step] = pick(t, ["turn", "step"]).unwrap();
        assert_eq!(turn, Some("1"));
        assert_eq!(step, Some("2"));
        // Early stop means trailing garbage is not looked at.
        let [turn] = pick(r#"{"turn":1,"x":"#, ["turn"]).unwrap();
        assert_eq!(turn, Some("1"));
        assert!(pick("[1]", ["a"]).is_none());
        assert_eq!(pick(r#"{"a":1}"#, ["b"]).unwrap(), [None]);
        assert_eq!(field(r#"{"a":"x"}"#, "a"), Some("\"x\""));
    }

    #[test]
    fn string_helpers() {
        assert!(str_is(Some("\"model\""), "model"));
        assert!(!str_is(Some("1"), "model"));
        assert!(is_nonempty_str(Some("\"a\"")));
        assert!(!is_nonempty_str(Some("\"\"")));
        assert!(!is_nonempty_str(None));
        assert!(is_kind(Some("[1]"), Kind::Array));
        assert_eq!(string(Some(r#""a\nb""#)).as_deref(), Some("a\nb"));
        assert!(is_empty_array("[]"));
        assert!(is_empty_array("[ ]"));
        assert!(!is_empty_array("[1]"));
        assert!(!is_empty_array("{}"));
    }

    #[test]
    fn structural_equality() {
        assert!(json_equal(
            r#"{"a":1,"b":[1,"x"]}"#,
            r#"{"b":[1,"x"],"a":1}"#
        ));
        assert!(json_equal(r#""\u0041""#, r#""A""#));
        assert!(json_equal("1.0", "1"));
        assert!(!json_equal(r#"{"a":1}"#, r#"{"a":1,"b":2}"#));
        assert!(!json_equal("[1,2]", "[2,1]"));
        assert!(!json_equal("true", "false"));
        assert!(!json_equal("null", "0"));
    }

    #[test]
    fn rewrite_keeps_order() {
        let t = r#"{"a":1,"b\"q":2,"c":3}"#;
        let out = rewrite_object(t, |k, v| match k {
            "a" => None,
            "c" => Some("[]".into()),
            _ => Some(v.to_string()),
        })
        .unwrap();
        assert_eq!(out, r#"{"b\"q":2,"c":[]}"#);
        let mut s = String::from("{");
        push_key(&mut s, "x");
        s.push('1');
        push_key(&mut s, "y");
        s.push('2');
        s.push('}');
        assert_eq!(s, r#"{"x":1,"y":2}"#);
    }
}
