//! One client connection: its own session of the database (settings, transaction,
//! prepared statements), the simple and extended query protocols, and COPY in and out.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast;
use futures::{Sink, SinkExt, StreamExt, stream};
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{CopyResponse, FieldFormat, FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, METADATA_USER, Type};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyOutResponse};
use pgwire::messages::data::DataRow;
use tokio::sync::mpsc;
use wireload_load::{BLOCK_BYTES, LoadControl, LoadReport, Source};
use wireload_sql::{
    Actor, CopyFrom, CopyPath, CopyTo, Database, InputFormat, PreparedStatement, RowStream,
    SqlError, Statement, StatementOutput, Streamed, TxStatement, parse_script,
};

use crate::copy::{ChannelWriter, CopyFeed, CopySender};
use crate::errors::{sql_error, user_error};
use crate::server::Shared;
use crate::types::{ColumnWriter, field_infos};

/// A statement of the extended protocol, parsed (and planned, where it can be) at Parse.
#[derive(Debug)]
pub enum PgStatement {
    /// A query or write, planned with its parameters.
    Prepared(PreparedStatement),
    /// Anything else (DDL, COPY, SET, BEGIN...), run as it is; takes no parameters.
    Other(Statement),
}

/// A COPY FROM STDIN in progress.
struct CopyIn {
    sender: CopySender,
    load: tokio::task::JoinHandle<Result<LoadReport, SqlError>>,
    ctl: LoadControl,
}

impl Drop for CopyIn {
    fn drop(&mut self) {
        // a copy dropped before its end (the connection closed): the load stops and
        // publishes nothing (its reader fails too, as the sender is gone)
        self.ctl.cancel.store(true, Ordering::SeqCst);
    }
}

/// PostgreSQL settings a client may set and show that wireload keeps but does not act on
/// (drivers set them at connect), with their values at start.
const PG_SETTINGS: [(&str, &str); 12] = [
    ("application_name", ""),
    ("client_encoding", "UTF8"),
    ("client_min_messages", "notice"),
    ("datestyle", "ISO, MDY"),
    ("extra_float_digits", "1"),
    ("intervalstyle", "postgres"),
    ("search_path", "public"),
    ("server_encoding", "UTF8"),
    ("server_version", crate::server::SERVER_VERSION),
    ("standard_conforming_strings", "on"),
    ("timezone", "UTC"),
    ("transaction_isolation", "repeatable read"),
];

/// One connection.
pub(crate) struct Connection {
    shared: Arc<Shared>,
    session: Arc<Database>,
    refused: bool,
    /// The process id and user, once logged in.
    login: OnceLock<(i32, String)>,
    copy: tokio::sync::Mutex<Option<CopyIn>>,
    parser: Arc<Parser>,
    /// Values of [`PG_SETTINGS`] set by the client.
    pg_settings: Mutex<HashMap<String, String>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some((pid, _)) = self.login.get() {
            self.shared.backends.unregister(*pid);
        }
    }
}

impl Connection {
    /// A connection of `shared`'s database; `refused` when it is over the limit.
    pub fn new(shared: Arc<Shared>, refused: bool) -> Self {
        // no rights until the login names its role
        let session = Arc::new(shared.db.client_session(Arc::clone(&shared.settings.files)));
        if let Err(e) = crate::pg_catalog::install(&session) {
            tracing::warn!(error = %e, "the pg_catalog tables are missing in this session");
        }
        Connection {
            parser: Arc::new(Parser {
                session: Arc::clone(&session),
            }),
            shared,
            session,
            refused,
            login: OnceLock::new(),
            copy: tokio::sync::Mutex::new(None),
            pg_settings: Mutex::new(HashMap::new()),
        }
    }

    /// True when the connection is over the limit (refused at login).
    pub fn refused(&self) -> bool {
        self.refused
    }

