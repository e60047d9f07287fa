//! The Flight SQL service: statements, prepared statements, bulk ingest and the catalog
//! commands, each call authorized first.
//!
//! Every request runs in a session of its own (`Database::new_session`), so requests of
//! one client never see each other's settings or transactions, and a failing request
//! leaves the others alone. A statement's result is computed when the client asks for its
//! `FlightInfo` (which then knows the schema and row count exactly) and kept under a
//! random handle until the client fetches it with `DoGet` (or for [`RESULT_TTL`]).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::datatypes::{Schema, SchemaRef};
use arrow::ipc::writer::IpcWriteOptions;
use arrow_flight::decode::FlightRecordBatchStream;
use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::flight_service_server::FlightService;
use arrow_flight::sql::metadata::{SqlInfoData, SqlInfoDataBuilder};
use arrow_flight::sql::server::{FlightSqlService, PeekableFlightDataStream};
use arrow_flight::sql::{
    ActionClosePreparedStatementRequest, ActionCreatePreparedStatementRequest,
    ActionCreatePreparedStatementResult, CommandGetCatalogs, CommandGetDbSchemas,
    CommandGetSqlInfo, CommandGetTableTypes, CommandGetTables, CommandPreparedStatementQuery,
    CommandPreparedStatementUpdate, CommandStatementIngest, CommandStatementQuery,
    CommandStatementUpdate, DoPutPreparedStatementResult, ProstMessageExt, SqlInfo,
    SqlSupportedCaseSensitivity, TableExistsOption, TableNotExistOption, TicketStatementQuery,
};
use arrow_flight::{
    Action, BasicAuth, FlightDescriptor, FlightEndpoint, FlightInfo, HandshakeRequest,
    HandshakeResponse, IpcMessage, PutResult, SchemaAsIpc, Ticket,
};
use futures::{FutureExt, Stream, StreamExt, TryStreamExt};
use prost::Message;
use tonic::metadata::MetadataValue;
use tonic::{Request, Response, Status, Streaming};
use wireload_load::LoadControl;
use wireload_sql::{
    Actor, CountedMemory, DEFAULT_CATALOG, DEFAULT_SCHEMA, Database, FileGate, PreparedStatement,
    Privilege, ScalarValue, StatementOutput, parse_script,
};

use crate::auth::{self, Auth, Credentials};
use crate::convert::{
    affected_rows, combine_results, flight_status, ingest_table_def, match_columns,
    number_placeholders, output_result, parameter_rows, sql_status,
};

/// How long a computed result waits for its `DoGet`.
pub const RESULT_TTL: Duration = Duration::from_secs(600);
/// Results waiting at once (all clients); more are refused until some are fetched.
const MAX_RESULTS: usize = 10_000;
/// A prepared statement unused this long is closed.
const PREPARED_IDLE: Duration = Duration::from_secs(24 * 3600);
/// Prepared statements open at once (all clients).
const MAX_PREPARED: usize = 10_000;
/// How long a handshake without an `authorization` header waits for its first message.
const HANDSHAKE_WAIT: Duration = Duration::from_secs(10);

type DoGetStream = <FlightSqlServer as FlightService>::DoGetStream;

/// A result computed for a `FlightInfo`, waiting for its `DoGet`.
struct StoredResult {
    owner: String,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    created: Instant,
    /// its memory, counted in the server's memory budget while it waits
    _counted: CountedMemory,
}

/// What a prepared statement runs.
enum Plan {
    /// A query, INSERT, UPDATE or DELETE planned once, run with parameters.
    Planned(PreparedStatement),
    /// Statements the database does not prepare (DDL, several statements, COPY...), and
    /// text without parameters that did not plan (its error comes when it runs): the text,
    /// run as it is each time.
    Text(String),
}

/// A prepared statement and the session it runs in.
struct Prepared {
    owner: String,
    session: Database,
    plan: Plan,
    /// The rows of parameters bound last (each row runs the statement once).
    bound: Mutex<Option<Vec<Vec<ScalarValue>>>>,
    /// One execution at a time (several rows run in one transaction of the session).
    running: tokio::sync::Mutex<()>,
    last_used: Mutex<Instant>,
}

/// Cancels a request's statement when the request ends early (the client went away or
/// the server is shutting down): dropping the future drops the statement's work, and the
/// flag stops a load running on other threads.
struct CancelOnDrop(LoadControl);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0
            .cancel
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

fn control() -> CancelOnDrop {
    CancelOnDrop(LoadControl::default())
}

/// A random handle (32 bytes, hex).
fn new_handle() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `handle` bytes as the text they were made from.
#[allow(clippy::result_large_err)]
fn handle_text(handle: &[u8]) -> Result<&str, Status> {
    std::str::from_utf8(handle).map_err(|_| Status::invalid_argument("malformed handle"))
}

