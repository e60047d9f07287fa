//! Order-preserving dictionaries as tables hold them, and the value order they rest on.
//!
//! A dictionary is an Arrow array of a column's values, without nulls, strictly ascending,
//! so that the order of codes is the order of values; a dictionary column is a
//! [`DictionaryArray`](arrow::array::DictionaryArray) of UInt8/16/32 codes ([`code_type`])
//! over its partition's dictionary. The value order of each supported type is one [`Kind`]
//! (fixed-width types through order-preserving integer keys, [`OrderKey`]); the write path
//! (`wireload_publish::dictionary`) builds, sorts and merges dictionaries on the same kinds,
//! and readers translate comparisons into code bounds with [`lower_bound`].

use std::cmp::Ordering;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, StringArray};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type,
    Int32Type, Int64Type, TimeUnit, TimestampMicrosecondType,
};
use arrow::error::ArrowError;

/// Errors of dictionary encoding and merging.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DictionaryError {
    /// A value type dictionaries do not support.
    #[error("dictionary encoding does not support values of type {0}")]
    Unsupported(DataType),
    /// An invalid incoming fragment (forged or broken client input).
    #[error("invalid fragment {fragment}: {reason}")]
    InvalidFragment {
        /// Position of the fragment in the merge's input.
        fragment: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// An invalid argument other than a fragment (existing chunks, a lookup value, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// More entries or rows than 32-bit codes address, or strings past 32-bit offsets.
    #[error("dictionary too large: {0}")]
    TooLarge(String),
    /// An Arrow error building an array.
    #[error(transparent)]
    Arrow(#[from] ArrowError),
}

type Result<T, E = DictionaryError> = std::result::Result<T, E>;

/// The code type of a dictionary of `entries` entries: UInt8 up to 256, UInt16 up to
/// 65536, UInt32 beyond.
pub fn code_type(entries: usize) -> DataType {
    if entries <= 1 << 8 {
        DataType::UInt8
    } else if entries <= 1 << 16 {
        DataType::UInt16
    } else {
        DataType::UInt32
    }
}

/// True when columns of `data_type` can be dictionary-encoded (Int16/32/64, Float32/64,
/// Decimal128, Date32, Timestamp in microseconds with any time zone, Utf8, Boolean).
pub fn is_supported(data_type: &DataType) -> bool {
    // The same set as `dispatch!` below (a test checks they agree).
    matches!(
        data_type,
        DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Decimal128(_, _)
            | DataType::Date32
            | DataType::Timestamp(TimeUnit::Microsecond, _)
            | DataType::Utf8
            | DataType::Boolean
    )
}

/// The value type of a column: a dictionary column's value type, else its own type.
pub fn value_type(column: &ArrayRef) -> DataType {
    match column.data_type() {
        DataType::Dictionary(_, values) => values.as_ref().clone(),
        other => other.clone(),
    }
}

/// Runs `$body` with `$kind` a type alias for the [`Kind`] of `$data_type`, or evaluates
/// `$unsupported` for a type without one: the one dispatch on the type per array, the code
/// in `$body` is then generic. The one list of the types a dictionary holds, for reads here
/// and for the write path's builds and merges.
#[macro_export]
macro_rules! dispatch_kind {
    ($data_type:expr, $kind:ident => $body:expr, $unsupported:expr) => {
        match $data_type {
            $crate::dictionary::__arrow::datatypes::DataType::Int16 => {
                type $kind =
                    $crate::dictionary::Prim<$crate::dictionary::__arrow::datatypes::Int16Type>;
                $body
            }
            $crate::dictionary::__arrow::datatypes::DataType::Int32 => {
                type $kind =
                    $crate::dictionary::Prim<$crate::dictionary::__arrow::datatypes::Int32Type>;
                $body
            }
            $crate::dictionary::__arrow::datatypes::DataType::Int64 => {
                type $kind =
                    $crate::dictionary::Prim<$crate::dictionary::__arrow::datatypes::Int64Type>;
                $body
            }
            $crate::dictionary::__arrow::datatypes::DataType::Float32 => {
                type $kind =
                    $crate::dictionary::Prim<$crate::dictionary::__arrow::datatypes::Float32Type>;
                $body
            }
            $crate::dictionary::__arrow::datatypes::DataType::Float64 => {
                type $kind =
                    $crate::dictionary::Prim<$crate::dictionary::__arrow::datatypes::Float64Type>;
                $body
            }
            $crate::dictionary::__arrow::datatypes::DataType::Decimal128(_, _) => {
                type $kind = $crate::dictionary::Prim<
                    $crate::dictionary::__arrow::datatypes::Decimal128Type,
                >;
                $body
            }
            $crate::dictionary::__arrow::datatypes::DataType::Date32 => {
                type $kind =
                    $crate::dictionary::Prim<$crate::dictionary::__arrow::datatypes::Date32Type>;
                $body
            }
            $crate::dictionary::__arrow::datatypes::DataType::Timestamp(
                $crate::dictionary::__arrow::datatypes::TimeUnit::Microsecond,
                _,
            ) => {
                type $kind = $crate::dictionary::Prim<
                    $crate::dictionary::__arrow::datatypes::TimestampMicrosecondType,
                >;
                $body
            }
            $crate::dictionary::__arrow::datatypes::DataType::Utf8 => {
                type $kind = $crate::dictionary::Utf8;
                $body
            }
            $crate::dictionary::__arrow::datatypes::DataType::Boolean => {
                type $kind = $crate::dictionary::Bool;
                $body
            }
            _ => $unsupported,
        }
    };
}

pub(crate) use crate::dispatch_kind as dispatch;
#[doc(hidden)]
pub use arrow as __arrow;

/// True when `values` is a valid dictionary (supported type, no nulls, strictly ascending in
/// value order).
pub fn is_valid_dictionary(values: &ArrayRef) -> bool {
    values.null_count() == 0
        && dispatch!(
            values.data_type(),
            K => first_unordered::<K>(values.as_ref()).is_none(),
            false
        )
}

/// Index of the first dictionary entry >= `value` (value given as a one-element array of
/// the same type), for translating comparisons to code bounds; returns (position, exact
/// match).
pub fn lower_bound(dictionary: &ArrayRef, value: &ArrayRef) -> Result<(usize, bool)> {
    if value.data_type() != dictionary.data_type() {
        return Err(DictionaryError::InvalidArgument(format!(
            "lower bound of a {} value in a {} dictionary",
            value.data_type(),
            dictionary.data_type()
        )));
    }
    if value.len() != 1 || value.null_count() != 0 {
        return Err(DictionaryError::InvalidArgument(format!(
            "lower bound of {} values ({} null): expected one non-null value",
            value.len(),
            value.null_count()
        )));
    }
    dispatch!(
        dictionary.data_type(),
        K => Ok(lower_bound_in::<K>(dictionary.as_ref(), value.as_ref())),
        Err(DictionaryError::Unsupported(dictionary.data_type().clone()))
    )
}

// ---------------------------------------------------------------------------------------
// Value kinds: one generic implementation per family of types
// ---------------------------------------------------------------------------------------

/// How a value type is compared and read; the generic code over it is instantiated once
/// per kind, so the loops over values have no dynamic dispatch.
pub trait Kind {
    /// A value as compared: an order-preserving key, a `&str`, or a `bool`.
    type Item<'a>: Copy + Ord;
    /// Random access to the values of an array of this kind.
    type View<'a>: Copy;

    /// The view of `array` (of this kind's type).
    fn view(array: &dyn Array) -> Self::View<'_>;
    /// The value at `index` of a view (whatever is under a null).
    fn get<'a>(view: Self::View<'a>, index: usize) -> Self::Item<'a>;
}

