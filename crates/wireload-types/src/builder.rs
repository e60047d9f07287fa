//! Column builders: append validated values straight into Arrow buffers.

use arrow::array::ArrayRef;

use crate::Field;
use crate::error::{FieldError, ValueError};
use crate::ty::SqlType;

/// Builds one Arrow array of one SQL type from fields of text.
#[derive(Debug)]
pub struct ColumnBuilder {
    _ty: SqlType,
}

impl ColumnBuilder {
    /// A builder for `ty`; `rows_hint` and `bytes_hint` (string bytes) size its buffers.
    pub fn new(ty: &SqlType, nullable: bool, rows_hint: usize, bytes_hint: usize) -> Self {
        let _ = (nullable, rows_hint, bytes_hint);
        ColumnBuilder { _ty: *ty }
    }

    /// Appends every field; an unquoted field equal to `null` is NULL. Stops at the first
    /// invalid field and reports its index in the sequence.
    pub fn append_fields<'a, I: Iterator<Item = Field<'a>>>(
        &mut self,
        fields: I,
        null: &[u8],
    ) -> Result<(), FieldError> {
        let _ = (fields, null);
        todo!()
    }

    /// Appends one SQL NULL (an error for a NOT NULL column).
    pub fn append_null(&mut self) -> Result<(), ValueError> {
        todo!()
    }

    /// Appends the values of an array built by a builder of the same type, one by one.
    pub fn append_array(&mut self, array: &ArrayRef) {
        let _ = array;
        todo!()
    }

    /// Number of values appended since the last finish.
    pub fn len(&self) -> usize {
        todo!()
    }

    /// True when no value was appended since the last finish.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of string data appended since the last finish (0 for fixed-width types).
    pub fn value_bytes(&self) -> usize {
        todo!()
    }

    /// Returns the array built so far and resets the builder.
    pub fn finish(&mut self) -> ArrayRef {
        todo!()
    }
}
