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
//!
//! A delete in progress holds an exclusive `flock` on its slot from the
//! moment the slot exists until the slot is gone; a sweep removes only
//! slots whose lock it can take. Process ids alone cannot tell: processes
//! in other pid namespaces (containers sharing a volume) may share a store,
//! and a pid that is gone here may be a live delete there. The pid rule is
//! kept as well (a slot of a process alive here is left alone), so a slot
//! of a build without the lock, or on a file system without `flock`, is
//! still safe in one namespace.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, Mode};

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
    let (slot, slot_fd) = claim_slot(&trash_fd, &trash, name)?;
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
    drop(slot_fd);
    sweep_trash(root);
    Ok(())
}

/// How many fresh slots a delete tries when sweeps keep removing them
/// between their creation and their lock (each try is a new name).
const SLOT_TRIES: usize = 8;

/// Creates a fresh slot in `trash` (opened as `trash_fd`) for the session
/// directory `name` and locks it (the lock lasts as long as the returned
/// descriptor). A sweep elsewhere may remove the new, still unlocked slot
/// before it is opened (the open finds nothing) or before it is locked (a
/// removed directory has no links left): the delete then tries a new
/// slot. A file system without `flock` leaves the slot unlocked (the pid
/// rule alone protects it).
fn claim_slot(trash_fd: &OwnedFd, trash: &Path, name: &str) -> Result<(PathBuf, OwnedFd)> {
    for _ in 0..SLOT_TRIES {
        let slot_name = unique_name(name);
        let slot = trash.join(&slot_name);
        rustix::fs::mkdirat(trash_fd, &slot_name, Mode::from_raw_mode(0o700))
            .map_err(|e| layout::io_err("cannot create directory", &slot, e.into()))?;
        fsync_dir(trash_fd, trash)?;
        test_hook(SlotStep::Created, &slot);
        let slot_fd = match nofollow::dir_at(trash_fd, &slot_name) {
            Ok(fd) => fd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(layout::io_err("cannot open", &slot, e)),
        };
        test_hook(SlotStep::Opened, &slot);
        // Another process sweeping this very slot holds its lock: take a
        // new one.
        if !lock_slot(&slot_fd) {
            continue;
        }
        let links = rustix::fs::fstat(&slot_fd)
            .map_err(|e| layout::io_err("cannot inspect", &slot, e.into()))?
            .st_nlink;
        if links > 0 {
            return Ok((slot, slot_fd));
        }
    }
    Err(Error::io(
        format!(
            "cannot claim a slot in {}: {SLOT_TRIES} new slots were removed before they could \
             be locked (is another process removing its entries?)",
            trash.display()
        ),
        std::io::Error::from(std::io::ErrorKind::Interrupted),
    ))
}

/// Takes the exclusive `flock` of an open slot; `false` when another
/// open of it (a delete, a sweep) holds it. Any other failure is a file
/// system without `flock`: `true`, the slot unlocked (the pid rule alone
/// protects it).
fn lock_slot(slot_fd: &OwnedFd) -> bool {
    rustix::fs::flock(slot_fd, FlockOperation::NonBlockingLockExclusive)
        != Err(rustix::io::Errno::WOULDBLOCK)
}

/// Where [`claim_slot`] stands when its test hook runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum SlotStep {
    /// The slot exists, not yet opened.
    Created,
    /// The slot is open, not yet locked.
    Opened,
}

#[cfg(test)]
fn test_hook(step: SlotStep, slot: &Path) {
    tests::SLOT_HOOK.with(|hook| {
        if let Some(hook) = hook.borrow_mut().as_mut() {
            hook(step, slot);
        }
    });
}

