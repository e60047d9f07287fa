//! `wireload._native`: the extension module under the Python package `wireload` (CSV into
//! Arrow without copies, and SQL over an in-memory wireload database). The Python layer in
//! `python/wireload` gives it its DB-API 2.0 shape.
// `SqlError` is large (it carries a `LoadError` and a `DataFusionError` by value, the
// statement layer's public API); statements are not a hot path.
#![allow(clippy::result_large_err)]

mod arrow;
mod connection;
mod csv;
mod errors;
mod params;
mod run;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<arrow::ArrowResult>()?;
    m.add_class::<connection::PyDatabase>()?;
    m.add_function(wrap_pyfunction!(csv::load_csv, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
