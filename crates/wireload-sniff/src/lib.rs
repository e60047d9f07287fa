//! Schema inference for CSV: the dialect, the header and the column types of an input,
//! from samples spread over all of it, so that a CSV can be queried without writing its
//! schema.
//!
//! Unlike a sniffer that reads only the start of a file, [`sniff`] samples windows at the
//! start, evenly spaced through the middle and at the end of the input (more of them on
//! larger inputs, [`SniffOptions::sample_bytes`] in all), so that values millions of lines
//! in (a `n/a` among numbers, decimals after a run of integers) widen the inferred types
//! instead of failing the load. Each window after the first starts at a record start found
//! in the quote context that lets its records parse, and ends after its last whole record.
//! Sniffing costs the sample, not the input: a 100 MB file takes well under a second.
//!
//! # Dialect
//! Delimiters `,` `|` `;` and tab, quote `"`, none or `'`, escape by doubling or `\`:
//! the candidate that reads the sample without structural errors, splits records into
//! more than one field with at least 90% of them agreeing on the count, has the largest
//! share of agreeing records, quotes some field, and has the most fields wins; ties go to
//! that order. A one-column file gets a delimiter its values do not contain. BOM and line
//! ending (`\n`, `\r\n`, `\r`) are reported. When every candidate left breaks the
//! structure somewhere (a quote the caller fixed, used loosely in the data), the best one
//! is still returned, typed on the records that read: the load then reports the break with
//! its line (or rejects that record under `ON_ERROR ignore`), as for any input.
//!
//! # Header
//! When some column of the other records is not TEXT (DuckDB's rule), the first record is
//! a header when one of its non-blank fields in such a column does not fit the column's
//! type (`id,name` over `1,bob`; not `1,2` over `3,4`, nor `name,2023` over `bob,5`).
//! When every column is TEXT, or there is no other record, it is a header when its fields
//! are non-blank (except the first, R's row-name column), unique, and none looks like a
//! boolean, number, date or timestamp: text over text is taken as a header, as DuckDB
//! takes it. Names keep their spelling, trimmed; blank ones become `columnN`, repeated
//! ones get `_2`, `_3`, as the loader names them.
//!
//! # Types
//! The narrowest of BOOLEAN, BIGINT, DOUBLE, DATE, TIMESTAMP, TEXT that every sampled
//! value fits, checked with the loader's own deserializers, so the sampled values load:
//! - integers are BIGINT and decimals DOUBLE (as DuckDB infers), BIGINT with DOUBLE
//!   values is DOUBLE, DATE with TIMESTAMP values is TIMESTAMP, anything with text TEXT;
//! - codes with leading zeros (`007`, `00123`) are TEXT: they are identifiers, and would
//!   lose their zeros as numbers (DuckDB keeps them VARCHAR too);
//! - BOOLEAN takes `true`/`false`, `t`/`f`, `yes`/`no`, `y`/`n`, `on`/`off`, not `1`/`0`;
//! - DATE and TIMESTAMP take ISO dates (`2024-01-05`, `2024-01-05 10:00:00[.ffffff]`,
//!   `T` or space), and other forms (`05/01/2024`, `08-Jan-1999`, `1/5/2024 3:30 PM`) by
//!   one date and one timestamp format per input ([`Sniffed::formats`], the load's
//!   `DATEFORMAT` and `TIMESTAMPFORMAT`; see [`DATE_FORMATS`]); values with a time zone are
//!   TEXT;
//! - quoted numbers (`"42"`) are numbers (the loader parses them); a quoted empty string
//!   is a value, not NULL, and only TEXT holds it;
//! - NULL fields (the NULL string, unquoted) are skipped; a column of only NULLs is TEXT.
//!
//! [`widen`] re-plans a column when a load meets a value the sample did not show.
//!
//! ```
//! use wireload_sniff::{LineEnding, SniffOptions, sniff};
//! use wireload_types::SqlType;
//! let s = sniff(b"Person|age|joined\nbob|42|2024-01-05\nann||2023-12-31\n", &SniffOptions::default())
//!     .unwrap();
//! assert_eq!(s.dialect.delimiter, b'|');
//! assert!(s.dialect.header);
//! assert_eq!(s.line_ending, LineEnding::Lf);
//! let types: Vec<SqlType> = s.columns.iter().map(|c| c.ty).collect();
//! assert_eq!(types, [SqlType::Text, SqlType::BigInt, SqlType::Date]);
//! assert_eq!(
//!     s.create_table_sql("people"),
//!     "CREATE TABLE people (\"Person\" TEXT, age BIGINT, joined DATE)"
//! );
//! assert_eq!(
//!     s.copy_sql("people", "/data/people.csv"),
//!     "COPY people FROM '/data/people.csv' WITH (FORMAT csv, HEADER true, DELIMITER '|')"
//! );
//! ```
#![deny(missing_docs)]

