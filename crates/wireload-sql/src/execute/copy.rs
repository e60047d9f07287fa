//! COPY FROM a file or the client, COPY TO a file or the client, and loads by API.

use crate::copy::{
    CopyFrom, CopyPath, CopySource, CopyTo, Engine, InputFormat, OutputFormat, ReadSpec,
};
use crate::error::SqlError;
use crate::parse::Statement;
use crate::roles::Privilege;
use crate::{
    BinaryFormat, Database, StatementOutput, authorize, copy, files, gate, off_runtime, unload,
};
use arrow::datatypes::SchemaRef;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast;
use std::sync::Arc;
use std::time::Instant;
use wireload_gpu::{GpuError, GpuOptions, GpuReport};
use wireload_load::{Dialect, FieldSource, Fields, LoadControl, LoadOptions, LoadReport, Source};
use wireload_storage::{StorageError, Table};

impl Database {
    pub(crate) async fn copy_from(
        &self,
        copy: CopyFrom,
        ctl: &LoadControl,
    ) -> Result<LoadReport, SqlError> {
        let path = match &copy.path {
            CopyPath::File(path) => path.clone(),
            CopyPath::Client => {
                return Err(SqlError::NotSupported(
                    "COPY ... FROM STDIN reads the data a client sends after the statement: \
                     run it from a client of `wireload serve` (psql, psycopg), or name a file"
                        .into(),
                ));
            }
        };
        if let Some(detect) = &copy.detect
            && self.table(&copy.table).is_err()
        {
            return self
                .copy_creating(copy.clone(), path, detect.clone(), ctl)
                .await;
        }
        let table = self.table(&copy.table)?;
        let fields = copy_fields(&table, copy.columns.as_deref())?;
        let (format, threads) = match copy.format {
            InputFormat::Csv {
                mut options,
                engine,
            } => {
                options.fields = fields;
                let mut sources = self
                    .file_access()
                    .sources(std::slice::from_ref(&path), COPY_FROM)?;
                if let Some(detect) = &copy.detect {
                    // AUTO into a table that exists: its columns, the file's dialect
                    let first = sources.first().cloned();
                    let (detect, encoding) = (detect.clone(), options.encoding);
                    let sniffed = off_runtime(move || match first {
                        Some(s) => files::sniff_source(&s, &detect, encoding).map(Some),
                        None => Ok(None),
                    })
                    .await?;
                    if let Some(sniffed) = sniffed {
                        if engine == Engine::Gpu && !sniffed.formats.is_iso() {
                            return Err(SqlError::NotSupported(format!(
                                "{path}: its dates are not ISO (format '{}'), and ENGINE gpu \
                                 reads ISO dates only: load it with ENGINE cpu",
                                sniffed
                                    .formats
                                    .date
                                    .or(sniffed.formats.timestamp)
                                    .expect("a format")
                            )));
                        }
                        options.dialect = sniffed.dialect;
                        options.formats = sniffed.formats;
                    }
                }
                if sources.len() == 1 {
                    let source = sources.remove(0);
                    return self
                        .load_csv(&copy.table, source, *options, engine, ctl)
                        .await;
                }
                if engine == Engine::Gpu {
                    return Err(SqlError::NotSupported(
                        "COPY ... (ENGINE gpu) loads one file; name one file, or load many with ENGINE cpu"
                            .into(),
                    ));
                }
                return self.load_sources(&copy.table, sources, *options, ctl).await;
            }
            InputFormat::Arrow { .. } | InputFormat::Parquet { .. } if fields.is_some() => {
                return Err(SqlError::NotSupported(
                    "a COPY column list applies to FORMAT csv: an Arrow or Parquet file names \
                     its columns"
                        .into(),
                ));
            }
            InputFormat::Arrow { threads } => (BinaryFormat::Arrow, threads),
            InputFormat::Parquet { threads } => (BinaryFormat::Parquet, threads),
        };
        let file = self
            .file_access()
            .read(&path, COPY_FROM, gate::Kind::File)?;
        let ctl = ctl.clone();
        self.run_blocking(threads, move || {
            unload::load_binary(&table, &file.path(), file.shown(), format, &ctl)
                .map_err(|e| file.unmask(e))
        })
        .await
    }

