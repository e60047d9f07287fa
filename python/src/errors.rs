//! The DB-API 2.0 exception hierarchy, and wireload's errors raised as its exceptions with
//! the position of a bad input as attributes.

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use wireload_load::LoadError;
use wireload_sql::SqlError;

pyo3::create_exception!(
    wireload,
    Warning,
    PyException,
    "Important warnings (DB-API 2.0)."
);
pyo3::create_exception!(
    wireload,
    Error,
    PyException,
    "The base class of wireload's errors (DB-API 2.0)."
);
pyo3::create_exception!(
    wireload,
    InterfaceError,
    Error,
    "Misuse of the Python interface (a closed connection or cursor, a bad argument)."
);
pyo3::create_exception!(wireload, DatabaseError, Error, "An error of the database.");
pyo3::create_exception!(
    wireload,
    DataError,
    DatabaseError,
    "Bad data: a CSV value or record that does not fit, with `file`, `line`, `column`, `column_name` and `byte_offset` attributes."
);
pyo3::create_exception!(
    wireload,
    OperationalError,
    DatabaseError,
    "The database's operation failed (cancelled, out of resources, a file that cannot be read)."
);
pyo3::create_exception!(
    wireload,
    IntegrityError,
    DatabaseError,
    "A constraint was violated (a duplicate or NULL key)."
);
pyo3::create_exception!(wireload, InternalError, DatabaseError, "A bug of wireload.");
pyo3::create_exception!(
    wireload,
    ProgrammingError,
    DatabaseError,
    "A bad statement: a syntax error, an unknown table or column, a wrong option."
);
pyo3::create_exception!(
    wireload,
    NotSupportedError,
    DatabaseError,
    "Something wireload does not do (yet)."
);

/// The exception for `error`, with `sqlstate` and, for bad input, its position as attributes.
pub fn sql_error(py: Python<'_>, error: &SqlError) -> PyErr {
    raise(py, error, error.to_string())
}

/// The exception for a failed load outside SQL (`read_csv`): the load's own message, without
/// a table's name.
pub fn load_error(py: Python<'_>, error: LoadError, table: &str) -> PyErr {
    let message = error.to_string();
    let error = SqlError::Load {
        table: table.to_string(),
        error,
    };
    raise(py, &error, message)
}

/// The DB-API class of `error` (by its SQLSTATE), carrying `message`.
fn raise(py: Python<'_>, error: &SqlError, message: String) -> PyErr {
    let state = error.sqlstate().0;
    let err = match state {
        _ if error.is_internal() => InternalError::new_err(message),
        "57014" => OperationalError::new_err(message),
        "22023" => ProgrammingError::new_err(message),
        s if s.starts_with("22") => DataError::new_err(message),
        s if s.starts_with("23") => IntegrityError::new_err(message),
        s if s.starts_with("0A") => NotSupportedError::new_err(message),
        s if s.starts_with("42") => ProgrammingError::new_err(message),
        _ => OperationalError::new_err(message),
    };
    let load = match error {
        SqlError::Load { error, .. } => Some(error),
        _ => None,
    };
    annotate(py, &err, state, load);
    err
}

/// Sets `sqlstate` and the position attributes (None where the error has no position).
fn annotate(py: Python<'_>, err: &PyErr, state: &str, load: Option<&LoadError>) {
    let value = err.value(py);
    let pos = load.and_then(|e| e.position());
    // attributes on a fresh exception instance cannot fail but for memory; a failure would
    // only lose the attributes, never the exception
    let _ = value.setattr("sqlstate", state);
    let _ = value.setattr("file", pos.map(|p| p.file.clone()));
    let _ = value.setattr("line", pos.map(|p| p.line));
    let _ = value.setattr("column", pos.map(|p| p.column));
    let _ = value.setattr("column_name", pos.and_then(|p| p.column_name.clone()));
    let _ = value.setattr("byte_offset", pos.map(|p| p.byte));
}

/// Registers the exception classes in the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Warning", py.get_type::<Warning>())?;
    m.add("Error", py.get_type::<Error>())?;
    m.add("InterfaceError", py.get_type::<InterfaceError>())?;
    m.add("DatabaseError", py.get_type::<DatabaseError>())?;
    m.add("DataError", py.get_type::<DataError>())?;
    m.add("OperationalError", py.get_type::<OperationalError>())?;
    m.add("IntegrityError", py.get_type::<IntegrityError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add("ProgrammingError", py.get_type::<ProgrammingError>())?;
    m.add("NotSupportedError", py.get_type::<NotSupportedError>())?;
    Ok(())
}