/// The values of `array` as items (for dictionaries, which have no nulls).
pub fn items<K: Kind>(array: &dyn Array) -> Vec<K::Item<'_>> {
    let view = K::view(array);
    (0..array.len()).map(|i| K::get(view, i)).collect()
}

/// The first position whose value is not above the one before it, and how it compares
/// with that one (Equal: a duplicate, Greater: out of order).
pub fn first_unordered<K: Kind>(array: &dyn Array) -> Option<(usize, Ordering)> {
    let view = K::view(array);
    (1..array.len()).find_map(|i| {
        let order = K::get(view, i - 1).cmp(&K::get(view, i));
        (order != Ordering::Less).then_some((i, order))
    })
}

/// Binary search of a sorted dictionary for the first entry >= `value[0]`.
fn lower_bound_in<K: Kind>(dictionary: &dyn Array, value: &dyn Array) -> (usize, bool) {
    let view = K::view(dictionary);
    let value = K::get(K::view(value), 0);
    let (mut low, mut high) = (0, dictionary.len());
    while low < high {
        let middle = low + (high - low) / 2;
        if K::get(view, middle) < value {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    (low, low < dictionary.len() && K::get(view, low) == value)
}

/// An unsigned integer key whose order is the value order of a fixed-width type.
pub trait Key: Copy + Ord + Default {
    /// Hash whose high bits are well mixed (the tables index with the high bits).
    fn hash(self) -> u64;
    /// `max - min` when it fits in a u64 (`min <= max`).
    fn span(min: Self, max: Self) -> Option<u64>;
    /// `self - base`, truncated to 64 bits (exact when the span fits).
    fn offset_from(self, base: Self) -> u64;
    /// `self + offset`.
    fn plus(self, offset: u64) -> Self;
}

/// Fibonacci hashing constant (2^64 / golden ratio), which the keys' hashes multiply by.
pub const FIB: u64 = 0x9E37_79B9_7F4A_7C15;

impl Key for u64 {
    #[inline]
    fn hash(self) -> u64 {
        // Folding the high half in first: keys of floats and of large integers often differ
        // only in their high bits, which a multiplication alone never carries downwards.
        (self ^ (self >> 32)).wrapping_mul(FIB)
    }
    #[inline]
    fn span(min: Self, max: Self) -> Option<u64> {
        Some(max - min)
    }
    #[inline]
    fn offset_from(self, base: Self) -> u64 {
        self.wrapping_sub(base)
    }
    #[inline]
    fn plus(self, offset: u64) -> Self {
        self.wrapping_add(offset)
    }
}

impl Key for u128 {
    #[inline]
    fn hash(self) -> u64 {
        ((self as u64) ^ ((self >> 64) as u64).wrapping_mul(FIB).rotate_left(32)).hash()
    }
    #[inline]
    fn span(min: Self, max: Self) -> Option<u64> {
        u64::try_from(max - min).ok()
    }
    #[inline]
    fn offset_from(self, base: Self) -> u64 {
        self.wrapping_sub(base) as u64
    }
    #[inline]
    fn plus(self, offset: u64) -> Self {
        self.wrapping_add(u128::from(offset))
    }
}

/// A fixed-width Arrow type with an order-preserving, bijective key: comparing keys is
/// comparing values, and `from_key(to_key(v))` is `v` bit for bit.
pub trait OrderKey: ArrowPrimitiveType {
    /// The key type (u128 for 128-bit decimals).
    type K: Key;
    /// The key of a value.
    fn to_key(value: Self::Native) -> Self::K;
    /// The value of a key.
    fn from_key(key: Self::K) -> Self::Native;
}

const SIGN64: u64 = 1 << 63;
const SIGN32: u32 = 1 << 31;

/// Signed integers: flipping the sign bit of the sign-extended value orders them unsigned.
macro_rules! integer_key {
    ($($arrow:ty => $native:ty),* $(,)?) => {$(
        impl OrderKey for $arrow {
            type K = u64;
            #[inline]
            fn to_key(value: $native) -> u64 {
                (value as i64 as u64) ^ SIGN64
            }
            #[inline]
            fn from_key(key: u64) -> $native {
                (key ^ SIGN64) as i64 as $native
            }
        }
    )*};
}

integer_key!(
    Int16Type => i16,
    Int32Type => i32,
    Int64Type => i64,
    Date32Type => i32,
    TimestampMicrosecondType => i64,
);

// Floats: the IEEE total order (`total_cmp`) as unsigned integers: a negative value has all
// its bits flipped (a larger magnitude sorts lower), a positive one only its sign bit.
impl OrderKey for Float64Type {
    type K = u64;
    #[inline]
    fn to_key(value: f64) -> u64 {
        let bits = value.to_bits();
        bits ^ (((bits as i64 >> 63) as u64) | SIGN64)
    }
    #[inline]
    fn from_key(key: u64) -> f64 {
        f64::from_bits(key ^ ((((!key) as i64 >> 63) as u64) | SIGN64))
    }
}

impl OrderKey for Float32Type {
    type K = u64;
    #[inline]
    fn to_key(value: f32) -> u64 {
        let bits = value.to_bits();
        u64::from(bits ^ (((bits as i32 >> 31) as u32) | SIGN32))
    }
    #[inline]
    fn from_key(key: u64) -> f32 {
        let key = key as u32;
        f32::from_bits(key ^ ((((!key) as i32 >> 31) as u32) | SIGN32))
    }
}

impl OrderKey for Decimal128Type {
    type K = u128;
    #[inline]
    fn to_key(value: i128) -> u128 {
        (value as u128) ^ (1 << 127)
    }
    #[inline]
    fn from_key(key: u128) -> i128 {
        (key ^ (1 << 127)) as i128
    }
}

/// The kind of a fixed-width type `T`: items are its order-preserving keys.
pub struct Prim<T>(std::marker::PhantomData<T>);

impl<T: OrderKey> Kind for Prim<T> {
    type Item<'a> = T::K;
    type View<'a> = &'a [T::Native];

    fn view(array: &dyn Array) -> &[T::Native] {
        array.as_primitive::<T>().values()
    }

    #[inline]
    fn get<'a>(view: Self::View<'a>, index: usize) -> Self::Item<'a> {
        T::to_key(view[index])
    }
}

