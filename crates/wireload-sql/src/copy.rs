//! `COPY table [(columns)] FROM 'path' [WITH] (options)`: parsing into load options.
//!
//! Both PostgreSQL forms are accepted: the option list `WITH (FORMAT csv, DELIMITER '|')`
//! and the older keyword form `DELIMITER '|' CSV HEADER`.

use datafusion::sql::sqlparser::tokenizer::Token;
use wireload_load::{Dialect, LoadOptions, MergeStrategy, ScanMode};

use crate::SqlError;
use crate::tokens::{Cursor, is_keyword};

/// A parsed `COPY ... FROM` statement.
#[derive(Debug, Clone)]
pub struct CopyStatement {
    /// Target table (normalized name).
    pub table: String,
    /// The column list, when given (normalized names).
    pub columns: Option<Vec<String>>,
    /// The file to read.
    pub path: String,
    /// How to read it.
    pub options: LoadOptions,
}

/// Parses a COPY statement's tokens (the first token is `COPY`).
pub fn parse_copy(
    tokens: &[datafusion::sql::sqlparser::tokenizer::TokenWithSpan],
) -> Result<CopyStatement, SqlError> {
    let mut c = Cursor::new(tokens);
    c.expect_keyword("copy")?;
    if c.peek() == Some(&Token::LParen) {
        return Err(unsupported("COPY (query) TO is not supported yet"));
    }
    let mut table = c.expect_identifier("a table name")?;
    if c.eat(&Token::Period) {
        if table != crate::DEFAULT_SCHEMA {
            return Err(unsupported(&format!("schema \"{table}\" does not exist")));
        }
        table = c.expect_identifier("a table name")?;
    }
    let columns = if c.eat(&Token::LParen) {
        let mut cols = vec![c.expect_identifier("a column name")?];
        while c.eat(&Token::Comma) {
            cols.push(c.expect_identifier("a column name")?);
        }
        c.expect(&Token::RParen)?;
        Some(cols)
    } else {
        None
    };
    if c.eat_keyword("to") {
        return Err(unsupported(
            "COPY ... TO is not supported yet; only COPY ... FROM",
        ));
    }
    c.expect_keyword("from")?;
    let path = match c.next_token() {
        Some(Token::SingleQuotedString(s)) | Some(Token::EscapedStringLiteral(s)) => s.clone(),
        Some(t) if is_keyword(t, "stdin") => {
            return Err(unsupported(
                "COPY ... FROM STDIN is not supported yet; name a file",
            ));
        }
        Some(t) if is_keyword(t, "program") => {
            return Err(unsupported("COPY ... FROM PROGRAM is not supported"));
        }
        _ => return Err(c.unexpected_previous("a quoted file path")),
    };
    let mut opts = OptionSet::default();
    c.eat_keyword("with");
    if c.eat(&Token::LParen) {
        parse_option_list(&mut c, &mut opts)?;
    } else {
        parse_legacy_options(&mut c, &mut opts)?;
    }
    if !c.at_end() {
        return Err(c.unexpected("the end of the COPY statement"));
    }
    Ok(CopyStatement {
        table,
        columns,
        path,
        options: opts.into_load_options()?,
    })
}

fn unsupported(msg: &str) -> SqlError {
    SqlError::Unsupported(msg.to_string())
}

/// One option's value as written.
#[derive(Debug, Clone)]
struct OptionValue {
    text: String,
}

/// The options given, each at most once.
#[derive(Debug, Default)]
struct OptionSet {
    seen: Vec<String>,
    format: Option<OptionValue>,
    delimiter: Option<OptionValue>,
    header: Option<OptionValue>,
    null: Option<OptionValue>,
    quote: Option<OptionValue>,
    escape: Option<OptionValue>,
    mode: Option<OptionValue>,
    merge: Option<OptionValue>,
    chunk_size: Option<OptionValue>,
    threads: Option<OptionValue>,
    encoding: Option<OptionValue>,
}

const KNOWN_OPTIONS: &str =
    "FORMAT, DELIMITER, HEADER, NULL, QUOTE, ESCAPE, MODE, MERGE, CHUNK_SIZE, THREADS, ENCODING";

