//! Adaptive radix tree (Leis, Kemper, Neumann, ICDE 2013) over encoded keys, persistent
//! and merge-able in parallel (Instant Loading, section 3.6.2).
//!
//! ADVICE FOR HACKERS — the invariants every function here keeps:
//!
//! - Keys are prefix-free byte strings compared bytewise. The tree stores only
//!   [`EntryRef`]s; the key of an entry is fetched through a [`KeySource`].
//! - A node reached after consuming `depth` key bytes stores the next `prefix.len()` bytes
//!   of every key below it (path compression, all bytes kept: "pessimistic"); its children
//!   are indexed by the byte at `depth + prefix.len()` and sit at `depth + prefix.len() + 1`.
//! - Lazy expansion: a leaf (one entry, or a `Multi` list) sits as high as its key is unique
//!   among the keys below the parent; the full key is compared at the leaf.
//! - A `Multi` leaf holds entries with equal keys, in insertion order (left index of a merge
//!   first): two or more, or a single entry whose segment id does not fit an inline leaf.
//! - Every inner node has at least two children. [`Node4`] and [`Node16`] keep their key
//!   bytes sorted; [`Node48`] maps a byte to `slot + 1` (0: none), slots `0..n` in use; in
//!   [`Node256`] an empty slot is an absent child.
//! - Removal (`Art::remove`) keeps all of the above: a leaf holding only the removed entry
//!   becomes empty and is taken out of its node (`Inner::remove_child`: Node4/16 stay
//!   sorted, Node48 moves its last slot into the hole); a `Multi` left with one entry
//!   becomes a plain leaf (`Child::leaf`). A node left with one child is replaced by that
//!   child: a leaf moves up as it is (lazy expansion allows it), a node takes the path
//!   through the removed one (`parent prefix + byte + own prefix`) as its prefix. A node
//!   that drops to few children shrinks to the next smaller type (Node256 at 37, Node48 at
//!   12, Node16 at 3: below the next type's capacity, so that alternating inserts and
//!   removals do not resize at every step). The root may become empty or a leaf.
//! - Nodes are shared between tree versions through [`Arc`]s held by slots ([`slot`]): a node
//!   is changed only through `Child::node_mut` (copy-on-write), so a clone of a tree never
//!   sees another clone's changes. A slot is one 64-bit pointer: an inline entry (segment
//!   id below 2^31, top bit set, no provenance), or an `Arc` pointer tagged in its low bits
//!   with strict-provenance APIs, its top bit clear (an `assert!` checks that when it is
//!   stored); [`slot`] holds all of the module's `unsafe` and documents the invariant and
//!   the supported (64-bit) targets.
//!
//! Merging (`Art::merge`) follows the paper's algorithm: two nodes with equal compressed
//! paths merge the children of the smaller into the bigger (grown once to hold the union),
//! the children present in both merged recursively — in parallel near the root — and a
//! difference inside the paths makes a new Node4 above both. A leaf meets a subtree by
//! insertion. Ordered key ranges (one per load chunk) thus merge by relinking a handful of
//! subtrees along the two boundary paths.

use std::fmt;
use std::ops::Bound;

use crate::{Duplicate, EntryRef, KeySource};

/// Merges of node pairs at fewer levels below the root than this merge their common
/// children in parallel; deeper subtrees are too small to pay for a task.
const PARALLEL_LEVELS: u32 = 2;

/// Adaptive radix tree of entries: a persistent value, O(1) to clone.
#[derive(Clone, Default)]
pub(crate) struct Art {
    root: Child,
    len: usize,
}

impl fmt::Debug for Art {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Art")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl Art {
    /// An empty tree.
    pub(crate) fn new() -> Self {
        Art::default()
    }

    /// Adds entry `e` (key `keys.key(e)`). With `unique`, an equal key already present is an
    /// error and leaves the tree unchanged; otherwise `e` joins the entries of its key.
    pub(crate) fn insert(
        &mut self,
        e: EntryRef,
        keys: &impl KeySource,
        unique: bool,
    ) -> Result<(), Duplicate> {
        let key = keys.key(e);
        insert_leaf(&mut self.root, Child::leaf(e), key, 0, keys, unique, false)?;
        self.len += 1;
        Ok(())
    }

    /// The tree holding the entries of `a` and `b` (entries of `a` first among equal keys).
    /// Common subtrees are merged in parallel on the current rayon pool. With `unique`,
    /// fails on a key present in both.
    pub(crate) fn merge(
        a: Art,
        b: Art,
        keys: &impl KeySource,
        unique: bool,
    ) -> Result<Art, Duplicate> {
        let len = a.len + b.len;
        let root = merge_children(a.root, b.root, 0, 0, keys, unique)?;
        Ok(Art { root, len })
    }

