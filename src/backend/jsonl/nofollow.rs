//! Opening paths inside a JSONL root without following symbolic links (D5).
//!
//! A root may itself be a symbolic link (or lie below one): that part of a
//! path is resolved as usual. Inside the root, the project directory, the
//! session directory and the log file must be what they appear to be: each
//! is opened relative to its parent's descriptor with `O_NOFOLLOW` (and
//! `O_DIRECTORY` for directories), so a link planted there, or swapped in
//! between a check and a use, is refused instead of followed. Every write
//! (directory creation, the temp file, `link`, `unlink`, the append) goes
//! through these descriptors; nothing is ever written outside the root.
//!
//! Paths keep their display form (`<root>/<project>/<session>/<file>`); the
//! `inside` count says how many trailing components belong to the root.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};

use crate::error::Error;
use crate::model::json::quote;

/// Components of a log path inside its root: project, session, file.
pub const LOG_DEPTH: usize = 3;

/// Components of a session directory inside its root.
pub const SESSION_DEPTH: usize = 2;

/// Components of a project directory inside its root.
pub const PROJECT_DEPTH: usize = 1;

fn split(path: &Path, inside: usize) -> io::Result<(PathBuf, Vec<&std::ffi::OsStr>)> {
    let comps: Vec<Component<'_>> = path.components().collect();
    if comps.len() < inside {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "path is shorter than its layout",
        ));
    }
    let (base, rest) = comps.split_at(comps.len() - inside);
    let mut names = Vec::with_capacity(rest.len());
    for c in rest {
        match c {
            Component::Normal(n) => names.push(*n),
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a layout component is not a plain name",
                ));
            }
        }
    }
    // A relative path with nothing above its layout starts here.
    let base = if base.is_empty() {
        PathBuf::from(".")
    } else {
        base.iter().collect()
    };
    Ok((base, names))
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Opens the directory `name` in `parent` without following a link.
pub fn dir_at(parent: &OwnedFd, name: impl rustix::path::Arg) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(parent, name, DIR_FLAGS, Mode::empty())?)
}

/// Opens the directory above a layout (links followed, as for any path a
/// user gives).
fn open_base(base: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    Ok(rustix::fs::open(base, flags, Mode::empty())?)
}

/// Opens the directory `path`, the last `inside` components without
/// following links.
pub fn open_dir(path: &Path, inside: usize) -> io::Result<OwnedFd> {
    let (base, names) = split(path, inside)?;
    let mut fd = open_base(&base)?;
    for name in names {
        fd = dir_at(&fd, name)?;
    }
    Ok(fd)
}

/// The directory holding `path` (opened as [`open_dir`] with `inside − 1`)
/// and the last component's name.
pub fn open_parent(path: &Path, inside: usize) -> io::Result<(OwnedFd, &std::ffi::OsStr)> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no name"))?;
    let parent = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no parent"))?;
    Ok((open_dir(parent, inside - 1)?, name))
}

/// Opens the file `path` with `flags` (`O_NOFOLLOW` and `O_CLOEXEC` added).
pub fn open_file(path: &Path, inside: usize, flags: OFlags, mode: u32) -> io::Result<File> {
    let (dir, name) = open_parent(path, inside)?;
    open_file_at(&dir, name, flags, mode)
}

/// Opens `name` in `dir` with `flags` (`O_NOFOLLOW` and `O_CLOEXEC` added).
pub fn open_file_at(
    dir: &OwnedFd,
    name: impl rustix::path::Arg,
    flags: OFlags,
    mode: u32,
) -> io::Result<File> {
    let fd = rustix::fs::openat(
        dir,
        name,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )?;
    Ok(File::from(fd))
}

/// Opens the regular file `name` in `dir` for reading and returns it with
/// its metadata. The open never waits (`O_NONBLOCK`, which a regular file
/// ignores): a FIFO put in place of a log after a directory scan saw a file
/// would otherwise block the read until some process opened it for
/// writing. Anything but a regular file is refused ([`not_regular`]).
pub fn open_regular_at(
    dir: &OwnedFd,
    name: impl rustix::path::Arg,
) -> io::Result<(File, std::fs::Metadata)> {
    regular(open_file_at(
        dir,
        name,
        OFlags::RDONLY | OFlags::NONBLOCK,
        0,
    )?)
}

