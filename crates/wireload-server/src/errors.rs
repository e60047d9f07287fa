//! wireload's errors as PostgreSQL error responses: the SQLSTATE code, the message, and for
//! a load error the position (file, line, column, byte) in the detail field as well.

use pgwire::error::{ErrorInfo, PgWireError};
use wireload_sql::SqlError;

/// PostgreSQL's severity of an error that ends the statement.
const ERROR: &str = "ERROR";
/// ... and of one that ends the connection.
const FATAL: &str = "FATAL";

/// The error response of a failed statement.
pub fn sql_error(e: &SqlError) -> PgWireError {
    let mut info = ErrorInfo::new(ERROR.into(), e.sqlstate().0.into(), e.to_string());
    if let SqlError::Load { error, .. } = e
        && let Some(pos) = error.position()
    {
        info.detail = Some(format!(
            "file: {}, line: {}, column: {}{}, byte offset: {}",
            pos.file,
            pos.line,
            pos.column,
            pos.column_name
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default(),
            pos.byte
        ));
    }
    PgWireError::UserError(Box::new(info))
}

/// An error response with `code` and `message`.
pub fn user_error(code: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        ERROR.into(),
        code.into(),
        message.into(),
    )))
}

/// An error that closes the connection (after it is sent).
pub fn fatal(code: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        FATAL.into(),
        code.into(),
        message.into(),
    )))
}
