//! Command-line flags of the `wireload` binary.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// wireload: an in-memory columnar SQL database that loads CSV at the speed of the wire.
///
/// Without a command: an interactive SQL shell when standard input is a terminal,
/// otherwise the SQL read from standard input runs as a script.
#[derive(Debug, Parser)]
#[command(name = "wireload", version)]
pub struct Cli {
    /// Run the SQL script in FILE, stopping at the first error.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Worker threads for loads and queries (default: all cores).
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// What to do.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load CSV files into tables and run SQL over them, printing the last result.
    Sql(SqlArgs),
    /// Infer a CSV file's dialect and column types and print the CREATE TABLE and COPY that
    /// load it.
    Sniff(SniffArgs),
    /// Generate TPC-H data and run the load-work-unload cycle: load, 22 queries, unload, reload.
    Demo(DemoArgs),
    /// Generate data files.
    #[command(subcommand)]
    Gen(GenCommand),
    /// Serve the database over the PostgreSQL protocol (psql, psycopg, JDBC) and Arrow Flight
    /// SQL (ADBC, pyarrow.flight) until SIGTERM or Ctrl-C.
    Serve(ServeArgs),
    /// Load CSV files into a table of a wireload server with Shared Loading: this side
    /// deserializes (and, by mode, dictionary-encodes), the server validates and merges.
    Push(PushArgs),
}

