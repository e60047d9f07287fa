//! Date and timestamp formats: examples, errors, and chrono as the oracle on random values.

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime};
use proptest::prelude::*;

use crate::error::ValueError;
use crate::format::DateTimeFormat;
use crate::{ColumnBuilder, Field, Formats, SqlType};

fn fmt(s: &str) -> DateTimeFormat {
    s.parse().unwrap()
}

fn days(y: i32, m: u32, d: u32) -> i32 {
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap();
    (NaiveDate::from_ymd_opt(y, m, d).unwrap() - epoch).num_days() as i32
}

fn micros(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32, us: u32) -> i64 {
    let t = NaiveDate::from_ymd_opt(y, mo, d)
        .unwrap()
        .and_hms_micro_opt(h, mi, s, us)
        .unwrap();
    t.and_utc().timestamp_micros()
}

#[test]
fn dates_in_common_formats() {
    let cases: &[(&str, &str, i32)] = &[
        ("%m/%d/%Y", "01/05/2024", days(2024, 1, 5)),
        ("%m/%d/%Y", "1/5/2024", days(2024, 1, 5)),
        ("%d/%m/%Y", "31/12/1999", days(1999, 12, 31)),
        ("%d.%m.%Y", " 29.02.2024 ", days(2024, 2, 29)),
        ("%Y/%m/%d", "2024/3/9", days(2024, 3, 9)),
        ("%m-%d-%y", "07-04-76", days(1976, 7, 4)),
        ("%d/%m/%y", "01/01/68", days(2068, 1, 1)),
        ("%d/%m/%y", "01/01/69", days(1969, 1, 1)),
        ("%d-%b-%Y", "08-JAN-1999", days(1999, 1, 8)),
        ("%d %B %Y", "8 september 2021", days(2021, 9, 8)),
        ("%B %d, %Y", "March 5, 2020", days(2020, 3, 5)),
        ("%-m/%-d/%Y", "3/5/2020", days(2020, 3, 5)),
        // ISO is read whatever the format
        ("%m/%d/%Y", "2024-01-05", days(2024, 1, 5)),
        // a DATE drops a time, as PostgreSQL does
        ("%m/%d/%Y %H:%M", "01/05/2024 10:30", days(2024, 1, 5)),
    ];
    for (f, text, want) in cases {
        assert_eq!(fmt(f).parse_date(text.as_bytes()), Ok(*want), "{f} {text}");
    }
}

#[test]
fn timestamps_in_common_formats() {
    let cases: &[(&str, &str, i64)] = &[
        (
            "%m/%d/%Y %H:%M:%S",
            "01/05/2024 13:04:05",
            micros(2024, 1, 5, 13, 4, 5, 0),
        ),
        (
            "%m/%d/%Y %H:%M:%S",
            "01/05/2024 13:04:05.25",
            micros(2024, 1, 5, 13, 4, 5, 250_000),
        ),
        (
            "%d.%m.%Y %H:%M",
            "05.01.2024 7:08",
            micros(2024, 1, 5, 7, 8, 0, 0),
        ),
        (
            "%m/%d/%Y %I:%M:%S %p",
            "1/5/2024 12:00:01 AM",
            micros(2024, 1, 5, 0, 0, 1, 0),
        ),
        (
            "%m/%d/%Y %I:%M %p",
            "1/5/2024 12:30 pm",
            micros(2024, 1, 5, 12, 30, 0, 0),
        ),
        (
            "%m/%d/%Y %I:%M %p",
            "1/5/2024 11:30 PM",
            micros(2024, 1, 5, 23, 30, 0, 0),
        ),
        (
            "%Y-%m-%d %H:%M:%S.%f",
            "2024-01-05 10:00:00.1234567",
            micros(2024, 1, 5, 10, 0, 0, 123_457),
        ),
        // a date alone is midnight
        (
            "%m/%d/%Y %I:%M %p",
            "1/5/2024",
            micros(2024, 1, 5, 0, 0, 0, 0),
        ),
        // ISO is read whatever the format
        (
            "%m/%d/%Y %H:%M",
            "2024-01-05T10:00:00",
            micros(2024, 1, 5, 10, 0, 0, 0),
        ),
    ];
    for (f, text, want) in cases {
        assert_eq!(
            fmt(f).parse_timestamp(text.as_bytes()),
            Ok(*want),
            "{f} {text}"
        );
    }
}

