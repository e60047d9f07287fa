//! Output: markdown tables on stdout, the JSON document, statistics, the date and the
//! host's description.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

/// A markdown table built row by row.
#[derive(Debug)]
pub struct Md {
    head: Vec<&'static str>,
    right: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Md {
    /// Columns as (title, right-aligned).
    pub fn new(cols: &[(&'static str, bool)]) -> Self {
        Md {
            head: cols.iter().map(|c| c.0).collect(),
            right: cols.iter().map(|c| c.1).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (as many cells as columns).
    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.head.len());
        self.rows.push(cells);
    }

    /// Prints the table and a blank line.
    pub fn print(&self) {
        println!("| {} |", self.head.join(" | "));
        let rule: Vec<&str> = self
            .right
            .iter()
            .map(|&r| if r { "---:" } else { "---" })
            .collect();
        println!("| {} |", rule.join(" | "));
        for r in &self.rows {
            println!("| {} |", r.join(" | "));
        }
        println!();
    }
}

/// Median, minimum and maximum of samples.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    /// median (mean of the two middle values for an even count)
    pub median: f64,
    /// smallest
    pub min: f64,
    /// largest
    pub max: f64,
}

impl Stats {
    /// Of `v` (empty: zeros).
    pub fn of(v: &[f64]) -> Stats {
        if v.is_empty() {
            return Stats::default();
        }
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        };
        Stats {
            median,
            min: s[0],
            max: s[n - 1],
        }
    }
}

/// GB/s (10^9 bytes per second) of `bytes` in `seconds`.
pub fn gbps(bytes: usize, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 / 1e9 / seconds
    } else {
        0.0
    }
}

/// Rates of `bytes` over the samples: median (of the times), slowest and fastest.
pub fn rates(bytes: usize, seconds: &[f64], unit: f64) -> (f64, f64, f64) {
    let s = Stats::of(seconds);
    let r = |t: f64| {
        if t > 0.0 {
            bytes as f64 / unit / t
        } else {
            0.0
        }
    };
    (r(s.median), r(s.max), r(s.min))
}

/// A rate with a sensible number of digits.
pub fn fmt_rate(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// Megabytes (10^6) with one decimal, or three below 1 MB.
pub fn fmt_mb(bytes: usize) -> String {
    let mb = bytes as f64 / 1e6;
    if mb >= 1.0 {
        format!("{mb:.1}")
    } else {
        format!("{mb:.3}")
    }
}

/// Milliseconds with three significant-ish digits.
pub fn fmt_ms(seconds: f64) -> String {
    let ms = seconds * 1e3;
    if ms >= 100.0 {
        format!("{ms:.1}")
    } else if ms >= 1.0 {
        format!("{ms:.3}")
    } else {
        format!("{ms:.4}")
    }
}

/// "a–b" of two rates.
pub fn range(lo: f64, hi: f64) -> String {
    format!("{}–{}", fmt_rate(lo), fmt_rate(hi))
}

/// The JSON document, rewritten after every section so that a run cut short keeps what it
/// measured.
#[derive(Debug)]
pub struct Report {
    path: Option<PathBuf>,
    doc: Map<String, Value>,
}

impl Report {
    /// A document with `meta`, written to `path` when given.
    pub fn new(path: Option<PathBuf>, meta: Value) -> Self {
        let mut doc = Map::new();
        doc.insert("meta".into(), meta);
        doc.insert("sections".into(), Value::Object(Map::new()));
        Report { path, doc }
    }

    /// Sets section `name` and writes the file.
    pub fn section(&mut self, name: &str, v: Value) {
        if let Some(Value::Object(m)) = self.doc.get_mut("sections") {
            m.insert(name.into(), v);
        }
        self.write();
    }

    /// Sets a top-level entry and writes the file.
    pub fn set(&mut self, key: &str, v: Value) {
        self.doc.insert(key.into(), v);
        self.write();
    }

    fn write(&self) {
        if let Some(p) = &self.path {
            let text = serde_json::to_string_pretty(&Value::Object(self.doc.clone()))
                .expect("JSON values serialize");
            if let Err(e) = std::fs::write(p, text + "\n") {
                eprintln!("cannot write {}: {e}", p.display());
            }
        }
    }
}

/// Now in UTC: ("2026-11-23", "2026-11-23T18:02:03Z").
pub fn utc_now() -> (String, String) {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // civil from days (H. Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    let date = format!("{y:04}-{m:02}-{d:02}");
    let time = format!(
        "{date}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    );
    (date, time)
}

/// The host: CPU model, logical CPUs, memory, kernel.
pub fn host() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or("unknown CPU".to_string(), |s| s.trim().to_string());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mem_kb: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map_or("unknown".into(), |s| s.trim().to_string());
    json!({
        "cpu": model,
        "cpus": cpus,
        "memory_gib": (mem_kb as f64 / 1048576.0 * 10.0).round() / 10.0,
        "kernel": kernel,
    })
}

/// One line for the header.
pub fn host_line(h: &Value) -> String {
    format!(
        "{}, {} CPUs, {} GiB RAM, Linux {}",
        h["cpu"].as_str().unwrap_or("?"),
        h["cpus"],
        h["memory_gib"],
        h["kernel"].as_str().unwrap_or("?")
    )
}
