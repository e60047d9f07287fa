//! The dictionary build of the write path: the sort step and the k-way merge of
//! order-preserving dictionaries (the server side of "Shared Loading", CIDR 2019, section
//! 4.1), on the value kinds of `wireload_storage::dictionary`.
//!
//! A load goes through three steps:
//!
//! 1. *Sort step* ([`encode_fragment`]): a fragment's values are deduplicated with a hash
//!    table (or a direct table when their keys span a small range), the distinct values
//!    are sorted (an LSD radix sort of order-preserving integer keys packed with their ids,
//!    else pdqsort; byte-wise for strings) and every row gets the rank of its value as
//!    code.
//! 2. *Merge* ([`merge_column`]): the partition's dictionary and the fragments' dictionaries
//!    (built here or by a client, then validated) are merged k-way into the new dictionary,
//!    with a map from the old codes of each input to the new codes.
//! 3. *Re-encode*: the partition's chunks are re-encoded when the dictionary gained entries
//!    or the code width changed, and every fragment is encoded through its map.
//!
//! A Shared Loading server checks the codes of a client's encoded columns with
//! [`mark_used`] before they come here.

mod codes;

pub use codes::{Code, OutOfRange, mark_used};

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, DictionaryArray, PrimitiveArray, StringArray,
    StringBuilder,
};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{
    ArrowDictionaryKeyType, ArrowNativeType, ArrowPrimitiveType, DataType, UInt8Type, UInt16Type,
    UInt32Type,
};
use wireload_storage::dictionary::{
    Bool, DictionaryError, FIB, Key, Kind, OrderKey, Prim, Utf8, code_type, first_unordered,
    is_valid_dictionary, items,
};

/// One fragment column handed to the merge.
#[derive(Debug, Clone)]
pub enum FragmentColumn {
    /// Plain values (nulls allowed).
    Plain(ArrayRef),
    /// A dictionary built elsewhere (a client) and codes into it (UInt8/16/32, nulls
    /// allowed): validated before use.
    Encoded {
        /// The fragment's dictionary: must be a valid dictionary of the column's type.
        dictionary: ArrayRef,
        /// One code per row into `dictionary`; a null code is a NULL value.
        codes: ArrayRef,
    },
    /// A dictionary array (UInt8/16/32 codes) whose dictionary is validated before use; its
    /// codes are in range by the invariant of Arrow's `DictionaryArray`, not checked again.
    Coded(ArrayRef),
}

impl FragmentColumn {
    /// The type of the fragment's values.
    pub fn value_type(&self) -> &DataType {
        match self {
            FragmentColumn::Plain(values) => values.data_type(),
            FragmentColumn::Encoded { dictionary, .. } => dictionary.data_type(),
            FragmentColumn::Coded(array) => match array.as_any_dictionary_opt() {
                Some(coded) => coded.values().data_type(),
                None => array.data_type(),
            },
        }
    }

    /// Number of rows of the fragment.
    pub fn len(&self) -> usize {
        match self {
            FragmentColumn::Plain(values) => values.len(),
            FragmentColumn::Encoded { codes, .. } => codes.len(),
            FragmentColumn::Coded(array) => array.len(),
        }
    }

