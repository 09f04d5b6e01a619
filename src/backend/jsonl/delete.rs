//! Deleting a session directory atomically (issue 19).
//!
//! The directory `<root>/<project>/<session>` is renamed into a fresh
//! `<root>/.dsh-persist-trash/<unique>/` directory, both directories are
//! fsynced (from then on the session is gone from the root's namespace,
//! also after a crash), and the moved tree is removed without following
//! symbolic links. The original lists `.dsh-persist-trash` as one more
//! project directory whose entries hold no log file (the log sits one
//! level deeper), so it sees nothing there; this store's listing skips
//! it by name. A crash between the rename and the removal leaves the tree
//! in the trash, where the next open of the store (or the next delete)
//! removes it.

use std::path::{Path, PathBuf};

use super::layout;
use crate::backend::dirs;
use crate::error::{Error, Result};

/// The trash directory at the root of a JSONL store.
pub const TRASH_DIR_NAME: &str = ".dsh-persist-trash";

/// A name no other delete (in any process) uses at the same time.
fn unique_name(escaped_id: &str) -> String {
    format!(
        "{}.{}.{:016x}",
        std::process::id(),
        escaped_id.chars().take(64).collect::<String>(),
        super::revision::random_u64()
    )
}

/// Moves `session_dir` out of the root's namespace, durably, then removes
/// it. `session_dir` is a real directory (the caller found it with
/// `symlink_metadata`), `root` the store root.
pub fn remove_session_dir(root: &Path, session_dir: &Path) -> Result<()> {
    let trash = root.join(TRASH_DIR_NAME);
    dirs::create_dir(&trash)?;
    let name = session_dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::invariant("a session directory without a name"))?;
    let slot = trash.join(unique_name(name));
    dirs::create_dir(&slot)?;
    let moved: PathBuf = slot.join(name);
    std::fs::rename(session_dir, &moved).map_err(|e| {
        Error::io(
            format!(
                "cannot move {} to {}",
                session_dir.display(),
                moved.display()
            ),
            e,
        )
    })?;
    if let Some(project) = session_dir.parent() {
        dirs::fsync_dir(project)?;
    }
    dirs::fsync_dir(&slot)?;
    // `remove_dir_all` never follows symbolic links (it removes the link).
    std::fs::remove_dir_all(&slot)
        .map_err(|e| layout::io_err("cannot remove the deleted session", &slot, e))?;
    dirs::fsync_dir(&trash)?;
    sweep_leftovers(&trash);
    Ok(())
}

/// At open: removes what deletes interrupted by a crash left in the trash
/// of `root` (one `stat` when there is no trash). Best effort: a store
/// opened without write access leaves it for a later one.
pub fn sweep_trash(root: &Path) {
    let trash = root.join(TRASH_DIR_NAME);
    if std::fs::symlink_metadata(&trash).is_ok_and(|m| m.is_dir()) {
        sweep_leftovers(&trash);
    }
}

/// Removes trees that an interrupted delete left in the trash: slots whose
/// process (the name's first part) no longer runs (a slot of a running
/// process may be a delete in progress). Best effort.
fn sweep_leftovers(trash: &Path) {
    let Ok(entries) = std::fs::read_dir(trash) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.split('.').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let _ = std::fs::remove_dir_all(entry.path());
    }
}