    /// `COPY t FROM 'f' (AUTO)` into a table that does not exist: the table is created
    /// with the columns inferred from the file (the header's names, spelling kept) and
    /// attached once it is filled.
    pub(crate) async fn copy_creating(
        &self,
        copy: CopyFrom,
        path: String,
        detect: wireload_sniff::SniffOptions,
        ctl: &LoadControl,
    ) -> Result<LoadReport, SqlError> {
        if self.in_transaction() {
            return Err(SqlError::NotSupported(
                "COPY ... (AUTO) creating a table is not supported inside a transaction yet".into(),
            ));
        }
        let InputFormat::Csv { options, engine } = copy.format else {
            return Err(SqlError::InvalidOption(
                "COPY option AUTO applies to FORMAT csv only".into(),
            ));
        };
        if engine == Engine::Gpu {
            return Err(SqlError::NotSupported(
                "COPY ... (AUTO) creating a table runs on ENGINE cpu".into(),
            ));
        }
        let schema = match &copy.columns {
            Some(_) => {
                return Err(SqlError::NotSupported(
                    "COPY ... (AUTO) creating a table takes no column list: the columns come from the file"
                        .into(),
                ));
            }
            None => None,
        };
        let spec = ReadSpec {
            options: *options,
            detect,
            schema,
            project: None,
            filename: false,
        };
        let sources = self
            .file_access()
            .sources(std::slice::from_ref(&path), COPY_FROM)?;
        self.create_from_sources(&copy.table, sources, spec, ctl)
            .await
    }

    /// Creates table `name` from CSV `sources`: the dialect `spec` leaves open is detected,
    /// the columns are `spec.schema` or inferred (a value the samples did not show widens
    /// its column and the load runs again, with a notice); the table is attached once it
    /// is filled, so no one sees it half made.
    pub async fn create_from_sources(
        &self,
        name: &str,
        sources: Vec<Source>,
        spec: ReadSpec,
        ctl: &LoadControl,
    ) -> Result<LoadReport, SqlError> {
        if self.catalog.table(name).is_some() || self.schema.has_other(name) {
            return Err(SqlError::Storage(StorageError::TableExists(
                name.to_string(),
            )));
        }
        let spec_had_no_schema = spec.schema.is_none();
        let (table, ctl2) = (name.to_string(), ctl.clone());
        let loaded = self
            .run_blocking(spec.options.threads, move || {
                files::load_inferred(&table, &sources, &spec, &ctl2)
            })
            .await?;
        self.catalog.attach(vec![Arc::clone(&loaded.table)])?;
        if spec_had_no_schema {
            self.mark_header_named(name);
        }
        self.after_load(&loaded.report, &loaded.replanned);
        Ok(loaded.report)
    }

    /// Loads many CSV `sources` into `table` in one atomic step: a bad record in any of
    /// them leaves the table as it was.
    pub async fn load_sources(
        &self,
        table: &str,
        sources: Vec<Source>,
        mut options: LoadOptions,
        ctl: &LoadControl,
    ) -> Result<LoadReport, SqlError> {
        let target = self.table(table)?;
        let name = target.name().to_string();
        let ctl = ctl.clone();
        options.threads = Some(options.threads.unwrap_or(self.threads));
        let options = copy::with_default_budget(options);
        let report = off_runtime(move || {
            wireload_load::load_files(&target, &sources, &options, &ctl)
                .map_err(|error| SqlError::Load { table: name, error })
        })
        .await?;
        self.after_load(&report, &[]);
        Ok(report)
    }

    /// Runs a `COPY ... FROM STDIN` (CSV) whose data the client streams as `source`: the
    /// load parses chunks as they arrive. A source that fails (the client gave up or went
    /// away) fails the load and leaves the table as it was. Inside a transaction it loads
    /// into the transaction's copy of the table, as every statement does.
    pub async fn copy_from_client(
        &self,
        copy: CopyFrom,
        source: Source,
        ctl: &LoadControl,
    ) -> Result<LoadReport, SqlError> {
        self.require(&[authorize::Need::On(copy.table.clone(), Privilege::Insert)])?;
        let run = async {
            let table = self.table(&copy.table)?;
            let fields = copy_fields(&table, copy.columns.as_deref())?;
            match copy.format {
                InputFormat::Csv {
                    mut options,
                    engine,
                } => {
                    options.fields = fields;
                    self.load_csv(&copy.table, source, *options, engine, ctl)
                        .await
                        .map(StatementOutput::Loaded)
                }
                InputFormat::Arrow { .. } | InputFormat::Parquet { .. } => {
                    Err(SqlError::NotSupported(
                        "COPY ... FROM STDIN reads CSV (FORMAT csv); Arrow and Parquet come from files"
                            .into(),
                    ))
                }
            }
        };
        match self.in_transaction_run(None, run, ctl).await? {
            StatementOutput::Loaded(report) => Ok(report),
            other => Err(SqlError::Internal(format!(
                "COPY FROM STDIN produced {other:?}"
            ))),
        }
    }

