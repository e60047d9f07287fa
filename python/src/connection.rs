//! A wireload database in the Python process: statements, parameters, and Arrow data of
//! other libraries registered as views.

use std::sync::{Arc, Mutex};

use datafusion::datasource::MemTable;
use pyo3::prelude::*;
use wireload_load::LoadControl;
use wireload_sql::{Database, DbConfig, SqlError, StatementOutput};

use crate::arrow::{ArrowResult, import_stream};
use crate::errors::{InterfaceError, InternalError, ProgrammingError, sql_error};
use crate::params::{number_placeholders, scalar};
use crate::run::{Progress, run_cancellable};

/// The database and the runtime its statements run on.
struct Open {
    db: Database,
    runtime: tokio::runtime::Runtime,
}

/// An in-memory wireload database (the native side of `wireload.Connection`).
#[pyclass(module = "wireload._native", name = "Database", frozen)]
pub struct PyDatabase {
    open: Mutex<Option<Arc<Open>>>,
}

/// What one statement did: its kind (`rows`, `loaded`, `unloaded`, `changed`, `done`), the
/// rows it loaded or changed (-1 for a query), its message, and its rows when it has any.
type Outcome = (&'static str, i64, String, Option<ArrowResult>);

impl PyDatabase {
    fn open(&self) -> PyResult<Arc<Open>> {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| InterfaceError::new_err("the connection is closed"))
    }
}

#[pymethods]
impl PyDatabase {
    /// A new empty database using `threads` threads for loads and queries (None: all cores).
    #[new]
    #[pyo3(signature = (threads=None))]
    fn new(threads: Option<usize>) -> PyResult<Self> {
        if threads == Some(0) {
            return Err(ProgrammingError::new_err("threads must be at least 1"));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.unwrap_or(2).clamp(1, 4))
            .thread_name("wireload-rt")
            .enable_all()
            .build()
            .map_err(|e| InternalError::new_err(format!("cannot start a runtime: {e}")))?;
        let db = Database::new(DbConfig {
            threads,
            ..Default::default()
        });
        Ok(PyDatabase {
            open: Mutex::new(Some(Arc::new(Open { db, runtime }))),
        })
    }

    /// Runs `sql` (one statement or a script) and returns the last statement's outcome.
    /// `params` (tagged values) bind `?` or `$n` placeholders of a single statement.
    #[pyo3(signature = (sql, params=None, progress=false))]
    fn execute(
        &self,
        py: Python<'_>,
        sql: String,
        params: Option<Vec<(String, Bound<'_, PyAny>)>>,
        progress: bool,
    ) -> PyResult<Outcome> {
        let open = self.open()?;
        let ctl = LoadControl::default();
        let bar = progress.then(|| Progress::new(None));
        let result = match params {
            None => {
                let c = ctl.clone();
                let o = open.clone();
                run_cancellable(py, &ctl, bar.as_ref(), move || {
                    o.runtime.block_on(async {
                        let outputs = o.db.execute(&sql, &c).await?;
                        Ok::<_, SqlError>(outputs.into_iter().last())
                    })
                })
            }
            Some(params) => {
                let values = params
                    .iter()
                    .map(|(tag, value)| scalar(tag, value))
                    .collect::<PyResult<Vec<_>>>()?;
                let sql = number_placeholders(&sql)?;
                let mut statements =
                    wireload_sql::parse_script(&sql).map_err(|e| sql_error(py, &e))?;
                if statements.len() != 1 {
                    return Err(ProgrammingError::new_err(format!(
                        "parameters need exactly one statement, found {}",
                        statements.len()
                    )));
                }
                let statement = statements.remove(0).statement;
                let c = ctl.clone();
                let o = open.clone();
                run_cancellable(py, &ctl, bar.as_ref(), move || {
                    o.runtime.block_on(async {
                        let prepared = o.db.prepare_statement(statement).await?;
                        let out = o.db.execute_prepared(&prepared, &values, &c).await?;
                        Ok::<_, SqlError>(Some(out))
                    })
                })
            }
        };
        if let Some(b) = &bar {
            b.finish();
        }
        match result? {
            Ok(Some(output)) => Ok(outcome(output)),
            Ok(None) => Ok(("done", -1, String::new(), None)),
            Err(e) => Err(sql_error(py, &e)),
        }
    }

    /// Makes the Arrow data of `data` (anything with `__arrow_c_stream__`) queryable as the
    /// read-only view `name`, sharing its buffers.
    fn register(&self, name: &str, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let open = self.open()?;
        let (schema, batches) = import_stream(data)?;
        let table = MemTable::try_new(schema, vec![batches])
            .map_err(|e| ProgrammingError::new_err(format!("cannot register {name}: {e}")))?;
        open.db
            .session()
            .register_table(name, Arc::new(table))
            .map_err(|e| ProgrammingError::new_err(format!("cannot register {name}: {e}")))?;
        Ok(())
    }

    /// Removes the view `name` made by `register`.
    fn unregister(&self, name: &str) -> PyResult<()> {
        let open = self.open()?;
        match open.db.session().deregister_table(name) {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(ProgrammingError::new_err(format!(
                "no registered view named {name}"
            ))),
            Err(e) => Err(ProgrammingError::new_err(e.to_string())),
        }
    }

    /// True inside a transaction (`BEGIN` without its `COMMIT` or `ROLLBACK` yet).
    #[getter]
    fn in_transaction(&self) -> PyResult<bool> {
        Ok(self.open()?.db.in_transaction())
    }

    /// The names of the tables.
    fn tables(&self) -> PyResult<Vec<String>> {
        let open = self.open()?;
        let mut names = open.db.catalog().table_names();
        names.sort();
        Ok(names)
    }

    /// Drops every table and closes the database; later calls raise InterfaceError.
    fn close(&self, py: Python<'_>) {
        let taken = self.open.lock().unwrap_or_else(|e| e.into_inner()).take();
        // the runtime's threads are joined without the GIL
        if let Some(open) = taken {
            py.detach(move || drop(open));
        }
    }

    /// True once closed.
    #[getter]
    fn closed(&self) -> bool {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }
}

/// A statement's output as (kind, rowcount, message, rows).
fn outcome(output: StatementOutput) -> Outcome {
    match output {
        StatementOutput::Rows { schema, batches } => (
            "rows",
            -1,
            String::new(),
            Some(ArrowResult::new(schema, batches)),
        ),
        StatementOutput::Loaded(report) => ("loaded", report.rows as i64, report.to_string(), None),
        StatementOutput::Unloaded(summary) => {
            ("unloaded", summary.rows as i64, summary.to_string(), None)
        }
        StatementOutput::Done(message) => ("done", -1, message, None),
        StatementOutput::Changed(change) => {
            let tag = change.tag();
            let rows = change
                .returning
                .map(|(schema, batches)| ArrowResult::new(schema, batches));
            ("changed", change.rows as i64, tag, rows)
        }
    }
}
