//! wireload's DDL from the parser's AST: `CREATE TABLE` (with `PARTITION BY HASH (col)
//! PARTITIONS n`, PRIMARY KEY and UNIQUE constraints), `DROP TABLE`, `CREATE [UNIQUE] INDEX`
//! and `DROP INDEX`.

use datafusion::sql::sqlparser::ast::{
    self, ColumnOption, CreateTableOptions, Expr, FunctionArg, FunctionArgExpr, FunctionArguments,
    HiveDistributionStyle, IndexColumn, IndexOption, IndexType, ObjectName, ObjectNamePart,
    SqlOption, TableConstraint,
};
use wireload_storage::{Compression, IndexDef, IndexKind, Partitioning, TableDef, dictionary_type};
use wireload_types::{ColumnDef, TableSchema};

use crate::dialect::{WireloadDialect, compression_option};
use crate::error::SqlError;
use wireload_types::sql::{column_def, ident_name};

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

/// The positions of the columns `names` in table `def`.
pub(crate) fn column_positions(def: &TableDef, names: &[String]) -> Result<Vec<usize>, SqlError> {
    names
        .iter()
        .map(|c| {
            def.schema
                .columns
                .iter()
                .position(|col| &col.name == c)
                .ok_or_else(|| SqlError::UndefinedColumn {
                    table: def.name.clone(),
                    column: c.clone(),
                })
        })
        .collect()
}

