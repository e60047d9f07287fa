//! `EXPORT DATABASE 'dir' [WITH (FORMAT arrow, COMPRESSION lz4|zstd|none)]` and
//! `IMPORT DATABASE 'dir'`, parsed (the files are `wireload_unload::export`'s).

use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;
use wireload_unload::ipc::IpcCompression;

use crate::error::SqlError;
use crate::parse::expected;

/// A parsed `EXPORT DATABASE`.
#[derive(Debug, Clone, PartialEq)]
pub struct Export {
    /// The directory to create.
    pub dir: String,
    /// Buffer compression of the Arrow files.
    pub compression: IpcCompression,
}

impl Export {
    /// `EXPORT DATABASE 'dir'` with the default compression (LZ4).
    pub fn to(dir: impl Into<String>) -> Self {
        Export {
            dir: dir.into(),
            compression: IpcCompression::Lz4Frame,
        }
    }
}

/// A parsed `IMPORT DATABASE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    /// A directory written by `EXPORT DATABASE`.
    pub dir: String,
}

/// A quoted directory path.
fn directory(p: &mut Parser<'_>) -> Result<String, SqlError> {
    let token = p.next_token();
    match token.token {
        Token::SingleQuotedString(s) | Token::EscapedStringLiteral(s) => Ok(s),
        _ => Err(SqlError::Syntax(expected(
            "a quoted directory path",
            &token,
        ))),
    }
}

/// The rest of `EXPORT DATABASE`, after those two words.
pub fn parse_export(p: &mut Parser<'_>) -> Result<Export, SqlError> {
    let dir = directory(p)?;
    let mut compression = IpcCompression::Lz4Frame;
    let _with = p.parse_keyword(Keyword::WITH);
    if p.consume_token(&Token::LParen) {
        loop {
            let name = p.parse_identifier()?.value.to_ascii_lowercase();
            let token = p.next_token();
            let value = match &token.token {
                Token::Word(w) => w.value.to_ascii_lowercase(),
                Token::SingleQuotedString(s) => s.to_ascii_lowercase(),
                _ => return Err(SqlError::Syntax(expected("an option value", &token))),
            };
            match (name.as_str(), value.as_str()) {
                ("format", "arrow") => {}
                ("format", other) => {
                    return Err(SqlError::NotSupported(format!(
                        "EXPORT DATABASE writes FORMAT arrow only, got {other}"
                    )));
                }
                ("compression", "lz4") => compression = IpcCompression::Lz4Frame,
                ("compression", "zstd") => compression = IpcCompression::Zstd,
                ("compression", "none") => compression = IpcCompression::None,
                ("compression", other) => {
                    return Err(SqlError::InvalidOption(format!(
                        "EXPORT DATABASE COMPRESSION must be lz4, zstd or none, got {other}"
                    )));
                }
                (other, _) => {
                    return Err(SqlError::InvalidOption(format!(
                        "unknown EXPORT DATABASE option {} (FORMAT, COMPRESSION)",
                        other.to_uppercase()
                    )));
                }
            }
            if p.consume_token(&Token::RParen) {
                break;
            }
            p.expect_token(&Token::Comma)?;
        }
    }
    Ok(Export { dir, compression })
}

/// The rest of `IMPORT DATABASE`, after those two words.
pub fn parse_import(p: &mut Parser<'_>) -> Result<Import, SqlError> {
    Ok(Import { dir: directory(p)? })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{Statement, parse_script};

    fn parse(sql: &str) -> Result<Statement, SqlError> {
        parse_script(sql).map(|mut v| v.remove(0).statement)
    }

    #[test]
    fn parses_export_and_import() {
        let export = |sql: &str| match parse(sql).unwrap() {
            Statement::Export(e) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            export("EXPORT DATABASE '/x/y'"),
            Export {
                dir: "/x/y".into(),
                compression: IpcCompression::Lz4Frame
            }
        );
        assert_eq!(
            export("export database 'd' with (format arrow, compression zstd)"),
            Export {
                dir: "d".into(),
                compression: IpcCompression::Zstd
            }
        );
        assert!(matches!(
            parse("IMPORT DATABASE 'd'").unwrap(),
            Statement::Import(Import { dir }) if dir == "d"
        ));
        let err = |sql: &str| parse(sql).unwrap_err().to_string();
        assert!(err("EXPORT DATABASE d").contains("quoted directory"));
        assert!(err("EXPORT DATABASE 'd' (COMPRESSION gzip)").contains("lz4, zstd or none"));
        assert!(err("EXPORT DATABASE 'd' (FORMAT parquet)").contains("arrow only"));
        assert!(err("IMPORT DATABASE 'd' extra").contains("end of the statement"));
        // EXPORT without DATABASE is not ours
        assert!(parse("EXPORT foo").is_err());
    }
}