mod detect;
mod error;
mod header;
mod records;
mod sample;
mod sql;
mod types;

use wireload_csv::Dialect;
use wireload_types::{ColumnDef, Field, Formats, SqlType};

pub use error::SniffError;
pub use sample::DEFAULT_SAMPLE_BYTES;
pub use sql::quote_ident;
pub use types::{DATE_FORMATS, widen};

use header::FirstField;
use records::{Reader, Record, Step, Syntax};
use types::{Candidates, FormatGuesses};

/// What the caller already knows; None = detect.
#[derive(Debug, Clone, Default)]
pub struct SniffOptions {
    /// The field delimiter.
    pub delimiter: Option<u8>,
    /// The quote; `Some(None)` = quoting disabled.
    pub quote: Option<Option<u8>>,
    /// The escape inside quoted fields; `Some(None)` = none (a quote always closes).
    pub escape: Option<Option<u8>>,
    /// Whether the first record is a header.
    pub header: Option<bool>,
    /// The NULL string (default: the empty string is NULL).
    pub null: Option<Vec<u8>>,
    /// Total bytes sampled, spread over the input (None: [`DEFAULT_SAMPLE_BYTES`]).
    pub sample_bytes: Option<usize>,
    /// `data` is a prefix of a longer input (a stream): its last record may be cut, so it
    /// is not sampled unless a record delimiter ends it.
    pub truncated: bool,
    /// The date and timestamp formats, where known (a format given is the only one tried).
    pub formats: Formats,
}

/// How the records of an input end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnding {
    /// `\n`
    Lf,
    /// `\r\n`
    CrLf,
    /// `\r`
    Cr,
    /// no record delimiter was seen (one record or none)
    None,
}

/// The dialect and columns inferred for an input.
#[derive(Debug, Clone, PartialEq)]
pub struct Sniffed {
    /// How the input is written, header included.
    pub dialect: Dialect,
    /// The columns: names from the header (spelling kept) or `column1..N`, nullable.
    pub columns: Vec<ColumnDef>,
    /// The input starts with a UTF-8 byte order mark.
    pub bom: bool,
    /// How the first record ends.
    pub line_ending: LineEnding,
    /// Data records whose values were typed (the header not counted).
    pub rows_sampled: usize,
    /// How the DATE and TIMESTAMP columns that are not ISO are written.
    pub formats: Formats,
}

/// Records typed together, in one flat buffer.
const BATCH_ROWS: usize = 2048;

/// Fields typed together at most (wide files get fewer records per batch).
const BATCH_FIELDS: usize = 1 << 16;

/// The fields of up to [`BATCH_ROWS`] records of `ncols` fields (about [`BATCH_FIELDS`]
/// fields at most).
struct Batch {
    ncols: usize,
    bytes: Vec<u8>,
    spans: Vec<(usize, usize, bool)>,
}

impl Batch {
    fn new(ncols: usize) -> Self {
        Batch {
            ncols,
            bytes: Vec::new(),
            spans: Vec::with_capacity((ncols * BATCH_ROWS).min(BATCH_FIELDS + ncols)),
        }
    }

    fn rows(&self) -> usize {
        self.spans.len() / self.ncols.max(1)
    }

    /// Adds the first `ncols` fields of `rec`.
    fn push(&mut self, rec: &Record) {
        for c in 0..self.ncols {
            let (bytes, quoted) = rec.field(c);
            let start = self.bytes.len();
            self.bytes.extend_from_slice(bytes);
            self.spans.push((start, self.bytes.len(), quoted));
        }
    }

