//! The interactive shell: line editing and history, statements that span lines until `;`,
//! backslash commands, an aligned table and the time of every statement.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use crate::cli::OutputFormat;
use crate::output::Printer;
use crate::render;
use crate::runner::Runner;

/// Prompt for a new statement.
const PROMPT: &str = "wireload> ";
/// Prompt for the next line of an unfinished statement.
const CONTINUATION: &str = "      ..> ";
/// The prompt inside a transaction (as psql marks it).
const PROMPT_IN_TRANSACTION: &str = "wireload*> ";
/// Most rows drawn for one result.
const ROW_LIMIT: usize = 10_000;

const HELP: &str = "\
Statements end with ';' and may span lines. Besides queries:
  CREATE TABLE t (col TYPE [NOT NULL | PRIMARY KEY | UNIQUE], ...,
                 [PRIMARY KEY (cols) [USING ART|HASH]]) [PARTITION BY HASH (col) PARTITIONS n]
  CREATE [UNIQUE] INDEX name ON t (cols) [USING ART|HASH]    DROP INDEX name
  COPY t FROM 'file' [WITH (FORMAT csv|arrow|parquet, DELIMITER, HEADER, NULL, ...)]
  COPY {t | (query)} TO 'file' [WITH (FORMAT csv|arrow|parquet, COMPRESSION ...)]
  EXPORT DATABASE 'dir'    IMPORT DATABASE 'dir'
  INSERT INTO t [(cols)] {VALUES (...), ... | query} [RETURNING ...]
  UPDATE t SET col = expr, ... [WHERE ...]    DELETE FROM t [WHERE ...]
  CREATE TABLE t AS query    TRUNCATE t, ...
  BEGIN    COMMIT    ROLLBACK  (the prompt shows * inside a transaction)
  SET statement_timeout = '5s'
  \\d            list tables
  \\d NAME       columns and types of table NAME
  \\q            quit (also .quit, exit, Ctrl-D)
  \\?            this help
Ctrl-C cancels a running load or query, or clears the line.";

fn history_path() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".wireload_history"))
}

/// What the shell does with a line typed at the start of a statement.
#[derive(Debug, PartialEq, Eq)]
enum Command<'a> {
    Quit,
    Help,
    ListTables,
    Describe(&'a str),
    Unknown(&'a str),
    /// Not a shell command: SQL.
    Sql,
}

fn command(line: &str) -> Command<'_> {
    let line = line.trim();
    match line {
        "\\q" | ".quit" | ".exit" | "exit" | "quit" | "exit;" | "quit;" => Command::Quit,
        "\\?" | "\\h" | "help" | ".help" => Command::Help,
        "\\d" | ".tables" => Command::ListTables,
        _ => match line.strip_prefix("\\d ") {
            Some(name) => Command::Describe(name.trim().trim_end_matches(';')),
            None if line.starts_with('\\') => Command::Unknown(line),
            None => Command::Sql,
        },
    }
}

