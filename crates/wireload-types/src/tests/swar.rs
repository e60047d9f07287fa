//! The fast (SWAR) deserializers against their scalar twins: for every input, valid or
//! not, both must return the same `Result`, and a fast path alone (the typed loops'
//! `quick_*`) gives a value only where the twin gives the same one. Also the word helpers
//! against naive loops.

use proptest::prelude::*;

use crate::deser::{self, scalar};
use crate::swar;

/// The DECIMAL types every input is tried with: TPC-H's, the extremes, and scales far
/// above the number of fraction digits.
const DECIMAL_TYPES: [(u8, u8); 11] = [
    (15, 2),
    (5, 2),
    (3, 3),
    (1, 0),
    (12, 2),
    (18, 10),
    (38, 0),
    (38, 10),
    (38, 25),
    (38, 38),
    (10, 9),
];

fn same_float<T: PartialEq + Copy, F: Fn(T) -> u64>(
    a: Result<T, crate::ValueError>,
    b: Result<T, crate::ValueError>,
    bits: F,
) -> bool {
    match (a, b) {
        (Ok(x), Ok(y)) => bits(x) == bits(y),
        (a, b) => a == b,
    }
}

/// Every difference between the fast parsers and their scalar twins on `input`.
fn differences(input: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |name: &str, same: bool, fast: String, slow: String| {
        if !same {
            out.push(format!(
                "{name} of {:?}: fast {fast}, scalar {slow}",
                String::from_utf8_lossy(input)
            ));
        }
    };
    macro_rules! compare {
        ($name:expr, $fast:expr, $slow:expr) => {{
            let (f, s) = ($fast, $slow);
            check($name, f == s, format!("{f:?}"), format!("{s:?}"));
        }};
    }
    compare!("i16", deser::parse_i16(input), scalar::parse_i16(input));
    compare!("i32", deser::parse_i32(input), scalar::parse_i32(input));
    compare!("i64", deser::parse_i64(input), scalar::parse_i64(input));
    compare!("date", deser::parse_date(input), scalar::parse_date(input));
    compare!(
        "timestamp",
        deser::parse_timestamp(input),
        scalar::parse_timestamp(input)
    );
    for (p, s) in DECIMAL_TYPES {
        compare!(
            &format!("decimal({p},{s})"),
            deser::parse_decimal(input, p, s),
            scalar::parse_decimal(input, p, s)
        );
    }
    // The fast paths the typed loops inline: where one gives a value, it is the scalar
    // twin's (where it gives none, the loop asks the full parser, compared above).
    macro_rules! quick {
        ($name:expr, $quick:expr, $slow:expr, $bits:expr) => {{
            if let Some(q) = $quick {
                let s = $slow;
                let same = s.as_ref().is_ok_and(|v| $bits(*v) == $bits(q));
                check($name, same, format!("{q:?}"), format!("{s:?}"));
            }
        }};
    }
    // (fast path, scalar twin, the bits compared) per type
    macro_rules! quick_all {
        ($($quick:ident, $slow:ident, $bits:expr;)*) => {$(
            quick!(stringify!($quick), deser::$quick(input), scalar::$slow(input), $bits);
        )*};
    }
    quick_all! {
        quick_i16, parse_i16, |v| v;
        quick_i32, parse_i32, |v| v;
        quick_i64, parse_i64, |v| v;
        quick_date, parse_date, |v| v;
        quick_timestamp, parse_timestamp, |v| v;
        quick_f64, parse_f64, f64::to_bits;
        quick_f32, parse_f32, f32::to_bits;
    }
    for (p, s) in DECIMAL_TYPES {
        quick!(
            &format!("quick decimal({p},{s})"),
            deser::QuickDecimal::new(p, s).parse(input),
            scalar::parse_decimal(input, p, s),
            |v| v
        );
    }
    let (f, s) = (deser::parse_f64(input), scalar::parse_f64(input));
    check(
        "f64",
        same_float(f.clone(), s.clone(), f64::to_bits),
        format!("{f:?}"),
        format!("{s:?}"),
    );
    let (f, s) = (deser::parse_f32(input), scalar::parse_f32(input));
    check(
        "f32",
        same_float(f.clone(), s.clone(), |v: f32| v.to_bits() as u64),
        format!("{f:?}"),
        format!("{s:?}"),
    );
    out
}

