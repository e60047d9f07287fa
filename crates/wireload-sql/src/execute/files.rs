//! Files read in FROM: loaded into temporary tables for one statement, with only the columns
//! and rows its plan reads of them.

use crate::error::SqlError;
use crate::parse::Statement;
use crate::{Database, copy, files, gate, pushdown};
use arrow::record_batch::RecordBatch;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast;
use std::sync::Arc;
use wireload_load::{LoadControl, LoadReport};
use wireload_query::{CatalogSchema, SnapshotTable};
use wireload_storage::{Table, TableDef};

impl Database {
    /// Loads the files (and the rejects log) `statement` reads into temporary tables,
    /// registered until the returned guard drops. Each file loads only the columns and rows
    /// the statement's plan reads of it ([`pushdown`]).
    pub(crate) async fn materialize(
        &self,
        reads: Vec<files::FileRead>,
        statement: &Statement,
        ctl: &LoadControl,
    ) -> Result<TempTables, SqlError> {
        let mut temps = TempTables {
            schema: Arc::clone(&self.schema),
            tables: Vec::new(),
        };
        // the columns of every file first (the rejects tables are made at once)
        let mut inferred = Vec::new();
        for read in reads {
            match read.source {
                files::ReadSource::Rejects => {
                    let table = Arc::new(self.rejects_table(&read.name)?);
                    self.register_temp(&mut temps, table)?;
                }
                files::ReadSource::Files(paths) => {
                    let (name, spec) = (read.name.clone(), read.spec.clone());
                    let access = self.file_access();
                    let found = self
                        .run_blocking(spec.options.threads, move || {
                            let sources =
                                access.sources(&paths, gate::Use::Read("a file in FROM"))?;
                            files::infer(&name, &sources, &spec)
                        })
                        .await?;
                    inferred.push((found, read.spec));
                }
            }
        }
        let pushed = self.pushdown(statement, &inferred, &temps).await;
        for ((found, spec), pushed) in inferred.into_iter().zip(pushed) {
            let filter = pushed.filter_for(self.ctx.state());
            let project = pushed.columns.or(spec.project);
            let ctl2 = ctl.clone();
            let loaded = self
                .run_blocking(spec.options.threads, move || {
                    found.load(project.as_ref(), filter.as_ref(), &ctl2)
                })
                .await?;
            self.after_load(&loaded.report, &loaded.replanned);
            self.register_temp(&mut temps, loaded.table)?;
        }
        Ok(temps)
    }

    /// Registers `table` as a temporary table of `temps`.
    pub(crate) fn register_temp(
        &self,
        temps: &mut TempTables,
        table: Arc<Table>,
    ) -> Result<(), SqlError> {
        use datafusion::catalog::SchemaProvider;
        self.schema.register_table(
            table.name().to_string(),
            Arc::new(SnapshotTable::new(Arc::clone(&table))),
        )?;
        temps.tables.push(table);
        Ok(())
    }

    /// What the plan of `statement` reads of each file in `reads` (the columns, and the
    /// filters pushed into its scan): the statement planned over placeholders with the
    /// files' columns (the tables in `temps` are registered already). Nothing is pushed when
    /// the statement cannot be planned that way (it may still be fine once the files are
    /// loaded, or fail then with its own error).
    pub(crate) async fn pushdown(
        &self,
        statement: &Statement,
        reads: &[(files::InferredRead, copy::ReadSpec)],
        temps: &TempTables,
    ) -> Vec<pushdown::Pushed> {
        let none = || vec![pushdown::Pushed::default(); reads.len()];
        if reads.is_empty() {
            return none();
        }
        let mut statement = statement.clone();
        let mut names = self.mixed_case(temps);
        let mut placeholders = pushdown::Placeholders::new(Arc::clone(&self.schema));
        let mut schemas = Vec::new();
        for (read, _) in reads {
            let Ok(def) = read.def() else {
                return none();
            };
            names.add(&def.schema);
            match placeholders.add(def) {
                Some(schema) => schemas.push(schema),
                None => return none(),
            }
        }
        names.apply(&mut statement);
        let Some(query) = pushdown_query(statement) else {
            return none();
        };
        let state = self.ctx.state();
        let Ok(plan) = state.statement_to_plan(query).await else {
            return none();
        };
        let filters = pushdown::only_immutable(&plan);
        let Ok(plan) = state.optimize(&plan) else {
            return none();
        };
        drop(placeholders);
        reads
            .iter()
            .zip(&schemas)
            .map(|((read, _), schema)| pushdown::pushed_into(&plan, read.name(), schema, filters))
            .collect()
    }

