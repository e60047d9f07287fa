//! Hash table with chaining, merge-able and persistent (Instant Loading, section 3.6.1).
//!
//! # Layout
//!
//! * A *directory* of `B` buckets (`B` a power of two, [`buckets_for`]): the head entry of
//!   each chain, or `NIL`. A key with hash `h` lives in bucket `(h · B) >> 64` — the top bits
//!   of `h`, so every power-of-two directory size uses the same hash function.
//! * Per segment, an array of *slots*, one per key position: the key's full 64-bit hash and
//!   the link to the next entry of its chain. Chain walks compare hashes before keys; keys
//!   themselves stay in the segments ([`KeySource`]).
//!
//! Both the directory and each segment's slots sit behind an [`Arc`]: cloning a table copies
//! pointers only. A table never writes through an `Arc` it shares with another table: writes
//! go through [`Arc::get_mut`] or a parallel copy-on-write ([`own`]), so a published table
//! version keeps answering exactly as before while a clone of it is merged into.
//!
//! # Building and merging
//!
//! A segment is indexed by inserting its keys at their chains' heads (hashed a block ahead,
//! so that the loop touching the directory at random is short), then, for a unique index,
//! checking each new entry against the rest of its chain. Two tables with directories of
//! equal size are merged as in the paper, rayon over bucket ranges: every bucket is pointed
//! at the chain of the *moving* table — the one whose slots are owned: a new load's, not the
//! published version's — whose tail is linked to the other table's chain. Only the moving
//! side's slots and one directory are written: merging a small index into a big one costs a
//! pass over the directory plus the small index. A unique merge compares, in buckets where
//! both chains are non-empty, each entry of one chain with each of the other (hashes first).
//!
//! Memory latency dominates all of this. So the passes that follow links first gather the
//! work without branches (the buckets with two chains, the entries with a next), then follow
//! one link of every pending walk at a time: every iteration loads one entry and none
//! branches on what it loaded, and the cache misses overlap.
//!
//! Directories of different sizes are merged by inserting the entries of the side with the
//! smaller directory into (a copy-on-write of) the bigger one; when the merged table would
//! average more than two entries per bucket, both are rebuilt into a directory sized by
//! [`buckets_for`]. Both paths run in parallel: head pointers are swapped atomically, each
//! slot's link written by the one task that inserts it.
//!
//! An entry costs 16 bytes (hash, link) and a bucket 8; [`buckets_for`] gives about one
//! bucket a key.
//!
//! # Removal
//!
//! [`ChainedHash::remove`] unlinks an entry from its chain (its predecessor's link, or the
//! bucket's head, takes the entry's next) and marks the entry's own slot [`DEAD`]; the slot
//! stays, as do the segment's keys. Both writes are copy-on-write, so a removal from a table
//! that shares its parts copies the directory or the predecessor's segment slots, and the
//! entry's segment slots. `len` counts live entries; every pass over slots by position
//! (listing, duplicate probes, reinsertion) skips dead ones.
//!
//! Links are `AtomicU64` only so that those disjoint parallel writes are safe Rust: every
//! access is `Relaxed` (a plain load or store), and rayon's joins order the passes.
//!
//! The hash function is fixed (no random seed): tables built apart must agree on it. It is
//! a wyhash-style folded multiply, not meant to resist chosen keys.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use rayon::prelude::*;

use crate::{Duplicate, EntryRef, KeySource, SegmentTable};

/// Link value that ends a chain (an empty bucket). No entry has these bits: segment ids stay
/// below `u32::MAX` (reserved, [`ChainedHash::insert_segment`] asserts it).
const NIL: u64 = u64::MAX;
/// Link value of the slot of a removed entry, which is on no chain. No entry has these bits
/// (segment id `u32::MAX` again). Every pass that goes over slots by position rather than
/// along chains skips such slots; a chain walk never meets one. `DEAD` and `NIL` are the
/// two largest values, so a link `l` leads to an entry exactly when `l < DEAD`.
const DEAD: u64 = u64::MAX - 1;
/// Fewest buckets [`buckets_for`] gives.
const MIN_BUCKETS: usize = 1024;
/// Entries per bucket above which a merge rebuilds into a bigger directory.
const MAX_LOAD: usize = 2;
/// Buckets per parallel task of the concatenating merge.
const BUCKET_TASK: usize = 1 << 14;
/// Keys hashed ahead of their insertion.
const HASH_BLOCK: usize = 1 << 10;
/// Entries per block of the duplicate check of a new segment.
const CHECK_BLOCK: usize = 1 << 12;
/// Fewest entries per parallel task when inserting or checking entries.
const ENTRY_TASK: usize = 1 << 12;

