//! A lenient record reader for sampling: any number of fields per record, records that
//! run past the end of a window reported as partial, and structural errors reported and
//! skipped instead of ending the read.
//!
//! It splits records exactly as `wireload_csv`'s reference scanner does (quote only at
//! the start of a field, doubled quotes or a distinct escape inside quoted fields, `\n`,
//! `\r` and `\r\n` ending records, lines of one empty unquoted field skipped), so the
//! fields typed here are the fields the loader reads; the tests check it against
//! `wireload_csv::reference::first_record`.

use wireload_csv::Dialect;

/// The bytes that structure a record, for one candidate dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Syntax {
    /// field delimiter
    pub delimiter: u8,
    /// quote, None when quoting is disabled
    pub quote: Option<u8>,
    /// an escape distinct from the quote (backslash style)
    pub escape: Option<u8>,
    /// a doubled quote inside a quoted field is a literal quote
    pub doubling: bool,
}

impl Syntax {
    /// The syntax of `dialect`.
    pub fn of(dialect: &Dialect) -> Self {
        let doubling = dialect.quote.is_some() && dialect.escape == dialect.quote;
        Syntax {
            delimiter: dialect.delimiter,
            quote: dialect.quote,
            escape: if dialect.quote.is_some() && !doubling {
                dialect.escape
            } else {
                None
            },
            doubling,
        }
    }
}

/// What broke a record's structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Broken {
    /// a quote inside a field that did not start with one
    QuoteInUnquotedField,
    /// text after the closing quote of a quoted field
    TextAfterClosingQuote,
    /// a quoted field still open at the end of the input
    UnterminatedQuote,
}

/// One record's fields, unescaped, in one reused buffer.
#[derive(Debug, Default)]
pub(crate) struct Record {
    /// the fields' bytes, one after the other
    buf: Vec<u8>,
    /// each field's end in `buf` and whether it was quoted
    ends: Vec<(usize, bool)>,
    /// byte offset of the record in the input
    pub start: usize,
    /// byte offset of the byte that ended the record (`\n` or `\r`), None at the end of input
    pub terminator: Option<usize>,
}

impl Record {
    /// Number of fields.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Field `i`: its bytes and whether it was quoted.
    pub fn field(&self, i: usize) -> (&[u8], bool) {
        let start = if i == 0 { 0 } else { self.ends[i - 1].0 };
        let (end, quoted) = self.ends[i];
        (&self.buf[start..end], quoted)
    }

    /// Fields the loader reads with `ncols` columns: a record with one extra empty
    /// unquoted field (a trailing delimiter) counts as `ncols` fields.
    pub fn fits(&self, ncols: usize) -> bool {
        let n = self.len();
        n == ncols || (n == ncols + 1 && self.field(n - 1) == (&[][..], false))
    }

    fn clear(&mut self, start: usize) {
        self.buf.clear();
        self.ends.clear();
        self.start = start;
        self.terminator = None;
    }

    fn end_field(&mut self, quoted: bool) {
        self.ends.push((self.buf.len(), quoted));
    }
}

/// What [`Reader::next`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// a complete record, now in the caller's [`Record`]
    Record,
    /// a broken record at this byte offset; the reader skipped to the next line
    Broken(Broken, usize),
    /// no more complete records in the window
    End,
}

/// Reads the records that start at `pos` and end within `data` (the window's end).
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    syntax: Syntax,
    data: &'a [u8],
    pos: usize,
    /// the end of `data` ends a record (the true end of the input), rather than cutting it
    complete_at_end: bool,
}

impl<'a> Reader<'a> {
    /// A reader of the records of `data` from `pos` (a record start); `complete_at_end`
    /// says whether the end of `data` is the end of the input.
    pub fn new(syntax: Syntax, data: &'a [u8], pos: usize, complete_at_end: bool) -> Self {
        Reader {
            syntax,
            data,
            pos,
            complete_at_end,
        }
    }

    /// Offset after the last record read.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Reads the next non-empty record into `rec`.
    pub fn next(&mut self, rec: &mut Record) -> Step {
        loop {
            if self.pos >= self.data.len() {
                return Step::End;
            }
            match self.record(rec) {
                Ok(Some(next)) => {
                    self.pos = next;
                    // a line of one empty unquoted field is no record (as in the loader)
                    if rec.len() == 1 && rec.field(0) == (&[][..], false) {
                        continue;
                    }
                    return Step::Record;
                }
                Ok(None) => {
                    self.pos = self.data.len();
                    return Step::End;
                }
                Err((broken, at)) => {
                    if broken == Broken::UnterminatedQuote && !self.complete_at_end {
                        // the quoted field may close past the window: a partial record
                        self.pos = self.data.len();
                        return Step::End;
                    }
                    self.pos = match memchr::memchr2(b'\n', b'\r', &self.data[at..]) {
                        Some(j) => at + j + 1,
                        None => self.data.len(),
                    };
                    return Step::Broken(broken, at);
                }
            }
        }
    }