    /// Narrows each column's candidates by its fields, and empties the batch.
    fn flush(&mut self, columns: &mut [Candidates], null: &[u8], guesses: &FormatGuesses) {
        let rows = self.rows();
        if rows == 0 {
            return;
        }
        let mut fields: Vec<Field<'_>> = Vec::with_capacity(rows);
        for (c, candidates) in columns.iter_mut().enumerate() {
            fields.clear();
            fields.extend(
                self.spans[c..]
                    .iter()
                    .step_by(self.ncols)
                    .map(|&(s, e, quoted)| Field {
                        bytes: &self.bytes[s..e],
                        quoted,
                    }),
            );
            candidates.observe(&fields, null, guesses);
        }
        drop(fields);
        self.bytes.clear();
        self.spans.clear();
    }
}

/// Infers the dialect, header and column types of `data`: a whole input (a memory-mapped
/// file) or the start of a stream ([`SniffOptions::truncated`]). Fixed values of `opts`
/// are kept; the rest is detected from at most [`SniffOptions::sample_bytes`] bytes
/// spread over `data`. An empty input gives one TEXT column `column1` and no header.
pub fn sniff(data: &[u8], opts: &SniffOptions) -> Result<Sniffed, SniffError> {
    let null = opts.null.clone().unwrap_or_default();
    let bom = data.starts_with(wireload_csv::BOM);
    let body = wireload_csv::skip_bom(data)..data.len();
    let windows = sample::windows(
        body,
        opts.sample_bytes.unwrap_or(sample::DEFAULT_SAMPLE_BYTES),
    );
    let complete_at_end = !opts.truncated;

    let present = detect::present_bytes(data, &windows);
    let candidates = detect::candidates(opts.delimiter, opts.quote, opts.escape, &null, &present);
    if candidates.is_empty() {
        return Err(SniffError::Options(options_problem(opts, &null)));
    }
    let trials: Vec<detect::Trial> = candidates
        .into_iter()
        .enumerate()
        .map(|(i, d)| detect::trial(data, &windows, d, i, complete_at_end))
        .collect();
    // When every candidate breaks the structure somewhere (a quote the caller fixed, used
    // loosely), the best one is still the dialect: the load reports the break with its
    // line, or rejects that record under ON_ERROR ignore, as it does for any input.
    let best = detect::best(trials).expect("at least one candidate");

    let ncols = best.ncols.max(1);
    let guesses = FormatGuesses::new(&opts.formats);
    let syntax = Syntax::of(&best.dialect);
    let mut rest = vec![Candidates::default(); ncols];
    let mut first: Option<Vec<FirstField>> = None;
    let mut first_fits = false;
    let mut line_ending = LineEnding::None;
    let mut batch = Batch::new(ncols);
    let mut rows = 0usize;
    let mut rec = Record::default();
    for (i, window) in windows.iter().enumerate() {
        let start = best.starts[i];
        if start >= window.end {
            continue;
        }
        let whole = complete_at_end && window.end == data.len();
        let mut reader = Reader::new(syntax, &data[..window.end], start, whole);
        let mut read_to = start;
        loop {
            match reader.next(&mut rec) {
                Step::Record => read_to = reader.position(),
                Step::Broken(..) => continue,
                Step::End => break,
            }
            if first.is_none() {
                // a trailing delimiter is no field, as in the loader
                let n = if rec.fits(ncols) {
                    rec.len().min(ncols)
                } else {
                    rec.len()
                };
                first = Some(
                    (0..n)
                        .map(|k| {
                            let (bytes, quoted) = rec.field(k);
                            (bytes.to_vec(), quoted)
                        })
                        .collect(),
                );
                first_fits = rec.fits(ncols);
                line_ending = ending(data, rec.terminator);
                continue;
            }
            if !rec.fits(ncols) {
                continue;
            }
            batch.push(&rec);
            rows += 1;
            if batch.rows() == BATCH_ROWS || batch.spans.len() >= BATCH_FIELDS {
                batch.flush(&mut rest, &null, &guesses);
            }
        }
        if let Err(e) = std::str::from_utf8(&data[start..read_to]) {
            let offset = start + e.valid_up_to();
            return Err(SniffError::InvalidUtf8 {
                offset,
                line: wireload_csv::line_of(data, offset),
            });
        }
    }
    batch.flush(&mut rest, &null, &guesses);

    let mut dialect = best.dialect;
    let Some(first) = first else {
        // no record at all: one text column, as DuckDB reads an empty file
        dialect.header = opts.header.unwrap_or(false);
        return Ok(Sniffed {
            dialect,
            columns: vec![ColumnDef {
                name: "column1".into(),
                ty: SqlType::Text,
                nullable: true,
            }],
            bom,
            line_ending,
            rows_sampled: 0,
            formats: opts.formats,
        });
    };
    let header = opts.header.unwrap_or_else(|| {
        let (types, formats) = types::resolve(&rest, &guesses);
        let types: &[SqlType] = if rows > 0 { &types } else { &[] };
        header::is_header(&first, types, &formats, &null)
    });
    let mut rows_sampled = rows;
    let mut columns = rest;
    if !header && first_fits {
        let fields: Vec<Field<'_>> = first
            .iter()
            .map(|(bytes, quoted)| Field {
                bytes,
                quoted: *quoted,
            })
            .collect();
        for (c, candidates) in columns.iter_mut().enumerate() {
            let mut one = Candidates::default();
            one.observe(&fields[c..c + 1], &null, &guesses);
            *candidates = candidates.merge(one);
        }
        rows_sampled += 1;
    }
    let names = header::column_names(header.then_some(&first[..]), ncols);
    dialect.header = header;
    let (types, mut formats) = types::resolve(&columns, &guesses);
    // a format given is kept, whether or not a column needs it
    formats.date = opts.formats.date.or(formats.date);
    formats.timestamp = opts.formats.timestamp.or(formats.timestamp);
    Ok(Sniffed {
        dialect,
        columns: names
            .into_iter()
            .zip(types)
            .map(|(name, ty)| ColumnDef {
                name,
                ty,
                nullable: true,
            })
            .collect(),
        bom,
        line_ending,
        rows_sampled,
        formats,
    })
}

