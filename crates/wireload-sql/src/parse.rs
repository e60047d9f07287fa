//! The SQL front end: a script is tokenized and parsed once, with PostgreSQL's dialect, into
//! [`Statement`]s that the database routes on. wireload's own statements (COPY with its load
//! options, EXPORT/IMPORT DATABASE, CREATE TABLE with `PARTITION BY HASH ... PARTITIONS n`)
//! are parsed here with the same parser, as are the statements that write rows (INSERT,
//! UPDATE, DELETE, CREATE TABLE AS, TRUNCATE); everything else is DataFusion's statement, planned
//! from its AST.
//!
//! [`is_complete`] tells an interactive shell whether the text typed so far ends in a
//! complete statement (the same tokenizer decides quotes, dollar quotes, `E''` strings and
//! comments).

use std::ops::Range;

use datafusion::sql::parser::{DFParserBuilder, ResetStatement, Statement as DfStatement};
use datafusion::sql::sqlparser::ast::{self, ObjectType};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::{Location, Token, Tokenizer};

use crate::copy::{self, CopyFrom, CopyTo};
use crate::ddl::{self, CreateIndex, CreateTable, DropIndex, DropTable};
use crate::dml::{self, CreateTableAs, Truncate, Write};
use crate::error::SqlError;
use crate::export::{self, Export, Import};
use crate::grants;
use crate::limits;
use crate::roles::RoleStatement;
use crate::settings::{self, SettingStatement};
use crate::transaction::{self, TxStatement};

/// One statement of a script, routed.
#[derive(Debug, Clone)]
pub enum Statement {
    /// A statement DataFusion plans and runs: queries, EXPLAIN, SET, SHOW, views...
    Query(Box<DfStatement>),
    /// `CREATE TABLE`
    CreateTable(CreateTable),
    /// `CREATE TABLE ... AS query`
    CreateTableAs(CreateTableAs),
    /// `INSERT`, `UPDATE` or `DELETE`
    Write(Write),
    /// `TRUNCATE`
    Truncate(Truncate),
    /// `SET`, `SHOW` or `RESET` of a wireload setting (`statement_timeout`)
    Setting(SettingStatement),
    /// `BEGIN`, `COMMIT` or `ROLLBACK`
    Transaction(TxStatement),
    /// `DROP TABLE`
    DropTable(DropTable),
    /// `CREATE [UNIQUE] INDEX`
    CreateIndex(CreateIndex),
    /// `DROP INDEX`
    DropIndex(DropIndex),
    /// `COPY t FROM ...` (boxed: its load options are the largest of the statements)
    CopyFrom(Box<CopyFrom>),
    /// `COPY {t | (query)} TO ...`
    CopyTo(CopyTo),
    /// `EXPORT DATABASE`
    Export(Export),
    /// `IMPORT DATABASE`
    Import(Import),
    /// `CREATE`, `ALTER` or `DROP ROLE`, `GRANT`, `REVOKE`
    Role(RoleStatement),
}

/// A statement with where it is in its script.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// The statement.
    pub statement: Statement,
    /// Byte range of its text in the script (without the terminating `;`).
    pub span: Range<usize>,
    /// 1-based line of its first token.
    pub line: u64,
}

impl Parsed {
    /// The statement's text in `script` (the text this was parsed from).
    pub fn text<'s>(&self, script: &'s str) -> &'s str {
        script.get(self.span.clone()).unwrap_or_default()
    }
}