/// `schema` in Arrow IPC form (for `FlightInfo`s and prepared statements).
#[allow(clippy::result_large_err)]
fn schema_bytes(schema: &Schema) -> Result<bytes::Bytes, Status> {
    let IpcMessage(bytes) = SchemaAsIpc::new(schema, &IpcWriteOptions::default())
        .try_into()
        .map_err(|e: arrow::error::ArrowError| Status::internal(format!("schema: {e}")))?;
    Ok(bytes)
}

/// `batches` as a `DoGet` stream.
fn batch_stream(schema: SchemaRef, batches: Vec<RecordBatch>) -> Response<DoGetStream> {
    let stream = FlightDataEncoderBuilder::new()
        .with_schema(schema)
        .build(futures::stream::iter(batches.into_iter().map(Ok)))
        .map_err(Status::from);
    Response::new(Box::pin(stream))
}

/// The one batch a catalog command's builder made, as a stream.
fn built<E: std::fmt::Display>(
    schema: SchemaRef,
    batch: Result<RecordBatch, E>,
) -> Result<Response<DoGetStream>, Status> {
    let batch = batch.map_err(|e| Status::internal(e.to_string()))?;
    Ok(batch_stream(schema, vec![batch]))
}

/// The Flight SQL service over one database.
pub struct FlightSqlServer {
    db: Arc<Database>,
    /// The directories requests may reach server files in.
    gate: Arc<FileGate>,
    auth: Auth,
    results: Mutex<HashMap<String, StoredResult>>,
    prepared: Mutex<HashMap<String, Arc<Prepared>>>,
    sql_info: SqlInfoData,
    /// the largest message the transport accepts (pushes are told, to size their frames)
    max_message_bytes: usize,
}

impl FlightSqlServer {
    /// The service over `db`, authorizing with `auth`.
    pub fn new(db: Arc<Database>, auth: Auth) -> Self {
        let mut info = SqlInfoDataBuilder::new();
        info.append(SqlInfo::FlightSqlServerName, "wireload");
        info.append(SqlInfo::FlightSqlServerVersion, env!("CARGO_PKG_VERSION"));
        info.append(SqlInfo::FlightSqlServerArrowVersion, "59.3");
        info.append(SqlInfo::FlightSqlServerReadOnly, false);
        info.append(SqlInfo::FlightSqlServerSql, true);
        info.append(SqlInfo::FlightSqlServerSubstrait, false);
        // SqlSupportedTransaction::None: each request commits by itself
        info.append(SqlInfo::FlightSqlServerTransaction, 0i32);
        info.append(SqlInfo::FlightSqlServerCancel, false);
        info.append(SqlInfo::FlightSqlServerBulkIngestion, true);
        info.append(SqlInfo::FlightSqlServerIngestTransactionsSupported, false);
        info.append(SqlInfo::SqlDdlCatalog, false);
        info.append(SqlInfo::SqlDdlSchema, false);
        info.append(SqlInfo::SqlDdlTable, true);
        info.append(SqlInfo::SqlIdentifierQuoteChar, "\"");
        // unquoted names are folded to lowercase, as in PostgreSQL
        info.append(
            SqlInfo::SqlIdentifierCase,
            SqlSupportedCaseSensitivity::SqlCaseSensitivityLowercase as i32,
        );
        let sql_info = info.build().expect("the SqlInfo values have their types");
        FlightSqlServer {
            db,
            // no directory allowed
            gate: Arc::default(),
            auth,
            results: Mutex::new(HashMap::new()),
            prepared: Mutex::new(HashMap::new()),
            sql_info,
            max_message_bytes: wireload_server::Limits::default().max_message_bytes,
        }
    }

    /// This service, its requests reaching server files beneath `gate`'s directories.
    pub fn with_file_gate(mut self, gate: Arc<FileGate>) -> Self {
        self.gate = gate;
        self
    }

    /// A new session for one request of `user`, with that role's rights.
    fn session(&self, user: &str) -> Database {
        let session = self.db.client_session(Arc::clone(&self.gate));
        let trusted = user == auth::LOCAL_USER && self.db.roles().role(user).is_none();
        session.set_actor(if trusted {
            Actor::Trusted(user.to_string())
        } else {
            Actor::Role(user.to_string())
        });
        session
    }

