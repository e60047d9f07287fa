//! The one place that decides which threads a load runs on: a rayon pool per thread count,
//! started once per process and kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rayon::ThreadPool;

use crate::error::LoadError;

/// The pool of `threads` worker threads (at least one), started on first use.
pub fn pool(threads: usize) -> Result<Arc<ThreadPool>, LoadError> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
    pool_in(&POOLS, "", threads)
}

/// A pool of `threads` threads apart from [`pool`]'s, for work done while holding a
/// table's writer lock: threads of the other pools may wait for that lock, so the holder
/// must not depend on them.
pub fn locked_pool(threads: usize) -> Result<Arc<ThreadPool>, LoadError> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
    pool_in(&POOLS, "locked-", threads)
}

/// A pool of `threads` threads apart from [`pool`]'s, for a load's interleaved merge steps:
/// they run beside the load's chunk tasks, which keep [`pool`]'s threads busy.
pub fn merge_pool(threads: usize) -> Result<Arc<ThreadPool>, LoadError> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
    pool_in(&POOLS, "merge-", threads)
}

/// The one-thread pool background compactions run on (beside the loads and queries).
pub fn compaction_pool() -> Result<Arc<ThreadPool>, LoadError> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
    pool_in(&POOLS, "compact-", 1)
}

/// The pool of `threads` threads in `pools`, its threads named with `prefix`.
fn pool_in(
    pools: &'static OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>>,
    prefix: &'static str,
    threads: usize,
) -> Result<Arc<ThreadPool>, LoadError> {
    let threads = threads.max(1);
    let mut pools = pools
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(p) = pools.get(&threads) {
        return Ok(Arc::clone(p));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("wireload-{prefix}{threads}t-{i}"))
        .build()
        .map_err(|e| LoadError::Threads {
            threads,
            message: e.to_string(),
        })?;
    let pool = Arc::new(pool);
    pools.insert(threads, Arc::clone(&pool));
    Ok(pool)
}

/// Runs `work` on `threads` worker threads: on the current rayon pool when `threads` is
/// None or the size of the pool the caller runs on, else on [`pool`]`(threads)`.
pub fn install<T: Send>(
    threads: Option<usize>,
    work: impl FnOnce() -> T + Send,
) -> Result<T, LoadError> {
    let in_pool = rayon::current_thread_index().is_some();
    match threads {
        Some(n) if !in_pool || n.max(1) != rayon::current_num_threads() => {
            Ok(pool(n)?.install(work))
        }
        _ => Ok(work()),
    }
}
