//! The text of one value of each type, as PostgreSQL writes it and as wireload's
//! deserializers read it back: appended to a byte buffer, without allocating.

use super::out::{DIGIT_PAIRS, Out, digit_count};

/// The largest year of a DATE the loader reads back (PostgreSQL's limit).
pub(crate) const MAX_YEAR: i64 = 5_874_897;

/// Days from 0000-03-01 to 1970-01-01 in the proleptic Gregorian calendar.
const EPOCH_SHIFT: i64 = 719_468;
/// Days in 400 Gregorian years.
const DAYS_PER_ERA: i64 = 146_097;
const SECONDS_PER_DAY: i64 = 86_400;

/// The proleptic Gregorian (year, month, day) of `days` since 1970-01-01.
#[inline(always)]
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    match u32::try_from(days + FAST_SHIFT) {
        Ok(n) => civil_fast(n),
        Err(_) => civil_from_days_hinnant(days),
    }
}

/// Days added so that every date from year -32800 on is a `u32` for [`civil_fast`]
/// (82 eras of 400 years before 0000-03-01, where its computational calendar starts).
const FAST_SHIFT: i64 = EPOCH_SHIFT + DAYS_PER_ERA * 82;

/// Neri and Schneider's Euclidean affine `civil_from_days` ("Euclidean affine functions
/// and their application to calendar algorithms", 2022): multiplications and shifts
/// only, for `n` days after 0000-03-01 minus 82 eras.
#[inline(always)]
fn civil_fast(n: u32) -> (i64, u32, u32) {
    // Century and day of the century.
    let n1 = 4 * n as u64 + 3;
    let century = n1 / DAYS_PER_ERA as u64;
    let day_of_century = (n1 % DAYS_PER_ERA as u64 / 4) as u32;
    // Year of the century and day of the (March-based) year.
    let n2 = 4 * day_of_century as u64 + 3;
    let p2 = 2_939_745 * n2;
    let year_of_century = p2 >> 32;
    let day_of_year = (p2 as u32) / 2_939_745 / 4;
    // Month and day (March = 3 .. February = 14).
    let n3 = 2141 * day_of_year + 197_913;
    let month = n3 >> 16;
    let day = (n3 & 0xffff) / 2141 + 1;
    let january_or_february = day_of_year >= 306;
    let year = (100 * century + year_of_century) as i64 + january_or_february as i64 - 400 * 82;
    let month = if january_or_february {
        month - 12
    } else {
        month
    };
    (year, month, day)
}

/// Howard Hinnant's `civil_from_days`, for days of any `i64`.
fn civil_from_days_hinnant(days: i64) -> (i64, u32, u32) {
    let z = days + EPOCH_SHIFT;
    let era = z.div_euclid(DAYS_PER_ERA);
    let day_of_era = z.rem_euclid(DAYS_PER_ERA);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (year_of_era + era * 400 + (month <= 2) as i64, month, day)
}

/// Appends `YYYY-MM-DD` (the year zero-padded to four digits, longer when it is larger).
#[inline(always)]
fn push_ymd(out: &mut Out, year: i64, month: u32, day: u32) {
    debug_assert!((1..=MAX_YEAR).contains(&year));
    let year = year as u64;
    let year_digits = digit_count(year).max(4);
    out.put_fixed_digits(year, year_digits);
    let text = out.spare(6);
    text[0] = b'-';
    text[1..3].copy_from_slice(&DIGIT_PAIRS[month as usize]);
    text[3] = b'-';
    text[4..6].copy_from_slice(&DIGIT_PAIRS[day as usize]);
    out.advance(6);
}

/// Why a date of `year` cannot be written, or `None` when it can.
#[cold]
#[inline(never)]
fn year_out_of_range(what: &str, year: i64, month: u32, day: u32) -> String {
    let shown = if year < 1 {
        // Year 0 is 1 BC in the proleptic Gregorian calendar.
        format!("{:04}-{month:02}-{day:02} BC", 1 - year)
    } else {
        format!("{year}-{month:02}-{day:02}")
    };
    format!(
        "the {what} {shown} is outside the range the loader reads back \
         (years 1 to {MAX_YEAR}); filter or convert it before unloading"
    )
}