impl CreateIndex {
    /// The index definition over table `def`: columns resolved to positions, the default
    /// name `<table>_<cols>_idx` when none was given, checked against the table's types.
    pub fn resolve(&self, def: &TableDef) -> Result<IndexDef, SqlError> {
        let columns = column_positions(def, &self.columns)?;
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

fn not_yet(what: &str) -> SqlError {
    SqlError::NotSupported(format!("{what} not supported yet"))
}

/// `CREATE TABLE [IF NOT EXISTS] name (col type [NOT NULL | NULL | PRIMARY KEY | UNIQUE], ...
/// [, [CONSTRAINT c] PRIMARY KEY | UNIQUE (cols) [USING ART|HASH]]) [PARTITION BY HASH (col)
/// PARTITIONS n]`; `partitions` is the `PARTITIONS n` that followed the statement.
pub fn create_table(
    ct: ast::CreateTable,
    partitions: Option<u64>,
) -> Result<CreateTable, SqlError> {
    if ct.external {
        return Err(SqlError::NotSupported(
            "CREATE EXTERNAL TABLE is not supported; use CREATE TABLE and COPY ... FROM".into(),
        ));
    }
    if ct.query.is_some() {
        return Err(SqlError::Internal(
            "CREATE TABLE AS is routed to dml::create_table_as".into(),
        ));
    }
    if ct.like.is_some() || ct.clone.is_some() {
        return Err(not_yet("CREATE TABLE ... LIKE/CLONE is"));
    }
    if ct.or_replace {
        return Err(not_yet("CREATE OR REPLACE TABLE is"));
    }
    if ct.temporary {
        return Err(SqlError::NotSupported(
            "TEMPORARY tables are not supported (every table is in memory; use CREATE TABLE)"
                .into(),
        ));
    }
    let unsupported = || {
        SqlError::NotSupported(
            "unsupported CREATE TABLE clause; wireload accepts CREATE TABLE [IF NOT EXISTS] name \
             (column type [NOT NULL] [COMPRESSION dictionary|plain|auto], ...) \
             [WITH (COMPRESSION = dictionary|plain|auto)] [PARTITION BY HASH (column) PARTITIONS n]"
                .into(),
        )
    };
    if ct.inherits.is_some()
        || ct.partition_of.is_some()
        || ct.hive_distribution != HiveDistributionStyle::NONE
    {
        return Err(unsupported());
    }
    let table_compression = match &ct.table_options {
        CreateTableOptions::None => None,
        CreateTableOptions::With(options) => table_compression(options)?,
        _ => return Err(unsupported()),
    };
    let name = table_name(&ct.name)?;
    let mut def = table_def(
        name,
        &ct.columns,
        &ct.constraints,
        ct.partition_by.as_deref(),
        partitions,
    )?;
    if let Some(c) = table_compression {
        // the table's setting for every column that did not name its own
        let compression = ct
            .columns
            .iter()
            .zip(&def.compression)
            .map(|(col, &own)| match column_compression(col) {
                Ok(Some(_)) => own,
                _ => c,
            })
            .collect();
        def = def.with_compression(compression)?;
    }
    Ok(CreateTable {
        def,
        if_not_exists: ct.if_not_exists,
    })
}

/// The table `name` with the columns and PRIMARY KEY / UNIQUE constraints of a CREATE TABLE
/// (column constraints and table constraints), partitioned as `partition_by` and
/// `partitions` say.
fn table_def(
    name: String,
    column_defs: &[ast::ColumnDef],
    constraints: &[TableConstraint],
    partition_by: Option<&Expr>,
    partitions: Option<u64>,
) -> Result<TableDef, SqlError> {
    if column_defs.is_empty() {
        return Err(SqlError::InvalidOption(format!(
            "table \"{name}\" needs at least one column"
        )));
    }
    let mut columns = Vec::with_capacity(column_defs.len());
    let mut compression = Vec::with_capacity(column_defs.len());
    // constraints in declaration order
    let mut keys: Vec<KeySpec> = Vec::new();
    for col in column_defs {
        let (column, options) = column_def(col)?;
        let own = column_compression(col)?;
        if own == Some(Compression::Dictionary) && !dictionary_type(&column.ty) {
            return Err(SqlError::InvalidOption(format!(
                "column \"{}\": {} columns are stored plain; COMPRESSION dictionary is for \
                 integers, decimals, dates, timestamps and text",
                column.name, column.ty
            )));
        }
        compression.push(own.unwrap_or_default());
        let col_name = column.name.clone();
        for opt in options {
            // `CONSTRAINT c PRIMARY KEY` on a column names the constraint
            let named = opt.name.as_ref().map(ident_name);
            match &opt.option {
                ColumnOption::DialectSpecific(t) if compression_option(t).is_some() => {}
                ColumnOption::PrimaryKey(pk) => keys.push(KeySpec {
                    name: named.or(pk.name.as_ref().map(ident_name)),
                    primary: true,
                    columns: vec![col_name.clone()],
                    kind: index_kind(pk.index_type.as_ref(), &pk.index_options)?,
                }),
                ColumnOption::Unique(u) => keys.push(KeySpec {
                    name: named.or(u.name.as_ref().map(ident_name)),
                    primary: false,
                    columns: vec![col_name.clone()],
                    kind: index_kind(u.index_type.as_ref(), &u.index_options)?,
                }),
                other => return Err(not_yet(&format!("column \"{col_name}\": {other} is"))),
            }
        }
        columns.push(column);
    }
    for c in constraints {
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
        for col in &k.columns {
            let pos = columns
                .iter()
                .position(|c: &ColumnDef| &c.name == col)
                .ok_or_else(|| SqlError::UndefinedColumn {
                    table: name.clone(),
                    column: col.clone(),
                })?;
            if k.primary {
                // PRIMARY KEY implies NOT NULL (as in PostgreSQL)
                columns[pos].nullable = false;
            }
            positions.push(pos);
        }
        let index_name = k.name.unwrap_or_else(|| {
            if k.primary {
                format!("{name}_pkey")
            } else {
                format!("{name}_{}_key", k.columns.join("_"))
            }
        });
        indexes.push(IndexDef {
            name: index_name,
            columns: positions,
            unique: true,
            primary: k.primary,
            kind: k.kind,
        });
    }
    let partitioning = partitioning(&name, &columns, partition_by, partitions)?;
    Ok(TableDef::new(name, TableSchema { columns }, partitioning)?
        .with_indexes(indexes)?
        .with_compression(compression)?)
}

/// The `COMPRESSION name` a column definition gives, if any.
fn column_compression(col: &ast::ColumnDef) -> Result<Option<Compression>, SqlError> {
    let mut found = None;
    for opt in &col.options {
        if let ColumnOption::DialectSpecific(t) = &opt.option
            && let Some(name) = compression_option(t)
        {
            if found.is_some() {
                return Err(SqlError::InvalidOption(format!(
                    "column \"{}\": COMPRESSION given twice",
                    ident_name(&col.name)
                )));
            }
            found = Some(name.parse().map_err(|e: String| {
                SqlError::InvalidOption(format!("column \"{}\": {e}", ident_name(&col.name)))
            })?);
        }
    }
    Ok(found)
}

/// The `COMPRESSION = name` of a CREATE TABLE's `WITH (...)`; other options are refused.
fn table_compression(options: &[SqlOption]) -> Result<Option<Compression>, SqlError> {
    let mut found = None;
    for o in options {
        let SqlOption::KeyValue { key, value } = o else {
            return Err(SqlError::NotSupported(format!(
                "WITH ({o}): the only table option is COMPRESSION = dictionary|plain|auto"
            )));
        };
        if !key.value.eq_ignore_ascii_case("compression") {
            return Err(SqlError::NotSupported(format!(
                "WITH ({o}): the only table option is COMPRESSION = dictionary|plain|auto"
            )));
        }
        let name = match value {
            Expr::Identifier(i) => i.value.clone(),
            Expr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(s) => s.clone(),
                other => other.to_string(),
            },
            other => other.to_string(),
        };
        if found.is_some() {
            return Err(SqlError::InvalidOption("COMPRESSION given twice".into()));
        }
        found = Some(name.parse().map_err(SqlError::InvalidOption)?);
    }
    Ok(found)
}

/// The table `name` with the elements of a CREATE TABLE's parenthesized list, given without
/// the parentheses: columns, column constraints and table constraints, such as
/// `id INT PRIMARY KEY, name VARCHAR(10) NOT NULL, UNIQUE (name)`.
pub fn parse_table(name: &str, elements: &str) -> Result<TableDef, SqlError> {
    let dialect = WireloadDialect::default();
    let mut p = datafusion::sql::sqlparser::parser::Parser::new(&dialect).try_with_sql(elements)?;
    let (mut columns, mut constraints) = (Vec::new(), Vec::new());
    loop {
        match p.parse_optional_table_constraint()? {
            Some(c) => constraints.push(c),
            None => columns.push(p.parse_column_def()?),
        }
        if !p.consume_token(&datafusion::sql::sqlparser::tokenizer::Token::Comma) {
            break;
        }
    }
    let next = p.peek_token();
    if next.token != datafusion::sql::sqlparser::tokenizer::Token::EOF {
        return Err(SqlError::Syntax(crate::parse::expected(
            "a comma and the next column or constraint, or the end of the list",
            &next,
        )));
    }
    table_def(name.to_string(), &columns, &constraints, None, None)
}

/// The partitioning `PARTITION BY HASH (col) PARTITIONS n` gives (the parser reads `HASH (col)`
/// as a call of a function HASH).
fn partitioning(
    table: &str,
    columns: &[ColumnDef],
    by: Option<&Expr>,
    partitions: Option<u64>,
) -> Result<Partitioning, SqlError> {
    let only = "only PARTITION BY HASH (column) PARTITIONS n is supported";
    let Some(by) = by else {
        return match partitions {
            None => Ok(Partitioning::Single),
            Some(_) => Err(SqlError::InvalidOption(format!(
                "PARTITIONS n needs PARTITION BY HASH (column); {only}"
            ))),
        };
    };
    let Expr::Function(f) = by else {
        return Err(SqlError::NotSupported(format!("PARTITION BY {by}: {only}")));
    };
    if !f.name.to_string().eq_ignore_ascii_case("hash") {
        return Err(SqlError::NotSupported(format!("PARTITION BY {by}: {only}")));
    }
    let FunctionArguments::List(list) = &f.args else {
        return Err(SqlError::NotSupported(format!("PARTITION BY {by}: {only}")));
    };
    let column = match list.args.as_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Identifier(id)))] => ident_name(id),
        [_, _, ..] => {
            return Err(SqlError::NotSupported(
                "partitioning by more than one column is not supported".into(),
            ));
        }
        _ => return Err(SqlError::NotSupported(format!("PARTITION BY {by}: {only}"))),
    };
    let Some(count) = partitions else {
        return Err(SqlError::InvalidOption(format!(
            "PARTITION BY HASH ({column}) needs the number of partitions: PARTITIONS n"
        )));
    };
    let column = columns
        .iter()
        .position(|c| c.name == column)
        .ok_or_else(|| SqlError::UndefinedColumn {
            table: table.to_string(),
            column,
        })?;
    let count = usize::try_from(count)
        .map_err(|_| SqlError::InvalidOption(format!("PARTITIONS {count} is too many")))?;
    Ok(Partitioning::Hash { column, count })
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
        Some(other) => Err(SqlError::NotSupported(format!(
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
                return Err(SqlError::NotSupported(format!(
                    "key column {} : operator classes and ordering options are not supported",
                    c.column
                )));
            }
            match &c.column.expr {
                Expr::Identifier(id) => Ok(ident_name(id)),
                other => Err(SqlError::NotSupported(format!(
                    "only plain columns can be keys, not {other}"
                ))),
            }
        })
        .collect()
}