    /// This service, told the largest message its transport accepts.
    pub fn with_max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }

    /// Runs the statements of `sql` in a new session, in order; the last one's output.
    async fn run_sql(
        &self,
        user: &str,
        sql: &str,
        ctl: &LoadControl,
    ) -> Result<StatementOutput, Status> {
        let statements = parse_script(sql).map_err(|e| sql_status(&e))?;
        if statements.is_empty() {
            return Err(Status::invalid_argument("no statement"));
        }
        let session = self.session(user);
        let mut last = None;
        for parsed in statements {
            last = Some(
                session
                    .execute_statement(parsed.statement, ctl)
                    .await
                    .map_err(|e| sql_status(&e))?,
            );
        }
        if session.in_transaction() {
            return Err(Status::invalid_argument(
                "the transaction was not committed and has been rolled back: over Flight SQL \
                 every request runs in a session of its own, so BEGIN and COMMIT belong in \
                 the same request",
            ));
        }
        Ok(last.expect("at least one statement ran"))
    }

    /// Keeps a computed result for `owner`'s `DoGet`; its handle.
    #[allow(clippy::result_large_err)]
    fn store_result(
        &self,
        owner: &str,
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
    ) -> Result<String, Status> {
        let handle = new_handle();
        let now = Instant::now();
        let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
        results.retain(|_, r| now.duration_since(r.created) < RESULT_TTL);
        if results.len() >= MAX_RESULTS {
            return Err(Status::resource_exhausted(
                "too many results wait to be fetched: fetch them (DoGet) first",
            ));
        }
        let mut counted = self
            .db
            .count_memory("a Flight SQL result waiting for DoGet");
        let bytes = batches.iter().map(RecordBatch::get_array_memory_size).sum();
        if !counted.grow(bytes) {
            return Err(Status::resource_exhausted(format!(
                "the results waiting to be fetched would pass the server's memory budget \
                 ({bytes} bytes more): fetch them (DoGet) first, or ask for fewer rows"
            )));
        }
        results.insert(
            handle.clone(),
            StoredResult {
                owner: owner.to_string(),
                schema,
                batches,
                created: now,
                _counted: counted,
            },
        );
        Ok(handle)
    }

    /// The `FlightInfo` of a computed result: its schema, size and the ticket to fetch it.
    #[allow(clippy::result_large_err)]
    fn result_info(
        &self,
        owner: &str,
        (schema, batches): (SchemaRef, Vec<RecordBatch>),
        descriptor: FlightDescriptor,
    ) -> Result<Response<FlightInfo>, Status> {
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let bytes: usize = batches.iter().map(RecordBatch::get_array_memory_size).sum();
        let encoded_schema = schema_bytes(&schema)?;
        let handle = self.store_result(owner, schema, batches)?;
        let ticket = TicketStatementQuery {
            statement_handle: handle.into_bytes().into(),
        };
        let endpoint =
            FlightEndpoint::new().with_ticket(Ticket::new(ticket.as_any().encode_to_vec()));
        let mut info = FlightInfo::new()
            .with_endpoint(endpoint)
            .with_descriptor(descriptor)
            .with_total_records(rows as i64)
            .with_total_bytes(bytes as i64)
            .with_ordered(true);
        info.schema = encoded_schema;
        Ok(Response::new(info))
    }

    /// The `FlightInfo` of a catalog command for an authorized `request`: `schema`, fetched
    /// with the command itself as the ticket.
    #[allow(clippy::result_large_err)]
    fn command_info(
        &self,
        request: Request<FlightDescriptor>,
        ticket: Vec<u8>,
        schema: &Schema,
    ) -> Result<Response<FlightInfo>, Status> {
        self.auth.authorize(&request)?;
        let descriptor = request.into_inner();
        let mut info = FlightInfo::new()
            .with_endpoint(FlightEndpoint::new().with_ticket(Ticket::new(ticket)))
            .with_descriptor(descriptor);
        info.schema = schema_bytes(schema)?;
        Ok(Response::new(info))
    }

    /// The prepared statement `handle` of `user`.
    #[allow(clippy::result_large_err)]
    fn prepared(&self, user: &str, handle: &[u8]) -> Result<Arc<Prepared>, Status> {
        let handle = handle_text(handle)?;
        let prepared = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
        match prepared.get(handle) {
            Some(p) if p.owner == user => {
                *p.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
                Ok(Arc::clone(p))
            }
            _ => Err(Status::not_found(
                "unknown prepared statement (closed, expired, or another user's)",
            )),
        }
    }

    /// Runs prepared statement `p` once per bound row of parameters (several rows in one
    /// transaction: all of them or none); the outputs in order.
    async fn execute_prepared(
        &self,
        p: &Prepared,
        rows: Option<Vec<Vec<ScalarValue>>>,
        ctl: &LoadControl,
    ) -> Result<Vec<StatementOutput>, Status> {
        let _one_at_a_time = p.running.lock().await;
        let statement = match &p.plan {
            Plan::Planned(statement) => statement,
            Plan::Text(sql) => {
                if rows.is_some_and(|r| r.iter().any(|row| !row.is_empty())) {
                    return Err(Status::invalid_argument(
                        "parameters can only be bound to a query, INSERT, UPDATE or DELETE",
                    ));
                }
                return Ok(vec![self.run_sql(&p.owner, sql, ctl).await?]);
            }
        };
        let rows = match rows {
            Some(rows) => rows,
            None => p
                .bound
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
                .unwrap_or_default(),
        };
        let rows = if rows.is_empty() {
            if !statement.parameter_types().is_empty() {
                return Err(Status::invalid_argument(format!(
                    "the prepared statement takes {} parameters and none are bound",
                    statement.parameter_types().len()
                )));
            }
            vec![Vec::new()]
        } else {
            rows
        };
        let session = &p.session;
        if rows.len() == 1 {
            let out = session
                .execute_prepared(statement, &rows[0], ctl)
                .await
                .map_err(|e| sql_status(&e))?;
            return Ok(vec![out]);
        }
        run_text(session, "BEGIN", ctl).await?;
        let mut outputs = Vec::with_capacity(rows.len());
        for row in &rows {
            match session.execute_prepared(statement, row, ctl).await {
                Ok(out) => outputs.push(out),
                Err(e) => {
                    let _ = run_text(session, "ROLLBACK", ctl).await;
                    return Err(sql_status(&e));
                }
            }
        }
        if let Err(e) = run_text(session, "COMMIT", ctl).await {
            let _ = run_text(session, "ROLLBACK", ctl).await;
            return Err(e);
        }
        Ok(outputs)
    }

    /// The parameter rows a `DoPut` carries (none when it carries no rows).
    async fn read_parameters(
        &self,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<Option<Vec<Vec<ScalarValue>>>, Status> {
        let batches = read_batches(request).await?.1;
        let rows = parameter_rows(&batches)?;
        Ok(if rows.is_empty() { None } else { Some(rows) })
    }

    /// The names of the tables and views, each with whether it is a table.
    fn relations(&self) -> Vec<(String, bool)> {
        let mut names: Vec<(String, bool)> = self
            .db
            .session()
            .catalog(DEFAULT_CATALOG)
            .and_then(|c| c.schema(DEFAULT_SCHEMA))
            .map(|s| s.table_names())
            .unwrap_or_default()
            .into_iter()
            .map(|n| {
                let is_table = self.db.catalog().table(&n).is_some();
                (n, is_table)
            })
            .collect();
        names.sort();
        names
    }

    /// The Arrow schema of table or view `name`.
    async fn relation_schema(&self, name: &str) -> SchemaRef {
        if let Some(t) = self.db.catalog().table(name) {
            return Arc::clone(&t.def().arrow_schema);
        }
        let provider = self
            .db
            .session()
            .catalog(DEFAULT_CATALOG)
            .and_then(|c| c.schema(DEFAULT_SCHEMA));
        match provider {
            Some(s) => match s.table(name).await {
                Ok(Some(t)) => t.schema(),
                _ => Arc::new(Schema::empty()),
            },
            None => Arc::new(Schema::empty()),
        }
    }

    /// The name of the existing table an ingest into `name` means: `name` itself, else its
    /// lowercase form (how unquoted SQL names it).
    fn ingest_target(&self, name: &str) -> Option<String> {
        if self.db.catalog().table(name).is_some() {
            return Some(name.to_string());
        }
        let lower = name.to_lowercase();
        self.db.catalog().table(&lower).map(|_| lower)
    }

    /// Appends `batches` to table `table` in one step (all rows or none).
    async fn append(
        &self,
        user: &str,
        table: &str,
        batches: Vec<RecordBatch>,
        ctl: &LoadControl,
    ) -> Result<u64, Status> {
        let columns: Vec<String> = match self.db.catalog().table(table) {
            Some(t) => t
                .def()
                .schema
                .columns
                .iter()
                .map(|c| c.name.clone())
                .collect(),
            None => {
                return Err(Status::not_found(format!(
                    "table \"{table}\" does not exist"
                )));
            }
        };
        let batches = batches
            .into_iter()
            .map(|b| match_columns(b, &columns))
            .collect::<Result<Vec<_>, _>>()?;
        self.session(user)
            .ingest(table, "Flight ingest", batches, ctl)
            .await
            .map_err(|e| sql_status(&e))
    }
}

