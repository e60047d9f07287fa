//! The straightforward byte-at-a-time deserializers: the reference that the fast ones in
//! [`super`] are tested against, and the path they fall back to for every input outside
//! their fixed shapes (whitespace, exponents, long or malformed fields).
//!
//! Semantics are those documented in [`super`]; each function here returns exactly what
//! its namesake there returns, for every input.

use crate::error::ValueError;
use crate::error::type_names as names;

/// Whether `b` is whitespace as C's `isspace` in the C locale defines it.
#[inline(always)]
pub(super) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `bytes` without leading and trailing whitespace.
#[inline(always)]
pub(super) fn trim(bytes: &[u8]) -> &[u8] {
    let mut start = 0;
    let mut end = bytes.len();
    while start < end && is_space(bytes[start]) {
        start += 1;
    }
    while end > start && is_space(bytes[end - 1]) {
        end -= 1;
    }
    &bytes[start..end]
}

#[inline(always)]
pub(super) fn skip_space(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && is_space(bytes[i]) {
        i += 1;
    }
    i
}

/// The value of the ASCII digit `b`, or a number above 9 if `b` is no digit.
#[inline(always)]
pub(super) fn digit(b: u8) -> u8 {
    b.wrapping_sub(b'0')
}

// ---------------------------------------------------------------------------------------
// Integers
// ---------------------------------------------------------------------------------------

/// Reads `[space] [sign] digits [space]` as PostgreSQL's `pg_strtoint*` do: returns the
/// sign and the magnitude, which is at most `neg_limit` (the magnitude of the type's
/// minimum) and below it for positive values.
#[inline(always)]
pub(super) fn parse_integer(
    bytes: &[u8],
    neg_limit: u64,
    ty: &'static str,
) -> Result<(bool, u64), ValueError> {
    let n = bytes.len();
    let mut i = skip_space(bytes, 0);
    let negative = match bytes.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let start = i;
    // Up to 19 digits cannot overflow a u64: no overflow checks in this loop.
    let unchecked_end = n.min(start + 19);
    let mut magnitude: u64 = 0;
    while i < unchecked_end {
        let d = digit(bytes[i]);
        if d > 9 {
            break;
        }
        magnitude = magnitude * 10 + d as u64;
        i += 1;
    }
    if i == start {
        return Err(ValueError::InvalidSyntax { ty });
    }
    if i == unchecked_end {
        // Long input (leading zeros or an overflow): continue with checks.
        while i < n {
            let d = digit(bytes[i]);
            if d > 9 {
                break;
            }
            magnitude = magnitude
                .checked_mul(10)
                .and_then(|m| m.checked_add(d as u64))
                .ok_or(ValueError::OutOfRange { ty })?;
            i += 1;
        }
    }
    // PostgreSQL detects overflow while reading digits, before it looks at what follows.
    if magnitude > neg_limit {
        return Err(ValueError::OutOfRange { ty });
    }
    if skip_space(bytes, i) != n {
        return Err(ValueError::InvalidSyntax { ty });
    }
    if !negative && magnitude == neg_limit {
        return Err(ValueError::OutOfRange { ty });
    }
    Ok((negative, magnitude))
}

/// Parses a SMALLINT (`int2in`).
#[inline]
pub fn parse_i16(bytes: &[u8]) -> Result<i16, ValueError> {
    let (negative, m) = parse_integer(bytes, 1 << 15, names::SMALLINT)?;
    Ok(if negative {
        (m as i16).wrapping_neg()
    } else {
        m as i16
    })
}

/// Parses an INTEGER (`int4in`).
#[inline]
pub fn parse_i32(bytes: &[u8]) -> Result<i32, ValueError> {
    let (negative, m) = parse_integer(bytes, 1 << 31, names::INTEGER)?;
    Ok(if negative {
        (m as i32).wrapping_neg()
    } else {
        m as i32
    })
}

