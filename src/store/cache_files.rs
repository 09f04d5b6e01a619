//! Files in a store's cache sidecar (`Backend::cache_dir`: the append
//! checkpoints, the search indexes): their names, their framing and their
//! writing. Both are caches: a file that cannot be written or read back is
//! rebuilt, so writing is best effort, atomic (temp file + rename, never a
//! half file under the final name) and private like the logs (they hold
//! message text): 0700 directories, 0600 files. Each file is its kind's
//! magic line, its body and a hash of both ([`sealed`]); a file whose hash
//! does not match, or that is longer than the store could have written, is
//! a miss ([`unsealed`], [`read_at_most`]), never a wrong answer.

use std::io::{Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};

use crate::backend::jsonl::nofollow;

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

/// A 64-bit hash of `bytes`, eight at a time (integrity, not security: a
/// torn or damaged file is refused).
fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = 0x243f_6a88_85a3_08d3u64 ^ (bytes.len() as u64).wrapping_mul(K);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(K);
        h ^= h >> 31;
    }
    let mut last = [0u8; 8];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h ^ u64::from_le_bytes(last)).wrapping_mul(K);
    h ^ (h >> 29)
}

/// `out` (a cache file's magic line and body) followed by its hash: the
/// bytes of the file.
pub fn sealed(mut out: Vec<u8>) -> Vec<u8> {
    let h = hash(&out);
    out.extend_from_slice(&h.to_le_bytes());
    out
}

/// The body of a cache file's bytes (between `magic` and the hash) when
/// they are intact: the hash matches and they start with `magic`.
pub fn unsealed<'a>(bytes: &'a [u8], magic: &[u8]) -> Option<&'a [u8]> {
    let (all, h) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
    if hash(all) != u64::from_le_bytes(h.try_into().ok()?) {
        return None;
    }
    all.strip_prefix(magic)
}

/// Components of a cache file's path that are never followed if they are
/// symbolic links: the cache directory's own name, the kind's directory
/// and the file. The cache directory is inside a JSONL root, or made by the
/// store beside a database or inside a configured `cacheDir`; a link found
/// there was planted, and following it could write outside (what lies above
/// the cache directory, the root or the configured directory, is resolved as
/// usual).
const CACHE_FILE_DEPTH: usize = 3;

/// The bytes of the file at `path` when it is at most `max_bytes` long
/// (a file larger than the store could have written is a miss, not a read
/// of gigabytes into memory). A link, or anything but a regular file (a
/// FIFO, whose open would wait for a writer), is a miss too.
pub fn read_at_most(path: &Path, max_bytes: u64) -> Option<Vec<u8>> {
    let (f, meta) = nofollow::open_regular(path, CACHE_FILE_DEPTH).ok()?;
    let len = meta.len();
    if len > max_bytes {
        return None;
    }
    let mut out = Vec::with_capacity(usize::try_from(len).ok()?);
    // It may have grown since: never past the bound.
    f.take(max_bytes.saturating_add(1))
        .read_to_end(&mut out)
        .ok()?;
    (out.len() as u64 <= max_bytes).then_some(out)
}

/// Opens `kind_dir` (`<cache dir>/<kind>`), making it and the cache
/// directory (0700) when missing, neither followed if it is a link; what
/// lies above the cache directory is made as `mkdir -p` would.
fn make_kind_dir(kind_dir: &Path) -> Option<OwnedFd> {
    let cache = kind_dir.parent()?;
    let base = cache.parent()?;
    let base = if base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(base)
        .ok()?;
    let mut fd = nofollow::open_dir(base, 0).ok()?;
    for name in [cache.file_name()?, kind_dir.file_name()?] {
        match rustix::fs::mkdirat(&fd, name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(_) => return None,
        }
        fd = nofollow::dir_at(&fd, name).ok()?;
    }
    Some(fd)
}

/// Writes `bytes` to `path` (best effort, see the module note): a temp file
/// made exclusively (never an existing file or a link) in the kind's
/// directory, opened without following links, then renamed over `path`
/// within that directory.
pub fn write_private(path: &Path, bytes: &[u8]) {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let Some(dir) = make_kind_dir(parent) else {
        return;
    };
    // Unique per write, not only per process: two stores of one process
    // may write the same session's file at once (each then renames a
    // whole file of its own; the last rename wins).
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let tmp = format!(
        ".{}.{}.{}.tmp",
        name.to_str().unwrap_or("cache"),
        std::process::id(),
        WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let Ok(mut file) = nofollow::open_file_at(
        &dir,
        tmp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
        0o600,
    ) else {
        return;
    };
    let ok = file
        .write_all(bytes)
        .and_then(|()| Ok(rustix::fs::renameat(&dir, tmp.as_str(), &dir, name)?));
    if ok.is_err() {
        let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), AtFlags::empty());
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

    #[test]
    fn writers_of_one_process_never_share_a_temp_file() {
        let dir = std::env::temp_dir().join(format!("dsh-cache-race-{}", std::process::id()));
        let a = file_of(&dir, "k", "s", "x");
        // Eight threads write the same file, each its own content, many
        // times: every state of the file is one writer's whole content.
        let contents: Vec<Vec<u8>> = (0..8u8)
            .map(|t| {
                let len = 100_000 + 20_000 * usize::from(t);
                sealed([b"m\n".as_slice(), &vec![t; len]].concat())
            })
            .collect();
        std::thread::scope(|s| {
            for c in &contents {
                s.spawn(|| {
                    for _ in 0..150 {
                        write_private(&a, c);
                    }
                });
            }
            s.spawn(|| {
                for _ in 0..1000 {
                    if let Ok(bytes) = std::fs::read(&a) {
                        assert!(contents.contains(&bytes), "a mixed file");
                    }
                }
            });
        });
        assert!(unsealed(&std::fs::read(&a).unwrap(), b"m\n").is_some());
        // No temp file is left beside it.
        assert_eq!(std::fs::read_dir(a.parent().unwrap()).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sealed_bytes_are_read_back_only_when_intact() {
        let mut out = b"magic\n".to_vec();
        out.extend_from_slice(b"body");
        let bytes = sealed(out);
        assert_eq!(unsealed(&bytes, b"magic\n"), Some(&b"body"[..]));
        assert_eq!(unsealed(&bytes, b"other\n"), None);
        for n in 0..bytes.len() {
            assert_eq!(unsealed(&bytes[..n], b"magic\n"), None, "cut at {n}");
        }
        for i in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[i] ^= 0x20;
            assert_eq!(unsealed(&flipped, b"magic\n"), None, "byte {i} changed");
        }
    }

    #[test]
    fn a_file_over_the_bound_is_not_read() {
        let dir = std::env::temp_dir().join(format!("dsh-cache-bound-{}", std::process::id()));
        let a = file_of(&dir, "k", "s", "x");
        write_private(&a, &[7u8; 100]);
        assert_eq!(read_at_most(&a, 100).map(|b| b.len()), Some(100));
        assert_eq!(read_at_most(&a, 99), None);
        assert_eq!(read_at_most(&dir.join("missing"), 100), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
