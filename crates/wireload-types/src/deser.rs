//! Text-to-value deserializers, one per type, with PostgreSQL's validation rules.
//!
//! Every function takes the field's bytes (quotes and escapes already removed) and follows
//! PostgreSQL 15's input function for the type: what it accepts, the value it produces and
//! which error it raises. "Whitespace" is C's `isspace` set (space, `\t`, `\n`, `\v`, `\f`,
//! `\r`), as in PostgreSQL. The functions do not allocate.
//!
//! Known differences from PostgreSQL, all in rarely used input forms (they are rejected
//! with [`ValueError::InvalidSyntax`] where PostgreSQL would accept them):
//! - REAL/DOUBLE: hexadecimal floats (`0x1p3`), which PostgreSQL takes from C's `strtod`.
//! - DATE/TIMESTAMP: only ISO dates `Y-M-D` with a year of 3 or more digits are read (no
//!   `BC`, month names, `YYYYMMDD`, `/` separators, other DateStyle forms or special
//!   values such as `now`, `epoch`, `infinity`); time fields have one or two digits; time
//!   zones are limited to `Z`, `UTC`, `GMT` and numeric offsets after a time (they are
//!   checked, then ignored, as PostgreSQL ignores them for TIMESTAMP WITHOUT TIME ZONE).
//! - TIMESTAMP: Arrow counts microseconds from 1970 in an `i64`, so the last 30 years of
//!   PostgreSQL's range (after 294247-01-10 04:00:54.775807) are
//!   [`ValueError::OutOfRange`].
//! - DECIMAL: `NaN` is [`ValueError::OutOfRange`], since Decimal128 has no NaN (PostgreSQL
//!   stores NaN even in a `numeric(p,s)`).
//!
//! # Fast paths and their scalar twins
//!
//! Each numeric and date/time parser first tries the fixed shapes that bulk data comes in
//! (`[sign]digits`, `[sign]digits.digits`, `YYYY-MM-DD[ HH:MM:SS[.ffffff]]`), reading 8 or
//! 16 bytes as one word and checking every digit and separator at once (see
//! `crate::swar`). Any other input (whitespace, exponents, long fields, anything
//! malformed) goes to the byte-at-a-time twin in [`scalar`], which is the reference: both
//! return the same `Result` for every input, which the property tests check. Integers of
//! up to 4 bytes also take the scalar loop, which measured faster there.
//!
//! REAL/DOUBLE: a short decimal whose digits the type holds exactly is divided once by
//! an exact power of ten (Clinger's fast path: one correctly rounded IEEE operation);
//! every other float text goes to the scalar twin, which checks the syntax and converts
//! with the standard library (`fast-float2` measured no faster than it here).

use crate::error::ValueError;
use crate::error::type_names as names;
use crate::swar;

pub mod scalar;

use scalar::{MICROS_PER_DAY, POW10, PgFloat, trim};

// ---------------------------------------------------------------------------------------
// Integers
// ---------------------------------------------------------------------------------------