    /// The record at `self.pos`: the offset after it, None when it is cut by the
    /// window's end, or what broke it and where.
    fn record(&self, rec: &mut Record) -> Result<Option<usize>, (Broken, usize)> {
        let data = self.data;
        let len = data.len();
        let Syntax {
            delimiter,
            quote,
            escape,
            doubling,
        } = self.syntax;
        rec.clear(self.pos);
        let mut i = self.pos;
        loop {
            match quote {
                Some(q) if i < len && data[i] == q => {
                    let open = i;
                    i += 1;
                    loop {
                        let Some(j) = (match escape {
                            Some(e) => memchr::memchr2(q, e, &data[i..]),
                            None => memchr::memchr(q, &data[i..]),
                        }) else {
                            return Err((Broken::UnterminatedQuote, open));
                        };
                        rec.buf.extend_from_slice(&data[i..i + j]);
                        i += j;
                        let next = data.get(i + 1).copied();
                        if data[i] == q {
                            if doubling && next == Some(q) {
                                rec.buf.push(q);
                                i += 2;
                                continue;
                            }
                            if doubling && next.is_none() && !self.complete_at_end {
                                // a doubled quote may be cut by the window's end
                                return Err((Broken::UnterminatedQuote, open));
                            }
                            i += 1; // the closing quote
                            break;
                        }
                        // the escape: it escapes a following quote or escape, else is literal
                        match next {
                            Some(b) if b == q || Some(b) == escape => {
                                rec.buf.push(b);
                                i += 2;
                            }
                            _ => {
                                rec.buf.push(data[i]);
                                i += 1;
                            }
                        }
                    }
                    if i < len && data[i] != delimiter && data[i] != b'\n' && data[i] != b'\r' {
                        return Err((Broken::TextAfterClosingQuote, i));
                    }
                    rec.end_field(true);
                }
                _ => {
                    let end =
                        memchr::memchr3(delimiter, b'\n', b'\r', &data[i..]).map_or(len, |j| i + j);
                    if let Some(q) = quote
                        && let Some(j) = memchr::memchr(q, &data[i..end])
                    {
                        return Err((Broken::QuoteInUnquotedField, i + j));
                    }
                    rec.buf.extend_from_slice(&data[i..end]);
                    i = end;
                    rec.end_field(false);
                }
            }
            if i < len && data[i] == delimiter {
                i += 1;
                continue;
            }
            if i < len {
                rec.terminator = Some(i);
                return Ok(Some(i + 1));
            }
            return Ok(self.complete_at_end.then_some(len));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wireload_csv::{ScanConfig, ScanMode};

    /// Records as lists of fields.
    type Rows = Vec<Vec<Vec<u8>>>;

    /// Every record of `data` by our reader and by the reference scanner's `first_record`.
    fn both(dialect: &Dialect, data: &[u8]) -> (Rows, Rows) {
        let mut ours = Vec::new();
        let mut reader = Reader::new(Syntax::of(dialect), data, 0, true);
        let mut rec = Record::default();
        while let Step::Record = reader.next(&mut rec) {
            ours.push((0..rec.len()).map(|i| rec.field(i).0.to_vec()).collect());
        }
        let cfg = ScanConfig::new(dialect, ScanMode::Safe).unwrap();
        let mut theirs = Vec::new();
        let mut pos = 0;
        while let Some((fields, next)) =
            wireload_csv::reference::first_record(&cfg, data, pos).unwrap()
        {
            theirs.push(fields);
            pos = next;
        }
        (ours, theirs)
    }

    #[test]
    fn splits_records_like_the_reference_scanner() {
        let doubled = Dialect::default();
        let backslash = Dialect {
            escape: Some(b'\\'),
            ..Dialect::default()
        };
        let unquoted = Dialect {
            delimiter: b'|',
            quote: None,
            escape: None,
            ..Dialect::default()
        };
        let cases: &[(&Dialect, &[u8])] = &[
            (
                &doubled,
                b"a,b\r\n1,\"x,\ny\"\r\n\n2,\"say \"\"hi\"\"\",\n3",
            ),
            (&doubled, b"\"\",,\"\"\"\"\r\r\rz\n"),
            (&backslash, b"1,\"a \\\" b\",\"c\\\\\",\"d\\e\"\n2,x,y\n"),
            (&unquoted, b"1|\"a|b\"\n\n2|c\r\n"),
        ];
        for (dialect, data) in cases {
            let (ours, theirs) = both(dialect, data);
            assert_eq!(ours, theirs, "{}", String::from_utf8_lossy(data));
        }
        let (ours, _) = both(&doubled, cases[0].1);
        assert_eq!(
            ours,
            [
                vec![b"a".to_vec(), b"b".to_vec()],
                vec![b"1".to_vec(), b"x,\ny".to_vec()],
                vec![b"2".to_vec(), b"say \"hi\"".to_vec(), b"".to_vec()],
                vec![b"3".to_vec()],
            ]
        );
    }

    #[test]
    fn a_record_cut_by_the_window_is_not_read() {
        let syntax = Syntax::of(&Dialect::default());
        let mut rec = Record::default();
        for (data, records) in [
            (&b"1,2\n3,4"[..], 1),
            (b"1,2\n3,\"4\n", 1),
            (b"1,2\n3,\"4\"", 1),
            (b"1,2\n3,4\n", 2),
        ] {
            let mut reader = Reader::new(syntax, data, 0, false);
            let mut n = 0;
            while reader.next(&mut rec) == Step::Record {
                n += 1;
            }
            assert_eq!(n, records, "{}", String::from_utf8_lossy(data));
        }
    }

    #[test]
    fn broken_records_are_reported_and_skipped() {
        let syntax = Syntax::of(&Dialect::default());
        let data = b"a,b\"c\n\"x\"y,1\n\"open\n";
        let mut reader = Reader::new(syntax, data, 0, true);
        let mut rec = Record::default();
        assert_eq!(
            reader.next(&mut rec),
            Step::Broken(Broken::QuoteInUnquotedField, 3)
        );
        assert_eq!(
            reader.next(&mut rec),
            Step::Broken(Broken::TextAfterClosingQuote, 9)
        );
        assert_eq!(
            reader.next(&mut rec),
            Step::Broken(Broken::UnterminatedQuote, 13)
        );
        assert_eq!(reader.next(&mut rec), Step::End);
    }
}
