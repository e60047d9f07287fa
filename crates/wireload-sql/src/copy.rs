//! `COPY table [(columns)] FROM 'path' [WITH] (options)` and
//! `COPY {table [(columns)] | (query)} TO 'path' [WITH] (options)`: parsing into load and
//! unload options.
//!
//! Both PostgreSQL forms are accepted: the option list `WITH (FORMAT csv, DELIMITER '|')`
//! and the older keyword form `DELIMITER '|' CSV HEADER`. Formats: `csv` (default), `arrow`
//! (Arrow IPC file) and `parquet`. A CSV load runs on the CPU loader (`ENGINE cpu`, the
//! default) or on an NVIDIA GPU (`ENGINE gpu`).

use datafusion::sql::sqlparser::ast::Query;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;
use wireload_load::{Dialect, Encoding, LoadOptions, MergeStrategy, OnError, ScanMode, Schedule};
use wireload_sniff::SniffOptions;
use wireload_unload::ipc::IpcCompression;
use wireload_unload::parquet::ParquetCompression;

use crate::ddl::table_name;
use crate::error::SqlError;
use crate::parse::{Statement, expected, is_word};
use wireload_types::sql::ident_name;
use wireload_types::{DateTimeFormat, Formats};

/// A parsed `COPY ... FROM`.
#[derive(Debug, Clone)]
pub struct CopyFrom {
    /// Target table (normalized name).
    pub table: String,
    /// The column list, when given (normalized names).
    pub columns: Option<Vec<String>>,
    /// The file to read, or the client (`FROM STDIN`).
    pub path: CopyPath,
    /// How to read it.
    pub format: InputFormat,
    /// `AUTO`: detect what the options leave open (dialect, header) from the file, and
    /// create the table from the column types inferred when it does not exist.
    pub detect: Option<SniffOptions>,
}

/// Where a COPY reads or writes: a file of the database's machine, or the client's
/// connection (`FROM STDIN`, `TO STDOUT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyPath {
    /// A file, by the path written in the statement.
    File(String),
    /// The client: the data travels over the connection (`STDIN` or `STDOUT`).
    Client,
}

impl CopyPath {
    /// The file's path, or `STDIN`/`STDOUT` for the client (`stdout`: the direction).
    pub fn display(&self, stdout: bool) -> &str {
        match self {
            CopyPath::File(p) => p,
            CopyPath::Client if stdout => "STDOUT",
            CopyPath::Client => "STDIN",
        }
    }
}

/// Which loader runs a CSV load (`ENGINE cpu|gpu`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    /// The parallel CPU loader (every option applies).
    #[default]
    Cpu,
    /// The GPU loader (`wireload_gpu`); of the [`LoadOptions`] it uses the dialect and the
    /// thread count (the host pool it runs on).
    Gpu,
}

/// The format of a file to load.
#[derive(Debug, Clone)]
pub enum InputFormat {
    /// CSV with these options, loaded by `engine`.
    Csv {
        /// dialect, scan mode, merge, chunk size, threads (boxed: the other variants are
        /// small)
        options: Box<LoadOptions>,
        /// the loader that runs it
        engine: Engine,
    },
    /// An Arrow IPC file.
    Arrow {
        /// worker threads (None: the database's)
        threads: Option<usize>,
    },
    /// A Parquet file.
    Parquet {
        /// worker threads (None: the database's)
        threads: Option<usize>,
    },
}

/// A parsed `COPY ... TO`.
#[derive(Debug, Clone)]
pub struct CopyTo {
    /// What to unload.
    pub source: CopySource,
    /// The file to write, or the client (`TO STDOUT`).
    pub path: CopyPath,
    /// How to write it.
    pub format: OutputFormat,
    /// Worker threads (None: the database's).
    pub threads: Option<usize>,
}

/// The rows a `COPY ... TO` writes.
#[derive(Debug, Clone)]
pub enum CopySource {
    /// A table, optionally only some columns.
    Table {
        /// table name (normalized)
        table: String,
        /// column list (normalized names), when given
        columns: Option<Vec<String>>,
    },
    /// The result of a query.
    Query(Box<Query>),
}

/// The format of an unloaded file.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputFormat {
    /// CSV in this dialect.
    Csv(Dialect),
    /// Arrow IPC file with this buffer compression.
    Arrow(IpcCompression),
    /// Parquet with this compression.
    Parquet(ParquetCompression),
}

impl OutputFormat {
    /// The format's name as written in `FORMAT`.
    pub fn name(&self) -> &'static str {
        match self {
            OutputFormat::Csv(_) => "csv",
            OutputFormat::Arrow(_) => "arrow",
            OutputFormat::Parquet(_) => "parquet",
        }
    }
}

/// `options` with the default memory budget (a fraction of the memory available now)
/// unless `MEMORY_LIMIT` gave one: a load that would take more memory than the machine
/// has fails cleanly instead of being killed.
pub(crate) fn with_default_budget(mut options: LoadOptions) -> LoadOptions {
    if options.memory_budget.is_none() {
        options.memory_budget =
            Some(wireload_load::default_memory_budget()).filter(|&b| b < u64::MAX);
    }
    options
}

/// How `read_csv(...)` and `SELECT ... FROM 'file'` read: the load options, what the
/// sniffer keeps, and the columns when given (`schema => 'a INT, b TEXT'`).
#[derive(Debug, Clone, Default)]
pub struct ReadSpec {
    /// Dialect and policies of the load (the sniffer's dialect replaces what it detects).
    pub options: LoadOptions,
    /// The dialect options given, kept by the sniffer.
    pub detect: SniffOptions,
    /// The columns, when given: no type inference then.
    pub schema: Option<wireload_types::TableSchema>,
    /// The only columns a statement reads (lower-case names), when it does not read all:
    /// the others are not deserialized (projection pushdown).
    pub project: Option<std::collections::HashSet<String>>,
    /// Add a last column `filename`, the file each row comes from (`filename => true`).
    pub filename: bool,
}

