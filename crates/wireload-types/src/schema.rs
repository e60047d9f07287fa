//! Column definitions and table schemas.

use std::sync::Arc;

use arrow::datatypes::{Schema, SchemaRef};

use crate::ty::SqlType;

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDef {
    /// Column name: unquoted identifiers lower-cased, double-quoted ones as written
    /// (PostgreSQL's rule); SQL lookups are done by the SQL layer.
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
    /// The Arrow schema with one field per column.
    pub fn arrow_schema(&self) -> SchemaRef {
        let fields: Vec<arrow::datatypes::Field> = self
            .columns
            .iter()
            .map(|c| arrow::datatypes::Field::new(&c.name, c.ty.arrow_type(), c.nullable))
            .collect();
        Arc::new(Schema::new(fields))
    }
}

/// Column names usable in a table: an empty name becomes `columnN` (1-based position), and a
/// repeated name gets a `_2`, `_3`... suffix.
pub fn unique_column_names(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let base = if name.trim().is_empty() {
            format!("column{}", i + 1)
        } else {
            name.clone()
        };
        let mut candidate = base.clone();
        let mut n = 2;
        while out.contains(&candidate) {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        out.push(candidate);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::DataType;

    fn col(name: &str, ty: SqlType, nullable: bool) -> ColumnDef {
        ColumnDef {
            name: name.to_string(),
            ty,
            nullable,
        }
    }

    #[test]
    fn builds_the_arrow_schema() {
        let schema = TableSchema {
            columns: vec![
                col("id", SqlType::Integer, false),
                col(
                    "Price",
                    SqlType::Decimal {
                        precision: 10,
                        scale: 2,
                    },
                    true,
                ),
            ],
        };
        let arrow = schema.arrow_schema();
        assert_eq!(arrow.fields().len(), 2);
        assert_eq!(arrow.field(0).name(), "id");
        assert_eq!(arrow.field(0).data_type(), &DataType::Int32);
        assert!(!arrow.field(0).is_nullable());
        assert_eq!(arrow.field(1).name(), "Price");
        assert_eq!(arrow.field(1).data_type(), &DataType::Decimal128(10, 2));
        assert!(arrow.field(1).is_nullable());
    }
}
