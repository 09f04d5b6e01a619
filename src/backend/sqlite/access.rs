//! POSIX ownership and permission checks on the database file and its parent
//! directory (SPEC §4.1), and creation of a new database file with mode 0600.
//!
//! A session database holds every conversation of a user, so it must be
//! private: the file and its parent directory owned by the current user, the
//! parent not group- or world-writable (nobody else can swap the file), the
//! file without any group/other permission bits. Symbolic links and
//! non-regular files are refused.

use std::fs;
use std::io::ErrorKind as IoKind;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::model::json::quote;

/// The effective uid of this process (`geteuid`, through rustix: no
/// `libc` call and no `unsafe` here).
pub fn current_uid() -> Result<u32> {
    Ok(rustix::process::geteuid().as_raw())
}

/// The directory holding `path` (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// An `io` error of `what` (e.g. "cannot inspect session database") at
/// `path`, with the system's reason.
fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::io(format!("{what} {}", quote(&path.display().to_string())), e)
}

fn file_refusal(path: &Path) -> Error {
    Error::invalid(format!(
        "session database {} must be owned by the current user and accessible only by that user",
        quote(&path.display().to_string())
    ))
}

fn parent_refusal(parent: &Path) -> Error {
    Error::invalid(format!(
        "session database parent {} must be owned by the current user and not group/world-writable",
        quote(&parent.display().to_string())
    ))
}

/// Whether a directory is private enough to hold a store's files: owned
/// by `uid`, and nobody else may create, rename or remove entries in it
/// (not group- or world-writable).
pub fn is_private_dir(meta: &fs::Metadata, uid: u32) -> bool {
    meta.uid() == uid && meta.mode() & 0o022 == 0
}

/// Whether the directory holding `path` is there: `Ok(false)` when it is
/// missing (the first write makes it). Any other failed lookup (a directory
/// on the way this user may not search, a name too long, a loop of links)
/// is an error: a store that cannot be reached is not an empty one.
pub fn parent_is_there(path: &Path) -> Result<bool> {
    let parent = parent_dir(path);
    match fs::metadata(&parent) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == IoKind::NotFound => Ok(false),
        Err(e) => Err(io_error(
            "cannot inspect session database parent",
            &parent,
            e,
        )),
    }
}

/// Checks the parent directory of the database file.
pub fn check_parent(path: &Path, uid: u32) -> Result<()> {
    let parent = parent_dir(path);
    let meta = fs::metadata(&parent)
        .map_err(|e| io_error("cannot inspect session database parent", &parent, e))?;
    if !meta.is_dir() {
        return Err(Error::invalid(format!(
            "session database parent {} is not a directory",
            quote(&parent.display().to_string())
        )));
    }
    if !is_private_dir(&meta, uid) {
        return Err(parent_refusal(&parent));
    }
    Ok(())
}

/// What [`prepare_file`] found or did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileState {
    /// The file existed and passed the checks.
    Existing,
    /// The file did not exist and was created empty with mode 0600.
    Created,
}

/// Checks an existing database file (`lstat`: a symlink is refused, not
/// followed). `Ok(false)` when there is no file.
pub fn check_existing(path: &Path, uid: u32) -> Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(meta) => check_file_meta(path, &meta, uid).map(|()| true),
        Err(e) if e.kind() == IoKind::NotFound => Ok(false),
        Err(e) => Err(io_error("cannot inspect session database", path, e)),
    }
}

