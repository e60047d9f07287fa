//! Merge of two trees (the paper's algorithm), common children in parallel near the root.

use std::mem;
use std::sync::Arc;

use rayon::prelude::*;

use super::insert::{common_len, insert_leaf};
use super::{Child, Inner, Kind, Node4, Node16, Node48, Node256, PARALLEL_LEVELS, Prefix, View};
use crate::{Duplicate, KeySource};

/// The subtree holding the entries of subtrees `a` and `b`, both starting after `depth`
/// key bytes, `level` nodes below the root.
pub(super) fn merge_children<K: KeySource>(
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
