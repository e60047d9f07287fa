//! Insertion: a leaf placed as high as its key is unique, splitting compressed paths.

use std::mem;
use std::sync::Arc;

use super::{Child, Inner, Kind, Node4, Node16, Node48, Node256, Prefix, View};
use crate::{Duplicate, EntryRef, KeySource};

/// Length of the common prefix of `a` and `b`.
#[inline(always)]
pub(super) fn common_len(a: &[u8], b: &[u8]) -> usize {
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
pub(super) fn key_byte(key: &[u8], i: usize) -> u8 {
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
pub(super) fn insert_leaf(
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

#[cfg(test)]
mod tests {
    use super::*;

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
