//! `wireload serve`'s Arrow Flight SQL front end: queries answered as Arrow record batch
//! streams (the batches the query produced, no row conversion), prepared statements with
//! parameters (`$1` or `?`), `CommandStatementIngest` bulk ingest of Arrow batches appended
//! atomically (what ADBC's `adbc_ingest` sends), DML and DDL through `DoPut`, and the
//! catalog commands (`GetCatalogs`, `GetDbSchemas`, `GetTables`, `GetTableTypes`,
//! `GetSqlInfo`).
//!
//! Security: the handshake takes HTTP Basic credentials (`authorization: Basic ...`, or a
//! `BasicAuth` payload) and returns a bearer token (32 random bytes, hex) in the
//! `authorization` response header; every other call carries `Bearer <token>` or Basic
//! credentials. Without credentials a call is refused (`UNAUTHENTICATED`), unless the
//! server trusts loopback clients (`--trust-local`) and the client is one. TLS (rustls)
//! from PEM files, a limit on the size of each message received and on connections at
//! once. A malformed message fails its own request only.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use wireload_flight::{FlightSettings, serve};
//! use wireload_server::{Limits, Users};
//! use wireload_sql::{Database, DbConfig};
//! let db = Arc::new(Database::new(DbConfig::default()));
//! let mut users = Users::new();
//! users.add("ann", "secret");
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:32010").await?;
//! let settings = FlightSettings {
//!     users: Arc::new(users),
//!     trust_local: false,
//!     tls: None,
//!     limits: Limits::default(),
//!     files: Default::default(), // no server file for any client
//! };
//! // runs until the future given as `shutdown` resolves (here: never)
//! serve(db, listener, settings, std::future::pending::<()>()).await?;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod auth;
mod convert;
mod service;

use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use arrow_flight::flight_service_server::FlightServiceServer;
use futures::Stream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::transport::server::{Connected, TcpConnectInfo};
use tonic::transport::{Server, ServerTlsConfig};
use wireload_server::{Limits, TlsFiles, Users};
use wireload_sql::{Database, FileGate};

pub use auth::LOCAL_USER;
pub use service::RESULT_TTL;

/// How the Flight SQL server admits clients.
#[derive(Debug, Clone)]
pub struct FlightSettings {
    /// Who may log in (user names and passwords).
    pub users: Arc<Users>,
    /// Loopback clients need no credentials (they act as [`LOCAL_USER`]).
    pub trust_local: bool,
    /// Serve over TLS with this certificate and key (PEM files).
    pub tls: Option<TlsFiles>,
    /// Message size and connection limits.
    pub limits: Limits,
    /// The directories clients may read and write server files in (none by default).
    pub files: Arc<FileGate>,
}

/// Why the Flight SQL server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum FlightError {
    /// No user could ever log in.
    #[error(
        "no users are configured and --trust-local is not given: no client could connect over \
         Flight SQL"
    )]
    NoUsers,
    /// A TLS file could not be read.
    #[error("cannot read the TLS file {}: {source}", path.display())]
    TlsFile {
        /// the file
        path: PathBuf,
        /// why
        #[source]
        source: io::Error,
    },
    /// The certificate or key is not usable.
    #[error("the TLS certificate or key is not usable: {0}")]
    Tls(#[source] tonic::transport::Error),
    /// The server failed while serving.
    #[error("the Flight SQL server failed: {0}")]
    Transport(#[source] tonic::transport::Error),
}

/// Serves Flight SQL on `listener` until `shutdown` resolves (in-flight requests finish or
/// are cancelled cleanly).
pub async fn serve(
    db: Arc<Database>,
    listener: TcpListener,
    settings: FlightSettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), FlightError> {
    if settings.users.is_empty() && db.roles().is_empty() && !settings.trust_local {
        return Err(FlightError::NoUsers);
    }
    let FlightSettings {
        users,
        trust_local,
        tls,
        limits,
        files,
    } = settings;
    // the users named at start are superusers; their passwords are kept as verifiers
    users.make_superusers(db.roles());
    let roles = Arc::clone(db.roles());
    let service = service::FlightSqlServer::new(db, auth::Auth::new(roles, trust_local))
        .with_file_gate(files)
        .with_max_message_bytes(limits.max_message_bytes.max(1024));
    let service = FlightServiceServer::new(service)
        .max_decoding_message_size(limits.max_message_bytes.max(1024));
    let mut builder = Server::builder()
        // large windows: pushes stream frames of megabytes
        .initial_stream_window_size(Some(8 << 20))
        .initial_connection_window_size(Some(16 << 20))
        // and frames of up to 1 MiB rather than HTTP/2's default 16 KiB: fewer frames,
        // reads and wake-ups per pushed byte
        .max_frame_size(Some(1 << 20))
        .http2_keepalive_interval(Some(Duration::from_secs(60)))
        .http2_keepalive_timeout(Some(Duration::from_secs(20)));
    if let Some(files) = &tls {
        let read = |path: &PathBuf| {
            std::fs::read(path).map_err(|source| FlightError::TlsFile {
                path: path.clone(),
                source,
            })
        };
        let identity = tonic::transport::Identity::from_pem(read(&files.cert)?, read(&files.key)?);
        builder = builder
            .tls_config(ServerTlsConfig::new().identity(identity))
            .map_err(FlightError::Tls)?;
    }
    builder
        .add_service(service)
        .serve_with_incoming_shutdown(limited_incoming(listener, limits.max_connections), shutdown)
        .await
        .map_err(FlightError::Transport)
}

/// A client connection holding one of the server's connection slots until it closes.
struct LimitedStream {
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
}

impl Connected for LimitedStream {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.stream.connect_info()
    }
}

impl AsyncRead for LimitedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for LimitedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// The connections `listener` accepts, at most `max` open at once: one more is closed at
/// once (the client sees the connection refused).
fn limited_incoming(
    listener: TcpListener,
    max: usize,
) -> impl Stream<Item = Result<LimitedStream, io::Error>> {
    let slots = Arc::new(Semaphore::new(max.max(1)));
    futures::stream::unfold((listener, slots), move |(listener, slots)| async move {
        loop {
            match listener.accept().await {
                Ok((stream, peer)) => match Arc::clone(&slots).try_acquire_owned() {
                    Ok(slot) => {
                        let _ = stream.set_nodelay(true);
                        let conn = LimitedStream {
                            stream,
                            _slot: slot,
                        };
                        return Some((Ok(conn), (listener, slots)));
                    }
                    Err(_) => {
                        tracing::warn!(
                            "Flight SQL: refused a connection from {peer}: {max} connections \
                             are open (limits.max_connections)"
                        );
                        drop(stream);
                    }
                },
                Err(e) => {
                    // out of file descriptors and the like: do not spin
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    return Some((Err(e), (listener, slots)));
                }
            }
        }
    })
}
