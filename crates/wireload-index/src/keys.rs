//! Binary-comparable, prefix-free key encoding of Arrow columns.
//!
//! The key of a row is the concatenation of the encodings of its key columns, built so that
//!
//! * comparing two keys byte by byte (`memcmp`, `<[u8]>::cmp`) orders them as SQL orders the
//!   tuples (column by column, NULLs first);
//! * no key is a proper prefix of another (the index structures rely on it);
//! * the encoding of the first `k` columns is a prefix of the full key, so the keys with given
//!   leading column values are exactly the keys starting with those values' encoding
//!   ([`KeyEncoder::prefix`]).
//!
//! | type                                   | bytes | encoding                                   |
//! |----------------------------------------|-------|--------------------------------------------|
//! | Boolean                                | 1     | 0 or 1                                     |
//! | Int8/16/32/64, Date32/64, Timestamp    | 1–8   | big-endian two's complement, sign bit flipped |
//! | UInt8/16/32/64                         | 1–8   | big-endian                                 |
//! | Decimal128(p ≤ 18, s) / (p > 18, s)    | 8 / 16| unscaled value as Int64 / as a 128-bit int |
//! | Float32/64                             | 4 / 8 | IEEE bits, all flipped when negative, else the sign bit; −0.0 as +0.0, every NaN as one NaN above +∞ |
//! | Utf8, LargeUtf8, Utf8View, Binary (also LargeBinary, BinaryView) | n + 2 + zeros | the bytes with each 0x00 as 0x00 0xFF, then 0x00 0x00 |
//!
//! A column declared nullable puts a marker byte before each value: 0x00 for NULL (nothing
//! follows for that column), 0x01 before a value. The string terminator 0x00 0x00 never occurs
//! inside an escaped string, and a shorter string's terminator sorts below any continuation
//! (0x00 0xFF or a non-zero byte), which makes strings prefix-free and order-preserving.
//!
//! Keys whose columns are all fixed-width and hold no NULL in the batch come out as
//! fixed-width [`Keys`] (one strided buffer, written a column at a time); others carry
//! offsets.

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{
    DataType, Date32Type, Date64Type, Decimal128Type, Float32Type, Float64Type, Int8Type,
    Int16Type, Int32Type, Int64Type, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};

/// Encoded keys of consecutive rows: key `i` is [`Keys::get`]`(i)`.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    /// bytes of every key, concatenated
    bytes: Vec<u8>,
    /// key width when all keys have the same length, else 0
    width: usize,
    /// start of key i (len + 1 entries) when width is 0
    offsets: Vec<u32>,
}

impl Keys {
    /// Keys of `width` bytes each, concatenated in `bytes`.
    pub fn fixed(width: usize, bytes: Vec<u8>) -> Self {
        assert!(
            width > 0 && bytes.len().is_multiple_of(width),
            "fixed-width keys: width {width} must be positive and divide {} bytes",
            bytes.len()
        );
        Keys {
            bytes,
            width,
            offsets: Vec::new(),
        }
    }

    /// Keys of varying width: key `i` is `bytes[offsets[i]..offsets[i + 1]]`.
    pub fn from_parts(bytes: Vec<u8>, offsets: Vec<u32>) -> Self {
        assert!(!offsets.is_empty(), "key offsets start with one entry");
        assert!(
            offsets.windows(2).all(|w| w[0] <= w[1]),
            "key offsets must not decrease"
        );
        assert!(
            *offsets.last().expect("non-empty") as usize <= bytes.len(),
            "key offsets point past the key bytes"
        );
        Keys {
            bytes,
            width: 0,
            offsets,
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        match self.bytes.len().checked_div(self.width) {
            Some(n) => n,
            None => self.offsets.len().saturating_sub(1),
        }
    }

    /// True when there are no keys.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Key `i`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> &[u8] {
        if self.width > 0 {
            &self.bytes[i * self.width..(i + 1) * self.width]
        } else {
            &self.bytes[self.offsets[i] as usize..self.offsets[i + 1] as usize]
        }
    }

