//! Removal of single entries (`Index::remove`) through the public API, for both kinds,
//! unique and not: random sequences of loads (build + merge), removals and removals of
//! everything, checked after every step against a `BTreeMap` model — lookups of present
//! and removed keys, entries (in key order for ART), ranges and prefixes (ART), `len` —
//! and against clones taken before a step (persistence).

use std::collections::{BTreeMap, HashSet};
use std::ops::Bound;

use crate::common::{Model, enc_str, enc_u32, keys_of, model_range};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use wireload_index::{Duplicate, EntryRef, Index, IndexKind, hash_buckets_for};

// ---------------------------------------------------------------------------------------
// Keys

/// The distinct keys a test case draws its loads from (prefix-free), by family:
/// 0: 32-bit integers in three groups of 256 (nodes of every size, collapses near the
/// root); 1: strings on a few long shared bases (paths longer than a node keeps inline);
/// 2: composite (integer, string).
fn key_pool(family: u8, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut pool: Vec<Vec<u8>> = match family {
        0 => (0..3u32)
            .flat_map(|g| (0..256u32).map(move |b| enc_u32(g << 16 | b)))
            .collect(),
        1 => {
            let bases: Vec<Vec<u8>> = (0..3)
                .map(|_| {
                    let len = rng.random_range(0..40);
                    (0..len).map(|_| rng.random_range(0..4u8)).collect()
                })
                .collect();
            (0..500)
                .map(|_| {
                    let mut s = bases[rng.random_range(0..bases.len())].clone();
                    let tail = rng.random_range(0..5);
                    s.extend((0..tail).map(|_| rng.random_range(0..4u8)));
                    enc_str(&s)
                })
                .collect()
        }
        _ => (0..500)
            .map(|_| {
                let a = rng.random_range(0..3u32);
                let len = rng.random_range(0..7);
                let s: Vec<u8> = (0..len).map(|_| rng.random_range(0..3u8)).collect();
                [enc_u32(a), enc_str(&s)].concat()
            })
            .collect(),
    };
    pool.sort();
    pool.dedup();
    pool.shuffle(&mut rng);
    pool
}

// ---------------------------------------------------------------------------------------
// The model

/// `v` sorted (hash indexes answer in no particular order).
fn sorted(mut v: Vec<EntryRef>) -> Vec<EntryRef> {
    v.sort_unstable();
    v
}

