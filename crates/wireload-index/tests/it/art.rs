//! The adaptive radix tree through the public [`Index`] API: segments built in parallel and
//! merged on rayon pools of 1–4 threads must answer every lookup and range scan as a
//! `BTreeMap` over the same keys does, detect duplicates, and stay persistent.

use std::ops::Bound;

use crate::common::{Model, enc_str, enc_u32, keys_of, model_range};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use wireload_index::{Duplicate, EntryRef, Index, IndexKind, RowId};

// ---------------------------------------------------------------------------------------
// Key encodings (as the key encoder writes them)

/// i64 encoding of a 64-bit value.
fn enc_u64(v: u64) -> Vec<u8> {
    (v ^ (1 << 63)).to_be_bytes().to_vec()
}

// ---------------------------------------------------------------------------------------
// The reference: a BTreeMap and the prefix-aware bounds of `Index::range`

fn model(segments: &[Vec<Vec<u8>>]) -> Model {
    let mut m = Model::new();
    for (s, keys) in segments.iter().enumerate() {
        for (p, k) in keys.iter().enumerate() {
            m.entry(k.clone())
                .or_default()
                .push(EntryRef::new(s as u32, p as u32));
        }
    }
    m
}

// ---------------------------------------------------------------------------------------
// Building and merging

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool")
}

/// Cuts `keys` into `n` consecutive segments at positions drawn from `seed` (some may be
/// empty).
fn split(keys: &[Vec<u8>], n: usize, seed: u64) -> Vec<Vec<Vec<u8>>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut cuts: Vec<usize> = (1..n).map(|_| rng.random_range(0..=keys.len())).collect();
    cuts.sort_unstable();
    let mut out = Vec::with_capacity(n);
    let mut at = 0;
    for c in cuts.into_iter().chain([keys.len()]) {
        out.push(keys[at..c].to_vec());
        at = c;
    }
    out
}

/// One index per segment (segment id = its position), built in parallel.
fn build_all(segments: &[Vec<Vec<u8>>], unique: bool) -> Result<Vec<Index>, Duplicate> {
    segments
        .par_iter()
        .enumerate()
        .map(|(i, keys)| Index::build(IndexKind::Art, unique, i as u32, keys_of(keys), 0))
        .collect()
}

/// The merged index of all segments, built and merged on a pool of `threads`.
fn build_merged(
    segments: &[Vec<Vec<u8>>],
    unique: bool,
    threads: usize,
) -> Result<Index, Duplicate> {
    pool(threads).install(|| Index::merge_all(build_all(segments, unique)?))
}

/// Checks every answer of `index` against the model.
fn check_index(index: &Index, m: &Model, probes: &[Vec<u8>], seed: u64) {
    let n: usize = m.values().map(Vec::len).sum();
    assert_eq!(index.len(), n);
    assert_eq!(index.kind(), IndexKind::Art);
    assert!(index.is_ordered());
    // every entry, in key order
    let mut out = Vec::new();
    index.entries(&mut out);
    let want: Vec<EntryRef> = m.values().flatten().copied().collect();
    assert_eq!(out, want, "entries in key order");
    // point lookups of present and absent keys
    for (k, v) in m {
        out.clear();
        index.lookup(k, &mut out);
        assert_eq!(&out, v, "lookup {k:02x?}");
    }
    for k in probes {
        out.clear();
        index.lookup(k, &mut out);
        assert_eq!(&out, m.get(k).unwrap_or(&Vec::new()), "lookup {k:02x?}");
    }
    // ranges: bounds drawn from keys, probes and their prefixes, all four kinds
    let mut rng = StdRng::seed_from_u64(seed);
    let pick = |rng: &mut StdRng| -> Vec<u8> {
        let k = if !m.is_empty() && rng.random_bool(0.6) {
            m.keys().nth(rng.random_range(0..m.len())).unwrap().clone()
        } else if !probes.is_empty() {
            probes[rng.random_range(0..probes.len())].clone()
        } else {
            vec![rng.random()]
        };
        match rng.random_range(0..4) {
            // a prefix (for composite keys often the leading column)
            0 => k[..rng.random_range(0..=k.len())].to_vec(),
            // a near neighbour
            1 if !k.is_empty() => {
                let mut k = k;
                let i = rng.random_range(0..k.len());
                k[i] = k[i].wrapping_add(if rng.random() { 1 } else { 255 });
                k
            }
            _ => k,
        }
    };
    for _ in 0..24 {
        let (a, b) = (pick(&mut rng), pick(&mut rng));
        let (a, b) = if rng.random_bool(0.8) && a > b {
            (b, a)
        } else {
            (a, b)
        };
        let (ka, kb): (u8, u8) = (rng.random_range(0..3), rng.random_range(0..3));
        let lo = match ka {
            0 => Bound::Included(a.as_slice()),
            1 => Bound::Excluded(a.as_slice()),
            _ => Bound::Unbounded,
        };
        let hi = match kb {
            0 => Bound::Included(b.as_slice()),
            1 => Bound::Excluded(b.as_slice()),
            _ => Bound::Unbounded,
        };
        out.clear();
        assert!(index.range(lo, hi, &mut out));
        assert_eq!(out, model_range(m, lo, hi), "range {lo:02x?} .. {hi:02x?}");
        // prefix scans
        out.clear();
        assert!(index.prefix(&a, &mut out));
        let p = Bound::Included(a.as_slice());
        assert_eq!(out, model_range(m, p, p), "prefix {a:02x?}");
    }
}

