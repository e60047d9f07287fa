//! One column of one piece formatted into a contiguous buffer: one `match` on the type per
//! piece and column, then a tight loop per type. Every value is followed by its separator
//! (the delimiter, or `\n` after the last column), and its end offset is recorded, so that
//! rows are assembled by copying slices.

use std::fmt;
use std::ops::Range;

use arrow::array::{Array, ArrayRef, AsArray, GenericStringArray, OffsetSizeTrait};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{
    DataType, Date32Type, Date64Type, Decimal32Type, Decimal64Type, Decimal128Type, Float32Type,
    Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow::util::display::{ArrayFormatter, FormatOptions};

use super::format;
use super::out::Out;
use super::quote::{BOM, Specials};

/// How a column's values are turned into text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Every value is NULL.
    Null,
    /// `true` / `false`.
    Bool,
    /// Signed integers of 8 to 64 bits.
    I8,
    /// See [`Kind::I8`].
    I16,
    /// See [`Kind::I8`].
    I32,
    /// See [`Kind::I8`].
    I64,
    /// Unsigned integers of 8 to 64 bits.
    U8,
    /// See [`Kind::U8`].
    U16,
    /// See [`Kind::U8`].
    U32,
    /// See [`Kind::U8`].
    U64,
    /// REAL.
    F32,
    /// DOUBLE PRECISION.
    F64,
    /// Decimal32 with its scale.
    Dec32(i8),
    /// Decimal64 with its scale.
    Dec64(i8),
    /// Decimal128 with its scale.
    Dec128(i8),
    /// Days since 1970.
    Date32,
    /// Milliseconds since 1970, written as a date.
    Date64,
    /// A timestamp without time zone.
    Timestamp(TimeUnit),
    /// Strings with 32-bit offsets.
    Utf8,
    /// Strings with 64-bit offsets.
    LargeUtf8,
    /// String views.
    Utf8View,
    /// Anything else: Arrow's display formatting.
    Display,
}

/// What is known about a column before any value is formatted.
#[derive(Debug, Clone)]
pub(crate) struct ColumnPlan {
    /// How values become text.
    pub kind: Kind,
    /// Whether the text of a non-NULL value may need quotes under the dialect (always for
    /// strings; for other types only when a special byte or the NULL string can occur).
    pub check: bool,
    /// Most bytes one value takes, separator included (strings: without their text).
    pub width: usize,
}

/// The bytes a value of each kind can be made of, `None` for any byte.
fn alphabet(kind: Kind) -> Option<&'static [u8]> {
    const SIGNED: &[u8] = b"-0123456789";
    match kind {
        Kind::Null => Some(b""),
        Kind::Bool => Some(b"truefals"),
        Kind::I8 | Kind::I16 | Kind::I32 | Kind::I64 | Kind::Date32 | Kind::Date64 => Some(SIGNED),
        Kind::U8 | Kind::U16 | Kind::U32 | Kind::U64 => Some(b"0123456789"),
        Kind::F32 | Kind::F64 => Some(b"-.0123456789eNaIfinty"),
        Kind::Dec32(_) | Kind::Dec64(_) | Kind::Dec128(_) => Some(b"-.0123456789"),
        Kind::Timestamp(_) => Some(b"-0123456789 :."),
        Kind::Utf8 | Kind::LargeUtf8 | Kind::Utf8View | Kind::Display => None,
    }
}