/// Checks every answer of `index` against `m`: `len`, entries, lookups of the model's keys
/// and of `probes` (removed or never loaded keys), and for ART ranges and prefixes with
/// bounds drawn from `seed`.
fn check(index: &Index, m: &Model, probes: &[Vec<u8>], seed: u64) {
    let ordered = index.kind() == IndexKind::Art;
    let same = |got: Vec<EntryRef>, want: Vec<EntryRef>, what: &dyn Fn() -> String| {
        if ordered {
            assert_eq!(got, want, "{}", what());
        } else {
            assert_eq!(sorted(got), sorted(want), "{}", what());
        }
    };
    let total: usize = m.values().map(Vec::len).sum();
    assert_eq!(index.len(), total, "len");
    assert_eq!(index.is_empty(), total == 0);
    let mut out = Vec::new();
    index.entries(&mut out);
    same(
        out.clone(),
        m.values().flatten().copied().collect(),
        &|| "entries".into(),
    );
    for (k, v) in m {
        out.clear();
        index.lookup(k, &mut out);
        same(out.clone(), v.clone(), &|| format!("lookup {k:02x?}"));
    }
    for k in probes {
        out.clear();
        index.lookup(k, &mut out);
        let want = m.get(k).cloned().unwrap_or_default();
        same(out.clone(), want, &|| format!("lookup of probe {k:02x?}"));
    }
    if !ordered {
        assert!(!index.range(Bound::Unbounded, Bound::Unbounded, &mut out));
        return;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let keys: Vec<&Vec<u8>> = m.keys().chain(probes).collect();
    let pick = |rng: &mut StdRng| -> Vec<u8> {
        let k = if keys.is_empty() {
            vec![rng.random()]
        } else {
            keys[rng.random_range(0..keys.len())].clone()
        };
        match rng.random_range(0..3) {
            0 => k[..rng.random_range(0..=k.len())].to_vec(),
            _ => k,
        }
    };
    for _ in 0..8 {
        let (a, b) = (pick(&mut rng), pick(&mut rng));
        let (a, b) = if a > b { (b, a) } else { (a, b) };
        let bound = |k: u8, p: &[u8]| -> Bound<Vec<u8>> {
            match k {
                0 => Bound::Included(p.to_vec()),
                1 => Bound::Excluded(p.to_vec()),
                _ => Bound::Unbounded,
            }
        };
        let lo = bound(rng.random_range(0..3), &a);
        let hi = bound(rng.random_range(0..3), &b);
        let (lo, hi) = (
            lo.as_ref().map(Vec::as_slice),
            hi.as_ref().map(Vec::as_slice),
        );
        out.clear();
        assert!(index.range(lo, hi, &mut out));
        assert_eq!(out, model_range(m, lo, hi), "range {lo:02x?} .. {hi:02x?}");
        out.clear();
        assert!(index.prefix(&a, &mut out));
        let p = Bound::Included(a.as_slice());
        assert_eq!(out, model_range(m, p, p), "prefix {a:02x?}");
    }
}

// ---------------------------------------------------------------------------------------
// Random sequences

/// One step of a sequence.
#[derive(Debug, Clone)]
enum Op {
    /// A new segment of up to `n` keys (drawn with `seed`) built with `buckets` buckets
    /// (hash), every `pre_remove`-th of its entries removed (0: none), then merged in: on the
    /// left or the right, into a clone (`keep_old`, the clone checked after) or not. For a
    /// unique index the keys are distinct and not live, unless `dup` plants a live one.
    Load {
        n: usize,
        seed: u64,
        buckets: usize,
        pre_remove: usize,
        left: bool,
        keep_old: bool,
        dup: bool,
    },
    /// Removes one entry, from a clone when `keep_old`.
    Remove {
        at: prop::sample::Index,
        keep_old: bool,
    },
    /// Removes the entries at positions `offset mod every` of every `every`.
    RemoveMany { every: usize, offset: usize },
    /// Removes every entry.
    RemoveAll,
}

fn op() -> impl Strategy<Value = Op> {
    let load = (
        0usize..200,
        any::<u64>(),
        prop::sample::select(vec![1usize, 8, 64, 1024, 2048]),
        prop::sample::select(vec![0usize, 0, 2, 5]),
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.15),
    )
        .prop_map(
            |(n, seed, buckets, pre_remove, left, keep_old, dup)| Op::Load {
                n,
                seed,
                buckets,
                pre_remove,
                left,
                keep_old,
                dup,
            },
        );
    prop_oneof![
        4 => load,
        4 => (any::<prop::sample::Index>(), any::<bool>())
            .prop_map(|(at, keep_old)| Op::Remove { at, keep_old }),
        2 => (2usize..6, 0usize..6).prop_map(|(every, offset)| Op::RemoveMany { every, offset }),
        1 => Just(Op::RemoveAll),
    ]
}

/// An index under test and its model.
struct State {
    kind: IndexKind,
    unique: bool,
    index: Index,
    model: Model,
    /// the keys of every segment ever loaded, by id
    segments: BTreeMap<u32, Vec<Vec<u8>>>,
    /// every entry removed so far
    removed: Vec<EntryRef>,
    next_id: u32,
}

impl State {
    fn new(kind: IndexKind, unique: bool) -> Self {
        State {
            kind,
            unique,
            index: Index::empty(kind, unique),
            model: Model::new(),
            segments: BTreeMap::new(),
            removed: Vec::new(),
            next_id: 0,
        }
    }

    fn key(&self, e: EntryRef) -> &[u8] {
        &self.segments[&e.segment()][e.pos() as usize]
    }

