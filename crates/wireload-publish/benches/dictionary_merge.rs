//! The dictionary steps of a Shared Loading partition (CIDR 2019, section 4.1) at the size
//! the push client and a `COMPRESSION dictionary` load meet them: 50 fragments of 100,000
//! rows, per column the sort step of each fragment ([`encode_fragment`]), then
//! [`merge_column`] of the fragments' dictionaries and codes into one partition dictionary.
//!
//! Columns: TPC-H lineitem's `l_comment` (tpchgen, 10-43 characters, about 3/4 distinct
//! over the partition) and `l_orderkey` (8-byte, about 1/4 distinct, ascending: the
//! fragments' dictionaries barely overlap), and 8-byte random integers drawn from a pool of
//! a quarter of the rows (every fragment's dictionary spans the whole range: the merge's
//! worst case).
//!
//! Phases, each the median of [`RUNS`] runs on one thread:
//! - `sort`: `encode_fragment` of every fragment (dictionary and codes);
//! - `merge`: `merge_column` of the 50 encoded fragments (validation of each fragment's
//!   dictionary and codes, the k-way merge, the new dictionary, every fragment's codes
//!   mapped to it);
//! - `plain`: `merge_column` of the 50 plain fragments, the client's call (sort + merge).
//!
//! Run: `cargo bench -p wireload-storage --bench dictionary_merge`. `DICT_BENCH_RUNS` sets
//! the runs, `DICT_BENCH_FRAGMENTS` the fragments (of 100,000 rows).

use std::collections::HashSet;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, StringArray};
use arrow::compute::take;
use arrow::datatypes::Int64Type;
use rand::{Rng, SeedableRng};
use tpchgen::generators::LineItemGenerator;
use wireload_publish::dictionary::{FragmentColumn, MergedColumn, encode_fragment, merge_column};
use wireload_storage::dictionary::is_valid_dictionary;

/// Runs per phase; the median is printed.
const RUNS: usize = 5;
/// Rows of a fragment.
const FRAGMENT_ROWS: usize = 100_000;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Median seconds of `runs` runs of `f` (after none: the data are warm from generation).
fn median_secs<T>(runs: usize, mut f: impl FnMut() -> T) -> f64 {
    let mut secs: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            black_box(f());
            start.elapsed().as_secs_f64()
        })
        .collect();
    secs.sort_by(f64::total_cmp);
    secs[secs.len() / 2]
}

/// Checks a merge's output: a sorted, unique dictionary of `distinct` entries, one column
/// per fragment of the fragment's length, and every row of the first and last fragments
/// decoding to its value.
fn check(merged: &MergedColumn, fragments: &[ArrayRef], distinct: usize) {
    let dictionary = &merged.dictionary;
    assert_eq!(dictionary.len(), distinct, "dictionary entries");
    assert!(
        is_valid_dictionary(dictionary),
        "dictionary not sorted and unique"
    );
    assert!(merged.existing.as_ref().is_none_or(Vec::is_empty));
    assert_eq!(merged.incoming.len(), fragments.len());
    for (column, fragment) in merged.incoming.iter().zip(fragments) {
        assert_eq!(column.len(), fragment.len());
    }
    for k in [0, fragments.len() - 1] {
        let column = merged.incoming[k].as_any_dictionary();
        let decoded = take(column.values().as_ref(), column.keys(), None).unwrap();
        assert_eq!(
            decoded.as_ref(),
            fragments[k].as_ref(),
            "fragment {k} decoded"
        );
    }
}