#[cfg(not(test))]
fn test_hook(_: SlotStep, _: &Path) {}

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
/// process (the name's first part) does not run here and whose `flock`
/// nobody holds (a delete in progress, maybe in another pid namespace,
/// holds it). Best effort.
fn sweep_leftovers(trash: &Path) {
    let (Ok(trash_fd), Ok(entries)) = (nofollow::open_dir(trash, 1), std::fs::read_dir(trash))
    else {
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
        let Ok(slot_fd) = nofollow::dir_at(&trash_fd, &name) else {
            continue;
        };
        if !lock_slot(&slot_fd) {
            continue;
        }
        // Held until the tree is gone (the descriptor drops after).
        let _ = std::fs::remove_dir_all(entry.path());
        drop(slot_fd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Hook = Box<dyn FnMut(SlotStep, &Path)>;

    thread_local! {
        /// Runs in [`claim_slot`] after a slot's creation and after its
        /// open (this thread's deletes only).
        pub(super) static SLOT_HOOK: std::cell::RefCell<Option<Hook>> =
            const { std::cell::RefCell::new(None) };
    }

    fn temp_root(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!(
            "dsh-trash-{tag}-{}-{}",
            std::process::id(),
            super::super::revision::random_u64()
        ))
    }

    /// A pid no process here has (a child that has exited; on a test's
    /// time scale its pid is not reused).
    fn gone_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    /// A session directory with a log in it, under a fresh root.
    fn session_dir(root: &Path) -> PathBuf {
        let dir = root.join("--p--").join("s1");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("session.jsonl"), b"{}\n").unwrap();
        dir
    }

    fn slots(root: &Path) -> Vec<String> {
        match std::fs::read_dir(root.join(TRASH_DIR_NAME)) {
            Ok(rd) => rd
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

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
        let root = temp_root("sweep");
        let trash = root.join(TRASH_DIR_NAME);
        let gone = gone_pid();
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

    /// A delete in another pid namespace: its pid means nothing here (the
    /// slot's pid is gone in this one), but it holds the slot's lock.
    #[test]
    fn a_locked_slot_is_kept_whatever_its_pid_says() {
        let root = temp_root("locked");
        let slot = root
            .join(TRASH_DIR_NAME)
            .join(format!("{}.s.1", gone_pid()));
        std::fs::create_dir_all(slot.join("s")).unwrap();
        let held = nofollow::open_dir(&slot, 2).unwrap();
        rustix::fs::flock(&held, FlockOperation::NonBlockingLockExclusive).unwrap();
        kept_while_held(&root, &slot, held);
    }

    /// A sweep keeps `slot` while `held` (its locked descriptor) is open,
    /// and removes it once it is closed.
    fn kept_while_held(root: &Path, slot: &Path, held: OwnedFd) {
        sweep_trash(root);
        assert!(slot.exists(), "a delete in progress was swept");
        drop(held);
        sweep_trash(root);
        assert!(!slot.exists(), "an abandoned slot was kept");
        std::fs::remove_dir_all(root).unwrap();
    }

    /// A claimed slot is locked: renamed to a gone pid's name (as a
    /// delete in another pid namespace looks from here), a sweep still
    /// leaves it alone until its descriptor drops.
    #[test]
    fn a_claimed_slot_is_locked_until_its_descriptor_drops() {
        let root = temp_root("claimed");
        let trash = root.join(TRASH_DIR_NAME);
        std::fs::create_dir_all(&trash).unwrap();
        let trash_fd = nofollow::open_dir(&trash, 1).unwrap();
        let (slot, held) = claim_slot(&trash_fd, &trash, "s").unwrap();
        assert!(slots(&root)[0].starts_with(&format!("{}.s.", std::process::id())));
        let elsewhere = trash.join(format!("{}.s.1", gone_pid()));
        std::fs::rename(&slot, &elsewhere).unwrap();
        kept_while_held(&root, &elsewhere, held);
    }

    /// A sweep removes the new slot before the delete opens it, or after
    /// the open and before its lock: the delete takes a new slot, and the
    /// session is deleted.
    #[test]
    fn a_slot_swept_before_its_lock_is_replaced() {
        for at in [SlotStep::Created, SlotStep::Opened] {
            let root = temp_root("swept");
            let dir = session_dir(&root);
            let mut removed = 0;
            SLOT_HOOK.with(|h| {
                *h.borrow_mut() = Some(Box::new(move |step: SlotStep, slot: &Path| {
                    if step == at && removed == 0 {
                        removed += 1;
                        std::fs::remove_dir(slot).unwrap();
                    }
                }))
            });
            let result = remove_session_dir(&root, &dir);
            SLOT_HOOK.with(|h| h.borrow_mut().take());
            result.unwrap_or_else(|e| panic!("{at:?}: {e}"));
            assert!(!dir.exists(), "{at:?}");
            assert_eq!(slots(&root), Vec::<String>::new(), "{at:?}");
            std::fs::remove_dir_all(&root).unwrap();
        }
    }

    /// Every new slot is removed before its lock: the delete fails, naming
    /// the trash, and the session stays where it was, whole.
    #[test]
    fn a_delete_whose_slots_are_always_swept_fails_and_keeps_the_session() {
        for at in [SlotStep::Created, SlotStep::Opened] {
            let root = temp_root("always");
            let dir = session_dir(&root);
            SLOT_HOOK.with(|h| {
                *h.borrow_mut() = Some(Box::new(move |step: SlotStep, slot: &Path| {
                    if step == at {
                        std::fs::remove_dir(slot).unwrap();
                    }
                }))
            });
            let result = remove_session_dir(&root, &dir);
            SLOT_HOOK.with(|h| h.borrow_mut().take());
            let err = result.unwrap_err().to_string();
            assert!(
                err.contains(TRASH_DIR_NAME) && err.contains("8 new slots"),
                "{at:?}: {err}"
            );
            assert_eq!(std::fs::read(dir.join("session.jsonl")).unwrap(), b"{}\n");
            assert_eq!(slots(&root), Vec::<String>::new(), "{at:?}");
            std::fs::remove_dir_all(&root).unwrap();
        }
    }
}