#[test]
fn values_that_do_not_match_are_errors() {
    let mismatch = |ty| ValueError::FormatMismatch { ty };
    const IMPOSSIBLE: ValueError = ValueError::DateTimeOutOfRange;
    let f = fmt("%m/%d/%Y");
    assert_eq!(f.parse_date(b"13/05/2024"), Err(IMPOSSIBLE));
    assert_eq!(f.parse_date(b"02/30/2024"), Err(IMPOSSIBLE));
    assert_eq!(f.parse_date(b"2024-02-30"), Err(IMPOSSIBLE));
    assert_eq!(f.parse_date(b"1/5/24"), Ok(days(24, 1, 5)));
    assert_eq!(f.parse_date(b"1/5/0"), Err(IMPOSSIBLE));
    assert_eq!(f.parse_date(b"01/05/2024x"), Err(mismatch("date")));
    assert_eq!(f.parse_date(b"01/05/02024"), Err(mismatch("date")));
    assert_eq!(f.parse_date(b""), Err(mismatch("date")));
    assert_eq!(f.parse_date(b"abc"), Err(mismatch("date")));
    let t = fmt("%m/%d/%Y %I:%M %p");
    assert_eq!(t.parse_timestamp(b"1/5/2024 13:00 PM"), Err(IMPOSSIBLE));
    assert_eq!(t.parse_timestamp(b"1/5/2024 0:00 AM"), Err(IMPOSSIBLE));
    assert_eq!(
        t.parse_timestamp(b"1/5/2024 10:00"),
        Err(mismatch("timestamp"))
    );
    let t = fmt("%d.%m.%Y %H:%M:%S");
    assert_eq!(t.parse_timestamp(b"05.01.2024 10:60:00"), Err(IMPOSSIBLE));
    assert_eq!(
        t.parse_timestamp(b"05.01.2024 10:00:00.1234567890"),
        Err(mismatch("timestamp"))
    );
    assert!(!t.matches(b"2024-01-05 10:00:00"));
    assert!(t.matches(b"05.01.2024 10:00:00"));
}

#[test]
fn formats_print_as_given_and_bad_ones_say_why() {
    for f in [
        "%m/%d/%Y",
        "%d.%m.%y %H:%M:%S",
        "%B %d, %Y %I:%M %p",
        "%Y%%%m%%%d",
    ] {
        assert_eq!(fmt(f).to_string(), f);
    }
    assert_eq!(fmt("%-m/%-d/%Y").to_string(), "%m/%d/%Y");
    let err = |f: &str| f.parse::<DateTimeFormat>().unwrap_err().problem;
    assert_eq!(err("%m/%d"), "a format needs a year, a month and a day");
    assert_eq!(
        err("%Y-%m-%d %Q"),
        "directives are %Y %y %m %d %b %B %H %I %M %S %f %p and %%"
    );
    assert_eq!(err("%Y-%m-%d %"), "a % ends the format");
    assert_eq!(
        err("%Y-%m-%d %I:%M"),
        "%I (12-hour clock) and %p (AM/PM) go together"
    );
    assert_eq!(err("%Y-%m-%d %H:%M %p"), "%p goes with %I, not with %H");
    assert_eq!(err("%Y-%m-%d é"), "literal characters must be ASCII");
    assert!(err(&"%Y%m%d".repeat(9)).starts_with("more than"));
}

