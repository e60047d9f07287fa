//! Range scans: the entries between two prefix-aware bounds, in key order.

use std::ops::Bound;

use super::{Child, Inner, Kind, View};
use crate::{EntryRef, KeySource};

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
pub(super) struct Scan<'a, K> {
    pub(super) keys: &'a K,
    pub(super) out: &'a mut Vec<EntryRef>,
}

impl<K: KeySource> Scan<'_, K> {
    /// Appends the entries of subtree `c`, reached through the key bytes `path`, that lie
    /// between `lo` and `hi` (`Unbounded`: a bound every key below meets).
    pub(super) fn walk(
        &mut self,
        c: &Child,
        path: &mut Vec<u8>,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) {
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
