//! The inner nodes (Node4, Node16, Node48, Node256), their compressed paths, and what a
//! slot does with the node it holds: find, grow, shrink.

use std::mem;
use std::sync::Arc;

use super::{Child, Kind, View};
use crate::EntryRef;

/// Compressed path of a node: inline up to [`Prefix::INLINE`] bytes, boxed beyond.
#[derive(Clone)]
pub(super) enum Prefix {
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
    pub(super) const INLINE: usize = 22;

    /// The prefix `p`.
    pub(super) fn new(p: &[u8]) -> Self {
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
    pub(super) fn as_slice(&self) -> &[u8] {
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
pub(super) struct NodeN<const N: usize> {
    prefix: Prefix,
    n: u8,
    keys: [u8; N],
    children: [Child; N],
}

/// Node with up to 4 children.
pub(super) type Node4 = NodeN<4>;
/// Node with up to 16 children.
pub(super) type Node16 = NodeN<16>;

/// Node with up to 48 children behind a 256-byte index.
#[derive(Clone)]
pub(super) struct Node48 {
    prefix: Prefix,
    n: u8,
    /// slot + 1 of the child for each byte; 0: none
    index: [u8; 256],
    children: [Child; 48],
}

/// Node with a slot for every byte.
#[derive(Clone)]
pub(super) struct Node256 {
    prefix: Prefix,
    n: u16,
    children: [Child; 256],
}

/// Operations every inner node type has.
pub(super) trait Inner: Clone {
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
    pub(super) fn empty(prefix: Prefix) -> Self {
        NodeN {
            prefix,
            n: 0,
            keys: [0; N],
            children: empty_children(),
        }
    }

    /// Position of byte `b` among the keys.
    #[inline(always)]
    pub(super) fn position(&self, b: u8) -> Option<usize> {
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
    pub(super) fn rank(&self, b: u8) -> usize {
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
    pub(super) fn two(prefix: Prefix, b1: u8, c1: Child, b2: u8, c2: Child) -> Self {
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
    pub(super) fn empty(prefix: Prefix) -> Self {
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
    pub(super) fn empty(prefix: Prefix) -> Self {
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
    pub(super) fn first_entry(&self) -> EntryRef {
        match self.view() {
            View::Leaf(e) => e,
            View::Multi(v) => v[0],
            _ => unreachable!("first_entry of a non-leaf"),
        }
    }

    /// Appends the entries of a leaf.
    pub(super) fn push_entries(&self, out: &mut Vec<EntryRef>) {
        match self.view() {
            View::Leaf(e) => out.push(e),
            View::Multi(v) => out.extend_from_slice(v),
            _ => {}
        }
    }

    /// The compressed path of a node (empty for a leaf).
    #[inline(always)]
    pub(super) fn prefix(&self) -> &[u8] {
        on_node!(self, n => n.prefix().as_slice(), _ => &[])
    }

    /// Replaces the compressed path of a node.
    pub(super) fn set_prefix(&mut self, p: &[u8]) {
        let p = Prefix::new(p);
        on_node_mut!(self, n => *n.prefix_mut() = p, _ => unreachable!("prefix of a leaf"))
    }

    /// Number of children of a node.
    pub(super) fn count(&self) -> usize {
        on_node!(self, n => n.count(), _ => 0)
    }

    /// The child of a node for byte `b`.
    #[inline(always)]
    pub(super) fn find(&self, b: u8) -> Option<&Child> {
        on_node!(self, n => n.find(b), _ => None)
    }

    /// The slot of a node for byte `b` (added empty when absent, the node grown when
    /// full); the caller fills an empty one.
    #[inline(always)]
    pub(super) fn slot_for(&mut self, b: u8) -> &mut Child {
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
    pub(super) fn reserve(&mut self, need: usize) {
        if need <= self.capacity() {
            return;
        }
        self.resize(need);
    }

    /// Shrinks a node that removals left with few children to the next smaller type (at
    /// a count below that type's capacity: no resize at every step of alternating inserts
    /// and removals).
    pub(super) fn shrink(&mut self) {
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
    pub(super) fn grow(&mut self) {
        let grown = match self.kind() {
            Kind::N4 => Child::from_arc(Arc::new(Node16::grown_from(self.node_mut::<Node4>()))),
            Kind::N16 => Child::from_arc(Arc::new(Node48::grown_from(self.node_mut()))),
            Kind::N48 => Child::from_arc(Arc::new(Node256::grown_from(self.node_mut()))),
            _ => unreachable!("growing a leaf or a Node256"),
        };
        *self = grown;
    }

    /// Bytes of the subtree's allocations.
    pub(super) fn heap_bytes(&self) -> usize {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
