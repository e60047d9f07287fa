//! Arrow types as PostgreSQL types: the type OID and modifier a column is described with,
//! and its values in the text and binary formats of the wire protocol, written straight
//! from the Arrow arrays into `DataRow` buffers (one match per value, no row objects).

use std::fmt::Write as _;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BooleanArray, Date32Array, Decimal128Array,
    Float32Array, Float64Array, Int8Array, Int16Array, Int32Array, Int64Array, LargeBinaryArray,
    LargeStringArray, StringArray, StringViewArray, TimestampMicrosecondArray,
    TimestampMillisecondArray, TimestampNanosecondArray, TimestampSecondArray, UInt8Array,
    UInt16Array, UInt32Array, UInt64Array,
};
use arrow::datatypes::{DataType, Field, TimeUnit};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use bytes::{BufMut, BytesMut};
use pgwire::api::Type;
use pgwire::api::results::{FieldFormat, FieldInfo};

/// Days from 1970-01-01 (Arrow's epoch) to 2000-01-01 (PostgreSQL's).
const PG_EPOCH_DAYS: i64 = 10_957;
/// Microseconds between the two epochs.
const PG_EPOCH_MICROS: i64 = PG_EPOCH_DAYS * 86_400_000_000;

/// The PostgreSQL type of an Arrow type (TEXT for what has no better match; the values are
/// then written as Arrow displays them).
pub fn pg_type(ty: &DataType) -> Type {
    match ty {
        DataType::Boolean => Type::BOOL,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => Type::INT2,
        DataType::Int32 | DataType::UInt16 => Type::INT4,
        DataType::Int64 | DataType::UInt32 => Type::INT8,
        DataType::UInt64 | DataType::Decimal32(..) | DataType::Decimal64(..) => Type::NUMERIC,
        DataType::Decimal128(..) | DataType::Decimal256(..) => Type::NUMERIC,
        DataType::Float16 | DataType::Float32 => Type::FLOAT4,
        DataType::Float64 => Type::FLOAT8,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Type::TEXT,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => Type::BYTEA,
        DataType::Date32 | DataType::Date64 => Type::DATE,
        DataType::Timestamp(_, None) => Type::TIMESTAMP,
        DataType::Timestamp(_, Some(_)) => Type::TIMESTAMPTZ,
        DataType::Time32(_) | DataType::Time64(_) => Type::TIME,
        DataType::Interval(_) | DataType::Duration(_) => Type::INTERVAL,
        DataType::Dictionary(_, value) => pg_type(value),
        _ => Type::TEXT,
    }
}

/// `pg_attribute.atttypmod` of an Arrow type: `numeric(p, s)` packs precision and scale.
fn type_modifier(ty: &DataType) -> i32 {
    match ty {
        DataType::Decimal128(p, s) if *s >= 0 => ((i32::from(*p) << 16) | i32::from(*s)) + 4,
        DataType::Dictionary(_, value) => type_modifier(value),
        _ => -1,
    }
}

/// `pg_type.typlen`: the fixed width, or -1 for variable-length types.
fn type_size(ty: &Type) -> i16 {
    match *ty {
        Type::BOOL => 1,
        Type::INT2 => 2,
        Type::INT4 | Type::FLOAT4 | Type::DATE => 4,
        Type::INT8 | Type::FLOAT8 | Type::TIMESTAMP | Type::TIMESTAMPTZ | Type::TIME => 8,
        Type::INTERVAL => 16,
        _ => -1,
    }
}

/// The row description of a result: each column's name, type and format.
pub fn field_infos(
    fields: &[impl AsRef<Field>],
    format: impl Fn(usize) -> FieldFormat,
) -> Vec<FieldInfo> {
    fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let f = f.as_ref();
            let ty = pg_type(f.data_type());
            let size = type_size(&ty);
            FieldInfo::new(f.name().clone(), None, None, ty, format(i))
                .with_type_size(size)
                .with_type_modifier(type_modifier(f.data_type()))
        })
        .collect()
}

