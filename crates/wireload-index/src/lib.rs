//! Merge-able indexes for bulk loading (Instant Loading, section 3.6): every chunk task
//! indexes the keys of its partition buffers, and the buffer indexes are merged, in
//! parallel, into the table's index.
//!
//! Two structures: the adaptive radix tree ([`IndexKind::Art`]: point lookups, range and
//! prefix scans in key order) and a hash table with chaining ([`IndexKind::Hash`]: point
//! lookups). Both index *encoded keys* ([`keys`]): byte strings whose byte order is the
//! order of the SQL values, prefix-free, one per row.
//!
//! An index never stores row ids directly. An entry is an [`EntryRef`] (segment, position):
//! a *segment* is the run of keys of one partition buffer, and learns where its rows landed
//! ([`RowId`] of its first row) once the merge has placed the buffers in chunks.
//!
//! Indexes are persistent values: merging into an index that a published table version
//! still holds, or removing entries from it ([`Index::remove`]), copies only what the
//! change writes (nodes on merged or removed paths, the bucket directory, slots of touched
//! segments); the older version keeps seeing its own index.
#![deny(missing_docs)]

mod art;
mod hash;
pub mod keys;
mod segment;

use std::ops::Bound;

pub use keys::{KeyEncoder, KeyError, Keys};
pub use segment::{KeySource, Segment, SegmentTable};

/// Where a row lives in a table version: partition, chunk of the partition, row of the chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct RowId {
    /// partition number
    pub partition: u32,
    /// chunk within the partition
    pub chunk: u32,
    /// row within the chunk
    pub row: u32,
}

/// One index entry: position `pos` of segment `segment`, packed in 64 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryRef(u64);

impl EntryRef {
    /// The entry at position `pos` of segment `segment`.
    #[inline(always)]
    pub fn new(segment: u32, pos: u32) -> Self {
        EntryRef(((segment as u64) << 32) | pos as u64)
    }
    /// The segment.
    #[inline(always)]
    pub fn segment(self) -> u32 {
        (self.0 >> 32) as u32
    }
    /// The position in the segment.
    #[inline(always)]
    pub fn pos(self) -> u32 {
        self.0 as u32
    }
    /// The packed value (segment in the high half).
    #[inline(always)]
    pub fn to_bits(self) -> u64 {
        self.0
    }
    /// The entry from its packed value.
    #[inline(always)]
    pub fn from_bits(bits: u64) -> Self {
        EntryRef(bits)
    }
}

/// Which structure an index uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexKind {
    /// Adaptive radix tree: point lookups, ranges, prefixes.
    Art,
    /// Hash table with chaining: point lookups only.
    Hash,
}

impl std::fmt::Display for IndexKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IndexKind::Art => "ART",
            IndexKind::Hash => "HASH",
        })
    }
}

/// Two entries of a unique index with equal keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("duplicate key: entries {first:?} and {second:?}")]
pub struct Duplicate {
    /// the entry that was there first (in the left/bigger index of a merge)
    pub first: EntryRef,
    /// the entry that collided with it
    pub second: EntryRef,
}

/// The structure behind an index.
#[derive(Debug, Clone)]
enum Structure {
    Art(art::Art),
    Hash(hash::ChainedHash),
}

/// A merge-able index over encoded keys: entries point into segments, segments to rows.
#[derive(Debug, Clone)]
pub struct Index {
    unique: bool,
    segments: SegmentTable,
    structure: Structure,
}

/// Bucket count a hash index of about `keys` keys is built with (a power of two).
pub fn hash_buckets_for(keys: usize) -> usize {
    hash::buckets_for(keys)
}

impl Index {
    /// An index without entries.
    pub fn empty(kind: IndexKind, unique: bool) -> Self {
        Index {
            unique,
            segments: SegmentTable::default(),
            structure: match kind {
                IndexKind::Art => Structure::Art(art::Art::new()),
                IndexKind::Hash => Structure::Hash(hash::ChainedHash::new(hash::buckets_for(0))),
            },
        }
    }

    /// The index of one segment (the keys of one partition buffer) with id `id`, built by
    /// sequential insertion. A hash index gets `buckets` buckets (every index that will be
    /// merged with it must have the same number; see [`hash_buckets_for`]); ART ignores it.
    pub fn build(
        kind: IndexKind,
        unique: bool,
        id: u32,
        keys: Keys,
        buckets: usize,
    ) -> Result<Self, Duplicate> {
        let mut segments = SegmentTable::default();
        let n = keys.len();
        segments.insert(id, Segment::new(keys));
        let structure = match kind {
            IndexKind::Art => {
                let mut t = art::Art::new();
                for pos in 0..n {
                    t.insert(EntryRef::new(id, pos as u32), &segments, unique)?;
                }
                Structure::Art(t)
            }
            IndexKind::Hash => {
                let mut t = hash::ChainedHash::new(buckets);
                t.insert_segment(id, &segments, unique)?;
                Structure::Hash(t)
            }
        };
        Ok(Index {
            unique,
            segments,
            structure,
        })
    }

    /// One index holding the entries of all `parts` (same kind and uniqueness; segment ids
    /// distinct). Merges pairwise in parallel, each pairwise merge itself parallel. With
    /// `unique`, fails on the first pair of equal keys found.
    pub fn merge_all(parts: Vec<Index>) -> Result<Self, Duplicate> {
        use rayon::prelude::*;
        let mut parts = parts;
        while parts.len() > 1 {
            let odd = if parts.len() % 2 == 1 {
                parts.pop()
            } else {
                None
            };
            let mut pairs = Vec::with_capacity(parts.len() / 2);
            let mut it = parts.into_iter();
            while let (Some(a), Some(b)) = (it.next(), it.next()) {
                pairs.push((a, b));
            }
            let mut next: Vec<Index> = pairs
                .into_par_iter()
                .map(|(a, b)| Index::merge(a, b))
                .collect::<Result<_, _>>()?;
            next.extend(odd);
            parts = next;
        }
        Ok(parts.pop().expect("merge_all of at least one index"))
    }

