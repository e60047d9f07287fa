//! Errors of statements: what the user got wrong apart from what went wrong inside, each with
//! the SQLSTATE class a PostgreSQL client expects for it.

use datafusion::error::DataFusionError;
use datafusion::sql::sqlparser::parser::ParserError;
use wireload_gpu::GpuError;
use wireload_load::{BadValue, LoadError};
use wireload_storage::StorageError;
use wireload_unload::UnloadError;
use wireload_unload::export::ExportError;

/// A five-character SQLSTATE code, as PostgreSQL defines them (Appendix A of its manual).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SqlState(pub &'static str);

#[allow(missing_docs)]
impl SqlState {
    pub const SUCCESSFUL_COMPLETION: SqlState = SqlState("00000");
    pub const FEATURE_NOT_SUPPORTED: SqlState = SqlState("0A000");
    pub const DATA_EXCEPTION: SqlState = SqlState("22000");
    pub const DIVISION_BY_ZERO: SqlState = SqlState("22012");
    pub const INVALID_PARAMETER_VALUE: SqlState = SqlState("22023");
    pub const INVALID_TEXT_REPRESENTATION: SqlState = SqlState("22P02");
    pub const BAD_COPY_FILE_FORMAT: SqlState = SqlState("22P04");
    pub const NUMERIC_VALUE_OUT_OF_RANGE: SqlState = SqlState("22003");
    pub const DATETIME_FIELD_OVERFLOW: SqlState = SqlState("22008");
    pub const INVALID_DATETIME_FORMAT: SqlState = SqlState("22007");
    pub const STRING_DATA_RIGHT_TRUNCATION: SqlState = SqlState("22001");
    pub const CHARACTER_NOT_IN_REPERTOIRE: SqlState = SqlState("22021");
    pub const NOT_NULL_VIOLATION: SqlState = SqlState("23502");
    pub const UNIQUE_VIOLATION: SqlState = SqlState("23505");
    pub const SERIALIZATION_FAILURE: SqlState = SqlState("40001");
    pub const CARDINALITY_VIOLATION: SqlState = SqlState("21000");
    pub const IN_FAILED_SQL_TRANSACTION: SqlState = SqlState("25P02");
    pub const NO_ACTIVE_SQL_TRANSACTION: SqlState = SqlState("25P01");
    pub const INVALID_SAVEPOINT_SPECIFICATION: SqlState = SqlState("3B001");
    pub const INVALID_COLUMN_REFERENCE: SqlState = SqlState("42P10");
    pub const INSUFFICIENT_PRIVILEGE: SqlState = SqlState("42501");
    /// `58P01` undefined_file (a file named that does not exist).
    pub const UNDEFINED_FILE: SqlState = SqlState("58P01");
    pub const SYNTAX_ERROR: SqlState = SqlState("42601");
    pub const UNDEFINED_COLUMN: SqlState = SqlState("42703");
    pub const UNDEFINED_TABLE: SqlState = SqlState("42P01");
    pub const UNDEFINED_OBJECT: SqlState = SqlState("42704");
    pub const DUPLICATE_TABLE: SqlState = SqlState("42P07");
    pub const DUPLICATE_OBJECT: SqlState = SqlState("42710");
    pub const WRONG_OBJECT_TYPE: SqlState = SqlState("42809");
    pub const INVALID_TABLE_DEFINITION: SqlState = SqlState("42P16");
    pub const DEPENDENT_OBJECTS_STILL_EXIST: SqlState = SqlState("2BP01");
    pub const INSUFFICIENT_RESOURCES: SqlState = SqlState("53000");
    /// `53200` out_of_memory (a load past its memory budget).
    pub const OUT_OF_MEMORY: SqlState = SqlState("53200");
    /// `54000` program_limit_exceeded (a record longer than MAX_LINE_SIZE).
    pub const PROGRAM_LIMIT_EXCEEDED: SqlState = SqlState("54000");
    /// `22P05` untranslatable_character (input that is not in its ENCODING).
    pub const UNTRANSLATABLE_CHARACTER: SqlState = SqlState("22P05");
    pub const STATEMENT_TOO_COMPLEX: SqlState = SqlState("54001");
    pub const QUERY_CANCELED: SqlState = SqlState("57014");
    pub const IO_ERROR: SqlState = SqlState("58030");
    pub const SYSTEM_ERROR: SqlState = SqlState("58000");
    pub const DATA_CORRUPTED: SqlState = SqlState("XX001");
    pub const INTERNAL_ERROR: SqlState = SqlState("XX000");
}

