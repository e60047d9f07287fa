//! The PostgreSQL listener: accepts connections (up to the limit), authenticates them
//! (SCRAM-SHA-256, or trust for loopback clients with `--trust-local`), serves each with
//! its own session of the database, routes cancel requests, and shuts down cleanly.

use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::Sink;
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::sasl::scram::{ScramAuth, ScramSecret};
use pgwire::api::auth::{
    AuthSource, DefaultServerParameterProvider, LoginInfo, Password, StartupHandler,
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata,
};
use pgwire::api::cancel::CancelHandler;
use pgwire::api::{
    ClientInfo, METADATA_USER, PgWireConnectionState, PidSecretKeyGenerator,
    RandomPidSecretKeyGenerator,
};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::tokio_rustls::rustls;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use wireload_load::LoadControl;
use wireload_sql::{Database, FileGate};

use crate::config::{Limits, TlsFiles};
use crate::errors::fatal;
use crate::session::Connection;
use crate::users::Users;
use crate::wire::serve_connection;

/// SCRAM's iteration count (PostgreSQL's default).
const SCRAM_ITERATIONS: usize = wireload_sql::SCRAM_ITERATIONS as usize;
/// How long a shutdown waits for cancelled statements to stop before closing connections.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// The version reported to clients: PostgreSQL 15's protocol and catalog, wireload's own.
pub const SERVER_VERSION: &str = concat!("15.0 (wireload ", env!("CARGO_PKG_VERSION"), ")");

/// How the PostgreSQL front end runs.
#[derive(Debug, Clone)]
pub struct PgSettings {
    /// Users made superuser roles at start (beside the roles the database has).
    pub users: Arc<Users>,
    /// Clients on the loopback interface need no password.
    pub trust_local: bool,
    /// TLS certificate and key.
    pub tls: Option<TlsFiles>,
    /// Connection, message and memory limits.
    pub limits: Limits,
    /// The directories clients may read and write server files in (none by default).
    pub files: Arc<FileGate>,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Neither users nor `--trust-local`: nobody could log in, and unauthenticated access
    /// must be asked for.
    #[error(
        "no users: give one with WIRELOAD_USER and WIRELOAD_PASSWORD or [[users]] in the config file, \
         or start with --trust-local to let loopback clients in without a password"
    )]
    NoUsers,
    /// The TLS files cannot be used.
    #[error("TLS: {0}")]
    Tls(String),
    /// The listener failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The TLS acceptor of `files` (PEM certificate chain and private key), and the PEM text
/// of the certificates (SCRAM's channel binding hashes the first).
pub fn tls_acceptor(files: &TlsFiles) -> Result<(TlsAcceptor, Vec<u8>), ServerError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| ServerError::Tls(format!("certificate {}: {e}", files.cert.display())))?;
    if certs.is_empty() {
        return Err(ServerError::Tls(format!(
            "no certificate in {}",
            files.cert.display()
        )));
    }
    let pem = std::fs::read(&files.cert)
        .map_err(|e| ServerError::Tls(format!("certificate {}: {e}", files.cert.display())))?;
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| ServerError::Tls(format!("private key {}: {e}", files.key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServerError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| ServerError::Tls(e.to_string()))?;
    Ok((TlsAcceptor::from(Arc::new(config)), pem))
}

/// What every connection shares.
pub(crate) struct Shared {
    pub db: Arc<Database>,
    pub settings: PgSettings,
    /// The leaf certificate, for SCRAM-SHA-256-PLUS.
    cert: Option<Vec<u8>>,
    pub backends: Backends,
    connections: AtomicUsize,
    /// Process ids and cancel keys, unique across connections.
    pids: Arc<RandomPidSecretKeyGenerator>,
}

/// The connections by process id: their cancel keys and the statement each runs.
#[derive(Default)]
pub(crate) struct Backends {
    map: Mutex<HashMap<i32, Backend>>,
}

struct Backend {
    secret: Bytes,
    user: String,
    running: Option<LoadControl>,
}

impl Backends {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i32, Backend>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a logged-in connection.
    pub fn register(&self, pid: i32, secret: Bytes, user: String) {
        self.lock().insert(
            pid,
            Backend {
                secret,
                user,
                running: None,
            },
        );
    }

    /// The connections of `user` now.
    pub fn of_user(&self, user: &str) -> usize {
        self.lock().values().filter(|b| b.user == user).count()
    }

    /// Forgets a closed connection.
    pub fn unregister(&self, pid: i32) {
        self.lock().remove(&pid);
    }

    /// Records the statement `pid` runs now (its control cancels it).
    pub fn start(&self, pid: i32, ctl: &LoadControl) {
        if let Some(b) = self.lock().get_mut(&pid) {
            b.running = Some(ctl.clone());
        }
    }