    /// True when the fragment has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What the merge of one partition column produced.
#[derive(Debug, Clone)]
pub struct MergedColumn {
    /// The partition's new dictionary (the same `Arc` as the old one when nothing was added).
    pub dictionary: ArrayRef,
    /// The existing chunks' columns re-encoded against `dictionary`, in order; None when
    /// they stay valid as they are (no new entry and same code width).
    pub existing: Option<Vec<ArrayRef>>,
    /// Each incoming fragment as a DictionaryArray over `dictionary`, in input order, same
    /// length and null positions as the input.
    pub incoming: Vec<ArrayRef>,
}

type Result<T, E = DictionaryError> = std::result::Result<T, E>;

use wireload_storage::dispatch_kind as dispatch;

/// Builds the sorted dictionary of `values` and the codes into it (the per-fragment "sort
/// step"): returns (dictionary, codes of the narrowest width, nulls where `values` has them).
pub fn encode_fragment(values: &ArrayRef) -> Result<(ArrayRef, ArrayRef)> {
    check_rows(values.len())?;
    let data_type = values.data_type();
    dispatch!(
        data_type,
        K => {
            let Sorted { dict, ids, rank } = K::encode(values.as_ref());
            let dictionary = K::build(&dict, data_type)?;
            let nulls = values.nulls().cloned();
            let codes = codes(&Rows::Ids(ids), rank.as_deref(), nulls, dictionary.len());
            Ok((dictionary, codes))
        },
        Err(DictionaryError::Unsupported(data_type.clone()))
    )
}

/// Merges one partition column: `dictionary` is the partition's current dictionary (None:
/// none yet), `existing` the DictionaryArray columns of its chunks (all over that
/// dictionary), `incoming` the new fragments of this partition in order. Nothing is
/// produced when any input is invalid.
pub fn merge_column(
    dictionary: Option<&ArrayRef>,
    existing: &[ArrayRef],
    incoming: Vec<FragmentColumn>,
) -> Result<MergedColumn> {
    if let Some(adopted) = adopt(dictionary, existing, &incoming) {
        return Ok(adopted);
    }
    // `coded[i]`: fragment i's codes are in range (a dictionary array's), not checked again
    let mut coded = vec![false; incoming.len()];
    let incoming = incoming
        .into_iter()
        .enumerate()
        .zip(&mut coded)
        .map(|((index, fragment), coded)| match fragment {
            FragmentColumn::Coded(array) => {
                let Some(d) = array.as_any_dictionary_opt() else {
                    return Err(DictionaryError::InvalidFragment {
                        fragment: index,
                        reason: format!(
                            "a {} column, expected a dictionary array",
                            array.data_type()
                        ),
                    });
                };
                *coded = true;
                Ok(FragmentColumn::Encoded {
                    dictionary: Arc::clone(d.values()),
                    codes: arrow::array::make_array(d.keys().to_data()),
                })
            }
            other => Ok(other),
        })
        .collect::<Result<Vec<_>>>()?;
    let data_type = match (dictionary, incoming.first()) {
        (Some(dictionary), _) => dictionary.data_type().clone(),
        (None, Some(fragment)) => fragment.value_type().clone(),
        (None, None) => {
            return Err(DictionaryError::InvalidArgument(
                "nothing to merge: no dictionary and no fragment".into(),
            ));
        }
    };
    if dictionary.is_none() && !existing.is_empty() {
        return Err(DictionaryError::InvalidArgument(format!(
            "{} existing chunks but no dictionary",
            existing.len()
        )));
    }
    // Plain strings get a sorted dictionary of their own first (the sort step, as a client
    // does it): the merge then reads each fragment's distinct strings one after another,
    // where sorted references into the fragment's rows would jump about its values.
    // `built[i]`: fragment i's dictionary and codes were made here (not checked again)
    let mut built = vec![false; incoming.len()];
    let incoming = if data_type == DataType::Utf8 {
        incoming
            .into_iter()
            .zip(&mut built)
            .map(|(fragment, built)| match fragment {
                FragmentColumn::Plain(values) if values.data_type() == &data_type => {
                    let (dictionary, codes) = encode_fragment(&values)?;
                    *built = true;
                    Ok(FragmentColumn::Encoded { dictionary, codes })
                }
                other => Ok(other),
            })
            .collect::<Result<Vec<_>>>()?
    } else {
        incoming
    };
    dispatch!(
        &data_type,
        K => merge_typed::<K>(&data_type, dictionary, existing, &incoming, &built, &coded),
        Err(DictionaryError::Unsupported(data_type.clone()))
    )
}

/// The merge when it has nothing to do: every fragment is a dictionary array over one
/// dictionary (the same `Arc`: a client's partition dictionary), with the code width that
/// dictionary's size gives, and that dictionary starts the column (no dictionary and no
/// existing chunks; it is checked to be sorted and unique here) or is the partition's own.
/// The fragments are then taken as they are: the Shared Loading server's merge of a pushed
/// partition into storage of its own, which neither merges dictionaries nor re-encodes
/// codes. None when the merge has work to do (or an input is invalid: the full merge
/// names the problem).
fn adopt(
    dictionary: Option<&ArrayRef>,
    existing: &[ArrayRef],
    incoming: &[FragmentColumn],
) -> Option<MergedColumn> {
    let mut shared: Option<&ArrayRef> = None;
    let mut arrays = Vec::with_capacity(incoming.len());
    for fragment in incoming {
        let FragmentColumn::Coded(array) = fragment else {
            return None;
        };
        let values = array.as_any_dictionary_opt()?.values();
        match shared {
            None => shared = Some(values),
            Some(first) if same_dictionary(first, values) => {}
            Some(_) => return None,
        }
        arrays.push(Arc::clone(array));
    }
    let values = shared?;
    let own = match dictionary {
        Some(open) => same_dictionary(open, values),
        None => existing.is_empty() && is_valid_dictionary(values),
    };
    let width = code_type(values.len());
    if !own || arrays.iter().any(|a| key_type(a) != Some(&width)) {
        return None;
    }
    Some(MergedColumn {
        dictionary: Arc::clone(values),
        // as the full merge says it: no existing chunk re-encoded, or none to re-encode
        existing: dictionary.is_none().then(Vec::new),
        incoming: arrays,
    })
}

/// True when `a` and `b` are one dictionary: the same array, or arrays over the same
/// buffers (a dictionary array rebuilt from its data holds its dictionary in a new `Arc`).
fn same_dictionary(a: &ArrayRef, b: &ArrayRef) -> bool {
    Arc::ptr_eq(a, b) || a.to_data().ptr_eq(&b.to_data())
}

/// How a value kind is built and sorted: an array from items, and the sort step of one
/// fragment.
trait Build: Kind {
    /// An array of `data_type` (without nulls) holding `items` in order.
    fn build(items: &[Self::Item<'_>], data_type: &DataType) -> Result<ArrayRef>;
    /// The sort step of one fragment: distinct values sorted, and a code source per row.
    fn encode(values: &dyn Array) -> Sorted<Self::Item<'_>>;
}

/// A fragment after the sort step: its distinct non-null values in ascending order, and per
/// row an id that `rank` maps to a position in `dict` (`rank` None: the id is the
/// position). The id of a null row is meaningless.
struct Sorted<I> {
    dict: Vec<I>,
    ids: Vec<u32>,
    rank: Option<Vec<u32>>,
}

impl<T: OrderKey> Build for Prim<T> {
    fn build(items: &[T::K], data_type: &DataType) -> Result<ArrayRef> {
        let values: Vec<T::Native> = items.iter().map(|&key| T::from_key(key)).collect();
        // with_data_type keeps a decimal's precision and scale and a timestamp's zone.
        let array = PrimitiveArray::<T>::new(values.into(), None).with_data_type(data_type.clone());
        Ok(Arc::new(array))
    }

    fn encode(values: &dyn Array) -> Sorted<T::K> {
        encode_keys::<T>(values.as_primitive::<T>())
    }
}

impl Build for Utf8 {
    fn build(items: &[&str], _: &DataType) -> Result<ArrayRef> {
        let bytes: usize = items.iter().map(|s| s.len()).sum();
        if bytes > i32::MAX as usize {
            return Err(DictionaryError::TooLarge(format!(
                "{bytes} bytes of distinct strings exceed Utf8's 32-bit offsets"
            )));
        }
        let mut builder = StringBuilder::with_capacity(items.len(), bytes);
        for item in items {
            builder.append_value(item);
        }
        Ok(Arc::new(builder.finish()))
    }

    fn encode(values: &dyn Array) -> Sorted<&str> {
        encode_strings(values.as_string::<i32>())
    }
}

impl Build for Bool {
    fn build(items: &[bool], _: &DataType) -> Result<ArrayRef> {
        Ok(Arc::new(BooleanArray::from(items.to_vec())))
    }

    fn encode(values: &dyn Array) -> Sorted<bool> {
        let array = values.as_boolean();
        let valid = array.len() - array.null_count();
        let trues = match array.nulls() {
            Some(nulls) => (array.values() & nulls.inner()).count_set_bits(),
            None => array.values().count_set_bits(),
        };
        let has_false = trues < valid;
        let dict: Vec<bool> = [has_false.then_some(false), (trues > 0).then_some(true)]
            .into_iter()
            .flatten()
            .collect();
        // With both values the code is the bit; with one, every code is 0.
        let ids = if dict.len() == 2 {
            array.values().iter().map(u32::from).collect()
        } else {
            vec![0; array.len()]
        };
        Sorted {
            dict,
            ids,
            rank: None,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Sort step: deduplication and sorting of one fragment
// ---------------------------------------------------------------------------------------

/// Calls `f` with every row that is not null.
#[inline]
fn for_each_valid(nulls: Option<&NullBuffer>, len: usize, f: impl FnMut(usize)) {
    match nulls {
        Some(nulls) if nulls.null_count() > 0 => nulls.valid_indices().for_each(f),
        _ => (0..len).for_each(f),
    }
}

/// The most entries the direct table of a fragment of `rows` rows may have: a table about
/// the size of the fragment, and no more than 1 MiB of u32s (larger tables miss the caches
/// on every row, and a hash table of the distinct values is then smaller).
fn dense_limit(rows: usize) -> u64 {
    (rows as u64).clamp(1 << 10, 1 << 18)
}

/// The sort step of a fixed-width fragment.
fn encode_keys<T: OrderKey>(array: &PrimitiveArray<T>) -> Sorted<T::K> {
    let values: &[T::Native] = array.values();
    let nulls = array.nulls().filter(|nulls| nulls.null_count() > 0);
    let Some(&first) = values.first() else {
        return Sorted {
            dict: Vec::new(),
            ids: Vec::new(),
            rank: None,
        };
    };
    // The range of all slots, nulls' included (whatever they hold): a branch-free pass, and
    // every slot then has an entry in a direct table.
    let first = T::to_key(first);
    let (min, max) = values.iter().fold((first, first), |(min, max), &value| {
        let key = T::to_key(value);
        (min.min(key), max.max(key))
    });
    match T::K::span(min, max) {
        Some(span) if span < dense_limit(values.len()) => {
            encode_dense::<T>(values, nulls, min, span)
        }
        _ => encode_hashed::<T>(values, nulls),
    }
}

/// Keys spanning a small range: a direct table indexed by `key - min` marks the values
/// present, a scan of it in order numbers them (no hashing, no sorting).
fn encode_dense<T: OrderKey>(
    values: &[T::Native],
    nulls: Option<&NullBuffer>,
    min: T::K,
    span: u64,
) -> Sorted<T::K> {
    let slot = |value: T::Native| T::to_key(value).offset_from(min) as usize;
    let mut table = vec![0u32; span as usize + 1];
    for_each_valid(nulls, values.len(), |row| table[slot(values[row])] = 1);
    let mut dict = Vec::new();
    for (offset, entry) in table.iter_mut().enumerate() {
        if *entry != 0 {
            *entry = dict.len() as u32;
            dict.push(min.plus(offset as u64));
        }
    }
    // A null row reads the entry of some value or a 0: a meaningless code under a null.
    let ids = values.iter().map(|&value| table[slot(value)]).collect();
    Sorted {
        dict,
        ids,
        rank: None,
    }
}

/// Keys spanning a large range: a hash table gives each distinct key an id in order of
/// first appearance; the distinct keys are then sorted and ranked.
fn encode_hashed<T: OrderKey>(values: &[T::Native], nulls: Option<&NullBuffer>) -> Sorted<T::K> {
    let mut table = KeyTable::<T::K>::for_rows(values.len());
    let ids = assign_ids(&mut table, values.len(), nulls, |table, row| {
        table.insert(T::to_key(values[row]))
    });
    let (dict, rank) = sort_distinct(table.keys);
    Sorted {
        dict,
        ids,
        rank: Some(rank),
    }
}

/// The sort step of a Utf8 fragment: a hash table over the bytes gives ids, the distinct
/// strings are sorted byte-wise.
fn encode_strings(array: &StringArray) -> Sorted<&str> {
    let mut table = StrTable::for_rows(array.len());
    let nulls = array.nulls().filter(|nulls| nulls.null_count() > 0);
    let ids = assign_ids(&mut table, array.len(), nulls, |table, row| {
        table.insert(array.value(row))
    });
    let mut order: Vec<(&str, u32)> = table.strings.into_iter().zip(0..).collect();
    order.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut rank = vec![0; order.len()];
    let dict = order
        .iter()
        .enumerate()
        .map(|(position, &(string, id))| {
            rank[id as usize] = position as u32;
            string
        })
        .collect();
    Sorted {
        dict,
        ids,
        rank: Some(rank),
    }
}

/// The hash tables of the sort step, as [`assign_ids`] sees them.
trait IdTable {
    /// Number of distinct values so far.
    fn distinct(&self) -> usize;
    /// Makes room for `distinct` values in all.
    fn reserve(&mut self, distinct: usize);
}

/// Rows hashed before a table checks whether the column looks unique.
const SAMPLE_ROWS: usize = 4096;

/// Per row, the id that `insert` gives its value (0 for a null row). When the first rows
/// were mostly distinct, the table makes room for all rows at once: growing step by step
/// would move every entry about twice more, in cache misses once the table is large.
fn assign_ids<T: IdTable>(
    table: &mut T,
    len: usize,
    nulls: Option<&NullBuffer>,
    mut insert: impl FnMut(&mut T, usize) -> u32,
) -> Vec<u32> {
    let mut ids = vec![0u32; len];
    let mut fill = |table: &mut T, start: usize, end: usize| match nulls {
        None => {
            for (id, row) in ids[start..end].iter_mut().zip(start..) {
                *id = insert(table, row);
            }
        }
        Some(nulls) => {
            for row in nulls.slice(start, end - start).valid_indices() {
                ids[start + row] = insert(table, start + row);
            }
        }
    };
    let sample = len.min(SAMPLE_ROWS);
    fill(table, 0, sample);
    let null_count = |end: usize| nulls.map_or(0, |nulls| nulls.slice(0, end).null_count());
    if sample < len && table.distinct() * 2 > sample - null_count(sample) {
        table.reserve(len - null_count(len));
    }
    fill(table, sample, len);
    ids
}

/// The id of an empty slot of the hash tables.
const EMPTY: u32 = u32::MAX;

/// log2 of the first size of a hash table for `rows` rows: twice the rows, at most 4096
/// slots (it grows when needed), at least 16.
fn table_bits(rows: usize) -> u32 {
    (rows.clamp(8, 2048) * 2)
        .next_power_of_two()
        .trailing_zeros()
}

/// log2 of the size of a hash table that holds `distinct` values (load at most 1/2).
fn bits_for(distinct: usize) -> u32 {
    (distinct.max(8) * 2).next_power_of_two().trailing_zeros()
}

/// Open addressing (linear probing, load at most 1/2, indexed by the high bits of the
/// hash) from keys to ids numbered in order of insertion; the key is stored in the slot, so
/// a probe touches one cache line.
struct KeyTable<K> {
    slots: Vec<(K, u32)>,
    shift: u32,
    /// The distinct keys by id.
    keys: Vec<K>,
}

impl<K: Key> KeyTable<K> {
    fn for_rows(rows: usize) -> Self {
        let bits = table_bits(rows);
        KeyTable {
            slots: vec![(K::default(), EMPTY); 1 << bits],
            shift: 64 - bits,
            keys: Vec::new(),
        }
    }

    /// The id of `key`, inserted if new.
    #[inline]
    fn insert(&mut self, key: K) -> u32 {
        let mask = self.slots.len() - 1;
        let mut slot = (key.hash() >> self.shift) as usize;
        loop {
            let (stored, id) = self.slots[slot];
            if id == EMPTY {
                return self.add(slot, key);
            }
            if stored == key {
                return id;
            }
            slot = (slot + 1) & mask;
        }
    }

    fn add(&mut self, slot: usize, key: K) -> u32 {
        let id = self.keys.len() as u32;
        self.keys.push(key);
        self.slots[slot] = (key, id);
        if self.keys.len() * 2 > self.slots.len() {
            self.resize(bits_for(self.keys.len()));
        }
        id
    }

    fn resize(&mut self, bits: u32) {
        self.slots = vec![(K::default(), EMPTY); 1 << bits];
        self.shift = 64 - bits;
        let mask = self.slots.len() - 1;
        for (&key, id) in self.keys.iter().zip(0..) {
            let mut slot = (key.hash() >> self.shift) as usize;
            while self.slots[slot].1 != EMPTY {
                slot = (slot + 1) & mask;
            }
            self.slots[slot] = (key, id);
        }
    }
}

impl<K: Key> IdTable for KeyTable<K> {
    fn distinct(&self) -> usize {
        self.keys.len()
    }

    fn reserve(&mut self, distinct: usize) {
        let bits = bits_for(distinct);
        if 1 << bits > self.slots.len() {
            self.keys.reserve(distinct - self.keys.len());
            self.resize(bits);
        }
    }
}

/// [`KeyTable`] for strings: a slot holds 32 bits of the hash and the id, and the strings
/// (borrowed from the array) and their hashes are kept by id.
struct StrTable<'a> {
    slots: Vec<(u32, u32)>,
    shift: u32,
    strings: Vec<&'a str>,
    hashes: Vec<u64>,
}

impl<'a> StrTable<'a> {
    fn for_rows(rows: usize) -> Self {
        let bits = table_bits(rows);
        StrTable {
            slots: vec![(0, EMPTY); 1 << bits],
            shift: 64 - bits,
            strings: Vec::new(),
            hashes: Vec::new(),
        }
    }

    #[inline]
    fn insert(&mut self, string: &'a str) -> u32 {
        let hash = hash_bytes(string.as_bytes());
        // The slot comes from the high bits, the tag from the low ones: a tag match is
        // almost always a string match.
        let tag = hash as u32;
        let mask = self.slots.len() - 1;
        let mut slot = (hash >> self.shift) as usize;
        loop {
            let (stored, id) = self.slots[slot];
            if id == EMPTY {
                return self.add(slot, string, hash);
            }
            if stored == tag && self.strings[id as usize] == string {
                return id;
            }
            slot = (slot + 1) & mask;
        }
    }

    fn add(&mut self, slot: usize, string: &'a str, hash: u64) -> u32 {
        let id = self.strings.len() as u32;
        self.strings.push(string);
        self.hashes.push(hash);
        self.slots[slot] = (hash as u32, id);
        if self.strings.len() * 2 > self.slots.len() {
            self.resize(bits_for(self.strings.len()));
        }
        id
    }

    fn resize(&mut self, bits: u32) {
        self.slots = vec![(0, EMPTY); 1 << bits];
        self.shift = 64 - bits;
        let mask = self.slots.len() - 1;
        for (&hash, id) in self.hashes.iter().zip(0..) {
            let mut slot = (hash >> self.shift) as usize;
            while self.slots[slot].1 != EMPTY {
                slot = (slot + 1) & mask;
            }
            self.slots[slot] = (hash as u32, id);
        }
    }
}

impl IdTable for StrTable<'_> {
    fn distinct(&self) -> usize {
        self.strings.len()
    }

    fn reserve(&mut self, distinct: usize) {
        let bits = bits_for(distinct);
        if 1 << bits > self.slots.len() {
            self.strings.reserve(distinct - self.strings.len());
            self.hashes.reserve(distinct - self.hashes.len());
            self.resize(bits);
        }
    }
}

/// A fast hash of bytes (not DoS-resistant: a load hashes its own data, and a bad case
/// only costs time). The length seeds it, 8-byte words are multiplied in (the last word
/// read overlapping the one before it rather than copied into a buffer), and the
/// finalizer of MurmurHash3 mixes all bits into both the high bits (the slot) and the low
/// ones (the tag).
fn hash_bytes(bytes: &[u8]) -> u64 {
    #[inline]
    fn word(bytes: &[u8], at: usize) -> u64 {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(word)
    }
    #[inline]
    fn half(bytes: &[u8], at: usize) -> u64 {
        let mut half = [0u8; 4];
        half.copy_from_slice(&bytes[at..at + 4]);
        u64::from(u32::from_le_bytes(half))
    }
    let mix = |hash: u64, word: u64| (hash.rotate_left(23) ^ word).wrapping_mul(FIB);
    let len = bytes.len();
    let mut hash = (len as u64).wrapping_mul(FIB);
    if len >= 8 {
        let mut at = 0;
        while at + 8 < len {
            hash = mix(hash, word(bytes, at));
            at += 8;
        }
        hash = mix(hash, word(bytes, len - 8));
    } else if len >= 4 {
        hash = mix(hash, half(bytes, 0) << 32 | half(bytes, len - 4));
    } else if len > 0 {
        let bytes3 =
            u64::from(bytes[0]) << 16 | u64::from(bytes[len / 2]) << 8 | u64::from(bytes[len - 1]);
        hash = mix(hash, bytes3);
    }
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    hash ^ (hash >> 33)
}

/// Below this many keys, pdqsort beats the radix sort (whose histograms cost the same
/// whatever the number of keys).
const RADIX_MIN_LEN: usize = 2048;

/// Sorts the distinct keys of a fragment, given by id: returns them in ascending order, and
/// by id the position of each.
///
/// With enough keys, and when a key's offset from the smallest and its id fit in 64 bits
/// together (integers, dates, timestamps, decimals of a limited range), the packed
/// `offset << id_bits | id` are radix-sorted: sorting them sorts the keys and carries the
/// ids along, without moving (key, id) pairs or looking every key up again. Otherwise
/// (few keys, or keys over the whole 64 bits, such as floats), pdqsort of (key, id) pairs.
fn sort_distinct<K: Key>(keys: Vec<K>) -> (Vec<K>, Vec<u32>) {
    let len = keys.len();
    let mut rank = vec![0u32; len];
    if len >= RADIX_MIN_LEN {
        let (min, max) = keys.iter().fold((keys[0], keys[0]), |(min, max), &key| {
            (min.min(key), max.max(key))
        });
        let id_bits = usize::BITS - (len - 1).leading_zeros();
        if let Some(span) = K::span(min, max)
            && u64::BITS - span.leading_zeros() + id_bits <= u64::BITS
        {
            let mut packed: Vec<u64> = keys
                .iter()
                .zip(0u64..)
                .map(|(key, id)| key.offset_from(min) << id_bits | id)
                .collect();
            radix_sort(&mut packed);
            let id_mask = (1u64 << id_bits) - 1;
            let sorted = packed
                .iter()
                .enumerate()
                .map(|(position, &packed)| {
                    rank[(packed & id_mask) as usize] = position as u32;
                    min.plus(packed >> id_bits)
                })
                .collect();
            return (sorted, rank);
        }
    }
    let mut pairs: Vec<(K, u32)> = keys.into_iter().zip(0..).collect();
    pairs.sort_unstable_by_key(|&(key, _)| key);
    let sorted = pairs
        .iter()
        .enumerate()
        .map(|(position, &(key, id))| {
            rank[id as usize] = position as u32;
            key
        })
        .collect();
    (sorted, rank)
}

/// Bits of a radix sort digit: 2048 counters of u32 (8 KiB) a pass stay in the L1 cache,
/// and 64-bit keys take 6 passes instead of 8 bytes.
const RADIX_BITS: u32 = 11;

/// LSD radix sort of u64s, 11 bits a pass: only the passes over the bits some key has set,
/// the histograms of all passes counted in one read, and a pass whose digit all keys share
/// skipped.
fn radix_sort(keys: &mut Vec<u64>) {
    const DIGITS: usize = 1 << RADIX_BITS;
    const MASK: u64 = DIGITS as u64 - 1;
    let len = keys.len();
    if u32::try_from(len).is_err() {
        keys.sort_unstable();
        return;
    }
    let significant = u64::BITS - keys.iter().fold(0, |bits, &key| bits | key).leading_zeros();
    let passes = significant.div_ceil(RADIX_BITS) as usize;
    let mut counts = vec![[0u32; DIGITS]; passes];
    for &key in keys.iter() {
        for (pass, count) in counts.iter_mut().enumerate() {
            count[((key >> (RADIX_BITS as usize * pass)) & MASK) as usize] += 1;
        }
    }
    let mut scratch = vec![0u64; len];
    for (pass, count) in counts.iter().enumerate() {
        if count.contains(&(len as u32)) {
            continue;
        }
        let shift = RADIX_BITS as usize * pass;
        let mut next = [0u32; DIGITS];
        let mut sum = 0;
        for (digit, &n) in count.iter().enumerate() {
            next[digit] = sum;
            sum += n;
        }
        for &key in keys.iter() {
            let digit = ((key >> shift) & MASK) as usize;
            scratch[next[digit] as usize] = key;
            next[digit] += 1;
        }
        std::mem::swap(keys, &mut scratch);
    }
}

// ---------------------------------------------------------------------------------------
// Merge
// ---------------------------------------------------------------------------------------

/// The most entries a dictionary may have: codes are u32.
const MAX_ENTRIES: usize = 1 << 32;

fn check_rows(rows: usize) -> Result<()> {
    if rows > u32::MAX as usize {
        return Err(DictionaryError::TooLarge(format!(
            "a fragment of {rows} rows"
        )));
    }
    Ok(())
}

/// Merges strictly ascending inputs into their sorted union, with for each input the map
/// from its positions to positions in the union. Two inputs (the partition's dictionary
/// and one fragment, the common case) are merged directly, more with a tree of losers:
/// O(entries * log inputs).
fn merge_sorted<T: Ord + Copy>(inputs: &[&[T]]) -> Result<(Vec<T>, Vec<Vec<u32>>)> {
    let total: usize = inputs.iter().map(|input| input.len()).sum();
    if total > MAX_ENTRIES {
        return Err(DictionaryError::TooLarge(format!(
            "{total} dictionary entries to merge (at most {MAX_ENTRIES})"
        )));
    }
    match inputs {
        [] => Ok((Vec::new(), Vec::new())),
        [single] => Ok((single.to_vec(), vec![(0..single.len() as u32).collect()])),
        [a, b] => Ok(merge_two(a, b)),
        _ => Ok(merge_many(inputs)),
    }
}

fn merge_two<T: Ord + Copy>(a: &[T], b: &[T]) -> (Vec<T>, Vec<Vec<u32>>) {
    let mut merged = Vec::with_capacity(a.len().max(b.len()));
    let (mut map_a, mut map_b) = (Vec::with_capacity(a.len()), Vec::with_capacity(b.len()));
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let code = merged.len() as u32;
        match a[i].cmp(&b[j]) {
            Ordering::Less => {
                merged.push(a[i]);
                map_a.push(code);
                i += 1;
            }
            Ordering::Greater => {
                merged.push(b[j]);
                map_b.push(code);
                j += 1;
            }
            Ordering::Equal => {
                merged.push(a[i]);
                map_a.push(code);
                map_b.push(code);
                i += 1;
                j += 1;
            }
        }
    }
    for (rest, map) in [(&a[i..], &mut map_a), (&b[j..], &mut map_b)] {
        map.extend(merged.len() as u32..(merged.len() + rest.len()) as u32);
        merged.extend_from_slice(rest);
    }
    (merged, vec![map_a, map_b])
}

fn merge_many<T: Ord + Copy>(inputs: &[&[T]]) -> (Vec<T>, Vec<Vec<u32>>) {
    let longest = inputs.iter().map(|input| input.len()).max().unwrap_or(0);
    let mut merged: Vec<T> = Vec::with_capacity(longest);
    let mut maps: Vec<Vec<u32>> = inputs
        .iter()
        .map(|input| Vec::with_capacity(input.len()))
        .collect();
    // A tree of losers (a tournament): each value out costs one comparison per level,
    // log2(inputs), half of a binary heap's sift-down. A player is an input's next value
    // (None once the input is exhausted: it loses to every value) and the input.
    type Player<T> = (Option<T>, usize);
    let beats = |a: &Player<T>, b: &Player<T>| match (a.0, b.0) {
        (Some(x), Some(y)) => x < y,
        (Some(_), None) => true,
        (None, _) => false,
    };
    let k = inputs.len();
    // node n's children are 2n and 2n + 1; input i is leaf k + i
    let mut winners: Vec<Player<T>> = vec![(None, 0); 2 * k];
    for (input, values) in inputs.iter().enumerate() {
        winners[k + input] = (values.first().copied(), input);
    }
    let mut losers: Vec<Player<T>> = vec![(None, 0); k.max(1)];
    for node in (1..k).rev() {
        let (left, right) = (winners[2 * node], winners[2 * node + 1]);
        (winners[node], losers[node]) = if beats(&left, &right) {
            (left, right)
        } else {
            (right, left)
        };
    }
    let mut top = winners[k.min(1)];
    drop(winners);
    while let (Some(value), input) = top {
        // Values come out in ascending order, so a duplicate follows its first occurrence.
        if merged.last() != Some(&value) {
            merged.push(value);
        }
        let map = &mut maps[input];
        map.push(merged.len() as u32 - 1);
        // the input's next value plays its way up from its leaf
        let mut player = (inputs[input].get(map.len()).copied(), input);
        let mut node = (k + input) / 2;
        while node > 0 {
            if beats(&losers[node], &player) {
                std::mem::swap(&mut losers[node], &mut player);
            }
            node /= 2;
        }
        top = player;
    }
    (merged, maps)
}

/// One incoming fragment ready for the merge: its sorted dictionary, and per row a code
/// source that `rank` (if any) maps to positions in `dict`.
struct Source<'a, I> {
    dict: Vec<I>,
    rows: Rows<'a>,
    rank: Option<Vec<u32>>,
    nulls: Option<NullBuffer>,
}

/// Per-row codes: ids of the sort step, or a code array's values.
enum Rows<'a> {
    Ids(Vec<u32>),
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
}

impl<'a> Rows<'a> {
    /// The values of an unsigned code array; None for any other type.
    fn of(codes: &'a dyn Array) -> Option<Self> {
        Some(match codes.data_type() {
            DataType::UInt8 => Rows::U8(codes.as_primitive::<UInt8Type>().values()),
            DataType::UInt16 => Rows::U16(codes.as_primitive::<UInt16Type>().values()),
            DataType::UInt32 => Rows::U32(codes.as_primitive::<UInt32Type>().values()),
            _ => return None,
        })
    }

