//! The flat-layout check of a project directory (SPEC §3.1: a
//! `<project>/<x>.jsonl[.zstd]` file makes every session of that project
//! unreadable, as in the original), remembered while the directory is
//! unchanged.
//!
//! The check reads the whole project directory; every lookup of a session
//! needs it, so without a memory a project of 100k sessions costs a 100k
//! entry `readdir` per `load`/`append`, and a store closing after touching
//! every one of them costs 100k² (seen in `bench --scale`).
//!
//! A clean verdict is kept with the directory's stamp (device, inode,
//! mtime, ctime): adding, removing or renaming an entry changes mtime and
//! ctime, and a directory replaced under the same name has another inode
//! or ctime, so an unchanged stamp means the same entries. The one hole is
//! a change within the same timestamp tick as the change the stamp shows
//! (file times come from a coarse clock): a verdict is kept only when the
//! stamp is at least [`SETTLED`] older than the scan that made it, as git
//! treats "racy" index entries. (On a network filesystem whose clock runs
//! behind ours by more than that, a flat artifact created in the same tick
//! as an earlier change may go unnoticed until the directory changes
//! again; the check guards the layout, it protects no stored data.)

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use super::layout;
use crate::error::Result;

/// How much older than the scan a directory's last change must be for a
/// clean verdict to be kept (well above a coarse clock's tick, 1–10 ms).
pub const SETTLED: Duration = Duration::from_millis(100);

/// Verdicts kept at most (projects of a root); beyond it they are dropped
/// and made again.
const MAX_KEPT: usize = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    /// Nanoseconds since the epoch.
    mtime: i128,
    ctime: i128,
}

impl Stamp {
    fn of(dir: &Path) -> Option<Stamp> {
        let m = std::fs::symlink_metadata(dir).ok()?;
        m.is_dir().then(|| Stamp {
            dev: m.dev(),
            ino: m.ino(),
            mtime: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ctime: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
        })
    }

    fn settled_before(&self, scan: SystemTime) -> bool {
        let Ok(since) = scan.duration_since(UNIX_EPOCH) else {
            return false;
        };
        let limit = since.saturating_sub(SETTLED).as_nanos() as i128;
        self.mtime <= limit && self.ctime <= limit
    }
}

/// The clean verdicts of one backend's project directories.
#[derive(Default)]
pub struct ProjectChecks {
    clean: Mutex<HashMap<PathBuf, Stamp>>,
}

impl ProjectChecks {
    /// `layout::check_project_dir` of `project`, or nothing when a clean
    /// verdict for its unchanged stamp is kept.
    pub fn check(&self, project: &Path) -> Result<()> {
        let before = Stamp::of(project);
        if before.is_some() && self.clean.lock().get(project) == before.as_ref() {
            return Ok(());
        }
        let scan = SystemTime::now();
        layout::check_project_dir(project)?;
        if let Some(stamp) = before
            && Stamp::of(project) == Some(stamp)
            && stamp.settled_before(scan)
        {
            let mut clean = self.clean.lock();
            if clean.len() >= MAX_KEPT {
                clean.clear();
            }
            clean.insert(project.to_path_buf(), stamp);
        }
        Ok(())
    }