impl ColumnPlan {
    /// The plan for a column of `data_type`, or why it cannot be written.
    pub fn new(data_type: &DataType, sp: &Specials) -> Result<Self, String> {
        let (kind, width) = match data_type {
            DataType::Null => (Kind::Null, 1),
            DataType::Boolean => (Kind::Bool, 6),
            DataType::Int8 => (Kind::I8, 5),
            DataType::Int16 => (Kind::I16, 7),
            DataType::Int32 => (Kind::I32, 12),
            DataType::Int64 => (Kind::I64, 21),
            DataType::UInt8 => (Kind::U8, 4),
            DataType::UInt16 => (Kind::U16, 6),
            DataType::UInt32 => (Kind::U32, 11),
            DataType::UInt64 => (Kind::U64, 21),
            DataType::Float32 => (Kind::F32, 17),
            DataType::Float64 => (Kind::F64, 25),
            DataType::Decimal32(_, s) => (Kind::Dec32(*s), 14),
            DataType::Decimal64(_, s) => (Kind::Dec64(*s), 24),
            DataType::Decimal128(_, s) => (Kind::Dec128(*s), 42),
            DataType::Date32 => (Kind::Date32, 14),
            DataType::Date64 => (Kind::Date64, 14),
            DataType::Timestamp(unit, None) => (Kind::Timestamp(*unit), 33),
            DataType::Utf8 => (Kind::Utf8, 1),
            DataType::LargeUtf8 => (Kind::LargeUtf8, 1),
            DataType::Utf8View => (Kind::Utf8View, 1),
            other => {
                let empty = arrow::array::new_empty_array(other);
                ArrayFormatter::try_new(empty.as_ref(), &FormatOptions::default())
                    .map_err(|e| format!("the type {other} cannot be written as CSV: {e}"))?;
                (Kind::Display, 32)
            }
        };
        // A negative scale appends zeros.
        let width = match kind {
            Kind::Dec32(s) | Kind::Dec64(s) | Kind::Dec128(s) if s < 0 => {
                width + s.unsigned_abs() as usize
            }
            _ => width,
        };
        let check = match alphabet(kind) {
            None => true,
            Some(letters) => {
                sp.any_special(letters)
                    || (!sp.null.is_empty() && sp.null.iter().all(|b| letters.contains(b)))
            }
        };
        Ok(ColumnPlan {
            kind,
            check,
            width: width.max(sp.null.len() + 1),
        })
    }

    /// Whether the values' text lies in the array's string buffer (bytes to estimate).
    pub fn is_string(&self) -> bool {
        matches!(self.kind, Kind::Utf8 | Kind::LargeUtf8 | Kind::Utf8View)
    }
}

/// One column of one piece: the text of every value followed by its separator, and where
/// each ends.
#[derive(Debug, Default)]
pub(crate) struct ColumnText {
    /// The values' text, each followed by its separator.
    pub data: Out,
    /// End offset in `data` of each value's text and separator.
    pub ends: Vec<u32>,
    /// Room to move a value that turns out to need quotes.
    tmp: Vec<u8>,
}

impl ColumnText {
    /// Empties the buffers, keeping their memory.
    pub fn clear(&mut self) {
        self.data.clear();
        self.ends.clear();
    }
}

/// Where a column of a piece is written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cell<'a> {
    /// The dialect.
    pub sp: &'a Specials,
    /// What follows each value: the delimiter, or `\n` in the last column.
    pub sep: u8,
    /// The table has one column (an empty field would be an empty line).
    pub single: bool,
    /// Index of the value that starts the file (a leading BOM would be dropped), or
    /// `usize::MAX` when the piece does not start the file in this column.
    pub first: usize,
}

/// A value that cannot be written: its index in the array and why.
#[derive(Debug)]
pub(crate) struct CellError {
    /// Index of the value in its array.
    pub index: usize,
    /// What is wrong and what to do.
    pub message: String,
}

/// Most bytes one column of one piece may take (its ends are `u32`).
pub(crate) const MAX_COLUMN_TEXT: usize = u32::MAX as usize;

/// Formats `array[range]` into `out`, replacing what it held.
pub(crate) fn format_column(
    plan: &ColumnPlan,
    array: &ArrayRef,
    range: Range<usize>,
    cx: Cell<'_>,
    out: &mut ColumnText,
) -> Result<(), CellError> {
    out.clear();
    out.ends.reserve(range.len());
    if !plan.is_string() {
        out.data.reserve(range.len() * plan.width);
    }
    let start = range.start;
    if plan.check {
        typed::<true>(plan.kind, array, range, cx, out)?;
    } else {
        typed::<false>(plan.kind, array, range, cx, out)?;
    }
    if out.data.len() > MAX_COLUMN_TEXT {
        return Err(CellError {
            index: start,
            message: "the text of this column from this row on is larger than 4 GiB; \
                      unload in smaller batches"
                .into(),
        });
    }
    Ok(())
}

