//! Column builders: append validated values straight into Arrow buffers.
//!
//! Fixed-width values go into a `Vec` of the Arrow native type that becomes the array's
//! buffer without a copy; the validity bitmap is only created when the first NULL
//! arrives. Strings go into `i32` offsets plus value bytes, validated as UTF-8 once, when
//! the field is parsed. A string column must stay below `i32::MAX` bytes between two
//! calls of [`ColumnBuilder::finish`] (the loader finishes chunks long before that);
//! `finish` panics otherwise.

use std::mem::MaybeUninit;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, BooleanBufferBuilder, Date32Array, Decimal128Array,
    Float32Array, Float64Array, Int16Array, Int32Array, Int64Array, StringArray,
    TimestampMicrosecondArray,
};
use arrow::buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{
    ArrowPrimitiveType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, TimestampMicrosecondType,
};

use crate::Field;
use crate::deser;
use crate::error::{FieldError, ValueError};
use crate::format::{DateTimeFormat, Formats};
use crate::prefault::prefault;
use crate::ty::SqlType;

/// The value buffers of one column, by physical type.
#[derive(Debug)]
enum Values {
    Bool(BooleanBufferBuilder),
    I16(Vec<i16>),
    /// INTEGER and DATE
    I32(Vec<i32>),
    /// BIGINT and TIMESTAMP
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// DECIMAL
    I128(Vec<i128>),
    /// CHAR, VARCHAR, TEXT: `offsets` starts with 0 and has one more entry than values.
    Str {
        offsets: Vec<i32>,
        data: Vec<u8>,
    },
}

impl Values {
    fn new(ty: &SqlType, rows: usize, bytes: usize) -> Self {
        match ty {
            SqlType::Boolean => Values::Bool(BooleanBufferBuilder::new(rows)),
            SqlType::SmallInt => Values::I16(Vec::with_capacity(rows)),
            SqlType::Integer | SqlType::Date => Values::I32(Vec::with_capacity(rows)),
            SqlType::BigInt | SqlType::Timestamp => Values::I64(Vec::with_capacity(rows)),
            SqlType::Real => Values::F32(Vec::with_capacity(rows)),
            SqlType::Double => Values::F64(Vec::with_capacity(rows)),
            SqlType::Decimal { .. } => Values::I128(Vec::with_capacity(rows)),
            SqlType::Char(_) | SqlType::Varchar(_) | SqlType::Text => {
                let mut offsets = Vec::with_capacity(rows + 1);
                offsets.push(0);
                Values::Str {
                    offsets,
                    data: Vec::with_capacity(bytes),
                }
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Values::Bool(b) => b.len(),
            Values::I16(v) => v.len(),
            Values::I32(v) => v.len(),
            Values::I64(v) => v.len(),
            Values::F32(v) => v.len(),
            Values::F64(v) => v.len(),
            Values::I128(v) => v.len(),
            Values::Str { offsets, .. } => offsets.len() - 1,
        }
    }
}

/// The validity bitmap, created at the first NULL.
#[derive(Debug)]
struct Validity {
    bits: Option<BooleanBufferBuilder>,
    rows_hint: usize,
}

impl Validity {
    /// Records a valid value.
    #[inline(always)]
    fn valid(&mut self) {
        if let Some(bits) = &mut self.bits {
            bits.append(true);
        }
    }

    /// Records `count` valid values.
    #[inline(always)]
    fn extend_valid(&mut self, count: usize) {
        if let Some(bits) = &mut self.bits {
            bits.append_n(count, true);
        }
    }

    /// The bitmap, created with `len` valid values when absent.
    #[cold]
    fn bits(&mut self, len: usize) -> &mut BooleanBufferBuilder {
        let rows_hint = self.rows_hint;
        self.bits.get_or_insert_with(|| {
            let mut bits = BooleanBufferBuilder::new(rows_hint.max(len + 1));
            bits.append_n(len, true);
            bits
        })
    }

    /// Records a NULL after `len` values.
    #[cold]
    fn null(&mut self, len: usize) {
        self.bits(len).append(false);
    }

