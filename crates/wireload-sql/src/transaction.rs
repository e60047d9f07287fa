//! Transactions: `BEGIN` pins a snapshot of every table; the transaction's statements read
//! and write private copies of them (seeing their own writes); `COMMIT` publishes the
//! written tables all at once when none of them was written by someone else since `BEGIN`
//! (first committer wins), `ROLLBACK` drops the copies. `SAVEPOINT name` remembers every
//! copy's version; `ROLLBACK TO name` puts them back (and ends a failed state), `RELEASE
//! name` forgets the savepoint.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::sql::sqlparser::ast;
use wireload_storage::{Catalog, Table, TableVersion};
use wireload_types::sql::ident_name;

use crate::error::SqlError;
use crate::rebase::rebase;

/// `BEGIN`, `COMMIT`, `ROLLBACK` or a savepoint statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxStatement {
    /// `BEGIN` / `START TRANSACTION`
    Begin,
    /// `COMMIT` / `END`
    Commit,
    /// `ROLLBACK` / `ABORT`
    Rollback,
    /// `SAVEPOINT name`
    Savepoint(String),
    /// `ROLLBACK TO [SAVEPOINT] name`
    RollbackTo(String),
    /// `RELEASE [SAVEPOINT] name`
    Release(String),
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
        ast::Statement::Rollback {
            chain: false,
            savepoint: Some(name),
        } => TxStatement::RollbackTo(ident_name(name)),
        ast::Statement::Savepoint { name } => TxStatement::Savepoint(ident_name(name)),
        ast::Statement::ReleaseSavepoint { name } => TxStatement::Release(ident_name(name)),
        ast::Statement::StartTransaction { .. }
        | ast::Statement::Commit { .. }
        | ast::Statement::Rollback { .. } => {
            return Err(SqlError::NotSupported(format!(
                "{statement} is not supported; use BEGIN, COMMIT, ROLLBACK and SAVEPOINT"
            )));
        }
        _ => return Ok(None),
    }))
}

/// One table of a transaction: its private copy and where it came from.
struct Pinned {
    shared: Arc<Table>,
    private: Arc<Table>,
    /// the version the copy started from
    base: Arc<TableVersion>,
}

/// An open transaction.
pub(crate) struct Transaction {
    tables: BTreeMap<String, Pinned>,
    /// A statement failed: every statement until COMMIT, ROLLBACK or ROLLBACK TO is refused.
    pub(crate) failed: bool,
    /// Savepoints, oldest first: each private copy's version when it was set.
    savepoints: Vec<(String, BTreeMap<String, Arc<TableVersion>>)>,
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
                        base: version,
                    },
                )
            })
            .collect();
        Transaction {
            tables,
            failed: false,
            savepoints: Vec::new(),
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

    /// `SAVEPOINT name`: remembers every private copy as it is now.
    pub(crate) fn savepoint(&mut self, name: String) {
        let versions = self
            .tables
            .iter()
            .map(|(n, p)| (n.clone(), p.private.snapshot()))
            .collect();
        self.savepoints.push((name, versions));
    }

    /// The position of the newest savepoint called `name`.
    fn savepoint_at(&self, name: &str) -> Result<usize, SqlError> {
        self.savepoints
            .iter()
            .rposition(|(n, _)| n == name)
            .ok_or_else(|| SqlError::NoSuchSavepoint(name.to_string()))
    }

    /// `ROLLBACK TO name`: every private copy as it was at the savepoint, which stays (the
    /// ones set after it are gone); the transaction is usable again.
    pub(crate) fn rollback_to(&mut self, name: &str) -> Result<(), SqlError> {
        let at = self.savepoint_at(name)?;
        self.savepoints.truncate(at + 1);
        for (table, version) in &self.savepoints[at].1 {
            if let Some(p) = self.tables.get(table) {
                p.private.begin_write().publish(version.as_ref().clone());
            }
        }
        self.failed = false;
        Ok(())
    }

    /// `RELEASE name`: forgets the savepoint and the ones set after it; the writes stay.
    pub(crate) fn release(&mut self, name: &str) -> Result<(), SqlError> {
        let at = self.savepoint_at(name)?;
        self.savepoints.truncate(at);
        Ok(())
    }

    /// Publishes every table the transaction wrote, all or none. A table that another
    /// write changed since `BEGIN` gets the transaction's writes replayed on its current
    /// version ([`crate::rebase`]); none is published when one of them cannot be (another
    /// write touched a row the transaction wrote: first committer wins), or when a table
    /// was dropped. Returns the tables it published. The replays run on `pool` (the writer
    /// locks are held).
    pub(crate) fn commit(
        self,
        catalog: &Catalog,
        pool: &rayon::ThreadPool,
    ) -> Result<Vec<Arc<Table>>, SqlError> {
        let written: Vec<&Pinned> = self
            .tables
            .values()
            .filter(|p| p.private.snapshot().number != p.base.number)
            .collect();
        // every writer lock in name order (the map's), so two commits cannot deadlock
        let guards: Vec<_> = written.iter().map(|p| p.shared.begin_write()).collect();
        let mut next = Vec::with_capacity(written.len());
        for (p, guard) in written.iter().zip(&guards) {
            let conflict = || SqlError::SerializationFailure {
                table: p.shared.name().to_string(),
            };
            let dropped = catalog
                .table(p.shared.name())
                .is_none_or(|t| !Arc::ptr_eq(&t, &p.shared));
            if dropped {
                return Err(conflict());
            }
            let (now, mine) = (guard.base(), p.private.snapshot());
            let version = if now.content == p.base.content {
                // nothing written since BEGIN (compactions at most, whose dropping of
                // deleted rows the copy does without): the copy as it is, numbered after
                let mut v = mine.as_ref().clone();
                v.number = now.number.max(mine.number) + 1;
                v
            } else {
                pool.install(|| rebase(p.shared.def(), &p.base, &mine, now))?
                    .ok_or_else(conflict)?
            };
            next.push(version);
        }
        for (version, guard) in next.into_iter().zip(guards) {
            guard.publish(version);
        }
        Ok(written.iter().map(|p| Arc::clone(&p.shared)).collect())
    }
}
