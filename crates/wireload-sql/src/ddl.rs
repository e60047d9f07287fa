//! wireload's DDL: `CREATE TABLE ... [PARTITION BY HASH (col) PARTITIONS n]` and `DROP TABLE`.

use std::str::FromStr;

use datafusion::sql::sqlparser::ast::{
    ColumnOption, CreateTableOptions, Expr, HiveDistributionStyle, Ident, IndexColumn, IndexOption,
    IndexType, ObjectName, ObjectNamePart, ObjectType, Statement, TableConstraint,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;
use wireload_storage::{IndexDef, IndexKind, Partitioning, TableDef};
use wireload_types::{ColumnDef, SqlType, TableSchema};

use crate::SqlError;
use crate::tokens::{Cursor, StatementText, is_keyword};

/// A parsed `CREATE TABLE`.
#[derive(Debug, Clone)]
pub struct CreateTable {
    /// The table definition to create.
    pub def: TableDef,
    /// `IF NOT EXISTS` was given.
    pub if_not_exists: bool,
}

/// A parsed `DROP TABLE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropTable {
    /// Tables to drop (normalized names).
    pub names: Vec<String>,
    /// `IF EXISTS` was given.
    pub if_exists: bool,
}

/// True when the statement starts with `CREATE [...] TABLE`: ours, never DataFusion's.
pub fn is_create_table(tokens: &[datafusion::sql::sqlparser::tokenizer::TokenWithSpan]) -> bool {
    if !tokens
        .first()
        .is_some_and(|t| is_keyword(&t.token, "create"))
    {
        return false;
    }
    // `CREATE [OR REPLACE] [GLOBAL|LOCAL] [TEMP|TEMPORARY|UNLOGGED|EXTERNAL|UNBOUNDED ...] TABLE`
    for t in tokens.iter().skip(1).take(5) {
        match &t.token {
            Token::Word(w) if w.quote_style.is_none() => {
                if w.value.eq_ignore_ascii_case("table") {
                    return true;
                }
                const OBJECTS: [&str; 12] = [
                    "view",
                    "schema",
                    "database",
                    "catalog",
                    "function",
                    "index",
                    "materialized",
                    "type",
                    "sequence",
                    "role",
                    "user",
                    "extension",
                ];
                if OBJECTS.iter().any(|o| w.value.eq_ignore_ascii_case(o)) {
                    return false;
                }
            }
            _ => return false,
        }
    }
    false
}

/// A parsed `CREATE [UNIQUE] INDEX`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateIndex {
    /// Index name (None: derived from table and columns).
    pub name: Option<String>,
    /// The table.
    pub table: String,
    /// Key column names in key order.
    pub columns: Vec<String>,
    /// `UNIQUE` was given.
    pub unique: bool,
    /// ART or HASH.
    pub kind: IndexKind,
    /// `IF NOT EXISTS` was given.
    pub if_not_exists: bool,
}

