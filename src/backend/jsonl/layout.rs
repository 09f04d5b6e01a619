//! Where JSONL sessions live on disk (SPEC §3.1): id escaping, project keys,
//! artifact names, and the directory walks that find sessions.
//!
//! ```text
//! <root>/--<project-key>--/<escaped-id>/session.jsonl[.zstd]
//! ```

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::model::json::quote;

/// The project directory of sessions without a cwd.
pub const NO_CWD_DIR: &str = "_no-cwd";

/// Longest project key (before the `--…--` wrapping), in characters.
pub const MAX_PROJECT_KEY_CHARS: usize = 251;

/// How a root stores its logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// `session.jsonl.zstd`: one Zstandard frame per durable batch.
    Zstd,
    /// `session.jsonl`: plain JSONL text.
    None,
}

impl Compression {
    /// The configuration name (`"zstd"` / `"none"`).
    pub fn name(self) -> &'static str {
        match self {
            Compression::Zstd => "zstd",
            Compression::None => "none",
        }
    }

    /// The log file name in a session directory.
    pub fn file_name(self) -> &'static str {
        match self {
            Compression::Zstd => "session.jsonl.zstd",
            Compression::None => "session.jsonl",
        }
    }

    /// The suffix named in mixed-encoding errors.
    fn suffix(self) -> &'static str {
        match self {
            Compression::Zstd => ".jsonl.zstd",
            Compression::None => ".jsonl",
        }
    }

    fn other(self) -> Compression {
        match self {
            Compression::Zstd => Compression::None,
            Compression::None => Compression::Zstd,
        }
    }
}

/// The longest file name common file systems accept.
pub const MAX_SEGMENT_BYTES: usize = 255;

fn is_safe_unit(u: u16) -> bool {
    matches!(u, 0x30..=0x39 | 0x41..=0x5A | 0x61..=0x7A | 0x2E | 0x5F | 0x2D)
}

fn push_escape(out: &mut String, u: u16) {
    use std::fmt::Write as _;
    let _ = write!(out, "~{u:04X}");
}

/// Escapes a session id into one path segment (SPEC §3.1): per UTF-16 code
/// unit, `[A-Za-z0-9._-]` stays and every other unit (including `~`) becomes
/// `~HHHH`; the whole ids `.` and `..` become `~002E` and `~002E~002E`.
pub fn escape_id(id: &str) -> Result<String> {
    escape_units(id.encode_utf16(), || crate::model::json::quote(id))
}

/// [`escape_id`] of an id given as UTF-16 code units, which may hold lone
/// surrogates (an id the original's create accepted; see
/// [`SessionHeader::stored_id_utf16`](crate::model::header::SessionHeader::stored_id_utf16)).
pub fn escape_id_utf16(units: &[u16]) -> Result<String> {
    escape_units(units.iter().copied(), || {
        crate::model::json::quote(&String::from_utf16_lossy(units))
    })
}

fn escape_units(units: impl Iterator<Item = u16>, shown: impl Fn() -> String) -> Result<String> {
    let mut out = String::new();
    for u in units {
        if is_safe_unit(u) {
            out.push(u as u8 as char);
        } else {
            push_escape(&mut out, u);
        }
    }
    match out.as_str() {
        "" => return Err(Error::invalid("session id must be a non-empty string")),
        "." => return Ok("~002E".to_string()),
        ".." => return Ok("~002E~002E".to_string()),
        _ => {}
    }
    if out.len() > MAX_SEGMENT_BYTES {
        return Err(Error::invalid(format!(
            "session id {} is too long for a JSONL root: it escapes to a {}-byte directory name, over the {MAX_SEGMENT_BYTES} bytes a file name may hold",
            shown(),
            out.len()
        )));
    }
    Ok(out)
}

/// The UTF-16 code units an escaped path segment stands for, when it is
/// the canonical [`escape_id`] spelling of some id; `None` otherwise.
pub fn unescape_units(segment: &str) -> Option<Vec<u16>> {
    let mut units: Vec<u16> = Vec::with_capacity(segment.len());
    let bytes = segment.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'~' => {
                let hex = segment.get(i + 1..i + 5)?;
                if !hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
                {
                    return None;
                }
                units.push(u16::from_str_radix(hex, 16).ok()?);
                i += 5;
            }
            b => {
                units.push(u16::from(b));
                i += 1;
            }
        }
    }
    // Only the canonical spelling counts (escaping is injective).
    (escape_id_utf16(&units).ok()? == segment).then_some(units)
}

/// Whether the session directory name `segment` escapes an id that holds a
/// lone surrogate and reads as `id` with U+FFFD in each lone surrogate's
/// place: how such a session is named through the API (Rust strings and
/// the C ABI carry valid Unicode only; DIFFERENCES, exception 2).
fn is_unpaired_spelling_of(segment: &str, id: &str) -> bool {
    if !segment.contains("~D") {
        return false;
    }
    unescape_units(segment).is_some_and(|units| {
        String::from_utf16(&units).is_err() && String::from_utf16_lossy(&units) == id
    })
}