/// Bucket count a table of about `keys` keys is built with: the power of two nearest to
/// `keys` (load factor between ¾ and 1½), at least 1024. Chains stay short, and the
/// directory, which every part of a parallel build allocates in full, stays small.
pub(crate) fn buckets_for(keys: usize) -> usize {
    let target = keys.saturating_add(keys / 3).max(MIN_BUCKETS);
    1 << (usize::BITS - 1 - target.leading_zeros())
}

/// The bucket of hash `h` in a directory of `buckets` buckets (top bits of `h`).
#[inline(always)]
fn bucket(h: u64, buckets: usize) -> usize {
    ((h as u128 * buckets as u128) >> 64) as usize
}

const K0: u64 = 0xa076_1d64_78bd_642f;
const K1: u64 = 0xe703_7ed1_a0b4_28db;
const K2: u64 = 0x8ebc_6af0_9c88_c6e3;

/// 64×64→128-bit multiply, halves folded together.
#[inline(always)]
fn fold_mul(a: u64, b: u64) -> u64 {
    let r = a as u128 * b as u128;
    (r as u64) ^ ((r >> 64) as u64)
}

#[inline(always)]
fn r8(s: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"))
}

#[inline(always)]
fn r4(s: &[u8], at: usize) -> u64 {
    u32::from_le_bytes(s[at..at + 4].try_into().expect("4 bytes")) as u64
}

/// The 64-bit hash of an encoded key (wyhash-style; fixed, so tables built apart agree).
#[inline(always)]
fn hash(key: &[u8]) -> u64 {
    let len = key.len();
    let mut seed = K0;
    let (a, b) = if len <= 16 {
        if len >= 8 {
            (r8(key, 0), r8(key, len - 8))
        } else if len >= 4 {
            (r4(key, 0) << 32 | r4(key, len - 4), 0)
        } else if len > 0 {
            let v = (key[0] as u64) << 16 | (key[len / 2] as u64) << 8 | key[len - 1] as u64;
            (v, 0)
        } else {
            (0, 0)
        }
    } else {
        let mut i = 0;
        while len - i > 16 {
            seed = fold_mul(r8(key, i) ^ K1, r8(key, i + 8) ^ seed);
            i += 16;
        }
        (r8(key, len - 16), r8(key, len - 8))
    };
    fold_mul(K1 ^ len as u64, fold_mul(a ^ K1, b ^ seed) ^ K2)
}

/// Key `i` of fixed-width keys of `N` bytes.
#[inline(always)]
fn key_at<const N: usize>(bytes: &[u8], i: usize) -> &[u8] {
    &bytes[i * N..i * N + N]
}

/// A chain head or link: entry bits ([`EntryRef::to_bits`]) or [`NIL`]; the link of a
/// removed entry's slot: [`DEAD`].
#[derive(Debug)]
struct Link(AtomicU64);

impl Link {
    #[inline(always)]
    fn new(v: u64) -> Self {
        Link(AtomicU64::new(v))
    }
    #[inline(always)]
    fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
    #[inline(always)]
    fn set(&self, v: u64) {
        self.0.store(v, Relaxed)
    }
}

impl Clone for Link {
    fn clone(&self) -> Self {
        Link::new(self.get())
    }
}

/// One entry: the full hash of its key and the next entry of its chain.
#[derive(Debug, Clone)]
struct Slot {
    hash: u64,
    next: Link,
}

/// The slots of each segment, by segment id.
type Segs = Vec<Option<Arc<Vec<Slot>>>>;

/// The slot of entry `e` (bits).
#[inline(always)]
fn slot(segs: &Segs, e: u64) -> &Slot {
    let s = segs[(e >> 32) as usize]
        .as_deref()
        .expect("entry of a known segment");
    &s[e as u32 as usize]
}

/// The slots of each segment, by segment id, borrowed: one load less per [`at`] than [`slot`].
fn slot_table(segs: &Segs) -> Vec<&[Slot]> {
    segs.iter()
        .map(|s| s.as_deref().map_or(&[][..], Vec::as_slice))
        .collect()
}

