//! Allocation hints shared by the chunk tasks of a load: running totals of rows, bytes and
//! string bytes, so each task sizes its partition buffers once (the paper's hints).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Shared estimates, updated by every finished task.
#[derive(Debug)]
pub(crate) struct Hints {
    rows: AtomicU64,
    bytes: AtomicU64,
    str_bytes: Vec<AtomicU64>,
    part_rows: Vec<AtomicU64>,
}

/// Buffer sizes for one task.
#[derive(Debug, Clone)]
pub(crate) struct Sizing {
    /// expected rows per partition
    pub rows: Vec<usize>,
    /// expected string bytes per partition and column
    pub str_bytes: Vec<Vec<usize>>,
}

impl Hints {
    /// Seeds the estimates from a sample of the input (its record delimiter count).
    pub(crate) fn new(sample: &[u8], ncols: usize, partitions: usize) -> Self {
        let rows = memchr::memchr_iter(b'\n', sample).count().max(1) as u64;
        Hints {
            rows: AtomicU64::new(rows),
            bytes: AtomicU64::new(sample.len().max(1) as u64),
            str_bytes: (0..ncols).map(|_| AtomicU64::new(0)).collect(),
            part_rows: (0..partitions).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Sizes for a chunk of `len` bytes.
    pub(crate) fn sizing(&self, len: usize) -> Sizing {
        let rows_total = self.rows.load(Relaxed).max(1) as f64;
        let bytes_total = self.bytes.load(Relaxed).max(1) as f64;
        let rows = (len as f64 * rows_total / bytes_total * 1.05) as usize + 16;
        let parts = self.part_rows.len();
        let part_sum: u64 = self.part_rows.iter().map(|r| r.load(Relaxed)).sum();
        let bytes_per_row = bytes_total / rows_total;
        let rows_p: Vec<usize> = self
            .part_rows
            .iter()
            .map(|r| {
                let share = (r.load(Relaxed) as f64 + 1.0) / (part_sum as f64 + parts as f64);
                ((rows as f64 * share * 1.1) as usize + 16).min(rows)
            })
            .collect();
        let str_bytes = rows_p
            .iter()
            .map(|&rp| {
                self.str_bytes
                    .iter()
                    .map(|s| {
                        let per_row = if part_sum > 0 {
                            s.load(Relaxed) as f64 / part_sum as f64 * 1.1
                        } else {
                            // no task finished yet: an even share of the record per column
                            // (buffers grow when a column needs more), not the whole record
                            // for every column, which the chunks would keep as capacity
                            bytes_per_row / self.str_bytes.len().max(1) as f64
                        };
                        (rp as f64 * per_row) as usize + 64
                    })
                    .collect()
            })
            .collect();
        Sizing {
            rows: rows_p,
            str_bytes,
        }
    }

    /// Adds what a finished task saw.
    pub(crate) fn record(&self, bytes: usize, part_rows: &[usize], str_bytes: &[usize]) {
        let rows: usize = part_rows.iter().sum();
        self.rows.fetch_add(rows as u64, Relaxed);
        self.bytes.fetch_add(bytes as u64, Relaxed);
        for (a, &r) in self.part_rows.iter().zip(part_rows) {
            a.fetch_add(r as u64, Relaxed);
        }
        for (a, &b) in self.str_bytes.iter().zip(str_bytes) {
            a.fetch_add(b as u64, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_buffers_before_any_task_share_the_record() {
        // 1000 records of 100 bytes, 10 columns
        let sample = [[b'x'; 99].as_slice(), b"\n"].concat().repeat(1000);
        let hints = Hints::new(&sample, 10, 1);
        let sizing = hints.sizing(1 << 20);
        let rows = sizing.rows[0];
        let reserved: usize = sizing.str_bytes[0].iter().sum();
        // about one record's bytes per row over all columns, not one per column
        assert!(
            reserved <= rows * 110 + 10 * 64,
            "{reserved} for {rows} rows"
        );
        assert!(reserved >= rows * 90, "{reserved} for {rows} rows");
        // once a task has finished, its string bytes per row are used
        hints.record(1 << 20, &[10_000], &[50_000, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let sizing = hints.sizing(1 << 20);
        let per_row = sizing.str_bytes[0][0] as f64 / sizing.rows[0] as f64;
        assert!((5.0..6.0).contains(&per_row), "{per_row}");
        assert!(sizing.str_bytes[0][1] <= 64);
    }
}