/// Flags of `wireload push`. A user and password also come from WIRELOAD_USER and
/// WIRELOAD_PASSWORD.
#[derive(Debug, Args)]
pub struct PushArgs {
    /// CSV files, loaded in order as one load.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The server's Arrow Flight address: http://HOST:PORT, or https://HOST:PORT to verify
    /// the server against the PEM certificates in $SSL_CERT_FILE (default: the system's).
    #[arg(long, default_value = "http://127.0.0.1:50051", value_name = "URL")]
    pub server: String,
    /// The server's PostgreSQL address (mode pipe).
    #[arg(long, default_value = "127.0.0.1:5433", value_name = "ADDR")]
    pub pg: String,
    /// The table to load into.
    #[arg(long)]
    pub table: String,
    /// all (SL_A), size (SL_S), none (SL_N), auto, pipe (COPY FROM STDIN) or seq.
    #[arg(long, default_value = "auto")]
    pub mode: wireload_push::protocol::Mode,
    /// User name (default: $WIRELOAD_USER; none: a server trusting local clients).
    #[arg(long)]
    pub user: Option<String>,
    /// Password (default: $WIRELOAD_PASSWORD).
    #[arg(long)]
    pub password: Option<String>,
    /// The first line of each file is a header.
    #[arg(long)]
    pub header: bool,
    /// Field delimiter: one character, or \t for tab (default ,).
    #[arg(long, value_name = "CHAR")]
    pub delimiter: Option<String>,
    /// Quote character (default "); '' disables quoting.
    #[arg(long, value_name = "CHAR")]
    pub quote: Option<String>,
    /// The string that stands for NULL when unquoted (default: the empty string).
    #[arg(long, value_name = "STRING", allow_hyphen_values = true)]
    pub null: Option<String>,
    /// MiB of file per fragment.
    #[arg(long, default_value_t = 10, value_name = "MIB")]
    pub chunk_mib: usize,
    /// Fragments per partition (default: 50, fewer when the files make fewer than 16
    /// partitions of 50, so that sending starts early and the server's work on each
    /// partition is a small burst).
    #[arg(long, value_name = "N")]
    pub fragments: Option<usize>,
    /// Partitions parsed ahead of the network at most.
    #[arg(long, default_value_t = 7, value_name = "N")]
    pub partitions_in_flight: usize,
    /// Limit the socket to this bandwidth: 1gbit, 10gbit, 500mbit...
    #[arg(long, value_name = "RATE")]
    pub bandwidth: Option<wireload_push::throttle::Bandwidth>,
    /// LZ4 on the payloads (`auto`: only while the link is the bottleneck).
    #[arg(long)]
    pub lz4: bool,
    /// `auto`: send this share of the windows (0 to 1) as CSV text for the server to parse,
    /// instead of letting `auto` move the share by what it measures.
    #[arg(long, value_name = "SHARE", value_parser = share)]
    pub text_share: Option<f64>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `wireload serve`. A user and password also come from WIRELOAD_USER and
/// WIRELOAD_PASSWORD.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// PostgreSQL protocol address (default 127.0.0.1:5433).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// Arrow Flight SQL address (default 127.0.0.1:50051).
    #[arg(long, value_name = "ADDR")]
    pub flight_listen: Option<std::net::SocketAddr>,
    /// Do not serve Arrow Flight SQL.
    #[arg(long, conflicts_with = "flight_listen")]
    pub no_flight: bool,
    /// TOML config file (addresses, users, TLS, limits, init script); flags override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Let clients on the loopback interface in without a password.
    #[arg(long)]
    pub trust_local: bool,
    /// TLS certificate chain (PEM), for both protocols.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// SQL script run before the first client is accepted (create and load tables).
    #[arg(long, value_name = "FILE")]
    pub init: Option<PathBuf>,
    /// Connections at once per protocol (default 100).
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// A directory whose files network clients with the privilege (superuser or
    /// pg_read_server_files) may read: COPY FROM a file, files in FROM, IMPORT DATABASE.
    /// Repeatable; none by default, so clients read no server file.
    #[arg(long, value_name = "DIR")]
    pub allow_read: Vec<PathBuf>,
    /// A directory in which network clients with the privilege (superuser or
    /// pg_write_server_files) may write: COPY TO a file, EXPORT DATABASE. Repeatable;
    /// none by default, so clients write no server file.
    #[arg(long, value_name = "DIR")]
    pub allow_write: Vec<PathBuf>,
    /// Bytes the queries of all clients may hold at once in sorts, aggregations and joins
    /// (`8GB`, `512MiB`): past their share they spill to the temporary directory, or fail
    /// alone (SQLSTATE 53200) while the others go on. Default: half the machine's memory.
    #[arg(long, value_name = "SIZE", value_parser = memory_size)]
    pub memory_limit: Option<usize>,
    /// The statement_timeout a client's session starts with (`30s`, `5min`, `250ms`; 0:
    /// none, the default); a client may SET its own.
    #[arg(long, value_name = "SPAN", value_parser = time_span)]
    pub statement_timeout: Option<std::time::Duration>,
    /// Nice value of the threads that load and write (loads, pushes, merges, DML, and the
    /// Flight port's threads, which also answer Arrow Flight SQL queries): 1 to 19 lets
    /// PostgreSQL-protocol queries take the CPU first while a load runs (default 0).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(0..=19))]
    pub load_nice: Option<i32>,
}

/// Output formats of query results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormat {
    /// An aligned table.
    #[default]
    Table,
    /// RFC 4180 CSV with a header line.
    Csv,
    /// One JSON array per row.
    Json,
}

/// Scan modes of a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Always correct, newlines inside quotes included.
    Safe,
    /// Assumes no newline inside quotes; fails (naming `safe`) when there is one.
    Fast,
}

/// The loader of the tables' CSV files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// The parallel CPU loader (the default).
    Cpu,
    /// The GPU loader: needs an NVIDIA GPU with its CUDA driver and NVRTC.
    Gpu,
}

/// A `--table NAME=PATH` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableArg {
    /// Table name.
    pub name: String,
    /// The CSV file.
    pub path: PathBuf,
}

/// A share from 0 to 1.
fn share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a share from 0 to 1")),
    }
}

fn parse_compression(s: &str) -> Result<wireload_storage::Compression, String> {
    s.parse()
}

fn parse_table_arg(s: &str) -> Result<TableArg, String> {
    match s.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => Ok(TableArg {
            name: name.to_string(),
            path: PathBuf::from(path),
        }),
        _ => Err(format!("expected NAME=PATH, got '{s}'")),
    }
}

