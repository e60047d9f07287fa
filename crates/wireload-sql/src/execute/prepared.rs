//! Prepared statements: planned once with parameters, run many times, a read or update of one
//! row by a unique key straight on the index.

use crate::dml::{OnConflict, RowChange};
use crate::error::SqlError;
use crate::parse::{Statement, parse_script};
use crate::rows::Streamed;
use crate::{Database, StatementOutput, authorize, dml, keyed};
use arrow::datatypes::SchemaRef;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::sqlparser::ast;
use std::collections::HashMap;
use std::sync::Arc;
use wireload_load::LoadControl;

impl Database {
    /// Prepares `sql` (one query, INSERT, UPDATE or DELETE, with parameters `$1`, `$2`,
    /// ...) to be run many times by [`Database::execute_prepared`]. A read or update of one
    /// row by a unique key (`... WHERE key = $1`) runs straight on the index then.
    pub async fn prepare(&self, sql: &str) -> Result<PreparedStatement, SqlError> {
        let mut statements = parse_script(sql)?;
        if statements.len() != 1 {
            return Err(SqlError::InvalidOption(format!(
                "a prepared statement is one statement, found {}",
                statements.len()
            )));
        }
        self.prepare_statement(statements.remove(0).statement).await
    }

    /// Prepares a parsed statement, as [`Database::prepare`] prepares its text.
    pub async fn prepare_statement(
        &self,
        statement: Statement,
    ) -> Result<PreparedStatement, SqlError> {
        let needs: Arc<[authorize::Need]> =
            authorize::needs(&statement, &|name| self.relation_of(name)).into();
        self.require(&needs)?;
        let (statement, returning, on_conflict) = match statement {
            Statement::Query(q) => (q, None, None),
            Statement::Write(w) => (w.statement, w.returning, w.on_conflict),
            _ => {
                return Err(SqlError::NotSupported(
                    "only queries, INSERT, UPDATE and DELETE can be prepared".into(),
                ));
            }
        };
        let plan = self.ctx.state().statement_to_plan(*statement).await?;
        if matches!(plan, LogicalPlan::Statement(_) | LogicalPlan::Ddl(_)) {
            return Err(SqlError::NotSupported(
                "only queries, INSERT, UPDATE and DELETE can be prepared".into(),
            ));
        }
        let fields = plan.get_parameter_fields()?;
        let params = (1..=fields.len())
            .map(|n| {
                fields
                    .get(&format!("${n}"))
                    .cloned()
                    .flatten()
                    .map(|f| f.data_type().clone())
            })
            .collect::<Vec<_>>();
        let keyed = match parameter_fields(&plan) {
            Some(fields) if returning.is_none() => {
                keyed::KeyAccess::of(&self.ctx, &plan, &fields, |name| self.table(name).ok())
                    .map(Arc::new)
            }
            _ => None,
        };
        let returns = match (&plan, &returning) {
            (LogicalPlan::Dml(dml), Some(items)) => Some(dml::returning_schema(
                &self.ctx,
                dml.table_name.table(),
                items,
                dml.target.schema(),
            )?),
            _ => None,
        };
        Ok(PreparedStatement {
            plan: Arc::new(plan),
            returning,
            returns,
            on_conflict,
            params,
            keyed,
            needs,
            session: self.id,
            checked: Arc::default(),
        })
    }

    /// Checks that this session may run `prepared`. A check that passed in the session
    /// that prepared it is not made again while no role, grant, owner or session's actor
    /// changed (the roles' generation).
    fn require_prepared(&self, prepared: &PreparedStatement) -> Result<(), SqlError> {
        use std::sync::atomic::Ordering;
        // read before the check: a change during the check makes the result stale
        let generation = self.roles.generation();
        let ours = prepared.session == self.id;
        if ours && prepared.checked.load(Ordering::Acquire) == generation {
            return Ok(());
        }
        self.require(&prepared.needs)?;
        if ours {
            prepared.checked.store(generation, Ordering::Release);
        }
        Ok(())
    }

    /// Runs a statement of [`Database::prepare`] with `params` (one per parameter, cast to
    /// its type), as [`Database::execute_statement`] runs a statement.
    pub async fn execute_prepared(
        &self,
        prepared: &PreparedStatement,
        params: &[datafusion::common::ScalarValue],
        ctl: &LoadControl,
    ) -> Result<StatementOutput, SqlError> {
        self.execute_prepared_streamed(prepared, params, ctl)
            .await?
            .finish()
            .await
    }