fn assert_same(input: &[u8]) {
    let d = differences(input);
    assert!(d.is_empty(), "{}", d.join("\n"));
}

/// Typical fields of every fast shape, and a few near them.
const SEEDS: &[&str] = &[
    "0",
    "7",
    "-5",
    "+42",
    "1234",
    "-123456789",
    "12345678",
    "123456789012345",
    "-9223372036854775808",
    "9223372036854775807",
    "1234567890123456",
    "17.00",
    "0.04",
    "21168.23",
    "104949.50",
    "-1.5",
    ".5",
    "12.",
    "1234567.1234567",
    "1996-03-13",
    "2000-02-29",
    "1996-03-13 12:34:56",
    "1996-03-13T23:59:60.5",
    "2024-12-31 24:00:00.000000",
    "1.5e3",
    "-2.5E-3",
];

#[test]
fn every_byte_at_every_position_agrees() {
    let mut failures = Vec::new();
    for seed in SEEDS {
        let seed = seed.as_bytes();
        for pos in 0..=seed.len() {
            for b in 0..=255u8 {
                // Replaced, inserted.
                let mut replaced = seed.to_vec();
                if pos < seed.len() {
                    replaced[pos] = b;
                    failures.extend(differences(&replaced));
                }
                let mut inserted = seed.to_vec();
                inserted.insert(pos, b);
                failures.extend(differences(&inserted));
            }
        }
        assert!(
            failures.is_empty(),
            "{}",
            failures[..failures.len().min(20)].join("\n")
        );
    }
}

#[test]
fn truncated_and_over_long_fields_agree() {
    for seed in SEEDS {
        let seed = seed.as_bytes();
        for end in 0..=seed.len() {
            assert_same(&seed[..end]);
            assert_same(&seed[end..]);
            let mut deleted = seed.to_vec();
            if end < seed.len() {
                deleted.remove(end);
                assert_same(&deleted);
            }
        }
        for tail in [
            "0",
            "9",
            "00000000",
            "12345678901234567890",
            "x",
            " ",
            ".",
            "e5",
        ] {
            let mut long = seed.to_vec();
            long.extend_from_slice(tail.as_bytes());
            assert_same(&long);
            let mut long = tail.as_bytes().to_vec();
            long.extend_from_slice(seed);
            assert_same(&long);
        }
    }
}

#[test]
fn fields_inside_a_larger_buffer_read_only_themselves() {
    // Digits on both sides: a load past either end of the field would change the value.
    for seed in SEEDS {
        for pad in ["", "9", "99999999", "9999999999999999"] {
            let buffer = format!("{pad}{seed}{pad}");
            let field = &buffer.as_bytes()[pad.len()..pad.len() + seed.len()];
            assert_same(field);
            assert_eq!(differences(field), differences(seed.as_bytes()));
        }
    }
}

#[test]
fn every_date_of_four_digit_years_agrees() {
    // 0001-01-01 .. 9999-12-31 by the calendar, plus each month's impossible days.
    let mut text = *b"0000-00-00";
    for year in [
        0u32, 1, 2, 3, 4, 99, 100, 400, 1900, 1970, 1992, 1998, 2000, 2024, 9999,
    ] {
        for month in 0..=99 {
            for day in 0..=99 {
                write_date(&mut text, year, month, day);
                assert_eq!(deser::parse_date(&text), scalar::parse_date(&text));
            }
        }
    }
    let mut expected = scalar::parse_date(b"0001-01-01").unwrap();
    for year in 1..=9999u32 {
        for month in 1..=12 {
            for day in 1..=31 {
                write_date(&mut text, year, month, day);
                let got = deser::parse_date(&text);
                if got.is_ok() {
                    assert_eq!(got, Ok(expected), "{}", String::from_utf8_lossy(&text));
                    expected += 1;
                }
                assert_eq!(got, scalar::parse_date(&text));
            }
        }
    }
    assert_eq!(expected, scalar::parse_date(b"10000-01-01").unwrap());
}

