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
