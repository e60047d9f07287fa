//! The one place that decides which threads a load runs on: a rayon pool per thread count,
//! started once per process and kept.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering::Relaxed};
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

/// The nice value of the threads that load and write (0: the process's own).
static LOAD_NICE: AtomicI32 = AtomicI32::new(0);

/// Runs the threads that load and write (the pools here, and those that call
/// [`apply_load_nice`]) at nice `nice` (0 to 19: the higher, the more they yield the CPU to
/// queries); applies to threads started from now on, so it is set before the first load.
pub fn set_load_nice(nice: i32) {
    LOAD_NICE.store(nice.clamp(0, 19), Relaxed);
}

/// Gives the calling thread the nice value of [`set_load_nice`] (nothing when that is 0);
/// for load threads started outside this module, such as a runtime's that receives pushes.
pub fn apply_load_nice() {
    let nice = LOAD_NICE.load(Relaxed);
    if nice == 0 {
        return;
    }
    // SAFETY: gettid takes no arguments and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    // SAFETY: setpriority takes plain integers; on Linux PRIO_PROCESS with a thread id
    // sets that thread's nice value. Raising it needs no privilege; a failure leaves the
    // thread at the process's priority, which is what it had.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
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
        .start_handler(|_| apply_load_nice())
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

/// CPU seconds (user and system) the calling thread has used.
pub fn thread_cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID is always
    // available on Linux and only writes through the pointer given.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if r != 0 {
        return 0.0;
    }
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// CPU seconds the threads of `pool` have used (each thread reads its own clock).
pub fn pool_cpu_seconds(pool: &ThreadPool) -> f64 {
    pool.broadcast(|_| thread_cpu_seconds()).into_iter().sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_clocks_count_work() {
        let pool = pool(2).unwrap();
        let before = pool_cpu_seconds(&pool);
        let t0 = thread_cpu_seconds();
        // spins until the thread's own clock counted `seconds`, or 20 s passed: a spin timed
        // by the wall clock counted less than it spun on a machine busy with other work
        let spin = |seconds: f64| {
            let (start, cpu) = (std::time::Instant::now(), thread_cpu_seconds());
            let mut x = 0u64;
            while thread_cpu_seconds() - cpu < seconds && start.elapsed().as_secs() < 20 {
                for _ in 0..1000 {
                    x = x.wrapping_mul(31).wrapping_add(7);
                }
            }
            std::hint::black_box(x);
        };
        spin(0.03);
        assert!(thread_cpu_seconds() - t0 >= 0.03);
        pool.broadcast(|_| spin(0.03));
        assert!(pool_cpu_seconds(&pool) - before >= 0.06);
    }
}
