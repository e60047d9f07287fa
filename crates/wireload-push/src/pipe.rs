//! The `pipe` baseline: PIPE over the PostgreSQL protocol's `COPY FROM STDIN`. The client
//! only streams the files' bytes; the server parses, converts and stores everything.
//!
//! [`pipe`] logs in on a stream the caller connected (TCP, a throttled socket...), and for
//! each file issues one
//! `COPY "table" FROM STDIN WITH (FORMAT csv, DELIMITER 'd', HEADER b[, NULL 's'], QUOTE 'q')`
//! whose data are the file's bytes in blocks of [`PipeOptions::block_bytes`] (one `CopyData`
//! message each, read by a blocking task ahead of the sending). Several files are loaded in
//! one transaction (`BEGIN`, one COPY per file, `COMMIT`): all of them become visible at
//! once, or, when one fails, none (`ROLLBACK`). A single file is one COPY, which the server
//! publishes atomically by itself. A server error (the server names the file, line, column
//! and byte of a bad value) becomes [`PushError::Postgres`] with the server's message.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use bytes::Bytes;
use futures::SinkExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, Config, NoTls};

use crate::PushError;

/// Blocks read ahead of the one being sent, per file.
const READ_AHEAD: usize = 4;

/// How to log in and how the server is to read the files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipeOptions {
    /// The table to load: `name` or `schema.name`, each part as stored (case-sensitive, as
    /// a quoted identifier: the statement quotes every part).
    pub table: String,
    /// The user to log in as.
    pub user: String,
    /// The user's password (None: the server asks for none, e.g. `--trust-local`).
    pub password: Option<String>,
    /// The database named at login (wireload serves one database and ignores the name).
    pub database: String,
    /// The field delimiter (ASCII, not NUL).
    pub delimiter: u8,
    /// The first record of every file is a header.
    pub header: bool,
    /// The NULL string (None: the server's default, the empty unquoted field).
    pub null: Option<String>,
    /// The quote character (ASCII, not NUL); None disables quoting (`QUOTE ''`).
    pub quote: Option<u8>,
    /// Bytes read and sent at a time: one `CopyData` message each, which must stay below
    /// the server's message limit (64 MiB by default).
    pub block_bytes: usize,
}

impl PipeOptions {
    /// Options to load `table` as `user`: database `wireload`, no password, RFC 4180 CSV
    /// (comma, double quote, no header, the empty field as NULL), 1 MiB blocks.
    pub fn new(table: impl Into<String>, user: impl Into<String>) -> Self {
        PipeOptions {
            table: table.into(),
            user: user.into(),
            password: None,
            database: "wireload".to_string(),
            delimiter: b',',
            header: false,
            null: None,
            quote: Some(b'"'),
            block_bytes: 1 << 20,
        }
    }

    /// The `COPY ... FROM STDIN` statement these options make, or why they cannot make one.
    pub fn copy_statement(&self) -> Result<String, PushError> {
        let table = quote_table(&self.table)?;
        let delimiter = option_byte("delimiter", self.delimiter)?;
        let mut sql = format!(
            "COPY {table} FROM STDIN WITH (FORMAT csv, DELIMITER {}, HEADER {}",
            literal(&delimiter),
            self.header
        );
        if let Some(null) = &self.null {
            if null.contains('\0') {
                return Err(PushError::Options(
                    "the NULL string cannot contain a NUL character".into(),
                ));
            }
            sql.push_str(&format!(", NULL {}", literal(null)));
        }
        let quote = match self.quote {
            Some(q) => option_byte("quote", q)?,
            None => String::new(),
        };
        sql.push_str(&format!(", QUOTE {})", literal(&quote)));
        Ok(sql)
    }
}

/// What a [`pipe`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PipeReport {
    /// File bytes sent (all files).
    pub bytes_sent: u64,
    /// Rows loaded, as the server's COPY command tags count them (all files).
    pub rows: u64,
    /// Seconds from the start of the login to the end of the last COPY (or the COMMIT).
    pub seconds: f64,
}