/// The one `match` on the type; `CHECK` says whether non-string values may need quotes.
#[inline(never)]
fn typed<const CHECK: bool>(
    kind: Kind,
    array: &ArrayRef,
    range: Range<usize>,
    cx: Cell<'_>,
    out: &mut ColumnText,
) -> Result<(), CellError> {
    let nulls = array.nulls();
    macro_rules! ints {
        ($t:ty, $put:ident, $wide:ty) => {{
            let values = array.as_primitive::<$t>().values();
            fixed::<CHECK, _>(cx, nulls, range, out, |i, buf| {
                buf.$put(values[i] as $wide);
                Ok(())
            })
        }};
    }
    macro_rules! decimals {
        ($t:ty, $scale:expr) => {{
            let values = array.as_primitive::<$t>().values();
            fixed::<CHECK, _>(cx, nulls, range, out, |i, buf| {
                format::push_decimal(buf, values[i] as i128, $scale);
                Ok(())
            })
        }};
    }
    match kind {
        Kind::Null => fixed::<CHECK, _>(
            cx,
            Some(&NullBuffer::new_null(array.len())),
            range,
            out,
            |_, _| Ok(()),
        ),
        Kind::Bool => {
            let values = array.as_boolean().values();
            fixed::<CHECK, _>(cx, nulls, range, out, |i, buf| {
                format::push_bool(buf, values.value(i));
                Ok(())
            })
        }
        Kind::I8 => ints!(Int8Type, put_i64, i64),
        Kind::I16 => ints!(Int16Type, put_i64, i64),
        Kind::I32 => ints!(Int32Type, put_i64, i64),
        Kind::I64 => ints!(Int64Type, put_i64, i64),
        Kind::U8 => ints!(UInt8Type, put_u64, u64),
        Kind::U16 => ints!(UInt16Type, put_u64, u64),
        Kind::U32 => ints!(UInt32Type, put_u64, u64),
        Kind::U64 => ints!(UInt64Type, put_u64, u64),
        Kind::F32 => {
            let values = array.as_primitive::<Float32Type>().values();
            let mut ryu_buf = ryu::Buffer::new();
            fixed::<CHECK, _>(cx, nulls, range, out, |i, buf| {
                format::push_f32(buf, &mut ryu_buf, values[i]);
                Ok(())
            })
        }
        Kind::F64 => {
            let values = array.as_primitive::<Float64Type>().values();
            let mut ryu_buf = ryu::Buffer::new();
            fixed::<CHECK, _>(cx, nulls, range, out, |i, buf| {
                format::push_f64(buf, &mut ryu_buf, values[i]);
                Ok(())
            })
        }
        Kind::Dec32(scale) => decimals!(Decimal32Type, scale),
        Kind::Dec64(scale) => decimals!(Decimal64Type, scale),
        Kind::Dec128(scale) => decimals!(Decimal128Type, scale),
        Kind::Date32 => {
            let values = array.as_primitive::<Date32Type>().values();
            fixed::<CHECK, _>(cx, nulls, range, out, |i, buf| {
                format::push_date(buf, values[i] as i64)
            })
        }
        Kind::Date64 => {
            let values = array.as_primitive::<Date64Type>().values();
            fixed::<CHECK, _>(cx, nulls, range, out, |i, buf| {
                format::push_date(buf, values[i].div_euclid(86_400_000))
            })
        }
        Kind::Timestamp(TimeUnit::Microsecond) => {
            let values = array.as_primitive::<TimestampMicrosecondType>().values();
            fixed::<CHECK, _>(cx, nulls, range, out, |i, buf| {
                format::push_timestamp_micros(buf, values[i])
            })
        }
        Kind::Timestamp(TimeUnit::Second) => {
            let values = array.as_primitive::<TimestampSecondType>().values();
            fixed::<CHECK, _>(cx, nulls, range, out, |i, buf| {
                let micros = values[i]
                    .checked_mul(1_000_000)
                    .ok_or_else(timestamp_range)?;
                format::push_timestamp_micros(buf, micros)
            })
        }
        Kind::Timestamp(TimeUnit::Millisecond) => {
            let values = array.as_primitive::<TimestampMillisecondType>().values();
            fixed::<CHECK, _>(cx, nulls, range, out, |i, buf| {
                let micros = values[i].checked_mul(1_000).ok_or_else(timestamp_range)?;
                format::push_timestamp_micros(buf, micros)
            })
        }
        Kind::Timestamp(TimeUnit::Nanosecond) => {
            let values = array.as_primitive::<TimestampNanosecondType>().values();
            fixed::<CHECK, _>(cx, nulls, range, out, |i, buf| {
                let v = values[i];
                format::push_timestamp(
                    buf,
                    v.div_euclid(1_000_000_000),
                    v.rem_euclid(1_000_000_000) as u32,
                    9,
                )
            })
        }
        Kind::Utf8 => strings(cx, array.as_string::<i32>(), range, out),
        Kind::LargeUtf8 => strings(cx, array.as_string::<i64>(), range, out),
        Kind::Utf8View => {
            let strings = array.as_string_view();
            let ColumnText { data, ends, .. } = out;
            for i in range {
                let first = i == cx.first;
                let result = if strings.is_null(i) {
                    cx.sp.push_null(data, cx.single, first)
                } else {
                    cx.sp
                        .push_field(data, strings.value(i).as_bytes(), cx.single, first)
                };
                result.map_err(|message| CellError { index: i, message })?;
                data.push(cx.sep);
                ends.push(data.len() as u32);
            }
            Ok(())
        }
        Kind::Display => {
            let formatter = ArrayFormatter::try_new(array.as_ref(), &FormatOptions::default())
                .map_err(|e| CellError {
                    index: range.start,
                    message: e.to_string(),
                })?;
            let logical = array.logical_nulls();
            fixed::<true, _>(cx, logical.as_ref(), range, out, |i, buf| {
                formatter
                    .value(i)
                    .write(&mut ByteWriter(buf))
                    .map_err(|e| e.to_string())
            })
        }
    }
}