    /// Records `count` values after `len` values, with the given NULLs.
    fn extend(&mut self, len: usize, nulls: Option<&NullBuffer>, count: usize) {
        match nulls.filter(|n| n.null_count() > 0) {
            Some(nulls) => self.bits(len).append_buffer(nulls.inner()),
            None => {
                if let Some(bits) = &mut self.bits {
                    bits.append_n(count, true);
                }
            }
        }
    }

    /// The finished NULL buffer, if any NULL was recorded; resets.
    fn finish(&mut self) -> Option<NullBuffer> {
        self.bits
            .take()
            .map(|mut bits| NullBuffer::new(bits.finish()))
    }
}

/// Builds one Arrow array of one SQL type from fields of text.
#[derive(Debug)]
pub struct ColumnBuilder {
    ty: SqlType,
    nullable: bool,
    rows_hint: usize,
    bytes_hint: usize,
    values: Values,
    validity: Validity,
    /// How a DATE or TIMESTAMP column's values are written, when not ISO only.
    format: Option<DateTimeFormat>,
}

/// Whether `field` is SQL NULL under PostgreSQL COPY's rule.
#[inline(always)]
fn is_null(field: &Field<'_>, null: &[u8]) -> bool {
    !field.quoted && field.bytes == null
}

/// How a typed loop turns a field's text into the value it stores.
trait Parse<T> {
    /// The value where the fast path reads the field; `None` leaves it to [`full`].
    ///
    /// [`full`]: Parse::full
    fn quick(&mut self, bytes: &[u8]) -> Option<T>;
    /// The value, or why the field is invalid.
    fn full(&mut self, bytes: &[u8]) -> Result<T, ValueError>;
    /// The value stored for a NULL.
    fn null(&mut self) -> T;
}

/// A fixed-width type's parsers: its fast path (`Q`) and its full parser (`P`).
struct Fixed<Q, P>(Q, P);

impl<T: Default, Q, P> Parse<T> for Fixed<Q, P>
where
    Q: Fn(&[u8]) -> Option<T>,
    P: Fn(&[u8]) -> Result<T, ValueError>,
{
    #[inline(always)]
    fn quick(&mut self, bytes: &[u8]) -> Option<T> {
        (self.0)(bytes)
    }

    #[inline(always)]
    fn full(&mut self, bytes: &[u8]) -> Result<T, ValueError> {
        (self.1)(bytes)
    }

    #[inline(always)]
    fn null(&mut self) -> T {
        T::default()
    }
}

/// A string type's parser (`P` validates and gives the text to store), appending the text
/// to `data`: the value is the end offset that follows it.
struct Strings<'d, P> {
    data: &'d mut Vec<u8>,
    parse: P,
}

impl<P> Strings<'_, P> {
    /// Appends `text`; the offset after it.
    #[inline(always)]
    fn push(&mut self, text: &str) -> i32 {
        append_bytes(self.data, text.as_bytes());
        debug_assert!(
            self.data.len() <= i32::MAX as usize,
            "string column over 2 GiB"
        );
        self.data.len() as i32
    }
}

impl<P> Parse<i32> for Strings<'_, P>
where
    P: for<'b> Fn(&'b [u8]) -> Result<&'b str, ValueError>,
{
    #[inline(always)]
    fn quick(&mut self, bytes: &[u8]) -> Option<i32> {
        let text = (self.parse)(bytes).ok()?;
        Some(self.push(text))
    }

    #[inline(always)]
    fn full(&mut self, bytes: &[u8]) -> Result<i32, ValueError> {
        let text = (self.parse)(bytes)?;
        Ok(self.push(text))
    }

    #[inline(always)]
    fn null(&mut self) -> i32 {
        self.data.len() as i32
    }
}

/// [`Parse::full`], out of line: for the fields the quick path leaves.
#[cold]
#[inline(never)]
fn parse_cold<T, P: Parse<T>>(parse: &mut P, bytes: &[u8]) -> Result<T, ValueError> {
    parse.full(bytes)
}

/// Why [`append_run`] stopped before its fields ran out.
enum Stop {
    /// The spare capacity is full.
    Full,
    /// The last field read is NULL.
    Null,
    /// The last field read is invalid.
    Invalid(ValueError),
}

