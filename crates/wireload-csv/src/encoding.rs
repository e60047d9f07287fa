//! The character encoding of a CSV input (COPY's `ENCODING`): its names and how they are
//! written; the loader transcodes an input in another encoding than UTF-8 as it reads it.

use std::fmt;

/// The character encoding of a CSV input (COPY's `ENCODING`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Encoding {
    /// UTF-8, read as it is (the fast path; a UTF-8 byte order mark is skipped).
    #[default]
    Utf8,
    /// ISO-8859-1 exactly: every byte is the code point of its value (0x80-0x9F are the
    /// C1 controls, as in PostgreSQL's `LATIN1`).
    Latin1,
    /// windows-1252 (PostgreSQL's `WIN1252`): Latin-1 with printable characters such as
    /// `€` in 0x80-0x9F.
    Windows1252,
    /// UTF-16, little-endian; a little-endian byte order mark is dropped.
    Utf16Le,
    /// UTF-16, big-endian; a big-endian byte order mark is dropped.
    Utf16Be,
    /// UTF-16 in the byte order its byte order mark says (dropped); little-endian without one.
    Utf16,
}

/// Every name [`Encoding::from_str`](std::str::FromStr) takes, for error messages.
const NAMES: &str = "utf8 (utf-8), latin1 (latin-1, iso-8859-1, iso88591), \
                     windows-1252 (win1252, cp1252), utf-16 (utf16), utf-16le or utf-16be";

impl Encoding {
    /// The encoding's name in messages (`UTF-8`, `LATIN1`, `UTF-16LE`...).
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "UTF-8",
            Encoding::Latin1 => "LATIN1",
            Encoding::Windows1252 => "WIN1252",
            Encoding::Utf16Le => "UTF-16LE",
            Encoding::Utf16Be => "UTF-16BE",
            Encoding::Utf16 => "UTF-16",
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Encoding {
    type Err = String;

    /// PostgreSQL's and DuckDB's names, in any case, with or without `-` and `_`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let key: String = s
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | ' '))
            .collect::<String>()
            .to_ascii_lowercase();
        match key.as_str() {
            "utf8" => Ok(Encoding::Utf8),
            "latin1" | "iso88591" => Ok(Encoding::Latin1),
            "windows1252" | "win1252" | "cp1252" => Ok(Encoding::Windows1252),
            "utf16" => Ok(Encoding::Utf16),
            "utf16le" => Ok(Encoding::Utf16Le),
            "utf16be" => Ok(Encoding::Utf16Be),
            _ => Err(format!("unknown encoding '{s}' (expected {NAMES})")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_in_any_case_and_unknown_ones_list_the_names() {
        for (s, e) in [
            ("UTF8", Encoding::Utf8),
            ("utf-8", Encoding::Utf8),
            ("Latin1", Encoding::Latin1),
            ("latin-1", Encoding::Latin1),
            ("ISO-8859-1", Encoding::Latin1),
            ("iso88591", Encoding::Latin1),
            ("WIN1252", Encoding::Windows1252),
            ("windows-1252", Encoding::Windows1252),
            ("utf-16", Encoding::Utf16),
            ("UTF16", Encoding::Utf16),
            ("utf-16le", Encoding::Utf16Le),
            ("UTF_16BE", Encoding::Utf16Be),
        ] {
            assert_eq!(s.parse::<Encoding>(), Ok(e), "{s}");
        }
        assert_eq!(
            "ebcdic".parse::<Encoding>().unwrap_err(),
            format!("unknown encoding 'ebcdic' (expected {NAMES})")
        );
    }
}