    /// Every live entry, in model order.
    fn live(&self) -> Vec<EntryRef> {
        self.model.values().flatten().copied().collect()
    }

    /// Keys of removed entries (deduplicated), the probes of every check.
    fn probes(&self) -> Vec<Vec<u8>> {
        let set: HashSet<&[u8]> = self.removed.iter().map(|&e| self.key(e)).collect();
        let mut v: Vec<Vec<u8>> = set.into_iter().map(<[u8]>::to_vec).collect();
        v.sort();
        v
    }

    /// Removes live entry `e` from the index (it must report it, once) and the model.
    fn remove(&mut self, e: EntryRef) {
        let len = self.index.len();
        assert!(self.index.remove(e), "remove {e:?}");
        assert!(!self.index.remove(e), "{e:?} removed twice");
        assert_eq!(self.index.len(), len - 1);
        let k = self.key(e).to_vec();
        let v = self.model.get_mut(&k).expect("live key");
        v.retain(|&x| x != e);
        if v.is_empty() {
            self.model.remove(&k);
        }
        self.removed.push(e);
        // the key of a removed entry stays readable
        assert_eq!(self.index.key(e), &k[..]);
    }

    /// Runs `op`; `pool` holds the keys loads draw from.
    fn apply(&mut self, op: &Op, pool: &[Vec<u8>]) {
        match *op {
            Op::Load {
                n,
                seed,
                buckets,
                pre_remove,
                left,
                keep_old,
                dup,
            } => self.load(n, seed, buckets, pre_remove, left, keep_old, dup, pool),
            Op::Remove { at, keep_old } => {
                let live = self.live();
                if live.is_empty() {
                    return;
                }
                let e = live[at.index(live.len())];
                let old = keep_old.then(|| (self.index.clone(), self.model.clone()));
                self.remove(e);
                if let Some((index, model)) = old {
                    // the clone still holds `e`
                    let mut out = Vec::new();
                    index.lookup(self.key(e), &mut out);
                    assert!(out.contains(&e));
                    check(&index, &model, &self.probes(), 1);
                }
            }
            Op::RemoveMany { every, offset } => {
                for (i, e) in self.live().into_iter().enumerate() {
                    if i % every == offset % every {
                        self.remove(e);
                    }
                }
            }
            Op::RemoveAll => {
                let old = (self.index.clone(), self.model.clone());
                let mut live = self.live();
                live.reverse();
                for e in live {
                    self.remove(e);
                }
                assert!(self.index.is_empty() && self.model.is_empty());
                let mut out = Vec::new();
                self.index.entries(&mut out);
                assert!(out.is_empty());
                check(&old.0, &old.1, &[], 2);
            }
        }
    }

