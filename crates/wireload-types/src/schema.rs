//! Column definitions and table schemas.

use std::sync::Arc;

use arrow::datatypes::{Schema, SchemaRef};

use crate::error::TypeError;
use crate::ty::SqlType;

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDef {
    /// Column name (as written, case preserved; SQL lookups are done by the SQL layer).
    pub name: String,
    /// Its SQL type.
    pub ty: SqlType,
    /// False when declared `NOT NULL`.
    pub nullable: bool,
}

/// The ordered columns of a table.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableSchema {
    /// Columns in table order.
    pub columns: Vec<ColumnDef>,
}

impl TableSchema {
    /// Parses a column list such as `id INT NOT NULL, name VARCHAR(20), price DECIMAL(10,2)`.
    pub fn parse(text: &str) -> Result<Self, TypeError> {
        let _ = text;
        todo!()
    }

    /// The Arrow schema with one field per column.
    pub fn arrow_schema(&self) -> SchemaRef {
        Arc::new(Schema::new(Vec::<arrow::datatypes::Field>::new()))
    }
}