    /// The first non-null row whose code is `entries` or more, and that code.
    fn first_out_of_range(
        &self,
        nulls: Option<&NullBuffer>,
        entries: usize,
    ) -> Option<(usize, usize)> {
        fn find<I: ArrowNativeType>(
            codes: &[I],
            nulls: Option<&NullBuffer>,
            entries: usize,
        ) -> Option<(usize, usize)> {
            let bad = |row: usize| {
                (codes[row].as_usize() >= entries).then(|| (row, codes[row].as_usize()))
            };
            match nulls.filter(|nulls| nulls.null_count() > 0) {
                // Without nulls: the maximum first (a vectorized pass), the row only on failure.
                None => {
                    let max = codes.iter().map(|code| code.as_usize()).max()?;
                    if max < entries {
                        None
                    } else {
                        (0..codes.len()).find_map(bad)
                    }
                }
                Some(nulls) => nulls.valid_indices().find_map(bad),
            }
        }
        match self {
            Rows::Ids(ids) => find(ids, nulls, entries),
            Rows::U8(codes) => find(codes, nulls, entries),
            Rows::U16(codes) => find(codes, nulls, entries),
            Rows::U32(codes) => find(codes, nulls, entries),
        }
    }
}

/// `rows` mapped through `map` (None: unchanged) as codes of type `O`, with `nulls`. A code
/// past the map can only be under a null (inputs are validated) and becomes 0.
fn keys<O: ArrowPrimitiveType>(
    rows: &Rows<'_>,
    map: Option<&[u32]>,
    nulls: Option<NullBuffer>,
) -> PrimitiveArray<O> {
    fn remap<I: ArrowNativeType, O: ArrowNativeType>(rows: &[I], map: Option<&[u32]>) -> Vec<O> {
        match map {
            Some(map) => rows
                .iter()
                .map(|row| O::usize_as(map.get(row.as_usize()).map_or(0, |&code| code as usize)))
                .collect(),
            None => rows.iter().map(|row| O::usize_as(row.as_usize())).collect(),
        }
    }
    let codes: Vec<O::Native> = match rows {
        Rows::Ids(ids) => remap(ids, map),
        Rows::U8(codes) => remap(codes, map),
        Rows::U16(codes) => remap(codes, map),
        Rows::U32(codes) => remap(codes, map),
    };
    PrimitiveArray::new(codes.into(), nulls)
}

/// `rows` mapped through `map` as codes of the width for `entries` entries.
fn codes(
    rows: &Rows<'_>,
    map: Option<&[u32]>,
    nulls: Option<NullBuffer>,
    entries: usize,
) -> ArrayRef {
    match code_type(entries) {
        DataType::UInt8 => Arc::new(keys::<UInt8Type>(rows, map, nulls)),
        DataType::UInt16 => Arc::new(keys::<UInt16Type>(rows, map, nulls)),
        _ => Arc::new(keys::<UInt32Type>(rows, map, nulls)),
    }
}

/// A dictionary column over `values` (codes of width `code_type(values.len())`) of `rows`
/// mapped through `map`.
fn dictionary_column(
    rows: &Rows<'_>,
    map: Option<&[u32]>,
    nulls: Option<NullBuffer>,
    values: &ArrayRef,
) -> Result<ArrayRef> {
    fn build<O: ArrowDictionaryKeyType>(
        rows: &Rows<'_>,
        map: Option<&[u32]>,
        nulls: Option<NullBuffer>,
        values: &ArrayRef,
    ) -> Result<ArrayRef> {
        // try_new checks the codes (one comparison a row): they are in range by
        // construction, so this never fails, and it needs no unsafe.
        let column =
            DictionaryArray::<O>::try_new(keys::<O>(rows, map, nulls), Arc::clone(values))?;
        Ok(Arc::new(column))
    }
    match code_type(values.len()) {
        DataType::UInt8 => build::<UInt8Type>(rows, map, nulls, values),
        DataType::UInt16 => build::<UInt16Type>(rows, map, nulls, values),
        _ => build::<UInt32Type>(rows, map, nulls, values),
    }
}

fn is_code_type(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32
    )
}