/// The [`ReadSpec`] of `read_csv`'s named arguments (name lowercase, value as text; None:
/// a flag without value): COPY's CSV options, plus DuckDB's names `delim`, `sep`,
/// `nullstr`, `ignore_errors` and `schema`/`columns`.
pub fn read_spec(args: Vec<(String, Option<String>)>) -> Result<ReadSpec, SqlError> {
    let mut opts = OptionSet::default();
    let mut schema = None;
    let mut filename = false;
    for (name, value) in args {
        let value = value.map(|text| OptionValue { text });
        match name.as_str() {
            "filename" => {
                filename = match &value {
                    Some(v) => parse_bool("FILENAME", &v.text)?,
                    None => true,
                }
            }
            "delim" | "sep" => opts.set("delimiter", value)?,
            "nullstr" => opts.set("null", value)?,
            "ignore_errors" => {
                let on = match &value {
                    Some(v) => parse_bool("IGNORE_ERRORS", &v.text)?,
                    None => true,
                };
                let text = if on { "ignore" } else { "stop" };
                opts.set("on_error", Some(OptionValue { text: text.into() }))?;
            }
            "schema" | "columns" => {
                let Some(v) = value else {
                    return Err(invalid(
                        "read_csv: schema needs the columns, as 'a INT, b TEXT'",
                    ));
                };
                schema = Some(
                    wireload_types::sql::parse_columns(&v.text)
                        .map_err(|e| invalid(&format!("read_csv schema: {e}")))?,
                );
            }
            "auto_detect" => {}
            "format" | "merge" | "chunk_size" | "engine" | "schedule" | "compression" | "mode"
            | "auto" => {
                return Err(invalid(&format!(
                    "read_csv takes no {} argument",
                    name.to_uppercase()
                )));
            }
            other => opts.set(other, value)?,
        }
    }
    let detect = opts.sniff_options()?;
    let InputFormat::Csv { options, .. } = opts.into_input_format()? else {
        return Err(SqlError::Internal("read_csv: not a CSV read".into()));
    };
    Ok(ReadSpec {
        options: *options,
        detect,
        schema,
        project: None,
        filename,
    })
}

/// Parses the rest of a COPY statement, after `COPY`.
pub fn parse(p: &mut Parser<'_>) -> Result<Statement, SqlError> {
    if p.consume_token(&Token::LParen) {
        let query = p.parse_query()?;
        p.expect_token(&Token::RParen)?;
        if !p.parse_keyword(Keyword::TO) {
            return Err(SqlError::Syntax(expected(
                "TO after COPY (query)",
                &p.peek_token(),
            )));
        }
        return parse_to(p, CopySource::Query(query));
    }
    let table = table_name(&p.parse_object_name(false)?)?;
    let columns = if p.consume_token(&Token::LParen) {
        let cols = p.parse_comma_separated(|p| {
            let id = p.parse_identifier()?;
            match id.quote_style {
                None | Some('"') => Ok(id),
                Some(_) => Err(expected("a column name", p.get_current_token())),
            }
        })?;
        p.expect_token(&Token::RParen)?;
        Some(cols.iter().map(ident_name).collect())
    } else {
        None
    };
    if p.parse_keyword(Keyword::TO) {
        return parse_to(p, CopySource::Table { table, columns });
    }
    p.expect_keyword_is(Keyword::FROM)?;
    let token = p.next_token();
    let path = match &token.token {
        Token::SingleQuotedString(s) | Token::EscapedStringLiteral(s) => CopyPath::File(s.clone()),
        t if is_word(t, "stdin") => CopyPath::Client,
        t if is_word(t, "program") => {
            return Err(not_supported("COPY ... FROM PROGRAM is not supported"));
        }
        _ => return Err(SqlError::Syntax(expected("a quoted file path", &token))),
    };
    let opts = parse_options(p)?;
    let detect = opts.detect()?;
    Ok(Statement::CopyFrom(Box::new(CopyFrom {
        table,
        columns,
        path,
        format: opts.into_input_format()?,
        detect,
    })))
}

/// The rest of `COPY source TO 'path' [WITH] (options)` after `TO`.
fn parse_to(p: &mut Parser<'_>, source: CopySource) -> Result<Statement, SqlError> {
    let token = p.next_token();
    let path = match &token.token {
        Token::SingleQuotedString(s) | Token::EscapedStringLiteral(s) => CopyPath::File(s.clone()),
        t if is_word(t, "stdout") => CopyPath::Client,
        t if is_word(t, "program") => {
            return Err(not_supported("COPY ... TO PROGRAM is not supported"));
        }
        _ => return Err(SqlError::Syntax(expected("a quoted file path", &token))),
    };
    let opts = parse_options(p)?;
    let threads = opts.threads()?;
    Ok(Statement::CopyTo(CopyTo {
        source,
        path,
        format: opts.into_output_format()?,
        threads,
    }))
}

/// True at the end of the statement (`;` or the end of the script).
fn at_end(p: &Parser<'_>) -> bool {
    matches!(p.peek_token_ref().token, Token::SemiColon | Token::EOF)
}

/// `[WITH] (options)` or the legacy keyword options, up to the end of the statement.
fn parse_options(p: &mut Parser<'_>) -> Result<OptionSet, SqlError> {
    let mut opts = OptionSet::default();
    let _with = p.parse_keyword(Keyword::WITH);
    if p.consume_token(&Token::LParen) {
        parse_option_list(p, &mut opts)?;
    } else {
        parse_legacy_options(p, &mut opts)?;
    }
    if !at_end(p) {
        return Err(SqlError::Syntax(expected(
            "the end of the COPY statement",
            &p.peek_token(),
        )));
    }
    Ok(opts)
}

/// An option value that cannot be used (`DELIMITER ',,'`, `THREADS 0`...).
fn invalid(msg: &str) -> SqlError {
    SqlError::InvalidOption(msg.to_string())
}

/// Something COPY does not do (`FROM STDIN`, `FORMAT binary`...).
fn not_supported(msg: &str) -> SqlError {
    SqlError::NotSupported(msg.to_string())
}

/// One option's value as written.
#[derive(Debug, Clone)]
struct OptionValue {
    text: String,
}

/// The options given, each at most once.
#[derive(Debug, Default)]
struct OptionSet {
    seen: Vec<String>,
    format: Option<OptionValue>,
    delimiter: Option<OptionValue>,
    header: Option<OptionValue>,
    null: Option<OptionValue>,
    quote: Option<OptionValue>,
    escape: Option<OptionValue>,
    mode: Option<OptionValue>,
    merge: Option<OptionValue>,
    chunk_size: Option<OptionValue>,
    threads: Option<OptionValue>,
    encoding: Option<OptionValue>,
    compression: Option<OptionValue>,
    engine: Option<OptionValue>,
    schedule: Option<OptionValue>,
    auto: Option<OptionValue>,
    on_error: Option<OptionValue>,
    reject_limit: Option<OptionValue>,
    max_line_size: Option<OptionValue>,
    memory_limit: Option<OptionValue>,
    dateformat: Option<OptionValue>,
    timestampformat: Option<OptionValue>,
}

