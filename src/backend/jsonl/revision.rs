//! JSONL revision tokens (SPEC §3.6): the log file's identity (device, inode,
//! size, nanosecond mtime and ctime), like the original's. Nothing else goes
//! in, so every store instance and process gives an unchanged log the same
//! token (DIFFERENCES B 08); logs of other roots are other files, so their
//! tokens differ. A write that would leave the identity as it was (a repair
//! that restores the size within one tick of the file clock) moves the
//! mtime on ([`super::writer::OpenLog::touch`]), so the token still changes.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;

use crate::backend::Revision;

/// What identifies one stored state of a log file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileIdentity {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

impl FileIdentity {
    pub fn of(meta: &Metadata) -> FileIdentity {
        FileIdentity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        }
    }

    /// The token of this state.
    pub fn revision(&self) -> Revision {
        Revision(format!(
            "jsonl:{:x}:{:x}:{:x}:{:x}:{:x}",
            self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns
        ))
    }
}

/// A random 64-bit value (store ids, temp names) from the OS, falling back
/// to time and process id when `/dev/urandom` is unavailable.
pub fn random_u64() -> u64 {
    use std::io::Read as _;
    let mut b = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok()
    {
        return u64::from_le_bytes(b);
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ (u64::from(std::process::id()) << 32) ^ 0x9E37_79B9_7F4A_7C15
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_the_identity_and_differ_by_every_part() {
        let dir = std::env::temp_dir();
        let meta = std::fs::metadata(&dir).unwrap();
        let id = FileIdentity::of(&meta);
        assert_eq!(id.revision(), FileIdentity::of(&meta).revision());
        for other in [
            FileIdentity {
                size: id.size + 1,
                ..id
            },
            FileIdentity {
                ino: id.ino + 1,
                ..id
            },
            FileIdentity {
                mtime_ns: id.mtime_ns + 1,
                ..id
            },
            FileIdentity {
                ctime_ns: id.ctime_ns + 1,
                ..id
            },
        ] {
            assert_ne!(id.revision(), other.revision());
        }
        assert_ne!(random_u64(), random_u64());
    }

    /// The times are whole nanoseconds since the epoch: the mtime the file
    /// was given, exactly, and the ctime of a metadata change between two
    /// readings of the clock (the kernel stamps files from a coarse clock,
    /// up to a tick behind the one `SystemTime` reads, hence the margin).
    #[test]
    fn times_are_nanoseconds_since_the_epoch() {
        use std::time::{Duration, SystemTime, UNIX_EPOCH};
        let path = std::env::temp_dir().join(format!(
            "dsh-revision-{}-{}",
            std::process::id(),
            random_u64()
        ));
        let file = std::fs::File::create(&path).unwrap();
        let set = UNIX_EPOCH + Duration::new(1_785_000_000, 123_456_789);
        let ns = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_nanos() as i128;
        let before = ns(SystemTime::now());
        file.set_modified(set).unwrap();
        let after = ns(SystemTime::now());
        let id = FileIdentity::of(&file.metadata().unwrap());
        std::fs::remove_file(&path).unwrap();
        assert_eq!(id.mtime_ns, 1_785_000_000_123_456_789);
        let margin = 50_000_000; // 50 ms
        assert!(
            id.ctime_ns >= before - margin && id.ctime_ns <= after + margin,
            "ctime {} outside [{before}, {after}] ± {margin} ns",
            id.ctime_ns
        );
    }
}
