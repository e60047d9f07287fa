//! The catalog: table names to tables.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use crate::StorageError;
use crate::table::{Table, TableDef};

/// All tables of a database, by name (names are case-sensitive here; the SQL layer
/// normalizes identifiers before it asks).
#[derive(Debug, Default)]
pub struct Catalog {
    tables: RwLock<BTreeMap<String, Arc<Table>>>,
}

impl Catalog {
    /// Creates an empty table; with `if_not_exists` an existing table is returned instead.
    pub fn create_table(
        &self,
        def: TableDef,
        if_not_exists: bool,
    ) -> Result<Arc<Table>, StorageError> {
        let mut tables = self.tables.write().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = tables.get(&def.name) {
            return if if_not_exists {
                Ok(Arc::clone(t))
            } else {
                Err(StorageError::TableExists(def.name))
            };
        }
        let table = Arc::new(Table::new(def));
        tables.insert(table.name().to_string(), Arc::clone(&table));
        Ok(table)
    }

    /// Adds filled tables all at once, or none of them when any name is taken.
    pub fn attach(&self, new: Vec<Arc<Table>>) -> Result<(), StorageError> {
        let mut tables = self.tables.write().unwrap_or_else(|e| e.into_inner());
        for (i, t) in new.iter().enumerate() {
            if tables.contains_key(t.name()) || new[..i].iter().any(|o| o.name() == t.name()) {
                return Err(StorageError::TableExists(t.name().to_string()));
            }
        }
        for t in new {
            tables.insert(t.name().to_string(), t);
        }
        Ok(())
    }

    /// Removes a table; queries holding its snapshots keep them.
    pub fn drop_table(&self, name: &str, if_exists: bool) -> Result<bool, StorageError> {
        let mut tables = self.tables.write().unwrap_or_else(|e| e.into_inner());
        match tables.remove(name) {
            Some(_) => Ok(true),
            None if if_exists => Ok(false),
            None => Err(StorageError::NoSuchTable(name.to_string())),
        }
    }

    /// The table called `name`.
    pub fn table(&self, name: &str) -> Option<Arc<Table>> {
        let tables = self.tables.read().unwrap_or_else(|e| e.into_inner());
        tables.get(name).cloned()
    }

    /// Names of all tables, sorted.
    pub fn table_names(&self) -> Vec<String> {
        let tables = self.tables.read().unwrap_or_else(|e| e.into_inner());
        tables.keys().cloned().collect()
    }
}
