//! CPU time accounting: per thread, per pool and per process (user + system time), and how
//! busy the machine's CPUs are (the server's load the `auto` mode reacts to).

pub use wireload_publish::{pool_cpu_seconds, thread_cpu_seconds};

/// CPU seconds (user + system, `getrusage`) this process has used.
pub fn process_cpu_seconds() -> f64 {
    // SAFETY: `rusage` is plain old data; all-zero bytes are a valid value of it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage; RUSAGE_SELF is a valid target.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// How busy the CPUs this process may run on are, between two samples of `/proc/stat`.
#[derive(Debug, Default)]
pub struct MachineLoad {
    cpus: Vec<usize>,
    last: Option<(u64, u64)>,
}

impl MachineLoad {
    /// Starts measuring.
    pub fn new() -> Self {
        let cpus = allowed_cpus();
        let last = cpu_ticks(&cpus);
        MachineLoad { cpus, last }
    }

    /// How many CPUs are measured.
    pub fn cpus(&self) -> usize {
        self.cpus.len().max(1)
    }

    /// The busy fraction (0..1) of the CPUs since the last call (0 where unknown).
    pub fn sample(&mut self) -> f64 {
        let now = cpu_ticks(&self.cpus);
        let busy = match (self.last, now) {
            (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => (b1 - b0) as f64 / (t1 - t0) as f64,
            _ => 0.0,
        };
        if now.is_some() {
            self.last = now;
        }
        busy.clamp(0.0, 1.0)
    }
}

/// CPU seconds this process's load threads have used (the load pools' `wireload-Nt-*`,
/// the merge pools' `wireload-merge-*`, the push's `wireload-push-*` threads, and the
/// Flight runtime's `wireload-flight` threads that receive pushes: not the query threads),
/// from `/proc/self/task`.
pub fn load_threads_cpu_seconds() -> f64 {
    threads_cpu_seconds(None, |name| {
        name.starts_with("wireload-merge")
            || name.starts_with("wireload-push")
            || name.starts_with("wireload-flight")
            || name
                .strip_prefix("wireload-")
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// CPU seconds the threads of process `pid` (this process when None) whose names start
/// with `prefix` have used (names as `/proc` keeps them: their first 15 bytes).
pub fn named_threads_cpu_seconds(pid: Option<u32>, prefix: &str) -> f64 {
    threads_cpu_seconds(pid, |name| name.starts_with(prefix))
}

/// CPU seconds the threads of process `pid` (this process when None) whose names are
/// `wanted` have used, from `/proc/PID/task` (threads that ended are not counted).
fn threads_cpu_seconds(pid: Option<u32>, wanted: impl Fn(&str) -> bool) -> f64 {
    let dir = pid.map_or_else(
        || "/proc/self/task".to_string(),
        |p| format!("/proc/{p}/task"),
    );
    let Ok(tasks) = std::fs::read_dir(dir) else {
        return 0.0;
    };
    tasks
        .flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|n| wanted(&n)))
        .map(|t| task_cpu_seconds(&t.path()))
        .sum()
}

/// CPU seconds of the thread whose `/proc/.../task/TID` directory is `task`: its
/// `schedstat` (nanoseconds on a CPU) where the kernel keeps one, else its `stat` (10 ms
/// ticks, too coarse to tell what a 200 ms window of one thread cost within 5%).
fn task_cpu_seconds(task: &std::path::Path) -> f64 {
    let ns = std::fs::read_to_string(task.join("schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok());
    match ns {
        Some(ns) => ns as f64 * 1e-9,
        None => stat_cpu_seconds(&task.join("stat")),
    }
}

/// CPU seconds (user + system) of the process or thread whose `/proc/.../stat` is `stat`
/// (0 when it cannot be read).
pub fn stat_cpu_seconds(stat: &std::path::Path) -> f64 {
    let stat = std::fs::read_to_string(stat).unwrap_or_default();
    // the fields after the command's closing parenthesis: utime is the 12th, stime the 13th
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let t = |i: usize| f.get(i).and_then(|t| t.parse::<f64>().ok()).unwrap_or(0.0);
    // in USER_HZ ticks (100 per second on Linux)
    (t(11) + t(12)) / 100.0
}

/// The CPUs this process may run on (empty: unknown, then all are measured).
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain old data; all-zero bytes are a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size given; pid 0 is this thread.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `set` is initialized and `c` is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// (busy, total) ticks of `cpus` (all CPUs when empty) from `/proc/stat`.
fn cpu_ticks(cpus: &[usize]) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let (mut busy, mut total) = (0u64, 0u64);
    for line in stat.lines() {
        let mut words = line.split_whitespace();
        let name = words.next()?;
        let wanted = match name.strip_prefix("cpu") {
            Some("") => cpus.is_empty(),
            Some(n) => n.parse::<usize>().is_ok_and(|n| cpus.contains(&n)),
            None => break,
        };
        if !wanted {
            continue;
        }
        let ticks: Vec<u64> = words.filter_map(|t| t.parse().ok()).collect();
        // user nice system idle iowait irq softirq steal ...
        let idle = ticks.get(3)? + ticks.get(4).copied().unwrap_or(0);
        let all: u64 = ticks.iter().take(8).sum();
        busy += all.saturating_sub(idle);
        total += all;
    }
    (total > 0).then_some((busy, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_and_machine_clocks_move() {
        let mut load = MachineLoad::new();
        let p0 = process_cpu_seconds();
        let start = std::time::Instant::now();
        let mut x = 1u64;
        while start.elapsed().as_millis() < 80 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(process_cpu_seconds() - p0 >= 0.04);
        let busy = load.sample();
        assert!((0.0..=1.0).contains(&busy));
    }

    #[test]
    fn a_named_thread_is_measured_to_the_millisecond() {
        // spins until the thread itself has run `seconds` (however often it is preempted)
        let spin = |seconds: f64| {
            let start = thread_cpu_seconds();
            let mut x = 1u64;
            while thread_cpu_seconds() - start < seconds {
                for _ in 0..1000 {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                }
            }
            std::hint::black_box(x);
        };
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::Builder::new()
            .name("wl-acct-test".into())
            .spawn(move || {
                spin(0.03);
                done_tx.send(()).unwrap();
                // alive until measured: threads that ended are not counted
                rx.recv().unwrap();
            })
            .unwrap();
        done_rx.recv().unwrap();
        let cpu = named_threads_cpu_seconds(None, "wl-acct-test");
        tx.send(()).unwrap();
        worker.join().unwrap();
        // 30 ms on a CPU: to the nanosecond where the kernel keeps schedstat (in 10 ms ticks
        // it may read 20 ms)
        let least = if std::path::Path::new("/proc/self/schedstat").exists() {
            0.0299
        } else {
            0.0
        };
        assert!((least..0.5).contains(&cpu), "{cpu}");
    }
}
