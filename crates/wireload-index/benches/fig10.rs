//! Figure 10 of Instant Loading (section 5): creating a unique index over 10M 32-bit keys
//! in parallel — one index per consecutive part of the keys, built on a rayon pool, then
//! merged — for the adaptive radix tree and the chained hash table, beside `HashMap` and
//! `BTreeMap` built on one thread from the same keys.
//!
//! Run: `cargo bench -p wireload-index --bench fig10` (prints a markdown table; medians of
//! [`RUNS`] runs). Set `FIG10_KEYS` for another key count, `FIG10_ONLY` to run only the
//! rows whose "index keys threadsxparts" name contains it (e.g. `ART ordered dense 2x8`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use wireload_index::{Index, IndexKind, Keys, hash_buckets_for};

/// Runs per configuration; the table shows the median.
const RUNS: usize = 5;

/// Counts live heap bytes while [`COUNTING`] is on (the std maps' memory).
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        // SAFETY: same contract as ours
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The i32 key encoding: big-endian with the sign bit flipped.
fn encode(k: u32) -> [u8; 4] {
    (k ^ 0x8000_0000).to_be_bytes()
}

/// Touches and frees `bytes` of memory, so that the timed runs do not pay for the host
/// handing idle memory back.
fn warm_memory(bytes: usize) {
    let mut v = vec![0u8; bytes];
    for i in (0..bytes).step_by(4096) {
        v[i] = 1;
    }
    black_box(&v);
}

/// Nanoseconds this process's live threads have run on a CPU (from /proc; 0 elsewhere):
/// on a busy machine, wall time can be far above it.
fn cpu_ns() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    dir.flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// One timed run.
#[derive(Clone, Copy)]
struct Sample {
    create: Duration,
    merge: Duration,
    /// CPU time of all threads over create and merge
    cpu: Duration,
    bytes: usize,
}

/// The run with the median total time.
fn median(mut v: Vec<Sample>) -> Sample {
    v.sort_by_key(|s| s.create + s.merge);
    v[v.len() / 2]
}

/// Builds one index per part on a pool of `threads`, then merges them.
fn run_index(kind: IndexKind, keys: &[u32], threads: usize, parts: usize) -> Sample {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    let per = keys.len().div_ceil(parts);
    let chunks: Vec<Vec<u8>> = keys
        .chunks(per)
        .map(|c| c.iter().flat_map(|&k| encode(k)).collect())
        .collect();
    let buckets = hash_buckets_for(keys.len());
    warm_memory(keys.len() * 48);
    let c0 = cpu_ns();
    let t0 = Instant::now();
    let built: Vec<Index> = pool.install(|| {
        chunks
            .into_par_iter()
            .enumerate()
            .map(|(i, bytes)| {
                Index::build(kind, true, i as u32, Keys::fixed(4, bytes), buckets)
                    .expect("distinct keys")
            })
            .collect()
    });
    let t1 = Instant::now();
    let index = pool
        .install(|| Index::merge_all(built))
        .expect("distinct keys");
    let t2 = Instant::now();
    let c1 = cpu_ns();
    assert_eq!(index.len(), keys.len());
    let mut out = Vec::new();
    for &k in keys.iter().step_by(keys.len() / 1000 + 1) {
        out.clear();
        index.lookup(&encode(k), &mut out);
        assert_eq!(out.len(), 1, "key {k}");
        assert_eq!(index.key(out[0]), encode(k));
    }
    let sample = Sample {
        create: t1 - t0,
        merge: t2 - t1,
        cpu: Duration::from_nanos(c1 - c0),
        bytes: index.heap_bytes() - index.segments().heap_bytes(),
    };
    drop(index);
    sample
}