/// `10^i` as `u64`, for `i` up to 16.
const POW10_U64: [u64; 17] = {
    let mut table = [1u64; 17];
    let mut i = 1;
    while i < 17 {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

/// Fields of at most this many bytes (sign included) go through the scalar twin's loop,
/// inlined: it measured as fast or faster than a word for 1 to 4 digits
/// (`benches/deser.rs`); longer fields are read as words.
const SHORT_INTEGER: usize = 4;

/// Whether `bytes` starts with a minus, and the bytes after the sign if any. `None` when
/// empty.
#[inline(always)]
fn split_sign(bytes: &[u8]) -> Option<(bool, &[u8])> {
    let first = *bytes.first()?;
    let negative = first == b'-';
    let signed = negative | (first == b'+');
    Some((negative, &bytes[signed as usize..]))
}

/// Reads a field that is exactly `[+-]` and 1 to 19 digits, a word at a time: the sign
/// and the magnitude. `None` for any other field, which the scalar path reads.
#[inline(always)]
fn integer_fast(bytes: &[u8]) -> Option<(bool, u64)> {
    let (negative, body) = split_sign(bytes)?;
    let n = body.len();
    let magnitude = if n == 0 {
        return None;
    } else if n <= 8 {
        let w = swar::load(body);
        if swar::non_digits(w) != swar::padding(n) {
            return None;
        }
        swar::parse_first(w, n)
    } else if n <= 16 {
        // Two overlapping words, bytes 0..8 and n-8..n; the second's first 16 - n bytes
        // were read by the first, and become leading zeros.
        let w0 = swar::load(body);
        let w1 = swar::load(&body[n - 8..]);
        if swar::non_digits(w0) | swar::non_digits(w1) != 0 {
            return None;
        }
        let tail = w1 & (!0 << (8 * (16 - n)));
        // 16 digits stay below 10^16: no overflow.
        swar::parse8(w0) * POW10_U64[n - 8] + swar::parse8(tail)
    } else if n <= 19 {
        // Three words, the last overlapping the second as above.
        let w0 = swar::load(body);
        let w1 = swar::load(&body[8..]);
        let w2 = swar::load(&body[n - 8..]);
        if swar::non_digits(w0) | swar::non_digits(w1) | swar::non_digits(w2) != 0 {
            return None;
        }
        let tail = w2 & (!0 << (8 * (24 - n)));
        // Below 10^19 < 2^64: no overflow.
        swar::parse8(w0) * POW10_U64[n - 8]
            + swar::parse8(w1) * POW10_U64[n - 16]
            + swar::parse8(tail)
    } else {
        return None;
    };
    Some((negative, magnitude))
}

/// The signed value of a fast-path integer whose type's minimum has magnitude `neg_limit`,
/// as the bits of a `u64`.
#[inline(always)]
fn integer_value(
    negative: bool,
    magnitude: u64,
    neg_limit: u64,
    ty: &'static str,
) -> Result<u64, ValueError> {
    // Positive values stay below `neg_limit`, negative ones may reach it.
    if magnitude > neg_limit - 1 + negative as u64 {
        return Err(ValueError::OutOfRange { ty });
    }
    Ok(if negative {
        magnitude.wrapping_neg()
    } else {
        magnitude
    })
}

/// An integer of a type whose minimum has magnitude `neg_limit`, as the bits of a `u64`:
/// [`quick_integer`] (inlined), else the scalar twin (out of line), which also gives the
/// errors.
#[inline(always)]
fn integer(bytes: &[u8], neg_limit: u64, ty: &'static str) -> Result<u64, ValueError> {
    match quick_integer(bytes, neg_limit, ty) {
        Some(value) => Ok(value),
        None => integer_slow(bytes, neg_limit, ty),
    }
}

/// [`integer`] for the fields the fast path does not take, out of line.
#[inline(never)]
fn integer_slow(bytes: &[u8], neg_limit: u64, ty: &'static str) -> Result<u64, ValueError> {
    let (negative, m) = scalar::parse_integer(bytes, neg_limit, ty)?;
    Ok(if negative { m.wrapping_neg() } else { m })
}

/// An integer's fast path: short fields through the scalar twin's loop (inlined), the
/// rest as words; `None` where the field is invalid or needs the slow path.
#[inline(always)]
fn quick_integer(bytes: &[u8], neg_limit: u64, ty: &'static str) -> Option<u64> {
    if bytes.len() <= SHORT_INTEGER {
        let (negative, m) = scalar::parse_integer(bytes, neg_limit, ty).ok()?;
        return Some(if negative { m.wrapping_neg() } else { m });
    }
    let (negative, m) = integer_fast(bytes)?;
    integer_value(negative, m, neg_limit, ty).ok()
}

/// [`parse_i16`]'s value where its fast path reads the field; `None` leaves the field to it.
#[inline(always)]
pub(crate) fn quick_i16(bytes: &[u8]) -> Option<i16> {
    quick_integer(bytes, 1 << 15, names::SMALLINT).map(|v| v as i16)
}

/// [`parse_i32`]'s value where its fast path reads the field; `None` leaves the field to it.
#[inline(always)]
pub(crate) fn quick_i32(bytes: &[u8]) -> Option<i32> {
    quick_integer(bytes, 1 << 31, names::INTEGER).map(|v| v as i32)
}

/// [`parse_i64`]'s value where its fast path reads the field; `None` leaves the field to it.
#[inline(always)]
pub(crate) fn quick_i64(bytes: &[u8]) -> Option<i64> {
    quick_integer(bytes, 1 << 63, names::BIGINT).map(|v| v as i64)
}

/// Parses a SMALLINT (`int2in`).
#[inline]
pub fn parse_i16(bytes: &[u8]) -> Result<i16, ValueError> {
    integer(bytes, 1 << 15, names::SMALLINT).map(|v| v as i16)
}

/// Parses an INTEGER (`int4in`).
#[inline]
pub fn parse_i32(bytes: &[u8]) -> Result<i32, ValueError> {
    integer(bytes, 1 << 31, names::INTEGER).map(|v| v as i32)
}

/// Parses a BIGINT (`int8in`).
#[inline]
pub fn parse_i64(bytes: &[u8]) -> Result<i64, ValueError> {
    integer(bytes, 1 << 63, names::BIGINT).map(|v| v as i64)
}

// ---------------------------------------------------------------------------------------
// Floating point
// ---------------------------------------------------------------------------------------

/// A float type in which one IEEE division of two exact operands gives the correctly
/// rounded value of a short decimal (Clinger's fast path).
trait ExactFloat: PgFloat + 'static {
    /// Every integer up to this one is exact in the type (2^53, 2^24).
    const MAX_EXACT: u64;
    /// The powers of ten that are exact in the type.
    const POWERS: &'static [Self];
    /// `digits` (at most [`Self::MAX_EXACT`]) divided by `power`.
    fn quotient(digits: u64, power: Self) -> Self;
}

impl ExactFloat for f32 {
    const MAX_EXACT: u64 = 1 << 24;
    const POWERS: &'static [f32] = &[1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];
    #[inline(always)]
    fn quotient(digits: u64, power: f32) -> f32 {
        digits as f32 / power
    }
}

impl ExactFloat for f64 {
    const MAX_EXACT: u64 = 1 << 53;
    const POWERS: &'static [f64] = &[
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    #[inline(always)]
    fn quotient(digits: u64, power: f64) -> f64 {
        digits as f64 / power
    }
}

/// Parses C `strtod` syntax like [`scalar`]'s twin. A field that is `[+-]digits[.digits]`
/// in at most 16 bytes, with digits and fraction the type holds exactly, is read as a
/// decimal (one pass over one or two words) and divided once; anything else (exponents,
/// whitespace, special values, long or malformed fields) goes to the scalar twin.
#[inline(always)]
fn parse_float<F: ExactFloat>(bytes: &[u8], ty: &'static str) -> Result<F, ValueError> {
    match float_fast(bytes) {
        Some(value) => Ok(value),
        None => float_slow(bytes, ty),
    }
}

/// The fast path of [`parse_float`]. Its values are never out of range: at most 2^53
/// and, unless zero, at least 10^-22.
#[inline(always)]
fn float_fast<F: ExactFloat>(bytes: &[u8]) -> Option<F> {
    let (negative, body) = split_sign(bytes)?;
    let (digits, n_frac) = decimal_digits(body)?;
    if digits > F::MAX_EXACT {
        return None;
    }
    let value = F::quotient(digits, *F::POWERS.get(n_frac)?);
    Some(if negative { value.negate() } else { value })
}

/// The scalar twin of [`parse_float`] (left to the compiler to inline: a call measured
/// slower for long fields, which all come here).
#[inline]
fn float_slow<F: PgFloat>(bytes: &[u8], ty: &'static str) -> Result<F, ValueError> {
    scalar::parse_float(bytes, ty)
}

/// [`parse_f32`]'s value where its fast path reads the field; `None` leaves the field to it.
#[inline(always)]
pub(crate) fn quick_f32(bytes: &[u8]) -> Option<f32> {
    float_fast(bytes)
}

/// [`parse_f64`]'s value where its fast path reads the field; `None` leaves the field to it.
#[inline(always)]
pub(crate) fn quick_f64(bytes: &[u8]) -> Option<f64> {
    float_fast(bytes)
}

/// Parses a REAL (`float4in`), rounding the decimal text directly to the nearest `f32`.
#[inline]
pub fn parse_f32(bytes: &[u8]) -> Result<f32, ValueError> {
    parse_float(bytes, names::REAL)
}

/// Parses a DOUBLE PRECISION (`float8in`).
#[inline]
pub fn parse_f64(bytes: &[u8]) -> Result<f64, ValueError> {
    parse_float(bytes, names::DOUBLE)
}

// ---------------------------------------------------------------------------------------
// DECIMAL
// ---------------------------------------------------------------------------------------

/// DECIMAL(precision, scale)'s fast path, with its bound computed once per column.
///
/// Reads a field that is exactly `[+-]digits[.digits]` in at most 16 bytes after the
/// sign: the point is found and all digits are checked and converted in one pass over
/// one or two words, then scaled or rounded to `scale` fraction digits. `None` for any
/// other field and for values out of range, which the scalar path reads (and reports).
#[derive(Debug, Clone, Copy)]
pub(crate) struct QuickDecimal {
    /// `10^precision`, or `u64::MAX` when larger: magnitudes must stay below it.
    limit: u64,
    scale: usize,
}

impl QuickDecimal {
    /// The fast path of DECIMAL(precision, scale).
    pub(crate) fn new(precision: u8, scale: u8) -> Self {
        QuickDecimal {
            limit: u64::try_from(POW10[precision as usize]).unwrap_or(u64::MAX),
            scale: scale as usize,
        }
    }

    /// The value times `10^scale`, as [`parse_decimal`] gives it; `None` when the field
    /// has another shape or the value is out of range (or not below `u64::MAX`).
    #[inline(always)]
    pub(crate) fn parse(self, bytes: &[u8]) -> Option<i128> {
        let (negative, body) = split_sign(bytes)?;
        let (value, n_frac) = decimal_digits(body)?;
        let magnitude = if n_frac <= self.scale {
            value.checked_mul(*POW10_U64.get(self.scale - n_frac)?)?
        } else {
            // Round half away from zero at the scale, as the scalar twin does: up when the
            // first dropped digit is 5 or more, that is when the dropped part is at least
            // half a unit.
            let unit = POW10_U64[n_frac - self.scale];
            let kept = value / unit;
            kept + (value - kept * unit >= unit / 2) as u64
        };
        if magnitude >= self.limit {
            return None;
        }
        let value = magnitude as i128;
        Some(if negative { -value } else { value })
    }
}

/// Reads `digits[.digits]` filling all of `body` (1 to 16 bytes, at least one digit): the
/// value of the digits with the point removed, and how many follow the point.
#[inline(always)]
fn decimal_digits(body: &[u8]) -> Option<(u64, usize)> {
    let n = body.len();
    if n.wrapping_sub(1) < 8 {
        decimal_digits8(body)
    } else if n.wrapping_sub(9) < 8 {
        decimal_digits16(body)
    } else {
        None
    }
}

/// Reads `digits[.digits]` filling all of `body` (1 to 8 bytes): the value of the digits
/// with the point removed, and how many follow the point.
#[inline(always)]
fn decimal_digits8(body: &[u8]) -> Option<(u64, usize)> {
    let n = body.len();
    let w = swar::load(body);
    // The bytes of the field that are no digits.
    let bad = swar::non_digits(w) ^ swar::padding(n);
    if bad == 0 {
        return Some((swar::parse_first(w, n), 0));
    }
    let point = (bad.trailing_zeros() / 8) as usize;
    // Exactly one byte may be no digit: a point, with a digit beside it.
    if bad & (bad - 1) != 0 || (w >> (8 * point)) as u8 != b'.' || n == 1 {
        return None;
    }
    // The digits after the point move down one byte, over it.
    let below = (1u64 << (8 * point)) - 1;
    let digits = (w & below) | ((w >> 8) & !below);
    Some((swar::parse_first(digits, n - 1), n - 1 - point))
}

/// [`decimal_digits8`] for 9 to 16 bytes.
#[inline(always)]
fn decimal_digits16(body: &[u8]) -> Option<(u64, usize)> {
    let n = body.len();
    let x = swar::load16(body);
    let bad = swar::non_digits16(x) ^ swar::padding16(n);
    if bad == 0 {
        return Some((swar::parse_first16(x, n), 0));
    }
    let point = (bad.trailing_zeros() / 8) as usize;
    if bad & (bad - 1) != 0 || (x >> (8 * point)) as u8 != b'.' {
        return None;
    }
    let below = (1u128 << (8 * point)) - 1;
    let digits = (x & below) | ((x >> 8) & !below);
    Some((swar::parse_first16(digits, n - 1), n - 1 - point))
}

/// The scalar twin of [`parse_decimal`], out of line.
#[inline(never)]
fn decimal_slow(bytes: &[u8], precision: u8, scale: u8) -> Result<i128, ValueError> {
    scalar::parse_decimal(bytes, precision, scale)
}

/// Parses a DECIMAL(precision, scale) (`numeric_in` plus the type modifier) into the
/// value times `10^scale`. Digits beyond the scale are rounded half away from zero; a
/// value that needs more than `precision - scale` integer digits after rounding is
/// [`ValueError::NumericOverflow`].
#[inline]
pub fn parse_decimal(bytes: &[u8], precision: u8, scale: u8) -> Result<i128, ValueError> {
    debug_assert!((1..=38).contains(&precision) && scale <= precision);
    match QuickDecimal::new(precision, scale).parse(bytes) {
        Some(value) => Ok(value),
        None => decimal_slow(bytes, precision, scale),
    }
}

// ---------------------------------------------------------------------------------------
// BOOLEAN
// ---------------------------------------------------------------------------------------

/// Whether `text` is a non-empty prefix of `word`, ignoring ASCII case.
#[inline]
fn is_prefix_of(text: &[u8], word: &[u8]) -> bool {
    text.len() <= word.len() && text.eq_ignore_ascii_case(&word[..text.len()])
}

/// Parses a BOOLEAN (`boolin`): `t`/`true`/`y`/`yes`/`on`/`1` and `f`/`false`/`n`/`no`/
/// `off`/`0`, case-insensitive, any unique prefix, surrounding whitespace ignored.
pub fn parse_bool(bytes: &[u8]) -> Result<bool, ValueError> {
    let text = trim(bytes);
    let value = match text.first().map(|b| b | 0x20) {
        Some(b't') if is_prefix_of(text, b"true") => Some(true),
        Some(b'f') if is_prefix_of(text, b"false") => Some(false),
        Some(b'y') if is_prefix_of(text, b"yes") => Some(true),
        Some(b'n') if is_prefix_of(text, b"no") => Some(false),
        Some(b'o') if text.len() >= 2 && is_prefix_of(text, b"on") => Some(true),
        Some(b'o') if text.len() >= 2 && is_prefix_of(text, b"off") => Some(false),
        Some(b'1') if text.len() == 1 => Some(true),
        Some(b'0') if text.len() == 1 => Some(false),
        _ => None,
    };
    value.ok_or(ValueError::InvalidSyntax { ty: names::BOOLEAN })
}

// ---------------------------------------------------------------------------------------
// DATE and TIMESTAMP
// ---------------------------------------------------------------------------------------

/// Little-endian word of `b` at byte `k`.
const fn byte_at(b: u8, k: u32) -> u64 {
    (b as u64) << (8 * k)
}

/// The separator bytes of `YYYY-MM-` (bytes 4 and 7), as a mask and as their values.
const DATE_SEP_MASK: u64 = byte_at(0xFF, 4) | byte_at(0xFF, 7);
const DATE_SEPS: u64 = byte_at(b'-', 4) | byte_at(b'-', 7);
/// The separator bytes of `HH:MM:SS` (bytes 2 and 5), as a mask and as their values.
const TIME_SEP_MASK: u64 = byte_at(0xFF, 2) | byte_at(0xFF, 5);
const TIME_SEPS: u64 = byte_at(b':', 2) | byte_at(b':', 5);

/// Days in each month (index 1 to 12; 0 for months 0 and 13, which stands for all
/// months above 12), February of common years.
const DAYS_IN_MONTH: [u32; 14] = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31, 0];
/// Days from March 1 to the first of each month (index 1 to 12), years starting in March.
const DAYS_BEFORE_MONTH: [u32; 13] = [0, 306, 337, 0, 31, 61, 92, 122, 153, 184, 214, 245, 275];