#[cold]
#[inline(never)]
fn timestamp_range() -> String {
    "the timestamp is outside the range of a microsecond TIMESTAMP, which the loader reads \
     back"
        .into()
}

/// Lets Arrow's formatter append to a byte buffer.
struct ByteWriter<'a>(&'a mut Out);

impl fmt::Write for ByteWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.put(s.as_bytes());
        Ok(())
    }
}

/// The loop for values formatted by `push`; with `CHECK`, each value's text is checked and
/// quoted when it must be.
#[inline(always)]
fn fixed<const CHECK: bool, F>(
    cx: Cell<'_>,
    nulls: Option<&NullBuffer>,
    range: Range<usize>,
    out: &mut ColumnText,
    mut push: F,
) -> Result<(), CellError>
where
    F: FnMut(usize, &mut Out) -> Result<(), String>,
{
    let ColumnText { data, ends, tmp } = out;
    for i in range {
        if nulls.is_some_and(|n| n.is_null(i)) {
            cx.sp
                .push_null(data, cx.single, i == cx.first)
                .map_err(|message| CellError { index: i, message })?;
        } else {
            let start = data.len();
            push(i, data).map_err(|message| CellError { index: i, message })?;
            if CHECK
                && cx
                    .sp
                    .needs_quotes(&data.as_slice()[start..], cx.single, i == cx.first)
            {
                tmp.clear();
                tmp.extend_from_slice(&data.as_slice()[start..]);
                data.truncate(start);
                cx.sp
                    .push_quoted(data, tmp, cx.single, i == cx.first)
                    .map_err(|message| CellError { index: i, message })?;
            }
        }
        data.push(cx.sep);
        ends.push(data.len() as u32);
    }
    Ok(())
}

