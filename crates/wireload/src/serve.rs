//! `wireload serve`: the database as a server, over the PostgreSQL protocol and Arrow Flight
//! SQL, until SIGTERM or Ctrl-C.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use wireload_server::{ServeConfig, TlsFiles, Users};
use wireload_sql::{Database, DbConfig, FileGate, StatementOutput};

use crate::cli::ServeArgs;

/// The server's settings: the config file's, then the flags', then the environment's user.
fn config(args: &ServeArgs) -> Result<ServeConfig> {
    let mut config = match &args.config {
        Some(path) => ServeConfig::from_file(path)?,
        None => ServeConfig::default(),
    };
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    if args.no_flight {
        config.flight_listen = None;
    } else if let Some(listen) = args.flight_listen {
        config.flight_listen = Some(listen);
    }
    if args.trust_local {
        config.trust_local = true;
    }
    match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            config.tls = Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
            })
        }
        (None, None) => {}
        _ => bail!("--tls-cert and --tls-key go together"),
    }
    if let Some(init) = &args.init {
        config.init = Some(init.clone());
    }
    if let Some(n) = args.max_connections {
        config.limits.max_connections = n;
    }
    config.allow_read.extend(args.allow_read.iter().cloned());
    config.allow_write.extend(args.allow_write.iter().cloned());
    if let Some((user, password)) = Users::from_env().map_err(anyhow::Error::msg)? {
        config.users.add(user, password);
    }
    Ok(config)
}

/// Panics while decoding bytes from the network (arrow's IPC decoder asserts some lengths
/// instead of checking them) are caught and refused as malformed input, the client told
/// why: they are logged as one warning, not printed as a crash with a backtrace (a client
/// could fill the log with them). Every other panic goes to the default hook.
fn quiet_untrusted_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if wireload_push::protocol::decoding_untrusted() {
            let what = info.payload_as_str().unwrap_or("a panic");
            tracing::warn!("refused malformed Arrow IPC input: {what}");
        } else {
            default(info);
        }
    }));
}

/// Binds `addr`, naming the protocol in the error.
async fn bind(addr: SocketAddr, what: &str) -> Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen for {what} on {addr}"))
}

/// Runs the server until SIGTERM or Ctrl-C; then running statements are cancelled (a load
/// in progress publishes nothing) and the process ends.
pub fn run(args: &ServeArgs, threads: Option<usize>) -> Result<()> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .try_init();
    quiet_untrusted_panics();
    let config = config(args)?;
    // before any load thread starts (the init script may load)
    if let Some(nice) = args.load_nice {
        wireload_load::set_load_nice(nice);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // Flight (pushes, bulk ingest) on threads of its own: on the queries' runtime a push's
    // frames wait behind every running query's turn, and the load starves for input
    let flight_rt = tokio::runtime::Builder::new_multi_thread()
        .thread_name("wireload-flight")
        .on_thread_start(wireload_load::apply_load_nice)
        .enable_all()
        .build()
        .context("cannot start the Flight runtime")?;
    rt.block_on(serve(
        config,
        threads,
        (args.memory_limit, args.statement_timeout),
        flight_rt.handle().clone(),
    ))
}