/// Days from 1970-01-01 to a valid date with year 1 to 9999, without Hinnant's 400-year
/// eras: one division by a constant (a multiplication), the rest shifts and a table.
#[inline(always)]
fn days_from_civil_4(year: u32, month: u32, day: u32) -> i32 {
    // Years start in March, so a leap day ends its year.
    let y = year - (month <= 2) as u32;
    let centuries = y / 100;
    let leap_days = y / 4 - centuries + centuries / 4;
    let days = y * 365 + leap_days + DAYS_BEFORE_MONTH[month as usize] + day - 1;
    days as i32 - 719_468
}

/// Reads `YYYY-MM-DD` from the first ten bytes of `text` (at least ten long): all eight
/// digits and both separators in one compare. `None` if they do not have that shape;
/// else the day number, or [`ValueError::DateTimeOutOfRange`] for an impossible date.
#[inline(always)]
fn date_fast(text: &[u8]) -> Option<Result<i32, ValueError>> {
    let w = u64::from_le_bytes(text[..8].try_into().ok()?);
    let (d0, d1) = (text[8] as u64, text[9] as u64);
    // The day's digits take the separators' places, so one word holds all eight digits.
    let digits = (w & !DATE_SEP_MASK) | d0 << 32 | d1 << 56;
    if swar::non_digits(digits) | ((w & DATE_SEP_MASK) ^ DATE_SEPS) != 0 {
        return None;
    }
    let v = digits & 0x0F0F_0F0F_0F0F_0F0F;
    // Byte k of `pairs` is 10 * digit k + digit k+1.
    let pairs = v * 10 + (v >> 8);
    let year = (pairs & 0xFF) as u32 * 100 + (pairs >> 16 & 0xFF) as u32;
    let month = (pairs >> 40 & 0xFF) as u32;
    let day = (v >> 32 & 0xFF) as u32 * 10 + (v >> 56) as u32;
    // Month 0 or above 12 has no days; day 0 wraps around. February 29 is looked at alone.
    let exists = day.wrapping_sub(1) < DAYS_IN_MONTH[(month as usize).min(13)]
        || (month == 2 && day == 29 && scalar::is_leap_year(year));
    if year == 0 || !exists {
        return Some(Err(ValueError::DateTimeOutOfRange));
    }
    Some(Ok(days_from_civil_4(year, month, day)))
}