impl CreateIndex {
    /// The index definition over table `def`: columns resolved to positions, the default
    /// name `<table>_<cols>_idx` when none was given, checked against the table's types.
    pub fn resolve(&self, def: &TableDef) -> Result<IndexDef, SqlError> {
        let columns = self
            .columns
            .iter()
            .map(|c| {
                def.schema
                    .columns
                    .iter()
                    .position(|col| &col.name == c)
                    .ok_or_else(|| {
                        SqlError::Parse(format!(
                            "column \"{c}\" does not exist in table \"{}\"",
                            def.name
                        ))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let ix = IndexDef {
            name: self
                .name
                .clone()
                .unwrap_or_else(|| format!("{}_{}_idx", def.name, self.columns.join("_"))),
            columns,
            unique: self.unique,
            primary: false,
            kind: self.kind,
        };
        ix.check(&def.schema)?;
        Ok(ix)
    }
}

/// A parsed `DROP INDEX`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropIndex {
    /// Index names.
    pub names: Vec<String>,
    /// `IF EXISTS` was given.
    pub if_exists: bool,
}

/// True when the statement starts with `CREATE [UNIQUE] INDEX`.
pub fn is_create_index(tokens: &[datafusion::sql::sqlparser::tokenizer::TokenWithSpan]) -> bool {
    let mut it = tokens.iter().map(|t| &t.token);
    it.next().is_some_and(|t| is_keyword(t, "create"))
        && match it.next() {
            Some(t) if is_keyword(t, "unique") => it.next().is_some_and(|t| is_keyword(t, "index")),
            Some(t) => is_keyword(t, "index"),
            None => false,
        }
}

/// True when the statement is `DROP INDEX ...`.
pub fn is_drop_index(tokens: &[datafusion::sql::sqlparser::tokenizer::TokenWithSpan]) -> bool {
    tokens.len() >= 2
        && is_keyword(&tokens[0].token, "drop")
        && is_keyword(&tokens[1].token, "index")
}

/// Parses `CREATE [UNIQUE] INDEX [IF NOT EXISTS] [name] ON table [USING ART|HASH] (cols)
/// [USING ART|HASH]`.
pub fn parse_create_index(stmt: &StatementText<'_>) -> Result<CreateIndex, SqlError> {
    let ci = match parse_one(stmt.text)? {
        Statement::CreateIndex(ci) => ci,
        other => {
            return Err(SqlError::Parse(format!(
                "expected CREATE INDEX, found {other}"
            )));
        }
    };
    if ci.predicate.is_some() || !ci.include.is_empty() || !ci.with.is_empty() {
        return Err(not_yet("partial indexes, INCLUDE and WITH (...) are"));
    }
    let name = match &ci.name {
        Some(n) => Some(table_name(n)?),
        None => None,
    };
    Ok(CreateIndex {
        name,
        table: table_name(&ci.table_name)?,
        columns: index_columns(&ci.columns)?,
        unique: ci.unique,
        kind: index_kind(ci.using.as_ref(), &ci.index_options)?,
        if_not_exists: ci.if_not_exists,
    })
}

/// Parses `DROP INDEX [IF EXISTS] name [, ...]`.
pub fn parse_drop_index(stmt: &StatementText<'_>) -> Result<DropIndex, SqlError> {
    match parse_one(stmt.text)? {
        Statement::Drop {
            object_type: ObjectType::Index,
            if_exists,
            names,
            ..
        } => Ok(DropIndex {
            names: names.iter().map(table_name).collect::<Result<_, _>>()?,
            if_exists,
        }),
        other => Err(SqlError::Parse(format!(
            "expected DROP INDEX, found {other}"
        ))),
    }
}

/// The `CREATE INDEX` statement that recreates index `ix` of table `def`.
pub fn create_index_sql(def: &TableDef, ix: &IndexDef) -> String {
    let quote = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
    let cols: Vec<String> = ix
        .columns
        .iter()
        .map(|&c| quote(&def.schema.columns[c].name))
        .collect();
    format!(
        "CREATE {}INDEX {} ON {} ({}) USING {}",
        if ix.unique { "UNIQUE " } else { "" },
        quote(&ix.name),
        quote(&def.name),
        cols.join(", "),
        ix.kind
    )
}

/// True when the statement is `DROP TABLE ...`.
pub fn is_drop_table(tokens: &[datafusion::sql::sqlparser::tokenizer::TokenWithSpan]) -> bool {
    tokens.len() >= 2
        && is_keyword(&tokens[0].token, "drop")
        && is_keyword(&tokens[1].token, "table")
}

/// The name an identifier denotes: unquoted lowercased, quoted kept.
fn ident_name(ident: &Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// A table name: `name` or `public.name`.
fn table_name(name: &ObjectName) -> Result<String, SqlError> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => Ok(ident_name(i)),
            ObjectNamePart::Function(_) => {
                Err(SqlError::Parse(format!("invalid table name {name}")))
            }
        })
        .collect::<Result<_, _>>()?;
    match parts.as_slice() {
        [t] => Ok(t.clone()),
        [s, t] if s == crate::DEFAULT_SCHEMA => Ok(t.clone()),
        [s, _] => Err(SqlError::Unsupported(format!(
            "schema \"{s}\" does not exist; tables live in schema \"{}\"",
            crate::DEFAULT_SCHEMA
        ))),
        _ => Err(SqlError::Unsupported(format!(
            "qualified table name {name} is not supported"
        ))),
    }
}

fn external_table() -> SqlError {
    SqlError::Unsupported(
        "CREATE EXTERNAL TABLE is not supported; use CREATE TABLE and COPY ... FROM".into(),
    )
}

/// The `CREATE TABLE` statement that creates `def` (identifiers double-quoted, so any name
/// survives the round trip through [`parse_create_table`]).
pub fn create_table_sql(def: &TableDef) -> String {
    let quote = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
    let columns: Vec<String> = def
        .schema
        .columns
        .iter()
        .map(|c| {
            let not_null = if c.nullable { "" } else { " NOT NULL" };
            format!("    {} {}{not_null}", quote(&c.name), c.ty)
        })
        .collect();
    let mut columns = columns;
    for ix in &def.indexes {
        let cols: Vec<String> = ix
            .columns
            .iter()
            .map(|&c| quote(&def.schema.columns[c].name))
            .collect();
        let what = if ix.primary { "PRIMARY KEY" } else { "UNIQUE" };
        columns.push(format!(
            "    CONSTRAINT {} {what} ({}) USING {}",
            quote(&ix.name),
            cols.join(", "),
            ix.kind
        ));
    }
    let mut sql = format!(
        "CREATE TABLE {} (\n{}\n)",
        quote(&def.name),
        columns.join(",\n")
    );
    if let Partitioning::Hash { column, count } = def.partitioning {
        sql.push_str(&format!(
            " PARTITION BY HASH ({}) PARTITIONS {count}",
            quote(&def.schema.columns[column].name)
        ));
    }
    sql
}

fn not_yet(what: &str) -> SqlError {
    SqlError::Unsupported(format!("{what} not supported yet"))
}

/// Parses `CREATE TABLE [IF NOT EXISTS] name (col type [NOT NULL | NULL], ...)
/// [PARTITION BY HASH (col) PARTITIONS n]`.
pub fn parse_create_table(stmt: &StatementText<'_>) -> Result<CreateTable, SqlError> {
    let before_table = stmt
        .tokens
        .iter()
        .take_while(|t| !is_keyword(&t.token, "table"));
    if before_table
        .into_iter()
        .any(|t| is_keyword(&t.token, "external"))
    {
        return Err(external_table());
    }
    // cut the PARTITION BY clause (not PostgreSQL syntax) off at the first top-level PARTITION
    let mut depth = 0usize;
    let mut cut = None;
    for (i, t) in stmt.tokens.iter().enumerate() {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            tok if depth == 0 && is_keyword(tok, "partition") => {
                cut = Some(i);
                break;
            }
            _ => {}
        }
    }
    let partition = match cut {
        Some(i) => Some(parse_partition_clause(&stmt.tokens[i..])?),
        None => None,
    };
    let text = match cut {
        Some(i) => stmt.text_before(i),
        None => stmt.text,
    };
    let ct = match parse_one(text)? {
        Statement::CreateTable(ct) => ct,
        other => {
            return Err(SqlError::Parse(format!(
                "expected CREATE TABLE, found {other}"
            )));
        }
    };
    if ct.external {
        return Err(external_table());
    }
    if ct.query.is_some() {
        return Err(not_yet("CREATE TABLE ... AS SELECT is"));
    }
    if ct.like.is_some() || ct.clone.is_some() {
        return Err(not_yet("CREATE TABLE ... LIKE/CLONE is"));
    }
    if ct.or_replace {
        return Err(not_yet("CREATE OR REPLACE TABLE is"));
    }
    if ct.temporary {
        return Err(SqlError::Unsupported(
            "TEMPORARY tables are not supported (every table is in memory; use CREATE TABLE)"
                .into(),
        ));
    }
    if ct.inherits.is_some()
        || ct.partition_of.is_some()
        || ct.partition_by.is_some()
        || ct.table_options != CreateTableOptions::None
        || ct.hive_distribution != HiveDistributionStyle::NONE
    {
        return Err(SqlError::Unsupported(
            "unsupported CREATE TABLE clause; wireload accepts CREATE TABLE [IF NOT EXISTS] name (column type \
             [NOT NULL], ...) [PARTITION BY HASH (column) PARTITIONS n]"
                .into(),
        ));
    }
    let name = table_name(&ct.name)?;
    if ct.columns.is_empty() {
        return Err(SqlError::Parse(format!(
            "table \"{name}\" needs at least one column"
        )));
    }
    let mut columns = Vec::with_capacity(ct.columns.len());
    // (constraint name, primary, column names, structure), in declaration order
    let mut keys: Vec<KeySpec> = Vec::new();
    for col in &ct.columns {
        let col_name = ident_name(&col.name);
        let mut nullable = true;
        for opt in &col.options {
            let name = opt.name.as_ref().map(ident_name);
            match &opt.option {
                ColumnOption::Null => nullable = true,
                ColumnOption::NotNull => nullable = false,
                ColumnOption::PrimaryKey(pk) => keys.push(KeySpec {
                    name: name.or(pk.name.as_ref().map(ident_name)),
                    primary: true,
                    columns: vec![col_name.clone()],
                    kind: index_kind(pk.index_type.as_ref(), &pk.index_options)?,
                }),
                ColumnOption::Unique(u) => keys.push(KeySpec {
                    name: name.or(u.name.as_ref().map(ident_name)),
                    primary: false,
                    columns: vec![col_name.clone()],
                    kind: index_kind(u.index_type.as_ref(), &u.index_options)?,
                }),
                other => return Err(not_yet(&format!("column \"{col_name}\": {other} is"))),
            }
        }
        let ty = SqlType::from_str(&col.data_type.to_string()).map_err(|e| {
            SqlError::Unsupported(format!(
                "column \"{col_name}\": unsupported type {}: {e}",
                col.data_type
            ))
        })?;
        columns.push(ColumnDef {
            name: col_name,
            ty,
            nullable,
        });
    }
    for c in &ct.constraints {
        keys.push(match c {
            TableConstraint::PrimaryKey(pk) => KeySpec {
                name: pk.name.as_ref().map(ident_name),
                primary: true,
                columns: index_columns(&pk.columns)?,
                kind: index_kind(pk.index_type.as_ref(), &pk.index_options)?,
            },
            TableConstraint::Unique(u) => KeySpec {
                name: u.name.as_ref().map(ident_name),
                primary: false,
                columns: index_columns(&u.columns)?,
                kind: index_kind(u.index_type.as_ref(), &u.index_options)?,
            },
            other => return Err(not_yet(&format!("table constraint {other} is"))),
        });
    }
    let mut indexes = Vec::with_capacity(keys.len());
    for k in keys {
        let mut positions = Vec::with_capacity(k.columns.len());
        for name in &k.columns {
            let pos = columns
                .iter()
                .position(|c: &ColumnDef| &c.name == name)
                .ok_or_else(|| {
                    SqlError::Parse(format!("column \"{name}\" named in key does not exist"))
                })?;
            if k.primary {
                // PRIMARY KEY implies NOT NULL (as in PostgreSQL)
                columns[pos].nullable = false;
            }
            positions.push(pos);
        }
        let name = k.name.unwrap_or_else(|| {
            if k.primary {
                format!("{name}_pkey")
            } else {
                format!("{name}_{}_key", k.columns.join("_"))
            }
        });
        indexes.push(IndexDef {
            name,
            columns: positions,
            unique: true,
            primary: k.primary,
            kind: k.kind,
        });
    }
    let partitioning = match partition {
        None => Partitioning::Single,
        Some((col, count)) => {
            let column = columns.iter().position(|c| c.name == col).ok_or_else(|| {
                SqlError::Parse(format!(
                    "partition column \"{col}\" is not a column of table \"{name}\""
                ))
            })?;
            Partitioning::Hash { column, count }
        }
    };
    let def = TableDef::new(name, TableSchema { columns }, partitioning)?.with_indexes(indexes)?;
    Ok(CreateTable {
        def,
        if_not_exists: ct.if_not_exists,
    })
}

