//! CREATE TABLE, DROP TABLE, CREATE INDEX and DROP INDEX.

use crate::ddl::{CreateIndex, DropIndex, DropTable};
use crate::error::SqlError;
use crate::{Database, StatementOutput};
use std::sync::Arc;
use wireload_storage::{StorageError, Table, TableDef};

impl Database {
    /// Creates the empty table `def`; with `if_not_exists` an existing table (or view) of
    /// that name is no error (and is left as it is). The session's role needs CREATE on
    /// the database, and owns the new table.
    pub fn create_table(&self, def: TableDef, if_not_exists: bool) -> Result<(), SqlError> {
        let actor = self.actor();
        self.roles.check_create(&actor)?;
        let name = def.name.clone();
        let existed = self.catalog.table(&name).is_some();
        if !existed {
            for ix in &def.indexes {
                if let Some(owner) = self.index_owner(&ix.name) {
                    return Err(SqlError::DuplicateIndex {
                        index: ix.name.clone(),
                        table: owner.name().to_string(),
                    });
                }
            }
        }
        if self.schema.has_other(&name) {
            if if_not_exists {
                return Ok(());
            }
            return Err(SqlError::Storage(StorageError::TableExists(name)));
        }
        self.catalog.create_table(def, if_not_exists)?;
        if !existed {
            self.roles.created(&actor, &name, Vec::new());
        }
        Ok(())
    }

    pub(crate) fn drop_tables(&self, drop: &DropTable) -> Result<StatementOutput, SqlError> {
        // check every name first: a failing DROP drops nothing
        for name in &drop.names {
            if self.catalog.table(name).is_none() {
                if self.schema.has_other(name) {
                    return Err(SqlError::WrongObjectType {
                        name: name.clone(),
                        is: "view",
                        wanted: "table",
                        hint: format!("; use DROP VIEW {name}"),
                    });
                }
                if !drop.if_exists {
                    return Err(SqlError::UndefinedTable(name.clone()));
                }
            }
        }
        for name in &drop.names {
            self.catalog.drop_table(name, true)?;
            self.header_named
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(name);
        }
        Ok(StatementOutput::Done("DROP TABLE".into()))
    }

    /// The table that has an index called `name`.
    pub(crate) fn index_owner(&self, name: &str) -> Option<Arc<Table>> {
        self.catalog
            .table_names()
            .into_iter()
            .filter_map(|t| self.catalog.table(&t))
            .find(|t| t.snapshot().index(name).is_some())
    }

    pub(crate) async fn create_index(
        &self,
        create: CreateIndex,
    ) -> Result<StatementOutput, SqlError> {
        let table = self.table(&create.table)?;
        let ix = create.resolve(table.def())?;
        if let Some(owner) = self.index_owner(&ix.name) {
            if create.if_not_exists {
                return Ok(StatementOutput::Done("CREATE INDEX".into()));
            }
            return Err(SqlError::DuplicateIndex {
                index: ix.name,
                table: owner.name().to_string(),
            });
        }
        let table_name = table.name().to_string();
        self.run_blocking(None, move || {
            wireload_publish::create_index(&table, ix).map_err(|error| SqlError::Load {
                table: table_name,
                error,
            })
        })
        .await?;
        Ok(StatementOutput::Done("CREATE INDEX".into()))
    }

    pub(crate) fn drop_index(&self, drop: &DropIndex) -> Result<StatementOutput, SqlError> {
        // check every name first: a failing DROP drops nothing
        let mut owners = Vec::with_capacity(drop.names.len());
        for name in &drop.names {
            match self.index_owner(name) {
                Some(t) => {
                    if t.def().indexes.iter().any(|i| &i.name == name) {
                        return Err(SqlError::IndexInUse {
                            index: name.clone(),
                            table: t.name().to_string(),
                        });
                    }
                    owners.push((name, t));
                }
                None if drop.if_exists => {}
                None => return Err(SqlError::UndefinedIndex(name.clone())),
            }
        }
        for (name, t) in owners {
            let guard = t.begin_write();
            let next = guard.base().without_index(name);
            guard.publish(next);
        }
        Ok(StatementOutput::Done("DROP INDEX".into()))
    }
}
