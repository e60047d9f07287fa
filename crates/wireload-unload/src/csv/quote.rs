//! Minimal, always-correct quoting: which fields must be quoted under a dialect, and how a
//! quoted field is written so that wireload's reader (and any RFC 4180 reader) gets the
//! value back.
//!
//! The reader's rules this follows (`wireload_csv::reference`): an unquoted field ends at
//! the delimiter, CR or LF, and may not contain the quote; an unquoted field equal to the
//! NULL string is NULL; a line holding one empty unquoted field is skipped; a leading UTF-8
//! BOM is skipped; inside quotes the quote is doubled (ESCAPE = QUOTE) or preceded by the
//! escape, which also precedes itself (a distinct ESCAPE).

use wireload_csv::Dialect;

use super::out::Out;

/// The UTF-8 byte order mark, which the reader skips at the start of a file.
pub(crate) const BOM: &[u8] = wireload_csv::BOM;

/// A dialect compiled for writing.
#[derive(Debug, Clone)]
pub(crate) struct Specials {
    /// Field delimiter.
    pub delimiter: u8,
    /// Quote character, `None` when quoting is disabled.
    pub quote: Option<u8>,
    /// What precedes a quote (and itself) inside quotes: the quote itself for RFC 4180
    /// doubling, a distinct escape, or `None` (a quote cannot occur inside quotes).
    pub escape: Option<u8>,
    /// The NULL string.
    pub null: Vec<u8>,
    /// The bytes whose presence forces quoting (repeated to fill the array).
    set: [u8; 5],
}

impl Specials {
    /// Compiles `dialect` (already validated).
    pub fn new(dialect: &Dialect) -> Self {
        let quote = dialect.quote;
        let escape = quote.and(dialect.escape);
        let set = [
            dialect.delimiter,
            b'\n',
            b'\r',
            quote.unwrap_or(b'\n'),
            escape.unwrap_or(b'\n'),
        ];
        Specials {
            delimiter: dialect.delimiter,
            quote,
            escape,
            null: dialect.null.clone(),
            set,
        }
    }

    /// Whether `b` forces quoting.
    #[inline(always)]
    pub fn is_special(&self, b: u8) -> bool {
        let [a, c, d, e, f] = self.set;
        (b == a) | (b == c) | (b == d) | (b == e) | (b == f)
    }

    /// Whether any byte of `alphabet` forces quoting.
    pub fn any_special(&self, alphabet: &[u8]) -> bool {
        alphabet.iter().any(|&b| self.is_special(b))
    }

    /// The index of the first byte of `hay` that forces quoting, or `hay.len()`.
    #[inline]
    pub fn find(&self, hay: &[u8]) -> usize {
        const LANES: usize = 32;
        let mut chunks = hay.chunks_exact(LANES);
        let mut base = 0;
        for chunk in &mut chunks {
            // No early exit inside the chunk: the compiler turns this into vector compares.
            let hit = chunk.iter().fold(false, |acc, &b| acc | self.is_special(b));
            if hit {
                return base + chunk.iter().position(|&b| self.is_special(b)).unwrap_or(0);
            }
            base += LANES;
        }
        let tail = chunks.remainder();
        base + tail
            .iter()
            .position(|&b| self.is_special(b))
            .unwrap_or(tail.len())
    }

    /// Whether `value` is the NULL string (and would read back as NULL unquoted).
    #[inline(always)]
    pub fn is_null_text(&self, value: &[u8]) -> bool {
        value.len() == self.null.len() && value == self.null.as_slice()
    }

    /// Whether `value` must be quoted: it has a special byte, equals the NULL string, is
    /// the empty only field of a record (`single`), or starts the file with a BOM (`first`).
    #[inline(always)]
    pub fn needs_quotes(&self, value: &[u8], single: bool, first: bool) -> bool {
        self.is_null_text(value)
            || (single && value.is_empty())
            || (first && value.starts_with(BOM))
            || self.find(value) < value.len()
    }