    /// See [`Op::Load`].
    #[allow(clippy::too_many_arguments)]
    fn load(
        &mut self,
        n: usize,
        seed: u64,
        buckets: usize,
        pre_remove: usize,
        left: bool,
        keep_old: bool,
        dup: bool,
        pool: &[Vec<u8>],
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut keys: Vec<Vec<u8>> = Vec::with_capacity(n + 1);
        let removed = self.probes();
        for _ in 0..n {
            // a unique index gets back keys whose entries were removed, often
            let k = if self.unique && !removed.is_empty() && rng.random_bool(0.4) {
                &removed[rng.random_range(0..removed.len())]
            } else {
                &pool[rng.random_range(0..pool.len())]
            };
            keys.push(k.clone());
        }
        if self.unique {
            let mut seen = HashSet::new();
            keys.retain(|k| !self.model.contains_key(k) && seen.insert(k.clone()));
            if dup && !self.model.is_empty() {
                let live: Vec<&Vec<u8>> = self.model.keys().collect();
                let k = live[rng.random_range(0..live.len())].clone();
                keys.insert(rng.random_range(0..=keys.len()), k);
            }
        }
        let id = self.next_id;
        // sparse ids
        self.next_id += 1 + rng.random_range(0..3);
        self.segments.insert(id, keys.clone());
        let mut new = Index::build(self.kind, self.unique, id, keys_of(&keys), buckets)
            .expect("keys of a segment are distinct");
        // entries of the new segment removed before the merge: dead slots on its side
        let mut new_live: Vec<u32> = (0..keys.len() as u32).collect();
        if pre_remove > 0 {
            new_live.retain(|&pos| {
                if !(pos as usize).is_multiple_of(pre_remove) {
                    return true;
                }
                let e = EntryRef::new(id, pos);
                assert!(new.remove(e) && !new.remove(e));
                self.removed.push(e);
                false
            });
            assert_eq!(new.len(), new_live.len());
        }
        let clash = self.unique
            && new_live
                .iter()
                .any(|&pos| self.model.contains_key(&keys[pos as usize]));
        let merge = |a: Index, b: Index| {
            if left {
                Index::merge(b, a)
            } else {
                Index::merge(a, b)
            }
        };
        if clash {
            let d = merge(self.index.clone(), new).expect_err("a live key loaded again");
            self.check_duplicate(&d, id, left);
            return;
        }
        let old = keep_old.then(|| (self.index.clone(), self.model.clone()));
        let current = std::mem::replace(&mut self.index, Index::empty(self.kind, self.unique));
        self.index = merge(current, new).expect("no live key loaded again");
        // the model: the left index's entries first among equal keys
        let mut by_key: BTreeMap<&[u8], Vec<EntryRef>> = BTreeMap::new();
        for &pos in &new_live {
            by_key
                .entry(&keys[pos as usize])
                .or_default()
                .push(EntryRef::new(id, pos));
        }
        for (k, es) in by_key {
            let v = self.model.entry(k.to_vec()).or_default();
            if left {
                v.splice(0..0, es);
            } else {
                v.extend(es);
            }
        }
        if let Some((index, model)) = old {
            check(&index, &model, &self.probes(), 3);
        }
    }

    /// `d`, from a failed load of segment `id`, pairs a live entry with a new one of an
    /// equal key, the left index's first.
    fn check_duplicate(&self, d: &Duplicate, id: u32, left: bool) {
        let (new, old) = if left {
            (d.first, d.second)
        } else {
            (d.second, d.first)
        };
        assert_eq!(new.segment(), id, "{d}");
        assert_eq!(self.key(new), self.key(old), "{d}");
        assert!(!self.removed.contains(&new), "{d}: a removed entry");
        let live = &self.model[self.key(old)];
        assert!(live.contains(&old), "{d}: not a live entry");
    }

    /// Removing what the index does not hold changes nothing.
    fn check_misses(&mut self) {
        let len = self.index.len();
        let mut misses = vec![
            EntryRef::new(self.next_id + 7, 0),
            EntryRef::new(u32::MAX, 0),
            EntryRef::new(u32::MAX, u32::MAX - 1),
        ];
        if let Some((&id, keys)) = self.segments.iter().next() {
            misses.push(EntryRef::new(id, keys.len() as u32));
        }
        misses.extend(self.removed.iter().rev().take(3));
        for e in misses {
            assert!(!self.index.remove(e), "{e:?} not held");
        }
        assert_eq!(self.index.len(), len);
    }
}

/// Runs `ops` on an index of `kind`, checking after every step.
fn run(kind: IndexKind, unique: bool, family: u8, pool_seed: u64, ops: &[Op]) {
    let pool = key_pool(family, pool_seed);
    let mut st = State::new(kind, unique);
    for (step, op) in ops.iter().enumerate() {
        st.apply(op, &pool);
        st.check_misses();
        check(&st.index, &st.model, &st.probes(), step as u64);
    }
    // and the end: everything removed, then loaded again
    st.apply(&Op::RemoveAll, &pool);
    check(&st.index, &st.model, &st.probes(), 99);
    let reload = Op::Load {
        n: 60,
        seed: pool_seed,
        buckets: 1024,
        pre_remove: 0,
        left: false,
        keep_old: true,
        dup: false,
    };
    st.apply(&reload, &pool);
    check(&st.index, &st.model, &st.probes(), 100);
}

