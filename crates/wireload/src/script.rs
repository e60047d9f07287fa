//! Non-interactive scripts (`-f FILE` or SQL on standard input): the whole script is parsed
//! first (a syntax error anywhere runs nothing), then its statements run in order, each
//! result printed, stopping at the first error. A `COPY ... FROM STDIN` reads the lines
//! after it, up to `\.` ([`crate::inline`]).

use anyhow::{Context, Result};
use wireload_load::Source;
use wireload_sql::Statement;

use crate::cli::OutputFormat;
use crate::output::Printer;
use crate::runner::Runner;

/// Runs every statement of `sql`; `name` (the file, or `<stdin>`) prefixes error messages.
pub fn run(runner: &Runner, sql: &str, name: &str) -> Result<()> {
    let printer = Printer {
        format: OutputFormat::Table,
        summary_to_stdout: false,
        table_row_limit: None,
    };
    let mut parsed = Vec::new();
    for piece in crate::inline::split(sql) {
        let statements = wireload_sql::parse_script(&piece.sql)
            .with_context(|| format!("{name}, from line {}", piece.line))?;
        parsed.push((piece, statements));
    }
    for (piece, statements) in parsed {
        let last = statements.len().saturating_sub(1);
        for (i, p) in statements.into_iter().enumerate() {
            let line = piece.line + p.line - 1;
            let output = match (&piece.data, p.statement) {
                (Some((data, from)), Statement::CopyFrom(copy)) if i == last => {
                    let source = Source::Bytes {
                        name: format!("{name} (COPY data from line {from})"),
                        data: data.clone().into(),
                    };
                    runner.copy_from_client(*copy, source)
                }
                (_, statement) => runner.run_statement(statement),
            }
            .with_context(|| format!("{name}, line {line}"))?;
            printer.print(&output)?;
        }
    }
    Ok(())
}