/// Builds the segments of `keys` (in the given order) in parallel, merges them, and
/// checks the result against the model and against one index built sequentially.
fn check_keys(keys: Vec<Vec<u8>>, probes: Vec<Vec<u8>>, n: usize, threads: usize, seed: u64) {
    let unique = {
        let mut s = keys.clone();
        s.sort();
        s.windows(2).all(|w| w[0] != w[1])
    };
    let segments = split(&keys, n, seed);
    let m = model(&segments);
    let index = build_merged(&segments, unique, threads).expect("no duplicates");
    check_index(&index, &m, &probes, seed);
    // the same entries (by key) as an index built by sequential insertion of all keys
    let whole = Index::build(IndexKind::Art, unique, 0, keys_of(&keys), 0).expect("ok");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    index.entries(&mut a);
    whole.entries(&mut b);
    let ka: Vec<&[u8]> = a.iter().map(|&e| index.key(e)).collect();
    let kb: Vec<&[u8]> = b.iter().map(|&e| whole.key(e)).collect();
    assert_eq!(ka, kb);
}

// ---------------------------------------------------------------------------------------
// Key sets

fn distinct<T: Ord + Clone>(mut v: Vec<T>, seed: u64, shuffle: bool) -> Vec<T> {
    v.sort();
    v.dedup();
    if shuffle {
        v.shuffle(&mut StdRng::seed_from_u64(seed));
    }
    v
}

/// Strings sharing long prefixes (longer than a node keeps inline), some holding 0x00.
fn string_keys() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let bases = prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 1..5);
    (
        bases,
        prop::collection::vec(
            (
                any::<prop::sample::Index>(),
                prop::collection::vec(0u8..4, 0..6),
            ),
            1..400,
        ),
    )
        .prop_map(|(bases, picks)| {
            picks
                .into_iter()
                .map(|(i, tail)| {
                    let mut s = bases[i.index(bases.len())].clone();
                    s.extend(tail);
                    enc_str(&s)
                })
                .collect()
        })
}