/// Flags of `wireload sql`.
#[derive(Debug, Args)]
pub struct SqlArgs {
    /// Load the CSV file PATH into a new table NAME (repeatable); PATH `-` streams standard
    /// input, and a glob (`'dir/*.csv'`) loads every file it matches into one table.
    #[arg(long = "table", value_name = "NAME=PATH", value_parser = parse_table_arg)]
    pub tables: Vec<TableArg>,
    /// Column definitions, e.g. "id INT, name VARCHAR, d DATE": one for every table, or one
    /// per table in order. Without it (and without --all-varchar) the dialect and the
    /// column types are inferred from each file.
    #[arg(long = "schema", value_name = "COLUMNS")]
    pub schemas: Vec<String>,
    /// Make every column VARCHAR, named from the header (or column1..n without one).
    #[arg(long, conflicts_with = "schemas")]
    pub all_varchar: bool,
    /// How columns without their own COMPRESSION are stored: plain (default), dictionary or auto.
    #[arg(long, value_name = "STORAGE", value_parser = parse_compression)]
    pub compression: Option<wireload_storage::Compression>,
    /// The first line is a header.
    #[arg(long, overrides_with = "no_header")]
    pub header: bool,
    /// There is no header line (the default).
    #[arg(long = "no-header", overrides_with = "header")]
    pub no_header: bool,
    /// Field delimiter: one character, or \t for tab (default ,).
    #[arg(long, value_name = "CHAR")]
    pub delimiter: Option<String>,
    /// Quote character (default "); '' disables quoting.
    #[arg(long, value_name = "CHAR")]
    pub quote: Option<String>,
    /// Escape character inside quotes (default: the quote, doubled); '' means none.
    #[arg(long, value_name = "CHAR")]
    pub escape: Option<String>,
    /// The string that stands for NULL when unquoted (default: the empty string).
    #[arg(long, value_name = "STRING", allow_hyphen_values = true)]
    pub null: Option<String>,
    /// Chunk scan mode (--engine cpu only).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Skip bad records (loading the good ones) instead of failing the load; the skipped
    /// ones are in the table wireload_rejects.
    #[arg(long)]
    pub ignore_errors: bool,
    /// The loader: the CPU loader (default) or the GPU loader.
    #[arg(long, value_enum)]
    pub engine: Option<EngineArg>,
    /// Output format of the result.
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
    /// CSV files to load, each into a table named after it (`data` for `dir/data.csv`),
    /// then one or more `;`-separated SQL statements; the last statement's result is printed.
    #[arg(value_name = "[FILE]... SQL", required = true, num_args = 1..)]
    pub args: Vec<String>,
}

impl SqlArgs {
    /// The SQL: the last positional argument.
    pub fn sql(&self) -> &str {
        self.args.last().map_or("", String::as_str)
    }

    /// The files given before the SQL, each as a table named after the file.
    pub fn file_tables(&self) -> Vec<TableArg> {
        let files = &self.args[..self.args.len().saturating_sub(1)];
        files
            .iter()
            .map(|f| TableArg {
                name: wireload_sql::table_name_of(f),
                path: PathBuf::from(f),
            })
            .collect()
    }

    /// `Some(true)` for --header, `Some(false)` for --no-header, `None` when neither was given.
    pub fn header_flag(&self) -> Option<bool> {
        if self.header {
            Some(true)
        } else if self.no_header {
            Some(false)
        } else {
            None
        }
    }
}

/// Flags of `wireload sniff`.
#[derive(Debug, Args)]
pub struct SniffArgs {
    /// The CSV file (gzip and zstd are read through).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The table name the statements use (default: the file's name).
    #[arg(long, value_name = "NAME")]
    pub table: Option<String>,
    /// Field delimiter, when known: one character, or \t for tab.
    #[arg(long, value_name = "CHAR")]
    pub delimiter: Option<String>,
    /// The first line is a header (default: detected).
    #[arg(long, overrides_with = "no_header")]
    pub header: bool,
    /// There is no header line (default: detected).
    #[arg(long = "no-header", overrides_with = "header")]
    pub no_header: bool,
}

