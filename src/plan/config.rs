//! The controller's configuration `{section}` (SPEC §7).

use crate::error::{Error, Result};
use crate::model::json::{self, Kind};

use super::js_text::js_trim;

/// Deployment-owned plan guidance: `section` is the prompt section included
/// in each model request while plan mode is active.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanModeConfig {
    /// The guidance text, kept verbatim (not trimmed).
    pub section: String,
}

impl PlanModeConfig {
    /// A config from a section text, checked like [`PlanModeConfig::parse`]
    /// checks it (a blank section is refused).
    pub fn new(section: impl Into<String>) -> Result<Self> {
        let section = section.into();
        if js_trim(&section).is_empty() {
            return Err(Error::invalid("PlanModeConfig needs a non-empty `section`"));
        }
        Ok(PlanModeConfig { section })
    }

    /// Parses and validates the config JSON text, with the original's checks
    /// in its order:
    /// 1. `section` must be a string: `PlanModeConfig needs a string \`section\``;
    /// 2. it must not be blank (JavaScript `trim`):
    ///    `PlanModeConfig needs a non-empty \`section\``;
    /// 3. no other key: `PlanModeConfig has unknown key(s) <k> — config is { section }`,
    ///    the keys joined with `", "` in JavaScript `Object.keys` order
    ///    (array-index keys first, ascending; then first-seen order; a repeated
    ///    key counts once).
    ///
    /// Text that is not JSON, or JSON that is not an object, is refused with
    /// its own message. A repeated `section` key takes the last value, like
    /// `JSON.parse`.
    pub fn parse(text: &str) -> Result<Self> {
        json::JsonText::parse_verbatim(text)
            .map_err(|e| Error::invalid(format!("PlanModeConfig is not valid JSON: {e}")))?;
        if json::kind_of(text) != Some(Kind::Object) {
            return Err(Error::invalid(
                "PlanModeConfig must be a JSON object: { \"section\": \"<guidance text>\" }",
            ));
        }
        let fields = json::object_fields(text.trim())
            .map_err(|e| Error::invalid(format!("PlanModeConfig is not valid JSON: {e}")))?;

        let mut section_raw = None;
        let mut keys: Vec<String> = Vec::new();
        for (key, raw) in &fields {
            let key = key.decode();
            if key == "section" {
                section_raw = Some(*raw);
            }
            if !keys.iter().any(|k| *k == key) {
                keys.push(key.into_owned());
            }
        }

        let section = match section_raw.and_then(json::as_str) {
            Some(s) => s.decode().into_owned(),
            None => return Err(Error::invalid("PlanModeConfig needs a string `section`")),
        };
        if js_trim(&section).is_empty() {
            return Err(Error::invalid("PlanModeConfig needs a non-empty `section`"));
        }
        let mut unknown: Vec<String> = keys.into_iter().filter(|k| k != "section").collect();
        if !unknown.is_empty() {
            order_like_object_keys(&mut unknown);
            return Err(Error::invalid(format!(
                "PlanModeConfig has unknown key(s) {} — config is {{ section }}",
                unknown.join(", ")
            )));
        }
        Ok(PlanModeConfig { section })
    }
}

/// Reorders keys the way JavaScript's `Object.keys` lists them: array-index
/// keys (canonical integers below 2^32 − 1) ascending, then the rest in
/// insertion order (the sort is stable).
fn order_like_object_keys(keys: &mut [String]) {
    keys.sort_by_key(|k| match array_index(k) {
        Some(i) => (0, i),
        None => (1, 0),
    });
}

fn array_index(key: &str) -> Option<u64> {
    if key.is_empty() || (key.len() > 1 && key.starts_with('0')) {
        return None;
    }
    if !key.bytes().all(|b| b.is_ascii_digit()) || key.len() > 10 {
        return None;
    }
    let v: u64 = key.parse().ok()?;
    (v < u32::MAX as u64).then_some(v)
}