    /// Appends `value` quoted, or says why it cannot be written.
    #[inline]
    pub fn push_quoted(
        &self,
        out: &mut Out,
        value: &[u8],
        single: bool,
        first: bool,
    ) -> Result<(), String> {
        let Some(q) = self.quote else {
            return Err(self.why_unquotable(value, single, first));
        };
        out.reserve(value.len() + 2);
        out.push(q);
        match self.escape {
            Some(e) => {
                let mut rest = value;
                while let Some(i) = rest.iter().position(|&b| b == q || b == e) {
                    out.put(&rest[..i]);
                    out.push(e);
                    out.push(rest[i]);
                    rest = &rest[i + 1..];
                }
                out.put(rest);
            }
            None => {
                if value.contains(&q) {
                    return Err(format!(
                        "the value contains the quote character {}, which cannot be written \
                         when ESCAPE is empty; set ESCAPE (for example to the quote, to \
                         double it) or choose another QUOTE",
                        show(q)
                    ));
                }
                out.put(value);
            }
        }
        out.push(q);
        Ok(())
    }

    /// Appends one field: as it is, or quoted when it must be.
    #[inline]
    pub fn push_field(
        &self,
        out: &mut Out,
        value: &[u8],
        single: bool,
        first: bool,
    ) -> Result<(), String> {
        if self.needs_quotes(value, single, first) {
            self.push_quoted(out, value, single, first)
        } else {
            out.put(value);
            Ok(())
        }
    }