fn config() -> ProptestConfig {
    if cfg!(miri) {
        // Miri is slow (minutes per case even so: the deterministic tests below are the
        // ones to run under it), and isolates the file system (no failure file)
        return ProptestConfig {
            cases: 1,
            failure_persistence: None,
            ..ProptestConfig::default()
        };
    }
    ProptestConfig {
        cases: 96,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn ordered_dense(
        n_keys in 0u32..3000,
        start in any::<u32>(),
        n in 1usize..=16,
        threads in 1usize..=4,
        seed in any::<u64>(),
    ) {
        let keys: Vec<Vec<u8>> = (0..n_keys).map(|i| enc_u32(start.wrapping_add(i))).collect();
        let keys = distinct(keys, seed, false);
        let probes = vec![
            enc_u32(start.wrapping_sub(1)),
            enc_u32(start.wrapping_add(n_keys)),
            vec![0x80],
        ];
        check_keys(keys, probes, n, threads, seed);
    }

    #[test]
    fn random_dense(
        n_keys in 0u32..3000,
        n in 1usize..=16,
        threads in 1usize..=4,
        seed in any::<u64>(),
    ) {
        let keys: Vec<Vec<u8>> = (0..n_keys).map(enc_u32).collect();
        let keys = distinct(keys, seed, true);
        let probes = vec![enc_u32(n_keys), enc_u32(u32::MAX)];
        check_keys(keys, probes, n, threads, seed);
    }

    #[test]
    fn sparse_u32(
        v in prop::collection::vec(any::<u32>(), 0..2000),
        probes in prop::collection::vec(any::<u32>(), 0..20),
        n in 1usize..=16,
        threads in 1usize..=4,
        seed in any::<u64>(),
    ) {
        let keys = distinct(v.into_iter().map(enc_u32).collect(), seed, true);
        check_keys(keys, probes.into_iter().map(enc_u32).collect(), n, threads, seed);
    }

    #[test]
    fn sparse_u64(
        v in prop::collection::vec(any::<u64>(), 0..2000),
        n in 1usize..=16,
        threads in 1usize..=4,
        seed in any::<u64>(),
    ) {
        // clustered high bits, so that nodes share prefixes at every depth
        let keys = v.into_iter().map(|x| enc_u64(x & 0xFF00_00FF_F0F0_FFFF)).collect();
        let keys = distinct(keys, seed, true);
        check_keys(keys, vec![enc_u64(0), enc_u64(u64::MAX)], n, threads, seed);
    }

    #[test]
    fn strings_long_prefixes(
        keys in string_keys(),
        n in 1usize..=16,
        threads in 1usize..=4,
        seed in any::<u64>(),
    ) {
        let keys = distinct(keys, seed, true);
        let probes = vec![enc_str(b""), enc_str(&[0; 30]), enc_str(&[3; 50])];
        check_keys(keys, probes, n, threads, seed);
    }

    #[test]
    fn composite_two_ints(
        v in prop::collection::vec((0u32..20, any::<u32>()), 0..2000),
        n in 1usize..=16,
        threads in 1usize..=4,
        seed in any::<u64>(),
    ) {
        let keys = v.into_iter().map(|(a, b)| [enc_u32(a), enc_u32(b)].concat()).collect();
        let keys = distinct(keys, seed, true);
        // leading-column probes: prefix bounds select whole key groups
        let probes = (0..22).map(enc_u32).collect();
        check_keys(keys, probes, n, threads, seed);
    }

    #[test]
    fn composite_int_string(
        v in prop::collection::vec((0u32..8, prop::collection::vec(0u8..3, 0..12)), 0..1500),
        n in 1usize..=16,
        threads in 1usize..=4,
        seed in any::<u64>(),
    ) {
        let keys = v.into_iter().map(|(a, s)| [enc_u32(a), enc_str(&s)].concat()).collect();
        let keys = distinct(keys, seed, true);
        let probes = (0..9).map(enc_u32).collect();
        check_keys(keys, probes, n, threads, seed);
    }

    /// Non-unique: keys from a small domain, every duplicate returned in insertion order.
    #[test]
    fn non_unique(
        v in prop::collection::vec(0u32..300, 0..2500),
        n in 1usize..=16,
        threads in 1usize..=4,
        seed in any::<u64>(),
    ) {
        let keys: Vec<Vec<u8>> = v.into_iter().map(enc_u32).collect();
        check_keys(keys, vec![enc_u32(301)], n, threads, seed);
    }

    /// Non-unique strings: duplicates that share long prefixes with other keys.
    #[test]
    fn non_unique_strings(
        keys in string_keys(),
        n in 1usize..=16,
        threads in 1usize..=4,
        seed in any::<u64>(),
    ) {
        let mut keys = keys;
        let again = keys.clone();
        keys.extend(again.into_iter().step_by(3));
        keys.shuffle(&mut StdRng::seed_from_u64(seed));
        check_keys(keys, vec![], n, threads, seed);
    }

    /// A unique index rejects a key present twice, whichever segments hold it.
    #[test]
    fn duplicates_detected(
        v in prop::collection::vec(any::<u32>(), 2..1500),
        n in 2usize..=16,
        threads in 1usize..=4,
        seed in any::<u64>(),
        dup in any::<prop::sample::Index>(),
    ) {
        let mut keys: Vec<Vec<u8>> = distinct(v.into_iter().map(enc_u32).collect(), seed, true);
        prop_assume!(keys.len() >= 2);
        // a copy of one key somewhere else
        let mut rng = StdRng::seed_from_u64(seed);
        let k = keys[dup.index(keys.len())].clone();
        let at = rng.random_range(0..=keys.len());
        keys.insert(at, k);
        let segments = split(&keys, n, seed);
        check_duplicate(&segments, threads);
    }

    /// The first key of a segment equal to the last key of the one before.
    #[test]
    fn duplicates_at_segment_borders(
        n_keys in 2u32..2000,
        n in 2usize..=16,
        threads in 1usize..=4,
        seed in any::<u64>(),
        ordered in any::<bool>(),
    ) {
        let keys = distinct((0..n_keys).map(|i| enc_u32(i * 7)).collect(), seed, !ordered);
        let mut segments = split(&keys, n, seed);
        segments.retain(|s| !s.is_empty());
        prop_assume!(segments.len() >= 2);
        let i = (seed as usize) % (segments.len() - 1);
        let last = segments[i].last().unwrap().clone();
        segments[i + 1].insert(0, last);
        check_duplicate(&segments, threads);
    }
}

/// Building or merging `segments` as a unique index fails with two entries of equal keys.
fn check_duplicate(segments: &[Vec<Vec<u8>>], threads: usize) {
    let key = |e: EntryRef| &segments[e.segment() as usize][e.pos() as usize];
    let dup = match pool(threads).install(|| build_all(segments, true)) {
        // the duplicate lies within one segment
        Err(d) => d,
        Ok(parts) => pool(threads)
            .install(|| Index::merge_all(parts))
            .expect_err("a duplicate across segments"),
    };
    assert_ne!(dup.first, dup.second);
    assert_eq!(key(dup.first), key(dup.second), "{dup}");
    // the same keys without uniqueness: the duplicate is found twice
    let index = build_merged(segments, false, threads).expect("non-unique");
    let mut out = Vec::new();
    index.lookup(key(dup.first), &mut out);
    assert!(out.contains(&dup.first) && out.contains(&dup.second));
}

// ---------------------------------------------------------------------------------------
// Deterministic cases

/// Merging into a clone of an index leaves the original answering as before.
#[test]
fn persistence_merge_into_clone() {
    for (keys_a, keys_b) in [
        // disjoint ranges: the merge only links subtrees
        (
            (0..5000).map(enc_u32).collect::<Vec<_>>(),
            (5000..9000).map(enc_u32).collect::<Vec<_>>(),
        ),
        // interleaved: every node on both sides is merged
        (
            (0..4000).map(|i| enc_u32(i * 2)).collect(),
            (0..4000).map(|i| enc_u32(i * 2 + 1)).collect(),
        ),
        // strings splitting compressed paths
        (
            (0..500)
                .map(|i| enc_str(format!("customer#{:09}", i * 3).as_bytes()))
                .collect(),
            (0..500)
                .map(|i| enc_str(format!("customer#{:09}x", i * 5).as_bytes()))
                .collect(),
        ),
    ] {
        for threads in [1, 3] {
            let segments = vec![keys_a.clone(), keys_b.clone()];
            let a = Index::build(IndexKind::Art, true, 0, keys_of(&keys_a), 0).unwrap();
            let m_a = model(&segments[..1]);
            check_index(&a, &m_a, &keys_b, 7);
            let b = Index::build(IndexKind::Art, true, 1, keys_of(&keys_b), 0).unwrap();
            let b_before = b.clone();
            let merged = pool(threads)
                .install(|| Index::merge(a.clone(), b.clone()))
                .unwrap();
            check_index(&merged, &model(&segments), &[], 8);
            // the originals are untouched
            check_index(&a, &m_a, &keys_b, 9);
            check_index(&b_before, &model(&[vec![], keys_b.clone()]), &keys_a, 10);
            // merged the other way round, into a clone of b
            let merged2 = pool(threads)
                .install(|| Index::merge(b.clone(), a.clone()))
                .unwrap();
            assert_eq!(merged2.len(), merged.len());
            check_index(&a, &m_a, &keys_b, 11);
            // and inserting more (a one-key index merged in) into a clone of the merge
            let mut c =
                Index::build(IndexKind::Art, true, 2, keys_of(&[enc_u32(u32::MAX)]), 0).unwrap();
            c.place_segment(2, RowId::default());
            if keys_a[0].len() == 4 {
                let merged3 = Index::merge(merged.clone(), c).unwrap();
                assert_eq!(merged3.len(), merged.len() + 1);
                check_index(&merged, &model(&segments), &[], 12);
            }
        }
    }
}

/// A failed unique merge leaves both inputs as they were.
#[test]
fn persistence_failed_merge() {
    let keys_a: Vec<Vec<u8>> = (0..3000).map(enc_u32).collect();
    let keys_b: Vec<Vec<u8>> = (2990..6000).map(enc_u32).collect();
    let a = Index::build(IndexKind::Art, true, 0, keys_of(&keys_a), 0).unwrap();
    let b = Index::build(IndexKind::Art, true, 1, keys_of(&keys_b), 0).unwrap();
    let d = Index::merge(a.clone(), b.clone()).unwrap_err();
    assert_eq!(a.key(d.first), b.key(d.second));
    assert_eq!(d.first.segment(), 0, "first: the left index's entry");
    check_index(&a, &model(std::slice::from_ref(&keys_a)), &[], 1);
    check_index(&b, &model(&[vec![], keys_b.clone()]), &[], 2);
}

/// Row ids of merged segments.
#[test]
fn row_ids() {
    let segments: Vec<Vec<Vec<u8>>> = (0..4)
        .map(|s| (0..100).map(|i| enc_u32(i * 4 + s)).collect())
        .collect();
    let mut index = build_merged(&segments, true, 2).unwrap();
    for s in 0..4 {
        index.place_segment(
            s,
            RowId {
                partition: s % 2,
                chunk: s,
                row: 1000 * s,
            },
        );
    }
    let mut out = Vec::new();
    for v in [0u32, 5, 399, 222] {
        out.clear();
        index.lookup(&enc_u32(v), &mut out);
        assert_eq!(out.len(), 1);
        let (s, i) = (v % 4, v / 4);
        assert_eq!(
            index.row_id(out[0]),
            RowId {
                partition: s % 2,
                chunk: s,
                row: 1000 * s + i
            }
        );
    }
}

/// Bigger trees: Node256 at the top levels (the parallel merge), ordered parts that merge
/// by linking subtrees, and an empty index merged in.
#[test]
fn large_parallel_merges() {
    // smaller under Miri, which is slow
    let n: u32 = if cfg!(miri) { 3_000 } else { 200_000 };
    let mut rng = StdRng::seed_from_u64(42);
    let dense: Vec<Vec<u8>> = (0..n).map(enc_u32).collect();
    let mut shuffled = dense.clone();
    shuffled.shuffle(&mut rng);
    let sparse = distinct((0..n / 2).map(|_| enc_u32(rng.random())).collect(), 1, true);
    for keys in [dense, shuffled, sparse] {
        for (n, threads) in [(8, 2), (5, 4), (1, 1)] {
            let mut segments = split(&keys, n, 3);
            segments.push(Vec::new());
            let index = build_merged(&segments, true, threads).unwrap();
            assert_eq!(index.len(), keys.len());
            let mut out = Vec::new();
            index.entries(&mut out);
            assert!(out.windows(2).all(|w| index.key(w[0]) < index.key(w[1])));
            for k in keys.iter().step_by(97) {
                out.clear();
                index.lookup(k, &mut out);
                assert_eq!(index.key(out[0]), k.as_slice());
            }
            assert!(index.heap_bytes() > keys.len() * 4);
        }
    }
}

/// Empty indexes and single keys.
#[test]
fn small_cases() {
    let empty = Index::empty(IndexKind::Art, true);
    assert!(empty.is_empty());
    let mut out = Vec::new();
    empty.entries(&mut out);
    assert!(out.is_empty());
    empty.lookup(&enc_u32(1), &mut out);
    assert!(out.is_empty());
    let one = Index::build(IndexKind::Art, true, 3, keys_of(&[enc_u32(9)]), 0).unwrap();
    let merged = Index::merge(empty.clone(), one.clone()).unwrap();
    assert_eq!(merged.len(), 1);
    let merged = Index::merge(merged, Index::empty(IndexKind::Art, true)).unwrap();
    merged.lookup(&enc_u32(9), &mut out);
    assert_eq!(out, vec![EntryRef::new(3, 0)]);
    out.clear();
    assert!(merged.range(Bound::Excluded(&enc_u32(9)), Bound::Unbounded, &mut out));
    assert!(out.is_empty());
}

#[test]
#[should_panic(expected = "prefix-free")]
fn keys_must_be_prefix_free() {
    let keys = keys_of(&[vec![1, 2, 3], vec![1, 2]]);
    let _ = Index::build(IndexKind::Art, false, 0, keys, 0);
}
