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
}
