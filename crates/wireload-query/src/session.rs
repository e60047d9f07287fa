//! The DataFusion session that plans and runs queries over a wireload catalog.

use std::sync::Arc;

use datafusion::common::config::Dialect as SqlDialect;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::memory_pool::FairSpillPool;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
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
/// Its queries take memory from `runtime`'s pool ([`runtime`]).
pub fn new_session(
    catalog: Arc<Catalog>,
    threads: usize,
    runtime: Arc<RuntimeEnv>,
) -> (SessionContext, Arc<CatalogSchema>) {
    let schema = Arc::new(CatalogSchema::new(catalog));
    (session_over(Arc::clone(&schema), threads, runtime), schema)
}

/// The runtime the sessions of one database share: with `memory_limit`, their queries'
/// sorts, aggregations and joins take memory from one pool of that many bytes, each
/// spilling to the system's temporary directory past its fair share, and a query that
/// cannot spill fails alone when the pool is spent; without it, no limit.
pub fn runtime(memory_limit: Option<usize>) -> Arc<RuntimeEnv> {
    let builder = RuntimeEnvBuilder::new();
    let builder = match memory_limit {
        Some(bytes) => builder.with_memory_pool(Arc::new(FairSpillPool::new(bytes))),
        None => builder,
    };
    builder
        .build_arc()
        .expect("a runtime with the default disk manager builds")
}

/// Another session over the tables and views of `schema` (its own settings, and its own
/// overlay for a transaction's private tables).
pub fn new_sibling_session(
    schema: &CatalogSchema,
    threads: usize,
    runtime: Arc<RuntimeEnv>,
) -> (SessionContext, Arc<CatalogSchema>) {
    let schema = Arc::new(schema.sibling());
    (session_over(Arc::clone(&schema), threads, runtime), schema)
}

fn session_over(
    schema: Arc<CatalogSchema>,
    threads: usize,
    runtime: Arc<RuntimeEnv>,
) -> SessionContext {
    let mut config = SessionConfig::new()
        .with_target_partitions(threads.max(1))
        .with_information_schema(true)
        .with_default_catalog_and_schema(DEFAULT_CATALOG, DEFAULT_SCHEMA);
    config.options_mut().sql_parser.dialect = SqlDialect::PostgreSQL;
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(runtime)
        .with_default_features()
        .with_physical_optimizer_rule(Arc::new(KeepInsertionOrder))
        .build();
    let ctx = SessionContext::new_with_state(state);
    ctx.catalog(DEFAULT_CATALOG)
        .expect("the default catalog exists")
        .register_schema(DEFAULT_SCHEMA, schema as _)
        .expect("the default catalog accepts schemas");
    ctx
}