/// Parses a BIGINT (`int8in`).
#[inline]
pub fn parse_i64(bytes: &[u8]) -> Result<i64, ValueError> {
    let (negative, m) = parse_integer(bytes, 1 << 63, names::BIGINT)?;
    Ok(if negative {
        (m as i64).wrapping_neg()
    } else {
        m as i64
    })
}

// ---------------------------------------------------------------------------------------
// Floating point
// ---------------------------------------------------------------------------------------

/// The floating-point types PostgreSQL reads with `strtof` / `strtod`.
pub(super) trait PgFloat: std::str::FromStr + Copy {
    const INFINITY: Self;
    const NAN: Self;
    fn is_zero(self) -> bool;
    fn is_infinite(self) -> bool;
    fn negate(self) -> Self;
}

impl PgFloat for f32 {
    const INFINITY: Self = f32::INFINITY;
    const NAN: Self = f32::NAN;
    fn is_zero(self) -> bool {
        self == 0.0
    }
    fn is_infinite(self) -> bool {
        f32::is_infinite(self)
    }
    fn negate(self) -> Self {
        -self
    }
}

impl PgFloat for f64 {
    const INFINITY: Self = f64::INFINITY;
    const NAN: Self = f64::NAN;
    fn is_zero(self) -> bool {
        self == 0.0
    }
    fn is_infinite(self) -> bool {
        f64::is_infinite(self)
    }
    fn negate(self) -> Self {
        -self
    }
}

/// Whether `text` starts with `word`, ignoring ASCII case.
#[inline]
pub(super) fn starts_with_ignore_case(text: &[u8], word: &[u8]) -> bool {
    text.len() >= word.len() && text[..word.len()].eq_ignore_ascii_case(word)
}

/// `nan` or C's `nan(chars)`, ignoring case.
pub(super) fn is_nan_word(word: &[u8]) -> bool {
    word.eq_ignore_ascii_case(b"nan")
        || (starts_with_ignore_case(word, b"nan(")
            && word.ends_with(b")")
            && word[4..word.len() - 1]
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'_'))
}

