//! Helpers the index tests share: key encodings as the key encoder writes them, segments
//! of keys, and the `BTreeMap` reference with the prefix-aware bounds of `Index::range`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ops::Bound;

use wireload_index::{EntryRef, Keys};

/// i32 encoding of a 32-bit value: big-endian, sign bit flipped.
pub fn enc_u32(v: u32) -> Vec<u8> {
    (v ^ 0x8000_0000).to_be_bytes().to_vec()
}

/// Prefix-free string encoding: 0x00 as 0x00 0xFF, terminated by 0x00 0x00.
pub fn enc_str(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    for &b in s {
        out.push(b);
        if b == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0, 0]);
    out
}

/// Keys of one segment, fixed-width when they all have one length.
pub fn keys_of(keys: &[Vec<u8>]) -> Keys {
    let width = keys.first().map_or(0, Vec::len);
    if width > 0 && keys.iter().all(|k| k.len() == width) {
        Keys::fixed(width, keys.concat())
    } else {
        let mut offsets = vec![0u32];
        let mut bytes = Vec::new();
        for k in keys {
            bytes.extend_from_slice(k);
            offsets.push(bytes.len() as u32);
        }
        Keys::from_parts(bytes, offsets)
    }
}

/// Key → entries, in the order ART keeps equal keys (insertion order; the left index of a
/// merge first).
pub type Model = BTreeMap<Vec<u8>, Vec<EntryRef>>;

/// True when `k` is within the lower bound `lo` (prefix-aware, as `Index::range`).
pub fn lower_ok(k: &[u8], lo: Bound<&[u8]>) -> bool {
    match lo {
        Bound::Unbounded => true,
        Bound::Included(p) => k >= p,
        Bound::Excluded(p) => k > p && !k.starts_with(p),
    }
}

/// True when `k` is within the upper bound `hi` (prefix-aware, as `Index::range`).
pub fn upper_ok(k: &[u8], hi: Bound<&[u8]>) -> bool {
    match hi {
        Bound::Unbounded => true,
        Bound::Included(p) => k <= p || k.starts_with(p),
        Bound::Excluded(p) => k < p,
    }
}

/// The entries of `m` between `lo` and `hi`, in key order.
pub fn model_range(m: &Model, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Vec<EntryRef> {
    m.iter()
        .filter(|(k, _)| lower_ok(k, lo) && upper_ok(k, hi))
        .flat_map(|(_, v)| v.iter().copied())
        .collect()
}