    /// The mixed-case column names of the tables a statement can read whose names came
    /// from a header (files read by the statement, `temps`, and tables made from files),
    /// for unquoted identifiers to resolve case-insensitively.
    pub(crate) fn mixed_case(&self, temps: &TempTables) -> files::MixedCase {
        let mut names = files::MixedCase::default();
        let header_named = self.header_named.lock().unwrap_or_else(|e| e.into_inner());
        for name in header_named.iter() {
            if let Some(t) = self.catalog.table(name) {
                names.add(&t.def().schema);
            }
        }
        for t in &temps.tables {
            names.add(&t.def().schema);
        }
        names
    }

    /// Records what a finished load rejected and the columns it re-planned.
    pub(crate) fn after_load(&self, report: &LoadReport, replanned: &[String]) {
        self.notices
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(replanned.iter().cloned());
        let mut log = self.rejects.lock().unwrap_or_else(|e| e.into_inner());
        log.loads += 1;
        let id = log.loads;
        log.records
            .extend(report.rejects.iter().map(|r| (id, r.clone())));
        if report.rejected > report.rejects.len() as u64 {
            self.notices
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(format!(
                    "{} records were rejected; wireload_rejects keeps the first {}",
                    report.rejected,
                    report.rejects.len()
                ));
        }
    }

    /// `wireload_rejects`: the records this session's loads rejected, as a table.
    pub(crate) fn rejects_table(&self, name: &str) -> Result<Table, SqlError> {
        use arrow::array::{ArrayRef, Int64Array, StringArray};
        let log = self.rejects.lock().unwrap_or_else(|e| e.into_inner());
        let def = TableDef::new(
            name.to_string(),
            files::rejects_schema(),
            wireload_storage::Partitioning::Single,
        )?;
        let rows = &log.records;
        let text = |f: &dyn Fn(&wireload_load::Reject) -> Option<String>| -> ArrayRef {
            Arc::new(rows.iter().map(|(_, r)| f(r)).collect::<StringArray>())
        };
        let num = |f: &dyn Fn(u64, &wireload_load::Reject) -> u64| -> ArrayRef {
            Arc::new(
                rows.iter()
                    .map(|(id, r)| i64::try_from(f(*id, r)).ok())
                    .collect::<Int64Array>(),
            )
        };
        let columns = vec![
            num(&|id, _| id),
            text(&|r| Some(r.file.clone())),
            num(&|_, r| r.line),
            num(&|_, r| r.byte_offset),
            text(&|r| r.column_name.clone()),
            text(&|r| Some(r.raw_line.clone())),
            text(&|r| Some(r.error.clone())),
        ];
        drop(log);
        let batch = RecordBatch::try_new(def.arrow_schema.clone(), columns)
            .map_err(|e| SqlError::Internal(format!("wireload_rejects: {e}")))?;
        let table = Table::new(def);
        wireload_publish::append_batches(
            &table,
            "wireload_rejects",
            0,
            vec![batch],
            &LoadControl::default(),
        )
        .map_err(|error| SqlError::Load {
            table: name.to_string(),
            error,
        })?;
        Ok(table)
    }
}

/// The query of `statement` to plan for pushdown into its file reads: a SELECT (also
/// under EXPLAIN), the query of CREATE TABLE AS or of COPY (query) TO; None for other
/// statements.
pub(crate) fn pushdown_query(statement: Statement) -> Option<DfStatement> {
    let query =
        |q: Box<ast::Query>| Some(DfStatement::Statement(Box::new(ast::Statement::Query(q))));
    match statement {
        Statement::Query(q) => select_of(*q),
        Statement::CreateTableAs(c) => query(c.query),
        Statement::CopyTo(c) => match c.source {
            copy::CopySource::Query(q) => query(q),
            copy::CopySource::Table { .. } => None,
        },
        _ => None,
    }
}

/// The SELECT of `statement`, looking through EXPLAIN.
pub(crate) fn select_of(statement: DfStatement) -> Option<DfStatement> {
    match statement {
        DfStatement::Statement(s) if matches!(*s, ast::Statement::Query(_)) => {
            Some(DfStatement::Statement(s))
        }
        DfStatement::Explain(e) => select_of(*e.statement),
        _ => None,
    }
}

/// Temporary tables of one statement (files it reads), deregistered when dropped.
pub(crate) struct TempTables {
    schema: Arc<CatalogSchema>,
    tables: Vec<Arc<Table>>,
}

impl Drop for TempTables {
    fn drop(&mut self) {
        use datafusion::catalog::SchemaProvider;
        for t in &self.tables {
            let _ = self.schema.deregister_table(t.name());
        }
    }
}