    /// Runs a statement of [`Database::prepare`] as [`Database::execute_prepared`] does,
    /// a query's rows streamed as [`Database::execute_streamed`] streams them.
    pub async fn execute_prepared_streamed(
        &self,
        prepared: &PreparedStatement,
        params: &[datafusion::common::ScalarValue],
        ctl: &LoadControl,
    ) -> Result<Streamed, SqlError> {
        self.require_prepared(prepared)?;
        if params.len() != prepared.params.len() {
            return Err(SqlError::InvalidOption(format!(
                "the prepared statement takes {} parameters, {} given",
                prepared.params.len(),
                params.len()
            )));
        }
        let params = params
            .iter()
            .zip(&prepared.params)
            .map(|(v, ty)| match ty {
                Some(ty) if v.data_type() != *ty => v.cast_to(ty),
                _ => Ok(v.clone()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let run = async {
            if let Some(access) = &prepared.keyed
                && let Some(out) = self.run_keyed(access, &params)
            {
                return out.map(Streamed::Output);
            }
            let values =
                datafusion::common::ParamValues::List(params.into_iter().map(Into::into).collect());
            let plan = prepared.plan.as_ref().clone().with_param_values(values)?;
            if let LogicalPlan::Dml(dml) = plan {
                return self
                    .write_plan(
                        dml,
                        prepared.returning.clone(),
                        prepared.on_conflict.as_ref(),
                        ctl,
                    )
                    .await
                    .map(Streamed::Output);
            }
            let df = self.ctx.execute_logical_plan(plan).await?;
            self.stream(df, ctl).await.map(Streamed::Rows)
        };
        self.in_transaction_run(None, run, ctl).await
    }

    /// The session's key accesses of statements prepared by name.
    pub(crate) fn keyed_statements(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, Arc<keyed::KeyAccess>>> {
        self.keyed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The key access of a statement being prepared, when it has one.
    pub(crate) fn key_access_of(
        &self,
        prepare: &datafusion::logical_expr::Prepare,
    ) -> Option<keyed::KeyAccess> {
        let fields = if prepare.fields.is_empty() {
            parameter_fields(&prepare.input)?
        } else {
            prepare.fields.clone()
        };
        keyed::KeyAccess::of(&self.ctx, &prepare.input, &fields, |name| {
            self.table(name).ok()
        })
    }

    /// `EXECUTE name(values)` by the statement's key access; `None` when it has none (or
    /// it does not apply now): DataFusion runs it then, and reports any error.
    pub(crate) fn execute_keyed(
        &self,
        execute: &datafusion::logical_expr::Execute,
    ) -> Option<Result<StatementOutput, SqlError>> {
        let access = Arc::clone(self.keyed_statements().get(&execute.name)?);
        if execute.parameters.len() != access.params().len() {
            return None;
        }
        use datafusion::logical_expr::Expr;
        use datafusion::optimizer::simplify_expressions::{ExprSimplifier, SimplifyContext};
        let mut params = Vec::with_capacity(execute.parameters.len());
        for (e, ty) in execute.parameters.iter().zip(access.params()) {
            // constants such as `-5` or `DATE '2024-01-01'` folded to literals, as
            // DataFusion's EXECUTE does
            let folded;
            let e = match e {
                Expr::Literal(..) => e,
                _ => {
                    folded = ExprSimplifier::new(SimplifyContext::default())
                        .simplify(e.clone())
                        .ok()?;
                    &folded
                }
            };
            let Expr::Literal(v, None) = e else {
                return None;
            };
            params.push(v.cast_to(ty).ok()?);
        }
        self.run_keyed(&access, &params)
    }

    /// Runs a key access with `params` (of its parameter types).
    pub(crate) fn run_keyed(
        &self,
        access: &keyed::KeyAccess,
        params: &[datafusion::common::ScalarValue],
    ) -> Option<Result<StatementOutput, SqlError>> {
        let table = self.table(access.table()).ok()?;
        let out = match access {
            keyed::KeyAccess::Read(read) => {
                read.run(&table, params)?
                    .map(|batches| StatementOutput::Rows {
                        schema: Arc::clone(read.schema()),
                        batches,
                    })
            }
            keyed::KeyAccess::Update(update) => update.run(&table, params)?.map(|rows| {
                StatementOutput::Changed(RowChange {
                    command: "UPDATE",
                    rows,
                    returning: None,
                })
            }),
        };
        self.key_accesses
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(out)
    }
}

/// A statement planned once, run many times with parameters ([`Database::prepare`]).
#[derive(Debug, Clone)]
pub struct PreparedStatement {
    /// DataFusion's plan, with placeholders for the parameters.
    plan: Arc<LogicalPlan>,
    /// The RETURNING list of a write.
    returning: Option<Vec<ast::SelectItem>>,
    /// The columns of a write's RETURNING list.
    returns: Option<SchemaRef>,
    /// An INSERT's `ON CONFLICT` clause.
    on_conflict: Option<OnConflict>,
    /// Each parameter's type, when the statement tells it.
    params: Vec<Option<arrow::datatypes::DataType>>,
    /// The key access, for a read or update of one row by a unique key.
    keyed: Option<Arc<keyed::KeyAccess>>,
    /// The privileges it needs, checked at each execution.
    needs: Arc<[authorize::Need]>,
    /// The session that prepared it.
    session: u64,
    /// The roles' generation at which its needs last passed in that session (0: never).
    checked: Arc<std::sync::atomic::AtomicU64>,
}

impl PreparedStatement {
    /// Each parameter's type (`$1` first), where the statement tells it.
    pub fn parameter_types(&self) -> &[Option<arrow::datatypes::DataType>] {
        &self.params
    }

    /// True when it runs straight on a unique index (a read or an update of one row by its
    /// key).
    pub fn is_key_access(&self) -> bool {
        self.keyed.is_some()
    }

    /// The columns of its result: a query's columns, a write's RETURNING columns (none
    /// without RETURNING).
    pub fn result_schema(&self) -> SchemaRef {
        match self.plan.as_ref() {
            LogicalPlan::Dml(_) => self
                .returns
                .clone()
                .unwrap_or_else(|| Arc::new(arrow::datatypes::Schema::empty())),
            plan => wireload_storage::plain_schema(plan.schema().as_arrow()),
        }
    }
}

/// The parameters' types of `plan` in order (`$1`, `$2`, ...), when all are known.
pub(crate) fn parameter_fields(plan: &LogicalPlan) -> Option<Vec<arrow::datatypes::FieldRef>> {
    let fields = plan.get_parameter_fields().ok()?;
    (1..=fields.len())
        .map(|n| fields.get(&format!("${n}")).cloned().flatten())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Actor, DbConfig};
    use datafusion::common::ScalarValue;

    /// Runs `p` in `db` with `id`; the error's SQLSTATE, or "ok".
    async fn state(db: &Database, p: &PreparedStatement, id: i64) -> String {
        match db
            .execute_prepared(p, &[ScalarValue::Int64(Some(id))], &LoadControl::default())
            .await
        {
            Ok(_) => "ok".into(),
            Err(e) => e.sqlstate().0.to_string(),
        }
    }

    #[tokio::test]
    async fn a_check_passed_once_is_made_again_after_any_change_of_rights() {
        let db = Database::new(DbConfig {
            threads: Some(1),
            ..Default::default()
        });
        let ctl = LoadControl::default();
        db.execute(
            "CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT); INSERT INTO t VALUES (1, 10); \
             CREATE USER bob; CREATE USER eve; GRANT SELECT ON t TO bob",
            &ctl,
        )
        .await
        .unwrap();
        let bob = db.client_session(Arc::default());
        bob.set_actor(Actor::Role("bob".into()));
        // one on the key's index, one planned
        let keyed = bob.prepare("SELECT v FROM t WHERE id = $1").await.unwrap();
        let planned = bob
            .prepare("SELECT count(*) FROM t WHERE id < $1")
            .await
            .unwrap();
        assert!(keyed.is_key_access() && !planned.is_key_access());
        let both = async |want: &str| {
            for p in [&keyed, &planned] {
                for _ in 0..2 {
                    assert_eq!(state(&bob, p, 1).await, want);
                }
            }
        };
        both("ok").await;
        db.execute("REVOKE SELECT ON t FROM bob", &ctl)
            .await
            .unwrap();
        both("42501").await;
        db.execute(
            "CREATE ROLE readers; GRANT SELECT ON t TO readers; GRANT readers TO bob",
            &ctl,
        )
        .await
        .unwrap();
        both("ok").await;
        db.execute("REVOKE readers FROM bob", &ctl).await.unwrap();
        both("42501").await;
        db.execute("GRANT pg_read_all_data TO bob", &ctl)
            .await
            .unwrap();
        both("ok").await;
        // a statement another session prepared is checked in full for this one
        let eve = db.client_session(Arc::default());
        eve.set_actor(Actor::Role("eve".into()));
        assert_eq!(state(&eve, &keyed, 1).await, "42501");
        assert_eq!(state(&eve, &planned, 1).await, "42501");
        // and a session whose actor changes is checked again
        bob.set_actor(Actor::Role("eve".into()));
        both("42501").await;
    }
}
