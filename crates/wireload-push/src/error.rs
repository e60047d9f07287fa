//! The errors of pushing a load: the client's and the server side's.

use wireload_publish::LoadError;

/// Why a push failed.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The options given do not make sense.
    #[error("{0}")]
    Options(String),
    /// Reading the input or the network failed.
    #[error("{what}: {source}")]
    Io {
        /// what was being done
        what: String,
        /// the I/O error
        source: std::io::Error,
    },
    /// The input is not valid (named by file, line, column and byte), found on the client
    /// before it was sent, or a pushed fragment broke a constraint on the server.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The connection to the server failed or broke.
    #[error("transport: {0}")]
    Transport(String),
    /// The server refused the load; nothing of it became visible.
    #[error("the server refused the load: {0}")]
    Refused(String),
    /// A frame broke the push protocol (the server's side of a refusal).
    #[error("protocol: {0}")]
    Protocol(String),
    /// The PostgreSQL protocol (`pipe` mode) failed.
    #[error("postgres: {0}")]
    Postgres(String),
}

impl PushError {
    /// An I/O error while doing `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        PushError::Io {
            what: what.into(),
            source,
        }
    }
}