/// Runs the SQL text `sql` on `session`.
async fn run_text(session: &Database, sql: &str, ctl: &LoadControl) -> Result<(), Status> {
    for parsed in parse_script(sql).map_err(|e| sql_status(&e))? {
        session
            .execute_statement(parsed.statement, ctl)
            .await
            .map_err(|e| sql_status(&e))?;
    }
    Ok(())
}

/// The schema and record batches a `DoPut` stream carries.
async fn read_batches(
    request: Request<PeekableFlightDataStream>,
) -> Result<(Option<SchemaRef>, Vec<RecordBatch>), Status> {
    // the lengths each message states are checked before arrow allocates by them
    let mut decompressed = 0u64;
    let data = request
        .into_inner()
        .map_err(arrow_flight::error::FlightError::from)
        .map(move |d| {
            let d = d?;
            wireload_push::protocol::check_ipc_message(
                &d.data_header,
                &d.data_body,
                &mut decompressed,
            )
            .map_err(|e| {
                arrow_flight::error::FlightError::DecodeError(format!("malformed IPC message: {e}"))
            })?;
            Ok(d)
        });
    let mut stream = FlightRecordBatchStream::new_from_flight_data(data);
    let mut batches = Vec::new();
    loop {
        // arrow's decoder asserts some lengths instead of checking them: a message it
        // panics on is refused like any other malformed one (the stream is not polled again)
        let next = std::panic::AssertUnwindSafe(futures::future::poll_fn(|cx| {
            wireload_push::protocol::untrusted(|| stream.poll_next_unpin(cx))
        }))
        .catch_unwind()
        .await
        .map_err(|_| {
            Status::invalid_argument("malformed IPC message: the Arrow decoder failed on it")
        })?;
        match next {
            Some(batch) => batches.push(batch.map_err(flight_status)?),
            None => break,
        }
    }
    Ok((stream.schema().cloned(), batches))
}

