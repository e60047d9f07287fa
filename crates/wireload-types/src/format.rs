//! Date and timestamp input formats (`DATEFORMAT '%d/%m/%Y'`, `TIMESTAMPFORMAT`): a
//! strftime subset, read without allocating, for inputs whose dates are not ISO.
//!
//! A column with a format reads each value by the format first and, when it does not
//! match, as an ISO value (`YYYY-MM-DD[ HH:MM:SS]`, as without a format): ISO is never
//! ambiguous, so a file may mix the two, and one format per load serves every DATE column
//! whatever some of them hold.
//!
//! Directives:
//! - `%Y` a year of 1 to 4 digits, as written (`24` is the year 24); `%y` exactly 2
//!   digits (00-68 are 2000-2068, 69-99 are 1969-1999, as POSIX reads them);
//! - `%m` month, `%d` day, `%H` hour (0-23), `%I` hour (1-12, with `%p`), `%M` minute,
//!   `%S` second: 1 or 2 digits (`%-m` and the like are the same directives);
//!   `%S` may be followed by a fraction (`.5`, `.123456`), rounded to microseconds;
//! - `%f` a fraction of a second, 1 to 9 digits after a `.` written in the format;
//! - `%b` a month's abbreviated English name (`Jan`), `%B` its full name, any case;
//! - `%p` `AM` or `PM`, any case;
//! - `%%` a `%`; any other character stands for itself.
//!
//! Spaces around a value are ignored. A timestamp format also reads a value that stops
//! after its date, with the time at midnight (as `2024-01-05` is a valid TIMESTAMP).

use std::fmt;
use std::str::FromStr;

use crate::deser;
use crate::error::ValueError;

/// Directives and literal bytes at most in one format.
const MAX_ITEMS: usize = 24;

/// One directive of a format, or a byte that stands for itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Item {
    Year4,
    Year2,
    Month,
    MonthAbbr,
    MonthName,
    Day,
    Hour24,
    Hour12,
    Minute,
    Second,
    Fraction,
    AmPm,
    Literal(u8),
}

/// The directives, in the order of their codes (`DIRECTIVE + index`); literal bytes,
/// all ASCII, are their own codes.
const DIRECTIVES: [Item; 12] = [
    Item::Year4,
    Item::Year2,
    Item::Month,
    Item::MonthAbbr,
    Item::MonthName,
    Item::Day,
    Item::Hour24,
    Item::Hour12,
    Item::Minute,
    Item::Second,
    Item::Fraction,
    Item::AmPm,
];

/// The code of the first directive.
const DIRECTIVE: u8 = 0x80;

impl Item {
    /// The item's one-byte code.
    fn code(self) -> u8 {
        match self {
            Item::Literal(b) => b,
            d => {
                DIRECTIVE
                    + DIRECTIVES
                        .iter()
                        .position(|&x| x == d)
                        .expect("a directive") as u8
            }
        }
    }

    /// The item of a code.
    #[inline]
    fn decode(code: u8) -> Item {
        match code.checked_sub(DIRECTIVE) {
            Some(i) => DIRECTIVES[i as usize],
            None => Item::Literal(code),
        }
    }

    /// Whether the directive reads part of a time of day.
    fn is_time(self) -> bool {
        !self.is_date() && !matches!(self, Item::Literal(_))
    }

    /// Whether the directive reads part of a date (not of a time of day).
    fn is_date(self) -> bool {
        matches!(
            self,
            Item::Year4 | Item::Year2 | Item::Month | Item::MonthAbbr | Item::MonthName | Item::Day
        )
    }
}

/// A date or timestamp input format; see the module doc.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DateTimeFormat {
    /// the items' codes ([`Item::code`])
    codes: [u8; MAX_ITEMS],
    len: u8,
    /// the index after the last date directive
    date_end: u8,
    /// the index of the first time directive (`len` without one)
    time_start: u8,
}

/// The formats of one load: for DATE columns and for TIMESTAMP columns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Formats {
    /// How DATE values are written (`DATEFORMAT`); None: ISO only.
    pub date: Option<DateTimeFormat>,
    /// How TIMESTAMP values are written (`TIMESTAMPFORMAT`); None: ISO only.
    pub timestamp: Option<DateTimeFormat>,
}

