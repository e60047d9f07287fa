//! Property tests: random values survive a trip through their text form exactly.

use proptest::prelude::*;

use crate::deser::*;
use crate::error::ValueError;

/// Days since 1970-01-01 of 0001-01-01 and of 5874897-12-31 (PostgreSQL's answers).
const FIRST_DAY: i32 = -719_162;
const LAST_DAY: i32 = 2_145_042_905;

/// The civil date of a day number (inverse of the parser's conversion, written the other way).
fn civil_from_days(days: i32) -> (i64, u32, u32) {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = year_of_era + era * 400 + (month <= 2) as i64;
    (year, month, day)
}

fn format_date(days: i32) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

fn format_decimal(value: i128, scale: u8) -> String {
    let sign = if value < 0 { "-" } else { "" };
    let magnitude = value.unsigned_abs();
    let unit = 10u128.pow(scale as u32);
    if scale == 0 {
        format!("{sign}{magnitude}")
    } else {
        format!(
            "{sign}{}.{:0width$}",
            magnitude / unit,
            magnitude % unit,
            width = scale as usize
        )
    }
}

/// A DECIMAL type and a value that fits it.
fn decimal_value() -> impl Strategy<Value = (u8, u8, i128)> {
    (1u8..=38)
        .prop_flat_map(|p| (Just(p), 0..=p))
        .prop_flat_map(|(p, s)| {
            let limit = 10i128.pow(p as u32);
            (Just(p), Just(s), -(limit - 1)..limit)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn integers_round_trip(a: i16, b: i32, c: i64) {
        prop_assert_eq!(parse_i16(a.to_string().as_bytes()), Ok(a));
        prop_assert_eq!(parse_i32(b.to_string().as_bytes()), Ok(b));
        prop_assert_eq!(parse_i64(c.to_string().as_bytes()), Ok(c));
        prop_assert_eq!(parse_i64(format!(" {c:+} ").as_bytes()), Ok(c));
        prop_assert_eq!(parse_i32(format!("\t{b:+}\n").as_bytes()), Ok(b));
    }

    #[test]
    fn integers_out_of_range(v in any::<i64>()) {
        let wide = v as i128 * 1000 + if v < 0 { -7 } else { 7 };
        let expected_i32 = i32::try_from(wide).map_err(|_| ValueError::OutOfRange { ty: "integer" });
        prop_assert_eq!(parse_i32(wide.to_string().as_bytes()), expected_i32);
        let expected_i64 = i64::try_from(wide).map_err(|_| ValueError::OutOfRange { ty: "bigint" });
        prop_assert_eq!(parse_i64(wide.to_string().as_bytes()), expected_i64);
    }

    #[test]
    fn decimals_round_trip((p, s, v) in decimal_value()) {
        let text = format_decimal(v, s);
        prop_assert_eq!(parse_decimal(text.as_bytes(), p, s), Ok(v), "{}", text);
        // The same value written with an exponent.
        let shifted = format!("{}e{}", format_decimal(v, 0), -(s as i32));
        prop_assert_eq!(parse_decimal(shifted.as_bytes(), p, s), Ok(v), "{}", shifted);
    }

    #[test]
    fn decimals_round_half_away_from_zero((p, s, v) in decimal_value(), extra in 0u32..1000) {
        // Three more fraction digits than the scale: the first decides the rounding.
        let text = format!("{}{}{:03}", format_decimal(v, s), if s == 0 { "." } else { "" }, extra);
        let away_from_zero = if v < 0 { -1 } else { 1 };
        let rounded = v + if extra >= 500 { away_from_zero } else { 0 };
        let expected = if rounded.unsigned_abs() >= 10u128.pow(p as u32) {
            Err(ValueError::NumericOverflow { precision: p, scale: s })
        } else {
            Ok(rounded)
        };
        prop_assert_eq!(parse_decimal(text.as_bytes(), p, s), expected, "{}", text);
    }

    #[test]
    fn dates_round_trip(days in FIRST_DAY..=LAST_DAY) {
        let text = format_date(days);
        prop_assert_eq!(parse_date(text.as_bytes()), Ok(days), "{}", text);
    }

    #[test]
    fn recent_dates_round_trip(days in -200_000i32..200_000) {
        let text = format_date(days);
        prop_assert_eq!(parse_date(text.as_bytes()), Ok(days), "{}", text);
    }

    #[test]
    fn timestamps_round_trip(micros in (FIRST_DAY as i64 * 86_400_000_000)..=i64::MAX) {
        let days = micros.div_euclid(86_400_000_000);
        let time = micros.rem_euclid(86_400_000_000);
        let (seconds, fraction) = (time / 1_000_000, time % 1_000_000);
        let text = format!(
            "{} {:02}:{:02}:{:02}.{:06}",
            format_date(days as i32),
            seconds / 3600,
            seconds / 60 % 60,
            seconds % 60,
            fraction
        );
        prop_assert_eq!(parse_timestamp(text.as_bytes()), Ok(micros), "{}", text);
        let iso = text.replacen(' ', "T", 1);
        prop_assert_eq!(parse_timestamp(iso.as_bytes()), Ok(micros), "{}", iso);
    }

    #[test]
    fn doubles_round_trip(bits: u64) {
        let v = f64::from_bits(bits);
        prop_assume!(v.is_finite());
        for text in [format!("{v}"), format!("{v:e}"), format!("{v:E}"), format!(" {v:?} ")] {
            let parsed = parse_f64(text.as_bytes());
            prop_assert_eq!(parsed.map(f64::to_bits), Ok(bits), "{}", text);
        }
    }

    #[test]
    fn reals_round_trip(bits: u32) {
        let v = f32::from_bits(bits);
        prop_assume!(v.is_finite());
        for text in [format!("{v}"), format!("{v:e}")] {
            let parsed = parse_f32(text.as_bytes());
            prop_assert_eq!(parsed.map(f32::to_bits), Ok(bits), "{}", text);
        }
    }

    #[test]
    fn reals_are_rounded_once(x in 1.0e-3f32..1.0e6f32) {
        // The exact midpoint between x and the next f32 rounds to the even one; a digit
        // more rounds up. Rounding through f64 first would land on the midpoint and lose that.
        let up = f32::from_bits(x.to_bits() + 1);
        let midpoint = (x as f64 + up as f64) / 2.0;
        let exact = format!("{midpoint:.80e}");
        let (mantissa, exponent) = exact.split_once('e').unwrap();
        prop_assert!(mantissa.trim_end_matches('0').len() < 70, "{} is not exact", exact);
        let above = format!("{}1e{exponent}", mantissa.trim_end_matches('0'));
        let even = if x.to_bits() % 2 == 0 { x } else { up };
        prop_assert_eq!(parse_f32(exact.as_bytes()), Ok(even), "{}", exact);
        prop_assert_eq!(parse_f32(above.as_bytes()), Ok(up), "{}", above);
    }
}

#[test]
fn every_day_of_four_centuries_is_consecutive() {
    // Walk 1900-01-01 .. 2300-12-31 by the calendar and compare with the parser's numbers.
    let mut expected = parse_date(b"1900-01-01").unwrap();
    for year in 1900..=2300 {
        for month in 1..=12u32 {
            let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
            let days = match month {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            for day in 1..=days {
                let text = format!("{year}-{month:02}-{day:02}");
                assert_eq!(parse_date(text.as_bytes()), Ok(expected), "{text}");
                expected += 1;
            }
            let impossible = format!("{year}-{month:02}-{:02}", days + 1);
            assert_eq!(
                parse_date(impossible.as_bytes()),
                Err(ValueError::DateTimeOutOfRange),
                "{impossible}"
            );
        }
    }
}
