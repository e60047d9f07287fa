//! A server started in the test process on a free port, and the real clients that talk to
//! it (psql, Python with psycopg).
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use wireload_server::{Limits, PgSettings, TlsFiles, Users};
use wireload_sql::{Database, DbConfig};

/// The user and password the tests log in with.
pub const USER: &str = "alice";
/// Alice's password.
pub const PASSWORD: &str = "wonder land";

/// A running server.
pub struct TestServer {
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Its database (the tests look at tables directly).
    pub db: Arc<Database>,
    rt: Option<tokio::runtime::Runtime>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<Result<(), wireload_server::ServerError>>>,
}

impl TestServer {
    /// A server with user alice, no TLS, default limits.
    pub fn start() -> TestServer {
        Self::with(|_| {})
    }

    /// A server whose settings `change` adjusts.
    pub fn with(change: impl FnOnce(&mut PgSettings)) -> TestServer {
        Self::with_db(
            DbConfig {
                threads: Some(2),
                ..Default::default()
            },
            change,
        )
    }

    /// A server over a database made with `config`, its settings adjusted by `change`.
    pub fn with_db(config: DbConfig, change: impl FnOnce(&mut PgSettings)) -> TestServer {
        let mut users = Users::new();
        users.add(USER, PASSWORD);
        let mut settings = PgSettings {
            users: Arc::new(users),
            trust_local: false,
            tls: None,
            limits: Limits::default(),
            files: Default::default(),
        };
        change(&mut settings);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let db = Arc::new(Database::new(config));
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let done = rt.spawn(wireload_server::serve(
            Arc::clone(&db),
            listener,
            settings,
            async move {
                let _ = stopped.await;
            },
        ));
        TestServer {
            port,
            db,
            rt: Some(rt),
            stop: Some(stop),
            done: Some(done),
        }
    }

    /// Runs SQL on the server's database directly (setup and checks).
    pub fn sql(&self, sql: &str) -> Vec<wireload_sql::StatementOutput> {
        let rt = self.rt.as_ref().unwrap();
        rt.block_on(self.db.execute(sql, &Default::default()))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// The rows of a query as text lines (`|`-separated), for comparisons.
    pub fn rows(&self, sql: &str) -> Vec<String> {
        let out = self.sql(sql);
        let Some(wireload_sql::StatementOutput::Rows { batches, .. }) = out.last() else {
            panic!("{sql}: no rows");
        };
        let mut lines = Vec::new();
        for b in batches {
            let formatters: Vec<_> = b
                .columns()
                .iter()
                .map(|c| {
                    arrow::util::display::ArrayFormatter::try_new(
                        c.as_ref(),
                        &arrow::util::display::FormatOptions::default(),
                    )
                    .unwrap()
                })
                .collect();
            for r in 0..b.num_rows() {
                lines.push(
                    formatters
                        .iter()
                        .map(|f| f.value(r).to_string())
                        .collect::<Vec<_>>()
                        .join("|"),
                );
            }
        }
        lines
    }

    /// psql with `args` as alice (password from the environment), `sslmode=disable`.
    pub fn psql(&self, args: &[&str]) -> Output {
        self.psql_as(USER, Some(PASSWORD), "disable", args)
    }

    /// psql as `user` with `password` (None: none given) and `sslmode`.
    pub fn psql_as(
        &self,
        user: &str,
        password: Option<&str>,
        sslmode: &str,
        args: &[&str],
    ) -> Output {
        let mut cmd = Command::new(wireload_clients::psql());
        cmd.arg(format!(
            "host=127.0.0.1 port={} user={user} dbname=wireload sslmode={sslmode} connect_timeout=10",
            self.port
        ))
        .args(["-X", "-v", "ON_ERROR_STOP=1"])
        .args(args)
        .env_remove("PGPASSWORD")
        .env("PGPASSFILE", "/nonexistent")
        .env("PGCONNECT_TIMEOUT", "10");
        if let Some(p) = password {
            cmd.env("PGPASSWORD", p);
        }
        cmd.output().expect("psql runs")
    }

    /// Runs a Python `script` with psycopg; `CONNINFO` in it is this server's connection
    /// string for alice.
    pub fn python(&self, script: &str) -> Output {
        self.python_command(script).output().expect("python runs")
    }

    /// The command that runs `script` as [`TestServer::python`] does.
    pub fn python_command(&self, script: &str) -> Command {
        let conninfo = format!(
            "host=127.0.0.1 port={} user={USER} password='{}' dbname=wireload sslmode=disable",
            self.port,
            PASSWORD.replace('\'', "\\'")
        );
        let script = script.replace("CONNINFO", &format!("{conninfo:?}"));
        let mut cmd = Command::new(wireload_clients::python());
        cmd.arg("-c").arg(script);
        cmd
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let (Some(rt), Some(done)) = (self.rt.take(), self.done.take()) {
            let _ = rt.block_on(done);
            rt.shutdown_background();
        }
    }
}

/// stdout of a successful run; panics with both streams otherwise.
pub fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// stderr of a failed run; panics when it succeeded.
pub fn failed(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "succeeded but should have failed:\nstdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A self-signed certificate for 127.0.0.1 and localhost, made with openssl in `dir`.
pub fn self_signed(dir: &Path) -> TlsFiles {
    let (cert, key) = wireload_clients::self_signed(dir);
    TlsFiles { cert, key }
}