    /// Records a completed login (`trusted`: let in without a password by
    /// `--trust-local`); refused when the role has no connection left.
    pub fn logged_in(&self, client: &impl ClientInfo, trusted: bool) -> Result<(), String> {
        let (pid, key) = client.pid_and_secret_key();
        let user = client
            .metadata()
            .get(METADATA_USER)
            .cloned()
            .unwrap_or_default();
        let roles = self.shared.db.roles();
        let actor = match roles.role(&user) {
            Some(role) => {
                if !role.login {
                    return Err(format!("role \"{user}\" is not permitted to log in"));
                }
                if let Some(limit) = role.connection_limit
                    && self.shared.backends.of_user(&user) >= limit as usize
                {
                    return Err(format!("too many connections for role \"{user}\""));
                }
                Actor::Role(user.clone())
            }
            None if trusted => Actor::Trusted(user.clone()),
            None => return Err(format!("role \"{user}\" does not exist")),
        };
        self.session.set_actor(actor);
        self.shared
            .backends
            .register(pid, key.to_bytes(), user.clone());
        let _ = self.login.set((pid, user.clone()));
        self.install_backend_functions(pid, user);
        tracing::info!(pid, "logged in");
        Ok(())
    }

    /// `pg_backend_pid()` and `pg_cancel_backend(pid)` in this connection's session (a
    /// user cancels statements of its own connections).
    fn install_backend_functions(&self, pid: i32, user: String) {
        use arrow::datatypes::DataType;
        use datafusion::logical_expr::{ColumnarValue, Volatility, create_udf};
        use datafusion::scalar::ScalarValue;
        let ctx = self.session.session();
        for name in ["current_user", "session_user", "user"] {
            let who = ScalarValue::Utf8(Some(user.clone()));
            ctx.register_udf(create_udf(
                name,
                vec![],
                DataType::Utf8,
                Volatility::Stable,
                Arc::new(move |_| Ok(ColumnarValue::Scalar(who.clone()))),
            ));
        }
        ctx.register_udf(create_udf(
            "pg_backend_pid",
            vec![],
            DataType::Int32,
            Volatility::Stable,
            Arc::new(move |_| Ok(ColumnarValue::Scalar(ScalarValue::Int32(Some(pid))))),
        ));
        let shared = Arc::clone(&self.shared);
        ctx.register_udf(create_udf(
            "pg_cancel_backend",
            vec![DataType::Int64],
            DataType::Boolean,
            Volatility::Volatile,
            Arc::new(move |args| {
                let cancel = |v: Option<i64>| {
                    v.and_then(|p| i32::try_from(p).ok())
                        .map(|p| shared.backends.cancel_of_user(p, &user))
                };
                match &args[0] {
                    ColumnarValue::Scalar(ScalarValue::Int64(v)) => {
                        Ok(ColumnarValue::Scalar(ScalarValue::Boolean(cancel(*v))))
                    }
                    ColumnarValue::Array(a) => {
                        let a = a
                            .as_any()
                            .downcast_ref::<arrow::array::Int64Array>()
                            .ok_or_else(|| {
                                datafusion::error::DataFusionError::Internal(
                                    "pg_cancel_backend takes an integer".into(),
                                )
                            })?;
                        let out: arrow::array::BooleanArray = a.iter().map(cancel).collect();
                        Ok(ColumnarValue::Array(Arc::new(out)))
                    }
                    other => Err(datafusion::error::DataFusionError::Internal(format!(
                        "pg_cancel_backend takes an integer, not {other:?}"
                    ))),
                }
            }),
        ));
    }

    fn pid(&self) -> i32 {
        self.login.get().map_or(0, |(pid, _)| *pid)
    }

    /// Runs `work` as the connection's current statement: a cancel request (or
    /// `pg_cancel_backend`) for this connection sets its `ctl`.
    async fn tracked<T>(&self, ctl: &LoadControl, work: impl Future<Output = T>) -> T {
        let _running = self.running(ctl);
        work.await
    }

    /// Records `ctl`'s statement as the connection's current one until the returned guard
    /// drops (a cancel request for this connection sets `ctl`).
    fn running(&self, ctl: &LoadControl) -> Running {
        self.shared.backends.start(self.pid(), ctl);
        Running {
            shared: Arc::clone(&self.shared),
            pid: self.pid(),
        }
    }