/// Checks the database file (`lstat`: a symlink is refused, not followed)
/// or, when it does not exist, creates it empty with mode 0600 so SQLite
/// never creates it with the process umask.
pub fn prepare_file(path: &Path, uid: u32) -> Result<FileState> {
    match fs::symlink_metadata(path) {
        Ok(meta) => {
            check_file_meta(path, &meta, uid)?;
            Ok(FileState::Existing)
        }
        Err(e) if e.kind() == IoKind::NotFound => {
            match fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
            {
                Ok(f) => {
                    f.sync_all()
                        .map_err(|e| io_error("cannot sync new session database", path, e))?;
                    // The umask can only remove bits; make the mode exact anyway.
                    let meta = f
                        .metadata()
                        .map_err(|e| io_error("cannot inspect new session database", path, e))?;
                    check_file_meta(path, &meta, uid)?;
                    // The new name must be durable before anything is
                    // acknowledged in the file (D13).
                    crate::backend::dirs::fsync_dir(&parent_dir(path))?;
                    Ok(FileState::Created)
                }
                // Another opener created it between our lstat and open.
                Err(e) if e.kind() == IoKind::AlreadyExists => prepare_file(path, uid),
                Err(e) => Err(io_error("cannot create session database", path, e)),
            }
        }
        Err(e) => Err(io_error("cannot inspect session database", path, e)),
    }
}

fn check_file_meta(path: &Path, meta: &fs::Metadata, uid: u32) -> Result<()> {
    let ft = meta.file_type();
    if ft.is_symlink() {
        return Err(Error::invalid(format!(
            "session database {} is a symbolic link; open the real file instead",
            quote(&path.display().to_string())
        )));
    }
    if !ft.is_file() {
        return Err(Error::invalid(format!(
            "session database {} is not a regular file",
            quote(&path.display().to_string())
        )));
    }
    if meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(file_refusal(path));
    }
    check_companions(path)
}

/// The files SQLite opens beside a database by name.
const COMPANIONS: [&str; 3] = ["-journal", "-wal", "-shm"];

/// The companion file `suffix` (`-journal`, `-wal`, `-shm`) of the database at
/// `path`: its name with the suffix appended.
pub fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Refuses to create a database whose name leaves no room for SQLite's
/// companion files: `-journal`, `-wal` and `-shm` are added to the name,
/// and the result must fit the file system's limit on a name too. Such a
/// database could be created, never written.
pub fn check_name_room(path: &Path) -> Result<()> {
    let Some(name) = path.file_name() else {
        return Ok(());
    };
    let max = rustix::fs::statvfs(parent_dir(path)).map_or(255, |v| v.f_namemax);
    let longest = COMPANIONS.iter().map(|s| s.len()).max().unwrap_or(0);
    let room = max.saturating_sub(longest as u64);
    if name.len() as u64 > room {
        return Err(Error::invalid(format!(
            "session database name {} is {} bytes long: SQLite adds \"-journal\" to it for a file of its own, and names on this file system are at most {max} bytes; use a name of at most {room} bytes",
            quote(&name.to_string_lossy()),
            name.len()
        )));
    }
    Ok(())
}

/// Refuses a companion file of the database at `path` that exists and is
/// not a regular file: SQLite opens it by name, following a link, and its
/// hot-journal check opens `-journal` read-only, which waits for good on
/// a FIFO. (An `lstat` each; a missing companion is the usual case.)
fn check_companions(path: &Path) -> Result<()> {
    for suffix in COMPANIONS {
        let companion = companion(path, suffix);
        match fs::symlink_metadata(&companion) {
            Ok(meta) if !meta.is_file() => {
                return Err(Error::invalid(format!(
                    "{} beside session database {} is not a regular file (a link, FIFO, socket or directory was put there; SQLite would open it as part of the database): remove it",
                    quote(&companion.display().to_string()),
                    quote(&path.display().to_string())
                )));
            }
            Ok(_) => {}
            Err(e) if e.kind() == IoKind::NotFound => {}
            Err(e) => {
                return Err(io_error("cannot inspect", &companion, e));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_uid_matches_a_file_we_create() {
        let dir = std::env::temp_dir().join(format!("dsh-uid-{}", std::process::id()));
        let _ = fs::create_dir(&dir);
        let f = dir.join("x");
        fs::write(&f, b"").unwrap();
        let owner = fs::metadata(&f).unwrap().uid();
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(current_uid().unwrap(), owner);
    }

    #[test]
    fn bare_file_name_has_dot_parent() {
        assert_eq!(parent_dir(Path::new("x.db")), PathBuf::from("."));
        assert_eq!(parent_dir(Path::new("/a/x.db")), PathBuf::from("/a"));
    }
}