/// The slot of entry `e` (bits) in a [`slot_table`].
#[inline(always)]
fn at<'a>(table: &[&'a [Slot]], e: u64) -> &'a Slot {
    &table[(e >> 32) as usize][e as u32 as usize]
}

/// A directory of `buckets` empty buckets.
fn empty_dir(buckets: usize) -> Vec<Link> {
    assert!(buckets > 0, "a hash table has at least one bucket");
    if buckets < 1 << 16 {
        (0..buckets).map(|_| Link::new(NIL)).collect()
    } else {
        (0..buckets)
            .into_par_iter()
            .with_min_len(BUCKET_TASK)
            .map(|_| Link::new(NIL))
            .collect()
    }
}

/// The hash table: a directory of chain heads and, per segment, its entries' hashes and links.
#[derive(Clone)]
pub(crate) struct ChainedHash {
    dir: Arc<Vec<Link>>,
    segs: Segs,
    len: usize,
}

impl std::fmt::Debug for ChainedHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainedHash")
            .field("buckets", &self.dir.len())
            .field("len", &self.len)
            .field("segments", &self.segs.iter().flatten().count())
            .finish()
    }
}

/// The duplicate pair of entry `first` (of `a`, or the older) and `second` (of `b`, or the
/// newer).
#[inline]
fn duplicate(first: u64, second: u64) -> Duplicate {
    Duplicate {
        first: EntryRef::from_bits(first),
        second: EntryRef::from_bits(second),
    }
}

impl ChainedHash {
    /// An empty table of `buckets` buckets.
    pub(crate) fn new(buckets: usize) -> Self {
        ChainedHash {
            dir: Arc::new(empty_dir(buckets)),
            segs: Vec::new(),
            len: 0,
        }
    }

    /// Number of buckets.
    pub(crate) fn buckets(&self) -> usize {
        self.dir.len()
    }

    /// Indexes every key of segment `id` of `segments` (all its positions); with `unique`,
    /// fails on a key equal to one already indexed.
    pub(crate) fn insert_segment(
        &mut self,
        id: u32,
        segments: &SegmentTable,
        unique: bool,
    ) -> Result<(), Duplicate> {
        let keys = segments.get(id).expect("indexing a known segment").keys();
        assert!(id < u32::MAX, "segment id u32::MAX is reserved");
        assert!(
            keys.len() <= u32::MAX as usize,
            "a segment holds at most 2^32 - 1 keys"
        );
        let idx = id as usize;
        if self.segs.len() <= idx {
            self.segs.resize(idx + 1, None);
        }
        assert!(self.segs[idx].is_none(), "segment {id} indexed twice");
        let n = keys.len();
        let slots = match keys.width() {
            Some(4) => self.insert_keys(id, n, |i| key_at::<4>(keys.bytes(), i)),
            Some(8) => self.insert_keys(id, n, |i| key_at::<8>(keys.bytes(), i)),
            _ => self.insert_keys(id, n, |i| keys.get(i)),
        };
        // registered before the check: a failed table stays consistent (with the duplicate)
        self.len += slots.len();
        self.segs[idx] = Some(Arc::new(slots));
        if unique {
            self.check_segment(id, segments)?;
        }
        Ok(())
    }