    /// The index holding the entries of `a` and `b` (see [`Index::merge_all`]).
    pub fn merge(a: Index, b: Index) -> Result<Self, Duplicate> {
        assert_eq!(
            a.unique, b.unique,
            "merging indexes of different uniqueness"
        );
        let unique = a.unique;
        let mut segments = a.segments;
        segments.absorb(b.segments);
        let structure = match (a.structure, b.structure) {
            (Structure::Art(x), Structure::Art(y)) => {
                Structure::Art(art::Art::merge(x, y, &segments, unique)?)
            }
            (Structure::Hash(x), Structure::Hash(y)) => {
                Structure::Hash(hash::ChainedHash::merge(x, y, &segments, unique)?)
            }
            _ => panic!("merging indexes of different kinds"),
        };
        Ok(Index {
            unique,
            segments,
            structure,
        })
    }

    /// Removes entry `e` (its key is the one its segment holds); false when the index does
    /// not hold it. `len()` decreases by one on success.
    ///
    /// Used by DELETE and key-changing UPDATE: the entry leaves the structure in place, so a
    /// later entry with an equal key is no duplicate of it. The segment and its keys stay
    /// (the key of a removed entry can still be read). Copy-on-write like a merge: a clone
    /// taken before still holds `e`. ART copies the nodes on the key's path (when shared);
    /// a hash index copies the directory or the slots of `e`'s chain predecessor's segment,
    /// and the slots of `e`'s segment (when shared; see the module docs). A miss copies
    /// nothing.
    pub fn remove(&mut self, e: EntryRef) -> bool {
        // an entry of an unknown segment, or past its end, has no key to look up
        let known = self
            .segments
            .get(e.segment())
            .is_some_and(|s| (e.pos() as usize) < s.keys().len());
        if !known {
            return false;
        }
        match &mut self.structure {
            Structure::Art(t) => t.remove(e, &self.segments),
            Structure::Hash(t) => t.remove(e),
        }
    }

    /// The structure.
    pub fn kind(&self) -> IndexKind {
        match self.structure {
            Structure::Art(_) => IndexKind::Art,
            Structure::Hash(_) => IndexKind::Hash,
        }
    }

    /// True when no two entries may have equal keys.
    pub fn is_unique(&self) -> bool {
        self.unique
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        match &self.structure {
            Structure::Art(t) => t.len(),
            Structure::Hash(t) => t.len(),
        }
    }

    /// True when the index has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of memory held by the structure and the segments' keys.
    pub fn heap_bytes(&self) -> usize {
        self.segments.heap_bytes()
            + match &self.structure {
                Structure::Art(t) => t.heap_bytes(),
                Structure::Hash(t) => t.heap_bytes(),
            }
    }

    /// The segments (keys and row placement).
    pub fn segments(&self) -> &SegmentTable {
        &self.segments
    }

    /// Records that position 0 of segment `segment` is row `first`, the next positions
    /// the following rows of the same chunk.
    pub fn place_segment(&mut self, segment: u32, first: RowId) {
        self.segments.place(segment, first);
    }

    /// The encoded key of an entry.
    pub fn key(&self, e: EntryRef) -> &[u8] {
        self.segments.key(e)
    }

    /// The row of an entry (its segment must have been placed).
    pub fn row_id(&self, e: EntryRef) -> RowId {
        self.segments.row_id(e)
    }

    /// Appends the entries whose key equals `key` to `out`.
    pub fn lookup(&self, key: &[u8], out: &mut Vec<EntryRef>) {
        match &self.structure {
            Structure::Art(t) => t.get(key, &self.segments, out),
            Structure::Hash(t) => t.get(key, &self.segments, out),
        }
    }

    /// True when the index answers [`Index::range`] (ART).
    pub fn is_ordered(&self) -> bool {
        matches!(self.structure, Structure::Art(_))
    }

    /// Appends, in key order, the entries whose keys lie between `lo` and `hi`, with
    /// prefix-aware bounds: `Included(p)` below admits keys ≥ p, `Excluded(p)` below admits
    /// keys > p that do not start with p; `Included(p)` above admits keys ≤ p and keys that
    /// start with p, `Excluded(p)` above admits keys < p. (For full keys these are the usual
    /// bounds; for the encoding of leading key columns they select whole key groups.)
    /// Returns false, appending nothing, for an unordered (hash) index.
    pub fn range(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>, out: &mut Vec<EntryRef>) -> bool {
        match &self.structure {
            Structure::Art(t) => {
                t.range(lo, hi, &self.segments, out);
                true
            }
            Structure::Hash(_) => false,
        }
    }

    /// Appends, in key order, the entries whose keys start with `prefix`.
    /// Returns false, appending nothing, for an unordered (hash) index.
    pub fn prefix(&self, prefix: &[u8], out: &mut Vec<EntryRef>) -> bool {
        self.range(Bound::Included(prefix), Bound::Included(prefix), out)
    }

    /// Every entry (in key order for ART).
    pub fn entries(&self, out: &mut Vec<EntryRef>) {
        match &self.structure {
            Structure::Art(t) => t.range(Bound::Unbounded, Bound::Unbounded, &self.segments, out),
            Structure::Hash(t) => t.entries(out),
        }
    }
}