const KNOWN_OPTIONS: &str = "FORMAT, DELIMITER, HEADER, NULL, QUOTE, ESCAPE, MODE, MERGE, \
     CHUNK_SIZE, THREADS, ENCODING, COMPRESSION, ENGINE, SCHEDULE, AUTO, ON_ERROR, REJECT_LIMIT, \
     MAX_LINE_SIZE, MEMORY_LIMIT, DATEFORMAT, TIMESTAMPFORMAT";

/// Options that only CSV reads or writes.
const CSV_OPTIONS: [&str; 16] = [
    "auto",
    "dateformat",
    "timestampformat",
    "max_line_size",
    "memory_limit",
    "on_error",
    "reject_limit",
    "delimiter",
    "header",
    "null",
    "quote",
    "escape",
    "mode",
    "chunk_size",
    "encoding",
    "engine",
];

/// The file formats COPY knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Csv,
    Arrow,
    Parquet,
}

impl OptionSet {
    /// Records option `name` (lowercase) with `value` (None: given without a value).
    fn set(&mut self, name: &str, value: Option<OptionValue>) -> Result<(), SqlError> {
        // DuckDB spells them both ways
        let name = match name {
            "date_format" => "dateformat",
            "timestamp_format" => "timestampformat",
            other => other,
        };
        if self.seen.iter().any(|s| s == name) {
            return Err(invalid(&format!(
                "COPY option {} is given more than once",
                name.to_uppercase()
            )));
        }
        let slot = match name {
            "format" => &mut self.format,
            "delimiter" => &mut self.delimiter,
            "header" => &mut self.header,
            "null" => &mut self.null,
            "quote" => &mut self.quote,
            "escape" => &mut self.escape,
            "mode" => &mut self.mode,
            "merge" => &mut self.merge,
            "chunk_size" => &mut self.chunk_size,
            "threads" => &mut self.threads,
            "encoding" => &mut self.encoding,
            "compression" => &mut self.compression,
            "engine" => &mut self.engine,
            "schedule" => &mut self.schedule,
            "auto" => &mut self.auto,
            "on_error" => &mut self.on_error,
            "reject_limit" => &mut self.reject_limit,
            "max_line_size" => &mut self.max_line_size,
            "memory_limit" => &mut self.memory_limit,
            "dateformat" => &mut self.dateformat,
            "timestampformat" => &mut self.timestampformat,
            "binary" => return Err(binary_unsupported()),
            other => {
                return Err(invalid(&format!(
                    "unknown COPY option {} (known options: {KNOWN_OPTIONS})",
                    other.to_uppercase()
                )));
            }
        };
        let value = match (name, value) {
            ("header" | "auto", None) => OptionValue {
                text: "true".into(),
            },
            (_, Some(v)) => v,
            (_, None) => {
                return Err(SqlError::InvalidOption(format!(
                    "COPY option {} needs a value",
                    name.to_uppercase()
                )));
            }
        };
        self.seen.push(name.to_string());
        *slot = Some(value);
        Ok(())
    }

    fn format(&self) -> Result<Format, SqlError> {
        let Some(f) = &self.format else {
            return Ok(Format::Csv);
        };
        match f.text.to_ascii_lowercase().as_str() {
            "csv" | "text" => Ok(Format::Csv),
            "arrow" | "ipc" | "feather" => Ok(Format::Arrow),
            "parquet" => Ok(Format::Parquet),
            "binary" => Err(binary_unsupported()),
            other => Err(not_supported(&format!(
                "COPY format {other} is not supported (csv, arrow or parquet)"
            ))),
        }
    }

    /// Options that do not apply to `format` are errors, not silently ignored.
    fn check_applicable(&self, format: Format, allowed: &[&str]) -> Result<(), SqlError> {
        if format == Format::Csv {
            return Ok(());
        }
        if let Some(bad) = self
            .seen
            .iter()
            .find(|n| CSV_OPTIONS.contains(&n.as_str()) && !allowed.contains(&n.as_str()))
        {
            return Err(invalid(&format!(
                "COPY option {} applies to FORMAT csv only",
                bad.to_uppercase()
            )));
        }
        Ok(())
    }

    fn threads(&self) -> Result<Option<usize>, SqlError> {
        self.threads
            .as_ref()
            .map(|t| {
                t.text
                    .parse()
                    .ok()
                    .filter(|&n: &usize| n > 0)
                    .ok_or_else(|| {
                        invalid(&format!(
                            "COPY THREADS must be a positive integer, got {}",
                            t.text
                        ))
                    })
            })
            .transpose()
    }

    /// `SCHEDULE deferred` (every merge in one step at the end, the default) or
    /// `interleaved` (merge steps beside chunk processing).
    fn schedule(&self) -> Result<Schedule, SqlError> {
        match &self.schedule {
            None => Ok(Schedule::Deferred),
            Some(s) => s
                .text
                .parse::<Schedule>()
                .map_err(|e| invalid(&format!("COPY SCHEDULE: {e}"))),
        }
    }

    fn engine(&self) -> Result<Engine, SqlError> {
        let Some(e) = &self.engine else {
            return Ok(Engine::Cpu);
        };
        match e.text.to_ascii_lowercase().as_str() {
            "cpu" => Ok(Engine::Cpu),
            "gpu" => Ok(Engine::Gpu),
            _ => Err(invalid(&format!(
                "COPY ENGINE must be cpu or gpu, got {}",
                e.text
            ))),
        }
    }

    /// `ENCODING name`: the input's character encoding (UTF8 by default).
    fn encoding(&self) -> Result<Encoding, SqlError> {
        match &self.encoding {
            None => Ok(Encoding::Utf8),
            Some(e) => e
                .text
                .parse::<Encoding>()
                .map_err(|m| invalid(&format!("COPY ENCODING: {m}"))),
        }
    }

    /// `DATEFORMAT` and `TIMESTAMPFORMAT`.
    fn formats(&self) -> Result<Formats, SqlError> {
        let read = |v: &Option<OptionValue>, name: &str| match v {
            None => Ok(None),
            Some(v) => v
                .text
                .parse::<DateTimeFormat>()
                .map(Some)
                .map_err(|e| invalid(&format!("COPY {name}: {e}"))),
        };
        Ok(Formats {
            date: read(&self.dateformat, "DATEFORMAT")?,
            timestamp: read(&self.timestampformat, "TIMESTAMPFORMAT")?,
        })
    }

