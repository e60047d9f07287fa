//! A progress bar for loads: bytes, MB/s and ETA on standard error, shown only when
//! standard error is a terminal and the load has run for more than a second.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use wireload_load::LoadControl;

/// How long a load runs before its bar appears.
const SHOW_AFTER: Duration = Duration::from_secs(1);
/// How often the watcher reads the load's counters.
const POLL: Duration = Duration::from_millis(100);

/// Watches a `LoadControl` from a thread and draws its bar; dropping it removes the bar.
pub struct ProgressWatch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ProgressWatch {
    /// Starts watching `ctl`; does nothing when standard error is not a terminal.
    pub fn start(ctl: &LoadControl) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        if !std::io::stderr().is_terminal() {
            return ProgressWatch { stop, thread: None };
        }
        let ctl = ctl.clone();
        let stopped = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("wireload-progress".into())
            .spawn(move || watch(&ctl, &stopped))
            .ok();
        ProgressWatch { stop, thread }
    }
}

impl Drop for ProgressWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{spinner} [{elapsed}] {wide_bar} {decimal_bytes}/{decimal_total_bytes} {msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// `812 MB/s, ETA 3s`, from the bytes done since the load started (the bar appears late,
/// so its own rate estimate would miss the first second).
fn rate_and_eta(done: u64, total: u64, elapsed: Duration) -> String {
    let seconds = elapsed.as_secs_f64();
    if done == 0 || seconds <= 0.0 {
        return String::new();
    }
    let rate = done as f64 / seconds;
    let eta = total.saturating_sub(done) as f64 / rate;
    format!("{:.0} MB/s, ETA {:.0}s", rate / 1e6, eta.ceil())
}

fn watch(ctl: &LoadControl, stop: &AtomicBool) {
    let started = Instant::now();
    let mut bar: Option<ProgressBar> = None;
    while !stop.load(Ordering::SeqCst) {
        std::thread::park_timeout(POLL);
        let total = ctl.bytes_total.load(Ordering::Relaxed);
        let done = ctl.bytes_done.load(Ordering::Relaxed);
        if bar.is_none() && total > 0 && started.elapsed() >= SHOW_AFTER && done < total {
            let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
                .with_elapsed(started.elapsed());
            b.set_style(bar_style());
            bar = Some(b);
        }
        if let Some(b) = &bar {
            if b.length() != Some(total) {
                b.set_length(total);
            }
            b.set_position(done.min(total));
            b.set_message(rate_and_eta(done, total, started.elapsed()));
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_and_eta_from_elapsed_time() {
        assert_eq!(
            rate_and_eta(500_000_000, 1_500_000_000, Duration::from_secs(1)),
            "500 MB/s, ETA 2s"
        );
        assert_eq!(rate_and_eta(0, 10, Duration::from_secs(1)), "");
    }
}