    /// Records that `pid`'s statement is over.
    pub fn finish(&self, pid: i32) {
        if let Some(b) = self.lock().get_mut(&pid) {
            b.running = None;
        }
    }

    /// A cancel request: cancels `pid`'s statement when the key matches.
    fn cancel(&self, pid: i32, secret: &Bytes) -> bool {
        match self.lock().get(&pid) {
            Some(b) if b.secret == *secret => {
                if let Some(ctl) = &b.running {
                    ctl.cancel.store(true, Ordering::SeqCst);
                }
                true
            }
            _ => false,
        }
    }

    /// `pg_cancel_backend(pid)` of `user`: cancels `pid`'s statement when it is `user`'s
    /// connection; false when there is no such connection.
    pub fn cancel_of_user(&self, pid: i32, user: &str) -> bool {
        match self.lock().get(&pid) {
            Some(b) if b.user == user => {
                if let Some(ctl) = &b.running {
                    ctl.cancel.store(true, Ordering::SeqCst);
                }
                true
            }
            _ => false,
        }
    }

    /// Cancels every running statement; returns how many there were.
    fn cancel_all(&self) -> usize {
        let map = self.lock();
        let mut n = 0;
        for ctl in map.values().filter_map(|b| b.running.as_ref()) {
            ctl.cancel.store(true, Ordering::SeqCst);
            n += 1;
        }
        n
    }

    /// Statements running now.
    fn running(&self) -> usize {
        self.lock().values().filter(|b| b.running.is_some()).count()
    }
}

impl Shared {
    fn new(db: Arc<Database>, settings: PgSettings, cert: Option<Vec<u8>>) -> Self {
        // the users named at start are superusers; their passwords are kept as verifiers
        settings.users.make_superusers(db.roles());
        Shared {
            db,
            settings,
            cert,
            backends: Backends::default(),
            connections: AtomicUsize::new(0),
            pids: Arc::new(RandomPidSecretKeyGenerator::default()),
        }
    }
}