    fn dialect(&self) -> Result<Dialect, SqlError> {
        let mut dialect = Dialect::default();
        if let Some(d) = &self.delimiter {
            dialect.delimiter = single_byte("DELIMITER", &d.text)?
                .ok_or_else(|| invalid("COPY DELIMITER cannot be empty"))?;
        }
        if let Some(h) = &self.header {
            dialect.header = parse_bool("HEADER", &h.text)?;
        }
        if let Some(n) = &self.null {
            dialect.null = n.text.as_bytes().to_vec();
        }
        if let Some(q) = &self.quote {
            dialect.quote = single_byte("QUOTE", &q.text)?;
        }
        dialect.escape = match &self.escape {
            Some(e) => {
                let esc = single_byte("ESCAPE", &e.text)?;
                if esc.is_some() && dialect.quote.is_none() {
                    return Err(invalid(
                        "COPY ESCAPE cannot be used when quoting is disabled (QUOTE '')",
                    ));
                }
                esc
            }
            None => dialect.quote,
        };
        dialect
            .validate()
            .map_err(|e| invalid(&format!("invalid COPY options: {e}")))?;
        Ok(dialect)
    }

    fn into_input_format(self) -> Result<InputFormat, SqlError> {
        let format = self.format()?;
        if let Some(c) = &self.compression {
            return Err(invalid(&format!(
                "COPY ... FROM takes no COMPRESSION (got {}): it is read from the file",
                c.text
            )));
        }
        self.check_applicable(format, &[])?;
        let schedule = self.schedule()?;
        match format {
            Format::Arrow | Format::Parquet => {
                if schedule == Schedule::Interleaved {
                    return Err(invalid(
                        "COPY SCHEDULE interleaved applies to FORMAT csv: an Arrow or Parquet \
                         file is appended in one merge step",
                    ));
                }
                if self.merge.is_some() {
                    return Err(invalid("COPY option MERGE applies to FORMAT csv only"));
                }
                let threads = self.threads()?;
                return Ok(if format == Format::Arrow {
                    InputFormat::Arrow { threads }
                } else {
                    InputFormat::Parquet { threads }
                });
            }
            Format::Csv => {}
        }
        let engine = self.engine()?;
        if engine == Engine::Gpu {
            for (given, name, why) in [
                (
                    &self.mode,
                    "MODE",
                    "ENGINE gpu always reads RFC 4180 quoting, newlines in quotes included",
                ),
                (
                    &self.merge,
                    "MERGE",
                    "ENGINE gpu appends what it loaded in one step",
                ),
                (
                    &self.chunk_size,
                    "CHUNK_SIZE",
                    "ENGINE gpu cuts the input into partitions of its own",
                ),
                (
                    &self.schedule,
                    "SCHEDULE",
                    "ENGINE gpu merges once, after the device has parsed everything",
                ),
                (
                    &self.on_error,
                    "ON_ERROR",
                    "ENGINE gpu stops at the first bad record",
                ),
                (&self.encoding, "ENCODING", "ENGINE gpu reads UTF-8 input"),
                (&self.dateformat, "DATEFORMAT", "ENGINE gpu reads ISO dates"),
                (
                    &self.timestampformat,
                    "TIMESTAMPFORMAT",
                    "ENGINE gpu reads ISO timestamps",
                ),
            ] {
                if given.is_some() {
                    return Err(invalid(&format!(
                        "COPY option {name} applies to ENGINE cpu: {why}"
                    )));
                }
            }
        }
        let (on_error, reject_limit) = self.error_policy()?;
        let mut opts = LoadOptions {
            dialect: self.dialect()?,
            threads: self.threads()?,
            schedule,
            on_error,
            reject_limit,
            encoding: self.encoding()?,
            max_line_bytes: match &self.max_line_size {
                Some(v) => Some(parse_size("MAX_LINE_SIZE", &v.text)?),
                None => None,
            },
            // None: the default, decided when the load runs (`with_default_budget`)
            memory_budget: match &self.memory_limit {
                Some(v) => Some(parse_size("MEMORY_LIMIT", &v.text)? as u64),
                None => None,
            },
            formats: self.formats()?,
            ..LoadOptions::default()
        };
        if let Some(m) = &self.mode {
            opts.mode = m
                .text
                .parse::<ScanMode>()
                .map_err(|e| invalid(&format!("COPY MODE: {e}")))?;
        }
        if let Some(m) = &self.merge {
            opts.merge = m
                .text
                .parse::<MergeStrategy>()
                .map_err(|e| invalid(&format!("COPY MERGE: {e}")))?;
        }
        if let Some(s) = &self.chunk_size {
            opts.chunk_size = Some(parse_size("CHUNK_SIZE", &s.text)?);
        }
        if opts.schedule == Schedule::Interleaved && opts.merge == MergeStrategy::Insert {
            return Err(invalid(
                "COPY SCHEDULE interleaved merges step by step: it takes MERGE chunk or copy, \
                 not insert (one chunk per partition for the whole load)",
            ));
        }
        Ok(InputFormat::Csv {
            options: Box::new(opts),
            engine,
        })
    }

    /// `AUTO`'s detection: None without it; with it, what the other options fix.
    fn detect(&self) -> Result<Option<SniffOptions>, SqlError> {
        match &self.auto {
            Some(a) if parse_bool("AUTO", &a.text)? => {
                if self.format()? != Format::Csv {
                    return Err(invalid("COPY option AUTO applies to FORMAT csv only"));
                }
                self.sniff_options().map(Some)
            }
            _ => Ok(None),
        }
    }

    /// The dialect options given, for the sniffer to keep (it detects the others).
    fn sniff_options(&self) -> Result<SniffOptions, SqlError> {
        let dialect = self.dialect()?;
        Ok(SniffOptions {
            delimiter: self.delimiter.is_some().then_some(dialect.delimiter),
            quote: self.quote.is_some().then_some(dialect.quote),
            escape: self.escape.is_some().then_some(dialect.escape),
            header: self.header.is_some().then_some(dialect.header),
            null: self.null.is_some().then(|| dialect.null.clone()),
            formats: self.formats()?,
            ..SniffOptions::default()
        })
    }

