//! Printing statement outputs: results on standard output, load summaries where the mode wants them.

use std::io::{self, BufWriter, Write};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use wireload_sql::StatementOutput;

use crate::cli::OutputFormat;
use crate::render;

/// Where the outputs of one mode go.
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    /// Format of query results.
    pub format: OutputFormat,
    /// Load summaries on standard output (shell) instead of standard error.
    pub summary_to_stdout: bool,
    /// At most this many rows drawn in table format.
    pub table_row_limit: Option<usize>,
}

impl Printer {
    /// Prints one statement's output.
    pub fn print(&self, output: &StatementOutput) -> io::Result<()> {
        match output {
            StatementOutput::Rows { schema, batches } => self.rows(schema, batches),
            StatementOutput::Loaded(report) => self.summary(report),
            StatementOutput::Unloaded(summary) => self.summary(summary),
            StatementOutput::Done(message) => self.message(message),
            StatementOutput::Changed(change) => {
                if let Some((schema, batches)) = &change.returning {
                    self.rows(schema, batches)?;
                }
                self.message(&change.tag())
            }
        }
    }

    /// Prints a statement's message (such as `CREATE TABLE` or `INSERT 0 3`) in table format.
    fn message(&self, message: &str) -> io::Result<()> {
        if self.format == OutputFormat::Table {
            writeln!(io::stdout().lock(), "{message}")?;
        }
        Ok(())
    }

    /// Prints a load's or an unload's one-line summary.
    pub fn summary(&self, report: &dyn std::fmt::Display) -> io::Result<()> {
        if self.summary_to_stdout {
            writeln!(io::stdout().lock(), "{report}")
        } else {
            writeln!(io::stderr().lock(), "{report}")
        }
    }

    /// Prints a query result in the printer's format.
    pub fn rows(&self, schema: &SchemaRef, batches: &[RecordBatch]) -> io::Result<()> {
        let mut out = BufWriter::new(io::stdout().lock());
        match self.format {
            OutputFormat::Table => {
                let total = render::row_count(batches);
                writeln!(
                    out,
                    "{}",
                    render::table(schema, batches, self.table_row_limit)?
                )?;
                writeln!(out, "{}", render::rows_footer(total, self.table_row_limit))?;
            }
            OutputFormat::Csv => render::csv(schema, batches, &mut out)?,
            OutputFormat::Json => render::json(batches, &mut out)?,
        }
        out.flush()
    }
}