/// Writes the values of `fields` into `spare` until a NULL, an invalid field, or the end
/// of either: how many it wrote, why it stopped (`None`: the fields ran out), and the
/// fields left. The loop keeps its state in registers: the iterator by value, no length
/// in memory, no bitmap, no `Result` per value; the quick parser is inlined, the full one
/// (out of line) takes the fields it leaves.
#[inline(always)]
fn append_run<'a, T, I, P>(
    spare: &mut [MaybeUninit<T>],
    mut fields: I,
    null: &[u8],
    parse: &mut P,
) -> (usize, Option<Stop>, I)
where
    I: Iterator<Item = Field<'a>>,
    P: Parse<T>,
{
    let room = spare.len();
    for (written, slot) in spare.iter_mut().enumerate() {
        let Some(field) = fields.next() else {
            return (written, None, fields);
        };
        if is_null(&field, null) {
            return (written, Some(Stop::Null), fields);
        }
        let value = match parse.quick(field.bytes) {
            Some(value) => value,
            None => match parse_cold(parse, field.bytes) {
                Ok(value) => value,
                Err(error) => return (written, Some(Stop::Invalid(error)), fields),
            },
        };
        slot.write(value);
    }
    (room, Some(Stop::Full), fields)
}

/// The typed loop: one call per column and batch. Runs of values between NULLs go through
/// [`append_run`], into the capacity reserved for the fields the iterator promises; a
/// NULL, and a field beyond that capacity, are appended apart. `values` holds `lead`
/// entries before its first value (a string column's leading offset).
#[inline(always)]
fn append_values<'a, T, I, P>(
    values: &mut Vec<T>,
    lead: usize,
    validity: &mut Validity,
    nullable: bool,
    mut fields: I,
    null: &[u8],
    mut parse: P,
) -> Result<(), FieldError>
where
    I: Iterator<Item = Field<'a>>,
    P: Parse<T>,
{
    let first = values.len();
    loop {
        let promised = fields.size_hint().0;
        values.reserve(promised);
        let len = values.len();
        let spare = values.spare_capacity_mut();
        prefault(spare, promised);
        let (written, stop, rest) = append_run(spare, fields, null, &mut parse);
        fields = rest;
        // SAFETY: `append_run` initialized the first `written` slots of the spare
        // capacity, which follow the `len` initialized values.
        unsafe { values.set_len(len + written) };
        validity.extend_valid(written);
        let index = values.len() - first;
        let null_next = match stop {
            None => return Ok(()),
            Some(Stop::Invalid(error)) => return Err(FieldError { index, error }),
            Some(Stop::Null) => true,
            Some(Stop::Full) => match fields.next() {
                None => return Ok(()),
                Some(field) if is_null(&field, null) => true,
                Some(field) => {
                    let value = parse_cold(&mut parse, field.bytes)
                        .map_err(|error| FieldError { index, error })?;
                    values.push(value);
                    validity.valid();
                    false
                }
            },
        };
        if null_next {
            if !nullable {
                return Err(FieldError {
                    index,
                    error: ValueError::NotNull,
                });
            }
            validity.null(values.len() - lead);
            values.push(parse.null());
        }
    }
}

/// Defines an out-of-line typed loop: one per kind of value, so that profiles (which see
/// only functions) tell integers, decimals, floats, dates and timestamps apart. Each is
/// called once per column and batch; the quick parser is still inlined into its loop.
macro_rules! typed_loop {
    ($(#[$doc:meta] $name:ident;)*) => {$(
        #[$doc]
        #[inline(never)]
        fn $name<'a, T: Default, I, Q, P>(
            values: &mut Vec<T>,
            validity: &mut Validity,
            nullable: bool,
            fields: I,
            null: &[u8],
            quick: Q,
            parse: P,
        ) -> Result<(), FieldError>
        where
            I: Iterator<Item = Field<'a>>,
            Q: Fn(&[u8]) -> Option<T>,
            P: Fn(&[u8]) -> Result<T, ValueError>,
        {
            append_values(values, 0, validity, nullable, fields, null, Fixed(quick, parse))
        }
    )*};
}

typed_loop! {
    /// The loop for SMALLINT, INTEGER and BIGINT.
    append_integers;
    /// The loop for DECIMAL.
    append_decimals;
    /// The loop for REAL and DOUBLE PRECISION.
    append_floats;
    /// The loop for DATE.
    append_dates;
    /// The loop for TIMESTAMP.
    append_timestamps;
}