#[tonic::async_trait]
impl FlightSqlService for FlightSqlServer {
    type FlightService = FlightSqlServer;

    async fn do_handshake(
        &self,
        request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<
        Response<Pin<Box<dyn Stream<Item = Result<HandshakeResponse, Status>> + Send>>>,
        Status,
    > {
        let loopback = auth::is_loopback(request.remote_addr());
        let (user, token) = match auth::credentials(request.metadata())? {
            Credentials::Basic { user, password } => {
                let user = self.auth.check_password(&user, &password)?;
                let token = self.auth.issue_token(&user)?;
                (user, token)
            }
            Credentials::Bearer(_) => {
                let user = self.auth.authorize(&request)?;
                let token = self.auth.issue_token(&user)?;
                (user, token)
            }
            Credentials::None => {
                // Flight's original basic auth: a BasicAuth message as the payload
                let mut stream = request.into_inner();
                let first = tokio::time::timeout(HANDSHAKE_WAIT, stream.next()).await;
                let user = match first {
                    Ok(Some(Ok(req))) if !req.payload.is_empty() => {
                        let basic = BasicAuth::decode(req.payload).map_err(|_| {
                            Status::unauthenticated("the handshake payload is not BasicAuth")
                        })?;
                        self.auth.check_password(&basic.username, &basic.password)?
                    }
                    _ if self.auth.trusts_local() && loopback => auth::LOCAL_USER.to_string(),
                    _ => {
                        return Err(Status::unauthenticated(
                            "credentials required: send `authorization: Basic ...` with the \
                             handshake",
                        ));
                    }
                };
                let token = self.auth.issue_token(&user)?;
                (user, token)
            }
        };
        tracing::debug!("Flight SQL: {user} logged in");
        let header = MetadataValue::try_from(format!("Bearer {token}"))
            .map_err(|_| Status::internal("token header"))?;
        let reply = HandshakeResponse {
            protocol_version: 0,
            payload: token.into_bytes().into(),
        };
        let mut response: Response<
            Pin<Box<dyn Stream<Item = Result<HandshakeResponse, Status>> + Send>>,
        > = Response::new(Box::pin(futures::stream::iter([Ok(reply)])));
        response.metadata_mut().insert("authorization", header);
        Ok(response)
    }

    async fn get_flight_info_statement(
        &self,
        query: CommandStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let user = self.auth.authorize(&request)?;
        if query.transaction_id.is_some() {
            return Err(Status::unimplemented("transactions are not supported"));
        }
        let ctl = control();
        let output = self.run_sql(&user, &query.query, &ctl.0).await?;
        let result = output_result(output)?;
        self.result_info(&user, result, request.into_inner())
    }

    async fn do_get_statement(
        &self,
        ticket: TicketStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let user = self.auth.authorize(&request)?;
        let handle = handle_text(&ticket.statement_handle)?;
        let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
        match results.get(handle) {
            Some(r) if r.owner == user => {
                let r = results.remove(handle).expect("just found");
                Ok(batch_stream(r.schema, r.batches))
            }
            _ => Err(Status::not_found(
                "unknown ticket (fetched already, expired, or another user's)",
            )),
        }
    }

    async fn do_put_statement_update(
        &self,
        command: CommandStatementUpdate,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        let user = self.auth.authorize(&request)?;
        if command.transaction_id.is_some() {
            return Err(Status::unimplemented("transactions are not supported"));
        }
        let ctl = control();
        let output = self.run_sql(&user, &command.query, &ctl.0).await?;
        Ok(affected_rows(&output))
    }

    async fn do_action_create_prepared_statement(
        &self,
        query: ActionCreatePreparedStatementRequest,
        request: Request<Action>,
    ) -> Result<ActionCreatePreparedStatementResult, Status> {
        let user = self.auth.authorize(&request)?;
        if query.transaction_id.is_some() {
            return Err(Status::unimplemented("transactions are not supported"));
        }
        let (sql, has_parameters) = number_placeholders(&query.query);
        let session = self.session(&user);
        let plan = match session.prepare(&sql).await {
            Ok(statement) => Plan::Planned(statement),
            Err(e) if has_parameters => return Err(sql_status(&e)),
            Err(_) => {
                // a syntax error is reported now; anything else when it runs
                parse_script(&sql).map_err(|e| sql_status(&e))?;
                Plan::Text(sql)
            }
        };
        let (dataset_schema, parameter_types) = match &plan {
            Plan::Planned(statement) => (
                schema_bytes(&statement.result_schema())?,
                statement.parameter_types().to_vec(),
            ),
            Plan::Text(_) => (bytes::Bytes::new(), Vec::new()),
        };
        let parameters = Schema::new(
            parameter_types
                .iter()
                .enumerate()
                .map(|(i, ty)| {
                    arrow::datatypes::Field::new(
                        format!("${}", i + 1),
                        ty.clone().unwrap_or(arrow::datatypes::DataType::Null),
                        true,
                    )
                })
                .collect::<Vec<_>>(),
        );
        let parameter_schema = schema_bytes(&parameters)?;
        let handle = new_handle();
        let now = Instant::now();
        {
            let mut prepared = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
            if prepared.len() >= MAX_PREPARED {
                prepared.retain(|_, p| {
                    let last = *p.last_used.lock().unwrap_or_else(|e| e.into_inner());
                    now.duration_since(last) < PREPARED_IDLE
                });
                if prepared.len() >= MAX_PREPARED {
                    return Err(Status::resource_exhausted(
                        "too many prepared statements are open: close some",
                    ));
                }
            }
            prepared.insert(
                handle.clone(),
                Arc::new(Prepared {
                    owner: user,
                    session,
                    plan,
                    bound: Mutex::new(None),
                    running: tokio::sync::Mutex::new(()),
                    last_used: Mutex::new(now),
                }),
            );
        }
        Ok(ActionCreatePreparedStatementResult {
            prepared_statement_handle: handle.into_bytes().into(),
            dataset_schema,
            parameter_schema,
        })
    }

    async fn do_action_close_prepared_statement(
        &self,
        query: ActionClosePreparedStatementRequest,
        request: Request<Action>,
    ) -> Result<(), Status> {
        let user = self.auth.authorize(&request)?;
        self.prepared(&user, &query.prepared_statement_handle)?;
        let handle = handle_text(&query.prepared_statement_handle)?;
        self.prepared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(handle);
        Ok(())
    }

    async fn do_put_prepared_statement_query(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<DoPutPreparedStatementResult, Status> {
        let user = self.auth.authorize(&request)?;
        let p = self.prepared(&user, &query.prepared_statement_handle)?;
        let rows = self.read_parameters(request).await?;
        *p.bound.lock().unwrap_or_else(|e| e.into_inner()) = rows;
        Ok(DoPutPreparedStatementResult {
            prepared_statement_handle: Some(query.prepared_statement_handle),
        })
    }

    async fn get_flight_info_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let user = self.auth.authorize(&request)?;
        let p = self.prepared(&user, &query.prepared_statement_handle)?;
        let ctl = control();
        let outputs = self.execute_prepared(&p, None, &ctl.0).await?;
        let result = combine_results(outputs)?;
        self.result_info(&user, result, request.into_inner())
    }

    async fn do_get_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let user = self.auth.authorize(&request)?;
        let p = self.prepared(&user, &query.prepared_statement_handle)?;
        let ctl = control();
        let outputs = self.execute_prepared(&p, None, &ctl.0).await?;
        let (schema, batches) = combine_results(outputs)?;
        Ok(batch_stream(schema, batches))
    }

