//! Progress on a terminal: a bar (counted work: sessions, append calls) or
//! a spinner with the elapsed time (one long read), drawn on stderr only
//! when stderr is a terminal and `--quiet` was not given. stdout (human or
//! `--json` output) is never touched; the line is cleared before a
//! command prints its result, and when it fails.
//!
//! Drawing is done by `indicatif`: it limits redraws (20 per second), fits
//! the line to the terminal's width, and keeps a spinner moving from its
//! own thread while a single long call (one large log) runs.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The lines drawn now, so printing a result can clear them first.
static ACTIVE: Mutex<Vec<ProgressBar>> = Mutex::new(Vec::new());

/// Clears every progress line (called before anything is printed).
pub fn clear_all() {
    let bars = std::mem::take(&mut *ACTIVE.lock().unwrap_or_else(|p| p.into_inner()));
    for bar in bars {
        bar.finish_and_clear();
    }
}

fn register(bar: &ProgressBar) {
    ACTIVE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(bar.clone());
}

/// `--quiet`: no progress at all.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Called once from `main` with the `--quiet` flag.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether progress is drawn: stderr is a terminal and `--quiet` is off.
pub fn enabled() -> bool {
    !QUIET.load(Ordering::Relaxed) && std::io::stderr().is_terminal()
}

/// One progress line. Without a terminal it holds nothing and every call
/// is a no-op (the benchmark's timed loops pay nothing for it).
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// No progress line (what every constructor returns without a terminal).
    pub fn none() -> Progress {
        Progress { bar: None }
    }

    /// A bar over `len` steps: `PREFIX [####----] 12/30 0:00:03 message`,
    /// redrawn by its own thread too (the elapsed time moves while one large
    /// session is checked or copied).
    pub fn bar(prefix: &str, len: u64) -> Progress {
        let p = Progress::still_bar(prefix, len);
        if let Some(bar) = &p.bar {
            bar.enable_steady_tick(Duration::from_millis(250));
        }
        p
    }

    /// A bar redrawn only when it changes: no drawing thread competes with
    /// the benchmark's timed loops.
    pub fn still_bar(prefix: &str, len: u64) -> Progress {
        if !enabled() {
            return Progress::none();
        }
        let style = ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} {elapsed_precise} {wide_msg}",
        )
        .expect("a valid progress template")
        .progress_chars("#>-");
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr())
            .with_style(style)
            .with_prefix(prefix.to_string());
        bar.force_draw();
        register(&bar);
        Progress { bar: Some(bar) }
    }

    /// A spinner with the elapsed time, moving on its own while one long
    /// call runs: `PREFIX ⠙ 3s message`.
    pub fn spinner(prefix: &str, message: &str) -> Progress {
        if !enabled() {
            return Progress::none();
        }
        let style = ProgressStyle::with_template("{prefix} {spinner} {elapsed} {wide_msg}")
            .expect("a valid progress template");
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
            .with_style(style)
            .with_prefix(prefix.to_string())
            .with_message(message.to_string());
        bar.force_draw();
        bar.enable_steady_tick(Duration::from_millis(120));
        register(&bar);
        Progress { bar: Some(bar) }
    }

    /// The text after the counter.
    pub fn message(&self, text: impl FnOnce() -> String) {
        if let Some(bar) = &self.bar {
            bar.set_message(text());
        }
    }

    /// A new phase: `prefix` before the bar, `message` after it, counting
    /// again from 0 over `len` steps. Always drawn (redraws are otherwise
    /// limited), so every phase shows at least once.
    pub fn phase(
        &self,
        prefix: impl FnOnce() -> String,
        message: impl FnOnce() -> String,
        len: u64,
    ) {
        if let Some(bar) = &self.bar {
            bar.set_position(0);
            bar.set_length(len);
            bar.set_prefix(prefix());
            bar.set_message(message());
            bar.reset_elapsed();
            bar.force_draw();
        }
    }

    /// One more step done.
    pub fn inc(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
    }

    /// Clears the line (also done on drop).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