/// The typed loop for BOOLEAN.
fn append_bools<'a, I: Iterator<Item = Field<'a>>>(
    values: &mut BooleanBufferBuilder,
    validity: &mut Validity,
    nullable: bool,
    fields: I,
    null: &[u8],
) -> Result<(), FieldError> {
    for (index, field) in fields.enumerate() {
        if is_null(&field, null) {
            if !nullable {
                return Err(FieldError {
                    index,
                    error: ValueError::NotNull,
                });
            }
            validity.null(values.len());
            values.append(false);
        } else {
            match deser::parse_bool(field.bytes) {
                Ok(value) => {
                    values.append(value);
                    validity.valid();
                }
                Err(error) => return Err(FieldError { index, error }),
            }
        }
    }
    Ok(())
}

/// Appends `src` to `dst`. Strings of up to 64 bytes (most CSV text fields) are copied with
/// two overlapping fixed-size moves instead of a call to `memcpy`.
#[inline(always)]
pub(crate) fn append_bytes(dst: &mut Vec<u8>, src: &[u8]) {
    let n = src.len();
    if n == 0 || n > 64 || dst.capacity() - dst.len() < n {
        dst.extend_from_slice(src);
        return;
    }
    let len = dst.len();
    let spare = &mut dst.spare_capacity_mut()[..n];
    match n {
        1..=3 => {
            spare[0].write(src[0]);
            spare[n / 2].write(src[n / 2]);
            spare[n - 1].write(src[n - 1]);
        }
        4..=7 => copy_ends::<4>(spare, src),
        8..=15 => copy_ends::<8>(spare, src),
        16..=31 => copy_ends::<16>(spare, src),
        _ => copy_ends::<32>(spare, src),
    }
    // SAFETY: the copies above cover all `n` bytes after `len` (1 to 3 bytes: first,
    // middle and last; else two overlapping copies of `W` bytes with `W <= n <= 2W`),
    // which lie within the capacity (checked above): the first `len + n` bytes are
    // initialized.
    unsafe { dst.set_len(len + n) };
}

/// Copies the first and the last `W` bytes of `src` (`W <= src.len() <= 2 * W`) to the
/// same places of `dst` (as long as `src`).
#[inline(always)]
fn copy_ends<const W: usize>(dst: &mut [std::mem::MaybeUninit<u8>], src: &[u8]) {
    let n = src.len();
    dst[..W].write_copy_of_slice(&src[..W]);
    dst[n - W..].write_copy_of_slice(&src[n - W..]);
}

/// The typed loop for strings; `parse` validates and returns the text to store. Out of
/// line, as the loops of [`typed_loop`].
#[inline(never)]
fn append_strings<'a, I, P>(
    offsets: &mut Vec<i32>,
    data: &mut Vec<u8>,
    validity: &mut Validity,
    nullable: bool,
    fields: I,
    null: &[u8],
    parse: P,
) -> Result<(), FieldError>
where
    I: Iterator<Item = Field<'a>>,
    P: for<'b> Fn(&'b [u8]) -> Result<&'b str, ValueError>,
{
    // The pages of the batch's text at the column's mean length so far (none before the
    // first values); the offsets' are mapped by the loop.
    let mean = data.len() / offsets.len();
    prefault(data.spare_capacity_mut(), fields.size_hint().0 * mean);
    let strings = Strings { data, parse };
    append_values(offsets, 1, validity, nullable, fields, null, strings)
}

impl ColumnBuilder {
    /// A builder for `ty`; `rows_hint` and `bytes_hint` (string bytes) size its buffers.
    pub fn new(ty: &SqlType, nullable: bool, rows_hint: usize, bytes_hint: usize) -> Self {
        ColumnBuilder {
            ty: *ty,
            nullable,
            rows_hint,
            bytes_hint,
            values: Values::new(ty, rows_hint, bytes_hint),
            validity: Validity {
                bits: None,
                rows_hint,
            },
            format: None,
        }
    }

    /// The builder reading its DATE or TIMESTAMP values by the format of `formats` for its
    /// type (other types ignore them).
    pub fn with_formats(mut self, formats: &Formats) -> Self {
        self.format = match self.ty {
            SqlType::Date => formats.date,
            SqlType::Timestamp => formats.timestamp,
            _ => None,
        };
        self
    }