/// The line ending of a record ended by the byte at `terminator`.
fn ending(data: &[u8], terminator: Option<usize>) -> LineEnding {
    match terminator.map(|t| (data[t], data.get(t + 1))) {
        Some((b'\r', Some(b'\n'))) => LineEnding::CrLf,
        Some((b'\r', _)) => LineEnding::Cr,
        Some(_) => LineEnding::Lf,
        None => LineEnding::None,
    }
}

/// Why the fixed options leave no candidate dialect.
fn options_problem(opts: &SniffOptions, null: &[u8]) -> String {
    let quote = opts.quote.unwrap_or(Some(b'"'));
    let dialect = Dialect {
        delimiter: opts.delimiter.unwrap_or(b','),
        quote,
        escape: opts.escape.unwrap_or(quote),
        header: false,
        null: null.to_vec(),
    };
    match dialect.validate() {
        Err(e) => e.0,
        Ok(()) if quote.is_none() && dialect.escape.is_some() => {
            "an escape cannot be used when quoting is disabled".into()
        }
        Ok(()) => "the NULL string rules out every delimiter and quote".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_endings() {
        assert_eq!(ending(b"a\r\nb", Some(1)), LineEnding::CrLf);
        assert_eq!(ending(b"a\rb", Some(1)), LineEnding::Cr);
        assert_eq!(ending(b"a\r", Some(1)), LineEnding::Cr);
        assert_eq!(ending(b"a\nb", Some(1)), LineEnding::Lf);
        assert_eq!(ending(b"a", None), LineEnding::None);
    }

    #[test]
    fn options_that_clash_are_an_error() {
        let opts = SniffOptions {
            delimiter: Some(b'\n'),
            ..SniffOptions::default()
        };
        let err = sniff(b"a,b\n", &opts).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid sniff options: the delimiter cannot be a newline or carriage return"
        );
        let opts = SniffOptions {
            delimiter: Some(b'|'),
            quote: Some(Some(b'|')),
            ..SniffOptions::default()
        };
        let err = sniff(b"a,b\n", &opts).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid sniff options: the delimiter and the quote must differ"
        );
        let opts = SniffOptions {
            quote: Some(None),
            escape: Some(Some(b'\\')),
            ..SniffOptions::default()
        };
        let err = sniff(b"a,b\n", &opts).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid sniff options: an escape cannot be used when quoting is disabled"
        );
    }
}
