//! Non-interactive scripts (`-f FILE` or SQL on standard input): statements run in
//! order, each result printed, stopping at the first error.

use anyhow::{Context, Result};

use crate::cli::OutputFormat;
use crate::engine::Engine;
use crate::output::Printer;
use crate::statements;

/// Runs every statement of `sql`; `name` (the file, or `<stdin>`) prefixes error messages.
pub fn run(engine: &Engine, sql: &str, name: &str) -> Result<()> {
    let printer = Printer {
        format: OutputFormat::Table,
        summary_to_stdout: false,
        table_row_limit: None,
    };
    for statement in statements::split(sql) {
        let outputs = engine
            .run(statement.text)
            .with_context(|| format!("{name}, line {}", statement.line))?;
        for output in &outputs {
            printer.print(output)?;
        }
    }
    Ok(())
}