/// Times the phases over `fragments` and prints one row per phase.
fn run(name: &str, fragments: &[ArrayRef], distinct: usize, runs: usize) {
    let rows: usize = fragments.iter().map(|f| f.len()).sum();
    let encoded: Vec<(ArrayRef, ArrayRef)> = fragments
        .iter()
        .map(|f| encode_fragment(f).unwrap())
        .collect();
    let fragment_entries: usize = encoded.iter().map(|(d, _)| d.len()).sum();
    for ((dictionary, codes), fragment) in encoded.iter().zip(fragments) {
        assert!(is_valid_dictionary(dictionary));
        assert_eq!(codes.len(), fragment.len());
    }
    let sort = median_secs(runs, || {
        fragments
            .iter()
            .map(|f| encode_fragment(f).unwrap())
            .collect::<Vec<_>>()
    });
    let as_encoded = || {
        encoded
            .iter()
            .map(|(dictionary, codes)| FragmentColumn::Encoded {
                dictionary: Arc::clone(dictionary),
                codes: Arc::clone(codes),
            })
            .collect::<Vec<_>>()
    };
    let as_plain = || {
        fragments
            .iter()
            .map(|f| FragmentColumn::Plain(Arc::clone(f)))
            .collect::<Vec<_>>()
    };
    check(
        &merge_column(None, &[], as_encoded()).unwrap(),
        fragments,
        distinct,
    );
    check(
        &merge_column(None, &[], as_plain()).unwrap(),
        fragments,
        distinct,
    );
    let merge = median_secs(runs, || merge_column(None, &[], as_encoded()).unwrap());
    let plain = median_secs(runs, || merge_column(None, &[], as_plain()).unwrap());
    println!(
        "{name}: {} fragments, {rows} rows, {fragment_entries} fragment entries, {distinct} distinct",
        fragments.len()
    );
    for (phase, secs) in [("sort", sort), ("merge", merge), ("plain", plain)] {
        println!(
            "  {phase:<6} {:>9.1} ms {:>8.2} M rows/s {:>8.2} M entries/s",
            secs * 1e3,
            rows as f64 / secs / 1e6,
            fragment_entries as f64 / secs / 1e6
        );
    }
}

fn main() {
    let runs = env_or("DICT_BENCH_RUNS", RUNS).max(1);
    let count = env_or("DICT_BENCH_FRAGMENTS", 50).max(1);
    let rows = count * FRAGMENT_ROWS;
    let start = Instant::now();
    let mut comments = Vec::with_capacity(rows);
    let mut orderkeys = Vec::with_capacity(rows);
    // Scale factor 1 has about 6M rows; a larger one for more than 60 fragments.
    let scale = (rows as f64 / 6.0e6).ceil().max(1.0);
    for item in LineItemGenerator::new(scale, 1, 1).iter().take(rows) {
        comments.push(item.l_comment.to_owned());
        orderkeys.push(item.l_orderkey);
    }
    assert_eq!(comments.len(), rows, "tpchgen made fewer rows");
    let mut rng = rand::rngs::StdRng::seed_from_u64(17);
    let pool: Vec<i64> = (0..rows / 4).map(|_| rng.random()).collect();
    let random: Vec<i64> = (0..rows)
        .map(|_| pool[rng.random_range(0..pool.len())])
        .collect();
    println!(
        "generated in {:.1} s; {runs} runs a phase, medians; rows/s over all rows, entries/s \
         over the fragments' dictionaries",
        start.elapsed().as_secs_f64()
    );

    let strings: Vec<ArrayRef> = comments
        .chunks(FRAGMENT_ROWS)
        .map(|c| Arc::new(StringArray::from_iter_values(c)) as ArrayRef)
        .collect();
    let distinct = comments.iter().collect::<HashSet<_>>().len();
    drop(comments);
    run("l_comment (Utf8)", &strings, distinct, runs);
    drop(strings);

    for (name, values) in [
        ("l_orderkey (Int64)", orderkeys),
        ("random Int64, 1/4 distinct", random),
    ] {
        let distinct = values.iter().collect::<HashSet<_>>().len();
        let fragments: Vec<ArrayRef> = values
            .chunks(FRAGMENT_ROWS)
            .map(|c| Arc::new(Int64Array::from(c.to_vec())) as ArrayRef)
            .collect();
        assert!(
            fragments
                .iter()
                .all(|f| f.as_primitive_opt::<Int64Type>().is_some())
        );
        run(name, &fragments, distinct, runs);
    }
}
