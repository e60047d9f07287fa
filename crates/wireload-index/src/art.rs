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
use std::mem;
use std::ops::Bound;
use std::sync::Arc;

use rayon::prelude::*;

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

// ---------------------------------------------------------------------------------------
// Nodes

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

mod slot {
    //! The packed slot: the only `unsafe` of the tree.
    //!
    //! # Representation
    //!
    //! A slot is one pointer, a `*const ()`, read as one of:
    //!
    //! - the null pointer: empty;
    //! - an address with the top bit ([`LEAF`]) set: one inline entry, the bits of an
    //!   [`EntryRef`] whose top bit is clear (segment ids below 2^31; others go to a one-entry
    //!   `Multi`) or'ed with [`LEAF`]. Made with [`ptr::without_provenance`]: a pointer with an
    //!   address and no provenance, never dereferenced, only its address read;
    //! - otherwise, the pointer that `Arc::into_raw` gave for a [`Pointee`], with the pointee's
    //!   tag or'ed into its three low bits by `map_addr`. The tag is cleared the same way before
    //!   the pointer is used, so `Arc::from_raw`, reads and writes get the provenance that
    //!   `into_raw` gave (strict provenance: no pointer-integer round trip, no exposed
    //!   addresses; checked by Miri with `-Zmiri-strict-provenance`). A pointer slot owns one
    //!   strong count of its `Arc`.
    //!
    //! # The invariant that tells pointers from leaves, checked
    //!
    //! Every stored pointer has its three low bits clear (for the tag) and its top bit clear
    //! (else it would read as a leaf). The low bits: every pointee type is aligned to 8 or more,
    //! checked at compile time in [`Child::from_arc`]. The top bit is a property of the
    //! platform, not of Rust: user-space addresses of the supported targets are below 2^63 on
    //! the usual kernels, but a platform that keeps a tag in a pointer's top byte (aarch64 with
    //! top-byte-ignore under HWASan or a tagging allocator, for instance) can hand out an
    //! address with bit 63 set. So both are checked by an `assert!` ([`check_address`]) each
    //! time a pointer is stored, before the slot is made: one branch beside an allocation. On
    //! such a platform the insert panics with a message naming the address, rather than
    //! building a slot that would read as an inline entry.
    //!
    //! # Targets
    //!
    //! 64-bit targets only (`target_pointer_width = "64"`, pointers of 8 bytes: not CHERI): an
    //! inline entry needs 63 bits in a pointer-sized slot. Other targets fail to compile with a
    //! message rather than corrupt the tree (on 32-bit targets the slot could not hold an
    //! entry, and a `Vec` is only 4-aligned there, too little for a 3-bit tag).

    use std::mem::ManuallyDrop;
    use std::ptr;
    use std::sync::Arc;
    use std::sync::atomic::{Ordering, fence};

    use super::{Node4, Node16, Node48, Node256};
    use crate::EntryRef;

    #[cfg(not(target_pointer_width = "64"))]
    compile_error!(
        "wireload-index: the ART packs a 63-bit entry into a pointer-sized slot, which needs \
         64-bit pointers (see the `slot` module's doc)"
    );

    /// Address bit that marks an inline entry: the top bit.
    pub(super) const LEAF: usize = 1 << 63;
    /// Low bits of a pointer slot that hold its kind (pointees are 8-byte aligned).
    pub(super) const TAG: usize = 7;