/// Loads `files` into `opts.table` over `stream` with `COPY FROM STDIN`: one COPY per file,
/// all in one transaction when there are several. On an error nothing of the load is
/// visible.
pub async fn pipe<S>(
    stream: S,
    files: &[PathBuf],
    opts: &PipeOptions,
) -> Result<PipeReport, PushError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    if files.is_empty() {
        return Err(PushError::Options("pipe needs at least one file".into()));
    }
    if opts.block_bytes == 0 {
        return Err(PushError::Options("block_bytes must be positive".into()));
    }
    let statement = opts.copy_statement()?;
    let start = Instant::now();
    let mut config = Config::new();
    config
        .user(opts.user.as_str())
        .dbname(opts.database.as_str())
        .ssl_mode(SslMode::Disable);
    if let Some(password) = &opts.password {
        config.password(password.as_str());
    }
    let (client, connection) = config
        .connect_raw(stream, NoTls)
        .await
        .map_err(|e| postgres_error("logging in", &e, None))?;
    let connection = tokio::spawn(connection);
    let result = load(&client, files, &statement, opts.block_bytes).await;
    let seconds = start.elapsed().as_secs_f64();
    drop(client);
    // the connection ends once the client is gone; its own error explains a closed client
    let connection_error = match connection.await {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e.to_string()),
        Err(e) => Some(format!("the connection task failed: {e}")),
    };
    match result {
        Ok((bytes_sent, rows)) => Ok(PipeReport {
            bytes_sent,
            rows,
            seconds,
        }),
        Err(Failure::Push(e)) => Err(e),
        Err(Failure::Postgres(what, e)) => {
            Err(postgres_error(&what, &e, connection_error.as_deref()))
        }
    }
}

/// Why [`load`] stopped.
enum Failure {
    /// Reading a file failed (or options were wrong).
    Push(PushError),
    /// The server or the connection failed while doing the named thing.
    Postgres(String, tokio_postgres::Error),
}

/// Runs the COPYs (in a transaction when there are several files); the bytes sent and the
/// rows loaded.
async fn load(
    client: &Client,
    files: &[PathBuf],
    statement: &str,
    block_bytes: usize,
) -> Result<(u64, u64), Failure> {
    if files.len() == 1 {
        return copy_file(client, &files[0], statement, block_bytes).await;
    }
    client
        .batch_execute("BEGIN")
        .await
        .map_err(|e| Failure::Postgres("BEGIN".into(), e))?;
    let mut totals = (0, 0);
    for file in files {
        match copy_file(client, file, statement, block_bytes).await {
            Ok((bytes, rows)) => {
                totals.0 += bytes;
                totals.1 += rows;
            }
            Err(e) => {
                // the transaction is failed (or the connection gone): end it, keep the
                // first error
                let _ = client.batch_execute("ROLLBACK").await;
                return Err(e);
            }
        }
    }
    client
        .batch_execute("COMMIT")
        .await
        .map_err(|e| Failure::Postgres(format!("COMMIT of {} files", files.len()), e))?;
    Ok(totals)
}

/// One COPY of `path`: its bytes sent and the rows the server loaded. Reading the file
/// fails the COPY (the sink is dropped unfinished: CopyFail).
async fn copy_file(
    client: &Client,
    path: &Path,
    statement: &str,
    block_bytes: usize,
) -> Result<(u64, u64), Failure> {
    let what = || format!("COPY of {}", path.display());
    let file = File::open(path)
        .map_err(|e| Failure::Push(PushError::io(format!("opening {}", path.display()), e)))?;
    let mut blocks = read_blocks(file, path.to_path_buf(), block_bytes);
    let sink = client
        .copy_in::<_, Bytes>(statement)
        .await
        .map_err(|e| Failure::Postgres(what(), e))?;
    futures::pin_mut!(sink);
    let mut sent = 0u64;
    while let Some(block) = blocks.recv().await {
        let block = block.map_err(Failure::Push)?;
        let len = block.len() as u64;
        sink.send(block)
            .await
            .map_err(|e| Failure::Postgres(what(), e))?;
        sent += len;
    }
    let rows = sink
        .finish()
        .await
        .map_err(|e| Failure::Postgres(what(), e))?;
    Ok((sent, rows))
}

/// The blocks of `file`, read by a blocking task a few blocks ahead; a read error is the
/// last item. The task stops when the receiver is dropped.
fn read_blocks(
    mut file: File,
    path: PathBuf,
    block_bytes: usize,
) -> mpsc::Receiver<Result<Bytes, PushError>> {
    let (tx, rx) = mpsc::channel(READ_AHEAD);
    tokio::task::spawn_blocking(move || {
        loop {
            let mut buf = Vec::with_capacity(block_bytes);
            let read = (&mut file).take(block_bytes as u64).read_to_end(&mut buf);
            let item = match read {
                Ok(0) => return,
                Ok(_) => Ok(Bytes::from(buf)),
                Err(e) => Err(PushError::io(format!("reading {}", path.display()), e)),
            };
            let failed = item.is_err();
            if tx.blocking_send(item).is_err() || failed {
                return;
            }
        }
    });
    rx
}

