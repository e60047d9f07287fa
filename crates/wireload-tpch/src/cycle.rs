//! The load–work–unload cycle over TPC-H: create and load the 8 tables, run the 22
//! queries, unload the database to LZ4-compressed Arrow files (`EXPORT DATABASE`), drop
//! every table and reload them (`IMPORT DATABASE`); every phase timed.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use comfy_table::{CellAlignment, ContentArrangement, Table, presets};
use serde_json::{Value, json};
use wireload_load::{Dialect, LoadOptions, LoadReport, Source};
use wireload_sql::{DropTable, Export, Import, Statement, StatementOutput};
use wireload_storage::{Catalog, Compression, TableDef};

use crate::answers::Answer;
use crate::queries::{TPCH_QUERIES, TpchQuery};
use crate::tables::{self, GeneratedTable};

/// A database the cycle runs on, with the way its caller runs statements (a progress bar,
/// Ctrl-C, or none).
pub trait Session {
    /// Creates the empty table `def`.
    fn create_table(&self, def: TableDef) -> Result<()>;
    /// Loads `source` into `table` with the CPU loader.
    fn load(&self, table: &str, source: Source, options: LoadOptions) -> Result<LoadReport>;
    /// Runs one parsed statement.
    fn run_statement(&self, statement: Statement) -> Result<StatementOutput>;
    /// The catalog of the database.
    fn catalog(&self) -> &Arc<Catalog>;

    /// Parses `sql` and runs its statements in order.
    fn run(&self, sql: &str) -> Result<Vec<StatementOutput>> {
        wireload_sql::parse_script(sql)?
            .into_iter()
            .map(|p| self.run_statement(p.statement))
            .collect()
    }
}

/// An aligned table of text cells; the columns in `right` are right-aligned.
pub fn text_table(header: &[&str], rows: Vec<Vec<String>>, right: &[usize]) -> String {
    let mut table = Table::new();
    table
        .load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled);
    table.set_header(header.iter().copied());
    for row in rows {
        table.add_row(row);
    }
    for &i in right {
        if let Some(column) = table.column_mut(i) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    table.to_string()
}

/// One timed phase of the cycle.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Bytes read (load, reload) or written (unload); 0 where it means nothing.
    pub bytes: u64,
    /// Rows loaded, returned or written.
    pub rows: u64,
}

impl Phase {
    /// MB/s of `bytes` (0 without bytes).
    pub fn mb_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / 1e6 / self.seconds
        } else {
            0.0
        }
    }

    fn json(&self, name: &str) -> Value {
        json!({
            "phase": name,
            "seconds": self.seconds,
            "bytes": self.bytes,
            "rows": self.rows,
            "mb_per_s": self.mb_per_s(),
        })
    }
}

/// One query's run.
#[derive(Debug, Clone)]
pub struct QueryRun {
    /// The query.
    pub query: &'static TpchQuery,
    /// Wall-clock seconds, planning included.
    pub seconds: f64,
    /// Rows returned.
    pub rows: usize,
    /// The result.
    pub result: (SchemaRef, Vec<RecordBatch>),
}

/// Everything one cycle measured.
#[derive(Debug, Clone)]
pub struct CycleReport {
    /// Per-table loads, in load order.
    pub tables: Vec<LoadReport>,
    /// All 8 loads.
    pub load: Phase,
    /// The 22 queries, in order.
    pub queries: Vec<QueryRun>,
    /// All queries together.
    pub query_phase: Phase,
    /// EXPORT DATABASE.
    pub unload: Phase,
    /// IMPORT DATABASE after dropping every table.
    pub reload: Phase,
    /// Each table's bytes in memory after the load (`wireload_tables.bytes`, indexes
    /// included) and its indexes' share.
    pub memory: Vec<(String, u64, u64)>,
    /// How each column was stored after the load: table, column, storage, bytes.
    pub storage: Vec<(String, String, String, u64)>,
}

impl CycleReport {
    /// Seconds of the cycle proper: load, queries and unload.
    pub fn cycle_seconds(&self) -> f64 {
        self.load.seconds + self.query_phase.seconds + self.unload.seconds
    }