/// Writes one column's values into rows: chosen once per column and batch.
pub enum ColumnWriter<'a> {
    /// booleans
    Bool(&'a BooleanArray),
    /// integers, widened to i64 (the PostgreSQL width picked by [`pg_type`])
    Int(IntArray<'a>, Type),
    /// 64-bit unsigned: numeric
    UInt64(&'a UInt64Array),
    /// 32-bit floats
    Float32(&'a Float32Array),
    /// 64-bit floats
    Float64(&'a Float64Array),
    /// decimals of this scale
    Decimal(&'a Decimal128Array, i8),
    /// strings
    Utf8(StrArray<'a>),
    /// bytes
    Binary(BinArray<'a>),
    /// days since 1970
    Date(&'a Date32Array),
    /// timestamps, converted to microseconds
    Timestamp(TsArray<'a>),
    /// anything else, as Arrow displays it (text even when binary was asked)
    Display(ArrayFormatter<'a>),
}

/// Integer arrays of every width.
pub enum IntArray<'a> {
    /// i8
    I8(&'a Int8Array),
    /// i16
    I16(&'a Int16Array),
    /// i32
    I32(&'a Int32Array),
    /// i64
    I64(&'a Int64Array),
    /// u8
    U8(&'a UInt8Array),
    /// u16
    U16(&'a UInt16Array),
    /// u32
    U32(&'a UInt32Array),
}

impl IntArray<'_> {
    #[inline]
    fn value(&self, row: usize) -> i64 {
        match self {
            IntArray::I8(a) => a.value(row).into(),
            IntArray::I16(a) => a.value(row).into(),
            IntArray::I32(a) => a.value(row).into(),
            IntArray::I64(a) => a.value(row),
            IntArray::U8(a) => a.value(row).into(),
            IntArray::U16(a) => a.value(row).into(),
            IntArray::U32(a) => a.value(row).into(),
        }
    }
}

/// String arrays of every layout.
pub enum StrArray<'a> {
    /// i32 offsets
    Small(&'a StringArray),
    /// i64 offsets
    Large(&'a LargeStringArray),
    /// views
    View(&'a StringViewArray),
}

/// Binary arrays.
pub enum BinArray<'a> {
    /// i32 offsets
    Small(&'a BinaryArray),
    /// i64 offsets
    Large(&'a LargeBinaryArray),
}

/// Timestamp arrays of every unit.
pub enum TsArray<'a> {
    /// seconds
    S(&'a TimestampSecondArray),
    /// milliseconds
    Ms(&'a TimestampMillisecondArray),
    /// microseconds
    Us(&'a TimestampMicrosecondArray),
    /// nanoseconds (truncated to microseconds, as PostgreSQL keeps them)
    Ns(&'a TimestampNanosecondArray),
}

impl TsArray<'_> {
    #[inline]
    fn micros(&self, row: usize) -> i64 {
        match self {
            TsArray::S(a) => a.value(row).saturating_mul(1_000_000),
            TsArray::Ms(a) => a.value(row).saturating_mul(1_000),
            TsArray::Us(a) => a.value(row),
            TsArray::Ns(a) => a.value(row).div_euclid(1_000),
        }
    }
}

/// Formatting options for the columns written as Arrow displays them.
const DISPLAY: FormatOptions<'static> = FormatOptions::new().with_null("");

impl<'a> ColumnWriter<'a> {
    /// The writer of `array`.
    pub fn new(array: &'a ArrayRef) -> Result<Self, arrow::error::ArrowError> {
        Ok(match array.data_type() {
            DataType::Boolean => ColumnWriter::Bool(array.as_boolean()),
            DataType::Int8 => ColumnWriter::Int(IntArray::I8(array.as_primitive()), Type::INT2),
            DataType::Int16 => ColumnWriter::Int(IntArray::I16(array.as_primitive()), Type::INT2),
            DataType::Int32 => ColumnWriter::Int(IntArray::I32(array.as_primitive()), Type::INT4),
            DataType::Int64 => ColumnWriter::Int(IntArray::I64(array.as_primitive()), Type::INT8),
            DataType::UInt8 => ColumnWriter::Int(IntArray::U8(array.as_primitive()), Type::INT2),
            DataType::UInt16 => ColumnWriter::Int(IntArray::U16(array.as_primitive()), Type::INT4),
            DataType::UInt32 => ColumnWriter::Int(IntArray::U32(array.as_primitive()), Type::INT8),
            DataType::UInt64 => ColumnWriter::UInt64(array.as_primitive()),
            DataType::Float32 => ColumnWriter::Float32(array.as_primitive()),
            DataType::Float64 => ColumnWriter::Float64(array.as_primitive()),
            DataType::Decimal128(_, s) => ColumnWriter::Decimal(array.as_primitive(), *s),
            DataType::Utf8 => ColumnWriter::Utf8(StrArray::Small(array.as_string())),
            DataType::LargeUtf8 => ColumnWriter::Utf8(StrArray::Large(array.as_string())),
            DataType::Utf8View => ColumnWriter::Utf8(StrArray::View(array.as_string_view())),
            DataType::Binary => ColumnWriter::Binary(BinArray::Small(array.as_binary())),
            DataType::LargeBinary => ColumnWriter::Binary(BinArray::Large(array.as_binary())),
            DataType::Date32 => ColumnWriter::Date(array.as_primitive()),
            DataType::Timestamp(unit, _) => ColumnWriter::Timestamp(match unit {
                TimeUnit::Second => TsArray::S(array.as_primitive()),
                TimeUnit::Millisecond => TsArray::Ms(array.as_primitive()),
                TimeUnit::Microsecond => TsArray::Us(array.as_primitive()),
                TimeUnit::Nanosecond => TsArray::Ns(array.as_primitive()),
            }),
            _ => ColumnWriter::Display(ArrayFormatter::try_new(array.as_ref(), &DISPLAY)?),
        })
    }

    /// Appends the value of `row` as a DataRow field (length, then bytes; -1 for NULL) in
    /// `format`.
    #[inline]
    pub fn write(&self, array: &dyn Array, row: usize, binary: bool, out: &mut BytesMut) {
        if array.is_null(row) {
            out.put_i32(-1);
            return;
        }
        let start = out.len();
        out.put_i32(0);
        if binary {
            self.binary(row, out);
        } else {
            self.text(row, out);
        }
        let len = (out.len() - start - 4) as i32;
        out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    }

    fn text(&self, row: usize, out: &mut BytesMut) {
        match self {
            ColumnWriter::Bool(a) => out.put_u8(if a.value(row) { b't' } else { b'f' }),
            ColumnWriter::Int(a, _) => put_int(a.value(row), out),
            ColumnWriter::UInt64(a) => out.put_slice(Digits::of(a.value(row).into()).as_bytes()),
            ColumnWriter::Float32(a) => float_text(f64::from(a.value(row)), true, out),
            ColumnWriter::Float64(a) => float_text(a.value(row), false, out),
            ColumnWriter::Decimal(a, scale) => decimal_text(a.value(row), *scale, out),
            ColumnWriter::Utf8(a) => out.put_slice(str_value(a, row).as_bytes()),
            ColumnWriter::Binary(a) => {
                out.put_slice(b"\\x");
                for b in bin_value(a, row) {
                    let _ = write!(out, "{b:02x}");
                }
            }
            ColumnWriter::Date(a) => date_text(a.value(row).into(), out),
            ColumnWriter::Timestamp(a) => timestamp_text(a.micros(row), out),
            ColumnWriter::Display(f) => {
                let _ = write!(out, "{}", f.value(row));
            }
        }
    }

    fn binary(&self, row: usize, out: &mut BytesMut) {
        match self {
            ColumnWriter::Bool(a) => out.put_u8(u8::from(a.value(row))),
            ColumnWriter::Int(a, ty) => {
                let v = a.value(row);
                match *ty {
                    Type::INT2 => out.put_i16(v as i16),
                    Type::INT4 => out.put_i32(v as i32),
                    _ => out.put_i64(v),
                }
            }
            ColumnWriter::UInt64(a) => numeric_binary(i128::from(a.value(row)), 0, out),
            ColumnWriter::Float32(a) => out.put_f32(a.value(row)),
            ColumnWriter::Float64(a) => out.put_f64(a.value(row)),
            ColumnWriter::Decimal(a, scale) => numeric_binary(a.value(row), *scale, out),
            ColumnWriter::Utf8(a) => out.put_slice(str_value(a, row).as_bytes()),
            ColumnWriter::Binary(a) => out.put_slice(bin_value(a, row)),
            ColumnWriter::Date(a) => out.put_i32((i64::from(a.value(row)) - PG_EPOCH_DAYS) as i32),
            ColumnWriter::Timestamp(a) => {
                out.put_i64(a.micros(row).saturating_sub(PG_EPOCH_MICROS))
            }
            // described as TEXT: its binary form is the text
            ColumnWriter::Display(f) => {
                let _ = write!(out, "{}", f.value(row));
            }
        }
    }
}

#[inline]
fn str_value<'a>(a: &StrArray<'a>, row: usize) -> &'a str {
    match a {
        StrArray::Small(a) => a.value(row),
        StrArray::Large(a) => a.value(row),
        StrArray::View(a) => a.value(row),
    }
}

#[inline]
fn bin_value<'a>(a: &BinArray<'a>, row: usize) -> &'a [u8] {
    match a {
        BinArray::Small(a) => a.value(row),
        BinArray::Large(a) => a.value(row),
    }
}

/// The decimal digits of `n`, in a buffer on the stack (no allocation per value).
struct Digits {
    buf: [u8; 40],
    start: usize,
}

impl Digits {
    fn of(mut n: u128) -> Self {
        let mut buf = [0u8; 40];
        let mut start = buf.len();
        loop {
            start -= 1;
            buf[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        Digits { buf, start }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

/// A short text written on the stack (`{:e}` of a float).
struct StackText {
    buf: [u8; 40],
    len: usize,
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// A decimal integer, without allocating.
#[inline]
fn put_int(v: i64, out: &mut BytesMut) {
    if v < 0 {
        out.put_u8(b'-');
    }
    out.put_slice(Digits::of(v.unsigned_abs().into()).as_bytes());
}

/// A float as PostgreSQL 12+ writes it (`extra_float_digits` 1): the shortest text that
/// reads back to the same value, in exponent form below 1e-4 and from 1e15 (1e6 for
/// `real`) on; `Infinity`, `-Infinity`, `NaN`.
pub fn float_text(v: f64, single: bool, out: &mut BytesMut) {
    if v.is_nan() {
        out.put_slice(b"NaN");
        return;
    }
    if v.is_infinite() {
        out.put_slice(if v > 0.0 { b"Infinity" } else { b"-Infinity" });
        return;
    }
    if v == 0.0 {
        out.put_slice(if v.is_sign_negative() { b"-0" } else { b"0" });
        return;
    }
    // shortest digits and the decimal exponent, from Rust's shortest round-trip form
    // (`-d.ddde-x`, at most 17 digits), written on the stack
    let mut sci = StackText {
        buf: [0; 40],
        len: 0,
    };
    let _ = if single {
        write!(sci, "{:e}", v as f32)
    } else {
        write!(sci, "{v:e}")
    };
    let text = &sci.buf[..sci.len];
    let e = text.iter().position(|&b| b == b'e').unwrap_or(text.len());
    let (mantissa, exp) = (&text[..e], &text[(e + 1).min(text.len())..]);
    let exp: i32 = std::str::from_utf8(exp)
        .ok()
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    let negative = mantissa.first() == Some(&b'-');
    let mut digit_buf = [0u8; 40];
    let mut n = 0;
    for &b in mantissa.iter().filter(|b| b.is_ascii_digit()) {
        digit_buf[n] = b;
        n += 1;
    }
    let digits = &digit_buf[..n];
    let limit = if single { 6 } else { 15 };
    if negative {
        out.put_u8(b'-');
    }
    if exp < -4 || exp >= limit {
        out.put_slice(&digits[..1]);
        if digits.len() > 1 {
            out.put_u8(b'.');
            out.put_slice(&digits[1..]);
        }
        let _ = write!(
            out,
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        );
    } else if exp < 0 {
        out.put_slice(b"0.");
        for _ in 0..(-exp - 1) {
            out.put_u8(b'0');
        }
        out.put_slice(digits);
    } else {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            out.put_slice(digits);
            for _ in digits.len()..int_len {
                out.put_u8(b'0');
            }
        } else {
            out.put_slice(&digits[..int_len]);
            out.put_u8(b'.');
            out.put_slice(&digits[int_len..]);
        }
    }
}

/// A decimal with `scale` digits after the point, all of them written (as `numeric(p,s)`
/// prints).
pub fn decimal_text(v: i128, scale: i8, out: &mut BytesMut) {
    let digits = Digits::of(v.unsigned_abs());
    let digits = digits.as_bytes();
    if v < 0 {
        out.put_u8(b'-');
    }
    if scale <= 0 {
        out.put_slice(digits);
        for _ in 0..(-i32::from(scale)) {
            out.put_u8(b'0');
        }
        return;
    }
    let scale = scale as usize;
    if digits.len() <= scale {
        out.put_slice(b"0.");
        for _ in digits.len()..scale {
            out.put_u8(b'0');
        }
        out.put_slice(digits);
        return;
    }
    let point = digits.len() - scale;
    out.put_slice(&digits[..point]);
    out.put_u8(b'.');
    out.put_slice(&digits[point..]);
}

/// A decimal in PostgreSQL's binary `numeric`: digit count, weight, sign, display scale,
/// then base-10000 digits, most significant first, aligned on the decimal point.
pub fn numeric_binary(v: i128, scale: i8, out: &mut BytesMut) {
    let dscale = scale.max(0) as usize;
    // the digits, zero-padded so that the integer and the fraction parts fill whole
    // base-10000 groups; on the stack: at most 39 digits, 38 zeros of a negative scale and
    // 3 + 3 of padding
    let value = Digits::of(v.unsigned_abs());
    let mut digits = [b'0'; 96];
    let mut len = 0;
    let mut push = |b: u8| {
        digits[len] = b;
        len += 1;
    };
    let raw = value.as_bytes();
    // zeros before the digits of a value shorter than its scale (0.05: 0 . 05), and the
    // integer part's length (at least one digit)
    let (front, int_len) = if scale < 0 {
        (0, raw.len() + usize::from(scale.unsigned_abs()))
    } else {
        let total = raw.len().max(dscale + 1);
        (total - raw.len(), total - dscale)
    };
    for _ in 0..(4 - int_len % 4) % 4 + front {
        push(b'0');
    }
    let int_pad = (4 - int_len % 4) % 4;
    for &d in raw {
        push(d);
    }
    if scale < 0 {
        for _ in 0..scale.unsigned_abs() {
            push(b'0');
        }
    }
    for _ in 0..(4 - dscale % 4) % 4 {
        push(b'0');
    }
    let mut groups = [0i16; 24];
    let count = len / 4;
    for (g, chunk) in groups.iter_mut().zip(digits[..len].chunks(4)) {
        *g = chunk
            .iter()
            .fold(0i16, |acc, d| acc * 10 + i16::from(d - b'0'));
    }
    let groups = &groups[..count];
    let mut weight = ((int_len + int_pad) / 4) as i32 - 1;
    let lead = groups.iter().take_while(|&&g| g == 0).count();
    let trail = groups[lead..].iter().rev().take_while(|&&g| g == 0).count();
    let kept = &groups[lead..groups.len() - trail];
    weight -= lead as i32;
    if kept.is_empty() {
        weight = 0;
    }
    out.put_i16(kept.len() as i16);
    out.put_i16(weight as i16);
    out.put_u16(if v < 0 && !kept.is_empty() { 0x4000 } else { 0 });
    out.put_u16(dscale as u16);
    for g in kept {
        out.put_i16(*g);
    }
}

/// The civil date (year, month, day) of a day count since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `YYYY-MM-DD` (years before 1 as PostgreSQL writes them: `0001-01-01 BC` is year 0).
fn date_text(days: i64, out: &mut BytesMut) {
    let (y, m, d) = civil_from_days(days);
    if y <= 0 {
        let _ = write!(out, "{:04}-{m:02}-{d:02} BC", 1 - y);
    } else {
        let _ = write!(out, "{y:04}-{m:02}-{d:02}");
    }
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff]`, the fraction without trailing zeros.
fn timestamp_text(micros: i64, out: &mut BytesMut) {
    let days = micros.div_euclid(86_400_000_000);
    let in_day = micros.rem_euclid(86_400_000_000);
    let (y, m, d) = civil_from_days(days);
    let secs = in_day / 1_000_000;
    let frac = in_day % 1_000_000;
    let year = if y <= 0 { 1 - y } else { y };
    let _ = write!(
        out,
        "{year:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if frac > 0 {
        // six digits with the trailing zeros dropped
        let mut digits = [0u8; 6];
        let mut rest = frac;
        for d in digits.iter_mut().rev() {
            *d = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        let len = 6 - digits.iter().rev().take_while(|&&d| d == b'0').count();
        out.put_u8(b'.');
        out.put_slice(&digits[..len]);
    }
    if y <= 0 {
        out.put_slice(b" BC");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl FnOnce(&mut BytesMut)) -> String {
        let mut b = BytesMut::new();
        f(&mut b);
        String::from_utf8(b.to_vec()).unwrap()
    }

    #[test]
    fn floats_print_as_postgres_does() {
        for (v, want) in [
            (0.1, "0.1"),
            (1.5, "1.5"),
            (-2.0, "-2"),
            (100.0, "100"),
            (123456789012345.0, "123456789012345"),
            (1e15, "1e+15"),
            (1e20, "1e+20"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (f64::NAN, "NaN"),
            (0.0, "0"),
            (1.0 / 3.0, "0.3333333333333333"),
        ] {
            assert_eq!(text(|b| float_text(v, false, b)), want, "{v}");
        }
        assert_eq!(text(|b| float_text(f64::from(0.1f32), true, b)), "0.1");
        assert_eq!(text(|b| float_text(1e6, true, b)), "1e+06");
        assert_eq!(text(|b| float_text(123456.0, true, b)), "123456");
    }

    #[test]
    fn decimals_keep_their_scale() {
        assert_eq!(text(|b| decimal_text(12345, 2, b)), "123.45");
        assert_eq!(text(|b| decimal_text(-5, 2, b)), "-0.05");
        assert_eq!(text(|b| decimal_text(0, 2, b)), "0.00");
        assert_eq!(text(|b| decimal_text(7, 0, b)), "7");
        assert_eq!(text(|b| decimal_text(7, -2, b)), "700");
    }

    /// PostgreSQL's binary numeric, decoded back to text (the reference reading).
    fn numeric_back(bytes: &[u8]) -> String {
        let n = i16::from_be_bytes([bytes[0], bytes[1]]) as usize;
        let weight = i16::from_be_bytes([bytes[2], bytes[3]]) as i32;
        let sign = u16::from_be_bytes([bytes[4], bytes[5]]);
        let dscale = u16::from_be_bytes([bytes[6], bytes[7]]) as usize;
        let groups: Vec<i32> = (0..n)
            .map(|i| i16::from_be_bytes([bytes[8 + 2 * i], bytes[9 + 2 * i]]) as i32)
            .collect();
        let mut int = String::new();
        for w in (0..=weight.max(0)).rev() {
            let idx = weight - w;
            let g = if idx >= 0 && (idx as usize) < n {
                groups[idx as usize]
            } else {
                0
            };
            if int.is_empty() {
                if g != 0 || w == 0 {
                    int = g.to_string();
                }
            } else {
                int.push_str(&format!("{g:04}"));
            }
        }
        if weight < 0 {
            int = "0".into();
        }
        let mut frac = String::new();
        let mut k = 1;
        while frac.len() < dscale {
            let idx = weight + k;
            let g = if idx >= 0 && (idx as usize) < n {
                groups[idx as usize]
            } else {
                0
            };
            frac.push_str(&format!("{g:04}"));
            k += 1;
        }
        frac.truncate(dscale);
        let s = if dscale > 0 {
            format!("{int}.{frac}")
        } else {
            int
        };
        if sign == 0x4000 { format!("-{s}") } else { s }
    }

    #[test]
    fn numeric_binary_round_trips() {
        for (v, scale) in [
            (0i128, 2i8),
            (12345, 2),
            (-12345, 2),
            (1, 0),
            (10000, 0),
            (123456789, 4),
            (5, 5),
            (-99999999999999999, 2),
            (100000000, 3),
            (42, -3),
            (i128::from(u64::MAX), 0),
        ] {
            let mut b = BytesMut::new();
            numeric_binary(v, scale, &mut b);
            let want = text(|b| decimal_text(v, scale, b));
            assert_eq!(numeric_back(&b), want, "{v} scale {scale}");
        }
    }

    #[test]
    fn dates_and_timestamps() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(10_957), (2000, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(text(|b| date_text(19_723, b)), "2024-01-01");
        assert_eq!(
            text(|b| timestamp_text(1_704_067_200_000_000 + 3_723_500_000, b)),
            "2024-01-01 01:02:03.5"
        );
        assert_eq!(
            text(|b| timestamp_text(-1, b)),
            "1969-12-31 23:59:59.999999"
        );
    }
}