    /// `ON_ERROR stop|ignore` and `REJECT_LIMIT n` (PostgreSQL 17/18).
    fn error_policy(&self) -> Result<(OnError, Option<u64>), SqlError> {
        let on_error = match &self.on_error {
            None => OnError::Stop,
            Some(v) => v
                .text
                .parse::<OnError>()
                .map_err(|e| invalid(&format!("COPY ON_ERROR: {e}")))?,
        };
        let limit = match &self.reject_limit {
            None => None,
            Some(v) => {
                if on_error != OnError::Ignore {
                    return Err(invalid("COPY REJECT_LIMIT requires ON_ERROR ignore"));
                }
                Some(
                    v.text
                        .parse::<u64>()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| {
                            invalid(&format!(
                                "COPY REJECT_LIMIT must be a positive integer, got {}",
                                v.text
                            ))
                        })?,
                )
            }
        };
        Ok((on_error, limit))
    }

    fn into_output_format(self) -> Result<OutputFormat, SqlError> {
        let format = self.format()?;
        for (given, name) in [
            (&self.auto, "AUTO"),
            (&self.on_error, "ON_ERROR"),
            (&self.reject_limit, "REJECT_LIMIT"),
            (&self.mode, "MODE"),
            (&self.merge, "MERGE"),
            (&self.chunk_size, "CHUNK_SIZE"),
            (&self.engine, "ENGINE"),
            (&self.schedule, "SCHEDULE"),
        ] {
            if given.is_some() {
                return Err(invalid(&format!(
                    "COPY option {name} applies to COPY ... FROM only"
                )));
            }
        }
        self.check_applicable(format, &[])?;
        if self.encoding()? != Encoding::Utf8 {
            return Err(not_supported(
                "COPY ... TO writes UTF-8 only (ENCODING utf8)",
            ));
        }
        let compression = self
            .compression
            .as_ref()
            .map(|c| c.text.to_ascii_lowercase());
        let bad_compression = |c: &str, known: &str| {
            invalid(&format!(
                "COPY COMPRESSION {c} is not supported for FORMAT {} ({known})",
                match format {
                    Format::Csv => "csv",
                    Format::Arrow => "arrow",
                    Format::Parquet => "parquet",
                }
            ))
        };
        Ok(match format {
            Format::Csv => {
                if let Some(c) = compression {
                    return Err(bad_compression(&c, "CSV is written uncompressed"));
                }
                OutputFormat::Csv(self.dialect()?)
            }
            Format::Arrow => OutputFormat::Arrow(match compression.as_deref() {
                None | Some("lz4") | Some("lz4_frame") => IpcCompression::Lz4Frame,
                Some("zstd") => IpcCompression::Zstd,
                Some("none") | Some("uncompressed") => IpcCompression::None,
                Some(c) => return Err(bad_compression(c, "lz4, zstd or none")),
            }),
            Format::Parquet => OutputFormat::Parquet(match compression.as_deref() {
                None => ParquetCompression::default(),
                Some("snappy") => ParquetCompression::Snappy,
                Some("zstd") => ParquetCompression::Zstd,
                Some("lz4") | Some("lz4_raw") => ParquetCompression::Lz4Raw,
                Some("none") | Some("uncompressed") => ParquetCompression::None,
                Some(c) => return Err(bad_compression(c, "snappy, zstd, lz4 or none")),
            }),
        })
    }
}

fn binary_unsupported() -> SqlError {
    not_supported(
        "COPY format binary (PostgreSQL's binary COPY) is not supported; \
         use FORMAT csv, arrow or parquet",
    )
}

/// A one-byte option value; `''` gives None. `'\t'` (backslash, t) is accepted for a tab.
fn single_byte(option: &str, text: &str) -> Result<Option<u8>, SqlError> {
    match text.as_bytes() {
        [] => Ok(None),
        [b] if b.is_ascii() => Ok(Some(*b)),
        b"\\t" => Ok(Some(b'\t')),
        _ => Err(invalid(&format!(
            "COPY {option} must be a single one-byte character, got '{text}'"
        ))),
    }
}

fn parse_bool(option: &str, text: &str) -> Result<bool, SqlError> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "on" | "1" | "yes" => Ok(true),
        "false" | "off" | "0" | "no" => Ok(false),
        _ => Err(invalid(&format!(
            "COPY {option} requires a Boolean value (true/false/on/off), got {text}"
        ))),
    }
}

/// A byte count in `option`: `65536`, `64KiB`, `4MB`, `1 MiB`.
fn parse_size(option: &str, text: &str) -> Result<usize, SqlError> {
    byte_count(text).ok_or_else(|| {
        invalid(&format!(
            "COPY {option} must be a positive byte count such as 1048576, '64KiB' or '4MB', got {text}"
        ))
    })
}

/// A positive byte count: `65536`, `64KiB`, `4MB`, `1 MiB`, `8GB` (KB = 1000 bytes, KiB =
/// 1024 bytes); None when the text is not one.
pub fn byte_count(text: &str) -> Option<usize> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let num: usize = num.parse().ok()?;
    let factor: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        "t" | "tb" => 1_000_000_000_000,
        "tib" => 1 << 40,
        _ => return None,
    };
    num.checked_mul(factor).filter(|&n| n > 0)
}

/// The text of a value token, or None when the token cannot be a value.
fn value_of(token: &Token) -> Option<OptionValue> {
    match token {
        Token::SingleQuotedString(s) | Token::EscapedStringLiteral(s) => {
            Some(OptionValue { text: s.clone() })
        }
        Token::DollarQuotedString(s) => Some(OptionValue {
            text: s.value.clone(),
        }),
        Token::Word(w) => Some(OptionValue {
            text: w.value.clone(),
        }),
        Token::Number(n, _) => Some(OptionValue { text: n.clone() }),
        _ => None,
    }
}

/// The next token as an option value.
fn next_value(p: &mut Parser<'_>, option: &str) -> Result<OptionValue, SqlError> {
    let token = p.next_token();
    value_of(&token.token).ok_or_else(|| {
        SqlError::Syntax(expected(
            &format!("a value for {}", option.to_uppercase()),
            &token,
        ))
    })
}

/// `( name [value] [, ...] )` after the opening parenthesis.
fn parse_option_list(p: &mut Parser<'_>, opts: &mut OptionSet) -> Result<(), SqlError> {
    loop {
        let token = p.next_token();
        let name = match &token.token {
            Token::Word(w) => w.value.to_ascii_lowercase(),
            _ => return Err(SqlError::Syntax(expected("a COPY option name", &token))),
        };
        let mut value: Option<OptionValue> = None;
        while !matches!(
            p.peek_token_ref().token,
            Token::Comma | Token::RParen | Token::SemiColon | Token::EOF
        ) {
            let v = next_value(p, &name)?;
            value = Some(match value {
                None => v,
                // `CHUNK_SIZE 4 MB`: a number followed by a unit
                Some(prev) => OptionValue {
                    text: format!("{}{}", prev.text, v.text),
                },
            });
        }
        opts.set(&name, value)?;
        if p.consume_token(&Token::RParen) {
            return Ok(());
        }
        p.expect_token(&Token::Comma)?;
    }
}