/// A PRIMARY KEY or UNIQUE constraint as written.
struct KeySpec {
    name: Option<String>,
    primary: bool,
    columns: Vec<String>,
    kind: IndexKind,
}

/// The structure named by `USING` (before or after the column list): ART (the default; BTREE
/// is taken as ART, also ordered) or HASH.
pub(crate) fn index_kind(
    before: Option<&IndexType>,
    options: &[IndexOption],
) -> Result<IndexKind, SqlError> {
    let mut using = before.cloned();
    for o in options {
        match o {
            IndexOption::Using(t) => using = Some(t.clone()),
            IndexOption::Comment(_) => {}
        }
    }
    match using {
        None | Some(IndexType::BTree) => Ok(IndexKind::Art),
        Some(IndexType::Hash) => Ok(IndexKind::Hash),
        Some(IndexType::Custom(id)) if id.value.eq_ignore_ascii_case("art") => Ok(IndexKind::Art),
        Some(other) => Err(SqlError::Unsupported(format!(
            "index type {other} is not supported; use USING ART or USING HASH"
        ))),
    }
}

/// The column names of a key's column list (plain column names only).
pub(crate) fn index_columns(cols: &[IndexColumn]) -> Result<Vec<String>, SqlError> {
    cols.iter()
        .map(|c| {
            if c.operator_class.is_some()
                || c.column.options.asc.is_some()
                || c.column.options.nulls_first.is_some()
            {
                return Err(SqlError::Unsupported(format!(
                    "key column {} : operator classes and ordering options are not supported",
                    c.column
                )));
            }
            match &c.column.expr {
                Expr::Identifier(id) => Ok(ident_name(id)),
                other => Err(SqlError::Unsupported(format!(
                    "only plain columns can be keys, not {other}"
                ))),
            }
        })
        .collect()
}