/// Why a format string is not a format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid date/time format {format:?}: {problem}")]
pub struct FormatError {
    /// The format as given.
    pub format: String,
    /// What is wrong with it.
    pub problem: String,
}

const MONTHS: [&[u8]; 12] = [
    b"january",
    b"february",
    b"march",
    b"april",
    b"may",
    b"june",
    b"july",
    b"august",
    b"september",
    b"october",
    b"november",
    b"december",
];

/// The fields a value gave.
#[derive(Debug, Clone, Copy)]
struct Parts {
    year: u32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    micros: u32,
    pm: Option<bool>,
}

/// Reads 1 or 2 digits (`min..=max` of them) at `at`; the value and the index after them.
#[inline]
fn digits(text: &[u8], at: usize, min: usize, max: usize) -> Option<(u32, usize)> {
    let mut v = 0u32;
    let mut i = at;
    while i < text.len() && i - at < max && text[i].is_ascii_digit() {
        v = v * 10 + (text[i] - b'0') as u32;
        i += 1;
    }
    (i - at >= min).then_some((v, i))
}

/// Reads a fraction's digits at `at` (1 to 9): microseconds rounded half up, and the
/// index after them.
fn fraction(text: &[u8], at: usize) -> Option<(u32, usize)> {
    let mut i = at;
    let mut micros = 0u32;
    let mut next = 0u32;
    while i < text.len() && text[i].is_ascii_digit() && i - at < 9 {
        let d = (text[i] - b'0') as u32;
        match i - at {
            0..=5 => micros = micros * 10 + d,
            6 => next = d,
            _ => {}
        }
        i += 1;
    }
    let n = i - at;
    if n == 0 || (i < text.len() && text[i].is_ascii_digit()) {
        return None;
    }
    for _ in n..6 {
        micros *= 10;
    }
    Some((micros + (next >= 5) as u32, i))
}

/// Reads a month's name (full when `full`, else its first three letters) at `at`.
fn month_name(text: &[u8], at: usize, full: bool) -> Option<(u32, usize)> {
    let rest = &text[at..];
    MONTHS.iter().enumerate().find_map(|(m, name)| {
        let name: &[u8] = if full { name } else { &name[..3] };
        (rest.len() >= name.len() && rest[..name.len()].eq_ignore_ascii_case(name))
            .then_some((m as u32 + 1, at + name.len()))
    })
}