    /// Inserts keys `key(0..n)` as positions 0.. of segment `id` at their chains' heads;
    /// returns the segment's slots.
    #[inline(always)]
    fn insert_keys<'k>(&mut self, id: u32, n: usize, key: impl Fn(usize) -> &'k [u8]) -> Vec<Slot> {
        let mut slots: Vec<Slot> = Vec::with_capacity(n);
        let dir = own(&mut self.dir);
        let buckets = dir.len();
        let base = (id as u64) << 32;
        // hashes a block at a time first, so that the loop that touches the directory at
        // random is short and keeps many of its cache misses in flight
        let mut hashes = vec![0u64; HASH_BLOCK.min(n)];
        for start in (0..n).step_by(HASH_BLOCK) {
            let end = (start + HASH_BLOCK).min(n);
            let hashes = &mut hashes[..end - start];
            for (h, pos) in hashes.iter_mut().zip(start..end) {
                *h = hash(key(pos));
            }
            for (&h, pos) in hashes.iter().zip(start..end) {
                let head = dir[bucket(h, buckets)].0.get_mut();
                slots.push(Slot {
                    hash: h,
                    next: Link::new(*head),
                });
                *head = base | pos as u64;
            }
        }
        slots
    }

    /// Compares every entry of segment `id`, just inserted, with the older entries of its
    /// chain. Done after the insertion, so that the insertion loop has no
    /// branch on the bucket it just loaded and keeps many cache misses in flight.
    fn check_segment(&self, id: u32, segments: &SegmentTable) -> Result<(), Duplicate> {
        let slots = self.segs[id as usize].as_deref().expect("segment inserted");
        let table = &slot_table(&self.segs);
        let same = |c: u64, e: u64| {
            segments.key(EntryRef::from_bits(c)) == segments.key(EntryRef::from_bits(e))
        };
        let mut walks = vec![(0u32, NIL); CHECK_BLOCK];
        for (b, block) in slots.chunks(CHECK_BLOCK).enumerate() {
            let base = ((id as u64) << 32) | (b * CHECK_BLOCK) as u64;
            // a walk down the chain from every entry that has a next, noted without branches
            let mut nw = 0;
            for (i, s) in block.iter().enumerate() {
                let n = s.next.get();
                walks[nw] = (i as u32, n);
                // not NIL, not DEAD (a new segment has no dead slot; a DEAD link leads nowhere)
                nw += (n < DEAD) as usize;
            }
            // one link of every walk at a time: each iteration loads one entry and does not
            // branch on it, so that the cache misses overlap
            while nw > 0 {
                let mut w = 0;
                for r in 0..nw {
                    let (i, c) = walks[r];
                    let t = at(table, c);
                    if t.hash == block[i as usize].hash && same(c, base | i as u64) {
                        return Err(duplicate(c, base | i as u64));
                    }
                    let n = t.next.get();
                    walks[w] = (i, n);
                    w += (n != NIL) as usize;
                }
                nw = w;
            }
        }
        Ok(())
    }

    /// The table of the entries of `a` and `b` (disjoint segments). With `unique`, fails on
    /// an entry of `b` whose key equals one of `a`'s. Neither input's shared parts are
    /// written: a table that still holds them answers as before.
    pub(crate) fn merge(
        a: ChainedHash,
        b: ChainedHash,
        keys: &impl KeySource,
        unique: bool,
    ) -> Result<ChainedHash, Duplicate> {
        if b.len == 0 {
            return Ok(a.absorb_segments(b.segs));
        }
        if a.len == 0 {
            return Ok(b.absorb_segments(a.segs));
        }
        let total = a.len + b.len;
        let buckets = a.buckets().max(b.buckets());
        if total > MAX_LOAD * buckets {
            Self::rebuild(a, b, buckets_for(total), keys, unique)
        } else if a.buckets() == b.buckets() {
            Self::concat(a, b, keys, unique)
        } else {
            Self::reinsert(a, b, keys, unique)
        }
    }

    /// Takes over `other`'s segments (which hold no live entries).
    fn absorb_segments(mut self, other: Segs) -> Self {
        self.segs = union_segs(self.segs, other);
        self
    }

    /// True when no other table shares this table's slots.
    fn owns_slots(&mut self) -> bool {
        self.segs
            .iter_mut()
            .flatten()
            .all(|s| Arc::get_mut(s).is_some())
    }

    /// Makes every segment's slots this table's own (copying shared ones).
    fn own_slots(&mut self) {
        for s in self.segs.iter_mut().flatten() {
            own(s);
        }
    }

    /// The paper's merge of equal directories: per bucket, the moving side's chain is linked
    /// in front of the other's.
    fn concat(
        mut a: ChainedHash,
        mut b: ChainedHash,
        keys: &impl KeySource,
        unique: bool,
    ) -> Result<ChainedHash, Duplicate> {
        // move the side whose slots are owned (a new load's), else the smaller
        let (a_owned, b_owned) = (a.owns_slots(), b.owns_slots());
        let move_b = if a_owned != b_owned {
            b_owned
        } else {
            b.len <= a.len
        };
        let (mut mv, mut stay) = if move_b { (b, a) } else { (a, b) };
        mv.own_slots();
        // the new directory is written over an owned one, else over a copy
        let (mut out, other, out_is_mv) = if Arc::get_mut(&mut mv.dir).is_some() {
            (mv.dir, stay.dir, true)
        } else if Arc::get_mut(&mut stay.dir).is_some() {
            (stay.dir, mv.dir, false)
        } else {
            own(&mut mv.dir);
            (mv.dir, stay.dir, true)
        };
        let len = mv.len + stay.len;
        let segs = union_segs(mv.segs, stay.segs);
        let out_dir = Arc::get_mut(&mut out).expect("owned directory");
        let table = &slot_table(&segs);
        let same =
            |x: u64, y: u64| keys.key(EntryRef::from_bits(x)) == keys.key(EntryRef::from_bits(y));
        out_dir
            .par_chunks_mut(BUCKET_TASK)
            .zip(other.par_chunks(BUCKET_TASK))
            .try_for_each_init(
                || (Vec::new(), Vec::new(), Vec::new()),
                |(both, walks, probes), (out_c, other_c)| {
                    // pass 1, sequential and without branches: every bucket points at the
                    // moving chain, or else at the staying one; buckets with both are noted
                    both.clear();
                    both.resize(out_c.len(), (NIL, NIL));
                    let mut nb = 0;
                    for (o, t) in out_c.iter_mut().zip(other_c) {
                        let o = o.0.get_mut();
                        let (hm, hs) = if out_is_mv {
                            (*o, t.get())
                        } else {
                            (t.get(), *o)
                        };
                        both[nb] = (hm, hs);
                        nb += ((hm != NIL) & (hs != NIL)) as usize;
                        *o = if hm == NIL { hs } else { hm };
                    }
                    // pass 2: the heads of both chains. Here and below every loop iteration
                    // loads one entry and none branches on what it loaded, so that the cache
                    // misses overlap. A moving chain of one entry is linked to the staying
                    // chain; longer ones are walked on (pass 3), and the moving head is
                    // compared with the rest of the staying chain (pass 4).
                    walks.clear();
                    walks.resize(nb, (NIL, NIL));
                    probes.clear();
                    let mut nw = 0;
                    for &(hm, hs) in &both[..nb] {
                        let m = at(table, hm);
                        let mn = m.next.get();
                        if unique {
                            let s = at(table, hs);
                            if s.hash == m.hash && same(hm, hs) {
                                return Err(ordered_duplicate(hm, hs, move_b));
                            }
                            if s.next.get() != NIL {
                                probes.push((m.hash, hm, s.next.get()));
                            }
                        }
                        m.next.set(if mn == NIL { hs } else { mn });
                        walks[nw] = (mn, hs);
                        nw += (mn != NIL) as usize;
                    }
                    // pass 3, a level of all moving chains at a time: the tails are linked
                    // to the staying chains, each entry is to be compared with them
                    while nw > 0 {
                        let mut w = 0;
                        for r in 0..nw {
                            let (x, hs) = walks[r];
                            let t = at(table, x);
                            let n = t.next.get();
                            let end = n == NIL || n == hs;
                            t.next.set(if end { hs } else { n });
                            if unique {
                                probes.push((t.hash, x, hs));
                            }
                            walks[w] = (n, hs);
                            w += !end as usize;
                        }
                        nw = w;
                    }
                    // pass 4, a level of all staying chains at a time: the probes of moving
                    // entries against them
                    let mut np = probes.len();
                    while np > 0 {
                        let mut w = 0;
                        for r in 0..np {
                            let (xh, x, c) = probes[r];
                            let t = at(table, c);
                            if t.hash == xh && same(x, c) {
                                return Err(ordered_duplicate(x, c, move_b));
                            }
                            let n = t.next.get();
                            probes[w] = (xh, x, n);
                            w += (n != NIL) as usize;
                        }
                        np = w;
                    }
                    Ok(())
                },
            )?;
        Ok(ChainedHash {
            dir: out,
            segs,
            len,
        })
    }

    /// Merge of different directories: the entries of the side with fewer buckets are
    /// inserted into (a copy-on-write of) the other's directory.
    fn reinsert(
        a: ChainedHash,
        b: ChainedHash,
        keys: &impl KeySource,
        unique: bool,
    ) -> Result<ChainedHash, Duplicate> {
        if unique {
            check_smaller(&a, &b, keys)?;
        }
        let move_b = b.buckets() < a.buckets();
        let (mut mv, mut stay) = if move_b { (b, a) } else { (a, b) };
        mv.own_slots();
        let dir = own(&mut stay.dir);
        insert_all(dir, &mv.segs);
        let len = mv.len + stay.len;
        Ok(ChainedHash {
            dir: stay.dir,
            segs: union_segs(stay.segs, mv.segs),
            len,
        })
    }

    /// Merge into a new directory of `buckets` buckets, relinking every entry.
    fn rebuild(
        mut a: ChainedHash,
        mut b: ChainedHash,
        buckets: usize,
        keys: &impl KeySource,
        unique: bool,
    ) -> Result<ChainedHash, Duplicate> {
        if unique {
            check_smaller(&a, &b, keys)?;
        }
        a.own_slots();
        b.own_slots();
        let mut dir = empty_dir(buckets);
        insert_all(&mut dir, &a.segs);
        insert_all(&mut dir, &b.segs);
        Ok(ChainedHash {
            dir: Arc::new(dir),
            len: a.len + b.len,
            segs: union_segs(a.segs, b.segs),
        })
    }

    /// Appends the entries whose key equals `key` to `out`.
    pub(crate) fn get(&self, key: &[u8], keys: &impl KeySource, out: &mut Vec<EntryRef>) {
        let h = hash(key);
        let mut e = self.dir[bucket(h, self.dir.len())].get();
        while e != NIL {
            let s = slot(&self.segs, e);
            if s.hash == h && keys.key(EntryRef::from_bits(e)) == key {
                out.push(EntryRef::from_bits(e));
            }
            e = s.next.get();
        }
    }

    /// Appends every entry to `out` (by segment, then position).
    pub(crate) fn entries(&self, out: &mut Vec<EntryRef>) {
        out.reserve(self.len);
        for (id, s) in self.segs.iter().enumerate() {
            if let Some(s) = s {
                out.extend(
                    s.iter()
                        .enumerate()
                        .filter(|(_, slot)| slot.next.get() != DEAD)
                        .map(|(pos, _)| EntryRef::new(id as u32, pos as u32)),
                );
            }
        }
    }

    /// Removes entry `e`: unlinks it from its chain and marks its slot [`DEAD`]. False,
    /// changing nothing, when the table does not hold it. Copy-on-write: writes the
    /// directory (when `e` heads its chain) or its predecessor's segment slots, and `e`'s
    /// segment slots, copying whichever another table shares.
    pub(crate) fn remove(&mut self, e: EntryRef) -> bool {
        let bits = e.to_bits();
        let Some(s) = self
            .segs
            .get(e.segment() as usize)
            .and_then(Option::as_deref)
        else {
            return false;
        };
        let Some(me) = s.get(e.pos() as usize) else {
            return false;
        };
        let next = me.next.get();
        if next == DEAD {
            return false;
        }
        // the entry's chain is the bucket of the hash its slot keeps: no key to read
        let b = bucket(me.hash, self.dir.len());
        let mut prev = NIL;
        let mut c = self.dir[b].get();
        while c != bits {
            if c == NIL {
                // cannot happen (every live slot is on its chain): a miss, not a panic
                return false;
            }
            prev = c;
            c = slot(&self.segs, c).next.get();
        }
        if prev == NIL {
            own(&mut self.dir)[b].set(next);
        } else {
            self.slot_mut(prev).next.set(next);
        }
        self.slot_mut(bits).next.set(DEAD);
        self.len -= 1;
        true
    }

    /// The slot of entry `e` (bits), to change: its segment's slots copied first when shared.
    fn slot_mut(&mut self, e: u64) -> &mut Slot {
        let s = self.segs[(e >> 32) as usize]
            .as_mut()
            .expect("entry of a known segment");
        &mut own(s)[e as u32 as usize]
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes of memory held (shared parts included).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.dir.capacity() * size_of::<Link>()
            + self.segs.capacity() * size_of::<Option<Arc<Vec<Slot>>>>()
            + self
                .segs
                .iter()
                .flatten()
                .map(|s| s.capacity() * size_of::<Slot>())
                .sum::<usize>()
    }
}