    /// Appends the NULL string, or says why a NULL cannot be written here.
    #[inline(always)]
    pub fn push_null(&self, out: &mut Out, single: bool, first: bool) -> Result<(), String> {
        if (single && self.null.is_empty()) || (first && self.null.starts_with(BOM)) {
            return Err(self.why_no_null(single));
        }
        out.put(&self.null);
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn why_no_null(&self, single: bool) -> String {
        if single {
            "a NULL in a one-column table cannot be written with an empty NULL string: the \
             line would be empty, and empty lines are skipped on load; choose a NULL string \
             such as '\\N'"
                .into()
        } else {
            "the NULL string starts with a UTF-8 byte order mark, which is dropped at the \
             start of a file on load; choose another NULL string"
                .into()
        }
    }

    /// Why `value`, which needs quotes, cannot be written without them.
    #[cold]
    #[inline(never)]
    fn why_unquotable(&self, value: &[u8], single: bool, first: bool) -> String {
        let what = if value.contains(&self.delimiter) {
            format!("contains the delimiter {}", show(self.delimiter))
        } else if value.contains(&b'\n') {
            "contains a newline".to_string()
        } else if value.contains(&b'\r') {
            "contains a carriage return".to_string()
        } else if self.is_null_text(value) {
            format!(
                "equals the NULL string '{}' and would load as NULL",
                String::from_utf8_lossy(&self.null)
            )
        } else if single && value.is_empty() {
            "is an empty string in a one-column table (an empty line, skipped on load)".to_string()
        } else if first && value.starts_with(BOM) {
            "starts the file with a UTF-8 byte order mark, which is dropped on load".to_string()
        } else {
            "needs quotes".to_string()
        };
        format!(
            "the value {what}, but quoting is disabled (QUOTE is empty); set a QUOTE \
             character or choose another DELIMITER or NULL string"
        )
    }
}

/// A byte as the user wrote it in the options: `','`, `'\t'`, `0x01`.
pub(crate) fn show(b: u8) -> String {
    match b {
        b'\t' => "'\\t'".to_string(),
        0x20..=0x7e => format!("'{}'", b as char),
        _ => format!("0x{b:02x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dialect(delimiter: u8, quote: Option<u8>, escape: Option<u8>, null: &str) -> Dialect {
        Dialect {
            delimiter,
            quote,
            escape,
            header: false,
            null: null.as_bytes().to_vec(),
        }
    }

    fn field(sp: &Specials, value: &str) -> Result<String, String> {
        let mut out = Out::default();
        sp.push_field(&mut out, value.as_bytes(), false, false)?;
        Ok(String::from_utf8(out.as_slice().to_vec()).unwrap())
    }

    #[test]
    fn find_matches_a_naive_search_at_every_position_and_length() {
        let sp = Specials::new(&dialect(b'|', Some(b'\''), Some(b'\\'), ""));
        for len in 0..100 {
            for at in 0..=len {
                let mut hay = vec![b'a'; len];
                for special in [b'|', b'\'', b'\\', b'\n', b'\r'] {
                    if at < len {
                        hay[at] = special;
                    }
                    let naive = hay.iter().position(|&b| sp.is_special(b)).unwrap_or(len);
                    assert_eq!(sp.find(&hay), naive, "len {len} at {at}");
                }
            }
        }
        // quote and escape are ordinary bytes when quoting is disabled
        let bare = Specials::new(&dialect(b'|', None, Some(b'\\'), ""));
        assert_eq!(bare.find(b"a'b\\c"), 5);
    }

    #[test]
    fn plain_values_are_never_quoted() {
        let sp = Specials::new(&Dialect::default());
        for v in [
            "a",
            "hello world",
            "ünïcödé ✓",
            "'single'",
            "\\",
            "x\ty",
            " ",
        ] {
            assert_eq!(field(&sp, v).unwrap(), v);
        }
    }

    #[test]
    fn each_special_forces_quotes() {
        let sp = Specials::new(&Dialect::default());
        assert_eq!(field(&sp, "a,b").unwrap(), "\"a,b\"");
        assert_eq!(field(&sp, "a\"b").unwrap(), "\"a\"\"b\"");
        assert_eq!(field(&sp, "a\nb").unwrap(), "\"a\nb\"");
        assert_eq!(field(&sp, "a\rb").unwrap(), "\"a\rb\"");
        assert_eq!(
            field(&sp, "").unwrap(),
            "\"\"",
            "empty equals the NULL string"
        );

        let backslash = Specials::new(&dialect(b',', Some(b'"'), Some(b'\\'), "\\N"));
        assert_eq!(field(&backslash, "").unwrap(), "");
        assert_eq!(field(&backslash, "\\N").unwrap(), "\"\\\\N\"");
        assert_eq!(field(&backslash, "a\\b").unwrap(), "\"a\\\\b\"");
        assert_eq!(field(&backslash, "a\"b").unwrap(), "\"a\\\"b\"");
        assert_eq!(field(&backslash, "\\N2").unwrap(), "\"\\\\N2\"");

        let mut out = Out::default();
        backslash.push_field(&mut out, b"", true, false).unwrap();
        assert_eq!(
            out.as_slice(),
            b"\"\"",
            "a one-column empty string is not an empty line"
        );
        out.clear();
        let bom = "\u{feff}x";
        backslash
            .push_field(&mut out, bom.as_bytes(), false, true)
            .unwrap();
        assert_eq!(out.as_slice(), format!("\"{bom}\"").as_bytes());
    }

    #[test]
    fn unwritable_values_say_why() {
        let bare = Specials::new(&dialect(b'|', None, None, "\\N"));
        assert_eq!(field(&bare, "a,\"b\"").unwrap(), "a,\"b\"");
        let err = field(&bare, "a|b").unwrap_err();
        assert!(
            err.contains("delimiter '|'") && err.contains("QUOTE"),
            "{err}"
        );
        let err = field(&bare, "\\N").unwrap_err();
        assert!(err.contains("NULL string"), "{err}");
        assert!(field(&bare, "a\nb").unwrap_err().contains("newline"));

        let no_escape = Specials::new(&dialect(b',', Some(b'"'), None, ""));
        assert_eq!(field(&no_escape, "a,b").unwrap(), "\"a,b\"");
        let err = field(&no_escape, "a\"b").unwrap_err();
        assert!(err.contains("ESCAPE"), "{err}");

        let sp = Specials::new(&Dialect::default());
        let err = sp.push_null(&mut Out::default(), true, false).unwrap_err();
        assert!(err.contains("'\\N'"), "{err}");
        sp.push_null(&mut Out::default(), false, false).unwrap();
    }
}