/// `file` with its metadata when it is a regular file, else
/// [`not_regular`].
pub fn regular(file: File) -> io::Result<(File, std::fs::Metadata)> {
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    Ok((file, meta))
}

/// Opens the regular file `path` for reading, as [`open_regular_at`].
pub fn open_regular(path: &Path, inside: usize) -> io::Result<(File, std::fs::Metadata)> {
    let (dir, name) = open_parent(path, inside)?;
    open_regular_at(&dir, name)
}

/// The cause of [`not_regular`] errors (so callers can tell them apart).
#[derive(Debug)]
struct NotRegular;

impl std::fmt::Display for NotRegular {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not a regular file (a FIFO, socket, device or directory was put in its place; the store only makes regular files there)")
    }
}

impl std::error::Error for NotRegular {}

/// The error of a path inside the root that should be a regular file and
/// is not (a FIFO, socket, device or directory put there).
pub fn not_regular() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, NotRegular)
}

/// Whether `e` is a [`not_regular`] error.
pub fn is_not_regular(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<NotRegular>())
}

/// The metadata of `path` (a link is not followed: it reads as a link).
pub fn metadata(path: &Path, inside: usize) -> io::Result<std::fs::Metadata> {
    // std has no fstatat; the file opened without following gives the same
    // answer for a regular file, and a link fails to open (ELOOP).
    open_file(path, inside, OFlags::RDONLY | OFlags::NONBLOCK, 0)?.metadata()
}

/// Creates the directory `path` (mode 0700) relative to its parent opened
/// without following links, then fsyncs the parent (also when another
/// creator made it first, D13). Returns the new directory, opened.
pub fn create_dir(path: &Path, inside: usize) -> io::Result<OwnedFd> {
    let (parent, name) = open_parent(path, inside)?;
    match rustix::fs::mkdirat(&parent, name, Mode::from_raw_mode(0o700)) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::EXIST => {}
        Err(e) => return Err(e.into()),
    }
    crate::fault::sync_dir(&File::from(rustix::io::dup(&parent)?))?;
    dir_at(&parent, name)
}

/// Whether `name` in `dir` is a symbolic link (for messages).
fn is_link_at(dir: &OwnedFd, name: &std::ffi::OsStr) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink
    })
}

/// The first component of `path` inside its root that is a symbolic link.
pub fn link_inside(path: &Path, inside: usize) -> Option<PathBuf> {
    let (base, names) = split(path, inside).ok()?;
    let mut fd = open_base(&base).ok()?;
    let mut at = base;
    for name in names {
        at.push(name);
        if is_link_at(&fd, name) {
            return Some(at);
        }
        fd = dir_at(&fd, name).ok()?;
    }
    None
}

/// The refusal of a link planted inside the root.
pub fn link_error(link: &Path) -> Error {
    Error::invalid(format!(
        "{} is a symbolic link inside the JSONL root; the store never follows links inside its root (they could lead outside it): remove it, or move the real directory or file into the root",
        quote(&link.display().to_string())
    ))
}

