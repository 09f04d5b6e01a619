//! Durable JSONL writes (SPEC §3.4): lazy creation published atomically with
//! `link()`, fsynced appends with a rollback truncate, and torn-tail cuts.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;

use super::codec_zstd;
use super::layout::{Compression, io_err};
use super::nofollow::{self, LOG_DEPTH};
use super::revision::{FileIdentity, random_u64};
use crate::codec::chunk_rows::Record;
use crate::error::{Error, Result};
use crate::fault;

/// The bytes of one batch of lines: raw (`lines.join("\n") + "\n"`) or one
/// Zstandard frame of that text.
pub fn encode_batch(text: &str, compression: Compression) -> Result<Vec<u8>> {
    match compression {
        Compression::None => Ok(text.as_bytes().to_vec()),
        Compression::Zstd => codec_zstd::encode_frame(text.as_bytes()),
    }
}

/// The text of a batch: each record's line followed by `\n`.
pub fn batch_text(prefix_lines: &[String], records: &[Record]) -> String {
    let mut out = String::with_capacity(
        prefix_lines.iter().map(|l| l.len() + 1).sum::<usize>() + records.len() * 128,
    );
    for l in prefix_lines {
        out.push_str(l);
        out.push('\n');
    }
    for r in records {
        r.write_json(&mut out);
        out.push('\n');
    }
    out
}

pub(super) fn fsync_dir(dir: &OwnedFd, path: &Path) -> Result<()> {
    rustix::io::dup(dir)
        .map_err(io::Error::from)
        .and_then(|d| fault::sync_dir(&File::from(d)))
        .map_err(|e| io_err("cannot fsync directory", path, e))
}

/// Creates `dir` (mode 0700) if missing, then fsyncs its parent (also when
/// it was there already: another creator's entry may not be durable yet).
/// `inside` counts the components of `dir` inside the root: none of them
/// may be a symbolic link (see [`nofollow`]).
pub fn ensure_dir(dir: &Path, inside: usize) -> Result<()> {
    nofollow::create_dir(dir, inside)
        .map(drop)
        .map_err(|e| nofollow::io_err("cannot create directory", dir, inside, e))
}

/// Publishes a new log at `path` with `content`: a temp file
/// `<name>.<12 hex>.tmp` (O_EXCL, 0600) is written and fsynced, linked to the
/// final name (never replacing an existing log), unlinked, and the directory
/// fsynced. Fails with a conflict when the log already exists.
///
/// Every step runs in the session directory opened without following links
/// (no component inside the root may be a symbolic link).
pub fn create_log(path: &Path, content: &[u8]) -> Result<FileIdentity> {
    let dir_path = path.parent().expect("a log path has a directory");
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .expect("log names are UTF-8");
    let dir = nofollow::open_dir(dir_path, LOG_DEPTH - 1)
        .map_err(|e| nofollow::io_err("cannot open directory", dir_path, LOG_DEPTH - 1, e))?;
    let (tmp_name, mut file) = open_temp(&dir, dir_path, name)?;
    let tmp = dir_path.join(&tmp_name);
    let written = fault::write_all(&mut file, content)
        .and_then(|()| fault::sync(&file))
        .map_err(|e| io_err("cannot write", &tmp, e));
    drop(file);
    if let Err(e) = written {
        let _ = fault::unlink_at(&dir, &tmp_name);
        return Err(e);
    }
    let linked = fault::link_at(&dir, &tmp_name, name);
    let _ = fault::unlink_at(&dir, &tmp_name);
    match linked {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(Error::conflict(format!(
                "session log {} already exists; another writer created it first",
                path.display()
            )));
        }
        Err(e) => return Err(io_err("cannot publish", path, e)),
    }
    if let Err(e) = fsync_dir(&dir, dir_path) {
        // The link may not be durable: withdraw it, so a failed append leaves
        // no log behind and can be retried.
        let _ = fault::unlink_at(&dir, name);
        return Err(e);
    }
    let meta = nofollow::open_file_at(&dir, name, OFlags::RDONLY | OFlags::NONBLOCK, 0)
        .and_then(|f| f.metadata())
        .map_err(|e| io_err("cannot stat", path, e))?;
    Ok(FileIdentity::of(&meta))
}