    /// The SQL type this builder builds.
    pub fn sql_type(&self) -> &SqlType {
        &self.ty
    }

    /// Whether the column accepts NULL.
    pub fn nullable(&self) -> bool {
        self.nullable
    }

    /// Appends every field; an unquoted field equal to `null` is NULL. Stops at the first
    /// invalid field and reports its index in the sequence.
    ///
    /// A quoted field is never NULL: a quoted empty string is the empty string for the
    /// string types and a syntax error for the others. The fields before the invalid one
    /// stay appended.
    pub fn append_fields<'a, I: Iterator<Item = Field<'a>>>(
        &mut self,
        fields: I,
        null: &[u8],
    ) -> Result<(), FieldError> {
        self.append::<true, I>(fields, null)
    }

    /// [`append_fields`](Self::append_fields) for fields already known to be valid UTF-8
    /// (the loader validates a whole batch of input at once): string fields skip their
    /// own UTF-8 check.
    ///
    /// # Safety
    /// Every field's bytes must be valid UTF-8; string arrays are built without a check.
    pub unsafe fn append_fields_valid_utf8<'a, I: Iterator<Item = Field<'a>>>(
        &mut self,
        fields: I,
        null: &[u8],
    ) -> Result<(), FieldError> {
        self.append::<false, I>(fields, null)
    }

    /// The typed loops; `CHECK` says whether string fields are validated as UTF-8 here.
    /// The parsers are passed as closures, not as function items: LLVM inlines a closure
    /// into the loop, while a function item went through an out-of-line `Fn::call` (6%
    /// more instructions on lineitem).
    #[allow(clippy::redundant_closure)]
    #[inline(always)]
    fn append<'a, const CHECK: bool, I: Iterator<Item = Field<'a>>>(
        &mut self,
        fields: I,
        null: &[u8],
    ) -> Result<(), FieldError> {
        let nullable = self.nullable;
        let format = self.format;
        let validity = &mut self.validity;
        match (&mut self.values, self.ty) {
            (Values::Bool(values), _) => append_bools(values, validity, nullable, fields, null),
            (Values::I16(values), _) => append_integers(
                values,
                validity,
                nullable,
                fields,
                null,
                |b| deser::quick_i16(b),
                deser::parse_i16,
            ),
            (Values::I32(values), SqlType::Date) => match format {
                Some(f) => append_dates(
                    values,
                    validity,
                    nullable,
                    fields,
                    null,
                    |b| f.parse_date(b).ok(),
                    |b| f.parse_date(b),
                ),
                None => append_dates(
                    values,
                    validity,
                    nullable,
                    fields,
                    null,
                    |b| deser::quick_date(b),
                    deser::parse_date,
                ),
            },
            (Values::I32(values), _) => append_integers(
                values,
                validity,
                nullable,
                fields,
                null,
                |b| deser::quick_i32(b),
                deser::parse_i32,
            ),
            (Values::I64(values), SqlType::Timestamp) => match format {
                Some(f) => append_timestamps(
                    values,
                    validity,
                    nullable,
                    fields,
                    null,
                    |b| f.parse_timestamp(b).ok(),
                    |b| f.parse_timestamp(b),
                ),
                None => append_timestamps(
                    values,
                    validity,
                    nullable,
                    fields,
                    null,
                    |b| deser::quick_timestamp(b),
                    deser::parse_timestamp,
                ),
            },
            (Values::I64(values), _) => append_integers(
                values,
                validity,
                nullable,
                fields,
                null,
                |b| deser::quick_i64(b),
                deser::parse_i64,
            ),
            (Values::F32(values), _) => append_floats(
                values,
                validity,
                nullable,
                fields,
                null,
                |b| deser::quick_f32(b),
                deser::parse_f32,
            ),
            (Values::F64(values), _) => append_floats(
                values,
                validity,
                nullable,
                fields,
                null,
                |b| deser::quick_f64(b),
                deser::parse_f64,
            ),
            (Values::I128(values), SqlType::Decimal { precision, scale }) => {
                let quick = deser::QuickDecimal::new(precision, scale);
                append_decimals(
                    values,
                    validity,
                    nullable,
                    fields,
                    null,
                    move |b| quick.parse(b),
                    move |b| deser::parse_decimal(b, precision, scale),
                )
            }
            (Values::Str { offsets, data }, SqlType::Char(n)) => {
                append_strings(offsets, data, validity, nullable, fields, null, |b| {
                    deser::bounded::<CHECK>(b, n, deser::CHAR_NAME)
                })
            }
            (Values::Str { offsets, data }, SqlType::Varchar(Some(n))) => {
                append_strings(offsets, data, validity, nullable, fields, null, |b| {
                    deser::bounded::<CHECK>(b, n, deser::VARCHAR_NAME)
                })
            }
            (Values::Str { offsets, data }, _) => append_strings(
                offsets,
                data,
                validity,
                nullable,
                fields,
                null,
                deser::text::<CHECK>,
            ),
            (Values::I128(_), _) => unreachable!("DECIMAL buffers belong to a DECIMAL type"),
        }
    }