    /// The common width of the keys when they are stored fixed-width.
    pub fn width(&self) -> Option<usize> {
        (self.width > 0).then_some(self.width)
    }

    /// The bytes of all keys, concatenated.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Every key, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Bytes of memory held.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.offsets.capacity() * 4
    }
}

/// Builds [`Keys`] one key at a time (for keys encoded elsewhere, e.g. lookup keys).
#[derive(Debug, Clone)]
pub struct KeysBuilder {
    bytes: Vec<u8>,
    offsets: Vec<u32>,
}

impl Default for KeysBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl KeysBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        KeysBuilder {
            bytes: Vec::new(),
            offsets: vec![0],
        }
    }

    /// An empty builder with room for `keys` keys of `bytes` bytes in all.
    pub fn with_capacity(keys: usize, bytes: usize) -> Self {
        let mut offsets = Vec::with_capacity(keys + 1);
        offsets.push(0);
        KeysBuilder {
            bytes: Vec::with_capacity(bytes),
            offsets,
        }
    }

    /// Appends one key.
    pub fn push(&mut self, key: &[u8]) {
        self.bytes.extend_from_slice(key);
        self.offsets.push(offset_u32(self.bytes.len()));
    }

    /// Number of keys pushed.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// True when no key was pushed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys (stored fixed-width when all have the same non-zero length).
    pub fn finish(self) -> Keys {
        let first = self.offsets.get(1).copied().unwrap_or(0) as usize;
        let same = first > 0
            && self
                .offsets
                .windows(2)
                .all(|w| (w[1] - w[0]) as usize == first);
        if same {
            Keys::fixed(first, self.bytes)
        } else {
            Keys::from_parts(self.bytes, self.offsets)
        }
    }
}

/// Converts a byte offset of a segment's keys to the stored `u32`.
#[inline]
fn offset_u32(at: usize) -> u32 {
    u32::try_from(at).unwrap_or_else(|_| {
        panic!("the encoded keys of one segment exceed 4 GiB ({at} bytes); use smaller buffers")
    })
}

/// Why a column cannot be encoded as a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// A type without a key encoding.
    #[error("a key column cannot have type {0}")]
    Unsupported(DataType),
    /// NULL in a column that may not hold NULL keys.
    #[error("NULL in key column {column} at row {row}")]
    Null {
        /// row of the NULL
        row: usize,
        /// position of the column in the key
        column: usize,
    },
    /// An array whose type does not encode like the declared column type.
    #[error("key column {column} is {declared}, the array is {found}")]
    TypeMismatch {
        /// position of the column in the key
        column: usize,
        /// the type the encoder was built for
        declared: DataType,
        /// the array's type
        found: DataType,
    },
    /// A Decimal128 value outside the range of its declared precision (p ≤ 18 keys are
    /// encoded in 64 bits).
    #[error("decimal in key column {column} at row {row} exceeds its precision")]
    OutOfRange {
        /// row of the value
        row: usize,
        /// position of the column in the key
        column: usize,
    },
}

/// Physical class of a key column: how its values are read and written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    /// Decimal128 with precision ≤ 18, written as i64
    Dec64,
    /// Decimal128 with precision > 18, written as i128
    Dec128,
    Bytes,
}

impl Kind {
    fn of(ty: &DataType) -> Option<Kind> {
        use DataType as D;
        Some(match ty {
            D::Boolean => Kind::Bool,
            D::Int8 => Kind::I8,
            D::Int16 => Kind::I16,
            D::Int32 | D::Date32 => Kind::I32,
            D::Int64 | D::Date64 | D::Timestamp(_, _) => Kind::I64,
            D::UInt8 => Kind::U8,
            D::UInt16 => Kind::U16,
            D::UInt32 => Kind::U32,
            D::UInt64 => Kind::U64,
            D::Float32 => Kind::F32,
            D::Float64 => Kind::F64,
            D::Decimal128(p, _) if *p <= 18 => Kind::Dec64,
            D::Decimal128(_, _) => Kind::Dec128,
            D::Utf8 | D::LargeUtf8 | D::Utf8View | D::Binary | D::LargeBinary | D::BinaryView => {
                Kind::Bytes
            }
            _ => return None,
        })
    }