impl OptionSet {
    /// Records option `name` (lowercase) with `value` (None: given without a value).
    fn set(&mut self, name: &str, value: Option<OptionValue>) -> Result<(), SqlError> {
        if self.seen.iter().any(|s| s == name) {
            return Err(unsupported(&format!(
                "COPY option {} is given more than once",
                name.to_uppercase()
            )));
        }
        let slot = match name {
            "format" => &mut self.format,
            "delimiter" => &mut self.delimiter,
            "header" => &mut self.header,
            "null" => &mut self.null,
            "quote" => &mut self.quote,
            "escape" => &mut self.escape,
            "mode" => &mut self.mode,
            "merge" => &mut self.merge,
            "chunk_size" => &mut self.chunk_size,
            "threads" => &mut self.threads,
            "encoding" => &mut self.encoding,
            "binary" => {
                return Err(unsupported(
                    "COPY format binary is not supported (only csv)",
                ));
            }
            other => {
                return Err(unsupported(&format!(
                    "unknown COPY option {} (known options: {KNOWN_OPTIONS})",
                    other.to_uppercase()
                )));
            }
        };
        let value = match (name, value) {
            ("header", None) => OptionValue {
                text: "true".into(),
            },
            (_, Some(v)) => v,
            (_, None) => {
                return Err(SqlError::Parse(format!(
                    "COPY option {} needs a value",
                    name.to_uppercase()
                )));
            }
        };
        self.seen.push(name.to_string());
        *slot = Some(value);
        Ok(())
    }

    fn into_load_options(self) -> Result<LoadOptions, SqlError> {
        if let Some(f) = &self.format
            && !f.text.eq_ignore_ascii_case("csv")
        {
            return Err(unsupported(&format!(
                "COPY format {} is not supported (only csv)",
                f.text
            )));
        }
        if let Some(e) = &self.encoding {
            let enc = e.text.to_ascii_lowercase().replace(['-', '_'], "");
            if enc != "utf8" {
                return Err(unsupported(&format!(
                    "COPY encoding {} is not supported (only UTF8)",
                    e.text
                )));
            }
        }
        let mut dialect = Dialect::default();
        if let Some(d) = &self.delimiter {
            dialect.delimiter = single_byte("DELIMITER", &d.text)?
                .ok_or_else(|| unsupported("COPY DELIMITER cannot be empty"))?;
        }
        if let Some(h) = &self.header {
            dialect.header = parse_bool("HEADER", &h.text)?;
        }
        if let Some(n) = &self.null {
            dialect.null = n.text.as_bytes().to_vec();
        }
        if let Some(q) = &self.quote {
            dialect.quote = single_byte("QUOTE", &q.text)?;
        }
        dialect.escape = match &self.escape {
            Some(e) => {
                let esc = single_byte("ESCAPE", &e.text)?;
                if esc.is_some() && dialect.quote.is_none() {
                    return Err(unsupported(
                        "COPY ESCAPE cannot be used when quoting is disabled (QUOTE '')",
                    ));
                }
                esc
            }
            None => dialect.quote,
        };
        dialect
            .validate()
            .map_err(|e| unsupported(&format!("invalid COPY options: {e}")))?;
        let mut opts = LoadOptions {
            dialect,
            ..LoadOptions::default()
        };
        if let Some(m) = &self.mode {
            opts.mode = m
                .text
                .parse::<ScanMode>()
                .map_err(|e| unsupported(&format!("COPY MODE: {e}")))?;
        }
        if let Some(m) = &self.merge {
            opts.merge = m
                .text
                .parse::<MergeStrategy>()
                .map_err(|e| unsupported(&format!("COPY MERGE: {e}")))?;
        }
        if let Some(s) = &self.chunk_size {
            opts.chunk_size = Some(parse_size(&s.text)?);
        }
        if let Some(t) = &self.threads {
            let n: usize = t.text.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                unsupported(&format!(
                    "COPY THREADS must be a positive integer, got {}",
                    t.text
                ))
            })?;
            opts.threads = Some(n);
        }
        Ok(opts)
    }
}

