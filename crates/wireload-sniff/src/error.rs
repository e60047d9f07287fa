//! Why an input could not be sniffed.

/// Why [`sniff`](crate::sniff) found no schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SniffError {
    /// The sampled text is not UTF-8.
    #[error(
        "invalid byte sequence for encoding UTF8 at byte {offset} (line {line}): the input must be UTF-8"
    )]
    InvalidUtf8 {
        /// byte offset of the first invalid byte
        offset: usize,
        /// 1-based line of that byte
        line: u64,
    },
    /// Every dialect left to try breaks the CSV structure of the sample.
    #[error(
        "no CSV dialect reads the sample without errors; the best, delimiter {delimiter} and quote {quote}, found {problem} at byte {offset} (line {line})"
    )]
    NoDialect {
        /// the best candidate's delimiter, as written in SQL (`','`)
        delimiter: String,
        /// its quote, as written in SQL (`'"'`, or `''` for none)
        quote: String,
        /// what broke the structure
        problem: &'static str,
        /// byte offset of the break
        offset: usize,
        /// 1-based line of the break
        line: u64,
    },
    /// The options given contradict each other.
    #[error("invalid sniff options: {0}")]
    Options(String),
}