/// Reads `YYYY-MM-DD`, alone or followed by ` HH:MM:SS` or `THH:MM:SS` and an optional
/// fraction of 1 to 6 digits, and nothing else: the day number and the time of day in
/// microseconds. `None` for any other shape, which the scalar path reads; else the same
/// result as the scalar path.
#[inline(always)]
fn date_time_fast(text: &[u8]) -> Option<Result<(i32, i64), ValueError>> {
    let n = text.len();
    if n == 10 {
        return Some(date_fast(text)?.map(|days| (days, 0)));
    }
    if n < 19 || n == 20 || n > 26 || (text[10] != b' ' && text[10] | 0x20 != b't') {
        return None;
    }
    let date = date_fast(text)?;
    let t = u64::from_le_bytes(text[11..19].try_into().ok()?);
    if swar::non_digits(t) & !TIME_SEP_MASK | ((t & TIME_SEP_MASK) ^ TIME_SEPS) != 0 {
        return None;
    }
    let mut micros = 0;
    if n > 19 {
        let k = n - 20;
        let w = swar::load(&text[20..]);
        if text[19] != b'.' || swar::leading_digits(w) != k {
            return None;
        }
        micros = swar::parse_first(w, k) as i64 * POW10_U64[6 - k] as i64;
    }
    let days = match date {
        Ok(days) => days,
        Err(e) => return Some(Err(e)),
    };
    let v = t & 0x0F0F_0F0F_0F0F_0F0F;
    let pairs = v * 10 + (v >> 8);
    let hour = (pairs & 0xFF) as i64;
    let minute = (pairs >> 24 & 0xFF) as i64;
    let second = (pairs >> 48 & 0xFF) as i64;
    let valid = hour <= 24
        && minute <= 59
        && second <= 60
        && (hour < 24 || (minute == 0 && second == 0 && micros == 0));
    let time = ((hour * 60 + minute) * 60 + second) * 1_000_000 + micros;
    if !valid || time > MICROS_PER_DAY {
        return Some(Err(ValueError::DateTimeOutOfRange));
    }
    Some(Ok((days, time)))
}

