//! The catalog: table names to tables.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use crate::StorageError;
use crate::table::{Table, TableDef};

/// All tables of a database, by name (names are case-sensitive here; the SQL layer
/// normalizes identifiers before it asks).
#[derive(Debug, Default)]
pub struct Catalog {
    tables: RwLock<BTreeMap<String, Arc<Table>>>,
    /// the last loads finished, oldest first
    loads: Mutex<VecDeque<LoadRecord>>,
}

/// Loads the catalog remembers for the `wireload_loads` view.
pub const LOADS_KEPT: usize = 1000;

/// What one finished load (a Shared Loading push) did, as the server accounted it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadRecord {
    /// The table loaded into.
    pub table: String,
    /// How it was loaded (the push mode).
    pub kind: String,
    /// The input, as the client named it.
    pub source: String,
    /// Rows added.
    pub rows: u64,
    /// Bytes received.
    pub bytes: u64,
    /// Wall seconds.
    pub seconds: f64,
    /// CPU seconds per step of the server's work.
    pub steps: Vec<(String, f64)>,
    /// When it was published.
    pub finished: SystemTime,
}

impl Catalog {
    /// Remembers a finished load (the oldest is forgotten past [`LOADS_KEPT`]).
    pub fn record_load(&self, load: LoadRecord) {
        let mut loads = self.loads.lock().unwrap_or_else(|e| e.into_inner());
        if loads.len() == LOADS_KEPT {
            loads.pop_front();
        }
        loads.push_back(load);
    }

    /// The loads remembered, oldest first.
    pub fn loads(&self) -> Vec<LoadRecord> {
        let loads = self.loads.lock().unwrap_or_else(|e| e.into_inner());
        loads.iter().cloned().collect()
    }

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
