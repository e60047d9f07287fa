//! `wireload sql`: create and load the tables named on the command line, run the
//! statements, print the last result.

use anyhow::{Context, Result, bail};
use wireload_load::{Dialect, LoadOptions, OnError, ScanMode, Source};
use wireload_sniff::SniffOptions;
use wireload_sql::{ReadSpec, StatementOutput};
use wireload_storage::{Compression, Partitioning, TableDef};
use wireload_types::{ColumnDef, SqlType, TableSchema};

use crate::cli::{EngineArg, ModeArg, SniffArgs, SqlArgs, TableArg};
use crate::output::Printer;
use crate::runner::{Loader, Runner};

/// A one-byte dialect character given on the command line: one ASCII character, or `\t`/`tab` for a tab.
pub fn one_byte(flag: &str, value: &str) -> Result<u8> {
    match value {
        "\\t" | "tab" => Ok(b'\t'),
        v if v.len() == 1 => Ok(v.as_bytes()[0]),
        _ => bail!("--{flag} must be a single one-byte character, got {value:?}"),
    }
}

/// Like [`one_byte`], with `''` meaning "none".
pub fn optional_byte(flag: &str, value: &str) -> Result<Option<u8>> {
    if value.is_empty() {
        Ok(None)
    } else {
        one_byte(flag, value).map(Some)
    }
}

/// The dialect the flags describe (unset flags keep the COPY defaults; the escape follows
/// the quote).
pub fn dialect(args: &SqlArgs) -> Result<Dialect> {
    let mut d = Dialect::default();
    if let Some(v) = &args.delimiter {
        d.delimiter = one_byte("delimiter", v)?;
    }
    if let Some(v) = &args.quote {
        let q = optional_byte("quote", v)?;
        d.quote = q;
        d.escape = q;
    }
    if let Some(v) = &args.escape {
        d.escape = optional_byte("escape", v)?;
    }
    if let Some(h) = args.header_flag() {
        d.header = h;
    }
    if let Some(n) = &args.null {
        d.null = n.as_bytes().to_vec();
    }
    Ok(d)
}

/// A table name as the user means it on the command line: a plain identifier folds to
/// lower case as unquoted SQL identifiers do (so `T` is found as `t` and as `T`); anything
/// else (`my-data`, `Sales 2024`) is taken verbatim.
pub fn table_name(name: &str) -> String {
    let mut chars = name.chars();
    let simple = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if simple {
        name.to_ascii_lowercase()
    } else {
        name.to_string()
    }
}

/// The definition of each table: the --schema lists (columns and constraints, as inside a
/// CREATE TABLE's parentheses; one for all tables, or one per table), or VARCHAR columns
/// named after each file's header; None: inferred from the files.
fn definitions(
    args: &SqlArgs,
    tables: &[TableArg],
    dialect: &Dialect,
) -> Result<Option<Vec<TableDef>>> {
    if args.all_varchar {
        return tables
            .iter()
            .map(|t| {
                if t.path.as_os_str() == "-" {
                    bail!("--all-varchar needs a file to read the header from, not standard input");
                }
                let source = sources(&t.path)?.remove(0);
                let names = wireload_load::header_names(&source, dialect)?;
                let columns = wireload_load::unique_column_names(&names)
                    .into_iter()
                    .map(|name| ColumnDef {
                        name,
                        ty: SqlType::Varchar(None),
                        nullable: true,
                    })
                    .collect();
                TableDef::new(
                    table_name(&t.name),
                    TableSchema { columns },
                    Partitioning::Single,
                )
                .with_context(|| format!("cannot create table {}", t.name))
            })
            .collect::<Result<Vec<_>>>()
            .map(Some);
    }
    let parse = |text: &String, table: &str| {
        wireload_sql::parse_table(&table_name(table), text)
            .with_context(|| format!("--schema \"{text}\""))
    };
    match args.schemas.len() {
        0 => Ok(None),
        1 => tables
            .iter()
            .map(|t| parse(&args.schemas[0], &t.name))
            .collect::<Result<Vec<_>>>()
            .map(Some),
        n if n == tables.len() => args
            .schemas
            .iter()
            .zip(tables)
            .map(|(s, t)| parse(s, &t.name))
            .collect::<Result<Vec<_>>>()
            .map(Some),
        n => bail!(
            "{n} --schema flags for {} tables: give one for all tables or one per table",
            tables.len()
        ),
    }
}

/// The sources of a path of the command line: `-` is standard input (streamed, never held
/// whole), a glob is every file it matches, sorted.
fn sources(path: &std::path::Path) -> Result<Vec<Source>> {
    if path.as_os_str() == "-" {
        return Ok(vec![Source::reader("<stdin>", std::io::stdin())]);
    }
    Ok(wireload_sql::sources_of(&[path
        .to_string_lossy()
        .into_owned()])?)
}

/// What the dialect flags fix, for the sniffer to keep.
fn sniff_options(args: &SqlArgs, dialect: &Dialect) -> SniffOptions {
    SniffOptions {
        delimiter: args.delimiter.is_some().then_some(dialect.delimiter),
        quote: args.quote.is_some().then_some(dialect.quote),
        escape: (args.escape.is_some() || args.quote.is_some()).then_some(dialect.escape),
        header: args.header_flag(),
        null: args.null.is_some().then(|| dialect.null.clone()),
        ..SniffOptions::default()
    }
}