/// PostgreSQL's older option syntax: `[DELIMITER [AS] 'c'] [NULL [AS] 's'] [CSV [HEADER]
/// [QUOTE [AS] 'q'] [ESCAPE [AS] 'e']]`, in any order; wireload's own options take a value too.
fn parse_legacy_options(p: &mut Parser<'_>, opts: &mut OptionSet) -> Result<(), SqlError> {
    while !at_end(p) {
        let token = p.next_token();
        let name = match &token.token {
            Token::Word(w) if w.quote_style.is_none() => w.value.to_ascii_lowercase(),
            _ => return Err(SqlError::Syntax(expected("a COPY option", &token))),
        };
        match name.as_str() {
            "csv" => opts.set("format", Some(OptionValue { text: "csv".into() }))?,
            "header" => opts.set("header", None)?,
            "binary" => opts.set("binary", None)?,
            _ => {
                let _as = p.parse_keyword(Keyword::AS);
                let v = next_value(p, &name)?;
                let v = if matches!(
                    name.as_str(),
                    "chunk_size" | "max_line_size" | "memory_limit"
                ) && matches!(p.peek_token_ref().token, Token::Word(_))
                {
                    let unit = next_value(p, &name)?;
                    OptionValue {
                        text: format!("{}{}", v.text, unit.text),
                    }
                } else {
                    v
                };
                opts.set(&name, Some(v))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_script;

    /// A `COPY ... FROM` of CSV, flattened for the assertions.
    #[derive(Debug)]
    struct CsvFrom {
        table: String,
        columns: Option<Vec<String>>,
        path: CopyPath,
        options: LoadOptions,
        engine: Engine,
    }

    fn parse_any(sql: &str) -> Result<Statement, SqlError> {
        parse_script(sql).map(|mut v| v.remove(0).statement)
    }

    fn parse(sql: &str) -> Result<CsvFrom, SqlError> {
        match parse_any(sql)? {
            Statement::CopyFrom(copy) => match *copy {
                CopyFrom {
                    table,
                    columns,
                    path,
                    format: InputFormat::Csv { options, engine },
                    ..
                } => Ok(CsvFrom {
                    table,
                    columns,
                    path,
                    options: *options,
                    engine,
                }),
                other => panic!("not a CSV COPY FROM: {other:?}"),
            },
            other => panic!("not a CSV COPY FROM: {other:?}"),
        }
    }

    fn parse_to(sql: &str) -> CopyTo {
        match parse_any(sql).unwrap() {
            Statement::CopyTo(to) => to,
            other => panic!("not a COPY TO: {other:?}"),
        }
    }

    fn err(sql: &str) -> String {
        parse_any(sql).unwrap_err().to_string()
    }

    #[test]
    fn minimal_copy_uses_csv_defaults() {
        let c = parse("COPY t FROM '/tmp/x.csv'").unwrap();
        assert_eq!(c.table, "t");
        assert_eq!(c.path, CopyPath::File("/tmp/x.csv".into()));
        assert!(c.columns.is_none());
        assert_eq!(c.options.dialect, Dialect::default());
        assert_eq!(c.options.mode, ScanMode::Safe);
        assert_eq!(c.options.merge, MergeStrategy::Chunk);
        assert_eq!(c.options.chunk_size, None);
        assert_eq!(c.options.threads, None);
        assert_eq!(c.engine, Engine::Cpu);
    }

    #[test]
    fn engine_option() {
        let engine = |sql: &str| parse(sql).unwrap().engine;
        assert_eq!(engine("COPY t FROM 'f' WITH (FORMAT csv)"), Engine::Cpu);
        assert_eq!(engine("COPY t FROM 'f' WITH (ENGINE cpu)"), Engine::Cpu);
        assert_eq!(engine("COPY t FROM 'f' WITH (ENGINE gpu)"), Engine::Gpu);
        assert_eq!(engine("COPY t FROM 'f' WITH (engine GPU)"), Engine::Gpu);
        assert_eq!(engine("COPY t FROM 'f' (ENGINE 'Gpu')"), Engine::Gpu);
        assert_eq!(
            engine("COPY t FROM 'f' (ENGINE CPU, MODE fast)"),
            Engine::Cpu
        );
        // the legacy keyword form takes it too
        assert_eq!(
            engine("COPY t FROM 'f' DELIMITER '|' CSV ENGINE gpu"),
            Engine::Gpu
        );
        // the dialect and THREADS apply to ENGINE gpu
        let c = parse(
            "COPY t FROM 'f' WITH (FORMAT csv, DELIMITER '|', HEADER, NULL 'NA', QUOTE '''', \
             ESCAPE '\\', THREADS 3, ENGINE gpu)",
        )
        .unwrap();
        assert_eq!(c.engine, Engine::Gpu);
        let d = &c.options.dialect;
        assert_eq!(
            (d.delimiter, d.header, d.null.as_slice(), d.quote, d.escape),
            (b'|', true, &b"NA"[..], Some(b'\''), Some(b'\\'))
        );
        assert_eq!(c.options.threads, Some(3));
    }

    #[test]
    fn engine_errors_are_clear() {
        let msg = err("COPY t FROM 'f' WITH (ENGINE tpu)");
        assert_eq!(msg, "COPY ENGINE must be cpu or gpu, got tpu");
        assert!(err("COPY t FROM 'f' WITH (ENGINE)").contains("ENGINE needs a value"));
        assert!(err("COPY t FROM 'f' WITH (ENGINE gpu, ENGINE cpu)").contains("more than once"));
        assert_eq!(
            err("COPY t FROM 'f' WITH (ENGINE gpu, MODE safe)"),
            "COPY option MODE applies to ENGINE cpu: ENGINE gpu always reads RFC 4180 quoting, \
             newlines in quotes included"
        );
        assert_eq!(
            err("COPY t FROM 'f' WITH (MODE fast, ENGINE GPU)"),
            "COPY option MODE applies to ENGINE cpu: ENGINE gpu always reads RFC 4180 quoting, \
             newlines in quotes included"
        );
        assert!(
            err("COPY t FROM 'f' WITH (ENGINE gpu, MERGE copy)")
                .starts_with("COPY option MERGE applies to ENGINE cpu: ")
        );
        assert!(
            err("COPY t FROM 'f' WITH (ENGINE gpu, CHUNK_SIZE '4MB')")
                .starts_with("COPY option CHUNK_SIZE applies to ENGINE cpu: ")
        );
        assert!(
            err("COPY t FROM 'f' CSV ENGINE gpu MODE fast")
                .starts_with("COPY option MODE applies to ENGINE cpu")
        );
        assert_eq!(
            err("COPY t FROM 'f.arrow' WITH (FORMAT arrow, ENGINE gpu)"),
            "COPY option ENGINE applies to FORMAT csv only"
        );
        assert_eq!(
            err("COPY t FROM 'f.parquet' WITH (FORMAT parquet, ENGINE cpu)"),
            "COPY option ENGINE applies to FORMAT csv only"
        );
        assert_eq!(
            err("COPY t TO 'f' WITH (ENGINE gpu)"),
            "COPY option ENGINE applies to COPY ... FROM only"
        );
        assert_eq!(
            err("COPY (SELECT 1) TO 'f' WITH (FORMAT arrow, ENGINE cpu)"),
            "COPY option ENGINE applies to COPY ... FROM only"
        );
        assert!(
            err("COPY t FROM 'f' WITH (BOGUS 1)")
                .contains("MAX_LINE_SIZE, MEMORY_LIMIT, DATEFORMAT, TIMESTAMPFORMAT)")
        );
    }

    #[test]
    fn option_list_sets_every_option() {
        let c = parse(
            "copy Lineitem (A, \"B\") from 'f.tbl' with (format CSV, delimiter '|', HEADER, null 'NA', \
             quote '''', escape '\\', mode fast, merge copy, chunk_size 4096, threads 3)",
        )
        .unwrap();
        assert_eq!(c.table, "lineitem");
        assert_eq!(
            c.columns.as_deref(),
            Some(&["a".to_string(), "B".to_string()][..])
        );
        let d = &c.options.dialect;
        assert_eq!(d.delimiter, b'|');
        assert!(d.header);
        assert_eq!(d.null, b"NA");
        assert_eq!(d.quote, Some(b'\''));
        assert_eq!(d.escape, Some(b'\\'));
        assert_eq!(c.options.mode, ScanMode::Fast);
        assert_eq!(c.options.merge, MergeStrategy::Copy);
        assert_eq!(c.options.chunk_size, Some(4096));
        assert_eq!(c.options.threads, Some(3));
    }

    #[test]
    fn with_is_optional_and_header_takes_booleans() {
        let c = parse("COPY t FROM 'f' (HEADER false, DELIMITER ';')").unwrap();
        assert!(!c.options.dialect.header);
        assert_eq!(c.options.dialect.delimiter, b';');
        for (v, want) in [
            ("on", true),
            ("off", false),
            ("true", true),
            ("FALSE", false),
        ] {
            let c = parse(&format!("COPY t FROM 'f' WITH (HEADER {v})")).unwrap();
            assert_eq!(c.options.dialect.header, want, "{v}");
        }
        assert!(err("COPY t FROM 'f' WITH (HEADER maybe)").contains("Boolean"));
    }

    #[test]
    fn quote_and_escape_can_be_disabled() {
        let c = parse("COPY t FROM 'f' WITH (QUOTE '')").unwrap();
        assert_eq!(c.options.dialect.quote, None);
        assert_eq!(c.options.dialect.escape, None);
        let c = parse("COPY t FROM 'f' WITH (ESCAPE '')").unwrap();
        assert_eq!(c.options.dialect.quote, Some(b'"'));
        assert_eq!(c.options.dialect.escape, None);
        let c = parse("COPY t FROM 'f' WITH (QUOTE '@')").unwrap();
        assert_eq!(
            c.options.dialect.escape,
            Some(b'@'),
            "the escape defaults to the quote"
        );
        assert!(
            err("COPY t FROM 'f' WITH (QUOTE '', ESCAPE '\\')").contains("quoting is disabled")
        );
    }

    #[test]
    fn tab_delimiters() {
        assert_eq!(
            parse("COPY t FROM 'f' WITH (DELIMITER E'\\t')")
                .unwrap()
                .options
                .dialect
                .delimiter,
            b'\t'
        );
        assert_eq!(
            parse("COPY t FROM 'f' WITH (DELIMITER '\\t')")
                .unwrap()
                .options
                .dialect
                .delimiter,
            b'\t'
        );
    }

    #[test]
    fn chunk_sizes_with_units() {
        let size = |s: &str| {
            parse(&format!("COPY t FROM 'f' WITH (CHUNK_SIZE {s})"))
                .unwrap()
                .options
                .chunk_size
        };
        assert_eq!(size("'4MB'"), Some(4_000_000));
        assert_eq!(size("'64KiB'"), Some(65_536));
        assert_eq!(size("'1 MiB'"), Some(1 << 20));
        assert_eq!(size("1"), Some(1));
        assert_eq!(size("2 GiB"), Some(2 << 30));
        assert!(err("COPY t FROM 'f' WITH (CHUNK_SIZE 0)").contains("CHUNK_SIZE"));
        assert!(err("COPY t FROM 'f' WITH (CHUNK_SIZE '4XB')").contains("CHUNK_SIZE"));
    }

    #[test]
    fn legacy_form() {
        let c = parse("COPY t FROM 'f' DELIMITER '|' CSV HEADER").unwrap();
        assert_eq!(c.options.dialect.delimiter, b'|');
        assert!(c.options.dialect.header);
        let c = parse(
            "COPY t FROM 'f' WITH DELIMITER AS ';' NULL AS 'x' CSV QUOTE AS '''' ESCAPE AS '\\'",
        )
        .unwrap();
        let d = &c.options.dialect;
        assert_eq!(
            (d.delimiter, d.null.as_slice(), d.quote, d.escape),
            (b';', &b"x"[..], Some(b'\''), Some(b'\\'))
        );
        let c = parse("COPY t FROM 'f' CSV").unwrap();
        assert!(!c.options.dialect.header);
    }

    #[test]
    fn option_errors_are_clear() {
        assert!(err("COPY t FROM 'f' WITH (FORMAT orc)").contains("csv, arrow or parquet"));
        assert!(err("COPY t FROM 'f' WITH (FORMAT binary)").contains("arrow or parquet"));
        assert!(err("COPY t FROM 'f' BINARY").contains("arrow or parquet"));
        assert!(err("COPY t FROM 'f' WITH (DELIMITER ',,')").contains("single one-byte"));
        assert!(err("COPY t FROM 'f' WITH (DELIMITER 'é')").contains("single one-byte"));
        assert!(err("COPY t FROM 'f' WITH (DELIMITER '')").contains("empty"));
        assert!(
            err("COPY t FROM 'f' WITH (DELIMITER ',', QUOTE ',')").contains("invalid COPY options")
        );
        assert!(err("COPY t FROM 'f' WITH (BOGUS 1)").contains("unknown COPY option BOGUS"));
        assert!(err("COPY t FROM 'f' WITH (MODE turbo)").contains("MODE"));
        assert!(err("COPY t FROM 'f' WITH (MERGE fancy)").contains("MERGE"));
        assert!(err("COPY t FROM 'f' WITH (THREADS 0)").contains("THREADS"));
        assert!(err("COPY t FROM 'f' WITH (NULL)").contains("needs a value"));
        assert!(err("COPY t FROM 'f' WITH (HEADER, HEADER)").contains("more than once"));
        assert!(err("COPY t FROM 'f' WITH (ENCODING 'ebcdic')").contains("unknown encoding"));
        assert_eq!(
            parse("COPY t FROM 'f' WITH (ENCODING 'latin1', MAX_LINE_SIZE '1 MiB', MEMORY_LIMIT '2GB')")
                .map(|c| (c.options.encoding, c.options.max_line_bytes, c.options.memory_budget))
                .unwrap(),
            (Encoding::Latin1, Some(1 << 20), Some(2_000_000_000))
        );
        assert!(err("COPY t TO 'f' WITH (ENCODING 'latin1')").contains("UTF-8 only"));
        assert!(err("COPY t FROM 'f' WITH (REJECT_LIMIT 3)").contains("requires ON_ERROR ignore"));
        assert!(err("COPY t FROM 'f' WITH (ON_ERROR skip)").contains("ON_ERROR"));
        assert!(err("COPY t TO 'f' WITH (ON_ERROR ignore)").contains("COPY ... FROM only"));
        assert!(parse("COPY t FROM 'f' WITH (ENCODING 'UTF-8')").is_ok());
        assert!(parse("COPY t FROM 'f' WITH (SCHEDULE deferred)").is_ok());
        assert!(parse_any("COPY t FROM 'f' WITH (FORMAT parquet, SCHEDULE DEFERRED)").is_ok());
        assert!(parse("COPY t FROM 'f' WITH (SCHEDULE Interleaved, MERGE copy)").is_ok());
        assert!(
            err("COPY t FROM 'f' WITH (SCHEDULE interleaved, MERGE insert)")
                .contains("MERGE chunk or copy")
        );
        assert!(
            err("COPY t FROM 'f' WITH (FORMAT arrow, SCHEDULE interleaved)")
                .contains("applies to FORMAT csv")
        );
        assert!(
            err("COPY t FROM 'f' WITH (ENGINE gpu, SCHEDULE deferred)")
                .contains("SCHEDULE applies to ENGINE cpu")
        );
        assert!(err("COPY t FROM 'f' WITH (SCHEDULE later)").contains("deferred or interleaved"));
        assert!(err("COPY t TO 'f' WITH (SCHEDULE deferred)").contains("COPY ... FROM only"));
    }

    #[test]
    fn statement_errors_are_clear() {
        assert_eq!(parse("COPY t FROM STDIN").unwrap().path, CopyPath::Client);
        assert_eq!(
            parse_to("COPY (SELECT 1) TO stdout WITH (FORMAT csv)").path,
            CopyPath::Client
        );
        assert!(err("COPY (SELECT 1) FROM 'f'").contains("TO after COPY (query)"));
        assert!(err("COPY (SELECT (1) TO 'f'").starts_with("syntax error"));
        assert!(err("COPY t FROM f").contains("quoted file path"));
        assert!(err("COPY t FROM 'f' WITH (HEADER) extra").contains("end of the COPY statement"));
        assert!(err("COPY t (a, 'b') FROM 'f'").contains("column name"));
        assert!(parse("COPY FROM 'f'").is_err());
        assert!(err("COPY other.t FROM 'f'").contains("schema"));
        assert_eq!(parse("COPY public.t FROM 'f'").unwrap().table, "t");
    }

    #[test]
    fn copy_to_table_and_query() {
        let to = parse_to("COPY public.t (a, b) TO '/x/t.csv' WITH (HEADER, DELIMITER '|')");
        match &to.source {
            CopySource::Table { table, columns } => {
                assert_eq!(table, "t");
                assert_eq!(
                    columns.as_deref(),
                    Some(&["a".to_string(), "b".to_string()][..])
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(to.path, CopyPath::File("/x/t.csv".into()));
        let OutputFormat::Csv(d) = &to.format else {
            panic!("{:?}", to.format)
        };
        assert!(d.header);
        assert_eq!(d.delimiter, b'|');
        let to = parse_to(
            "copy (select a, (b + 1) as c from t where s = ')' order by a) to 'q.arrow' (format arrow, threads 2)",
        );
        match &to.source {
            CopySource::Query(q) => assert_eq!(
                q.to_string(),
                "SELECT a, (b + 1) AS c FROM t WHERE s = ')' ORDER BY a"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(to.format, OutputFormat::Arrow(IpcCompression::Lz4Frame));
        assert_eq!(to.threads, Some(2));
    }

    #[test]
    fn binary_formats_and_compression() {
        let format = |sql: &str| parse_to(sql).format;
        assert_eq!(
            format("COPY t TO 'f' (FORMAT arrow, COMPRESSION zstd)"),
            OutputFormat::Arrow(IpcCompression::Zstd)
        );
        assert_eq!(
            format("COPY t TO 'f' (FORMAT arrow, COMPRESSION 'none')"),
            OutputFormat::Arrow(IpcCompression::None)
        );
        assert_eq!(
            format("COPY t TO 'f' (FORMAT parquet, COMPRESSION snappy)"),
            OutputFormat::Parquet(ParquetCompression::Snappy)
        );
        assert_eq!(
            format("COPY t TO 'f' (FORMAT parquet)"),
            OutputFormat::Parquet(ParquetCompression::default())
        );
        assert!(matches!(
            parse_any("COPY t FROM 'f.arrow' WITH (FORMAT arrow)").unwrap(),
            Statement::CopyFrom(c) if matches!(c.format, InputFormat::Arrow { threads: None })
        ));
        assert!(matches!(
            parse_any("COPY t FROM 'f.parquet' (FORMAT 'parquet', THREADS 4)").unwrap(),
            Statement::CopyFrom(c) if matches!(c.format, InputFormat::Parquet { threads: Some(4) })
        ));
        assert!(
            err("COPY t TO 'f' (FORMAT arrow, COMPRESSION gzip)").contains("lz4, zstd or none")
        );
        assert!(err("COPY t TO 'f' (COMPRESSION lz4)").contains("uncompressed"));
        assert!(err("COPY t TO 'f' (FORMAT arrow, DELIMITER '|')").contains("FORMAT csv only"));
        assert!(err("COPY t FROM 'f' (FORMAT parquet, HEADER)").contains("FORMAT csv only"));
        assert!(err("COPY t FROM 'f' (FORMAT arrow, MERGE copy)").contains("FORMAT csv only"));
        assert!(err("COPY t FROM 'f' (COMPRESSION lz4)").contains("read from the file"));
        assert!(err("COPY t TO 'f' (MODE fast)").contains("COPY ... FROM only"));
    }
}