/// Runs the shell until the user quits.
pub fn run(runner: &Runner) -> Result<()> {
    let mut editor = DefaultEditor::new()?;
    let history = history_path();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    println!(
        "wireload {} — statements end with ';', \\? for help, \\q to quit",
        env!("CARGO_PKG_VERSION")
    );
    let printer = Printer {
        format: OutputFormat::Table,
        summary_to_stdout: true,
        table_row_limit: Some(ROW_LIMIT),
    };
    let mut buffer = String::new();
    loop {
        let prompt = if !buffer.is_empty() {
            CONTINUATION
        } else if runner.in_transaction() {
            PROMPT_IN_TRANSACTION
        } else {
            PROMPT
        };
        let line = match editor.readline(prompt) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                buffer.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        if buffer.is_empty() {
            let cmd = command(&line);
            if cmd != Command::Sql {
                let _ = editor.add_history_entry(line.trim());
                match cmd {
                    Command::Quit => break,
                    Command::Help => println!("{HELP}"),
                    Command::ListTables => println!("{}", list_tables(runner)),
                    Command::Describe(name) => match describe(runner, name) {
                        Some(text) => println!("{text}"),
                        None => eprintln!("error: table \"{name}\" does not exist"),
                    },
                    Command::Unknown(c) => {
                        eprintln!("error: unknown command {c}; \\? lists the commands")
                    }
                    Command::Sql => unreachable!("handled above"),
                }
                continue;
            }
        }
        if !buffer.is_empty() {
            buffer.push('\n');
        }
        buffer.push_str(&line);
        if !wireload_sql::is_complete(&buffer) {
            continue;
        }
        let sql = std::mem::take(&mut buffer);
        if sql.trim().is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(sql.as_str());
        let data = if crate::inline::ends_in_copy_from_stdin(&sql) {
            // psql's convention: the data lines follow, up to a line `\.`
            println!("Enter the data, ending with a line \\.");
            let mut data = Vec::new();
            loop {
                match editor.readline("") {
                    Ok(line) if crate::inline::is_end_of_data(&line) => break,
                    Ok(line) => {
                        data.extend_from_slice(line.as_bytes());
                        data.push(b'\n');
                    }
                    Err(ReadlineError::Eof) => break,
                    Err(_) => {
                        data.clear();
                        break;
                    }
                }
            }
            Some(data)
        } else {
            None
        };
        execute(runner, &printer, &sql, data);
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
    Ok(())
}

/// Runs the statements of `sql`, printing each result (or the error) and the time taken;
/// `data` is the data of its last statement, a `COPY ... FROM STDIN`.
fn execute(runner: &Runner, printer: &Printer, sql: &str, mut data: Option<Vec<u8>>) {
    let statements = match wireload_sql::parse_script(sql) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return;
        }
    };
    let last = statements.len().saturating_sub(1);
    for (i, parsed) in statements.into_iter().enumerate() {
        let started = Instant::now();
        let data = if i == last { data.take() } else { None };
        let result = match (parsed.statement, data) {
            (wireload_sql::Statement::CopyFrom(copy), Some(data)) => {
                let source = wireload_load::Source::Bytes {
                    name: "<stdin>".into(),
                    data: data.into(),
                };
                runner.copy_from_client(*copy, source)
            }
            (statement, _) => runner.run_statement(statement),
        };
        let elapsed = started.elapsed().as_secs_f64();
        match result {
            Ok(output) => {
                if let Err(e) = printer.print(&output) {
                    eprintln!("error: {e}");
                }
                println!("Time: {elapsed:.3} s");
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                return;
            }
        }
    }
}

fn list_tables(runner: &Runner) -> String {
    let catalog = runner.catalog();
    let rows: Vec<Vec<String>> = catalog
        .table_names()
        .into_iter()
        .filter_map(|name| catalog.table(&name))
        .map(|t| {
            vec![
                t.name().to_string(),
                t.def().schema.columns.len().to_string(),
                t.snapshot().num_rows().to_string(),
            ]
        })
        .collect();
    if rows.is_empty() {
        return "no tables".to_string();
    }
    render::text_table(&["table", "columns", "rows"], rows, &[1, 2])
}

fn describe(runner: &Runner, name: &str) -> Option<String> {
    let catalog = runner.catalog();
    let unquoted = name.strip_prefix('"').and_then(|n| n.strip_suffix('"'));
    let table = match unquoted {
        Some(exact) => catalog.table(&exact.replace("\"\"", "\"")),
        None => catalog
            .table(name)
            .or_else(|| catalog.table(&name.to_lowercase())),
    }?;
    let snapshot = table.snapshot();
    let rows = table
        .def()
        .schema
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            vec![
                c.name.clone(),
                c.ty.to_string(),
                if c.nullable { "" } else { "NOT NULL" }.to_string(),
                snapshot.storage_label(i),
            ]
        })
        .collect();
    let rows_text = format!("table \"{}\", {} rows", table.name(), snapshot.num_rows());
    let mut out = format!(
        "{rows_text}\n{}",
        render::text_table(&["column", "type", "null", "storage"], rows, &[])
    );
    if !snapshot.indexes.is_empty() {
        let schema = &table.def().schema;
        let ix_rows = snapshot
            .indexes
            .iter()
            .map(|ix| {
                let what = if ix.def.primary {
                    "PRIMARY KEY"
                } else if ix.def.unique {
                    "UNIQUE"
                } else {
                    ""
                };
                vec![
                    ix.def.name.clone(),
                    format!("({})", ix.def.column_names(schema).join(", ")),
                    what.to_string(),
                    ix.def.kind.to_string(),
                    ix.index.len().to_string(),
                    format!("{:.1}", ix.index.heap_bytes() as f64 / 1e6),
                ]
            })
            .collect();
        out.push_str(&format!(
            "\n{}",
            render::text_table(
                &["index", "columns", "", "using", "keys", "MB"],
                ix_rows,
                &[4, 5],
            )
        ));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_commands() {
        assert_eq!(command("\\q"), Command::Quit);
        assert_eq!(command(" exit "), Command::Quit);
        assert_eq!(command(".quit"), Command::Quit);
        assert_eq!(command("\\d"), Command::ListTables);
        assert_eq!(command("\\d  lineitem "), Command::Describe("lineitem"));
        assert_eq!(command("\\x"), Command::Unknown("\\x"));
        assert_eq!(command("select 1;"), Command::Sql);
        assert_eq!(command("exited;"), Command::Sql);
    }
}
