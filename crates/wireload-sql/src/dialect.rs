//! wireload's SQL dialect: PostgreSQL's, plus the column option `COMPRESSION name`
//! (`dictionary`, `plain`, `auto`), which the parser hands over as a dialect-specific option.

use std::any::TypeId;

use datafusion::sql::sqlparser::ast::ColumnOption;
use datafusion::sql::sqlparser::dialect::{Dialect, PostgreSqlDialect, Precedence};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

/// PostgreSQL's dialect with `COMPRESSION name` as a column option.
#[derive(Debug, Default)]
pub(crate) struct WireloadDialect(PostgreSqlDialect);

/// Methods answered as PostgreSQL's dialect answers them.
macro_rules! as_postgres {
    ($($name:ident),* $(,)?) => {
        $(fn $name(&self) -> bool { self.0.$name() })*
    };
}

impl Dialect for WireloadDialect {
    // the parser's `dialect_of!(... PostgreSqlDialect)` checks treat this dialect as PostgreSQL
    fn dialect(&self) -> TypeId {
        TypeId::of::<PostgreSqlDialect>()
    }

    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        self.0.identifier_quote_style(identifier)
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        self.0.is_delimited_identifier_start(ch)
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        self.0.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        self.0.is_identifier_part(ch)
    }

    fn is_reserved_for_identifier(&self, kw: Keyword) -> bool {
        self.0.is_reserved_for_identifier(kw)
    }

    fn is_custom_operator_part(&self, ch: char) -> bool {
        self.0.is_custom_operator_part(ch)
    }

    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        self.0.get_next_precedence(parser)
    }

    fn prec_value(&self, prec: Precedence) -> u8 {
        self.0.prec_value(prec)
    }

    as_postgres!(
        supports_unicode_string_literal,
        supports_filter_during_aggregation,
        supports_group_by_expr,
        allow_extract_custom,
        allow_extract_single_quotes,
        supports_create_index_with_clause,
        supports_explain_with_utility_options,
        supports_listen_notify,
        supports_factorial_operator,
        supports_bitwise_shift_operators,
        supports_comment_on,
        supports_load_extension,
        supports_named_fn_args_with_colon_operator,
        supports_named_fn_args_with_expr_name,
        supports_empty_projections,
        supports_nested_comments,
        supports_string_escape_constant,
        supports_numeric_literal_underscores,
        supports_array_typedef_with_brackets,
        supports_geometric_types,
        supports_set_names,
        supports_alter_column_type_using,
        supports_notnull_operator,
        supports_interval_options,
        supports_insert_table_alias,
        supports_create_table_like_parenthesized,
        supports_select_wildcard_with_alias,
        supports_comma_separated_trim,
        supports_xml_expressions,
        supports_comment_optimizer_hint,
    );

    fn parse_column_option(
        &self,
        parser: &mut Parser,
    ) -> Result<Option<Result<Option<ColumnOption>, ParserError>>, ParserError> {
        if !parser.parse_keyword(Keyword::COMPRESSION) {
            return Ok(None);
        }
        let name = match parser.parse_identifier() {
            Ok(name) => name,
            Err(e) => return Ok(Some(Err(e))),
        };
        Ok(Some(Ok(Some(ColumnOption::DialectSpecific(vec![
            Token::make_keyword("COMPRESSION"),
            Token::make_word(&name.value, None),
        ])))))
    }
}

/// The `COMPRESSION` a dialect-specific column option names, if it is one.
pub(crate) fn compression_option(tokens: &[Token]) -> Option<&str> {
    match tokens {
        [Token::Word(k), Token::Word(name)] if k.keyword == Keyword::COMPRESSION => {
            Some(&name.value)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    /// Statements PostgreSQL's dialect parses: this dialect must parse them the same.
    const SAME: &[&str] = &[
        "SELECT a || b, x::int, 5!, 1 << 2, $1, e'\\n', U&'d\\0061t', 1_000 FROM t WHERE a ~ 'x'",
        "SELECT count(*) FILTER (WHERE a > 1) FROM t GROUP BY ROLLUP (a)",
        "SELECT EXTRACT('year' FROM d), trim(both 'x' from s) FROM t",
        "CREATE TABLE \"T\" (a INT NOT NULL, b VARCHAR(3) UNIQUE) WITH (fillfactor = 70)",
        "CREATE INDEX i ON t USING hash (a) WITH (fillfactor = 70)",
        "SELECT * FROM t /* a /* nested */ comment */ WHERE a @> b",
        "SELECT a FROM t WHERE b NOTNULL",
    ];

    #[test]
    fn parses_postgres_statements_as_postgres_does() {
        for sql in SAME {
            let ours = Parser::parse_sql(&WireloadDialect::default(), sql).unwrap();
            let theirs = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap();
            assert_eq!(ours, theirs, "{sql}");
        }
    }

    #[test]
    fn compression_is_a_column_option() {
        let sql = "CREATE TABLE t (a TEXT COMPRESSION dictionary NOT NULL, b INT)";
        let parsed = Parser::parse_sql(&WireloadDialect::default(), sql).unwrap();
        let datafusion::sql::sqlparser::ast::Statement::CreateTable(ct) = &parsed[0] else {
            panic!("{parsed:?}")
        };
        let found: Vec<_> = ct.columns[0]
            .options
            .iter()
            .filter_map(|o| match &o.option {
                ColumnOption::DialectSpecific(t) => compression_option(t),
                _ => None,
            })
            .collect();
        assert_eq!(found, vec!["dictionary"]);
        assert!(Parser::parse_sql(&PostgreSqlDialect {}, sql).is_err());
    }
}
