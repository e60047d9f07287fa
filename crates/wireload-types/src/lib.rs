//! SQL types and table schemas, validated text-to-value deserializers following
//! PostgreSQL input semantics, and column builders that write Arrow buffers directly. With
//! the `sql` feature, [`sql`] maps sqlparser's types and column lists to these (statements
//! are parsed by `wireload-sql`).
//!
//! ```
//! use wireload_types::{ColumnBuilder, Field, SqlType};
//! let ty = SqlType::Decimal { precision: 5, scale: 2 };
//! let mut b = ColumnBuilder::new(&ty, true, 2, 0);
//! let fields = [Field::unquoted(b"1.005"), Field::unquoted(b"")];
//! b.append_fields(fields.into_iter(), b"").unwrap();
//! assert_eq!(b.finish().len(), 2);
//! ```
#![deny(missing_docs)]

pub mod builder;
pub mod deser;
pub mod error;
pub mod format;
mod prefault;
pub mod schema;
#[cfg(feature = "sql")]
pub mod sql;
mod swar;
pub mod ty;

pub use builder::ColumnBuilder;
pub use error::{FieldError, ValueError};
pub use format::{DateTimeFormat, Formats};
pub use schema::{ColumnDef, TableSchema, unique_column_names};
pub use ty::SqlType;

/// One field of input text as the CSV scanner delivers it (quotes and escapes already removed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field<'a> {
    /// The field's bytes, unescaped.
    pub bytes: &'a [u8],
    /// Whether the field was quoted in the input (a quoted field is never NULL).
    pub quoted: bool,
}

impl<'a> Field<'a> {
    /// A field that was not quoted in the input.
    pub fn unquoted(bytes: &'a [u8]) -> Self {
        Field {
            bytes,
            quoted: false,
        }
    }
    /// A field that was quoted in the input.
    pub fn quoted(bytes: &'a [u8]) -> Self {
        Field {
            bytes,
            quoted: true,
        }
    }
}

#[cfg(test)]
mod tests;