/// A one-byte option value; `''` gives None. `'\t'` (backslash, t) is accepted for a tab.
fn single_byte(option: &str, text: &str) -> Result<Option<u8>, SqlError> {
    match text.as_bytes() {
        [] => Ok(None),
        [b] if b.is_ascii() => Ok(Some(*b)),
        b"\\t" => Ok(Some(b'\t')),
        _ => Err(unsupported(&format!(
            "COPY {option} must be a single one-byte character, got '{text}'"
        ))),
    }
}

fn parse_bool(option: &str, text: &str) -> Result<bool, SqlError> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "on" | "1" | "yes" => Ok(true),
        "false" | "off" | "0" | "no" => Ok(false),
        _ => Err(unsupported(&format!(
            "COPY {option} requires a Boolean value (true/false/on/off), got {text}"
        ))),
    }
}

/// A byte count: `65536`, `64KiB`, `4MB`, `1 MiB` (KB = 1000 bytes, KiB = 1024 bytes).
fn parse_size(text: &str) -> Result<usize, SqlError> {
    let err = || {
        unsupported(&format!(
            "COPY CHUNK_SIZE must be a positive byte count such as 1048576, '64KiB' or '4MB', got {text}"
        ))
    };
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let num: usize = num.parse().map_err(|_| err())?;
    let factor: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        _ => return Err(err()),
    };
    num.checked_mul(factor).filter(|&n| n > 0).ok_or_else(err)
}

/// The text of a value token, or None when the token cannot be a value.
fn value_of(token: &Token) -> Option<OptionValue> {
    match token {
        Token::SingleQuotedString(s) | Token::EscapedStringLiteral(s) => {
            Some(OptionValue { text: s.clone() })
        }
        Token::Word(w) => Some(OptionValue {
            text: w.value.clone(),
        }),
        Token::Number(n, _) => Some(OptionValue { text: n.clone() }),
        _ => None,
    }
}

/// `( name [value] [, ...] )` after the opening parenthesis.
fn parse_option_list(c: &mut Cursor<'_>, opts: &mut OptionSet) -> Result<(), SqlError> {
    loop {
        let name = match c.next_token() {
            Some(Token::Word(w)) => w.value.to_ascii_lowercase(),
            _ => return Err(c.unexpected_previous("a COPY option name")),
        };
        let mut value: Option<OptionValue> = None;
        while let Some(t) = c.peek() {
            if matches!(t, Token::Comma | Token::RParen) {
                break;
            }
            let v = value_of(t)
                .ok_or_else(|| c.unexpected(&format!("a value for {}", name.to_uppercase())))?;
            c.next_token();
            value = Some(match value {
                None => v,
                // `CHUNK_SIZE 4 MB`: a number followed by a unit
                Some(prev) => OptionValue {
                    text: format!("{}{}", prev.text, v.text),
                },
            });
        }
        opts.set(&name, value)?;
        if c.eat(&Token::RParen) {
            return Ok(());
        }
        c.expect(&Token::Comma)?;
    }
}