    /// A query's response: its rows sent as they are computed when the statement is the
    /// last of its query string (`last`), computed first otherwise, as the statements after
    /// it run before its rows are sent (within the server's memory budget then).
    async fn rows_of(
        &self,
        mut rows: RowStream,
        formats: &Format,
        running: Running,
        last: bool,
    ) -> PgWireResult<Response> {
        let schema = Arc::clone(rows.schema());
        if last {
            rows.hold(Box::new(running));
            let batches = rows.map(|b| b.map_err(|e| sql_error(&e)));
            return Ok(rows_response(&schema, batches, formats, "SELECT"));
        }
        drop(running);
        let mut counted = self.session.count_memory("a result awaiting its turn");
        let mut batches = Vec::new();
        while let Some(batch) = rows.next().await {
            let batch = batch.map_err(|e| sql_error(&e))?;
            if !counted.grow(batch.get_array_memory_size()) {
                return Err(user_error(
                    "53200",
                    "the result of a statement before the last of its query string is larger \
                     than the server's memory budget holds; send the statement alone to have its \
                     rows streamed",
                ));
            }
            batches.push(Ok(batch));
        }
        // the memory is counted until the rows are sent
        let batches = stream::iter(batches).map(move |b| {
            let _counted = &counted;
            b
        });
        Ok(rows_response(&schema, batches, formats, "SELECT"))
    }

    /// Runs one statement and makes its response; `formats` are the result columns'
    /// formats (text for the simple protocol); `last`: the statement is the last of its
    /// query string (its rows are streamed).
    async fn run<C>(
        &self,
        client: &mut C,
        statement: Statement,
        formats: &Format,
        last: bool,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statement = match statement {
            Statement::CopyFrom(copy) if copy.path == CopyPath::Client => {
                return self.start_copy_in(*copy).await;
            }
            Statement::CopyTo(copy) if copy.path == CopyPath::Client => {
                return self.copy_out(client, copy).await;
            }
            Statement::Query(mut q) => {
                if let DfStatement::Statement(inner) = q.as_mut() {
                    if let Some(response) = self.pg_setting(inner) {
                        return response;
                    }
                    crate::pg_catalog::rewrite(inner);
                }
                Statement::Query(q)
            }
            other => other,
        };
        let tx = match &statement {
            Statement::Transaction(t) => Some(t.clone()),
            _ => None,
        };
        let ctl = LoadControl::default();
        let running = self.running(&ctl);
        let out = self.session.execute_streamed(statement, &ctl).await;
        // what the statement noticed (columns re-planned wider, rejects not kept)
        for notice in self.session.take_notices() {
            let info = ErrorInfo::new("NOTICE".into(), "00000".into(), notice);
            client
                .send(PgWireBackendMessage::NoticeResponse(info.into()))
                .await?;
        }
        let out = match out.map_err(|e| sql_error(&e))? {
            Streamed::Rows(rows) => return self.rows_of(rows, formats, running, last).await,
            Streamed::Output(out) => out,
        };
        drop(running);
        Ok(match (tx, out) {
            (Some(TxStatement::Begin), StatementOutput::Done(tag)) => {
                Response::TransactionStart(Tag::new(&tag))
            }
            (Some(TxStatement::Commit | TxStatement::Rollback), StatementOutput::Done(tag)) => {
                Response::TransactionEnd(Tag::new(&tag))
            }
            (_, out) => output_response(out, formats)?,
        })
    }