    /// Appends one SQL NULL (an error for a NOT NULL column).
    pub fn append_null(&mut self) -> Result<(), ValueError> {
        if !self.nullable {
            return Err(ValueError::NotNull);
        }
        let len = self.values.len();
        self.validity.null(len);
        match &mut self.values {
            Values::Bool(b) => b.append(false),
            Values::I16(v) => v.push(0),
            Values::I32(v) => v.push(0),
            Values::I64(v) => v.push(0),
            Values::F32(v) => v.push(0.0),
            Values::F64(v) => v.push(0.0),
            Values::I128(v) => v.push(0),
            Values::Str { offsets, data } => offsets.push(data.len() as i32),
        }
        Ok(())
    }

    /// Appends the values of an array built by a builder of the same type, one by one.
    ///
    /// Panics if the array's data type differs from this builder's, or if it holds NULLs
    /// and this column is NOT NULL.
    pub fn append_array(&mut self, array: &ArrayRef) {
        assert_eq!(
            array.data_type(),
            &self.ty.arrow_type(),
            "append_array: array type differs from the builder's type {}",
            self.ty
        );
        assert!(
            self.nullable || array.null_count() == 0,
            "append_array: NULLs into a NOT NULL column"
        );
        let len = self.values.len();
        self.validity.extend(len, array.nulls(), array.len());
        match &mut self.values {
            Values::Bool(values) => values.append_buffer(array.as_boolean().values()),
            Values::I16(values) => extend_primitive::<Int16Type>(values, array),
            Values::I32(values) => match self.ty {
                SqlType::Date => extend_primitive::<Date32Type>(values, array),
                _ => extend_primitive::<Int32Type>(values, array),
            },
            Values::I64(values) => match self.ty {
                SqlType::Timestamp => extend_primitive::<TimestampMicrosecondType>(values, array),
                _ => extend_primitive::<Int64Type>(values, array),
            },
            Values::F32(values) => extend_primitive::<Float32Type>(values, array),
            Values::F64(values) => extend_primitive::<Float64Type>(values, array),
            Values::I128(values) => extend_primitive::<Decimal128Type>(values, array),
            Values::Str { offsets, data } => {
                let strings = array.as_string::<i32>();
                let source = strings.value_offsets();
                let first = source[0] as usize;
                let last = source[source.len() - 1] as usize;
                let shift = data.len() as i64 - first as i64;
                data.extend_from_slice(&strings.values()[first..last]);
                debug_assert!(data.len() <= i32::MAX as usize, "string column over 2 GiB");
                offsets.extend(source[1..].iter().map(|&o| (o as i64 + shift) as i32));
            }
        }
    }

    /// Number of values appended since the last finish.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True when no value was appended since the last finish.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of string data appended since the last finish (0 for fixed-width types).
    pub fn value_bytes(&self) -> usize {
        match &self.values {
            Values::Str { data, .. } => data.len(),
            _ => 0,
        }
    }