    /// Bytes of a value (without the NULL marker), for fixed-width kinds.
    fn width(self) -> Option<usize> {
        Some(match self {
            Kind::Bool | Kind::I8 | Kind::U8 => 1,
            Kind::I16 | Kind::U16 => 2,
            Kind::I32 | Kind::U32 | Kind::F32 => 4,
            Kind::I64 | Kind::U64 | Kind::F64 | Kind::Dec64 => 8,
            Kind::Dec128 => 16,
            Kind::Bytes => return None,
        })
    }
}

/// One key column of an encoder.
#[derive(Debug, Clone)]
struct Column {
    ty: DataType,
    nullable: bool,
    kind: Kind,
}

/// Encodes the key columns of a batch into [`Keys`].
#[derive(Debug, Clone)]
pub struct KeyEncoder {
    columns: Vec<Column>,
}

impl KeyEncoder {
    /// An encoder for key columns of these types; `nullable` columns get a NULL marker byte.
    /// Panics without columns.
    pub fn new(columns: &[(DataType, bool)]) -> Result<Self, KeyError> {
        assert!(!columns.is_empty(), "a key has at least one column");
        let columns = columns
            .iter()
            .map(|(ty, nullable)| {
                Kind::of(ty)
                    .map(|kind| Column {
                        ty: ty.clone(),
                        nullable: *nullable,
                        kind,
                    })
                    .ok_or_else(|| KeyError::Unsupported(ty.clone()))
            })
            .collect::<Result<_, _>>()?;
        Ok(KeyEncoder { columns })
    }

    /// Number of key columns.
    pub fn column_count(&self) -> usize {
        self.columns.len()
    }

    /// The byte width of every key when all columns are fixed-width and not nullable.
    pub fn width(&self) -> Option<usize> {
        self.columns
            .iter()
            .map(|c| if c.nullable { None } else { c.kind.width() })
            .sum()
    }

    /// The encoder of the first `k` key columns: its keys are prefixes of this encoder's.
    pub fn prefix(&self, k: usize) -> KeyEncoder {
        assert!(
            (1..=self.columns.len()).contains(&k),
            "a key prefix of {k} of {} columns",
            self.columns.len()
        );
        KeyEncoder {
            columns: self.columns[..k].to_vec(),
        }
    }

    /// The keys of the first `n_leading` key columns of all rows (`columns` may hold just those).
    pub fn encode_prefix(&self, columns: &[ArrayRef], n_leading: usize) -> Result<Keys, KeyError> {
        self.prefix(n_leading).encode(&columns[..n_leading])
    }

    /// Appends the key of row `row` of `columns` to `out`.
    pub fn encode_row(
        &self,
        columns: &[ArrayRef],
        row: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), KeyError> {
        let one: Vec<ArrayRef> = columns.iter().map(|c| c.slice(row, 1)).collect();
        let keys = self.encode(&one).map_err(|e| match e {
            KeyError::Null { column, .. } => KeyError::Null { row, column },
            KeyError::OutOfRange { column, .. } => KeyError::OutOfRange { row, column },
            e => e,
        })?;
        out.extend_from_slice(keys.get(0));
        Ok(())
    }