/// The scalar twin of [`parse_date`], out of line.
#[inline(never)]
fn date_slow(bytes: &[u8]) -> Result<i32, ValueError> {
    scalar::parse_date(bytes)
}

/// The scalar twin of [`parse_timestamp`], out of line.
#[inline(never)]
fn timestamp_slow(bytes: &[u8]) -> Result<i64, ValueError> {
    scalar::parse_timestamp(bytes)
}

/// Parses a DATE (`date_in`) written `YYYY-MM-DD` (year of 3 or more digits, month and
/// day of one or two) into days since 1970-01-01. A time after the date is checked and
/// dropped, as PostgreSQL does.
#[inline]
pub fn parse_date(bytes: &[u8]) -> Result<i32, ValueError> {
    match date_time_fast(bytes) {
        Some(result) => result.map(|(days, _)| days),
        None => date_slow(bytes),
    }
}

/// [`parse_date`]'s value where its fast path reads the field; `None` leaves the field to it.
#[inline(always)]
pub(crate) fn quick_date(bytes: &[u8]) -> Option<i32> {
    date_time_fast(bytes)?.ok().map(|(days, _)| days)
}

/// [`parse_timestamp`]'s value where its fast path reads the field; `None` leaves the field
/// to it.
#[inline(always)]
pub(crate) fn quick_timestamp(bytes: &[u8]) -> Option<i64> {
    // Years 1 to 9999: no overflow.
    date_time_fast(bytes)?
        .ok()
        .map(|(days, time)| days as i64 * MICROS_PER_DAY + time)
}