    /// How many verdicts are kept (for tests).
    pub fn kept(&self) -> usize {
        self.clean.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dir::TempDir;

    /// A fresh directory (with one subdirectory, as a project has).
    fn tempdir(tag: &str) -> TempDir {
        let d = TempDir::new(&format!("project-check-{tag}"));
        std::fs::create_dir_all(d.join("s")).unwrap();
        d
    }

    fn age(dir: &Path, by: Duration) {
        let old = SystemTime::now() - by;
        let f = std::fs::File::open(dir).unwrap();
        f.set_times(std::fs::FileTimes::new().set_modified(old))
            .unwrap();
    }

    #[test]
    fn a_fresh_directory_is_scanned_every_time() {
        let tmp = tempdir("fresh");
        let d = tmp.dir();
        let checks = ProjectChecks::default();
        checks.check(d).unwrap();
        // Its ctime is now: not settled, nothing kept.
        assert_eq!(checks.kept(), 0);
        std::fs::write(d.join("x.jsonl"), "{}\n").unwrap();
        assert!(checks.check(d).is_err());
    }

    /// The stamp is the directory's times to the nanosecond (a new
    /// directory's mtime and ctime are the same instant).
    #[test]
    fn the_stamp_is_the_directory_times_in_nanoseconds() {
        let tmp = tempdir("stamp");
        let d = tmp.join("new");
        std::fs::create_dir(&d).unwrap();
        let stamp = Stamp::of(&d).unwrap();
        let meta = std::fs::metadata(&d).unwrap();
        let modified = meta.modified().unwrap().duration_since(UNIX_EPOCH).unwrap();
        assert_eq!(stamp.mtime, modified.as_nanos() as i128);
        assert_eq!(stamp.ctime, stamp.mtime);
        assert_eq!((stamp.dev, stamp.ino), (meta.dev(), meta.ino()));
        // Not a directory: no stamp.
        std::fs::write(tmp.join("f"), "").unwrap();
        assert_eq!(Stamp::of(&tmp.join("f")), None);
        assert_eq!(Stamp::of(&tmp.join("missing")), None);
    }

    /// Both times must have settled: an old mtime with a ctime of now (the
    /// inode just changed) keeps nothing.
    #[test]
    fn a_directory_whose_ctime_is_fresh_is_not_kept() {
        let tmp = tempdir("ctime");
        let d = tmp.dir();
        age(d, Duration::from_secs(5));
        let checks = ProjectChecks::default();
        checks.check(d).unwrap();
        assert_eq!(checks.kept(), 0);
    }

    /// One verdict per project, up to [`MAX_KEPT`]; one more drops them all.
    #[test]
    fn verdicts_are_kept_per_project_up_to_the_cap() {
        let tmp = tempdir("cap");
        let projects: Vec<PathBuf> = (0..=MAX_KEPT)
            .map(|i| {
                let p = tmp.join(format!("p{i}"));
                std::fs::create_dir(&p).unwrap();
                p
            })
            .collect();
        std::thread::sleep(SETTLED + Duration::from_millis(20));
        let checks = ProjectChecks::default();
        for (i, p) in projects[..MAX_KEPT].iter().enumerate() {
            checks.check(p).unwrap();
            assert_eq!(checks.kept(), i + 1);
        }
        checks.check(&projects[MAX_KEPT]).unwrap();
        assert_eq!(checks.kept(), 1);
    }

    #[test]
    fn a_kept_verdict_is_dropped_when_an_artifact_appears() {
        let tmp = tempdir("kept");
        let d = tmp.dir();
        let checks = ProjectChecks::default();
        // ctime cannot be set back: wait it out once.
        age(d, Duration::from_secs(5));
        std::thread::sleep(SETTLED + Duration::from_millis(20));
        checks.check(d).unwrap();
        assert_eq!(checks.kept(), 1);
        checks.check(d).unwrap();
        std::fs::write(d.join("x.jsonl.zstd"), "").unwrap();
        let e = checks.check(d).unwrap_err().to_string();
        assert!(e.contains("flat-file layout"), "{e}");
    }

    #[test]
    fn a_directory_replaced_under_its_name_is_scanned() {
        let tmp = tempdir("replaced");
        let d = tmp.dir();
        let checks = ProjectChecks::default();
        std::thread::sleep(SETTLED + Duration::from_millis(20));
        checks.check(d).unwrap();
        assert_eq!(checks.kept(), 1);
        let moved_tmp = TempDir::new("project-check-replaced-old");
        let moved = moved_tmp.join("d");
        std::fs::rename(d, &moved).unwrap();
        std::fs::create_dir(d).unwrap();
        std::fs::write(d.join("y.jsonl"), "{}\n").unwrap();
        assert!(checks.check(d).is_err());
    }
}