    /// The keys of all rows of `columns` (one array per key column, all of one length; panics
    /// otherwise). Fails on a NULL in a column not declared nullable, an array of another
    /// type, or a decimal beyond its precision.
    pub fn encode(&self, columns: &[ArrayRef]) -> Result<Keys, KeyError> {
        // dictionary-encoded columns (a table's stored chunks): keys are made of the values
        if columns
            .iter()
            .any(|c| matches!(c.data_type(), DataType::Dictionary(_, _)))
        {
            let plain = columns
                .iter()
                .enumerate()
                .map(|(i, c)| match c.data_type() {
                    DataType::Dictionary(_, value) => {
                        arrow::compute::cast(c, value).map_err(|_| KeyError::TypeMismatch {
                            column: i,
                            declared: self.columns[i].ty.clone(),
                            found: c.data_type().clone(),
                        })
                    }
                    _ => Ok(c.clone()),
                })
                .collect::<Result<Vec<_>, _>>()?;
            return self.encode(&plain);
        }
        assert_eq!(
            columns.len(),
            self.columns.len(),
            "encoding {} arrays with an encoder of {} key columns",
            columns.len(),
            self.columns.len()
        );
        let n = columns[0].len();
        let mut has_nulls = false;
        for (c, (col, arr)) in self.columns.iter().zip(columns).enumerate() {
            assert_eq!(
                arr.len(),
                n,
                "key column {c} has {} rows, not {n}",
                arr.len()
            );
            if !compatible(col, arr.data_type()) {
                return Err(KeyError::TypeMismatch {
                    column: c,
                    declared: col.ty.clone(),
                    found: arr.data_type().clone(),
                });
            }
            if arr.null_count() > 0 {
                if !col.nullable {
                    let nulls = arr.nulls().expect("null_count > 0 has a null buffer");
                    let row = (0..n).find(|&i| nulls.is_null(i)).expect("a null row");
                    return Err(null_error(row, c));
                }
                has_nulls = true;
            }
            if col.kind == Kind::Dec64 {
                check_dec64(arr.as_primitive::<Decimal128Type>(), c)?;
            }
        }
        let fixed = !has_nulls && self.columns.iter().all(|c| c.kind.width().is_some());
        Ok(if fixed {
            self.encode_fixed(columns, n)
        } else {
            self.encode_var(columns, n)
        })
    }

    /// All columns fixed-width, no NULL in the batch: one strided buffer, a column at a time.
    fn encode_fixed(&self, columns: &[ArrayRef], n: usize) -> Keys {
        let stride: usize = self
            .columns
            .iter()
            .map(|c| c.kind.width().expect("fixed") + c.nullable as usize)
            .sum();
        let mut bytes = vec![0u8; n * stride];
        let mut off = 0;
        for (col, arr) in self.columns.iter().zip(columns) {
            if col.nullable {
                for row in bytes.chunks_exact_mut(stride) {
                    row[off] = 1;
                }
                off += 1;
            }
            let mut sink = Strided {
                out: &mut bytes,
                stride,
                off,
            };
            write_values(col.kind, arr.as_ref(), &mut sink);
            off += col.kind.width().expect("fixed");
        }
        Keys::fixed(stride, bytes)
    }

    /// Some column of variable width or holding NULLs: lengths, offsets, then a column at a
    /// time at per-row cursors.
    fn encode_var(&self, columns: &[ArrayRef], n: usize) -> Keys {
        // pass 1: the length of every key, in offsets[1..]
        let mut offsets = vec![0u32; n + 1];
        for (col, arr) in self.columns.iter().zip(columns) {
            let lens = &mut offsets[1..];
            let nulls = if col.nullable { arr.nulls() } else { None };
            let marker = col.nullable as u32;
            match col.kind.width() {
                Some(w) => {
                    let w = w as u32;
                    match nulls {
                        None => lens.iter_mut().for_each(|l| *l += marker + w),
                        Some(nb) => {
                            for (i, l) in lens.iter_mut().enumerate() {
                                *l += marker + if nb.is_valid(i) { w } else { 0 };
                            }
                        }
                    }
                }
                None => for_each_bytes(arr.as_ref(), |i, s| {
                    let l = &mut lens[i];
                    *l += marker;
                    if nulls.is_none_or(|nb| nb.is_valid(i)) {
                        let zeros = s.iter().filter(|&&b| b == 0).count();
                        *l += offset_u32(s.len() + zeros + 2);
                    }
                }),
            }
        }
        let mut total = 0usize;
        for o in offsets.iter_mut() {
            total += *o as usize;
            *o = offset_u32(total);
        }
        // pass 2: every column's encodings at per-row cursors
        let mut bytes = vec![0u8; total];
        let mut cursor = offsets[..n].to_vec();
        for (col, arr) in self.columns.iter().zip(columns) {
            let nulls = if col.nullable { arr.nulls() } else { None };
            if col.kind == Kind::Bytes {
                write_bytes(arr.as_ref(), &mut bytes, &mut cursor, col.nullable, nulls);
            } else {
                let mut sink = Cursors {
                    out: &mut bytes,
                    cursor: &mut cursor,
                    nullable: col.nullable,
                    nulls,
                };
                write_values(col.kind, arr.as_ref(), &mut sink);
            }
        }
        debug_assert!(cursor.iter().zip(&offsets[1..]).all(|(c, e)| c == e));
        Keys::from_parts(bytes, offsets)
    }
}

