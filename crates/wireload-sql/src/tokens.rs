//! SQL text as tokens: splitting a script into statements and walking a statement's tokens.

use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use crate::SqlError;

/// One statement of a script: its text and its tokens without whitespace and comments.
#[derive(Debug, Clone)]
pub struct StatementText<'a> {
    /// The statement's text, without the terminating `;` and surrounding whitespace.
    pub text: &'a str,
    /// Byte offset of `text` in the script.
    pub offset: usize,
    /// The significant tokens, with spans relative to the whole script.
    pub tokens: Vec<TokenWithSpan>,
    /// Byte offset (in the script) where each token starts.
    pub starts: Vec<usize>,
}

impl StatementText<'_> {
    /// The statement text from its start up to (not including) token `index`, trimmed.
    pub fn text_before(&self, index: usize) -> &str {
        let end = self
            .starts
            .get(index)
            .map_or(self.text.len(), |s| s - self.offset);
        self.text[..end].trim_end()
    }

    /// The statement text from the start of token `from` up to (not including) token `to`, trimmed.
    pub fn text_between(&self, from: usize, to: usize) -> &str {
        let at = |i: usize| {
            self.starts
                .get(i)
                .map_or(self.text.len(), |s| s - self.offset)
        };
        let (a, b) = (at(from), at(to));
        if a >= b { "" } else { self.text[a..b].trim() }
    }
}

/// Byte offsets of the starts of lines, to map tokenizer locations (line, char column) to bytes.
struct LineIndex<'a> {
    text: &'a str,
    line_starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    fn new(text: &'a str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, line_starts }
    }

    /// Byte offset of a 1-based (line, column-in-characters) location.
    fn byte(&self, loc: Location) -> usize {
        let line = (loc.line.max(1) - 1) as usize;
        let Some(&start) = self.line_starts.get(line) else {
            return self.text.len();
        };
        let col = (loc.column.max(1) - 1) as usize;
        self.text[start..]
            .char_indices()
            .nth(col)
            .map_or(self.text.len(), |(i, _)| start + i)
    }
}

/// Splits a script into statements on `;` outside quotes, comments and dollar quotes.
/// Empty statements (only whitespace or comments) are dropped.
pub fn split_statements(sql: &str) -> Result<Vec<StatementText<'_>>, SqlError> {
    let dialect = PostgreSqlDialect {};
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(|e| SqlError::Parse(e.to_string()))?;
    let index = LineIndex::new(sql);
    let mut out = Vec::new();
    let mut current: Vec<TokenWithSpan> = Vec::new();
    let mut flush = |current: &mut Vec<TokenWithSpan>| {
        if current.is_empty() {
            return;
        }
        let tokens = std::mem::take(current);
        let starts: Vec<usize> = tokens.iter().map(|t| index.byte(t.span.start)).collect();
        let start = starts[0];
        let end = tokens
            .last()
            .map_or(start, |t| index.byte(t.span.end))
            .max(start);
        out.push(StatementText {
            text: &sql[start..end],
            offset: start,
            tokens,
            starts,
        });
    };
    for t in tokens {
        match t.token {
            Token::SemiColon => flush(&mut current),
            Token::Whitespace(_) | Token::EOF => {}
            _ => current.push(t),
        }
    }
    flush(&mut current);
    Ok(out)
}

/// True when `token` is the unquoted word `keyword` (case-insensitive).
pub fn is_keyword(token: &Token, keyword: &str) -> bool {
    matches!(token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(keyword))
}

/// The name an identifier token denotes: unquoted identifiers are lowercased, quoted ones kept.
pub fn identifier(token: &Token) -> Option<String> {
    match token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_lowercase()),
        Token::Word(w) if w.quote_style == Some('"') => Some(w.value.clone()),
        _ => None,
    }
}

/// A cursor over a statement's significant tokens, for the small hand-written parsers.
#[derive(Debug)]
pub struct Cursor<'t> {
    tokens: &'t [TokenWithSpan],
    pos: usize,
}

impl<'t> Cursor<'t> {
    /// A cursor at the first token.
    pub fn new(tokens: &'t [TokenWithSpan]) -> Self {
        Cursor { tokens, pos: 0 }
    }