/// Parses a TIMESTAMP (`timestamp_in`) written `YYYY-MM-DD[( |T)HH:MM[:SS[.fraction]]]`
/// into microseconds since 1970-01-01 00:00:00. The fraction is rounded to microseconds
/// as PostgreSQL does; `24:00:00` and leap second `:60` roll over to the next minute/day.
#[inline]
pub fn parse_timestamp(bytes: &[u8]) -> Result<i64, ValueError> {
    match date_time_fast(bytes) {
        // Years 1 to 9999: no overflow.
        Some(result) => result.map(|(days, time)| days as i64 * MICROS_PER_DAY + time),
        None => timestamp_slow(bytes),
    }
}

// ---------------------------------------------------------------------------------------
// Strings
// ---------------------------------------------------------------------------------------

/// Validates UTF-8.
#[inline(always)]
fn utf8(bytes: &[u8]) -> Result<&str, ValueError> {
    simdutf8::basic::from_utf8(bytes).map_err(|_| ValueError::InvalidUtf8)
}

/// PostgreSQL's name of CHAR(n), for errors.
pub(crate) const CHAR_NAME: &str = names::CHAR;
/// PostgreSQL's name of VARCHAR(n), for errors.
pub(crate) const VARCHAR_NAME: &str = names::VARCHAR;