    /// `SET`/`SHOW`/`RESET` of a PostgreSQL setting wireload keeps for clients.
    fn pg_setting(&self, statement: &ast::Statement) -> Option<PgWireResult<Response>> {
        let known = |name: &str| {
            let lower = name.to_ascii_lowercase();
            PG_SETTINGS
                .iter()
                .any(|(n, _)| *n == lower)
                .then_some(lower)
        };
        let single = |name: &ast::ObjectName| match name.0.as_slice() {
            [part] => part.as_ident().map(|i| i.value.clone()),
            _ => None,
        };
        match statement {
            ast::Statement::Set(ast::Set::SingleAssignment {
                variable, values, ..
            }) => {
                let name = known(&single(variable)?)?;
                let value = values
                    .iter()
                    .map(|v| match v {
                        ast::Expr::Value(v) => match &v.value {
                            ast::Value::SingleQuotedString(s) => s.clone(),
                            other => other.to_string(),
                        },
                        ast::Expr::Identifier(i) => i.value.clone(),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                if name == "timezone"
                    && !matches!(
                        value.to_ascii_uppercase().as_str(),
                        "UTC" | "GMT" | "Z" | "+00" | "00:00" | "0"
                    )
                {
                    return Some(Err(user_error(
                        "0A000",
                        format!("only the UTC time zone is supported, not {value:?}"),
                    )));
                }
                self.pg_settings
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(name, value);
                Some(Ok(Response::Execution(Tag::new("SET"))))
            }
            ast::Statement::ShowVariable { variable } => {
                let [ident] = variable.as_slice() else {
                    return None;
                };
                let name = known(&ident.value)?;
                let value = self
                    .pg_settings
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&name)
                    .cloned()
                    .or_else(|| {
                        PG_SETTINGS
                            .iter()
                            .find(|(n, _)| *n == name)
                            .map(|(_, v)| v.to_string())
                    })?;
                let schema = Arc::new(arrow::datatypes::Schema::new(vec![
                    arrow::datatypes::Field::new(&name, arrow::datatypes::DataType::Utf8, false),
                ]));
                let batch = RecordBatch::try_new(
                    Arc::clone(&schema),
                    vec![Arc::new(arrow::array::StringArray::from(vec![value]))],
                )
                .map_err(|e| user_error("XX000", e.to_string()));
                Some(
                    batch.map(|b| batches_response(&schema, vec![b], &Format::UnifiedText, "SHOW")),
                )
            }
            _ => None,
        }
    }

    /// Starts a COPY FROM STDIN: checks the table and format, starts the load reading
    /// from the connection, and answers CopyInResponse.
    async fn start_copy_in(&self, copy: CopyFrom) -> PgWireResult<Response> {
        if !matches!(copy.format, InputFormat::Csv { .. }) {
            return Err(user_error(
                "0A000",
                "COPY ... FROM STDIN reads CSV (FORMAT csv); Arrow and Parquet come from files",
            ));
        }
        let columns = self
            .session
            .catalog()
            .table(&copy.table)
            .map(|t| t.def().schema.columns.len())
            .ok_or_else(|| sql_error(&SqlError::UndefinedTable(copy.table.clone())))?;
        let capacity = (self.shared.settings.limits.copy_buffer_bytes / BLOCK_BYTES).max(1);
        let (tx, rx) = mpsc::channel(capacity);
        let (sender, recycler) = CopySender::new(tx, BLOCK_BYTES);
        let source = Source::fed("STDIN", CopyFeed::new(rx), recycler);
        let ctl = LoadControl::default();
        self.shared.backends.start(self.pid(), &ctl);
        let session = Arc::clone(&self.session);
        let load_ctl = ctl.clone();
        let load =
            tokio::spawn(async move { session.copy_from_client(copy, source, &load_ctl).await });
        *self.copy.lock().await = Some(CopyIn { sender, load, ctl });
        Ok(Response::CopyIn(CopyResponse::new(
            0,
            columns,
            stream::empty(),
        )))
    }

    /// Runs a COPY TO STDOUT: the rows as CSV in CopyData messages, then CopyDone.
    async fn copy_out<C>(&self, client: &mut C, copy: CopyTo) -> PgWireResult<Response>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let (tx, mut rx) = mpsc::channel::<Bytes>(4);
        let (columns_tx, columns_rx) = tokio::sync::oneshot::channel();
        let ctl = LoadControl::default();
        let session = Arc::clone(&self.session);
        let task_ctl = ctl.clone();
        let task = tokio::spawn(async move {
            let writer = move |schema: &SchemaRef| {
                let _ = columns_tx.send(schema.fields().len());
                ChannelWriter::new(tx)
            };
            session.copy_to_client(copy, writer, &task_ctl).await
        });
        let sending = async {
            let Ok(columns) = columns_rx.await else {
                // failed before writing anything
                return match task.await {
                    Ok(Err(e)) => Err(sql_error(&e)),
                    Ok(Ok(_)) => Err(user_error("XX000", "COPY TO STDOUT wrote nothing")),
                    Err(e) => Err(user_error("XX000", format!("COPY TO STDOUT failed: {e}"))),
                };
            };
            client
                .send(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
                    0,
                    columns as i16,
                    vec![0; columns],
                )))
                .await?;
            while let Some(piece) = rx.recv().await {
                if let Err(e) = client
                    .send(PgWireBackendMessage::CopyData(CopyData::new(piece)))
                    .await
                {
                    ctl.cancel.store(true, Ordering::SeqCst);
                    return Err(e.into());
                }
            }
            match task.await {
                Ok(Ok(summary)) => {
                    client
                        .send(PgWireBackendMessage::CopyDone(CopyDone::new()))
                        .await?;
                    Ok(Response::Execution(Tag::new(&format!(
                        "COPY {}",
                        summary.rows
                    ))))
                }
                Ok(Err(e)) => Err(sql_error(&e)),
                Err(e) => Err(user_error("XX000", format!("COPY TO STDOUT failed: {e}"))),
            }
        };
        self.tracked(&ctl, sending).await
    }
}

