//! Creating directories durably (D13): `mkdir -p` with mode 0700 that
//! fsyncs the parent of every directory on the path it created, or found
//! just created (a `mkdir` that fails with `EEXIST` may have lost a race to
//! another creator whose entry is not durable yet, so the parent is fsynced
//! then too). Directories that already existed before are left alone.

use std::fs::{DirBuilder, File};
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use crate::error::{Error, Result};
use crate::fault;

fn io_err(what: &str, path: &Path, e: io::Error) -> Error {
    Error::io(format!("{what} {}", path.display()), e)
}

/// Fsyncs the directory `dir`.
pub fn fsync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| fault::sync_dir(&d))
        .map_err(|e| io_err("cannot fsync directory", dir, e))
}

/// Creates `dir` (mode 0700) if it is missing, then fsyncs its parent, also
/// when another creator made it first. Returns whether this call created it.
/// A path that exists but is not a directory is an I/O error.
pub fn create_dir(dir: &Path) -> Result<bool> {
    let created = match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => false,
        Err(e) => return Err(io_err("cannot create directory", dir, e)),
    };
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fsync_dir(parent)?;
    }
    Ok(created)
}

/// `mkdir -p dir` with mode 0700: each missing directory is created and its
/// parent fsynced (see [`create_dir`]). Nothing happens when `dir` already
/// is a directory (symbolic links followed, as for any path a user gives).
pub fn create_dir_all(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(p) = at {
        if p.as_os_str().is_empty() || p.is_dir() {
            break;
        }
        missing.push(p);
        at = p.parent();
    }
    for p in missing.into_iter().rev() {
        create_dir(p)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_missing_directories_with_mode_0700() {
        use std::os::unix::fs::PermissionsExt;
        let base = std::env::temp_dir().join(format!(
            "dsh-dirs-{}-{}",
            std::process::id(),
            crate::backend::jsonl::revision::random_u64()
        ));
        let deep = base.join("a").join("b").join("c");
        create_dir_all(&deep).unwrap();
        for p in [&base, &base.join("a"), &deep] {
            let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", p.display());
        }
        assert!(!create_dir(&deep).unwrap(), "already there");
        create_dir_all(&deep).unwrap();
        std::fs::remove_dir_all(&base).unwrap();
    }
}