/// PostgreSQL's older option syntax: `[DELIMITER [AS] 'c'] [NULL [AS] 's'] [CSV [HEADER]
/// [QUOTE [AS] 'q'] [ESCAPE [AS] 'e']]`, in any order; wireload's own options take a value too.
fn parse_legacy_options(c: &mut Cursor<'_>, opts: &mut OptionSet) -> Result<(), SqlError> {
    while let Some(t) = c.next_token() {
        let name = match t {
            Token::Word(w) if w.quote_style.is_none() => w.value.to_ascii_lowercase(),
            _ => return Err(c.unexpected_previous("a COPY option")),
        };
        match name.as_str() {
            "csv" => opts.set("format", Some(OptionValue { text: "csv".into() }))?,
            "header" => opts.set("header", None)?,
            "binary" => opts.set("binary", None)?,
            _ => {
                c.eat_keyword("as");
                let v = c
                    .peek()
                    .and_then(value_of)
                    .ok_or_else(|| c.unexpected(&format!("a value for {}", name.to_uppercase())))?;
                c.next_token();
                let v = if name == "chunk_size" && matches!(c.peek(), Some(Token::Word(_))) {
                    let unit = c
                        .next_token()
                        .and_then(value_of)
                        .map(|u| u.text)
                        .unwrap_or_default();
                    OptionValue {
                        text: format!("{}{unit}", v.text),
                    }
                } else {
                    v
                };
                opts.set(&name, Some(v))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::split_statements;

    fn parse(sql: &str) -> Result<CopyStatement, SqlError> {
        let stmts = split_statements(sql).unwrap();
        parse_copy(&stmts[0].tokens)
    }

    fn err(sql: &str) -> String {
        parse(sql).unwrap_err().to_string()
    }

    #[test]
    fn minimal_copy_uses_csv_defaults() {
        let c = parse("COPY t FROM '/tmp/x.csv'").unwrap();
        assert_eq!(c.table, "t");
        assert_eq!(c.path, "/tmp/x.csv");
        assert!(c.columns.is_none());
        assert_eq!(c.options.dialect, Dialect::default());
        assert_eq!(c.options.mode, ScanMode::Safe);
        assert_eq!(c.options.merge, MergeStrategy::Chunk);
        assert_eq!(c.options.chunk_size, None);
        assert_eq!(c.options.threads, None);
    }

    #[test]
    fn option_list_sets_every_option() {
        let c = parse(
            "copy Lineitem (A, \"B\") from 'f.tbl' with (format CSV, delimiter '|', HEADER, null 'NA', \
             quote '''', escape '\\', mode fast, merge copy, chunk_size 4096, threads 3)",
        )
        .unwrap();
        assert_eq!(c.table, "lineitem");
        assert_eq!(
            c.columns.as_deref(),
            Some(&["a".to_string(), "B".to_string()][..])
        );
        let d = &c.options.dialect;
        assert_eq!(d.delimiter, b'|');
        assert!(d.header);
        assert_eq!(d.null, b"NA");
        assert_eq!(d.quote, Some(b'\''));
        assert_eq!(d.escape, Some(b'\\'));
        assert_eq!(c.options.mode, ScanMode::Fast);
        assert_eq!(c.options.merge, MergeStrategy::Copy);
        assert_eq!(c.options.chunk_size, Some(4096));
        assert_eq!(c.options.threads, Some(3));
    }

    #[test]
    fn with_is_optional_and_header_takes_booleans() {
        let c = parse("COPY t FROM 'f' (HEADER false, DELIMITER ';')").unwrap();
        assert!(!c.options.dialect.header);
        assert_eq!(c.options.dialect.delimiter, b';');
        for (v, want) in [
            ("on", true),
            ("off", false),
            ("true", true),
            ("FALSE", false),
        ] {
            let c = parse(&format!("COPY t FROM 'f' WITH (HEADER {v})")).unwrap();
            assert_eq!(c.options.dialect.header, want, "{v}");
        }
        assert!(err("COPY t FROM 'f' WITH (HEADER maybe)").contains("Boolean"));
    }

    #[test]
    fn quote_and_escape_can_be_disabled() {
        let c = parse("COPY t FROM 'f' WITH (QUOTE '')").unwrap();
        assert_eq!(c.options.dialect.quote, None);
        assert_eq!(c.options.dialect.escape, None);
        let c = parse("COPY t FROM 'f' WITH (ESCAPE '')").unwrap();
        assert_eq!(c.options.dialect.quote, Some(b'"'));
        assert_eq!(c.options.dialect.escape, None);
        let c = parse("COPY t FROM 'f' WITH (QUOTE '@')").unwrap();
        assert_eq!(
            c.options.dialect.escape,
            Some(b'@'),
            "the escape defaults to the quote"
        );
        assert!(
            err("COPY t FROM 'f' WITH (QUOTE '', ESCAPE '\\')").contains("quoting is disabled")
        );
    }

    #[test]
    fn tab_delimiters() {
        assert_eq!(
            parse("COPY t FROM 'f' WITH (DELIMITER E'\\t')")
                .unwrap()
                .options
                .dialect
                .delimiter,
            b'\t'
        );
        assert_eq!(
            parse("COPY t FROM 'f' WITH (DELIMITER '\\t')")
                .unwrap()
                .options
                .dialect
                .delimiter,
            b'\t'
        );
    }

    #[test]
    fn chunk_sizes_with_units() {
        let size = |s: &str| {
            parse(&format!("COPY t FROM 'f' WITH (CHUNK_SIZE {s})"))
                .unwrap()
                .options
                .chunk_size
        };
        assert_eq!(size("'4MB'"), Some(4_000_000));
        assert_eq!(size("'64KiB'"), Some(65_536));
        assert_eq!(size("'1 MiB'"), Some(1 << 20));
        assert_eq!(size("1"), Some(1));
        assert_eq!(size("2 GiB"), Some(2 << 30));
        assert!(err("COPY t FROM 'f' WITH (CHUNK_SIZE 0)").contains("CHUNK_SIZE"));
        assert!(err("COPY t FROM 'f' WITH (CHUNK_SIZE '4XB')").contains("CHUNK_SIZE"));
    }

    #[test]
    fn legacy_form() {
        let c = parse("COPY t FROM 'f' DELIMITER '|' CSV HEADER").unwrap();
        assert_eq!(c.options.dialect.delimiter, b'|');
        assert!(c.options.dialect.header);
        let c = parse(
            "COPY t FROM 'f' WITH DELIMITER AS ';' NULL AS 'x' CSV QUOTE AS '''' ESCAPE AS '\\'",
        )
        .unwrap();
        let d = &c.options.dialect;
        assert_eq!(
            (d.delimiter, d.null.as_slice(), d.quote, d.escape),
            (b';', &b"x"[..], Some(b'\''), Some(b'\\'))
        );
        let c = parse("COPY t FROM 'f' CSV").unwrap();
        assert!(!c.options.dialect.header);
    }

    #[test]
    fn option_errors_are_clear() {
        assert!(err("COPY t FROM 'f' WITH (FORMAT parquet)").contains("only csv"));
        assert!(err("COPY t FROM 'f' WITH (FORMAT binary)").contains("only csv"));
        assert!(err("COPY t FROM 'f' BINARY").contains("only csv"));
        assert!(err("COPY t FROM 'f' WITH (DELIMITER ',,')").contains("single one-byte"));
        assert!(err("COPY t FROM 'f' WITH (DELIMITER 'é')").contains("single one-byte"));
        assert!(err("COPY t FROM 'f' WITH (DELIMITER '')").contains("empty"));
        assert!(
            err("COPY t FROM 'f' WITH (DELIMITER ',', QUOTE ',')").contains("invalid COPY options")
        );
        assert!(err("COPY t FROM 'f' WITH (BOGUS 1)").contains("unknown COPY option BOGUS"));
        assert!(err("COPY t FROM 'f' WITH (MODE turbo)").contains("MODE"));
        assert!(err("COPY t FROM 'f' WITH (MERGE fancy)").contains("MERGE"));
        assert!(err("COPY t FROM 'f' WITH (THREADS 0)").contains("THREADS"));
        assert!(err("COPY t FROM 'f' WITH (NULL)").contains("needs a value"));
        assert!(err("COPY t FROM 'f' WITH (HEADER, HEADER)").contains("more than once"));
        assert!(err("COPY t FROM 'f' WITH (ENCODING 'latin1')").contains("UTF8"));
        assert!(parse("COPY t FROM 'f' WITH (ENCODING 'UTF-8')").is_ok());
    }

    #[test]
    fn statement_errors_are_clear() {
        assert!(err("COPY t FROM STDIN").contains("STDIN"));
        assert!(err("COPY t TO 'f'").contains("COPY ... TO"));
        assert!(err("COPY (SELECT 1) TO 'f'").contains("not supported"));
        assert!(err("COPY t FROM f").contains("quoted file path"));
        assert!(err("COPY t FROM 'f' WITH (HEADER) extra").contains("end of the COPY statement"));
        assert!(err("COPY t (a, 'b') FROM 'f'").contains("column name"));
        assert!(parse("COPY FROM 'f'").is_err());
        assert!(err("COPY other.t FROM 'f'").contains("schema"));
        assert_eq!(parse("COPY public.t FROM 'f'").unwrap().table, "t");
    }
}