/// `PARTITION BY HASH (col) PARTITIONS n`, to the end of the statement.
fn parse_partition_clause(
    tokens: &[datafusion::sql::sqlparser::tokenizer::TokenWithSpan],
) -> Result<(String, usize), SqlError> {
    let mut c = Cursor::new(tokens);
    c.expect_keyword("partition")?;
    c.expect_keyword("by")?;
    if !c.eat_keyword("hash") {
        return Err(
            c.unexpected("HASH (only PARTITION BY HASH (column) PARTITIONS n is supported)")
        );
    }
    c.expect(&Token::LParen)?;
    let column = c.expect_identifier("the partitioning column")?;
    if c.peek() == Some(&Token::Comma) {
        return Err(SqlError::Unsupported(
            "partitioning by more than one column is not supported".into(),
        ));
    }
    c.expect(&Token::RParen)?;
    c.expect_keyword("partitions")?;
    let count = match c.next_token() {
        Some(Token::Number(n, _)) => n.parse::<usize>().map_err(|_| {
            SqlError::Parse(format!("PARTITIONS must be a positive integer, got {n}"))
        })?,
        _ => return Err(c.unexpected_previous("the number of partitions")),
    };
    if !c.at_end() {
        return Err(c.unexpected("the end of the CREATE TABLE statement"));
    }
    Ok((column, count))
}