    /// The report as JSON.
    pub fn json(&self) -> Value {
        json!({
            "phases": [
                self.load.json("load"),
                self.query_phase.json("queries"),
                self.unload.json("unload"),
                self.reload.json("reload"),
            ],
            "cycle_seconds": self.cycle_seconds(),
            "tables": self.tables.iter().map(|t| json!({
                "table": t.table,
                "rows": t.rows,
                "bytes": t.bytes,
                "seconds": t.seconds,
                "merge_seconds": t.merge_seconds,
            })).collect::<Vec<_>>(),
            "memory": self.memory.iter().map(|(t, bytes, index)| json!({
                "table": t,
                "bytes": bytes,
                "index_bytes": index,
            })).collect::<Vec<_>>(),
            "storage": self.storage.iter().map(|(t, c, s, bytes)| json!({
                "table": t,
                "column": c,
                "storage": s,
                "bytes": bytes,
            })).collect::<Vec<_>>(),
            "queries": self.queries.iter().map(|q| json!({
                "query": q.query.number,
                "name": q.query.name,
                "seconds": q.seconds,
                "rows": q.rows,
            })).collect::<Vec<_>>(),
        })
    }

    /// The phases as an aligned text table.
    pub fn phase_table(&self, csv_bytes: u64) -> String {
        let line = |name: &str, p: &Phase| {
            let rate = if p.bytes > 0 {
                format!("{:.0}", p.mb_per_s())
            } else {
                String::new()
            };
            let mb = if p.bytes > 0 {
                format!("{:.1}", p.bytes as f64 / 1e6)
            } else {
                String::new()
            };
            vec![
                name.to_string(),
                format!("{:.3}", p.seconds),
                mb,
                rate,
                p.rows.to_string(),
            ]
        };
        let total = Phase {
            seconds: self.cycle_seconds(),
            bytes: 0,
            rows: 0,
        };
        let mut rows = vec![
            line("load CSV (8 tables)", &self.load),
            line("22 queries", &self.query_phase),
            line("unload (Arrow, LZ4)", &self.unload),
            line("reload (Arrow, LZ4)", &self.reload),
        ];
        let mut cycle = line("cycle: load+queries+unload", &total);
        cycle[4] = String::new();
        rows.push(cycle);
        let mut out = text_table(
            &["phase", "seconds", "MB", "MB/s", "rows"],
            rows,
            &[1, 2, 3, 4],
        );
        if csv_bytes > 0 && self.unload.bytes > 0 {
            out.push_str(&format!(
                "\nbinary unload is {:.0}% of the CSV size; reload is {:.1}x faster than the CSV load",
                100.0 * self.unload.bytes as f64 / csv_bytes as f64,
                self.load.seconds / self.reload.seconds.max(1e-9)
            ));
        }
        out
    }
}