    async fn do_put_prepared_statement_update(
        &self,
        query: CommandPreparedStatementUpdate,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        let user = self.auth.authorize(&request)?;
        let p = self.prepared(&user, &query.prepared_statement_handle)?;
        let rows = self.read_parameters(request).await?;
        let ctl = control();
        let outputs = self.execute_prepared(&p, rows, &ctl.0).await?;
        let counts: Vec<i64> = outputs.iter().map(affected_rows).collect();
        Ok(if counts.iter().all(|&c| c < 0) {
            -1
        } else {
            counts.iter().filter(|&&c| c > 0).sum()
        })
    }

    /// A Shared Loading push (`wireload push`): a descriptor command of type
    /// [`wireload_push::protocol::PUSH_TYPE_URL`], frames validated and merged by
    /// [`wireload_push::ingest::ingest`] on a thread of its own, replies streamed back.
    async fn do_put_fallback(
        &self,
        request: Request<PeekableFlightDataStream>,
        message: arrow_flight::sql::Any,
    ) -> Result<Response<<Self as FlightService>::DoPutStream>, Status> {
        use wireload_push::PushError;
        use wireload_push::ingest::{RawFrame, describe, ingest};
        use wireload_push::protocol::{Hello, PUSH_TYPE_URL, Reply, from_json, to_json};
        if message.type_url != PUSH_TYPE_URL {
            return Err(Status::unimplemented(format!(
                "DoPut of an unknown command {:?}",
                message.type_url
            )));
        }
        let user = self.auth.authorize(&request)?;
        let hello: Hello = from_json(&message.value)
            .map_err(|e| Status::invalid_argument(format!("a push's request: {e}")))?;
        let name = self.ingest_target(&hello.table).ok_or_else(|| {
            Status::not_found(format!("table \"{}\" does not exist", hello.table))
        })?;
        let table = self
            .db
            .catalog()
            .table(&name)
            .ok_or_else(|| Status::not_found(format!("table \"{name}\" does not exist")))?;
        self.session(&user)
            .check_privilege(&name, Privilege::Insert)
            .map_err(|e| sql_status(&e))?;
        let put = |reply: &Reply| PutResult {
            app_metadata: to_json(reply).into(),
        };
        let (reply_tx, reply_rx) = tokio::sync::mpsc::channel::<Result<PutResult, Status>>(16);
        let described = Reply::Described(describe(&table, self.max_message_bytes as u64));
        reply_tx
            .send(Ok(put(&described)))
            .await
            .map_err(|_| Status::cancelled("the client went away"))?;
        let (frame_tx, mut frame_rx) = tokio::sync::mpsc::channel::<Result<RawFrame, PushError>>(8);
        let mut stream = request.into_inner();
        tokio::spawn(async move {
            while let Some(message) = stream.next().await {
                let frame = match message {
                    // the descriptor's message carries nothing else
                    Ok(d)
                        if d.flight_descriptor.is_some()
                            && d.app_metadata.is_empty()
                            && d.data_body.is_empty() =>
                    {
                        continue;
                    }
                    Ok(d) => Ok(RawFrame {
                        header: d.app_metadata,
                        body: d.data_body,
                    }),
                    Err(status) => Err(PushError::Transport(format!(
                        "the client's stream broke: {}",
                        status.message()
                    ))),
                };
                let broke = frame.is_err();
                if frame_tx.send(frame).await.is_err() || broke {
                    break;
                }
            }
        });
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let db = Arc::clone(&self.db);
        tokio::task::spawn_blocking(move || {
            let ctl = LoadControl::default();
            let frames = std::iter::from_fn(move || frame_rx.blocking_recv());
            let progress = |r: Reply| {
                let _ = reply_tx.try_send(Ok(put(&r)));
            };
            let last = match ingest(&table, &hello, frames, &progress, &ctl, threads) {
                Ok(done) => {
                    tracing::info!(
                        table = %table.name(),
                        mode = hello.mode.name(),
                        rows = done.rows,
                        bytes = done.bytes_received,
                        seconds = done.seconds,
                        "push loaded"
                    );
                    db.catalog().record_load(wireload_storage::LoadRecord {
                        table: table.name().to_string(),
                        kind: format!("push {}", hello.mode.name()),
                        source: hello.file.clone(),
                        rows: done.rows,
                        bytes: done.bytes_received,
                        seconds: done.seconds,
                        steps: done.steps.cpu_s.clone(),
                        finished: std::time::SystemTime::now(),
                    });
                    Ok(put(&done.reply()))
                }
                Err(e) => {
                    tracing::warn!(table = %table.name(), error = %e, "push refused");
                    Err(match e {
                        PushError::Load(e) => Status::invalid_argument(e.to_string()),
                        other => Status::invalid_argument(other.to_string()),
                    })
                }
            };
            let _ = reply_tx.blocking_send(last);
        });
        let replies = futures::stream::unfold(reply_rx, |mut rx| async move {
            let item = rx.recv().await?;
            Some((item, rx))
        });
        Ok(Response::new(Box::pin(replies)))
    }

