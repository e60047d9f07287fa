//! The CSV dialect: delimiter, quote, escape, header and NULL string.

/// How a CSV file is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialect {
    /// Field delimiter (any single byte except CR, LF and the quote).
    pub delimiter: u8,
    /// Quote character; `None` disables quoting.
    pub quote: Option<u8>,
    /// Escape character inside quoted fields; equal to `quote` means RFC 4180 doubled
    /// quotes, `None` means a quote always ends the quoted field.
    pub escape: Option<u8>,
    /// The first record is a header, not data.
    pub header: bool,
    /// The NULL string: an unquoted field equal to it is NULL (PostgreSQL COPY semantics).
    pub null: Vec<u8>,
}

impl Default for Dialect {
    /// RFC 4180: comma, double quote doubled to escape, no header, empty string is NULL.
    fn default() -> Self {
        Dialect {
            delimiter: b',',
            quote: Some(b'"'),
            escape: Some(b'"'),
            header: false,
            null: Vec::new(),
        }
    }
}

impl Dialect {
    /// Checks that the special characters are distinct and not record delimiters.
    pub fn validate(&self) -> Result<(), crate::DialectError> {
        let bad = |b: u8| b == b'\n' || b == b'\r';
        if bad(self.delimiter) {
            return Err(crate::DialectError(
                "the delimiter cannot be a newline or carriage return".into(),
            ));
        }
        if let Some(q) = self.quote {
            if bad(q) {
                return Err(crate::DialectError(
                    "the quote cannot be a newline or carriage return".into(),
                ));
            }
            if q == self.delimiter {
                return Err(crate::DialectError(
                    "the delimiter and the quote must differ".into(),
                ));
            }
        }
        if let Some(e) = self.escape
            && (bad(e) || e == self.delimiter)
        {
            return Err(crate::DialectError(
                "the escape cannot be the delimiter, a newline or carriage return".into(),
            ));
        }
        if self
            .null
            .iter()
            .any(|&b| bad(b) || b == self.delimiter || Some(b) == self.quote)
        {
            return Err(crate::DialectError(
                "the NULL string cannot contain the delimiter, the quote or a newline".into(),
            ));
        }
        Ok(())
    }

    /// True when the escape is a backslash-style character distinct from the quote.
    pub fn has_distinct_escape(&self) -> bool {
        matches!((self.quote, self.escape), (Some(q), Some(e)) if q != e)
    }
}

/// How chunk boundaries are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScanMode {
    /// Always correct for RFC 4180 input: each chunk's quote context is computed in parallel.
    #[default]
    Safe,
    /// Assumes no record delimiter inside quotes; fails with an error naming `safe` when it sees one.
    Fast,
}

impl std::str::FromStr for ScanMode {
    type Err = crate::DialectError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "safe" => Ok(ScanMode::Safe),
            "fast" => Ok(ScanMode::Fast),
            other => Err(crate::DialectError(format!(
                "unknown mode '{other}' (expected safe or fast)"
            ))),
        }
    }
}