/// The key type of a dictionary column.
fn key_type(column: &ArrayRef) -> Option<&DataType> {
    match column.data_type() {
        DataType::Dictionary(keys, _) => Some(keys),
        _ => None,
    }
}

/// Checks that an existing chunk column is a dictionary column over a dictionary of
/// `data_type` with `entries` entries.
fn check_existing(
    index: usize,
    column: &ArrayRef,
    data_type: &DataType,
    entries: usize,
) -> Result<()> {
    let invalid = |what: String| {
        Err(DictionaryError::InvalidArgument(format!(
            "existing chunk {index}: {what}"
        )))
    };
    match column.data_type() {
        DataType::Dictionary(keys, values)
            if is_code_type(keys) && values.as_ref() == data_type => {}
        other => {
            return invalid(format!(
                "a {other} column, expected a dictionary column of {data_type}"
            ));
        }
    }
    let values = column.as_any_dictionary().values().len();
    if values != entries {
        return invalid(format!(
            "its dictionary has {values} entries, the partition's {entries}"
        ));
    }
    Ok(())
}

/// Prepares fragment `index` for the merge: the sort step of plain values, the validation
/// of a client's dictionary and codes (not of those `built` by [`encode_fragment`] in this
/// merge; not of the codes when they are `coded`: a dictionary array's).
fn source<'a, K: Build>(
    index: usize,
    fragment: &'a FragmentColumn,
    data_type: &DataType,
    built: bool,
    coded: bool,
) -> Result<Source<'a, K::Item<'a>>> {
    let invalid = |reason: String| {
        Err(DictionaryError::InvalidFragment {
            fragment: index,
            reason,
        })
    };
    match fragment {
        // `merge_column` unpacks dictionary arrays before the merge
        FragmentColumn::Coded(array) => invalid(format!(
            "a {} array not unpacked for the merge",
            array.data_type()
        )),
        FragmentColumn::Plain(values) => {
            if values.data_type() != data_type {
                return invalid(format!(
                    "values of type {}, expected {data_type}",
                    values.data_type()
                ));
            }
            check_rows(values.len())?;
            let Sorted { dict, ids, rank } = K::encode(values.as_ref());
            Ok(Source {
                dict,
                rows: Rows::Ids(ids),
                rank,
                nulls: values.nulls().cloned(),
            })
        }
        FragmentColumn::Encoded { dictionary, codes } => {
            if dictionary.data_type() != data_type {
                return invalid(format!(
                    "a dictionary of type {}, expected {data_type}",
                    dictionary.data_type()
                ));
            }
            if dictionary.null_count() > 0 {
                return invalid(format!(
                    "its dictionary holds {} nulls",
                    dictionary.null_count()
                ));
            }
            match (!built)
                .then(|| first_unordered::<K>(dictionary.as_ref()))
                .flatten()
            {
                Some((entry, Ordering::Equal)) => {
                    return invalid(format!(
                        "dictionary entry {entry} duplicates entry {}",
                        entry - 1
                    ));
                }
                Some((entry, _)) => {
                    return invalid(format!(
                        "dictionary entry {entry} sorts before entry {}",
                        entry - 1
                    ));
                }
                None => {}
            }
            let Some(rows) = Rows::of(codes.as_ref()) else {
                return invalid(format!(
                    "codes of type {}, expected UInt8, UInt16 or UInt32",
                    codes.data_type()
                ));
            };
            if let Some((row, code)) = (!built && !coded)
                .then(|| rows.first_out_of_range(codes.nulls(), dictionary.len()))
                .flatten()
            {
                return invalid(format!(
                    "code {code} at row {row} is out of range: the dictionary has {} entries",
                    dictionary.len()
                ));
            }
            Ok(Source {
                dict: items::<K>(dictionary.as_ref()),
                rows,
                rank: None,
                nulls: codes.nulls().cloned(),
            })
        }
    }
}

/// The source of an encoded fragment whose dictionary (of `entries` entries) another
/// fragment of the same merge brought and had checked: only its codes are checked (unless
/// `coded`: a dictionary array's, in range).
fn shared_source<'a, K: Build>(
    index: usize,
    entries: usize,
    codes: &'a ArrayRef,
    coded: bool,
) -> Result<Source<'a, K::Item<'a>>> {
    let invalid = |reason: String| {
        Err(DictionaryError::InvalidFragment {
            fragment: index,
            reason,
        })
    };
    let Some(rows) = Rows::of(codes.as_ref()) else {
        return invalid(format!(
            "codes of type {}, expected UInt8, UInt16 or UInt32",
            codes.data_type()
        ));
    };
    if let Some((row, code)) = (!coded)
        .then(|| rows.first_out_of_range(codes.nulls(), entries))
        .flatten()
    {
        return invalid(format!(
            "code {code} at row {row} is out of range: the dictionary has {entries} entries"
        ));
    }
    Ok(Source {
        dict: Vec::new(),
        rows,
        rank: None,
        nulls: codes.nulls().cloned(),
    })
}

fn merge_typed<'a, K: Build>(
    data_type: &DataType,
    dictionary: Option<&'a ArrayRef>,
    existing: &[ArrayRef],
    incoming: &'a [FragmentColumn],
    built: &[bool],
    coded: &[bool],
) -> Result<MergedColumn> {
    debug_assert!(
        dictionary.is_none_or(is_valid_dictionary),
        "the partition's dictionary is not sorted and unique"
    );
    let old: Option<Vec<K::Item<'a>>> =
        dictionary.map(|dictionary| items::<K>(dictionary.as_ref()));
    let old_len = old.as_ref().map_or(0, Vec::len);
    for (index, column) in existing.iter().enumerate() {
        check_existing(index, column, data_type, old_len)?;
    }
    // Encoded fragments that share one dictionary (the same Arc: a client's partition
    // dictionary) have it checked and merged once; `owner[i]` is the fragment whose
    // dictionary fragment `i` uses.
    let owner: Vec<usize> = incoming
        .iter()
        .enumerate()
        .map(|(i, fragment)| match fragment {
            FragmentColumn::Encoded { dictionary, .. } => incoming[..i]
                .iter()
                .position(|earlier| {
                    matches!(earlier, FragmentColumn::Encoded { dictionary: d, .. }
                        if same_dictionary(d, dictionary))
                })
                .unwrap_or(i),
            FragmentColumn::Plain(_) | FragmentColumn::Coded(_) => i,
        })
        .collect();
    let sources = incoming
        .iter()
        .enumerate()
        .map(|(index, fragment)| match fragment {
            FragmentColumn::Encoded { dictionary, codes } if owner[index] != index => {
                shared_source::<K>(index, dictionary.len(), codes, coded[index])
            }
            _ => source::<K>(index, fragment, data_type, built[index], coded[index]),
        })
        .collect::<Result<Vec<_>>>()?;

    let mut inputs: Vec<&[K::Item<'a>]> = old.iter().map(Vec::as_slice).collect();
    // position of each owned dictionary among the merge's fragment inputs
    let mut input_of = vec![0usize; incoming.len()];
    for (i, source) in sources.iter().enumerate() {
        if owner[i] == i {
            input_of[i] = inputs.len() - usize::from(dictionary.is_some());
            inputs.push(source.dict.as_slice());
        } else {
            input_of[i] = input_of[owner[i]];
        }
    }
    let (merged, maps) = merge_sorted(&inputs)?;
    let (old_map, owned_maps) = match dictionary {
        Some(_) => (Some(maps[0].as_slice()), &maps[1..]),
        None => (None, &maps[..]),
    };
    let fragment_maps: Vec<&[u32]> = input_of.iter().map(|&k| owned_maps[k].as_slice()).collect();

    // No new entry: the same dictionary (the same Arc, which chunks may compare by pointer).
    let unchanged = dictionary.filter(|_| merged.len() == old_len);
    let new_dictionary = match unchanged {
        Some(dictionary) => Arc::clone(dictionary),
        None => K::build(&merged, data_type)?,
    };
    drop(merged);
    let width = code_type(new_dictionary.len());

    let existing = if unchanged.is_some()
        && existing
            .iter()
            .all(|column| key_type(column) == Some(&width))
    {
        None
    } else {
        // New entries all after the old ones leave every old code as it is.
        let identity = old_map.is_some_and(|map| {
            map.iter()
                .enumerate()
                .all(|(old, &new)| old == new as usize)
        });
        let columns = existing
            .iter()
            .map(|column| {
                let column = column.as_any_dictionary();
                if identity && column.keys().data_type() == &width {
                    // The same codes over the larger dictionary: no copy.
                    return Ok(column.with_values(Arc::clone(&new_dictionary)));
                }
                let rows = Rows::of(column.keys()).ok_or_else(|| {
                    DictionaryError::InvalidArgument(format!(
                        "codes of type {}",
                        column.keys().data_type()
                    ))
                })?;
                let map = if identity { None } else { old_map };
                dictionary_column(&rows, map, column.keys().nulls().cloned(), &new_dictionary)
            })
            .collect::<Result<Vec<_>>>()?;
        Some(columns)
    };

    let incoming = sources
        .iter()
        .zip(fragment_maps)
        .map(|(source, map)| {
            // Row id -> position in the fragment's dictionary -> position in the new one.
            let map: Cow<'_, [u32]> = match &source.rank {
                Some(rank) => rank
                    .iter()
                    .map(|&position| map[position as usize])
                    .collect(),
                None => Cow::Borrowed(map),
            };
            dictionary_column(
                &source.rows,
                Some(&map),
                source.nulls.clone(),
                &new_dictionary,
            )
        })
        .collect::<Result<Vec<_>>>()?;

    Ok(MergedColumn {
        dictionary: new_dictionary,
        existing,
        incoming,
    })
}