/// The response of a finished statement.
fn output_response(out: StatementOutput, formats: &Format) -> PgWireResult<Response> {
    Ok(match out {
        StatementOutput::Rows { schema, batches } => {
            batches_response(&schema, batches, formats, "SELECT")
        }
        StatementOutput::Changed(change) => match change.returning {
            Some((schema, batches)) => {
                let command = if change.command == "INSERT" {
                    "INSERT 0"
                } else {
                    change.command
                };
                batches_response(&schema, batches, formats, command)
            }
            None => Response::Execution(Tag::new(&change.tag())),
        },
        StatementOutput::Loaded(report) => {
            Response::Execution(Tag::new(&format!("COPY {}", report.rows)))
        }
        StatementOutput::Unloaded(summary) => {
            Response::Execution(Tag::new(&format!("COPY {}", summary.rows)))
        }
        StatementOutput::Done(tag) => Response::Execution(Tag::new(&tag)),
    })
}

/// The row description of `schema` in `formats`.
fn describe(schema: &SchemaRef, formats: &Format) -> Vec<FieldInfo> {
    field_infos(schema.fields(), |i| formats.format_for(i))
}

/// A query response: the rows of `batches`, encoded batch by batch as the client takes
/// them; `command` heads the completion tag (the row count follows).
fn rows_response(
    schema: &SchemaRef,
    batches: impl futures::Stream<Item = PgWireResult<RecordBatch>> + Send + 'static,
    formats: &Format,
    command: &str,
) -> Response {
    let fields = Arc::new(describe(schema, formats));
    let binary: Arc<Vec<bool>> = Arc::new(
        fields
            .iter()
            .map(|f| f.format() == FieldFormat::Binary)
            .collect(),
    );
    let rows = batches.flat_map(move |batch| {
        stream::iter(match batch.and_then(|b| encode_batch(&b, &binary)) {
            Ok(rows) => rows.into_iter().map(Ok).collect::<Vec<_>>(),
            Err(e) => vec![Err(e)],
        })
    });
    let mut response = QueryResponse::new(fields, rows);
    response.set_command_tag(command);
    Response::Query(response)
}

/// A query response of rows computed already.
fn batches_response(
    schema: &SchemaRef,
    batches: Vec<RecordBatch>,
    formats: &Format,
    command: &str,
) -> Response {
    rows_response(
        schema,
        stream::iter(batches.into_iter().map(Ok)),
        formats,
        command,
    )
}

/// Ends a connection's current statement when dropped (see [`Connection::running`]).
struct Running {
    shared: Arc<Shared>,
    pid: i32,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shared.backends.finish(self.pid);
    }
}