/// The loop for strings whose bytes are contiguous: one vectorized search for special
/// bytes runs ahead through the piece's bytes, so a value is only looked at again when a
/// special byte lies inside it.
#[inline(never)]
fn strings<O: OffsetSizeTrait>(
    cx: Cell<'_>,
    array: &GenericStringArray<O>,
    range: Range<usize>,
    out: &mut ColumnText,
) -> Result<(), CellError> {
    let offsets = array.value_offsets();
    let bytes = array.value_data();
    let nulls = array.nulls();
    let lo = offsets[range.start].as_usize();
    let hi = offsets[range.end].as_usize();
    let ColumnText { data, ends, .. } = out;
    data.reserve(hi - lo + range.len() * (cx.sp.null.len() + 1));
    // The first special byte at or after the start of the last search.
    let mut next = lo + cx.sp.find(&bytes[lo..hi]);
    for i in range {
        if nulls.is_some_and(|n| n.is_null(i)) {
            cx.sp
                .push_null(data, cx.single, i == cx.first)
                .map_err(|message| CellError { index: i, message })?;
        } else {
            let (start, end) = (offsets[i].as_usize(), offsets[i + 1].as_usize());
            if next < start {
                next = start + cx.sp.find(&bytes[start..hi]);
            }
            let value = &bytes[start..end];
            if next < end
                || cx.sp.is_null_text(value)
                || (cx.single && value.is_empty())
                || (i == cx.first && value.starts_with(BOM))
            {
                cx.sp
                    .push_quoted(data, value, cx.single, i == cx.first)
                    .map_err(|message| CellError { index: i, message })?;
            } else {
                data.put_from(bytes, start, end);
            }
        }
        data.push(cx.sep);
        ends.push(data.len() as u32);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, StringArray, StringViewArray};
    use wireload_csv::Dialect;

    use super::*;

    fn text(array: ArrayRef, dialect: &Dialect, range: Range<usize>) -> Result<String, String> {
        let sp = Specials::new(dialect);
        let plan = ColumnPlan::new(array.data_type(), &sp)?;
        let cx = Cell {
            sp: &sp,
            sep: b';',
            single: false,
            first: usize::MAX,
        };
        let mut out = ColumnText::default();
        format_column(&plan, &array, range.clone(), cx, &mut out).map_err(|e| e.message)?;
        assert_eq!(out.ends.len(), range.len());
        assert_eq!(*out.ends.last().unwrap_or(&0) as usize, out.data.len());
        Ok(String::from_utf8(out.data.as_slice().to_vec()).unwrap())
    }

    #[test]
    fn strings_quote_only_values_with_specials_in_any_piece() {
        let values = ["a", "b,c", "", "d", "e\"f", "g"];
        let d = Dialect::default();
        let contiguous: ArrayRef = Arc::new(StringArray::from(values.to_vec()));
        let views: ArrayRef = Arc::new(StringViewArray::from(values.to_vec()));
        for array in [contiguous, views] {
            assert_eq!(
                text(array.clone(), &d, 0..6).unwrap(),
                "a;\"b,c\";\"\";d;\"e\"\"f\";g;"
            );
            assert_eq!(text(array.clone(), &d, 3..5).unwrap(), "d;\"e\"\"f\";");
            assert_eq!(text(array, &d, 5..6).unwrap(), "g;");
        }
        // a special byte inside a NULL slot's bytes does not leak into the next value
        let sliced = StringArray::from(vec![Some("x,y"), None, Some("z")]);
        let (offsets, bytes, _) = sliced.into_parts();
        let with_hidden = StringArray::new(
            offsets,
            bytes,
            Some(NullBuffer::from(vec![true, false, true])),
        );
        let hidden: ArrayRef = Arc::new(with_hidden);
        assert_eq!(text(hidden, &d, 1..3).unwrap(), ";z;");
    }

    #[test]
    fn numbers_are_checked_only_when_the_dialect_needs_it() {
        let sp = Specials::new(&Dialect::default());
        assert!(!ColumnPlan::new(&DataType::Int64, &sp).unwrap().check);
        assert!(ColumnPlan::new(&DataType::Utf8, &sp).unwrap().check);
        let dash = Dialect {
            delimiter: b'-',
            ..Dialect::default()
        };
        let ints: ArrayRef = Arc::new(Int64Array::from(vec![Some(-1), None, Some(2)]));
        assert!(
            ColumnPlan::new(&DataType::Int64, &Specials::new(&dash))
                .unwrap()
                .check
        );
        assert_eq!(text(ints.clone(), &dash, 0..3).unwrap(), "\"-1\";;2;");
        let zero_null = Dialect {
            null: b"0".to_vec(),
            ..Dialect::default()
        };
        let zeros: ArrayRef = Arc::new(Int64Array::from(vec![Some(0), None, Some(10)]));
        assert_eq!(text(zeros, &zero_null, 0..3).unwrap(), "\"0\";0;10;");
        let unquoted = Dialect {
            delimiter: b'-',
            quote: None,
            escape: None,
            ..Dialect::default()
        };
        let err = text(ints, &unquoted, 0..3).unwrap_err();
        assert!(err.contains("delimiter '-'"), "{err}");
    }

    #[test]
    fn other_types_use_arrow_display() {
        use arrow::array::Time64MicrosecondArray;
        let times: ArrayRef = Arc::new(Time64MicrosecondArray::from(vec![
            Some(3_723_000_001),
            None,
        ]));
        assert_eq!(
            text(times, &Dialect::default(), 0..2).unwrap(),
            "01:02:03.000001;;"
        );
    }
}