#[cold]
#[inline(never)]
fn null_error(row: usize, column: usize) -> KeyError {
    KeyError::Null { row, column }
}

/// True when an array of type `found` encodes like values of column `col`: the same
/// physical kind (all string and binary types alike), the same timestamp unit, decimals of
/// the same scale (any precision; a p ≤ 18 column rejects values beyond 64 bits).
fn compatible(col: &Column, found: &DataType) -> bool {
    use DataType as D;
    match (&col.ty, found) {
        // any precision: the values are read as i128 and written as the column's kind
        (D::Decimal128(_, s1), D::Decimal128(_, s2)) => return s1 == s2,
        _ if Kind::of(found) != Some(col.kind) => return false,
        _ => {}
    }
    match (&col.ty, found) {
        // the time zone does not change the stored instant
        (D::Timestamp(u1, _), D::Timestamp(u2, _)) => u1 == u2,
        (D::Timestamp(..), _) | (_, D::Timestamp(..)) => false,
        (D::Decimal128(..), _) | (_, D::Decimal128(..)) => false,
        _ => true,
    }
}

/// Fails on a valid value of a p ≤ 18 decimal column that does not fit in 64 bits.
fn check_dec64(arr: &arrow::array::Decimal128Array, column: usize) -> Result<(), KeyError> {
    let bad = |v: &i128| i64::try_from(*v).is_err();
    let row = match arr.nulls() {
        None => arr.values().iter().position(bad),
        Some(nb) => arr
            .values()
            .iter()
            .enumerate()
            .position(|(i, v)| nb.is_valid(i) && bad(v)),
    };
    match row {
        None => Ok(()),
        Some(row) => Err(KeyError::OutOfRange { row, column }),
    }
}

/// Where fixed-width value encodings go, one per row in order.
trait Sink {
    /// Writes the encodings of rows 0.. from `vals`.
    fn put<const N: usize>(&mut self, vals: impl Iterator<Item = [u8; N]>);
}

/// Fixed-width keys: value of row `i` at `out[i * stride + off..][..N]`.
struct Strided<'a> {
    out: &'a mut [u8],
    stride: usize,
    off: usize,
}

impl Sink for Strided<'_> {
    #[inline]
    fn put<const N: usize>(&mut self, vals: impl Iterator<Item = [u8; N]>) {
        if self.stride == N {
            // a one-column key: a straight run of N-byte stores
            let (rows, _) = self.out.as_chunks_mut::<N>();
            for (dst, v) in rows.iter_mut().zip(vals) {
                *dst = v;
            }
        } else {
            let off = self.off;
            for (row, v) in self.out.chunks_exact_mut(self.stride).zip(vals) {
                row[off..off + N].copy_from_slice(&v);
            }
        }
    }
}

