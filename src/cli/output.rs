//! Printing: JSON on stdout, errors on stderr, exit codes (SPEC §9), aligned
//! tables and ISO times for human output (progress is [`super::progress`]).

use std::io::Write;

use dsh_persist::model::json;
use dsh_persist::{Error, ErrorKind};

/// Exit code: a usage error (bad flags, bad argument values).
pub const EXIT_USAGE: i32 = 2;
/// Exit code: the session (or store) does not exist.
pub const EXIT_NOT_FOUND: i32 = 3;
/// Exit code: stored data failed validation.
pub const EXIT_CORRUPTION: i32 = 4;
/// Exit code: an intact log this build will not interpret.
pub const EXIT_FORMAT_UNSUPPORTED: i32 = 5;
/// Exit code: anything else (I/O, busy, conflict, …).
pub const EXIT_OTHER: i32 = 1;

/// How a subcommand that did not fail ended.
pub struct Outcome {
    pub code: i32,
}

impl Outcome {
    pub fn ok() -> Outcome {
        Outcome { code: 0 }
    }
}

/// The exit code of an error kind (SPEC §9).
pub fn exit_code(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::InvalidArgument => EXIT_USAGE,
        ErrorKind::NotFound => EXIT_NOT_FOUND,
        ErrorKind::Corruption => EXIT_CORRUPTION,
        ErrorKind::FormatUnsupported => EXIT_FORMAT_UNSUPPORTED,
        _ => EXIT_OTHER,
    }
}

/// Prints `e` on stderr (one JSON object with `--json`, else a line) and
/// returns its exit code.
pub fn report_error(e: &Error, as_json: bool) -> i32 {
    super::progress::clear_all();
    if as_json {
        print_error_json(e.kind().as_str(), &e.to_string());
    } else {
        eprintln!("dsh-persist: error ({}): {e}", e.kind().as_str());
    }
    exit_code(e.kind())
}

/// `{"error":{"kind":K,"message":M}}` on stderr.
pub fn print_error_json(kind: &str, message: &str) {
    let mut s = String::from("{\"error\":{\"kind\":");
    json::write_string(&mut s, kind);
    s.push_str(",\"message\":");
    json::write_string(&mut s, message);
    s.push_str("}}\n");
    let _ = std::io::stderr().write_all(s.as_bytes());
}

/// Writes `text` and a newline to stdout. A closed pipe (`| head`) is not
/// an error worth a message.
pub fn print_out(text: &str) {
    super::progress::clear_all();
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = out.write_all(b"\n");
    }
    let _ = out.flush();
}

/// A JSON string literal.
pub fn jstr(s: &str) -> String {
    json::quote(s)
}

/// A JSON string literal or `null`.
pub fn jstr_opt(s: Option<&str>) -> String {
    s.map_or_else(|| "null".to_string(), json::quote)
}

/// `word` as one shell word: as it is when it holds only safe characters,
/// else single-quoted.
pub fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_.:/@%+=,".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Milliseconds since the epoch as ISO 8601 UTC (`2026-07-26T12:03:15.003Z`).
pub fn iso_time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Terminal columns of `s`: East Asian wide characters and emoji count 2,
/// everything else 1 (enough to align ids and paths in a table).
pub fn display_width(s: &str) -> usize {
    s.chars()
        .map(|c| {
            let c = c as u32;
            let wide = matches!(c,
                0x1100..=0x115F
                | 0x2E80..=0x303E
                | 0x3041..=0x33FF
                | 0x3400..=0x4DBF
                | 0x4E00..=0x9FFF
                | 0xA000..=0xA4CF
                | 0xAC00..=0xD7A3
                | 0xF900..=0xFAFF
                | 0xFE30..=0xFE4F
                | 0xFF00..=0xFF60
                | 0xFFE0..=0xFFE6
                | 0x1F300..=0x1F64F
                | 0x1F680..=0x1F6FF
                | 0x1F900..=0x1F9FF
                | 0x20000..=0x3FFFD);
            if wide { 2 } else { 1 }
        })
        .sum()
}

/// An aligned text table: a header row, then rows; columns padded to the
/// widest cell (in terminal columns), separated by two spaces.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| display_width(h)).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(display_width(cell));
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut l = String::new();
        for (i, c) in cells.enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            l.push_str(c);
            if i + 1 < widths.len() {
                l.extend(std::iter::repeat_n(' ', widths[i] - display_width(c)));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&mut headers.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_time(1_785_097_395_003), "2026-07-26T20:23:15.003Z");
        assert_eq!(iso_time(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso_time(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn tables_align_by_terminal_columns() {
        let t = table(
            &["ID", "CWD"],
            &[
                vec!["会话".into(), "/a".into()],
                vec!["abcd".into(), "-".into()],
            ],
        );
        assert_eq!(t, "ID    CWD\n会话  /a\nabcd  -\n");
        assert_eq!(display_width("a🚀ü"), 4);
    }

    #[test]
    fn exit_codes() {
        assert_eq!(exit_code(ErrorKind::InvalidArgument), 2);
        assert_eq!(exit_code(ErrorKind::NotFound), 3);
        assert_eq!(exit_code(ErrorKind::Corruption), 4);
        assert_eq!(exit_code(ErrorKind::FormatUnsupported), 5);
        assert_eq!(exit_code(ErrorKind::Io), 1);
        assert_eq!(exit_code(ErrorKind::Conflict), 1);
    }
}