    /// Loads the CSV `source` into `table` on `engine`'s loader.
    pub(crate) async fn load_csv(
        &self,
        table: &str,
        source: Source,
        options: LoadOptions,
        engine: Engine,
        ctl: &LoadControl,
    ) -> Result<LoadReport, SqlError> {
        match engine {
            Engine::Cpu => self.load(table, source, options, ctl).await,
            Engine::Gpu if options.fields.is_some() => Err(SqlError::NotSupported(
                "a COPY column list applies to ENGINE cpu: ENGINE gpu reads every column of \
                 the table"
                    .into(),
            )),
            Engine::Gpu => self
                .load_gpu(table, source, options.dialect, options.threads, ctl)
                .await
                .map(|report| report.load),
        }
    }

    pub(crate) async fn copy_to(
        &self,
        copy: CopyTo,
        ctl: &LoadControl,
    ) -> Result<UnloadSummary, SqlError> {
        let CopyPath::File(path) = &copy.path else {
            return Err(SqlError::NotSupported(
                "COPY ... TO STDOUT sends the rows to a client: run it from a client of \
                 `wireload serve` (psql, psycopg), or name a file"
                    .into(),
            ));
        };
        let target = self
            .file_access()
            .write(path, gate::Use::Write("COPY TO"))?;
        let started = Instant::now();
        let (name, rows) = self.copy_rows(&copy.source, ctl).await?;
        let cancel = Arc::clone(&ctl.cancel);
        self.run_blocking(copy.threads, move || {
            let report = unload::write(&rows, &target.path(), &copy.format, &cancel)
                .map_err(|e| target.unmask(e.into()))?;
            Ok(unload::summary(
                name,
                target.shown(),
                &copy.format,
                &report,
                started,
            ))
        })
        .await
    }

    /// Runs a `COPY ... TO STDOUT` (CSV): `out` is called with the rows' schema once they
    /// are known and the text goes to the writer it returns, in pieces of about a MiB, each
    /// with one `write_all`, in order; the summary names `STDOUT`. After an error the
    /// writer holds the pieces written before it (and `out` is not called when the rows
    /// could not be made).
    pub async fn copy_to_client<W: std::io::Write + Send + 'static>(
        &self,
        copy: CopyTo,
        out: impl FnOnce(&SchemaRef) -> W + Send + 'static,
        ctl: &LoadControl,
    ) -> Result<UnloadSummary, SqlError> {
        self.authorize(&Statement::CopyTo(copy.clone()))?;
        let run = async {
            let OutputFormat::Csv(dialect) = &copy.format else {
                return Err(SqlError::NotSupported(
                    "COPY ... TO STDOUT writes CSV (FORMAT csv); Arrow and Parquet go to files"
                        .into(),
                ));
            };
            let dialect = dialect.clone();
            let started = Instant::now();
            let (name, rows) = self.copy_rows(&copy.source, ctl).await?;
            let cancel = Arc::clone(&ctl.cancel);
            let format = copy.format.clone();
            self.run_blocking(copy.threads, move || {
                let report = wireload_unload::csv::write_csv(
                    out(&rows.schema),
                    &rows.schema,
                    &rows.batches,
                    &dialect,
                    &cancel,
                )?;
                Ok(StatementOutput::Unloaded(unload::summary(
                    name, "STDOUT", &format, &report, started,
                )))
            })
            .await
        };
        match self.in_transaction_run(None, run, ctl).await? {
            StatementOutput::Unloaded(summary) => Ok(summary),
            other => Err(SqlError::Internal(format!(
                "COPY TO STDOUT produced {other:?}"
            ))),
        }
    }

    /// The rows a `COPY ... TO` writes, and the name of their source (`query` for a
    /// query).
    pub(crate) async fn copy_rows(
        &self,
        source: &CopySource,
        ctl: &LoadControl,
    ) -> Result<(String, unload::Rows), SqlError> {
        Ok(match source {
            CopySource::Table { table, columns } => {
                let t = self.table(table)?;
                (
                    t.name().to_string(),
                    unload::table_rows(&t, columns.as_deref())?,
                )
            }
            CopySource::Query(query) => {
                let statement =
                    DfStatement::Statement(Box::new(ast::Statement::Query(query.clone())));
                let plan = self.ctx.state().statement_to_plan(statement).await?;
                let df = self.ctx.execute_logical_plan(plan).await?;
                let schema = wireload_storage::plain_schema(df.schema().as_arrow());
                let batches = self.collect(df, ctl).await?;
                ("query".to_string(), unload::Rows { schema, batches })
            }
        })
    }

    /// Loads `source` into table `table` on the database's load threads (or a pool of
    /// `options.threads`), off the async runtime. A streamed source is read outside the
    /// pool, so a slow one keeps no load thread from other statements.
    pub async fn load(
        &self,
        table: &str,
        source: Source,
        options: LoadOptions,
        ctl: &LoadControl,
    ) -> Result<LoadReport, SqlError> {
        // one source: the single-file load
        self.load_sources(table, vec![source], options, ctl).await
    }

    /// Loads the CSV `source` in `dialect` into table `table` on the GPU, off the async
    /// runtime; the host side runs on the database's load threads (or a pool of `threads`).
    /// Without a GPU this fails with [`SqlError::Gpu`] holding [`GpuError::NoGpu`]; errors in
    /// the input are [`SqlError::Load`], as the CPU loader reports them. On any error the
    /// table is unchanged.
    pub async fn load_gpu(
        &self,
        table: &str,
        source: Source,
        dialect: Dialect,
        threads: Option<usize>,
        ctl: &LoadControl,
    ) -> Result<GpuReport, SqlError> {
        let target = self.table(table)?;
        let name = target.name().to_string();
        let ctl = ctl.clone();
        self.run_blocking(threads, move || {
            wireload_gpu::load_into(&target, &source, &dialect, &GpuOptions::default(), &ctl)
                .map_err(|error| match error {
                    GpuError::Load(error) => SqlError::Load { table: name, error },
                    error => SqlError::Gpu { table: name, error },
                })
        })
        .await
    }
}