/// Runs `wireload sql`.
pub fn run(runner: &Runner, args: &SqlArgs) -> Result<()> {
    let printer = Printer {
        format: args.format,
        summary_to_stdout: false,
        table_row_limit: None,
    };
    let dialect = dialect(args)?;
    let statements = wireload_sql::parse_script(args.sql())?;
    if statements.is_empty() {
        bail!("no SQL statement given");
    }
    let options = LoadOptions {
        dialect: dialect.clone(),
        mode: match args.mode {
            Some(ModeArg::Fast) => ScanMode::Fast,
            Some(ModeArg::Safe) | None => ScanMode::Safe,
        },
        on_error: if args.ignore_errors {
            OnError::Ignore
        } else {
            OnError::Stop
        },
        ..LoadOptions::default()
    };
    let loader = match args.engine {
        Some(EngineArg::Gpu) => {
            if args.mode.is_some() {
                bail!(
                    "--mode applies to --engine cpu: --engine gpu always reads RFC 4180 quoting, \
                     newlines in quotes included"
                );
            }
            if args.ignore_errors {
                bail!(
                    "--ignore-errors applies to --engine cpu: --engine gpu stops at the first bad record"
                );
            }
            Loader::Gpu
        }
        Some(EngineArg::Cpu) | None => Loader::Cpu,
    };
    let mut tables = args.tables.clone();
    tables.extend(args.file_tables());
    match definitions(args, &tables, &dialect)? {
        Some(defs) => {
            for (table, def) in tables.iter().zip(defs) {
                let def = match args.compression {
                    Some(c) => {
                        // the flag's storage for every column that named none of its own
                        let compression = def
                            .compression
                            .iter()
                            .map(|&own| if own == Compression::Plain { c } else { own })
                            .collect();
                        def.with_compression(compression)?
                    }
                    None => def,
                };
                let name = def.name.clone();
                runner
                    .create_table(def)
                    .with_context(|| format!("cannot create table {}", table.name))?;
                if args.all_varchar {
                    runner.mark_header_named(&name);
                }
                let mut sources = sources(&table.path)?;
                let report = if sources.len() == 1 {
                    runner.load(&name, sources.remove(0), options.clone(), loader)?
                } else {
                    if loader == Loader::Gpu {
                        bail!(
                            "--engine gpu loads one file per table, and {} matches {}",
                            table.path.display(),
                            sources.len()
                        );
                    }
                    runner.load_many(&name, sources, options.clone())?
                };
                printer.summary(&report)?;
                print_notices(runner);
            }
        }
        None => {
            if loader == Loader::Gpu {
                bail!("--engine gpu needs the columns: give them with --schema");
            }
            if args.compression.is_some() {
                bail!(
                    "--compression applies with --schema or --all-varchar: inferred columns are stored plain"
                );
            }
            for table in &tables {
                let spec = ReadSpec {
                    options: options.clone(),
                    detect: sniff_options(args, &dialect),
                    schema: None,
                    project: None,
                    filename: false,
                };
                let report = runner
                    .create_from_sources(&table_name(&table.name), sources(&table.path)?, spec)
                    .with_context(|| format!("cannot load table {}", table.name))?;
                printer.summary(&report)?;
                print_notices(runner);
            }
        }
    }
    let mut last = None;
    for parsed in statements {
        let output = runner.run_statement(parsed.statement)?;
        if let StatementOutput::Loaded(report) = &output {
            printer.summary(report)?;
        }
        print_notices(runner);
        last = Some(output);
    }
    match last {
        Some(StatementOutput::Loaded(_)) | None => {}
        Some(StatementOutput::Unloaded(summary)) => printer.summary(&summary)?,
        Some(output) => printer.print(&output)?,
    }
    Ok(())
}

/// Prints the notices of the last statements on standard error.
pub fn print_notices(runner: &Runner) {
    for n in runner.take_notices() {
        eprintln!("notice: {n}");
    }
}

/// Runs `wireload sniff`: prints the CREATE TABLE and COPY statements that load the file.
pub fn sniff(args: &SniffArgs) -> Result<()> {
    let opts = SniffOptions {
        delimiter: args
            .delimiter
            .as_deref()
            .map(|d| one_byte("delimiter", d))
            .transpose()?,
        header: if args.header {
            Some(true)
        } else if args.no_header {
            Some(false)
        } else {
            None
        },
        ..SniffOptions::default()
    };
    let sniffed = wireload_sql::sniff_file(&args.file, &opts)?;
    let path = args.file.to_string_lossy();
    let table = match &args.table {
        Some(t) => table_name(t),
        None => table_name(&wireload_sql::table_name_of(&path)),
    };
    println!("{};", sniffed.create_table_sql(&table));
    println!("{};", sniffed.copy_sql(&table, &path));
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
    fn table_names_fold_like_identifiers() {
        assert_eq!(table_name("Orders"), "orders");
        assert_eq!(table_name("my-data"), "my-data");
        assert_eq!(table_name("Sales 2024"), "Sales 2024");
        assert_eq!(table_name("select"), "select");
    }
}