/// The project directory name of a cwd (SPEC §3.1): `/`, `\` and `:` runs
/// become one `-`, unsafe units are escaped like ids, leading `-` are
/// stripped (empty → `root`), the key is cut to 251 characters and wrapped
/// as `--<key>--`. Without a cwd: `_no-cwd`.
pub fn project_dir_name(cwd: Option<&str>) -> String {
    let Some(cwd) = cwd else {
        return NO_CWD_DIR.to_string();
    };
    let mut key = String::with_capacity(cwd.len() + 4);
    let mut in_sep = false;
    for u in cwd.encode_utf16() {
        if matches!(u, 0x2F | 0x5C | 0x3A) {
            if !in_sep {
                key.push('-');
            }
            in_sep = true;
            continue;
        }
        in_sep = false;
        if is_safe_unit(u) {
            key.push(u as u8 as char);
        } else {
            push_escape(&mut key, u);
        }
    }
    let key = key.trim_start_matches('-');
    let key = if key.is_empty() { "root" } else { key };
    // Every character of the key is ASCII, so bytes = characters.
    let key = &key[..key.len().min(MAX_PROJECT_KEY_CHARS)];
    format!("--{key}--")
}

/// The session directory of `id` under `cwd` (relative to the root).
pub fn session_dir_rel(id: &str, cwd: Option<&str>) -> Result<PathBuf> {
    Ok(PathBuf::from(project_dir_name(cwd)).join(escape_id(id)?))
}

fn layout_err(message: String) -> Error {
    Error::invalid(message)
}

/// The error for a session file of the other encoding.
pub fn wrong_encoding_error(path: &Path, configured: Compression) -> Error {
    layout_err(format!(
        "session artifact {} uses {}, but this backend is configured for compression {}; use a separate root or select the matching compression mode",
        quote(&path.display().to_string()),
        configured.other().suffix(),
        quote(configured.name())
    ))
}

/// The error for an obsolete `<project>/<x>.jsonl[.zstd]` file.
pub fn flat_layout_error(path: &Path) -> Error {
    layout_err(format!(
        "session artifact {} uses the unsupported flat-file layout; use a separate root or move it into a project/session directory before loading",
        quote(&path.display().to_string())
    ))
}

fn is_flat_artifact_name(name: &str) -> bool {
    name.ends_with(".jsonl") || name.ends_with(".jsonl.zstd")
}

pub(crate) fn io_err(what: &str, path: &Path, e: io::Error) -> Error {
    Error::io(format!("{what} {}", path.display()), e)
}

/// Directory entries (name, is_dir, is_file), following no symlinks. A
/// missing directory reads as empty.
pub(crate) fn read_dir_entries(dir: &Path) -> Result<Vec<(String, bool, bool)>> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err("cannot read directory", dir, e)),
    };
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| io_err("cannot read directory", dir, e))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue; // not a name this layout produces
        };
        let ft = entry
            .file_type()
            .map_err(|e| io_err("cannot stat entry of", dir, e))?;
        out.push((name, ft.is_dir(), ft.is_file()));
    }
    Ok(out)
}

/// Checks a project directory for flat-layout artifacts.
pub(crate) fn check_project_dir(project: &Path) -> Result<Vec<String>> {
    let mut sessions = Vec::new();
    for (name, is_dir, is_file) in read_dir_entries(project)? {
        if is_dir {
            sessions.push(name);
        } else if is_file && is_flat_artifact_name(&name) {
            return Err(flat_layout_error(&project.join(name)));
        }
    }
    Ok(sessions)
}

/// The log file of a session directory, if any, refusing the other encoding.
pub(crate) fn session_file(dir: &Path, compression: Compression) -> Result<Option<PathBuf>> {
    let other = dir.join(compression.other().file_name());
    if fs::symlink_metadata(&other).is_ok() {
        return Err(wrong_encoding_error(&other, compression));
    }
    let file = dir.join(compression.file_name());
    match fs::symlink_metadata(&file) {
        Ok(m) if m.is_file() => Ok(Some(file)),
        Ok(m) if m.file_type().is_symlink() => Err(super::nofollow::link_error(&file)),
        Ok(_) => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("cannot stat", &file, e)),
    }
}

/// The project directories of a root (every subdirectory but the writer
/// lock directory and the catalog's cache directory, which hold no session).
pub(crate) fn project_dirs(root: &Path) -> Result<Vec<String>> {
    Ok(read_dir_entries(root)?
        .into_iter()
        .filter(|(name, is_dir, _)| {
            *is_dir
                && name != crate::backend::writer_lock::LOCK_DIR_NAME
                && name != super::delete::TRASH_DIR_NAME
                && name != crate::backend::catalog::CACHE_DIR_NAME
        })
        .map(|(n, _, _)| n)
        .collect())
}