impl std::fmt::Display for SqlState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Why a statement failed. Every failed statement leaves the database as it was.
///
/// The variants up to [`SqlError::Internal`] are the user's to fix (the statement, the
/// input, the environment); [`SqlError::Internal`] is a bug of wireload.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqlError {
    /// The text is not valid SQL.
    #[error("syntax error: {0}")]
    Syntax(#[source] ParserError),
    /// A statement or clause wireload does not support.
    #[error("{0}")]
    NotSupported(String),
    /// Expressions or subqueries nested deeper than the planner can take.
    #[error(
        "statement too complex: expressions nested more than {limit} levels deep (a long chain \
         of OR, AND or another operator nests one level per term; `x IN (...)` does not)"
    )]
    TooComplex {
        /// the deepest nesting accepted
        limit: usize,
    },
    /// An option or argument with a value it cannot take (COPY options, PARTITIONS n...).
    #[error("{0}")]
    InvalidOption(String),
    /// No table of that name.
    #[error("table \"{0}\" does not exist")]
    UndefinedTable(String),
    /// No column of that name in the table.
    #[error("column \"{column}\" does not exist in table \"{table}\"")]
    UndefinedColumn {
        /// the table
        table: String,
        /// the column named
        column: String,
    },
    /// No index of that name.
    #[error("index \"{0}\" does not exist")]
    UndefinedIndex(String),
    /// A column type that does not exist (the message names the column and the type).
    #[error("{0}")]
    UndefinedType(String),
    /// Another object that does not exist (a role).
    #[error("{0}")]
    UndefinedObject(String),
    /// An object (a role) that exists already.
    #[error("{0}")]
    Duplicate(String),
    /// An object others depend on (a role that owns tables).
    #[error("{0}")]
    DependentObjects(String),
    /// An index of that name exists already.
    #[error("an index called \"{index}\" already exists (on table \"{table}\")")]
    DuplicateIndex {
        /// the index name
        index: String,
        /// its table
        table: String,
    },
    /// The object is of another kind than the statement needs (a view where a table is needed).
    #[error("\"{name}\" is a {is}, not a {wanted}{hint}")]
    WrongObjectType {
        /// the name
        name: String,
        /// what it is
        is: &'static str,
        /// what the statement needs
        wanted: &'static str,
        /// what to do instead (may be empty)
        hint: String,
    },
    /// An index cannot be dropped while a constraint of its table needs it.
    #[error("cannot drop index \"{index}\": the constraint of table \"{table}\" requires it")]
    IndexInUse {
        /// the index
        index: String,
        /// its table
        table: String,
    },
    /// The session's role may not do what the statement asks: reach a server file, read
    /// or change a table, manage roles.
    #[error("permission denied for {object}: {why}")]
    PermissionDenied {
        /// what was refused: `table t`, `COPY FROM '/etc/passwd'`...
        object: String,
        /// why not, and what would allow it
        why: String,
    },
    /// A file or directory the session may reach that cannot be opened.
    #[error("{what} '{path}': {source}")]
    File {
        /// the statement or option naming the path
        what: &'static str,
        /// the path as written
        path: String,
        /// the system's error
        source: std::io::Error,
    },
    /// An error of a reader or writer, retold with the path as the statement wrote it.
    #[error("{message}")]
    Relabelled {
        /// the error's text
        message: String,
        /// the error's SQLSTATE
        state: SqlState,
    },
    /// A load failed; the table is unchanged.
    #[error("{error}\ntable \"{table}\" is unchanged")]
    Load {
        /// the table that was being loaded
        table: String,
        /// why
        error: LoadError,
    },
    /// A GPU load (`ENGINE gpu`) failed for a reason of its own (no GPU, a CUDA error, input
    /// it cannot load); the table is unchanged. Errors in the input are [`SqlError::Load`],
    /// exactly as the CPU loader reports them.
    #[error("{error}\ntable \"{table}\" is unchanged")]
    Gpu {
        /// the table that was being loaded
        table: String,
        /// why
        error: GpuError,
    },
    /// Catalog errors (table exists, no such table, invalid definition).
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Planning or running a query failed.
    #[error(transparent)]
    Query(DataFusionError),
    /// Writing or reading an unloaded file failed; nothing was left half-written.
    #[error(transparent)]
    Unload(#[from] UnloadError),
    /// EXPORT or IMPORT DATABASE failed; the database and the target are unchanged.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// Another write to the same table was published while this one ran (first writer wins).
    #[error(
        "could not serialize access to table \"{table}\" due to a concurrent write; retry the statement"
    )]
    SerializationFailure {
        /// the table
        table: String,
    },
    /// A statement of the open transaction failed; only COMMIT (which rolls back) or
    /// ROLLBACK end it.
    #[error("current transaction is aborted, commands ignored until end of transaction block")]
    InFailedTransaction,
    /// SAVEPOINT, RELEASE or ROLLBACK TO outside a transaction.
    #[error("{0} can only be used in transaction blocks")]
    NoTransaction(&'static str),
    /// `ON CONFLICT (columns)` or `ON CONFLICT ON CONSTRAINT name` names no unique index of
    /// the table.
    #[error("there is no unique constraint matching the ON CONFLICT specification: {0}")]
    NoConflictTarget(String),
    /// Two rows of an `INSERT ... ON CONFLICT DO UPDATE` have the same key.
    #[error(
        "ON CONFLICT DO UPDATE command cannot affect row a second time: two proposed rows \
         have the key ({0})"
    )]
    UpsertTwice(String),
    /// RELEASE or ROLLBACK TO a savepoint the transaction does not have.
    #[error("savepoint \"{0}\" does not exist")]
    NoSuchSavepoint(String),
    /// The statement was cancelled (Ctrl-C, a client's cancel request).
    #[error("statement cancelled")]
    Cancelled,
    /// The statement ran longer than `statement_timeout` and was cancelled.
    #[error("canceling statement due to statement timeout (statement_timeout = {} ms)", limit.as_millis())]
    Timeout {
        /// the setting
        limit: std::time::Duration,
    },
    /// The system could not do what was asked (no threads to start...).
    #[error("{0}")]
    Resources(String),
    /// A bug of wireload: an invariant did not hold.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<datafusion::arrow::error::ArrowError> for SqlError {
    fn from(e: datafusion::arrow::error::ArrowError) -> Self {
        SqlError::Query(DataFusionError::from(e))
    }
}