/// Whether `name` is a temp file of [`create_log`]: `<log name>.<12 hex>.tmp`
/// for either encoding's log name (what `open_temp` makes; the store's
/// sweep and `verify` name them by this one rule).
pub fn is_temp_name(name: &str) -> bool {
    [Compression::Zstd, Compression::None].iter().any(|c| {
        name.strip_prefix(c.file_name())
            .and_then(|rest| rest.strip_prefix('.'))
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .is_some_and(|hex| hex.len() == 12 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
    })
}

fn open_temp(dir: &OwnedFd, dir_path: &Path, name: &str) -> Result<(String, File)> {
    for _ in 0..16 {
        let tmp = format!("{name}.{:012x}.tmp", random_u64() & 0xFFFF_FFFF_FFFF);
        match fault::create(|| {
            nofollow::open_file_at(
                dir,
                tmp.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
                0o600,
            )
        }) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_err("cannot create temp file", &dir_path.join(tmp), e)),
        }
    }
    Err(Error::io_msg(format!(
        "cannot create a unique temp file in {}",
        dir_path.display()
    )))
}

/// An existing log opened for appending, with the identity it had when
/// opened (compare it with the expected revision before writing).
pub struct OpenLog {
    path: PathBuf,
    file: File,
    pub identity: FileIdentity,
}

