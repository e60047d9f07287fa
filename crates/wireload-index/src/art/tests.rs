//! Tests of the slot and of whole trees: insertion into clones, removal, collapse.

use std::sync::Arc;

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