fn write_date(text: &mut [u8; 10], year: u32, month: u32, day: u32) {
    let digits = |v: u32, out: &mut [u8]| {
        let mut v = v;
        for b in out.iter_mut().rev() {
            *b = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    digits(year, &mut text[0..4]);
    digits(month, &mut text[5..7]);
    digits(day, &mut text[8..10]);
}

#[test]
fn load_never_reads_past_the_slice() {
    let buffer: Vec<u8> = (1..=40).collect();
    for start in 0..20 {
        for len in 0..=20 {
            let slice = &buffer[start..start + len];
            let mut padded = [0u8; 16];
            let k = len.min(16);
            padded[..k].copy_from_slice(&slice[..k]);
            let expected = u128::from_le_bytes(padded);
            assert_eq!(swar::load(slice), expected as u64, "{start} {len}");
            assert_eq!(swar::load16(slice), expected, "{start} {len}");
        }
    }
}

#[test]
fn non_digits_flags_exactly_the_non_digits() {
    for b in 0..=255u8 {
        for pos in 0..8 {
            let mut bytes = *b"01234567";
            bytes[pos] = b;
            let w = u64::from_le_bytes(bytes);
            let expected = if b.is_ascii_digit() {
                0
            } else {
                0x80u64 << (8 * pos)
            };
            assert_eq!(swar::non_digits(w), expected, "{b:#x} at {pos}");
            assert_eq!(
                swar::leading_digits(w),
                if b.is_ascii_digit() { 8 } else { pos }
            );
            let x = (w as u128) << 64 | u64::from_le_bytes(*b"98765432") as u128;
            assert_eq!(swar::non_digits16(x), (expected as u128) << 64);
        }
    }
}

fn decimal_text() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["", "-", "+"]),
        "[0-9]{0,20}",
        prop::option::of("[0-9]{0,20}"),
    )
        .prop_map(|(sign, int, frac)| match frac {
            Some(frac) => format!("{sign}{int}.{frac}"),
            None => format!("{sign}{int}"),
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn parse_first_matches_a_digit_loop(digits in "[0-9]{1,16}") {
        let expected: u64 = digits.parse().unwrap();
        let x = swar::load16(digits.as_bytes());
        prop_assert_eq!(swar::parse_first16(x, digits.len()), expected);
        if digits.len() <= 8 {
            prop_assert_eq!(swar::parse_first(x as u64, digits.len()), expected);
        }
    }

    #[test]
    fn integers_agree_and_round_trip(
        v in prop_oneof![any::<i64>(), -100_000i64..100_000, -1_000_000_000i64..1_000_000_000],
        zeros in 0usize..20,
        plus in any::<bool>(),
        space in prop::sample::select(vec!["", " ", "\t", "\n "]),
    ) {
        let sign = if v < 0 { "-" } else if plus { "+" } else { "" };
        let text = format!("{space}{sign}{}{}{space}", "0".repeat(zeros), v.unsigned_abs());
        prop_assert!(differences(text.as_bytes()).is_empty(), "{:?}", differences(text.as_bytes()));
        prop_assert_eq!(deser::parse_i64(text.as_bytes()), Ok(v));
        if let Ok(v32) = i32::try_from(v) {
            prop_assert_eq!(deser::parse_i32(text.as_bytes()), Ok(v32));
        }
        if let Ok(v16) = i16::try_from(v) {
            prop_assert_eq!(deser::parse_i16(text.as_bytes()), Ok(v16));
        }
    }

    #[test]
    fn wide_integers_agree(v in any::<i128>(), digits in 1u32..40) {
        let text = (v % 10i128.pow(digits.min(38))).to_string();
        prop_assert!(differences(text.as_bytes()).is_empty(), "{:?}", differences(text.as_bytes()));
    }

    #[test]
    fn decimals_agree(text in decimal_text()) {
        prop_assert!(differences(text.as_bytes()).is_empty(), "{:?}", differences(text.as_bytes()));
    }

    #[test]
    fn tpch_decimals_round_trip(cents in -10_000_000_000i64..10_000_000_000) {
        let text = format!("{}{}.{:02}", if cents < 0 { "-" } else { "" }, cents.unsigned_abs() / 100, cents.unsigned_abs() % 100);
        prop_assert_eq!(deser::parse_decimal(text.as_bytes(), 15, 2), Ok(cents as i128));
        prop_assert!(differences(text.as_bytes()).is_empty(), "{:?}", differences(text.as_bytes()));
    }

    #[test]
    fn timestamps_agree(
        date in "[0-9]{4}-[0-9]{2}-[0-9]{2}",
        separator in prop::sample::select(vec![" ", "T", "t", "\t", "  ", "x"]),
        hour in 0u32..30, minute in 0u32..65, second in 0u32..65,
        fraction in "(\\.[0-9]{0,9})?",
        tail in prop::sample::select(vec!["", " ", "Z", "+02", "x"]),
    ) {
        let text = format!("{date}{separator}{hour:02}:{minute:02}:{second:02}{fraction}{tail}");
        prop_assert!(differences(text.as_bytes()).is_empty(), "{:?}", differences(text.as_bytes()));
    }

    #[test]
    fn random_short_texts_agree(text in "[-+ .0-9eETt:\tx]{0,28}") {
        prop_assert!(differences(text.as_bytes()).is_empty(), "{:?}", differences(text.as_bytes()));
    }

    #[test]
    fn random_bytes_agree(bytes in prop::collection::vec(any::<u8>(), 0..24)) {
        prop_assert!(differences(&bytes).is_empty(), "{:?}", differences(&bytes));
    }

    #[test]
    fn doubles_agree_and_round_trip(bits: u64) {
        let v = f64::from_bits(bits);
        prop_assume!(v.is_finite());
        for text in [format!("{v}"), format!("{v:e}"), format!("{v:.3e}"), format!("{:.0}", v.abs() % 1e20)] {
            prop_assert!(differences(text.as_bytes()).is_empty(), "{:?}", differences(text.as_bytes()));
        }
        prop_assert_eq!(deser::parse_f64(format!("{v}").as_bytes()).map(f64::to_bits), Ok(bits));
        prop_assert_eq!(deser::parse_f64(format!("{v:e}").as_bytes()).map(f64::to_bits), Ok(bits));
    }

    #[test]
    fn reals_agree_and_round_trip(bits: u32) {
        let v = f32::from_bits(bits);
        prop_assume!(v.is_finite());
        for text in [format!("{v}"), format!("{v:e}")] {
            prop_assert!(differences(text.as_bytes()).is_empty(), "{:?}", differences(text.as_bytes()));
            prop_assert_eq!(deser::parse_f32(text.as_bytes()).map(f32::to_bits), Ok(bits));
        }
    }

    #[test]
    fn exact_decimal_floats_agree(
        digits in prop_oneof![0u64..=(1 << 24) + 2, 0u64..=(1 << 53) + 2, (1u64 << 53) - 100..=(1 << 53) + 100],
        zeros in 0usize..3,
        point in 0usize..24,
        negative in any::<bool>(),
    ) {
        // Where the fast path's one division must round as the full conversion does.
        let text = format!("{}{}{digits}", if negative { "-" } else { "" }, "0".repeat(zeros));
        let point = point.min(text.len());
        let text = format!("{}.{}", &text[..point], &text[point..]);
        prop_assert!(differences(text.as_bytes()).is_empty(), "{:?}", differences(text.as_bytes()));
    }

    #[test]
    fn extreme_floats_agree(
        mantissa in "[0-9]{0,40}(\\.[0-9]{0,40})?",
        exponent in prop_oneof![-400i64..400, any::<i64>()],
    ) {
        let text = format!("{mantissa}e{exponent}");
        prop_assert!(differences(text.as_bytes()).is_empty(), "{:?}", differences(text.as_bytes()));
    }
}

#[test]
fn special_and_boundary_floats_agree() {
    for text in [
        "0",
        "-0",
        "0.0e-99999",
        "1e-400",
        "-1e-400",
        "1e-45",
        "1e-46",
        "1e-324",
        "2e-324",
        "4.9e-324",
        "1.7976931348623157e308",
        "1.8e308",
        "3.4028235e38",
        "3.5e38",
        "inf",
        "-Infinity",
        "nan",
        "NaN(abc)",
        "+nan",
        "1e99999999999999999999999",
        "00000.00000e5",
        "   1.5  ",
        "1.",
        ".1",
        ".",
        "e5",
        "1e",
        "1e+",
        "1.5.5",
    ] {
        assert_same(text.as_bytes());
    }
}
