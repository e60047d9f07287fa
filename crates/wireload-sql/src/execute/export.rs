//! EXPORT DATABASE and IMPORT DATABASE.

use crate::error::SqlError;
use crate::export::{Export, Import};
use crate::parse::{Statement, parse_script};
use crate::{Database, gate};
use std::sync::Arc;
use wireload_load::LoadControl;
use wireload_storage::{IndexDef, TableDef};
use wireload_unload::export::Export as ExportFiles;

impl Database {
    pub(crate) async fn export(
        &self,
        export: Export,
        ctl: &LoadControl,
    ) -> Result<String, SqlError> {
        let target = self
            .file_access()
            .write(&export.dir, gate::Use::Write("EXPORT DATABASE"))?;
        let catalog = Arc::clone(&self.catalog);
        let ctl = ctl.clone();
        self.run_blocking(None, move || {
            wireload_unload::export::export_database(
                &catalog,
                &target.path(),
                export.compression,
                &ctl,
            )
            .map_err(|e| target.unmask(e.into()))
        })
        .await
    }

    pub(crate) async fn import(
        &self,
        import: Import,
        ctl: &LoadControl,
    ) -> Result<String, SqlError> {
        let dir = self.file_access().read(
            &import.dir,
            gate::Use::Read("IMPORT DATABASE"),
            gate::Kind::Directory,
        )?;
        let catalog = Arc::clone(&self.catalog);
        let ctl = ctl.clone();
        let taken = self.schema.other_names();
        self.run_blocking(None, move || {
            let run = || {
                let mut files = ExportFiles::read(&dir.path())?;
                // exports written before manifest version 2 hold SQL text only
                files.resolve_sql(&definitions_of)?;
                Ok(files.import(&catalog, &taken, &ctl)?)
            };
            run().map_err(|e| dir.unmask(e))
        })
        .await
    }
}

/// The definition of a table of a version 1 export, from its SQL text.
pub(crate) fn definitions_of(
    create: &str,
    indexes: &[String],
) -> Result<(TableDef, Vec<IndexDef>), String> {
    let one = |sql: &str| -> Result<Statement, String> {
        let mut parsed = parse_script(sql).map_err(|e| e.to_string())?;
        match parsed.len() {
            1 => Ok(parsed.remove(0).statement),
            n => Err(format!("expected one statement, found {n}")),
        }
    };
    let def = match one(create)? {
        Statement::CreateTable(c) => c.def,
        _ => return Err("not a CREATE TABLE statement".into()),
    };
    let mut extra = Vec::with_capacity(indexes.len());
    for sql in indexes {
        match one(sql)? {
            Statement::CreateIndex(c) => extra.push(c.resolve(&def).map_err(|e| e.to_string())?),
            _ => return Err("not a CREATE INDEX statement".into()),
        }
    }
    Ok((def, extra))
}