/// Parses every statement of `sql` (separated by `;`; empty statements are dropped).
pub fn parse_script(sql: &str) -> Result<Vec<Parsed>, SqlError> {
    let dialect = crate::dialect::WireloadDialect::default();
    let mut df = DFParserBuilder::new(sql).with_dialect(&dialect).build()?;
    let lines = LineIndex::new(sql);
    let mut out = Vec::new();
    loop {
        while df.parser.consume_token(&Token::SemiColon) {}
        let first = df.parser.peek_token();
        if first.token == Token::EOF {
            break;
        }
        let statement = parse_statement(&mut df)?;
        limits::check_depth(&statement)?;
        // the statement's last token (the parser may have looked past whitespace)
        let mut i = df.parser.get_current_index();
        while i > 0 && matches!(df.parser.token_at(i).token, Token::Whitespace(_)) {
            i -= 1;
        }
        let last = df.parser.token_at(i).clone();
        match df.parser.peek_token().token {
            Token::SemiColon | Token::EOF => {}
            _ => {
                return Err(SqlError::Syntax(expected(
                    "the end of the statement (or ';')",
                    &df.parser.peek_token(),
                )));
            }
        }
        let start = lines.byte(first.span.start);
        let end = lines.byte(last.span.end).max(start);
        out.push(Parsed {
            statement,
            span: start..end,
            line: first.span.start.line,
        });
    }
    Ok(out)
}

/// Parses one statement at the parser's position.
fn parse_statement(df: &mut datafusion::sql::parser::DFParser<'_>) -> Result<Statement, SqlError> {
    let p = &mut df.parser;
    if p.peek_keyword(Keyword::COPY) && !is_word(&p.peek_nth_token(1).token, "into") {
        p.next_token();
        return copy::parse(p);
    }
    if let Token::Word(w) = &p.peek_token().token
        && w.quote_style.is_none()
        && is_word(&p.peek_nth_token(1).token, "database")
    {
        if w.value.eq_ignore_ascii_case("export") {
            p.next_token();
            p.next_token();
            return export::parse_export(p).map(Statement::Export);
        }
        if w.value.eq_ignore_ascii_case("import") {
            p.next_token();
            p.next_token();
            return export::parse_import(p).map(Statement::Import);
        }
    }
    if let Some(role) = grants::parse(&mut df.parser)? {
        return Ok(Statement::Role(role));
    }
    let statement = df.parse_statement()?;
    let ast = match statement {
        DfStatement::Statement(ast) => ast,
        DfStatement::CopyTo(_) => {
            return Err(SqlError::NotSupported(
                "this form of COPY is not supported; use COPY ... TO 'file' WITH (...)".into(),
            ));
        }
        DfStatement::CreateExternalTable(_) => {
            return Err(SqlError::NotSupported(
                "CREATE EXTERNAL TABLE is not supported; use CREATE TABLE and COPY ... FROM".into(),
            ));
        }
        DfStatement::Reset(ResetStatement::Variable(name)) => {
            return Ok(match settings::of_reset(&name) {
                Some(s) => Statement::Setting(s),
                None => {
                    Statement::Query(Box::new(DfStatement::Reset(ResetStatement::Variable(name))))
                }
            });
        }
        other => return Ok(Statement::Query(Box::new(other))),
    };
    if let Some(s) = settings::of_ast(&ast)? {
        return Ok(Statement::Setting(s));
    }
    if let Some(t) = transaction::of_ast(&ast)? {
        return Ok(Statement::Transaction(t));
    }
    Ok(match *ast {
        ast::Statement::CreateTable(ct) if ct.query.is_some() => {
            Statement::CreateTableAs(dml::create_table_as(ct)?)
        }
        write @ (ast::Statement::Insert(_)
        | ast::Statement::Update(_)
        | ast::Statement::Delete(_)) => Statement::Write(dml::write(write)?),
        ast::Statement::Truncate(t) => Statement::Truncate(dml::truncate(t)?),
        ast::Statement::CreateTable(ct) => {
            let partitions = parse_partitions(&mut df.parser)?;
            Statement::CreateTable(ddl::create_table(ct, partitions)?)
        }
        ast::Statement::CreateIndex(ci) => Statement::CreateIndex(ddl::create_index(ci)?),
        ast::Statement::Drop {
            object_type: ObjectType::Table,
            if_exists,
            names,
            ..
        } => Statement::DropTable(ddl::drop_table(&names, if_exists)?),
        ast::Statement::Drop {
            object_type: ObjectType::Role | ObjectType::User,
            if_exists,
            names,
            ..
        } => Statement::Role(grants::drop_role(&names, if_exists)?),
        ast::Statement::Drop {
            object_type: ObjectType::Index,
            if_exists,
            names,
            ..
        } => Statement::DropIndex(ddl::drop_index(&names, if_exists)?),
        other => Statement::Query(Box::new(DfStatement::Statement(Box::new(other)))),
    })
}