impl From<ParserError> for SqlError {
    fn from(e: ParserError) -> Self {
        SqlError::Syntax(e)
    }
}

impl From<wireload_types::sql::ColumnsError> for SqlError {
    fn from(e: wireload_types::sql::ColumnsError) -> Self {
        use wireload_types::sql::ColumnsError as C;
        match e {
            C::Syntax(e) => SqlError::Syntax(e),
            C::NotSupported(m) => SqlError::NotSupported(m),
            C::Invalid(m) => SqlError::InvalidOption(m),
            C::UnknownType(name) => SqlError::UndefinedType(name),
            e => SqlError::Internal(e.to_string()),
        }
    }
}

impl From<DataFusionError> for SqlError {
    fn from(e: DataFusionError) -> Self {
        match e {
            DataFusionError::SQL(e, _) => SqlError::Syntax(*e),
            e => SqlError::Query(e),
        }
    }
}

impl SqlError {
    /// The SQLSTATE class of the error, as PostgreSQL would report it.
    pub fn sqlstate(&self) -> SqlState {
        match self {
            SqlError::Syntax(_) => SqlState::SYNTAX_ERROR,
            SqlError::NotSupported(_) => SqlState::FEATURE_NOT_SUPPORTED,
            SqlError::TooComplex { .. } => SqlState::STATEMENT_TOO_COMPLEX,
            SqlError::InvalidOption(_) => SqlState::INVALID_PARAMETER_VALUE,
            SqlError::UndefinedTable(_) => SqlState::UNDEFINED_TABLE,
            SqlError::UndefinedColumn { .. } => SqlState::UNDEFINED_COLUMN,
            SqlError::UndefinedIndex(_)
            | SqlError::UndefinedType(_)
            | SqlError::UndefinedObject(_) => SqlState::UNDEFINED_OBJECT,
            SqlError::Duplicate(_) => SqlState::DUPLICATE_OBJECT,
            SqlError::DependentObjects(_) => SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
            SqlError::DuplicateIndex { .. } => SqlState::DUPLICATE_OBJECT,
            SqlError::WrongObjectType { .. } => SqlState::WRONG_OBJECT_TYPE,
            SqlError::IndexInUse { .. } => SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
            SqlError::PermissionDenied { .. } => SqlState::INSUFFICIENT_PRIVILEGE,
            SqlError::File { source, .. } => match source.kind() {
                std::io::ErrorKind::NotFound => SqlState::UNDEFINED_FILE,
                std::io::ErrorKind::PermissionDenied => SqlState::INSUFFICIENT_PRIVILEGE,
                _ => SqlState::IO_ERROR,
            },
            SqlError::Relabelled { state, .. } => *state,
            SqlError::Load { error, .. } => load_state(error),
            SqlError::Gpu { error, .. } => match error {
                GpuError::Load(e) => load_state(e),
                GpuError::Unsupported(_) => SqlState::FEATURE_NOT_SUPPORTED,
                GpuError::NoGpu(_) | GpuError::Cuda { .. } | GpuError::Compile { .. } => {
                    SqlState::SYSTEM_ERROR
                }
                _ => SqlState::INTERNAL_ERROR,
            },
            SqlError::Storage(e) => match e {
                StorageError::TableExists(_) => SqlState::DUPLICATE_TABLE,
                StorageError::NoSuchTable(_) => SqlState::UNDEFINED_TABLE,
                StorageError::InvalidDefinition(_) => SqlState::INVALID_TABLE_DEFINITION,
                _ => SqlState::INTERNAL_ERROR,
            },
            SqlError::Query(e) => query_state(e),
            SqlError::Unload(e) => unload_state(e),
            SqlError::Export(e) => match e {
                ExportError::Io { .. } => SqlState::IO_ERROR,
                ExportError::Unload(e) => unload_state(e),
                ExportError::Load { error, .. } => load_state(error),
                ExportError::Damaged { .. } | ExportError::NotAnExport { .. } => {
                    SqlState::DATA_CORRUPTED
                }
                ExportError::TableExists { .. } => SqlState::DUPLICATE_TABLE,
                ExportError::TargetExists { .. } => SqlState::DUPLICATE_OBJECT,
                ExportError::Cancelled => SqlState::QUERY_CANCELED,
                _ => SqlState::INTERNAL_ERROR,
            },
            SqlError::Cancelled | SqlError::Timeout { .. } => SqlState::QUERY_CANCELED,
            SqlError::SerializationFailure { .. } => SqlState::SERIALIZATION_FAILURE,
            SqlError::InFailedTransaction => SqlState::IN_FAILED_SQL_TRANSACTION,
            SqlError::NoTransaction(_) => SqlState::NO_ACTIVE_SQL_TRANSACTION,
            SqlError::NoConflictTarget(_) => SqlState::INVALID_COLUMN_REFERENCE,
            SqlError::UpsertTwice(_) => SqlState::CARDINALITY_VIOLATION,
            SqlError::NoSuchSavepoint(_) => SqlState::INVALID_SAVEPOINT_SPECIFICATION,
            SqlError::Resources(_) => SqlState::INSUFFICIENT_RESOURCES,
            SqlError::Internal(_) => SqlState::INTERNAL_ERROR,
        }
    }