/// The session directories named after `id` under any project of `root`
/// (the id alone does not name the project). Costs one readdir of the root
/// and one stat per project directory; each project holding a candidate is
/// also checked for flat-layout files (a readdir of the project, remembered
/// while the directory is unchanged: [`super::project_check`]), and when there is no candidate, a
/// flat `<project>/<id>.jsonl[.zstd]` file is refused rather than ignored.
pub(crate) fn find_session_dirs(
    root: &Path,
    id: &str,
    checks: &super::project_check::ProjectChecks,
) -> Result<Vec<PathBuf>> {
    let escaped = escape_id(id)?;
    let mut found = Vec::new();
    let projects = project_dirs(root)?;
    for project in &projects {
        let dir = root.join(project).join(&escaped);
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => found.push(dir),
            // A session directory planted as a link is refused, not
            // followed (D5). (A project directory that is a link is no
            // project of this root; see `check_header_path` for aliases.)
            Ok(m) if m.file_type().is_symlink() => {
                return Err(super::nofollow::link_error(&dir));
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("cannot stat", &dir, e)),
        }
    }
    if id.contains('\u{FFFD}') {
        // An id with a lone surrogate is named by its U+FFFD spelling: the
        // directories it may stand for are looked for (one readdir per
        // project, only for ids holding U+FFFD).
        let mut twins = Vec::new();
        for project in &projects {
            for (name, is_dir, _) in read_dir_entries(&root.join(project))? {
                if is_dir && is_unpaired_spelling_of(&name, id) {
                    twins.push(root.join(project).join(name));
                }
            }
        }
        if !twins.is_empty() && (twins.len() + found.len() > 1) {
            return Err(unpaired_ambiguity(id, &found, &twins));
        }
        found.extend(twins);
    }
    for dir in &found {
        checks.check(dir.parent().expect("session dir has a project"))?;
    }
    if found.is_empty() {
        for project in &projects {
            for suffix in [".jsonl", ".jsonl.zstd"] {
                let flat = root.join(project).join(format!("{escaped}{suffix}"));
                if fs::symlink_metadata(&flat).is_ok_and(|m| m.is_file()) {
                    return Err(flat_layout_error(&flat));
                }
            }
        }
    }
    Ok(found)
}

/// An id given with U+FFFD that several stored ids spell (lone surrogates
/// that differ, or the id itself beside one with a lone surrogate).
fn unpaired_ambiguity(id: &str, exact: &[PathBuf], twins: &[PathBuf]) -> Error {
    let dirs: Vec<String> = exact
        .iter()
        .chain(twins)
        .map(|d| quote(&d.display().to_string()))
        .collect();
    Error::conflict(format!(
        "session id {} names {} stored sessions: ids that differ only in lone surrogates (each read as U+FFFD) are stored in {}; such ids cannot be told apart through this API — read the files directly or move all but one to another root",
        quote(id),
        dirs.len(),
        dirs.join(", ")
    ))
}

/// Two session directories carry the same id.
pub(crate) fn duplicate_error(id: &str, a: &Path, b: &Path) -> Error {
    Error::corruption(format!(
        "session id {} is stored twice, in {} and {}; a root must hold each id once: move one of them to another root",
        quote(id),
        quote(&a.display().to_string()),
        quote(&b.display().to_string())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_escaping_examples() {
        assert_eq!(escape_id("a/b ~é").unwrap(), "a~002Fb~0020~007E~00E9");
        assert_eq!(escape_id("😀").unwrap(), "~D83D~DE00");
        assert_eq!(escape_id(".").unwrap(), "~002E");
        assert_eq!(escape_id("..").unwrap(), "~002E~002E");
        assert_eq!(escape_id("...").unwrap(), "...");
        assert_eq!(escape_id("a.b").unwrap(), "a.b");
        assert_eq!(escape_id("MiXeD.Case_id-123").unwrap(), "MiXeD.Case_id-123");
        assert_eq!(escape_id("~tilde~").unwrap(), "~007Etilde~007E");
        assert_eq!(escape_id("a/b\\c:d").unwrap(), "a~002Fb~005Cc~003Ad");
        assert!(escape_id("").is_err());
    }

    #[test]
    fn project_key_examples() {
        assert_eq!(
            project_dir_name(Some("/home/me/my proj")),
            "--home-me-my~0020proj--"
        );
        assert_eq!(project_dir_name(Some("/")), "--root--");
        assert_eq!(project_dir_name(Some("/a//b///c/")), "--a-b-c---");
        assert_eq!(project_dir_name(Some("/a-b")), "--a-b--");
        assert_eq!(project_dir_name(Some("/a/b")), "--a-b--");
        assert_eq!(project_dir_name(Some("/var/../srv")), "--var-..-srv--");
        assert_eq!(project_dir_name(Some("C:\\Users\\x")), "--C-Users-x--");
        assert_eq!(
            project_dir_name(Some("/~user-dir~")),
            "--~007Euser-dir~007E--"
        );
        assert_eq!(project_dir_name(None), "_no-cwd");
        let long = format!("/{}", "x".repeat(400));
        let key = project_dir_name(Some(&long));
        assert_eq!(key.len(), 251 + 4);
        // Leading literal dashes are stripped too.
        assert_eq!(project_dir_name(Some("/-x")), "--x--");
    }
}
