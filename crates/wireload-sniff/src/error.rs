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
    /// The options given contradict each other.
    #[error("invalid sniff options: {0}")]
    Options(String),
}