    /// Removes entry `e` (key `keys.key(e)`); false, changing nothing, when the tree does
    /// not hold it. Copies (when shared) the nodes on the key's path only.
    pub(crate) fn remove(&mut self, e: EntryRef, keys: &impl KeySource) -> bool {
        let key = keys.key(e);
        // read-only first: a miss must not copy the path of a shared tree
        let held = match leaf_on_path(&self.root, key).map(Child::view) {
            Some(View::Leaf(x)) => x == e,
            Some(View::Multi(v)) => v.contains(&e),
            _ => false,
        };
        if held {
            remove_entry(&mut self.root, e, key, 0);
            self.len -= 1;
        }
        held
    }

    /// Appends the entries whose key equals `key` to `out`.
    pub(crate) fn get(&self, key: &[u8], keys: &impl KeySource, out: &mut Vec<EntryRef>) {
        if let Some(leaf) = leaf_on_path(&self.root, key)
            && keys.key(leaf.first_entry()) == key
        {
            leaf.push_entries(out);
        }
    }

    /// Appends, in key order, the entries between `lo` and `hi` (prefix-aware bounds: see
    /// `Index::range`).
    pub(crate) fn range(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        keys: &impl KeySource,
        out: &mut Vec<EntryRef>,
    ) {
        let mut path = Vec::new();
        let mut scan = Scan { keys, out };
        scan.walk(&self.root, &mut path, lo, hi);
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes of memory held by the nodes and entry lists (shared nodes counted once per
    /// path that reaches them).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.root.heap_bytes()
    }
}

/// The leaf (Leaf or Multi) below `root` on the path of `key`, the only one that can hold
/// `key`'s entries (its own key may differ: lazy expansion), or None.
#[inline(always)]
fn leaf_on_path<'a>(root: &'a Child, key: &[u8]) -> Option<&'a Child> {
    let mut c = root;
    let mut depth = 0;
    loop {
        c = match c.view() {
            View::Empty => return None,
            View::Leaf(_) | View::Multi(_) => return Some(c),
            View::N4(n) => child_on_path(n, key, &mut depth)?,
            View::N16(n) => child_on_path(n, key, &mut depth)?,
            View::N48(n) => child_on_path(n, key, &mut depth)?,
            View::N256(n) => child_on_path(n, key, &mut depth)?,
        };
    }
}

/// The child of `n` on the path of `key`, reached after `depth` bytes (moved past the
/// child's byte), or None when no key below `n` can equal `key`.
#[inline(always)]
fn child_on_path<'a, T: Inner>(n: &'a T, key: &[u8], depth: &mut usize) -> Option<&'a Child> {
    let p = n.prefix().as_slice();
    if !key[*depth..].starts_with(p) {
        return None;
    }
    let at = *depth + p.len();
    let c = n.find(*key.get(at)?)?;
    *depth = at + 1;
    Some(c)
}

// A slot of a node (or the root), 8 bytes: nothing, one entry, entries with equal keys, or
// a node. Packed (see `slot`) so that a Node256 is 2 KiB, not 4: half the memory to fault
// in, copy and miss in cache than with a 16-byte enum (ordered 32-bit keys: 16.3 → 8.2
// bytes per key, CPU time of a build −20 %).
use slot::{Child, Kind, View};

/// Runs `$body` with `$n` bound to a shared reference to the node in `$child` (a
/// `&Child`), or `$other` for a leaf or an empty slot.
macro_rules! on_node {
    ($child:expr, $n:ident => $body:expr, _ => $other:expr) => {
        match $child.view() {
            View::N4($n) => $body,
            View::N16($n) => $body,
            View::N48($n) => $body,
            View::N256($n) => $body,
            _ => $other,
        }
    };
}

/// Runs `$body` with `$n` bound to a mutable reference to the node in `$child` (a
/// `&mut Child`; copied first when shared), or `$other` for a leaf or an empty slot.
macro_rules! on_node_mut {
    ($child:expr, $n:ident => $body:expr, _ => $other:expr) => {{
        let c: &mut Child = $child;
        match c.kind() {
            Kind::N4 => {
                let $n = c.node_mut::<Node4>();
                $body
            }
            Kind::N16 => {
                let $n = c.node_mut::<Node16>();
                $body
            }
            Kind::N48 => {
                let $n = c.node_mut::<Node48>();
                $body
            }
            Kind::N256 => {
                let $n = c.node_mut::<Node256>();
                $body
            }
            _ => $other,
        }
    }};
}

mod insert;
mod merge;
mod node;
mod remove;
mod scan;
mod slot;
#[cfg(test)]
mod tests;

use insert::insert_leaf;
use merge::merge_children;
use node::{Inner, Node4, Node16, Node48, Node256, Prefix};
use remove::remove_entry;
use scan::Scan;