/// Appends the DATE `days` after 1970-01-01 as `YYYY-MM-DD`.
#[inline(always)]
pub(crate) fn push_date(out: &mut Out, days: i64) -> Result<(), String> {
    let (year, month, day) = civil_from_days(days);
    if !(1..=MAX_YEAR).contains(&year) {
        return Err(year_out_of_range("date", year, month, day));
    }
    push_ymd(out, year, month, day);
    Ok(())
}

/// Appends the TIMESTAMP `seconds` after 1970-01-01 00:00:00 plus `fraction` units of
/// `10^-digits` seconds (`fraction < 10^digits`) as `YYYY-MM-DD HH:MM:SS[.fff]`, the
/// fraction without trailing zeros and left out when zero.
#[inline(always)]
pub(crate) fn push_timestamp(
    out: &mut Out,
    seconds: i64,
    fraction: u32,
    digits: u32,
) -> Result<(), String> {
    let days = seconds.div_euclid(SECONDS_PER_DAY);
    let second_of_day = seconds.rem_euclid(SECONDS_PER_DAY) as u32;
    let (year, month, day) = civil_from_days(days);
    if !(1..=MAX_YEAR).contains(&year) {
        return Err(year_out_of_range("timestamp", year, month, day));
    }
    push_ymd(out, year, month, day);
    let text = out.spare(20);
    text[0] = b' ';
    text[1..3].copy_from_slice(&DIGIT_PAIRS[(second_of_day / 3600) as usize]);
    text[3] = b':';
    text[4..6].copy_from_slice(&DIGIT_PAIRS[(second_of_day / 60 % 60) as usize]);
    text[6] = b':';
    text[7..9].copy_from_slice(&DIGIT_PAIRS[(second_of_day % 60) as usize]);
    out.advance(9);
    if fraction != 0 {
        // Trailing zeros dropped: fewer digits of a smaller number.
        let mut fraction = fraction as u64;
        let mut digits = digits as usize;
        while fraction.is_multiple_of(10) {
            fraction /= 10;
            digits -= 1;
        }
        out.push(b'.');
        out.put_fixed_digits(fraction, digits);
    }
    Ok(())
}

/// Appends the TIMESTAMP `micros` microseconds after 1970-01-01 00:00:00.
#[inline(always)]
pub(crate) fn push_timestamp_micros(out: &mut Out, micros: i64) -> Result<(), String> {
    push_timestamp(
        out,
        micros.div_euclid(1_000_000),
        micros.rem_euclid(1_000_000) as u32,
        6,
    )
}

/// Appends `value * 10^-scale` exactly: `-0.05`, `12.00`, `0`; a negative scale appends
/// zeros (`123` at scale -2 is `12300`).
#[inline(always)]
pub(crate) fn push_decimal(out: &mut Out, value: i128, scale: i8) {
    if value < 0 {
        out.push(b'-');
    }
    let magnitude = value.unsigned_abs();
    match u64::try_from(magnitude) {
        Ok(m) if scale == 0 => out.put_u64(m),
        Ok(m) if (1..20).contains(&scale) => out.put_scaled(m, scale as usize),
        _ => push_decimal_wide(out, magnitude, scale),
    }
}

/// [`push_decimal`] of a magnitude of any size and any scale.
#[inline(never)]
fn push_decimal_wide(out: &mut Out, magnitude: u128, scale: i8) {
    let mut itoa_buf = itoa::Buffer::new();
    let digits = itoa_buf.format(magnitude).as_bytes();
    if scale <= 0 {
        out.put(digits);
        if magnitude != 0 {
            out.fill(b'0', scale.unsigned_abs() as usize);
        }
        return;
    }
    let scale = scale as usize;
    if digits.len() > scale {
        let point = digits.len() - scale;
        out.put(&digits[..point]);
        out.push(b'.');
        out.put(&digits[point..]);
    } else {
        out.put(b"0.");
        out.fill(b'0', scale - digits.len());
        out.put(digits);
    }
}

/// The spelling of a float that is not finite, as PostgreSQL writes it.
#[inline(always)]
fn non_finite(is_nan: bool, negative: bool) -> &'static [u8] {
    if is_nan {
        b"NaN"
    } else if negative {
        b"-Infinity"
    } else {
        b"Infinity"
    }
}