/// The DataRow messages of one batch.
fn encode_batch(batch: &RecordBatch, binary: &[bool]) -> PgWireResult<Vec<DataRow>> {
    let writers = batch
        .columns()
        .iter()
        .map(ColumnWriter::new)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| user_error("XX000", format!("cannot encode a result column: {e}")))?;
    let columns = batch.columns();
    let mut rows = Vec::with_capacity(batch.num_rows());
    let mut buf = BytesMut::with_capacity(batch.num_rows() * 16 * columns.len().max(1));
    for row in 0..batch.num_rows() {
        for (c, w) in writers.iter().enumerate() {
            w.write(columns[c].as_ref(), row, binary[c], &mut buf);
        }
        rows.push(DataRow::new(buf.split(), columns.len() as i16));
    }
    Ok(rows)
}

/// The error response of an error.
fn error_info(e: PgWireError) -> Box<ErrorInfo> {
    Box::new(e.into())
}

#[async_trait]
impl SimpleQueryHandler for Connection {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statements = match parse_script(query) {
            Ok(s) => s,
            Err(e) => return Ok(vec![Response::Error(error_info(sql_error(&e)))]),
        };
        let count = statements.len();
        let mut responses = Vec::with_capacity(count);
        for (i, parsed) in statements.into_iter().enumerate() {
            let copy_in =
                matches!(&parsed.statement, Statement::CopyFrom(c) if c.path == CopyPath::Client);
            if copy_in && i + 1 != count {
                responses.push(Response::Error(error_info(user_error(
                    "0A000",
                    "COPY ... FROM STDIN must be the last statement of a query string",
                ))));
                break;
            }
            match self
                .run(
                    client,
                    parsed.statement,
                    &Format::UnifiedText,
                    i + 1 == count,
                )
                .await
            {
                Ok(r) => responses.push(r),
                Err(e) => {
                    responses.push(Response::Error(error_info(e)));
                    break;
                }
            }
        }
        Ok(responses)
    }
}

/// Parses and plans statements of the extended protocol in the connection's session.
pub struct Parser {
    session: Arc<Database>,
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Arc<PgStatement>;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        _types: &[Option<Type>],
    ) -> PgWireResult<Option<Self::Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let mut statements = parse_script(sql).map_err(|e| sql_error(&e))?;
        let statement = match statements.len() {
            0 => return Ok(None),
            1 => statements.remove(0).statement,
            _ => {
                return Err(user_error(
                    "42601",
                    "cannot insert multiple commands into a prepared statement",
                ));
            }
        };
        let statement = match statement {
            Statement::Query(mut q) => {
                if let DfStatement::Statement(inner) = q.as_mut() {
                    // a PostgreSQL setting is answered by the connection, unplanned
                    if matches!(
                        inner.as_ref(),
                        ast::Statement::Set(_) | ast::Statement::ShowVariable { .. }
                    ) {
                        return Ok(Some(Arc::new(PgStatement::Other(Statement::Query(q)))));
                    }
                    crate::pg_catalog::rewrite(inner);
                }
                Statement::Query(q)
            }
            other => other,
        };
        let preparable = match &statement {
            Statement::Query(q) => !matches!(
                q.as_ref(),
                DfStatement::Statement(s) if matches!(s.as_ref(), ast::Statement::Prepare { .. } | ast::Statement::Execute { .. } | ast::Statement::Deallocate { .. })
            ),
            Statement::Write(_) => true,
            _ => false,
        };
        if !preparable {
            return Ok(Some(Arc::new(PgStatement::Other(statement))));
        }
        let prepared = self
            .session
            .prepare_statement(statement)
            .await
            .map_err(|e| sql_error(&e))?;
        Ok(Some(Arc::new(PgStatement::Prepared(prepared))))
    }

    fn get_parameter_types(&self, stmt: &Self::Statement) -> PgWireResult<Vec<Type>> {
        Ok(match stmt.as_ref() {
            PgStatement::Prepared(p) => p
                .parameter_types()
                .iter()
                .map(|t| t.as_ref().map_or(Type::TEXT, crate::types::pg_type))
                .collect(),
            PgStatement::Other(_) => Vec::new(),
        })
    }

    fn get_result_schema(
        &self,
        stmt: &Self::Statement,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        let formats = column_format.cloned().unwrap_or_default();
        Ok(match stmt.as_ref() {
            PgStatement::Prepared(p) => describe(&p.result_schema(), &formats),
            PgStatement::Other(Statement::Query(q)) => match q.as_ref() {
                DfStatement::Statement(s) => match s.as_ref() {
                    ast::Statement::ShowVariable { variable } => variable
                        .iter()
                        .map(|i| {
                            FieldInfo::new(
                                i.value.to_ascii_lowercase(),
                                None,
                                None,
                                Type::TEXT,
                                formats.format_for(0),
                            )
                        })
                        .take(1)
                        .collect(),
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            },
            PgStatement::Other(Statement::Setting(wireload_sql::SettingStatement::Show(s))) => {
                vec![FieldInfo::new(
                    s.name().to_string(),
                    None,
                    None,
                    Type::TEXT,
                    formats.format_for(0),
                )]
            }
            PgStatement::Other(_) => Vec::new(),
        })
    }
}