    async fn do_put_statement_ingest(
        &self,
        command: CommandStatementIngest,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        let user = self.auth.authorize(&request)?;
        if command.temporary {
            return Err(Status::unimplemented(
                "ingest into a temporary table is not supported",
            ));
        }
        if command.transaction_id.is_some() {
            return Err(Status::unimplemented("transactions are not supported"));
        }
        for (what, given, ours) in [
            ("catalog", &command.catalog, DEFAULT_CATALOG),
            ("schema", &command.schema, DEFAULT_SCHEMA),
        ] {
            if let Some(name) = given
                && !name.is_empty()
                && name != ours
            {
                return Err(Status::not_found(format!(
                    "{what} \"{name}\" does not exist (the tables are in {DEFAULT_CATALOG}.{DEFAULT_SCHEMA})"
                )));
            }
        }
        if command.table.is_empty() {
            return Err(Status::invalid_argument("the ingest names no table"));
        }
        let (if_not_exists, if_exists) = match &command.table_definition_options {
            Some(o) => (
                TableNotExistOption::try_from(o.if_not_exist)
                    .unwrap_or(TableNotExistOption::Unspecified),
                TableExistsOption::try_from(o.if_exists).unwrap_or(TableExistsOption::Unspecified),
            ),
            None => (
                TableNotExistOption::Unspecified,
                TableExistsOption::Unspecified,
            ),
        };
        // everything first: a stream that fails midway appends nothing
        let (schema, batches) = read_batches(request).await?;
        let ctl = control();
        match self.ingest_target(&command.table) {
            Some(table) => match if_exists {
                TableExistsOption::Fail => Err(Status::already_exists(format!(
                    "table \"{table}\" already exists"
                ))),
                TableExistsOption::Replace => Err(Status::unimplemented(
                    "ingest with replace is not supported: drop the table first, or append",
                )),
                TableExistsOption::Append | TableExistsOption::Unspecified => {
                    let rows = self.append(&user, &table, batches, &ctl.0).await?;
                    Ok(i64::try_from(rows).unwrap_or(i64::MAX))
                }
            },
            None => match if_not_exists {
                TableNotExistOption::Create => {
                    let schema = schema
                        .or_else(|| batches.first().map(RecordBatch::schema))
                        .ok_or_else(|| {
                            Status::invalid_argument(
                                "cannot create a table: the ingest sent no schema",
                            )
                        })?;
                    let table = command.table.clone();
                    let def = ingest_table_def(&table, &schema)?;
                    self.session(&user)
                        .create_table(def, false)
                        .map_err(|e| sql_status(&e))?;
                    match self.append(&user, &table, batches, &ctl.0).await {
                        Ok(rows) => Ok(i64::try_from(rows).unwrap_or(i64::MAX)),
                        Err(e) => {
                            // the table this ingest made goes with its rows
                            if let Err(d) = self.db.catalog().drop_table(&table, true) {
                                tracing::warn!(
                                    "Flight SQL: dropping table \"{table}\" after a failed ingest: {d}"
                                );
                            }
                            Err(e)
                        }
                    }
                }
                TableNotExistOption::Fail | TableNotExistOption::Unspecified => {
                    Err(Status::not_found(format!(
                        "table \"{}\" does not exist (ingest with mode \"create\" or \
                         \"create_append\" to create it)",
                        command.table
                    )))
                }
            },
        }
    }

