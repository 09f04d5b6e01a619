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

use super::writer::fsync_dir;
use super::{layout, nofollow};
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
/// `symlink_metadata`), `root` the store root. The project directory, the
/// trash and its new slot are opened without following links (D5): a link
/// planted in place of the trash is refused, never followed (the session
/// would be moved outside the root), and the move itself is one `renameat`
/// between those descriptors.
pub fn remove_session_dir(root: &Path, session_dir: &Path) -> Result<()> {
    let trash = root.join(TRASH_DIR_NAME);
    let trash_fd = nofollow::create_dir(&trash, 1)
        .map_err(|e| nofollow::io_err("cannot create directory", &trash, 1, e))?;
    let name = session_dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::invariant("a session directory without a name"))?;
    let slot = trash.join(unique_name(name));
    let slot_fd = nofollow::create_dir(&slot, 2)
        .map_err(|e| nofollow::io_err("cannot create directory", &slot, 2, e))?;
    let (project_fd, _) = nofollow::open_parent(session_dir, nofollow::SESSION_DEPTH)
        .map_err(|e| nofollow::io_err("cannot open", session_dir, nofollow::SESSION_DEPTH, e))?;
    let moved: PathBuf = slot.join(name);
    rustix::fs::renameat(&project_fd, name, &slot_fd, name).map_err(|e| {
        Error::io(
            format!(
                "cannot move {} to {}",
                session_dir.display(),
                moved.display()
            ),
            e.into(),
        )
    })?;
    if let Some(project) = session_dir.parent() {
        fsync_dir(&project_fd, project)?;
    }
    fsync_dir(&slot_fd, &slot)?;
    // `remove_dir_all` never follows symbolic links (it removes the link).
    std::fs::remove_dir_all(&slot)
        .map_err(|e| layout::io_err("cannot remove the deleted session", &slot, e))?;
    fsync_dir(&trash_fd, &trash)?;
    sweep_trash(root);
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