#[test]
fn builders_read_by_the_format_of_their_type() {
    let formats = Formats {
        date: Some(fmt("%d/%m/%Y")),
        timestamp: Some(fmt("%d/%m/%Y %H:%M")),
    };
    let fields = [
        Field::unquoted(b"05/01/2024"),
        Field::unquoted(b"2024-01-06"),
    ];
    let mut b = ColumnBuilder::new(&SqlType::Date, true, 2, 0).with_formats(&formats);
    b.append_fields(fields.iter().copied(), b"").unwrap();
    let a = b.finish();
    let dates = a
        .as_any()
        .downcast_ref::<arrow::array::Date32Array>()
        .unwrap();
    assert_eq!(
        dates.values().to_vec(),
        [days(2024, 1, 5), days(2024, 1, 6)]
    );
    let mut b = ColumnBuilder::new(&SqlType::Timestamp, true, 1, 0).with_formats(&formats);
    b.append_fields([Field::unquoted(b"05/01/2024 10:30")].into_iter(), b"")
        .unwrap();
    // without formats, only ISO
    let mut b = ColumnBuilder::new(&SqlType::Date, true, 1, 0);
    let err = b
        .append_fields([Field::unquoted(b"05/01/2024")].into_iter(), b"")
        .unwrap_err();
    assert_eq!(err.error, ValueError::InvalidSyntax { ty: "date" });
    // other types ignore formats
    let mut b = ColumnBuilder::new(&SqlType::BigInt, true, 1, 0).with_formats(&formats);
    b.append_fields([Field::unquoted(b"7")].into_iter(), b"")
        .unwrap();
}

/// Formats and the chrono format that writes the same text.
const ORACLE_FORMATS: &[&str] = &[
    "%m/%d/%Y %H:%M:%S",
    "%d/%m/%Y %H:%M",
    "%d.%m.%y %H:%M:%S",
    "%Y/%m/%d %I:%M:%S %p",
    "%d-%b-%Y %H:%M:%S",
    "%B %d, %Y %I:%M %p",
    "%m-%d-%Y",
    "%d %b %y",
];

proptest! {
    /// Every value chrono writes in a format reads back as chrono's value (to the format's
    /// precision); chrono writes zero-padded fields, ours reads them with or without.
    #[test]
    fn values_chrono_writes_read_back(
        day in 0i64..(2060 - 1902) * 366,
        secs in 0u32..86_400,
        which in 0..ORACLE_FORMATS.len(),
        unpad in any::<bool>(),
    ) {
        let f = ORACLE_FORMATS[which];
        let date = NaiveDate::from_ymd_opt(1902, 1, 1).unwrap() + chrono::Duration::days(day);
        let t = NaiveDateTime::new(date, NaiveTime::from_num_seconds_from_midnight_opt(secs, 0).unwrap());
        // chrono reads `%y` 69 as 2069; POSIX (and ours) as 1969
        prop_assume!(!(f.contains("%y") && date.year() == 1969));
        let mut text = t.format(f).to_string();
        if unpad && !f.contains("%y") {
            // single-digit months, days and hours
            text = text.replace("/0", "/");
            if f.starts_with("%m") || f.starts_with("%d") {
                text = text.strip_prefix('0').map(str::to_string).unwrap_or(text);
            }
        }
        let ours = fmt(f);
        // what the format keeps of the value
        let written = NaiveDateTime::parse_from_str(&text, f)
            .or_else(|_| NaiveDate::parse_from_str(&text, f).map(|d| d.and_hms_opt(0, 0, 0).unwrap()))
            .unwrap();
        prop_assert_eq!(
            ours.parse_timestamp(text.as_bytes()),
            Ok(written.and_utc().timestamp_micros()),
            "{} {}", f, text
        );
        let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap();
        prop_assert_eq!(
            ours.parse_date(text.as_bytes()),
            Ok((written.date() - epoch).num_days() as i32)
        );
    }
}