/// `PARTITIONS n` after a CREATE TABLE's `PARTITION BY HASH (col)` (wireload's own clause).
fn parse_partitions(p: &mut Parser<'_>) -> Result<Option<u64>, SqlError> {
    if !p.parse_keyword(Keyword::PARTITIONS) {
        return Ok(None);
    }
    let token = p.next_token();
    match &token.token {
        Token::Number(n, _) => n.parse().map(Some).map_err(|_| {
            SqlError::InvalidOption(format!("PARTITIONS must be a positive integer, got {n}"))
        }),
        _ => Err(SqlError::Syntax(expected(
            "the number of partitions",
            &token,
        ))),
    }
}

/// A syntax error: `what` was expected, `found` was there.
pub(crate) fn expected(
    what: &str,
    found: &datafusion::sql::sqlparser::tokenizer::TokenWithSpan,
) -> ParserError {
    let found_text = match &found.token {
        Token::EOF => "the end of the statement".to_string(),
        t => t.to_string(),
    };
    ParserError::ParserError(format!(
        "Expected: {what}, found: {found_text} at Line: {}, Column: {}",
        found.span.start.line, found.span.start.column
    ))
}

/// True when `token` is the unquoted word `word` (case-insensitive).
pub(crate) fn is_word(token: &Token, word: &str) -> bool {
    matches!(token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

/// True when `sql` ends in a complete statement (a `;` outside quotes and comments), or holds
/// nothing but whitespace and comments: what an interactive shell runs. Text with an open
/// quote, dollar quote or block comment is incomplete; other invalid text counts as complete
/// so that running it reports the error.
pub fn is_complete(sql: &str) -> bool {
    let dialect = PostgreSqlDialect {};
    match Tokenizer::new(&dialect, sql).tokenize() {
        Ok(tokens) => tokens
            .iter()
            .rev()
            .find(|t| !matches!(t, Token::Whitespace(_) | Token::EOF))
            .is_none_or(|t| *t == Token::SemiColon),
        Err(e) => {
            !(e.message.contains("Unterminated")
                || e.message.contains("before EOF")
                || e.message.contains("EOF while"))
        }
    }
}

/// Byte offsets of the starts of lines, to map tokenizer locations (line, column in
/// characters) to bytes.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(sql: &str) -> Vec<String> {
        parse_script(sql)
            .unwrap()
            .iter()
            .map(|p| p.text(sql).to_string())
            .collect()
    }

    #[test]
    fn splits_on_semicolons() {
        assert_eq!(texts("SELECT 1; SELECT 2"), ["SELECT 1", "SELECT 2"]);
        assert_eq!(
            texts("  SELECT 1 ;\n\n SELECT 2;  "),
            ["SELECT 1", "SELECT 2"]
        );
        assert_eq!(texts(";;SELECT 1;; ;"), ["SELECT 1"]);
        assert!(texts("  -- only a comment\n ; /* and another */ ").is_empty());
        assert!(texts("").is_empty());
    }

    #[test]
    fn semicolons_inside_strings_identifiers_comments_and_dollar_quotes() {
        assert_eq!(
            texts("SELECT 'a;b'; SELECT 'it''s;'; SELECT \"we;ird\" FROM t"),
            [
                "SELECT 'a;b'",
                "SELECT 'it''s;'",
                "SELECT \"we;ird\" FROM t"
            ]
        );
        assert_eq!(
            texts("SELECT 1 -- x; y\n; SELECT /* ; */ 2"),
            ["SELECT 1", "SELECT /* ; */ 2"]
        );
        assert_eq!(
            texts("SELECT $$a;b$$; SELECT $t$;$t$; SELECT E'a\\';b'"),
            ["SELECT $$a;b$$", "SELECT $t$;$t$", "SELECT E'a\\';b'"]
        );
        assert_eq!(
            texts("SELECT 'π;ß'\n ;  SELECT 'é'"),
            ["SELECT 'π;ß'", "SELECT 'é'"]
        );
    }

    #[test]
    fn lines_of_statements() {
        let sql = "-- c\n\nSELECT 1;\n  SELECT\n 2;";
        let lines: Vec<u64> = parse_script(sql).unwrap().iter().map(|p| p.line).collect();
        assert_eq!(lines, [3, 4]);
    }

    #[test]
    fn routes_statements() {
        let kinds: Vec<&str> = parse_script(
            "SELECT 1; CREATE TABLE t (a INT); DROP TABLE t; CREATE INDEX i ON t (a); \
             DROP INDEX i; COPY t FROM 'f'; COPY t TO 'g'; COPY (SELECT 1) TO 'h'; \
             EXPORT DATABASE 'd'; IMPORT DATABASE 'd'; CREATE VIEW v AS SELECT 1; \
             EXPLAIN SELECT 1; SET datafusion.execution.batch_size = 3; \
             INSERT INTO t VALUES (1) RETURNING a; CREATE TABLE u AS SELECT 1; TRUNCATE t, u; \
             SET statement_timeout = '1s'; SHOW statement_timeout; RESET statement_timeout; \
             RESET datafusion.execution.batch_size; BEGIN; COMMIT; START TRANSACTION; ROLLBACK",
        )
        .unwrap()
        .iter()
        .map(|p| match &p.statement {
            Statement::Query(_) => "query",
            Statement::CreateTable(_) => "create table",
            Statement::DropTable(_) => "drop table",
            Statement::CreateIndex(_) => "create index",
            Statement::DropIndex(_) => "drop index",
            Statement::CopyFrom(_) => "copy from",
            Statement::CopyTo(_) => "copy to",
            Statement::Export(_) => "export",
            Statement::Import(_) => "import",
            Statement::Write(_) => "write",
            Statement::CreateTableAs(_) => "create table as",
            Statement::Truncate(_) => "truncate",
            Statement::Setting(_) => "setting",
            Statement::Transaction(_) => "transaction",
            Statement::Role(_) => "role",
        })
        .collect();
        assert_eq!(
            kinds,
            [
                "query",
                "create table",
                "drop table",
                "create index",
                "drop index",
                "copy from",
                "copy to",
                "copy to",
                "export",
                "import",
                "query",
                "query",
                "query",
                "write",
                "create table as",
                "truncate",
                "setting",
                "setting",
                "setting",
                "query",
                "transaction",
                "transaction",
                "transaction",
                "transaction"
            ]
        );
    }

    #[test]
    fn syntax_errors_are_typed_and_placed() {
        for sql in [
            "SELECT 'abc; SELECT 1",
            "SELEC 1",
            "SELECT 1 SELECT 2",
            "CREATE TABLE t (a INT",
            "COPY t FROM f",
        ] {
            match parse_script(sql) {
                Err(SqlError::Syntax(e)) => assert!(
                    e.to_string().contains("Line: 1") || e.to_string().contains("EOF"),
                    "{sql}: {e}"
                ),
                other => panic!("{sql}: {other:?}"),
            }
        }
        let e = parse_script("SELECT 1;\nSELECT (2;").unwrap_err();
        assert!(e.to_string().contains("Line: 2"), "{e}");
    }

    #[test]
    fn completeness() {
        assert!(is_complete(""));
        assert!(is_complete("  -- a comment\n"));
        assert!(is_complete("select 1;"));
        assert!(is_complete("select 1; -- done"));
        assert!(!is_complete("select 1"));
        assert!(!is_complete("select 1; select"));
        assert!(!is_complete("select ';"));
        assert!(!is_complete("select 1; /* open"));
        assert!(is_complete("select 'a;';\n"));
        assert!(!is_complete("select $$a;"));
        assert!(is_complete("select $$a;$$;"));
        assert!(!is_complete("select $tag$ ; $tag"));
        assert!(!is_complete("select E'a\\';"));
        assert!(is_complete("select E'a\\';';"));
        assert!(!is_complete("select \"a;"));
    }
}