/// Flags of `wireload demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// TPC-H scale factor (1 is about 1 GB of text).
    #[arg(long, default_value_t = 1.0, value_name = "N")]
    pub sf: f64,
    /// Write the generated files into DIR and keep them (default: a temporary directory).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
}

/// Data generators.
#[derive(Debug, Subcommand)]
pub enum GenCommand {
    /// Write the 8 TPC-H tables as `.tbl` files.
    Tpch(GenTpchArgs),
}

/// Flags of `wireload gen tpch`.
#[derive(Debug, Args)]
pub struct GenTpchArgs {
    /// TPC-H scale factor.
    #[arg(long, default_value_t = 1.0, value_name = "N")]
    pub sf: f64,
    /// Directory to write the files into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// `--memory-limit`'s value.
fn memory_size(text: &str) -> Result<usize, String> {
    wireload_sql::byte_count(text)
        .ok_or_else(|| format!("{text:?} is not a byte count such as 8GB, 512MiB or 1073741824"))
}

/// `--statement-timeout`'s value (0: none).
fn time_span(text: &str) -> Result<std::time::Duration, String> {
    wireload_sql::time_span(text).map(Option::unwrap_or_default)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("wireload").chain(args.iter().copied()))
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn sql_flags() {
        let cli = parse(&[
            "sql",
            "--table",
            "a=x.csv",
            "--table",
            "b=y=z.csv",
            "--schema",
            "id INT",
            "--escape",
            "",
            "--no-header",
            "--header",
            "--format",
            "json",
            "--threads",
            "2",
            "--engine",
            "gpu",
            "select 1",
        ])
        .unwrap();
        assert_eq!(cli.threads, Some(2));
        let Some(Command::Sql(args)) = cli.command else {
            panic!("not sql")
        };
        assert_eq!(
            args.tables[1],
            TableArg {
                name: "b".into(),
                path: "y=z.csv".into()
            }
        );
        assert_eq!(args.escape.as_deref(), Some(""));
        assert_eq!(args.header_flag(), Some(true));
        assert_eq!(args.format, OutputFormat::Json);
        assert_eq!(args.engine, Some(EngineArg::Gpu));
        assert_eq!(args.sql(), "select 1");
        assert!(args.file_tables().is_empty());
        let cli = parse(&["sql", "dir/Data-1.csv", "x.csv.gz", "select 2"]).unwrap();
        let Some(Command::Sql(args)) = cli.command else {
            panic!("not sql")
        };
        assert_eq!(args.sql(), "select 2");
        let names: Vec<String> = args.file_tables().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["Data_1", "x"]);
    }

    #[test]
    fn rejects_bad_flags() {
        assert!(parse(&["sql", "--table", "nopath", "select 1"]).is_err());
        assert!(
            parse(&[
                "sql",
                "--table",
                "t=a",
                "--schema",
                "x INT",
                "--all-varchar",
                "select 1"
            ])
            .is_err()
        );
        assert!(parse(&["sql", "--table", "t=a", "--format", "xml", "select 1"]).is_err());
        assert!(parse(&["sql", "--table", "t=a", "--engine", "tpu", "select 1"]).is_err());
        assert!(parse(&["--threads", "0"]).is_err());
    }

    #[test]
    fn script_and_commands() {
        let cli = parse(&["-f", "s.sql", "--threads", "3"]).unwrap();
        assert_eq!(cli.file, Some(PathBuf::from("s.sql")));
        assert!(cli.command.is_none());
        let cli = parse(&["gen", "tpch", "--sf", "0.01", "--out", "d"]).unwrap();
        assert!(
            matches!(cli.command, Some(Command::Gen(GenCommand::Tpch(GenTpchArgs { sf, .. }))) if sf == 0.01)
        );
        let cli = parse(&["--threads", "2", "demo"]).unwrap();
        assert_eq!(cli.threads, Some(2));
        assert!(
            matches!(cli.command, Some(Command::Demo(DemoArgs { sf, keep: None })) if sf == 1.0)
        );
    }
}
