//! SQL text the binary writes for the user: quoted identifiers and literals, and the
//! CREATE TABLE and COPY statements of the `sql` mode and the demo.

use std::path::Path;

/// Dialect settings that become COPY options; `None` leaves an option out (the default applies).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyOptions {
    /// Field delimiter.
    pub delimiter: Option<u8>,
    /// Quote character; `Some(None)` means no quoting.
    pub quote: Option<Option<u8>>,
    /// Escape character; `Some(None)` means no escape character.
    pub escape: Option<Option<u8>>,
    /// Whether the first record is a header.
    pub header: Option<bool>,
    /// The NULL string.
    pub null: Option<String>,
    /// Scan mode, `safe` or `fast`.
    pub mode: Option<&'static str>,
    /// The loader, `cpu` or `gpu`.
    pub engine: Option<&'static str>,
}

/// `"name"` with embedded double quotes doubled.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `'text'` with embedded single quotes doubled.
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn is_simple_ident(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A table name as the user means it on the command line: a plain identifier folds to
/// lower case as unquoted SQL identifiers do (so `T` is found as `t` and as `T`);
/// anything else (`my-data`, `Sales 2024`) is taken verbatim. Always returned quoted.
pub fn table_ident(name: &str) -> String {
    if is_simple_ident(name) {
        quote_ident(&name.to_ascii_lowercase())
    } else {
        quote_ident(name)
    }
}

/// `CREATE TABLE <table> (<columns>)` with `columns` as SQL text.
pub fn create_table(table: &str, columns: &str) -> String {
    format!("CREATE TABLE {} ({})", table_ident(table), columns)
}

/// Column list text with every column VARCHAR, names quoted exactly.
pub fn varchar_columns(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("{} VARCHAR", quote_ident(n)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Column names usable in a table: an empty name becomes `columnN` (1-based position), and a
/// repeated name gets a `_2`, `_3`... suffix.
pub fn unique_column_names(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let base = if name.trim().is_empty() {
            format!("column{}", i + 1)
        } else {
            name.clone()
        };
        let mut candidate = base.clone();
        let mut n = 2;
        while out.contains(&candidate) {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        out.push(candidate);
    }
    out
}

fn byte_literal(b: Option<u8>) -> String {
    match b {
        Some(b) => quote_literal(&char::from(b).to_string()),
        None => "''".to_string(),
    }
}

/// `COPY <table> FROM '<path>' WITH (FORMAT csv, ...)` with the given options.
pub fn copy_from(table: &str, path: &Path, opts: &CopyOptions) -> String {
    let mut with = vec!["FORMAT csv".to_string()];
    if let Some(d) = opts.delimiter {
        with.push(format!("DELIMITER {}", byte_literal(Some(d))));
    }
    if let Some(h) = opts.header {
        with.push(format!("HEADER {h}"));
    }
    if let Some(n) = &opts.null {
        with.push(format!("NULL {}", quote_literal(n)));
    }
    if let Some(q) = opts.quote {
        with.push(format!("QUOTE {}", byte_literal(q)));
    }
    if let Some(e) = opts.escape {
        with.push(format!("ESCAPE {}", byte_literal(e)));
    }
    if let Some(m) = opts.mode {
        with.push(format!("MODE {m}"));
    }
    if let Some(e) = opts.engine {
        with.push(format!("ENGINE {e}"));
    }
    format!(
        "COPY {} FROM {} WITH ({})",
        table_ident(table),
        quote_literal(&path.display().to_string()),
        with.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_literal("it's"), "'it''s'");
        assert_eq!(table_ident("Orders"), "\"orders\"");
        assert_eq!(table_ident("my-data"), "\"my-data\"");
        assert_eq!(table_ident("select"), "\"select\"");
    }

    #[test]
    fn create_and_copy_text() {
        assert_eq!(
            create_table("t", &varchar_columns(&["id".into(), "First Name".into()])),
            "CREATE TABLE \"t\" (\"id\" VARCHAR, \"First Name\" VARCHAR)"
        );
        let opts = CopyOptions {
            delimiter: Some(b'|'),
            quote: Some(Some(b'\'')),
            escape: Some(None),
            header: Some(true),
            null: Some("\\N".into()),
            mode: Some("fast"),
            engine: Some("gpu"),
        };
        assert_eq!(
            copy_from("t", Path::new("/d/o'k.csv"), &opts),
            "COPY \"t\" FROM '/d/o''k.csv' WITH (FORMAT csv, DELIMITER '|', HEADER true, NULL '\\N', \
             QUOTE '''', ESCAPE '', MODE fast, ENGINE gpu)"
        );
        assert_eq!(
            copy_from("t", Path::new("x.tbl"), &CopyOptions::default()),
            "COPY \"t\" FROM 'x.tbl' WITH (FORMAT csv)"
        );
    }

    #[test]
    fn column_names_are_made_unique() {
        let names: Vec<String> = ["a", "", "a", "a", "b"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            unique_column_names(&names),
            ["a", "column2", "a_2", "a_3", "b"]
        );
    }
}