/// The bytes as text: validated when `CHECK`, else taken as valid UTF-8.
///
/// `CHECK = false` is only used by `ColumnBuilder::append_fields_valid_utf8`, whose
/// caller guarantees (an `unsafe` contract) that every field is valid UTF-8.
#[inline(always)]
pub(crate) fn text<const CHECK: bool>(bytes: &[u8]) -> Result<&str, ValueError> {
    if CHECK {
        utf8(bytes)
    } else {
        // SAFETY: CHECK is false only on the path of `append_fields_valid_utf8`, whose
        // caller promises (unsafe contract) that the bytes are valid UTF-8.
        Ok(unsafe { std::str::from_utf8_unchecked(bytes) })
    }
}

/// Checks a string against a declared length in characters: longer is an error unless
/// the characters past `max` are all spaces, which are then dropped (PostgreSQL).
#[inline(always)]
pub(crate) fn bounded<'a, const CHECK: bool>(
    bytes: &'a [u8],
    max: u32,
    ty: &'static str,
) -> Result<&'a str, ValueError> {
    let text = text::<CHECK>(bytes)?;
    if bytes.len() <= max as usize {
        // At most as many characters as bytes.
        return Ok(text);
    }
    // Byte offset after the first `max` characters.
    let mut chars = 0u32;
    let mut end = bytes.len();
    for (k, &b) in bytes.iter().enumerate() {
        if (b & 0xC0) != 0x80 {
            if chars == max {
                end = k;
                break;
            }
            chars += 1;
        }
    }
    if bytes[end..].iter().all(|&b| b == b' ') {
        Ok(&text[..end])
    } else {
        Err(ValueError::TooLong { ty, max })
    }
}

/// Parses a TEXT or unbounded VARCHAR: any valid UTF-8.
pub fn parse_text(bytes: &[u8]) -> Result<&str, ValueError> {
    utf8(bytes)
}

/// Parses a VARCHAR(max): valid UTF-8 of at most `max` characters; excess trailing spaces
/// are dropped.
pub fn parse_varchar(bytes: &[u8], max: u32) -> Result<&str, ValueError> {
    bounded::<true>(bytes, max, names::VARCHAR)
}

/// Parses a CHAR(n) like [`parse_varchar`]. The value is stored without PostgreSQL's
/// blank padding to `n` characters (as DuckDB does): `'ab'` stays `'ab'`.
pub fn parse_char(bytes: &[u8], n: u32) -> Result<&str, ValueError> {
    bounded::<true>(bytes, n, names::CHAR)
}