/// Variable-width keys: value of row `i` at `cursor[i]`, which advances past it.
struct Cursors<'a> {
    out: &'a mut [u8],
    cursor: &'a mut [u32],
    nullable: bool,
    nulls: Option<&'a NullBuffer>,
}

impl Sink for Cursors<'_> {
    #[inline]
    fn put<const N: usize>(&mut self, vals: impl Iterator<Item = [u8; N]>) {
        for (i, v) in vals.enumerate() {
            let c = self.cursor[i] as usize;
            if self.nullable {
                if self.nulls.is_some_and(|nb| nb.is_null(i)) {
                    self.out[c] = 0;
                    self.cursor[i] += 1;
                    continue;
                }
                self.out[c] = 1;
                self.out[c + 1..c + 1 + N].copy_from_slice(&v);
                self.cursor[i] += 1 + N as u32;
            } else {
                self.out[c..c + N].copy_from_slice(&v);
                self.cursor[i] += N as u32;
            }
        }
    }
}

/// Sortable bits of an `f32`: −0.0 as +0.0, every NaN as the canonical NaN (above +∞).
#[inline(always)]
fn f32_key(v: f32) -> [u8; 4] {
    let bits = if v.is_nan() {
        f32::NAN.to_bits() & 0x7fff_ffff
    } else if v == 0.0 {
        0
    } else {
        v.to_bits()
    };
    let mask = (((bits as i32) >> 31) as u32) | 0x8000_0000;
    (bits ^ mask).to_be_bytes()
}

/// Sortable bits of an `f64`: −0.0 as +0.0, every NaN as the canonical NaN (above +∞).
#[inline(always)]
fn f64_key(v: f64) -> [u8; 8] {
    let bits = if v.is_nan() {
        f64::NAN.to_bits() & 0x7fff_ffff_ffff_ffff
    } else if v == 0.0 {
        0
    } else {
        v.to_bits()
    };
    let mask = (((bits as i64) >> 63) as u64) | 0x8000_0000_0000_0000;
    (bits ^ mask).to_be_bytes()
}

/// The values of a fixed-width column (NULL slots included, as whatever they hold).
fn write_values(kind: Kind, arr: &dyn Array, sink: &mut impl Sink) {
    match kind {
        Kind::Bool => sink.put(arr.as_boolean().values().iter().map(|b| [b as u8])),
        Kind::I8 => sink.put(
            arr.as_primitive::<Int8Type>()
                .values()
                .iter()
                .map(|&v| [(v as u8) ^ 0x80]),
        ),
        Kind::I16 => sink.put(
            arr.as_primitive::<Int16Type>()
                .values()
                .iter()
                .map(|&v| ((v as u16) ^ 0x8000).to_be_bytes()),
        ),
        Kind::I32 => sink.put(
            i32_values(arr)
                .iter()
                .map(|&v| ((v as u32) ^ 0x8000_0000).to_be_bytes()),
        ),
        Kind::I64 => sink.put(
            i64_values(arr)
                .iter()
                .map(|&v| ((v as u64) ^ (1 << 63)).to_be_bytes()),
        ),
        Kind::U8 => sink.put(
            arr.as_primitive::<UInt8Type>()
                .values()
                .iter()
                .map(|&v| [v]),
        ),
        Kind::U16 => sink.put(
            arr.as_primitive::<UInt16Type>()
                .values()
                .iter()
                .map(|v| v.to_be_bytes()),
        ),
        Kind::U32 => sink.put(
            arr.as_primitive::<UInt32Type>()
                .values()
                .iter()
                .map(|v| v.to_be_bytes()),
        ),
        Kind::U64 => sink.put(
            arr.as_primitive::<UInt64Type>()
                .values()
                .iter()
                .map(|v| v.to_be_bytes()),
        ),
        Kind::F32 => sink.put(
            arr.as_primitive::<Float32Type>()
                .values()
                .iter()
                .map(|&v| f32_key(v)),
        ),
        Kind::F64 => sink.put(
            arr.as_primitive::<Float64Type>()
                .values()
                .iter()
                .map(|&v| f64_key(v)),
        ),
        // range checked by `check_dec64` for valid slots; NULL slots are never written
        Kind::Dec64 => sink.put(
            arr.as_primitive::<Decimal128Type>()
                .values()
                .iter()
                .map(|&v| ((v as i64 as u64) ^ (1 << 63)).to_be_bytes()),
        ),
        Kind::Dec128 => sink.put(
            arr.as_primitive::<Decimal128Type>()
                .values()
                .iter()
                .map(|&v| ((v as u128) ^ (1 << 127)).to_be_bytes()),
        ),
        Kind::Bytes => unreachable!("byte strings are not fixed-width"),
    }
}

