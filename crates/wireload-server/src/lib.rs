//! `wireload serve`: the database as a PostgreSQL server (the wire protocol v3 through the
//! `pgwire` crate: simple and extended queries, COPY FROM STDIN streamed into the parallel
//! loader, COPY TO STDOUT, SCRAM-SHA-256 passwords, TLS, cancel requests), with the users,
//! TLS files and limits the Arrow Flight SQL front end (`wireload-flight`) shares.
#![deny(missing_docs)]
// `SqlError` is large (it carries the load and DataFusion errors by value)
#![allow(clippy::result_large_err)]

pub mod config;
mod copy;
mod errors;
mod params;
pub mod pg_catalog;
mod server;
mod session;
mod types;
pub mod users;
mod wire;

pub use config::{ConfigError, Limits, ServeConfig, TlsFiles};
pub use server::{PgSettings, SERVER_VERSION, ServerError, serve, tls_acceptor};
pub use users::Users;