/// Builds a std map on one thread, counting its bytes.
fn run_std<M: Default>(keys: &[u32], insert: impl Fn(&mut M, u32, u32)) -> Sample {
    warm_memory(keys.len() * 48);
    let before = LIVE.load(Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    let c0 = cpu_ns();
    let t0 = Instant::now();
    let mut m = M::default();
    for (i, &k) in keys.iter().enumerate() {
        insert(&mut m, k, i as u32);
    }
    let t1 = Instant::now();
    let c1 = cpu_ns();
    let bytes = (LIVE.load(Ordering::Relaxed) - before) as usize;
    black_box(&m);
    drop(m);
    COUNTING.store(false, Ordering::Relaxed);
    Sample {
        create: t1 - t0,
        merge: Duration::ZERO,
        cpu: Duration::from_nanos(c1 - c0),
        bytes,
    }
}

/// Prints one table row.
fn row(name: &str, dist: &str, threads: usize, parts: usize, n: usize, s: Sample) {
    let total = s.create + s.merge;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "| {name} | {dist} | {threads} | {parts} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} \
         | {:.1} % | {:.1} |",
        ms(s.create),
        ms(s.merge),
        ms(total),
        ms(s.cpu),
        n as f64 / total.as_secs_f64() / 1e6,
        100.0 * s.merge.as_secs_f64() / total.as_secs_f64(),
        s.bytes as f64 / n as f64,
    );
}

/// Runs every configuration and prints the table.
fn main() {
    // `cargo bench` passes `--bench`; anything else (a filter) is ignored
    let n: usize = std::env::var("FIG10_KEYS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let only = std::env::var("FIG10_ONLY").unwrap_or_default();
    let wanted = |name: &str, dist: &str, threads: usize, parts: usize| {
        format!("{name} {dist} {threads}x{parts}").contains(only.as_str())
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x1d10);
    let ordered: Vec<u32> = (1..=n as u32).collect();
    let mut shuffled = ordered.clone();
    shuffled.shuffle(&mut rng);
    let mut sparse: Vec<u32> = (0..n + n / 64 + 16).map(|_| rng.random()).collect();
    sparse.sort_unstable();
    sparse.dedup();
    assert!(sparse.len() >= n, "too many random duplicates");
    sparse.shuffle(&mut rng);
    sparse.truncate(n);
    let dists: [(&str, &[u32]); 3] = [
        ("ordered dense", &ordered),
        ("unordered dense", &shuffled),
        ("sparse", &sparse),
    ];

    println!(
        "{n} unique 32-bit keys, median of {RUNS} runs, {} cores. CPU ms: time on CPU of \
         all threads during create + merge. B/key: the structure without the segments' key \
         bytes (4 B/key more).\n",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "| index | keys | threads | parts | create ms | merge ms | total ms | CPU ms | M keys/s \
         | merge share | B/key |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut hash_ok = true;
    for kind in [IndexKind::Art, IndexKind::Hash] {
        for (dist, keys) in dists {
            for threads in [1, 2] {
                for parts in [threads, 8] {
                    if (kind == IndexKind::Hash && !hash_ok)
                        || !wanted(&kind.to_string(), dist, threads, parts)
                    {
                        continue;
                    }
                    let mut samples = Vec::new();
                    for _ in 0..RUNS {
                        let r = catch_unwind(AssertUnwindSafe(|| {
                            run_index(kind, keys, threads, parts)
                        }));
                        match r {
                            Ok(s) => samples.push(s),
                            Err(_) if kind == IndexKind::Hash => {
                                hash_ok = false;
                                break;
                            }
                            Err(e) => std::panic::resume_unwind(e),
                        }
                    }
                    if !samples.is_empty() {
                        row(&kind.to_string(), dist, threads, parts, n, median(samples));
                    }
                }
            }
        }
    }
    for (dist, keys) in dists {
        if !wanted("std", dist, 1, 1) {
            continue;
        }
        let s = (0..RUNS)
            .map(|_| {
                run_std::<HashMap<u32, u32>>(keys, |m, k, v| {
                    m.insert(k, v);
                })
            })
            .collect();
        row("std HashMap", dist, 1, 1, n, median(s));
        let s = (0..RUNS)
            .map(|_| {
                run_std::<BTreeMap<u32, u32>>(keys, |m, k, v| {
                    m.insert(k, v);
                })
            })
            .collect();
        row("std BTreeMap", dist, 1, 1, n, median(s));
    }
    if !hash_ok {
        println!("\nHASH: not measured (the chained hash table is not implemented yet).");
    }
}