#[async_trait]
impl ExtendedQueryHandler for Connection {
    type Statement = Arc<PgStatement>;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        Arc::clone(&self.parser)
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Self::Statement>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let stored: &StoredStatement<Self::Statement> = &portal.statement;
        match stored.statement.as_ref() {
            PgStatement::Prepared(prepared) => {
                let wanted = prepared.parameter_types();
                if portal.parameters.len() != wanted.len() {
                    return Err(user_error(
                        "08P01",
                        format!(
                            "bind message supplies {} parameters, but prepared statement requires {}",
                            portal.parameters.len(),
                            wanted.len()
                        ),
                    ));
                }
                let params = (0..wanted.len())
                    .map(|i| {
                        crate::params::decode(
                            portal.parameters[i].as_ref(),
                            portal.parameter_format.is_binary(i),
                            stored.parameter_types.get(i).and_then(Option::as_ref),
                            wanted[i].as_ref(),
                        )
                    })
                    .collect::<PgWireResult<Vec<_>>>()?;
                let ctl = LoadControl::default();
                let running = self.running(&ctl);
                let out = self
                    .session
                    .execute_prepared_streamed(prepared, &params, &ctl)
                    .await
                    .map_err(|e| sql_error(&e))?;
                match out {
                    Streamed::Rows(rows) => {
                        self.rows_of(rows, &portal.result_column_format, running, true)
                            .await
                    }
                    Streamed::Output(out) => output_response(out, &portal.result_column_format),
                }
            }
            PgStatement::Other(statement) => {
                if !portal.parameters.is_empty() {
                    return Err(user_error("08P01", "this statement takes no parameters"));
                }
                self.run(
                    client,
                    statement.clone(),
                    &portal.result_column_format,
                    true,
                )
                .await
            }
        }
    }
}

#[async_trait]
impl CopyHandler for Connection {
    async fn on_copy_data<C>(&self, _client: &mut C, data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Some(copy) = self.copy.lock().await.as_mut() {
            copy.sender.push(&data.data).await;
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(mut copy) = self.copy.lock().await.take() else {
            return Err(user_error("08P01", "CopyDone without a COPY in progress"));
        };
        copy.sender.finish().await;
        let result = (&mut copy.load).await;
        self.shared.backends.finish(self.pid());
        match result {
            Ok(Ok(report)) => {
                client
                    .send(PgWireBackendMessage::CommandComplete(
                        Tag::new(&format!("COPY {}", report.rows)).into(),
                    ))
                    .await?;
                Ok(())
            }
            Ok(Err(e)) => Err(sql_error(&e)),
            Err(e) => Err(user_error("XX000", format!("the COPY load failed: {e}"))),
        }
    }

    async fn on_copy_fail<C>(&self, _client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Some(mut copy) = self.copy.lock().await.take() {
            copy.ctl.cancel.store(true, Ordering::SeqCst);
            // the sender goes without an end: the load's reader fails
            copy.sender.abandon();
            let _ = (&mut copy.load).await;
            self.shared.backends.finish(self.pid());
        }
        user_error("57014", format!("COPY from stdin failed: {}", fail.message))
    }
}
