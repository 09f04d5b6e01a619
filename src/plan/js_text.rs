//! JavaScript's notion of whitespace (`String.prototype.trim`, regex `\s`),
//! which the original uses for every plan-mode text rule.
//!
//! It differs from Rust's `char::is_whitespace`: U+FEFF counts, U+0085 does
//! not.

/// Whether `c` is whitespace or a line terminator for JavaScript.
pub(crate) fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'
            | '\u{000A}'
            | '\u{000B}'
            | '\u{000C}'
            | '\u{000D}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// `s.trim()` as JavaScript computes it.
pub(crate) fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_like_javascript() {
        assert_eq!(js_trim("\u{FEFF} off \u{3000}\n"), "off");
        // NEL is not JavaScript whitespace.
        assert_eq!(js_trim("\u{0085}off"), "\u{0085}off");
        assert_eq!(js_trim("   "), "");
    }
}