#[cfg(test)]
mod tests {
    use std::fmt::Debug;
    use std::time::Instant;

    use arrow::array::{
        BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array, Int16Array,
        Int32Array, Int64Array, StringArray, TimestampMicrosecondArray, UInt8Array, UInt16Array,
        UInt32Array,
    };
    use proptest::prelude::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use arrow::datatypes::{
        Decimal128Type, Float32Type, Float64Type, Int16Type, Int64Type, TimeUnit,
    };
    use wireload_storage::dictionary::{is_supported, value_type};

    // ---- helpers -------------------------------------------------------------------------

    /// A dictionary column decoded to plain values of its value type (any key width).
    fn decode(column: &ArrayRef) -> Result<ArrayRef> {
        use arrow::compute::take;
        let dictionary = column.as_any_dictionary_opt().ok_or_else(|| {
            DictionaryError::InvalidArgument(format!(
                "cannot decode a {} column: not a dictionary column",
                column.data_type()
            ))
        })?;
        Ok(take(dictionary.values().as_ref(), dictionary.keys(), None)?)
    }

    /// Checks a dictionary column of a merge: codes of the dictionary's width, over the very
    /// dictionary (same Arc), every non-null code in range, decoding to `expected`.
    fn check_column(column: &ArrayRef, dictionary: &ArrayRef, expected: &ArrayRef) {
        assert_eq!(
            column.data_type(),
            &DataType::Dictionary(
                Box::new(code_type(dictionary.len())),
                Box::new(expected.data_type().clone())
            )
        );
        let any = column.as_any_dictionary();
        assert!(
            Arc::ptr_eq(any.values(), dictionary),
            "chunk not over the partition's dictionary"
        );
        let keys = any.keys();
        let rows = Rows::of(keys).unwrap();
        assert_eq!(
            rows.first_out_of_range(keys.nulls(), dictionary.len()),
            None
        );
        assert_eq!(keys.len(), expected.len());
        let decoded = decode(column).unwrap();
        // Arrow's equality compares the values' bytes: floats must come back bit for bit.
        assert_eq!(decoded.as_ref(), expected.as_ref());
    }

    #[derive(Debug, Clone)]
    enum Form {
        Plain,
        /// Plain values read through a slice (offsets into values and nulls).
        PlainSliced,
        /// A client's dictionary and codes (from `encode_fragment`).
        Encoded,
        /// Likewise with the codes read through a slice, after codes of the `unused` values
        /// (so the client's dictionary has entries that no code uses).
        EncodedSliced,
        /// A client's dictionary and codes as one dictionary array.
        Coded,
    }

    #[derive(Debug, Clone)]
    struct Case<T> {
        /// Whether the partition has a dictionary (and chunks) before the merge.
        has_dictionary: bool,
        /// Values in the partition's dictionary that no chunk uses.
        unused: Vec<Option<T>>,
        existing: Vec<Vec<Option<T>>>,
        incoming: Vec<(Vec<Option<T>>, Form)>,
    }