/// Appends the shortest text that reads back as exactly `text`'s float: ryu's, with a
/// trailing `.0` dropped as PostgreSQL does (`1`, `-0`, `0.1`, `1e300`, `1.5e-7`).
#[inline(always)]
fn push_shortest(out: &mut Out, text: &str) {
    let bytes = text.as_bytes();
    out.put(bytes.strip_suffix(b".0").unwrap_or(bytes));
}

/// Appends a DOUBLE PRECISION.
#[inline(always)]
pub(crate) fn push_f64(out: &mut Out, ryu_buf: &mut ryu::Buffer, value: f64) {
    if value.is_finite() {
        push_shortest(out, ryu_buf.format_finite(value));
    } else {
        out.put(non_finite(value.is_nan(), value < 0.0));
    }
}

/// Appends a REAL.
#[inline(always)]
pub(crate) fn push_f32(out: &mut Out, ryu_buf: &mut ryu::Buffer, value: f32) {
    if value.is_finite() {
        push_shortest(out, ryu_buf.format_finite(value));
    } else {
        out.put(non_finite(value.is_nan(), value < 0.0));
    }
}

/// Appends a BOOLEAN as `true` or `false`.
#[inline(always)]
pub(crate) fn push_bool(out: &mut Out, value: bool) {
    if value {
        out.put(b"true");
    } else {
        out.put(b"false");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text<F: FnOnce(&mut Out)>(f: F) -> String {
        let mut out = Out::default();
        f(&mut out);
        String::from_utf8(out.as_slice().to_vec()).unwrap()
    }

    /// Days since 1970 of a valid date, by counting (the scalar twin of Hinnant's formula).
    fn days_by_counting(year: i64, month: u32, day: u32) -> i64 {
        let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let mut days = 0i64;
        if year >= 1970 {
            for y in 1970..year {
                days += 365 + leap(y) as i64;
            }
        } else {
            for y in year..1970 {
                days -= 365 + leap(y) as i64;
            }
        }
        let lengths = [
            31,
            28 + leap(year) as u32,
            31,
            30,
            31,
            30,
            31,
            31,
            30,
            31,
            30,
            31,
        ];
        days += lengths[..month as usize - 1].iter().sum::<u32>() as i64;
        days + day as i64 - 1
    }

    #[test]
    fn civil_from_days_matches_counting() {
        for (y, m, d) in [
            (1970, 1, 1),
            (1969, 12, 31),
            (2000, 2, 29),
            (1900, 3, 1),
            (1, 1, 1),
            (1600, 2, 29),
            (2400, 12, 31),
            (9999, 12, 31),
        ] {
            let days = days_by_counting(y, m, d);
            assert_eq!(civil_from_days(days), (y, m, d), "{y}-{m}-{d}");
        }
        // every day of a few leap cycles around the epoch
        let mut previous = civil_from_days(-800);
        for days in -799..800 {
            let now = civil_from_days(days);
            assert_eq!(days_by_counting(now.0, now.1, now.2), days);
            assert!(now > previous);
            previous = now;
        }
    }

    #[test]
    fn the_fast_calendar_matches_hinnant_everywhere_it_is_used() {
        let check = |days: i64| {
            let n = u32::try_from(days + FAST_SHIFT).unwrap();
            assert_eq!(civil_fast(n), civil_from_days_hinnant(days), "{days}");
        };
        for days in -2_000_000..2_000_000 {
            check(days);
        }
        // both ends of the fast range, the last Date32, and a sample in between
        let (low, high) = (-FAST_SHIFT, u32::MAX as i64 - FAST_SHIFT);
        for days in (low..low + 100_000).chain(high - 100_000..=high) {
            check(days);
        }
        check(i32::MAX as i64);
        let mut days = low;
        while days < high {
            check(days);
            days += 9_973;
        }
        // outside, the general formula is used
        assert_eq!(civil_from_days(high + 1), civil_from_days_hinnant(high + 1));
        assert_eq!(civil_from_days(low - 1), civil_from_days_hinnant(low - 1));
        assert_eq!(
            civil_from_days(i64::MIN / 2),
            civil_from_days_hinnant(i64::MIN / 2)
        );
    }

    #[test]
    fn dates_pad_years_and_reject_bc() {
        let date = |days| text(|b| push_date(b, days).unwrap());
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(-1), "1969-12-31");
        assert_eq!(date(days_by_counting(1, 1, 1)), "0001-01-01");
        assert_eq!(date(days_by_counting(999, 7, 4)), "0999-07-04");
        assert_eq!(date(days_by_counting(10_000, 1, 1)), "10000-01-01");
        let pg_last = days_by_counting(5_874_897, 12, 31);
        assert_eq!(date(pg_last), "5874897-12-31");
        assert_eq!(
            wireload_types::deser::parse_date(b"5874897-12-31"),
            Ok(pg_last as i32)
        );
        let err = push_date(&mut Out::default(), pg_last + 1).unwrap_err();
        assert!(err.contains("5874898-01-01"), "{err}");
        let err = push_date(&mut Out::default(), days_by_counting(1, 1, 1) - 1).unwrap_err();
        assert!(err.contains("0001-12-31 BC"), "{err}");
        assert!(err.contains("years 1 to 5874897"), "{err}");
    }

    #[test]
    fn timestamps_trim_fractions() {
        let ts = |micros| text(|b| push_timestamp_micros(b, micros).unwrap());
        assert_eq!(ts(0), "1970-01-01 00:00:00");
        assert_eq!(ts(-1), "1969-12-31 23:59:59.999999");
        assert_eq!(ts(1_500_000), "1970-01-01 00:00:01.5");
        assert_eq!(ts(86_399_000_010), "1970-01-01 23:59:59.00001");
        assert_eq!(ts(i64::MAX), "294247-01-10 04:00:54.775807");
        let nanos = text(|b| push_timestamp(b, 0, 123_456_780, 9).unwrap());
        assert_eq!(nanos, "1970-01-01 00:00:00.12345678");
        assert!(push_timestamp_micros(&mut Out::default(), i64::MIN).is_err());
    }

    #[test]
    fn decimals_are_exact() {
        let dec = |v, s| text(|b| push_decimal(b, v, s));
        assert_eq!(dec(-5, 2), "-0.05");
        assert_eq!(dec(1200, 2), "12.00");
        assert_eq!(dec(0, 2), "0.00");
        assert_eq!(dec(0, 0), "0");
        assert_eq!(dec(7, 0), "7");
        assert_eq!(dec(-123, 1), "-12.3");
        assert_eq!(dec(123, -2), "12300");
        assert_eq!(dec(0, -2), "0");
        assert_eq!(dec(123_456, 19), "0.0000000000000123456");
        assert_eq!(dec(-(u64::MAX as i128), 19), "-1.8446744073709551615");
        assert_eq!(dec(u64::MAX as i128 + 1, 19), "1.8446744073709551616");
        assert_eq!(dec(12_345, 20), "0.00000000000000012345");
        assert_eq!(dec(99_999, 5), "0.99999");
        assert_eq!(dec(100_000, 5), "1.00000");
        let max = 10i128.pow(38) - 1;
        assert_eq!(dec(max, 38), format!("0.{}", "9".repeat(38)));
        assert_eq!(dec(-max, 0), format!("-{}", "9".repeat(38)));
        assert_eq!(
            dec(i128::MIN, 0),
            "-170141183460469231731687303715884105728"
        );
    }

    #[test]
    fn floats_are_shortest_and_spelled_as_postgresql() {
        let mut r = ryu::Buffer::new();
        let f = |v: f64, r: &mut ryu::Buffer| text(|b| push_f64(b, r, v));
        assert_eq!(f(1.0, &mut r), "1");
        assert_eq!(f(-0.0, &mut r), "-0");
        assert_eq!(f(0.1, &mut r), "0.1");
        assert_eq!(f(1e300, &mut r), "1e300");
        assert_eq!(f(1.5e-7, &mut r), "1.5e-7");
        assert_eq!(f(f64::NAN, &mut r), "NaN");
        assert_eq!(f(f64::INFINITY, &mut r), "Infinity");
        assert_eq!(f(f64::NEG_INFINITY, &mut r), "-Infinity");
        assert_eq!(text(|b| push_f32(b, &mut r, 0.1f32)), "0.1");
        assert_eq!(text(|b| push_f32(b, &mut r, -f32::INFINITY)), "-Infinity");
    }
}
