//! The DataFusion session that plans and runs queries over a wireload catalog.

use std::sync::Arc;

use datafusion::common::config::Dialect as SqlDialect;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use wireload_storage::Catalog;

use crate::order::KeepInsertionOrder;
use crate::provider::CatalogSchema;

/// The catalog DataFusion sees wireload's tables in.
pub const DEFAULT_CATALOG: &str = "wireload";
/// The schema wireload's tables live in.
pub const DEFAULT_SCHEMA: &str = "public";

/// A DataFusion session over `catalog`: its tables in `wireload.public` (with views and
/// other providers DataFusion registers beside them), queries planned for `threads`
/// partitions, PostgreSQL's SQL dialect, and insertion order kept where no ORDER BY says
/// otherwise. Returns the session and the schema provider that holds the tables.
pub fn new_session(catalog: Arc<Catalog>, threads: usize) -> (SessionContext, Arc<CatalogSchema>) {
    let mut config = SessionConfig::new()
        .with_target_partitions(threads.max(1))
        .with_information_schema(true)
        .with_default_catalog_and_schema(DEFAULT_CATALOG, DEFAULT_SCHEMA);
    config.options_mut().sql_parser.dialect = SqlDialect::PostgreSQL;
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_physical_optimizer_rule(Arc::new(KeepInsertionOrder))
        .build();
    let ctx = SessionContext::new_with_state(state);
    let schema = Arc::new(CatalogSchema::new(catalog));
    ctx.catalog(DEFAULT_CATALOG)
        .expect("the default catalog exists")
        .register_schema(DEFAULT_SCHEMA, Arc::clone(&schema) as _)
        .expect("the default catalog accepts schemas");
    (ctx, schema)
}