/// What a finished `COPY ... TO` wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct UnloadSummary {
    /// The table unloaded, or `query`.
    pub source: String,
    /// The file written.
    pub path: String,
    /// `csv`, `arrow` or `parquet`.
    pub format: &'static str,
    /// Rows written.
    pub rows: u64,
    /// Bytes of the file.
    pub bytes: u64,
    /// Wall-clock seconds, the query's included.
    pub seconds: f64,
}

impl UnloadSummary {
    /// Throughput in MB/s of file bytes.
    pub fn mb_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / 1e6 / self.seconds
        } else {
            0.0
        }
    }
}

impl std::fmt::Display for UnloadSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let digits = if self.seconds < 1.0 { 6 } else { 3 };
        write!(
            f,
            "unloaded {} rows from {} to {} ({}), {:.1} MB in {:.*} s ({:.0} MB/s)",
            self.rows,
            self.source,
            self.path,
            self.format,
            self.bytes as f64 / 1e6,
            digits,
            self.seconds,
            self.mb_per_s()
        )
    }
}

/// How `COPY ... FROM` a file is named in the file gate's messages.
pub(crate) const COPY_FROM: gate::Use = gate::Use::Read("COPY FROM");

/// Where the columns of `table` come from in the input of `COPY table (columns) FROM`, as
/// PostgreSQL reads it: the input's fields are the listed columns, in the list's order, and
/// the columns left out are NULL. None without a list, or with one naming every column in
/// table order.
pub(crate) fn copy_fields(
    table: &Table,
    columns: Option<&[String]>,
) -> Result<Option<Fields>, SqlError> {
    let Some(cols) = columns else {
        return Ok(None);
    };
    let defs = &table.def().schema.columns;
    let mut field_of: Vec<Option<usize>> = vec![None; defs.len()];
    for (i, name) in cols.iter().enumerate() {
        let c =
            defs.iter()
                .position(|d| d.name == *name)
                .ok_or_else(|| SqlError::UndefinedColumn {
                    table: table.name().to_string(),
                    column: name.clone(),
                })?;
        if field_of[c].replace(i).is_some() {
            return Err(SqlError::InvalidOption(format!(
                "column \"{name}\" is named more than once in the COPY column list"
            )));
        }
    }
    if field_of.iter().enumerate().all(|(c, f)| *f == Some(c)) {
        return Ok(None);
    }
    if let Some(c) = (0..defs.len()).find(|&c| field_of[c].is_none() && !defs[c].nullable) {
        return Err(SqlError::InvalidOption(format!(
            "column \"{}\" of \"{}\" is NOT NULL: the COPY column list must name it",
            defs[c].name,
            table.name()
        )));
    }
    Ok(Some(Fields {
        count: cols.len(),
        columns: field_of
            .iter()
            .map(|f| f.map_or(FieldSource::Null, FieldSource::Input))
            .collect(),
    }))
}