/// Runs the cycle on an empty database `engine` over the generated `tables` (declared with their
/// primary keys when `keys`), exporting into `export_dir` (which must not exist or be
/// empty). `log` gets a line per step.
pub fn run(
    engine: &dyn Session,
    tables: &[GeneratedTable],
    export_dir: &Path,
    keys: bool,
    compression: Compression,
    log: &mut dyn FnMut(String),
) -> Result<CycleReport> {
    for def in tables::schema(keys)? {
        let all = vec![compression; def.schema.columns.len()];
        engine.create_table(def.with_compression(all)?)?;
    }
    // load: COPY t FROM 'path' WITH (FORMAT csv, DELIMITER '|')
    let options = LoadOptions {
        dialect: Dialect {
            delimiter: b'|',
            ..Dialect::default()
        },
        ..LoadOptions::default()
    };
    let started = Instant::now();
    let mut loads = Vec::with_capacity(tables.len());
    for t in tables {
        let source = Source::File(t.path.clone());
        let report = engine
            .load(t.table.name(), source, options.clone())
            .with_context(|| format!("loading {}", t.path.display()))?;
        log(format!("loaded {}", report));
        loads.push(report);
    }
    let load = Phase {
        seconds: started.elapsed().as_secs_f64(),
        bytes: loads.iter().map(|r| r.bytes).sum(),
        rows: loads.iter().map(|r| r.rows).sum(),
    };
    let (memory, storage) = memory(engine);
    // work
    let started = Instant::now();
    let mut queries = Vec::with_capacity(TPCH_QUERIES.len());
    for q in &TPCH_QUERIES {
        let t = Instant::now();
        let outputs = engine
            .run(q.sql)
            .with_context(|| format!("TPC-H Q{}", q.number))?;
        let seconds = t.elapsed().as_secs_f64();
        let Some(result) = outputs.into_iter().rev().find_map(|o| match o {
            StatementOutput::Rows { schema, batches } => Some((schema, batches)),
            _ => None,
        }) else {
            bail!("TPC-H Q{} returned no rows", q.number)
        };
        let rows = result.1.iter().map(|b| b.num_rows()).sum();
        log(format!(
            "Q{:<2} {:<36} {rows:>6} rows {seconds:>8.3} s",
            q.number, q.name
        ));
        queries.push(QueryRun {
            query: q,
            seconds,
            rows,
            result,
        });
    }
    let query_phase = Phase {
        seconds: started.elapsed().as_secs_f64(),
        bytes: 0,
        rows: queries.iter().map(|q| q.rows as u64).sum(),
    };
    // unload
    let counts = table_rows(engine);
    let started = Instant::now();
    let message = done_message(engine.run_statement(Statement::Export(Export::to(
        export_dir.display().to_string(),
    )))?);
    let unload = Phase {
        seconds: started.elapsed().as_secs_f64(),
        bytes: dir_bytes(export_dir)?,
        rows: counts.iter().map(|(_, n)| n).sum(),
    };
    log(message);
    // reload
    engine.run_statement(Statement::DropTable(DropTable {
        names: counts.iter().map(|(n, _)| n.clone()).collect(),
        if_exists: false,
    }))?;
    let started = Instant::now();
    let message = done_message(engine.run_statement(Statement::Import(Import {
        dir: export_dir.display().to_string(),
    }))?);
    let reload = Phase {
        seconds: started.elapsed().as_secs_f64(),
        bytes: unload.bytes,
        rows: unload.rows,
    };
    log(message);
    let after = table_rows(engine);
    if after != counts {
        bail!("the reloaded tables differ from the unloaded ones: {after:?} != {counts:?}");
    }
    Ok(CycleReport {
        tables: loads,
        load,
        queries,
        query_phase,
        unload,
        reload,
        memory,
        storage,
    })
}

/// Bytes in memory per table, and per column with its storage.
#[allow(clippy::type_complexity)]
fn memory(engine: &dyn Session) -> (Vec<(String, u64, u64)>, Vec<(String, String, String, u64)>) {
    let catalog = engine.catalog();
    let (mut tables, mut columns) = (Vec::new(), Vec::new());
    for name in catalog.table_names() {
        let Some(t) = catalog.table(&name) else {
            continue;
        };
        let v = t.snapshot();
        for (c, col) in t.def().schema.columns.iter().enumerate() {
            let bytes = v.column_bytes(c) as u64;
            columns.push((name.clone(), col.name.clone(), v.storage_label(c), bytes));
        }
        let index = v.index_bytes() as u64;
        tables.push((name, v.data_bytes() as u64 + index, index));
    }
    (tables, columns)
}

/// The message of a statement that returns no rows.
fn done_message(output: StatementOutput) -> String {
    match output {
        StatementOutput::Done(m) => m,
        _ => String::new(),
    }
}

/// Every table's name and row count.
fn table_rows(engine: &dyn Session) -> Vec<(String, u64)> {
    let catalog = engine.catalog();
    catalog
        .table_names()
        .into_iter()
        .filter_map(|n| {
            let rows = catalog.table(&n)?.snapshot().num_rows() as u64;
            Some((n, rows))
        })
        .collect()
}

/// Total bytes of the files in `dir`.
fn dir_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry?;
        total += entry.metadata()?.len();
    }
    Ok(total)
}

/// Writes each query's result as `qN.csv` into `dir` (see [`Answer::write_csv`]).
pub fn write_answers(report: &CycleReport, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for q in &report.queries {
        let path = dir.join(format!("q{}.csv", q.query.number));
        let answer = Answer::from_batches(&q.result.0, &q.result.1)?;
        let mut out = std::io::BufWriter::new(
            std::fs::File::create(&path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        );
        answer
            .write_csv(&mut out)
            .and_then(|()| std::io::Write::flush(&mut out))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