fn config() -> ProptestConfig {
    if cfg!(miri) {
        // as in tests/art.rs: Miri is slow and isolates the file system
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
    fn art_sequences(
        unique in any::<bool>(),
        family in 0u8..3,
        pool_seed in any::<u64>(),
        ops in prop::collection::vec(op(), 1..32),
    ) {
        run(IndexKind::Art, unique, family, pool_seed, &ops);
    }

    #[test]
    fn hash_sequences(
        unique in any::<bool>(),
        family in 0u8..3,
        pool_seed in any::<u64>(),
        ops in prop::collection::vec(op(), 1..32),
    ) {
        run(IndexKind::Hash, unique, family, pool_seed, &ops);
    }
}

// ---------------------------------------------------------------------------------------
// Deterministic cases

/// Each hash merge path (equal directories: concatenation; different: reinsertion either
/// way; overloaded: rebuild) of two indexes that both had entries removed, with either side
/// shared or not: the removed entries stay out (dead slots are not relinked), keys whose
/// entries were removed merge in again without a `Duplicate`, live ones still collide.
#[test]
fn hash_merge_paths_with_removed_entries() {
    let enc = |r: std::ops::Range<u32>| r.map(enc_u32).collect::<Vec<_>>();
    let a_keys = enc(0..3000);
    for (ba, bb) in [
        (4096, 4096),
        (8192, 4096),
        (4096, 8192),
        (1024, 1024),
        (16, 4),
    ] {
        for shared in [false, true] {
            for a_left in [true, false] {
                let mut a = Index::build(IndexKind::Hash, true, 0, keys_of(&a_keys), ba).unwrap();
                let a_shared = shared.then(|| a.clone());
                // every third entry of a removed: its key comes back in b
                let gone: Vec<u32> = (0..3000).step_by(3).collect();
                for &p in &gone {
                    assert!(a.remove(EntryRef::new(0, p)));
                }
                let mut b_keys: Vec<Vec<u8>> = gone.iter().map(|&p| enc_u32(p)).collect();
                b_keys.extend(enc(3000..3500));
                let mut b = Index::build(IndexKind::Hash, true, 1, keys_of(&b_keys), bb).unwrap();
                let b_shared = shared.then(|| b.clone());
                // and some of b's removed too
                for p in (0..b_keys.len() as u32).step_by(7) {
                    assert!(b.remove(EntryRef::new(1, p)));
                }
                let (a2, b2) = (a.clone(), b.clone());
                let m = if a_left {
                    Index::merge(a, b)
                } else {
                    Index::merge(b, a)
                };
                let mut m = m.unwrap_or_else(|d| panic!("{ba} {bb}: {d}"));
                let mut model = Model::new();
                for p in 0..3000u32 {
                    if p % 3 != 0 {
                        model.insert(enc_u32(p), vec![EntryRef::new(0, p)]);
                    }
                }
                for (p, k) in b_keys.iter().enumerate() {
                    if p % 7 != 0 {
                        model.insert(k.clone(), vec![EntryRef::new(1, p as u32)]);
                    }
                }
                let probes = enc(0..30);
                check(&m, &model, &probes, 0);
                if ba.max(bb) * 2 < m.len() {
                    // an overloaded merge rebuilt the directory (8 bytes a bucket)
                    let structure = m.heap_bytes() - m.segments().heap_bytes();
                    assert!(structure >= hash_buckets_for(m.len()) * 8, "{structure}");
                }
                // the merged index removes entries of either side, linked by the merge
                for e in [
                    EntryRef::new(0, 1),
                    EntryRef::new(1, 1),
                    EntryRef::new(1, 900),
                ] {
                    let k = m.key(e).to_vec();
                    assert!(m.remove(e) && !m.remove(e));
                    model.remove(&k);
                }
                assert!(!m.remove(EntryRef::new(0, 0)), "removed before the merge");
                check(&m, &model, &probes, 1);
                // a live key collides; one whose entry was removed does not
                let dup = |k: Vec<u8>| Index::build(IndexKind::Hash, true, 5, keys_of(&[k]), bb);
                let d = Index::merge(a2.clone(), dup(enc_u32(2)).unwrap()).unwrap_err();
                assert_eq!(
                    (d.first, d.second),
                    (EntryRef::new(0, 2), EntryRef::new(5, 0))
                );
                let d = Index::merge(dup(enc_u32(3002)).unwrap(), b2.clone()).unwrap_err();
                assert_eq!(
                    (d.first, d.second),
                    (EntryRef::new(5, 0), EntryRef::new(1, 1002))
                );
                assert_eq!(
                    Index::merge(a2.clone(), dup(enc_u32(3)).unwrap())
                        .unwrap()
                        .len(),
                    2001
                );
                // a removed entry of the smaller side whose key is live in the other: no
                // duplicate (the probes of a reinsertion or rebuild skip dead slots)
                let s_keys = [enc_u32(1), enc_u32(5000)];
                let mut s = Index::build(IndexKind::Hash, true, 6, keys_of(&s_keys), bb).unwrap();
                assert!(s.remove(EntryRef::new(6, 0)));
                let m2 = Index::merge(a2, s).unwrap();
                let mut want = Model::new();
                for p in (0..3000u32).filter(|p| p % 3 != 0) {
                    want.insert(enc_u32(p), vec![EntryRef::new(0, p)]);
                }
                want.insert(enc_u32(5000), vec![EntryRef::new(6, 1)]);
                check(&m2, &want, &[], 2);
                // b's entry 0 (key 0) was removed: key 0 is nowhere live now
                let again = Index::merge(m.clone(), dup(enc_u32(0)).unwrap()).unwrap();
                assert_eq!(again.len(), m.len() + 1);
                // the shared originals never saw a removal
                if let Some(a) = a_shared {
                    assert_eq!(a.len(), 3000);
                    let mut out = Vec::new();
                    a.lookup(&enc_u32(0), &mut out);
                    assert_eq!(out, vec![EntryRef::new(0, 0)]);
                }
                if let Some(b) = b_shared {
                    assert_eq!(b.len(), b_keys.len());
                }
            }
        }
    }
}

/// Removing a unique key's entry lets an equal key merge in, in both kinds, and an index
/// emptied by removals merges like an empty one.
#[test]
fn remove_then_load_equal_key() {
    for kind in [IndexKind::Art, IndexKind::Hash] {
        let keys: Vec<Vec<u8>> = (0..100).map(|i| enc_u32(i * 10)).collect();
        let mut a = Index::build(kind, true, 0, keys_of(&keys), 1024).unwrap();
        let b = || Index::build(kind, true, 1, keys_of(&[enc_u32(50)]), 1024).unwrap();
        assert!(Index::merge(a.clone(), b()).is_err());
        assert!(a.remove(EntryRef::new(0, 5)));
        let m = Index::merge(a.clone(), b()).unwrap();
        let mut out = Vec::new();
        m.lookup(&enc_u32(50), &mut out);
        assert_eq!(out, vec![EntryRef::new(1, 0)]);
        assert_eq!(m.len(), 100);
        // everything out: an empty index that still merges
        for p in 0..100 {
            a.remove(EntryRef::new(0, p));
        }
        assert!(a.is_empty());
        out.clear();
        a.entries(&mut out);
        assert!(out.is_empty());
        let c = Index::build(kind, true, 2, keys_of(&keys), 1024).unwrap();
        let m = Index::merge(c, a).unwrap();
        assert_eq!(m.len(), 100);
        // removed entries' keys stay readable in the merged index
        assert_eq!(m.key(EntryRef::new(0, 5)), &enc_u32(50)[..]);
        out.clear();
        m.entries(&mut out);
        assert!(out.iter().all(|e| e.segment() == 2));
        // an empty index of no segments removes nothing
        let mut e = Index::empty(kind, true);
        assert!(!e.remove(EntryRef::new(0, 0)));
    }
}