impl DateTimeFormat {
    /// The directives and literals.
    fn items(&self) -> impl Iterator<Item = Item> + '_ {
        self.codes[..self.len as usize]
            .iter()
            .map(|&c| Item::decode(c))
    }

    /// Whether the format has a time directive (hour, minute, second...).
    pub fn has_time(&self) -> bool {
        self.time_start < self.len
    }

    /// Reads `text` by the format alone: its fields, or None when it does not match.
    fn fields(&self, text: &[u8], year_digits: usize) -> Option<Parts> {
        let text = text.trim_ascii();
        let mut p = Parts {
            year: 0,
            month: 0,
            day: 0,
            hour: 0,
            minute: 0,
            second: 0,
            micros: 0,
            pm: None,
        };
        let codes = &self.codes[..self.len as usize];
        let mut at = 0;
        for (k, &code) in codes.iter().enumerate() {
            let item = Item::decode(code);
            let (date_read, no_time_yet) =
                (k >= self.date_end as usize, k <= self.time_start as usize);
            if at == text.len() && date_read && no_time_yet {
                // a date without its time: midnight
                return Some(p);
            }
            at = match item {
                Item::Year4 => {
                    let (v, i) = digits(text, at, year_digits, 4)?;
                    p.year = v;
                    i
                }
                Item::Year2 => {
                    let (v, i) = digits(text, at, 2, 2)?;
                    p.year = if v < 69 { 2000 + v } else { 1900 + v };
                    i
                }
                Item::Month | Item::MonthAbbr | Item::MonthName => {
                    let (v, i) = match item {
                        Item::Month => digits(text, at, 1, 2)?,
                        _ => month_name(text, at, item == Item::MonthName)?,
                    };
                    p.month = v;
                    i
                }
                Item::Day => {
                    let (v, i) = digits(text, at, 1, 2)?;
                    p.day = v;
                    i
                }
                Item::Hour24 | Item::Hour12 => {
                    let (v, i) = digits(text, at, 1, 2)?;
                    p.hour = v;
                    i
                }
                Item::Minute => {
                    let (v, i) = digits(text, at, 1, 2)?;
                    p.minute = v;
                    i
                }
                Item::Second => {
                    let (v, mut i) = digits(text, at, 1, 2)?;
                    p.second = v;
                    let dot_next = codes.get(k + 1) == Some(&b'.');
                    if !dot_next && text.get(i) == Some(&b'.') {
                        (p.micros, i) = fraction(text, i + 1)?;
                    }
                    i
                }
                Item::Fraction => {
                    let (v, i) = fraction(text, at)?;
                    p.micros = v;
                    i
                }
                Item::AmPm => {
                    let word = text.get(at..at + 2)?;
                    p.pm = Some(if word.eq_ignore_ascii_case(b"am") {
                        false
                    } else if word.eq_ignore_ascii_case(b"pm") {
                        true
                    } else {
                        return None;
                    });
                    at + 2
                }
                Item::Literal(b) => {
                    if text.get(at) != Some(&b) {
                        return None;
                    }
                    at + 1
                }
            };
        }
        (at == text.len()).then_some(p)
    }

    /// The day number and the time of day (microseconds) of `text` read by the format
    /// alone: None when it does not match, an error when it matches an impossible date.
    /// `%Y` takes `year_digits` to 4 digits.
    fn read(&self, text: &[u8], year_digits: usize) -> Option<Result<(i32, i64), ValueError>> {
        let p = self.fields(text, year_digits)?;
        // %p comes with %I (checked when the format is made): 1-12 o'clock
        let hour = match p.pm {
            Some(_) if !(1..=12).contains(&p.hour) => {
                return Some(Err(ValueError::DateTimeOutOfRange));
            }
            Some(pm) => p.hour % 12 + if pm { 12 } else { 0 },
            None => p.hour,
        };
        let exists = p.year >= 1
            && (1..=12).contains(&p.month)
            && p.day >= 1
            && p.day <= deser::scalar::days_in_month(p.year, p.month);
        let time_ok = hour <= 24
            && p.minute <= 59
            && p.second <= 60
            && (hour < 24 || (p.minute == 0 && p.second == 0 && p.micros == 0));
        if !exists || !time_ok {
            return Some(Err(ValueError::DateTimeOutOfRange));
        }
        let days = deser::scalar::days_from_civil(p.year, p.month, p.day);
        let time = ((hour as i64 * 60 + p.minute as i64) * 60 + p.second as i64) * 1_000_000
            + p.micros as i64;
        Some(Ok((days, time)))
    }

    /// Whether `text` matches the format (ISO not tried), as inference wants it: the
    /// shape, an existing date, and a `%Y` of 4 digits (so that `1.2.10`, a version
    /// number, is no date of the year 10).
    pub fn matches(&self, text: &[u8]) -> bool {
        matches!(self.read(text, 4), Some(Ok(_)))
    }

    /// Parses a DATE written in this format, or in ISO form; a time is checked and dropped.
    #[inline]
    pub fn parse_date(&self, text: &[u8]) -> Result<i32, ValueError> {
        match self.read(text, 1) {
            Some(r) => r.map(|(days, _)| days),
            None => deser::parse_date(text).map_err(|e| self.mismatch(e, "date")),
        }
    }

    /// Parses a TIMESTAMP written in this format, or in ISO form, into microseconds since
    /// 1970-01-01 00:00:00.
    #[inline]
    pub fn parse_timestamp(&self, text: &[u8]) -> Result<i64, ValueError> {
        match self.read(text, 1) {
            Some(r) => r.map(|(days, time)| days as i64 * 86_400_000_000 + time),
            None => deser::parse_timestamp(text).map_err(|e| self.mismatch(e, "timestamp")),
        }
    }

    /// The error for a value that matches neither the format nor ISO: an impossible ISO
    /// date stays [`ValueError::DateTimeOutOfRange`].
    fn mismatch(&self, iso: ValueError, ty: &'static str) -> ValueError {
        match iso {
            ValueError::InvalidSyntax { .. } => ValueError::FormatMismatch { ty },
            other => other,
        }
    }
}