    /// True for a bug of wireload (not something the user can fix).
    pub fn is_internal(&self) -> bool {
        self.sqlstate().0.starts_with("XX") && self.sqlstate() != SqlState::DATA_CORRUPTED
    }
}

fn load_state(e: &LoadError) -> SqlState {
    use wireload_types::ValueError as V;
    match e {
        LoadError::Io { .. } => SqlState::IO_ERROR,
        LoadError::Syntax { .. } | LoadError::QuotedNewlineInFastMode { .. } => {
            SqlState::BAD_COPY_FILE_FORMAT
        }
        LoadError::Value { error, .. } => match error {
            V::InvalidSyntax { .. } => SqlState::INVALID_TEXT_REPRESENTATION,
            V::OutOfRange { .. } | V::NumericOverflow { .. } => {
                SqlState::NUMERIC_VALUE_OUT_OF_RANGE
            }
            V::DateTimeOutOfRange => SqlState::DATETIME_FIELD_OVERFLOW,
            V::FormatMismatch { .. } => SqlState::INVALID_DATETIME_FORMAT,
            V::TooLong { .. } => SqlState::STRING_DATA_RIGHT_TRUNCATION,
            V::InvalidUtf8 => SqlState::CHARACTER_NOT_IN_REPERTOIRE,
            V::NotNull => SqlState::NOT_NULL_VIOLATION,
            _ => SqlState::DATA_EXCEPTION,
        },
        LoadError::Mismatch { .. } => SqlState::BAD_COPY_FILE_FORMAT,
        LoadError::ArrowValue { problem, .. } => match problem.as_ref() {
            BadValue::Null => SqlState::NOT_NULL_VIOLATION,
            BadValue::TooLong(_) => SqlState::STRING_DATA_RIGHT_TRUNCATION,
            _ => SqlState::DATA_EXCEPTION,
        },
        LoadError::DuplicateKey { .. } | LoadError::DuplicateInTable { .. } => {
            SqlState::UNIQUE_VIOLATION
        }
        LoadError::NullKey { .. } => SqlState::NOT_NULL_VIOLATION,
        LoadError::Options(_) => SqlState::INVALID_PARAMETER_VALUE,
        LoadError::Cancelled => SqlState::QUERY_CANCELED,
        LoadError::Encoding { .. } => SqlState::UNTRANSLATABLE_CHARACTER,
        LoadError::LineTooLong { .. } => SqlState::PROGRAM_LIMIT_EXCEEDED,
        LoadError::MemoryBudget { .. } => SqlState::OUT_OF_MEMORY,
        LoadError::TooManyRejects { .. } => SqlState::BAD_COPY_FILE_FORMAT,
        _ => SqlState::INTERNAL_ERROR,
    }
}