/// Maps an I/O error on `path`: a link inside the root becomes
/// [`link_error`], anything else an I/O error saying `what`.
pub fn io_err(what: &str, path: &Path, inside: usize, e: io::Error) -> Error {
    let loop_or_notdir = matches!(
        e.raw_os_error().map(rustix::io::Errno::from_raw_os_error),
        Some(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR)
    );
    if loop_or_notdir {
        if let Some(link) = link_inside(path, inside) {
            return link_error(&link);
        }
    }
    Error::io(format!("{what} {}", path.display()), e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_inside_the_root_are_refused_links_above_it_followed() {
        let base = std::env::temp_dir().join(format!(
            "dsh-nofollow-{}-{}",
            std::process::id(),
            super::super::revision::random_u64()
        ));
        let real = base.join("real-root");
        let outside = base.join("outside");
        std::fs::create_dir_all(real.join("p").join("s")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(real.join("p/s/log"), b"x").unwrap();
        std::os::unix::fs::symlink(&real, base.join("root-link")).unwrap();
        std::os::unix::fs::symlink(&outside, real.join("q")).unwrap();
        // The root through a link: fine.
        let via = base.join("root-link").join("p/s/log");
        assert!(open_regular(&via, LOG_DEPTH).is_ok());
        // A project directory that is a link: refused, named.
        let planted = real.join("q").join("s");
        let e = create_dir(&planted, SESSION_DEPTH).unwrap_err();
        let err = io_err("cannot create", &planted, SESSION_DEPTH, e);
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        assert!(err.to_string().contains("/real-root/q"), "{err}");
        assert!(!outside.join("s").exists(), "nothing written outside");
        // A log file that is a link.
        std::os::unix::fs::symlink(outside.join("x"), real.join("p/s/other")).unwrap();
        let e = open_regular(&real.join("p/s/other"), LOG_DEPTH).unwrap_err();
        let err = io_err("cannot open", &real.join("p/s/other"), LOG_DEPTH, e);
        assert!(
            err.to_string().contains("p/s/other\" is a symbolic link"),
            "{err}"
        );
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_relative_path_with_nothing_above_its_layout_starts_here() {
        // The tests run in the crate's directory.
        let (_, meta) = open_regular(Path::new("Cargo.toml"), 1).unwrap();
        assert!(meta.len() > 0);
        assert!(open_dir(Path::new("src/backend"), 2).is_ok());
        assert!(
            open_dir(Path::new("src"), 2).is_err(),
            "shorter than its layout"
        );
        assert!(open_regular(Path::new("../main/Cargo.toml"), 3).is_err());
    }

    #[test]
    fn descriptors_are_directories_closed_on_exec() {
        let cloexec = |fd: &OwnedFd| {
            rustix::io::fcntl_getfd(fd)
                .unwrap()
                .contains(rustix::io::FdFlags::CLOEXEC)
        };
        // The tests run in the crate's directory.
        let base = open_dir(Path::new("src"), 0).unwrap();
        assert!(cloexec(&base));
        assert!(cloexec(
            &open_dir(Path::new("src/backend/jsonl"), 2).unwrap()
        ));
        assert!(cloexec(&dir_at(&base, "backend").unwrap()));
        let (file, _) = open_regular(Path::new("src/lib.rs"), 2).unwrap();
        assert!(cloexec(&OwnedFd::from(file)));
        // A regular file is not a directory, above the layout or in it.
        for inside in [0, 1] {
            let e = open_dir(Path::new("src/lib.rs"), inside).unwrap_err();
            assert_eq!(
                e.raw_os_error(),
                Some(rustix::io::Errno::NOTDIR.raw_os_error())
            );
        }
    }

    #[test]
    fn metadata_of_a_fifo_does_not_wait_on_it() {
        use std::os::unix::fs::FileTypeExt;
        let base = std::env::temp_dir().join(format!(
            "dsh-meta-fifo-{}-{}",
            std::process::id(),
            super::super::revision::random_u64()
        ));
        let dir = base.join("p").join("s");
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = crate::backend::test_fifo::TestFifo::new(&dir.join("log"));
        let meta = metadata(&dir.join("log"), LOG_DEPTH).unwrap();
        assert!(meta.file_type().is_fifo());
        fifo.assert_never_waited_on();
        drop(fifo);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn open_regular_refuses_a_fifo_or_directory_without_waiting() {
        let base = std::env::temp_dir().join(format!(
            "dsh-regular-{}-{}",
            std::process::id(),
            super::super::revision::random_u64()
        ));
        let dir = base.join("p").join("s");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("file"), b"x").unwrap();
        std::fs::create_dir(dir.join("dir")).unwrap();
        let fifo = crate::backend::test_fifo::TestFifo::new(&dir.join("fifo"));
        let (_, meta) = open_regular(&dir.join("file"), LOG_DEPTH).unwrap();
        assert_eq!(meta.len(), 1);
        // A FIFO with no writer: a blocking read-only open would wait for
        // one.
        for name in ["fifo", "dir"] {
            let path = dir.join(name);
            let e = open_regular(&path, LOG_DEPTH).unwrap_err();
            assert!(is_not_regular(&e), "{name}: {e}");
            let err = io_err("cannot open", &path, LOG_DEPTH, e);
            assert_eq!(err.kind(), crate::error::ErrorKind::Io, "{err}");
            let text = err.to_string();
            assert!(text.contains("not a regular file"), "{text}");
            assert!(text.contains(&path.display().to_string()), "{text}");
        }
        fifo.assert_never_waited_on();
        drop(fifo);
        assert!(!is_not_regular(&io::Error::from(
            io::ErrorKind::InvalidInput
        )));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
