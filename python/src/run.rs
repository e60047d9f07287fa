//! Long work off the Python thread: the GIL is released while it runs, Ctrl-C cancels it, and
//! a progress bar follows a load.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pyo3::prelude::*;
use wireload_load::LoadControl;

use crate::errors::InternalError;

/// How often the waiting thread takes the GIL to look for signals (Ctrl-C).
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Runs `work` on a thread of its own while the calling Python thread waits without the GIL.
/// A signal handler that raises (Ctrl-C's KeyboardInterrupt) cancels the work through `ctl`;
/// once the work has stopped, the exception is raised. `progress` draws a bar of
/// `ctl`'s bytes on stderr.
pub fn run_cancellable<T: Send + 'static>(
    py: Python<'_>,
    ctl: &LoadControl,
    progress: Option<&Progress>,
    work: impl FnOnce() -> T + Send + 'static,
) -> PyResult<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("wireload-py".into())
        .spawn(move || {
            // a send fails only when the waiting side is gone, which it never is before this
            let _ = tx.send(work());
        })
        .map_err(|e| InternalError::new_err(format!("cannot start a thread: {e}")))?;
    let mut rx: Receiver<T> = rx;
    loop {
        // the receiver moves into the closure and back: it is Send, not Sync
        let (got, back) = py.detach(move || (rx.recv_timeout(SIGNAL_POLL), rx));
        rx = back;
        match got {
            Ok(value) => return Ok(value),
            Err(RecvTimeoutError::Timeout) => {
                if let Some(p) = progress {
                    p.update(ctl);
                }
                if let Err(interrupt) = py.check_signals() {
                    ctl.cancel.store(true, Ordering::SeqCst);
                    // the work stops at its next batch and publishes nothing; wait for it so
                    // that nothing runs on when Python goes on
                    let _ = py.detach(move || rx.recv());
                    return Err(interrupt);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(InternalError::new_err(
                    "the worker thread stopped without an answer (a panic inside wireload)",
                ));
            }
        }
    }
}

/// A progress bar of bytes loaded, on stderr, drawn once a load has opened its input.
pub struct Progress {
    /// Bytes of all files, when known before the load (else each load's own total).
    total: Option<u64>,
    /// Made hidden at the start (so its rate counts from there) and shown once the total is
    /// known.
    bar: ProgressBar,
    shown: std::cell::Cell<bool>,
}

impl Progress {
    /// A bar for `total` bytes, or for the total each load finds when None.
    pub fn new(total: Option<u64>) -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template(
                // the bar takes what the terminal's width leaves (a line that wraps is
                // redrawn badly)
                "loading [{wide_bar}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        Progress {
            total,
            bar,
            shown: std::cell::Cell::new(false),
        }
    }

    /// Shows the bytes `ctl`'s load has scanned (nothing before a load has opened its input).
    fn update(&self, ctl: &LoadControl) {
        let total = self
            .total
            .unwrap_or_else(|| ctl.bytes_total.load(Ordering::Relaxed));
        self.bar
            .set_position(ctl.bytes_done.load(Ordering::Relaxed));
        if total > 0 {
            self.bar.set_length(total);
            if !self.shown.replace(true) {
                self.bar.set_draw_target(ProgressDrawTarget::stderr());
            }
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
