//! Arrow data across the PyCapsule interface: results handed to Python without copying their
//! buffers, and Arrow streams of other libraries taken in.

use std::ffi::CStr;
use std::sync::Arc;

use arrow::array::{ArrayData, RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow::datatypes::SchemaRef;
use arrow::ffi::FFI_ArrowSchema;
use arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::errors::{InterfaceError, InternalError};

/// The capsule name of an `ArrowArrayStream` (the Arrow PyCapsule interface).
const STREAM: &CStr = c"arrow_array_stream";
/// The capsule name of an `ArrowSchema`.
const SCHEMA: &CStr = c"arrow_schema";

/// Record batches held by wireload, readable as an Arrow stream by pyarrow, polars, pandas,
/// DuckDB... without copying (`__arrow_c_stream__`).
#[pyclass(module = "wireload", name = "ArrowResult", frozen)]
pub struct ArrowResult {
    schema: SchemaRef,
    batches: Arc<Vec<RecordBatch>>,
}

impl ArrowResult {
    /// A result of `batches`, all of `schema`.
    pub fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        ArrowResult {
            schema,
            batches: Arc::new(batches),
        }
    }
}

#[pymethods]
impl ArrowResult {
    /// Exports the batches as an `ArrowArrayStream` capsule (the buffers are shared, not
    /// copied). A requested schema other than the result's own is not supported.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // A consumer may ask for another schema; the protocol lets the producer ignore it
        // when it cannot cast, and the consumer then casts itself.
        let _ = requested_schema;
        let batches = self.batches.as_ref().clone();
        let reader: Box<dyn RecordBatchReader + Send> = Box::new(RecordBatchIterator::new(
            batches.into_iter().map(Ok),
            self.schema.clone(),
        ));
        let stream = FFI_ArrowArrayStream::new(reader);
        // the capsule owns the stream at its start; a consumer moves it out and leaves a
        // released stream whose drop does nothing
        PyCapsule::new_with_value(py, stream, STREAM)
    }

    /// Exports the schema as an `ArrowSchema` capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = FFI_ArrowSchema::try_from(self.schema.as_ref())
            .map_err(|e| InternalError::new_err(format!("cannot export the schema: {e}")))?;
        PyCapsule::new_with_value(py, schema, SCHEMA)
    }

    /// The number of rows.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }

    /// The number of record batches.
    #[getter]
    fn num_batches(&self) -> usize {
        self.batches.len()
    }

    /// The column names.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// The address of every buffer, batch by batch and column by column, in the order of the
    /// Arrow C data interface (validity first, None where absent; children after their
    /// parent): what a consumer that did not copy sees.
    fn buffer_addresses(&self) -> Vec<Option<usize>> {
        let mut out = Vec::new();
        for batch in self.batches.iter() {
            for column in batch.columns() {
                addresses(&column.to_data(), &mut out);
            }
        }
        out
    }

    fn __len__(&self) -> usize {
        self.num_rows()
    }

    fn __repr__(&self) -> String {
        format!(
            "<wireload.ArrowResult: {} rows, {} columns, {} batches>",
            self.num_rows(),
            self.schema.fields().len(),
            self.batches.len()
        )
    }
}

/// Appends the buffer addresses of `data` and its children.
fn addresses(data: &ArrayData, out: &mut Vec<Option<usize>>) {
    out.push(data.nulls().map(|n| n.buffer().as_ptr() as usize));
    for buffer in data.buffers() {
        out.push(Some(buffer.as_ptr() as usize));
    }
    for child in data.child_data() {
        addresses(child, out);
    }
}

/// Reads every batch of an object with `__arrow_c_stream__` (pyarrow tables and readers,
/// polars frames...), sharing its buffers.
pub fn import_stream(obj: &Bound<'_, PyAny>) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    if !obj.hasattr("__arrow_c_stream__")? {
        return Err(PyTypeError::new_err(format!(
            "expected an object with __arrow_c_stream__ (a pyarrow Table, a polars DataFrame...), got {}",
            obj.get_type().name()?
        )));
    }
    let capsule = obj.call_method0("__arrow_c_stream__")?;
    let capsule = capsule
        .cast::<PyCapsule>()
        .map_err(|_| InterfaceError::new_err("__arrow_c_stream__ did not return a PyCapsule"))?;
    // fails (ValueError) unless the capsule is named arrow_array_stream
    let pointer = capsule.pointer_checked(Some(STREAM))?;
    // SAFETY: the capsule is named arrow_array_stream, so by the Arrow PyCapsule interface it
    // holds a valid FFI_ArrowArrayStream; from_raw moves the stream out and marks the one in
    // the capsule released, so the capsule's destructor releases nothing twice.
    let reader = unsafe { ArrowArrayStreamReader::from_raw(pointer.as_ptr().cast()) }
        .map_err(|e| InterfaceError::new_err(format!("cannot import the Arrow stream: {e}")))?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| InterfaceError::new_err(format!("cannot read the Arrow stream: {e}")))?;
    Ok((schema, batches))
}