async fn serve(
    mut config: ServeConfig,
    threads: Option<usize>,
    (memory_limit, statement_timeout): (Option<usize>, Option<std::time::Duration>),
    flight_rt: tokio::runtime::Handle,
) -> Result<()> {
    if config.users.is_empty() && !config.trust_local {
        bail!("{}", wireload_server::ServerError::NoUsers);
    }
    let memory_limit = memory_limit.unwrap_or_else(half_the_memory);
    let db = Arc::new(Database::new(DbConfig {
        threads,
        memory_limit: Some(memory_limit),
        client_statement_timeout: statement_timeout.filter(|d| !d.is_zero()),
    }));
    if let Some(init) = &config.init {
        let sql = std::fs::read_to_string(init)
            .with_context(|| format!("cannot read the init script {}", init.display()))?;
        let outputs = db
            .execute(&sql, &Default::default())
            .await
            .with_context(|| format!("init script {}", init.display()))?;
        for out in outputs {
            match out {
                StatementOutput::Loaded(report) => tracing::info!("init: {report}"),
                StatementOutput::Done(tag) => tracing::info!("init: {tag}"),
                StatementOutput::Changed(change) => tracing::info!("init: {}", change.tag()),
                StatementOutput::Unloaded(summary) => tracing::info!("init: {summary}"),
                StatementOutput::Rows { .. } => {}
            }
        }
    }
    // the users named at start become superuser roles; only their SCRAM verifiers stay
    config.users.make_superusers(db.roles());
    let names: Vec<String> = config.users.names().into_iter().map(String::from).collect();
    let users = Arc::new(Users::new());
    config.users = Users::new();
    // the init script ran with the rights of the user who started the server; clients
    // reach only the directories allowed here
    let files = Arc::new(
        FileGate::new(&config.allow_read, &config.allow_write)
            .context("--allow-read / --allow-write")?,
    );
    let pg_listener = bind(config.listen, "PostgreSQL clients").await?;
    // the addresses bound, so a port 0 in the configuration reads as the port it got
    let pg_addr = pg_listener
        .local_addr()
        .context("cannot read the PostgreSQL listener's address")?;
    let flight_listener = match config.flight_listen {
        Some(addr) => Some(
            bind(addr, "Arrow Flight SQL clients")
                .await?
                .into_std()
                .context("cannot hand the Flight listener to its runtime")?,
        ),
        None => None,
    };
    let flight_addr = flight_listener
        .as_ref()
        .map(std::net::TcpListener::local_addr)
        .transpose()
        .context("cannot read the Flight listener's address")?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let signal = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let pg = tokio::spawn(wireload_server::serve(
        Arc::clone(&db),
        pg_listener,
        wireload_server::PgSettings {
            users: Arc::clone(&users),
            trust_local: config.trust_local,
            tls: config.tls.clone(),
            limits: config.limits.clone(),
            files: Arc::clone(&files),
        },
        signal(stopped.clone()),
    ));
    let flight = flight_listener.map(|listener| {
        let db = Arc::clone(&db);
        let users = Arc::clone(&users);
        let files = Arc::clone(&files);
        let (tls, limits, trust_local) = (
            config.tls.clone(),
            config.limits.clone(),
            config.trust_local,
        );
        let shutdown = signal(stopped.clone());
        flight_rt.spawn(async move {
            // registered with this runtime's reactor, so its connections are driven here
            let listener = tokio::net::TcpListener::from_std(listener)?;
            wireload_flight::serve(
                db,
                listener,
                wireload_flight::FlightSettings {
                    users,
                    trust_local,
                    tls,
                    limits,
                    files,
                },
                shutdown,
            )
            .await
            .map_err(anyhow::Error::from)
        })
    });
    tracing::info!(
        postgres = %pg_addr,
        flight = %flight_addr.map_or("off".to_string(), |a| a.to_string()),
        users = ?names,
        trust_local = config.trust_local,
        tls = config.tls.is_some(),
        allow_read = ?files.readable(),
        allow_write = ?files.writable(),
        threads = db.threads(),
        memory_limit,
        statement_timeout = ?statement_timeout,
        "wireload serve is ready"
    );
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("cannot watch SIGTERM")?;
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted: shutting down"),
    }
    let _ = stop.send(true);
    pg.await.context("the PostgreSQL server panicked")??;
    if let Some(flight) = flight {
        flight.await.context("the Flight SQL server panicked")??;
    }
    tracing::info!("stopped");
    Ok(())
}

/// Half the machine's memory; 4 GiB where it is unknown.
fn half_the_memory() -> usize {
    wireload_load::total_memory()
        .and_then(|bytes| usize::try_from(bytes / 2).ok())
        .unwrap_or(4 << 30)
}