/// The contents of `a`, copied (in parallel) first when another table shares them.
fn own<T: Clone + Send + Sync>(a: &mut Arc<Vec<T>>) -> &mut Vec<T> {
    if Arc::get_mut(a).is_none() {
        *a = Arc::new(a.par_iter().with_min_len(ENTRY_TASK).cloned().collect());
    }
    Arc::get_mut(a).expect("just copied")
}

/// The segments of both tables (ids disjoint).
fn union_segs(mut a: Segs, b: Segs) -> Segs {
    if a.len() < b.len() {
        a.resize(b.len(), None);
    }
    for (id, s) in b.into_iter().enumerate() {
        if let Some(s) = s {
            assert!(a[id].is_none(), "segment {id} in both tables");
            a[id] = Some(s);
        }
    }
    a
}

/// The duplicate of entry `m` of the moving side and `s` of the staying side, as (a, b).
#[inline]
fn ordered_duplicate(m: u64, s: u64, move_b: bool) -> Duplicate {
    if move_b {
        duplicate(s, m)
    } else {
        duplicate(m, s)
    }
}

/// Looks the entries of the smaller of `a` and `b` up in the other's chains.
fn check_smaller(a: &ChainedHash, b: &ChainedHash, keys: &impl KeySource) -> Result<(), Duplicate> {
    if b.len <= a.len {
        check_entries(b, a, keys, true)
    } else {
        check_entries(a, b, keys, false)
    }
}