    fn cases<T: Debug + Clone + 'static>(
        value: impl Strategy<Value = T> + Clone + 'static,
        max_len: usize,
    ) -> impl Strategy<Value = Case<T>> {
        let column = prop::collection::vec(prop::option::weighted(0.85, value), 0..max_len);
        let form = prop_oneof![
            Just(Form::Plain),
            Just(Form::PlainSliced),
            Just(Form::Encoded),
            Just(Form::EncodedSliced),
            Just(Form::Coded)
        ];
        (
            any::<bool>(),
            column.clone(),
            prop::collection::vec(column.clone(), 0..4),
            prop::collection::vec((column, form), 0..6),
        )
            .prop_map(|(has_dictionary, unused, existing, incoming)| Case {
                has_dictionary,
                unused,
                existing,
                incoming,
            })
    }

    /// Runs a case: a first merge makes the partition (dictionary, chunks), a second merges
    /// the incoming fragments; everything must decode to what went in.
    fn check_case<T: Clone>(case: &Case<T>, make: impl Fn(Vec<Option<T>>) -> ArrayRef) {
        let plain = |values: &[Option<T>]| make(values.to_vec());
        // A leading null then `slice(1, ..)`: the same values at an offset.
        let sliced = |values: &[Option<T>]| {
            let padded: Vec<Option<T>> = std::iter::once(None)
                .chain(values.iter().cloned())
                .collect();
            make(padded).slice(1, values.len())
        };
        let (dictionary, chunks, chunk_values) = if case.has_dictionary {
            let mut fragments = vec![FragmentColumn::Plain(plain(&case.unused))];
            let chunk_values: Vec<ArrayRef> = case.existing.iter().map(|c| plain(c)).collect();
            fragments.extend(chunk_values.iter().cloned().map(FragmentColumn::Plain));
            let first = merge_column(None, &[], fragments).unwrap();
            assert!(is_valid_dictionary(&first.dictionary));
            assert_eq!(first.existing.as_ref().map(Vec::len), Some(0));
            let chunks = first.incoming[1..].to_vec();
            for (chunk, values) in chunks.iter().zip(&chunk_values) {
                check_column(chunk, &first.dictionary, values);
            }
            (Some(first.dictionary), chunks, chunk_values)
        } else {
            (None, Vec::new(), Vec::new())
        };

        let mut expected = Vec::new();
        let mut contributed = Vec::new();
        let mut fragments = Vec::new();
        for (values, form) in &case.incoming {
            let (values, fragment) = match form {
                Form::Plain => {
                    let values = plain(values);
                    (values.clone(), FragmentColumn::Plain(values))
                }
                Form::PlainSliced => {
                    let values = sliced(values);
                    (values.clone(), FragmentColumn::Plain(values))
                }
                Form::Encoded => {
                    let values = plain(values);
                    let (dictionary, codes) = encode_fragment(&values).unwrap();
                    (values, FragmentColumn::Encoded { dictionary, codes })
                }
                Form::EncodedSliced => {
                    let padded: Vec<Option<T>> =
                        case.unused.iter().chain(values).cloned().collect();
                    let (dictionary, codes) = encode_fragment(&make(padded)).unwrap();
                    let codes = codes.slice(case.unused.len(), values.len());
                    (plain(values), FragmentColumn::Encoded { dictionary, codes })
                }
                Form::Coded => {
                    let values = plain(values);
                    let (dictionary, codes) = encode_fragment(&values).unwrap();
                    let array: ArrayRef = match codes.data_type() {
                        DataType::UInt8 => Arc::new(DictionaryArray::new(
                            codes.as_primitive::<UInt8Type>().clone(),
                            dictionary,
                        )),
                        DataType::UInt16 => Arc::new(DictionaryArray::new(
                            codes.as_primitive::<UInt16Type>().clone(),
                            dictionary,
                        )),
                        _ => Arc::new(DictionaryArray::new(
                            codes.as_primitive::<UInt32Type>().clone(),
                            dictionary,
                        )),
                    };
                    (values, FragmentColumn::Coded(array))
                }
            };
            // What the fragment brings to the dictionary: its values, or a client's whole
            // dictionary (entries no code uses included).
            contributed.push(match &fragment {
                FragmentColumn::Plain(values) => Arc::clone(values),
                FragmentColumn::Encoded { dictionary, .. } => Arc::clone(dictionary),
                FragmentColumn::Coded(array) => Arc::clone(array.as_any_dictionary().values()),
            });
            expected.push(values);
            fragments.push(fragment);
        }
        if dictionary.is_none() && fragments.is_empty() {
            return;
        }
        let merged = merge_column(dictionary.as_ref(), &chunks, fragments).unwrap();
        let new = &merged.dictionary;
        assert!(is_valid_dictionary(new));
        match (&dictionary, &merged.existing) {
            (Some(old), None) => {
                assert!(
                    Arc::ptr_eq(old, new),
                    "existing None but the dictionary changed"
                );
            }
            (Some(old), Some(existing)) => {
                assert_eq!(existing.len(), chunks.len());
                // Re-encoded only when needed: new entries or a new code width.
                assert!(
                    old.len() < new.len()
                        || chunks
                            .iter()
                            .any(|c| key_type(c) != Some(&code_type(new.len())))
                );
            }
            (None, existing) => assert_eq!(existing.as_ref().map(Vec::len), Some(0)),
        }
        if let Some(old) = &dictionary {
            // Every old entry is still there; no entry appears without a reason.
            assert!(old.len() <= new.len());
            assert_eq!(Arc::ptr_eq(old, new), old.len() == new.len());
        }
        let existing = merged.existing.as_ref().unwrap_or(&chunks);
        for (chunk, values) in existing.iter().zip(&chunk_values) {
            check_column(chunk, new, values);
        }
        assert_eq!(merged.incoming.len(), expected.len());
        for (column, values) in merged.incoming.iter().zip(&expected) {
            check_column(column, new, values);
        }
        // The new dictionary holds exactly the old entries and what the fragments brought.
        let mut all: Vec<ArrayRef> = contributed;
        all.extend(dictionary.iter().cloned());
        let all =
            arrow::compute::concat(&all.iter().map(|a| a.as_ref()).collect::<Vec<_>>()).unwrap();
        let (union, _) = encode_fragment(&all).unwrap();
        assert_eq!(union.as_ref(), new.as_ref());
    }

    fn string_values() -> impl Strategy<Value = String> + Clone {
        prop_oneof![
            prop::sample::select(vec![
                "",
                "é",
                "e",
                "z",
                "Z",
                "\u{10FFFF}",
                "a",
                "a\0",
                "ab",
                "ÿ",
                "\u{7F}"
            ])
            .prop_map(String::from),
            "[aZé\u{10FFFF}\u{0}-]{0,3}",
            "[ab]{0,24}",
        ]
    }

    fn float_values() -> impl Strategy<Value = f64> + Clone {
        prop_oneof![
            prop::sample::select(vec![
                -0.0,
                0.0,
                f64::NAN,
                -f64::NAN,
                f64::from_bits(0x7FF8_0000_0000_0001),
                f64::from_bits(0x7FF0_0000_0000_0001), // a signalling NaN
                f64::INFINITY,
                f64::NEG_INFINITY,
                1.5,
                -1.5,
                f64::MIN_POSITIVE,
                -f64::MIN_POSITIVE,
                f64::MAX,
                f64::MIN,
            ]),
            any::<f64>(),
        ]
    }

    fn decimal_array(values: Vec<Option<i128>>) -> ArrayRef {
        Arc::new(
            Decimal128Array::from(values)
                .with_precision_and_scale(15, 2)
                .unwrap(),
        )
    }

    fn string_array(values: Vec<Option<String>>) -> ArrayRef {
        Arc::new(StringArray::from(values))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn merge_int32_dense(case in cases(-300i32..300, 200)) {
            check_case(&case, |v| Arc::new(Int32Array::from(v)));
        }

        #[test]
        fn merge_int64(case in cases(prop_oneof![-30i64..30, any::<i64>()], 600)) {
            check_case(&case, |v| Arc::new(Int64Array::from(v)));
        }

        #[test]
        fn merge_int16(case in cases(any::<i16>(), 200)) {
            check_case(&case, |v| Arc::new(Int16Array::from(v)));
        }

        #[test]
        fn merge_decimal(case in cases(
            prop_oneof![-500i128..500, -999_999_999_999_999i128..=999_999_999_999_999],
            200,
        )) {
            check_case(&case, decimal_array);
        }

        #[test]
        fn merge_decimal_dense(case in cases(-2_000i128..2_000, 300)) {
            check_case(&case, decimal_array);
        }

        #[test]
        fn merge_wide_decimal(case in cases(any::<i128>(), 100)) {
            // Beyond 64-bit offsets: the pdqsort fallback.
            check_case(&case, |v| Arc::new(Decimal128Array::from(v).with_precision_and_scale(38, 0).unwrap()));
        }

        #[test]
        fn merge_date32(case in cases(prop_oneof![18_000i32..18_100, any::<i32>()], 200)) {
            check_case(&case, |v| Arc::new(Date32Array::from(v)));
        }

        #[test]
        fn merge_timestamp(case in cases(prop_oneof![0i64..100, any::<i64>()], 600)) {
            check_case(&case, |v| Arc::new(TimestampMicrosecondArray::from(v)));
        }

        #[test]
        fn merge_float64(case in cases(float_values(), 600)) {
            check_case(&case, |v| Arc::new(Float64Array::from(v)));
        }

        #[test]
        fn merge_float32(case in cases(any::<f32>(), 100)) {
            check_case(&case, |v| Arc::new(Float32Array::from(v)));
        }

        #[test]
        fn merge_utf8(case in cases(string_values(), 200)) {
            check_case(&case, string_array);
        }

        #[test]
        fn merge_boolean(case in cases(any::<bool>(), 50)) {
            check_case(&case, |v| Arc::new(BooleanArray::from(v)));
        }

        #[test]
        fn radix_sort_sorts(keys in prop::collection::vec(prop_oneof![
            any::<u64>(),
            0u64..1000,
            any::<u16>().prop_map(|x| u64::from(x) << 48),
            any::<u8>().prop_map(|x| u64::from(x) << 24 | 0xFFFF_0000_0000_0000),
        ], 0..3000)) {
            let mut expected = keys.clone();
            expected.sort_unstable();
            let mut sorted = keys;
            radix_sort(&mut sorted);
            prop_assert_eq!(sorted, expected);
        }

        #[test]
        fn float_keys_are_total_order(a in float_values(), b in float_values(), c in any::<f32>(), d in any::<f32>()) {
            prop_assert_eq!(Float64Type::to_key(a).cmp(&Float64Type::to_key(b)), a.total_cmp(&b));
            prop_assert_eq!(Float64Type::from_key(Float64Type::to_key(a)).to_bits(), a.to_bits());
            prop_assert_eq!(Float32Type::to_key(c).cmp(&Float32Type::to_key(d)), c.total_cmp(&d));
            prop_assert_eq!(Float32Type::from_key(Float32Type::to_key(c)).to_bits(), c.to_bits());
        }

        #[test]
        fn integer_keys_keep_order(a in any::<i64>(), b in any::<i64>(), c in any::<i16>(), d in any::<i128>()) {
            prop_assert_eq!(Int64Type::to_key(a).cmp(&Int64Type::to_key(b)), a.cmp(&b));
            prop_assert_eq!(Int64Type::from_key(Int64Type::to_key(a)), a);
            prop_assert_eq!(Int16Type::from_key(Int16Type::to_key(c)), c);
            prop_assert_eq!(Decimal128Type::to_key(d).cmp(&Decimal128Type::to_key(i128::from(a))), d.cmp(&i128::from(a)));
            prop_assert_eq!(Decimal128Type::from_key(Decimal128Type::to_key(d)), d);
        }
    }

    /// `sort_distinct` against `sort_unstable`, and its ranks against the input order.
    fn check_sort_distinct<K: Key + Debug>(keys: Vec<K>) {
        let (sorted, rank) = sort_distinct(keys.clone());
        let mut expected = keys.clone();
        expected.sort_unstable();
        assert_eq!(sorted, expected);
        for (id, key) in keys.iter().enumerate() {
            assert_eq!(&sorted[rank[id] as usize], key);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn merge_sorted_gives_the_union_and_each_inputs_map(
            // from no input to more than a partition's 50 fragments, some of them empty,
            // values from a narrow range (many shared) or a wide one
            sets in prop::collection::vec(
                prop::collection::btree_set(prop_oneof![0u32..200, any::<u32>()], 0..40),
                0..70,
            ),
        ) {
            let inputs: Vec<Vec<u32>> = sets.iter().map(|s| s.iter().copied().collect()).collect();
            let slices: Vec<&[u32]> = inputs.iter().map(Vec::as_slice).collect();
            let (merged, maps) = merge_sorted(&slices).unwrap();
            let union: std::collections::BTreeSet<u32> = sets.iter().flatten().copied().collect();
            prop_assert_eq!(&merged, &union.into_iter().collect::<Vec<_>>());
            prop_assert_eq!(maps.len(), inputs.len());
            for (input, map) in inputs.iter().zip(&maps) {
                prop_assert_eq!(map.len(), input.len());
                for (value, &code) in input.iter().zip(map) {
                    prop_assert_eq!(merged[code as usize], *value);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn sort_distinct_sorts_and_ranks(
            // The packed radix sort (a narrow span), and pdqsort of pairs (the whole width).
            narrow in prop::collection::hash_set(0u64..1 << 40, 0..4000),
            wide in prop::collection::hash_set(prop_oneof![any::<u64>(), 0u64..1000], 0..4000),
            decimals in prop::collection::hash_set(any::<i32>().prop_map(|x| Decimal128Type::to_key(x.into())), 0..4000),
            wide_decimals in prop::collection::hash_set(any::<u128>(), 0..3000),
        ) {
            check_sort_distinct(narrow.into_iter().collect());
            check_sort_distinct(wide.into_iter().collect());
            check_sort_distinct(decimals.into_iter().collect());
            check_sort_distinct(wide_decimals.into_iter().collect());
        }
    }

    // ---- deterministic cases -------------------------------------------------------------

    #[test]
    fn encode_fragment_sorts_and_codes() {
        let values: ArrayRef = Arc::new(StringArray::from(vec![
            Some("b"),
            None,
            Some("a"),
            Some("b"),
            Some("é"),
            Some("Z"),
        ]));
        let (dictionary, codes) = encode_fragment(&values).unwrap();
        assert_eq!(
            dictionary.as_ref(),
            &StringArray::from(vec!["Z", "a", "b", "é"]) as &dyn Array
        );
        assert_eq!(
            codes.as_ref(),
            &UInt8Array::from(vec![Some(2), None, Some(1), Some(2), Some(3), Some(0)])
                as &dyn Array
        );

        let values: ArrayRef = Arc::new(Float64Array::from(vec![
            0.0,
            -0.0,
            f64::NAN,
            f64::NEG_INFINITY,
            0.0,
        ]));
        let (dictionary, codes) = encode_fragment(&values).unwrap();
        let dictionary = dictionary.as_primitive::<Float64Type>();
        let bits: Vec<u64> = dictionary.values().iter().map(|v| v.to_bits()).collect();
        let want = [f64::NEG_INFINITY, -0.0, 0.0, f64::NAN].map(f64::to_bits);
        assert_eq!(bits, want);
        assert_eq!(
            codes.as_ref(),
            &UInt8Array::from(vec![2, 1, 3, 0, 2]) as &dyn Array
        );

        let values: ArrayRef = Arc::new(BooleanArray::from(vec![Some(true), None, Some(true)]));
        let (dictionary, codes) = encode_fragment(&values).unwrap();
        assert_eq!(
            dictionary.as_ref(),
            &BooleanArray::from(vec![true]) as &dyn Array
        );
        assert_eq!(
            codes.as_ref(),
            &UInt8Array::from(vec![Some(0), None, Some(0)]) as &dyn Array
        );

        let values: ArrayRef = Arc::new(Int16Array::from(vec![i16::MAX, i16::MIN, -1, 0]));
        let (dictionary, codes) = encode_fragment(&values).unwrap();
        assert_eq!(
            dictionary.as_ref(),
            &Int16Array::from(vec![i16::MIN, -1, 0, i16::MAX]) as &dyn Array
        );
        assert_eq!(
            codes.as_ref(),
            &UInt8Array::from(vec![3, 0, 1, 2]) as &dyn Array
        );

        let err =
            encode_fragment(&(Arc::new(UInt8Array::from(vec![1u8])) as ArrayRef)).unwrap_err();
        assert!(
            matches!(err, DictionaryError::Unsupported(DataType::UInt8)),
            "{err}"
        );
    }

    #[test]
    fn decimal_and_timestamp_types_are_kept() {
        let values: ArrayRef = Arc::new(
            Decimal128Array::from(vec![Some(250), None, Some(-100)])
                .with_precision_and_scale(15, 2)
                .unwrap(),
        );
        let (dictionary, _) = encode_fragment(&values).unwrap();
        assert_eq!(dictionary.data_type(), &DataType::Decimal128(15, 2));
        let values: ArrayRef =
            Arc::new(TimestampMicrosecondArray::from(vec![5, 3]).with_timezone("UTC"));
        let merged =
            merge_column(None, &[], vec![FragmentColumn::Plain(Arc::clone(&values))]).unwrap();
        assert_eq!(merged.dictionary.data_type(), values.data_type());
        check_column(&merged.incoming[0], &merged.dictionary, &values);
    }

    #[test]
    fn empty_and_all_null_fragments() {
        let empty: ArrayRef = Arc::new(Int64Array::from(Vec::<i64>::new()));
        let nulls: ArrayRef = Arc::new(Int64Array::from(vec![None, None, None]));
        let merged = merge_column(
            None,
            &[],
            vec![
                FragmentColumn::Plain(Arc::clone(&empty)),
                FragmentColumn::Plain(Arc::clone(&nulls)),
            ],
        )
        .unwrap();
        assert_eq!(merged.dictionary.len(), 0);
        assert_eq!(merged.dictionary.data_type(), &DataType::Int64);
        check_column(&merged.incoming[0], &merged.dictionary, &empty);
        check_column(&merged.incoming[1], &merged.dictionary, &nulls);
        // All-null strings, and an all-null fragment into an existing dictionary.
        let strings: ArrayRef = Arc::new(StringArray::from(vec![None::<&str>; 4]));
        let (dictionary, codes) = encode_fragment(&strings).unwrap();
        assert_eq!((dictionary.len(), codes.null_count()), (0, 4));
        let first = merge_column(
            None,
            &[],
            vec![FragmentColumn::Plain(Arc::new(Int64Array::from(vec![
                1, 2,
            ])))],
        )
        .unwrap();
        let second = merge_column(
            Some(&first.dictionary),
            &first.incoming,
            vec![FragmentColumn::Plain(Arc::clone(&nulls))],
        )
        .unwrap();
        assert!(second.existing.is_none());
        assert!(Arc::ptr_eq(&second.dictionary, &first.dictionary));
        check_column(&second.incoming[0], &second.dictionary, &nulls);
        // Nothing at all to merge.
        assert!(merge_column(None, &[], vec![]).is_err());
    }

    #[test]
    fn appended_entries_keep_codes_and_buffers() {
        let first = merge_column(
            None,
            &[],
            vec![FragmentColumn::Plain(Arc::new(Int32Array::from(vec![
                3, 1, 2,
            ])))],
        )
        .unwrap();
        let second = merge_column(
            Some(&first.dictionary),
            &first.incoming,
            vec![FragmentColumn::Plain(Arc::new(Int32Array::from(vec![
                Some(9),
                None,
                Some(3),
            ])))],
        )
        .unwrap();
        let existing = second.existing.unwrap();
        let before = first.incoming[0].as_any_dictionary().keys().to_data();
        let after = existing[0].as_any_dictionary().keys().to_data();
        // New entries only after the old ones: the same code buffer, over the new dictionary.
        assert_eq!(before.buffers()[0].as_ptr(), after.buffers()[0].as_ptr());
        check_column(
            &existing[0],
            &second.dictionary,
            &(Arc::new(Int32Array::from(vec![3, 1, 2])) as ArrayRef),
        );
    }

    /// Fragments past the hash tables' sample: columns that look unique (the tables make
    /// room for every row at once), with and without nulls, and one that only looks unique
    /// at first.
    #[test]
    fn large_fragments() {
        let mut rng = StdRng::seed_from_u64(3);
        let rows = 20_000;
        let nulls = |rng: &mut StdRng| rng.random_bool(0.1);
        let unique_ints: ArrayRef = Arc::new(Int64Array::from_iter(
            (0..rows).map(|_| (!nulls(&mut rng)).then(|| rng.random::<i64>())),
        ));
        let cyclic_ints: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (0..rows).map(|i| (i % 5_000) * 1_000_000_007),
        ));
        let unique_strings: ArrayRef =
            Arc::new(StringArray::from_iter((0..rows).map(|_| {
                (!nulls(&mut rng)).then(|| format!("{:x}", rng.random::<u64>()))
            })));
        let few_strings: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..rows).map(|i| format!("value {}", i % 300)),
        ));
        let cyclic_strings: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..rows).map(|i| format!("{}", i % 5_000)),
        ));
        for values in [
            unique_ints,
            cyclic_ints,
            unique_strings,
            few_strings,
            cyclic_strings,
        ] {
            let (dictionary, codes) = encode_fragment(&values).unwrap();
            assert!(is_valid_dictionary(&dictionary));
            let merged = merge_column(
                None,
                &[],
                vec![FragmentColumn::Encoded {
                    dictionary: Arc::clone(&dictionary),
                    codes,
                }],
            )
            .unwrap();
            assert_eq!(merged.dictionary.as_ref(), dictionary.as_ref());
            check_column(&merged.incoming[0], &merged.dictionary, &values);
        }
    }

    /// Fragments of one client partition share a dictionary (one Arc): it is merged once,
    /// each fragment's codes are still checked, and the result equals merging the plain
    /// values.
    #[test]
    fn fragments_sharing_a_dictionary() {
        let all: ArrayRef =
            Arc::new(StringArray::from_iter((0..3000).map(|i| {
                (i % 11 != 0).then(|| format!("v{}", (i * 7919) % 997))
            })));
        let (dictionary, codes) = encode_fragment(&all).unwrap();
        let old: ArrayRef = Arc::new(StringArray::from_iter_values(["a", "v5", "zz"]));
        let existing = merge_column(None, &[], vec![FragmentColumn::Plain(old)]).unwrap();
        let pieces = [(0, 1000), (1000, 1000), (2000, 1000)];
        let shared: Vec<FragmentColumn> = pieces
            .iter()
            .map(|&(at, n)| FragmentColumn::Encoded {
                dictionary: Arc::clone(&dictionary),
                codes: codes.slice(at, n),
            })
            .chain([FragmentColumn::Plain(all.slice(0, 10))])
            .collect();
        let merged = merge_column(Some(&existing.dictionary), &existing.incoming, shared).unwrap();
        let plain: Vec<FragmentColumn> = pieces
            .iter()
            .map(|&(at, n)| FragmentColumn::Plain(all.slice(at, n)))
            .chain([FragmentColumn::Plain(all.slice(0, 10))])
            .collect();
        let expected = merge_column(Some(&existing.dictionary), &existing.incoming, plain).unwrap();
        assert_eq!(merged.dictionary.as_ref(), expected.dictionary.as_ref());
        for (k, &(at, n)) in pieces.iter().enumerate() {
            check_column(&merged.incoming[k], &merged.dictionary, &all.slice(at, n));
            assert_eq!(&merged.incoming[k], &expected.incoming[k]);
        }
        // a code out of range in a fragment that shares the dictionary is still refused
        let bad: ArrayRef = Arc::new(UInt16Array::from(vec![0u16, dictionary.len() as u16]));
        let err = merge_column(
            None,
            &[],
            vec![
                FragmentColumn::Encoded {
                    dictionary: Arc::clone(&dictionary),
                    codes: codes.slice(0, 5),
                },
                FragmentColumn::Encoded {
                    dictionary: Arc::clone(&dictionary),
                    codes: bad,
                },
            ],
        )
        .unwrap_err();
        assert!(err.to_string().contains("out of range"), "{err}");
    }

    /// A dictionary array merges as its dictionary and codes do; its dictionary is still
    /// checked, and anything else handed over as one is refused.
    #[test]
    fn dictionary_arrays_merge_as_their_parts_and_their_dictionary_is_checked() {
        let dictionary: ArrayRef = Arc::new(StringArray::from(vec!["b", "d", "f"]));
        let codes = UInt8Array::from(vec![Some(2), None, Some(0), Some(1), Some(2)]);
        let array: ArrayRef = Arc::new(
            DictionaryArray::<UInt8Type>::try_new(codes.clone(), Arc::clone(&dictionary)).unwrap(),
        );
        let extra: ArrayRef = Arc::new(StringArray::from(vec![Some("c"), Some("a")]));
        let coded = merge_column(
            None,
            &[],
            vec![
                FragmentColumn::Coded(Arc::clone(&array)),
                FragmentColumn::Plain(Arc::clone(&extra)),
            ],
        )
        .unwrap();
        let parts = merge_column(
            None,
            &[],
            vec![
                FragmentColumn::Encoded {
                    dictionary: Arc::clone(&dictionary),
                    codes: Arc::new(codes.clone()),
                },
                FragmentColumn::Plain(Arc::clone(&extra)),
            ],
        )
        .unwrap();
        assert_eq!(coded.dictionary.as_ref(), parts.dictionary.as_ref());
        assert_eq!(coded.incoming, parts.incoming);
        let values: ArrayRef = Arc::new(StringArray::from(vec![
            Some("f"),
            None,
            Some("b"),
            Some("d"),
            Some("f"),
        ]));
        check_column(&coded.incoming[0], &coded.dictionary, &values);

        let unsorted: ArrayRef = Arc::new(StringArray::from(vec!["d", "b"]));
        let bad =
            DictionaryArray::<UInt8Type>::try_new(UInt8Array::from(vec![0, 1]), unsorted).unwrap();
        let err = merge_column(None, &[], vec![FragmentColumn::Coded(Arc::new(bad))]).unwrap_err();
        assert!(err.to_string().contains("sorts before"), "{err}");
        let err =
            merge_column(None, &[], vec![FragmentColumn::Coded(Arc::clone(&extra))]).unwrap_err();
        assert!(
            err.to_string().contains("expected a dictionary array"),
            "{err}"
        );
    }

    /// Fragments over one client dictionary start a column, or extend the run of that very
    /// dictionary, as they are (the same dictionary and code arrays, nothing re-encoded);
    /// another dictionary, a plain fragment, a wider code than the dictionary needs or an
    /// unsorted dictionary go through the full merge, which gives the same values or names
    /// the problem.
    #[test]
    fn fragments_over_one_client_dictionary_are_adopted_as_they_are() {
        let dictionary: ArrayRef = Arc::new(StringArray::from(vec!["b", "d", "f"]));
        let coded = |codes: Vec<Option<u8>>, d: &ArrayRef| -> ArrayRef {
            Arc::new(
                DictionaryArray::<UInt8Type>::try_new(UInt8Array::from(codes), Arc::clone(d))
                    .unwrap(),
            )
        };
        let (a, b) = (
            coded(vec![Some(2), None, Some(0)], &dictionary),
            coded(vec![Some(1), Some(1)], &dictionary),
        );
        let first = merge_column(
            None,
            &[],
            vec![
                FragmentColumn::Coded(Arc::clone(&a)),
                FragmentColumn::Coded(Arc::clone(&b)),
            ],
        )
        .unwrap();
        assert!(Arc::ptr_eq(&first.dictionary, &dictionary));
        assert_eq!(first.existing.as_ref().map(Vec::len), Some(0));
        assert!(Arc::ptr_eq(&first.incoming[0], &a) && Arc::ptr_eq(&first.incoming[1], &b));
        // more of the same partition: the run goes on, the existing chunks untouched
        let c = coded(vec![Some(0)], &dictionary);
        let more = merge_column(
            Some(&first.dictionary),
            &first.incoming,
            vec![FragmentColumn::Coded(Arc::clone(&c))],
        )
        .unwrap();
        assert!(Arc::ptr_eq(&more.dictionary, &dictionary));
        assert!(more.existing.is_none() && Arc::ptr_eq(&more.incoming[0], &c));
        let values = |v: Vec<Option<&str>>| -> ArrayRef { Arc::new(StringArray::from(v)) };

        // an equal dictionary that is another Arc: merged (no new entry, nothing re-encoded)
        let other: ArrayRef = Arc::new(StringArray::from(vec!["b", "d", "f"]));
        let merged = merge_column(
            Some(&first.dictionary),
            &first.incoming,
            vec![FragmentColumn::Coded(coded(vec![Some(2)], &other))],
        )
        .unwrap();
        assert!(Arc::ptr_eq(&merged.dictionary, &dictionary));
        check_column(
            &merged.incoming[0],
            &merged.dictionary,
            &values(vec![Some("f")]),
        );
        // two dictionaries, or a plain fragment beside: the full merge
        let grown: ArrayRef = Arc::new(StringArray::from(vec!["a", "d"]));
        for second in [
            FragmentColumn::Coded(coded(vec![Some(0)], &grown)),
            FragmentColumn::Plain(values(vec![Some("a")])),
        ] {
            let m = merge_column(
                None,
                &[],
                vec![FragmentColumn::Coded(Arc::clone(&a)), second],
            )
            .unwrap();
            assert_eq!(m.dictionary.len(), 4);
            check_column(
                &m.incoming[0],
                &m.dictionary,
                &values(vec![Some("f"), None, Some("b")]),
            );
            check_column(&m.incoming[1], &m.dictionary, &values(vec![Some("a")]));
        }
        // codes wider than three entries need: re-encoded to the width the dictionary gives
        let wide: ArrayRef = Arc::new(
            DictionaryArray::<UInt16Type>::try_new(
                UInt16Array::from(vec![1, 0]),
                Arc::clone(&dictionary),
            )
            .unwrap(),
        );
        let narrowed = merge_column(None, &[], vec![FragmentColumn::Coded(wide)]).unwrap();
        assert_eq!(key_type(&narrowed.incoming[0]), Some(&DataType::UInt8));
        check_column(
            &narrowed.incoming[0],
            &narrowed.dictionary,
            &values(vec![Some("d"), Some("b")]),
        );
        // an unsorted dictionary is not adopted: the merge names it
        let unsorted: ArrayRef = Arc::new(StringArray::from(vec!["d", "b"]));
        let err = merge_column(
            None,
            &[],
            vec![FragmentColumn::Coded(coded(vec![Some(0)], &unsorted))],
        )
        .unwrap_err();
        assert!(err.to_string().contains("sorts before"), "{err}");
    }

    /// A dictionary grows past 256 and then past 65536 entries: codes widen to UInt16 and
    /// then UInt32, and the existing chunks are re-encoded each time.
    #[test]
    fn growing_past_code_widths() {
        let mut rng = StdRng::seed_from_u64(7);
        let first_values: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (0..200).map(|i| i * 1_000_003),
        ));
        let first = merge_column(
            None,
            &[],
            vec![FragmentColumn::Plain(Arc::clone(&first_values))],
        )
        .unwrap();
        assert_eq!(first.dictionary.len(), 200);
        assert_eq!(key_type(&first.incoming[0]), Some(&DataType::UInt8));

        let second_values: ArrayRef =
            Arc::new(Int64Array::from_iter((0..500).map(|i| {
                (i % 7 != 0).then(|| rng.random_range(-10_000i64..10_000))
            })));
        let (dictionary, codes) = encode_fragment(&second_values).unwrap();
        let second = merge_column(
            Some(&first.dictionary),
            &first.incoming,
            vec![FragmentColumn::Encoded { dictionary, codes }],
        )
        .unwrap();
        assert!(
            (257..=65_536).contains(&second.dictionary.len()),
            "{}",
            second.dictionary.len()
        );
        let chunks = [second.existing.unwrap(), second.incoming].concat();
        assert_eq!(key_type(&chunks[0]), Some(&DataType::UInt16));
        check_column(&chunks[0], &second.dictionary, &first_values);
        check_column(&chunks[1], &second.dictionary, &second_values);

        let third_values: Vec<ArrayRef> = (0..3)
            .map(|_| {
                Arc::new(Int64Array::from_iter_values(
                    (0..30_000).map(|_| rng.random::<i64>()),
                )) as ArrayRef
            })
            .collect();
        let third = merge_column(
            Some(&second.dictionary),
            &chunks,
            third_values
                .iter()
                .cloned()
                .map(FragmentColumn::Plain)
                .collect(),
        )
        .unwrap();
        assert!(third.dictionary.len() > 65_536);
        assert!(is_valid_dictionary(&third.dictionary));
        let existing = third.existing.unwrap();
        assert_eq!(key_type(&existing[1]), Some(&DataType::UInt32));
        check_column(&existing[0], &third.dictionary, &first_values);
        check_column(&existing[1], &third.dictionary, &second_values);
        for (column, values) in third.incoming.iter().zip(&third_values) {
            check_column(column, &third.dictionary, values);
        }
    }

    #[test]
    fn forged_fragments_are_rejected() {
        let base = merge_column(
            None,
            &[],
            vec![FragmentColumn::Plain(Arc::new(Int32Array::from(vec![
                1, 5, 9,
            ])))],
        )
        .unwrap();
        let good = FragmentColumn::Plain(Arc::new(Int32Array::from(vec![4, 5])));
        let forged =
            |dictionary: ArrayRef, codes: ArrayRef| FragmentColumn::Encoded { dictionary, codes };
        let int32 = |v: Vec<Option<i32>>| Arc::new(Int32Array::from(v)) as ArrayRef;
        let codes = |v: Vec<Option<u8>>| Arc::new(UInt8Array::from(v)) as ArrayRef;
        let cases = [
            (
                "sorts before",
                forged(int32(vec![Some(3), Some(1), Some(2)]), codes(vec![Some(0)])),
            ),
            (
                "duplicates",
                forged(int32(vec![Some(1), Some(1), Some(2)]), codes(vec![Some(0)])),
            ),
            (
                "out of range",
                forged(
                    int32(vec![Some(1), Some(2)]),
                    codes(vec![Some(0), None, Some(2)]),
                ),
            ),
            (
                "nulls",
                forged(int32(vec![Some(1), None]), codes(vec![Some(0)])),
            ),
            (
                "dictionary of type Int64",
                forged(Arc::new(Int64Array::from(vec![1, 2])), codes(vec![Some(0)])),
            ),
            (
                "codes of type Int32",
                forged(int32(vec![Some(1), Some(2)]), int32(vec![Some(0)])),
            ),
            (
                "values of type Utf8",
                FragmentColumn::Plain(Arc::new(StringArray::from(vec!["x"]))),
            ),
            (
                "out of range",
                forged(
                    int32(vec![Some(1)]),
                    Arc::new(UInt32Array::from(vec![0, 0, 70_000])),
                ),
            ),
            (
                "out of range",
                forged(int32(vec![]), Arc::new(UInt16Array::from(vec![0]))),
            ),
        ];
        for (what, fragment) in cases {
            let err = merge_column(
                Some(&base.dictionary),
                &base.incoming,
                vec![good.clone(), fragment],
            )
            .unwrap_err();
            match &err {
                DictionaryError::InvalidFragment {
                    fragment: 1,
                    reason,
                } => assert!(reason.contains(what), "{err}"),
                other => panic!("{what}: {other}"),
            }
        }
        // A code out of range under a null is no error: it is a NULL.
        let under_null = UInt8Array::new(
            vec![0u8, 200].into(),
            Some(NullBuffer::from(vec![true, false])),
        );
        let merged = merge_column(
            Some(&base.dictionary),
            &base.incoming,
            vec![forged(int32(vec![Some(2)]), Arc::new(under_null))],
        )
        .unwrap();
        check_column(
            &merged.incoming[0],
            &merged.dictionary,
            &int32(vec![Some(2), None]),
        );
        // Existing chunks over another dictionary.
        let other =
            merge_column(None, &[], vec![FragmentColumn::Plain(int32(vec![Some(1)]))]).unwrap();
        let err =
            merge_column(Some(&base.dictionary), &other.incoming, vec![good.clone()]).unwrap_err();
        assert!(matches!(err, DictionaryError::InvalidArgument(_)), "{err}");
        let err = merge_column(None, &base.incoming, vec![good]).unwrap_err();
        assert!(matches!(err, DictionaryError::InvalidArgument(_)), "{err}");
    }

    #[test]
    fn dictionaries_and_types() {
        assert_eq!(code_type(0), DataType::UInt8);
        assert_eq!(code_type(256), DataType::UInt8);
        assert_eq!(code_type(257), DataType::UInt16);
        assert_eq!(code_type(65_536), DataType::UInt16);
        assert_eq!(code_type(65_537), DataType::UInt32);
        assert!(is_valid_dictionary(
            &(Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef)
        ));
        assert!(!is_valid_dictionary(
            &(Arc::new(Int32Array::from(vec![2, 2])) as ArrayRef)
        ));
        assert!(!is_valid_dictionary(
            &(Arc::new(Int32Array::from(vec![Some(1), None])) as ArrayRef)
        ));
        assert!(!is_valid_dictionary(
            &(Arc::new(UInt8Array::from(vec![1])) as ArrayRef)
        ));
        // `is_supported` and the dispatch agree.
        let types = [
            DataType::Int8,
            DataType::Int16,
            DataType::Int32,
            DataType::Int64,
            DataType::UInt64,
            DataType::Float16,
            DataType::Float32,
            DataType::Float64,
            DataType::Decimal128(38, 10),
            DataType::Decimal256(40, 2),
            DataType::Date32,
            DataType::Date64,
            DataType::Timestamp(TimeUnit::Microsecond, None),
            DataType::Timestamp(TimeUnit::Nanosecond, None),
            DataType::Utf8,
            DataType::LargeUtf8,
            DataType::Boolean,
        ];
        for data_type in types {
            let values = arrow::array::new_empty_array(&data_type);
            assert_eq!(
                is_supported(&data_type),
                encode_fragment(&values).is_ok(),
                "{data_type}"
            );
        }
        let column = merge_column(
            None,
            &[],
            vec![FragmentColumn::Plain(Arc::new(Int32Array::from(vec![1])))],
        )
        .unwrap();
        assert_eq!(value_type(&column.incoming[0]), DataType::Int32);
        assert!(decode(&column.dictionary).is_err());
    }

    /// Speed of the sort step and the merge (release mode):
    /// `cargo test --release -p wireload-publish --lib dictionary::tests::speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn speed() {
        let mut rng = StdRng::seed_from_u64(1);
        let rows = 1_000_000;
        let time = |what: &str, f: &mut dyn FnMut()| {
            f();
            let start = Instant::now();
            let runs = 5;
            for _ in 0..runs {
                f();
            }
            println!(
                "{what}: {:.2} ms",
                start.elapsed().as_secs_f64() * 1e3 / runs as f64
            );
        };
        let pool: Vec<i64> = (0..2_500).map(|_| rng.random()).collect();
        let sparse: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (0..rows).map(|_| pool[rng.random_range(0..pool.len())]),
        ));
        let dense: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (0..rows).map(|_| rng.random_range(0..2_500i64)),
        ));
        let unique: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (0..rows).map(|_| rng.random::<i64>()),
        ));
        let words: Vec<String> = (0..2_500)
            .map(|i| format!("customer#{:09}", i * 7919))
            .collect();
        let strings: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..rows).map(|_| &words[rng.random_range(0..words.len())]),
        ));
        time("encode 1M Int64, 2,500 distinct (hashed)", &mut || {
            drop(encode_fragment(&sparse).unwrap())
        });
        time(
            "encode 1M Int64, 2,500 distinct in 0..2500 (direct)",
            &mut || drop(encode_fragment(&dense).unwrap()),
        );
        time(
            "encode 1M Int64, all distinct (hash + pdqsort of pairs)",
            &mut || drop(encode_fragment(&unique).unwrap()),
        );
        time("encode 1M Utf8, 2,500 distinct", &mut || {
            drop(encode_fragment(&strings).unwrap())
        });
        let first =
            merge_column(None, &[], vec![FragmentColumn::Plain(Arc::clone(&sparse))]).unwrap();
        time(
            "merge 4 x 1M Int64 fragments (2,500 distinct) into a partition",
            &mut || {
                let fragments = (0..4)
                    .map(|_| FragmentColumn::Plain(Arc::clone(&sparse)))
                    .collect();
                drop(merge_column(Some(&first.dictionary), &first.incoming, fragments).unwrap());
            },
        );
        time("merge 4 x 1M all-distinct Int64 fragments", &mut || {
            let fragments = (0..4)
                .map(|_| FragmentColumn::Plain(Arc::clone(&unique)))
                .collect();
            drop(merge_column(None, &[], fragments).unwrap());
        });
        let narrow: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (0..rows).map(|i| i * 1_000 + rng.random_range(0..1_000)),
        ));
        time(
            "encode 1M Int64, all distinct in 0..1e9 (hash + packed radix sort)",
            &mut || drop(encode_fragment(&narrow).unwrap()),
        );
        let keys: Vec<u64> = (0..rows).map(|_| rng.random()).collect();
        time("radix sort 1M random u64", &mut || {
            radix_sort(&mut keys.clone())
        });
        time("sort_unstable 1M random u64", &mut || {
            keys.clone().sort_unstable()
        });
    }
}
