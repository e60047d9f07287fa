//! Column types from sampled fields: a ladder of candidate types, narrowest first, each
//! checked with the loader's own deserializers (`ColumnBuilder::append_fields`), so that
//! every sampled value loads into the inferred type.
//!
//! The ladder is BOOLEAN, BIGINT, DOUBLE, DATE, TIMESTAMP, TEXT. A column gets the first
//! type that every non-NULL sampled value fits: BIGINT and DOUBLE values give DOUBLE,
//! DATE and TIMESTAMP values give TIMESTAMP, anything with text gives TEXT. Besides the
//! deserializer's verdict, a value must have the type's *shape*, which keeps inference
//! from picking a type the text does not look like even where the deserializer would take
//! it:
//! - BOOLEAN: `true`/`false`, `t`/`f`, `yes`/`no`, `y`/`n`, `on`/`off` in any case; not
//!   `1`/`0` (those are integers, as DuckDB infers) nor prefixes such as `tr`.
//! - BIGINT and DOUBLE: no leading zero before another digit. `007` and `00123` are codes
//!   (zip codes, account numbers), not numbers: as numbers they would lose their zeros, so
//!   they stay TEXT (DuckDB 1.x and 2.0 infer VARCHAR for them too). A DOUBLE column needs
//!   at least one value with a digit: a column of only `NaN` or `inf` is TEXT.
//! - DATE: `YYYY-MM-DD` without a time (the DATE deserializer would take a time and drop
//!   it).
//! - TIMESTAMP: a date, then a time of digits, `:` and `.`; a value with a time zone
//!   (`Z`, `+02`) is TEXT, since TIMESTAMP (without time zone) would drop the offset.
//!
//! Dates and timestamps in other forms than ISO (`01/05/2024`, `5.1.2024 10:00`,
//! `08-Jan-1999`, `1/5/2024 3:30 PM`) are read by a format ([`Formats`]): a column whose
//! values all match one of [`DATE_FORMATS`] (or of the timestamp formats, a date format
//! then a time) is DATE (TIMESTAMP). One format serves a whole input, as `DATEFORMAT`
//! does for a load: the one that the most such columns fit, the earlier in the list on a
//! tie (day before month when both read every value, as DuckDB 2.0 picks: `05/01/2024`
//! is January 5); columns it does not fit stay TEXT. The samples spread over the whole
//! input, so one day above 12 anywhere in them settles the order. ISO values fit every
//! format, since the loader reads ISO whatever the format.
//!
//! Quoted fields are typed like unquoted ones (the loader parses a quoted `"42"` as 42,
//! as DuckDB infers too), except that a quoted empty string is a value, not NULL, and fits
//! only TEXT. NULL fields (unquoted and equal to the NULL string) fit every type; a column
//! with no other values is TEXT.

use std::sync::LazyLock;

use wireload_types::{ColumnBuilder, DateTimeFormat, Field, Formats, SqlType, deser};

/// The date formats tried for columns that are not ISO, in order of preference: two-digit
/// years first (`%Y` reads `24` as the year 24). No two-digit year after dots: version
/// numbers (`1.2.10`) would read as dates.
pub const DATE_FORMATS: [&str; 19] = [
    "%d/%m/%y",
    "%m/%d/%y",
    "%d-%m-%y",
    "%m-%d-%y",
    "%d/%m/%Y",
    "%m/%d/%Y",
    "%Y/%m/%d",
    "%d-%m-%Y",
    "%m-%d-%Y",
    "%d.%m.%Y",
    "%Y.%m.%d",
    "%d-%b-%y",
    "%d-%b-%Y",
    "%d %b %Y",
    "%b %d %Y",
    "%d %B %Y",
    "%B %d %Y",
    "%b %d, %Y",
    "%B %d, %Y",
];

/// How many of [`DATE_FORMATS`] (the first ones, all digits) timestamps are tried with.
const NUMERIC_DATES: usize = 11;

/// The times of day after a date in the timestamp formats tried.
const TIMES: [&str; 4] = ["%H:%M:%S", "%H:%M", "%I:%M:%S %p", "%I:%M %p"];

