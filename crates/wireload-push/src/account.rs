//! CPU time accounting: per thread, per pool and per process (user + system time), and how
//! busy the machine's CPUs are (the server's load the `auto` mode reacts to).

pub use wireload_load::{pool_cpu_seconds, thread_cpu_seconds};

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

/// How busy the machine's CPUs were between two samples of `/proc/stat`.
#[derive(Debug, Default)]
pub struct MachineLoad {
    last: Option<(u64, u64)>,
}

impl MachineLoad {
    /// Starts measuring.
    pub fn new() -> Self {
        let mut load = MachineLoad::default();
        load.last = cpu_ticks();
        load
    }

    /// The busy fraction (0..1) of all CPUs since the last call (0 where unknown).
    pub fn sample(&mut self) -> f64 {
        let now = cpu_ticks();
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

/// (busy, total) ticks of all CPUs from `/proc/stat`'s first line.
fn cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    let idle = ticks.get(3)? + ticks.get(4).copied().unwrap_or(0);
    let total: u64 = ticks.iter().take(8).sum();
    Some((total.saturating_sub(idle), total))
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
}