/// Parses `DROP TABLE [IF EXISTS] name [, ...] [CASCADE | RESTRICT]`.
pub fn parse_drop_table(stmt: &StatementText<'_>) -> Result<DropTable, SqlError> {
    match parse_one(stmt.text)? {
        Statement::Drop {
            object_type: ObjectType::Table,
            if_exists,
            names,
            ..
        } => {
            let names = names
                .iter()
                .map(table_name)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(DropTable { names, if_exists })
        }
        other => Err(SqlError::Parse(format!(
            "expected DROP TABLE, found {other}"
        ))),
    }
}

/// Parses exactly one statement with the PostgreSQL dialect.
fn parse_one(text: &str) -> Result<Statement, SqlError> {
    let mut stmts = Parser::parse_sql(&PostgreSqlDialect {}, text)
        .map_err(|e| SqlError::Parse(e.to_string()))?;
    match stmts.len() {
        1 => Ok(stmts.remove(0)),
        n => Err(SqlError::Parse(format!(
            "expected one statement, found {n}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::split_statements;

    fn create(sql: &str) -> TableDef {
        let stmts = split_statements(sql).unwrap();
        parse_create_table(&stmts[0]).unwrap().def
    }

    fn create_err(sql: &str) -> String {
        let stmts = split_statements(sql).unwrap();
        parse_create_table(&stmts[0]).unwrap_err().to_string()
    }

    fn drop(sql: &str) -> Result<DropTable, SqlError> {
        let stmts = split_statements(sql).unwrap();
        parse_drop_table(&stmts[0])
    }

    fn tokens(sql: &str) -> Vec<datafusion::sql::sqlparser::tokenizer::TokenWithSpan> {
        split_statements(sql).unwrap().remove(0).tokens
    }

    #[test]
    fn create_table_sql_round_trips() {
        let sql = "CREATE TABLE \"Odd \"\"name\"\"\" (a BOOLEAN NOT NULL, \"order\" SMALLINT, c INTEGER, \
                   d BIGINT, e REAL, f DOUBLE PRECISION, g DECIMAL(38,10), h DATE, i TIMESTAMP, \
                   j CHAR(3), k VARCHAR(7), l VARCHAR, m TEXT) PARTITION BY HASH (\"order\") PARTITIONS 3";
        let stmts = split_statements(sql).unwrap();
        let def = parse_create_table(&stmts[0]).unwrap().def;
        let again = create_table_sql(&def);
        let stmts = split_statements(&again).unwrap();
        let back = parse_create_table(&stmts[0]).unwrap().def;
        assert_eq!(back.name, "Odd \"name\"");
        assert_eq!(back.schema, def.schema);
        assert_eq!(back.partitioning, def.partitioning);
        assert_eq!(
            back.partitioning,
            Partitioning::Hash {
                column: 1,
                count: 3
            }
        );
        let keyed = create(
            "CREATE TABLE k (a INT, \"B c\" TEXT, PRIMARY KEY (\"B c\", a) USING HASH, UNIQUE (a))",
        );
        let back = create(&create_table_sql(&keyed));
        assert_eq!(back.indexes, keyed.indexes);
        assert_eq!(back.schema, keyed.schema);
    }

    #[test]
    fn recognizes_our_statements() {
        assert!(is_create_table(&tokens("CREATE TABLE t (a INT)")));
        assert!(is_create_table(&tokens("create temporary table t (a INT)")));
        assert!(is_create_table(&tokens(
            "CREATE EXTERNAL TABLE t STORED AS CSV LOCATION 'x'"
        )));
        assert!(is_create_table(&tokens(
            "CREATE OR REPLACE TABLE t AS SELECT 1"
        )));
        assert!(!is_create_table(&tokens("CREATE VIEW v AS SELECT 1")));
        assert!(!is_create_table(&tokens(
            "CREATE OR REPLACE VIEW table AS SELECT 1"
        )));
        assert!(!is_create_table(&tokens("SELECT 1")));
        assert!(is_drop_table(&tokens("DROP TABLE t")));
        assert!(!is_drop_table(&tokens("DROP VIEW t")));
    }

    #[test]
    fn keys_parse_with_names_kinds_and_not_null() {
        let def = create(
            "CREATE TABLE t (a INT, b TEXT UNIQUE, c DATE, PRIMARY KEY (a, c) USING HASH, \
             CONSTRAINT c_u UNIQUE (c) USING ART, UNIQUE (b, a) USING btree)",
        );
        let got: Vec<_> = def
            .indexes
            .iter()
            .map(|i| {
                (
                    i.name.as_str(),
                    i.columns.clone(),
                    i.primary,
                    i.unique,
                    i.kind,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("t_b_key", vec![1], false, true, IndexKind::Art),
                ("t_pkey", vec![0, 2], true, true, IndexKind::Hash),
                ("c_u", vec![2], false, true, IndexKind::Art),
                ("t_b_a_key", vec![1, 0], false, true, IndexKind::Art),
            ]
        );
        // PRIMARY KEY implies NOT NULL; UNIQUE does not change nullability
        let nullable: Vec<bool> = def.schema.columns.iter().map(|c| c.nullable).collect();
        assert_eq!(nullable, vec![false, true, false]);
        let pk = create("CREATE TABLE u (id BIGINT PRIMARY KEY, x INT)");
        assert_eq!(pk.primary_key().map(|k| k.columns.clone()), Some(vec![0]));
    }

    #[test]
    fn constraints_and_clauses_are_rejected_clearly() {
        assert!(
            create_err("CREATE TABLE t (a INT, PRIMARY KEY (a), PRIMARY KEY (a))")
                .contains("multiple primary keys")
        );
        assert!(create_err("CREATE TABLE t (a INT, PRIMARY KEY (b))").contains("\"b\""));
        assert!(create_err("CREATE TABLE t (a INT, UNIQUE (a) USING gin)").contains("USING ART"));
        assert!(create_err("CREATE TABLE t (a INT, UNIQUE (a, a))").contains("twice"));
        assert!(create_err("CREATE TABLE t (a INT, CHECK (a > 0))").contains("not supported yet"));
        assert!(
            create_err("CREATE TABLE t AS SELECT 1").contains("AS SELECT is not supported yet")
        );
        assert!(create_err("CREATE TEMP TABLE t (a INT)").contains("TEMPORARY"));
        assert!(create_err("CREATE TABLE s.t (a INT)").contains("schema \"s\""));
        assert!(create_err("CREATE TABLE t (a INT").starts_with("syntax error"));
    }

    #[test]
    fn partition_clause_errors() {
        assert!(create_err("CREATE TABLE t (a INT) PARTITION BY RANGE (a)").contains("HASH"));
        assert!(create_err("CREATE TABLE t (a INT) PARTITION BY HASH (a)").contains("partitions"));
        assert!(
            create_err("CREATE TABLE t (a INT) PARTITION BY HASH (a, b) PARTITIONS 2")
                .contains("more than one")
        );
        assert!(
            create_err("CREATE TABLE t (a INT) PARTITION BY HASH (a) PARTITIONS x")
                .contains("number of partitions")
        );
        assert!(
            create_err("CREATE TABLE t (a INT) PARTITION BY HASH (a) PARTITIONS 2 junk")
                .contains("end of")
        );
    }

    #[test]
    fn partition_clause_parses() {
        let t = tokens("PARTITION BY HASH (\"Key\") PARTITIONS 8");
        assert_eq!(parse_partition_clause(&t).unwrap(), ("Key".to_string(), 8));
        let t = tokens("partition by hash (KEY) partitions 3");
        assert_eq!(parse_partition_clause(&t).unwrap(), ("key".to_string(), 3));
    }

    #[test]
    fn drop_table_parses_names() {
        let d = drop("DROP TABLE IF EXISTS a, \"B\", public.c").unwrap();
        assert_eq!(
            d,
            DropTable {
                names: vec!["a".into(), "B".into(), "c".into()],
                if_exists: true
            }
        );
        let d = drop("drop table Foo cascade").unwrap();
        assert_eq!(
            d,
            DropTable {
                names: vec!["foo".into()],
                if_exists: false
            }
        );
        assert!(drop("DROP TABLE").is_err());
    }
}