impl FromStr for DateTimeFormat {
    type Err = FormatError;

    fn from_str(s: &str) -> Result<Self, FormatError> {
        let err = |problem: &str| FormatError {
            format: s.to_string(),
            problem: problem.to_string(),
        };
        let mut codes = [0u8; MAX_ITEMS];
        let (mut date_end, mut time_start) = (0, None);
        let mut len = 0;
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let item = if bytes[i] == b'%' {
                i += 1;
                if bytes.get(i) == Some(&b'-') {
                    i += 1;
                }
                match bytes.get(i) {
                    Some(b'Y') => Item::Year4,
                    Some(b'y') => Item::Year2,
                    Some(b'm') => Item::Month,
                    Some(b'b') => Item::MonthAbbr,
                    Some(b'B') => Item::MonthName,
                    Some(b'd') => Item::Day,
                    Some(b'H') => Item::Hour24,
                    Some(b'I') => Item::Hour12,
                    Some(b'M') => Item::Minute,
                    Some(b'S') => Item::Second,
                    Some(b'f') => Item::Fraction,
                    Some(b'p') => Item::AmPm,
                    Some(b'%') => Item::Literal(b'%'),
                    Some(_) => {
                        return Err(err(
                            "directives are %Y %y %m %d %b %B %H %I %M %S %f %p and %%",
                        ));
                    }
                    None => return Err(err("a % ends the format")),
                }
            } else if bytes[i].is_ascii() {
                Item::Literal(bytes[i])
            } else {
                return Err(err("literal characters must be ASCII"));
            };
            if len == MAX_ITEMS {
                return Err(err(&format!(
                    "more than {MAX_ITEMS} directives and characters"
                )));
            }
            codes[len] = item.code();
            if item.is_date() {
                date_end = len + 1;
            }
            if item.is_time() && time_start.is_none() {
                time_start = Some(len);
            }
            len += 1;
            i += 1;
        }
        let f = DateTimeFormat {
            codes,
            len: len as u8,
            date_end: date_end as u8,
            time_start: time_start.unwrap_or(len) as u8,
        };
        let has = |want: &[Item]| f.items().any(|i| want.contains(&i));
        if !has(&[Item::Year4, Item::Year2])
            || !has(&[Item::Month, Item::MonthAbbr, Item::MonthName])
            || !has(&[Item::Day])
        {
            return Err(err("a format needs a year, a month and a day"));
        }
        if has(&[Item::Hour24]) && has(&[Item::AmPm]) {
            return Err(err("%p goes with %I, not with %H"));
        }
        if has(&[Item::Hour12]) != has(&[Item::AmPm]) {
            return Err(err("%I (12-hour clock) and %p (AM/PM) go together"));
        }
        Ok(f)
    }
}

impl fmt::Display for DateTimeFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for item in self.items() {
            let s = match item {
                Item::Year4 => "%Y",
                Item::Year2 => "%y",
                Item::Month => "%m",
                Item::MonthAbbr => "%b",
                Item::MonthName => "%B",
                Item::Day => "%d",
                Item::Hour24 => "%H",
                Item::Hour12 => "%I",
                Item::Minute => "%M",
                Item::Second => "%S",
                Item::Fraction => "%f",
                Item::AmPm => "%p",
                Item::Literal(b'%') => "%%",
                Item::Literal(b) => {
                    write!(f, "{}", b as char)?;
                    continue;
                }
            };
            f.write_str(s)?;
        }
        Ok(())
    }
}

impl fmt::Debug for DateTimeFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DateTimeFormat({self})")
    }
}

impl Formats {
    /// Whether neither format is set (ISO only).
    pub fn is_iso(&self) -> bool {
        self.date.is_none() && self.timestamp.is_none()
    }
}
