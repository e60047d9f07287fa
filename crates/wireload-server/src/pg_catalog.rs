//! PostgreSQL's system catalog over wireload's: the `pg_catalog` schema (pg_class,
//! pg_attribute, pg_type, pg_index, pg_namespace, pg_database... computed from the live
//! catalog each time they are scanned), the functions psql and drivers call (`format_type`,
//! `pg_get_indexdef`, `version()`, `current_schema()`...), and the rewrite of the
//! PostgreSQL-only syntax of their queries (`OPERATOR(pg_catalog.~)`, `COLLATE
//! pg_catalog.default`, `::regclass` casts, `pg_catalog.` prefixes) into what DataFusion
//! plans. Together they make psql's `\d`, `\d name`, `\dt`, `\di`, `\dv`, `\dn` and `\l`
//! work.
//!
//! Object ids are stable: a relation's oid is a hash of its kind, schema and name, so the
//! oid psql reads in one query finds the same relation in the next one; the built-in
//! types, namespaces and the database have PostgreSQL's own oids.

mod functions;
mod objects;
mod rewrite;
mod tables;

use std::sync::Arc;

use datafusion::error::DataFusionError;
use datafusion::sql::sqlparser::ast;

pub use objects::{CATALOG_OWNER, DATABASE_NAME};

/// Adds the pg_catalog schema (tables computed from the live catalog at scan time) and the
/// PostgreSQL functions psql and drivers call to `db`'s session.
pub fn install(db: &wireload_sql::Database) -> Result<(), DataFusionError> {
    let session = db.session();
    let catalog = session
        .catalog(wireload_sql::DEFAULT_CATALOG)
        .ok_or_else(|| {
            DataFusionError::Plan(format!(
                "the session has no catalog \"{}\"",
                wireload_sql::DEFAULT_CATALOG
            ))
        })?;
    let context = Arc::new(objects::Context::new(
        Arc::clone(db.catalog()),
        Arc::downgrade(&catalog),
        Arc::clone(db.roles()),
    ));
    catalog.register_schema(
        tables::SCHEMA,
        Arc::new(tables::PgCatalogSchema::new(Arc::clone(&context))),
    )?;
    functions::register(session, &context);
    Ok(())
}

/// Rewrites PostgreSQL-only syntax in a parsed query into what DataFusion plans (e.g.
/// `OPERATOR(pg_catalog.~)` -> `~`, `COLLATE pg_catalog.default` dropped, `::regclass` /
/// `::regtype` / `'x'::pg_catalog.regclass` casts, `pg_catalog.` prefixes on functions,
/// unqualified catalog tables, selects joining a catalog table that is always empty).
pub fn rewrite(statement: &mut ast::Statement) {
    rewrite::rewrite(statement);
}