impl OpenLog {
    /// Opens `path` with `O_APPEND` (no link inside the root followed; the
    /// open never waits, and anything but a regular file is refused, as
    /// [`nofollow::open_regular_at`] does for reads). `Ok(None)` when it
    /// does not exist.
    pub fn open(path: &Path) -> Result<Option<OpenLog>> {
        let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::NONBLOCK;
        let opened = nofollow::open_file(path, LOG_DEPTH, flags, 0).and_then(nofollow::regular);
        let (file, meta) = match opened {
            Ok(opened) => opened,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(nofollow::io_err(
                    "cannot open for append",
                    path,
                    LOG_DEPTH,
                    e,
                ));
            }
        };
        Ok(Some(OpenLog {
            path: path.to_path_buf(),
            file,
            identity: FileIdentity::of(&meta),
        }))
    }

    /// Cuts the file to `len` bytes and fsyncs (the torn-tail repair).
    pub fn truncate(&mut self, len: u64) -> Result<()> {
        fault::set_len(&self.file, len)
            .and_then(|()| fault::sync(&self.file))
            .map_err(|e| io_err("cannot truncate", &self.path, e))?;
        self.identity.size = len;
        Ok(())
    }

    /// Sets the mtime to just after `after_ns` (and so the ctime to now),
    /// fsyncs, and returns the new identity: a write that left the file's
    /// identity unchanged still yields a new revision token.
    pub fn touch(&mut self, after_ns: i128) -> Result<FileIdentity> {
        let t = after_ns.max(0) as u128 + 1;
        let at = std::time::UNIX_EPOCH
            + std::time::Duration::new((t / 1_000_000_000) as u64, (t % 1_000_000_000) as u32);
        self.file
            .set_modified(at)
            .map_err(|e| io_err("cannot set the modification time of", &self.path, e))?;
        let meta = self
            .file
            .metadata()
            .map_err(|e| io_err("cannot stat", &self.path, e))?;
        self.identity = FileIdentity::of(&meta);
        Ok(self.identity)
    }

    /// Appends `bytes` and fsyncs; on failure the file is cut back to its
    /// previous length before the error is returned.
    pub fn append(&mut self, bytes: &[u8]) -> Result<FileIdentity> {
        let prev = self.identity.size;
        let res = fault::write_all(&mut self.file, bytes).and_then(|()| fault::sync(&self.file));
        if let Err(e) = res {
            let _ = fault::set_len(&self.file, prev).and_then(|()| fault::sync(&self.file));
            return Err(io_err("cannot append to", &self.path, e));
        }
        let meta = self
            .file
            .metadata()
            .map_err(|e| io_err("cannot stat", &self.path, e))?;
        self.identity = FileIdentity::of(&meta);
        Ok(self.identity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_append_reports_an_io_error() {
        let full = Path::new("/dev/full");
        if !full.exists() {
            return;
        }
        let file = std::fs::OpenOptions::new().append(true).open(full).unwrap();
        let identity = FileIdentity::of(&file.metadata().unwrap());
        let mut log = OpenLog {
            path: full.to_path_buf(),
            file,
            identity,
        };
        let e = log.append(b"x\n").unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Io);
        assert!(e.to_string().contains("/dev/full"), "{e}");
    }

    /// A new log holding `content` at `<temp root>/p/s/session.jsonl`,
    /// made as the backend makes one; returns the root and the log's path.
    fn new_log(tag: &str, content: &[u8]) -> (PathBuf, PathBuf) {
        let base = std::env::temp_dir().join(format!("dsh-{tag}-{}", random_u64()));
        let dir = base.join("p").join("s");
        std::fs::create_dir_all(&base).unwrap();
        ensure_dir(&base.join("p"), 1).unwrap();
        ensure_dir(&dir, 2).unwrap();
        let path = dir.join("session.jsonl");
        create_log(&path, content).unwrap();
        (base, path)
    }

    #[test]
    fn temp_names_are_the_ones_open_temp_makes() {
        let (base, path) = new_log("writer-temp-names", b"h\n");
        let dir_path = path.parent().unwrap();
        let dir = nofollow::open_dir(dir_path, 2).unwrap();
        for log in ["session.jsonl.zstd", "session.jsonl"] {
            let (name, _file) = open_temp(&dir, dir_path, log).unwrap();
            assert!(is_temp_name(&name), "{name}");
            assert!(dir_path.join(&name).is_file());
        }
        assert!(is_temp_name("session.jsonl.ABCDEF012345.tmp"));
        for other in [
            "session.jsonl.zstd.tmp",
            "session.jsonl.0123.tmp",
            "session.jsonl.0123456789abc.tmp",
            "session.jsonl.0123456789ag.tmp",
            "session.jsonl.0123456789ab",
            "session.jsonl0123456789ab.tmp",
            "other.0123456789ab.tmp",
            "session.jsonl",
        ] {
            assert!(!is_temp_name(other), "{other}");
        }
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn a_log_gone_is_none_and_a_directory_in_its_place_is_an_error() {
        let (base, path) = new_log("writer-gone", b"h\n");
        std::fs::remove_file(&path).unwrap();
        // The caller tells the user the session is not stored any more.
        assert!(OpenLog::open(&path).unwrap().is_none());
        std::fs::create_dir(&path).unwrap();
        let e = OpenLog::open(&path).err().expect("refused");
        assert_eq!(e.kind(), crate::error::ErrorKind::Io, "{e}");
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn a_fifo_in_place_of_the_log_is_refused_without_waiting() {
        let (base, path) = new_log("writer-fifo", b"h\n");
        std::fs::remove_file(&path).unwrap();
        let fifo = crate::backend::test_fifo::TestFifo::new(&path);
        // No reader: a blocking write-only open would wait for one.
        let e = OpenLog::open(&path).err().expect("refused");
        assert_eq!(e.kind(), crate::error::ErrorKind::Io, "{e}");
        assert!(e.to_string().contains("session.jsonl"), "{e}");
        // With a reader the open succeeds, and the type check refuses it.
        let reader =
            nofollow::open_file(&path, LOG_DEPTH, OFlags::RDONLY | OFlags::NONBLOCK, 0).unwrap();
        let e = OpenLog::open(&path).err().expect("refused");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        drop(reader);
        fifo.assert_never_waited_on();
        drop(fifo);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn truncate_then_append_keeps_the_prefix() {
        let (base, path) = new_log("writer", b"h\na\nb\n");
        let e = create_log(&path, b"other\n").unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Conflict);
        let mut log = OpenLog::open(&path).unwrap().unwrap();
        log.truncate(4).unwrap();
        let id = log.append(b"c\n").unwrap();
        assert_eq!(id.size, 6);
        assert_eq!(std::fs::read(&path).unwrap(), b"h\na\nc\n");
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// `touch` puts the mtime exactly one nanosecond after the time given,
    /// across a second boundary too, and a time before the epoch counts from
    /// the epoch; the identity it returns is the file's.
    #[test]
    fn touch_moves_the_mtime_one_nanosecond_past_the_time_given() {
        let (base, path) = new_log("touch", b"h\n");
        let mut log = OpenLog::open(&path).unwrap().unwrap();
        for (after, want) in [
            (1_785_000_000_123_456_789, 1_785_000_000_123_456_790),
            (1_785_000_000_999_999_999, 1_785_000_001_000_000_000),
            (-5, 1),
        ] {
            let id = log.touch(after).unwrap();
            assert_eq!(id.mtime_ns, want, "after {after}");
            assert_eq!(id, FileIdentity::of(&std::fs::metadata(&path).unwrap()));
        }
        std::fs::remove_dir_all(&base).unwrap();
    }
}