/// Parses C `strtod` syntax (without hexadecimal floats) as PostgreSQL's `float4in` /
/// `float8in` do: overflow to infinity and underflow of a nonzero input to zero are
/// out of range; subnormal results are kept.
#[inline(always)]
pub(super) fn parse_float<F: PgFloat>(bytes: &[u8], ty: &'static str) -> Result<F, ValueError> {
    let syntax = ValueError::InvalidSyntax { ty };
    let text = trim(bytes);
    let n = text.len();
    let mut i = 0;
    let negative = match text.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let mut digits = 0usize;
    let mut nonzero = false;
    while i < n && digit(text[i]) <= 9 {
        nonzero |= text[i] != b'0';
        digits += 1;
        i += 1;
    }
    if i < n && text[i] == b'.' {
        i += 1;
        while i < n && digit(text[i]) <= 9 {
            nonzero |= text[i] != b'0';
            digits += 1;
            i += 1;
        }
    }
    if digits == 0 {
        // No mantissa: only the special values remain.
        let word = &text[i..];
        let value = if word.eq_ignore_ascii_case(b"inf") || word.eq_ignore_ascii_case(b"infinity") {
            F::INFINITY
        } else if is_nan_word(word) {
            F::NAN
        } else {
            return Err(syntax);
        };
        return Ok(if negative && value.is_infinite() {
            value.negate()
        } else {
            value
        });
    }
    if i < n && (text[i] | 0x20) == b'e' {
        i += 1;
        if i < n && (text[i] == b'+' || text[i] == b'-') {
            i += 1;
        }
        let exponent_start = i;
        while i < n && digit(text[i]) <= 9 {
            i += 1;
        }
        if i == exponent_start {
            return Err(syntax);
        }
    }
    if i != n {
        return Err(syntax);
    }
    // SAFETY: every byte of `text` was checked above to be an ASCII sign, digit, '.', 'e' or 'E'.
    let ascii = unsafe { std::str::from_utf8_unchecked(text) };
    let value: F = ascii.parse().map_err(|_| syntax)?;
    if value.is_infinite() || (nonzero && value.is_zero()) {
        return Err(ValueError::OutOfRange { ty });
    }
    Ok(value)
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

/// `10^i` for every `i` a DECIMAL precision can take.
pub(super) const POW10: [u128; 39] = {
    let mut table = [1u128; 39];
    let mut i = 1;
    while i < 39 {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

/// PostgreSQL's limit on the exponent of numeric input (`INT_MAX / 2`).
const NUMERIC_MAX_EXPONENT: i64 = (i32::MAX / 2) as i64;
/// PostgreSQL's largest display scale of a numeric (`NUMERIC_DSCALE_MAX`).
const NUMERIC_MAX_DSCALE: i64 = 0x3FFF;
/// One past the largest decimal weight a numeric can have (base-10000 weight 32767).
const NUMERIC_WEIGHT_LIMIT: i64 = 4 * 32768;

/// Parses a DECIMAL(precision, scale) (`numeric_in` plus the type modifier) into the
/// value times `10^scale`. Digits beyond the scale are rounded half away from zero; a
/// value that needs more than `precision - scale` integer digits after rounding is
/// [`ValueError::NumericOverflow`].
#[inline]
pub fn parse_decimal(bytes: &[u8], precision: u8, scale: u8) -> Result<i128, ValueError> {
    debug_assert!((1..=38).contains(&precision) && scale <= precision);
    let syntax = ValueError::InvalidSyntax { ty: names::NUMERIC };
    let out_of_range = ValueError::OutOfRange { ty: names::NUMERIC };
    let overflow = ValueError::NumericOverflow { precision, scale };
    let n = bytes.len();
    let mut i = skip_space(bytes, 0);
    let negative = match bytes.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let int_start = i;
    while i < n && digit(bytes[i]) <= 9 {
        i += 1;
    }
    let int_end = i;
    let (frac_start, frac_end) = if i < n && bytes[i] == b'.' {
        i += 1;
        let start = i;
        while i < n && digit(bytes[i]) <= 9 {
            i += 1;
        }
        (start, i)
    } else {
        (i, i)
    };
    let n_int = int_end - int_start;
    let n_frac = frac_end - frac_start;
    if n_int + n_frac == 0 {
        return special_numeric(bytes, precision, scale);
    }
    let mut exponent: i64 = 0;
    if i < n && (bytes[i] | 0x20) == b'e' {
        i += 1;
        let exponent_negative = match bytes.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let start = i;
        while i < n && digit(bytes[i]) <= 9 {
            // Saturates far above the limit below, so long exponents cannot overflow.
            exponent = (exponent * 10 + digit(bytes[i]) as i64).min(1 << 40);
            i += 1;
        }
        if i == start {
            return Err(syntax);
        }
        if exponent_negative {
            exponent = -exponent;
        }
        if exponent >= NUMERIC_MAX_EXPONENT || exponent <= -NUMERIC_MAX_EXPONENT {
            return Err(out_of_range);
        }
    }
    if skip_space(bytes, i) != n {
        return Err(syntax);
    }
    if n_frac as i64 - exponent > NUMERIC_MAX_DSCALE {
        return Err(out_of_range);
    }

    // The digits D = integer digits followed by fraction digits; the point sits after
    // `n_int + exponent` of them. The result keeps the first `keep` digits of D.
    let digit_at = |k: usize| -> u8 {
        if k < n_int {
            digit(bytes[int_start + k])
        } else {
            digit(bytes[frac_start + k - n_int])
        }
    };
    let n_digits = n_int + n_frac;
    let Some(first_nonzero) = (0..n_digits).find(|&k| digit_at(k) != 0) else {
        return Ok(0);
    };
    let weight = n_int as i64 - 1 - first_nonzero as i64 + exponent;
    if weight >= NUMERIC_WEIGHT_LIMIT {
        return Err(out_of_range);
    }
    let keep = n_int as i64 + exponent + scale as i64;
    // Significant digits of the result before rounding, zeros appended by the exponent included.
    let significant = keep - first_nonzero as i64;
    if significant > precision as i64 {
        return Err(overflow);
    }
    let mut magnitude: u128 = 0;
    if keep > 0 {
        let take = (keep as usize).min(n_digits);
        if take.saturating_sub(first_nonzero) <= 19 {
            let mut small: u64 = 0;
            for k in first_nonzero..take {
                small = small * 10 + digit_at(k) as u64;
            }
            magnitude = small as u128;
        } else {
            for k in first_nonzero..take {
                magnitude = magnitude * 10 + digit_at(k) as u128;
            }
        }
        if keep as usize > n_digits {
            // `significant <= precision` bounds the exponent here.
            magnitude *= POW10[keep as usize - n_digits];
        } else if take < n_digits && digit_at(take) >= 5 {
            magnitude += 1;
        }
    } else if keep == 0 && digit_at(0) >= 5 {
        magnitude = 1;
    }
    if magnitude >= POW10[precision as usize] {
        return Err(overflow);
    }
    let value = magnitude as i128;
    Ok(if negative { -value } else { value })
}

/// The special numeric inputs (`NaN`, `[+-]Infinity`, `[+-]inf`), none of which a
/// Decimal128 holds; anything else is a syntax error.
#[cold]
fn special_numeric(bytes: &[u8], precision: u8, scale: u8) -> Result<i128, ValueError> {
    let text = trim(bytes);
    let (signed, word) = match text.first() {
        Some(b'+' | b'-') => (true, &text[1..]),
        _ => (false, text),
    };
    if word.eq_ignore_ascii_case(b"infinity") || word.eq_ignore_ascii_case(b"inf") {
        // PostgreSQL: "numeric field overflow: cannot hold an infinite value".
        Err(ValueError::NumericOverflow { precision, scale })
    } else if !signed && word.eq_ignore_ascii_case(b"nan") {
        Err(ValueError::OutOfRange { ty: names::NUMERIC })
    } else {
        Err(ValueError::InvalidSyntax { ty: names::NUMERIC })
    }
}

// ---------------------------------------------------------------------------------------
// DATE and TIMESTAMP
// ---------------------------------------------------------------------------------------

/// The largest year of a PostgreSQL DATE.
const MAX_DATE_YEAR: u32 = 5_874_897;
pub(super) const MICROS_PER_SECOND: i64 = 1_000_000;
pub(super) const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SECOND;

#[inline(always)]
pub(super) fn is_leap_year(year: u32) -> bool {
    year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
}

#[inline(always)]
pub(crate) fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 => 28 + is_leap_year(year) as u32,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the proleptic Gregorian date (valid fields, year >= 1).
#[inline(always)]
pub(crate) fn days_from_civil(year: u32, month: u32, day: u32) -> i32 {
    // Howard Hinnant's algorithm, with years starting in March.
    let y = year as i64 - (month <= 2) as i64;
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let m = month as i64;
    let day_of_year = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day as i64 - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    (era * 146_097 + day_of_era - 719_468) as i32
}

/// Reads `Y-M-D` at the start of `text` (already trimmed at the front). Returns the day
/// number and the index after the date.
#[inline(always)]
fn parse_date_prefix(text: &[u8], ty: &'static str) -> Result<(i32, usize), ValueError> {
    let syntax = ValueError::InvalidSyntax { ty };
    let fast = text.len() >= 10
        && text[4] == b'-'
        && text[7] == b'-'
        && (text.len() == 10 || digit(text[10]) > 9)
        && [0, 1, 2, 3, 5, 6, 8, 9]
            .iter()
            .all(|&k| digit(text[k]) <= 9);
    let (year, month, day, end) = if fast {
        // Fast path: `YYYY-MM-DD` at fixed positions.
        let d = |k: usize| digit(text[k]) as u32;
        (
            d(0) * 1000 + d(1) * 100 + d(2) * 10 + d(3),
            d(5) * 10 + d(6),
            d(8) * 10 + d(9),
            10,
        )
    } else {
        let mut i = 0;
        let (year, year_digits) = read_number(text, &mut i, 9);
        if !(3..=9).contains(&year_digits) {
            return Err(if year_digits > 9 {
                ValueError::OutOfRange { ty }
            } else {
                syntax
            });
        }
        if text.get(i) != Some(&b'-') {
            return Err(syntax);
        }
        i += 1;
        let (month, month_digits) = read_number(text, &mut i, 2);
        if !(1..=2).contains(&month_digits) || text.get(i) != Some(&b'-') {
            return Err(syntax);
        }
        i += 1;
        let (day, day_digits) = read_number(text, &mut i, 2);
        if !(1..=2).contains(&day_digits) {
            return Err(syntax);
        }
        (year, month, day, i)
    };
    if year == 0 || !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return Err(ValueError::DateTimeOutOfRange);
    }
    if year > MAX_DATE_YEAR {
        return Err(ValueError::OutOfRange { ty });
    }
    Ok((days_from_civil(year, month, day), end))
}

/// Reads decimal digits from `text[*i..]`; returns the value of the first `max` digits
/// (saturating beyond them) and how many digits there were.
#[inline(always)]
fn read_number(text: &[u8], i: &mut usize, max: usize) -> (u32, usize) {
    let start = *i;
    let mut value: u32 = 0;
    while *i < text.len() && digit(text[*i]) <= 9 {
        if *i - start < max {
            value = value * 10 + digit(text[*i]) as u32;
        }
        *i += 1;
    }
    (value, *i - start)
}

/// Reads `H:MM[:SS[.fraction]]` and an optional time zone (checked, then ignored) from
/// `text[i..]` up to its end; returns the time of day in microseconds (up to 24:00:00).
fn parse_time_of_day(text: &[u8], mut i: usize, ty: &'static str) -> Result<i64, ValueError> {
    let syntax = ValueError::InvalidSyntax { ty };
    let n = text.len();
    let (hour, hour_digits) = read_number(text, &mut i, 2);
    if !(1..=2).contains(&hour_digits) || text.get(i) != Some(&b':') {
        return Err(syntax);
    }
    i += 1;
    let (minute, minute_digits) = read_number(text, &mut i, 2);
    if !(1..=2).contains(&minute_digits) {
        return Err(syntax);
    }
    let mut second = 0;
    let mut micros: i64 = 0;
    if text.get(i) == Some(&b':') {
        i += 1;
        let (s, second_digits) = read_number(text, &mut i, 2);
        if !(1..=2).contains(&second_digits) {
            return Err(syntax);
        }
        second = s;
        if text.get(i) == Some(&b'.') {
            let point = i;
            i += 1;
            let frac_start = i;
            while i < n && digit(text[i]) <= 9 {
                i += 1;
            }
            micros = fraction_to_micros(&text[point..i], &text[frac_start..i]);
        }
    }
    parse_time_zone(text, i, ty)?;
    let valid = hour <= 24
        && minute <= 59
        && second <= 60
        && (hour < 24 || (minute == 0 && second == 0 && micros == 0));
    let time =
        ((hour as i64 * 60 + minute as i64) * 60 + second as i64) * MICROS_PER_SECOND + micros;
    if !valid || time > MICROS_PER_DAY {
        return Err(ValueError::DateTimeOutOfRange);
    }
    Ok(time)
}

/// Rounds a fraction of a second to microseconds as PostgreSQL does: `rint(strtod(".ddd")
/// * 1e6)`, which is exact for up to six digits.
#[inline(always)]
fn fraction_to_micros(with_point: &[u8], digits: &[u8]) -> i64 {
    if digits.len() <= 6 {
        let mut micros: i64 = 0;
        for &b in digits {
            micros = micros * 10 + digit(b) as i64;
        }
        micros * [1_000_000, 100_000, 10_000, 1_000, 100, 10, 1][digits.len()]
    } else {
        // SAFETY: `with_point` is a '.' followed by ASCII digits.
        let text = unsafe { std::str::from_utf8_unchecked(with_point) };
        let fraction: f64 = text.parse().unwrap_or(0.0);
        (fraction * 1e6).round_ties_even() as i64
    }
}

/// Checks the rest of a timestamp after its time: whitespace, then optionally `Z`, `UTC`,
/// `GMT` or a numeric offset `±H[H][[:]MM]` of at most 15:59, then whitespace.
fn parse_time_zone(text: &[u8], i: usize, ty: &'static str) -> Result<(), ValueError> {
    let syntax = ValueError::InvalidSyntax { ty };
    let n = text.len();
    let mut i = skip_space(text, i);
    if i == n {
        return Ok(());
    }
    match text[i] {
        b'+' | b'-' => {
            i += 1;
            let (value, digits) = read_number(text, &mut i, 4);
            let (hours, minutes) = match digits {
                1 | 2 if text.get(i) == Some(&b':') => {
                    i += 1;
                    let (m, minute_digits) = read_number(text, &mut i, 2);
                    if !(1..=2).contains(&minute_digits) {
                        return Err(syntax);
                    }
                    (value, m)
                }
                1 | 2 => (value, 0),
                4 => (value / 100, value % 100),
                _ => return Err(syntax),
            };
            if hours > 15 || minutes > 59 {
                return Err(ValueError::DateTimeOutOfRange);
            }
        }
        _ => {
            let rest = &text[i..];
            let len =
                if starts_with_ignore_case(rest, b"utc") || starts_with_ignore_case(rest, b"gmt") {
                    3
                } else if rest[0] | 0x20 == b'z' {
                    1
                } else {
                    return Err(syntax);
                };
            i += len;
        }
    }
    if skip_space(text, i) == n {
        Ok(())
    } else {
        Err(syntax)
    }
}

/// Parses a DATE (`date_in`) written `YYYY-MM-DD` (year of 3 or more digits, month and
/// day of one or two) into days since 1970-01-01. A time after the date is checked and
/// dropped, as PostgreSQL does.
#[inline]
pub fn parse_date(bytes: &[u8]) -> Result<i32, ValueError> {
    let start = skip_space(bytes, 0);
    let text = &bytes[start..];
    let (days, end) = parse_date_prefix(text, names::DATE)?;
    if end == text.len() {
        return Ok(days);
    }
    match time_start(text, end) {
        Some(time) => parse_time_of_day(text, time, names::DATE).map(|_| days),
        None if skip_space(text, end) == text.len() => Ok(days),
        None => Err(ValueError::InvalidSyntax { ty: names::DATE }),
    }
}

/// Where the time begins after a date ending at `end`: after a `T` or whitespace (and
/// any whitespace after them), when a digit follows.
#[inline(always)]
fn time_start(text: &[u8], end: usize) -> Option<usize> {
    let separator = *text.get(end)?;
    if separator != b'T' && separator != b't' && !is_space(separator) {
        return None;
    }
    let i = skip_space(text, end + 1);
    (i < text.len() && digit(text[i]) <= 9).then_some(i)
}

/// Parses a TIMESTAMP (`timestamp_in`) written `YYYY-MM-DD[( |T)HH:MM[:SS[.fraction]]]`
/// into microseconds since 1970-01-01 00:00:00. The fraction is rounded to microseconds
/// as PostgreSQL does; `24:00:00` and leap second `:60` roll over to the next minute/day.
#[inline]
pub fn parse_timestamp(bytes: &[u8]) -> Result<i64, ValueError> {
    let start = skip_space(bytes, 0);
    let text = &bytes[start..];
    let (days, end) = parse_date_prefix(text, names::TIMESTAMP)?;
    let time = if end == text.len() {
        0
    } else {
        match time_start(text, end) {
            Some(time) => parse_time_of_day(text, time, names::TIMESTAMP)?,
            None if skip_space(text, end) == text.len() => 0,
            None => {
                return Err(ValueError::InvalidSyntax {
                    ty: names::TIMESTAMP,
                });
            }
        }
    };
    (days as i64)
        .checked_mul(MICROS_PER_DAY)
        .and_then(|t| t.checked_add(time))
        .ok_or(ValueError::OutOfRange {
            ty: names::TIMESTAMP,
        })
}