/// `CREATE [UNIQUE] INDEX [IF NOT EXISTS] [name] ON table [USING ART|HASH] (cols)
/// [USING ART|HASH]`.
pub fn create_index(ci: ast::CreateIndex) -> Result<CreateIndex, SqlError> {
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

/// `DROP TABLE [IF EXISTS] name [, ...] [CASCADE | RESTRICT]`.
pub fn drop_table(names: &[ObjectName], if_exists: bool) -> Result<DropTable, SqlError> {
    Ok(DropTable {
        names: names.iter().map(table_name).collect::<Result<_, _>>()?,
        if_exists,
    })
}

/// `DROP INDEX [IF EXISTS] name [, ...]`.
pub fn drop_index(names: &[ObjectName], if_exists: bool) -> Result<DropIndex, SqlError> {
    Ok(DropIndex {
        names: names.iter().map(table_name).collect::<Result<_, _>>()?,
        if_exists,
    })
}

/// A table (or index) name: `name` or `public.name`.
pub(crate) fn table_name(name: &ObjectName) -> Result<String, SqlError> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => Ok(ident_name(i)),
            ObjectNamePart::Function(_) => {
                Err(SqlError::NotSupported(format!("invalid table name {name}")))
            }
        })
        .collect::<Result<_, _>>()?;
    match parts.as_slice() {
        [t] => Ok(t.clone()),
        [s, t] if s == wireload_query::DEFAULT_SCHEMA => Ok(t.clone()),
        [s, _] => Err(SqlError::NotSupported(format!(
            "schema \"{s}\" does not exist; tables live in schema \"{}\"",
            wireload_query::DEFAULT_SCHEMA
        ))),
        _ => Err(SqlError::NotSupported(format!(
            "qualified table name {name} is not supported"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{Statement, parse_script};

    fn parse(sql: &str) -> Result<Statement, SqlError> {
        parse_script(sql).map(|mut v| v.remove(0).statement)
    }

    fn create(sql: &str) -> TableDef {
        match parse(sql).unwrap() {
            Statement::CreateTable(c) => c.def,
            other => panic!("{other:?}"),
        }
    }

    fn create_err(sql: &str) -> String {
        parse(sql).unwrap_err().to_string()
    }

    fn drop(sql: &str) -> Result<DropTable, SqlError> {
        match parse(sql)? {
            Statement::DropTable(d) => Ok(d),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn create_table_sql_round_trips() {
        let sql = "CREATE TABLE \"Odd \"\"name\"\"\" (a BOOLEAN NOT NULL, \"order\" SMALLINT, c INTEGER, \
                   d BIGINT, e REAL, f DOUBLE PRECISION, g DECIMAL(38,10), h DATE, i TIMESTAMP, \
                   j CHAR(3), k VARCHAR(7), l VARCHAR, m TEXT) PARTITION BY HASH (\"order\") PARTITIONS 3";
        let def = create(sql);
        let back = create(&def.create_sql());
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
        let back = create(&keyed.create_sql());
        assert_eq!(back.indexes, keyed.indexes);
        assert_eq!(back.schema, keyed.schema);
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
        let named = create("CREATE TABLE u (id BIGINT CONSTRAINT u_key PRIMARY KEY)");
        assert_eq!(named.indexes[0].name, "u_key");
    }

    #[test]
    fn constraints_and_clauses_are_rejected_clearly() {
        assert!(
            create_err("CREATE TABLE t (a INT, PRIMARY KEY (a), PRIMARY KEY (a))")
                .contains("multiple primary keys")
        );
        assert!(matches!(
            parse("CREATE TABLE t (a INT, PRIMARY KEY (b))"),
            Err(SqlError::UndefinedColumn { column, .. }) if column == "b"
        ));
        assert!(create_err("CREATE TABLE t (a INT, UNIQUE (a) USING gin)").contains("USING ART"));
        assert!(create_err("CREATE TABLE t (a INT, UNIQUE (a, a))").contains("twice"));
        assert!(create_err("CREATE TABLE t (a INT, CHECK (a > 0))").contains("not supported yet"));
        assert!(
            create_err("CREATE TABLE t (a INT PRIMARY KEY) AS SELECT 1").contains("names only")
        );
        assert!(create_err("CREATE TEMP TABLE t (a INT)").contains("TEMPORARY"));
        assert!(create_err("CREATE TABLE s.t (a INT)").contains("schema \"s\""));
        assert!(create_err("CREATE TABLE t (a INT").starts_with("syntax error"));
        assert_eq!(
            create_err("CREATE TABLE t (a INTEGRAL)"),
            "column \"a\": type \"INTEGRAL\" does not exist"
        );
        assert!(
            create_err("CREATE EXTERNAL TABLE t STORED AS CSV LOCATION 'x'").contains("EXTERNAL")
        );
    }

    #[test]
    fn partition_clause() {
        assert_eq!(
            create("CREATE TABLE t (\"Key\" INT, b INT) PARTITION BY HASH (\"Key\") PARTITIONS 8")
                .partitioning,
            Partitioning::Hash {
                column: 0,
                count: 8
            }
        );
        assert_eq!(
            create("create table t (b int, key int) partition by hash (KEY) partitions 3")
                .partitioning,
            Partitioning::Hash {
                column: 1,
                count: 3
            }
        );
        assert!(create_err("CREATE TABLE t (a INT) PARTITION BY RANGE (a)").contains("HASH"));
        assert!(
            create_err("CREATE TABLE t (a INT) PARTITION BY HASH (a)").contains("PARTITIONS n")
        );
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
                .contains("end of the statement")
        );
        assert!(create_err("CREATE TABLE t (a INT) PARTITIONS 2").contains("PARTITION BY"));
        assert!(
            create_err("CREATE TABLE t (a INT) PARTITION BY HASH (a) PARTITIONS 0")
                .contains("PARTITIONS")
        );
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
        assert!(parse("DROP TABLE").is_err());
    }

    #[test]
    fn table_element_lists() {
        let def = parse_table(
            "t",
            "id INT PRIMARY KEY, \"B\" TEXT NOT NULL, c DATE, UNIQUE (c)",
        )
        .unwrap();
        assert_eq!(def.name, "t");
        assert_eq!(def.schema.columns.len(), 3);
        assert_eq!(def.indexes.len(), 2);
        assert!(!def.schema.columns[0].nullable);
        assert!(parse_table("t", "a INT,").is_err());
        assert!(parse_table("t", "a INT b").is_err());
        assert!(matches!(
            parse_table("t", "a INT, PRIMARY KEY (z)"),
            Err(SqlError::UndefinedColumn { .. })
        ));
    }

    #[test]
    fn create_index_parses() {
        let Statement::CreateIndex(ci) =
            parse("CREATE UNIQUE INDEX IF NOT EXISTS ix ON public.t USING hash (a, \"B\")")
                .unwrap()
        else {
            panic!()
        };
        assert_eq!(
            ci,
            CreateIndex {
                name: Some("ix".into()),
                table: "t".into(),
                columns: vec!["a".into(), "B".into()],
                unique: true,
                kind: IndexKind::Hash,
                if_not_exists: true
            }
        );
        assert!(
            parse("CREATE INDEX ix ON t (a) WHERE a > 1")
                .unwrap_err()
                .to_string()
                .contains("partial")
        );
        assert!(
            parse("CREATE INDEX ix ON t (a + 1)")
                .unwrap_err()
                .to_string()
                .contains("plain columns")
        );
    }
}
