//! Files in a store's cache sidecar (`Backend::cache_dir`: the append
//! checkpoints, the search indexes): their names and their writing. Both
//! are caches: a file that cannot be written or read back is rebuilt, so
//! writing is best effort, atomic (temp file + rename, never a half file
//! under the final name) and private like the logs (they hold message
//! text): 0700 directories, 0600 files.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// The cache file of `id` of one kind: `dir/<kind>/<hash of id>.<ext>`.
/// FNV-1a, 64 bits: a stable name across processes; the id is also stored
/// inside the file and checked on reading, so a collision is a miss.
pub fn file_of(dir: &Path, kind: &str, id: &str, ext: &str) -> PathBuf {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    dir.join(kind).join(format!("{h:016x}.{ext}"))
}

/// Writes `bytes` to `path` (best effort, see the module note).
pub fn write_private(path: &Path, bytes: &[u8]) {
    let Some(parent) = path.parent() else { return };
    if std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(parent)
        .is_err()
    {
        return;
    }
    let tmp = parent.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("cache"),
        std::process::id()
    ));
    let ok = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::rename(&tmp, path));
    if ok.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn written_privately_and_named_stably() {
        let dir = std::env::temp_dir().join(format!("dsh-cache-files-{}", std::process::id()));
        let a = file_of(&dir, "k", "session-1", "x");
        assert_eq!(a, file_of(&dir, "k", "session-1", "x"));
        assert_ne!(a, file_of(&dir, "k", "session-2", "x"));
        write_private(&a, b"one");
        write_private(&a, b"two");
        assert_eq!(std::fs::read(&a).unwrap(), b"two");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&a), 0o600);
        assert_eq!(mode(a.parent().unwrap()), 0o700);
        // No temp file is left beside it.
        assert_eq!(std::fs::read_dir(a.parent().unwrap()).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