/// Looks every entry of `probe` up in `table`'s chains (in parallel); fails on equal keys.
/// `probe_is_b`: whether `probe` is the `b` of the merge (for the order in [`Duplicate`]).
fn check_entries(
    probe: &ChainedHash,
    table: &ChainedHash,
    keys: &impl KeySource,
    probe_is_b: bool,
) -> Result<(), Duplicate> {
    let buckets = table.dir.len();
    probe
        .segs
        .par_iter()
        .enumerate()
        .try_for_each(|(id, slots)| {
            let Some(slots) = slots else { return Ok(()) };
            let base = (id as u64) << 32;
            slots
                .par_iter()
                .with_min_len(ENTRY_TASK)
                .enumerate()
                .try_for_each(|(pos, p)| {
                    if p.next.get() == DEAD {
                        // a removed entry: not a key of `probe` any more
                        return Ok(());
                    }
                    let e = base | pos as u64;
                    let mut c = table.dir[bucket(p.hash, buckets)].get();
                    while c != NIL {
                        let s = slot(&table.segs, c);
                        if s.hash == p.hash
                            && keys.key(EntryRef::from_bits(c)) == keys.key(EntryRef::from_bits(e))
                        {
                            return Err(if probe_is_b {
                                duplicate(c, e)
                            } else {
                                duplicate(e, c)
                            });
                        }
                        c = s.next.get();
                    }
                    Ok(())
                })
        })
}