/// The kind of Utf8: items are `&str`, whose order is the bytes' order (memcmp).
pub struct Utf8;

impl Kind for Utf8 {
    type Item<'a> = &'a str;
    type View<'a> = &'a StringArray;

    fn view(array: &dyn Array) -> &StringArray {
        array.as_string::<i32>()
    }

    #[inline]
    fn get<'a>(view: Self::View<'a>, index: usize) -> Self::Item<'a> {
        view.value(index)
    }
}

/// The kind of Boolean: false < true.
pub struct Bool;

impl Kind for Bool {
    type Item<'a> = bool;
    type View<'a> = &'a BooleanArray;

    fn view(array: &dyn Array) -> &BooleanArray {
        array.as_boolean()
    }

    #[inline]
    fn get<'a>(view: Self::View<'a>, index: usize) -> Self::Item<'a> {
        view.value(index)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int32Array, Int64Array, StringArray};

    use super::*;

    #[test]
    fn lower_bounds() {
        let dictionary: ArrayRef = Arc::new(StringArray::from(vec!["", "Z", "a", "ab", "é"]));
        let at = |s: &str| {
            lower_bound(
                &dictionary,
                &(Arc::new(StringArray::from(vec![s])) as ArrayRef),
            )
            .unwrap()
        };
        assert_eq!(at(""), (0, true));
        assert_eq!(at("A"), (1, false));
        assert_eq!(at("a"), (2, true));
        assert_eq!(at("aa"), (3, false));
        assert_eq!(at("b"), (4, false));
        assert_eq!(at("é"), (4, true));
        assert_eq!(at("\u{10FFFF}"), (5, false));

        let dictionary: ArrayRef = Arc::new(Int64Array::from(vec![-5, 0, 7]));
        let at = |v: i64| {
            lower_bound(
                &dictionary,
                &(Arc::new(Int64Array::from(vec![v])) as ArrayRef),
            )
            .unwrap()
        };
        assert_eq!(at(i64::MIN), (0, false));
        assert_eq!(at(-5), (0, true));
        assert_eq!(at(-1), (1, false));
        assert_eq!(at(7), (2, true));
        assert_eq!(at(8), (3, false));

        let empty: ArrayRef = Arc::new(Int64Array::from(Vec::<i64>::new()));
        assert_eq!(
            lower_bound(&empty, &(Arc::new(Int64Array::from(vec![1])) as ArrayRef)).unwrap(),
            (0, false)
        );
        assert!(
            lower_bound(
                &dictionary,
                &(Arc::new(Int32Array::from(vec![1])) as ArrayRef)
            )
            .is_err()
        );
        assert!(
            lower_bound(
                &dictionary,
                &(Arc::new(Int64Array::from(vec![None])) as ArrayRef)
            )
            .is_err()
        );
        assert!(
            lower_bound(
                &dictionary,
                &(Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef)
            )
            .is_err()
        );
    }
}