/// Serves the PostgreSQL protocol on `listener` until `shutdown` resolves: then running
/// statements are cancelled (a load stops and publishes nothing), given a few seconds to
/// stop, and every connection is closed.
pub async fn serve(
    db: Arc<Database>,
    listener: TcpListener,
    settings: PgSettings,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServerError> {
    if settings.users.is_empty() && db.roles().is_empty() && !settings.trust_local {
        return Err(ServerError::NoUsers);
    }
    let (tls, cert) = match &settings.tls {
        Some(files) => {
            let (acceptor, cert) = tls_acceptor(files)?;
            (Some(acceptor), Some(cert))
        }
        None => (None, None),
    };
    let shared = Arc::new(Shared::new(db, settings, cert));
    let mut tasks = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => {
                let (socket, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        continue;
                    }
                };
                let open = Open::count(&shared);
                let refused = open.0 >= shared.settings.limits.max_connections;
                let connection = Arc::new(Connection::new(Arc::clone(&shared), refused));
                let startup = Arc::new(Startup::new(Arc::clone(&shared), Arc::clone(&connection)));
                let cancel = Arc::new(Cancel(Arc::clone(&shared)));
                let tls = tls.clone();
                let max_message_bytes = shared.settings.limits.max_message_bytes;
                tasks.spawn(async move {
                    let _open = open;
                    tracing::debug!(%peer, "connection");
                    let served = serve_connection(
                        socket, tls, connection, startup, cancel, max_message_bytes,
                    );
                    if let Err(e) = served.await {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                });
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    let cancelled = shared.backends.cancel_all();
    tracing::info!(cancelled, "shutting down");
    let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
    while shared.backends.running() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tasks.shutdown().await;
    Ok(())
}

/// One open connection, counted from accept until its task ends (or unwinds).
struct Open(usize, Arc<Shared>);

impl Open {
    /// Counts a new connection; `.0` is how many were open before it.
    fn count(shared: &Arc<Shared>) -> Open {
        Open(
            shared.connections.fetch_add(1, Ordering::SeqCst),
            Arc::clone(shared),
        )
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.1.connections.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Cancel requests, by process id and key.
pub(crate) struct Cancel(Arc<Shared>);

#[async_trait]
impl CancelHandler for Cancel {
    async fn on_cancel_request(&self, request: CancelRequest) {
        let found = self
            .0
            .backends
            .cancel(request.pid, &request.secret_key.to_bytes());
        tracing::debug!(pid = request.pid, found, "cancel request");
    }
}

/// The verifiers SCRAM checks against: the roles that may log in.
#[derive(Debug)]
struct Secrets(Arc<Shared>);

#[async_trait]
impl AuthSource for Secrets {
    async fn get_password(&self, _login: &LoginInfo) -> PgWireResult<Password> {
        // never asked: SCRAM takes the verifier (get_scram_secret), and no other password
        // method is offered
        Err(PgWireError::InvalidPassword(String::new()))
    }

    async fn get_scram_secret(&self, login: &LoginInfo) -> PgWireResult<(ScramSecret, Option<()>)> {
        let user = login.user().unwrap_or_default();
        let verifier = self
            .0
            .db
            .roles()
            .login(user)
            .ok()
            .and_then(|role| role.verifier);
        Ok((
            match verifier {
                Some(v) => ScramSecret::Verifier {
                    salt: v.salt,
                    iterations: v.iterations as usize,
                    stored_key: v.stored_key,
                    server_key: v.server_key,
                },
                // an unknown user (or one that cannot log in with a password) gets an
                // exchange that cannot succeed, so that the answer (and its timing) does
                // not tell which users exist
                None => ScramSecret::Verifier {
                    salt: rand::random::<[u8; 16]>().to_vec(),
                    iterations: SCRAM_ITERATIONS,
                    stored_key: rand::random::<[u8; 32]>().to_vec(),
                    server_key: rand::random::<[u8; 32]>().to_vec(),
                },
            },
            None,
        ))
    }
}

impl Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("users", &self.settings.users)
            .finish_non_exhaustive()
    }
}

/// The parameters reported at login (the server version, encodings, date style...).
fn parameters() -> DefaultServerParameterProvider {
    let mut p = DefaultServerParameterProvider::default();
    p.server_version = SERVER_VERSION.to_string();
    p.scram_iterations = SCRAM_ITERATIONS;
    p
}

/// Login: refuses connections over the limit, lets loopback clients in without a password
/// under `--trust-local`, and runs SCRAM-SHA-256 for everyone else.
pub(crate) struct Startup {
    shared: Arc<Shared>,
    connection: Arc<Connection>,
    sasl: SASLAuthStartupHandler<DefaultServerParameterProvider>,
    parameters: DefaultServerParameterProvider,
}

impl Startup {
    fn new(shared: Arc<Shared>, connection: Arc<Connection>) -> Self {
        let mut scram = ScramAuth::new(Arc::new(Secrets(Arc::clone(&shared))));
        scram.set_iterations(SCRAM_ITERATIONS);
        if let Some(cert) = &shared.cert {
            // channel binding (SCRAM-SHA-256-PLUS) over TLS; without it plain SCRAM works
            if let Err(e) = scram.configure_certificate(cert) {
                tracing::warn!(error = %e, "SCRAM channel binding is off");
            }
        }
        let sasl = SASLAuthStartupHandler::new(Arc::new(parameters()))
            .with_scram(scram)
            .with_pid_secret_key_generator(
                Arc::clone(&shared.pids) as Arc<dyn PidSecretKeyGenerator>
            );
        Startup {
            shared,
            connection,
            sasl,
            parameters: parameters(),
        }
    }
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if self.connection.refused() {
            return Err(fatal("53300", "sorry, too many clients already"));
        }
        let trusted = self.shared.settings.trust_local && client.socket_addr().ip().is_loopback();
        match message {
            PgWireFrontendMessage::Startup(ref startup) if trusted => {
                protocol_negotiation(client, startup).await?;
                save_startup_parameters_to_metadata(client, startup);
                let (pid, key) = self.shared.pids.generate(client);
                client.set_pid_and_secret_key(pid, key);
                finish_authentication(client, &self.parameters).await?;
            }
            message => {
                if let Err(e) = self.sasl.on_startup(client, message).await {
                    let user = client
                        .metadata()
                        .get(METADATA_USER)
                        .cloned()
                        .unwrap_or_default();
                    tracing::info!(%user, peer = %client.socket_addr(), error = %e, "login refused");
                    return Err(match e {
                        // PostgreSQL's words, with the user the client logged in as
                        PgWireError::InvalidPassword(_) => fatal(
                            "28P01",
                            format!("password authentication failed for user \"{user}\""),
                        ),
                        e => e,
                    });
                }
            }
        }
        if matches!(client.state(), PgWireConnectionState::ReadyForQuery)
            && let Err(why) = self.connection.logged_in(client, trusted)
        {
            tracing::info!(peer = %client.socket_addr(), %why, "login refused");
            return Err(fatal(
                if why.contains("too many") {
                    "53300"
                } else {
                    "28000"
                },
                why,
            ));
        }
        Ok(())
    }
}