    /// What a slot holds.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub(super) enum Kind {
        /// nothing
        Empty,
        /// one entry, inline
        Leaf,
        /// entries with equal keys, behind an `Arc<Vec<EntryRef>>`
        Multi,
        /// `Arc<Node4>`
        N4,
        /// `Arc<Node16>`
        N16,
        /// `Arc<Node48>`
        N48,
        /// `Arc<Node256>`
        N256,
    }

    /// A slot, borrowed.
    pub(super) enum View<'a> {
        Empty,
        Leaf(EntryRef),
        Multi(&'a Vec<EntryRef>),
        N4(&'a Node4),
        N16(&'a Node16),
        N48(&'a Node48),
        N256(&'a Node256),
    }

    /// A type a slot can point to, with its tag.
    pub(super) trait Pointee: Clone + Send + Sync {
        /// the tag in the low bits (1..=5)
        const TAG: usize;
    }
    impl Pointee for Vec<EntryRef> {
        const TAG: usize = 1;
    }
    impl Pointee for Node4 {
        const TAG: usize = 2;
    }
    impl Pointee for Node16 {
        const TAG: usize = 3;
    }
    impl Pointee for Node48 {
        const TAG: usize = 4;
    }
    impl Pointee for Node256 {
        const TAG: usize = 5;
    }

    /// Panics unless `addr`, the address of a pointer about to be stored in a slot, leaves
    /// the tag bits and the leaf bit free (the module's invariant).
    #[inline(always)]
    pub(super) fn check_address(addr: usize) {
        assert!(
            addr & (TAG | LEAF) == 0,
            "ART slot invariant: pointer {addr:#x} has its top bit or one of its 3 low bits \
             set, so it cannot be told from an inline entry or tagged (a platform with tagged \
             pointers or top-byte-ignore?)"
        );
    }

    /// One slot: see the module's doc. A pointer slot owns one strong count of its `Arc`.
    #[repr(transparent)]
    pub(super) struct Child(*const ());

    // SAFETY: a slot is an `Arc<T>` of a `Pointee`, or holds no pointer (empty, inline
    // entry). Every `Pointee` is Send + Sync, which makes `Arc<T>` Send and Sync, and a slot
    // allows no more than an `Arc<T>` does: shared reads, writes only through `node_mut`
    // with `&mut self` and a strong count of 1 (as `Arc::make_mut`).
    unsafe impl Send for Child {}
    // SAFETY: as for Send above
    unsafe impl Sync for Child {}

    impl Default for Child {
        #[inline(always)]
        fn default() -> Self {
            Child::EMPTY
        }
    }

    impl Child {
        /// The empty slot.
        pub(super) const EMPTY: Child = Child(ptr::null());

        /// A slot holding entry `e`.
        #[inline(always)]
        pub(super) fn leaf(e: EntryRef) -> Child {
            let bits = e.to_bits();
            if bits >> 63 == 0 {
                // lossless: 64-bit targets only
                Child(ptr::without_provenance(bits as usize | LEAF))
            } else {
                Child::from_arc(Arc::new(vec![e]))
            }
        }

        /// A slot owning `a`. Panics if the pointer breaks the module's invariant.
        #[inline(always)]
        pub(super) fn from_arc<T: Pointee>(a: Arc<T>) -> Child {
            const {
                assert!(
                    align_of::<T>() > TAG,
                    "a slot's pointee must leave the tag bits free"
                )
            };
            // before `into_raw`: a panic drops `a`
            check_address(Arc::as_ptr(&a).addr());
            Child(Arc::into_raw(a).cast::<()>().map_addr(|p| p | T::TAG))
        }

        /// The slot's address (the pointer's, or the bits of an inline entry).
        #[inline(always)]
        fn addr(&self) -> usize {
            self.0.addr()
        }

        /// What the slot holds.
        #[inline(always)]
        pub(super) fn kind(&self) -> Kind {
            let a = self.addr();
            if a & LEAF != 0 {
                return Kind::Leaf;
            }
            match a & TAG {
                0 => Kind::Empty,
                1 => Kind::Multi,
                2 => Kind::N4,
                3 => Kind::N16,
                4 => Kind::N48,
                _ => Kind::N256,
            }
        }

        /// True for the empty slot.
        #[inline(always)]
        pub(super) fn is_empty(&self) -> bool {
            self.addr() == 0
        }

        /// True for a node (not empty, not a leaf).
        #[inline(always)]
        pub(super) fn is_node(&self) -> bool {
            let a = self.addr();
            a & LEAF == 0 && a & TAG >= Node4::TAG
        }

        /// The pointer of a pointer slot, tag cleared, with its provenance.
        #[inline(always)]
        fn ptr<T>(&self) -> *const T {
            self.0.map_addr(|a| a & !TAG).cast::<T>()
        }

        /// The pointee of a slot tagged `T::TAG`.
        #[inline(always)]
        pub(super) fn node<T: Pointee>(&self) -> &T {
            assert_eq!(self.addr() & (TAG | LEAF), T::TAG, "slot of another kind");
            self.get()
        }

        /// The pointee, for a pointer slot tagged `T::TAG`.
        #[inline(always)]
        fn get<T: Pointee>(&self) -> &T {
            debug_assert_eq!(self.addr() & (TAG | LEAF), T::TAG);
            // SAFETY: the tag says the pointer came from `Arc::<T>::into_raw` (only
            // `from_arc` makes such a slot), with its provenance kept, and this slot owns a
            // strong count of it, alive at least as long as the borrow of `self`; writes
            // happen only through `node_mut`, which needs `&mut self`.
            unsafe { &*self.ptr::<T>() }
        }

        /// The slot, borrowed.
        #[inline(always)]
        pub(super) fn view(&self) -> View<'_> {
            match self.kind() {
                Kind::Empty => View::Empty,
                // lossless: 64-bit targets only
                Kind::Leaf => View::Leaf(EntryRef::from_bits((self.addr() & !LEAF) as u64)),
                Kind::Multi => View::Multi(self.get()),
                Kind::N4 => View::N4(self.get()),
                Kind::N16 => View::N16(self.get()),
                Kind::N48 => View::N48(self.get()),
                Kind::N256 => View::N256(self.get()),
            }
        }

        /// The pointee of a slot tagged `T::TAG`, to change: copied into a fresh `Arc` first
        /// when another slot shares it (copy-on-write, as [`Arc::make_mut`]).
        #[inline(always)]
        pub(super) fn node_mut<T: Pointee>(&mut self) -> &mut T {
            assert_eq!(self.addr() & (TAG | LEAF), T::TAG, "slot of another kind");
            let p = self.ptr::<T>();
            // SAFETY: the tag says `p` came from `Arc::<T>::into_raw`, provenance kept; this
            // slot owns one strong count, which the ManuallyDrop handle stands for without
            // releasing it.
            let arc = ManuallyDrop::new(unsafe { Arc::from_raw(p) });
            if Arc::strong_count(&arc) == 1 {
                // pairs with the Release decrement of a slot dropped by another thread, so
                // that its reads of the pointee happen before our writes
                fence(Ordering::Acquire);
            } else {
                // a panic here (clone, allocation, the invariant check) leaves `self` as it
                // was, owning its count
                let copy = ManuallyDrop::new(Child::from_arc(Arc::new(T::clone(&arc))));
                // this slot lets go of its count of the shared pointee (a count of 2+ is
                // only decremented: no drop of the pointee, no unwind) ...
                drop(ManuallyDrop::into_inner(arc));
                // ... and takes the copy's, which `copy` does not drop
                self.0 = copy.0;
            }
            // SAFETY: the strong count is 1 and this slot, borrowed mutably for the
            // lifetime of the result, owns it: there is no other reference to the pointee,
            // and none can be made (only `clone` of this slot makes one, and it needs
            // `&self`). There are no weak handles. The pointer has the provenance that
            // `into_raw` gave it (the tag was added and cleared with `map_addr`), which
            // allows writes.
            unsafe { &mut *self.ptr::<T>().cast_mut() }
        }
    }

    impl Clone for Child {
        #[inline]
        fn clone(&self) -> Self {
            // SAFETY: (each arm) the tag gives the pointee type of a pointer from
            // `Arc::into_raw` (provenance kept), alive because this slot owns a count; the
            // new slot owns the count added here.
            unsafe {
                match self.kind() {
                    Kind::Empty | Kind::Leaf => {}
                    Kind::Multi => Arc::increment_strong_count(self.ptr::<Vec<EntryRef>>()),
                    Kind::N4 => Arc::increment_strong_count(self.ptr::<Node4>()),
                    Kind::N16 => Arc::increment_strong_count(self.ptr::<Node16>()),
                    Kind::N48 => Arc::increment_strong_count(self.ptr::<Node48>()),
                    Kind::N256 => Arc::increment_strong_count(self.ptr::<Node256>()),
                }
            }
            Child(self.0)
        }
    }

    impl Drop for Child {
        #[inline]
        fn drop(&mut self) {
            // SAFETY: (each arm) the tag gives the pointee type of a pointer from
            // `Arc::into_raw` (provenance kept); this slot owns one count and gives it back
            // exactly once.
            unsafe {
                match self.kind() {
                    Kind::Empty | Kind::Leaf => {}
                    Kind::Multi => drop(Arc::from_raw(self.ptr::<Vec<EntryRef>>())),
                    Kind::N4 => drop(Arc::from_raw(self.ptr::<Node4>())),
                    Kind::N16 => drop(Arc::from_raw(self.ptr::<Node16>())),
                    Kind::N48 => drop(Arc::from_raw(self.ptr::<Node48>())),
                    Kind::N256 => drop(Arc::from_raw(self.ptr::<Node256>())),
                }
            }
        }
    }

    #[cfg(test)]
    impl Child {
        /// Strong count of the pointee (tests).
        pub(super) fn strong_count(&self) -> usize {
            match self.kind() {
                Kind::Empty | Kind::Leaf => 0,
                // SAFETY: as in `clone`; the handle is not dropped
                Kind::Multi => Arc::strong_count(&ManuallyDrop::new(unsafe {
                    Arc::from_raw(self.ptr::<Vec<EntryRef>>())
                })),
                // SAFETY: as in `clone`; the handle is not dropped
                Kind::N4 => Arc::strong_count(&ManuallyDrop::new(unsafe {
                    Arc::from_raw(self.ptr::<Node4>())
                })),
                _ => unimplemented!("tests count Multi and Node4 only"),
            }
        }

        /// The slot's address: the tagged pointer, or the bits of an inline entry (tests).
        pub(super) fn bits(&self) -> usize {
            self.addr()
        }

        /// The pointer of a pointer slot, tag cleared (tests).
        pub(super) fn untagged(&self) -> *const () {
            self.ptr::<()>()
        }
    }

    // the slot must be exactly one word of 64 bits
    const _: () = assert!(size_of::<Child>() == 8 && size_of::<usize>() == 8);
}

/// Compressed path of a node: inline up to [`Prefix::INLINE`] bytes, boxed beyond.
#[derive(Clone)]
enum Prefix {
    /// short prefix in place
    Inline {
        len: u8,
        bytes: [u8; Prefix::INLINE],
    },
    /// long prefix on the heap
    Heap(Box<[u8]>),
}

impl Default for Prefix {
    fn default() -> Self {
        Prefix::Inline {
            len: 0,
            bytes: [0; Prefix::INLINE],
        }
    }
}

impl Prefix {
    /// Longest prefix kept in place.
    const INLINE: usize = 22;

    /// The prefix `p`.
    fn new(p: &[u8]) -> Self {
        if p.len() <= Prefix::INLINE {
            let mut bytes = [0; Prefix::INLINE];
            bytes[..p.len()].copy_from_slice(p);
            Prefix::Inline {
                len: p.len() as u8,
                bytes,
            }
        } else {
            Prefix::Heap(p.into())
        }
    }

    /// The bytes.
    #[inline(always)]
    fn as_slice(&self) -> &[u8] {
        match self {
            Prefix::Inline { len, bytes } => &bytes[..*len as usize],
            Prefix::Heap(b) => b,
        }
    }

    /// Heap bytes beyond the node.
    fn heap_bytes(&self) -> usize {
        match self {
            Prefix::Inline { .. } => 0,
            Prefix::Heap(b) => b.len(),
        }
    }
}

/// Node with up to `N` children (4 or 16), key bytes sorted.
#[derive(Clone)]
struct NodeN<const N: usize> {
    prefix: Prefix,
    n: u8,
    keys: [u8; N],
    children: [Child; N],
}

/// Node with up to 4 children.
type Node4 = NodeN<4>;
/// Node with up to 16 children.
type Node16 = NodeN<16>;

/// Node with up to 48 children behind a 256-byte index.
#[derive(Clone)]
struct Node48 {
    prefix: Prefix,
    n: u8,
    /// slot + 1 of the child for each byte; 0: none
    index: [u8; 256],
    children: [Child; 48],
}

/// Node with a slot for every byte.
#[derive(Clone)]
struct Node256 {
    prefix: Prefix,
    n: u16,
    children: [Child; 256],
}

/// Operations every inner node type has.
trait Inner: Clone {
    /// The compressed path.
    fn prefix(&self) -> &Prefix;
    /// The compressed path, to change.
    fn prefix_mut(&mut self) -> &mut Prefix;
    /// Number of children.
    fn count(&self) -> usize;
    /// True when a child for `b` cannot be added without growing.
    fn full_without(&self, b: u8) -> bool;
    /// The child for byte `b`.
    fn find(&self, b: u8) -> Option<&Child>;
    /// The slot for byte `b`, added (empty, counted) when absent; the caller fills it.
    /// The node must not be [`Inner::full_without`] `b`.
    fn slot_for(&mut self, b: u8) -> &mut Child;
    /// The child for byte `b`, to change.
    fn find_mut(&mut self, b: u8) -> Option<&mut Child>;
    /// Takes the child for byte `b`, which must be there (it may have been emptied in place
    /// since), out of the node (one child fewer), keeping the node type's layout invariant.
    fn remove_child(&mut self, b: u8) -> Child;
    /// Calls `f` for each child in byte order.
    fn each<'a>(&'a self, f: impl FnMut(u8, &'a Child));
    /// Calls `f` for each child slot that holds a child, in any order.
    fn each_mut<'a>(&'a mut self, f: impl FnMut(u8, &'a mut Child));
    /// Bytes of the node's allocation, its children's included.
    fn heap_bytes(&self) -> usize;
}

/// `N` empty slots.
fn empty_children<const N: usize>() -> [Child; N] {
    std::array::from_fn(|_| Child::EMPTY)
}

impl<const N: usize> NodeN<N> {
    /// A node without children.
    fn empty(prefix: Prefix) -> Self {
        NodeN {
            prefix,
            n: 0,
            keys: [0; N],
            children: empty_children(),
        }
    }

    /// Position of byte `b` among the keys.
    #[inline(always)]
    fn position(&self, b: u8) -> Option<usize> {
        // branch-free compare of all N bytes (vectorizes), masked to the used ones
        let mut mask = 0u32;
        for (i, &k) in self.keys.iter().enumerate() {
            mask |= ((k == b) as u32) << i;
        }
        mask &= (1u32 << self.n) - 1;
        (mask != 0).then(|| mask.trailing_zeros() as usize)
    }

    /// Number of used keys below `b`: where `b` goes.
    #[inline(always)]
    fn rank(&self, b: u8) -> usize {
        let mut mask = 0u32;
        for (i, &k) in self.keys.iter().enumerate() {
            mask |= ((k < b) as u32) << i;
        }
        (mask & ((1u32 << self.n) - 1)).count_ones() as usize
    }

    /// A node of this size holding the children of a smaller one.
    fn grown_from<const M: usize>(small: &mut NodeN<M>) -> Self {
        let mut node = NodeN::empty(mem::take(&mut small.prefix));
        let n = small.n as usize;
        node.keys[..n].copy_from_slice(&small.keys[..n]);
        for (to, from) in node.children.iter_mut().zip(&mut small.children[..n]) {
            *to = mem::take(from);
        }
        node.n = small.n;
        node
    }
}

impl Node4 {
    /// The node holding two children with different bytes.
    fn two(prefix: Prefix, b1: u8, c1: Child, b2: u8, c2: Child) -> Self {
        debug_assert_ne!(b1, b2);
        let mut node = Node4::empty(prefix);
        let (first, second) = if b1 < b2 {
            ((b1, c1), (b2, c2))
        } else {
            ((b2, c2), (b1, c1))
        };
        node.keys[0] = first.0;
        node.children[0] = first.1;
        node.keys[1] = second.0;
        node.children[1] = second.1;
        node.n = 2;
        node
    }
}

impl<const N: usize> Inner for NodeN<N> {
    #[inline(always)]
    fn prefix(&self) -> &Prefix {
        &self.prefix
    }
    fn prefix_mut(&mut self) -> &mut Prefix {
        &mut self.prefix
    }
    #[inline(always)]
    fn count(&self) -> usize {
        self.n as usize
    }
    #[inline(always)]
    fn full_without(&self, b: u8) -> bool {
        self.n as usize == N && self.position(b).is_none()
    }
    #[inline(always)]
    fn find(&self, b: u8) -> Option<&Child> {
        self.position(b).map(|i| &self.children[i])
    }
    #[inline(always)]
    fn slot_for(&mut self, b: u8) -> &mut Child {
        if let Some(i) = self.position(b) {
            return &mut self.children[i];
        }
        let n = self.n as usize;
        debug_assert!(n < N);
        let at = self.rank(b);
        if at < n {
            self.keys.copy_within(at..n, at + 1);
            self.children[at..=n].rotate_right(1);
        }
        self.keys[at] = b;
        self.n += 1;
        &mut self.children[at]
    }
    fn find_mut(&mut self, b: u8) -> Option<&mut Child> {
        self.position(b).map(|i| &mut self.children[i])
    }
    fn remove_child(&mut self, b: u8) -> Child {
        let i = self.position(b).expect("removing a child the node has");
        let n = self.n as usize;
        // close the gap: the keys stay sorted, the taken child ends up past the used ones
        self.keys.copy_within(i + 1..n, i);
        self.children[i..n].rotate_left(1);
        self.n -= 1;
        mem::take(&mut self.children[n - 1])
    }
    fn each<'a>(&'a self, mut f: impl FnMut(u8, &'a Child)) {
        let n = self.n as usize;
        for (&b, c) in self.keys[..n].iter().zip(&self.children[..n]) {
            f(b, c);
        }
    }
    fn each_mut<'a>(&'a mut self, mut f: impl FnMut(u8, &'a mut Child)) {
        let n = self.n as usize;
        for (&b, c) in self.keys[..n].iter().zip(&mut self.children[..n]) {
            f(b, c);
        }
    }
    fn heap_bytes(&self) -> usize {
        ARC_HEADER
            + mem::size_of::<Self>()
            + self.prefix.heap_bytes()
            + self.children[..self.n as usize]
                .iter()
                .map(Child::heap_bytes)
                .sum::<usize>()
    }
}

impl Node48 {
    /// A node without children.
    fn empty(prefix: Prefix) -> Self {
        Node48 {
            prefix,
            n: 0,
            index: [0; 256],
            children: empty_children(),
        }
    }

    /// A node holding the children of a full Node16 (taken from it).
    fn grown_from(small: &mut Node16) -> Self {
        let mut node = Node48 {
            prefix: mem::take(&mut small.prefix),
            n: small.n,
            index: [0; 256],
            children: empty_children(),
        };
        for i in 0..small.n as usize {
            node.index[small.keys[i] as usize] = i as u8 + 1;
            node.children[i] = mem::take(&mut small.children[i]);
        }
        node
    }
}

impl Inner for Node48 {
    #[inline(always)]
    fn prefix(&self) -> &Prefix {
        &self.prefix
    }
    fn prefix_mut(&mut self) -> &mut Prefix {
        &mut self.prefix
    }
    #[inline(always)]
    fn count(&self) -> usize {
        self.n as usize
    }
    #[inline(always)]
    fn full_without(&self, b: u8) -> bool {
        self.n == 48 && self.index[b as usize] == 0
    }
    #[inline(always)]
    fn find(&self, b: u8) -> Option<&Child> {
        match self.index[b as usize] {
            0 => None,
            i => Some(&self.children[i as usize - 1]),
        }
    }
    #[inline(always)]
    fn slot_for(&mut self, b: u8) -> &mut Child {
        let mut i = self.index[b as usize] as usize;
        if i == 0 {
            debug_assert!(self.n < 48);
            self.n += 1;
            i = self.n as usize;
            self.index[b as usize] = i as u8;
        }
        &mut self.children[i - 1]
    }
    fn find_mut(&mut self, b: u8) -> Option<&mut Child> {
        match self.index[b as usize] {
            0 => None,
            i => Some(&mut self.children[i as usize - 1]),
        }
    }
    fn remove_child(&mut self, b: u8) -> Child {
        let i = self.index[b as usize] as usize;
        assert_ne!(i, 0, "removing a child the node has");
        self.index[b as usize] = 0;
        // slots 0..n stay dense: the last slot's child moves into the hole
        let last = self.n as usize;
        if i != last {
            self.children.swap(i - 1, last - 1);
            let moved = self
                .index
                .iter()
                .position(|&x| x as usize == last)
                .expect("every used slot has a byte");
            self.index[moved] = i as u8;
        }
        self.n -= 1;
        mem::take(&mut self.children[last - 1])
    }
    fn each<'a>(&'a self, mut f: impl FnMut(u8, &'a Child)) {
        for (b, &i) in self.index.iter().enumerate() {
            if i != 0 {
                f(b as u8, &self.children[i as usize - 1]);
            }
        }
    }
    fn each_mut<'a>(&'a mut self, mut f: impl FnMut(u8, &'a mut Child)) {
        let mut byte_of = [0u8; 48];
        for (b, &i) in self.index.iter().enumerate() {
            if i != 0 {
                byte_of[i as usize - 1] = b as u8;
            }
        }
        let n = self.n as usize;
        for (c, &b) in self.children[..n].iter_mut().zip(&byte_of[..n]) {
            f(b, c);
        }
    }
    fn heap_bytes(&self) -> usize {
        ARC_HEADER
            + mem::size_of::<Self>()
            + self.prefix.heap_bytes()
            + self.children[..self.n as usize]
                .iter()
                .map(Child::heap_bytes)
                .sum::<usize>()
    }
}

impl Node256 {
    /// A node without children.
    fn empty(prefix: Prefix) -> Self {
        Node256 {
            prefix,
            n: 0,
            children: empty_children(),
        }
    }

    /// A node holding the children of a full Node48 (taken from it).
    fn grown_from(small: &mut Node48) -> Self {
        let mut node = Node256 {
            prefix: mem::take(&mut small.prefix),
            n: small.n as u16,
            children: empty_children(),
        };
        for (b, &i) in small.index.iter().enumerate() {
            if i != 0 {
                node.children[b] = mem::take(&mut small.children[i as usize - 1]);
            }
        }
        node
    }
}

impl Inner for Node256 {
    #[inline(always)]
    fn prefix(&self) -> &Prefix {
        &self.prefix
    }
    fn prefix_mut(&mut self) -> &mut Prefix {
        &mut self.prefix
    }
    #[inline(always)]
    fn count(&self) -> usize {
        self.n as usize
    }
    #[inline(always)]
    fn full_without(&self, _b: u8) -> bool {
        false
    }
    #[inline(always)]
    fn find(&self, b: u8) -> Option<&Child> {
        let c = &self.children[b as usize];
        (!c.is_empty()).then_some(c)
    }
    #[inline(always)]
    fn slot_for(&mut self, b: u8) -> &mut Child {
        let c = &mut self.children[b as usize];
        self.n += c.is_empty() as u16;
        c
    }
    fn find_mut(&mut self, b: u8) -> Option<&mut Child> {
        let c = &mut self.children[b as usize];
        (!c.is_empty()).then_some(c)
    }
    fn remove_child(&mut self, b: u8) -> Child {
        // no check possible: the caller may have emptied the child in place already
        self.n -= 1;
        mem::take(&mut self.children[b as usize])
    }
    fn each<'a>(&'a self, mut f: impl FnMut(u8, &'a Child)) {
        for (b, c) in self.children.iter().enumerate() {
            if !c.is_empty() {
                f(b as u8, c);
            }
        }
    }
    fn each_mut<'a>(&'a mut self, mut f: impl FnMut(u8, &'a mut Child)) {
        for (b, c) in self.children.iter_mut().enumerate() {
            if !c.is_empty() {
                f(b as u8, c);
            }
        }
    }
    fn heap_bytes(&self) -> usize {
        ARC_HEADER
            + mem::size_of::<Self>()
            + self.prefix.heap_bytes()
            + self.children.iter().map(Child::heap_bytes).sum::<usize>()
    }
}

/// Bytes of the reference counts in front of an `Arc`'s value.
const ARC_HEADER: usize = 2 * mem::size_of::<usize>();

impl Child {
    /// The first entry of a leaf.
    fn first_entry(&self) -> EntryRef {
        match self.view() {
            View::Leaf(e) => e,
            View::Multi(v) => v[0],
            _ => unreachable!("first_entry of a non-leaf"),
        }
    }

    /// Appends the entries of a leaf.
    fn push_entries(&self, out: &mut Vec<EntryRef>) {
        match self.view() {
            View::Leaf(e) => out.push(e),
            View::Multi(v) => out.extend_from_slice(v),
            _ => {}
        }
    }

    /// The compressed path of a node (empty for a leaf).
    #[inline(always)]
    fn prefix(&self) -> &[u8] {
        on_node!(self, n => n.prefix().as_slice(), _ => &[])
    }

    /// Replaces the compressed path of a node.
    fn set_prefix(&mut self, p: &[u8]) {
        let p = Prefix::new(p);
        on_node_mut!(self, n => *n.prefix_mut() = p, _ => unreachable!("prefix of a leaf"))
    }

    /// Number of children of a node.
    fn count(&self) -> usize {
        on_node!(self, n => n.count(), _ => 0)
    }

    /// The child of a node for byte `b`.
    #[inline(always)]
    fn find(&self, b: u8) -> Option<&Child> {
        on_node!(self, n => n.find(b), _ => None)
    }

    /// The slot of a node for byte `b` (added empty when absent, the node grown when
    /// full); the caller fills an empty one.
    #[inline(always)]
    fn slot_for(&mut self, b: u8) -> &mut Child {
        if on_node!(self, n => n.full_without(b), _ => false) {
            self.grow();
        }
        on_node_mut!(self, n => n.slot_for(b), _ => unreachable!("slot_for on a leaf"))
    }

    /// Most children the node can hold without growing.
    fn capacity(&self) -> usize {
        match self.kind() {
            Kind::N4 => 4,
            Kind::N16 => 16,
            Kind::N48 => 48,
            Kind::N256 => 256,
            _ => 0,
        }
    }

    /// Grows a node, in one step, to the smallest size that holds `need` children.
    fn reserve(&mut self, need: usize) {
        if need <= self.capacity() {
            return;
        }
        self.resize(need);
    }

    /// Shrinks a node that removals left with few children to the next smaller type (at
    /// a count below that type's capacity: no resize at every step of alternating inserts
    /// and removals).
    fn shrink(&mut self) {
        let at = match self.kind() {
            Kind::N16 => 3,
            Kind::N48 => 12,
            Kind::N256 => 37,
            _ => return,
        };
        let count = self.count();
        if count <= at {
            self.resize(count);
        }
    }

    /// Replaces a node by one of the smallest type that holds `need` (≥ its count)
    /// children, its children moved over.
    fn resize(&mut self, need: usize) {
        let prefix = on_node_mut!(self, n => mem::take(n.prefix_mut()), _ => unreachable!());
        let mut resized = match need {
            ..=4 => Child::from_arc(Arc::new(Node4::empty(prefix))),
            5..=16 => Child::from_arc(Arc::new(Node16::empty(prefix))),
            17..=48 => Child::from_arc(Arc::new(Node48::empty(prefix))),
            _ => Child::from_arc(Arc::new(Node256::empty(prefix))),
        };
        on_node_mut!(
            self,
            n => n.each_mut(|b, c| *resized.slot_for(b) = mem::take(c)),
            _ => unreachable!()
        );
        *self = resized;
    }

    /// Replaces a full node by one of the next size.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let grown = match self.kind() {
            Kind::N4 => Child::from_arc(Arc::new(Node16::grown_from(self.node_mut::<Node4>()))),
            Kind::N16 => Child::from_arc(Arc::new(Node48::grown_from(self.node_mut()))),
            Kind::N48 => Child::from_arc(Arc::new(Node256::grown_from(self.node_mut()))),
            _ => unreachable!("growing a leaf or a Node256"),
        };
        *self = grown;
    }

    /// Bytes of the subtree's allocations.
    fn heap_bytes(&self) -> usize {
        match self.view() {
            View::Empty | View::Leaf(_) => 0,
            View::Multi(v) => ARC_HEADER + mem::size_of::<Vec<EntryRef>>() + v.capacity() * 8,
            View::N4(n) => n.heap_bytes(),
            View::N16(n) => n.heap_bytes(),
            View::N48(n) => n.heap_bytes(),
            View::N256(n) => n.heap_bytes(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Insertion

/// Length of the common prefix of `a` and `b`.
#[inline(always)]
fn common_len(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().unwrap());
        let y = u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        if x != y {
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// Byte `i` of `key`; a key that ends there is a proper prefix of another key.
#[inline(always)]
fn key_byte(key: &[u8], i: usize) -> u8 {
    match key.get(i) {
        Some(&b) => b,
        None => not_prefix_free(key),
    }
}

/// Panics: a key ended inside another key's path.
#[cold]
#[inline(never)]
fn not_prefix_free(key: &[u8]) -> ! {
    panic!("index keys must be prefix-free: key {key:02x?} is a prefix of another key")
}

/// Puts `leaf` (a Leaf or Multi with key `key`) into the subtree in `slot`, which starts
/// after `depth` key bytes. `leaf_first`: among equal keys, `leaf`'s entries come first
/// and are the `first` of a [`Duplicate`] (a merge of a left leaf into a right subtree).
#[inline]
fn insert_leaf(
    mut slot: &mut Child,
    leaf: Child,
    key: &[u8],
    mut depth: usize,
    keys: &impl KeySource,
    unique: bool,
    leaf_first: bool,
) -> Result<(), Duplicate> {
    // One dispatch on the node kind per level: the prefix and fullness are checked through
    // a shared borrow, and only then is the slot borrowed mutably to descend (a mutable
    // borrow taken before a `split_prefix` or `grow` of the same slot would not check).
    macro_rules! level {
        ($T:ty, $can_fill:expr) => {{
            let n: &$T = slot.node();
            let p = n.prefix().as_slice();
            let plen = p.len();
            if plen != 0 {
                let m = common_len(p, &key[depth..]);
                if m < plen {
                    split_prefix(slot, m, leaf, key, depth);
                    return Ok(());
                }
            }
            let b = key_byte(key, depth + plen);
            if $can_fill && n.full_without(b) {
                slot.grow();
                continue;
            }
            depth += plen + 1;
            let c = slot.node_mut::<$T>().slot_for(b);
            if c.is_empty() {
                *c = leaf;
                return Ok(());
            }
            slot = c;
        }};
    }
    loop {
        match slot.kind() {
            Kind::N256 => level!(Node256, false),
            Kind::N48 => level!(Node48, true),
            Kind::N16 => level!(Node16, true),
            Kind::N4 => level!(Node4, true),
            _ => return place_leaf(slot, leaf, key, depth, keys, unique, leaf_first),
        }
    }
}

/// Puts `leaf` into `slot`, which is empty or a leaf.
fn place_leaf(
    slot: &mut Child,
    leaf: Child,
    key: &[u8],
    depth: usize,
    keys: &impl KeySource,
    unique: bool,
    leaf_first: bool,
) -> Result<(), Duplicate> {
    if slot.is_empty() {
        *slot = leaf;
        return Ok(());
    }
    let there = slot.first_entry();
    let other = keys.key(there);
    if other == key {
        let new = leaf.first_entry();
        if unique {
            return Err(if leaf_first {
                Duplicate {
                    first: new,
                    second: there,
                }
            } else {
                Duplicate {
                    first: there,
                    second: new,
                }
            });
        }
        if let (false, Kind::Multi, View::Leaf(e)) = (leaf_first, slot.kind(), leaf.view()) {
            slot.node_mut::<Vec<EntryRef>>().push(e);
            return Ok(());
        }
        let (x, y) = if leaf_first {
            (&leaf, &*slot)
        } else {
            (&*slot, &leaf)
        };
        let mut v = Vec::with_capacity(2);
        x.push_entries(&mut v);
        y.push_entries(&mut v);
        *slot = Child::from_arc(Arc::new(v));
        return Ok(());
    }
    let at = depth + common_len(&key[depth..], other.get(depth..).unwrap_or(&[]));
    let node = Node4::two(
        Prefix::new(&key[depth..at]),
        key_byte(other, at),
        mem::take(slot),
        key_byte(key, at),
        leaf,
    );
    *slot = Child::from_arc(Arc::new(node));
    Ok(())
}

/// Puts `leaf` beside the node in `slot`, whose prefix differs from `key` at its byte `m`:
/// a new Node4 takes the common part of the prefix.
fn split_prefix(slot: &mut Child, m: usize, leaf: Child, key: &[u8], depth: usize) {
    let kb = key_byte(key, depth + m);
    let p = slot.prefix();
    let (head, pb) = (Prefix::new(&p[..m]), p[m]);
    let tail = p[m + 1..].to_vec();
    let mut old = mem::take(slot);
    old.set_prefix(&tail);
    *slot = Child::from_arc(Arc::new(Node4::two(head, pb, old, kb, leaf)));
}

// ---------------------------------------------------------------------------------------
// Removal

/// Removes `e` from the subtree in `slot`, which starts after `depth` key bytes and holds
/// `e` on the path of `key` (the caller checked): copies shared nodes on that path only.
fn remove_entry(slot: &mut Child, e: EntryRef, key: &[u8], depth: usize) {
    match slot.kind() {
        Kind::Empty => unreachable!("removing an entry the tree does not hold"),
        Kind::Leaf => {
            debug_assert_eq!(slot.first_entry(), e);
            *slot = Child::EMPTY;
        }
        Kind::Multi => {
            let v: &Vec<EntryRef> = slot.node();
            match v.len() {
                // a lone entry of a segment too big for an inline leaf
                1 => *slot = Child::EMPTY,
                // the other entry as a leaf: no copy of a shared list
                2 => *slot = Child::leaf(if v[0] == e { v[1] } else { v[0] }),
                _ => {
                    let v = slot.node_mut::<Vec<EntryRef>>();
                    let i = v.iter().position(|&x| x == e).expect("entry in its leaf");
                    // `remove`, not `swap_remove`: equal keys keep their insertion order
                    v.remove(i);
                }
            }
        }
        _ => {
            let at = depth + slot.prefix().len();
            let b = key_byte(key, at);
            let emptied = on_node_mut!(slot, n => {
                let c = n.find_mut(b).expect("child on the entry's path");
                remove_entry(c, e, key, at + 1);
                c.is_empty()
            }, _ => unreachable!());
            if emptied {
                slot.remove_child(b);
            }
        }
    }
}

impl Child {
    /// Takes the (emptied) child for byte `b` out of a node; a node left with one child is
    /// replaced by it, one left with few shrinks.
    fn remove_child(&mut self, b: u8) {
        on_node_mut!(self, n => drop(n.remove_child(b)), _ => unreachable!());
        if self.count() == 1 {
            self.collapse();
        } else {
            self.shrink();
        }
    }

    /// Replaces a node that has one child by that child (every inner node has two or
    /// more). A leaf moves up as it is: lazy expansion compares the whole key at a leaf.
    /// A node gets the path it was reached through from here as its prefix, in front of
    /// its own.
    fn collapse(&mut self) {
        let mut byte = 0;
        on_node!(self, n => n.each(|b, _| byte = b), _ => unreachable!());
        let mut child = on_node_mut!(self, n => n.remove_child(byte), _ => unreachable!());
        if child.is_node() {
            let (p, q) = (self.prefix(), child.prefix());
            let mut path = Vec::with_capacity(p.len() + 1 + q.len());
            path.extend_from_slice(p);
            path.push(byte);
            path.extend_from_slice(q);
            child.set_prefix(&path);
        }
        *self = child;
    }
}

// ---------------------------------------------------------------------------------------
// Merge

/// The subtree holding the entries of subtrees `a` and `b`, both starting after `depth`
/// key bytes, `level` nodes below the root.
fn merge_children<K: KeySource>(
    a: Child,
    b: Child,
    depth: usize,
    level: u32,
    keys: &K,
    unique: bool,
) -> Result<Child, Duplicate> {
    if a.is_empty() {
        return Ok(b);
    }
    if b.is_empty() {
        return Ok(a);
    }
    match (a.is_node(), b.is_node()) {
        (true, true) => merge_nodes(a, b, depth, level, keys, unique),
        (true, false) => {
            let mut t = a;
            let key = keys.key(b.first_entry());
            insert_leaf(&mut t, b, key, depth, keys, unique, false)?;
            Ok(t)
        }
        (false, _) => {
            let mut t = b;
            let key = keys.key(a.first_entry());
            insert_leaf(&mut t, a, key, depth, keys, unique, true)?;
            Ok(t)
        }
    }
}

/// [`merge_children`] of two nodes.
fn merge_nodes<K: KeySource>(
    mut a: Child,
    mut b: Child,
    depth: usize,
    level: u32,
    keys: &K,
    unique: bool,
) -> Result<Child, Duplicate> {
    let (pa, pb) = (a.prefix(), b.prefix());
    let m = common_len(pa, pb);
    let (la, lb) = (pa.len(), pb.len());
    if m < la && m < lb {
        // the paths part inside both prefixes: a new node above both
        let head = Prefix::new(&pa[..m]);
        let (ba, bb) = (pa[m], pb[m]);
        let (ta, tb) = (pa[m + 1..].to_vec(), pb[m + 1..].to_vec());
        a.set_prefix(&ta);
        b.set_prefix(&tb);
        return Ok(Child::from_arc(Arc::new(Node4::two(head, ba, a, bb, b))));
    }
    if m == la && m < lb {
        // b's path continues below a: b goes to a's child for byte pb[m]
        let byte = pb[m];
        let tail = pb[m + 1..].to_vec();
        b.set_prefix(&tail);
        let slot = a.slot_for(byte);
        let old = mem::take(slot);
        *slot = merge_children(old, b, depth + m + 1, level + 1, keys, unique)?;
        return Ok(a);
    }
    if m == lb && m < la {
        let byte = pa[m];
        let tail = pa[m + 1..].to_vec();
        a.set_prefix(&tail);
        let slot = b.slot_for(byte);
        let old = mem::take(slot);
        *slot = merge_children(a, old, depth + m + 1, level + 1, keys, unique)?;
        return Ok(b);
    }
    // equal paths: merge the children of the smaller node into the bigger one
    let depth = depth + m + 1;
    let a_big = a.count() >= b.count();
    let (mut big, mut small) = if a_big { (a, b) } else { (b, a) };
    let pair = |t: Child, s: Child| {
        if a_big {
            merge_children(t, s, depth, level + 1, keys, unique)
        } else {
            merge_children(s, t, depth, level + 1, keys, unique)
        }
    };
    if level < PARALLEL_LEVELS && rayon::current_num_threads() > 1 {
        // the paper's algorithm: common children merged in parallel, then the smaller
        // node's other children added
        let mut by_byte: Vec<Child> = (0..256).map(|_| Child::EMPTY).collect();
        on_node_mut!(
            &mut small,
            n => n.each_mut(|b, c| by_byte[b as usize] = mem::take(c)),
            _ => unreachable!()
        );
        let mut pairs: Vec<(&mut Child, Child)> = Vec::new();
        on_node_mut!(
            &mut big,
            n => n.each_mut(|b, c| {
                let s = mem::take(&mut by_byte[b as usize]);
                if !s.is_empty() {
                    pairs.push((c, s));
                }
            }),
            _ => unreachable!()
        );
        if pairs.len() > 1 {
            pairs.into_par_iter().try_for_each(|(t, s)| {
                *t = pair(mem::take(t), s)?;
                Ok(())
            })?;
        } else {
            for (t, s) in pairs {
                *t = pair(mem::take(t), s)?;
            }
        }
        let missing = by_byte.iter().filter(|s| !s.is_empty()).count();
        big.reserve(big.count() + missing);
        for (b, s) in by_byte.into_iter().enumerate() {
            if !s.is_empty() {
                *big.slot_for(b as u8) = s;
            }
        }
    } else {
        // grow the bigger node once to hold the union, then move the children over
        let mut missing = 0;
        on_node!(
            &small,
            sn => sn.each(|b, _| missing += big.find(b).is_none() as usize),
            _ => unreachable!()
        );
        big.reserve(big.count() + missing);
        let mut result = Ok(());
        on_node_mut!(
            &mut big,
            bn => on_node_mut!(
                &mut small,
                sn => sn.each_mut(|b, c| {
                    if result.is_ok() {
                        let t = bn.slot_for(b);
                        match pair(mem::take(t), mem::take(c)) {
                            Ok(merged) => *t = merged,
                            Err(e) => result = Err(e),
                        }
                    }
                }),
                _ => unreachable!()
            ),
            _ => unreachable!()
        );
        result?;
    }
    Ok(big)
}

// ---------------------------------------------------------------------------------------
// Range scans

/// Where a subtree (all of whose keys start with a path) lies against one bound.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// every key of the subtree is admitted by the bound
    In,
    /// no key is
    Out,
    /// the path is a proper prefix of the bound: look further down
    Maybe,
}

/// Where keys starting with `path` lie against lower bound `lo`.
fn lower_side(path: &[u8], lo: Bound<&[u8]>) -> Side {
    let (p, excluded) = match lo {
        Bound::Unbounded => return Side::In,
        Bound::Included(p) => (p, false),
        Bound::Excluded(p) => (p, true),
    };
    let m = path.len().min(p.len());
    match path[..m].cmp(&p[..m]) {
        std::cmp::Ordering::Greater => Side::In,
        std::cmp::Ordering::Less => Side::Out,
        // every key starts with p: >= p, but not "> p and not starting with p"
        std::cmp::Ordering::Equal if path.len() >= p.len() => {
            if excluded {
                Side::Out
            } else {
                Side::In
            }
        }
        std::cmp::Ordering::Equal => Side::Maybe,
    }
}

/// Where keys starting with `path` lie against upper bound `hi`.
fn upper_side(path: &[u8], hi: Bound<&[u8]>) -> Side {
    let (p, excluded) = match hi {
        Bound::Unbounded => return Side::In,
        Bound::Included(p) => (p, false),
        Bound::Excluded(p) => (p, true),
    };
    let m = path.len().min(p.len());
    match path[..m].cmp(&p[..m]) {
        std::cmp::Ordering::Less => Side::In,
        std::cmp::Ordering::Greater => Side::Out,
        // every key starts with p: "starts with p" admits, "< p" does not
        std::cmp::Ordering::Equal if path.len() >= p.len() => {
            if excluded {
                Side::Out
            } else {
                Side::In
            }
        }
        std::cmp::Ordering::Equal => Side::Maybe,
    }
}

/// True when full key `key` lies between `lo` and `hi`.
fn admits(key: &[u8], lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    // a key that is a proper prefix of a bound is below it
    lower_side(key, lo) == Side::In && upper_side(key, hi) != Side::Out
}

/// An ordered scan in progress.
struct Scan<'a, K> {
    keys: &'a K,
    out: &'a mut Vec<EntryRef>,
}

impl<K: KeySource> Scan<'_, K> {
    /// Appends the entries of subtree `c`, reached through the key bytes `path`, that lie
    /// between `lo` and `hi` (`Unbounded`: a bound every key below meets).
    fn walk(&mut self, c: &Child, path: &mut Vec<u8>, lo: Bound<&[u8]>, hi: Bound<&[u8]>) {
        if matches!((lo, hi), (Bound::Unbounded, Bound::Unbounded)) {
            self.all(c);
            return;
        }
        match c.kind() {
            Kind::Empty => {}
            Kind::Leaf | Kind::Multi => {
                if admits(self.keys.key(c.first_entry()), lo, hi) {
                    c.push_entries(self.out);
                }
            }
            _ => {
                let start = path.len();
                path.extend_from_slice(c.prefix());
                let (lo, hi) = match narrow(path, lo, hi) {
                    Some(b) => b,
                    None => {
                        path.truncate(start);
                        return;
                    }
                };
                on_node!(c, n => n.each(|b, child| {
                    path.push(b);
                    if let Some((lo, hi)) = narrow(path, lo, hi) {
                        self.walk(child, path, lo, hi);
                    }
                    path.pop();
                }), _ => unreachable!());
                path.truncate(start);
            }
        }
    }

    /// Appends every entry of subtree `c`.
    fn all(&mut self, c: &Child) {
        match c.view() {
            View::Empty => {}
            View::Leaf(e) => self.out.push(e),
            View::Multi(v) => self.out.extend_from_slice(v),
            View::N4(n) => n.each(|_, child| self.all(child)),
            View::N16(n) => n.each(|_, child| self.all(child)),
            View::N48(n) => n.each(|_, child| self.all(child)),
            View::N256(n) => n.each(|_, child| self.all(child)),
        }
    }
}

/// A lower and an upper bound.
type Bounds<'b> = (Bound<&'b [u8]>, Bound<&'b [u8]>);

/// The bounds that keys starting with `path` still have to be checked against
/// (`Unbounded` for one they all meet), or None when no such key is admitted.
fn narrow<'b>(path: &[u8], lo: Bound<&'b [u8]>, hi: Bound<&'b [u8]>) -> Option<Bounds<'b>> {
    let lo = match lower_side(path, lo) {
        Side::Out => return None,
        Side::In => Bound::Unbounded,
        Side::Maybe => lo,
    };
    let hi = match upper_side(path, hi) {
        Side::Out => return None,
        Side::In => Bound::Unbounded,
        Side::Maybe => hi,
    };
    Some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries whose segment id fits an inline leaf, and some that do not.
    fn entries() -> Vec<EntryRef> {
        [
            (0, 0),
            (5, 7),
            ((1 << 31) - 1, u32::MAX),
            (1 << 31, 0),
            (u32::MAX, 9),
        ]
        .into_iter()
        .map(|(s, p)| EntryRef::new(s, p))
        .collect()
    }

    #[test]
    fn slot_leaf_roundtrip() {
        for e in entries() {
            let c = Child::leaf(e);
            let inline = e.segment() < (1 << 31);
            assert_eq!(c.kind(), if inline { Kind::Leaf } else { Kind::Multi });
            assert!(!c.is_empty() && !c.is_node());
            assert_eq!(c.first_entry(), e);
            let d = c.clone();
            let mut v = Vec::new();
            d.push_entries(&mut v);
            c.push_entries(&mut v);
            assert_eq!(v, vec![e, e]);
        }
        assert!(Child::EMPTY.is_empty());
        assert_eq!(Child::default().kind(), Kind::Empty);
    }

    /// The slot's reference counting against `Arc`'s own (its safe twin).
    #[test]
    fn slot_counts_like_arc() {
        let a = Arc::new(Node4::empty(Prefix::new(b"abc")));
        let c = Child::from_arc(a.clone());
        assert!(c.is_node());
        assert_eq!((Arc::strong_count(&a), c.strong_count()), (2, 2));
        let d = c.clone();
        assert_eq!(Arc::strong_count(&a), 3);
        assert_eq!(d.bits(), c.bits());
        drop(d);
        assert_eq!(Arc::strong_count(&a), 2);
        drop(c);
        assert_eq!(Arc::strong_count(&a), 1);
        let v = Arc::new(vec![EntryRef::new(1, 2)]);
        let c = Child::from_arc(v.clone());
        let clones: Vec<Child> = (0..5).map(|_| c.clone()).collect();
        assert_eq!(Arc::strong_count(&v), 7);
        drop(clones);
        drop(c);
        assert_eq!(Arc::strong_count(&v), 1);
    }

    /// `node_mut` does what `Arc::make_mut` does: in place when unique, a copy when shared.
    #[test]
    fn node_mut_is_make_mut() {
        let list = vec![EntryRef::new(1, 1), EntryRef::new(1, 2)];
        // shared: the copy is changed, the other handle is not
        let mut x = Child::from_arc(Arc::new(list.clone()));
        let y = x.clone();
        let mut ax = Arc::new(list.clone());
        let ay = ax.clone();
        let before = x.bits();
        x.node_mut::<Vec<EntryRef>>().push(EntryRef::new(2, 0));
        Arc::make_mut(&mut ax).push(EntryRef::new(2, 0));
        assert_ne!(x.bits(), before);
        assert_eq!((x.strong_count(), y.strong_count()), (1, 1));
        let (mut vx, mut vy) = (Vec::new(), Vec::new());
        x.push_entries(&mut vx);
        y.push_entries(&mut vy);
        assert_eq!((vx, vy), ((*ax).clone(), (*ay).clone()));
        // unique: changed in place
        let before = x.bits();
        let p = Arc::as_ptr(&ax);
        x.node_mut::<Vec<EntryRef>>().push(EntryRef::new(3, 0));
        Arc::make_mut(&mut ax).push(EntryRef::new(3, 0));
        assert_eq!(x.bits(), before);
        assert_eq!(Arc::as_ptr(&ax), p);
        // the other handle dropped on another thread: unique again, no copy
        let z = x.clone();
        std::thread::spawn(move || drop(z)).join().unwrap();
        let before = x.bits();
        x.node_mut::<Vec<EntryRef>>().push(EntryRef::new(4, 0));
        assert_eq!(x.bits(), before);
        let mut v = Vec::new();
        x.push_entries(&mut v);
        assert_eq!(v.len(), 5);
    }

    /// A pointer slot of every kind gives back the pointer of its `Arc` (tag cleared, same
    /// allocation) and owns exactly one count.
    #[test]
    fn slot_pointer_roundtrip() {
        fn roundtrip<T: slot::Pointee>(value: T, kind: Kind) {
            let a = Arc::new(value);
            slot::check_address(Arc::as_ptr(&a).addr());
            let c = Child::from_arc(a.clone());
            assert_eq!(c.kind(), kind);
            assert_eq!(c.is_node(), kind != Kind::Multi);
            assert!(!c.is_empty());
            assert_eq!(c.bits() & slot::TAG, T::TAG);
            assert_eq!(c.bits() & slot::LEAF, 0);
            assert_eq!(c.untagged(), Arc::as_ptr(&a).cast::<()>());
            assert!(std::ptr::eq(c.node::<T>(), &*a));
            let d = c.clone();
            assert!(std::ptr::eq(d.node::<T>(), &*a));
            assert_eq!(Arc::strong_count(&a), 3);
            drop((c, d));
            assert_eq!(Arc::strong_count(&a), 1);
        }
        roundtrip(vec![EntryRef::new(1, 2)], Kind::Multi);
        roundtrip(Node4::empty(Prefix::new(b"a")), Kind::N4);
        roundtrip(Node16::empty(Prefix::new(b"b")), Kind::N16);
        roundtrip(Node48::empty(Prefix::new(b"c")), Kind::N48);
        roundtrip(Node256::empty(Prefix::new(&[7; 40])), Kind::N256);
    }

    /// An inline leaf is its entry's bits with the leaf bit set.
    #[test]
    fn slot_leaf_bits() {
        for e in entries().into_iter().filter(|e| e.segment() < (1 << 31)) {
            let c = Child::leaf(e);
            assert_eq!(c.bits(), e.to_bits() as usize | slot::LEAF);
        }
        assert_eq!(Child::EMPTY.bits(), 0);
    }

    /// The invariant check rejects an address with the leaf bit set (as a tagged-pointer
    /// platform could hand out) ...
    #[test]
    #[should_panic(expected = "ART slot invariant")]
    fn slot_rejects_the_leaf_bit() {
        slot::check_address(slot::LEAF | 0x7f00_0000_1000);
    }

    /// ... an address with another top-byte tag that sets bit 63 ...
    #[test]
    #[should_panic(expected = "ART slot invariant")]
    fn slot_rejects_a_top_byte_tag() {
        slot::check_address(0xb400_7f00_0000_1000);
    }

    /// ... and one that would not leave the tag bits free.
    #[test]
    #[should_panic(expected = "ART slot invariant")]
    fn slot_rejects_an_unaligned_pointer() {
        slot::check_address(0x7f00_0000_1004);
    }

    /// Top-byte tags that keep bit 63 clear are fine (they are part of the pointer).
    #[test]
    fn slot_accepts_a_clear_top_bit() {
        slot::check_address(0x0b00_7f00_0000_1000);
        slot::check_address(0x7fff_ffff_ffff_fff8);
    }

    #[test]
    #[should_panic(expected = "slot of another kind")]
    fn node_mut_checks_the_kind() {
        let mut x = Child::from_arc(Arc::new(Node4::empty(Prefix::default())));
        x.node_mut::<Node16>();
    }

    /// Inserting into a clone copies the path and leaves the original alone.
    #[test]
    fn insert_into_clone() {
        struct Fixed(Vec<[u8; 4]>);
        impl KeySource for Fixed {
            fn key(&self, e: EntryRef) -> &[u8] {
                &self.0[e.pos() as usize]
            }
        }
        let keys = Fixed((0..3000u32).map(|i| (i * 3).to_be_bytes()).collect());
        let mut a = Art::new();
        for i in 0..2000 {
            a.insert(EntryRef::new(0, i), &keys, true).unwrap();
        }
        let mut b = a.clone();
        for i in 2000..3000 {
            b.insert(EntryRef::new(0, i), &keys, true).unwrap();
        }
        let (mut va, mut vb) = (Vec::new(), Vec::new());
        a.range(Bound::Unbounded, Bound::Unbounded, &keys, &mut va);
        b.range(Bound::Unbounded, Bound::Unbounded, &keys, &mut vb);
        assert_eq!(
            va,
            (0..2000).map(|i| EntryRef::new(0, i)).collect::<Vec<_>>()
        );
        assert_eq!(
            vb,
            (0..3000).map(|i| EntryRef::new(0, i)).collect::<Vec<_>>()
        );
        assert_eq!((a.len(), b.len()), (2000, 3000));
        let d = b.insert(EntryRef::new(0, 5), &keys, true).unwrap_err();
        assert_eq!(d.first, EntryRef::new(0, 5));
        // entries of segments too big for an inline leaf, alone and with duplicates
        let mut t = Art::new();
        let big = [EntryRef::new(1 << 31, 7), EntryRef::new(u32::MAX, 7)];
        t.insert(big[0], &keys, false).unwrap();
        t.insert(EntryRef::new(0, 8), &keys, false).unwrap();
        t.insert(big[1], &keys, false).unwrap();
        t.insert(EntryRef::new(0, 7), &keys, false).unwrap();
        let mut out = Vec::new();
        t.get(&keys.0[7], &keys, &mut out);
        assert_eq!(out, vec![big[0], big[1], EntryRef::new(0, 7)]);
        out.clear();
        t.range(Bound::Unbounded, Bound::Unbounded, &keys, &mut out);
        assert_eq!(out.len(), 4);
        let mut u = Art::new();
        u.insert(big[0], &keys, true).unwrap();
        let d = u.insert(EntryRef::new(0, 7), &keys, true).unwrap_err();
        assert_eq!((d.first, d.second), (big[0], EntryRef::new(0, 7)));
        let merged = Art::merge(t, u, &keys, false).unwrap();
        out.clear();
        merged.get(&keys.0[7], &keys, &mut out);
        assert_eq!(out, vec![big[0], big[1], EntryRef::new(0, 7), big[0]]);
        assert_eq!(merged.len(), 5);
    }

    /// The branch-free Node4/Node16 searches against plain loops.
    #[test]
    fn node_search_twins() {
        let mut node = Node16::empty(Prefix::default());
        for (i, b) in [3u8, 9, 17, 40, 41, 200, 255].into_iter().enumerate() {
            node.keys[i] = b;
            node.n = i as u8 + 1;
            for probe in 0..=255u8 {
                let used = &node.keys[..node.n as usize];
                assert_eq!(node.position(probe), used.iter().position(|&k| k == probe));
                assert_eq!(
                    node.rank(probe),
                    used.iter().filter(|&&k| k < probe).count()
                );
            }
        }
    }

    /// The leaf of byte `b` in the node tests below.
    fn leaf_of(b: u8) -> Child {
        Child::leaf(EntryRef::new(0, b as u32))
    }

    /// Fills a node with leaves for `bytes`, then removes them in `order`, checking after
    /// each removal the children left (in byte order, each the right leaf) and the count.
    fn check_remove_child<T: Inner>(mut node: T, bytes: &[u8], order: &[u8]) {
        for &b in bytes {
            *node.slot_for(b) = leaf_of(b);
        }
        let mut left: Vec<u8> = bytes.to_vec();
        left.sort_unstable();
        for &b in order {
            let c = node.remove_child(b);
            assert_eq!(c.first_entry(), EntryRef::new(0, b as u32));
            left.retain(|&x| x != b);
            assert!(node.find(b).is_none() && node.find_mut(b).is_none());
            assert_eq!(node.count(), left.len());
            let mut seen = Vec::new();
            node.each(|x, c| {
                assert_eq!(c.first_entry(), EntryRef::new(0, x as u32));
                seen.push(x);
            });
            assert_eq!(seen, left);
            let mut seen_mut = Vec::new();
            node.each_mut(|x, c| {
                assert_eq!(c.first_entry(), EntryRef::new(0, x as u32));
                seen_mut.push(x);
            });
            seen_mut.sort_unstable();
            assert_eq!(seen_mut, left);
            for &x in &left {
                assert_eq!(
                    node.find(x).unwrap().first_entry(),
                    EntryRef::new(0, x as u32)
                );
            }
            // a removed byte can be added again without growing
            assert!(!node.full_without(b));
        }
    }

    /// `remove_child` of every node type keeps its layout: Node4/16 sorted, Node48 slots
    /// dense (the last slot moved into the hole), Node256 counted.
    #[test]
    fn node_remove_child() {
        let spread = |n: usize| -> Vec<u8> { (0..n).map(|i| (i * 37 % 256) as u8).collect() };
        for order in [
            |v: &[u8]| v.to_vec(),
            |v: &[u8]| v.iter().rev().copied().collect(),
            |v: &[u8]| {
                v.iter()
                    .step_by(2)
                    .chain(v.iter().skip(1).step_by(2))
                    .copied()
                    .collect()
            },
        ] {
            let (b4, b16, b48, b256) = (spread(4), spread(16), spread(48), spread(256));
            check_remove_child(Node4::empty(Prefix::default()), &b4, &order(&b4));
            check_remove_child(Node16::empty(Prefix::default()), &b16, &order(&b16));
            check_remove_child(Node48::empty(Prefix::default()), &b48, &order(&b48));
            check_remove_child(Node256::empty(Prefix::default()), &b256, &order(&b256));
        }
        // Node48: the index maps exactly the slots 0..n
        let mut n = Node48::empty(Prefix::default());
        for b in 0..48u8 {
            *n.slot_for(b * 5) = leaf_of(b * 5);
        }
        for b in [0u8, 235, 100, 5] {
            n.remove_child(b);
            let mut used: Vec<u8> = n.index.iter().copied().filter(|&i| i != 0).collect();
            used.sort_unstable();
            assert_eq!(used, (1..=n.n).collect::<Vec<_>>());
            assert!(n.children[n.n as usize..].iter().all(Child::is_empty));
        }
    }

    /// Keys for the tree tests: the key of position `i` is `self.0[i]`.
    struct Vecs(Vec<Vec<u8>>);
    impl KeySource for Vecs {
        fn key(&self, e: EntryRef) -> &[u8] {
            &self.0[e.pos() as usize]
        }
    }

    /// Every entry of `t` in key order, and each found by its key.
    fn check_tree(t: &Art, keys: &Vecs, want: &[u32]) {
        let mut out = Vec::new();
        t.range(Bound::Unbounded, Bound::Unbounded, keys, &mut out);
        let got: Vec<u32> = out.iter().map(|e| e.pos()).collect();
        assert_eq!(got, want);
        assert_eq!(t.len(), want.len());
        for &i in want {
            out.clear();
            t.get(&keys.0[i as usize], keys, &mut out);
            assert_eq!(out, vec![EntryRef::new(0, i)]);
        }
    }

    /// A Node256 root shrinks through every type as its children are removed, and ends as
    /// a leaf, then empty; a clone taken before keeps its Node256.
    #[test]
    fn remove_shrinks_and_collapses() {
        let keys = Vecs((0..=255u8).map(|b| vec![7, 7, 7, b]).collect());
        let mut t = Art::new();
        for i in 0..256 {
            t.insert(EntryRef::new(0, i), &keys, true).unwrap();
        }
        assert_eq!(t.root.kind(), Kind::N256);
        let before = t.clone();
        // a miss copies nothing
        let bits = t.root.bits();
        assert!(!t.remove(EntryRef::new(1 << 30, 3), &Vecs(vec![vec![7, 7, 7, 3]; 4])));
        assert_eq!(t.root.bits(), bits);
        let mut want: Vec<u32> = (0..256).collect();
        for i in (0..256u32).rev() {
            assert!(t.remove(EntryRef::new(0, i), &keys));
            assert!(!t.remove(EntryRef::new(0, i), &keys));
            want.pop();
            let kind = match want.len() {
                0 => Kind::Empty,
                1 => Kind::Leaf,
                2..=3 => Kind::N4,
                4..=12 => Kind::N16,
                13..=37 => Kind::N48,
                _ => Kind::N256,
            };
            assert_eq!(t.root.kind(), kind, "{} left", want.len());
            if kind != Kind::Empty && kind != Kind::Leaf {
                assert_eq!(t.root.prefix(), &[7, 7, 7]);
            }
            check_tree(&t, &keys, &want);
        }
        assert_eq!(before.root.kind(), Kind::N256);
        check_tree(&before, &keys, &(0..256).collect::<Vec<_>>());
        // the emptied tree takes entries again
        t.insert(EntryRef::new(0, 9), &keys, true).unwrap();
        check_tree(&t, &keys, &[9]);
    }

    /// A node left with one node child is replaced by it, the paths joined into a prefix
    /// longer than the inline limit; inserts then split that prefix anywhere.
    #[test]
    fn collapse_joins_long_prefixes() {
        let a = [0xAAu8; 30];
        let b = [0xBBu8; 25];
        let key = |mid: u8, tail: &[u8]| [&a[..], &[mid], &b[..], tail].concat();
        let keys = Vecs(vec![
            key(1, &[1, 0]),
            key(1, &[2, 0]),
            key(1, &[3, 0]),
            key(2, &[1, 0]),
            // keys that split the joined prefix: in the a part, at the middle byte, at the
            // first byte of the b part, inside the b part
            [&a[..10], &[0]].concat(),
            [&a[..], &[3, 0]].concat(),
            [&a[..], &[1, 0]].concat(),
            [&key(1, &[])[..40], &[0]].concat(),
        ]);
        let mut t = Art::new();
        for i in 0..4 {
            t.insert(EntryRef::new(0, i), &keys, true).unwrap();
        }
        // root: prefix a, children 1 (a node with prefix b) and 2 (a leaf)
        assert_eq!(t.root.prefix(), &a);
        let shared = t.clone();
        assert!(t.remove(EntryRef::new(0, 3), &keys));
        assert_eq!(t.root.kind(), Kind::N4);
        assert_eq!(t.root.prefix(), &key(1, &[])[..]);
        assert!(t.root.prefix().len() > Prefix::INLINE);
        check_tree(&t, &keys, &[0, 1, 2]);
        check_tree(&shared, &keys, &[0, 1, 2, 3]);
        assert_eq!(shared.root.prefix(), &a);
        for i in 4..8 {
            let mut u = t.clone();
            u.insert(EntryRef::new(0, i), &keys, true).unwrap();
            let mut want = vec![0, 1, 2, i];
            want.sort_by_key(|&j| keys.0[j as usize].clone());
            check_tree(&u, &keys, &want);
            // removing it again leaves the joined prefix as it was
            assert!(u.remove(EntryRef::new(0, i), &keys));
            assert_eq!(u.root.prefix(), &key(1, &[])[..]);
            check_tree(&u, &keys, &[0, 1, 2]);
        }
        // down to one entry: the leaf moves up to the root
        assert!(t.remove(EntryRef::new(0, 0), &keys));
        assert!(t.remove(EntryRef::new(0, 2), &keys));
        assert_eq!(t.root.kind(), Kind::Leaf);
        check_tree(&t, &keys, &[1]);
    }

    /// Multi leaves: removal keeps the insertion order, two entries become one leaf, and a
    /// lone entry of a big segment id stays a one-entry Multi.
    #[test]
    fn remove_from_multi() {
        let keys = Vecs(vec![vec![1, 2, 3, 4], vec![1, 2, 3, 5]]);
        let big = EntryRef::new(1 << 31, 0);
        let es = [
            EntryRef::new(0, 0),
            big,
            EntryRef::new(5, 0),
            EntryRef::new(6, 0),
        ];
        let mut t = Art::new();
        for e in es {
            t.insert(e, &keys, false).unwrap();
        }
        t.insert(EntryRef::new(0, 1), &keys, false).unwrap();
        let get = |t: &Art| {
            let mut out = Vec::new();
            t.get(&keys.0[0], &keys, &mut out);
            out
        };
        let shared = t.clone();
        assert!(t.remove(es[2], &keys));
        assert_eq!(get(&t), vec![es[0], big, es[3]]);
        assert!(t.remove(es[0], &keys));
        assert_eq!(get(&t), vec![big, es[3]]);
        assert!(t.remove(es[3], &keys));
        assert_eq!(get(&t), vec![big]);
        assert!(!t.remove(es[3], &keys));
        assert_eq!(get(&shared), es.to_vec());
        assert_eq!(t.len(), 2);
        assert!(t.remove(big, &keys));
        assert_eq!(t.root.kind(), Kind::Leaf);
        assert!(get(&t).is_empty());
        // and the other way: a Multi of two that are left as an inline leaf
        let mut u = shared.clone();
        for e in [es[0], big, es[2]] {
            assert!(u.remove(e, &keys));
        }
        assert_eq!(get(&u), vec![es[3]]);
        assert_eq!(get(&shared), es.to_vec());
    }

    #[test]
    fn common_len_twin() {
        let a: Vec<u8> = (0..40).collect();
        for n in 0..40 {
            for at in 0..=n {
                let mut b = a[..n].to_vec();
                if at < n {
                    b[at] ^= 0x10;
                }
                let naive = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
                assert_eq!(common_len(&a, &b), naive);
                assert_eq!(common_len(&b, &a), naive);
            }
        }
    }
}
