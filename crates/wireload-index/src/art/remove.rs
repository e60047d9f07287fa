//! Removal: an entry taken out of its leaf, nodes collapsed and shrunk on the way back.

use super::insert::key_byte;
use super::{Child, Inner, Kind, Node4, Node16, Node48, Node256, View};
use crate::EntryRef;

/// Removes `e` from the subtree in `slot`, which starts after `depth` key bytes and holds
/// `e` on the path of `key` (the caller checked): copies shared nodes on that path only.
pub(super) fn remove_entry(slot: &mut Child, e: EntryRef, key: &[u8], depth: usize) {
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
