//! How each kind of statement runs: one `impl Database` block per kind, beside the
//! dispatch in the crate root.

mod copy;
mod ddl;
mod export;
mod files;
mod prepared;
mod query;
mod transaction;
mod write;

pub use copy::UnloadSummary;
pub use prepared::PreparedStatement;