    /// Returns the array built so far and resets the builder.
    pub fn finish(&mut self) -> ArrayRef {
        let fresh = Values::new(&self.ty, self.rows_hint, self.bytes_hint);
        let values = std::mem::replace(&mut self.values, fresh);
        let nulls = self.validity.finish();
        debug_assert!(nulls.as_ref().is_none_or(|n| n.len() == values.len()));
        match values {
            Values::Bool(mut bits) => Arc::new(BooleanArray::new(bits.finish(), nulls)),
            Values::I16(v) => Arc::new(Int16Array::new(ScalarBuffer::from(v), nulls)),
            Values::I32(v) => match self.ty {
                SqlType::Date => Arc::new(Date32Array::new(ScalarBuffer::from(v), nulls)),
                _ => Arc::new(Int32Array::new(ScalarBuffer::from(v), nulls)),
            },
            Values::I64(v) => match self.ty {
                SqlType::Timestamp => {
                    Arc::new(TimestampMicrosecondArray::new(ScalarBuffer::from(v), nulls))
                }
                _ => Arc::new(Int64Array::new(ScalarBuffer::from(v), nulls)),
            },
            Values::F32(v) => Arc::new(Float32Array::new(ScalarBuffer::from(v), nulls)),
            Values::F64(v) => Arc::new(Float64Array::new(ScalarBuffer::from(v), nulls)),
            Values::I128(v) => {
                let SqlType::Decimal { precision, scale } = self.ty else {
                    unreachable!("DECIMAL buffers belong to a DECIMAL type")
                };
                let array = Decimal128Array::new(ScalarBuffer::from(v), nulls)
                    .with_precision_and_scale(precision, scale as i8)
                    .expect("SqlType::Decimal has a valid precision and scale");
                Arc::new(array)
            }
            Values::Str { offsets, data } => {
                // A longer column would have wrapped its i32 offsets.
                assert!(
                    data.len() <= i32::MAX as usize,
                    "string column of {} bytes exceeds i32::MAX; finish chunks earlier",
                    data.len()
                );
                // SAFETY: `offsets` starts with 0 and each later entry is `data.len()` after
                // an append; `data` only grows, and its final length fits in i32 (checked
                // above), so no entry wrapped: the offsets are non-decreasing and end at
                // `data.len()`.
                let offsets = unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)) };
                // SAFETY: the offsets are valid for `data` (above). Each value is either a
                // `&str` returned by a deserializer (UTF-8 validated there) or a value copied
                // from a StringArray, so every value is valid UTF-8. `nulls`, when present,
                // has one bit per value.
                let array =
                    unsafe { StringArray::new_unchecked(offsets, Buffer::from_vec(data), nulls) };
                Arc::new(array)
            }
        }
    }
}

/// Appends the values of a primitive `array` of type `T`.
fn extend_primitive<T: ArrowPrimitiveType>(values: &mut Vec<T::Native>, array: &ArrayRef) {
    values.extend_from_slice(array.as_primitive::<T>().values());
}

#[cfg(test)]
impl ColumnBuilder {
    /// Room for values and for string bytes without reallocating.
    pub(crate) fn capacities(&self) -> (usize, usize) {
        match &self.values {
            Values::Bool(b) => (b.capacity(), 0),
            Values::I16(v) => (v.capacity(), 0),
            Values::I32(v) => (v.capacity(), 0),
            Values::I64(v) => (v.capacity(), 0),
            Values::F32(v) => (v.capacity(), 0),
            Values::F64(v) => (v.capacity(), 0),
            Values::I128(v) => (v.capacity(), 0),
            Values::Str { offsets, data } => (offsets.capacity() - 1, data.capacity()),
        }
    }
}

#[cfg(test)]
mod append_bytes_tests {
    use super::append_bytes;

    #[test]
    fn append_bytes_matches_extend_from_slice_at_every_length_and_capacity() {
        let src: Vec<u8> = (0..80u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(1))
            .collect();
        for n in 0..=src.len() {
            for prefix in [0usize, 1, 7, 15, 31] {
                for spare in [0usize, n.saturating_sub(1), n, n + 1, 64] {
                    let mut dst: Vec<u8> = Vec::with_capacity(prefix + spare);
                    dst.extend((0..prefix).map(|i| i as u8 ^ 0xAA));
                    let mut want = dst.clone();
                    want.extend_from_slice(&src[..n]);
                    append_bytes(&mut dst, &src[..n]);
                    assert_eq!(dst, want, "n {n} prefix {prefix} spare {spare}");
                }
            }
        }
    }
}