/// The formats inference tries (or the ones the caller fixed), at most 64 of each.
#[derive(Debug, Clone)]
pub(crate) struct FormatGuesses {
    dates: Vec<DateTimeFormat>,
    timestamps: Vec<DateTimeFormat>,
}

/// The default guesses: [`DATE_FORMATS`], and the ISO and numeric dates followed by each
/// of [`TIMES`] (ISO with a 24-hour time is read without a format).
static DEFAULT_GUESSES: LazyLock<FormatGuesses> = LazyLock::new(|| {
    let parse = |f: &str| f.parse::<DateTimeFormat>().expect("a valid format");
    let mut timestamps = Vec::new();
    for date in std::iter::once("%Y-%m-%d").chain(DATE_FORMATS[..NUMERIC_DATES].iter().copied()) {
        for (k, time) in TIMES.iter().enumerate() {
            if date != "%Y-%m-%d" || k >= 2 {
                timestamps.push(parse(&format!("{date} {time}")));
            }
        }
    }
    FormatGuesses {
        dates: DATE_FORMATS.iter().map(|f| parse(f)).collect(),
        timestamps,
    }
});

impl FormatGuesses {
    /// The formats to try: those `fixed` gives, the default guesses for the others.
    pub fn new(fixed: &Formats) -> Self {
        FormatGuesses {
            dates: match fixed.date {
                Some(f) => vec![f],
                None => DEFAULT_GUESSES.dates.clone(),
            },
            timestamps: match fixed.timestamp {
                Some(f) => vec![f],
                None => DEFAULT_GUESSES.timestamps.clone(),
            },
        }
    }
}

impl Default for FormatGuesses {
    fn default() -> Self {
        FormatGuesses::new(&Formats::default())
    }
}

/// The candidate types, narrowest first; TEXT, the last, takes everything.
pub(crate) const LADDER: [SqlType; 6] = [
    SqlType::Boolean,
    SqlType::BigInt,
    SqlType::Double,
    SqlType::Date,
    SqlType::Timestamp,
    SqlType::Text,
];

/// Bits of the candidates before TEXT.
const ALL: u8 = (1 << (LADDER.len() - 1)) - 1;

/// Whether `bytes` has the shape inference wants of a value of `ty` (see the module doc).
fn has_shape(ty: &SqlType, bytes: &[u8]) -> bool {
    let text = bytes.trim_ascii();
    match ty {
        SqlType::Boolean => {
            const WORDS: [&[u8]; 10] = [
                b"true", b"false", b"t", b"f", b"yes", b"no", b"y", b"n", b"on", b"off",
            ];
            WORDS.iter().any(|w| text.eq_ignore_ascii_case(w))
        }
        SqlType::BigInt | SqlType::Double => {
            let unsigned = text.strip_prefix(b"-").or(text.strip_prefix(b"+"));
            let digits = unsigned.unwrap_or(text);
            !(digits.len() > 1 && digits[0] == b'0' && digits[1].is_ascii_digit())
        }
        SqlType::Date => {
            text.first().is_some_and(u8::is_ascii_digit)
                && text.iter().all(|&b| b.is_ascii_digit() || b == b'-')
        }
        SqlType::Timestamp => {
            let split = text
                .iter()
                .position(|&b| b == b' ' || b == b'T' || b == b't')
                .unwrap_or(text.len());
            let (date, time) = text.split_at(split);
            has_shape(&SqlType::Date, date)
                && time
                    .iter()
                    .skip(1)
                    .all(|&b| b.is_ascii_digit() || b == b':' || b == b'.' || b == b' ')
        }
        _ => true,
    }
}