fn unload_state(e: &UnloadError) -> SqlState {
    match e {
        UnloadError::Io { .. } => SqlState::IO_ERROR,
        UnloadError::Unrepresentable { .. } => SqlState::INVALID_PARAMETER_VALUE,
        UnloadError::Corrupt { .. } => SqlState::DATA_CORRUPTED,
        UnloadError::Options(_) => SqlState::INVALID_PARAMETER_VALUE,
        UnloadError::Cancelled => SqlState::QUERY_CANCELED,
        _ => SqlState::INTERNAL_ERROR,
    }
}

fn query_state(e: &DataFusionError) -> SqlState {
    use datafusion::arrow::error::ArrowError;
    use datafusion::common::SchemaError;
    match e {
        DataFusionError::SQL(..) => SqlState::SYNTAX_ERROR,
        DataFusionError::SchemaError(e, _) => match e.as_ref() {
            SchemaError::FieldNotFound { .. } => SqlState::UNDEFINED_COLUMN,
            _ => SqlState::SYNTAX_ERROR,
        },
        DataFusionError::Plan(msg) if msg.contains("table") && msg.contains("not found") => {
            SqlState::UNDEFINED_TABLE
        }
        DataFusionError::Plan(_) => SqlState::SYNTAX_ERROR,
        DataFusionError::NotImplemented(_) => SqlState::FEATURE_NOT_SUPPORTED,
        DataFusionError::ArrowError(e, _) => match e.as_ref() {
            ArrowError::DivideByZero => SqlState::DIVISION_BY_ZERO,
            ArrowError::CastError(_) | ArrowError::ParseError(_) => {
                SqlState::INVALID_TEXT_REPRESENTATION
            }
            ArrowError::ArithmeticOverflow(_) => SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            ArrowError::MemoryError(_) => SqlState::OUT_OF_MEMORY,
            ArrowError::IoError(..) => SqlState::IO_ERROR,
            _ => SqlState::DATA_EXCEPTION,
        },
        DataFusionError::Execution(_) => SqlState::DATA_EXCEPTION,
        DataFusionError::ResourcesExhausted(_) => SqlState::OUT_OF_MEMORY,
        DataFusionError::IoError(_) | DataFusionError::ObjectStore(_) => SqlState::IO_ERROR,
        DataFusionError::Context(_, inner) => query_state(inner),
        DataFusionError::Diagnostic(_, inner) => query_state(inner),
        DataFusionError::Shared(inner) => query_state(inner),
        DataFusionError::External(_) => SqlState::DATA_EXCEPTION,
        DataFusionError::Internal(_) => SqlState::INTERNAL_ERROR,
        _ => SqlState::INTERNAL_ERROR,
    }
}
