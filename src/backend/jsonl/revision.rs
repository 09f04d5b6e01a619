//! JSONL revision tokens (SPEC §3.6): the log file's identity (device, inode,
//! size, nanosecond mtime and ctime), scoped to one store.

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

    /// The token of this state in the store `store_id`. `writes` counts this
    /// store's own writes to the file, so a repair that happens to restore
    /// the same size within one timestamp tick still changes the token.
    pub fn revision(&self, store_id: &str, writes: u64) -> Revision {
        Revision(format!(
            "jsonl:{store_id}:{writes}:{:x}:{:x}:{:x}:{:x}:{:x}",
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
    fn tokens_differ_by_store_and_writes() {
        let dir = std::env::temp_dir();
        let meta = std::fs::metadata(&dir).unwrap();
        let id = FileIdentity::of(&meta);
        assert_eq!(id.revision("a", 0), id.revision("a", 0));
        assert_ne!(id.revision("a", 0), id.revision("b", 0));
        assert_ne!(id.revision("a", 0), id.revision("a", 1));
        assert_ne!(random_u64(), random_u64());
    }
}