    async fn get_flight_info_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let ticket = query.as_any().encode_to_vec();
        self.command_info(request, ticket, &query.into_builder().schema())
    }

    async fn do_get_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.auth.authorize(&request)?;
        let mut builder = query.into_builder();
        builder.append(DEFAULT_CATALOG);
        built(builder.schema(), builder.build())
    }

    async fn get_flight_info_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let ticket = query.as_any().encode_to_vec();
        self.command_info(request, ticket, &query.into_builder().schema())
    }

    async fn do_get_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.auth.authorize(&request)?;
        let mut builder = query.into_builder();
        builder.append(DEFAULT_CATALOG, DEFAULT_SCHEMA);
        built(builder.schema(), builder.build())
    }

    async fn get_flight_info_tables(
        &self,
        query: CommandGetTables,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let ticket = query.as_any().encode_to_vec();
        self.command_info(request, ticket, &query.into_builder().schema())
    }

    async fn do_get_tables(
        &self,
        query: CommandGetTables,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.auth.authorize(&request)?;
        let include_schema = query.include_schema;
        let mut builder = query.into_builder();
        let empty = Schema::empty();
        for (name, is_table) in self.relations() {
            let schema = if include_schema {
                self.relation_schema(&name).await
            } else {
                Arc::new(empty.clone())
            };
            let kind = if is_table { "TABLE" } else { "VIEW" };
            builder
                .append(DEFAULT_CATALOG, DEFAULT_SCHEMA, &name, kind, &schema)
                .map_err(|e| Status::internal(e.to_string()))?;
        }
        built(builder.schema(), builder.build())
    }

    async fn get_flight_info_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let ticket = query.as_any().encode_to_vec();
        self.command_info(request, ticket, &query.into_builder().schema())
    }

    async fn do_get_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.auth.authorize(&request)?;
        let mut builder = query.into_builder();
        builder.append("TABLE");
        builder.append("VIEW");
        built(builder.schema(), builder.build())
    }

    async fn get_flight_info_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let ticket = query.as_any().encode_to_vec();
        self.command_info(
            request,
            ticket,
            &query.into_builder(&self.sql_info).schema(),
        )
    }

    async fn do_get_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.auth.authorize(&request)?;
        let builder = query.into_builder(&self.sql_info);
        built(builder.schema(), builder.build())
    }

    async fn register_sql_info(&self, _id: i32, _result: &SqlInfo) {}
}
