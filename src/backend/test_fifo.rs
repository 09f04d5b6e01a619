//! A FIFO for unit tests of code that must never wait on one, with a
//! watchdog that turns a wait into a test failure instead of a hung test
//! run: an open of a FIFO blocks until its other end is opened, so the
//! watchdog, if the guard is still alive after [`TestFifo::PATIENCE`],
//! opens the FIFO read-write (which releases any open blocked on it) and
//! records that it had to.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::fs::{CWD, FileType, Mode, OFlags};

pub struct TestFifo {
    path: PathBuf,
    done: Arc<AtomicBool>,
    fired: Arc<AtomicBool>,
    watchdog: Option<JoinHandle<()>>,
}

impl TestFifo {
    /// How long a test may take before the watchdog releases it.
    pub const PATIENCE: Duration = Duration::from_secs(30);

    /// Makes a FIFO (mode 0600) at `path` and starts its watchdog.
    pub fn new(path: &Path) -> TestFifo {
        rustix::fs::mknodat(CWD, path, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let fired = Arc::new(AtomicBool::new(false));
        let watchdog = {
            let (path, done, fired) = (path.to_path_buf(), done.clone(), fired.clone());
            std::thread::spawn(move || {
                let start = Instant::now();
                while !done.load(Ordering::Acquire) {
                    if start.elapsed() > Self::PATIENCE {
                        fired.store(true, Ordering::Release);
                        let flags = OFlags::RDWR | OFlags::NONBLOCK | OFlags::CLOEXEC;
                        if let Ok(fd) = rustix::fs::open(&path, flags, Mode::empty()) {
                            std::thread::sleep(Duration::from_secs(1));
                            drop(fd);
                        }
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        TestFifo {
            path: path.to_path_buf(),
            done,
            fired,
            watchdog: Some(watchdog),
        }
    }

    /// Fails the test when the watchdog had to release an open.
    pub fn assert_never_waited_on(&self) {
        assert!(
            !self.fired.load(Ordering::Acquire),
            "an open of the FIFO {} waited for its other end",
            self.path.display()
        );
    }
}

impl Drop for TestFifo {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
        if let Some(w) = self.watchdog.take() {
            let _ = w.join();
        }
    }
}