/// `e` as a [`PushError::Postgres`]: what was being done, the server's error (severity,
/// SQLSTATE, message, detail, hint) or the client's, and the connection's own error when
/// the client only saw it closed.
fn postgres_error(what: &str, e: &tokio_postgres::Error, connection: Option<&str>) -> PushError {
    let mut msg = format!("{what}: ");
    match e.as_db_error() {
        Some(db) => {
            msg.push_str(&format!(
                "{} {}: {}",
                db.severity(),
                db.code().code(),
                db.message()
            ));
            if let Some(detail) = db.detail() {
                msg.push_str(&format!(" (detail: {detail})"));
            }
            if let Some(hint) = db.hint() {
                msg.push_str(&format!(" (hint: {hint})"));
            }
        }
        None => {
            msg.push_str(&e.to_string());
            if let Some(c) = connection {
                msg.push_str(&format!(" ({c})"));
            }
        }
    }
    PushError::Postgres(msg)
}

/// `table` (`name` or `schema.name`) with every part double-quoted, embedded double quotes
/// doubled.
fn quote_table(table: &str) -> Result<String, PushError> {
    let parts: Vec<&str> = table.split('.').collect();
    if parts.len() > 2 || parts.iter().any(|p| p.is_empty()) {
        return Err(PushError::Options(format!(
            "table {table:?} is not a name or schema.name"
        )));
    }
    if table.contains('\0') {
        return Err(PushError::Options(
            "a table name cannot contain a NUL character".into(),
        ));
    }
    Ok(parts
        .iter()
        .map(|p| format!("\"{}\"", p.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join("."))
}

/// A one-byte COPY option as text: ASCII and not NUL (a statement is a C string).
fn option_byte(name: &str, b: u8) -> Result<String, PushError> {
    if b == 0 || !b.is_ascii() {
        return Err(PushError::Options(format!(
            "the {name} must be an ASCII character other than NUL, got byte {b:#04x}"
        )));
    }
    Ok(char::from(b).to_string())
}

/// `s` as a standard SQL string literal (single quotes doubled; backslashes are plain).
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_statement() {
        let o = PipeOptions::new("lineitem", "alice");
        assert_eq!(
            o.copy_statement().unwrap(),
            "COPY \"lineitem\" FROM STDIN WITH (FORMAT csv, DELIMITER ',', HEADER false, QUOTE '\"')"
        );
        assert_eq!(o.database, "wireload");
        assert_eq!(o.block_bytes, 1 << 20);
    }

    #[test]
    fn quoting_of_names_and_literals() {
        let mut o = PipeOptions::new("public.we\"ird", "alice");
        o.delimiter = b'\'';
        o.header = true;
        o.null = Some("it's \\N".into());
        o.quote = None;
        assert_eq!(
            o.copy_statement().unwrap(),
            "COPY \"public\".\"we\"\"ird\" FROM STDIN WITH (FORMAT csv, DELIMITER '''', \
             HEADER true, NULL 'it''s \\N', QUOTE '')"
        );
        o.delimiter = b'\t';
        assert!(o.copy_statement().unwrap().contains("DELIMITER '\t'"));
    }

    #[test]
    fn bad_options() {
        for table in ["", "a..b", "a.b.c", ".a", "a\0"] {
            let o = PipeOptions::new(table, "alice");
            assert!(
                matches!(o.copy_statement(), Err(PushError::Options(_))),
                "{table:?}"
            );
        }
        let mut o = PipeOptions::new("t", "alice");
        o.delimiter = 0xA0;
        assert!(matches!(o.copy_statement(), Err(PushError::Options(_))));
        o.delimiter = 0;
        assert!(matches!(o.copy_statement(), Err(PushError::Options(_))));
        let mut o = PipeOptions::new("t", "alice");
        o.quote = Some(0xFF);
        assert!(matches!(o.copy_statement(), Err(PushError::Options(_))));
        let mut o = PipeOptions::new("t", "alice");
        o.null = Some("a\0".into());
        assert!(matches!(o.copy_statement(), Err(PushError::Options(_))));
    }

    #[tokio::test]
    async fn no_files_and_zero_blocks_are_refused_before_connecting() {
        let (a, _b) = tokio::io::duplex(64);
        let o = PipeOptions::new("t", "alice");
        assert!(matches!(pipe(a, &[], &o).await, Err(PushError::Options(_))));
        let (a, _b) = tokio::io::duplex(64);
        let mut o = PipeOptions::new("t", "alice");
        o.block_bytes = 0;
        assert!(matches!(
            pipe(a, &[PathBuf::from("x.csv")], &o).await,
            Err(PushError::Options(_))
        ));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn blocks_cover_the_file_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.csv");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let mut rx = read_blocks(File::open(&path).unwrap(), path.clone(), 4096);
        let mut all = Vec::new();
        let mut sizes = Vec::new();
        while let Some(b) = rx.recv().await {
            let b = b.unwrap();
            sizes.push(b.len());
            all.extend_from_slice(&b);
        }
        assert_eq!(all, data);
        assert_eq!(sizes, [4096, 4096, 1808]);
    }
}
