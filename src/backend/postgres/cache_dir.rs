//! The host-side cache directory of a PostgreSQL store (`cacheDir`): where
//! its append checkpoints ([`crate::store::append_checkpoint`]) and search
//! index live, since a store on a server has no place beside it on this
//! host's file system.
//!
//! A checkpoint is trusted for what a cold append judges (the fold of the
//! rules over the whole log), so the directory must be as private as a
//! SQLite database's: owned by the current user and not group- or
//! world-writable (checked at open, when it exists; a missing one is made
//! 0700 on the first write). Each store gets a subdirectory named by its
//! store id, so one `cacheDir` may serve several stores and servers.

use std::path::{Path, PathBuf};

use crate::backend::sqlite::access::{current_uid, is_private_dir};
use crate::error::{Error, Result};
use crate::model::json::quote;

/// The cache directory of the store `store_id` under the configured
/// `cacheDir`, after checking the configured directory (when it exists).
pub fn store_cache_dir(configured: &Path, store_id: &str) -> Result<PathBuf> {
    let shown = || quote(&configured.display().to_string());
    match std::fs::metadata(configured) {
        Ok(meta) => {
            if !meta.is_dir() {
                return Err(Error::invalid(format!(
                    "PostgreSQL cacheDir {} is not a directory",
                    shown()
                )));
            }
            if !is_private_dir(&meta, current_uid()?) {
                return Err(Error::invalid(format!(
                    "PostgreSQL cacheDir {} must be owned by the current user and not group/world-writable",
                    shown()
                )));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(Error::io(
                format!("cannot inspect PostgreSQL cacheDir {}", shown()),
                e,
            ));
        }
    }
    Ok(configured.join(store_id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_private_or_missing_directory_is_taken_a_shared_one_refused() {
        let tmp = crate::test_dir::TempDir::new("pg-cache");
        let base = tmp.join("cache");
        // Missing: taken (made on the first write).
        assert_eq!(
            store_cache_dir(&base, "store-1").unwrap(),
            base.join("store-1")
        );
        std::fs::create_dir(&base).unwrap();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(
            store_cache_dir(&base, "store-1").unwrap(),
            base.join("store-1")
        );
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o770)).unwrap();
        let e = store_cache_dir(&base, "store-1").unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("not group/world-writable"), "{e}");
        let file = tmp.join("file");
        std::fs::write(&file, b"x").unwrap();
        let e = store_cache_dir(&file, "store-1").unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("is not a directory"), "{e}");
        // A path that cannot be looked at (under a file) is not a missing
        // one: an error naming it, not a directory to make later.
        let under = file.join("cache");
        let e = store_cache_dir(&under, "store-1").unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Io);
        let m = e.to_string();
        assert!(
            m.starts_with(&format!(
                "cannot inspect PostgreSQL cacheDir \"{}\"",
                under.display()
            )),
            "{m}"
        );
    }
}