/// The `i32` values of an Int32 or Date32 array.
fn i32_values(arr: &dyn Array) -> &[i32] {
    match arr.data_type() {
        DataType::Date32 => arr.as_primitive::<Date32Type>().values(),
        _ => arr.as_primitive::<Int32Type>().values(),
    }
}

/// The `i64` values of an Int64, Date64 or Timestamp array.
fn i64_values(arr: &dyn Array) -> &[i64] {
    match arr.data_type() {
        DataType::Date64 => arr.as_primitive::<Date64Type>().values(),
        DataType::Timestamp(TimeUnit::Second, _) => {
            arr.as_primitive::<TimestampSecondType>().values()
        }
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            arr.as_primitive::<TimestampMillisecondType>().values()
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            arr.as_primitive::<TimestampMicrosecondType>().values()
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            arr.as_primitive::<TimestampNanosecondType>().values()
        }
        _ => arr.as_primitive::<Int64Type>().values(),
    }
}

/// Calls `f(row, bytes)` for every row of a string or binary array (NULL slots included).
fn for_each_bytes(arr: &dyn Array, mut f: impl FnMut(usize, &[u8])) {
    match arr.data_type() {
        DataType::Utf8 => {
            let a = arr.as_string::<i32>();
            (0..a.len()).for_each(|i| f(i, a.value(i).as_bytes()));
        }
        DataType::LargeUtf8 => {
            let a = arr.as_string::<i64>();
            (0..a.len()).for_each(|i| f(i, a.value(i).as_bytes()));
        }
        DataType::Utf8View => {
            let a = arr.as_string_view();
            (0..a.len()).for_each(|i| f(i, a.value(i).as_bytes()));
        }
        DataType::Binary => {
            let a = arr.as_binary::<i32>();
            (0..a.len()).for_each(|i| f(i, a.value(i)));
        }
        DataType::LargeBinary => {
            let a = arr.as_binary::<i64>();
            (0..a.len()).for_each(|i| f(i, a.value(i)));
        }
        DataType::BinaryView => {
            let a = arr.as_binary_view();
            (0..a.len()).for_each(|i| f(i, a.value(i)));
        }
        t => unreachable!("{t} is not a byte-string type"),
    }
}

/// Writes the escaped, terminated encodings of a string or binary column at the cursors.
fn write_bytes(
    arr: &dyn Array,
    out: &mut [u8],
    cursor: &mut [u32],
    nullable: bool,
    nulls: Option<&NullBuffer>,
) {
    for_each_bytes(arr, |i, s| {
        let mut c = cursor[i] as usize;
        if nullable {
            if nulls.is_some_and(|nb| nb.is_null(i)) {
                out[c] = 0;
                cursor[i] += 1;
                return;
            }
            out[c] = 1;
            c += 1;
        }
        if !s.contains(&0) {
            out[c..c + s.len()].copy_from_slice(s);
            c += s.len();
        } else {
            for &b in s {
                if b == 0 {
                    out[c] = 0;
                    out[c + 1] = 0xff;
                    c += 2;
                } else {
                    out[c] = b;
                    c += 1;
                }
            }
        }
        out[c] = 0;
        out[c + 1] = 0;
        cursor[i] = offset_u32(c + 2);
    });
}
