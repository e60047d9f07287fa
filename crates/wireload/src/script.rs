//! Non-interactive scripts (`-f FILE` or SQL on standard input): the whole script is parsed
//! first (a syntax error anywhere runs nothing), then its statements run in order, each
//! result printed, stopping at the first error.

use anyhow::{Context, Result};

use crate::cli::OutputFormat;
use crate::engine::Engine;
use crate::output::Printer;

/// Runs every statement of `sql`; `name` (the file, or `<stdin>`) prefixes error messages.
pub fn run(engine: &Engine, sql: &str, name: &str) -> Result<()> {
    let printer = Printer {
        format: OutputFormat::Table,
        summary_to_stdout: false,
        table_row_limit: None,
    };
    let statements = wireload_sql::parse_script(sql).with_context(|| name.to_string())?;
    for parsed in statements {
        let line = parsed.line;
        let output = engine
            .run_statement(parsed.statement)
            .with_context(|| format!("{name}, line {line}"))?;
        printer.print(&output)?;
    }
    Ok(())
}
