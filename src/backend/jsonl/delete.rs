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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_names_start_with_the_pid_and_never_repeat() {
        let (a, b) = (unique_name("s~002Fx"), unique_name("s~002Fx"));
        assert_ne!(a, b);
        for name in [a, b] {
            let mut parts = name.splitn(2, '.');
            assert_eq!(parts.next(), Some(std::process::id().to_string().as_str()));
            assert!(parts.next().unwrap().starts_with("s~002Fx."), "{name}");
        }
    }

    #[test]
    fn the_sweep_removes_only_slots_of_processes_that_are_gone() {
        let root = std::env::temp_dir().join(format!(
            "dsh-trash-sweep-{}-{}",
            std::process::id(),
            super::super::revision::random_u64()
        ));
        let trash = root.join(TRASH_DIR_NAME);
        // A process that has exited: its pid is free (and, on this
        // test's time scale, not reused).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let slots = [
            (format!("{gone}.s.1"), false),
            (format!("{}.s.2", std::process::id()), true),
            ("1.s.3".to_string(), true), // init runs
            ("notes".to_string(), true), // not a slot
        ];
        for (slot, _) in &slots {
            std::fs::create_dir_all(trash.join(slot).join("s")).unwrap();
        }
        sweep_trash(&root);
        for (slot, kept) in &slots {
            assert_eq!(trash.join(slot).exists(), *kept, "{slot}");
        }
        std::fs::remove_dir_all(&root).unwrap();
    }
}