/// Whether the loader accepts every field for `ty` (a one-off builder; NULL is `null`).
fn loads(ty: &SqlType, fields: &[Field<'_>], null: &[u8], formats: &Formats) -> bool {
    let mut builder = ColumnBuilder::new(ty, true, fields.len(), 0).with_formats(formats);
    builder.append_fields(fields.iter().copied(), null).is_ok()
}

/// Whether `bytes` is a value of `ty` (DATE or TIMESTAMP) as `format` or ISO writes it.
fn fits_format(ty: &SqlType, format: &DateTimeFormat, bytes: &[u8]) -> bool {
    format.matches(bytes)
        || (has_shape(ty, bytes)
            && match ty {
                SqlType::Date => deser::parse_date(bytes).is_ok(),
                _ => deser::parse_timestamp(bytes).is_ok(),
            })
}

/// Clears the bits of `mask` whose format some value of `fields` does not fit.
fn narrow_formats(
    mask: &mut u64,
    ty: &SqlType,
    formats: &[DateTimeFormat],
    fields: &[Field<'_>],
    null: &[u8],
) {
    for (i, format) in formats.iter().enumerate() {
        let bit = 1u64 << i;
        if *mask & bit != 0
            && !fields
                .iter()
                .all(|f| (!f.quoted && f.bytes == null) || fits_format(ty, format, f.bytes))
        {
            *mask &= !bit;
        }
    }
}

/// What one column's sampled values allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Candidates {
    /// bit `i` set: every value so far fits `LADDER[i]`
    mask: u8,
    /// a value that is not NULL was seen
    any_value: bool,
    /// a value with a digit was seen
    any_digit: bool,
    /// bit `i` set: every value so far is a date in guess `i` (or ISO)
    dates: u64,
    /// bit `i` set: every value so far is a timestamp in guess `i` (or ISO)
    timestamps: u64,
}

impl Default for Candidates {
    fn default() -> Self {
        Candidates {
            mask: ALL,
            any_value: false,
            any_digit: false,
            dates: u64::MAX,
            timestamps: u64::MAX,
        }
    }
}

impl Candidates {
    /// Narrows the candidates by a batch of one column's fields.
    pub fn observe(&mut self, fields: &[Field<'_>], null: &[u8], guesses: &FormatGuesses) {
        let values = fields.iter().filter(|f| f.quoted || f.bytes != null);
        for f in values {
            self.any_value = true;
            if !self.any_digit && f.bytes.iter().any(u8::is_ascii_digit) {
                self.any_digit = true;
            }
        }
        for (i, ty) in LADDER[..LADDER.len() - 1].iter().enumerate() {
            let bit = 1 << i;
            if self.mask & bit == 0 {
                continue;
            }
            let shaped = fields
                .iter()
                .all(|f| (!f.quoted && f.bytes == null) || has_shape(ty, f.bytes));
            if !shaped || !loads(ty, fields, null, &Formats::default()) {
                self.mask &= !bit;
            }
        }
        // Values that are all ISO fit every format: only columns that are no longer ISO
        // DATE (TIMESTAMP) need their formats checked.
        let iso = |ty: SqlType| {
            let i = LADDER.iter().position(|t| *t == ty).expect("on the ladder");
            self.mask & 1 << i != 0
        };
        if !iso(SqlType::Date) {
            narrow_formats(
                &mut self.dates,
                &SqlType::Date,
                &guesses.dates,
                fields,
                null,
            );
        }
        if !iso(SqlType::Timestamp) {
            narrow_formats(
                &mut self.timestamps,
                &SqlType::Timestamp,
                &guesses.timestamps,
                fields,
                null,
            );
        }
    }

    /// Combines the candidates of two parts of one column.
    pub fn merge(self, other: Candidates) -> Candidates {
        Candidates {
            mask: self.mask & other.mask,
            any_value: self.any_value | other.any_value,
            any_digit: self.any_digit | other.any_digit,
            dates: self.dates & other.dates,
            timestamps: self.timestamps & other.timestamps,
        }
    }

    /// The narrowest type every value fits (TEXT without values).
    pub fn sql_type(&self) -> SqlType {
        if !self.any_value {
            return SqlType::Text;
        }
        let i = self.mask.trailing_zeros() as usize;
        match LADDER.get(i) {
            Some(SqlType::Double) if !self.any_digit => SqlType::Text,
            Some(ty) => *ty,
            None => SqlType::Text,
        }
    }

    /// Whether one field fits `ty` as inference sees it (shape and deserializer), with
    /// dates and timestamps read by `formats`.
    pub fn fits(ty: &SqlType, field: Field<'_>, null: &[u8], formats: &Formats) -> bool {
        if ty.is_string() || (!field.quoted && field.bytes == null) {
            return true;
        }
        let format = match ty {
            SqlType::Date => formats.date,
            SqlType::Timestamp => formats.timestamp,
            _ => None,
        };
        match format {
            Some(f) => fits_format(ty, &f, field.bytes),
            None => has_shape(ty, field.bytes) && loads(ty, &[field], null, formats),
        }
    }
}

/// The formats of guesses `dates` or `timestamps` (bit masks, one per column) that the
/// most columns fit, the first on a tie; None when no column fits one.
fn choose(masks: impl Iterator<Item = u64>, n: usize) -> Option<usize> {
    let mut counts = vec![0usize; n];
    for mask in masks {
        for (i, count) in counts.iter_mut().enumerate() {
            *count += (mask >> i & 1) as usize;
        }
    }
    let best = *counts.iter().max()?;
    (best > 0).then(|| counts.iter().position(|&c| c == best).expect("the maximum"))
}

/// The types of the columns and the formats of their dates and timestamps: ISO types
/// where every value is ISO, else one date format and one timestamp format for the whole
/// input (see the module doc).
pub(crate) fn resolve(columns: &[Candidates], guesses: &FormatGuesses) -> (Vec<SqlType>, Formats) {
    let mut types: Vec<SqlType> = columns.iter().map(Candidates::sql_type).collect();
    // dates first: a column of dates alone fits the timestamp formats too
    let date = assign(
        &mut types,
        columns,
        |c| c.dates,
        &guesses.dates,
        SqlType::Date,
    );
    let timestamp = assign(
        &mut types,
        columns,
        |c| c.timestamps,
        &guesses.timestamps,
        SqlType::Timestamp,
    );
    (types, Formats { date, timestamp })
}

/// Among the columns still TEXT by ISO rules and with values, the format of `formats`
/// that the most of them fit (`mask` gives a column's bits): those columns become `ty`.
fn assign(
    types: &mut [SqlType],
    columns: &[Candidates],
    mask: impl Fn(&Candidates) -> u64,
    formats: &[DateTimeFormat],
    ty: SqlType,
) -> Option<DateTimeFormat> {
    let open: Vec<usize> = (0..columns.len())
        .filter(|&c| types[c] == SqlType::Text && columns[c].any_value)
        .collect();
    let i = choose(open.iter().map(|&c| mask(&columns[c])), formats.len())?;
    for c in open {
        if mask(&columns[c]) >> i & 1 == 1 {
            types[c] = ty;
        }
    }
    Some(formats[i])
}

/// The types a column of type `ty` can be re-planned with, narrowest first: each holds
/// every value of `ty` and of the types before it.
fn wider(ty: &SqlType) -> &'static [SqlType] {
    use SqlType::*;
    match ty {
        SmallInt | Integer => &[BigInt, Double, Text],
        BigInt | Real | Decimal { .. } => &[Double, Text],
        Date => &[Timestamp, Text],
        Boolean | Double | Timestamp | Char(_) | Varchar(Some(_)) => &[Text],
        Varchar(None) | Text => &[],
    }
}

/// The narrowest type wider than `ty` (one that holds all of `ty`'s values) that the
/// loader accepts `value` for: BIGINT and `1.5` give DOUBLE, BIGINT and `abc` give TEXT,
/// DATE and `2024-01-01 10:00:00` give TIMESTAMP. None when `ty` is already unbounded
/// text. `value` is taken as an unquoted, non-NULL field, and only the deserializer
/// decides (no shape rules: the value did not fit `ty`, so the load needs a type that
/// takes it), reading dates and timestamps by the load's `formats`. TEXT when no type
/// takes it (text that is not UTF-8, which no type loads).
pub fn widen(ty: &SqlType, value: &[u8], formats: &Formats) -> Option<SqlType> {
    let field = Field::unquoted(value);
    // a NULL string that never equals the value: every value is parsed
    let never_null: &[u8] = if value.is_empty() { b"\0" } else { b"" };
    wider(ty)
        .iter()
        .find(|t| loads(t, &[field], never_null, formats))
        .copied()
        .or(Some(SqlType::Text))
        .filter(|_| !wider(ty).is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn infer(values: &[&[u8]]) -> SqlType {
        let fields: Vec<Field<'_>> = values.iter().map(|v| Field::unquoted(v)).collect();
        let mut c = Candidates::default();
        c.observe(&fields, b"", &FormatGuesses::default());
        c.sql_type()
    }

    #[test]
    fn the_ladder_picks_the_narrowest_type_of_all_values() {
        use SqlType::*;
        let cases: &[(&[&[u8]], SqlType)] = &[
            (&[b"true", b"F", b"", b"yes", b"Off"], Boolean),
            (&[b"1", b"0", b"1"], BigInt),
            (&[b"tr", b"fals"], Text),
            (&[b"1", b"-42", b"+7", b" 9 "], BigInt),
            (&[b"9223372036854775807", b"-9223372036854775808"], BigInt),
            (&[b"9223372036854775808"], Double),
            (&[b"1", b"1.5", b"-2.5e3", b"NaN"], Double),
            (&[b"NaN", b"inf"], Text),
            (&[b"007", b"12"], Text),
            (&[b"0", b"0.5", b"-0"], Double),
            (&[b"2024-01-05", b"1999-1-2"], Date),
            (&[b"2024-02-30"], Text),
            (&[b"2024-01-05", b"2024-01-05 10:00:00"], Timestamp),
            (
                &[b"2024-01-05T10:00:00.123456", b"2024-01-05 10:00"],
                Timestamp,
            ),
            (&[b"2024-01-05 10:00:00+02"], Text),
            (&[b"2024-01-05 10:00:00Z"], Text),
            (&[b"05/01/2024"], Text),
            (&[b"1", b"abc"], Text),
            (&[b"", b""], Text),
            (&[], Text),
        ];
        for (values, ty) in cases {
            assert_eq!(infer(values), *ty, "{values:?}");
        }
    }

    #[test]
    fn quoted_values_are_typed_and_a_quoted_empty_string_is_text() {
        let g = FormatGuesses::default();
        let mut c = Candidates::default();
        c.observe(&[Field::quoted(b"42"), Field::unquoted(b"")], b"", &g);
        assert_eq!(c.sql_type(), SqlType::BigInt);
        c.observe(&[Field::quoted(b"")], b"", &g);
        assert_eq!(c.sql_type(), SqlType::Text);
    }

    #[test]
    fn the_null_string_is_skipped_but_a_quoted_one_is_a_value() {
        let g = FormatGuesses::default();
        let mut c = Candidates::default();
        c.observe(&[Field::unquoted(b"NA"), Field::unquoted(b"3")], b"NA", &g);
        assert_eq!(c.sql_type(), SqlType::BigInt);
        c.observe(&[Field::quoted(b"NA")], b"NA", &g);
        assert_eq!(c.sql_type(), SqlType::Text);
    }

    #[test]
    fn widen_goes_to_the_narrowest_type_holding_old_and_new_values() {
        use SqlType::*;
        let cases: &[(SqlType, &[u8], Option<SqlType>)] = &[
            (BigInt, b"1.5", Some(Double)),
            (BigInt, b"abc", Some(Text)),
            (BigInt, b"", Some(Text)),
            (Integer, b"99999999999", Some(BigInt)),
            (SmallInt, b"1e3", Some(Double)),
            (Date, b"2024-01-01 10:00:00", Some(Timestamp)),
            (Date, b"yesterday", Some(Text)),
            (Timestamp, b"2024-01-01", Some(Text)),
            (Boolean, b"2", Some(Text)),
            (Double, b"n/a", Some(Text)),
            (
                Decimal {
                    precision: 5,
                    scale: 2,
                },
                b"123456.5",
                Some(Double),
            ),
            (Varchar(Some(3)), b"abcd", Some(Text)),
            (Text, b"x", None),
            (Varchar(None), b"x", None),
        ];
        for (ty, value, wide) in cases {
            assert_eq!(
                widen(ty, value, &Formats::default()),
                *wide,
                "{ty} {}",
                String::from_utf8_lossy(value)
            );
        }
    }
}
