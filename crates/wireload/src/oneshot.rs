//! `wireload sql`: create and load the tables named on the command line, run the
//! statements, print the last result.

use anyhow::{Context, Result, bail};
use wireload_load::{Dialect, Source};
use wireload_sql::StatementOutput;

use crate::cli::SqlArgs;
use crate::engine::Engine;
use crate::output::Printer;
use crate::sqlgen::{self, CopyOptions};
use crate::statements;

/// A one-byte dialect character given on the command line: one ASCII character, or `\t`/`tab` for a tab.
fn one_byte(flag: &str, value: &str) -> Result<u8> {
    match value {
        "\\t" | "tab" => Ok(b'\t'),
        v if v.len() == 1 => Ok(v.as_bytes()[0]),
        _ => bail!("--{flag} must be a single one-byte character, got {value:?}"),
    }
}

/// Like [`one_byte`], with `''` meaning "none".
fn optional_byte(flag: &str, value: &str) -> Result<Option<u8>> {
    if value.is_empty() {
        Ok(None)
    } else {
        one_byte(flag, value).map(Some)
    }
}

/// The COPY options the dialect flags stand for.
pub fn copy_options(args: &SqlArgs) -> Result<CopyOptions> {
    Ok(CopyOptions {
        delimiter: args
            .delimiter
            .as_deref()
            .map(|v| one_byte("delimiter", v))
            .transpose()?,
        quote: args
            .quote
            .as_deref()
            .map(|v| optional_byte("quote", v))
            .transpose()?,
        escape: args
            .escape
            .as_deref()
            .map(|v| optional_byte("escape", v))
            .transpose()?,
        header: args.header_flag(),
        null: args.null.clone(),
        mode: args.mode.map(|m| m.as_sql()),
        engine: args.engine.map(|e| e.as_sql()),
    })
}

/// The dialect the COPY options describe (unset options keep the COPY defaults; the escape follows the quote).
pub fn dialect(opts: &CopyOptions) -> Dialect {
    let mut d = Dialect::default();
    if let Some(b) = opts.delimiter {
        d.delimiter = b;
    }
    if let Some(q) = opts.quote {
        d.quote = q;
        d.escape = q;
    }
    if let Some(e) = opts.escape {
        d.escape = e;
    }
    if let Some(h) = opts.header {
        d.header = h;
    }
    if let Some(n) = &opts.null {
        d.null = n.as_bytes().to_vec();
    }
    d
}

/// The column list of each table: the --schema texts (one for all, or one per table), or
/// VARCHAR columns named after each file's header.
fn column_lists(args: &SqlArgs, opts: &CopyOptions) -> Result<Vec<String>> {
    if args.all_varchar {
        let d = dialect(opts);
        return args
            .tables
            .iter()
            .map(|t| {
                let names = wireload_load::header_names(&Source::File(t.path.clone()), &d)?;
                Ok(sqlgen::varchar_columns(&sqlgen::unique_column_names(
                    &names,
                )))
            })
            .collect();
    }
    match args.schemas.len() {
        0 => bail!(
            "give the columns with --schema \"id INT, name VARCHAR, ...\", or use --all-varchar"
        ),
        1 => Ok(vec![args.schemas[0].clone(); args.tables.len()]),
        n if n == args.tables.len() => Ok(args.schemas.clone()),
        n => bail!(
            "{n} --schema flags for {} --table flags: give one for all tables or one per table",
            args.tables.len()
        ),
    }
}

/// Runs `wireload sql`.
pub fn run(engine: &Engine, args: &SqlArgs) -> Result<()> {
    let printer = Printer {
        format: args.format,
        summary_to_stdout: false,
        table_row_limit: None,
    };
    let opts = copy_options(args)?;
    let statements = statements::split(&args.sql);
    if statements.is_empty() {
        bail!("no SQL statement given");
    }
    for (table, columns) in args.tables.iter().zip(column_lists(args, &opts)?) {
        engine
            .run(&sqlgen::create_table(&table.name, &columns))
            .with_context(|| format!("cannot create table {}", table.name))?;
        for output in engine.run(&sqlgen::copy_from(&table.name, &table.path, &opts))? {
            printer.print(&output)?;
        }
    }
    let mut last = None;
    for statement in statements {
        for output in engine.run(statement.text)? {
            if let StatementOutput::Loaded(report) = &output {
                printer.summary(report)?;
            }
            last = Some(output);
        }
    }
    match last {
        Some(StatementOutput::Loaded(_)) | None => {}
        Some(StatementOutput::Unloaded(summary)) => printer.summary(&summary)?,
        Some(output) => printer.print(&output)?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialect_characters() {
        assert_eq!(one_byte("delimiter", "|").unwrap(), b'|');
        assert_eq!(one_byte("delimiter", "\\t").unwrap(), b'\t');
        assert!(one_byte("delimiter", "||").is_err());
        assert!(one_byte("delimiter", "§").is_err());
        assert_eq!(optional_byte("escape", "").unwrap(), None);
    }

    #[test]
    fn dialect_follows_options() {
        let d = dialect(&CopyOptions {
            quote: Some(Some(b'\'')),
            header: Some(true),
            ..Default::default()
        });
        assert_eq!(
            (d.quote, d.escape, d.header, d.delimiter),
            (Some(b'\''), Some(b'\''), true, b',')
        );
        let d = dialect(&CopyOptions {
            escape: Some(None),
            null: Some("NA".into()),
            ..Default::default()
        });
        assert_eq!(
            (d.quote, d.escape, d.null.as_slice()),
            (Some(b'"'), None, b"NA".as_slice())
        );
    }
}