    /// The next token without consuming it.
    pub fn peek(&self) -> Option<&'t Token> {
        self.tokens.get(self.pos).map(|t| &t.token)
    }

    /// Consumes and returns the next token.
    pub fn next_token(&mut self) -> Option<&'t Token> {
        let t = self.peek();
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    /// Index of the next token.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// True when all tokens are consumed.
    pub fn at_end(&self) -> bool {
        self.pos >= self.tokens.len()
    }

    /// Consumes the next token when it is the keyword.
    pub fn eat_keyword(&mut self, keyword: &str) -> bool {
        if self.peek().is_some_and(|t| is_keyword(t, keyword)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Consumes the next token when it equals `token`.
    pub fn eat(&mut self, token: &Token) -> bool {
        if self.peek() == Some(token) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Consumes the keyword or fails with a syntax error naming it.
    pub fn expect_keyword(&mut self, keyword: &str) -> Result<(), SqlError> {
        if self.eat_keyword(keyword) {
            Ok(())
        } else {
            Err(self.unexpected(keyword))
        }
    }

    /// Consumes `token` or fails with a syntax error naming it.
    pub fn expect(&mut self, token: &Token) -> Result<(), SqlError> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("{token}")))
        }
    }

    /// Consumes an identifier and returns its normalized name.
    pub fn expect_identifier(&mut self, what: &str) -> Result<String, SqlError> {
        match self.peek().and_then(identifier) {
            Some(name) => {
                self.pos += 1;
                Ok(name)
            }
            None => Err(self.unexpected(what)),
        }
    }

    /// A syntax error: `expected`, found the next token (or the end of the statement).
    pub fn unexpected(&self, expected: &str) -> SqlError {
        self.unexpected_at(self.pos, expected)
    }

    /// A syntax error: `expected`, found the token just consumed.
    pub fn unexpected_previous(&self, expected: &str) -> SqlError {
        self.unexpected_at(self.pos.saturating_sub(1), expected)
    }

    fn unexpected_at(&self, index: usize, expected: &str) -> SqlError {
        match self.tokens.get(index) {
            Some(t) => SqlError::Parse(format!(
                "expected {expected}, found {} at line {}, column {}",
                t.token, t.span.start.line, t.span.start.column
            )),
            None => SqlError::Parse(format!(
                "expected {expected}, found the end of the statement"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(sql: &str) -> Vec<String> {
        split_statements(sql)
            .unwrap()
            .into_iter()
            .map(|s| s.text.to_string())
            .collect()
    }

    #[test]
    fn splits_on_semicolons() {
        assert_eq!(texts("SELECT 1; SELECT 2"), ["SELECT 1", "SELECT 2"]);
        assert_eq!(
            texts("  SELECT 1 ;\n\n SELECT 2;  "),
            ["SELECT 1", "SELECT 2"]
        );
    }

    #[test]
    fn drops_empty_statements() {
        assert_eq!(texts(";;SELECT 1;; ;"), ["SELECT 1"]);
        assert!(texts("  -- only a comment\n ; /* and another */ ").is_empty());
        assert!(texts("").is_empty());
    }

    #[test]
    fn ignores_semicolons_in_strings_identifiers_comments_and_dollar_quotes() {
        assert_eq!(
            texts("SELECT 'a;b'; SELECT 2"),
            ["SELECT 'a;b'", "SELECT 2"]
        );
        assert_eq!(
            texts("SELECT 'it''s;'; SELECT 2"),
            ["SELECT 'it''s;'", "SELECT 2"]
        );
        assert_eq!(
            texts(r#"SELECT "we;ird" FROM t; SELECT 2"#),
            [r#"SELECT "we;ird" FROM t"#, "SELECT 2"]
        );
        assert_eq!(
            texts("SELECT 1 -- x; y\n; SELECT 2"),
            ["SELECT 1", "SELECT 2"]
        );
        assert_eq!(
            texts("SELECT /* ; */ 1; SELECT 2"),
            ["SELECT /* ; */ 1", "SELECT 2"]
        );
        assert_eq!(
            texts("SELECT $$a;b$$; SELECT $t$;$t$"),
            ["SELECT $$a;b$$", "SELECT $t$;$t$"]
        );
    }

    #[test]
    fn keeps_multibyte_text_intact() {
        assert_eq!(
            texts("SELECT 'π;ß'\n ;  SELECT 'é'"),
            ["SELECT 'π;ß'", "SELECT 'é'"]
        );
    }

    #[test]
    fn unterminated_string_is_a_parse_error() {
        assert!(matches!(
            split_statements("SELECT 'abc; SELECT 1"),
            Err(SqlError::Parse(_))
        ));
    }

    #[test]
    fn text_before_cuts_at_a_token() {
        let stmts = split_statements("x; CREATE TABLE t (a INT) PARTITION BY HASH (a)").unwrap();
        let s = &stmts[1];
        let i = s
            .tokens
            .iter()
            .position(|t| is_keyword(&t.token, "partition"))
            .unwrap();
        assert_eq!(s.text_before(i), "CREATE TABLE t (a INT)");
    }

    #[test]
    fn identifiers_are_normalized() {
        let stmts = split_statements(r#"Foo "Bar" ÄB"#).unwrap();
        let names: Vec<_> = stmts[0]
            .tokens
            .iter()
            .map(|t| identifier(&t.token).unwrap())
            .collect();
        assert_eq!(names, ["foo", "Bar", "äb"]);
    }
}
