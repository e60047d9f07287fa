//! Segments: the keys of one partition buffer and where its rows were placed.

use std::sync::Arc;

use crate::{EntryRef, Keys, RowId};

/// Access to the encoded key of an entry (what the index structures compare).
pub trait KeySource: Sync {
    /// The encoded key of `e`.
    fn key(&self, e: EntryRef) -> &[u8];
}

/// The keys of one partition buffer and, once merged, the row of its first key.
#[derive(Debug)]
pub struct Segment {
    keys: Keys,
    first: Option<RowId>,
}

impl Segment {
    /// A segment of `keys`, not yet placed.
    pub fn new(keys: Keys) -> Self {
        Segment { keys, first: None }
    }
    /// The segment's keys.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }
    /// The row of position 0, once placed.
    pub fn first_row(&self) -> Option<RowId> {
        self.first
    }
}

/// The segments of an index by id (ids need not be dense).
#[derive(Debug, Clone, Default)]
pub struct SegmentTable {
    slots: Vec<Option<Arc<Segment>>>,
}

impl SegmentTable {
    /// Adds segment `id`; panics when the id is taken.
    pub fn insert(&mut self, id: u32, segment: Segment) {
        let id = id as usize;
        if self.slots.len() <= id {
            self.slots.resize(id + 1, None);
        }
        assert!(self.slots[id].is_none(), "segment {id} exists");
        self.slots[id] = Some(Arc::new(segment));
    }

    /// Takes over every segment of `other`; panics on an id both have.
    pub fn absorb(&mut self, other: SegmentTable) {
        if self.slots.len() < other.slots.len() {
            self.slots.resize(other.slots.len(), None);
        }
        for (id, s) in other.slots.into_iter().enumerate() {
            if let Some(s) = s {
                assert!(self.slots[id].is_none(), "segment {id} in both indexes");
                self.slots[id] = Some(s);
            }
        }
    }

    /// The segment with id `id`.
    pub fn get(&self, id: u32) -> Option<&Segment> {
        self.slots.get(id as usize).and_then(|s| s.as_deref())
    }

    /// One past the highest segment id in use (the next free id).
    pub fn next_id(&self) -> u32 {
        self.slots.len() as u32
    }

    /// Records the row of position 0 of segment `id`.
    pub fn place(&mut self, id: u32, first: RowId) {
        let slot = self.slots[id as usize]
            .as_mut()
            .expect("placing a segment that exists");
        // a segment is placed by the load that created it, before anyone else shares it
        Arc::get_mut(slot)
            .expect("a segment is placed before its index is shared")
            .first = Some(first);
    }

    /// The row of an entry.
    pub fn row_id(&self, e: EntryRef) -> RowId {
        let s = self.get(e.segment()).expect("entry of a known segment");
        let first = s.first.expect("entry of a placed segment");
        RowId {
            row: first.row + e.pos(),
            ..first
        }
    }

    /// Bytes held by the segments' keys.
    pub fn heap_bytes(&self) -> usize {
        self.slots.len() * 8
            + self
                .slots
                .iter()
                .flatten()
                .map(|s| s.keys.heap_bytes())
                .sum::<usize>()
    }
}

impl KeySource for SegmentTable {
    #[inline(always)]
    fn key(&self, e: EntryRef) -> &[u8] {
        self.slots[e.segment() as usize]
            .as_deref()
            .expect("entry of a known segment")
            .keys
            .get(e.pos() as usize)
    }
}

impl SegmentTable {
    /// The encoded key of an entry.
    pub fn key(&self, e: EntryRef) -> &[u8] {
        KeySource::key(self, e)
    }
}
