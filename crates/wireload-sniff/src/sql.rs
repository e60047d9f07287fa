//! The SQL that creates a table for a sniffed input and loads it: `CREATE TABLE` and
//! `COPY ... FROM` with the options of wireload's COPY.

use std::fmt::Write;

use crate::Sniffed;

/// Words that cannot be a bare column or table name: PostgreSQL's reserved keywords and
/// those reserved in some places (function or type names, column names), plus type names
/// the SQL parser reads as types. Quoting one is always correct, so the list errs long.
const KEYWORDS: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "between",
    "bigint",
    "binary",
    "bit",
    "boolean",
    "both",
    "case",
    "cast",
    "char",
    "character",
    "check",
    "coalesce",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "date",
    "dec",
    "decimal",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "double",
    "else",
    "end",
    "except",
    "exists",
    "extract",
    "false",
    "fetch",
    "float",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "greatest",
    "group",
    "grouping",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "inout",
    "int",
    "integer",
    "intersect",
    "interval",
    "into",
    "is",
    "isnull",
    "join",
    "lateral",
    "leading",
    "least",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "national",
    "natural",
    "nchar",
    "none",
    "normalize",
    "not",
    "notnull",
    "null",
    "nullif",
    "numeric",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "out",
    "outer",
    "overlaps",
    "overlay",
    "placing",
    "position",
    "precision",
    "primary",
    "real",
    "references",
    "returning",
    "right",
    "row",
    "select",
    "session_user",
    "setof",
    "similar",
    "smallint",
    "some",
    "substring",
    "symmetric",
    "system_user",
    "table",
    "tablesample",
    "text",
    "then",
    "time",
    "timestamp",
    "to",
    "trailing",
    "treat",
    "trim",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "values",
    "varchar",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
];

/// `name` as a SQL identifier: bare when it is a lower-case word (`[a-z_][a-z0-9_]*`) and
/// no keyword, double-quoted (inner quotes doubled) otherwise, so that it keeps its
/// spelling.
pub fn quote_ident(name: &str) -> String {
    let simple = name
        .bytes()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == b'_')
        && name
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_');
    if simple && !KEYWORDS.contains(&name) {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// `text` as a SQL string literal: single quotes doubled; an escape-string literal
/// (`E'\t'`) for control characters.
fn literal(text: &[u8]) -> String {
    if text.iter().all(|&b| b >= 0x20) {
        let text = String::from_utf8_lossy(text);
        return format!("'{}'", text.replace('\'', "''"));
    }
    let mut out = String::from("E'");
    for &b in text {
        match b {
            b'\t' => out.push_str("\\t"),
            b'\'' => out.push_str("''"),
            b'\\' => out.push_str("\\\\"),
            b if b < 0x20 => {
                let _ = write!(out, "\\x{b:02x}");
            }
            b => out.push(b as char),
        }
    }
    out.push('\'');
    out
}

impl Sniffed {
    /// `CREATE TABLE table (col TYPE, ...)` for the inferred columns; identifiers are
    /// quoted only where needed (capitals, spaces, keywords).
    pub fn create_table_sql(&self, table: &str) -> String {
        let columns: Vec<String> = self
            .columns
            .iter()
            .map(|c| {
                let null = if c.nullable { "" } else { " NOT NULL" };
                format!("{} {}{null}", quote_ident(&c.name), c.ty)
            })
            .collect();
        format!(
            "CREATE TABLE {} ({})",
            quote_ident(table),
            columns.join(", ")
        )
    }

    /// `COPY table FROM 'path' WITH (FORMAT csv, HEADER .., DELIMITER .., ...)` that loads
    /// the input with the sniffed dialect (options named as wireload's COPY names them;
    /// QUOTE, ESCAPE and NULL only where they differ from COPY's defaults).
    pub fn copy_sql(&self, table: &str, path: &str) -> String {
        let d = &self.dialect;
        let mut options = vec![
            "FORMAT csv".to_string(),
            format!("HEADER {}", d.header),
            format!("DELIMITER {}", literal(&[d.delimiter])),
        ];
        if d.quote != Some(b'"') {
            let q: &[u8] = match &d.quote {
                Some(q) => std::slice::from_ref(q),
                None => b"",
            };
            options.push(format!("QUOTE {}", literal(q)));
        }
        if d.escape != d.quote
            && let Some(e) = d.escape
        {
            options.push(format!("ESCAPE {}", literal(&[e])));
        }
        if !d.null.is_empty() {
            options.push(format!("NULL {}", literal(&d.null)));
        }
        if let Some(f) = self.formats.date {
            options.push(format!("DATEFORMAT {}", literal(f.to_string().as_bytes())));
        }
        if let Some(f) = self.formats.timestamp {
            options.push(format!(
                "TIMESTAMPFORMAT {}",
                literal(f.to_string().as_bytes())
            ));
        }
        format!(
            "COPY {} FROM {} WITH ({})",
            quote_ident(table),
            literal(path.as_bytes()),
            options.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_only_when_needed() {
        assert_eq!(quote_ident("age"), "age");
        assert_eq!(quote_ident("_x1"), "_x1");
        assert_eq!(quote_ident("Person"), "\"Person\"");
        assert_eq!(quote_ident("first name"), "\"first name\"");
        assert_eq!(quote_ident("1st"), "\"1st\"");
        assert_eq!(quote_ident("order"), "\"order\"");
        assert_eq!(quote_ident("date"), "\"date\"");
        assert_eq!(quote_ident("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote_ident(""), "\"\"");
    }

    #[test]
    fn literals_escape_quotes_and_tabs() {
        assert_eq!(literal(b"|"), "'|'");
        assert_eq!(literal(b"'"), "''''");
        assert_eq!(literal(b"\t"), "E'\\t'");
        assert_eq!(literal(b"\\"), "'\\'");
        assert_eq!(literal(b"/data/o'brien.csv"), "'/data/o''brien.csv'");
    }
}