/// Inserts every live entry of `segs` (slots owned by the caller) at its chain's head in
/// `dir`, in parallel; dead slots stay [`DEAD`], on no chain.
fn insert_all(dir: &mut [Link], segs: &Segs) {
    let dir: &[Link] = dir;
    let buckets = dir.len();
    segs.par_iter().enumerate().for_each(|(id, slots)| {
        let Some(slots) = slots else { return };
        let base = (id as u64) << 32;
        slots
            .par_iter()
            .with_min_len(ENTRY_TASK)
            .enumerate()
            .for_each(|(pos, s)| {
                if s.next.get() == DEAD {
                    return;
                }
                let old = dir[bucket(s.hash, buckets)]
                    .0
                    .swap(base | pos as u64, Relaxed);
                s.next.set(old);
            });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dense 32-bit keys (the key encoding's big-endian integers) spread over the buckets
    /// like random ones: about 1/e of the buckets empty, no long chains.
    #[test]
    fn dense_keys_spread() {
        for (n, buckets) in [
            (1 << 16, 1 << 16),
            (100_000, buckets_for(100_000)),
            (5000, 64),
        ] {
            let mut count = vec![0u32; buckets];
            for i in 0..n as u32 {
                count[bucket(hash(&(i ^ 0x8000_0000).to_be_bytes()), buckets)] += 1;
            }
            let load = n as f64 / buckets as f64;
            let empty = count.iter().filter(|&&c| c == 0).count() as f64 / buckets as f64;
            assert!(
                (empty - (-load).exp()).abs() < 0.02,
                "{n} in {buckets}: {empty} empty"
            );
            let longest = *count.iter().max().unwrap() as f64;
            assert!(
                longest < load + 8.0 * load.sqrt() + 6.0,
                "{n} in {buckets}: {longest}"
            );
        }
    }

    /// Whether `a` and `b` share their directory, and which segments' slots.
    fn sharing(a: &ChainedHash, b: &ChainedHash) -> (bool, Vec<bool>) {
        let segs = a
            .segs
            .iter()
            .zip(&b.segs)
            .map(|(x, y)| match (x, y) {
                (Some(x), Some(y)) => Arc::ptr_eq(x, y),
                _ => false,
            })
            .collect();
        (Arc::ptr_eq(&a.dir, &b.dir), segs)
    }

    /// Every key of `segments` but the `removed` entries' is found, and `entries` lists
    /// exactly the live ones.
    fn check_live(
        t: &ChainedHash,
        segments: &SegmentTable,
        all: &[EntryRef],
        removed: &[EntryRef],
    ) {
        let mut out = Vec::new();
        for &e in all {
            out.clear();
            t.get(segments.key(e), segments, &mut out);
            assert_eq!(out.contains(&e), !removed.contains(&e), "{e:?}");
        }
        out.clear();
        t.entries(&mut out);
        let live: Vec<EntryRef> = all
            .iter()
            .filter(|e| !removed.contains(e))
            .copied()
            .collect();
        assert_eq!(out, live);
        assert_eq!(t.len(), live.len());
    }

    /// A removal writes copy-on-write exactly what it changes: a chain head's removal the
    /// directory and the entry's segment, another's the predecessor's segment and the
    /// entry's; a miss nothing. The clone taken before answers as before.
    #[test]
    fn remove_copies_what_it_writes() {
        let mut segments = SegmentTable::default();
        for id in 0..2u32 {
            let bytes = (0..6u32).flat_map(|i| (i * 2 + id).to_be_bytes()).collect();
            segments.insert(id, crate::Segment::new(crate::Keys::fixed(4, bytes)));
        }
        let all: Vec<EntryRef> = (0..2)
            .flat_map(|s| (0..6).map(move |p| EntryRef::new(s, p)))
            .collect();
        // one bucket: one chain of all twelve entries, segment 1's first
        let mut t = ChainedHash::new(1);
        t.insert_segment(0, &segments, true).unwrap();
        t.insert_segment(1, &segments, true).unwrap();
        let before = t.clone();
        let head = EntryRef::from_bits(t.dir[0].get());
        assert_eq!(head, EntryRef::new(1, 5));
        // misses: unknown segment, position past the end
        for e in [
            EntryRef::new(7, 0),
            EntryRef::new(0, 6),
            EntryRef::new(u32::MAX, 1),
        ] {
            assert!(!t.remove(e));
        }
        assert_eq!(sharing(&t, &before), (true, vec![true, true]));
        // the head: directory and segment 1 copied
        assert!(t.remove(head));
        assert_eq!(sharing(&t, &before), (false, vec![true, false]));
        assert!(!t.remove(head), "removed twice");
        check_live(&before, &segments, &all, &[]);
        check_live(&t, &segments, &all, &[head]);
        // segment 0's last entry follows segment 1's position 0: a predecessor in segment 1
        let mut u = before.clone();
        assert!(u.remove(EntryRef::new(0, 5)));
        assert_eq!(sharing(&u, &before), (true, vec![false, false]));
        check_live(&u, &segments, &all, &[EntryRef::new(0, 5)]);
        // owned now: further removals copy nothing more
        let dir = Arc::as_ptr(&t.dir);
        for e in [
            EntryRef::new(0, 0),
            EntryRef::new(1, 4),
            EntryRef::new(0, 3),
        ] {
            assert!(t.remove(e));
        }
        assert_eq!(Arc::as_ptr(&t.dir), dir);
        let removed = [
            head,
            EntryRef::new(0, 0),
            EntryRef::new(1, 4),
            EntryRef::new(0, 3),
        ];
        check_live(&t, &segments, &all, &removed);
        check_live(&before, &segments, &all, &[]);
    }

    /// Strings that differ only in their last bytes, or only in length, hash apart.
    #[test]
    fn similar_strings_hash_apart() {
        let mut seen = std::collections::HashSet::new();
        for len in 0..40 {
            for last in 0..=255u8 {
                let mut k = vec![b'x'; len];
                k.push(last);
                assert!(seen.insert(hash(&k)), "collision at {len} {last}");
            }
        }
    }
}
