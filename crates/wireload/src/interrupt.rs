//! Ctrl-C: one process-wide flag that the running statement's load watches.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The flag set by Ctrl-C. The first call installs the handler: Ctrl-C sets the flag
/// (the running load sees it as its `LoadControl.cancel`); a second Ctrl-C before the
/// flag is cleared ends the process with status 130.
pub fn flag() -> Arc<AtomicBool> {
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&flag);
        // Without a handler (e.g. one is already installed) Ctrl-C keeps its default: end the process.
        let _ = ctrlc::set_handler(move || {
            if seen.swap(true, Ordering::SeqCst) {
                eprintln!("\ninterrupted");
                std::process::exit(130);
            }
        });
        flag
    })
    .clone()
}
