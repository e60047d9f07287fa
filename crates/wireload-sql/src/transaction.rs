//! Transactions: `BEGIN` pins a snapshot of every table; the transaction's statements read
//! and write private copies of them (seeing their own writes); `COMMIT` publishes the
//! written tables all at once when none of them was written by someone else since `BEGIN`
//! (first committer wins), `ROLLBACK` drops the copies.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::sql::sqlparser::ast;
use wireload_storage::{Catalog, Table};

use crate::error::SqlError;

/// `BEGIN`, `COMMIT` or `ROLLBACK`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxStatement {
    /// `BEGIN` / `START TRANSACTION`
    Begin,
    /// `COMMIT` / `END`
    Commit,
    /// `ROLLBACK` / `ABORT`
    Rollback,
}

/// The transaction statement `statement` is, if it is one.
pub(crate) fn of_ast(statement: &ast::Statement) -> Result<Option<TxStatement>, SqlError> {
    Ok(Some(match statement {
        ast::Statement::StartTransaction { statements, .. } if statements.is_empty() => {
            TxStatement::Begin
        }
        ast::Statement::Commit { chain: false, .. } => TxStatement::Commit,
        ast::Statement::Rollback {
            chain: false,
            savepoint: None,
        } => TxStatement::Rollback,
        ast::Statement::StartTransaction { .. }
        | ast::Statement::Commit { .. }
        | ast::Statement::Rollback { .. }
        | ast::Statement::Savepoint { .. }
        | ast::Statement::ReleaseSavepoint { .. } => {
            return Err(SqlError::NotSupported(format!(
                "{statement} is not supported; use BEGIN, COMMIT and ROLLBACK"
            )));
        }
        _ => return Ok(None),
    }))
}

/// One table of a transaction: its private copy and where it came from.
struct Pinned {
    shared: Arc<Table>,
    private: Arc<Table>,
    base: u64,
}

/// An open transaction.
pub(crate) struct Transaction {
    tables: BTreeMap<String, Pinned>,
    /// A statement failed: every statement until COMMIT or ROLLBACK is refused.
    pub(crate) failed: bool,
}

impl Transaction {
    /// A transaction over the tables of `catalog` as they are now.
    pub(crate) fn begin(catalog: &Catalog) -> Self {
        let tables = catalog
            .table_names()
            .into_iter()
            .filter_map(|name| catalog.table(&name).map(|t| (name, t)))
            .map(|(name, shared)| {
                let version = shared.snapshot();
                let private = Arc::new(Table::with_version(
                    Arc::clone(shared.def()),
                    Arc::clone(&version),
                ));
                (
                    name,
                    Pinned {
                        shared,
                        private,
                        base: version.number,
                    },
                )
            })
            .collect();
        Transaction {
            tables,
            failed: false,
        }
    }

    /// The private copy of table `name`.
    pub(crate) fn table(&self, name: &str) -> Option<Arc<Table>> {
        self.tables.get(name).map(|p| Arc::clone(&p.private))
    }

    /// Every private copy, by name (what queries of the transaction read).
    pub(crate) fn overlay(&self) -> BTreeMap<String, Arc<Table>> {
        self.tables
            .iter()
            .map(|(n, p)| (n.clone(), Arc::clone(&p.private)))
            .collect()
    }

    /// Publishes every table the transaction wrote, all or none: none when another write
    /// to one of them was published since `BEGIN`, or when one was dropped.
    pub(crate) fn commit(self, catalog: &Catalog) -> Result<(), SqlError> {
        let written: Vec<&Pinned> = self
            .tables
            .values()
            .filter(|p| p.private.snapshot().number != p.base)
            .collect();
        // every writer lock in name order (the map's), so two commits cannot deadlock
        let guards: Vec<_> = written.iter().map(|p| p.shared.begin_write()).collect();
        for (p, guard) in written.iter().zip(&guards) {
            let dropped = catalog
                .table(p.shared.name())
                .is_none_or(|t| !Arc::ptr_eq(&t, &p.shared));
            if dropped || guard.base().number != p.base {
                return Err(SqlError::SerializationFailure {
                    table: p.shared.name().to_string(),
                });
            }
        }
        for (p, guard) in written.iter().zip(guards) {
            guard.publish(p.private.snapshot().as_ref().clone());
        }
        Ok(())
    }
}
